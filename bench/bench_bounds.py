"""Every hot path against what the work physically needs, measured in the same run; prints a table.

For each piece of work the table shows our time, a *bound* — the least work any implementation must do on the
same input, timed here on the same machine (reading every input byte once, one sparse product, one bincount
per combination size, one GROUP BY row_id per file in DuckDB) —, their ratio, the target, the `bias-amplification` peer
where it implements the same metric, and peak memory of the call. Times are medians of repeated runs; each
piece runs in its own process, so one cannot warm another's caches or hold its memory.

Peak memory: for in-memory work, the largest extra memory numpy and Python allocated during the call
(tracemalloc, a separate run from the timed ones); for Parquet work, the process's peak resident memory.

    python bench/bench_bounds.py [--quick] [--busy] [--only NAME ...] [--csv data/results/bench_bounds.csv]

`--quick` uses sizes 10× smaller (minutes → seconds); the targets are stated for the full sizes. `--busy` runs each
row beside a process that keeps one core busy (a researcher's laptop with a browser, a shared cluster node), as
users' machines are: the small rows then show whether threads wait on each other.
"""
import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


def median_time(fn, repeat, warmup=True):
    "Median wall time of `repeat` calls (after one warm-up call, unless `warmup` is False) and the last result."
    out = fn() if warmup else None
    ts = []
    for _ in range(repeat):
        t = time.perf_counter(); out = fn(); ts.append(time.perf_counter() - t)
    return float(np.median(ts)), out


def peak_mb(fn):
    "Largest extra memory (MB) allocated while `fn` runs, as tracemalloc sees it (numpy arrays included)."
    import tracemalloc
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    fn()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return (peak - base) / 2**20


# ---- the pieces of work: each returns a dict of the row's fields ------------------------------------------------

