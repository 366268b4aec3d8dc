"""The swap test of no amplification: exact counts after a swap, its level at the null, its power, and the report's verdicts."""
import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from scipy.stats import norm

from biasamp_nb import ba_directional, ba_mals, multi_directional, multi_mals
from biasamp_nb.core import Counts, Inputs, to_labels, swap_counts
from biasamp_nb.datasets import imsitu_pair
from biasamp_nb.intervals import swap_weights
from biasamp_nb.report import drivers, evaluate, evidence_order, verdict


def _sim(seed, n=600, k=8, amp=0.0):
    "Two groups, k tasks whose rates lean by group; predictions drawn from the truth's rates moved `amp` towards the lean."
    rng = np.random.default_rng(seed)
    g = rng.integers(0, 2, n); A = np.eye(2, dtype=np.int8)[g]
    base, tilt = rng.uniform(0.05, 0.4, k), rng.uniform(-0.05, 0.05, k)
    lean = np.where(g[:, None] == 1, tilt, -tilt)
    T = (rng.random((n, k)) < base + lean).astype(np.int8)
    P = (rng.random((n, k)) < np.clip(base + lean + amp * np.sign(lean), 0, 1)).astype(np.int8)
    return T, A, P


RUNS = {"BA→": lambda T, A, P, **kw: ba_directional(T, A, P, direction="A->T", **kw),
        "BA_MALS": lambda T, A, P, **kw: ba_mals(T, A, P, **kw),
        "Multi→": lambda T, A, P, **kw: multi_directional(T, A, P, direction="A->T", max_size=2, min_count=10, **kw),
        "Multi_MALS": lambda T, A, P, **kw: multi_mals(T, A, P, max_size=2, min_count=10, **kw)}


@pytest.mark.parametrize("with_t, with_a", [(True, False), (False, True), (True, True)])
def test_swapped_counts_equal_the_counts_of_swapped_labels(with_t, with_a):
    rng = np.random.default_rng(4)
    T, P = (rng.random((50, 5)) < 0.4).astype(np.int8), (rng.random((50, 5)) < 0.4).astype(np.int8)
    A = np.eye(3, dtype=np.int8)[rng.integers(0, 3, 50)]; Ap = np.eye(3, dtype=np.int8)[rng.integers(0, 3, 50)]
    S = rng.random(50) < 0.5
    lab = lambda X, arg: to_labels(X, arg)
    count = lambda T_, A_, P_, Ap_, w=None: Counts.from_labels(lab(T_, "T"), lab(A_, "A"), lab(P_, "T_pred") if with_t else None,
                                                               lab(Ap_, "A_pred") if with_a else None, weights=w)
    whole = count(T, A, P, Ap)
    part = count(T, A, P, Ap, S[None].astype(np.float32))  # the batched counts of the swapped rows, as a test draws them
    sw = lambda X, Y: np.where(S[:, None], Y, X)
    T2, P2 = (sw(T, P), sw(P, T)) if with_t else (T, P)
    A2, Ap2 = (sw(A, Ap), sw(Ap, A)) if with_a else (A, Ap)
    want, got = count(T2, A2, P2, Ap2), swap_counts(whole, part)
    for f in ("n", "a", "t", "at", "a_pred", "t_pred", "at_pred", "apred_t", "apred_tpred"):
        w, g = getattr(want, f), getattr(got, f)
        assert (w is None) == (g is None), f
        if w is not None: np.testing.assert_array_equal(np.asarray(g)[0] if np.ndim(g) > np.ndim(w) else g, w, err_msg=f)


def _swap_cases(T=None, A=None, P=None, Ap=None):
    rng = np.random.default_rng(1)
    if T is None:
        T, P = (rng.random((80, 4)) < 0.4).astype(np.int8), (rng.random((80, 4)) < 0.4).astype(np.int8)
        A, Ap = (np.eye(2, dtype=np.int8)[rng.integers(0, 2, 80)] for _ in range(2))
    return [(ba_directional, dict(T=T, A=A, T_pred=P, direction="A->T", indicator="sign")),
            (ba_directional, dict(T=T, A=A, A_pred=Ap, direction="T->A")),
            (ba_mals, dict(T=T, A=A, T_pred=P)), (ba_mals, dict(T=T, A=A, T_pred=P, A_pred=Ap)),
            *[(multi_directional, dict(T=T, A=A, direction=d, reference=ref, max_size=2, **pred))
              for d, pred in (("A->T", dict(T_pred=P)), ("T->A", dict(A_pred=Ap))) for ref in ("eval", "train")],
            (multi_mals, dict(T=T, A=A, T_pred=P, max_size=2)), (multi_mals, dict(T=T, A=A, T_pred=P, A_pred=Ap, max_size=2))]


