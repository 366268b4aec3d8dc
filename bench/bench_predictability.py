"""Benchmark of DPA (10 trials, default attacker) and leakage amplification; prints a table.

Rows: the unbalanced COMPAS arrays (5,278 rows, one task with two classes) in both directions, and a
COCO-like 10^5 rows × 80 labels matrix (see _data.py): A->T trains one attacker per label, T->A one attacker
on 80 input labels.

    python bench/bench_predictability.py [--quick]
"""
import argparse
import time

import numpy as np
import pandas as pd

from biasamp_nb import dpa, leakage_amplification
from biasamp_nb.datasets import compas
from _data import coco_like


def timed(fn):
    t = time.perf_counter(); r = fn(); return time.perf_counter() - t, r


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="COMPAS only")
    args = ap.parse_args()
    rows = []
    c = compas()
    arrays = {k: np.array(v.to_numpy()) for k, v in c.items() if v is not None}
    for direction in ("T->A", "A->T"):
        t, r = timed(lambda: dpa(arrays["T"], arrays["A"], arrays["T_pred"], arrays["A_pred"], direction=direction,
                                 n_trials=10, random_state=0))
        rows.append(dict(work=f"DPA {direction}, 10 trials", data="COMPAS unbalanced", rows=len(arrays["T"]), labels=2,
                         value=round(r.value, 4), seconds=round(t, 2)))
    t, r = timed(lambda: leakage_amplification(arrays["T"], arrays["A"], arrays["T_pred"], n_trials=10, random_state=0))
    rows.append(dict(work="leakage, 10 trials", data="COMPAS unbalanced", rows=len(arrays["T"]), labels=2,
                     value=round(r.value, 4), seconds=round(t, 2)))
    if not args.quick:
        T, A, Tp, Ap = coco_like(10**5, 80)
        for direction in ("A->T", "T->A"):
            t, r = timed(lambda: dpa(T, A, Tp, Ap, direction=direction, n_trials=10, random_state=0))
            rows.append(dict(work=f"DPA {direction}, 10 trials", data="COCO-like", rows=10**5, labels=80,
                             value=round(r.value, 4), seconds=round(t, 2)))
    print(pd.DataFrame(rows).to_string(index=False))


if __name__ == "__main__":
    main()
