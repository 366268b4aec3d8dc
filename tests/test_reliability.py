"""Wrong answers and bare errors found by trying the package as a user would: each now gets the right value or a
clear message that names the argument."""
import json

import numpy as np
import pandas as pd
import pytest

import biasamp_nb as B
from biasamp_nb.cli import main


def _groups_case(seed=0, n=400, k=3):
    rng = np.random.default_rng(seed)
    g = rng.integers(0, k, n)
    A = pd.DataFrame(np.eye(k, dtype=np.int8)[g], columns=[f"g{j}" for j in range(k)])
    T = pd.DataFrame((rng.random((n, 4)) < 0.25 + 0.15 * (g[:, None] == np.arange(4) % k)).astype(np.int8),
                     columns=list("abcd"))
    P = T.copy(); f = rng.random(T.shape) < 0.15; P = P.mask(f, 1 - P)
    Ap = A.copy(); fl = rng.random(n) < 0.2; Ap[fl] = np.eye(k, dtype=np.int8)[rng.integers(0, k, fl.sum())]
    return T, A, P, Ap


@pytest.mark.parametrize("seed", range(6))
def test_dpa_and_leakage_do_not_depend_on_the_order_of_columns(seed):
    "The same labels in another column order give the same trials for the same seed (bit for bit)."
    T, A, P, Ap = _groups_case(seed)
    perm = np.random.default_rng(seed).permutation(A.shape[1]); tp = ["d", "b", "a", "c"]
    A2, Ap2 = A.iloc[:, perm], Ap.iloc[:, perm]
    for f in (lambda T, A, P, Ap: B.dpa(T, A, A_pred=Ap, direction="T->A", n_trials=3, random_state=seed),
              lambda T, A, P, Ap: B.dpa(T, A, T_pred=P, direction="A->T", n_trials=3, random_state=seed),
              lambda T, A, P, Ap: B.leakage_amplification(T, A, P, n_trials=3, random_state=seed)):
        r1, r2 = f(T, A, P, Ap), f(T[tp], A2, P[tp], Ap2)
        assert r1.value == r2.value
        pd.testing.assert_frame_equal(r1.trials, r2.trials)


def test_dpa_column_order_holds_when_columns_tie_on_their_counts():
    "Columns with equal counts are placed by their co-occurrences: a column permutation still changes nothing."
    rng = np.random.default_rng(11)
    n = 300
    a = (rng.random(n) < 0.4).astype(np.int8)
    T = pd.DataFrame({"x": a, "y": np.roll(a, 7), "z": (rng.random(n) < 0.5).astype(np.int8)})  # x, y: equal counts
    g = (rng.random(n) < 0.3 + 0.4 * a).astype(int)
    A = pd.DataFrame(np.eye(2, dtype=np.int8)[g], columns=["w", "m"])
    Ap = A.copy(); f = rng.random(n) < 0.2; Ap[f] = 1 - Ap[f]
    r1 = B.dpa(T, A, A_pred=Ap, direction="T->A", n_trials=3, random_state=0)
    r2 = B.dpa(T[["z", "y", "x"]], A[["m", "w"]], A_pred=Ap[["m", "w"]], direction="T->A", n_trials=3, random_state=0)
    assert T.x.sum() == T.y.sum() and r1.value == r2.value


def test_macro_f1_undefined_is_refused_not_scored_1():
    "A held-out split on which F1 is 0/0 (no class true or guessed) is undefined, never a DPA of exactly 1."
    from biasamp_nb.quality import macro_f1
    assert macro_f1([0, 0, 1], [0, 0, 1]) == 1.0
    assert np.isnan(macro_f1(np.zeros((4, 2)), np.zeros((4, 2))))  # no label true or guessed: 0/0
    assert macro_f1(np.array([[1, 0], [0, 0]]), np.array([[1, 0], [0, 0]])) == 1.0  # the undefined label is left out
    n = 200
    A = np.eye(2, dtype=np.int8)[np.arange(n) % 2]
    T = np.zeros((n, 2), np.int8); T[0, 0] = 1  # a task true on one row only: most splits never see it
    with pytest.raises(ValueError, match="quality 'macro_f1' is undefined on a held-out split"):
        B.dpa(T, A, T_pred=np.zeros_like(T), direction="A->T", quality="macro_f1", n_trials=3, random_state=0)


