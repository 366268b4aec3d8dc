"""The report's count metrics on a Dask cluster (`dask_evaluate`: BA_MALS, BA→ both ways, Multi→ both ways and
Multi_MALS, each with 200 bootstrap resamples and 199 swap draws, row-keyed) on long Parquet of n rows × about 3 task labels a row (80 tasks, 2 groups,
predictions with 10% of the labels moved), generated here and deleted after. A LocalCluster of --workers processes
(one thread each) per size; wall time, the peak memory of each worker process, and the growth exponent between
sizes, and the time of each metric. At the sizes up to --memory, the same six metrics in one process on the same rows
(the report's default draws) for the ratio. Prints a table.

    python bench/bench_distributed.py [--rows 1e6 1e7] [--workers 2] [--memory 1e7] [--metrics all|cooccurrence]"""
import argparse
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import scipy.sparse as sp

from _data import own_peak_kb

K, CHUNK = 80, 1 << 20
GROUPS, TASKS = ["woman", "man"], [f"task{j:02d}" for j in range(K)]


def _chunk(rng, lo, hi):
    "Rows lo … hi - 1: each row's group, its tasks (about 3, tilted by group) and its predictions (10% moved)."
    m = hi - lo
    g = rng.integers(0, 2, m)
    t = (rng.integers(0, K, (m, 3)) + g[:, None] * rng.integers(0, 2, (m, 3)) * 7) % K
    t = np.where(rng.random((m, 3)) < 0.25, -1, t)  # about 2.25 to 3 distinct tasks a row
    p = np.where(rng.random((m, 3)) < 0.1, rng.integers(0, K, (m, 3)), t)
    gp = np.where(rng.random(m) < 0.1, 1 - g, g)
    return g, t, gp, p


def _records(lo, g, t):
    "(row_id, label) records of a chunk, sorted by row id, each label once a row."
    m = len(g)
    rows = np.concatenate([np.arange(m), np.repeat(np.arange(m), 3)])
    labels = np.concatenate([g, np.where(t.ravel() >= 0, t.ravel() + 2, -1)])
    keep = labels >= 0
    key = np.unique(rows[keep].astype(np.int64) * (K + 2) + labels[keep])
    names = pa.array(GROUPS + TASKS)
    return pa.table({"row_id": pa.array(key // (K + 2) + lo),
                     "label": pa.DictionaryArray.from_arrays(pa.array((key % (K + 2)).astype(np.int32)), names)})


def generate(folder, n, seed=0):
    "Write truth.parquet and pred.parquet of n rows, a chunk at a time."
    rng = np.random.default_rng(seed)
    writers = {}
    for lo in range(0, n, CHUNK):
        g, t, gp, p = _chunk(rng, lo, min(n, lo + CHUNK))
        for name, (a, b) in (("truth", (g, t)), ("pred", (gp, p))):
            tab = _records(lo, a, b)
            if name not in writers: writers[name] = pq.ParquetWriter(folder / f"{name}.parquet", tab.schema)
            writers[name].write_table(tab, row_group_size=1 << 20)
    for w in writers.values(): w.close()


def on_cluster(folder, workers, n_boot, n_null, metrics):
    "Wall seconds of dask_evaluate on a fresh LocalCluster, each worker's peak memory (MiB), the seconds of each metric."
    from distributed import Client, LocalCluster
    import biasamp_nb.distributed as D
    stages, metric = {}, D.cluster_metric
    def timed(rows, spec, direction=None, **kw):
        t = time.perf_counter()
        try: return metric(rows, spec, direction, **kw)
        finally: stages[spec.title(direction)] = time.perf_counter() - t
    D.cluster_metric = timed
    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None,
                      memory_limit=0) as cluster, Client(cluster) as client:
        t = time.perf_counter()
        res = D.dask_evaluate(str(folder / "truth.parquet"), GROUPS, pred=str(folder / "pred.parquet"), client=client,
                              tasks=TASKS, n_boot=n_boot, n_null=n_null, random_state=0, metrics=metrics)
        secs = time.perf_counter() - t
        peak = client.run(lambda: own_peak_kb() / 1024)  # the worker's own, not its parent's
    D.cluster_metric = metric
    return secs, max(peak.values()), res, stages


