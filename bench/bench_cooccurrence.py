"""Benchmark of BA→ (A->T) and its bootstrap; prints a table.

Data: n rows × |T| task labels with COCO-like prevalences (0.1% to 20%), two one-hot groups, predictions
that flip 2% of the cells; int8 numpy arrays (see _data.py). When the `bias-amplification` package (the fastest peer, a
torch implementation) is installed, it runs on the same arrays in the same process for comparison. Its
P(T | A) divides c(a, t) by the sum over tasks, which equals the paper's c(a, t) / c(a) only when every row
has exactly one task; so values are compared on COMPAS (one task per row) and only times on multi-label data.

    python bench/bench_cooccurrence.py [--quick]
"""
import argparse
import time

import numpy as np
import pandas as pd

from biasamp_nb import ba_directional
from _data import coco_like


def make(n, k, seed=0):
    T, A, Tp, _ = coco_like(n, k, seed)
    return T, A, Tp


def best(fn, repeat):
    times = []
    for _ in range(repeat):
        t = time.perf_counter(); out = fn(); times.append(time.perf_counter() - t)
    return min(times), out


def peer():
    try:
        import torch
        from bias_amplification.metrics.CoOccurMetrics import DBA
    except ImportError:
        return None
    def run(T, A, Tp):
        v, _ = DBA().computeBiasAmp(torch.from_numpy(A).float(), torch.from_numpy(T).float(), torch.from_numpy(Tp).float())
        return float(v)
    return run


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="small sizes only")
    args = ap.parse_args()
    ns = [10**4, 10**5] if args.quick else [10**4, 10**5, 10**6]
    other = peer()
    if other is not None:  # same value as the peer where its definition coincides with the paper's
        from biasamp_nb.datasets import compas
        c = {k: np.array(v.to_numpy()) for k, v in compas().items() if v is not None}
        v_peer, v_ours = other(c["T"], c["A"], c["T_pred"]), ba_directional(c["T"], c["A"], c["T_pred"], direction="A->T").value
        assert abs(v_peer - v_ours) < 1e-6, (v_peer, v_ours)
        print(f"COMPAS BA→ A->T: biasamp_nb {v_ours:.6f}, peer {v_peer:.6f}\n")
    rows = []
    for n in ns:
        for k in (80, 300):
            T, A, Tp = make(n, k)
            t, r = best(lambda: ba_directional(T, A, Tp, direction="A->T"), 3)
            row = {"work": "BA→ A->T", "rows": n, "labels": k, "biasamp_nb s": round(t, 3)}
            if other is not None:
                tp, v = best(lambda: other(T, A, Tp), 2 if n >= 10**6 else 3)
                row.update({"peer s": round(tp, 3), "speed-up": round(tp / t, 1)})
            rows.append(row)
            del T, A, Tp
    T, A, Tp = make(10**5, 80)
    t, r = best(lambda: ba_directional(T, A, Tp, direction="A->T", n_boot=1000, random_state=0), 1)
    rows.append({"work": "BA→ A->T, 1,000 bootstrap resamples", "rows": 10**5, "labels": 80, "biasamp_nb s": round(t, 3)})
    print(pd.DataFrame(rows).to_string(index=False))
    if other is None: print("\n(peer `bias-amplification` not installed: pip install --no-deps bias-amplification==0.2.1)")


if __name__ == "__main__":
    main()
