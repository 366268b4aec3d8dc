"""The `biasamp` command: the demo and reports on the user's own files."""
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from biasamp_nb.datasets import compas
from biasamp_nb.report import main

BIASAMP = shutil.which("biasamp", path=str(Path(sys.executable).parent))


def test_demo_command_writes_the_report(tmp_path):
    out = tmp_path / "demo"
    r = subprocess.run([BIASAMP, "demo", "--out", str(out), "--n-boot", "30"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "COMPAS (unbalanced)" in r.stdout and "-0.0784" in r.stdout and "report.html" in r.stdout
    for f in ("report.md", "report.html", "summary.csv", "results.json", "compas_unbalanced.png", "hiring.png"):
        assert (out / f).stat().st_size > 0, f
    assert (out / "compas_unbalanced.png").read_bytes()[:4] == b"\x89PNG"
    summ = pd.read_csv(out / "summary.csv").set_index(["case", "metric"])
    assert round(summ.loc[("COMPAS (unbalanced)", "BA→ (A->T)"), "value"], 3) == -0.038
    assert round(summ.loc[("Hiring", "BA→ (A->T)"), "value"], 3) == -0.075
    res = json.loads((out / "results.json").read_text())
    assert res["COMPAS (balanced)"]["BA→ (T->A)"]["value"] == pytest.approx(0.0, abs=1e-12)
    html = (out / "report.html").read_text()
    assert "<img src='compas_unbalanced.png'" in html and "<table" in html


def _files(tmp_path, shuffle_pred):
    ex = compas()
    ev = pd.DataFrame({"id": np.arange(len(ex["T"])), "race": np.where(ex["A"]["african_american"] == 1, "aa", "cauc"),
                       "recid": ex["T"]["recid"], "no_recid": ex["T"]["no_recid"]})
    pred = pd.DataFrame({"id": ev["id"], "recid": ex["T_pred"]["recid"], "no_recid": ex["T_pred"]["no_recid"],
                         "aa": ex["A_pred"]["african_american"], "cauc": ex["A_pred"]["caucasian"]})
    if shuffle_pred: pred = pred.sample(frac=1, random_state=0)
    ev.to_csv(tmp_path / "eval.csv", index=False); pred.to_csv(tmp_path / "pred.csv", index=False)


def test_report_on_csv_files_matches_the_library(tmp_path, capsys):
    _files(tmp_path, shuffle_pred=True)
    out = tmp_path / "rep"
    code = main(["report", "--eval", str(tmp_path / "eval.csv"), "--pred", str(tmp_path / "pred.csv"),
                 "--groups", "race", "--tasks", "recid", "no_recid", "--id", "id", "--out", str(out), "--n-boot", "0"])
    assert code == 0
    summ = pd.read_csv(out / "summary.csv").set_index("metric")
    assert round(summ.loc["BA→ (A->T)", "value"], 3) == -0.038
    assert "report.md" in capsys.readouterr().out


def test_report_groups_as_01_columns_and_pred_groups(tmp_path):
    _files(tmp_path, shuffle_pred=False)
    ev = pd.read_csv(tmp_path / "eval.csv")
    ev["aa"], ev["cauc"] = (ev.race == "aa").astype(int), (ev.race == "cauc").astype(int)
    ev.drop(columns="race").to_csv(tmp_path / "eval01.csv", index=False)
    out = tmp_path / "rep"
    assert main(["report", "--eval", str(tmp_path / "eval01.csv"), "--pred", str(tmp_path / "pred.csv"),
                 "--groups", "aa", "cauc", "--id", "id", "--out", str(out), "--n-boot", "0"]) == 0
    summ = pd.read_csv(out / "summary.csv").set_index("metric")
    assert round(summ.loc["BA→ (T->A)", "value"], 3) == -0.078


def test_report_errors_are_clear(tmp_path, capsys):
    _files(tmp_path, shuffle_pred=False)
    assert main(["report", "--eval", str(tmp_path / "eval.csv"), "--groups", "sex", "--out", str(tmp_path)]) == 2
    assert "--groups: the eval file has no column 'sex'" in capsys.readouterr().err
    assert main(["report", "--eval", str(tmp_path / "nope.csv"), "--groups", "race", "--out", str(tmp_path)]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_report_with_predictions_only_ranks_associations(tmp_path, capsys):
    rng = np.random.default_rng(0)
    g = rng.integers(0, 2, 2000)
    pred = pd.DataFrame({"gender": np.where(g == 1, "woman", "man"),
                         "purse": (rng.random(2000) < np.where(g == 1, 0.3, 0.05)).astype(int),
                         "tie": (rng.random(2000) < np.where(g == 1, 0.02, 0.2)).astype(int),
                         "dog": (rng.random(2000) < 0.1).astype(int)})
    pred.to_csv(tmp_path / "pred.csv", index=False)
    out = tmp_path / "rep"
    assert main(["report", "--pred", str(tmp_path / "pred.csv"), "--groups", "gender", "--out", str(out)]) == 0
    md = (out / "report.md").read_text()
    assert "predictions only" in md and (out / "pred_associations.png").exists()
    # towards man first comes the tie, towards woman the purse
    tables = md.split("### man vs woman")[1]
    first_rows = [l for l in tables.splitlines() if l.startswith("| man") or l.startswith("| woman")]
    assert first_rows[0].split("|")[3].strip() == "tie"
    assert [r for r in first_rows if r.startswith("| woman")][0].split("|")[3].strip() == "purse"
    assert main(["report", "--groups", "gender", "--out", str(out)]) == 2
    assert "give --eval" in capsys.readouterr().err


def test_captions_command(tmp_path):
    caps = [{"image_id": i, "caption": c} for i, c in enumerate(
        ["a woman cooking", "a man cooking", "a person on a bike", "a man skiing", "a woman skiing", "a man surfing"] * 20)]
    genders = {i: ["woman", "woman", "man", "man", "woman", "man"][i % 6] for i in range(120)}
    (tmp_path / "c.json").write_text(json.dumps(caps)); (tmp_path / "g.json").write_text(json.dumps(genders))
    out = tmp_path / "cap"
    r = subprocess.run([BIASAMP, "captions", "--captions", str(tmp_path / "c.json"), "--gender", str(tmp_path / "g.json"),
                        "--out", str(out), "--seeds", "2"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    summ = pd.read_csv(out / "summary.csv").set_index("metric")
    assert summ.loc["error rate", "value"] == pytest.approx(1 / 6)
    o = pd.read_csv(out / "outcomes.csv", index_col=0)
    assert o.loc["woman", "correct"] == pytest.approx(2 / 3) and o.loc["man", "neutral"] == pytest.approx(1 / 3)
    assert (out / "outcomes.png").exists() and "LIC_M" in r.stdout
    bad = subprocess.run([BIASAMP, "captions", "--captions", str(tmp_path / "nope.json"), "--gender", str(tmp_path / "g.json")],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and "does not exist" in bad.stderr
