"""Every compiled path over every dtype and layout a user may pass, compared with the numpy path (numba blocked).

Each side runs in a subprocess of its own, so a crash of the interpreter (a write out of bounds in compiled code)
is a failed test with its signal, not a lost test run."""
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

SCRIPT = textwrap.dedent(r'''
    import sys, json
    if sys.argv[1] == "numpy": sys.modules["numba"] = None  # as on a machine without numba
    import numpy as np, pandas as pd, scipy.sparse as sp
    import biasamp_nb as B
    if sys.argv[1] == "sliced":  # every wide total counted by slices of 16 columns, as 10^5 task combinations are
        import biasamp_nb.weighted_counts as cnt
        cnt._WIDE_CELLS, cnt._CHUNK_CELLS = 8, 16
    from biasamp_nb.counting import code_kernel, code_totals
    from biasamp_nb.kernels import compiled_kernel
    from biasamp_nb.row_order import canonical_order
    from biasamp_nb import scale as sc
    from biasamp_nb import long_counts as lc

    DTYPES = [bool, np.int8, np.uint8, np.int16, np.int32, np.int64, np.float32, np.float64]
    def variants(X):
        "X (0/1) in every dtype and layout: C, F, a strided view, read-only; then sparse and DataFrame forms."
        out = {}
        for dt in DTYPES:
            c = X.astype(dt)
            out[f"{np.dtype(dt).name}-C"] = c
            out[f"{np.dtype(dt).name}-F"] = np.asfortranarray(c)
            out[f"{np.dtype(dt).name}-strided"] = np.repeat(c, 2, axis=1)[:, ::2]
            r = c.copy(); r.flags.writeable = False
            out[f"{np.dtype(dt).name}-readonly"] = r
        out["rows-strided"] = np.repeat(X.astype(np.int8), 2, axis=0)[::2]
        z = sp.csr_matrix(X.astype(np.int8)); z.data[::5] = 0  # stored zeros are zeros
        out["csr-int8-zeros"] = sp.csr_matrix((z.data, z.indices, z.indptr), shape=X.shape)
        out["csr-float"] = sp.csr_matrix(X.astype(float))
        out["csr-bool"] = sp.csr_matrix(X.astype(bool))
        out["csc-int64"] = sp.csc_matrix(X.astype(np.int64))
        out["frame-mixed"] = pd.DataFrame({f"c{j}": X[:, j].astype([bool, np.int8, np.float32][j % 3]) for j in range(X.shape[1])})
        return out

    rng = np.random.default_rng(0)
    out = {}
    for n in (64, 1500):  # below and above the row count where the compiled count starts
        g = rng.integers(0, 2, n); G = np.eye(2, dtype=np.int8)[g]
        Gp = G.copy(); flip = rng.random(n) < 0.1; Gp[flip] = 1 - Gp[flip]
        T = (rng.random((n, 5)) < 0.35 + 0.2 * g[:, None]).astype(np.int8)
        Tp = T.copy(); fl = rng.random(T.shape) < 0.1; Tp[fl] = 1 - Tp[fl]
        names = dict(A=[f"a{j}" for j in range(2)], T=[f"t{j}" for j in range(5)])
        vA, vAp, vT, vTp = variants(G), variants(Gp), variants(T), variants(Tp)
        def val(f):
            try: return round(float(f().value), 12)
            except ValueError as e: return "ValueError: " + str(e)[:60]
        def run(key, t, a, tp, ap):
            c = B.counts(t, a, tp, ap)
            out[key] = dict(
                counts=[np.asarray(m).tolist() for m in (c.at, c.at_pred, c.apred_t, c.apred_tpred)],
                ba_at=val(lambda: B.ba_directional(t, a, T_pred=tp, direction="A->T")),
                ba_ta=val(lambda: B.ba_directional(t, a, A_pred=ap, direction="T->A")),
                mals=val(lambda: B.ba_mals(t, a, tp, ap)),
                multi_at=val(lambda: B.multi_directional(t, a, T_pred=tp, direction="A->T", max_size=3)),
                multi_ta=val(lambda: B.multi_directional(t, a, A_pred=ap, direction="T->A", max_size=3)),
                multi_mals=val(lambda: B.multi_mals(t, a, tp, ap, max_size=3)))
        base = "int8-C"
        # every variant in every argument position, the others plain int8
        for nm, v in vA.items(): run(f"{n}/A/{nm}", vT[base], v, vTp[base], vAp[base])
        for nm, v in vAp.items(): run(f"{n}/A_pred/{nm}", vT[base], vA[base], vTp[base], v)
        for nm, v in vT.items(): run(f"{n}/T/{nm}", v, vA[base], vTp[base], vAp[base])
        for nm, v in vTp.items(): run(f"{n}/T_pred/{nm}", vT[base], vA[base], v, vAp[base])
        # every pair of dtypes of the true and predicted groups (the combination that once crashed: uint8 + int8)
        for d1 in DTYPES:
            for d2 in DTYPES:
                k1, k2 = f"{np.dtype(d1).name}-C", f"{np.dtype(d2).name}-C"
                run(f"{n}/A+A_pred/{k1}/{k2}", vT[base], vA[k1], vTp[base], vAp[k2])
        # random mixtures of every argument's variant
        keys = sorted(vA)
        for i in range(40):
            ks = [keys[j] for j in rng.integers(0, len(keys), 4)]
            run(f"{n}/mix/{'/'.join(ks)}", vT[ks[0]], vA[ks[1]], vTp[ks[2]], vAp[ks[3]])
        # the bootstrap and the swap test count every weighting at once (compiled) or by float products (numpy)
        for nm in ("int8-C", "bool-F", "float64-strided", "csr-int8-zeros", "uint8-readonly", "frame-mixed"):
            for key, f in (("mals", lambda t: B.ba_mals(t, vA[base], vTp[base], vAp[base], **inf)),
                           ("ba_ta", lambda t: B.ba_directional(t, vA[base], A_pred=vAp[base], direction="T->A", **inf)),
                           ("multi_at", lambda t: B.multi_directional(t, vA[base], T_pred=vTp[base], direction="A->T",
                                                                      max_size=2, **inf))):
                inf = dict(n_boot=25, n_null=19, random_state=3)
                r = f(vT[nm])
                out[f"{n}/inference/{key}/{nm}"] = [round(float(x), 12) for x in (*r.ci, r.floor, r.p_value)]
        # association gaps read the sparse and dense count paths too
        for nm in ("int8-C", "bool-F", "float32-strided", "csr-int8-zeros", "uint8-readonly"):
            gap = B.association_gap(vA[nm], vT[nm], "x0")
            out[f"{n}/gap/{nm}"] = gap.select_dtypes("number").round(12).to_numpy().tolist()
        # totals by a coding of the rows (an attacker's input × label table), over every variant of T
        code = np.random.default_rng(n).integers(0, 4, n)
        for nm, v in vT.items():
            if nm.startswith("frame"): continue  # a matrix, not a table: the readers convert frames
            out[f"{n}/code_totals/{nm}"] = code_totals(code, 5, v).tolist()
        # the trials' canonical row order (rows packed to bits: compiled for bytes in any layout), over every dense
        # variant of T
        for nm, v in vT.items():
            if nm.startswith(("frame", "csr", "csc")): continue
            out[f"{n}/order/{nm}"] = canonical_order(v, vA[base]).tolist()

    # the long-record counters: row ids and label positions in every integer width
    ka, kt = 2, 3
    gmap = np.array([0, 1, -1, -1, -1, -1]); tmap = np.array([-1, -1, 0, 1, 2, -1])
    R = np.array([(r, l, s) for r in range(200) for s in range(2) for l in range(6) if rng.random() < 0.5])
    for dt in (np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16):
        rid, lab, side = R[:, 0].astype(np.int64), R[:, 1].astype(dt), R[:, 2].astype(dt)
        M, rows = lc.count_batches([(rid[:300], lab[:300], side[:300], gmap, tmap),
                                     (rid[300:], lab[300:], side[300:], gmap, tmap)], ka, kt, True)
        out[f"long/{np.dtype(dt).name}"] = [np.asarray(M).tolist(), int(rows)]

    # the merge counter (sorted streams): label positions in every integer width; without numba the same product
    # comes from long_cross_counts, which it must equal
    gbit = np.array([1, 2, 0, 0, 0, 0]); tcol = np.array([-1, -1, 0, 1, 2, -1])
    T0 = R[R[:, 2] == 0]
    look = lambda m, l: np.where(l >= 0, m[np.maximum(l, 0)], -1)
    for dt in (np.int8, np.int16, np.int32, np.int64, np.uint8):
        rid, lab = T0[:, 0].astype(np.int64), T0[:, 1].astype(dt)
        if sys.argv[1] == "compiled":
            M, rows, _ = lc.merge_sorted([[(rid[:200], lab[:200], gbit, tcol), (rid[200:], lab[200:], gbit, tcol)]], ka, kt)
        else:
            M, rows = lc.long_cross_counts(rid, look(gmap, T0[:, 1]), look(tmap, T0[:, 1]), None, ka, kt)
        out[f"merge/{np.dtype(dt).name}"] = [np.asarray(M).tolist(), int(rows)]

    json.dump(dict(compiled=compiled_kernel("left_codes", lambda: None) is not None, results=out), sys.stdout)
''')