def _drawn_masks(kw, n_null, seed, n=80):
    """The swap test's masks over every row, as its draws swap them: a coin from its stream (`swap_weights`) for each
    row where a prediction passed in `kw` differs from its truth, in order, and no swap elsewhere."""
    moved = np.zeros(n, bool)
    for t, p in (("T", "T_pred"), ("A", "A_pred")):
        if p in kw: moved |= (sp.csr_matrix(kw[t]).toarray() != sp.csr_matrix(kw[p]).toarray()).any(1)
    rows = np.flatnonzero(moved)
    coins = np.vstack(list(swap_weights(len(rows), n_null, random_state=np.random.SeedSequence([seed, 1]))))
    masks = np.zeros((n_null, n), bool); masks[:, rows] = coins
    return masks

@pytest.mark.parametrize("case", range(10))
def test_each_null_draw_is_the_metric_on_swapped_labels(case):
    "The batched draws (counts after a swap, reference moving with it) equal the metric recomputed on swapped labels."
    f, kw = _swap_cases()[case]
    r = f(**kw, n_null=19, random_state=3)
    masks = _drawn_masks(kw, 19, 3)  # its stream: a coin for each moved row
    for s, drawn in zip(masks, r.null):
        k, sw = dict(kw), lambda X, Y: np.where(s[:, None], Y, X)
        for t, p in (("T", "T_pred"), ("A", "A_pred")):
            if p in kw: k[t], k[p] = sw(kw[t], kw[p]), sw(kw[p], kw[t])
        assert drawn == pytest.approx(f(**k).value, abs=1e-12)
    assert r.floor == pytest.approx(np.mean(r.null)) and r.corrected == pytest.approx(r.value - r.floor)


