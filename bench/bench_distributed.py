"""The report's count metrics on a Dask cluster (`dask_evaluate`: BA_MALS and BA→ both ways, each with 200 bootstrap
resamples and 199 swap draws, row-keyed) on long Parquet of n rows × about 3 task labels a row (80 tasks, 2 groups,
predictions with 10% of the labels moved), generated here and deleted after. A LocalCluster of --workers processes
(one thread each) per size; wall time, the peak memory of each worker process, and the growth exponent between
sizes. At the sizes up to --memory, the same three metrics in one process on the same rows (the report's default
draws) for the ratio. Prints a table.

    python bench/bench_distributed.py [--rows 1e6 1e7] [--workers 2] [--memory 1e7]"""
import argparse
import resource
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import scipy.sparse as sp

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


def on_cluster(folder, workers, n_boot, n_null):
    "Wall seconds of dask_evaluate on a fresh LocalCluster, and each worker's peak memory (MiB)."
    from distributed import Client, LocalCluster
    from biasamp_nb.distributed import dask_evaluate
    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None,
                      memory_limit=0) as cluster, Client(cluster) as client:
        t = time.perf_counter()
        res = dask_evaluate(str(folder / "truth.parquet"), GROUPS, pred=str(folder / "pred.parquet"), client=client,
                            tasks=TASKS, n_boot=n_boot, n_null=n_null, random_state=0)
        secs = time.perf_counter() - t
        peak = client.run(lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    return secs, max(peak.values()), res


def in_memory(folder, n, n_boot, n_null):
    "Wall seconds of the same three metrics in one process, from the same files (reading excluded)."
    from biasamp_nb import ba_directional, ba_mals
    def table(name):
        tab = pq.read_table(folder / f"{name}.parquet")
        r = tab.column("row_id").to_numpy()
        lab = tab.column("label").combine_chunks().indices.to_numpy()
        A = np.zeros((n, 2), np.int8); A[r[lab < 2], lab[lab < 2]] = 1
        T = sp.csr_matrix((np.ones(int((lab >= 2).sum()), np.int8), (r[lab >= 2], lab[lab >= 2] - 2)), shape=(n, K))
        return pd.DataFrame(A, columns=GROUPS), T
    (A, T), (AP, P) = table("truth"), table("pred")
    t = time.perf_counter()
    ba_mals(T, A, P, AP, n_boot=n_boot, n_null=n_null, random_state=0)
    for d in ("A->T", "T->A"): ba_directional(T, A, P, AP, direction=d, n_boot=n_boot, n_null=n_null, random_state=0)
    return time.perf_counter() - t


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=float, nargs="+", default=[1e6, 1e7])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--memory", type=float, default=1e7, help="the largest size also run in one process")
    ap.add_argument("--n-boot", type=int, default=200)
    ap.add_argument("--n-null", type=int, default=199)
    a = ap.parse_args()
    out = []
    for n in map(int, a.rows):
        folder = Path(tempfile.mkdtemp(prefix="bench_dist_"))
        try:
            t = time.perf_counter(); generate(folder, n); gen = time.perf_counter() - t
            mb = sum(f.stat().st_size for f in folder.iterdir()) / 2**20
            secs, peak, res = on_cluster(folder, a.workers, a.n_boot, a.n_null)
            mem = in_memory(folder, n, a.n_boot, a.n_null) if n <= a.memory else np.nan
            out.append(dict(rows=n, parquet_MiB=round(mb), generate_s=round(gen, 1), cluster_s=round(secs, 1),
                            worker_peak_MiB=round(peak), in_memory_s=round(mem, 1), ratio=round(secs / mem, 2),
                            BA_MALS=round(res["BA_MALS"].value, 5)))
            print(out[-1], flush=True)
        finally: shutil.rmtree(folder, ignore_errors=True)
    t = pd.DataFrame(out)
    if len(t) > 1:
        t["growth_exponent"] = np.r_[np.nan, np.diff(np.log(t.cluster_s)) / np.diff(np.log(t.rows))].round(2)
    print(t.to_string(index=False))


if __name__ == "__main__": main()
