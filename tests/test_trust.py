"""Trust: no metric changes its caller's data; every input type gives the same numbers; rows are never
silently misaligned; thresholds follow names; DPA does not depend on row order and its interval covers reruns."""
import copy

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings, strategies as st

from biasamp_nb import (apply_thresholds, association, association_gap, ba_directional, bias_score,
                        calibrate_thresholds, counts, dpa, leakage_amplification, multi_directional, multi_mals,
                        task_combinations)
from biasamp_nb.datasets import compas
from helpers import labelled

torch = pytest.importorskip("torch")


def with_stored_zeros(X, rng):
    "X as CSR with explicit stored zeros at some of its zero cells (scipy keeps them as entries)."
    r, c = np.nonzero(X == 0)
    keep = rng.random(len(r)) < 0.5
    ones_r, ones_c = np.nonzero(X)
    rows, cols = np.r_[ones_r, r[keep]], np.r_[ones_c, c[keep]]
    data = np.r_[np.ones(len(ones_r)), np.zeros(keep.sum())]
    S = sp.csr_matrix((data, (rows, cols)), shape=X.shape)
    assert S.nnz == len(rows)  # the zeros are stored
    return S


def as_kind(X, kind, names, rng, index):
    if kind == "numpy": return X.copy()
    if kind == "pandas": return pd.DataFrame(X, columns=names, index=index)
    if kind == "sparse": return with_stored_zeros(X, rng)
    if kind == "float": return X.astype(np.float64)
    if kind == "pandas int64": return pd.DataFrame(X.astype(np.int64), columns=names, index=index)
    if kind == "column-major int32": return np.asfortranarray(X.astype(np.int32))  # copied to row-major bytes
    if kind == "strided": return np.repeat(X, 2, axis=1)[:, ::2]  # a view with gaps between its columns
    return torch.from_numpy(X.copy())


def snapshot(x):
    if sp.issparse(x): return ("sparse", x.data.copy(), x.indices.copy(), x.indptr.copy(), x.dtype)
    if isinstance(x, (pd.DataFrame, pd.Series)): return ("pandas", x.copy(deep=True))
    if isinstance(x, np.ndarray): return ("numpy", x.copy())
    return ("torch", x.clone())


def unchanged(x, snap):
    if snap[0] == "sparse":
        return (np.array_equal(x.data, snap[1]) and np.array_equal(x.indices, snap[2])
                and np.array_equal(x.indptr, snap[3]) and x.dtype == snap[4])
    if snap[0] == "pandas": return x.equals(snap[1]) and x.index.equals(snap[1].index)
    if snap[0] == "numpy": return np.array_equal(x, snap[1]) and x.dtype == snap[1].dtype
    return torch.equal(x, snap[1])


def registered_calls(T, A, Tp, Ap):
    """Every registered count metric that reads labels and predictions, in each direction, called from its
    registration alone (a metric added later is in this battery with no edit here): (name, thunk of its value)."""
    from biasamp_nb.metrics import count_metrics
    data = dict(T=T, A=A, T_pred=Tp, A_pred=Ap, T_train=T, A_train=A)
    out = []
    for s in count_metrics().values():
        if not set(s.inputs) <= set(data): continue  # association_gap reads (X, Y): called by hand below
        for d in s.directions:
            kw = {k: data[k] for k in s.inputs if k != {"A->T": "A_pred", "T->A": "T_pred"}.get(d)}
            kw |= ({} if d is None else dict(direction=d)) | ({"max_size": 2} if "max_size" in s.options else {})
            out.append((s.title(d), lambda f=s.fn, kw=kw: [f(**kw).value]))
    return out


