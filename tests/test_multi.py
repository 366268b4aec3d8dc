"""Multi-attribute metrics: mined M against brute force, Multi→ and Multi_MALS against slow direct formulas."""
from itertools import combinations
import re

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from hypothesis.extra.numpy import arrays

from biasamp_nb import ba_directional, multi_directional, multi_mals, task_combinations
from biasamp_nb.intervals import bootstrap_weights
from biasamp_nb.datasets import compas, imsitu_pair
from helpers import break_copies

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def splits(draw, max_rows=40, max_tasks=6):
    "Train and evaluation splits over the same tasks, with predictions; two or three one-hot groups."
    kt, ka = draw(st.integers(1, max_tasks)), draw(st.integers(2, 3))
    out = {}
    for name in ("train", "eval"):
        n = draw(st.integers(ka, max_rows))
        p = draw(st.floats(0.2, 0.8))
        u = draw(arrays(np.float64, (n, kt), elements=st.floats(0, 1)))
        T = (u < p).astype(np.int8)
        g = draw(arrays(np.int64, n, elements=st.integers(0, ka - 1)))
        g[:ka] = np.arange(ka)
        A = np.eye(ka, dtype=np.int8)[g]
        out[name] = (break_copies(T, A), A)
    n = len(out["eval"][0])
    Tp = draw(arrays(np.int8, (n, kt), elements=st.integers(0, 1)))
    Ap = np.eye(ka, dtype=np.int8)[draw(arrays(np.int64, n, elements=st.integers(0, ka - 1)))]
    return out["train"], out["eval"], Tp, Ap


def contains(T, m):
    return np.all(T[:, list(m)] == 1, axis=1)


def brute_M(T, Ttr, max_size, min_count):
    return [m for s in range(1, max_size + 1) for m in combinations(range(T.shape[1]), s)
            if contains(Ttr, m).sum() >= min_count and contains(T, m).sum() >= min_count]


def brute_observed(T, Ttr, max_size, min_count):
    sets = {}
    for row in Ttr:
        m = tuple(np.flatnonzero(row))
        if 1 <= len(m) <= max_size: sets[m] = sets.get(m, 0) + 1
    return sorted((m for m, c in sets.items() if c >= min_count and contains(T, m).sum() >= min_count),
                  key=lambda m: (len(m), m))


def names(M):
    return ["+".join(f"t{j}" for j in m) for m in M]


@SETTINGS
@given(splits(), st.integers(1, 4), st.integers(1, 5))
def test_mined_M_equals_brute_force(x, max_size, min_count):
    (Ttr, _), (T, _), _, _ = x
    got = task_combinations(T, Ttr, max_size=max_size, min_count=min_count)
    want = brute_M(T, Ttr, max_size, min_count)
    assert sorted(got.combination) == sorted(names(want))
    counts = dict(zip(got.combination, got.count_eval))
    for m in want: assert counts[names([m])[0]] == contains(T, m).sum()


@SETTINGS
@given(splits(), st.integers(1, 3), st.integers(1, 3))
def test_observed_combos_equal_brute_force(x, max_size, min_count):
    (Ttr, _), (T, _), _, _ = x
    got = task_combinations(T, Ttr, max_size=max_size, min_count=min_count, combos="observed")
    assert sorted(got.combination) == sorted(names(brute_observed(T, Ttr, max_size, min_count)))


def slow_multi(T, A, Tp, Ap, Ttr, Atr, M, direction, reference="eval"):
    "Multi→ straight from the formula, one (group, combination) pair at a time."
    deltas, ys = [], []
    for a in range(A.shape[1]):
        for m in M:
            mt, mtr = contains(T, m), contains(Ttr, m)
            y = float(np.mean(mtr & (Atr[:, a] == 1)) > np.mean(Atr[:, a] == 1) * np.mean(mtr))
            ref_T, ref_A, ref_m = (T, A, mt) if reference == "eval" else (Ttr, Atr, mtr)
            if direction == "A->T":
                cond = A[:, a] == 1
                if not cond.any(): continue
                d = contains(Tp, m)[cond].mean() - ref_m[ref_A[:, a] == 1].mean()
            else:
                if not mt.any(): continue
                d = Ap[mt, a].mean() - ref_A[ref_m, a].mean()
            deltas.append(d); ys.append(y)
    d, y = np.array(deltas), np.array(ys)
    return np.abs(d).mean(), d.var(), ((2 * y - 1) * d).mean()


@SETTINGS
@given(splits(), st.sampled_from(["A->T", "T->A"]), st.sampled_from(["eval", "train"]), st.integers(1, 3))
def test_multi_directional_matches_slow_formula(x, direction, reference, max_size):
    (Ttr, Atr), (T, A), Tp, Ap = x
    M = brute_M(T, Ttr, max_size, 1)
    if not M:
        with pytest.raises(ValueError, match="no task combination reaches"):
            multi_directional(T, A, Tp, Ap, direction=direction, T_train=Ttr, A_train=Atr, max_size=max_size)
        return
    r = multi_directional(T, A, Tp, Ap, direction=direction, T_train=Ttr, A_train=Atr, max_size=max_size, reference=reference)
    v, var, signed = slow_multi(T, A, Tp, Ap, Ttr, Atr, M, direction, reference)
    assert r.value == pytest.approx(v, abs=1e-12)
    assert r.variance == pytest.approx(var, abs=1e-12)
    assert r.signed_value == pytest.approx(signed, abs=1e-12)


def slow_multi_mals(T, A, Tp, Ap, Ttr, Atr, M):
    k = A.shape[1]
    deltas, used = [], 0
    for m in M:
        ctr = np.array([np.sum(contains(Ttr, m) & (Atr[:, a] == 1)) for a in range(k)])
        cpr = np.array([np.sum(contains(Tp, m) & (Ap[:, a] == 1)) for a in range(k)])
        if ctr.sum() == 0 or cpr.sum() == 0: continue
        used += 1
        for a in range(k):
            btr, bpr = ctr[a] / ctr.sum(), cpr[a] / cpr.sum()
            deltas.append((bpr - btr) if btr > 1 / k else 0.0)
    d = np.array(deltas)
    return (np.abs(d).sum() / used, d.var()) if used else (np.nan, np.nan)


