"""A record of every public metric's value, interval and per-pair table on the bundled cases and on seeded random
inputs (numpy, pandas, sparse, torch): a refactoring that moves code must leave it unchanged.

    python tests/golden.py --write    # record (only when a change of numbers is intended and explained)
    python tests/golden.py --write-captions   # the same for LIC and DBAC (tests/golden/captions.json)
    pytest tests/test_golden.py       # compare
"""
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import scipy.sparse as sp

HERE = Path(__file__).resolve().parent
RECORD = HERE / "golden" / "metrics.json"
CAPTIONS = HERE / "golden" / "captions.json"  # LIC and DBAC, each with its test's draws, on seeded synthetic captions


def _random_case(seed, n=600, k=6, kind="numpy"):
    rng = np.random.default_rng(seed)
    g = rng.integers(0, 2, n)
    A = np.eye(2, dtype=np.int8)[g]
    T = (rng.random((n, k)) < 0.15 + 0.2 * g[:, None] * (np.arange(k) % 2)).astype(np.int8)
    P = T.copy(); f = rng.random(T.shape) < 0.12; P[f] = 1 - P[f]
    Ap = A.copy(); fl = rng.random(n) < 0.15; Ap[fl] = 1 - Ap[fl]
    tasks, groups = [f"task{j}" for j in range(k)], ["woman", "man"]
    if kind == "pandas":
        f = lambda x, c: pd.DataFrame(x, columns=c)
        return dict(T=f(T, tasks), A=f(A, groups), T_pred=f(P, tasks), A_pred=f(Ap, groups))
    if kind == "sparse":
        return dict(T=sp.csr_matrix(T), A=A, T_pred=sp.csr_matrix(P), A_pred=Ap)
    if kind == "torch":
        import torch
        return dict(T=torch.tensor(T), A=torch.tensor(A), T_pred=torch.tensor(P), A_pred=torch.tensor(Ap))
    return dict(T=T, A=A, T_pred=P, A_pred=Ap)


def cases():
    from biasamp_nb import datasets
    out = {"COMPAS (unbalanced)": datasets.compas(False), "COMPAS (balanced)": datasets.compas(True),
           "hiring": datasets.hiring(), "imSitu pair": datasets.imsitu_pair()}
    for kind in ("numpy", "pandas", "sparse", "torch"):
        if kind == "torch":
            try: import torch  # noqa: F401
            except ImportError: continue
        out[f"random {kind}"] = _random_case(7, kind=kind)
    return out


def _table(df):
    "A per-pair table as sorted records of plain values (sorted by its keys, never by a value)."
    if df is None: return None
    keys = [c for c in ("group", "task", "combination", "label") if c in df.columns]
    d = df.reset_index(drop=not isinstance(df.index, pd.MultiIndex) and df.index.name is None)
    d = d.sort_values(keys, kind="stable") if keys else d
    d.columns = [" / ".join(map(str, c)) if isinstance(c, tuple) else str(c) for c in d.columns]
    return json.loads(d.to_json(orient="split", index=False, double_precision=15))


def _result(r):
    return dict(value=None if r.value is None else float(r.value), ci=None if r.ci is None else [float(x) for x in r.ci],
                ci_method=r.ci_method, per_pair=_table(r.per_pair) if r.trials is None else None,
                trials=_table(r.trials) if r.trials is not None else None)


