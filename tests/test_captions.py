"""Captioning metrics: lexicon edge cases, outcomes, divergence, Hendricks et al.'s numbers, LIC."""
import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings, strategies as st

from biasamp_nb.captions import (caption_gender, error_and_ratio, gender_divergence, gender_outcomes, get_lexicon,
                                 hendricks_truth, image_gender, load_captions, tokenize, HENDRICKS_MODELS)
from biasamp_nb.caption_leakage import image_conditioned_lic, lic, mask_gender_words, synthetic_captions


@pytest.mark.parametrize("caption, expected", [
    ("A woman's umbrella.", "woman"),            # possessive
    ("woman,riding a bike!", "woman"),           # punctuation glued to the word
    ("Two GIRLS playing", "woman"),              # plural, upper case
    ("the wives of the club", "woman"),          # irregular plural
    ("a man standing by a manhole", "man"),      # 'manhole' is not 'man'
    ("a manhole cover", "none"),
    ("a snowman in a field", "none"),
    ("a human on a horse", "neutral"),
    ("a man and a woman dancing", "both"),       # mixed gender
    ("boys and girls", "both"),
    ("a person with a dog", "neutral"),
    ("a bowl of soup", "none"),
])
def test_caption_gender_edge_cases(caption, expected):
    assert caption_gender(caption).iloc[0] == expected


def test_lexicons_and_custom_mapping():
    assert caption_gender("she is cooking", lexicon="hirota").iloc[0] == "woman"
    assert caption_gender("she is cooking", lexicon="tang").iloc[0] == "none"
    custom = {"woman": ["queen"], "man": ["king"], "neutral": ["royal"]}
    assert caption_gender(["the queen waves", "a royal visit"], lexicon=custom).tolist() == ["woman", "neutral"]
    with pytest.raises(ValueError, match="lexicon must be one of"): caption_gender("x", lexicon="nltk")
    with pytest.raises(ValueError, match="needs the keys 'woman' and 'man'"): get_lexicon({"female": ["a"]})


def test_tokenize_keeps_words_whole():
    assert tokenize("Mr. Smith's dog isn't here") == ["mr", "smith", "'s", "dog", "is", "n't", "here"]
    with pytest.raises(ValueError, match="a caption must be a string"): tokenize(3)


def test_image_gender_rules():
    df = pd.DataFrame({"image_id": [1, 1, 2, 2, 3], "caption": ["a woman", "a person", "a man", "a woman", "a boy"]})
    assert image_gender(df).to_dict() == {1: "woman", 3: "man"}


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["woman", "man", "both", "neutral", "none"]), st.sampled_from(["woman", "man"])),
                min_size=2, max_size=60))
def test_outcomes_sum_to_one_and_match_counts(pairs):
    cg, tg = zip(*pairs)
    o = gender_outcomes(list(cg), list(tg))
    for g in ("woman", "man"):
        k = sum(t == g for t in tg)
        if k == 0: assert o.loc[g, ["correct", "wrong", "neutral"]].isna().all(); continue
        assert o.loc[g, ["correct", "wrong", "neutral"]].sum() == pytest.approx(1.0)
        assert o.loc[g, "correct"] == pytest.approx(sum(c == g and t == g for c, t in pairs) / k)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.floats(0, 1), min_size=3, max_size=3).filter(lambda v: sum(v) > 0.01),
       st.lists(st.floats(0, 1), min_size=3, max_size=3).filter(lambda v: sum(v) > 0.01))
def test_divergence_is_cosine_distance(a, b):
    o = pd.DataFrame([a, b], index=["woman", "man"], columns=["correct", "wrong", "neutral"])
    a, b = np.array(a), np.array(b)
    assert gender_divergence(o) == pytest.approx(1 - a @ b / np.linalg.norm(a) / np.linalg.norm(b), abs=1e-12)
    same = pd.DataFrame([a, a], index=["woman", "man"], columns=["correct", "wrong", "neutral"])
    assert gender_divergence(same) == 0.0