@SETTINGS
@given(splits(), st.booleans(), st.integers(1, 3))
def test_multi_mals_matches_slow_formula(x, use_apred, max_size):
    (Ttr, Atr), (T, A), Tp, Ap = x
    M = brute_M(T, Ttr, max_size, 1)
    if not M: return
    r = multi_mals(T, A, Tp, Ap if use_apred else None, T_train=Ttr, A_train=Atr, max_size=max_size)
    v, var = slow_multi_mals(T, A, Tp, Ap if use_apred else A, Ttr, Atr, M)
    if np.isnan(v): assert np.isnan(r.value) and r.n_dropped > 0
    else:
        assert r.value == pytest.approx(v, abs=1e-12) and r.variance == pytest.approx(var, abs=1e-12)


@SETTINGS
@given(splits(), st.sampled_from(["A->T", "T->A"]))
def test_single_label_restriction_is_ba_directional(x, direction):
    (Ttr, Atr), (T, A), Tp, Ap = x
    if not brute_M(T, Ttr, 1, 1): return
    r = multi_directional(T, A, Tp, Ap, direction=direction, T_train=Ttr, A_train=Atr, max_size=1)
    b = ba_directional(T, A, Tp, Ap, direction=direction, T_train=Ttr, A_train=Atr)
    mp = r.per_pair.set_index(["group", "combination"])["delta"]
    bp = b.per_pair.set_index(["group", "task"])["delta"]
    for (g, c), d in mp.items():
        assert d == pytest.approx(bp.loc[(g, c)], abs=1e-12, nan_ok=True)


@pytest.mark.parametrize("balanced, direction, published", [
    (False, "T->A", 0.078), (False, "A->T", 0.038), (True, "T->A", 0.066), (True, "A->T", 0.099)])
def test_compas_multi_published(balanced, direction, published):
    assert round(multi_directional(**compas(balanced), direction=direction).value, 3) == published


def test_imsitu_pair_found_only_by_multi():
    m = imsitu_pair()
    assert ba_directional(**m, direction="A->T").value == 0.0
    r = multi_directional(**m, direction="A->T", max_size=2)
    top = r.per_pair.iloc[0]
    assert (top.group, top.combination, top["size"]) == ("woman", "unloading+indoors", 2)
    assert top.delta == pytest.approx(0.05) and r.signed_value > 0
    assert multi_mals(**m, max_size=2).value > 0


def test_multi_bootstrap_equals_naive_resampling():
    m = imsitu_pair()
    r = multi_directional(**m, direction="A->T", max_size=2, n_boot=4, random_state=7)
    W = next(bootstrap_weights(len(m["T"]), 4, random_state=7))
    for b in range(4):
        rows = np.repeat(np.arange(len(m["T"])), W[b].astype(int))
        naive = multi_directional(m["T"].iloc[rows], m["A"].iloc[rows], m["T_pred"].iloc[rows], direction="A->T",
                                  T_train=m["T_train"], A_train=m["A_train"], max_size=2)
        assert r.boot[b] == pytest.approx(naive.value, abs=1e-12)


@pytest.mark.parametrize("kw, msg", [
    (dict(direction="G->M"), "direction must be one of 'A->T', 'T->A'"),
    (dict(direction="A->T", max_size=0), "max_size must be an integer >= 1"),
    (dict(direction="A->T", min_count=0), "min_count must be an integer >= 1"),
    (dict(direction="A->T", combos="some"), "combos must be one of 'all', 'observed'"),
    (dict(direction="A->T", reference="test"), "reference must be one of 'eval', 'train'"),
    (dict(direction="A->T", min_count=10_000), "no task combination reaches min_count=10000"),
])
def test_multi_bad_input(kw, msg):
    m = imsitu_pair()
    with pytest.raises(ValueError, match=msg):
        multi_directional(m["T"], m["A"], m["T_pred"], **kw)


def test_multi_sparse_and_dense_agree():
    import scipy.sparse as sp
    rng = np.random.default_rng(1)
    T = (rng.random((300, 8)) < 0.3).astype(np.int8); A = np.eye(2, dtype=np.int8)[rng.integers(0, 2, 300)]
    P = T ^ (rng.random((300, 8)) < 0.1).astype(np.int8)
    d = multi_directional(T, A, P, direction="A->T")
    s = multi_directional(sp.csr_matrix(T), A, sp.csr_matrix(P), direction="A->T")
    assert d.value == s.value and d.variance == s.variance


def test_set_indicator_ignores_the_order_within_a_combination():
    from biasamp_nb.core import to_labels
    from biasamp_nb.multi import set_indicator
    T = to_labels(np.array([[1, 1, 0], [1, 1, 1], [0, 1, 1]]), "T")
    a, b = set_indicator(T, [(1, 0), (2, 1)]), set_indicator(T, [(0, 1), (1, 2)])
    assert (a.values != b.values).nnz == 0 and a.col_sums().tolist() == [2, 2]
    with pytest.raises(ValueError, match="lists a label twice"): set_indicator(T, [(1, 1)])


def test_set_indicator_of_a_torch_batch_equals_the_sparse_one():
    "One builder: a checked torch batch (what AmplificationMetric counts) gets the same S as sparse labels, as a tensor."
    torch = pytest.importorskip("torch")
    from biasamp_nb.core import Labels, to_labels
    from biasamp_nb.multi import set_indicator
    rng = np.random.default_rng(3)
    T = (rng.random((200, 7)) < 0.4).astype(np.int8)
    M = [(0,), (3, 1), (2, 5, 6), (0, 1, 2), (6,)]
    want = set_indicator(to_labels(T, "T"), M)
    got = set_indicator(Labels(torch.tensor(T, dtype=torch.float32), to_labels(T, "T").names, "T", True), M)
    assert torch.is_tensor(got.values) and got.values.dtype == torch.float32 and got.names == want.names
    np.testing.assert_array_equal(got.values.numpy(), want.values.toarray())
    np.testing.assert_array_equal(want.values.toarray()[:, 1], T[:, 3] & T[:, 1])  # an and of the columns


