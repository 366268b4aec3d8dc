"""Where the time of a COCO-sized `biasamp report` goes: one run as a user runs it (a new process, Parquet files,
the defaults), timed stage by stage: the import, the input checks, each metric (with its intervals, test and other
attackers), the Multi metrics' joint bootstrap, the figure and the rest of the writing; and, within the
metrics, the time of the network attacker's fits. Prints a table.

    python bench/bench_report_stages.py [--n 5473] [--k 79] [--per-row 3] [--budget 2GB] [--busy] [--draws 20]
                                        [--dir /tmp/biasamp_bench]

--busy runs it beside a process that keeps one core busy, as on a shared machine. --per-row 20 makes dense labels (about
20 a row, as the report_dense rows of bench_bounds.py, whose files it shares); --budget sets BIASAMP_MEMORY_BUDGET;
--draws B runs B resamples and B − 1 swaps instead of the report's 200 and 199 (a dense report at 10⁵ rows in minutes).
The last line is the report process's peak memory (its largest resident size). --csv FILE adds the table's rows to
FILE (a CSV record: date, machine, the package's commit, run, stage, seconds; the peak in peak_mb)."""
import argparse
import collections
import functools
import os
import subprocess
import sys
import tempfile
import time
import types
from pathlib import Path

STAGES = collections.defaultdict(float)


def timed(mod, name, key):
    "Replace mod.name by a wrapper that adds its wall time to STAGES[key]."
    f = getattr(mod, name)

    @functools.wraps(f)
    def g(*a, **k):
        t = time.perf_counter()
        try: return f(*a, **k)
        finally: STAGES[key] += time.perf_counter() - t
    setattr(mod, name, g)


class Timed:
    "The report's metric loop (its progress bar) with each metric's time, from its start to the next one's."
    def __init__(self, bar): self.bar = bar
    def __getattr__(self, name): return getattr(self.bar, name)  # the bar's own methods (set_postfix_str, ...)
    def __iter__(self):
        for x in self.bar:
            t = time.perf_counter()
            yield x
            STAGES[f"metric {x[0]}"] += time.perf_counter() - t


def per_metric(steps):
    "`report._steps` whose loop is `Timed`."
    return lambda todo, *a, **k: Timed(steps(todo, *a, **k))


def files(n, k, d, per_row=3.0):
    "Evaluation truth and predictions as the report rows of bench_bounds.py write them (report-like, a gender column)."
    import numpy as np
    import pandas as pd
    sys.path.insert(0, str(Path(__file__).parent))
    from _data import report_like
    tag = f"{n}_{k}_real" + (f"_{per_row:g}_a_row" if per_row != 3.0 else "")
    ev, pr = Path(d) / f"eval_{tag}.parquet", Path(d) / f"pred_{tag}.parquet"
    if not (ev.exists() and pr.exists()):
        T, A, Tp, Ap = report_like(n, k, per_row=per_row)
        cols, g = [f"t{j}" for j in range(k)], np.array(["man", "woman"])
        for path, X, G in ((ev, T, A), (pr, Tp, Ap)):
            df = pd.DataFrame(X, columns=cols); df.insert(0, "gender", g[G.argmax(1)])
            df.to_parquet(path.with_suffix(".tmp")); os.replace(path.with_suffix(".tmp"), path)
    return ev, pr


