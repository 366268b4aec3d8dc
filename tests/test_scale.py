"""Streaming, DuckDB and Dask counts equal the in-memory counts exactly."""
from functools import reduce

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings, strategies as st

from biasamp_nb.core import Counts, to_labels
from biasamp_nb.cooccurrence import ba_directional
from biasamp_nb.combinations import set_indicator
from biasamp_nb.scale import (StreamingCounts, dask_counts, duckdb_counts, duckdb_set_counts, write_long_parquet)
from helpers import labelled


def mem_counts(T, A, Tp=None, Ap=None):
    return Counts.from_labels(to_labels(T, "T"), to_labels(A, "A"), to_labels(Tp, "T_pred") if Tp is not None else None,
                              to_labels(Ap, "A_pred") if Ap is not None else None)


@settings(max_examples=60, deadline=None)
@given(labelled(), st.data())
def test_streaming_over_random_batches_equals_in_memory(x, data):
    T, A, Tp, Ap = x
    n = len(T)
    k = data.draw(st.integers(1, min(6, n)))
    cuts = sorted(data.draw(st.lists(st.integers(1, n - 1), min_size=k - 1, max_size=k - 1, unique=True))) if k > 1 else []
    bounds = [0, *cuts, n]
    sc = StreamingCounts()
    for i, j in zip(bounds[:-1], bounds[1:]): sc.update(T[i:j], A[i:j], Tp[i:j], Ap[i:j])
    assert sc.counts() == mem_counts(T, A, Tp, Ap)
    # two counters merged equal one
    h = bounds[len(bounds) // 2]
    s1 = StreamingCounts().update(T[:h], A[:h], Tp[:h], Ap[:h]) if h > 0 else StreamingCounts()
    s2 = StreamingCounts().update(T[h:], A[h:], Tp[h:], Ap[h:])
    assert s1.merge(s2).counts() == mem_counts(T, A, Tp, Ap)


def test_streaming_torch_batches_stay_on_device():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    A = np.eye(3, dtype=np.int8)[rng.integers(0, 3, 700)]; T = (rng.random((700, 9)) < 0.3).astype(np.int8)
    sc = StreamingCounts()
    for b in np.array_split(np.arange(700), 5): sc.update(torch.as_tensor(T[b]), torch.as_tensor(A[b]), A_pred=torch.as_tensor(A[b][:, ::-1].copy()))
    assert torch.is_tensor(sc.state)
    assert sc.counts() == mem_counts(T, A, Ap=A[:, ::-1])
    with pytest.raises(ValueError, match="values other than 0/1"):
        StreamingCounts().update(torch.as_tensor(T) * 2, torch.as_tensor(A))


def test_streaming_errors_and_metrics():
    rng = np.random.default_rng(1)
    A = pd.DataFrame(np.eye(2, dtype=np.int8)[rng.integers(0, 2, 300)], columns=["w", "m"])
    T = pd.DataFrame((rng.random((300, 4)) < 0.3).astype(np.int8), columns=list("abcd"))
    sc = StreamingCounts().update(T[:100], A[:100], T_pred=T[:100])
    with pytest.raises(ValueError, match="same predictions"): sc.update(T[100:], A[100:])
    with pytest.raises(ValueError, match="no batch has been added"): StreamingCounts().counts()
    sc.update(T[100:][list("dcba")], A[100:], T_pred=T[100:][list("dcba")])   # columns aligned by name
    assert sc.compute("ba_directional", direction="A->T").value == pytest.approx(ba_directional(T, A, T, direction="A->T").value)
    assert sc.counts() == mem_counts(T, A, T)


@pytest.fixture(scope="module")
def parquet(tmp_path_factory):
    rng = np.random.default_rng(7)
    n = 3000
    A = pd.DataFrame(np.eye(2, dtype=np.int8)[rng.integers(0, 2, n)], columns=["woman", "man"])
    T = pd.DataFrame((rng.random((n, 15)) < np.linspace(0.01, 0.4, 15)).astype(np.int8), columns=[f"t{j}" for j in range(15)])
    Tp = T ^ (rng.random(T.shape) < 0.05).astype(np.int8)
    Ap = A.copy(); f = rng.random(n) < 0.1; Ap.loc[f, ["woman", "man"]] = A.loc[f, ["man", "woman"]].to_numpy()
    d = tmp_path_factory.mktemp("pq")
    write_long_parquet(d / "truth.parquet", A, T); write_long_parquet(d / "pred.parquet", Ap, Tp)
    wide = pd.concat([pd.Series(np.arange(n), name="row_id"), A, T], axis=1); wide.to_parquet(d / "truth_wide.parquet")
    widep = pd.concat([pd.Series(np.arange(n), name="row_id"), Ap, Tp], axis=1).sample(frac=1, random_state=0); widep.to_parquet(d / "pred_wide.parquet")
    return d, A, T, Ap, Tp


def test_duckdb_long_and_wide_equal_numpy(parquet):
    d, A, T, Ap, Tp = parquet
    want = mem_counts(T, A, Tp, Ap)
    got = duckdb_counts(d / "truth.parquet", ["woman", "man"], pred=d / "pred.parquet", tasks=list(T.columns), n_rows=len(T))
    assert got == want
    wide = duckdb_counts(d / "truth_wide.parquet", ["woman", "man"], pred=d / "pred_wide.parquet", layout="wide")
    assert wide == want
    with pytest.raises(ValueError, match="layout must be"): duckdb_counts(d / "truth.parquet", ["woman"], layout="tall")


def test_dask_equals_numpy(parquet):
    d, A, T, Ap, Tp = parquet
    from dask.distributed import Client, LocalCluster
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) as cluster, Client(cluster):
        got = dask_counts(d / "truth.parquet", ["woman", "man"], pred=d / "pred.parquet", tasks=list(T.columns), n_rows=len(T), npartitions=5)
    assert got == mem_counts(T, A, Tp, Ap)


