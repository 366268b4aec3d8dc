"""Hardening: no SQL built from user values, no unsafe checkpoint loading, no torn files, one-line CLI errors,
and DuckDB counting that refuses what it cannot count (values other than 0/1, NULLs, absent groups)."""
import os
import pickle
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
duckdb = pytest.importorskip("duckdb")
from biasamp_nb.scale import duckdb_counts, duckdb_set_counts, stream_parquet_counts, write_long_parquet  # noqa: E402


@pytest.fixture
def long_files(tmp_path):
    rng = np.random.default_rng(3)
    n = 200
    A = pd.DataFrame(np.eye(2, dtype=np.int8)[rng.integers(0, 2, n)], columns=["woman", "man"])
    T = pd.DataFrame((rng.random((n, 4)) < 0.3).astype(np.int8), columns=[f"t{j}" for j in range(4)])
    write_long_parquet(tmp_path / "truth.parquet", A, T)
    return tmp_path, A, T


def test_hostile_paths_and_settings_run_no_sql(tmp_path, long_files):
    d, A, T = long_files
    target = tmp_path / "pwned.csv"
    for path in (f"{d / 'truth.parquet'}'); COPY (SELECT 42) TO '{target}'; --",
                 f"x' UNION ALL SELECT 1, 'woman' FROM read_csv('{target}') --"):
        with pytest.raises(ValueError, match="cannot read .* as Parquet|does not exist"):
            duckdb_counts(path, ["woman", "man"])
        with pytest.raises(ValueError, match="cannot read .* as Parquet|does not exist"):
            duckdb_set_counts(path, ["woman", "man"], [("t0",)])
    with pytest.raises(ValueError, match="memory_limit=.* is not a memory size"):
        duckdb_counts(d / "truth.parquet", ["woman", "man"], memory_limit=f"1GB'; COPY (SELECT 1) TO '{target}'; --")
    assert not target.exists()
    # a label or group name with SQL in it is a value, matched literally
    evil = "woman' OR '1'='1"
    with pytest.raises(ValueError, match="never occurs in the truth file"):
        duckdb_counts(d / "truth.parquet", [evil, "man"])
    # a real file whose name contains a quote is read as that file
    odd = tmp_path / "it's here.parquet"
    os.replace(d / "truth.parquet", odd)
    got = duckdb_counts(odd, ["woman", "man"], tasks=list(T.columns), n_rows=len(T))
    assert (got.at == A.to_numpy().T @ T.to_numpy()).all()


def test_duckdb_refuses_what_it_cannot_count(tmp_path, long_files):
    d, A, T = long_files
    wide = pd.concat([A, T], axis=1)
    bad = wide.copy(); bad.loc[3, "t1"] = 5; bad.to_parquet(tmp_path / "five.parquet")
    with pytest.raises(ValueError, match="column 't1' .* has values other than 0/1"):
        duckdb_counts(tmp_path / "five.parquet", ["woman", "man"], layout="wide")
    nul = wide.astype("Float64"); nul.loc[4, "t2"] = pd.NA; nul.to_parquet(tmp_path / "null.parquet")
    with pytest.raises(ValueError, match="column 't2' .* has 1 missing values"):
        duckdb_counts(tmp_path / "null.parquet", ["woman", "man"], layout="wide")
    with pytest.raises(ValueError, match="n_rows must be an integer >= 1"):
        duckdb_counts(d / "truth.parquet", ["woman", "man"], n_rows=-5)
    with pytest.raises(ValueError, match="n_rows=10 but the files name 200 distinct row_id values"):
        duckdb_counts(d / "truth.parquet", ["woman", "man"], n_rows=10)
    with pytest.raises(ValueError, match="'girl' never occurs in the truth file"):
        duckdb_counts(d / "truth.parquet", ["woman", "girl"])
    pd.DataFrame({"row_id": [0, 1, None], "label": ["woman", None, "man"]}).to_parquet(tmp_path / "nulls.parquet")
    with pytest.raises(ValueError, match="truth: 2 records have no row_id or no label"):
        duckdb_counts(tmp_path / "nulls.parquet", ["woman", "man"])
    pd.DataFrame({"id": [0], "tag": ["woman"]}).to_parquet(tmp_path / "cols.parquet")
    with pytest.raises(ValueError, match="has no column 'row_id'; the long layout"):
        duckdb_counts(tmp_path / "cols.parquet", ["woman"])
    (tmp_path / "text.parquet").write_text("row_id,label\n0,woman\n")
    with pytest.raises(ValueError, match="truth: cannot read .*text.parquet.* as Parquet"):
        duckdb_counts(tmp_path / "text.parquet", ["woman"])
    with pytest.raises(ValueError, match="truth: file .*missing.parquet.* does not exist"):
        duckdb_counts(tmp_path / "missing.parquet", ["woman"])