@SETTINGS
@given(splits(), st.sampled_from([None, 0]), st.integers(1, 3), st.booleans())
def test_set_counts_without_set_indicators_are_exact(x, table_max, max_size, use_apred):
    """The point estimate counts subsets with one bincount per size (or, when the table would be too large, by
    looking each subset up among the sorted candidates): the same integer counts as the product with the set
    indicators, and Multi→ / Multi_MALS equal to the slow formulas on both ways."""
    import biasamp_nb.combinations as mm
    from biasamp_nb.counting import cross_counts
    from biasamp_nb.core import check_inputs
    (Ttr, Atr), (T, A), Tp, Ap = x
    M = brute_M(T, Ttr, max_size, 1)
    if not M: return
    old = mm.TABLE_MAX
    try:
        if table_max is not None: mm.TABLE_MAX = table_max
        d = check_inputs(T, A, Tp, Ap)
        lefts = [d["A"].values] + ([d["A_pred"].values] if use_apred else [])
        Ms = [tuple(int(j) for j in m) for m in M]
        fast = mm._set_cross_counts(lefts, [mm.binary_csr(d["T"]), mm.binary_csr(d["T_pred"])], Ms)
        S = [mm.set_indicator(d[nm], Ms).values for nm in ("T", "T_pred")]
        np.testing.assert_array_equal(fast, cross_counts(lefts, S))
        r = multi_mals(T, A, Tp, Ap if use_apred else None, T_train=Ttr, A_train=Atr, max_size=max_size)
        v, var = slow_multi_mals(T, A, Tp, Ap if use_apred else A, Ttr, Atr, M)
        if not np.isnan(v): assert r.value == pytest.approx(v, abs=1e-12) and r.variance == pytest.approx(var, abs=1e-12)
        r = multi_directional(T, A, Tp, direction="A->T", T_train=Ttr, A_train=Atr, max_size=max_size)
        assert r.value == pytest.approx(slow_multi(T, A, Tp, Ap, Ttr, Atr, M, "A->T")[0], abs=1e-12)
    finally:
        mm.TABLE_MAX = old


@SETTINGS
@given(splits(), st.integers(1, 3), st.integers(1, 3), st.booleans())
def test_listed_and_counted_subsets_give_the_same_combinations_and_counts(x, max_size, min_count, use_apred):
    """Mining and the point estimate's counts list the rows' subsets up to `LIST_MAX` and count them by the compiled
    pass beyond: the same combinations in the same order and the same integers either way, with a training split or
    without."""
    import biasamp_nb.combinations as C
    import biasamp_nb.subsets as S
    from biasamp_nb.core import check_inputs
    if not S.can_count_weights(): pytest.skip("numba is not installed")
    (Ttr, Atr), (T, A), Tp, Ap = x
    d = check_inputs(T, A, Tp, Ap, T_train=Ttr, A_train=Atr)
    lefts = [d["A"].values] + ([d["A_pred"].values] if use_apred else [])
    def mined_and_counted():
        out = []
        for tr in (d["T"], d["T_train"]):
            M = C._mine(d["T"], tr, max_size, min_count, "all")
            out.append((M, C._set_cross_counts(lefts, [S.binary_csr(d["T"]), S.binary_csr(d["T_pred"])], M)
                        if M else None))
        return out
    listed = mined_and_counted()
    old = S.LIST_MAX
    try:
        S.LIST_MAX = -1  # every subset counted by the pass
        counted = mined_and_counted()
    finally:
        S.LIST_MAX = old
    for (M1, c1), (M2, c2), tr in zip(listed, counted, (T, Ttr)):
        assert M1 == M2 and sorted(M1) == sorted(brute_M(T, tr, max_size, min_count))
        if M1: np.testing.assert_array_equal(c1, c2)


def test_multi_mals_drops_and_counts_combinations_never_predicted():
    """A combination the model never predicts has no predicted bias score: it leaves the mean (the denominator is
    the predicted combinations, not every |M|) and is counted in n_dropped."""
    from biasamp_nb import multi_mals
    A = np.eye(2, dtype=np.int8)[[0] * 6 + [1] * 4]
    T = np.array([[1, 0]] * 4 + [[0, 1]] * 2 + [[1, 0]] * 1 + [[0, 1]] * 3, dtype=np.int8)  # x: 4 of group 0, 1 of group 1
    Tp = T.copy(); Tp[:, 1] = 0; Tp[4:6, 0] = 1  # y is never predicted; x now on all 6 rows of group 0
    r = multi_mals(T, A, Tp, max_size=1)
    b_tr = 4 / 5  # bias_train(x, group 0) = c(group 0, x) / c(x) > 1/2: the selected pair
    b_pr = 6 / 7  # bias_pred(x, group 0)
    assert r.value == pytest.approx(abs(b_pr - b_tr) / 1)  # over the one predicted combination, not over |M| = 2
    assert r.n_dropped == 1


@pytest.mark.parametrize("size", [1, 2, 3, 4])
def test_subset_table_compiled_equals_bincount_of_subsets(size, monkeypatch):
    """The compiled subset table (one pass, no subset list) equals the bincount over `list_subsets`, with labels left
    out of `keep`, empty rows and rows shorter than the size."""
    import scipy.sparse as sp
    import biasamp_nb.counting as counting
    import biasamp_nb.kernels as kernels
    import biasamp_nb.multi as mu
    import biasamp_nb.subsets as subsets
    rng = np.random.default_rng(size)
    X = sp.csr_matrix(rng.random((400, 9)) < 0.35)
    X.sort_indices()
    keep = rng.random(9) < 0.7
    left = rng.integers(0, 3, 400)
    pytest.importorskip("numba")  # the compiled table
    got = subsets.subset_table(X, size, keep, left, 3)
    r, c = subsets.list_subsets(X, size, keep, local=True)
    K = int(keep.sum()) ** size
    np.testing.assert_array_equal(got, np.bincount(left[r] * K + c, minlength=3 * K).reshape(3, K))
    monkeypatch.setitem(kernels._KERNELS, "subset_table", None)  # the numpy route gives the same table
    np.testing.assert_array_equal(subsets.subset_table(X, size, keep, left, 3), got)
    assert got.sum() == sum(len(list(combinations(np.flatnonzero(X[i].toarray()[0] & keep), size))) for i in range(400))


