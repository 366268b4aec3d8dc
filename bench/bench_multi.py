"""Benchmark of mining M plus Multi→ in both directions (max_size=3, min_count=10); prints a table.

Data: COCO-like label matrices (80 labels, prevalences 0.1% to 20%, see _data.py); the training split is
a second draw of the same size. The time covers input validation, mining M on both splits, the set-indicator
matrices and Multi→ A->T and T->A.

    python bench/bench_multi.py [--quick]
"""
import argparse
import time

import pandas as pd

from biasamp_nb import multi_directional, task_combinations
from _data import coco_like


def run(n, k=80):
    T, A, Tp, Ap = coco_like(n, k, seed=0)
    Ttr, Atr, _, _ = coco_like(n, k, seed=1)
    t = time.perf_counter()
    r1 = multi_directional(T, A, Tp, direction="A->T", T_train=Ttr, A_train=Atr, max_size=3, min_count=10)
    r2 = multi_directional(T, A, A_pred=Ap, direction="T->A", T_train=Ttr, A_train=Atr, max_size=3, min_count=10)
    secs = time.perf_counter() - t
    sizes = r1.info["sizes"]
    assert r1.info["sizes"] == r2.info["sizes"]
    return {"rows": n, "labels": k, "|M| size 1": sizes.get(1, 0), "|M| size 2": sizes.get(2, 0),
            "|M| size 3": sizes.get(3, 0), "Multi→ A->T": round(r1.value, 5), "Multi→ T->A": round(r2.value, 5),
            "seconds (mine + both directions)": round(secs, 2)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="10^4 and 10^5 rows only")
    args = ap.parse_args()
    ns = [10**4, 10**5] if args.quick else [10**4, 10**5, 10**6]
    print(pd.DataFrame([run(n) for n in ns]).to_string(index=False))


if __name__ == "__main__":
    main()
