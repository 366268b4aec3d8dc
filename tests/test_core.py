"""Inputs, counts, bootstrap and thresholds: properties and bad input."""
import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from hypothesis import given, settings, strategies as st

from biasamp_nb.intervals import bootstrap_weights
from biasamp_nb.core import Counts, check_inputs, counts, to_labels
from biasamp_nb.calibration import apply_thresholds, calibrate_thresholds
from helpers import break_copies, labelled


def naive_counts(T, A, Tp, Ap):
    "Counts by explicit loops over rows: obviously correct."
    n, kt = T.shape; ka = A.shape[1]
    at = np.zeros((ka, kt), int); atp = np.zeros((ka, kt), int); apt = np.zeros((ka, kt), int); aptp = np.zeros((ka, kt), int)
    for i in range(n):
        for a in range(ka):
            for t in range(kt):
                at[a, t] += A[i, a] * T[i, t]; atp[a, t] += A[i, a] * Tp[i, t]
                apt[a, t] += Ap[i, a] * T[i, t]; aptp[a, t] += Ap[i, a] * Tp[i, t]
    return at, atp, apt, aptp


@settings(max_examples=60, deadline=None)
@given(labelled())
def test_counts_match_loops(x):
    T, A, Tp, Ap = x
    c = counts(T, A, Tp, Ap)
    at, atp, apt, aptp = naive_counts(T, A, Tp, Ap)
    np.testing.assert_array_equal(c.at, at); np.testing.assert_array_equal(c.at_pred, atp)
    np.testing.assert_array_equal(c.apred_t, apt); np.testing.assert_array_equal(c.apred_tpred, aptp)
    np.testing.assert_array_equal(c.a, A.sum(0)); np.testing.assert_array_equal(c.t_pred, Tp.sum(0))
    assert c.n == len(T)


@settings(max_examples=60, deadline=None)
@given(labelled(), st.data())
def test_counts_merge_equals_whole(x, data):
    T, A, Tp, Ap = x
    cut = data.draw(st.integers(1, len(T) - 1))
    La = [to_labels(v, nm) for v, nm in [(T, "T"), (A, "A"), (Tp, "T_pred"), (Ap, "A_pred")]]
    whole = Counts.from_labels(*La)
    halves = [Counts.from_labels(*[L.take(s) for L in La]) for s in (slice(None, cut), slice(cut, None))]
    assert halves[0] + halves[1] == whole


@settings(max_examples=30, deadline=None)
@given(labelled())
def test_every_input_type_gives_the_same_counts(x):
    T, A, Tp, _ = x
    import torch
    ref = counts(T, A, Tp)
    for conv in (lambda v: pd.DataFrame(v), sp.csr_matrix, torch.from_numpy, lambda v: v.astype(bool),
                 lambda v: v.astype(np.float32)):
        c = counts(conv(T), A, conv(Tp))
        np.testing.assert_array_equal(c.at, ref.at); np.testing.assert_array_equal(c.at_pred, ref.at_pred)


def test_dense_blocks_are_exact_beyond_one_block():
    rng = np.random.default_rng(3)
    n = 150_001  # more than two blocks of 2**16 rows
    T = (rng.random((n, 4)) < 0.5).astype(np.int8)
    A = np.eye(2, dtype=np.int8)[rng.integers(0, 2, n)]
    c = counts(T, A)
    np.testing.assert_array_equal(c.at, A.astype(np.int64).T @ T.astype(np.int64))


def test_weighted_counts_equal_counts_of_resampled_rows():
    rng = np.random.default_rng(0)
    T = rng.integers(0, 2, (300, 5)); A = np.eye(2, dtype=int)[rng.integers(0, 2, 300)]; Tp = rng.integers(0, 2, (300, 5))
    d = check_inputs(T, A, Tp)
    W = next(bootstrap_weights(300, 7, random_state=1))
    cw = Counts.from_labels(d["T"], d["A"], d["T_pred"], weights=W)
    for b in range(7):
        rows = np.repeat(np.arange(300), W[b].astype(int))
        cb = counts(T[rows], A[rows], Tp[rows])
        np.testing.assert_array_equal(cw.at[b], cb.at); np.testing.assert_array_equal(cw.at_pred[b], cb.at_pred)
        np.testing.assert_array_equal(cw.a[b], cb.a); assert cw.n[b] == 300
    # sparse right-hand side gives the same weighted counts
    ds = check_inputs(sp.csr_matrix(T), A, sp.csr_matrix(Tp))
    cs = Counts.from_labels(ds["T"], ds["A"], ds["T_pred"], weights=W)
    np.testing.assert_array_equal(cs.at, cw.at)