def test_repeated_pairs_count_once_in_every_engine(tmp_path, long_files):
    d, A, T = long_files
    df = pd.read_parquet(d / "truth.parquet")
    pd.concat([df, df.iloc[:7]]).sort_values("row_id", kind="stable").to_parquet(tmp_path / "dup.parquet", index=False)
    with pytest.warns(UserWarning, match="7 repeated .row_id, label. rows"):
        got = duckdb_counts(tmp_path / "dup.parquet", ["woman", "man"], tasks=list(T.columns), n_rows=len(T))
    assert got == duckdb_counts(d / "truth.parquet", ["woman", "man"], tasks=list(T.columns), n_rows=len(T))
    assert got == stream_parquet_counts(tmp_path / "dup.parquet", ["woman", "man"], list(T.columns), n_rows=len(T))
    with pytest.warns(UserWarning, match="repeated"):
        s = duckdb_set_counts(tmp_path / "dup.parquet", ["woman", "man"], [("t0", "t1")])
    assert (s.at == duckdb_set_counts(d / "truth.parquet", ["woman", "man"], [("t0", "t1")]).at).all()


def test_no_unsafe_loading_anywhere_in_the_package():
    src = "\n".join(p.read_text() for p in (ROOT / "biasamp_nb").rglob("*.py"))
    assert "weights_only=False" not in src and "pickle.load" not in src
    assert not re.search(r"execute\(f\"[^\"]*\{(path|truth|pred|memory_limit|v)\}", src)


torch = pytest.importorskip("torch")


def _scenes():
    from biasamp_nb.scenes import make_scenes
    return make_scenes(300, size=16, random_state=0)


class _Boom:
    "Unpickling this would create a file: a checkpoint that runs code."
    def __init__(self, path): self.path = path
    def __reduce__(self): return (Path.write_text, (Path(self.path), "ran"))


def test_a_crafted_checkpoint_is_refused_and_runs_nothing(tmp_path):
    from biasamp_nb.train.classifier import train_classifier
    ck, flag = tmp_path / "ck.pt", tmp_path / "ran.txt"
    torch.save({"model": _Boom(flag), "epoch": 1}, ck)
    with pytest.raises(ValueError, match="is not a readable checkpoint of this package"):
        train_classifier(_scenes(), epochs=2, batch_size=64, width=4, checkpoint=ck, resume=True)
    assert not flag.exists()


def test_a_torn_checkpoint_write_keeps_the_last_complete_epoch(tmp_path, monkeypatch):
    from biasamp_nb.train import classifier
    sc = _scenes()
    kw = dict(epochs=3, batch_size=64, width=4, random_state=1)
    full, h_full = classifier.train_classifier(sc, **kw)
    ck = tmp_path / "ck.pt"
    real_save = torch.save
    calls = {"n": 0}

    def dying_save(obj, f, *a, **k):
        calls["n"] += 1
        if calls["n"] == 2:  # the second epoch's write dies halfway
            Path(f).write_bytes(b"half a checkpoint")
            raise KeyboardInterrupt
        return real_save(obj, f, *a, **k)
    monkeypatch.setattr(torch, "save", dying_save)
    with pytest.raises(KeyboardInterrupt):
        classifier.train_classifier(sc, checkpoint=ck, **kw)
    monkeypatch.setattr(torch, "save", real_save)
    assert torch.load(ck, weights_only=True)["epoch"] == 1 and [p.name for p in tmp_path.iterdir()] == ["ck.pt"]
    resumed, h_res = classifier.train_classifier(sc, checkpoint=ck, resume=True, **kw)
    np.testing.assert_allclose(h_res.loss, h_full.loss, rtol=1e-5)
    with pytest.raises(ValueError, match="made with lr=0.003, this run has lr=0.01"):
        classifier.train_classifier(sc, checkpoint=ck, resume=True, **{**kw, "lr": 0.01})
    with pytest.raises(ValueError, match="made with data="):
        classifier.train_classifier(_scenes().take(np.arange(250)), checkpoint=ck, resume=True, **kw)
    with pytest.raises(ValueError, match="made with width=4, this run has width=8"):
        classifier.train_classifier(sc, checkpoint=ck, resume=True, **{**kw, "width": 8})