def test_subset_estimate_and_memory_budget(monkeypatch):
    """Listing the combinations is estimated first (Σ over rows of C(labels in the row, s)) and refused, with the
    estimate and the fix, when it would exceed the memory budget; the budget is an argument or $BIASAMP_MEMORY_BUDGET."""
    from itertools import combinations
    from math import comb
    import scipy.sparse as sp
    from biasamp_nb.subsets import subset_estimate, resolve_memory_budget
    rng = np.random.default_rng(5)
    T = (rng.random((300, 12)) < 0.4).astype(np.int8)
    X = sp.csr_matrix(T)
    keep = rng.random(12) < 0.6
    for s in (1, 2, 3, 5):
        assert subset_estimate(X, s) == sum(comb(int(r.sum()), s) for r in T)
        assert subset_estimate(X, s, keep) == sum(len(list(combinations(np.flatnonzero(r & keep), s))) for r in T)
    assert resolve_memory_budget("2GB") == 2 * 10**9 and resolve_memory_budget("512 MiB") == 512 * 2**20
    assert resolve_memory_budget(1e6) == 10**6
    monkeypatch.setenv("BIASAMP_MEMORY_BUDGET", "3MB")
    assert resolve_memory_budget() == 3 * 10**6
    monkeypatch.delenv("BIASAMP_MEMORY_BUDGET")
    assert resolve_memory_budget() > 0
    for bad in (0, -1, "lots", True):
        with pytest.raises(ValueError, match="memory_budget"): resolve_memory_budget(bad)
    A = np.eye(2, dtype=np.int8)[rng.integers(0, 2, 300)]
    from biasamp_nb import kernels
    from biasamp_nb.subsets import can_count_weights
    if can_count_weights():  # compiled: the combinations are counted by a pass over the rows, never listed
        small = multi_directional(T, A, T_pred=T, direction="A->T", max_size=6, memory_budget="100kB")
        plain = multi_directional(T, A, T_pred=T, direction="A->T", max_size=6)
        assert (small.value, small.info["n_combinations"]) == (plain.value, plain.info["n_combinations"])
    monkeypatch.setitem(kernels._KERNELS, "set_weights", None)  # without numba: listed, so estimated and refused
    with pytest.raises(ValueError) as e:
        multi_directional(T, A, T_pred=T, direction="A->T", max_size=6, memory_budget="100kB")
    m = re.search(r"the (\d)-task combinations of the labels are ([\d,]+) subsets .* over the memory budget of 0.0 GB; "
                  r"lower max_size \(to (\d)\)", str(e.value))
    assert m and int(m.group(3)) == int(m.group(1)) - 1
    assert int(m.group(2).replace(",", "")) == subset_estimate(X, int(m.group(1)))  # the estimate it names
    with pytest.raises(ValueError, match="memory budget"):
        multi_mals(T, A, T, max_size=6, memory_budget=50_000)
    monkeypatch.setenv("BIASAMP_MEMORY_BUDGET", "50kB")  # the environment's budget applies where none is given
    with pytest.raises(ValueError, match="memory budget of 0.0 GB"):
        multi_directional(T, A, T_pred=T, direction="A->T", max_size=6)
    monkeypatch.delenv("BIASAMP_MEMORY_BUDGET")
    # within the budget: the same value as with no limit to speak of
    r1 = multi_directional(T, A, T_pred=T, direction="A->T", max_size=3, memory_budget="1GB")
    r2 = multi_directional(T, A, T_pred=T, direction="A->T", max_size=3, memory_budget=1e15)
    assert r1.value == r2.value


def test_multi_mals_reference_columns_are_named_for_the_reference():
    "Multi_MALS names the reference's columns c_train/bias_train only when training labels were given."
    m = {k: v for k, v in imsitu_pair().items() if k in ("T", "A", "T_pred")}
    own = multi_mals(**m, max_size=2).per_pair
    given_ = multi_mals(**m, T_train=m["T"], A_train=m["A"], max_size=2).per_pair
    assert {"c_test", "bias_test"} <= set(own) and "c_train" not in own and "bias_train" not in own
    renamed = own.rename(columns={"c_test": "c_train", "bias_test": "bias_train"})
    pd.testing.assert_frame_equal(renamed, given_)


@pytest.mark.parametrize("n", [600, 20_000])
def test_multi_mals_diagonal_counts_equal_the_full_counter(n, monkeypatch):
    """Multi_MALS counts only the true groups with the true combinations and the predicted groups with the predicted
    ones: its value, interval, test and per-pair table are those of the counter of every pairing, and the kept fields
    are its integers (below and above the compiled path's 1,024 rows)."""
    import biasamp_nb.multi as mm
    import biasamp_nb.combinations as co
    from biasamp_nb.core import Counts

    rng = np.random.default_rng(n)
    k = 12
    g = rng.integers(0, 2, n)
    T = (rng.random((n, k)) < np.where(g[:, None] == 1, 0.3, 0.15)).astype(np.int8)
    Tp = T ^ (rng.random((n, k)) < 0.05)
    A = np.eye(2, dtype=np.int8)[g]
    Ap = np.eye(2, dtype=np.int8)[np.where(rng.random(n) < 0.1, 1 - g, g)]
    opts = dict(max_size=2, min_count=3, n_boot=30, n_null=29, random_state=4)
    got = multi_mals(T, A, Tp, Ap, **opts)
    full = mm.multi_inputs
    monkeypatch.setattr(mm, "multi_inputs", lambda *a, **kw: full(*a, **{**kw, "diagonal": False}))
    want = multi_mals(T, A, Tp, Ap, **opts)
    assert got.value == want.value and got.ci == want.ci and got.floor == want.floor and got.p_value == want.p_value
    np.testing.assert_array_equal(got.boot, want.boot)
    pd.testing.assert_frame_equal(got.per_pair, want.per_pair)
    d, M, *_ = full(T, A, Tp, Ap, None, None, 2, 3, "all")
    S = {nm: mm.set_indicator(d[nm], M) for nm in ("T", "T_pred")}
    W = rng.integers(0, 3, (4, n)).astype(np.int32)
    diag = co._diagonal_counter(S["T"], d["A"], S["T_pred"], d["A_pred"])(W)
    every = Counts.counter(S["T"], d["A"], S["T_pred"], d["A_pred"])(W)
    assert diag.at_pred is None and diag.apred_t is None
    for f in ("n", "a", "t", "at", "a_pred", "t_pred", "apred_tpred"):
        np.testing.assert_array_equal(getattr(diag, f), getattr(every, f))