def test_bootstrap_weights_are_seeded():
    a = np.vstack(list(bootstrap_weights(50, 10, random_state=5)))
    b = np.vstack(list(bootstrap_weights(50, 10, random_state=5, chunk=3)))
    assert a.shape == (10, 50) and (a.sum(1) == 50).all()
    assert not np.array_equal(a, np.vstack(list(bootstrap_weights(50, 10, random_state=6))))
    assert b.shape == (10, 50)


@pytest.mark.parametrize("bad, arg, msg", [
    (np.array([[0, 2], [1, 0]]), "T", "T has values other than 0/1 in column 't1'"),
    (np.array([[0.0, np.nan], [1, 0]]), "T_pred", "T_pred has NaN in column 't1'"),
    (sp.csr_matrix(np.array([[0, 0.5], [1, 0]])), "T", "T has values other than 0/1 in column 't1'"),
    (np.zeros((0, 3)), "T", "T has no rows"),
    (np.zeros((3, 0)), "T", "T has no columns"),
    (np.zeros((2, 2, 2)), "A", "A must be 2-D"),
    (np.array([1, 0, 1]), "T", "T is 1-D"),
    (pd.DataFrame({"x": [1, None]}, dtype="Int8"), "T", "T has NaN in column 'x'"),
    (pd.DataFrame([[1, 0]], columns=["x", "x"]), "T", "T has duplicate label names"),
])
def test_bad_labels(bad, arg, msg):
    with pytest.raises(ValueError, match=msg.replace("(", r"\(")):
        to_labels(bad, arg)


def test_bad_combinations():
    T, A = np.eye(4, 2, dtype=int) + np.eye(4, 2, k=-2, dtype=int), np.eye(2, dtype=int)[[0, 1, 1, 0]]
    with pytest.raises(ValueError, match="A has 3 rows but T has 4"): check_inputs(T, A[:3])
    with pytest.raises(ValueError, match="A has an empty group 'a1'"): check_inputs(T, np.c_[np.ones(4), np.zeros(4)])
    with pytest.raises(ValueError, match="T_pred has 3 rows"): check_inputs(T, A, T[:3])
    with pytest.raises(ValueError, match="A_train has an empty group"):
        check_inputs(T, A, T_train=T, A_train=np.c_[np.ones(4), np.zeros(4)])
    with pytest.raises(ValueError, match="different labels"):
        check_inputs(pd.DataFrame(T, columns=["x", "y"]), A, pd.DataFrame(T, columns=["x", "z"]))
    c1, c2 = counts(T, A), counts(T, A, T)
    with pytest.raises(ValueError, match="only one side has 't_pred'"): c1 + c2


def test_calibrate_thresholds_matches_true_counts():
    rng = np.random.default_rng(2)
    S = rng.random((200, 6)); T = (rng.random((200, 6)) < np.linspace(0.0, 0.6, 6)).astype(int)
    thr = calibrate_thresholds(S, T)
    P = apply_thresholds(S, thr)
    np.testing.assert_array_equal(P.sum().to_numpy(), T.sum(0))
    assert thr.iloc[0] == np.inf if T[:, 0].sum() == 0 else True
    with pytest.raises(ValueError, match="scores has NaN"): calibrate_thresholds(np.where(S > 0.99, np.nan, S), T)
    with pytest.raises(ValueError, match="thresholds has 2 values"): apply_thresholds(S, [0.5, 0.5])


def _stored_zeros(X):
    "The same matrix with every third row's first stored value kept as an explicit zero."
    X = X.copy(); X.data[X.indptr[:-1][::3][np.diff(X.indptr)[::3] > 0]] = 0
    return X