def _run(mode, tmp_path):
    path = tmp_path / "kernels.py"
    path.write_text(SCRIPT)
    p = subprocess.run([sys.executable, str(path), mode], capture_output=True, text=True, timeout=900,
                       env={**os.environ, "PYTHONWARNINGS": "ignore"})
    assert p.returncode == 0, f"the {mode} side ended with code {p.returncode} (a negative code is a signal: a crash)\n{p.stderr[-3000:]}"
    return json.loads(p.stdout)


def test_compiled_paths_equal_numpy_for_every_dtype_and_layout(tmp_path):
    pytest.importorskip("numba")
    fast, slow = _run("compiled", tmp_path), _run("numpy", tmp_path)
    assert fast["compiled"] and not slow["compiled"]
    assert fast["results"].keys() == slow["results"].keys()
    bad = [k for k in fast["results"] if fast["results"][k] != slow["results"][k]]
    assert not bad, f"{len(bad)} results differ between compiled and numpy paths, e.g. {bad[:3]}"
    res = fast["results"]
    # the example that crashed: unsigned true groups, signed predicted groups, perfect predictions of groups ... 
    assert "1500/A+A_pred/uint8-C/int8-C" in res and "64/A+A_pred/uint8-C/int8-C" in res
    # ... and the values are numbers, not refusals, for every dense variant
    assert all(isinstance(v["multi_mals"], float) for k, v in res.items() if "/A/" in k and "csc" not in k)