def test_outcome_errors():
    with pytest.raises(ValueError, match="has 2 entries but true_genders has 3"):
        gender_outcomes(["woman", "man"], ["woman", "man", "man"])
    with pytest.raises(ValueError, match="caption_genders has values"):
        gender_outcomes(["female"], ["woman"])
    with pytest.raises(ValueError, match="needs rows 'woman' and 'man'"):
        gender_divergence(pd.DataFrame({"correct": [1.0]}, index=["woman"]))


@pytest.mark.data
def test_hendricks_table1_reproduced(data_root):
    "Error (%) and ratio difference of the released captions, pinned; five models equal the published table."
    truth = hendricks_truth()
    pinned = {  # bias error, bias ratio delta, balanced error, balanced ratio delta
        "baseline_ft": (12.831, 0.1459, 19.3, 0.5104), "balanced": (12.849, 0.1399, 18.3, 0.4702),
        "upweight": (13.557, 0.0891, 16.3, 0.3504), "confident": (7.568, 0.0410, 10.1, 0.2556),
        "confusion": (12.377, 0.1109, 17.4, 0.4500), "equalizer": (7.024, -0.0284, 8.1, 0.1259)}
    for f, want in pinned.items():
        cg = caption_gender(load_captions(data_root / "captions" / "hendricks2018" / f"{f}.json"), lexicon="hendricks")
        b = error_and_ratio(cg.reindex(truth["bias"].index), truth["bias"])
        bl = error_and_ratio(cg.reindex(truth["balanced"].index), truth["balanced"])
        got = (100 * b["error"], b["ratio_delta"], 100 * bl["error"], bl["ratio_delta"])
        assert got == pytest.approx(want, abs=6e-4), (HENDRICKS_MODELS[f], got)


def test_mask_gender_words():
    assert mask_gender_words("Her son and HIS sister") == ["genderword genderword and genderword genderword"]


def test_lic_zero_when_model_equals_human_and_positive_for_stereotypes():
    syn = synthetic_captions(n=600)
    same = lic(syn.model, syn.model, syn.gender, n_seeds=3, random_state=1)
    assert same.value == 0.0 and (same.trials.LIC_D == same.trials.LIC_M).all()
    r = lic(syn.human, syn.model, syn.gender, n_seeds=3, random_state=1)
    assert r.value > 0.1 > abs(same.value)
    assert (r.trials.LIC == r.trials.LIC_M - r.trials.LIC_D).all()


def test_lic_score_by_hand():
    "Perfectly separable captions: every prediction right, so LIC_M is the mean confidence."
    caps = ["kitchen scene"] * 40 + ["garage scene"] * 40
    g = ["woman"] * 40 + ["man"] * 40
    r = lic(None, caps, g, n_seeds=2, random_state=0)
    from biasamp_nb.caption_leakage import tfidf_classifier
    clf = tfidf_classifier().fit(caps, g)
    conf = clf.predict_proba(["kitchen scene"]).max()
    assert r.value == pytest.approx(conf, abs=0.02) and r.value > 0.5


def test_bilstm_option_runs():
    syn = synthetic_captions(n=200)
    from biasamp_nb.caption_leakage import BiLSTMClassifier
    r = lic(None, syn.model, syn.gender, classifier=BiLSTMClassifier(epochs=2, hidden_dim=16, embedding_dim=16), n_seeds=2, random_state=0)
    assert 0 < r.value < 1


def test_image_conditioned_lic_signs():
    syn = synthetic_captions(n=600)
    shown = syn.human.map(lambda cs: cs[0].split()[-1])
    V = pd.get_dummies(shown).astype(float).to_numpy()
    faithful = [f"a person in the {s}" for s in shown]
    assert abs(image_conditioned_lic(V, faithful, syn.gender, n_seeds=3, random_state=0).value) < 0.03
    assert image_conditioned_lic(V, syn.model, syn.gender, n_seeds=3, random_state=0).value > 0.1
    with pytest.raises(ValueError, match="image_features must be 2-D"):
        image_conditioned_lic(V[:5], syn.model, syn.gender)


def test_lic_bad_input():
    with pytest.raises(ValueError, match="model_captions has 2 entries but genders has 3"):
        lic(None, ["a", "b"], ["woman", "man", "man"])
    with pytest.raises(ValueError, match="a balanced split needs at least"):
        lic(None, ["a", "b", "c"], ["woman", "man", "man"])