def test_association_refuses_an_identity_label_on_no_row():
    X = pd.DataFrame({"woman": [1, 0, 1, 0], "man": [0, 1, 0, 1], "other": [0, 0, 0, 0]})
    Y = pd.DataFrame({"dog": [1, 1, 0, 0]})
    with pytest.raises(ValueError, match="X has an empty group 'other'"): B.association(X, Y)
    out = B.association(X[["woman", "man"]], Y)
    assert np.isfinite(out.to_numpy(float)).all()


def test_coco_gb_v2_refuses_negative_caps():
    from biasamp_nb.coco_gb import bias_ratios, coco_gb_v2, coco_tables, synthetic_coco
    objects, gender = coco_tables(*synthetic_coco(n_images=400, random_state=0))
    with pytest.raises(ValueError, match="max_per_object must be an integer >= 1"):
        coco_gb_v2(objects, gender, test_size=50, max_per_object=-1)
    with pytest.raises(ValueError, match="min_train must be an integer >= 0"):
        coco_gb_v2(objects, gender, test_size=50, min_train=-5)
    with pytest.raises(ValueError, match="objects repeats the image id"):
        bias_ratios(pd.concat([objects, objects.iloc[:1]]), gender)
    with pytest.raises(ValueError, match="gender repeats the image id"):
        bias_ratios(objects, pd.concat([gender, gender.iloc[:1]]))


def test_gender_outcomes_and_divergence_refuse_what_they_cannot_read():
    from biasamp_nb.captions import gender_outcomes, gender_divergence
    cg = pd.Series(["woman", "man", "neutral", "man"])
    with pytest.raises(ValueError, match=r"true_genders has no 'woman' or 'man' \(values \['female', 'male'\]\)"):
        gender_outcomes(cg, pd.Series(["Female", "Male", "Female", "Male"]))
    with pytest.raises(ValueError, match="caption_genders has 1 missing values"):
        gender_outcomes(pd.Series(["woman", None, "man", "man"]), pd.Series(["woman", "man", "woman", "man"]))
    o = gender_outcomes(cg, pd.Series(["woman", "man", "woman", "man"]))
    assert o.loc["woman", "correct"] == 0.5 and o.loc["man", "correct"] == 1.0
    bad = o.copy(); bad.loc["woman", "wrong"] = -0.2
    with pytest.raises(ValueError, match="outcomes has rates outside 0..1"): gender_divergence(bad)


def test_dpa_with_a_continuous_quality_still_refuses_an_empty_group():
    rng = np.random.default_rng(0)
    A = np.c_[np.ones(100), np.zeros(100)].astype(np.int8)
    T = rng.random((100, 1))
    with pytest.raises(ValueError, match="A has an empty group"):
        B.dpa(T, A, T_pred=T + 0.1, direction="A->T", quality="inv_rmse", n_trials=2)