def test_duckdb_set_counts_equal_set_indicator(parquet):
    d, A, T, _, _ = parquet
    combos = [("t14", "t13"), ("t10",), ("t12", "t11", "t9"), ("t0", "t1")]
    got = duckdb_set_counts(d / "truth.parquet", ["woman", "man"], combos)
    S = set_indicator(to_labels(T, "T"), [tuple(list(T.columns).index(x) for x in m) for m in combos])
    want = Counts.from_labels(S, to_labels(A, "A"))
    assert (got.at == want.at).all() and (got.t == want.t).all() and got.n == len(T)


def test_stream_parquet_counts_with_rows_across_batches(parquet):
    from biasamp_nb.scale import stream_parquet_counts
    d, A, T, _, _ = parquet
    for b in (97, 1000, 10**6):
        assert stream_parquet_counts(d / "truth.parquet", ["woman", "man"], list(T.columns), batch_rows=b, n_rows=len(T)) == mem_counts(T, A)


def test_compute_returns_counts_or_metrics():
    rng = np.random.default_rng(2)
    A = np.eye(2, dtype=np.int8)[rng.integers(0, 2, 200)]; T = (rng.random((200, 5)) < 0.3).astype(np.int8)
    sc = StreamingCounts().update(T, A, T_pred=T[::-1].copy())
    assert sc.compute() == mem_counts(T, A, T[::-1].copy())
    assert sc.compute("ba_directional", direction="A->T").value == ba_directional(T, A, T[::-1].copy(), direction="A->T").value
    with pytest.raises(ValueError, match="metric must be one of"): sc.compute("dpa")


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 50), st.integers(1, 3), st.integers(1, 5), st.integers(0, 2**16))
def test_long_cross_counts_equal_the_matrix_product(n, ka, kt, seed):
    "Records in any order within an instance, repeated labels, instances with groups only: the exact product."
    from biasamp_nb.scale import long_cross_counts
    rng = np.random.default_rng(seed)
    A, Ap = (rng.random((n, ka)) < 0.5).astype(np.int8), (rng.random((n, ka)) < 0.5).astype(np.int8)
    T, Tp = (rng.random((n, kt)) < 0.4).astype(np.int8), (rng.random((n, kt)) < 0.4).astype(np.int8)
    recs = [(7 * i + 3, a, -1, sd) for i in range(n) for sd, G in enumerate((A, Ap)) for a in np.flatnonzero(G[i])]
    recs += [(7 * i + 3, -1, t, sd) for i in range(n) for sd, M in enumerate((T, Tp)) for t in np.flatnonzero(M[i])]
    if not recs: return
    R = np.array(recs * 2)  # every record twice: a repeated label counts once
    R = R[np.lexsort((rng.random(len(R)), R[:, 0]))]  # instances adjacent, records within one shuffled
    M, rows = long_cross_counts(R[:, 0], R[:, 1], R[:, 2], R[:, 3], ka, kt)
    seen = A.any(1) | Ap.any(1) | T.any(1) | Tp.any(1)
    L, Rm = np.hstack([A, Ap, np.ones((n, 1))])[seen], np.hstack([T, Tp, np.ones((n, 1))])[seen]
    np.testing.assert_array_equal(M, L.T @ Rm)
    assert rows == seen.sum()