def test_wang_russakovsky_caption_setup_equals_a_direct_computation():
    "Their setup: 65 objects, their words, images whose caption names no or both genders dropped, sign indicator."
    from biasamp_nb import ba_directional
    from biasamp_nb.captions import WR_OBJECTS, caption_ba_inputs
    ids = list(range(1, 11))
    caps = pd.Series(["a man with a dog", "a woman with a dog", "a person with a dog", "a man and a woman with a cake",
                      "A girl eating cake.", "a boy, eating cake", "the man's dog", "two men and a dog", "a lady's cake",
                      "a gentleman at a table"], index=ids)
    truth = pd.Series(["man", "woman", "man", "woman", "woman", "man", "woman", "man", "woman", "man"], index=ids)
    objects = pd.DataFrame(0, index=ids, columns=list(WR_OBJECTS) + ["person_extra"], dtype=np.int8)
    objects.loc[[1, 2, 3, 7, 8], "dog"] = 1; objects.loc[[4, 5, 6, 9], "cake"] = 1; objects.loc[10, "dining_table"] = 1
    d = caption_ba_inputs(caps, objects, truth, setup="wang-russakovsky")
    # kept: 1 man, 2 woman, 5 girl, 6 boy, 8 men, 10 gentleman; without punctuation "man's" and "lady's" are no words
    assert len(d["T"]) == 6 and d["T"].shape[1] == 65 and list(d["A_pred"].columns) == ["man", "woman"]
    kept = [1, 2, 5, 6, 8, 10]
    pred = {1: "man", 2: "woman", 5: "woman", 6: "man", 8: "man", 10: "man"}
    terms = []
    for t in ("dog", "cake", "dining_table"):
        rows = [i for i in kept if objects.loc[i, t]]
        for a in ("man", "woman"):
            p_at = sum(truth[i] == a for i in rows) / len(kept); p_a = sum(truth[i] == a for i in kept) / len(kept)
            y = np.sign(p_at - p_a * len(rows) / len(kept))
            delta = sum(pred[i] == a for i in rows) / len(rows) - sum(truth[i] == a for i in rows) / len(rows)
            terms.append(y * delta)
    got = ba_directional(d["T"], d["A"], A_pred=d["A_pred"], direction="T->A", indicator="sign")
    assert got.value == pytest.approx(np.mean(terms), abs=1e-12)
    with pytest.raises(ValueError, match="setup"): caption_ba_inputs(caps, objects, truth, setup="wr")
    with pytest.raises(ValueError, match="lacks"): caption_ba_inputs(caps, objects.drop(columns="dog"), truth, setup="wang-russakovsky")


def test_judge_consistency_on_a_hand_checkable_example():
    "Conflict share, Pearson, Kendall τ-b and LCS/K for judges that agree, swap one pair, or reverse the ranking."
    from biasamp_nb.caption_leakage import judge_consistency
    sc = pd.DataFrame({"A": [4, 3, 2, 1], "B": [4, 3, 1, 2], "C": [1, 2, 3, 4], "D": [8, 6, 4, 2]}, index=["m0", "m1", "m2", "m3"])
    jc = judge_consistency(sc).set_index(["judge_1", "judge_2"])
    np.testing.assert_allclose(jc.loc[("A", "B")].to_numpy(float), [1 / 6, 0.8, 4 / 6, 3 / 4])
    np.testing.assert_allclose(jc.loc[("A", "C")].to_numpy(float), [1.0, -1.0, -1.0, 1 / 4])
    np.testing.assert_allclose(jc.loc[("A", "D")].to_numpy(float), [0.0, 1.0, 1.0, 1.0])  # same order, other scale
    tie = judge_consistency(pd.DataFrame({"A": [3, 2, 1], "B": [3, 1, 1]}))  # a tie where A orders: one conflict
    assert tie.conflict.iloc[0] == pytest.approx(1 / 3)
    flat = judge_consistency(pd.DataFrame({"A": [3, 2, 1], "B": [1, 1, 1]}))
    assert np.isnan(flat.pearson.iloc[0]) and np.isnan(flat.kendall.iloc[0])
    with pytest.raises(ValueError, match="at least 2"): judge_consistency(sc[["A"]])
    with pytest.raises(ValueError, match="NaN"): judge_consistency(sc.astype(float).where(sc > 1))


