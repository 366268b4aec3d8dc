"""COCO-GB builders (plain tables and COCO-format files) and attention correctness / GAIC functions."""
import json

import numpy as np
import pandas as pd
import pytest

from biasamp_nb.attention import (attention_outside_mask, attention_sum, gaic_loss, masked_image, neutralize_caption,
                                  pointing_game, soft_mask, upsample)
from biasamp_nb.coco_gb import bias_ratios, coco_gb_v1, coco_gb_v2, coco_tables, synthetic_coco


def known_pool():
    "Four objects, one per image; each with 200 men and 50 women: a perfect 200+200 pick exists."
    rows = [(o, s) for o in "abcd" for s, k in (("man", 200), ("woman", 50)) for _ in range(k)]
    X = pd.get_dummies(pd.Series([o for o, _ in rows])).astype(np.int8)
    X.index = X.index + 1000
    return X, pd.Series([s for _, s in rows], index=X.index)


def test_v1_reaches_the_known_balanced_answer():
    X, g = known_pool()
    assert bias_ratios(X, g).tolist() == [0.8] * 4
    pick = coco_gb_v1(X, g, n_per_gender=200, random_state=3)
    assert len(pick) == 400 and (g.loc[pick] == "woman").sum() == 200
    assert bias_ratios(X.loc[pick], g.loc[pick]).tolist() == [0.5] * 4
    assert pick.isin(X.index).all() and not pick.duplicated().any()


