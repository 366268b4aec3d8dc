"""Benchmark of all ten association metrics (and their gap) for 20,000 labels × 2 identity labels from a
sparse 10^6-row label matrix; prints a table.

Data: 10^6 rows, 20,000 labels with Zipf frequencies (about 5 labels per row, scipy CSR), two identity labels
(woman / man, 50/50). The time covers validation, the count product and every metric for both identity labels.

    python bench/bench_association.py [--quick]
"""
import argparse
import time

import numpy as np
import pandas as pd
import scipy.sparse as sp

from biasamp_nb import association, association_gap


def make(n, k, seed=0):
    rng = np.random.default_rng(seed)
    p = np.minimum(0.5 / np.arange(1, k + 1) ** 0.9, 0.5)
    nnz = rng.binomial(n, p)   # occurrences per label; rows drawn independently per label (duplicates merged)
    cols = np.repeat(np.arange(k), nnz)
    rows = rng.integers(0, n, size=cols.size)
    Y = sp.csr_matrix((np.ones(cols.size, np.int8), (rows, cols)), shape=(n, k))
    Y.sum_duplicates(); Y.data[:] = 1
    g = rng.integers(0, 2, n)
    X = np.eye(2, dtype=np.int8)[g]
    return X, Y


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="10^5 rows only")
    args = ap.parse_args()
    rows = []
    for n in ([10**5] if args.quick else [10**5, 10**6]):
        X, Y = make(n, 20_000)
        for name, fn in [("association (10 metrics × 2 identities)", lambda: association(X, Y)),
                         ("association_gap (10 metrics)", lambda: association_gap(X, Y, "x0", "x1"))]:
            t = time.perf_counter(); out = fn(); secs = time.perf_counter() - t
            rows.append({"work": name, "rows": n, "labels": Y.shape[1], "label occurrences": Y.nnz, "seconds": round(secs, 2)})
    print(pd.DataFrame(rows).to_string(index=False))


if __name__ == "__main__":
    main()