@pytest.fixture
def without_compiled(monkeypatch):
    "Force the numpy (BLAS) counting path, as on a machine without numba."
    import biasamp_nb.counting as counting
    import biasamp_nb.kernels as kernels
    monkeypatch.setattr(kernels, "_KERNELS", {"code_sums_C": None, "code_sums_F": None, "code_sums_csr": None})


@pytest.mark.parametrize("n", [1500, 70_001])  # one thread; several threads over row ranges
@pytest.mark.parametrize("conv", ["int8", "bool", "uint8", "fortran", "float", "column-slice", "csr", "csr-zeros", "csr-float"])
def test_compiled_and_blas_counts_agree(n, conv, monkeypatch):
    """The compiled code-sum kernel and the BLAS path give the exact integer counts of loops over rows, for every
    layout and dtype (float inputs and strided views go to the BLAS path), with left columns that overlap."""
    import biasamp_nb.counting as counting
    import biasamp_nb.kernels as kernels
    rng = np.random.default_rng(n)
    L1 = (rng.random((n, 3)) < 0.4).astype(np.int8)  # overlapping left columns: 8 combinations
    L2 = np.eye(2, dtype=bool)[rng.integers(0, 2, n)]
    R1, R2 = (rng.random((n, 9)) < 0.3).astype(np.int8), (rng.random((n, 4)) < 0.6).astype(np.int8)
    f = {"int8": lambda x: x, "bool": lambda x: x.astype(bool), "uint8": lambda x: x.view(np.uint8),
         "fortran": np.asfortranarray, "float": lambda x: x.astype(np.float64),
         "column-slice": lambda x: np.hstack([x, x])[:, :x.shape[1]], "csr": sp.csr_matrix,
         "csr-zeros": lambda x: _stored_zeros(sp.csr_matrix(x)), "csr-float": lambda x: sp.csr_matrix(x, dtype=float)}[conv]
    rights = [f(R1), f(R2)]
    dense = [r.toarray() if sp.issparse(r) else r for r in rights]  # stored zeros count as zeros
    ref = np.hstack([L1, L2, np.ones((n, 1))]).astype(np.int64).T @ np.hstack(dense + [np.ones((n, 1))]).astype(np.int64)
    assert counting.coded_ok([L1, L2], rights, None) == (counting.code_kernel() is not None and conv not in ("float", "column-slice", "csr-float"))
    np.testing.assert_array_equal(counting.cross_counts([L1, L2], rights), ref)
    monkeypatch.setattr(kernels, "_KERNELS", {"code_sums_C": None, "code_sums_F": None, "code_sums_csr": None})
    assert not counting.coded_ok([L1, L2], rights, None)
    np.testing.assert_array_equal(counting.cross_counts([L1, L2], rights), ref)


@pytest.mark.parametrize("groups", [1, 2, 3, 4])  # 2, 4, 8 and 16 combinations: masked sums up to 8, then adds per row
def test_column_major_kernel_counts(groups):
    """A column-major matrix (a DataFrame's block) is counted with one masked sum per combination up to 8 of them and
    by adding each byte to its combination's total beyond: both give the counts of the same rows in row-major order,
    over one row range and several."""
    import biasamp_nb.counting as counting
    import biasamp_nb.kernels as kernels
    if counting.code_kernel() is None: pytest.skip("numba is not installed")
    rng = np.random.default_rng(groups)
    for n in (3001, 140_003):
        L = (rng.random((n, groups)) < 0.5).astype(np.int8)
        R = (rng.random((n, 37)) < 0.2).astype(np.int8)
        ref = counting.cross_counts([L], [R])
        np.testing.assert_array_equal(counting.cross_counts([L], [np.asfortranarray(R)]), ref)
        np.testing.assert_array_equal(ref, np.hstack([L, np.ones((n, 1))]).astype(np.int64).T
                                      @ np.hstack([R, np.ones((n, 1))]).astype(np.int64))