def test_totals_by_slices_of_columns_equal_numpy(tmp_path):
    """The same runs with every wide total counted a slice of columns at a time (slices of 16 columns from 9 cells
    on, so that these small inputs take that path): the same numbers as without numba, and no crash."""
    pytest.importorskip("numba")
    sliced, slow = _run("sliced", tmp_path), _run("numpy", tmp_path)
    assert sliced["compiled"] and sliced["results"].keys() == slow["results"].keys()
    bad = [k for k in sliced["results"] if sliced["results"][k] != slow["results"][k]]
    assert not bad, f"{len(bad)} results differ between counting by slices and the numpy path, e.g. {bad[:3]}"


def test_unsigned_and_signed_group_bytes_never_crash():
    """The report that started this: groups as uint8, predicted groups as int8 (both valid one-hot), perfect
    predictions. Each run, in a fresh interpreter, prints 0.0 for Multi_MALS and Multi-> T->A."""
    code = textwrap.dedent("""
        import numpy as np, pandas as pd, biasamp_nb as B
        g = np.arange(64) % 2; T = pd.DataFrame({"dog": (np.arange(64) % 3 == 0).astype(np.int8)})
        print(B.multi_mals(T, np.eye(2, dtype=np.uint8)[g], T, np.eye(2, dtype=np.int8)[g]).value)
        print(B.multi_directional(T, np.eye(2, dtype=np.uint8)[g], A_pred=np.eye(2, dtype=np.int8)[g],
                                  direction="T->A").value)
    """)
    for _ in range(6):
        p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, p.stderr[-2000:]
        assert p.stdout.split() == ["0.0", "0.0"]


def test_runs_where_numba_cannot_cache(tmp_path):
    """A user whose HOME does not exist and whose package folder is read-only (a container's service account): numba
    finds no cache folder ('no locator available'); the kernels are then compiled for the process and every Multi
    metric still runs."""
    pytest.importorskip("numba")
    code = textwrap.dedent("""
        import numba.core.caching as c
        c.CacheImpl._locator_classes = []  # what numba has when no folder to cache in can be written
        import numpy as np, pandas as pd, biasamp_nb as B
        g = np.arange(2000) % 2; T = pd.DataFrame({"dog": (np.arange(2000) % 3 == 0).astype(np.int8)})
        A = np.eye(2, dtype=np.int8)[g]
        print(B.multi_mals(T, A, T, A).value, B.multi_directional(T, A, T_pred=T, direction="A->T").value)
    """)
    env = {**os.environ, "HOME": str(tmp_path / "no-such-home")}
    env.pop("NUMBA_CACHE_DIR", None)
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env)
    assert p.returncode == 0, p.stderr[-2000:]
    assert p.stdout.split() == ["0.0", "0.0"]
