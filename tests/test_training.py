"""Training: checkpoints and resume, masking, the ideal reader, the train command."""
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

torch = pytest.importorskip("torch")

from biasamp_nb.cooccurrence import ba_directional
from biasamp_nb.scenes import make_scenes, scene_layout, CATALOGUE
from biasamp_nb.train.classifier import (MASKS, ideal_reader, mask_person, predict, train_classifier, context_group)


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



@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_resume_on_cuda_continues_exactly(tmp_path):
    """A checkpoint written during a GPU run is loaded onto the GPU, its random-generator state included; the
    generator that orders the batches lives on the CPU, so resuming must hand it a CPU copy."""
    sc = make_scenes(300, size=16, random_state=0)
    kw = dict(epochs=3, batch_size=64, width=4, random_state=1, device="cuda")
    full, h_full = train_classifier(sc, **kw)
    ck = tmp_path / "ck.pt"

    def interrupt(epoch, history):
        if epoch == 1: raise KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):
        train_classifier(sc, checkpoint=ck, callback=interrupt, **kw)
    assert torch.load(ck, map_location="cuda", weights_only=True)["rng"].is_cuda   # the case that must work
    resumed, h_res = train_classifier(sc, checkpoint=ck, resume=True, **kw)
    np.testing.assert_allclose(h_res.loss, h_full.loss, rtol=1e-5)
    np.testing.assert_allclose(predict(full, sc.images)[1], predict(resumed, sc.images)[1], atol=1e-5)

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
    ctx = context_group(lay[list(CATALOGUE.name)])
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
    from biasamp_nb.cli import main
    assert main(["train", "classifier", "--config", "small", "--out", str(tmp_path)]) == 0
    study = pd.read_csv(tmp_path / "masking_study.csv")
    assert study.condition.tolist() == list(MASKS) and (tmp_path / "checkpoint.pt").exists()
    assert main(["train", "classifier", "--config", "small", "--out", str(tmp_path), "--resume"]) == 0


def _coco_files(tmp_path):
    "Five 32×32 images in COCO format: polygon, RLE and box-only persons; one with two people; one without a gender."
    from PIL import Image
    rng = np.random.default_rng(0)
    folder = tmp_path / "images"; folder.mkdir()
    for i in range(1, 6):
        Image.fromarray((rng.random((32, 32, 3)) * 255).astype(np.uint8)).save(folder / f"{i}.png")
    rle_mask = np.zeros((32, 32), bool); rle_mask[8:20, 5:9] = True
    flat = rle_mask.T.flatten()   # column-major, runs start with zeros
    edges = np.flatnonzero(np.diff(np.r_[0, flat.astype(int), 2]) != 0)
    counts = np.diff(np.r_[0, edges]).tolist()
    cats = [dict(id=1, name="person"), dict(id=2, name="skis"), dict(id=3, name="oven")]
    anns = [dict(image_id=1, category_id=1, bbox=[4, 6, 6, 14], segmentation=[[4, 6, 10, 6, 10, 20, 4, 20]]),
            dict(image_id=1, category_id=2, bbox=[0, 0, 3, 3]),
            dict(image_id=2, category_id=1, bbox=[5, 8, 4, 12], segmentation=dict(counts=counts, size=[32, 32])),
            dict(image_id=2, category_id=3, bbox=[0, 0, 3, 3]),
            dict(image_id=3, category_id=1, bbox=[10, 2, 8, 8]),
            dict(image_id=4, category_id=1, bbox=[1, 1, 5, 5]), dict(image_id=4, category_id=1, bbox=[20, 20, 5, 5]),
            dict(image_id=5, category_id=1, bbox=[1, 1, 5, 5])]
    instances = dict(images=[dict(id=i, file_name=f"{i}.png", width=32, height=32) for i in range(1, 6)], annotations=anns,
                     categories=cats)
    captions = dict(annotations=[dict(image_id=1, caption="A man on skis."), dict(image_id=2, caption="A woman at an oven."),
                                 dict(image_id=3, caption="A girl standing."), dict(image_id=4, caption="A man and a man."),
                                 dict(image_id=5, caption="A person standing.")])
    return instances, captions, folder, rle_mask