def test_bare_errors_become_named_messages(tmp_path):
    from biasamp_nb.attention import attention_sum, pointing_game
    from biasamp_nb.coco_gb import coco_tables
    from biasamp_nb.trials import predictability
    with pytest.raises(ValueError, match="alpha has no maps"): attention_sum(np.zeros((0, 4, 4)), np.zeros((0, 8, 8)))
    maps, masks = [[[0.1, 0.9], [0.0, 0.0]]], [[[0, 1], [0, 0]]]
    assert pointing_game(maps, masks) == 1.0  # lists are read as arrays
    with pytest.raises(ValueError, match="alpha is a ragged list"): pointing_game([[[0.1, 0.9], [0.0]]], masks)
    caps, g = ["a woman cooks"] * 20 + ["a man skis"] * 20, ["woman"] * 20 + ["man"] * 20
    with pytest.raises(ValueError, match="classifier must be an estimator with fit and predict_proba"):
        B.lic(None, caps, g, classifier="logistic")
    with pytest.raises(ValueError, match="model_captions are all empty"): B.lic(None, [""] * 40, g)
    with pytest.raises(ValueError, match="model_captions has entries that are not captions"):
        B.lic(None, [None] * 40, g)
    X = np.random.default_rng(0).random((50, 2)); X[3, 0] = np.nan
    y = np.eye(2, dtype=int)[np.arange(50) % 2]
    with pytest.raises(ValueError, match="X_data has NaN"): predictability(X, y, X, y, n_trials=2)
    with pytest.raises(ValueError, match="instances file .* is a folder"): coco_tables(tmp_path, tmp_path)


@pytest.mark.parametrize("call", ["ba_directional", "ba_mals", "multi_directional", "multi_mals", "counts",
                                  "bias_score", "dpa", "leakage_amplification", "association", "calibrate_thresholds"])
def test_a_ragged_list_is_named(call):
    ragged = [[1, 0, 1], [1, 0], [0, 1, 1]]
    A = [[1, 0], [0, 1], [1, 0]]
    calls = {
        "ba_directional": lambda: B.ba_directional(ragged, A, T_pred=ragged, direction="A->T"),
        "ba_mals": lambda: B.ba_mals(ragged, A, ragged), "multi_directional": lambda: B.multi_directional(
            ragged, A, T_pred=ragged, direction="A->T"), "multi_mals": lambda: B.multi_mals(ragged, A, ragged),
        "counts": lambda: B.counts(ragged, A), "bias_score": lambda: B.bias_score(ragged, A),
        "dpa": lambda: B.dpa(ragged, A, T_pred=ragged, direction="A->T"),
        "leakage_amplification": lambda: B.leakage_amplification(ragged, A, ragged),
        "association": lambda: B.association(A, ragged),
        "calibrate_thresholds": lambda: B.calibrate_thresholds(ragged, A),
    }
    with pytest.raises(ValueError, match=r"(T|Y|scores) is a ragged list"): calls[call]()


def test_bias_scores_of_the_most_amplified_prediction_are_scored():
    "A predicted task equal to a group column is the most amplified model, not a copy to refuse: BA_MALS is defined."
    T = pd.DataFrame({"cook": [1, 1, 0, 0, 1, 0], "ski": [0, 1, 1, 0, 1, 1]})
    A = pd.DataFrame({"w": [1, 1, 1, 0, 0, 0], "m": [0, 0, 0, 1, 1, 1]})
    P = pd.DataFrame({"cook": A.w, "ski": A.m})  # each task predicted for exactly one group
    bs = B.bias_score(P, A)
    assert bs.loc["cook", "w"] == 1.0 and bs.loc["ski", "m"] == 1.0
    r = B.ba_mals_from_bias(B.bias_score(T, A), bs)
    # cook leans to w in training (2/3 > 1/2) and is predicted for w only: Δ = 1 - 2/3; ski is balanced (1/2, not
    # selected); Zhao et al. average over the tasks
    assert r.value == pytest.approx((1 - 2 / 3) / 2)


def test_counts_of_any_batch_add_up():
    "A batch in which a group is absent (or a task equals a group) is counted; the batches add to the whole."
    rng = np.random.default_rng(3)
    n = 300
    A = np.eye(2, dtype=np.int8)[rng.integers(0, 2, n)]
    T = (rng.random((n, 4)) < 0.3).astype(np.int8)
    order = np.argsort(A[:, 0], kind="stable")  # one half holds only one group
    A, T = A[order], T[order]
    whole = B.counts(T, A)
    cut = int((A[:, 0] == 0).sum())  # the first batch holds the second group only
    half1, half2 = B.counts(T[:cut], A[:cut]), B.counts(T[cut:], A[cut:])
    assert half1.a.min() == 0  # a group absent from this batch
    total = half1 + half2
    for f in ("n", "a", "t", "at"): np.testing.assert_array_equal(getattr(total, f), getattr(whole, f))