def test_dask_without_shuffle_counts_rows_that_straddle_row_groups(parquet, tmp_path):
    """Sorted files in small row groups (instances straddle them): the ranges of row ids read each instance
    whole, with no shuffle and no warning; the same counts for any number of partitions."""
    import warnings
    import dask
    from biasamp_nb.scale import row_id_ranges
    d, A, T, Ap, Tp = parquet
    write_long_parquet(tmp_path / "t.parquet", A, T, row_group_size=997)
    write_long_parquet(tmp_path / "p.parquet", Ap, Tp, row_group_size=1301)
    r = row_id_ranges(tmp_path / "t.parquet")
    assert r is not None and (r[1:, 0] == r[:-1, 1]).sum() >= 3  # several instances straddle two row groups
    want = mem_counts(T, A, Tp, Ap)
    with dask.config.set(scheduler="threads", num_workers=2), warnings.catch_warnings():
        warnings.simplefilter("error")  # no shuffle warning
        for parts in (None, 1, 3):
            got = dask_counts(tmp_path / "t.parquet", ["woman", "man"], pred=tmp_path / "p.parquet", tasks=list(T.columns),
                              n_rows=len(T), npartitions=parts, shuffle=False)
            assert got == want


def test_dask_shuffles_unsorted_files_with_a_warning_or_refuses_them(parquet, tmp_path):
    import pyarrow.parquet as pq
    import dask
    from biasamp_nb.scale import row_id_ranges
    d, A, T, Ap, Tp = parquet
    tab = pq.read_table(d / "truth.parquet")
    pq.write_table(tab.take(np.random.default_rng(0).permutation(tab.num_rows)), tmp_path / "u.parquet", row_group_size=500)
    assert row_id_ranges(tmp_path / "u.parquet") is None
    kw = dict(pred=d / "pred.parquet", tasks=list(T.columns), n_rows=len(T))
    with dask.config.set(scheduler="threads", num_workers=2):
        with pytest.warns(UserWarning, match="not sorted by row_id: shuffling"):
            assert dask_counts(tmp_path / "u.parquet", ["woman", "man"], **kw) == mem_counts(T, A, Tp, Ap)
        with pytest.raises(ValueError, match="shuffle=False needs files sorted by row_id"):
            dask_counts(tmp_path / "u.parquet", ["woman", "man"], shuffle=False, **kw)


def test_stream_parquet_refuses_unsorted_files(parquet, tmp_path):
    import pyarrow.parquet as pq
    from biasamp_nb.scale import stream_parquet_counts
    d, A, T, _, _ = parquet
    tab = pq.read_table(d / "truth.parquet")
    pq.write_table(tab.take(np.random.default_rng(1).permutation(tab.num_rows)), tmp_path / "u.parquet")
    with pytest.raises(ValueError, match="not sorted by row_id"):
        stream_parquet_counts(tmp_path / "u.parquet", ["woman", "man"], list(T.columns))


