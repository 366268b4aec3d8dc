"""Co-occurrence metrics against published numbers, a slow direct formula, and their invariants."""
import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, assume, given, settings, strategies as st

from biasamp_nb import ba_directional, ba_mals, ba_mals_from_bias, bias_score
from biasamp_nb.intervals import BOOT_BLOCKS, bootstrap_weights
from biasamp_nb.datasets import compas, hiring, imsitu_pair, load_mals
from helpers import labelled


# --- published numbers ---------------------------------------------------------------------------

@pytest.mark.parametrize("balanced, direction, published", [
    (False, "T->A", -0.078), (False, "A->T", -0.038), (True, "T->A", 0.000), (True, "A->T", 0.000)])
@pytest.mark.parametrize("pairing", ["random", "agree"])
def test_compas_table3(balanced, direction, published, pairing):
    r = ba_directional(**compas(balanced, pairing=pairing), direction=direction)
    assert round(r.value, 3) == published


def test_compas_hand_values():
    # T->A, unbalanced: every pair contributes -|Δ|; Δ = 1056/2631 - 1229/2631 and 1115/2647 - 874/2647
    expected = -(abs(1056 - 1229) / 2631 + abs(1115 - 874) / 2647) / 2
    assert ba_directional(**compas(), direction="T->A").value == pytest.approx(expected, abs=1e-15)


@pytest.mark.data
def test_mals_reference_results(data_root):
    for name, published in [("coco", 0.0317425), ("imsitu", 0.0502234)]:
        df = load_mals(name)
        bt = pd.DataFrame({"man": df.training_ratio, "woman": 1 - df.training_ratio})
        bp = pd.DataFrame({"man": df.gender_ratio_before_RBA, "woman": 1 - df.gender_ratio_before_RBA})
        assert ba_mals_from_bias(bt, bp).value == pytest.approx(published, abs=5e-8)


def test_hiring_case():
    h = hiring()
    assert ba_directional(**h, direction="A->T").value == pytest.approx(-0.075, abs=1e-15)
    assert ba_mals(**h).value == 0.0
    assert bias_score(h["T_pred"], h["A"]).loc["hired", "woman"] == pytest.approx(0.4)


def test_imsitu_pair_is_invisible_to_single_attribute_metrics():
    m = imsitu_pair()
    assert ba_directional(**m, direction="A->T").value == pytest.approx(0.0, abs=1e-15)
    assert ba_mals(**m).value == pytest.approx(0.0, abs=1e-15)


# --- a slow, obviously correct implementation ------------------------------------------------------

def slow_ba(T, A, Tp, Ap, direction, Ttr, Atr, indicator="binary", y_rows="all"):
    vals = []
    if y_rows == "labelled":
        keep = (Ttr.sum(1) + Atr.sum(1)) > 0
        Ttr, Atr = Ttr[keep], Atr[keep]
    for a in range(A.shape[1]):
        for t in range(T.shape[1]):
            p_at, p_a, p_t = np.mean((Atr[:, a] == 1) & (Ttr[:, t] == 1)), Atr[:, a].mean(), Ttr[:, t].mean()
            # compare as fractions of integers to mirror the exact test
            n = len(Ttr)
            lhs, rhs = round(p_at * n) * n, round(p_a * n) * round(p_t * n)
            if direction == "A->T":
                cond = A[:, a] == 1
                if cond.sum() == 0: continue
                delta = Tp[cond, t].mean() - T[cond, t].mean()
            else:
                cond = T[:, t] == 1
                if cond.sum() == 0: continue
                delta = Ap[cond, a].mean() - A[cond, a].mean()
            if indicator == "sign":
                vals.append(np.sign(lhs - rhs) * delta)
            else:
                y = 1.0 if lhs > rhs else 0.0
                vals.append(y * delta + (1 - y) * (-delta))
    return np.mean(vals) if vals else np.nan


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])
@given(labelled(), labelled(), st.sampled_from(["A->T", "T->A"]), st.sampled_from(["binary", "sign"]),
       st.sampled_from(["all", "labelled"]), st.booleans())
def test_ba_directional_matches_slow_formula(ev, tr, direction, indicator, y_rows, use_train):
    T, A, Tp, Ap = ev
    Ttr, Atr = (tr[0], tr[1]) if use_train else (T, A)
    assume(Ttr.shape[1] == T.shape[1] and Atr.shape[1] == A.shape[1])
    kw = dict(T_train=Ttr, A_train=Atr) if use_train else {}
    r = ba_directional(T, A, Tp, Ap, direction=direction, indicator=indicator, y_rows=y_rows, **kw)
    expected = slow_ba(T, A, Tp, Ap, direction, Ttr, Atr, indicator, y_rows)
    if np.isnan(expected): assert np.isnan(r.value)
    else: assert r.value == pytest.approx(expected, abs=1e-12)