def run(ev, pr, out, draws=None):
    "One report, its stages timed; the import first, in this fresh process."
    t = time.perf_counter()
    import biasamp_nb.cli as cli
    STAGES["import"] = time.perf_counter() - t
    import biasamp_nb.core as core
    import biasamp_nb.report as rep
    import biasamp_nb.report_pages as pages
    timed(core, "check_inputs", "input checks"); timed(rep, "check_inputs", "input checks")
    rep._steps = per_metric(rep._steps)
    timed(rep, "evaluate", "evaluate (all metrics)"); timed(pages, "_case_figure", "figure")
    cmd = types.SimpleNamespace(report=cli.COMMANDS["report"])  # the command as `main` calls it: read, audit, write
    timed(cmd, "report", "report (all but the import)")
    cli.COMMANDS["report"] = cmd.report
    import biasamp_nb.fitting as fitting
    timed(fitting.ScoredMLP, "fit", "of which the network attacker's fits")  # in Leakage and DPA (T->A)
    t = time.perf_counter()
    more = [] if draws is None else ["--n-boot", str(draws), "--n-null", str(draws - 1)]
    if cli.main(["report", "--groups", "gender", "--eval", str(ev), "--pred", str(pr), "--out", str(out), *more]):
        sys.exit("the report failed")
    total = time.perf_counter() - t + STAGES["import"]
    metrics = sum(v for k, v in STAGES.items() if k.startswith("metric "))
    STAGES["joint bootstrap and the rest of evaluate"] = STAGES["evaluate (all metrics)"] - metrics - STAGES["input checks"]
    STAGES["writing, and the rest of the report"] = (STAGES["report (all but the import)"] - STAGES["figure"]
                                                     - STAGES["evaluate (all metrics)"])  # reading the files too
    STAGES["total (new process, import included)"] = total
    net = "of which the network attacker's fits"
    STAGES[net] = STAGES.pop(net, 0.0)  # printed last, under the total it is part of


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=5473); ap.add_argument("--k", type=int, default=79)
    ap.add_argument("--per-row", type=float, default=3.0, help="labels a row (20: dense labels)")
    ap.add_argument("--budget", help="the memory budget, as BIASAMP_MEMORY_BUDGET (default: the package's)")
    ap.add_argument("--busy", action="store_true", help="beside a process that keeps one core busy")
    ap.add_argument("--draws", type=int, help="resamples (and one fewer swaps) instead of the report's 200 and 199")
    ap.add_argument("--dir", default=os.path.join(tempfile.gettempdir(), "biasamp_bench"))
    ap.add_argument("--csv", help="also add the rows to this CSV file")
    ap.add_argument("--one", action="store_true", help=argparse.SUPPRESS)  # internal: the timed run itself
    a = ap.parse_args()
    Path(a.dir).mkdir(parents=True, exist_ok=True)
    ev, pr = files(a.n, a.k, a.dir, a.per_row)
    if a.one:
        with tempfile.TemporaryDirectory() as d: run(ev, pr, Path(d) / "report", a.draws)
        for k, v in STAGES.items(): print(f"STAGE\t{k}\t{v:.3f}")
        from _data import own_peak_kb  # this process's own peak, not one inherited from the process that started it
        print(f"PEAK\t{own_peak_kb() / 1024:.0f}")
        return
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if a.busy else None
    try:
        env = os.environ | {"MPLBACKEND": "Agg"} | ({"BIASAMP_MEMORY_BUDGET": a.budget} if a.budget else {})
        r = subprocess.run([sys.executable, __file__, "--one", "--n", str(a.n), "--k", str(a.k), "--per-row",
                            str(a.per_row), "--dir", a.dir, *(["--draws", str(a.draws)] if a.draws else [])],
                           capture_output=True, text=True, env=env)
    finally:
        if busy is not None: busy.kill(); busy.wait()
    if r.returncode: sys.exit(r.stderr[-3000:])
    rows = [line.split("\t")[1:] for line in r.stdout.splitlines() if line.startswith("STAGE\t")]
    dense = f", {a.per_row:g} labels a row" if a.per_row != 3.0 else ""
    budget = f", budget {a.budget}" if a.budget else ""
    loaded = " (one core busy)" if a.busy else ""
    opts = "defaults" if a.draws is None else f"{a.draws} resamples and {a.draws - 1} swaps"
    title = f"biasamp report, {opts}, {a.n:,} × {a.k} Parquet files{dense}{budget}"
    print(title + loaded)
    w = max(len(k) for k, _ in rows)
    for k, v in rows: print(f"  {k:<{w}}  {float(v):7.2f} s")
    peak = [line.split("\t")[1] for line in r.stdout.splitlines() if line.startswith("PEAK\t")]
    print(f"  {'peak memory of the report process':<{w}}  {float(peak[0]):7.0f} MiB")
    if a.csv:
        from _data import add_rows
        add_rows(a.csv, [dict(run=title, stage=k, seconds=float(v)) for k, v in rows]
                 + [dict(run=title, stage="peak memory of the report process", peak_mb=float(peak[0]))],
                 f"{os.cpu_count()} cores" + (", one core busy" if a.busy else ""))


if __name__ == "__main__":
    main()