def test_cli_failures_are_one_line_with_exit_code_2(tmp_path, capsys, monkeypatch):
    from biasamp_nb.cli import main
    blocker = tmp_path / "a_file"; blocker.write_text("not a folder")   # an output folder that cannot be made
    assert main(["demo", "--out", str(blocker / "out")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("biasamp: error:") and "Traceback" not in err and "a_file" in err


def test_cli_missing_extra_and_no_empty_folder(tmp_path, capsys, monkeypatch):
    import builtins
    from biasamp_nb.cli import main
    real = builtins.__import__
    def no_torch(name, *a, **k):
        if name == "torch" or name.startswith("torch."): raise ImportError("No module named 'torch'")
        return real(name, *a, **k)
    monkeypatch.setattr(builtins, "__import__", no_torch)
    out = tmp_path / "run"
    assert main(["train", "classifier", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.strip() == 'biasamp: error: this command needs an optional extra: pip install "biasamp_nb[train]"'
    assert not out.exists()
    monkeypatch.setattr(builtins, "__import__", real)
    assert main(["report", "--eval", str(tmp_path / "nope.csv"), "--groups", "g", "--out", str(out)]) == 2
    assert capsys.readouterr().err.count("\n") == 1 and not out.exists()


# --- wrong answers that used to come back silently, and crashes with a library traceback -------------------------

def test_captions_inputs_are_read_as_meant_or_refused(tmp_path):
    from biasamp_nb.captions import caption_gender, error_and_ratio, get_lexicon, load_captions
    g = caption_gender({"img1": "a woman cooking", "img2": "a man surfing"})
    assert g.to_dict() == {"img1": "woman", "img2": "man"}          # the captions, not the dict's keys
    with pytest.raises(ValueError, match=r"lexicon\['woman'\] must be a list of words, got 'girl'"):
        get_lexicon({"woman": "girl", "man": ["boy"]})
    with pytest.raises(ValueError, match="true_genders has no man image"):
        error_and_ratio(pd.Series(["woman", "woman"]), pd.Series(["woman", "woman"]))
    with pytest.raises(ValueError, match="no caption names a man"):
        error_and_ratio(pd.Series(["woman", "woman"]), pd.Series(["woman", "man"]))
    cases = {"dup": [{"image_id": 1, "caption": "a"}, {"image_id": 1, "caption": "b"}],
             "float": [{"image_id": 1.5, "caption": "a"}], "null": [{"image_id": 1, "caption": None}],
             "keys": [{"image_id": 1, "caption": "a"}, {"id": 2}]}
    msgs = {"dup": "image 1 has 2 captions", "float": "image_id 1.5; COCO image ids are integers",
            "null": "has caption None", "keys": "entry 1 is not an object with 'image_id' and 'caption'"}
    import json
    for k, rows in cases.items():
        (tmp_path / f"{k}.json").write_text(json.dumps(rows))
        with pytest.raises(ValueError, match=re.escape(msgs[k])): load_captions(tmp_path / f"{k}.json")
    (tmp_path / "broken.json").write_text("[{")
    with pytest.raises(ValueError, match="broken.json. is not valid JSON"): load_captions(tmp_path / "broken.json")


def test_genders_and_coco_files_are_refused_when_they_cannot_be_read_right(tmp_path):
    import json
    from biasamp_nb.coco_gb import bias_ratios, coco_tables, synthetic_coco
    from biasamp_nb.files import read_genders
    (tmp_path / "g.json").write_text(json.dumps({"1": True, "2": "woman"}))
    with pytest.raises(ValueError, match="image 1 has gender True"): read_genders(tmp_path / "g.json")
    objects = pd.DataFrame({"dog": [1, 0, 1]}, index=[1, 2, 3])
    with pytest.raises(ValueError, match=r"gender has values \['0', '1'\]"): bias_ratios(objects, pd.Series([0, 1, 1], index=[1, 2, 3]))
    ins, cap = synthetic_coco(n_images=50, random_state=0)
    no_person = {**ins, "categories": [c for c in ins["categories"] if c["name"] != "person"],
                 "annotations": [a for a in ins["annotations"] if a["category_id"] in {c["id"] for c in ins["categories"] if c["name"] != "person"}]}
    with pytest.raises(ValueError, match="no 'person' category"): coco_tables(no_person, cap)
    str_ids = {**ins, "images": [{**im, "id": str(im["id"])} for im in ins["images"]],
               "annotations": [{**a, "image_id": str(a["image_id"])} for a in ins["annotations"]]}
    with pytest.raises(ValueError, match="share no image id"): coco_tables(str_ids, cap)
    missing = {**ins, "annotations": [{k: v for k, v in a.items() if k != "category_id"} for a in ins["annotations"]]}
    with pytest.raises(ValueError, match="annotations entry 0 has no 'category_id'"): coco_tables(missing, cap)
    unknown = {**ins, "annotations": ins["annotations"] + [{"image_id": ins["images"][0]["id"], "category_id": 999}]}
    with pytest.raises(ValueError, match="category_id 999, which no category defines"): coco_tables(unknown, cap)
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(ValueError, match="instances file .*bad.json.* is not valid JSON"): coco_tables(tmp_path / "bad.json", cap)


def test_metric_arguments_are_all_checked():
    from biasamp_nb import association_gap, ba_directional, ba_mals_from_bias, dpa, top_associations
    from biasamp_nb.datasets import compas
    ex = compas(False)
    with pytest.raises(ValueError, match="T_pred has values other than 0/1"):   # unused by T->A, still checked
        ba_directional(ex["T"], ex["A"], ex["T_pred"] * 0.5, ex["A_pred"], direction="T->A")
    X = pd.DataFrame({"w": [1, 1, 0, 0], "m": [0, 0, 1, 1], "x": [0, 0, 0, 0]}); Y = pd.DataFrame({"y": [1, 0, 1, 1]})
    with pytest.raises(ValueError, match="x1 and x2 are both 'w'"): association_gap(X, Y, "w", "w")
    with pytest.raises(ValueError, match="x2='x' is on no row of X"): association_gap(X, Y, "w", "x")
    with pytest.raises(ValueError, match="k must be an integer >= 1"): top_associations(association_gap(X, Y, "w", "m"), "dp", k=-1)
    bt = pd.DataFrame({"w": [0.7], "m": [0.3]}, index=["cook"])
    with pytest.raises(ValueError, match="bias_pred has values outside"): ba_mals_from_bias(bt, bt * 2)
    with pytest.raises(ValueError, match="bias_pred has values that are not numbers"): ba_mals_from_bias(bt, bt.astype(str).replace("0.7", "high"))
    with pytest.raises(ValueError, match="attacker must be an estimator with fit"): dpa(**{k: ex[k] for k in ("T", "A", "T_pred")}, direction="A->T", attacker=object())


def test_float_labels_torch_half_and_duck_typed_attackers_work():
    from biasamp_nb import ba_directional, dpa, leakage_amplification
    from biasamp_nb.datasets import compas
    ex = compas(False)
    d = {k: ex[k] for k in ("T", "A", "T_pred", "A_pred")}
    rng = np.random.default_rng(0)
    T = (rng.random((300, 3)) < 0.4).astype(float); A = np.eye(2)[rng.integers(0, 2, 300)]; P = (rng.random((300, 3)) < 0.4).astype(float)
    v = dpa(T, A, P, direction="A->T", n_trials=2, random_state=0).value               # float 0/1 multi-label targets
    assert v == dpa(T.astype(np.int8), A, P.astype(np.int8), direction="A->T", n_trials=2, random_state=0).value
    assert np.isfinite(leakage_amplification(T, A, P, n_trials=2, random_state=0).value)
    for dt in (torch.bfloat16, torch.float16):
        tt = {k: torch.tensor(v.to_numpy(), dtype=dt) for k, v in d.items()}
        assert ba_directional(tt["T"], tt["A"], tt["T_pred"], direction="A->T").value == ba_directional(**d, direction="A->T").value

    class Majority:   # a duck-typed estimator: fit/predict, no get_params
        def fit(self, X, y): self.c = np.bincount(np.asarray(y, int)).argmax(); return self
        def predict(self, X): return np.full(len(X), self.c)
    r = dpa(**{k: d[k] for k in ("T", "A", "T_pred")}, direction="A->T", attacker=Majority(), n_trials=2, random_state=0)
    assert -1 < r.value < 1


def test_streaming_torch_batches_are_checked():
    from biasamp_nb.streaming import StreamingCounts
    A = torch.eye(2)[torch.tensor([0, 1, 1, 0])]; T = torch.tensor([[1., 0.], [0., 1.], [1., 1.], [0., 0.]])
    with pytest.raises(ValueError, match="T_pred has 3 rows but T has 4"): StreamingCounts().update(T, A, T_pred=T[:3])
    with pytest.raises(ValueError, match="T_pred is not a torch tensor"): StreamingCounts().update(T, A, T_pred=T.numpy())
    sc = StreamingCounts().update(T, A)
    with pytest.raises(ValueError, match="T has 3 columns but 2 were expected"): sc.update(torch.ones(4, 3), A)


def _fuzz_cases():
    "Bad inputs of each class, for every count-based metric: (label, call, the argument the message must name)."
    from biasamp_nb import (association, association_gap, ba_directional, ba_mals, bias_score, multi_directional,
                            multi_mals, task_combinations, counts, dpa, leakage_amplification)
    rng = np.random.default_rng(0)
    T = (rng.random((60, 3)) < 0.4).astype(np.int8); A = np.eye(2, dtype=np.int8)[rng.integers(0, 2, 60)]
    P = (rng.random((60, 3)) < 0.4).astype(np.int8)
    nan = T.astype(float); nan[3, 1] = np.nan
    two = T.copy(); two[5, 2] = 2
    metrics = {
        "ba_mals": lambda **k: ba_mals(**{"T": T, "A": A, "T_pred": P, **k}),
        "ba_directional": lambda **k: ba_directional(**{"T": T, "A": A, "T_pred": P, "direction": "A->T", **k}),
        "multi_mals": lambda **k: multi_mals(**{"T": T, "A": A, "T_pred": P, **k}),
        "multi_directional": lambda **k: multi_directional(**{"T": T, "A": A, "T_pred": P, "direction": "A->T", **k}),
        "dpa": lambda **k: dpa(**{"T": T, "A": A, "T_pred": P, "direction": "A->T", "n_trials": 2, **k}),
        "leakage": lambda **k: leakage_amplification(**{"T": T, "A": A, "T_pred": P, "n_trials": 2, **k}),
    }
    data = [("NaN", dict(T=nan), "T"), ("non-0/1", dict(T_pred=two), "T_pred"), ("rows", dict(T_pred=P[:50]), "T_pred"),
            ("columns", dict(T_pred=P[:, :2]), "T_pred"), ("strings", dict(T=T.astype(str)), "T"),
            ("1-D", dict(A=A[:, 0]), "A"), ("empty group", dict(A=np.c_[np.ones(60), np.zeros(60)]), "A"),
            ("None", dict(T=None), "T"), ("ragged", dict(T=[[1, 0, 1]] * 59 + [[1]]), "T")]
    boot = [("n_boot bool", dict(n_boot=True), "n_boot"), ("ci_level", dict(n_boot=5, ci_level=1.5), "ci_level"),
            ("seed", dict(n_boot=5, random_state="x"), "random_state"), ("ci_method", dict(n_boot=5, ci_method="t"), "ci_method")]
    trials = [("n_trials", dict(n_trials=1), "n_trials"), ("test_size", dict(test_size=0.0), "test_size"),
              ("seed", dict(random_state=-3), "random_state"), ("ci_level", dict(ci_level=0), "ci_level")]
    for name, f in metrics.items():
        extra = trials if name in ("dpa", "leakage") else boot
        for label, kw, arg in data + extra:
            yield f"{name}: {label}", (lambda f=f, kw=kw: f(**kw)), arg
    for name, f in (("ba_directional", metrics["ba_directional"]), ("multi_directional", metrics["multi_directional"]),
                    ("dpa", metrics["dpa"])):
        yield f"{name}: direction", (lambda f=f: f(direction="A2T")), "direction"
    yield "multi: max_size", (lambda: multi_mals(T, A, P, max_size=True)), "max_size"
    yield "multi: combos", (lambda: multi_directional(T, A, P, direction="A->T", combos="any")), "combos"
    yield "task_combinations: min_count", (lambda: task_combinations(T, min_count=0)), "min_count"
    yield "association: min_count", (lambda: association(A, T, min_count=-1)), "min_count"
    yield "association: Y rows", (lambda: association(A, T[:10])), "Y"
    yield "association_gap: x1", (lambda: association_gap(A, T, "z")), "x1"
    yield "association_gap: metrics", (lambda: association_gap(A, T, "x0", metrics=["phi"])), "metric"
    yield "bias_score: NaN", (lambda: bias_score(nan, A)), "T"
    yield "counts: rows", (lambda: counts(T, A[:30])), "A"
    yield from _fuzz_captioning_training_readers()


def _fuzz_captioning_training_readers():
    "The captioning functions, the training entry points and the Parquet readers under the same rule."
    from biasamp_nb.captions import caption_gender, gender_outcomes, gender_divergence
    from biasamp_nb.attention import attention_sum, pointing_game
    from biasamp_nb import lic
    caps, g = ["a woman cooks"] * 20 + ["a man skis"] * 20, ["woman"] * 20 + ["man"] * 20
    out = pd.DataFrame({"correct": [0.5, 0.5], "wrong": [0.6, 0.1], "neutral": [-0.1, 0.4]}, index=["woman", "man"])
    yield "captions: truth values", (lambda: gender_outcomes(["woman", "man"], ["F", "M"])), "true_genders"
    yield "captions: missing caption gender", (lambda: gender_outcomes(["woman", None], ["woman", "man"])), "caption_genders"
    yield "captions: negative rates", (lambda: gender_divergence(out)), "outcomes"
    yield "captions: lexicon", (lambda: caption_gender(["a man"], lexicon="nltk")), "lexicon"
    yield "lic: classifier", (lambda: lic(None, caps, g, classifier="tfidf")), "classifier"
    yield "lic: seeds", (lambda: lic(None, caps, g, n_seeds=1)), "n_seeds"
    yield "attention: ragged maps", (lambda: pointing_game([[[0.1, 0.2]], [[0.3]]], np.zeros((2, 1, 2)))), "alpha"
    yield "attention: no maps", (lambda: attention_sum(np.zeros((0, 2, 2)), np.zeros((0, 2, 2)))), "alpha"
    try: import torch  # noqa: F401
    except ImportError: pass
    else:
        from biasamp_nb.scenes import make_scenes
        from biasamp_nb.train.classifier import train_classifier
        sc = make_scenes(20, random_state=0)
        yield "train: epochs", (lambda: train_classifier(sc, epochs=0)), "epochs"
        yield "train: batch size", (lambda: train_classifier(sc, batch_size=True)), "batch_size"
        yield "train: lr", (lambda: train_classifier(sc, lr="fast")), "lr"
        yield "train: weights", (lambda: train_classifier(sc, weights=np.ones(3))), "weights"
    try: import duckdb, dask  # noqa: F401
    except ImportError: return
    from biasamp_nb.scale import duckdb_counts, stream_parquet_counts, dask_counts
    yield "readers: duckdb empty path", (lambda: duckdb_counts("", ["w", "m"])), "truth"
    yield "readers: stream folder", (lambda: stream_parquet_counts(".", ["w", "m"], ["t"])), "path"
    yield "readers: dask empty glob", (lambda: dask_counts("/nonexistent/*.parquet", ["w", "m"])), "truth"
    yield "readers: groups string", (lambda: dask_counts("/nonexistent.parquet", "woman")), "groups"


@pytest.mark.parametrize("label, call, arg", list(_fuzz_cases()), ids=[c[0] for c in _fuzz_cases()])
def test_fuzz_bad_input_is_refused_naming_the_argument(label, call, arg):
    with pytest.raises((ValueError, TypeError)) as e:
        call()
    assert arg in str(e.value), f"{label}: the message does not name {arg!r}: {e.value}"


def test_attention_maps_and_report_names_are_checked(tmp_path):
    from biasamp_nb.attention import attention_sum, pointing_game
    from biasamp_nb.report import demo_cases, write_report
    alpha, masks = np.full((2, 4, 4), 1 / 16), np.zeros((2, 8, 8)); masks[:, :4] = 1
    assert pointing_game(alpha, masks) in (0.0, 0.5, 1.0) and attention_sum(alpha, masks) == pytest.approx(0.5)
    with pytest.raises(ValueError, match="masks has values other than 0/1"): attention_sum(alpha, masks * 2)
    bad = alpha.copy(); bad[0, 0, 0] = np.nan
    with pytest.raises(ValueError, match="alpha has negative or NaN values"): pointing_game(bad, masks)
    cases = demo_cases(); first = next(iter(cases.values()))
    with pytest.raises(ValueError, match="cases 'a b' and 'a/b' would write the same files"):
        write_report({"a b": first, "a/b": first}, tmp_path, n_boot=0, n_trials=2)


def test_lic_options_and_missing_genders():
    from biasamp_nb import lic
    rng = np.random.default_rng(0)
    g = pd.Series(np.where(rng.random(200) < 0.5, "woman", "man"), dtype=object)
    caps = [f"a {x} holding a {'purse' if x == 'woman' else 'ball'}" for x in g]
    g_nan = g.copy(); g_nan[:10] = np.nan                      # missing genders are left out, not a crash
    r = lic(caps, caps, g_nan, n_seeds=2, random_state=0)
    assert np.isfinite(r.value)
    for kw, arg in ((dict(n_seeds=1), "n_seeds"), (dict(test_size=1.5), "test_size"), (dict(random_state="s"), "random_state")):
        with pytest.raises(ValueError, match=arg): lic(caps, caps, g, **kw)


@pytest.mark.parametrize("direction, bad", [("T->A", "T_pred"), ("A->T", "A_pred")])
def test_an_argument_the_direction_ignores_is_still_checked(direction, bad):
    from biasamp_nb import dpa, multi_directional
    from biasamp_nb.datasets import compas
    ex = compas(False)
    d = {k: ex[k] for k in ("T", "A", "T_pred", "A_pred")}
    d[bad] = d[bad] * 0.5
    for f in (multi_directional, dpa):
        with pytest.raises(ValueError, match=f"{bad} has values other than 0/1"):
            f(**d, direction=direction)


def test_new_helpers_name_their_arguments():
    from biasamp_nb.intervals import jackknife_weights
    from biasamp_nb.core import trials_result
    from biasamp_nb.row_order import canonical_order
    with pytest.raises(ValueError, match="groups must be an integer >= 2"): next(jackknife_weights(10, groups=1))
    with pytest.raises(ValueError, match="col='dpa' is not a column of trials"): trials_result("x", pd.DataFrame({"v": [1.0, 2.0]}), "dpa", {})
    with pytest.raises(ValueError, match=r"arrays have different numbers of rows \(\[3, 2\]\)"): canonical_order(np.zeros(3), np.zeros(2))
    assert list(canonical_order(np.array([[1, 0], [0, 1], [1, 0]]), np.array([2.0, 1.0, 0.5]))) == [1, 2, 0]
