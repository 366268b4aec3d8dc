"""Reports from hostile names (labels, group values, file and case names) stay inert in every output file, and a
report folder is always whole: the old report or the new one, never a mix, whatever moment the writer is killed."""
import csv
import io
import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from biasamp_nb.files import csv_safe, md_escape
from biasamp_nb.datasets import hiring
from biasamp_nb.cli import main
from biasamp_nb.report import write_report

HOSTILE = ["<img src=x onerror=alert(1)>", "<script>alert(1)</script>", "[click](javascript:alert(1))",
           "<javascript:alert(1)>", "a|b|c", "line\nbreak\r\nagain", "=1+2", "@SUM(1+1)", "+cmd|' /C calc'!A0",
           "-2+3", "\ttab", "\u202eevil\u202c", "\x1b[31mred\x1b[0m", "x" * 5000, "*bold* _it_ `code` # h ~~s~~"]


def _cases():
    rng = np.random.default_rng(0)
    n = 300
    g = rng.integers(0, 2, n)
    tasks = HOSTILE[:8] + ["x" * 5000, HOSTILE[11], HOSTILE[12], HOSTILE[14]]
    T = pd.DataFrame((rng.random((n, len(tasks))) < 0.3 + 0.2 * g[:, None]).astype(np.int8), columns=tasks)
    P = T.copy(); P.iloc[:, :4] = (rng.random((n, 4)) < 0.5).astype(np.int8)
    groups = np.array(["<b>w</b>|=x", "@m\nan"])
    A = pd.get_dummies(pd.Series(groups[g])).astype(np.int8)
    Ap = A.copy()
    return {name: dict(T=T, A=A, T_pred=P, A_pred=Ap) for name in ("<img src=x onerror=alert(1)>|=HYPERLINK(\"x\")",
                                                                    "\u202e" + "y" * 5000)}


def _unescaped_pipes(line):
    return len(re.findall(r"(?<!\\)\|", line))


def _check_markdown(text):
    assert not re.search(r"<\s*[a-zA-Z/!?]", text.replace("<details>", "").replace("</details>", "")
                         .replace("<summary>", "").replace("</summary>", "")), "a raw tag in report.md"
    assert not re.search(r"(?<!\\)\]\(\s*javascript:|<javascript:", text, re.I), "a javascript: link in report.md"
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f\u202a-\u202e\u2066-\u2069]", text), "a control character in report.md"
    lines = text.split("\n")
    for i, line in enumerate(lines):  # every table row has as many cells as its header
        if line.startswith("|---"):
            width = _unescaped_pipes(lines[i - 1])
            j = i + 1
            while j < len(lines) and lines[j].startswith("|"):
                assert _unescaped_pipes(lines[j]) == width, f"a broken table row: {lines[j][:200]!r}"
                j += 1


def _check_html(text):
    "Parsed as a browser would: no script or frame, no event-handler attribute, no javascript: URL, images ours."
    from html.parser import HTMLParser
    bad = []
    class P(HTMLParser):
        def handle_starttag(self, tag, attrs):
            if tag in ("script", "iframe", "object", "embed"): bad.append(tag)
            for k, v in attrs:
                if k.startswith("on") or (v or "").strip().lower().startswith("javascript:"): bad.append(f"{tag} {k}={v}")
            if tag == "img" and not re.fullmatch(r"[a-z0-9_]+\.png", dict(attrs)["src"]): bad.append(f"img {attrs}")
    P().feed(text)
    assert not bad, bad[:3]


def _check_csv(path):
    for row in csv.reader(io.StringIO(path.read_text())):
        for cell in row:
            if cell[:1] in ("=", "+", "-", "@", "\t", "\r"):
                try: float(cell)
                except ValueError: pytest.fail(f"{path.name}: a formula cell {cell[:80]!r}")


def _check_folder(d):
    _check_markdown((d / "report.md").read_text())
    _check_html((d / "report.html").read_text())
    for f in d.glob("*.csv"): _check_csv(f)
    json.loads((d / "results.json").read_text()) if (d / "results.json").exists() else None
    assert not [p.name for p in d.iterdir() if p.name.endswith(".tmp")]


def test_md_escape_and_csv_safe():
    assert md_escape("<img src=x onerror=alert(1)>") == "&lt;img src=x onerror=alert(1)>"
    assert md_escape("a|b\nc") == "a\\|b c"
    assert md_escape("[x](javascript:y)") == "\\[x\\](javascript:y)"
    df = csv_safe(pd.DataFrame({"=c": ["=1+2", "ok", "-x", "@SUM(1)"], "v": [-1.0, 2.0, 3.0, 4.0]}))
    assert df.columns.tolist() == ["'=c", "v"] and df["'=c"].tolist() == ["'=1+2", "ok", "'-x", "'@SUM(1)"]
    assert df["v"].tolist() == [-1.0, 2.0, 3.0, 4.0]  # numbers stay numbers


def test_report_from_hostile_names_is_inert(tmp_path):
    out = tmp_path / "r"
    write_report(_cases(), out, title="<script>alert(1)</script>\n# not a heading", n_boot=20, n_trials=2,
                 notes={k: "[n](javascript:x) <i>" for k in _cases()})
    _check_folder(out)
    md = (out / "report.md").read_text()
    assert md.startswith("# &lt;script>alert(1)&lt;/script> \\# not a heading\n")  # the title, inert and on one line
    for f in out.glob("*.png"): assert len(f.name) < 60