def _csv(path, rows, header="id,gender,cook"):
    path.write_text(header + "\n" + "".join(f"{r}\n" for r in rows))
    return path


def test_cli_refuses_duplicate_ids_encodings_and_empty_files(tmp_path, capsys):
    ev = _csv(tmp_path / "eval.csv", [f"{i},{'woman' if i % 2 else 'man'},{i % 3 == 0:d}" for i in range(40)])
    dup = _csv(tmp_path / "dup.csv", [f"{i % 39},{'woman' if i % 2 else 'man'},{i % 3 == 0:d}" for i in range(40)])
    head = _csv(tmp_path / "head.csv", [])
    latin = tmp_path / "latin.csv"; latin.write_bytes("id,gender,cook\n1,f\xe9mme,1\n".encode("latin-1"))
    run = lambda *a: (main(["report", "--groups", "gender", "--n-boot", "0", "--trials", "2",
                            "--out", str(tmp_path / "out"), *a]), capsys.readouterr().err)
    code, err = run("--eval", str(ev), "--pred", str(dup), "--id", "id")
    assert code == 2 and "--id: the pred file repeats the id" in err
    code, err = run("--eval", str(dup), "--pred", str(ev), "--id", "id")
    assert code == 2 and "--id: the eval file repeats the id" in err
    code, err = run("--eval", str(head))
    assert code == 2 and "has a header but no rows" in err and "head.csv" in err
    code, err = run("--eval", str(latin))
    assert code == 2 and "latin.csv" in err and "is not UTF-8" in err


def test_a_forged_checkpoint_is_one_line(tmp_path):
    torch = pytest.importorskip("torch")
    from biasamp_nb.scenes import make_scenes
    from biasamp_nb.train.classifier import train_classifier
    from biasamp_nb.train.common import save_checkpoint
    sc = make_scenes(40, random_state=0)
    ck = tmp_path / "ck.pt"
    train_classifier(sc, epochs=1, batch_size=20, checkpoint=ck)
    good = torch.load(ck, weights_only=True)
    forged = {
        "negative epoch": dict(good, epoch=-1),
        "history not a table": dict(good, history="lots"),
        "wrong shapes": dict(good, model={k: torch.zeros(3) for k in good["model"]}),
        "no rng": {k: v for k, v in good.items() if k != "rng"},
    }
    for what, state in forged.items():
        save_checkpoint(state, ck)
        with pytest.raises(ValueError) as e:
            train_classifier(sc, epochs=1, batch_size=20, checkpoint=ck, resume=True)
        msg = str(e.value)
        assert "\n" not in msg and len(msg) < 400 and str(ck) in msg and "start without --resume" in msg, (what, msg)


def test_new_helpers_refuse_bad_arguments_by_name():
    from biasamp_nb.files import csv_safe, one_line
    from biasamp_nb.counting import torch_cross_counts
    from biasamp_nb.subsets import subset_estimate
    import scipy.sparse as sp
    X = sp.csr_matrix(np.eye(3, dtype=np.int8))
    with pytest.raises(ValueError, match="X must be a scipy CSR matrix"): subset_estimate(np.eye(3), 2)
    with pytest.raises(ValueError, match="size must be an integer >= 1"): subset_estimate(X, 0)
    with pytest.raises(ValueError, match="keep must be a boolean mask"): subset_estimate(X, 1, keep=[1, 0, 1])
    with pytest.raises(ValueError, match="width must be an integer >= 2"): one_line("abc", width=0)
    assert one_line("a\nb" * 10, width=5) == "a ba…"  # the newline a space, cut to 5 characters with the ellipsis
    with pytest.raises(ValueError, match="df must be a DataFrame"): csv_safe([["=1"]])
    with pytest.raises(ValueError, match="lefts and rights must be non-empty lists of 2-D torch tensors"):
        torch_cross_counts([], [])
