"""The swap test of no amplification: exact counts after a swap, its level at the null, its power, and the report's verdicts."""
import numpy as np
import pytest

from biasamp_nb import ba_directional, ba_mals, multi_directional, multi_mals
from biasamp_nb.core import Counts, to_labels, swap_counts
from biasamp_nb.datasets import imsitu_pair
from biasamp_nb.intervals import swap_weights
from biasamp_nb.report import evaluate, verdict


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


def _swap_cases():
    rng = np.random.default_rng(1)
    T, P = (rng.random((80, 4)) < 0.4).astype(np.int8), (rng.random((80, 4)) < 0.4).astype(np.int8)
    A, Ap = (np.eye(2, dtype=np.int8)[rng.integers(0, 2, 80)] for _ in range(2))
    return [(ba_directional, dict(T=T, A=A, T_pred=P, direction="A->T", indicator="sign")),
            (ba_directional, dict(T=T, A=A, A_pred=Ap, direction="T->A")),
            (ba_mals, dict(T=T, A=A, T_pred=P)), (ba_mals, dict(T=T, A=A, T_pred=P, A_pred=Ap)),
            *[(multi_directional, dict(T=T, A=A, direction=d, reference=ref, max_size=2, **pred))
              for d, pred in (("A->T", dict(T_pred=P)), ("T->A", dict(A_pred=Ap))) for ref in ("eval", "train")],
            (multi_mals, dict(T=T, A=A, T_pred=P, max_size=2)), (multi_mals, dict(T=T, A=A, T_pred=P, A_pred=Ap, max_size=2))]


@pytest.mark.parametrize("case", range(10))
def test_each_null_draw_is_the_metric_on_swapped_labels(case):
    "The batched draws (counts after a swap, reference moving with it) equal the metric recomputed on swapped labels."
    f, kw = _swap_cases()[case]
    r = f(**kw, n_null=6, random_state=3)
    masks = np.vstack(list(swap_weights(80, 6, random_state=np.random.SeedSequence([3, 1])))).astype(bool)  # its stream
    for s, drawn in zip(masks, r.null):
        k, sw = dict(kw), lambda X, Y: np.where(s[:, None], Y, X)
        for t, p in (("T", "T_pred"), ("A", "A_pred")):
            if p in kw: k[t], k[p] = sw(kw[t], kw[p]), sw(kw[p], kw[t])
        assert drawn == pytest.approx(f(**k).value, abs=1e-12)
    assert r.floor == pytest.approx(np.mean(r.null)) and r.corrected == pytest.approx(r.value - r.floor)


def test_the_swap_test_holds_its_level_at_the_null():
    "Predictions with exactly the truth's rates: p <= 0.05 in about 5% of data sets (exact for 39 draws), for every metric."
    rejected = {k: [] for k in RUNS}
    for seed in range(150):
        T, A, P = _sim(seed)
        for k, run in RUNS.items():
            r = run(T, A, P, n_null=39, random_state=seed)
            rejected[k].append(r.p_value <= 0.05)
            assert abs(r.corrected) < 5 * np.std(r.null) + 1e-12  # at the null the value sits among its draws
    rates = {k: np.mean(v) for k, v in rejected.items()}
    assert all(r <= 0.09 for r in rates.values()), rates  # Binomial(150, 0.05): above 0.09 in under 1% of suites


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
    flagged, runs = 0, 0
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
            assert v.startswith("not distinguishable") == (r.p_value > 0.05)
    assert runs == 25 * 4 and flagged / runs <= 0.1, flagged


def test_no_test_for_a_metric_without_one_and_bad_n_null():
    T, A, P = _sim(0, n=100)
    with pytest.raises(ValueError, match="n_null must be an integer >= 1"): ba_mals(T, A, P, n_null=0)
    with pytest.raises(ValueError, match="n_null with y_rows='labelled' needs T_train"):
        ba_directional(T, A, P, direction="A->T", y_rows="labelled", n_null=9)
    assert ba_directional(T, A, P, direction="A->T", y_rows="labelled", T_train=T, A_train=A, n_null=9).p_value > 0
    r = ba_directional(T, A, P, direction="A->T")
    assert r.floor is None and r.p_value is None and r.corrected is None and "noise floor" not in r._repr_markdown_()
