"""Benchmark of counting at scale: association metrics and BA→ from a long-format Parquet file with 10^7
instances (about 10^8 label occurrences), per engine, with time and peak memory; prints a table.

Data: 10^7 instances, one group label each (woman / man) and on average 9 task labels drawn from 2,000
Zipf-distributed labels (dictionary-encoded strings), sorted by row_id; a predictions file in which 5% of the
task labels are replaced by random ones. Each engine runs in its own process; peak RSS is that process's.

    python bench/bench_scale.py [--rows 10000000] [--dask-rows 1000000] [--dir /tmp/biasamp_scale]
"""
import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent


def generate(path, n, n_labels=2000, seed=0, flip=0.0, chunk=1_000_000):
    import pyarrow as pa, pyarrow.parquet as pq
    rng = np.random.default_rng(seed)
    names = np.array(["woman", "man"] + [f"label{j}" for j in range(n_labels)])
    p = 1 / np.arange(1, n_labels + 1); p /= p.sum()
    writer = None
    for s in range(0, n, chunk):
        m = min(chunk, n - s)
        k = rng.poisson(9, m)
        rows = np.repeat(np.arange(s, s + m), k)
        tasks = rng.choice(n_labels, size=rows.size, p=p) + 2
        if flip:
            f = rng.random(rows.size) < flip
            tasks[f] = rng.integers(2, n_labels + 2, f.sum())
        rid = np.concatenate([np.arange(s, s + m), rows])
        lab = np.concatenate([np.random.default_rng(s).integers(0, 2, m), tasks])   # same groups in truth and pred
        key = np.unique(rid.astype(np.int64) * 4096 + lab)                          # each (row_id, label) once, sorted
        rid, lab = key // 4096, key % 4096
        o = np.arange(len(rid))
        tab = pa.table({"row_id": pa.array(rid[o]), "label": pa.DictionaryArray.from_arrays(pa.array(lab[o].astype(np.int16)), pa.array(names))})
        if writer is None: writer = pq.ParquetWriter(str(path), tab.schema)
        writer.write_table(tab, row_group_size=1_000_000)
    writer.close()
    return names


ENGINE = r'''
import json, sys, time
sys.path.insert(0, "{root}"); sys.path.insert(0, "{bench}")
from _data import own_peak_kb
from biasamp_nb.scale import duckdb_counts, dask_counts, stream_parquet_counts
from biasamp_nb.cooccurrence import ba_directional_counts
from biasamp_nb.associations import association_gap_counts
eng, truth, pred, tasks, n = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4]), int(sys.argv[5])
t = time.perf_counter()
if eng == "duckdb": c = duckdb_counts(truth, ["woman", "man"], pred=pred, tasks=tasks, n_rows=n, memory_limit="3GB", threads=2)
elif eng == "dask":
    import dask
    with dask.config.set(scheduler="threads", num_workers=2):
        c = dask_counts(truth, ["woman", "man"], pred=pred, tasks=tasks, n_rows=n)
else: c = stream_parquet_counts(truth, ["woman", "man"], tasks, n_rows=n)
t_count = time.perf_counter() - t
gaps = association_gap_counts(c, "woman", "man")
ba = ba_directional_counts(c, direction="A->T").value if c.at_pred is not None else float("nan")
print(json.dumps(dict(count_s=t_count, total_s=time.perf_counter() - t, ba=ba, max_npmi_gap=float(gaps["npmi_xy"].max()),
                      peak_rss_gib=own_peak_kb() / 2**20)))
'''


def run(engine, truth, pred, tasks, n):
    code = ENGINE.format(root=str(HERE.parent), bench=str(HERE))
    r = subprocess.run([sys.executable, "-c", code, engine, str(truth), str(pred), json.dumps(tasks), str(n)],
                       capture_output=True, text=True)
    if r.returncode != 0: return dict(error=r.stderr.strip().splitlines()[-1][:200])
    return json.loads([l for l in r.stdout.splitlines() if l.startswith("{")][-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--dask-rows", type=int, default=1_000_000, help="Dask's shuffle is run on a smaller file")
    ap.add_argument("--dir", default="/tmp/biasamp_scale")
    a = ap.parse_args()
    d = Path(a.dir); d.mkdir(parents=True, exist_ok=True)
    out = []
    for n, engines in ((a.rows, ["duckdb", "stream"]), (a.dask_rows, ["dask", "duckdb"])):
        truth, pred = d / f"truth_{n}.parquet", d / f"pred_{n}.parquet"
        if not truth.exists():
            t = time.perf_counter(); names = generate(truth, n); generate(pred, n, flip=0.05)
            print(f"generated {n:,} instances in {time.perf_counter() - t:.0f} s", flush=True)
        import pyarrow.parquet as pq
        occ = pq.ParquetFile(str(truth)).metadata.num_rows
        tasks = [f"label{j}" for j in range(2000)]
        for e in engines:
            r = run(e, truth, pred, tasks, n)
            out.append(dict(engine={"stream": "streaming (pyarrow batches)", "duckdb": "DuckDB", "dask": "Dask (threads)"}[e],
                            instances=n, occurrences=occ, **r))
            print(out[-1], flush=True)
    df = pd.DataFrame(out)
    print()
    print(df.round(3).to_string(index=False))
    print("\nstreaming reads the truth file only (association metrics); BA→ needs the predictions, which DuckDB and Dask join.")


if __name__ == "__main__":
    main()