def test_a_report_below_the_working_folder_is_replaced_and_the_working_folder_refused(tmp_path, monkeypatch):
    "Writing the same report twice (as `make demo` does) replaces it; the working folder or one above it is refused."
    monkeypatch.chdir(tmp_path)
    for seed in (0, 1):
        assert main(["demo", "--out", "reports/demo", "--n-boot", "0", "--trials", "2", "--seed", str(seed)]) == 0
    assert (tmp_path / "reports" / "demo" / "report.md").exists()
    assert sorted(p.name for p in (tmp_path / "reports").iterdir()) == ["demo"]  # no temporary folder left
    (tmp_path / "report.md").write_text("a report here\n")
    for out in (".", str(tmp_path), str(tmp_path.parent)):
        with pytest.raises(ValueError, match="is \\(or holds\\) the working folder|holds other files"):
            write_report({"x": hiring()}, out, n_boot=0, n_trials=2)


def test_cli_report_from_a_hostile_file_name(tmp_path):
    rng = np.random.default_rng(1)
    n = 200
    g = np.where(rng.random(n) < 0.5, "=cmd|' /C calc'!A0", "<img src=x onerror=alert(1)>")
    df = pd.DataFrame({"gender": g, "@SUM(1+1)": rng.integers(0, 2, n), "a|b": rng.integers(0, 2, n)})
    ev = tmp_path / "=3+4.csv"; df.to_csv(ev, index=False)
    pr = tmp_path / "=1+2.csv"; df.assign(**{"a|b": rng.integers(0, 2, n)}).to_csv(pr, index=False)
    out = tmp_path / "out"
    assert main(["report", "--eval", str(ev), "--pred", str(pr), "--groups", "gender", "--n-boot", "10",
                 "--trials", "2", "--out", str(out)]) == 0
    _check_folder(out)
    summ = list(csv.reader(io.StringIO((out / "summary.csv").read_text())))
    assert summ[1][0] == "'=1+2"  # the case, named after the predictions file, is text in a spreadsheet


WRITER = textwrap.dedent(r'''
    import sys
    import numpy as np, pandas as pd
    from biasamp_nb.report import write_report
    out = sys.argv[1]
    rng = np.random.default_rng(0)
    n = 400
    g = rng.integers(0, 2, n)
    T = pd.DataFrame((rng.random((n, 4)) < 0.3 + 0.2 * g[:, None]).astype(np.int8), columns=list("abcd"))
    A = pd.DataFrame(np.eye(2, dtype=np.int8)[g], columns=["w", "m"])
    print("ready", flush=True)
    gen = int(sys.argv[2])
    while True:
        write_report({f"case {gen}": dict(T=T, A=A, T_pred=T.sample(frac=1, random_state=gen).reset_index(drop=True))},
                     out, n_boot=5, n_trials=2, random_state=gen)
        print("wrote", gen, flush=True)
        gen += 1
''')


def _generation(d):
    "The case generation that every file of a report folder names (one, or a failure)."
    md, html = (d / "report.md").read_text(), (d / "report.html").read_text()
    summ = pd.read_csv(d / "summary.csv")
    res = json.loads((d / "results.json").read_text())
    gens = {re.search(r"## case (\d+)", md).group(1), re.search(r"<h2>case (\d+)</h2>", html).group(1),
            str(summ.case.iloc[0]).split()[1], next(iter(res)).split()[1]}
    assert len(gens) == 1, f"files of different reports in one folder: {gens}"
    gen = gens.pop()
    png = d / f"case_{gen}.png"
    assert png.exists() and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", "the figure the report links to is missing or torn"
    assert png.read_bytes()[-8:] == b"IEND\xaeB`\x82"
    return int(gen)


def test_report_folder_is_whole_after_a_kill_at_any_moment(tmp_path):
    out = tmp_path / "report"
    script = tmp_path / "writer.py"; script.write_text(WRITER)
    rng = np.random.default_rng(7)
    start = lambda gen: subprocess.Popen([sys.executable, str(script), str(out), str(gen)], stdout=subprocess.PIPE,
                                         stderr=subprocess.DEVNULL, text=True)
    # how long one report takes on this machine (the second: the first also fills numba's caches); the kills fall
    # at random moments of the first three reports' writing, however fast the machine is
    p = start(0)
    assert p.stdout.readline().strip() == "ready" and p.stdout.readline().startswith("wrote 0")
    t = time.perf_counter()
    assert p.stdout.readline().startswith("wrote 1")
    one = time.perf_counter() - t
    p.send_signal(signal.SIGKILL); p.wait()
    kills, gen, seen = 0, _generation(out) + 1, set()
    while kills < 16:
        p = start(gen)
        assert p.stdout.readline().strip() == "ready"
        if kills % 3 == 2:  # every third writer first finishes a report, however slow the machine is just then
            assert p.stdout.readline().startswith("wrote")
        time.sleep(float(rng.uniform(0.2, 3.0)) * one)  # a random moment of the writing loop
        p.send_signal(signal.SIGKILL); p.wait()
        kills += 1
        if out.exists():
            g = _generation(out)
            assert g >= gen - 1 or gen == 0
            seen.add(g); gen = g + 1
        assert not [q.name for q in out.iterdir() if q.name.endswith(".tmp")] if out.exists() else True
    assert len(seen) >= 3  # the writer got through several reports between the kills
    leftovers = [q.name for q in tmp_path.iterdir() if q.name.startswith(".report.tmp-")]
    assert len(leftovers) <= 1  # a killed writer's folder is removed by the next one (the last may remain)