def test_multi_mals_batch_values_equal_the_point_formula_with_unmeasurable_combinations():
    """A resample batch's values (|Δ| summed with unmeasurable combinations as 0) equal the point formula's, one by
    one, and its per-pair changes are b̂ − b where the combination is measurable on both sides, NaN elsewhere; against
    a reference that is one table (a bootstrap's) or one per weighting (a swap test's)."""
    from biasamp_nb.cooccurrence import bias_from_counts
    from biasamp_nb.multi import _mals_batch, _multi_mals_values

    rng = np.random.default_rng(8)
    at_tr, at_pr = rng.integers(0, 6, (5, 2, 40)), rng.integers(0, 6, (5, 2, 40))
    at_tr[:, :, :3] = 0; at_pr[1, :, 5:9] = 0  # combinations without rows in training, or in one resample's predictions
    at_pr[2] = 0  # a resample with nothing measurable: NaN
    for tr in (at_tr, at_tr[0]):
        trs = tr if tr.ndim == 3 else [tr] * 5
        b_tr = bias_from_counts(tr)
        batch, change = _mals_batch(b_tr, tr, at_pr, pairs=True)
        one = [_multi_mals_values(bias_from_counts(trs[b]), trs[b], at_pr[b])[0] for b in range(5)]
        np.testing.assert_array_equal(batch, one)
        np.testing.assert_array_equal(_mals_batch(b_tr, tr, at_pr), batch)
        assert np.isnan(batch[2]) and np.isfinite(batch[[0, 1, 3, 4]]).all()
        for b in range(5):
            b_pr, b_ref = bias_from_counts(at_pr[b]), bias_from_counts(trs[b])
            measurable = ~(np.isnan(b_pr).any(0) | np.isnan(b_ref).any(0))
            np.testing.assert_array_equal(change[b], np.where(measurable, b_pr - b_ref, np.nan))
        assert np.isnan(change[2]).all() and np.isnan(change[:, :, :3]).all() and np.isfinite(change).sum() > 200


def test_a_bootstrap_that_would_not_fit_is_refused_before_counting(monkeypatch):
    """Noisy predictions hold many labels a row, so the set indicators a Multi bootstrap needs would take
    Σ_i Σ_s C(L_i, s) places (L_i: the row's labels among those of the size-s combinations). Compiled, the bootstrap
    then counts from the labels, with the same numbers; where the indicators are the only route, the metric refuses
    with that estimate right after mining, and a report refuses before its first metric runs."""
    from dataclasses import replace
    from math import comb
    import biasamp_nb.report as R
    from biasamp_nb.multi import check_multi_memory
    from biasamp_nb.subsets import subset_hits
    import scipy.sparse as sp
    rng = np.random.default_rng(3)
    n, k = 2000, 30
    g = rng.integers(0, 2, n)
    T = (rng.random((n, k)) < np.where(g[:, None] == 1, 0.15, 0.1)).astype(np.int8)  # about four labels a row
    P = T ^ (rng.random((n, k)) < 0.2).astype(np.int8)  # noisy: about nine
    A = np.eye(2, dtype=np.int8)[g]
    M = [tuple(int(x[1:]) for x in c.split("+")) for c in task_combinations(T, max_size=3, min_count=10).combination]
    assert {len(m) for m in M} == {1, 2, 3}
    need = 0
    for X in (T, P):  # the places of each size, by hand
        for s in (1, 2, 3):
            labels = sorted({j for m in M if len(m) == s for j in m})
            need += sum(comb(int(r[labels].sum()), s) for r in X)
    assert check_multi_memory(T, A, P, min_count=10) == len(M)
    if subset_hits(sp.csr_matrix(T), {1: (np.array([0]), np.array([[0]]))}) is None:
        pytest.skip("without numba the set indicators are listed size by size, with their own estimate")
    mine = sum(comb(int(r[sorted({j for m in M if len(m) == s for j in m})].sum()), s) for r in P for s in (1, 2, 3))
    budget = 24 * mine - 1  # T's indicators fit, P's do not
    assert 24 * (need - mine) <= budget
    from biasamp_nb import kernels
    from biasamp_nb.subsets import can_count_weights
    if can_count_weights():  # compiled: the bootstrap counts the combinations from the labels, the same numbers
        full = multi_mals(T, A, P, min_count=10, n_boot=20, random_state=0)
        small = multi_mals(T, A, P, min_count=10, n_boot=20, random_state=0, memory_budget=budget)
        assert (small.value, small.ci) == (full.value, full.ci) and np.array_equal(small.boot, full.boot)
    monkeypatch.setitem(kernels._KERNELS, "set_weights", None)  # where the set indicators are the only route:
    with pytest.raises(ValueError, match=f"T_pred .*are {mine:,} subsets"):
        check_multi_memory(T, A, P, min_count=10, memory_budget=budget)
    with pytest.raises(ValueError, match="for the bootstrap"):
        multi_mals(T, A, P, min_count=10, n_boot=20, memory_budget=budget)
    point = multi_mals(T, A, P, min_count=10, memory_budget=budget)  # no bootstrap: nothing to list
    assert point.value == multi_mals(T, A, P, min_count=10).value

    ran, report_runs = [], R.report_runs
    def runs():  # every metric of the report, recorded when it runs
        for name, s, dirn, needs in report_runs():
            def fn(*a, _f=s.fn, _n=name, **kw): ran.append(_n); return _f(*a, **kw)
            yield name, replace(s, fn=fn), dirn, needs
    monkeypatch.setattr(R, "report_runs", runs)
    monkeypatch.setenv("BIASAMP_MEMORY_BUDGET", str(budget))
    with pytest.raises(ValueError, match=r"Multi.*Multi_MALS: the task combinations of T_pred"):
        R.evaluate(T, A, P, A, n_boot=20, min_count=10, attackers=False)
    assert ran == []  # refused before the first metric
    R.evaluate(T, A, P, A, min_count=10, n_trials=2, attackers=False)  # without a bootstrap, every metric runs
    assert len(ran) > 3 and any(x.startswith("Multi") for x in ran)
    with pytest.raises(ValueError) as e:  # a refusal that is not about memory names no memory fix
        R.evaluate(T, A, P, A, n_boot=20, min_count=10**6, attackers=False)
    assert "no task combination reaches min_count" in str(e.value) and "BIASAMP_MEMORY_BUDGET" not in str(e.value)