def metric_calls(T, A, Tp, Ap):
    "Every public count-based metric, as (name, thunk returning numbers to compare)."
    assert len(registered_calls(T, A, Tp, Ap)) >= 6  # BA_MALS, BA→ ×2, Multi→ ×2, Multi_MALS
    return registered_calls(T, A, Tp, Ap) + [
        ("counts", lambda: np.r_[counts(T, A, Tp, Ap).at.ravel(), counts(T, A, Tp, Ap).apred_tpred.ravel()]),
        ("bias_score", lambda: bias_score(T, A).to_numpy().ravel()),
        ("ba_directional A->T", lambda: [ba_directional(T, A, Tp, direction="A->T", n_boot=5, random_state=0).ci[0]]),
        ("multi_mals", lambda: [multi_mals(T, A, Tp, Ap, max_size=2, n_boot=5, random_state=0).ci[1]]),
        ("multi_directional T->A", lambda: [multi_directional(T, A, A_pred=Ap, direction="T->A").signed_value]),
        ("task_combinations", lambda: task_combinations(T, T, max_size=3).count_eval.to_numpy()),
        ("association", lambda: association(A, T, metrics=["dp", "npmi_xy"]).iloc[:, 1:].to_numpy(float).ravel()),
        ("association_gap", lambda: association_gap(A, T, "x0", "x1", metrics=["dp"], n_boot=5, random_state=0)
                                     .iloc[:, 3:].to_numpy(float).ravel()),
    ]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(labelled(max_rows=40, max_tasks=4, max_groups=2), st.integers(0, 2**16))
def test_every_metric_leaves_inputs_unchanged_and_agrees_across_input_types(x, seed):
    T, A, Tp, Ap = x
    assume_any = T.any(axis=0).all()  # every task occurs: otherwise sets and associations drop labels alike
    rng = np.random.default_rng(seed)
    index = pd.Index(rng.permutation(len(T)) + 100)  # a non-default index, the same for every argument
    results = {}
    for kind in ("numpy", "pandas", "sparse", "float", "pandas int64", "column-major int32", "strided", "torch"):
        args = [as_kind(M, kind, [f"{p}{j}" for j in range(M.shape[1])], rng, index)
                for M, p in ((T, "t"), (A, "x"), (Tp, "t"), (Ap, "x"))]
        snaps = [snapshot(a) for a in args]
        for name, call in metric_calls(*args):
            try: results[kind, name] = np.asarray(call(), dtype=float)
            except ValueError as e: results[kind, name] = str(e)
        for a, s in zip(args, snaps):
            assert unchanged(a, s), f"{kind} input changed"
    for (kind, name), v in results.items():
        ref = results["numpy", name]
        if isinstance(ref, str): assert isinstance(v, str), (kind, name, v)  # refused alike (message names differ)
        else: np.testing.assert_allclose(v, ref, rtol=1e-12, atol=1e-12, err_msg=f"{kind} {name}")
    del assume_any


def test_predictability_leaves_inputs_unchanged():
    ex = compas(False)
    d = {k: ex[k] for k in ("T", "A", "T_pred", "A_pred")}
    S = sp.csr_matrix(d["T"].to_numpy()); S.data[:] = 1
    kinds = dict(pandas=d, torch={k: torch.from_numpy(v.to_numpy().copy()) for k, v in d.items()},
                 sparse={**{k: v.to_numpy() for k, v in d.items()}, "T": S})
    vals = {}
    for kind, args in kinds.items():
        snaps = {k: snapshot(v) for k, v in args.items()}
        vals[kind] = (dpa(**args, direction="T->A", n_trials=3, random_state=0).value,
                      leakage_amplification(args["T"], args["A"], args["T_pred"], n_trials=2, random_state=0).value)
        assert all(unchanged(args[k], s) for k, s in snaps.items()), kind
    assert vals["pandas"] == pytest.approx(vals["torch"]) and vals["pandas"] == pytest.approx(vals["sparse"])


