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
from biasamp_nb.cli import main

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
    out = str(tmp_path / "rep")
    assert main(["report", "--eval", str(tmp_path / "eval.csv"), "--groups", "sex", "--out", out]) == 2
    assert "--groups: the eval file has no column 'sex'" in capsys.readouterr().err
    assert main(["report", "--eval", str(tmp_path / "nope.csv"), "--groups", "race", "--out", out]) == 2
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
    err = summ.loc["error rate"]  # with its interval over images, and the divergence with its test
    assert err.ci_low <= err.value <= err.ci_high and err.ci_low < err.ci_high
    assert 0 < summ.loc["gender divergence", "p_value"] <= 1 and summ.loc["gender divergence", "floor"] > 0
    o = pd.read_csv(out / "outcomes.csv", index_col=0)
    assert o.loc["woman", "correct"] == pytest.approx(2 / 3) and o.loc["man", "neutral"] == pytest.approx(1 / 3)
    assert (out / "outcomes.png").exists() and "LIC_M" in r.stdout
    bad = subprocess.run([BIASAMP, "captions", "--captions", str(tmp_path / "nope.json"), "--gender", str(tmp_path / "g.json")],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and "does not exist" in bad.stderr


def _hiring_files(tmp_path, with_pred_groups=False, with_id=True):
    from biasamp_nb.datasets import hiring
    h = hiring()
    g = np.where(h["A"]["woman"] == 1, "woman", "man")
    ev = pd.DataFrame({"id": np.arange(150), "gender": g, "hired": h["T"]["hired"]})
    pred = pd.DataFrame({"id": np.arange(150), "hired": h["T_pred"]["hired"]})
    if with_pred_groups: pred["gender"] = g
    if not with_id: ev = ev.drop(columns="id")
    ev.to_csv(tmp_path / "eval.csv", index=False); pred.sample(frac=1, random_state=1).to_csv(tmp_path / "pred.csv", index=False)


def test_report_says_what_it_skipped_and_why(tmp_path):
    _hiring_files(tmp_path)
    out = tmp_path / "rep"
    assert main(["report", "--eval", str(tmp_path / "eval.csv"), "--pred", str(tmp_path / "pred.csv"), "--groups", "gender",
                 "--id", "id", "--out", str(out), "--n-boot", "0", "--trials", "2"]) == 0
    md = (out / "report.md").read_text()
    assert "skipped BA→ (T->A) (no predicted groups (the --pred file has no group column))" in md
    assert "No bootstrap intervals were computed" in md and "Intervals (95%)" not in md
    summ = pd.read_csv(out / "summary.csv").set_index("metric")
    ba = summ.loc["BA→ (A->T)"]
    assert ba["p_value"] <= 0.05 and ba["verdict"].startswith(f"reduced (p = {ba['p_value']:.3g}); ")  # the test decides
    n = int(ba["pairs_attenuated"])  # and the pairs beyond noise, counted in their own columns
    assert ba["verdict"].endswith(f"{n} pair{'s' if n > 1 else ''} attenuated beyond noise") and ba["pairs_amplified"] == 0
    assert np.isnan(summ.loc["DPA (A->T)", "pairs"]) and np.isnan(summ.loc["DPA (A->T)", "p_value"])  # DPA: no swap test
    assert main(["report", "--eval", str(tmp_path / "eval.csv"), "--pred", str(tmp_path / "pred.csv"), "--groups", "gender",
                 "--id", "id", "--out", str(out), "--n-boot", "0", "--n-null", "0", "--trials", "2"]) == 0
    summ = pd.read_csv(out / "summary.csv").set_index("metric")
    assert summ.loc["BA→ (A->T)", "verdict"] == "reduced (no interval)" and "No test of no amplification" in (out / "report.md").read_text()


def test_forgotten_id_column_is_named(tmp_path, capsys):
    _hiring_files(tmp_path)
    assert main(["report", "--eval", str(tmp_path / "eval.csv"), "--pred", str(tmp_path / "pred.csv"), "--groups", "gender",
                 "--out", str(tmp_path / "rep")]) == 2
    err = capsys.readouterr().err
    assert "column 'id' of the eval file is not 0/1" in err and "--id" in err and "threshold scores first" not in err


def test_results_json_compact_unless_asked(tmp_path):
    _files(tmp_path, shuffle_pred=False)
    args = ["report", "--eval", str(tmp_path / "eval.csv"), "--pred", str(tmp_path / "pred.csv"), "--groups", "race",
            "--id", "id", "--n-boot", "20", "--trials", "2"]
    assert main(args + ["--out", str(tmp_path / "a")]) == 0 and main(args + ["--out", str(tmp_path / "b"), "--full-json"]) == 0
    a, b = (json.loads((tmp_path / x / "results.json").read_text())["pred"] for x in "ab")  # named after --pred
    assert a["BA→ (A->T)"]["value"] == b["BA→ (A->T)"]["value"] == pytest.approx(-0.0379, abs=5e-4)
    assert "per_pair" not in a["BA→ (A->T)"] and len(a["BA→ (A->T)"]["top_pairs"]) == 4 and a["Leakage"]["trials"]["n"] == 2
    ba = a["BA→ (A->T)"]
    assert ba["verdict"] == f"reduced (p = {ba['p_value']:.3g}); 4 pairs attenuated beyond noise" and ba["p_value"] <= 0.05
    assert ba["top_pairs"][0]["contribution"] < 0
    assert ba["corrected"] == pytest.approx(ba["value"] - ba["floor"]) and abs(ba["floor"]) < abs(ba["value"])
    assert len(b["BA→ (A->T)"]["per_pair"]) == 4 and len(b["Leakage"]["trials"]) == 2


def test_report_help_shows_layout_and_defaults():
    r = subprocess.run([BIASAMP, "report", "--help"], capture_output=True, text=True)
    assert r.returncode == 0
    for s in ("id,gender,cooking,skiing", "--min-count MIN_COUNT", "(default: 10)", "(default: reports/report)", "(required)"):
        assert s in r.stdout, s
    c = subprocess.run([BIASAMP, "captions", "--help"], capture_output=True, text=True).stdout
    assert "0 woman, 1 man" in c and "--ids" in c and "2.4 minutes at the" in c  # as measured


def test_captions_command_codes_and_ids(tmp_path):
    caps = [{"image_id": i, "caption": ["a woman cooking", "a man skiing", "a person"][i % 3]} for i in range(30)]
    codes = {str(i): [0, 1, 0, 2, 3][i % 5] for i in range(30)}
    (tmp_path / "c.json").write_text(json.dumps(caps)); (tmp_path / "g.json").write_text(json.dumps(codes))
    (tmp_path / "ids.txt").write_text("\n".join(str(i) for i in range(10)) + "\n")
    out = tmp_path / "cap"
    r = subprocess.run([BIASAMP, "captions", "--captions", str(tmp_path / "c.json"), "--gender", str(tmp_path / "g.json"),
                        "--ids", str(tmp_path / "ids.txt"), "--seeds", "0", "--out", str(out)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    md = (out / "report.md").read_text()
    assert "6 images with a caption" in md and "Restricted to the 10 image ids given; 6 of them" in md
    assert "6 images with gender value '2'" in md and "6 images with gender value '3'" in md
    bad = subprocess.run([BIASAMP, "captions", "--captions", str(tmp_path / "c.json"), "--gender", str(tmp_path / "g.json"),
                          "--ids", str(tmp_path / "c.json")], capture_output=True, text=True)
    assert bad.returncode == 2 and "--ids: line 1" in bad.stderr


def test_report_first_screen_in_headless_chromium(tmp_path):
    "The first screen answers: is there amplification, how sure are we, which pairs drive it."
    exe = next((shutil.which(c) for c in ("chromium", "chromium-browser", "google-chrome") if shutil.which(c)), None)
    if exe is None:
        if __import__("os").environ.get("CI"): pytest.fail("chromium is not installed; `make test` installs it")
        pytest.skip("chromium is not installed (make test installs it where it can)")
    playwright = pytest.importorskip("playwright.sync_api")
    from biasamp_nb.datasets import hiring, imsitu_pair
    from biasamp_nb.report import evaluate, write_report
    out = tmp_path / "rep"
    write_report({"Hiring": hiring(), "imSitu pair": imsitu_pair()}, out, n_boot=30, n_trials=3)
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=exe, args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        errors = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("requestfailed", lambda r: errors.append(r.url))
        page.goto((out / "report.html").as_uri(), wait_until="load")
        assert not errors, errors
        glance = page.locator("#glance")
        box = glance.bounding_box()
        assert page.locator("h1").bounding_box()["y"] < 100 and box["y"] < 600  # the answers, then the table, on screen one
        answers = page.eval_on_selector_all("h2 + ul li", "els => els.map(e => e.innerText)")
        assert len(answers) == 2  # one per case; Hiring's BA_MALS mean is within noise, so only its pairs are named
        assert answers[0].startswith("Hiring: Yes, beyond noise: pairs amplified in BA_MALS")
        head = page.eval_on_selector_all("#glance th", "els => els.map(e => e.innerText)")
        assert head == ["case", "metric", "value", "noise floor", "verdict", "driven most by"]
        rows = page.eval_on_selector_all("#glance tbody tr", "els => els.map(r => Array.from(r.cells).map(c => c.innerText))")
        by = {(r[0], r[1]): r for r in rows}
        hire = by[("Hiring", "BA→ (A->T)")]
        res = evaluate(**hiring(), n_boot=30, n_null=199, n_trials=3)["BA→ (A->T)"]  # the report's options and seed
        pp = res.per_pair.set_index(["group", "task"])
        z = pp.z[("woman", "hired")]  # its swap test's evidence for the pair (same seed and draws as the report's)
        assert hire[2].startswith("-0.0750 [")
        assert f"woman · hired 0.500 → 0.400 (attenuated, z = {z:.1f})" in hire[5]
        assert "(p = " in hire[4] and hire[3] and by[("Hiring", "Leakage")][3] == ""  # a floor where there is a swap test
        assert by[("imSitu pair", "Multi→ (A->T)")][5] == "no pair beyond noise"  # its one pair moved 0.05, on 200 rows
        assert all(r[4] for r in rows) and page.locator("#glance td.reduced").count() >= 1
        text = page.inner_text("body")
        assert "-0.0000" not in text and "At a glance" in text
        broken = page.evaluate("Array.from(document.images).filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.src)")
        assert not broken and page.locator("details summary").count() >= 2  # trials folded away
        page.screenshot(path=str(out / "first_screen.png"))
        browser.close()


def test_the_report_records_its_inputs(tmp_path):
    _files(tmp_path, shuffle_pred=True)
    out = tmp_path / "out"
    assert main(["report", "--eval", str(tmp_path / "eval.csv"), "--pred", str(tmp_path / "pred.csv"), "--groups", "race",
                 "--id", "id", "--n-boot", "0", "--trials", "2", "--name", "model A", "--out", str(out)]) == 0
    rec = json.loads((out / "inputs.json").read_text())
    ev = pd.read_csv(tmp_path / "eval.csv")
    assert rec["command"].startswith("biasamp report --groups race --eval ") and "--id id" in rec["command"]
    assert rec["files"]["eval"]["rows"] == len(ev) and rec["files"]["pred"]["matched"] == len(ev)
    assert rec["options"]["n_boot"] == 0 and rec["package"].startswith("biasamp_nb ")
    case = rec["cases"]["model A"]
    assert case["rows"] == len(ev) and case["groups"] == ev.race.value_counts().sort_index().to_dict()
    assert case["predicted_tasks"] and case["training_rows"] is None
    page = (out / "report.html").read_text()
    assert "<h2>model A</h2>" in page and "<h2>Inputs</h2>" in page
    assert f"<li>eval: {tmp_path / 'eval.csv'} ({len(ev)} rows read)</li>" in page


def _human_files(tmp_path, n=200):
    "Synthetic captions whose objects the model ties to the group more than the humans do, as the command's files."
    from biasamp_nb.caption_amplification import synthetic_object_captions
    s = synthetic_object_captions(n, human_skew=0.5, model_skew=0.95, random_state=1)
    ids = np.arange(100, 100 + n)
    (tmp_path / "c.json").write_text(json.dumps([{"image_id": int(i), "caption": c} for i, c in zip(ids, s.model)]))
    (tmp_path / "g.json").write_text(json.dumps({str(i): int(g == "man") for i, g in zip(ids, s.group)}))
    ann = [{"image_id": int(i), "id": 5 * k + j, "caption": c} for k, (i, hs) in enumerate(zip(ids, s.human))
           for j, c in enumerate(hs)]
    (tmp_path / "h.json").write_text(json.dumps({"annotations": ann}))
    return s, ids


def test_captions_command_with_human_captions(tmp_path):
    "--human adds LIC (= LIC_M − LIC_D) and DBAC in both directions, each equal to a direct call, with its test."
    from biasamp_nb.caption_amplification import dbac
    from biasamp_nb.caption_leakage import lic
    s, ids = _human_files(tmp_path)
    out = tmp_path / "cap"
    r = subprocess.run([BIASAMP, "captions", "--captions", str(tmp_path / "c.json"), "--gender", str(tmp_path / "g.json"),
                        "--human", str(tmp_path / "h.json"), "--seeds", "2", "--trials", "2", "--null", "19",
                        "--out", str(out)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "retrains the readers for every draw" in r.stderr and "--null 0 skips the test" in r.stderr  # said first
    stages = ["LIC: 2 seeds, then 19 draws", "DBAC (T->A): 2 trials, then 19", "DBAC (A->T): 2 trials", "other readers"]
    assert all(st in r.stderr for st in stages), r.stderr[-2000:]  # each stage named above its bars, in order
    assert [r.stderr.index(st) for st in stages] == sorted(r.stderr.index(st) for st in stages)
    summ = pd.read_csv(out / "summary.csv").set_index("metric")
    assert summ.loc["LIC", "value"] == pytest.approx(summ.loc["LIC_M", "value"] - summ.loc["LIC_D", "value"], abs=1e-12)
    H, M, g = list(s.human), list(s.model), list(s.group)
    want = {"LIC": lic(H, M, g, n_seeds=2, random_state=0, n_null=19)}
    want |= {f"DBAC ({d})": dbac(H, M, g, direction=d, n_trials=2, random_state=0, n_null=19) for d in ("T->A", "A->T")}
    for m, w in want.items():
        assert summ.loc[m, "value"] == pytest.approx(w.value, rel=1e-12)
        assert summ.loc[m, "p_value"] == pytest.approx(w.p_value) and summ.loc[m, "floor"] == pytest.approx(w.floor)
        assert (summ.loc[m, "ci_low"], summ.loc[m, "ci_high"]) == pytest.approx(w.ci)
    assert summ.loc["DBAC (A->T)", "value"] > 0  # the model names the group's typical objects far more often
    assert summ.loc["DBAC (A->T)", "p_value"] >= 0.1 - 1e-12  # two-sided with 19 draws: never below 2/20
    md = (out / "report.md").read_text()
    assert f"human captions of {len(ids)} of these images ({5 * len(ids)} captions)" in md
    assert "smallest two-sided p-value is 0.1" in md and "- DBAC (A->T): With the object words masked" in md
    assert "| NaN |" not in md
    rt = pd.read_csv(out / "readers.csv").set_index("metric")  # the headline reader's column is the summary's value
    assert list(rt.index) == ["LIC", "DBAC (T->A)", "DBAC (T->A), [UNK] substitution", "DBAC (A->T)",
                              "DBAC (A->T), [UNK] substitution"]
    for m in want: assert rt.loc[m, "TF-IDF + LR"] == pytest.approx(summ.loc[m, "value"], rel=1e-12)
    unk = dbac(H, M, g, direction="A->T", n_trials=2, random_state=0, substitution="unk")
    assert rt.loc["DBAC (A->T), [UNK] substitution", "TF-IDF + LR"] == pytest.approx(unk.value, rel=1e-12)
    v = rt[["TF-IDF + LR", "TF-IDF + LR (C = 0.1)", "counts + naive Bayes"]]
    assert (rt.spread == v.max(axis=1) - v.min(axis=1)).all() and "## Reader sensitivity" in md


def test_captions_report_refuses_bad_human_captions(tmp_path):
    "Human captions that miss every image, or options out of range, are refused naming the argument."
    from biasamp_nb.captions_report import captions_report
    s, ids = _human_files(tmp_path, n=60)
    caps, genders = pd.Series(list(s.model), index=ids), pd.Series(list(s.group), index=ids)
    with pytest.raises(ValueError, match="no image with a caption and a gender has a human caption"):
        captions_report(caps, genders, tmp_path / "r", human={1: ["a man"]}, n_seeds=2)
    with pytest.raises(ValueError, match="n_null"):
        captions_report(caps, genders, tmp_path / "r", human=str(tmp_path / "h.json"), n_null=-1)
    with pytest.raises(ValueError, match="human="):
        captions_report(caps, genders, tmp_path / "r", human=str(tmp_path / "missing.json"))
    assert not (tmp_path / "r").exists()


def test_captions_report_claims_nothing_without_a_test(tmp_path):
    "With n_null=0 the human comparisons keep their values and intervals but make no verdict (nor a p-value)."
    from biasamp_nb.captions_report import captions_report
    s, ids = _human_files(tmp_path, n=100)
    summ = captions_report(pd.Series(list(s.model), index=ids), pd.Series(list(s.group), index=ids), tmp_path / "r",
                           human=str(tmp_path / "h.json"), n_seeds=2, n_trials=2, n_null=0, readers=False)
    m = summ.set_index("metric").loc[["LIC", "DBAC (T->A)", "DBAC (A->T)"]]
    assert (m.verdict == "not tested").all() and m.p_value.isna().all() and m.ci_low.notna().all()
    assert not (tmp_path / "r" / "readers.csv").exists()


def test_captions_command_names_the_file_it_cannot_read(tmp_path):
    "Text in another encoding, JSON nested past any caption file's depth, a caption of 50 MB: one line each, quickly."
    import time
    caps = [{"image_id": i, "caption": c} for i, c in enumerate(["a woman cooking", "a man skiing"] * 20)]
    genders = {i: ["woman", "man"][i % 2] for i in range(40)}
    g = tmp_path / "g.json"
    g.write_text(json.dumps(genders))
    cases = {
        "latin1.json": (json.dumps([{"image_id": 1, "caption": "un caf\u00e9"}], ensure_ascii=False).encode("latin-1"),
                        "is not UTF-8 text (byte 0xe9"),
        "deep.json": (b"[" * 200_000 + b"]" * 200_000, "nests lists or objects too deeply"),
        "huge.json": (json.dumps([{"image_id": 1, "caption": "a " * (25 << 20)}, *caps]).encode(),
                      "has a caption of 52,428,800 characters"),
    }
    for name, (data, msg) in cases.items():
        (tmp_path / name).write_bytes(data)
        t0 = time.perf_counter()
        r = subprocess.run([BIASAMP, "captions", "--captions", str(tmp_path / name), "--gender", str(g),
                            "--out", str(tmp_path / "out")], capture_output=True, text=True)
        assert r.returncode == 2 and msg in r.stderr and name in r.stderr, (name, r.stderr[-500:])
        assert r.stderr.count("\n") == 1 and time.perf_counter() - t0 < 30, name
    r = subprocess.run([BIASAMP, "captions", "--captions", str(tmp_path / "latin1.json"), "--gender", str(g), "--jobs", "0",
                        "--out", str(tmp_path / "out")], capture_output=True, text=True)
    assert r.returncode == 2 and "--jobs must be" in r.stderr and "-1 (one per core)" in r.stderr  # before any file
    from biasamp_nb.files import read_genders
    u16 = tmp_path / "g16.json"
    u16.write_bytes(json.dumps({"1": "woman", "2": "man"}).encode("utf-16"))  # JSON may be UTF-16: read as it is
    assert read_genders(u16).to_dict() == {1: "woman", 2: "man"}


def test_report_mistakes_are_named_in_file_and_option_terms(tmp_path, capsys):
    rng = np.random.default_rng(0)
    g = np.where(rng.integers(0, 2, 60) == 1, "woman", "man")
    ev = pd.DataFrame({"id": np.arange(60), "gender": g, "dog": rng.integers(0, 2, 60), "cat": rng.integers(0, 2, 60)})
    ev.to_csv(tmp_path / "eval.csv", index=False)
    files = {"short.csv": ev.head(50), "other.csv": ev.assign(gender=np.where(g == "woman", "female", "male")),
             "multi.csv": ev.assign(woman=np.where(g == "woman", "yes", "no"), man=np.where(g == "man", "yes", "no"))}
    for name, df in files.items(): df.to_csv(tmp_path / name, index=False)
    (tmp_path / "tok.csv").write_text("a,b\n1,2\n3,4,5\n")
    (tmp_path / "busy").mkdir(); (tmp_path / "busy" / "notes.txt").write_text("mine")
    def err(*args, out="out"):
        assert main(["report", *args, "--out", str(tmp_path / out), "--n-boot", "0", "--n-null", "0"]) == 2
        return capsys.readouterr().err
    E, f = ["--eval", str(tmp_path / "eval.csv"), "--groups", "gender"], lambda n: str(tmp_path / n)
    msg = err(*E, "--pred", f("short.csv"), "--tasks", "dog", "cat")
    assert "the pred file has 50 rows but the eval file has 60" in msg and "--id" in msg
    assert ("--groups: column 'gender' of the pred file has values the eval file does not have (['female', 'male']"
            in err(*E, "--pred", f("other.csv"), "--id", "id"))
    assert "--groups: column 'woman' of the eval file is not 0/1" in err("--eval", f("multi.csv"), "--groups", "woman",
                                                                           "man", "--id", "id", "--tasks", "dog", "cat")
    assert "its columns are ['id', 'gender', 'dog', 'cat']" in err(*E, "--id", "ident")
    assert f"file {f('tok.csv')!r} is not a table pandas can read as CSV" in err(*E, "--pred", f("tok.csv"), "--id", "id")
    assert "--trials must be an integer >= 2" in err(*E, "--pred", f("eval.csv"), "--id", "id", "--trials", "1")
    msg = err("--eval", f("missing.csv"), "--groups", "gender", out="busy")  # refused before any file is read
    assert f"--out {f('busy')!r} holds other files" in msg and (tmp_path / "busy" / "notes.txt").read_text() == "mine"


def test_report_reads_tab_separated_files_and_keeps_a_group_never_predicted(tmp_path):
    rng = np.random.default_rng(1)
    g = np.where(rng.integers(0, 2, 200) == 1, "woman", "man")
    ev = pd.DataFrame({"id": np.arange(200), "gender": g, "dog": rng.integers(0, 2, 200), "cat": rng.integers(0, 2, 200)})
    ev.to_csv(tmp_path / "eval.csv", index=False); ev.to_csv(tmp_path / "eval.tsv", index=False, sep="\t")
    ev.assign(gender="woman").to_csv(tmp_path / "pred.csv", index=False)  # a model that predicts one group only
    values = []
    for name in ("eval.csv", "eval.tsv"):
        out = tmp_path / name.replace(".", "_")
        assert main(["report", "--eval", str(tmp_path / name), "--pred", str(tmp_path / "pred.csv"), "--groups",
                     "gender", "--id", "id", "--out", str(out), "--n-boot", "0", "--n-null", "0", "--trials", "2"]) == 0
        values.append(pd.read_csv(out / "summary.csv").set_index("metric")["value"])
    pd.testing.assert_series_equal(values[0], values[1])  # the tab-separated file reads as the comma-separated one
    T, A = ev[["dog", "cat"]], ev.gender
    from biasamp_nb import ba_directional
    Ap = pd.Series(pd.Categorical(["woman"] * 200, categories=["man", "woman"]))
    want = ba_directional(T, A, T, Ap, direction="T->A").value  # 'man' kept as a group with no predicted rows
    assert values[0]["BA→ (T->A)"] == pytest.approx(want, abs=5e-5)


def test_report_lets_the_labels_go_before_the_pages_with_the_same_report(tmp_path, monkeypatch):
    # the command runs the metrics, then the pages read only the results and the case's counts (its labels let go):
    # the same pages, records and bias scores as the library's write_report on the tables
    import json
    import biasamp_nb.cli as cli
    from biasamp_nb.report import Audit, write_report
    rng = np.random.default_rng(4)
    n, k = 600, 40
    T = (rng.random((n, k)) < 0.08).astype(np.int8)
    T[:, :3] |= (rng.random((n, 3)) < 0.3).astype(np.int8)
    g = rng.choice(["man", "woman"], n)
    Tp, gp = T ^ (rng.random((n, k)) < 0.01), np.where(rng.random(n) < 0.1, np.where(g == "man", "woman", "man"), g)
    cols = [f"t{j}" for j in range(k)]
    ev, pr = pd.DataFrame(T, columns=cols), pd.DataFrame(Tp.astype(np.int8), columns=cols)
    ev.insert(0, "gender", g); pr.insert(0, "gender", gp)
    ev.to_csv(tmp_path / "eval.csv", index=False); pr.to_csv(tmp_path / "pred.csv", index=False)
    seen = {}
    def spy(cases, out, **kw):
        case = cases["case"]
        seen.update(audit=isinstance(case, Audit), held=sorted(case.data), train=case.data.get("train_counts"))
        return write_report(cases, out, **kw)
    monkeypatch.setattr(cli, "write_report", spy)
    assert main(["report", "--eval", str(tmp_path / "eval.csv"), "--pred", str(tmp_path / "pred.csv"), "--groups",
                 "gender", "--out", str(tmp_path / "cli"), "--n-boot", "20", "--n-null", "19", "--trials", "2",
                 "--name", "case"]) == 0
    assert seen == dict(audit=True, held=["counts", "train_counts"], train=None)  # no labels held for the pages
    dense = dict(T=ev[cols], A=ev["gender"], T_pred=pr[cols], A_pred=pd.Series(pd.Categorical(gp, ["man", "woman"])))
    write_report({"case": dense}, tmp_path / "lib", n_boot=20, n_null=19, n_trials=2, random_state=0, max_size=3,
                 min_count=10)
    for f in ("results.json", "summary.csv"):
        assert (tmp_path / "cli" / f).read_text() == (tmp_path / "lib" / f).read_text(), f
    case = lambda d: (d / "report.md").read_text().split("## case\n")[1].split("\n## Inputs")[0]
    assert "### Bias scores" in case(tmp_path / "cli") and case(tmp_path / "cli") == case(tmp_path / "lib")
    rec = lambda d: json.loads((d / "inputs.json").read_text())["cases"]
    assert rec(tmp_path / "cli") == rec(tmp_path / "lib")