def compute():
    import biasamp_nb as B
    out = {}
    for name, d in cases().items():
        T, A, P, Ap = d["T"], d["A"], d.get("T_pred"), d.get("A_pred")
        kw = dict(n_boot=50, random_state=0)
        # the record's Multi intervals are the basic ones it was made with (their default became the bracket interval,
        # with its swap draws, which `test_null` checks): pinned, so that the record keeps every number it had
        res = {}
        calls = {
            "ba_mals": lambda: B.ba_mals(T, A, P, **kw),
            "ba_directional A->T": lambda: B.ba_directional(T, A, T_pred=P, direction="A->T", **kw),
            "ba_directional T->A": lambda: B.ba_directional(T, A, A_pred=Ap, direction="T->A", **kw),
            "multi_mals": lambda: B.multi_mals(T, A, P, ci_method="basic", **kw),
            "multi_directional A->T": lambda: B.multi_directional(T, A, T_pred=P, direction="A->T", ci_method="basic", **kw),
            "multi_directional T->A": lambda: B.multi_directional(T, A, A_pred=Ap, direction="T->A", ci_method="basic", **kw),
            "leakage": lambda: B.leakage_amplification(T, A, P, n_trials=3, random_state=0),
            "dpa A->T": lambda: B.dpa(T, A, T_pred=P, direction="A->T", n_trials=3, random_state=0),
            "dpa T->A": lambda: B.dpa(T, A, A_pred=Ap, direction="T->A", n_trials=3, random_state=0),
        }
        for m, f in calls.items():
            if (P is None and "T_pred" in m) or (Ap is None and "T->A" in m): continue
            try: res[m] = _result(f())
            except ValueError as e: res[m] = {"refused": str(e)}
        try:
            g = B.association_gap(A, T, B.to_labels(A, "A").names[0], n_boot=30, random_state=0)
            res["association_gap"] = _table(g.reset_index())
        except ValueError as e: res["association_gap"] = {"refused": str(e)}
        res["bias_score"] = _table(B.bias_score(T, A).reset_index(names="task"))
        out[name] = res
    return out


def compute_captions():
    "LIC and DBAC in both directions with their intervals and every draw of their tests, on seeded captions."
    from biasamp_nb.caption_amplification import dbac, synthetic_object_captions
    from biasamp_nb.caption_leakage import lic
    d = synthetic_object_captions(200, random_state=1)
    runs = {"lic": lambda: lic(d.human, d.model, d.group, n_seeds=2, n_null=19, random_state=3),
            **{f"dbac {x}": (lambda x=x: dbac(d.human, d.model, d.group, direction=x, n_trials=2, n_null=19,
                                                random_state=3)) for x in ("T->A", "A->T")}}
    out = {}
    for m, f in runs.items():
        r = f()
        out[m] = dict(value=float(r.value), ci=[float(x) for x in r.ci], null=[float(x) for x in r.null],
                      p_value=float(r.p_value), floor=float(r.floor))
    return out


def compare(got, want, path="", rtol=1e-9, atol=1e-12):
    "The places where `got` differs from `want` (numbers within a relative 1e-9: same code, same pinned libraries)."
    diffs = []
    if isinstance(want, dict) and isinstance(got, dict):
        if set(got) != set(want): diffs.append(f"{path}: keys {sorted(set(got) ^ set(want))[:5]}")
        for k in set(got) & set(want): diffs += compare(got[k], want[k], f"{path}/{k}", rtol, atol)
    elif isinstance(want, list) and isinstance(got, list):
        if len(got) != len(want): diffs.append(f"{path}: {len(got)} items, recorded {len(want)}")
        else:
            for i, (a, b) in enumerate(zip(got, want)): diffs += compare(a, b, f"{path}[{i}]", rtol, atol)
    elif isinstance(want, float) or isinstance(got, float):
        if want is None or got is None or not (np.isclose(got, want, rtol=rtol, atol=atol) or (np.isnan(got) and np.isnan(want))):
            diffs.append(f"{path}: {got!r}, recorded {want!r}")
    elif got != want: diffs.append(f"{path}: {got!r}, recorded {want!r}")
    return diffs


def _norm(x):
    "Round-trip through JSON, as the record is stored."
    return json.loads(json.dumps(x))


if __name__ == "__main__":
    if "--write-captions" in sys.argv:
        CAPTIONS.write_text(json.dumps(compute_captions(), indent=0, sort_keys=True) + "\n")
        print(f"wrote {CAPTIONS}")
    elif "--write" in sys.argv:
        RECORD.parent.mkdir(exist_ok=True)
        RECORD.write_text(json.dumps(compute(), indent=0, sort_keys=True) + "\n")
        print(f"wrote {RECORD}")
    else:
        d = compare(_norm(compute()), json.loads(RECORD.read_text()))
        print("\n".join(d[:50]) or "unchanged")