def test_multi_directional_batch_equals_each_weighting_counted_alone():
    """A batch of weightings' Multi→ (its values and each pair's Δ, worked in place) equals each weighting's counted
    alone as repeated rows, in both directions, with weightings that leave a task or a group without rows (NaN Δ for
    the pairs they condition, left out of the mean)."""
    from biasamp_nb.core import Counts, to_labels
    from biasamp_nb.multi import multi_directional_counts

    rng = np.random.default_rng(3)
    n = 60
    T = rng.integers(0, 2, (n, 5)); Tp = T.copy(); Tp[rng.random((n, 5)) < 0.2] ^= 1
    g = rng.integers(0, 2, n); A = np.c_[g, 1 - g]; Ap = A.copy(); Ap[:7] = Ap[:7, ::-1]
    names = ("T", "A", "T_pred", "A_pred")
    W = rng.integers(0, 3, (4, n)); W[1, T[:, 0] == 1] = 0; W[2, g == 0] = 0
    batch = Counts.counter(*[to_labels(x, nm) for x, nm in zip((T, A, Tp, Ap), names)])(W)
    for direction, gone in (("T->A", 1), ("A->T", 2)):
        values, deltas = multi_directional_counts(batch, direction=direction, pairs=True)
        np.testing.assert_array_equal(multi_directional_counts(batch, direction=direction), values)
        for b in range(len(W)):
            rows = np.repeat(np.arange(n), W[b])
            one = multi_directional_counts(Counts.from_labels(*[to_labels(x[rows], nm) for x, nm in
                                                               zip((T, A, Tp, Ap), names)]), direction=direction)
            table = one.per_pair.pivot(index="group", columns="combination", values="delta")
            np.testing.assert_array_equal(deltas[b], table.loc[list(batch.a_names), list(batch.t_names)])
            np.testing.assert_allclose(values[b], one.value, rtol=1e-14)
        assert np.isnan(deltas[gone]).any() and not np.isnan(deltas[[0, 3]]).any()
        assert np.isfinite(values).all()


def test_set_indicator_stores_bool_ones_where_asked_and_refuses_other_types():
    "dtype=bool holds the same positions as the float64 default (an eighth of the bytes); other types are refused."
    from biasamp_nb.multi import set_indicator
    from biasamp_nb.core import to_labels

    rng = np.random.default_rng(2)
    L = to_labels((rng.random((300, 6)) < 0.4).astype(np.int8), "T")
    M = [(0,), (1, 2), (0, 3, 5), (2, 4)]
    f, b = set_indicator(L, M).values, set_indicator(L, M, dtype=bool).values
    assert f.dtype == np.float64 and b.dtype == bool and b.nnz == f.nnz > 0
    np.testing.assert_array_equal(b.toarray(), f.toarray() == 1)
    np.testing.assert_array_equal(f.toarray()[:, 2], L.values[:, [0, 3, 5]].all(axis=1))
    for bad in (np.int8, "xyz"):
        with pytest.raises(ValueError, match="dtype must be"): set_indicator(L, M, dtype=bad)


def _brute_weights(T, sets, left, m, W):
    "B × m × |sets| by enumeration: for each weighting, the weight of each group's rows holding each combination."
    out = np.zeros((len(W), m, len(sets)))
    for j, c in enumerate(sets):
        held = contains(T, c)
        for g in range(m): out[:, g, j] = W[:, held & (left == g)].sum(axis=1)
    return out


@pytest.mark.parametrize("search", [False, True])
def test_weighted_combination_table_equals_brute_force_enumeration(search, monkeypatch):
    "Every size, every group, with and without resampling weights; by the table of codes and by the search of them."
    import scipy.sparse as sp
    import biasamp_nb.subsets as S
    if not S.can_count_weights(): pytest.skip("numba is not installed")
    if search: monkeypatch.setattr(S, "TABLE_MAX", 0)  # no table of every code: each subset searched among the sorted
    rng = np.random.default_rng(7)
    n, k, m = 400, 9, 3
    T = (rng.random((n, k)) < 0.45).astype(np.int8)
    left = rng.integers(0, m, n)
    X = sp.csr_matrix(T.astype(bool))
    by, width, sets = {}, 0, []
    for s in (1, 2, 3, 4):
        every = np.array(list(combinations(range(k), s)))
        pick = np.sort(rng.choice(len(every), min(len(every), 25), replace=False))  # some combinations of each size
        by[s] = (width + np.arange(len(pick)), every[pick]); width += len(pick); sets += [tuple(x) for x in every[pick]]
    for W in (np.ones((1, n)), rng.poisson(1.0, (6, n)).astype(float), rng.random((2, n))):
        got = S.set_weights(X, by, left, m, W, width)
        assert got.shape == (len(W), m, width)
        assert np.allclose(got, _brute_weights(T, sets, left, m, W), rtol=1e-12, atol=0)
        if np.all(W == np.round(W)): assert np.array_equal(got, _brute_weights(T, sets, left, m, W))  # whole: exact


def test_set_weights_refuses_what_its_kernel_could_not_take():
    import scipy.sparse as sp
    from biasamp_nb.subsets import set_weights
    X = sp.csr_matrix(np.eye(4, dtype=bool))
    by = {2: (np.array([0]), np.array([[0, 1]]))}
    with pytest.raises(ValueError, match="W must be B × 4"): set_weights(X, by, np.zeros(4, int), 1, np.ones((1, 3)), 1)
    with pytest.raises(ValueError, match="in 0..0"): set_weights(X, by, np.array([0, 1, 0, 0]), 1, np.ones((1, 4)), 1)
    with pytest.raises(ValueError, match="lie in 0..0"):
        set_weights(X, {2: (np.array([1]), np.array([[0, 1]]))}, np.zeros(4, int), 1, np.ones((1, 4)), 1)
    with pytest.raises(ValueError, match="ascending order"):
        set_weights(X, {2: (np.array([0]), np.array([[1, 0]]))}, np.zeros(4, int), 1, np.ones((1, 4)), 1)


