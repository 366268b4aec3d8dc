"""DBAC: the hand values of its definition, its invariants, a case with a known answer in both directions, input
safety and refusals."""
import copy

import numpy as np
import pytest

from biasamp_nb.caption_amplification import (align_vocabulary, caption_objects, dbac, dbac_lambda, dbac_value, pattern_prior,
                             synthetic_object_captions, true_probability)


def test_hand_values():
    a, p = np.array([1, 1, 0, 0]), np.array([0.9, 0.6, 0.8, 0.5])
    lam = dbac_lambda(p, pattern_prior(a), pattern_prior(["A", "A", "B", "C"]))
    assert lam == pytest.approx(0.5375, abs=1e-12) and dbac_lambda(p) == pytest.approx(0.7, abs=1e-12)
    assert dbac_value(0.65, lam) == pytest.approx(0.0947368421, abs=1e-9)
    P, Y = [[0.9, 0.2, 0.1], [0.3, 0.7, 0.6]], np.array([[1, 0, 0], [0, 1, 1]])
    np.testing.assert_allclose(true_probability(P, Y), [0.648, 0.294], atol=1e-12)
    rng = np.random.default_rng(0)
    for lm, ld in rng.random((50, 2)):
        assert -1 <= dbac_value(lm, ld) <= 1
        assert dbac_value(lm, ld) == pytest.approx(-dbac_value(ld, lm), abs=1e-15)
        assert dbac_value(2.5 * lm, 2.5 * ld) == pytest.approx(dbac_value(lm, ld), abs=1e-12)


def test_caption_objects_and_alignment():
    o = caption_objects(["two knives and a cup", "a Dog"], {"knife": ("knife", "knives"), "cup": ("cup",)})
    assert o.values.tolist() == [[1, 1], [0, 0]]
    assert align_vocabulary(["a lady walks"], {"a", "woman"}) == ["a unk unk"]
    vec = {"lady": np.array([1.0, 0.1]), "woman": np.array([1.0, 0.0]), "walks": np.array([0.0, 1.0])}
    assert align_vocabulary(["a lady walks"], {"a", "woman"}, vectors=vec, threshold=0.9) == ["a woman unk"]


@pytest.mark.parametrize("direction", ["T->A", "A->T"])
def test_known_answer_and_inputs_untouched(direction):
    syn = synthetic_object_captions(600, random_state=1)
    human, model, group = syn.human.tolist(), syn.model.tolist(), syn.group.tolist()
    before = copy.deepcopy((human, model, group))
    amp = dbac(human, model, group, direction=direction, n_trials=4, random_state=0)
    same = dbac([h[1:] for h in human], [h[0] for h in human], group, direction=direction, n_trials=4, random_state=0)
    assert amp.value > 0.05 and amp.ci[0] > 0          # the model links group and object more than people do
    assert abs(same.value) < 0.05                        # one more human caption: no amplification
    assert (human, model, group) == before               # the caller's lists are not modified
    assert amp.value == dbac(human, model, group, direction=direction, n_trials=4, random_state=0).value  # seeded


def test_refusals():
    syn = synthetic_object_captions(100, random_state=0)
    with pytest.raises(ValueError, match="model_captions must have one entry per image"):
        dbac(syn.human, syn.model[:5], syn.group)
    with pytest.raises(ValueError, match="threshold must be a cosine similarity"):
        dbac(syn.human, syn.model, syn.group, threshold=2)
    with pytest.raises(ValueError, match="priors must be one of"):
        dbac(syn.human, syn.model, syn.group, priors="fixed")
    with pytest.raises(ValueError, match="objects must be None, 'caption' or a 0/1 matrix"):
        dbac(syn.human, syn.model, syn.group, objects="image")
    with pytest.raises(ValueError, match="human_captions must give each image a caption"):
        dbac([[]] * 100, syn.model, syn.group)


def test_prior_sources_agree_where_they_must():
    """T->A: image-level objects passed by hand equal the default (objects named in any human caption of the image);
    with image-level objects both sides share their patterns, so pooled priors equal per-side ones."""
    syn = synthetic_object_captions(300, random_state=2)
    O = np.stack([caption_objects(h).to_numpy().max(0) for h in syn.human])
    kw = dict(n_trials=3, random_state=0)
    default = dbac(syn.human, syn.model, syn.group, **kw)
    assert dbac(syn.human, syn.model, syn.group, objects=O, **kw).value == pytest.approx(default.value, abs=1e-12)
    assert dbac(syn.human, syn.model, syn.group, priors="pooled", **kw).value == pytest.approx(default.value, abs=1e-12)
    per_caption = dbac(syn.human, syn.model, syn.group, objects="caption", **kw)
    pooled = dbac(syn.human, syn.model, syn.group, objects="caption", priors="pooled", **kw)
    assert per_caption.value != pytest.approx(pooled.value, abs=1e-6)   # per-caption patterns differ between sides


def test_corpus_vectors_are_the_same_under_every_draw():
    # dbac learns the corpus vectors once and reuses them in every draw of its test: a draw reorders each image's
    # captions, so the captions as a whole, and with them the vectors, must not change (to the bit)
    from biasamp_nb.caption_amplification import corpus_vectors
    from biasamp_nb.caption_leakage import permute_captions
    d = synthetic_object_captions(120, random_state=2)
    flat = lambda h, m: [c for x in h for c in x] + list(m)
    v0 = corpus_vectors(flat(d.human, d.model))
    for seed in (0, 1):
        h, m = permute_captions(d.human, d.model, seed)
        assert flat(h, m) != flat(d.human, d.model)  # the draw moved captions
        v = corpus_vectors(flat(h, m))
        assert v.keys() == v0.keys() and all(np.array_equal(v[w], v0[w]) for w in v0)


@pytest.mark.parametrize("direction", ["T->A", "A->T"])
def test_draws_in_worker_processes_are_the_same(direction):
    d = synthetic_object_captions(200, random_state=1)
    run = lambda **k: dbac(d.human, d.model, d.group, direction=direction, n_trials=2, n_null=19, random_state=3, **k)
    a, b = run(), run(n_jobs=2)
    assert np.array_equal(a.null, b.null) and (a.value, a.p_value, a.floor) == (b.value, b.p_value, b.floor)
    with pytest.raises(ValueError, match="n_jobs must be"):
        run(n_jobs=0)