class _Lookup:
    "A judge that memorises the most frequent group of each exact caption and answers with confidence 1."
    def fit(self, X, y):
        d = pd.DataFrame({"x": list(X), "y": list(y)})
        self.classes_ = np.array(sorted(set(d.y)))
        self.best_ = d.groupby("x").y.agg(lambda s: s.value_counts().sort_index().idxmax()).to_dict()
        self.default_ = d.y.value_counts().sort_index().idxmax()
        return self

    def predict_proba(self, X):
        pick = np.array([self.best_.get(x, self.default_) for x in X])
        return (pick[:, None] == self.classes_[None, :]).astype(float)


def test_lic_for_a_categorical_attribute_by_hand():
    "Three groups: captions naming a group's own place leak it fully (LIC_M = 1); masked, a third is right (1/3)."
    place = {"north": "harbour", "south": "desert", "west": "prairie"}
    g = np.repeat(list(place), [30, 45, 60])
    caps = [f"a person in the {place[x]}" for x in g]
    full = lic(None, caps, g, groups=None, classifier=_Lookup(), n_seeds=3, random_state=0)
    assert full.value == 1.0 and full.info["groups"] == ["north", "south", "west"] and full.info["images_per_group"] == 30
    hid = lic(None, caps, g, groups=None, extra_words=list(place.values()), classifier=_Lookup(), n_seeds=3, random_state=0)
    np.testing.assert_allclose(hid.trials.LIC_M, 1 / 3, rtol=0, atol=1e-12)
    # LIC_D from human captions that name the place half the time: LIC = LIC_M - LIC_D per seed, paired
    human = [[c, "a person outside"] for c in caps]
    r = lic(human, caps, g, groups=["north", "west"], classifier=_Lookup(), n_seeds=2, random_state=0)
    np.testing.assert_allclose(r.trials.LIC, r.trials.LIC_M - r.trials.LIC_D)
    assert r.trials.LIC_D.iloc[0] == 1.0 and r.trials.LIC_D.iloc[1] == pytest.approx(0.5)  # seed 1: "a person outside"
    with pytest.raises(ValueError, match="at least 2 groups"): lic(None, caps, g, groups=["north"])
    with pytest.raises(ValueError, match="0 'east'"): lic(None, caps, g, groups=["north", "east"])


def test_lic_two_genders_unchanged_by_groups():
    "The default groups are woman and man; naming them, in any case, gives the same seeds and value."
    syn = synthetic_captions(n=300)
    a = lic(syn.human, syn.model, syn.gender, n_seeds=2, random_state=3)
    b = lic(syn.human, syn.model, syn.gender.str.upper(), groups=["Woman", "MAN"], n_seeds=2, random_state=3)
    assert a.value == b.value and a.info["images_per_gender"] == 150


@pytest.mark.parametrize("men_named", ["man", "woman"])
def test_captions_report_answer_without_human_captions_agrees_with_its_row(tmp_path, men_named):
    # every man captioned as a woman: the outcomes differ beyond noise; every man named right: they do not (divergence
    # 0, p = 1). The answer says which, with the row's own p-value, and that amplification was not measured.
    from biasamp_nb.captions_report import captions_report
    caps = pd.Series({i: f"a {'woman' if i < 30 else men_named} cooking" for i in range(60)})
    genders = pd.Series({i: "woman" if i < 30 else "man" for i in range(60)})
    s = captions_report(caps, genders, tmp_path, n_seeds=0).set_index("metric").loc["gender divergence"]
    answer = next(l for l in (tmp_path / "report.md").read_text().splitlines() if l.startswith("**Answer.**"))
    assert answer.startswith("**Answer.** Amplification is not measured") and f"p = {s.p_value:.3g})" in answer
    if men_named == "woman":
        assert s.value == 1.0 and s.p_value <= 0.05 and s.verdict == "outcomes differ beyond noise"
        assert "captions differ beyond noise" in answer
    else:
        assert s.value == 0.0 and s.p_value == 1.0 and s.verdict == "within noise"
        assert "are within noise of each other" in answer