def _many_labels(rng, n, k, p=0.3):
    "Labels with many a row, two one-hot groups, predictions with 5% of the labels and 10% of the groups flipped."
    T = (rng.random((n, k)) < p).astype(np.int8)
    A = np.eye(2, dtype=np.int8)[rng.integers(0, 2, n)]
    Tp = T.copy(); Tp[rng.random(T.shape) < 0.05] ^= 1
    return T, A, Tp, np.where(rng.random((n, 1)) < 0.1, A[:, ::-1], A)


@pytest.mark.parametrize("metric,kw", [
    (multi_directional, dict(direction="A->T")), (multi_directional, dict(direction="T->A")), (multi_mals, {})])
def test_multi_metrics_counted_from_the_labels_equal_those_from_set_indicators(metric, kw, monkeypatch):
    "Where the rows' set indicators would not fit the budget, the same numbers come from the labels' subsets."
    import biasamp_nb.combinations as C
    if not C.can_count_weights(): pytest.skip("numba is not installed")
    made, joined = [], []
    monkeypatch.setattr(C, "_weights_counter", lambda *a, f=C._weights_counter: made.append(1) or f(*a))
    monkeypatch.setattr(C, "_frequent_joined", lambda *a, f=C._frequent_joined: joined.append(1) or f(*a))
    rng = np.random.default_rng(3)
    n, k = 1500, 24
    T, A, Tp, Ap = _many_labels(rng, n, k)
    Ttr = (rng.random((2 * n, k)) < 0.3).astype(np.int8)
    Atr = np.eye(2, dtype=np.int8)[rng.integers(0, 2, 2 * n)]
    args = dict(T_pred=Tp, A_pred=Ap, max_size=3, min_count=3, n_boot=30, n_null=29, random_state=4, **kw)
    for train in ({}, dict(T_train=Ttr, A_train=Atr)):
        plain = metric(T, A, **args, **train)
        assert not made and not joined
        by_labels = metric(T, A, **args, **train, memory_budget="2MB")  # each matrix's set indicators: some 2.3 MB
        assert made and (joined or not train)  # with a training split, mined by joining, not by listing subsets
        made.clear(); joined.clear()
        assert by_labels.info["n_combinations"] == plain.info["n_combinations"]
        assert (by_labels.value, by_labels.ci, by_labels.p_value) == (plain.value, plain.ci, plain.p_value)
        assert np.array_equal(by_labels.boot, plain.boot)


def test_a_report_counting_from_the_labels_gives_the_numbers_of_the_set_indicators(monkeypatch):
    "The report's Multi metrics share one bootstrap (`shared_sets`) whether they count from indicators or labels."
    import biasamp_nb.combinations as C
    import biasamp_nb.intervals as I
    from biasamp_nb.report import evaluate
    if not C.can_count_weights(): pytest.skip("numba is not installed")
    T, A, Tp, Ap = _many_labels(np.random.default_rng(8), 1200, 20)
    multi = ["Multi→ (A->T)", "Multi→ (T->A)", "Multi_MALS"]
    kw = dict(n_boot=30, n_null=29, min_count=3, only=multi, attackers=False)
    made, runs, run = [], [], C._JointBootstrap.run
    monkeypatch.setattr(C, "_weights_counter", lambda *a, f=C._weights_counter: made.append(1) or f(*a))
    monkeypatch.setattr(C._JointBootstrap, "run", lambda self: runs.append(len(self.groups)) or run(self))
    aheads, ahead = [], I._ahead  # whether each metric's draws were counted ahead of the statistics
    monkeypatch.setattr(I, "_ahead", lambda items, make, a=True: aheads.append(a) or ahead(items, make, a))
    monkeypatch.delenv("BIASAMP_MEMORY_BUDGET", raising=False)
    plain = evaluate(T, A, Tp, Ap, **kw)
    assert not made and runs == [1] and all(aheads)  # the three bootstraps, one group of the same rows
    monkeypatch.setenv("BIASAMP_MEMORY_BUDGET", "1MB")  # each matrix's set indicators take some 1.2 MB
    aheads.clear(); small = evaluate(T, A, Tp, Ap, **kw)
    assert made and runs == [1, 1]
    assert False in aheads  # a call's counts over a quarter of the budget: counted one call at a time, none ahead
    for name in multi:
        a, b = plain[name], small[name]
        assert (a.value, a.ci, a.p_value) == (b.value, b.ci, b.p_value) and np.array_equal(a.boot, b.boot), name


def test_multi_counts_from_the_labels_when_the_indicators_fit_alone_but_not_together(monkeypatch):
    "The truth's and the prediction's set indicators are held together: their places are summed against the budget."
    import biasamp_nb.combinations as C
    from scipy.special import comb
    if not C.can_count_weights(): pytest.skip("numba is not installed")
    made = []
    monkeypatch.setattr(C, "_weights_counter", lambda *a, f=C._weights_counter: made.append(1) or f(*a))
    T, A, Tp, Ap = _many_labels(np.random.default_rng(5), 1500, 24)
    # every combination of up to 3 of the 24 labels is on 3 rows or more: each row's places are C(L, 1..3) of its L
    bytes_of = lambda X: 24 * int(sum(comb(X.sum(1), s, exact=False) for s in (1, 2, 3)).sum().round())
    bt, bp = bytes_of(T), bytes_of(Tp)
    kw = dict(T_pred=Tp, A_pred=Ap, direction="A->T", max_size=3, min_count=3, n_boot=30, n_null=29, random_state=4)
    every = 24 + comb(24, 2, exact=True) + comb(24, 3, exact=True)
    assert multi_directional(T, A, **kw).info["n_combinations"] == every
    together = multi_directional(T, A, **kw, memory_budget=bt + bp)  # both fit: the set indicators
    assert not made
    apart = multi_directional(T, A, **kw, memory_budget=max(bt, bp))  # each alone fits, not both: from the labels
    assert made
    assert (apart.value, apart.ci, apart.p_value) == (together.value, together.ci, together.p_value)
    assert np.array_equal(apart.boot, together.boot)