def test_new_counting_pieces_refuse_bad_arguments_by_name():
    from biasamp_nb.counting import code_kernel, left_codes
    from biasamp_nb.scale import long_cross_counts
    with pytest.raises(ValueError, match="order"): code_kernel("X")
    with pytest.raises(ValueError, match="lefts has 17 columns"): left_codes([np.zeros((3, 17), np.int8)], 3)
    with pytest.raises(ValueError, match="ka=9"): long_cross_counts(np.arange(2), np.zeros(2, int), np.zeros(2, int), None, 9, 1)
    with pytest.raises(ValueError, match="one entry per record"):
        long_cross_counts(np.arange(3), np.zeros(2, int), np.zeros(3, int), None, 2, 1)


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 60), st.integers(1, 3), st.integers(1, 5), st.integers(0, 2**16), st.booleans())
def test_compiled_long_counter_equals_long_cross_counts(n, ka, kt, seed, has_pred):
    """The compiled record counter, over batches cut anywhere (an instance straddling several), gives the products,
    rows and repeat counts of `long_cross_counts` on the whole; the numpy fallback over the same batches too."""
    import biasamp_nb.scale as sc
    import biasamp_nb.long_counts as lc
    rng = np.random.default_rng(seed)
    nl = ka + kt + 2  # label positions: the groups, the tasks, two labels that are neither (and -1: unknown)
    gmap = np.r_[np.arange(ka), -np.ones(kt + 2, int)].astype(np.int64)
    tmap = np.r_[-np.ones(ka, int), np.arange(kt), -1, -1].astype(np.int64)
    recs = [(5 * i + 2, l, sd) for i in range(n) for sd in range(2 if has_pred else 1) for l in range(-1, nl) if rng.random() < 0.4]
    if not recs: return
    R = np.array(recs + [recs[j] for j in rng.integers(0, len(recs), 3)])  # a few repeated records
    R = R[np.lexsort((rng.random(len(R)), R[:, 0]))]
    look = lambda m: np.where(R[:, 1] >= 0, m[R[:, 1]], -1)
    rep_ref = np.zeros(2, np.int64)
    M_ref, rows_ref = lc.long_cross_counts(R[:, 0], look(gmap), look(tmap), R[:, 2] if has_pred else None, ka, kt, rep_ref)
    cuts = np.sort(rng.integers(0, len(R) + 1, 4))
    def batches(): return [(R[a:b, 0], R[a:b, 1], R[a:b, 2], gmap, tmap) for a, b in zip(np.r_[0, cuts], np.r_[cuts, len(R)])]
    assert lc.compiled_counter(ka, kt, has_pred) is not None
    for kern in (lc.compiled_counter(ka, kt, has_pred), None):
        rep = np.zeros(2, np.int64)
        if kern is None:  # as on a machine without numba
            import biasamp_nb.kernels as kernels
            saved = kernels._KERNELS.get("long_records"); kernels._KERNELS["long_records"] = None
            try: M, rows = lc.count_batches(batches(), ka, kt, has_pred, rep)
            finally: kernels._KERNELS["long_records"] = saved
        else: M, rows = lc.count_batches(batches(), ka, kt, has_pred, rep)
        np.testing.assert_array_equal(M, M_ref)
        assert rows == rows_ref and (rep == rep_ref).all()


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 60), st.integers(1, 3), st.integers(1, 5), st.integers(0, 2**16), st.booleans(), st.booleans())
def test_merge_counter_equals_long_cross_counts(n, ka, kt, seed, has_pred, rising):
    """The merge counter reads the truth and prediction streams separately, each sorted by row id and cut into its own
    batches anywhere (an instance straddling several, on either side), and gives the products, instances and repeat
    counts of `long_cross_counts` on the merged records: instances counted in two sweeps (labels rising, no repeat)
    and record by record (a group after its tasks, repeats, labels out of order) alike."""
    import biasamp_nb.scale as sc
    import biasamp_nb.long_counts as lc
    rng = np.random.default_rng(seed)
    nl = ka + kt + 2  # label positions: the groups, the tasks, two labels that are neither
    gmap = np.r_[np.arange(ka), -np.ones(kt + 2, int)].astype(np.int64)
    tmap = np.r_[-np.ones(ka, int), np.arange(kt), -1, -1].astype(np.int64)
    order = rng.permutation(nl)  # each side's dictionary orders the labels its own way
    recs = [(5 * i + 2, l, sd) for i in range(n) for sd in range(2 if has_pred else 1) for l in range(nl) if rng.random() < 0.4]
    if not recs: return
    R = np.array(recs + ([] if rising else [recs[j] for j in rng.integers(0, len(recs), 3)]))  # repeated records
    key = R[:, 1] if rising else rng.random(len(R))  # within an instance: rising positions, or any order
    R = R[np.lexsort((key, R[:, 0]))]
    look = lambda m: m[R[:, 1]]
    rep_ref = np.zeros(2, np.int64)
    M_ref, rows_ref = lc.long_cross_counts(R[:, 0], look(gmap), look(tmap), R[:, 2] if has_pred else None, ka, kt, rep_ref)
    def stream(sd):
        S = R[R[:, 2] == sd]
        pos_of = np.argsort(order) if sd else np.arange(nl)  # side 1 stores label l at position order⁻¹[l]
        gbit = np.where(gmap >= 0, 1 << (np.maximum(gmap, 0) + ka * sd), 0)[np.argsort(pos_of)].astype(np.int64)
        tcol = np.where(tmap >= 0, tmap + kt * sd, -1)[np.argsort(pos_of)].astype(np.int64)
        cuts = np.sort(rng.integers(0, len(S) + 1, 3))
        return [(S[a:b, 0].astype(np.int64), pos_of[S[a:b, 1]].astype(np.int32), gbit, tcol)
                for a, b in zip(np.r_[0, cuts], np.r_[cuts, len(S)])]
    M, rows, rep = lc.merge_sorted([stream(sd) for sd in range(2 if has_pred else 1)], ka, kt)
    np.testing.assert_array_equal(M, M_ref)
    assert rows == rows_ref and (rep == rep_ref[:len(rep)]).all()