def test_sparse_with_stored_zeros_gives_the_dense_multi_values():
    rng = np.random.default_rng(4)
    T = (rng.random((300, 5)) < 0.4).astype(np.int8); A = np.eye(2, dtype=np.int8)[rng.integers(0, 2, 300)]
    P = (rng.random((300, 5)) < 0.4).astype(np.int8)
    S, SP = with_stored_zeros(T, rng), with_stored_zeros(P, rng)
    before = snapshot(S)
    for kw in (dict(direction="A->T"), dict(direction="T->A", A_pred=A[::-1])):
        dense = multi_directional(T, A, P if kw["direction"] == "A->T" else None, **kw)
        sparse = multi_directional(S, A, SP if kw["direction"] == "A->T" else None, **kw)
        assert sparse.value == pytest.approx(dense.value, abs=1e-15) and sparse.info["n_combinations"] == dense.info["n_combinations"]
    assert multi_mals(S, A, SP).value == pytest.approx(multi_mals(T, A, P).value, abs=1e-15)
    pd.testing.assert_frame_equal(task_combinations(S), task_combinations(T))
    assert unchanged(S, before)


def test_shuffled_predictions_are_refused_not_misread():
    ex = compas(False)
    T, A, P = ex["T"], ex["A"], ex["T_pred"]
    with pytest.raises(ValueError, match="T_pred and T have different row indexes .the same labels in another order."):
        ba_directional(T, A, P.sample(frac=1, random_state=0), direction="A->T")
    with pytest.raises(ValueError, match=r"A_pred = A_pred.loc\[T.index\]"):
        dpa(T, A, A_pred=ex["A_pred"].sample(frac=1, random_state=0), direction="T->A")
    for f in (multi_directional, ba_directional):
        with pytest.raises(ValueError, match="different row indexes"):
            f(T, A, P.set_axis(P.index + 1), direction="A->T")
    shuffled = P.sample(frac=1, random_state=0)
    assert ba_directional(T, A, shuffled.loc[T.index], direction="A->T").value == ba_directional(T, A, P, direction="A->T").value
    with pytest.raises(ValueError, match="T column 'copy' is identical to A column"):
        ba_directional(T.assign(copy=A.iloc[:, 0].to_numpy()), A, P.assign(copy=0), direction="A->T")
    with pytest.raises(ValueError, match="T_pred and T have different labels"):
        ba_directional(T, A, P.rename(columns={P.columns[0]: "other"}), direction="A->T")


def test_thresholds_follow_names_and_refuse_nan():
    rng = np.random.default_rng(0)
    S = pd.DataFrame(rng.random((100, 3)), columns=["a", "b", "c"])
    T = pd.DataFrame((rng.random((100, 3)) < [0.1, 0.5, 0.9]).astype(int), columns=["a", "b", "c"])
    thr = calibrate_thresholds(S, T)
    assert calibrate_thresholds(S, T[["c", "a", "b"]]).equals(thr)
    P = apply_thresholds(S[["b", "c", "a"]], thr)
    assert list(P.columns) == ["b", "c", "a"] and (P.sum() == T.sum()[["b", "c", "a"]]).all()
    assert apply_thresholds(S, thr[["c", "b", "a"]]).equals(apply_thresholds(S, thr))
    with pytest.raises(ValueError, match="thresholds has NaN for label 'b'"): apply_thresholds(S, thr.replace(thr["b"], np.nan))
    with pytest.raises(ValueError, match="no threshold for: \\['c'\\]"): apply_thresholds(S, thr.drop("c"))


@pytest.mark.parametrize("direction", ["T->A", "A->T"])
def test_dpa_does_not_depend_on_row_order_and_its_interval_holds_the_permuted_runs(direction):
    ex = compas(False)
    d = {k: ex[k] for k in ("T", "A", "T_pred", "A_pred")}
    r = dpa(**d, direction=direction, random_state=0)
    rng = np.random.default_rng(7)
    vals = []
    for _ in range(50):
        p = rng.permutation(len(ex["T"]))
        vals.append(dpa(**{k: v.iloc[p] for k, v in d.items()}, direction=direction, random_state=0).value)
    inside = np.mean([r.ci[0] <= v <= r.ci[1] for v in vals])
    assert inside >= 0.9 and np.ptp(vals) < 1e-12  # the same value for every order of the rows


