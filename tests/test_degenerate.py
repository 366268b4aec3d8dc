"""Degenerate inputs get a refusal that says why, never a number: one group, a missing attribute, an attacker of
quality 0, a group of no rows."""
import numpy as np
import pandas as pd
import pytest
from sklearn.base import BaseEstimator, ClassifierMixin

from biasamp_nb import bias_score, dpa
from biasamp_nb.caption_amplification import dbac, synthetic_object_captions


@pytest.fixture(scope="module")
def caps():
    return synthetic_object_captions(n=200, random_state=0)


@pytest.mark.parametrize("direction", ["A->T", "T->A"])
def test_dbac_refuses_an_attribute_of_one_value(caps, direction):
    with pytest.raises(ValueError, match=r"attribute holds 1 of the groups \['woman', 'man'\] \(\['woman'\]\)"):
        dbac(caps.human, caps.model, ["woman"] * len(caps), direction=direction, n_trials=2, random_state=0)


@pytest.mark.parametrize("missing", [np.nan, None])
def test_dbac_refuses_a_missing_attribute(caps, missing):
    g = caps.group.tolist()
    g[7] = missing
    with pytest.raises(ValueError, match=r"attribute is missing \(None or NaN\) for 1 image\(s\), e.g. image 7"):
        dbac(caps.human, caps.model, g, direction="A->T", n_trials=2, random_state=0)


class _NoPositive(ClassifierMixin, BaseEstimator):
    "An attacker that never predicts a positive label."
    def fit(self, X, y):
        self.n_out_ = 1 if np.ndim(y) == 1 else np.shape(y)[1]
        return self

    def predict(self, X):
        return np.zeros((len(X), self.n_out_), int) if self.n_out_ > 1 else np.zeros(len(X), int)


def _data(n=400, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 2, n)
    A = np.eye(2, dtype=np.int8)[a]
    T = (rng.random((n, 3)) < np.where(a[:, None] == 1, 0.6, 0.3)).astype(np.int8)
    Tp = T.copy(); Tp[rng.random(T.shape) < 0.1] ^= 1
    return T, A, Tp


@pytest.mark.parametrize("quality", ["macro_f1", "accuracy", lambda t, p: 0.0])
def test_dpa_refuses_trials_where_a_side_scores_zero(quality):
    T, A, Tp = _data()
    attacker = _NoPositive() if quality == "macro_f1" else None
    if quality == "accuracy":  # an attacker of quality above 0 on both sides: a value in (-1, 1)
        assert -1 < dpa(T, A, Tp, direction="A->T", quality=quality, n_trials=3, random_state=0).value < 1
        return
    with pytest.raises(ValueError, match=r"DPA is undefined in 3 of 3 trials: the attacker's quality"):
        dpa(T, A, Tp, direction="A->T", attacker=attacker, quality=quality, n_trials=3, random_state=0)


def test_bias_score_refuses_a_group_of_no_rows():
    T = pd.DataFrame({"cook": [1, 0, 1, 1]})
    with pytest.raises(ValueError, match="A has an empty group 'man'"):
        bias_score(T, pd.DataFrame({"man": [0, 0, 0, 0], "woman": [1, 1, 1, 1]}))
    assert bias_score(T, pd.DataFrame({"man": [0, 1, 0, 1], "woman": [1, 0, 1, 0]})).loc["cook"].tolist() == [
        pytest.approx(1 / 3), pytest.approx(2 / 3)]


# bad inputs that used to end in a bare error from pandas, numpy or scikit-learn
def test_coco_gb_takes_genders_for_some_images_only():
    from biasamp_nb.coco_gb import bias_ratios, coco_gb_v1
    objects = pd.DataFrame({"skis": [1, 1, 0, 1, 0, 1], "oven": [0, 1, 1, 0, 1, 0]}, index=[10, 11, 12, 13, 14, 15])
    gender = pd.Series(["man", "woman", "woman", "man"], index=[10, 11, 12, 13])  # 14 and 15 have none
    r = bias_ratios(objects, gender)
    assert r.tolist() == [2 / 3, 0.0]  # skis: 2 men and 1 woman among the gendered images; oven: 2 women, no man
    picked = coco_gb_v1(objects, gender, n_per_gender=2, random_state=0)
    assert sorted(picked) == [10, 11, 12, 13]


def test_gender_divergence_refuses_a_dict():
    from biasamp_nb.captions import gender_divergence
    with pytest.raises(ValueError, match="outcomes must be a DataFrame .* got dict"):
        gender_divergence({"woman": [0.5, 0.2, 0.3], "man": [0.6, 0.1, 0.3]})


