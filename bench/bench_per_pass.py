"""Benchmark of counting several resampling weightings in one compiled pass (the Multi metrics' dense labels).

Data: `report_like` labels, n rows × 300 with about 20 labels a row (dense: the combinations' set indicators do not
fit, so each weighting is counted from the labels by the compiled pass, `_weights_counter`). For B weightings in one
call it prints the seconds a call, the seconds a weighting, and the process's peak memory after the call (it only
grows, B rising), then the weightings a call the counter chooses under the memory budget (`per_pass`).

    python bench/bench_per_pass.py [--rows 100000] [--budget 2GB]
"""
import argparse
import os
import time

import numpy as np
import pandas as pd

from _data import own_peak_kb, report_like


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--budget", default="2GB", help="BIASAMP_MEMORY_BUDGET for the run")
    args = ap.parse_args()
    os.environ["BIASAMP_MEMORY_BUDGET"] = args.budget
    from biasamp_nb.combinations import multi_inputs  # after the budget is set
    T, A, Tp, _ = report_like(args.rows, 300, per_row=20)
    d, M, count, _, _ = multi_inputs(T, A, Tp, None, None, None, 3, 10, "all", unused="A_pred", resampled=True)
    n, rng, rows = T.shape[0], np.random.default_rng(0), []
    for B in (1, 2, 4, 8, 16):
        W = rng.multinomial(n, np.full(n, 1 / n), size=B).astype(np.int32)
        t = time.perf_counter(); c = count(W); secs = time.perf_counter() - t
        rows.append({"weightings a call": B, "seconds a call": round(secs, 2),
                     "seconds a weighting": round(secs / B, 3), "peak MB so far": round(own_peak_kb() / 1024)})
        del c
    print(f"{n:,} rows × 300 labels, about 20 a row; {len(M):,} task combinations; budget {args.budget}")
    print(pd.DataFrame(rows).to_string(index=False))
    print(f"weightings a call chosen under the budget (per_pass): {count.per_pass()}")


if __name__ == "__main__":
    main()
