"""The two ways of counting the rows' subsets of task labels, side by side: listing every row's subsets (then one
sort or table of their codes) and the compiled pass that looks each subset up among the combinations. For each kind
of labels it times the mining of the combinations (size ≤ 3, min_count 10) and the point estimate's counts of them
per group, each way (the best of two runs), with each listing's peak memory estimated at 40 bytes a subset. The
combinations and counts are the same either way (checked here). `LIST_MAX` in `biasamp_nb.subsets` is where the
report switches from the first way to the second. Prints a table.

    python bench/bench_subset_routes.py [--quick]
"""
import argparse
import time

import numpy as np
import pandas as pd

import biasamp_nb.subsets as S
import biasamp_nb.combinations as C
from biasamp_nb.core import check_inputs
from biasamp_nb.counting import left_codes
from _data import report_like

CASES = [(10**6, 3), (10**5, 3), (3 * 10**5, 6), (10**5, 10), (10**4, 20), (3 * 10**4, 20)]  # rows, labels a row


def timed(f):
    t = time.perf_counter()
    out = f()
    return time.perf_counter() - t, out


def one_way(d, X, listed: bool):
    "(seconds mining, seconds counting, M, counts) with every subset listed (within memory) or counted by the pass."
    old = S.LIST_MAX
    S.LIST_MAX = float("inf") if listed else -1
    try:
        tm, M = timed(lambda: C._mine(d["T"], d["T"], 3, 10, "all", Xe=X))
        codes = left_codes([d["A"].values], d["T"].n)
        tc, counts = timed(lambda: C._set_cross_counts([d["A"].values], [X], M, codes))
    finally:
        S.LIST_MAX = old
    return tm, tc, M, counts


def run(n, per_row, k=300):
    T, A, _, _ = report_like(n, k, per_row=per_row)
    d = check_inputs(T, A)
    X = S.binary_csr(d["T"])
    subsets = S.subset_estimate(X, 3)
    row = {"rows": n, "labels a row": per_row, "3-subsets": f"{subsets:.3g}",
           "listing (MB)": round(subsets * 40 / 1e6)}
    for name, listed in (("listed", True), ("pass", False)):
        runs = [one_way(d, X, listed) for _ in range(2)]
        row[f"mine {name} (s)"] = round(min(r[0] for r in runs), 2)
        row[f"count {name} (s)"] = round(min(r[1] for r in runs), 2)
        row[f"_{name}"] = runs[0][2:]
    (M1, c1), (M2, c2) = row.pop("_listed"), row.pop("_pass")
    assert M1 == M2 and np.array_equal(c1, c2), "the two ways disagree"
    row["|M|"] = len(M1)
    row["size 3, every label"] = "listed" if S.lists_subsets(X, 3, None, None) else "pass"  # as the metrics choose
    return row


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="the cases with at most 10⁵ rows")
    a = ap.parse_args()
    cases = [c for c in CASES if not a.quick or c[0] <= 10**5]
    rows = [run(n, p) for n, p in cases]
    print(f"LIST_MAX = {S.LIST_MAX:,} subsets")
    print(pd.DataFrame(rows).to_string(index=False))


if __name__ == "__main__":
    main()
