"""Synthetic label matrices shaped like COCO objects, a process's own peak memory, and rows added to a CSV record,
shared by the benchmarks."""
import os
import resource
import time
from pathlib import Path

import numpy as np


def own_peak_kb():
    "This process's own peak resident memory in kB: Linux's VmHWM; ru_maxrss where there is no /proc."
    # not ru_maxrss on Linux: a process started by fork + exec keeps it from the process that started it (that one's
    # resident memory at the start: rows a bench generated), so it reports the parent's memory, not its own
    try:
        with open("/proc/self/status") as f: return next(int(l.split()[1]) for l in f if l.startswith("VmHWM:"))
    except (OSError, StopIteration): return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def source_commit():
    "The commit of the package these benchmarks sit beside ('-dirty' where its code has changes not committed)."
    import subprocess
    git = ["git", "-C", str(Path(__file__).resolve().parents[1])]
    try:
        head = subprocess.run(git + ["rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True)
        dirty = subprocess.run(git + ["status", "--porcelain", "--", "biasamp_nb"], capture_output=True, text=True)
    except (OSError, subprocess.CalledProcessError): return ""
    return head.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")


def add_rows(path, rows, machine):
    "Append `rows` (dicts) to the CSV file `path`, dated, with `machine` and the commit; written whole, swapped in."
    import pandas as pd
    p = Path(path)
    new = pd.DataFrame(rows)
    new.insert(0, "date", time.strftime("%Y-%m-%d")); new.insert(1, "machine", machine)
    new.insert(2, "commit", source_commit())
    out = pd.concat([pd.read_csv(p), new], ignore_index=True) if p.exists() else new
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(p.name + ".tmp")
    out.to_csv(tmp, index=False)
    os.replace(tmp, p)


def coco_like(n, k, seed=0, flip=0.02):
    """n rows × k task labels (int8) with prevalences log-uniform in [0.1%, 20%] (about 3 labels per row),
    two one-hot groups that tilt every label (×1.3 / ×0.7), predictions that flip `flip` of the task cells,
    and predicted groups that are wrong for 10% of rows."""
    rng = np.random.default_rng(seed)
    prev = np.exp(rng.uniform(np.log(0.001), np.log(0.2), k)).astype(np.float32)
    g = rng.integers(0, 2, n)
    T = np.empty((n, k), np.int8)
    Tp = np.empty((n, k), np.int8)
    step = 1 << 16  # blockwise, to keep the generator's memory small
    for i in range(0, n, step):
        j = min(i + step, n)
        tilt = np.where(g[i:j, None] == 1, 1.3, 0.7).astype(np.float32)
        T[i:j] = rng.random((j - i, k), dtype=np.float32) < prev * tilt
        Tp[i:j] = T[i:j] ^ (rng.random((j - i, k), dtype=np.float32) < flip)
    gp = np.where(rng.random(n) < 0.1, 1 - g, g)
    return T, np.eye(2, dtype=np.int8)[g], Tp, np.eye(2, dtype=np.int8)[gp]


def report_like(n, k, seed=0, noisy=False, per_row=3.0):
    """What `biasamp report` sees: n rows × k task labels (int8) with about `per_row` labels a row whatever k
    (prevalences log-uniform, scaled), two groups that tilt every label (×1.3 / ×0.7) and predicted groups wrong for
    10% of rows. Realistic predictions move 5% of each row's labels to another label; noisy ones flip every cell
    with probability 5% (about 0.05·k predicted labels a row more)."""
    rng = np.random.default_rng(seed)
    prev = np.exp(rng.uniform(np.log(0.001), np.log(0.2), k))
    prev = (prev * per_row / prev.sum()).clip(0, 0.5).astype(np.float32)
    g = rng.integers(0, 2, n)
    T = np.empty((n, k), np.int8)
    Tp = np.empty((n, k), np.int8)
    step = 1 << 16
    for i in range(0, n, step):
        j = min(i + step, n)
        tilt = np.where(g[i:j, None] == 1, 1.3, 0.7).astype(np.float32)
        T[i:j] = rng.random((j - i, k), dtype=np.float32) < prev * tilt
        if noisy: Tp[i:j] = T[i:j] ^ (rng.random((j - i, k), dtype=np.float32) < 0.05)
        else:  # each true label moved, with probability 5%, to a label drawn by prevalence
            Tp[i:j] = T[i:j]
            r, c = np.nonzero(T[i:j])
            mv = rng.random(len(r)) < 0.05
            Tp[i:j][r[mv], c[mv]] = 0
            Tp[i:j][r[mv], rng.choice(k, mv.sum(), p=prev / prev.sum())] = 1
    gp = np.where(rng.random(n) < 0.1, 1 - g, g)
    return T, np.eye(2, dtype=np.int8)[g], Tp, np.eye(2, dtype=np.int8)[gp]