@pytest.mark.parametrize("where", ["images", "annotations", "categories", "captions"])
def test_coco_tables_refuses_a_dict_where_coco_has_a_list(where):
    from biasamp_nb.coco_gb import coco_tables, synthetic_coco
    ins, cap = synthetic_coco(n_images=20)
    if where == "captions": cap = {"annotations": {a["id"]: a for a in cap["annotations"]}}
    else: ins = {**ins, where: {i: x for i, x in enumerate(ins[where])}}
    what = "captions" if where == "captions" else "instances"
    key = "annotations" if where == "captions" else where
    with pytest.raises(ValueError, match=rf"{what}\['{key}'\] is a dict; COCO files hold a list"):
        coco_tables(ins, cap)


def test_write_report_names_a_folder_it_cannot_write(tmp_path, monkeypatch):
    from biasamp_nb.datasets import hiring
    from biasamp_nb.report import write_report
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    with pytest.raises(ValueError, match=r"cannot write the report folder out='.*a-file/report'"):
        write_report({"hiring": hiring()}, blocked / "report", n_boot=0, n_null=0, n_trials=2)
    import tempfile
    def denied(*a, **k): raise PermissionError(13, "Permission denied", str(tmp_path))
    monkeypatch.setattr(tempfile, "mkdtemp", denied)
    with pytest.raises(ValueError, match=r"cannot write the report folder .*\(Permission denied in"):
        write_report({"hiring": hiring()}, tmp_path / "r2", n_boot=0, n_null=0, n_trials=2)


def test_dbac_refuses_empty_captions(caps):
    with pytest.raises(ValueError, match="model_captions are all empty"):
        dbac(caps.human, [""] * len(caps), caps.group, direction="T->A", n_trials=2, random_state=0)
    with pytest.raises(ValueError, match="human_captions are all empty"):
        dbac([[" "]] * len(caps), caps.model, caps.group, direction="A->T", n_trials=2, random_state=0)


def test_mask_score_refuses_an_empty_dict_of_regions():
    from biasamp_nb.attention import mask_score
    att = np.random.default_rng(0).random((8, 4, 4))
    t, a = np.r_[0, 1, 0, 1, 0, 1, 0, 1], np.r_[0, 0, 1, 1, 0, 0, 1, 1]
    with pytest.raises(ValueError, match="masks is an empty dict; give at least one region"):
        mask_score(att, {}, t, a)


def test_attention_iou_is_scale_invariant_at_any_scale():
    from biasamp_nb.attention import attention_iou
    rng = np.random.default_rng(0)
    X, Y = rng.random((4, 6, 6)), rng.random((4, 6, 6))
    want = attention_iou(X, Y)
    np.testing.assert_array_equal(attention_iou(X * 2.0 ** 1000, Y * 2.0 ** -1000), want)  # powers of two: exact
    for s in (1e306, 1e307, 1e-300):
        np.testing.assert_allclose(attention_iou(X * s, Y), want, rtol=1e-12)
        np.testing.assert_allclose(attention_iou(X, Y * s), want, rtol=1e-12)


def test_a_permutation_test_needs_images_to_permute():
    from biasamp_nb.attention import heatmap_score, mask_score
    rng = np.random.default_rng(0)
    X, Y = rng.random((3, 5, 5)), rng.random((3, 5, 5))
    with pytest.raises(ValueError, match="needs at least 4 images, got 1"):
        heatmap_score(X[:1], Y[:1], [1], [0], n_null=19)
    with pytest.raises(ValueError, match="needs at least 4 images, got 3"):
        mask_score(X, (Y > 0.5).astype(float), [1, 0, 1], [0, 1, 1], n_null=19)
    assert len(heatmap_score(X[:1], Y[:1], [1], [0]))  # without a test: scored


def test_report_html_sends_no_control_character(tmp_path):
    from biasamp_nb.datasets import hiring
    from biasamp_nb.report import write_report
    h = hiring()
    h["T"] = h["T"].rename(columns={"hired": "hi\x1b[31mred\x07"})
    h["T_pred"] = h["T_pred"].rename(columns={"hired": "hi\x1b[31mred\x07"})
    write_report({"hiring": h}, tmp_path / "r", n_boot=0, n_null=0, n_trials=2)
    page = (tmp_path / "r" / "report.html").read_text()
    assert "\x1b" not in page and "\x07" not in page and "hi\ufffd[31mred" in page