def test_merge_counter_refuses_streams_out_of_order():
    "A stream whose row ids go backwards, inside a batch or from one batch to the next, is named by its side."
    import biasamp_nb.scale as sc
    import biasamp_nb.long_counts as lc
    g, t = np.array([1, 0], np.int64), np.array([-1, 0], np.int64)
    b = lambda rid, lab: (np.array(rid, np.int64), np.array(lab, np.int32), g, t)
    ok = [b([1, 1, 2], [0, 1, 1])]
    for bad in ([b([3, 2], [0, 1])], [b([1, 2], [0, 1]), b([1, 3], [1, 0])], [b([5, 6, 4], [1, 1, 0])]):
        with pytest.raises(lc.UnsortedInput) as e: lc.merge_sorted([ok, bad], 1, 1)
        assert e.value.args == (1,)
        with pytest.raises(lc.UnsortedInput) as e: lc.merge_sorted([bad], 1, 1)
        assert e.value.args == (0,)


def test_duckdb_counts_sorted_and_shuffled_files_agree(parquet, tmp_path):
    """Sorted long files take the merge path and shuffled ones DuckDB's sort: the same counts, equal to the in-memory
    counts; repeated records are reported either way."""
    import pyarrow.parquet as pq
    import biasamp_nb.scale as sc
    import biasamp_nb.long_counts as lc
    d, A, T, Ap, Tp = parquet
    tasks = list(T.columns)
    got = duckdb_counts(d / "truth.parquet", ["woman", "man"], pred=d / "pred.parquet", tasks=tasks, n_rows=len(T))
    assert sc._sorted_long_counts([("truth", d / "truth.parquet"), ("pred", d / "pred.parquet")], ["woman", "man"],
                                  tasks, 1000) is not None  # these files are sorted: the merge path counted them
    for name in ("truth", "pred"):
        tab = pq.read_table(d / f"{name}.parquet")
        pq.write_table(tab.take(np.random.default_rng(0).permutation(tab.num_rows)), tmp_path / f"{name}.parquet")
    files = [("truth", tmp_path / "truth.parquet"), ("pred", tmp_path / "pred.parquet")]
    assert sc._sorted_long_counts(files, ["woman", "man"], tasks, 1000) is None  # shuffled: DuckDB sorts
    assert duckdb_counts(tmp_path / "truth.parquet", ["woman", "man"], pred=tmp_path / "pred.parquet", tasks=tasks,
                         n_rows=len(T)) == got
    assert got == mem_counts(T, A, Tp, Ap)


def test_one_batch_check_for_streaming_and_tracking():
    "StreamingCounts and AmplificationMetric check a torch batch with the same function, with the same messages."
    torch = pytest.importorskip("torch")
    from biasamp_nb.streaming import torch_batch
    T, A = torch.tensor([[1.0, 0.0], [0.0, 1.0]]), torch.tensor([[1, 0], [0, 1]])
    b = torch_batch(dict(T=T, A=A, T_pred=None), dict(T=2, A=2))
    assert b["T"] is T and b["A"] is A and "T_pred" not in b  # nothing copied or converted
    with pytest.raises(ValueError, match=r"T has values other than 0/1 \(or NaN\)"):
        torch_batch(dict(T=T * float("nan"), A=A), {})
    with pytest.raises(ValueError, match="A is not a torch tensor"): torch_batch(dict(T=T, A=A.numpy()), {})
    assert torch.equal(torch_batch(dict(T=T, A=A.numpy()), {}, device=T.device)["A"], A)  # converted when asked
    with pytest.raises(ValueError, match="A has 3 columns but 2 were expected"):
        torch_batch(dict(T=T, A=torch.ones(2, 3)), dict(A=2))
    with pytest.raises(ValueError, match="A has 3 rows but T has 2"): torch_batch(dict(T=T, A=torch.ones(3, 2)), {})