def in_memory(folder, n, n_boot, n_null, metrics):
    "Wall seconds of the same three metrics in one process, from the same files (reading excluded)."
    from biasamp_nb import ba_directional, ba_mals, multi_directional, multi_mals
    def table(name):
        tab = pq.read_table(folder / f"{name}.parquet")
        r = tab.column("row_id").to_numpy()
        lab = tab.column("label").combine_chunks().indices.to_numpy()
        A = np.zeros((n, 2), np.int8); A[r[lab < 2], lab[lab < 2]] = 1
        T = sp.csr_matrix((np.ones(int((lab >= 2).sum()), np.int8), (r[lab >= 2], lab[lab >= 2] - 2)), shape=(n, K))
        return pd.DataFrame(A, columns=GROUPS), T
    (A, T), (AP, P) = table("truth"), table("pred")
    kw, stages = dict(n_boot=n_boot, n_null=n_null, random_state=0), {}
    runs = {"BA_MALS": lambda: ba_mals(T, A, P, AP, **kw),
            **{f"BA→ ({d})": lambda d=d: ba_directional(T, A, P, AP, direction=d, **kw) for d in ("A->T", "T->A")},
            **{f"Multi→ ({d})": lambda d=d: multi_directional(T, A, P, AP, direction=d, min_count=10, **kw)
               for d in ("A->T", "T->A")},
            "Multi_MALS": lambda: multi_mals(T, A, P, AP, min_count=10, **kw)}
    for k, f in runs.items():
        if k not in metrics: continue
        t = time.perf_counter(); f(); stages[k] = time.perf_counter() - t
    return sum(stages.values()), stages


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=float, nargs="+", default=[1e6, 1e7])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--memory", type=float, default=1e7, help="the largest size also run in one process")
    ap.add_argument("--n-boot", type=int, default=200)
    ap.add_argument("--n-null", type=int, default=199)
    ap.add_argument("--metrics", choices=["all", "cooccurrence"], default="all",
                    help="all six, or BA_MALS and BA→ alone (the Multi metrics' combinations grow with the rows here)")
    a = ap.parse_args()
    out, metrics = [], ["BA_MALS", "BA→ (A->T)", "BA→ (T->A)"]
    if a.metrics == "all": metrics += ["Multi→ (A->T)", "Multi→ (T->A)", "Multi_MALS"]
    for n in map(int, a.rows):
        folder = Path(tempfile.mkdtemp(prefix="bench_dist_"))
        try:
            t = time.perf_counter(); generate(folder, n); gen = time.perf_counter() - t
            mb = sum(f.stat().st_size for f in folder.iterdir()) / 2**20
            secs, peak, res, stages = on_cluster(folder, a.workers, a.n_boot, a.n_null, metrics)
            mem, mstages = in_memory(folder, n, a.n_boot, a.n_null, metrics) if n <= a.memory else (np.nan, {})
            out.append(dict(rows=n, parquet_MiB=round(mb), generate_s=round(gen, 1), cluster_s=round(secs, 1),
                            worker_peak_MiB=round(peak), in_memory_s=round(mem, 1), ratio=round(secs / mem, 2),
                            BA_MALS=round(res["BA_MALS"].value, 5)))
            print(out[-1], flush=True)
            print(pd.DataFrame(dict(cluster_s=stages, in_memory_s=mstages)).round(1).to_string(), flush=True)
        finally: shutil.rmtree(folder, ignore_errors=True)
    t = pd.DataFrame(out)
    if len(t) > 1:
        t["growth_exponent"] = np.r_[np.nan, np.diff(np.log(t.cluster_s)) / np.diff(np.log(t.rows))].round(2)
    print(t.to_string(index=False))


if __name__ == "__main__": main()
