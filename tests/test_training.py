"""Training: checkpoints and resume, masking, the ideal reader, the train command."""
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

torch = pytest.importorskip("torch")

from biasamp_nb.cooccurrence import ba_directional
from biasamp_nb.scenes import make_scenes, scene_layout, CATALOGUE
from biasamp_nb.train.classifier import (MASKS, ideal_reader, mask_person, predict, train_classifier, _context_group)


def test_resume_continues_exactly(tmp_path):
    sc = make_scenes(300, size=16, random_state=0)
    full, h_full = train_classifier(sc, epochs=3, batch_size=64, width=4, random_state=1)
    ck = tmp_path / "ck.pt"

    def interrupt(epoch, history):
        if epoch == 1: raise KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):   # a run stopped after its first epoch's checkpoint
        train_classifier(sc, epochs=3, batch_size=64, width=4, random_state=1, checkpoint=ck, callback=interrupt)
    resumed, h_res = train_classifier(sc, epochs=3, batch_size=64, width=4, random_state=1, checkpoint=ck, resume=True)
    assert len(h_res) == 3
    np.testing.assert_allclose(h_res.loss, h_full.loss, rtol=1e-5)
    np.testing.assert_allclose(predict(full, sc.images)[1], predict(resumed, sc.images)[1], atol=1e-5)
    with pytest.raises(ValueError, match="epochs=3"):
        train_classifier(sc, epochs=4, batch_size=64, width=4, random_state=1, checkpoint=ck, resume=True)


def test_mask_person_hides_exactly_the_region():
    sc = make_scenes(20, size=32, random_state=2)
    seg, box = mask_person(sc, "segment"), mask_person(sc, "box")
    grey = sc.images.mean(axis=(2, 3), keepdims=True)
    for i in range(3):
        m = sc.person_mask[i]
        assert (seg[i][:, m] == grey[i, :, 0]).all()   # every person pixel becomes the image's mean colour
        np.testing.assert_array_equal(seg[i][:, ~m], sc.images[i][:, ~m])
        x0, y0, x1, y1 = sc.person_box[i]
        assert (box[i][:, y0:y1, x0:x1] == grey[i]).all()
    with pytest.raises(ValueError, match="mode must be one of"): mask_person(sc, "blur")


def test_context_group_and_ideal_reader():
    lay = scene_layout(5000, bias=0.75, random_state=3)
    ctx = _context_group(lay[list(CATALOGUE.name)])
    man = ideal_reader(lay)
    visible = lay.visibility.to_numpy() > 0
    assert (man[visible] == (lay.group == "man").to_numpy()[visible]).all()
    ok = ~visible & ~np.isnan(ctx)
    assert (man[ok] == (ctx[ok] == 1)).all()


def test_ideal_reader_amplifies_only_with_biased_context():
    vals = {}
    for b in (0.75, 0.5):
        lay = scene_layout(30000, bias=b, random_state=4)
        m = ideal_reader(lay)
        A = pd.DataFrame({"woman": (lay.group == "woman").astype(int), "man": (lay.group == "man").astype(int)})
        vals[b] = ba_directional(lay[list(CATALOGUE.name)], A, A_pred=pd.DataFrame({"woman": (~m).astype(int), "man": m.astype(int)}),
                                 direction="T->A").value
    assert vals[0.75] > 0.02 and vals[0.5] < 0


def test_train_command_small(tmp_path, monkeypatch):
    from biasamp_nb.train import classifier
    monkeypatch.setitem(classifier.CONFIGS, "small", dict(n_train=200, n_test=100, size=16, epochs=1, batch_size=64, width=4, lr=3e-3, cue=0.25))
    from biasamp_nb.report import main
    assert main(["train", "classifier", "--config", "small", "--out", str(tmp_path)]) == 0
    study = pd.read_csv(tmp_path / "masking_study.csv")
    assert study.condition.tolist() == list(MASKS) and (tmp_path / "checkpoint.pt").exists()
    assert main(["train", "classifier", "--config", "small", "--out", str(tmp_path), "--resume"]) == 0