def test_the_swap_counter_is_let_go_after_the_test_and_counts_the_same_when_called_again(monkeypatch):
    "A Multi metric's swap counter lets its moved rows' indicators go after the test; called again, it remakes them."
    import dataclasses
    import biasamp_nb.combinations as C
    rng = np.random.default_rng(11)
    T, A, Tp, Ap = _many_labels(rng, 400, 8)
    _, _, _, swap, _ = C.multi_inputs(T, A, Tp, None, None, None, 3, 1, "all", resampled=True)
    masks = rng.random((5, swap.width())) < 0.5
    before = swap(masks)
    swap.release()
    after = swap(masks)
    for f in dataclasses.fields(before):
        x, y = getattr(before, f.name), getattr(after, f.name)
        assert (x is None and y is None) or np.array_equal(np.asarray(x), np.asarray(y)), f.name
    released, make = [], C._set_swap_counter
    def recorded(*a, **k):
        s = make(*a, **k); let_go = s.release
        s.release = lambda: released.append(1) or let_go()
        return s
    monkeypatch.setattr(C, "_set_swap_counter", recorded)
    r = multi_directional(T, A, Tp, direction="A->T", n_boot=20, n_null=19, random_state=0)
    assert released == [1] and np.isfinite(r.p_value)


def test_a_report_decides_the_multi_metrics_route_once_with_the_default_budget(monkeypatch):
    """Half the free memory moves as a report runs: its Multi metrics read it once, so the route for the same labels is
    decided once and what they keep is shared."""
    import biasamp_nb.combinations as C
    import biasamp_nb.subsets as S
    from biasamp_nb.report import evaluate
    monkeypatch.delenv("BIASAMP_MEMORY_BUDGET", raising=False)
    free = iter(range(10**10, 10**12, 10**8))  # more free memory at every look
    monkeypatch.setattr(S, "available_memory", lambda: next(free))
    calls = []
    monkeypatch.setattr(C, "hits_fit", lambda X, *a, f=C.hits_fit: calls.append(len(X)) or f(X, *a))
    T, A, Tp, Ap = _many_labels(np.random.default_rng(2), 600, 10)
    evaluate(T, A, Tp, Ap, n_boot=5, n_null=19, min_count=3, only=["Multi→ (A->T)", "Multi_MALS"], attackers=False)
    assert calls == ([2] if C.can_count_weights() else [])  # the memory check's, kept for both metrics


def _counts_of(rng, weighted, n=40, kg=3, kt=6):
    "Counts of random labels with predictions: a group and a task without rows; float row weights when `weighted`."
    from biasamp_nb.core import Counts
    A, Ap = np.eye(kg)[rng.integers(0, kg - 1, n)], np.eye(kg)[rng.integers(0, kg, n)]
    T, Tp = (rng.random((n, kt)) < 0.4).astype(float), (rng.random((n, kt)) < 0.4).astype(float)
    T[:, 0] = Tp[:, 1] = 0  # a task with no true rows, one never predicted
    w = rng.random(n) * 3 if weighted else np.ones(n)
    L, R = np.c_[A, Ap, np.ones(n)], np.c_[T, Tp, np.ones(n)]
    names = (tuple(f"g{i}" for i in range(kg)), tuple(f"t{j}" for j in range(kt)))
    return Counts.from_cross((L * w[:, None]).T @ R, *names, True, True, integer=not weighted)


@pytest.mark.parametrize("weighted", [False, True])
def test_multi_tables_built_from_kept_counts_equal_those_of_the_computed_rates(weighted):
    """Multi→ and Multi_MALS keep their counts and compute their rates, bias scores, selection and Δ again when the
    table is built: the same table, column by column and bit for bit (NaN where no row conditions a pair), as the one
    built from the arrays the metric computed, for whole and weighted counts, either reference and either direction."""
    from biasamp_nb.cooccurrence import bias_from_counts, conditional_rates, correlation_indicator
    from biasamp_nb.intervals import pair_evidence
    from biasamp_nb.multi import _multi_mals_values, multi_directional_counts, multi_mals_counts
    from biasamp_nb.results import pair_table

    rng = np.random.default_rng(11)
    c, tr = _counts_of(rng, weighted), _counts_of(rng, weighted)
    null = rng.normal(size=(9, *c.at.shape))
    for direction in ("A->T", "T->A"):
        for reference in ("eval", "train"):
            r = multi_directional_counts(c, direction=direction, train=tr, reference=reference, null_deltas=null)
            p_test, p_pred, c_test, c_pred, den = conditional_rates(c, direction)
            if reference == "train":
                with np.errstate(invalid="ignore", divide="ignore"):
                    p_test = tr.at / (tr.a[:, None] if direction == "A->T" else tr.t[None, :])
            delta = p_pred - p_test
            want = pair_table(c.a_names, c.t_names, "combination", y=correlation_indicator(tr).astype(int),
                              n_cond=den, c_test=c_test, c_pred=c_pred, p_test=p_test, p_pred=p_pred, delta=delta,
                              **pair_evidence(delta, den, null, 1))
            assert np.isnan(want["delta"]).any()
            pd.testing.assert_frame_equal(r.per_pair, want, check_exact=True)
    for train, ref in ((None, "test"), (tr, "train")):
        r = multi_mals_counts(c, train=train, null_deltas=null)
        at = c.at if train is None else tr.at
        b_tr = bias_from_counts(at)
        _, _, delta, b_pr, sel, ok = _multi_mals_values(b_tr, at, c.apred_tpred)
        rows = np.minimum(at.sum(axis=-2), c.apred_tpred.sum(axis=-2))
        want = pair_table(c.a_names, c.t_names, "combination", **{f"c_{ref}": at}, c_pred=c.apred_tpred,
                          **{f"bias_{ref}": b_tr}, bias_pred=b_pr, selected=sel, delta=delta,
                          **pair_evidence(np.where(ok[None, :], b_pr - b_tr, np.nan), rows, null, 1))
        assert np.isnan(want["delta"]).any() and want["selected"].any()
        pd.testing.assert_frame_equal(r.per_pair, want, check_exact=True)