def slow_mals(T, A, Tp, Ap, Ttr, Atr):
    k, total, tasks = A.shape[1], 0.0, 0
    for t in range(T.shape[1]):
        ctr = np.array([np.sum((Atr[:, a] == 1) & (Ttr[:, t] == 1)) for a in range(k)])
        cpr = np.array([np.sum((Ap[:, a] == 1) & (Tp[:, t] == 1)) for a in range(k)])
        if ctr.sum() == 0 or cpr.sum() == 0: continue
        tasks += 1
        for a in range(k):
            if ctr[a] / ctr.sum() > 1 / k: total += cpr[a] / cpr.sum() - ctr[a] / ctr.sum()
    return total / tasks if tasks else np.nan


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])
@given(labelled(), labelled(), st.booleans(), st.booleans())
def test_ba_mals_matches_slow_formula(ev, tr, use_train, use_apred):
    T, A, Tp, Ap = ev
    Ttr, Atr = (tr[0], tr[1]) if use_train else (T, A)
    assume(Ttr.shape[1] == T.shape[1] and Atr.shape[1] == A.shape[1])
    kw = dict(T_train=Ttr, A_train=Atr) if use_train else {}
    r = ba_mals(T, A, Tp, Ap if use_apred else None, **kw)
    expected = slow_mals(T, A, Tp, Ap if use_apred else A, Ttr, Atr)
    if np.isnan(expected): assert np.isnan(r.value)
    else: assert r.value == pytest.approx(expected, abs=1e-12)


# --- invariants ------------------------------------------------------------------------------------

@settings(max_examples=60, deadline=None)
@given(labelled())
def test_perfect_predictions_give_zero(x):
    T, A, _, _ = x
    for direction in ("A->T", "T->A"):
        v = ba_directional(T, A, T, A, direction=direction).value
        assert np.isnan(v) or v == 0.0
    m = ba_mals(T, A, T, A).value
    assert np.isnan(m) or m == 0.0


@settings(max_examples=60, deadline=None)
@given(labelled(), st.sampled_from(["A->T", "T->A"]))
def test_swapping_groups_or_tasks_leaves_ba_unchanged(x, direction):
    T, A, Tp, Ap = x
    v = ba_directional(T, A, Tp, Ap, direction=direction).value
    rev = slice(None, None, -1)
    v_groups = ba_directional(T, A[:, rev], Tp, Ap[:, rev], direction=direction).value
    v_tasks = ba_directional(T[:, rev], A, Tp[:, rev], Ap, direction=direction).value
    for w in (v_groups, v_tasks):
        assert (np.isnan(v) and np.isnan(w)) or w == pytest.approx(v, abs=1e-12)


def test_dropped_pairs_are_counted():
    T = np.array([[1, 0], [0, 0], [0, 0], [0, 0]]); A = np.eye(2, dtype=int)[[0, 0, 1, 1]]
    r = ba_directional(T, A, A_pred=A[:, ::-1], direction="T->A")
    assert r.n_dropped == 2  # task t1 never occurs: both of its pairs are undefined
    assert r.value == pytest.approx(-1.0)  # t0 occurs once, with a0 (y=1); the model calls it a1


def test_sign_indicator_ignores_independent_pairs():
    b = compas(balanced=True)
    r = ba_directional(**b, direction="T->A", indicator="sign")
    assert (r.per_pair["y"] == 0).all() and r.value == 0.0


def test_bootstrap_equals_naive_resampling():
    ex = compas()
    r = ba_directional(**ex, direction="A->T", n_boot=5, random_state=11)
    # 5,278 rows: the resamples draw BOOT_BLOCKS random blocks of rows; the naive resample repeats each row its weight
    bw = next(bootstrap_weights(len(ex["T"]), 5, random_state=11, blocks=BOOT_BLOCKS))
    W = np.asarray(bw)
    assert np.ptp(np.bincount(bw.block)) == 1  # blocks of 5 or 6 rows
    for b in range(5):
        rows = np.repeat(np.arange(len(ex["T"])), W[b].astype(int))
        y_fixed = dict(T_train=ex["T"], A_train=ex["A"])  # y is held fixed at the full evaluation truth
        naive = ba_directional(ex["T"].iloc[rows], ex["A"].iloc[rows], ex["T_pred"].iloc[rows], direction="A->T", **y_fixed)
        assert r.boot[b] == pytest.approx(naive.value, abs=1e-12)
    assert r.ci[0] <= r.value <= r.ci[1]


def test_mals_bootstrap_is_consistent():
    ex = compas()
    r = ba_mals(**ex, n_boot=4, random_state=3)
    W = np.asarray(next(bootstrap_weights(len(ex["T"]), 4, random_state=3, blocks=BOOT_BLOCKS)))
    for b in range(4):
        rows = np.repeat(np.arange(len(ex["T"])), W[b].astype(int))
        naive = ba_mals(ex["T"].iloc[rows], ex["A"].iloc[rows], ex["T_pred"].iloc[rows], ex["A_pred"].iloc[rows],
                        T_train=ex["T"], A_train=ex["A"])
        assert r.boot[b] == pytest.approx(naive.value, abs=1e-12)