def _mostly_right(n=3000, k=5):
    "Predictions equal to the truth except in a tenth of the rows (tasks) and a fortieth (groups)."
    rng = np.random.default_rng(5)
    T = (rng.random((n, k)) < 0.3).astype(np.int8); A = np.eye(2, dtype=np.int8)[rng.integers(0, 2, n)]
    P, Ap, r = T.copy(), A.copy(), rng.choice(n, n // 10, replace=False)
    P[r] = rng.random((len(r), k)) < 0.3
    Ap[r[:n // 40]] = Ap[r[:n // 40], ::-1]
    return T, A, P, Ap


@pytest.mark.parametrize("case", range(10))
@pytest.mark.parametrize("sparse", [False, True])
def test_the_swap_test_draws_coins_for_the_moved_rows_alone(case, sparse, monkeypatch):
    """Coins are drawn only for the rows where a prediction differs, and those rows alone are counted: every draw is
    the metric recomputed on the labels those coins swap, and each pair's se the SD of its recomputed Δ."""
    T, A, P, Ap = _mostly_right()
    if sparse: T, P = sp.csr_matrix(T), sp.csr_matrix(P)
    f, kw = _swap_cases(T, A, P, Ap)[case]
    seen, moved_rows = [], Inputs.moved_rows
    monkeypatch.setattr(Inputs, "moved_rows", lambda self: seen.append(moved_rows(self)) or seen[-1])
    r = f(**kw, n_null=19, random_state=3)
    want = np.zeros(3000, bool)
    for t, p in (("T", "T_pred"), ("A", "A_pred")):
        if p in kw: want |= (np.asarray(sp.csr_matrix(kw[t]).toarray()) != sp.csr_matrix(kw[p]).toarray()).any(1)
    assert len(seen) == 1 and 0 < len(seen[0]) < 400 and seen[0].tolist() == np.flatnonzero(want).tolist()
    dense = {k: v.toarray() if sp.issparse(v) else v for k, v in kw.items()}
    draws = []
    for s in _drawn_masks(kw, 19, 3, n=3000):
        k, sw = dict(dense), lambda X, Y: np.where(s[:, None], Y, X)
        for t, p in (("T", "T_pred"), ("A", "A_pred")):
            if p in kw: k[t], k[p] = sw(dense[t], dense[p]), sw(dense[p], dense[t])
        got = f(**k)
        draws.append((got.value, _raw_delta(got.per_pair)))
    np.testing.assert_allclose(r.null, [v for v, _ in draws], rtol=0, atol=1e-12)
    pp = r.per_pair.set_index(list(r.per_pair.columns[:2]))
    se = pd.concat([d for _, d in draws], axis=1).std(axis=1, ddof=1).reindex(pp.index)
    np.testing.assert_allclose(pp["se"].to_numpy(float), se.to_numpy(float), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("case", [0, 2, 4, 8])
def test_a_prediction_equal_to_the_truth_moves_no_row_and_every_draw_is_the_value(case):
    T, A, _, _ = _mostly_right()
    f, kw = _swap_cases(T, A, T.copy(), A.copy())[case]
    r = f(**kw, n_null=19, random_state=0)
    np.testing.assert_array_equal(r.null, np.full(19, r.value))
    assert r.p_value == 1.0


def test_the_swap_test_holds_its_level_at_the_null():
    "Predictions with exactly the truth's rates: p <= 0.05 in about 5% of data sets (exact for 39 draws), for every metric."
    from scipy.stats import binom
    sets, rejected = 400, {k: [] for k in RUNS}
    for seed in range(sets):
        T, A, P = _sim(seed)
        for k, run in RUNS.items():
            r = run(T, A, P, n_null=39, random_state=seed)
            rejected[k].append(r.p_value <= 0.05)
            assert abs(r.corrected) < 5 * np.std(r.null) + 1e-12  # at the null the value sits among its draws
    most = binom.isf(0.001, sets, 0.05)  # an exact 5% test rejects more often than this in 0.1% of suites
    assert all(sum(v) <= most for v in rejected.values()), (most, {k: sum(v) for k, v in rejected.items()})


def test_the_swap_test_sees_a_small_amplification():
    "Predictions moved 0.04 towards every lean: the test rejects in most data sets, and the floor stays near the null's."
    for k, run in RUNS.items():
        p = [run(*_sim(seed, n=2000, amp=0.04), n_null=39, random_state=seed).p_value for seed in range(12)]
        assert np.mean(np.array(p) <= 0.05) >= 0.75, (k, p)


def test_a_rate_preserving_noise_model_is_not_called_a_finding():
    "Errors that keep every (group, task) rate: verdicts say noise in about 95% of runs, where they used to say 'changed'."
    d = imsitu_pair()
    T, A = d["T"].to_numpy(), d["A"].to_numpy()
    g = A.argmax(1)
    flagged, named, runs = 0, 0, 0
    for seed in range(25):
        rng = np.random.default_rng(seed)
        other = np.empty(len(g), int)
        for a in np.unique(g):
            rows = np.flatnonzero(g == a); other[rows] = rng.choice(rows, len(rows))
        P = np.where((rng.random(len(g)) < 0.3)[:, None], T[other], T)  # 30% of rows copy a random row of their group
        res = evaluate(T, A, T_pred=P, n_null=39, random_state=seed, min_count=1)
        for name, r in res.items():
            if r.p_value is None: continue
            runs += 1; v = verdict(name, r)
            flagged += not v.startswith("not distinguishable from noise")
            named += drivers(r) != "no pair beyond noise"
            assert v.startswith(("not distinguishable", "mean within noise")) == (r.p_value > 0.05)
    assert runs == 25 * 4 and flagged / runs <= 0.1 and named / runs <= 0.1, (flagged, named)


def test_no_test_for_a_metric_without_one_and_bad_n_null():
    T, A, P = _sim(0, n=100)
    with pytest.raises(ValueError, match="n_null must be an integer >= 1"): ba_mals(T, A, P, n_null=0)
    with pytest.raises(ValueError, match="n_null with y_rows='labelled' needs T_train"):
        ba_directional(T, A, P, direction="A->T", y_rows="labelled", n_null=19)
    assert ba_directional(T, A, P, direction="A->T", y_rows="labelled", T_train=T, A_train=A, n_null=19).p_value > 0
    for bad in (1, 9, 18):  # too few draws for any p-value to reach 0.05: refused, for every kind of metric
        with pytest.raises(ValueError, match=f"n_null={bad} cannot reach the test's level"): ba_mals(T, A, P, n_null=bad)
    from biasamp_nb.predictive import dpa
    with pytest.raises(ValueError, match="n_null=1 cannot reach the test's level"):
        dpa(T, A, T_pred=P, direction="A->T", n_trials=2, n_null=1)
    r = ba_directional(T, A, P, direction="A->T")
    assert r.floor is None and r.p_value is None and r.corrected is None and "noise floor" not in r._repr_markdown_()


def _raw_delta(pp):
    "Each pair's change, keyed by (group, task or combination): the bias score's for the MALS metrics, else the rate's."
    ref = "bias_train" if "bias_train" in pp else "bias_test"  # named for the reference the metric used
    d = pp["bias_pred"] - pp[ref] if "bias_pred" in pp else pp["delta"]
    return pd.Series(d.to_numpy(float), index=pd.MultiIndex.from_arrays([pp.iloc[:, 0], pp.iloc[:, 1]]))


@pytest.mark.parametrize("case", range(10))
def test_each_pair_se_is_the_sd_of_its_delta_over_swapped_labels(case):
    "Per-pair evidence from the same draws: `se` is the SD of the pair's Δ recomputed on swapped labels, `z` its distance."
    f, kw = _swap_cases()[case]
    r = f(**kw, n_null=19, random_state=5)
    masks = _drawn_masks(kw, 19, 5)
    draws = []
    for s in masks:
        k, sw = dict(kw), lambda X, Y: np.where(s[:, None], Y, X)
        for t, p in (("T", "T_pred"), ("A", "A_pred")):
            if p in kw: k[t], k[p] = sw(kw[t], kw[p]), sw(kw[p], kw[t])
        draws.append(_raw_delta(f(**k).per_pair))
    D = pd.concat(draws, axis=1)
    obs, pp = _raw_delta(r.per_pair), r.per_pair.set_index(list(r.per_pair.columns[:2]))
    se = D.std(axis=1, ddof=1).reindex(pp.index)
    np.testing.assert_allclose(pp["se"].to_numpy(float), se.to_numpy(float), rtol=1e-9, atol=1e-12)
    z = ((obs - D.mean(axis=1)) / se.where(se > 0)).reindex(pp.index)
    np.testing.assert_allclose(pp["z"].to_numpy(float), z.to_numpy(float), rtol=1e-9, atol=1e-12)
    p = 2 * norm.sf(np.abs(z.dropna().to_numpy(float)))  # q by hand: p·m/rank, cumulative min from the top
    order = np.argsort(p); m = len(p)
    bh = np.minimum.accumulate((p[order] * m / np.arange(1, m + 1))[::-1])[::-1]
    want = np.empty(m); want[order] = np.minimum(bh, 1)
    np.testing.assert_allclose(pp["q"].dropna().to_numpy(float), want, rtol=1e-9)
    assert pp["q"].isna().equals(pp["z"].isna())
    if "bias_pred" in pp:  # support: the fewer of the task's training and predicted rows; else the conditioning rows
        ref = "c_train" if "c_train" in pp else "c_test"
        rows = pp.groupby(level=1)[[ref, "c_pred"]].transform("sum").min(axis=1)
    else: rows = pp["n_cond"]
    assert (pp["support"] == rows).all() and (pp["low_support"] == (rows < r.info.get("min_count", 10))).all()


def test_a_rate_pair_se_is_root_discordant_rows_over_its_rows():
    "For a rate Δ = (c_pred − c_test)/n_cond a swap flips the sign of each of the D disagreeing rows: se = √D / n_cond."
    T, A, P = _sim(3, n=1500, k=5)
    r = ba_directional(T, A, P, direction="A->T", n_null=1999, random_state=0)
    disagree = A.T.astype(int) @ (T != P).astype(int)  # D for every (group, task)
    want = np.sqrt(disagree) / A.sum(axis=0)[:, None]
    pp = r.per_pair
    got = np.array([want[int(g[-1]), int(t[-1])] for g, t in zip(pp.group, pp.task)])  # names group0.., task0..
    np.testing.assert_allclose(pp["se"], got, rtol=0.1)  # 1,999 draws: the SD is within ~2% of its value
    sampling = np.sqrt((got ** 2 * pp.n_cond - pp.delta ** 2) / pp.n_cond)  # (D/n − Δ²)/n: the SE of Δ itself
    assert (sampling <= got + 1e-15).all()  # so Δ ± 1.96 se is conservative


def _real(data_root, name):
    "COCO objects (val) or imSitu verbs (test) with gender, as 0/1 frames."
    if name == "coco":
        df = pd.read_csv(data_root / "coco_objects" / "coco_objects_gender_val.csv")
        T = df[df.columns[df.columns.get_loc("gender_vec_idx1") + 1:]]
    else:
        df = pd.read_csv(data_root / "imsitu" / "imsitu_verbs_gender_test.csv")
        T = pd.get_dummies(df["verb"])
    return T.astype(np.int8), pd.get_dummies(df["gender"]).astype(np.int8)


def _rate_preserving(T, A, rng, share=0.3):
    "Predictions that copy a random row of the same group in `share` of the rows: every rate kept in expectation."
    g = A.to_numpy().argmax(1); other = np.empty(len(g), int)
    for a in np.unique(g):
        rows = np.flatnonzero(g == a); other[rows] = rng.choice(rows, len(rows))
    X = T.to_numpy()
    return pd.DataFrame(np.where((rng.random(len(g)) < share)[:, None], X[other], X), columns=T.columns)


@pytest.mark.parametrize("name", ["coco", "imsitu"])
def test_a_planted_bias_on_real_labels_is_the_first_driver(data_root, name):
    """Rate-preserving errors name no driver; drop one label's predictions for women (half of them on COCO, all on
    imSitu's ~20 rows per verb and gender) and the metrics that can see it name that label first."""
    T, A = _real(data_root, name)
    w = A["woman"].to_numpy() == 1
    runs = {"BA→": lambda P, **kw: ba_directional(T, A, P, direction="A->T", min_count=10, **kw),
            "Multi→": lambda P, **kw: multi_directional(T, A, P, direction="A->T", max_size=2, min_count=10, **kw),
            "BA_MALS": lambda P, **kw: ba_mals(T, A, P, min_count=10, **kw),
            "Multi_MALS": lambda P, **kw: multi_mals(T, A, P, max_size=2, min_count=10, **kw)}
    see = list(runs) if name == "coco" else ["BA→", "Multi→"]  # one verb's bias score on ~20 rows is not always seen
    for seed in range(3):
        rng = np.random.default_rng(seed)
        P = _rate_preserving(T, A, rng)
        assert all(drivers(f(P, n_null=99, random_state=seed)) == "no pair beyond noise" for f in runs.values())
        label = np.minimum(T[w].sum(), T[~w].sum()).sort_values(ascending=False).index[seed]
        drop = w & (P[label].to_numpy() == 1) & (rng.random(len(P)) < (0.5 if name == "coco" else 1.0))
        P.loc[drop, label] = 0
        if name == "imsitu":  # one verb per image: the dropped rows get another verb
            others = [c for c in T.columns if c != label]
            for row, verb in zip(np.flatnonzero(drop), rng.choice(others, drop.sum())): P.loc[row, verb] = 1
        for m in see:
            r = runs[m](P, n_null=99, random_state=seed)
            first = r.per_pair.loc[evidence_order(r)[0]]
            assert first.iloc[1] == label and first.q <= 0.05 and drivers(r).split(" · ")[1].startswith(label), (m, label)


@pytest.mark.parametrize("scenario, n", [("no amplification", 500), ("moderate amplification", 3000)])
def test_bracket_interval_covers_where_basic_and_percentile_do_not(scenario, n):
    from biasamp_nb.coverage import calibration_sets, calibration_table
    t = calibration_table(calibration_sets(scenario, n, 40, n_null=99, n_boot=100, random_state=7)).set_index("metric")
    multi = ["multi_directional", "multi_mals"]
    assert (t.loc[multi, "coverage bracket"] >= 0.9).all()          # 0.95 nominal; 40 sets leave a few points of noise
    assert t.loc["multi_directional", ["coverage percentile", "coverage basic"]].max() < 0.5  # what the bracket fixes
    assert (t["coverage percentile"].loc[["ba_directional", "ba_mals"]] >= 0.85).all()  # signed: percentile is fine
    if scenario.startswith("no amplification"):
        assert (t.rejects <= 0.15).all()             # a 5% test: 7 or more rejections of 40 has chance < 0.005
        assert (t.loc[multi, "corrected"].abs() < 0.25 * t.loc[multi, "floor"]).all()  # the corrected value sits near 0
    else:
        assert (t.loc[["ba_directional", "multi_directional"], "rejects"] == 1).all()  # 0.05 on 4 tasks: always found
        assert (t.loc[multi, "corrected"] < t.loc[multi, "truth"]).all()   # biased down, as the bracket assumes
        assert (t.loc[multi, "value"] > t.loc[multi, "truth"]).all()       # and the plug-in value up


def _rate_keeping(seed, n=400, amp=False):
    "One task leaning by group; predictions with the truth's rates (errors both ways), or copying the group."
    rng = np.random.default_rng(seed)
    A = np.eye(2, dtype=np.int8)[rng.integers(0, 2, n)]
    T = (rng.random(n) < np.where(A[:, 1] == 1, 0.6, 0.4)).astype(np.int8)
    if amp: return T[:, None], A, A[:, [1]]
    p = T.mean()
    flip = rng.random(n) < np.where(T == 1, 0.2, 0.2 * p / (1 - p))  # as many 1 -> 0 as 0 -> 1 in expectation
    return T[:, None], A, (T ^ flip)[:, None]


def test_predictive_swap_draws_are_the_metric_on_swapped_labels():
    from biasamp_nb.predictive import dpa, leakage_amplification
    T, A, P = _rate_keeping(0)
    masks = next(swap_weights(len(T), 19, random_state=np.random.SeedSequence([5, 1]))).astype(bool)
    seeds = np.random.default_rng(np.random.SeedSequence([5, 2])).integers(0, 2**31, size=19)
    r = dpa(T, A, T_pred=P, direction="A->T", n_trials=2, n_null=19, random_state=5)
    lk = leakage_amplification(T, A, P, n_trials=2, n_null=19, random_state=5)
    for b in range(3):
        m = masks[b][:, None]
        Ts, Ps = np.where(m, P, T), np.where(m, T, P)
        assert r.null[b] == dpa(Ts, A, T_pred=Ps, direction="A->T", n_trials=2, random_state=int(seeds[b])).value
        assert lk.null[b] == leakage_amplification(Ts, A, Ps, n_trials=2, random_state=int(seeds[b])).value
    assert r.floor == pytest.approx(r.null.mean()) and 0 < r.p_value <= 1


def test_predictive_swap_test_level_and_power():
    from biasamp_nb.predictive import dpa
    p0 = [dpa(*_rate_keeping(s)[:2], T_pred=_rate_keeping(s)[2], direction="A->T", n_trials=2, n_null=39,
              random_state=s).p_value for s in range(30)]
    assert sum(p <= 0.05 for p in p0) <= 5  # a 5% test: 6 or more of 30 has chance 0.016
    copying = [_rate_keeping(s, n=1000, amp=True) for s in range(3)]
    p1 = [dpa(T, A, T_pred=P, direction="A->T", n_trials=3, n_null=39, random_state=s).p_value
          for s, (T, A, P) in enumerate(copying)]
    assert all(p == 2 / 40 for p in p1)  # a model that copies the group: no swap comes near it


def test_bracket_is_refused_where_it_does_not_apply():
    T, A, P = _sim(0)
    with pytest.raises(ValueError, match="is signed"):
        ba_mals(T, A, P, n_boot=20, n_null=19, ci_method="bracket")
    with pytest.raises(ValueError, match="pass n_null="):
        multi_mals(T, A, P, max_size=2, n_boot=20, ci_method="bracket")
    r = multi_mals(T, A, P, max_size=2, n_boot=20, random_state=0)  # no n_null: the default makes the draws it needs
    assert r.ci_method == "bracket" and r.floor is not None and r.info["n_null"] == 199
    r = multi_mals(T, A, P, max_size=2, n_boot=20, random_state=0, ci_method="basic")  # asked for: no draws
    assert r.ci_method == "basic" and r.floor is None


def test_lic_null_draws_level_and_power():
    from biasamp_nb.caption_leakage import lic, permute_captions, synthetic_captions
    from biasamp_nb.registry import null_seeds
    d = synthetic_captions(n=300, random_state=2)
    r = lic(d.human, d.model, d.gender, n_seeds=2, n_null=19, random_state=5)
    assert np.array_equal(lic(d.human, d.model, d.gender, n_seeds=2, n_null=19, random_state=5, n_jobs=2).null, r.null)
    for b, seed in enumerate(null_seeds(19, 5)[:3]):  # each draw is LIC on the captions permuted with the draw's seed
        h, m = permute_captions(d.human, d.model, int(seed))
        assert r.null[b] == lic(h, m, d.gender, n_seeds=2, random_state=int(seed)).value
    def null_p(s):  # no amplification: human and model captions as gendered as each other
        x = synthetic_captions(n=300, human_skew=0.7, model_skew=0.7, random_state=s)
        return lic(x.human, x.model, x.gender, n_seeds=2, n_null=39, random_state=s, n_jobs=2).p_value
    p0 = [null_p(s) for s in range(30)]
    assert sum(p <= 0.05 for p in p0) <= 5  # a 5% test: 6 or more of 30 has chance 0.016
    assert lic(d.human, d.model, d.gender, n_seeds=2, n_null=39, random_state=0).p_value == 2 / 40