def test_v1_moves_mean_ratio_towards_half_on_coco_files(tmp_path):
    ins, cap = synthetic_coco(n_images=800, random_state=1)
    (tmp_path / "instances.json").write_text(json.dumps(ins)); (tmp_path / "captions.json").write_text(json.dumps(cap))
    O, G = coco_tables(tmp_path / "instances.json", tmp_path / "captions.json")
    before = bias_ratios(O, G)
    pick = coco_gb_v1(O, G, n_per_gender=int((G == "woman").sum()) // 2, random_state=0)
    after = bias_ratios(O.loc[pick], G.loc[pick])
    assert abs(after.mean() - 0.5) < abs(before.mean() - 0.5) / 3
    assert (after - 0.5).abs().max() < (before - 0.5).abs().max()


def test_v2_reverses_the_most_biased_objects():
    ins, cap = synthetic_coco(n_images=1200, random_state=2)
    O, G = coco_tables(ins, cap)
    tr, te = coco_gb_v2(O, G, test_size=150, min_train=10)
    assert len(te) == 150 and not set(tr) & set(te) and set(tr) | set(te) == set(O.index)
    r, rt, re = bias_ratios(O, G), bias_ratios(O.loc[tr], G.loc[tr]), bias_ratios(O.loc[te], G.loc[te])
    top = (r - 0.5).abs().sort_values(ascending=False).index[:3]
    assert ((rt[top] > 0.5) != (re[top] > 0.5)).all()
    assert (O.loc[tr].sum() >= 10).all()  # every object keeps min_train training images


def test_coco_tables_rules():
    ins = {"images": [{"id": i} for i in range(4)], "categories": [{"id": 1, "name": "person"}, {"id": 2, "name": "dog"}],
           "annotations": [{"image_id": 0, "category_id": 1}, {"image_id": 0, "category_id": 2},
                           {"image_id": 1, "category_id": 1}, {"image_id": 1, "category_id": 1},  # two people
                           {"image_id": 2, "category_id": 1}, {"image_id": 3, "category_id": 1}]}
    cap = {"annotations": [{"image_id": 0, "caption": "a woman and her dog"}, {"image_id": 1, "caption": "a man"},
                           {"image_id": 2, "caption": "a man and a woman"}, {"image_id": 3, "caption": "a boy"}]}
    O, G = coco_tables(ins, cap)
    assert G.to_dict() == {0: "woman", 3: "man"} and O.loc[0, "dog"] == 1 and O.loc[3, "dog"] == 0
    assert len(coco_tables(ins, cap, single_person=False)[1]) == 3


@pytest.mark.parametrize("call, msg", [
    (lambda X, g: coco_gb_v1(X, g, n_per_gender=60), "the pool has only 50 images of woman"),
    (lambda X, g: coco_gb_v2(X, g, test_size=0), "test_size must be a positive integer"),
    (lambda X, g: bias_ratios(X * 2, g), "values other than 0/1"),
    (lambda X, g: coco_tables({"images": []}, {}), "instances has no 'annotations'"),
    (lambda X, g: coco_tables("missing.json", {}), "does not exist"),
])
def test_coco_gb_bad_input(call, msg):
    X, g = known_pool()
    X, g = X.iloc[:250], g.iloc[:250]
    with pytest.raises(ValueError, match=msg):
        call(X, g)


def test_pointing_game_and_attention_sum_by_hand():
    rng = np.random.default_rng(0)
    masks = np.zeros((3, 8, 8)); masks[:, :4, :4] = 1
    alpha = np.zeros((3, 2, 2)); alpha[0, 0, 0] = 1; alpha[1, 1, 1] = 1; alpha[2] = 0.25
    assert pointing_game(alpha[:2], masks[:2]) == 0.5
    up = upsample(alpha, (8, 8))
    np.testing.assert_allclose(up.sum(axis=(1, 2)), 1.0)
    assert attention_sum(alpha[2:], masks[2:]) == pytest.approx(0.25)
    # attention_sum is the mass inside the mask of the upsampled, renormalised map
    assert attention_sum(alpha[:1], masks[:1]) == pytest.approx((up[0] * masks[0]).sum())
    with pytest.raises(ValueError, match="alpha must be"): pointing_game(alpha, masks[:2])


def test_gaic_functions_numpy_and_torch_agree():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    a = rng.random((2, 6, 6)); img = rng.random((2, 3, 6, 6)); M = (rng.random((2, 6, 6)) > 0.5).astype(float)
    np.testing.assert_allclose(soft_mask(a), soft_mask(torch.tensor(a)).numpy(), atol=1e-12)
    np.testing.assert_allclose(masked_image(img, a), masked_image(torch.tensor(img), torch.tensor(a)).numpy(), atol=1e-12)
    a_n = a / a.sum(axis=(1, 2), keepdims=True)
    assert attention_outside_mask(a_n, M) == pytest.approx(float(attention_outside_mask(torch.tensor(a_n), torch.tensor(M))))
    assert attention_outside_mask(a_n, M) == pytest.approx(np.mean([(a_n[i] * (1 - M[i])).sum() for i in range(2)]))
    np.testing.assert_allclose(upsample(a, (12, 12)), upsample(torch.tensor(a), (12, 12)).numpy(), atol=1e-6)
    assert gaic_loss(1.0, 3.0, mu=0.1) == pytest.approx(1.3)


def test_neutralize_caption():
    assert neutralize_caption("A woman and two boys; the men watch.") == "a person and two children the people watch"


def test_v2_max_per_object_spreads_the_test_split():
    ins, cap = synthetic_coco(n_images=1500, random_state=4)
    O, G = coco_tables(ins, cap)
    _, te = coco_gb_v2(O, G, test_size=120, min_train=5, max_per_object=20)
    assert 0 < len(te) <= 120 and set(G.loc[te]) == {"woman", "man"}   # a cap may leave the split smaller
    _, te_all = coco_gb_v2(O, G, test_size=120, min_train=5)
    assert set(G.loc[te_all]) == {"woman"}                             # uncapped: the male objects fill it


def test_attention_iou_identities_and_inputs():
    "Attention-IoU: closed forms on binary masks, torch = numpy, caller's maps untouched, image order irrelevant."
    from biasamp_nb import attention_iou, heatmap_score, mask_score
    rng = np.random.default_rng(3)
    for k, o in [(10, 5), (12, 0), (7, 7), (30, 11)]:
        X = np.zeros(64); Y = np.zeros(64)
        X[:k] = 1; Y[k - o:2 * k - o] = 1
        assert attention_iou(X.reshape(8, 8), Y.reshape(8, 8)) == pytest.approx(2 * o / (k + o), abs=1e-12)
    for f in (0.25, 0.5, 0.75):
        m = np.zeros((8, 8)); m.flat[:int(64 * f)] = 1
        assert attention_iou(np.ones((8, 8)), m) == pytest.approx(4 * f / (3 * f + 1), abs=1e-12)
    tgt, grp = rng.random((2, 50, 7, 7)); t, a = rng.integers(0, 2, (2, 50))
    keep = tgt.copy()
    base = heatmap_score(tgt, grp, t, a)
    np.testing.assert_array_equal(tgt, keep)
    p = rng.permutation(50)
    pd.testing.assert_frame_equal(heatmap_score(tgt[p], grp[p], t[p], a[p]), base, rtol=1e-12)
    masks = (rng.random((50, 14, 14)) < 0.3).astype(float)
    one = mask_score(tgt, masks, t, a)
    both = mask_score(tgt, {"region": masks, "rest": 1 - masks}, t, a)
    pd.testing.assert_frame_equal(both["region"], one)
    torch = pytest.importorskip("torch")
    np.testing.assert_allclose(attention_iou(torch.tensor(tgt), torch.tensor(grp)), attention_iou(tgt, grp), rtol=1e-12)
    pd.testing.assert_frame_equal(heatmap_score(torch.tensor(tgt), torch.tensor(grp), torch.tensor(t), torch.tensor(a)),
                                  base)