def test_load_coco_masks_boxes_and_filters(tmp_path):
    from biasamp_nb.train.classifier import load_coco
    from PIL import Image
    instances, captions, folder, rle_mask = _coco_files(tmp_path)
    sc = load_coco(instances, captions, folder, size=32)
    assert sc.info["image_id"] == [1, 2, 3]          # two people (4) and no gender (5) are left out
    assert sc.group.tolist() == ["man", "woman", "woman"] and sc.captions[0] == "A man on skis."
    assert sc.objects.to_dict("list") == {"oven": [0, 1, 0], "skis": [1, 0, 0]}
    poly = np.zeros((32, 32), bool); poly[6:21, 4:11] = True   # the polygon's pixels, boundary included
    np.testing.assert_array_equal(sc.person_mask[0], poly)
    np.testing.assert_array_equal(sc.person_mask[1], rle_mask)   # RLE decoded exactly
    box = np.zeros((32, 32), bool); box[2:10, 10:18] = True      # no segmentation: the box
    np.testing.assert_array_equal(sc.person_mask[2], box)
    np.testing.assert_array_equal(sc.person_box, [[4, 6, 10, 20], [5, 8, 9, 20], [10, 2, 18, 10]])
    np.testing.assert_allclose(sc.images[0].transpose(1, 2, 0) * 255, np.asarray(Image.open(folder / "1.png")), atol=1e-3)
    small = load_coco(instances, captions, folder, size=16)
    assert small.images.shape == (3, 3, 16, 16) and small.person_mask[2].sum() == 16 and small.person_box[2].tolist() == [5, 1, 9, 5]
    model, _ = train_classifier(small, epochs=1, batch_size=2, width=4)
    assert predict(model, small.images)[0].shape == (3, 2)
    masked = mask_person(small, "box")
    assert (masked[2][:, 1:5, 5:9] == small.images[2].mean(axis=(1, 2))[:, None, None]).all()
    with pytest.raises(ValueError, match="does not exist"):
        load_coco(instances, captions, tmp_path / "nowhere", size=16)
    with pytest.raises(ValueError, match="size must be an integer"): load_coco(instances, captions, folder, size=0)
    with pytest.raises(ValueError, match="epochs must be a positive number"): train_classifier(small, epochs=0)
    with pytest.raises(ValueError, match="no image has exactly one person"):
        load_coco(instances, dict(annotations=[dict(image_id=5, caption="A person.")]), folder)


def test_context_group_outside_the_catalogue():
    objects = pd.DataFrame({"tie": [1, 1, 0, 0, 1], "oven": [0, 0, 1, 1, 1]})
    group = np.array(["man", "man", "woman", "woman", "woman"])   # tie: 2/2 men, 1/3 women → man; oven → woman
    np.testing.assert_array_equal(context_group(objects, group), [1, 1, 0, 0, np.nan])
    with pytest.raises(ValueError, match="group is needed"): context_group(objects)


def _scenes_as_coco(tmp_path, n=600):
    "Rendered scenes written as COCO-format files: PNG images, person RLE masks and boxes, objects, captions."
    from PIL import Image
    sc = make_scenes(n, size=32, cue=0.6, random_state=9)
    folder = tmp_path / "coco"; folder.mkdir()
    cats = [dict(id=1, name="person")] + [dict(id=j + 2, name=nm) for j, nm in enumerate(CATALOGUE.name)]
    images, anns, caps = [], [], []
    for i in range(n):
        Image.fromarray((sc.images[i].transpose(1, 2, 0) * 255).round().astype(np.uint8)).save(folder / f"{i}.png")
        images.append(dict(id=i, file_name=f"{i}.png", width=32, height=32))
        flat = sc.person_mask[i].T.flatten().astype(int)
        edges = np.flatnonzero(np.diff(np.r_[0, flat, 2]) != 0)
        x0, y0, x1, y1 = (int(v) for v in sc.person_box[i])
        anns.append(dict(image_id=i, category_id=1, bbox=[x0, y0, x1 - x0, y1 - y0],
                         segmentation=dict(counts=np.diff(np.r_[0, edges]).tolist(), size=[32, 32])))
        anns += [dict(image_id=i, category_id=int(j) + 2, bbox=[0, 0, 1, 1]) for j in np.flatnonzero(sc.objects.iloc[i].to_numpy())]
        caps.append(dict(image_id=i, caption=sc.captions[i]))
    (tmp_path / "instances.json").write_text(json.dumps(dict(images=images, annotations=anns, categories=cats)))
    (tmp_path / "captions.json").write_text(json.dumps(dict(annotations=caps)))
    return sc, str(tmp_path / "instances.json"), str(tmp_path / "captions.json"), str(folder)


def test_scenes_round_trip_through_coco_and_the_train_command(tmp_path, monkeypatch):
    from biasamp_nb.train import classifier
    sc, ins, cap, folder = _scenes_as_coco(tmp_path)
    back = classifier.load_coco(ins, cap, folder, size=32)
    keep = np.array(back.info["image_id"])    # images whose caption names a gender
    assert len(keep) > 450 and (back.group == sc.group[keep]).all()
    np.testing.assert_array_equal(back.person_mask, sc.person_mask[keep])
    np.testing.assert_array_equal(back.person_box, sc.person_box[keep])
    np.testing.assert_allclose(back.images, sc.images[keep], atol=0.5 / 255 + 1e-6)
    np.testing.assert_array_equal(back.objects[sorted(back.objects.columns)].to_numpy(),
                                  sc.objects.iloc[keep][sorted(back.objects.columns)].to_numpy())
    monkeypatch.setitem(classifier.CONFIGS, "small", dict(n_train=0, n_test=0, size=32, epochs=1, batch_size=16, width=4, lr=3e-3, cue=0.6))
    from biasamp_nb.cli import main
    out = tmp_path / "run"
    assert main(["train", "classifier", "--coco", ins, cap, folder, "--out", str(out)]) == 0
    study = pd.read_csv(out / "masking_study.csv")
    assert study.condition.tolist() == list(MASKS) and study.group_accuracy.between(0, 1).all()
    assert main(["train", "captioner", "--coco", ins, cap, folder, "--out", str(out)]) == 2
