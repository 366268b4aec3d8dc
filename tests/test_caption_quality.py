"""Caption quality: the tokenizer and the scorers against the COCO caption evaluation (pycocoevalcap 1.2), by hand,
and against Tang et al.'s published values on their released captions."""
import json

import numpy as np
import pandas as pd
import pytest

from biasamp_nb.caption_scores import (bleu, caption_quality, cider_d, coco_references, meteor_available, ptb_tokenize,
                                        rouge_l)
from biasamp_nb.datasets import data_dir

CAPS = {1: "A man riding a horse on a beach.", 2: "a woman holding an umbrella in the rain", 3: "Two dogs playing with a frisbee.",
        4: "A plate of food with broccoli and rice.", 5: "a man's bike isn't parked (near a wall).", 6: "A kitchen."}
REFS = {1: ["A man rides a brown horse along the beach.", "A person on a horse near the ocean.", "man riding horse on sand"],
        2: ["A woman with an umbrella walks in the rain.", "a lady holding an umbrella on a rainy street"],
        3: ["Two dogs play with a frisbee in the park.", "A pair of dogs fighting over a frisbee.", "dogs, grass and a frisbee"],
        4: ["A plate with rice, broccoli and chicken.", "Food on a white plate."],
        5: ["A bicycle leaning against a brick wall.", "The man's bike is parked by the wall."],
        6: ["A small kitchen with white cabinets.", "A kitchen with a stove and a sink.", "an empty kitchen"]}
# pycocoevalcap 1.2 (its Java PTB tokenizer, Bleu(4), Rouge, Cider) on CAPS / REFS
PCC = {"BLEU": [0.8409090908899794, 0.6484246644244227, 0.4035026202751671, 0.2220975810113428],
       "ROUGE-L": 0.6550456953210458, "CIDEr-D": 1.9378953097520286}


def test_tokenizer_equals_the_java_tokenizer_on_the_fixture():
    assert ptb_tokenize(CAPS[5]) == "a man 's bike is n't parked -lrb- near a wall -rrb-".split()
    assert ptb_tokenize("A building at N. Astor and E. Division St. ") == "a building at n. astor and e. division st.".split()
    assert ptb_tokenize('It says "Stop" -- 3.5 p.m., U.S.!') == "it says stop 3.5 p.m. u.s.".split()


def test_scores_equal_the_coco_evaluation_on_a_fixture():
    q = caption_quality(CAPS, REFS, with_meteor=False)
    np.testing.assert_allclose(q[["BLEU-1", "BLEU-2", "BLEU-3", "BLEU-4"]].to_numpy(float), PCC["BLEU"], rtol=1e-12)
    assert q["ROUGE-L"] == pytest.approx(PCC["ROUGE-L"], rel=1e-12)
    assert q["CIDEr-D"] == pytest.approx(PCC["CIDEr-D"], rel=1e-12)


def test_scores_equal_pycocoevalcap_live_where_installed():
    "The same comparison run live on another fixture, where pycocoevalcap is installed (its scorers are Python)."
    pytest.importorskip("pycocoevalcap")
    from pycocoevalcap.bleu.bleu import Bleu
    from pycocoevalcap.cider.cider import Cider
    from pycocoevalcap.rouge.rouge import Rouge
    rng = np.random.default_rng(0)
    words = "a man woman dog cat on the with riding sitting table grass red blue small big".split()
    cands = {i: list(rng.choice(words, rng.integers(3, 9))) for i in range(40)}
    refs = {i: [list(rng.choice(words, rng.integers(3, 11))) for _ in range(rng.integers(1, 6))] for i in range(40)}
    gts = {i: [" ".join(r) for r in refs[i]] for i in cands}; res = {i: [" ".join(c)] for i, c in cands.items()}
    np.testing.assert_allclose(bleu(cands, refs), Bleu(4).compute_score(gts, res, verbose=0)[0], rtol=1e-12)
    assert rouge_l(cands, refs) == pytest.approx(Rouge().compute_score(gts, res)[0], rel=1e-12)
    assert cider_d(cands, refs) == pytest.approx(Cider().compute_score(gts, res)[0], rel=1e-12)


def test_hand_computed_values_and_bad_input():
    c, r = {1: "a man on a horse".split()}, {1: ["a man riding a horse".split(), "a person on a horse".split()]}
    b = bleu(c, r)
    assert b[0] == pytest.approx(1.0) and b[1] == pytest.approx((3 / 4) ** 0.5)
    assert rouge_l(c, r) == pytest.approx((1 + 1.44) * 0.8 * 0.8 / (0.8 + 1.44 * 0.8))
    with pytest.raises(ValueError, match="have no references"): caption_quality({**CAPS, 9: "a dog"}, REFS, with_meteor=False)
    assert caption_quality({**CAPS, 9: "a dog"}, REFS, with_meteor=False, only_referenced=True).n_images == 6
    with pytest.raises(ValueError, match="image_id and caption"): caption_quality(pd.DataFrame({"x": [1]}), REFS)
    with pytest.raises(ValueError, match="is not a file"): coco_references("/nonexistent/refs.json")
    if not meteor_available():
        with pytest.raises(ValueError, match="needs Java"): caption_quality(CAPS, REFS, with_meteor=True)


def _tang(name):
    d = data_dir()
    if d is None or not (d / "captions" / "human" / "karpathy_test5k_refs.json").is_file():
        pytest.skip("the Karpathy test references are not present")
    from biasamp_nb.captions import load_captions
    return (load_captions(d / "captions" / "tang2021" / f"{name}.json"),
            coco_references(d / "captions" / "human" / "karpathy_test5k_refs.json"))


@pytest.mark.parametrize("name, cider, bleu4", [("adapatt_beam5_result", 98.2, 31.1), ("gaic_beam5_test", 93.7, None),
                                               ("gaices_beam5_test", 94.6, None)])
def test_released_captions_reproduce_tang_et_al_tables(name, cider, bleu4):
    "Tang et al.'s Tables 1-2: CIDEr (and AdapAtt's BLEU-4) of the released captions, to the printed precision."
    caps, refs = _tang(name)
    q = caption_quality(caps, refs, with_meteor=False)
    assert round(100 * q["CIDEr-D"], 1) == cider and q.n_images == 5000
    if bleu4 is not None: assert round(100 * q["BLEU-4"], 1) == bleu4


def test_meteor_reproduces_adapatt_where_java_runs():
    if not meteor_available(): pytest.skip("METEOR needs Java and pycocoevalcap")
    caps, refs = _tang("adapatt_beam5_result")
    assert round(100 * caption_quality(caps, refs, with_meteor=True)["METEOR"], 1) == 25.2


def test_coco_references_reads_every_form_and_names_its_argument(tmp_path):
    "A COCO caption dict, a {id: [captions]} dict with string ids and a Series give the same map; bad files are named."
    want = {1: ["a cat", "a small cat"], 2: ["a dog"]}
    coco = {"annotations": [{"image_id": 1, "caption": "a cat"}, {"image_id": 2, "caption": "a dog"},
                            {"image_id": 1, "caption": "a small cat"}]}
    assert coco_references(coco) == want and coco_references({"1": want[1], "2": want[2]}) == want
    assert coco_references(pd.Series(want)) == want
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(ValueError, match=r"human file .*not valid JSON"): coco_references(tmp_path / "bad.json", name="human")
    with pytest.raises(ValueError, match="human must map each image id"): coco_references({1: "a cat"}, name="human")