@pytest.mark.parametrize("kwargs, msg", [
    (dict(direction="A2T"), "direction must be one of 'A->T', 'T->A'"),
    (dict(direction="T->A", A_pred=None), "pass A_pred"),
    (dict(direction="A->T", T_pred=np.full((5278, 2), 0.3)), "T_pred has values other than 0/1"),
    (dict(direction="A->T", T_pred=np.full((10, 2), 1)), "T_pred has 10 rows but T has 5278"),
    (dict(direction="A->T", indicator="signs"), "indicator must be one of 'binary', 'sign'"),
    (dict(direction="A->T", n_boot=-3), "n_boot must be an integer >= 1"),
    (dict(direction="A->T", ci_level=1.5, n_boot=10), "ci_level must be a number strictly between 0 and 1"),
])
def test_ba_directional_bad_input(kwargs, msg):
    ex = compas()
    args = dict(T=ex["T"], A=ex["A"], T_pred=ex["T_pred"], A_pred=ex["A_pred"])
    args.update(kwargs)
    with pytest.raises(ValueError, match=msg):
        ba_directional(**args)


def test_nan_and_empty_group_are_refused():
    ex = compas()
    T = ex["T"].astype(float); T.iloc[3, 1] = np.nan
    with pytest.raises(ValueError, match="T has NaN in column 'recid'"):
        ba_directional(T, ex["A"], ex["T_pred"], direction="A->T")
    A = ex["A"].copy(); A["other"] = 0
    with pytest.raises(ValueError, match="A has an empty group 'other'"):
        ba_directional(ex["T"], A, ex["T_pred"], direction="A->T")
    with pytest.raises(ValueError, match="bias_train and bias_pred must have the same tasks"):
        ba_mals_from_bias(pd.DataFrame({"m": [0.5]}), pd.DataFrame({"w": [0.5]}))


def test_result_to_dict_is_json():
    r = ba_directional(**compas(), direction="T->A", n_boot=20, random_state=0)
    d = json.loads(json.dumps(r.to_dict()))
    assert d["value"] == pytest.approx(r.value) and len(d["per_pair"]) == 4 and d["info"]["direction"] == "T->A"
    assert "BA→ (T->A)" in r._repr_markdown_() and float(r) == r.value


def test_mals_reference_columns_are_named_for_the_reference():
    "The reference's counts and scores read c_train/bias_train only when training labels were given, else c_test."
    d = {k: v for k, v in hiring().items() if k in ("T", "A", "T_pred")}
    own, given_ = ba_mals(**d).per_pair, ba_mals(**d, T_train=d["T"], A_train=d["A"]).per_pair
    assert {"c_test", "bias_test"} <= set(own) and not {"c_train", "bias_train"} & set(own)
    assert {"c_train", "bias_train"} <= set(given_) and not {"c_test", "bias_test"} & set(given_)
    renamed = own.rename(columns={"c_test": "c_train", "bias_test": "bias_train"})
    pd.testing.assert_frame_equal(renamed, given_)  # the same reference, only its name differs
    want = bias_score(d["T"], d["A"]).stack()  # bias_test is the evaluation truth's bias score of each pair
    got = own.set_index(["task", "group"])["bias_test"]
    np.testing.assert_array_equal(got.to_numpy(float), want.loc[list(got.index)].to_numpy(float))


def test_block_bootstrap_is_the_same_for_every_input_type():
    """Beyond BOOT_BLOCKS rows the resamples are random blocks of rows, counted from the blocks' totals where the
    labels allow it and from the row weights they stand for otherwise (torch): the same draws either way."""
    rng = np.random.default_rng(0)
    n = 3 * BOOT_BLOCKS
    T = (rng.random((n, 5)) < 0.3).astype(np.int8)
    A = np.eye(2, dtype=np.int8)[rng.integers(0, 2, n)]
    P = T ^ (rng.random((n, 5)) < 0.1).astype(np.int8)
    import scipy.sparse as sp
    forms = [(T, P), (T.astype(float), P.astype(float)), (sp.csr_matrix(T), sp.csr_matrix(P)),
             (pd.DataFrame(T), pd.DataFrame(P))]
    try:
        import torch
        forms.append((torch.tensor(T), torch.tensor(P)))
    except ImportError: pass
    ref = ba_mals(T, A, P, n_boot=30, random_state=1)
    assert np.ptp(ref.boot) > 0
    for t, p in forms[1:]:
        np.testing.assert_allclose(ba_mals(t, A, p, n_boot=30, random_state=1).boot, ref.boot, rtol=0, atol=1e-12)
        np.testing.assert_allclose(ba_directional(t, A, p, direction="A->T", n_boot=30, random_state=1).boot,
                                   ba_directional(T, A, P, direction="A->T", n_boot=30, random_state=1).boot,
                                   rtol=0, atol=1e-12)