def test_wide_dataframe_columns_become_column_major_bytes():
    """A DataFrame of int64 or float columns is cast once to int8 in its own (column-major) order, which the compiled
    kernel reads, and counts as its int8 values do."""
    from biasamp_nb.core import to_labels
    from biasamp_nb import ba_directional
    rng = np.random.default_rng(7)
    T = (rng.random((4000, 12)) < 0.3).astype(np.int8)
    A = np.eye(2, dtype=np.int8)[rng.integers(0, 2, 4000)]
    Tp = T.copy(); Tp[rng.random(T.shape) < 0.05] ^= 1
    for dtype in ("int64", "float64"):
        Td = pd.DataFrame(T).astype(dtype)
        X = to_labels(Td, "T").values
        assert X.dtype == np.int8 and X.flags.f_contiguous
        np.testing.assert_array_equal(X, T)
        got = ba_directional(Td, pd.DataFrame(A).astype(dtype), pd.DataFrame(Tp).astype(dtype), direction="A->T")
        assert got.value == ba_directional(T, A, Tp, direction="A->T").value


def test_compiled_counts_past_the_16_bit_partial_totals(monkeypatch):
    """The compiled kernel adds rows into 16-bit totals and moves them out every 65,535 rows: one combination that
    holds every row of an all-ones matrix still counts each column exactly (140,003 > 2 × 65,535)."""
    import biasamp_nb.counting as counting
    import biasamp_nb.kernels as kernels
    if counting.code_kernel() is None: pytest.skip("numba is not installed")
    n = 140_003
    L, R = np.ones((n, 1), np.int8), np.ones((n, 5), np.int8)
    monkeypatch.setattr(kernels, "CPUS", 1)  # one part: the whole count in one call of the kernel
    M = counting.cross_counts([L], [R])
    np.testing.assert_array_equal(M, np.full((2, 6), n))


def test_compiled_kernel_refuses_bad_arguments():
    from biasamp_nb.kernels import compiled_kernel
    with pytest.raises(ValueError, match="name must be a non-empty string"): compiled_kernel(3, len)
    with pytest.raises(ValueError, match="fn must be a Python function"): compiled_kernel("k", None)


def test_left_codes_compiled_and_numpy_agree(monkeypatch):
    "Each row's combination of group columns, coded with and without numba: the same codes, combinations and counts."
    import biasamp_nb.counting as counting
    import biasamp_nb.kernels as kernels
    rng = np.random.default_rng(3)
    L1, L2 = (rng.random((5000, 3)) < 0.4).astype(np.int8), np.eye(2, dtype=bool)[rng.integers(0, 2, 5000)]
    L1[:10] = 0; L2[:5] = False  # rows in no group
    got = counting.left_codes([L1, L2], 5000)
    monkeypatch.setitem(kernels._KERNELS, "left_codes", None)
    ref = counting.left_codes([L1, L2], 5000)
    for g, r in zip(got, ref): np.testing.assert_array_equal(g, r)
    code, U, cnt = ref  # and both describe the rows: row i's combination is U[code[i]]
    np.testing.assert_array_equal(U[code], np.hstack([L1, L2]).astype(int))
    np.testing.assert_array_equal(cnt, np.bincount(code))


@pytest.mark.parametrize("dtype", [np.int8, bool, np.float64])
def test_col_sums_of_narrow_and_wide_matrices(dtype):
    "Column sums through the narrow path (fewer than 16 columns) and the wide one equal numpy's sums."
    from biasamp_nb.core import to_labels
    rng = np.random.default_rng(1)
    for k in (2, 15, 16, 40):
        X = (rng.random((3001, k)) < 0.3).astype(dtype)
        np.testing.assert_array_equal(to_labels(X, "T").col_sums(), X.astype(np.int64).sum(axis=0))


def test_compiled_path_is_installed_where_the_suite_runs():
    "The test install includes the `fast` extra, so the compiled path above is really exercised."
    from biasamp_nb.counting import code_kernel
    assert code_kernel("C") is not None and code_kernel("F") is not None