def test_dpa_rerun_interval_covers_other_seeds_better_than_the_mean_interval():
    ex = compas(False)
    d = {k: ex[k] for k in ("T", "A", "T_pred", "A_pred")}
    runs = [dpa(**d, direction="T->A", random_state=s) for s in range(20)]
    v = np.array([r.value for r in runs])
    share = lambda key: np.mean([np.mean([(r.info[key][0] <= x <= r.info[key][1]) for j, x in enumerate(v) if j != i])
                                 for i, r in enumerate(runs)])
    assert share("ci_rerun") > 0.9 and share("ci_mean") < share("ci_rerun")
    half = lambda r, k: (r.info[k][1] - r.info[k][0]) / 2
    assert half(runs[0], "ci_rerun") == pytest.approx(np.sqrt(2) * half(runs[0], "ci_mean"))


def test_intervals_never_exclude_the_value_without_a_note():
    from biasamp_nb.datasets import imsitu_pair
    m = imsitu_pair()
    for r in (multi_mals(**m, max_size=2, n_boot=200, random_state=0, ci_method="basic"),
              multi_directional(**m, direction="A->T", max_size=2, n_boot=200, random_state=0, ci_method="basic")):
        excluded = not (r.ci[0] <= r.value <= r.ci[1])
        assert (r.ci_note is not None) == excluded
        if excluded: assert r.ci_note in r._repr_markdown_() and r.to_dict()["ci_note"] == r.ci_note
        assert r.ci[0] >= 0 and r.ci_method == "basic"


def test_demo_report_annotates_every_interval_that_excludes_its_value(tmp_path):
    from biasamp_nb.report import demo_cases, write_report
    summ = write_report(demo_cases(), tmp_path, n_boot=100, n_trials=3)
    has_ci = summ.ci_low.notna()
    out = has_ci & ((summ.value < summ.ci_low) | (summ.value > summ.ci_high))
    assert (summ.loc[out, "note"].str.len() > 0).all() and (summ.loc[has_ci & ~out, "note"] == "").all()
    text = (tmp_path / "report.md").read_text()
    assert all(n in text for n in summ.loc[out, "note"])
    assert set(summ.loc[summ.metric.str.startswith("Multi") & has_ci, "interval"]) == {"bracket"}  # the test ran


def test_atomic_write_leaves_the_old_file_when_a_write_fails(tmp_path, monkeypatch):
    import os
    from biasamp_nb.files import atomic_write
    p = tmp_path / "results.json"
    atomic_write(p, "old")
    monkeypatch.setattr(os, "replace", lambda *a: (_ for _ in ()).throw(OSError("disk full")))
    with pytest.raises(OSError, match="disk full"): atomic_write(p, "new")
    assert p.read_text() == "old" and [q.name for q in tmp_path.iterdir()] == ["results.json"]  # no temporary left


@pytest.mark.parametrize("method, scipy_method", [("bca", "BCa"), ("basic", "basic"), ("percentile", "percentile")])
def test_bootstrap_intervals_agree_with_scipy(method, scipy_method):
    "A skewed statistic (the mean of exponential draws): our weighted-count bootstrap against scipy's resampling."
    from scipy.stats import bootstrap
    from biasamp_nb.core import Result
    from biasamp_nb.registry import bootstrap_ci
    x = np.random.default_rng(11).exponential(size=100)
    ours = bootstrap_ci(Result("mean", float(x.mean()), pd.DataFrame()), lambda W: W @ x / W.sum(1), len(x),
                        n_boot=20000, random_state=0, method=method).ci
    ref = bootstrap((x,), np.mean, n_resamples=20000, method=scipy_method, random_state=1).confidence_interval
    assert ours == pytest.approx((ref.low, ref.high), abs=0.008)  # the methods themselves differ by 0.01-0.03 here


