"""Memory: the budget reads the process's real limits, large allocations are estimated before they start, and the
report leaves out, with the reason, a metric that does not fit."""
import os
import subprocess
import sys
import time

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from biasamp_nb.subsets import available_memory, resolve_memory_budget

LIMIT = "import resource; resource.setrlimit(resource.RLIMIT_AS, ({0}, {0}))\n"


def _capped(code, gib=6, timeout=240):
    "Run `code` in a fresh interpreter whose address space is capped at `gib` GiB; (rc, stdout, stderr, seconds)."
    env = {k: v for k, v in os.environ.items() if k != "BIASAMP_MEMORY_BUDGET"}
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-c", LIMIT.format(gib << 30) + code], capture_output=True, text=True,
                       timeout=timeout, env=env)
    return r.returncode, r.stdout, r.stderr, time.perf_counter() - t0


def test_the_budget_reads_the_address_space_limit():
    rc, out, err, _ = _capped("from biasamp_nb.subsets import resolve_memory_budget as r; print(r())", gib=3)
    assert rc == 0, err
    assert 0 < int(out) < 3 << 29  # half of what the 3 GiB limit leaves
    # here: half of what is left at the call (the memory left moves while other processes run, so it is fixed here)
    import biasamp_nb.subsets as S
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("BIASAMP_MEMORY_BUDGET", raising=False)
        mp.setattr(S, "available_memory", lambda: (10 << 30) + 1)
        assert resolve_memory_budget() == 5 << 30
        mp.setenv("BIASAMP_MEMORY_BUDGET", "2GB")
        assert resolve_memory_budget() == 2 * 10**9
    assert 0 < available_memory()


def test_mining_more_combinations_than_fit_is_refused_not_a_memory_error():
    code = """
import numpy as np
from biasamp_nb import multi_directional
rng = np.random.default_rng(0)
T = (rng.random((1000, 80)) < 0.2).astype(np.int8)
A = np.eye(2, dtype=np.int8)[rng.integers(0, 2, 1000)]
P = T.copy(); P[rng.random(T.shape) < 0.05] ^= 1
try: multi_directional(T, A, P, direction="A->T", max_size=6, min_count=1)
except ValueError as e: print("refused:", e)
"""
    rc, out, err, secs = _capped(code)
    assert rc == 0 and "MemoryError" not in err, err[-2000:]
    assert out.startswith("refused: the combinations of up to") and "over the memory budget" in out
    assert "lower max_size" in out and secs < 120


@pytest.mark.parametrize("direction", ["A->T", "T->A"])
def test_wide_sparse_labels_are_refused_by_the_predictability_metrics_before_densifying(direction, monkeypatch):
    from biasamp_nb import dpa, leakage_amplification
    n, k = 20_000, 5_000
    T = sp.random(n, k, density=3 / k, format="csr", random_state=1, dtype=np.float64)
    T.data[:] = 1
    A = np.eye(2, dtype=np.int8)[np.random.default_rng(0).integers(0, 2, n)]
    monkeypatch.setenv("BIASAMP_MEMORY_BUDGET", "1GB")
    t0 = time.perf_counter()
    with pytest.raises(ValueError, match=rf"DPA \({direction}\) fits its attackers on dense labels: 20,000 rows × "):
        dpa(T, A, T, A, direction=direction, n_trials=2)
    with pytest.raises(ValueError, match="leakage fits its attackers on dense labels.*over the memory budget of 1.0 GB"):
        leakage_amplification(T, A, T, n_trials=2)
    assert time.perf_counter() - t0 < 30


def test_the_report_leaves_out_a_metric_that_does_not_fit_and_says_why(tmp_path, monkeypatch):
    from biasamp_nb.datasets import imsitu_pair
    from biasamp_nb.report import write_report
    monkeypatch.setenv("BIASAMP_MEMORY_BUDGET", "3000")  # bytes: the counts fit, the attackers' dense copies do not
    summ = write_report({"imsitu": imsitu_pair()}, tmp_path / "r", n_boot=20, n_null=19, n_trials=2)
    ran = set(summ.metric[summ.value.notna()])
    assert {"BA_MALS", "BA→ (A->T)"} <= ran and not {"Leakage", "DPA (A->T)"} & ran
    unrun = summ.set_index("metric").loc[["Leakage", "DPA (A->T)"], "verdict"]  # each in its own row, with the fix
    assert unrun.str.startswith("not run: ").all() and unrun.str.contains("BIASAMP_MEMORY_BUDGET").all()
    md = (tmp_path / "r" / "report.md").read_text()
    said = next(line for line in md.splitlines() if line.startswith("*imsitu: skipped"))
    for name in ("Leakage", "DPA (A->T)"):
        assert f"{name} (" in said.replace("\\", "") and "fits its attackers on dense labels" in said
    assert "MEMORY" in said and "BUDGET" in said


def _labelled(n=400, k=6, seed=3):
    "A small case with several labels a row (Multi metrics have combinations to count), predicted tasks and groups."
    rng = np.random.default_rng(seed)
    g = rng.integers(0, 2, n)
    T = (rng.random((n, k)) < 0.25 + 0.2 * g[:, None] * (np.arange(k) % 2)).astype(np.int8)
    Tp = np.where(rng.random((n, k)) < 0.1, 1 - T, T).astype(np.int8)
    gp = np.where(rng.random(n) < 0.1, 1 - g, g)
    return dict(T=T, A=np.eye(2, dtype=np.int8)[g], T_pred=Tp, A_pred=np.eye(2, dtype=np.int8)[gp])