def test_blas_path_counts_match_loops(without_compiled):
    rng = np.random.default_rng(5)
    T, Tp = (rng.random((9000, 6)) < 0.3).astype(np.int8), (rng.random((9000, 6)) < 0.3).astype(np.int8)
    A, Ap = np.eye(3, dtype=np.int8)[rng.integers(0, 3, 9000)], np.eye(3, dtype=np.int8)[rng.integers(0, 3, 9000)]
    c = counts(T, A, Tp, Ap)
    at, atp, apt, aptp = naive_counts(T[:300], A[:300], Tp[:300], Ap[:300])  # the loops on a slice ...
    c300 = counts(T[:300], A[:300], Tp[:300], Ap[:300])
    np.testing.assert_array_equal(c300.at, at); np.testing.assert_array_equal(c300.apred_tpred, aptp)
    i64 = lambda x: x.astype(np.int64)  # ... and integer products on the whole
    np.testing.assert_array_equal(c.at_pred, i64(A).T @ i64(Tp)); np.testing.assert_array_equal(c.apred_t, i64(Ap).T @ i64(T))


def test_per_pair_is_built_when_read_from_the_counts_of_that_moment():
    "The per-pair table is built lazily, once, from copies: changing the counts afterwards does not change it."
    from biasamp_nb.cooccurrence import ba_directional_counts
    rng = np.random.default_rng(2)
    T, Tp = rng.integers(0, 2, (200, 4)), rng.integers(0, 2, (200, 4))
    A = np.eye(2, dtype=int)[rng.integers(0, 2, 200)]
    c = counts(T, A, Tp)
    r = ba_directional_counts(c, direction="A->T")
    assert callable(r.__dict__["_per_pair"])  # not built yet
    c.at_pred[:] = 0  # the caller changes their counts in place
    pp = r.per_pair
    assert r.per_pair is pp  # built once
    np.testing.assert_array_equal(pp.sort_values(["group", "task"])["c_pred"].to_numpy(),
                                  (A.T @ Tp).ravel())


def test_canonical_sparse_input_is_read_in_place_and_never_changed():
    "A canonical CSR (sorted, no duplicates, no stored zeros) is read as it is; any other is copied, then canonicalised."
    rng = np.random.default_rng(6)
    dense = (rng.random((50, 6)) < 0.3).astype(np.int8)
    canon = sp.csr_matrix(dense)
    assert to_labels(canon, "T").values is canon
    messy = sp.csr_matrix(dense); messy.data[:3] = 0  # stored zeros are zeros
    before = messy.data.copy()
    L = to_labels(messy, "T")
    assert L.values is not messy and np.array_equal(messy.data, before)
    expect = dense.copy(); r, c = messy.nonzero(); expect[:] = 0; expect[r, c] = 1
    np.testing.assert_array_equal(L.values.toarray(), expect)
    np.testing.assert_array_equal(counts(canon, np.eye(2, dtype=int)[np.arange(50) % 2]).at,
                                  np.eye(2, dtype=int)[np.arange(50) % 2].T @ dense)


def test_inputs_are_validated_and_counted_once(monkeypatch):
    """check_inputs counts [A, Â, 1]ᵀ[T, T̂, 1] once and returns frozen `Inputs`; the metrics read those counts (no
    second product), `without` leaves a prediction out of labels and counts alike, and nothing can be edited."""
    import dataclasses
    import biasamp_nb.core as core
    rng = np.random.default_rng(8)
    T = (rng.random((400, 5)) < 0.3).astype(np.int8); A = np.eye(2, dtype=np.int8)[rng.integers(0, 2, 400)]
    Tp, Ap = T ^ (rng.random(T.shape) < 0.1), A[::-1].copy()
    calls = []
    real = core.cross_counts
    monkeypatch.setattr(core, "cross_counts", lambda *a, **k: calls.append(1) or real(*a, **k))
    d = check_inputs(T, A, Tp, Ap)
    assert len(calls) == 1
    c = d.counts()
    assert len(calls) == 1 and c is d.counted  # the door's counts, not a second product
    np.testing.assert_array_equal(c.at, A.astype(int).T @ T)
    np.testing.assert_array_equal(c.apred_tpred, Ap.astype(int).T @ Tp)
    d2 = d.without("A_pred")
    assert d2.A_pred is None and d.A_pred is not None  # a new value; the original is untouched
    assert d2.counts() == Counts.from_labels(d["T"], d["A"], d["T_pred"])  # the same as counting afresh
    with pytest.raises(dataclasses.FrozenInstanceError): d.T_pred = None
    with pytest.raises(TypeError): d["T_pred"] = None
    with pytest.raises(ValueError, match="only predictions can be left out"): d.without("T")
    W = np.vstack(list(bootstrap_weights(400, 3, random_state=0)))
    np.testing.assert_array_equal(d.counts(W).at[1], (W[1][:, None] * A).T @ T)  # weighted: counted with the weights