def ba_directional_row(n, k, compiled=True, repeat=5):
    from _data import coco_like
    import biasamp_nb.counting as counting
    import biasamp_nb.kernels as kernels
    from biasamp_nb import ba_directional
    if not compiled: kernels._KERNELS.update(code_sums_C=None, code_sums_F=None, code_sums_csr=None)
    T, A, Tp, _ = coco_like(n, k)
    read = lambda: (T.view(np.uint8).max(), Tp.view(np.uint8).max(), A.view(np.uint8).max())
    ours, r = median_time(lambda: ba_directional(T, A, Tp, direction="A->T"), repeat)
    bound, _ = median_time(read, repeat)
    row = dict(ours_s=ours, bound_s=bound, value=r.value, peak_mb=peak_mb(lambda: ba_directional(T, A, Tp, direction="A->T")))
    from bench_cooccurrence import peer as peer_dba
    peer = peer_dba()
    if peer is not None: row["peer_s"], _ = median_time(lambda: peer(T, A, Tp), max(2, repeat // 2))
    return row


def dataframe_row(n, k, dtype="int8", repeat=5):
    "BA→ on DataFrames (one column per label, as read from a file) against the same data as row-major int8 numpy."
    from _data import coco_like
    from biasamp_nb import ba_directional
    T, A, Tp, _ = coco_like(n, k)
    cols = [f"t{j}" for j in range(k)]
    Td, Tpd = pd.DataFrame(T, columns=cols).astype(dtype), pd.DataFrame(Tp, columns=cols).astype(dtype)
    Ad = pd.DataFrame(A, columns=["man", "woman"]).astype(dtype)
    ours, r = median_time(lambda: ba_directional(Td, Ad, Tpd, direction="A->T"), repeat)
    bound, _ = median_time(lambda: ba_directional(T, A, Tp, direction="A->T"), repeat)  # a yardstick: our int8 path
    return dict(ours_s=ours, bound_s=bound, value=r.value,
                peak_mb=peak_mb(lambda: ba_directional(Td, Ad, Tpd, direction="A->T")))


def _subset_bound(X, A, max_size):
    "All subsets of size ≤ max_size of every row's labels, counted per group with one bincount per size."
    import scipy.sparse as sp
    from itertools import combinations
    n, k = X.shape
    flat = np.flatnonzero(X.ravel())
    indptr = np.zeros(n + 1, np.int64); np.cumsum(np.bincount(flat // k, minlength=n), out=indptr[1:])
    idx = flat % k
    g = A.argmax(axis=1)
    lens = np.diff(indptr)
    for s in range(1, max_size + 1):
        rows_all, codes_all = [], []
        for L in np.unique(lens[lens >= s]):
            rows = np.flatnonzero(lens == L)
            pat = np.array(list(combinations(range(L), s)))
            items = idx[indptr[rows][:, None] + np.arange(L)][:, pat]
            c = items[..., 0].astype(np.int64)
            for j in range(1, s): c = c * k + items[..., j]
            codes_all.append((g[rows][:, None] * k**s + c).ravel())
        if codes_all: np.bincount(np.concatenate(codes_all), minlength=A.shape[1] * k**s)


def multi_directional_row(n, k, repeat=3):
    from _data import coco_like
    from biasamp_nb import multi_directional
    T, A, Tp, _ = coco_like(n, k)
    f = lambda: multi_directional(T, A, Tp, direction="A->T", max_size=3, min_count=10)
    ours, r = median_time(f, repeat)
    bound, _ = median_time(lambda: (_subset_bound(T, A, 3), _subset_bound(Tp, A, 3)), repeat)
    return dict(ours_s=ours, bound_s=bound, value=r.value, peak_mb=peak_mb(f))


def association_gap_row(n, k, repeat=5):
    from bench_association import make
    from biasamp_nb import association_gap
    X, Y = make(n, k)
    f = lambda: association_gap(X, Y, "x0", "x1")
    ours, _ = median_time(f, repeat)
    bound, _ = median_time(lambda: Y.T @ X, repeat)
    return dict(ours_s=ours, bound_s=bound, peak_mb=peak_mb(f))


def dpa_row(n, k, repeat=1):
    from _data import coco_like
    from biasamp_nb import dpa
    T, A, Tp, Ap = coco_like(n, k)
    f = lambda: dpa(T, A, Tp, Ap, direction="A->T", n_trials=10, random_state=0)
    ours, r = median_time(f, repeat)
    return dict(ours_s=ours, value=r.value)


def dpa_ta_row(n, k, repeat=3):
    "DPA T->A with its defaults (the report's most expensive metric at COCO's size) on report-like data."
    from _data import report_like
    from biasamp_nb import dpa
    T, A, Tp, Ap = report_like(n, k)
    ours, r = median_time(lambda: dpa(T, A, A_pred=Ap, direction="T->A", random_state=0), repeat)
    return dict(ours_s=ours, value=r.value)


def predictive_row(metric, n, k, repeat=1):
    """Leakage or DPA (10 trials, the default logistic attacker) on report-like data, with its time per row; the
    yardstick is the same metric on a tenth of the rows, scaled by 10 (a linear cost has ratio 1)."""
    from _data import report_like
    import biasamp_nb as B
    def call(m):
        T, A, Tp, Ap = report_like(m, k)
        f = {"dpa_at": lambda: B.dpa(T, A, Tp, direction="A->T", random_state=0),
             "dpa_ta": lambda: B.dpa(T, A, A_pred=Ap, direction="T->A", random_state=0),
             "leakage": lambda: B.leakage_amplification(T, A, Tp, random_state=0)}[metric]
        return f, median_time(f, repeat)
    f, (ours, r) = call(n)
    _, (small, _) = call(n // 10)
    return dict(ours_s=ours, bound_s=10 * small, value=r.value, us_per_row=1e6 * ours / n, peak_mb=peak_mb(f))


def growth_row(metric, sizes, k, repeat=3):
    """A metric's time at each of `sizes` rows (10⁴ … 10⁷) and the exponent of a least-squares fit of log time on log
    rows over all sizes but the smallest (where fixed costs dominate): 1 is linear. The row's time is the largest
    size's; `times` lists every size's. One untimed call first, so that no size pays for compiling or caching."""
    from _data import coco_like, report_like
    import biasamp_nb as B
    times = []
    for n in sizes:
        if metric == "ba_at":
            T, A, Tp, _ = coco_like(n, k)
            f = lambda: B.ba_directional(T, A, Tp, direction="A->T")
        else:
            T, A, Tp, Ap = report_like(n, k)
            f = {"dpa_at": lambda: B.dpa(T, A, Tp, direction="A->T", random_state=0),
                 "dpa_ta": lambda: B.dpa(T, A, A_pred=Ap, direction="T->A", random_state=0)}[metric]
        if not times: f()
        times.append(median_time(f, repeat)[0])
        T = A = Tp = None  # let the data go before the next size
    slope = float(np.polyfit(np.log(sizes[1:]), np.log(times[1:]), 1)[0])
    return dict(ours_s=times[-1], us_per_row=1e6 * times[-1] / sizes[-1], exponent=slope,
                times="; ".join(f"{n:.0e}: {t:.3g} s" for n, t in zip(sizes, times)))


def _parquet_files(n, d):
    truth, pred = Path(d) / f"truth_{n}.parquet", Path(d) / f"pred_{n}.parquet"
    if not truth.exists():  # in a process of its own, so that generating does not count in this one's peak memory
        code = (f"import sys; sys.path.insert(0, {str(HERE)!r}); from bench_scale import generate; "
                f"generate({str(truth)!r}, {n}); generate({str(pred)!r}, {n}, flip=0.05)")
        subprocess.run([sys.executable, "-c", code], check=True)
    return truth, pred


def _shuffled_files(n, d):
    "The same records in a random order (each instance's records scattered): what DuckDB must sort."
    out = [Path(d) / f"shuffled_{p.name}" for p in _parquet_files(n, d)]
    if not out[0].exists():  # in a process of its own, like the generator
        code = ("import sys, numpy as np, pyarrow.parquet as pq\n"
                "for src, dst in zip(sys.argv[1::2], sys.argv[2::2]):\n"
                "    t = pq.read_table(src); pq.write_table(t.take(np.random.default_rng(0).permutation(t.num_rows)), dst,"
                " row_group_size=1_000_000)")
        args = [str(x) for pair in zip(_parquet_files(n, d), out) for x in pair]
        subprocess.run([sys.executable, "-c", code, *args], check=True)
    return out


def stream_parquet_row(n, d, repeat=3):
    import resource
    from biasamp_nb.scale import stream_parquet_counts
    import pyarrow.parquet as pq
    truth, _ = _parquet_files(n, d)
    tasks = [f"label{j}" for j in range(2000)]
    def bound():  # read both columns once and count labels with one bincount per batch
        f = pq.ParquetFile(str(truth))
        for b in f.iter_batches(batch_size=2_000_000, columns=["row_id", "label"]):
            np.bincount(b.column(1).indices.to_numpy(), minlength=2002); b.column(0).to_numpy()
    b, _ = median_time(bound, repeat)
    ours, _ = median_time(lambda: stream_parquet_counts(truth, ["woman", "man"], tasks, n_rows=n), repeat)
    return dict(ours_s=ours, bound_s=b, peak_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)


def duckdb_row(n, d, shuffled=False, repeat=1):
    import resource
    import duckdb
    from biasamp_nb.scale import duckdb_counts
    truth, pred = _shuffled_files(n, d) if shuffled else _parquet_files(n, d)
    tasks = [f"label{j}" for j in range(2000)]
    def bound():  # one pass per file that gathers each instance's records (a GROUP BY row_id), as SQL must
        con = duckdb.connect(config={"threads": 2, "memory_limit": "1GB"})
        for f in (truth, pred):
            con.execute("SELECT count(*) FROM (SELECT row_id, count(*) FROM read_parquet(?) GROUP BY row_id)",
                        [str(f)]).fetchall()
    b, _ = median_time(bound, repeat)
    ours, _ = median_time(lambda: duckdb_counts(truth, ["woman", "man"], pred=pred, tasks=tasks, n_rows=n,
                                                memory_limit="1GB", threads=2), repeat, warmup=False)
    return dict(ours_s=ours, bound_s=b, peak_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)


def dask_row(n, d, repeat=1):
    import resource
    import dask
    from biasamp_nb.scale import dask_counts
    truth, pred = _parquet_files(n, d)
    tasks = [f"label{j}" for j in range(2000)]
    with dask.config.set(scheduler="threads", num_workers=2):
        ours, _ = median_time(lambda: dask_counts(truth, ["woman", "man"], pred=pred, tasks=tasks, n_rows=n), repeat)
    return dict(ours_s=ours, peak_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)


def import_row(repeat=7):
    def t(code):
        ts = []
        for _ in range(repeat):
            r = subprocess.run([sys.executable, "-c", f"import time; t = time.perf_counter(); {code}; "
                                "print(time.perf_counter() - t)"], capture_output=True, text=True, check=True)
            ts.append(float(r.stdout.split()[-1]))
        return float(np.median(ts))
    return dict(ours_s=t("import biasamp_nb"), bound_s=t("import numpy, pandas, scipy.sparse"),
                first_metric_s=t("from biasamp_nb import ba_directional"))


def inference_row(metric, n, k, repeat=3):
    """A metric with its default interval and test (200 bootstrap resamples, 199 swaps) on report-like data (about 3
    labels a row, 5% of them moved), against its point estimate on the same data: the yardstick."""
    from _data import report_like
    import biasamp_nb as B
    T, A, Tp, Ap = report_like(n, k)
    calls = {"ba_mals": lambda **o: B.ba_mals(T, A, Tp, Ap, **o),
             "ba_at": lambda **o: B.ba_directional(T, A, Tp, direction="A->T", **o),
             "ba_ta": lambda **o: B.ba_directional(T, A, A_pred=Ap, direction="T->A", **o),
             "multi_mals": lambda **o: B.multi_mals(T, A, Tp, Ap, min_count=10, **o),
             "multi_at": lambda **o: B.multi_directional(T, A, Tp, direction="A->T", min_count=10, **o),
             "multi_ta": lambda **o: B.multi_directional(T, A, A_pred=Ap, direction="T->A", min_count=10, **o)}
    f = calls[metric]
    bound, _ = median_time(f, repeat)
    ours, r = median_time(lambda: f(n_boot=200, n_null=199, random_state=0), repeat)
    return dict(ours_s=ours, bound_s=bound, value=r.value, peak_mb=peak_mb(lambda: f(n_boot=200, n_null=199,
                                                                                      random_state=0)))


def report_row(n, d, k, fmt="parquet", noisy=False, per_row=3.0):
    """`biasamp report` with its defaults on evaluation truth and predictions written as files (a gender column and k
    task columns, report-like data), run as a user runs it: a new process. Its wall time; peak memory is that
    process's own peak resident memory, which it reports itself as it exits (the children's peak would be the larger
    of it and the yardstick's). The yardstick: reading the two files with pandas in a process of its own."""
    from _data import report_like
    tag = f"{n}_{k}_{'noisy' if noisy else 'real'}" + (f"_{per_row:g}_a_row" if per_row != 3.0 else "")
    ev, pr = Path(d) / f"eval_{tag}.{fmt}", Path(d) / f"pred_{tag}.{fmt}"
    if not (ev.exists() and pr.exists()):
        T, A, Tp, Ap = report_like(n, k, noisy=noisy, per_row=per_row)
        cols, g = [f"t{j}" for j in range(k)], np.array(["man", "woman"])
        for path, X, G in ((ev, T, A), (pr, Tp, Ap)):
            df = pd.DataFrame(X, columns=cols); df.insert(0, "gender", g[G.argmax(1)])
            tmp = path.with_suffix(".tmp")
            df.to_parquet(tmp) if fmt == "parquet" else df.to_csv(tmp, index=False)
            os.replace(tmp, path)
    read = "read_parquet" if fmt == "parquet" else "read_csv"
    t = time.perf_counter()
    subprocess.run([sys.executable, "-c", f"import pandas as pd; pd.{read}({str(ev)!r}); pd.{read}({str(pr)!r})"],
                   check=True)
    bound = time.perf_counter() - t
    out = Path(d) / f"report_{tag}_{fmt}"
    cli = [sys.executable, "-c", f"import sys; sys.path.insert(0, {str(HERE)!r}); from _data import own_peak_kb; "
           "from biasamp_nb.cli import main; rc = main(); print('PEAK_KB', own_peak_kb()); sys.exit(rc)"]
    t = time.perf_counter()
    r = subprocess.run(cli + ["report", "--groups", "gender", "--eval", str(ev), "--pred", str(pr), "--out", str(out)],
                       capture_output=True, text=True, env=os.environ | {"BIASAMP_MEMORY_BUDGET": REPORT_BUDGET})
    ours = time.perf_counter() - t
    last = (r.stderr.strip().splitlines() or ["?"])[-1]
    if r.returncode and "over the memory budget" not in last: raise RuntimeError(last)
    peak = [int(l.split()[1]) for l in r.stdout.splitlines() if l.startswith("PEAK_KB ")]
    if not peak: raise RuntimeError("the report did not say its peak memory")
    summary = out / "summary.csv"  # a metric left out for memory is a row "not run: …" of it
    unrun = [] if r.returncode else pd.read_csv(summary).query("verdict.str.startswith('not run')")["metric"].tolist()
    out = dict(ours_s=ours, bound_s=bound, peak_mb=peak[-1] / 1024) | ({"not_run": ", ".join(unrun)} if unrun else {})
    if r.returncode:  # refused: with the estimate, and whether any metric had started (its progress bar)
        out.update(refused=last.removeprefix("biasamp: error: "), metrics_started="%|" in r.stderr)
    return out


REPORT_BUDGET = "2GB"  # the memory the report rows are given ($BIASAMP_MEMORY_BUDGET): the target's 2 GB


def report_met(r):
    """The report at 10⁶ rows: done in 60 s within 2 GB, or (noisy predictions) refused with the estimate before its
    first metric started, within 2 GB."""
    if r["peak_mb"] > 2048: return False
    return not r["metrics_started"] if "refused" in r else r["ours_s"] <= 60


def table(quick, busy=False):
    "The rows: (name, work, size, function and arguments, target text, target test on the row)."
    s = 10 if quick else 1
    coco_s = 8 if busy else 5  # the COCO-sized report's target: seconds, with one core busy or not
    return [
        ("ba_large", "BA→ A->T, compiled kernel", f"{10**6 // s:,} × 300 int8", ba_directional_row, (10**6 // s, 300),
         "≤ 8× the read floor", lambda r: r["ratio"] <= 8),
        ("ba_large_numpy", "BA→ A->T, numpy path (no numba)", f"{10**6 // s:,} × 300 int8", ba_directional_row,
         (10**6 // s, 300, False), "(fallback; measured)", None),
        ("df_int8", "BA→ A->T from a DataFrame of int8 columns (yardstick: int8 numpy)", f"{10**6 // s:,} × 300",
         dataframe_row, (10**6 // s, 300, "int8"), "≤ 1.5× int8 numpy", lambda r: r["ratio"] <= 1.5),
        ("df_int64", "BA→ A->T from a DataFrame of int64 columns (yardstick: int8 numpy)", f"{10**6 // s:,} × 300",
         dataframe_row, (10**6 // s, 300, "int64"), "(8× the bytes; measured)", None),
        *[(f"inference_{m}", f"{label}: 200 bootstrap resamples + 199 swaps (yardstick: its point estimate)",
           f"{10**6 // s:,} × 300 int8", inference_row, (m, 10**6 // s, 300), "≤ 10× the point estimate",
           lambda r: r["ratio"] <= 10)
          for m, label in (("ba_mals", "BA_MALS"), ("ba_at", "BA→ A->T"), ("ba_ta", "BA→ T->A"),
                           ("multi_mals", "Multi_MALS"), ("multi_at", "Multi→ A->T"), ("multi_ta", "Multi→ T->A"))],
        *[(f"report_{fmt}_{'noisy' if noisy else 'real'}_{e}",
           f"biasamp report, defaults, {'CSV' if fmt == 'csv' else 'Parquet'} files, "
           f"{'noisy' if noisy else 'realistic'} predictions (yardstick: reading the files)",
           f"{10**e // s:,} × 300", report_row, (10**e // s, 300, fmt, noisy),
           "≤ 60 s and ≤ 2 GB at 10⁶ rows" + (" (or refused up front, within 2 GB)" if noisy else ""),
           report_met if e == 6 else None)
          for e in (5, 6) for fmt in ("parquet", "csv") for noisy in (False, True)],
        *[(f"report_dense_{e}", "biasamp report, defaults, Parquet files, 20 labels a row (yardstick: reading the files)",
           f"{10**e // s:,} × 300", report_row, (10**e // s, 300, "parquet", False, 20.0),
           "runs every metric within 2 GB at 10⁶ rows",
           (lambda r: "refused" not in r and "not_run" not in r and r["peak_mb"] <= 2048)
           if e == 6 else None) for e in (5, 6)],
        ("report_coco", "biasamp report, defaults, Parquet files, COCO's size (yardstick: reading the files)",
         "5,473 × 79", report_row, (5473, 79), f"≤ {coco_s} s" + (" (one core busy)" if busy else ""),
         lambda r: r["ours_s"] <= coco_s),
        ("ba_small", "BA→ A->T", "10,000 × 80 int8", ba_directional_row, (10**4, 80, True, 50),
         "≥ 2× the peer", lambda r: r["peer_s"] >= 2 * r["ours_s"] if "peer_s" in r else None),
        ("ba_mid", "BA→ A->T", "100,000 × 80 int8", ba_directional_row, (10**5, 80, True, 20),
         "≥ 2× the peer", lambda r: r["peer_s"] >= 2 * r["ours_s"] if "peer_s" in r else None),
        ("multi", "Multi→ A->T (≤ 3 labels, min_count 10)", f"{10**6 // s:,} × 80 int8", multi_directional_row,
         (10**6 // s, 80), "≤ 1.5× the bound", lambda r: r["ratio"] <= 1.5),
        ("association", "association_gap, 10 metrics", f"{10**6 // s:,} × 20,000 sparse", association_gap_row,
         (10**6 // s, 20_000), "≤ 1.5× Yᵀ X", lambda r: r["ratio"] <= 1.5),
        ("dpa_ta_small", "DPA T->A, defaults", "10,000 × 80 int8", dpa_ta_row, (10**4, 80),
         "≤ 3 s (also --busy)", lambda r: r["ours_s"] <= 3),
        ("dpa", "DPA A->T, 10 trials", f"{10**5 // s:,} × 80 int8", dpa_row, (10**5 // s, 80),
         "≤ 3 s", lambda r: r["ours_s"] <= 3),
        *[(f"{m}_growth", f"{label}, 10 trials (yardstick: 10× its time on a tenth of the rows)", f"{10**6 // s:,} × 300",
           predictive_row, (m, 10**6 // s, 300), "≤ 1.2× (linear)", lambda r: r["ratio"] <= 1.2)
          for m, label in (("dpa_at", "DPA A->T"), ("dpa_ta", "DPA T->A"), ("leakage", "Leakage"))],
        ("growth_ba_at", "BA→ A->T growth: exponent of time in rows", f"{10**4 // s:,} … {10**7 // s:,} × 80 int8",
         growth_row,
         ("ba_at", [10**e // s for e in (4, 5, 6, 7)], 80), "exponent ≤ 1.1", lambda r: r["exponent"] <= 1.1),
        *[(f"growth_{m}", f"{label} growth (10 trials): exponent of time in rows",
           f"{10**4 // s:,} … {10**6 // s:,} × 300", growth_row,
           (m, [10**e // s for e in (4, 5, 6)], 300, 1), "exponent ≤ 1.1", lambda r: r["exponent"] <= 1.1)
          for m, label in (("dpa_at", "DPA A->T"), ("dpa_ta", "DPA T->A"))],
        ("stream", "stream_parquet_counts (truth)", f"{10**7 // s:,} instances", stream_parquet_row, (10**7 // s,),
         "≤ 1.2× the bound", lambda r: r["ratio"] <= 1.2),
        ("duckdb", "duckdb_counts (truth + predictions)", f"{10**7 // s:,} instances", duckdb_row, (10**7 // s,),
         "≤ 1.2× the bound, ≤ 1.5 GB (memory_limit 1GB)", lambda r: r["ratio"] <= 1.2 and r["peak_mb"] <= 1536),
        ("duckdb_shuffled", "duckdb_counts, records in random order (DuckDB sorts them)", f"{10**7 // s:,} instances",
         duckdb_row, (10**7 // s, True), "(fallback; measured)", None),
        ("dask", "dask_counts (truth + predictions), no shuffle", f"{10**7 // s:,} instances", dask_row, (10**7 // s,),
         "10⁷ instances within 4 GiB", lambda r: r["peak_mb"] <= 4096),
        ("import", "import biasamp_nb", "—", import_row, (), "≤ 0.5 s", lambda r: r["ours_s"] <= 0.5),
    ]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="sizes 10× smaller")
    ap.add_argument("--only", nargs="*", help="row names to run (default: all)")
    ap.add_argument("--csv", help="also write the table to this CSV file")
    ap.add_argument("--busy", action="store_true", help="run each row beside a process that keeps one core busy")
    ap.add_argument("--dir", default=os.path.join(tempfile.gettempdir(), "biasamp_bench"), help="Parquet files")
    ap.add_argument("--one", help=argparse.SUPPRESS)  # internal: run one row in this process, print JSON
    a = ap.parse_args()
    rows = {r[0]: r for r in table(a.quick, a.busy)}
    if a.one:
        name, work, size, fn, args, _, _ = rows[a.one]
        needs_dir = fn in (stream_parquet_row, duckdb_row, dask_row, report_row)
        out = fn(*args[:1], a.dir, *args[1:]) if needs_dir else fn(*args)
        print("RESULT " + json.dumps(out))
        return
    Path(a.dir).mkdir(parents=True, exist_ok=True)
    out = []
    for name in (a.only or rows):
        _, work, size, fn, args, target, ok = rows[name]
        cmd = [sys.executable, __file__, "--one", name, "--dir", a.dir] + (["--quick"] if a.quick else [])
        busy = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if a.busy else None
        try: r = subprocess.run(cmd, capture_output=True, text=True)
        finally:
            if busy is not None: busy.kill(); busy.wait()
        res = [l for l in r.stdout.splitlines() if l.startswith("RESULT ")]
        if r.returncode or not res:
            row = dict(work=work, size=size, error=(r.stderr.strip().splitlines() or ["?"])[-1][:160])
        else:
            row = dict(work=work, size=size, **json.loads(res[0][7:]))
            if row.get("bound_s"): row["ratio"] = row["ours_s"] / row["bound_s"]
            if row.get("peer_s"): row["peer_speedup"] = row["peer_s"] / row["ours_s"]
            row["target"] = target
            met = None if ok is None else ok(row)
            row["met"] = "—" if met is None else ("yes" if met else "no")
        out.append(row)
        print({k: (round(v, 4) if isinstance(v, float) else v) for k, v in row.items()}, file=sys.stderr, flush=True)
    df = pd.DataFrame(out)
    cols = [c for c in ["work", "size", "ours_s", "bound_s", "ratio", "target", "met", "peer_s", "peer_speedup",
                        "peak_mb", "us_per_row", "exponent", "times", "first_metric_s", "value", "refused",
                        "metrics_started", "error"] if c in df]
    df = df[cols]
    print(f"\n{platform.node() or 'this machine'}: {os.cpu_count()} cores, Python {platform.python_version()}, "
          f"numpy {np.__version__}" + (" (quick sizes)" if a.quick else "") + (", one core busy" if a.busy else ""))
    print(df.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    if a.csv:
        df.insert(0, "date", time.strftime("%Y-%m-%d"))
        df.insert(1, "machine", f"{os.cpu_count()} cores" + (", quick sizes" if a.quick else "")
                  + (", one core busy" if a.busy else ""))
        tmp = Path(a.csv).with_suffix(".tmp")
        Path(a.csv).parent.mkdir(parents=True, exist_ok=True)
        df.to_csv(tmp, index=False)
        os.replace(tmp, a.csv)


if __name__ == "__main__":
    main()
