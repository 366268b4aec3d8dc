"""The two ways the Multi metrics count every resample and swap draw, side by side: from the set indicators of the
combinations (a sparse product per block of weightings) and from the labels by the compiled pass (`_weights_counter`,
several weightings a pass). For each density of labels it runs Multi→ both ways and Multi_MALS together, as the report
does (`evaluate`, 40 resamples, 39 swaps), each way in a process of its own, and prints the seconds, the process's
peak memory, the mean kept subsets a row (`subset_estimate` over the rows, sizes 1-3) and whether the values, intervals
and draws are the same bit for bit. `_by_labels` in `biasamp_nb.combinations` chooses between them.

    python bench/bench_resample_routes.py [--rows 100000] [--per-row 3 8 14 20]
"""
import argparse
import hashlib
import json
import subprocess
import sys
import time

import numpy as np
import pandas as pd

from _data import own_peak_kb, report_like

NAMES = ["Multi→ (A->T)", "Multi→ (T->A)", "Multi_MALS"]


def one(n, per_row, labels: bool):
    "Run the three metrics one way; print a JSON line."
    import biasamp_nb.combinations as C
    import biasamp_nb.subsets as S
    from biasamp_nb.report import evaluate
    if labels: C.hits_fit = lambda *a, **k: False  # the set indicators taken as not fitting: counted from the labels
    else: C.hits_fit = lambda *a, **k: True  # taken as fitting: the set indicators
    T, A, Tp, Ap = report_like(n, 300, per_row=per_row)
    t = time.perf_counter()
    out = evaluate(T, A, Tp, Ap, n_boot=40, n_null=39, only=NAMES)
    secs = time.perf_counter() - t
    import scipy.sparse as sp
    Xc = sp.csr_matrix(T)
    subsets = sum(S.subset_estimate(Xc, s, np.ones(T.shape[1], bool)) for s in (1, 2, 3)) / n
    key = b"".join(np.asarray(x, float).tobytes() for nm in NAMES for x in
                   (out[nm].value, out[nm].ci, out[nm].p_value, out[nm].boot, out[nm].null))
    print(json.dumps(dict(secs=secs, peak_mb=own_peak_kb() / 1024, subsets=subsets, key=hashlib.sha256(key).hexdigest())))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--per-row", type=float, nargs="+", default=[3, 8, 14, 20])
    ap.add_argument("--one", nargs=3, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.one: return one(int(a.one[0]), float(a.one[1]), a.one[2] == "labels")
    rows = []
    for p in a.per_row:
        got = {}
        for way in ("sets", "labels"):
            r = subprocess.run([sys.executable, __file__, "--one", str(a.rows), str(p), way], capture_output=True,
                               text=True, check=True)
            got[way] = json.loads(r.stdout.strip().splitlines()[-1])
        s, l = got["sets"], got["labels"]
        rows.append({"labels a row": p, "kept subsets a row": round(s["subsets"]),
                     "set indicators s": round(s["secs"], 1), "set indicators MB": round(s["peak_mb"]),
                     "labels s": round(l["secs"], 1), "labels MB": round(l["peak_mb"]),
                     "labels / sets (time)": round(l["secs"] / s["secs"], 2), "same bits": s["key"] == l["key"]})
        print(pd.DataFrame(rows).to_string(index=False), flush=True)


if __name__ == "__main__":
    main()