@pytest.mark.parametrize("n_null", [19, 0])
def test_the_report_builds_each_table_once_and_writes_what_reading_them_whole_writes(tmp_path, monkeypatch, n_null):
    import biasamp_nb.report as R
    import biasamp_nb.results as res
    built, make = [], res._from_kept
    monkeypatch.setattr(res, "_from_kept", lambda *a: built.append(a[2]) or make(*a))  # a[2]: the table's label
    opts = dict(n_boot=10, n_null=n_null, n_trials=2, full_json=False)
    R.write_report({"case": _labelled()}, tmp_path / "once", **opts)
    assert len(built) == 6 and built.count("combination") == 3  # BA_MALS, BA→ ×2, Multi→ ×2, Multi_MALS: once each
    monkeypatch.setattr(R, "read_and_release", lambda r, read: read(r))  # every table built and kept while read
    R.write_report({"case": _labelled()}, tmp_path / "whole", **opts)
    for f in ("report.md", "report.html", "results.json", "summary.csv", "case.png"):
        assert (tmp_path / "once" / f).read_bytes() == (tmp_path / "whole" / f).read_bytes(), f


@pytest.mark.parametrize("metric", ["A->T", "T->A", "mals"])
def test_a_multi_table_keeps_z_not_q_and_gives_each_q_from_every_pairs_z(metric):
    "q is Benjamini–Hochberg over the two-sided normal p-values of all the pairs' z: the table gives it again when built."
    from scipy import stats
    from biasamp_nb import multi_directional, multi_mals
    d = _labelled(n=600, k=8)
    if metric == "mals": r = multi_mals(**d, n_null=19, random_state=0, min_count=2)
    else: r = multi_directional(**d, direction=metric, n_null=19, random_state=0, min_count=2)
    kept = r.__dict__["_per_pair"].args[-1]  # the columns the lazy table keeps with the result
    assert {"se", "z"} <= set(kept) and "q" not in kept
    pp = r.per_pair
    p = 2 * stats.norm.sf(np.abs(pp["z"].to_numpy(float)))
    fin = np.isfinite(p)
    want = np.full(len(p), np.nan)
    want[fin] = stats.false_discovery_control(p[fin], method="bh")
    np.testing.assert_allclose(pp["q"].to_numpy(float), want, rtol=1e-12)
    assert fin.sum() > 50 and (want[fin] < 0.5).any() and list(pp.columns[-3:]) == ["se", "z", "q"]


@pytest.mark.parametrize("metric", ["A->T", "T->A", "mals"])
def test_a_multi_result_keeps_its_combination_names_as_one_arrow_array_the_same_table_as_a_tuple(metric, monkeypatch):
    "The combinations' names are one Arrow array (no Python string each); without pyarrow a tuple: the same table."
    from biasamp_nb import multi_directional, multi_mals
    from biasamp_nb.results import NameArray
    d = _labelled(n=600, k=8)
    if metric == "mals": run = lambda: multi_mals(**d, n_null=19, random_state=0, min_count=2)  # noqa: E731
    else: run = lambda: multi_directional(**d, direction=metric, n_null=19, random_state=0, min_count=2)  # noqa: E731
    r = run()
    names = r.__dict__["_per_pair"].args[1]  # the names the lazy table keeps with the result
    assert isinstance(names, NameArray) and len(names) > 50
    with monkeypatch.context() as m:
        m.setitem(sys.modules, "pyarrow", None)  # as where pyarrow is not installed: `import pyarrow` fails
        r0 = run()
    assert type(r0.__dict__["_per_pair"].args[1]) is tuple and r0.__dict__["_per_pair"].args[1] == names
    pp = r.per_pair
    pd.testing.assert_frame_equal(pp, r0.per_pair)
    parts = [c.split("+") for c in pp["combination"].unique()]  # each name: its labels, one of each, joined by '+'
    assert all(len(set(p)) == len(p) and set(p) <= {f"t{j}" for j in range(8)} for p in parts)
    sizes = pp.drop_duplicates("combination").set_index("combination")["size"]
    assert [len(p) for p in parts] == sizes.loc[pp["combination"].unique()].tolist() and max(sizes) > 1


def test_giving_memory_back_empties_arrows_pool_where_pyarrow_is_loaded(monkeypatch):
    "Between metrics the report also hands back what Arrow's pool keeps for reuse, where pyarrow is loaded at all."
    from types import SimpleNamespace
    from biasamp_nb.report import give_back_memory
    calls = []
    pool = SimpleNamespace(release_unused=lambda: calls.append(1))
    monkeypatch.setitem(sys.modules, "pyarrow", SimpleNamespace(default_memory_pool=lambda: pool))
    give_back_memory()
    assert calls == [1]
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # not loaded: nothing imported for it
    give_back_memory()
    monkeypatch.setitem(sys.modules, "pyarrow", SimpleNamespace(default_memory_pool=lambda: SimpleNamespace()))
    give_back_memory()  # an Arrow without release_unused: left as it is
    assert calls == [1]
