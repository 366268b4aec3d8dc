"""Where the time of `biasamp captions --human` goes: one run of the default captions report as a user runs it (a new
process, the command line, Tang et al.'s released Att captions of the 1,657 Karpathy-test images with a gender, their
8,286 human captions), timed stage by stage beside the same run with --null 0 (one pass of every reader, no draws: the
yardstick), in the same invocation: the import, the outcomes and their intervals, LIC with its seeds and
test, DBAC in each direction with its trials and test, the other readers, and the rest. Prints a table.

    python bench/bench_captions_stages.py [--data ../shared/data] [--null 39] [--jobs -1] [--busy]

--data is a folder holding captions/tang2021/att_beam5_result.json, captions/gender_dict_val2014.json and
captions/human/karpathy_test5k_refs.json (the converted reference files); --jobs is the command's (worker processes
for the draws and the other readers); --busy runs it beside a process that keeps one core busy; --csv FILE adds
the table's rows to FILE (a CSV record: date, machine, the package's commit, run, stage, seconds, the yardstick's
seconds)."""
import argparse
import functools
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

STAGES, OPEN = {}, []


def timed(mod, name, key):
    "Replace mod.name by a wrapper that adds its wall time to STAGES[key(args)], unless a timed call encloses it."
    f = getattr(mod, name)

    @functools.wraps(f)
    def g(*a, **k):
        if OPEN: return f(*a, **k)  # counted in the enclosing stage
        OPEN.append(name); t = time.perf_counter()
        try: return f(*a, **k)
        finally:
            OPEN.pop(); s = key(*a, **k)
            STAGES[s] = STAGES.get(s, 0.0) + time.perf_counter() - t
    setattr(mod, name, g)


def run(data, null, jobs, out):
    "One captions report, its stages timed; the import first, in this fresh process."
    t = time.perf_counter()
    import biasamp_nb.cli as cli
    STAGES["import"] = time.perf_counter() - t
    import biasamp_nb.captions as cap
    import biasamp_nb.caption_leakage as leak
    import biasamp_nb.caption_amplification as amp
    import biasamp_nb.captions_report as rep
    timed(cap, "outcome_intervals", lambda *a, **k: "outcomes and their intervals")
    timed(leak, "lic", lambda *a, **k: "LIC (seeds and test)")
    timed(amp, "dbac", lambda *a, direction="T->A", **k: f"DBAC ({direction}) (trials and test)")
    timed(rep, "_reader_table", lambda *a, **k: "other readers")
    c = Path(data) / "captions"
    t = time.perf_counter()
    if cli.main(["captions", "--captions", str(c / "tang2021" / "att_beam5_result.json"),
                 "--gender", str(c / "gender_dict_val2014.json"), "--human", str(c / "human" / "karpathy_test5k_refs.json"),
                 "--null", str(null), "--jobs", str(jobs), "--out", str(out)]):
        sys.exit("the captions report failed")
    total = time.perf_counter() - t + STAGES["import"]
    STAGES["the rest (reading, words, figure, writing)"] = total - sum(STAGES.values())
    STAGES["total (new process, import included)"] = total


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=str(Path(__file__).resolve().parents[1].parent / "shared" / "data"))
    ap.add_argument("--null", type=int, default=39)
    ap.add_argument("--jobs", type=int, default=-1)
    ap.add_argument("--busy", action="store_true", help="beside a process that keeps one core busy")
    ap.add_argument("--csv", help="also add the rows to this CSV file")
    ap.add_argument("--one", action="store_true", help=argparse.SUPPRESS)  # internal: the timed run itself
    a = ap.parse_args()
    if not (Path(a.data) / "captions" / "tang2021" / "att_beam5_result.json").is_file():
        sys.exit(f"--data {a.data}: no captions/tang2021/att_beam5_result.json there (the converted reference files)")
    if a.one:
        with tempfile.TemporaryDirectory() as d: run(a.data, a.null, a.jobs, Path(d) / "report")
        for k, v in STAGES.items(): print(f"STAGE\t{k}\t{v:.3f}")
        return
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if a.busy else None
    try: runs = [one(a, null) for null in (0, a.null)]  # the yardstick first: one pass of every reader, no draws
    finally:
        if busy is not None: busy.kill(); busy.wait()
    title = f"biasamp captions --human, Att (1,657 images), --null {a.null}, --jobs {a.jobs}"
    print(f"{title}{' (one core busy)' if a.busy else ''}; yardstick: the same run with --null 0")
    w = max(len(k) for k in runs[1])
    print(f"  {'stage':<{w}}  {'--null 0':>9}  {f'--null {a.null}':>9}  {'ratio':>6}")
    for k, v in runs[1].items():
        y = runs[0].get(k, float("nan"))
        print(f"  {k:<{w}}  {y:7.1f} s  {v:7.1f} s  {v / y if y > 0.05 else float('nan'):6.1f}")
    if a.csv:
        from _data import add_rows
        add_rows(a.csv, [dict(run=title, stage=k, seconds=v, yardstick_s=runs[0].get(k)) for k, v in runs[1].items()],
                 f"{os.cpu_count()} cores" + (", one core busy" if a.busy else ""))


def one(a, null) -> dict:
    "The stages of one timed run in a new process, {stage: seconds}."
    r = subprocess.run([sys.executable, __file__, "--one", "--data", a.data, "--null", str(null), "--jobs", str(a.jobs)],
                       capture_output=True, text=True, env=os.environ | {"MPLBACKEND": "Agg"})
    if r.returncode: sys.exit(r.stderr[-3000:])
    rows = (line.split("\t")[1:] for line in r.stdout.splitlines() if line.startswith("STAGE\t"))
    return {k: float(v) for k, v in rows}


if __name__ == "__main__":
    main()