@pytest.mark.parametrize("dtype", ["<i8", ">i8", "<u2", ">i4", "i1"])
def test_integer_labels_of_any_width_and_byte_order(dtype):
    "0/1 integers of any width or byte order are read as 0/1 bytes; a negative value or a 2 is refused by name."
    X = np.array([[0, 1], [1, 1], [0, 0]]).astype(dtype)
    L = to_labels(X, "T", names=["a", "b"])
    assert L.values.dtype.itemsize == 1 and L.values.tolist() == [[0, 1], [1, 1], [0, 0]]
    bad = lambda row: to_labels(np.array([row]).astype(dtype), "T", names=["a", "b"])
    if np.dtype(dtype).kind == "i":  # viewed as unsigned, -1 is the largest value: still refused
        with pytest.raises(ValueError, match="column 'b'"): bad([0, -1])
    with pytest.raises(ValueError, match="column 'a'"): bad([2, 0])


def test_swap_counts_of_mixed_number_types_match_the_formula():
    "swap_counts adds in place only where that keeps the type: integer totals beside float partners still swap."
    from biasamp_nb.core import Counts, swap_counts
    names = dict(a_names=("x", "y"), t_names=("p", "q"))
    a, t = np.array([3, 2]), np.array([2, 1])
    tot = Counts(n=5, a=a, t=t, at=np.array([[2, 1], [0, 0]]), a_pred=a, t_pred=t, at_pred=np.array([[1, 1], [1, 0]]),
                 apred_t=np.array([[2, 0], [0, 1]]), apred_tpred=np.array([[1, 1], [1, 0]]), **names)
    part = Counts(n=2, a=np.array([1, 1]), t=np.array([1, 0]), at=np.array([[1, 0], [0, 0]]),
                  a_pred=np.array([1.0, 1.0]), t_pred=np.array([0.0, 1.0]), at_pred=np.array([[0.0, 1.0], [0.0, 0.0]]),
                  apred_t=np.array([[1, 0], [0, 0]]), apred_tpred=np.array([[0.0, 1.0], [0.0, 0.0]]), **names)
    s = swap_counts(tot, part)
    np.testing.assert_array_equal(s.at, tot.at - part.at + part.apred_tpred)
    np.testing.assert_array_equal(s.apred_tpred, tot.apred_tpred - part.apred_tpred + part.at)
    np.testing.assert_array_equal(s.at_pred, tot.at_pred - part.at_pred + part.apred_t)
    np.testing.assert_array_equal(s.a_pred, tot.a_pred - part.a_pred + part.a)
    assert s.at.dtype == np.float64


def test_a_report_checks_and_counts_each_input_once(monkeypatch):
    "Inside `evaluate` the metrics share one check and count of the same tables (`inputs_checked_once`): the same results."
    import contextlib
    import biasamp_nb.core as core
    import biasamp_nb.report as report
    from biasamp_nb import datasets
    checks, plain = [], core.check_no_copies
    monkeypatch.setattr(core, "check_no_copies", lambda *a, **k: checks.append(1) or plain(*a, **k))
    kw = dict(datasets.hiring(), n_boot=20, n_null=19, n_trials=2)
    once = report.evaluate(**kw)
    n_once = len(checks); checks.clear()
    monkeypatch.setattr(report, "inputs_checked_once", contextlib.nullcontext)  # each metric checks its own
    each = report.evaluate(**kw)
    assert 0 < n_once < len(checks), (n_once, len(checks))
    assert list(once) == list(each) and all(once[m].value == each[m].value and once[m].ci == each[m].ci for m in once)