def test_coverage_study_bootstraps_the_gap_as_association_gap_does():
    from biasamp_nb.intervals import interval
    from biasamp_nb.coverage import coverage_results, coverage_population, coverage_sample
    pop = coverage_population(n_train=2000)
    T, A, P = coverage_sample(pop, 300, np.random.default_rng(2))
    r = coverage_results(T, A, P, pop, n_boot=50, ci_level=0.9, seed=4)["association_gap"]
    g = association_gap(pd.DataFrame(A, columns=pop["groups"]), pd.DataFrame(P, columns=pop["names"]), "woman", "man",
                        metrics=["npmi_xy"], n_boot=50, ci_level=0.9, random_state=4, ci_method="bca")
    assert r.value == pytest.approx(g.loc["t0", "npmi_xy"], abs=1e-12)
    assert r.ci == pytest.approx((g.loc["t0", "npmi_xy lo"], g.loc["t0", "npmi_xy hi"]), abs=1e-12)
    assert interval(r.boot, r.value, 0.9, "bca", r.jack) == pytest.approx(r.ci, abs=1e-12)


def test_coverage_study_keyed_draws_the_resamples_row_keyed():
    "keyed=True: the same data sets and values, each metric's resamples drawn as `row_keyed_draws()` draws them."
    from biasamp_nb.coverage import coverage_study, coverage_population, coverage_results, coverage_sample
    from biasamp_nb.intervals import interval
    from biasamp_nb.row_keys import row_keyed_draws
    plain = coverage_study(n_sets=3, n=200, n_boot=30, random_state=0)
    keyed = coverage_study(n_sets=3, n=200, n_boot=30, random_state=0, keyed=True)
    pop, rng, widths = coverage_population(random_state=0), np.random.default_rng(0), []
    for s in range(3):  # the study's data sets, drawn in its order, each bootstrapped row-keyed by hand
        T, A, P = coverage_sample(pop, 200, rng)
        with row_keyed_draws(): r = coverage_results(T, A, P, pop, 30, 0.95, s, "percentile")["ba_mals"]
        lo, hi = interval(r.boot, r.value, 0.95, "percentile"); widths.append(hi - lo)
    at = lambda t: t.set_index(["metric", "method"]).loc[("ba_mals", "percentile")]
    assert at(keyed).width == pytest.approx(np.mean(widths), rel=1e-12)
    assert at(plain).width != pytest.approx(at(keyed).width, rel=1e-6)
    pct = lambda t: t[t.method == "percentile"].estimate.tolist()
    assert pct(keyed) == pct(plain) and set(keyed.method) == set(plain.method) - {"bca"}  # no jackknife row-keyed
    with pytest.raises(ValueError, match="keyed must be True or False, got 'yes'"):
        coverage_study(n_sets=3, n=200, n_boot=30, keyed="yes")


def test_messages_show_plain_values_not_numpy_reprs():
    "Values quoted in error messages read as the user wrote them: 2 and 7, not np.int64(2) or np.int64(7)."
    from biasamp_nb import ba_directional
    from biasamp_nb.files import split_table
    from biasamp_nb.captions import caption_ba_inputs
    from biasamp_nb.coco_gb import coco_tables
    msgs = []
    for call in (
        lambda: ba_directional(np.array([[0, 2], [1, 0]]), np.eye(2, dtype=int), np.eye(2, dtype=int), direction="A->T"),
        lambda: split_table(pd.DataFrame({"g": ["woman", "man"], "dog": [2, 0]}), ["g"]),
        lambda: caption_ba_inputs(pd.Series({1: "a man"}), pd.DataFrame({"tie": [1, 0]}, index=[1, 7]),
                                  pd.Series({1: "man", 7: "woman"})),
        lambda: coco_tables(dict(images=[{"id": 1}], categories=[{"id": 1, "name": "person"}],
                                 annotations=[{"image_id": 7, "category_id": 1}]), {"annotations": []}),
    ):
        with pytest.raises(ValueError) as e: call()
        msgs.append(str(e.value))
    assert "(e.g. 2)" in msgs[0] and "values such as 2" in msgs[1]
    assert "(e.g. 7)" in msgs[2] and "image_id 7," in msgs[3]
    assert not any("np." in m for m in msgs), msgs
