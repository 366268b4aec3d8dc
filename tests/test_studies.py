"""The training studies: the balanced half, the single-attribute weights, the masks, the attribution score, and the
whole run at its tiny size (the command that runs the full size on a GPU)."""
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("captum")

from biasamp_nb.scenes import make_scenes
from biasamp_nb.train.classifier import mask_person
from biasamp_nb.train.studies import (balanced_subset, correlation_table, person_attribution, raking_weights,
                                      run_studies)


@pytest.fixture(scope="module")
def scenes():
    return make_scenes(2500, size=32, bias=0.8, random_state=3)


def test_balanced_half_meets_eq_15_16_for_objects_and_sets(scenes):
    b = scenes.take(balanced_subset(scenes, random_state=1))
    X, man = b.objects.to_numpy(np.int64), b.group == "man"
    np.testing.assert_array_equal(X[man].sum(0), X[~man].sum(0))
    np.testing.assert_array_equal((X[man].T @ X[man]), (X[~man].T @ X[~man]))  # every pair too
    assert 0 < len(b) < len(scenes) and man.sum() * 2 == len(b)


def test_raking_weights_balance_single_objects_not_pairs(scenes):
    w = raking_weights(scenes.objects, scenes.group)
    X, man = scenes.objects.to_numpy(float), scenes.group == "man"
    np.testing.assert_allclose((w[:, None] * X)[man].sum(0), (w[:, None] * X)[~man].sum(0), rtol=1e-8)
    assert w.mean() == pytest.approx(1.0) and (w > 0).all()
    ct = correlation_table(scenes.objects, scenes.group, w)
    assert ct.iloc[0, 0] < 1e-8 and ct.iloc[1, 0] > 0.05  # singles balanced, pairs still skewed
    with pytest.raises(ValueError, match="both women and men"): raking_weights(scenes.objects, np.repeat("man", len(scenes)))


def test_balanced_subset_and_raking_weights_refuse_bad_input(scenes):
    "Arguments of the wrong kind or length are refused with a ValueError that names them."
    with pytest.raises(ValueError, match="scenes must be Scenes"): balanced_subset(scenes.objects)
    with pytest.raises(ValueError, match="group has 3 entries"): raking_weights(scenes.objects, ["man", "woman", "man"])


def test_box_mask_with_margin_hides_context_the_segment_keeps(scenes):
    sc = scenes.take(np.arange(200))
    seg, tight, wide = mask_person(sc, "segment"), mask_person(sc, "box"), mask_person(sc, "box", margin=0.5)
    grey = (wide != sc.images).any(1)  # pixels the wide box changed
    assert (grey & ~sc.person_mask).sum() > 20 * ((tight != sc.images).any(1) & ~sc.person_mask).sum()
    np.testing.assert_array_equal(mask_person(sc, "box", margin=0.0), tight)
    with pytest.raises(ValueError, match="margin"): mask_person(sc, "box", margin=-1)


class _Linear(torch.nn.Module):
    "Group logits (w·x, 0): Gradient-SHAP of the first is w(x − baseline), exactly zero where w is zero."
    def __init__(self, w, k):
        super().__init__()
        self.w, self.k = torch.nn.Parameter(torch.as_tensor(w, dtype=torch.float32)), k

    def forward(self, x):
        s = (x * self.w).sum((1, 2, 3))
        return torch.cat([torch.zeros(len(x), self.k), s[:, None], torch.zeros(len(x), 1)], 1)


def test_attribution_share_by_hand(scenes):
    sc = scenes.take(np.arange(4))
    k = sc.objects.shape[1]
    on_person = np.broadcast_to(sc.person_mask[0], sc.images.shape[1:]).astype(np.float32)
    share = person_attribution(_Linear(on_person, k), sc, n_samples=4)
    assert share[0] == pytest.approx(1.0)  # the model reads only image 0's person pixels
    off_person = 1 - np.broadcast_to(sc.person_mask.any(0), sc.images.shape[1:]).astype(np.float32)
    assert np.allclose(person_attribution(_Linear(off_person, k), sc, n_samples=4), 0.0)  # never the people's pixels


def test_run_studies_tiny_and_the_command(tmp_path):
    out = tmp_path / "st"
    summary = run_studies("tiny", out, progress=False)
    t4 = pd.read_csv(out / "table4.csv")
    assert set(t4.half) == {"unbalanced", "balanced"} and list(t4.condition.unique()) == ["original", "partial", "segment", "box"]
    assert t4[["ba", "multi", "dpa", "person_attribution"]].notna().all().all() and len(summary) == 8
    assert (t4.ba_low <= t4.ba_high).all() and ((t4.person_attribution >= 0) & (t4.person_attribution <= 1)).all()
    mit, curves = pd.read_csv(out / "mitigation.csv"), pd.read_csv(out / "curves.csv")
    assert list(mit.method) == ["baseline", "reweighting", "resampling"]
    last = curves.groupby("method").epoch.max()
    assert (last == 2).all()  # one point per epoch; the last equals the final measurement
    np.testing.assert_allclose(curves[curves.epoch == 2].set_index("method").loc[mit.method, "ba"], mit.ba, rtol=0, atol=1e-12)
    cap = pd.read_csv(out / "captioner_curves.csv")
    assert list(cap.epoch) == [1, 2] and cap[["ba", "multi", "gendered"]].notna().all().all()
    run = json.loads((out / "run.json").read_text())
    assert run["config"] == "tiny" and run["hardware"]



def test_one_command_runs_every_gpu_configuration_at_tiny_size(tmp_path):
    "`biasamp train all` writes what the training pages display: classifier, captioner and studies."
    exe = shutil.which("biasamp", path=str(Path(sys.executable).parent))
    out = tmp_path / "results"
    r = subprocess.run([exe, "train", "all", "--config", "tiny", "--out", str(out)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
    from biasamp_nb.train.common import load_results
    clf, cap = load_results("classifier_tiny", folder=out), load_results("captioner_tiny", folder=out)
    assert list(clf[0].condition) == ["original", "partial", "segment", "box"] and clf[1]["hardware"]
    assert set(cap[0].variant) == {"baseline", "Balanced", "UpWeight", "PixelSup", "GAIC", "GAICes"}
    assert (out / "studies_tiny" / "table4.csv").exists() and (out / "studies_tiny" / "captioner_curves.csv").exists()
    steps = json.loads((out / "all_runs_tiny.json").read_text())["steps"]
    assert [s["step"] for s in steps] == ["classifier masking study", "captioner variants", "Table 4, mitigation and curves"]
    bad = subprocess.run([exe, "train", "all", "--config", "tiny", "--bias", "0.6", "--out", str(out)], capture_output=True, text=True)
    assert bad.returncode == 2 and "--config and --out only" in bad.stderr
