"""The captioner: vocabulary, model shapes, the variants' losses against their formulas, decoding, resume, command."""
import numpy as np
import pandas as pd
import pytest

torch = pytest.importorskip("torch")
F = torch.nn.functional

from biasamp_nb.attention import neutralize_caption, soft_mask, upsample
from biasamp_nb.scenes import make_scenes
from biasamp_nb.train.captioner import (VARIANTS, Vocab, gender_step_attention, captioner_loss, evaluate_captioner, generate,
                                        results_table, run_variants, sat_model, train_captioner)


@pytest.fixture(scope="module")
def tiny():
    sc = make_scenes(96, size=16, cue=0.6, random_state=0)
    vocab = Vocab(sc.captions)
    return sc, vocab


def test_vocab_round_trip_and_gender_words(tiny):
    sc, vocab = tiny
    enc = vocab.encode(sc.captions)
    assert (enc[:, 0] == 1).all()
    assert [vocab.decode(e[1:]) for e in enc] == [" ".join(c.split()) for c in sc.captions]
    gendered = {w for w, g in zip(vocab.itos, vocab.gendered) if g}
    assert {"woman", "man", "girl", "boy"} <= gendered and not ({"person", "ball", "a"} & gendered)
    assert (vocab.encode([neutralize_caption(c) for c in sc.captions]) != 3).all()   # neutralised captions: no <unk>


def test_gender_step_attention_picks_the_first_gender_word():
    gendered = np.array([False, False, False, False, False, True])   # index 5 is a gender word
    targets = torch.tensor([[4, 5, 4, 2], [4, 4, 4, 2], [5, 4, 5, 2]])
    att = torch.arange(3 * 4 * 4, dtype=torch.float).view(3, 4, 4)   # (B, L, g*g) with g = 2
    maps, has = gender_step_attention(att, targets, gendered, 2)
    assert has.tolist() == [True, False, True]
    np.testing.assert_array_equal(maps[0].flatten(), att[0, 1]); np.testing.assert_array_equal(maps[2].flatten(), att[2, 0])


def _batch(sc, vocab, n=8):
    x = torch.as_tensor(sc.images[:n])
    y = torch.as_tensor(vocab.encode(sc.captions[:n]))
    yn = torch.as_tensor(vocab.encode([neutralize_caption(c) for c in sc.captions[:n]]))
    m = torch.as_tensor(sc.person_mask[:n].astype(np.float32))
    return x, y, yn, m, torch.ones(n, dtype=torch.bool)


def test_variant_losses_equal_their_formulas(tiny):
    sc, vocab = tiny
    torch.manual_seed(0)
    model = sat_model(len(vocab.itos), width=4, hidden=16).eval()   # eval: batch norm does not depend on the batch
    x, y, yn, m, s = _batch(sc, vocab)
    with torch.no_grad():
        logits, att = model(x, y)
        tgt = y[:, 1:]
        ce = F.cross_entropy(logits.transpose(1, 2), tgt, reduction="none")
        valid = tgt != 0
        base = ce[valid].mean()
        g = torch.as_tensor(vocab.gendered)[tgt]
        up = (ce * valid * torch.where(g, 3.0, 1.0)).sum() / valid.sum()
        a_g, has = gender_step_attention(att, tgt, vocab.gendered, model.grid)
        a_up = upsample(a_g, x.shape[-2:])
        l_ga = (a_up[has] * (1 - m[has])).sum(dim=(1, 2)).mean()
        x_star = x[has] * (1 - soft_mask(a_up[has]))[:, None]
        l2, _ = model(x_star, yn[has])
        l_ge = F.cross_entropy(l2.transpose(1, 2), yn[has][:, 1:], ignore_index=0)
        loss = lambda v, **kw: float(captioner_loss(model, x, y, yn, m, s, vocab.gendered, variant=v, **kw))
        assert has.sum() >= 6   # most template captions name a gender
        assert loss("baseline") == pytest.approx(float(base), rel=1e-5)
        assert loss("Balanced") == pytest.approx(float(base), rel=1e-5)
        assert loss("UpWeight", k=3.0) == pytest.approx(float(up), rel=1e-5)
        assert loss("UpWeight", k=1.0) == pytest.approx(float(base), rel=1e-5)
        assert loss("PixelSup", eta=0.05) == pytest.approx(float(base + 0.05 * l_ga), rel=1e-5)
        assert loss("GAIC", mu=0.1) == pytest.approx(float(base + 0.1 * l_ge), rel=1e-5)
        assert loss("GAICes", mu=0.1, eta=0.05) == pytest.approx(float(base + 0.05 * l_ga + 0.1 * l_ge), rel=1e-5)
        assert 0 < float(l_ga) < 1 and float(l_ge) > 0   # attention mass outside the person; a real second-stream loss


def test_attention_sums_to_one_and_beam_one_is_greedy(tiny):
    sc, vocab = tiny
    torch.manual_seed(1)
    model = sat_model(len(vocab.itos), width=4, hidden=16)
    model, _ = train_captioner(sc, vocab, init=model, epochs=1, batch_size=32)
    caps, atts = generate(model, sc.images[:6], vocab, max_len=8)
    assert len(caps) == 6 and all(a.shape[1:] == (model.grid, model.grid) for a in atts)
    np.testing.assert_allclose(np.stack(atts).sum(axis=(2, 3)), 1.0, rtol=1e-5)
    assert model.training   # generate restores the mode it found
    from biasamp_nb.train.captioner import beam_search
    model.eval()
    with torch.no_grad():   # beam search with one beam follows the greedy path
        f = model.features(torch.as_tensor(sc.images[:6]))
        via_beam = [vocab.decode(beam_search(model, f[i:i + 1], 1, 8)[0]) for i in range(6)]
    assert via_beam == caps
    wide, _ = generate(model, sc.images[:3], vocab, beam=3, max_len=8)
    assert all(isinstance(c, str) for c in wide)
    with pytest.raises(ValueError, match="beam must be a positive integer"): generate(model, sc.images[:1], vocab, beam=0)


def test_resume_continues_exactly_and_checks_settings(tiny, tmp_path):
    sc, vocab = tiny
    kw = dict(variant="GAIC", epochs=3, batch_size=32, random_state=2)
    torch.manual_seed(5); m0 = sat_model(len(vocab.itos), width=4, hidden=16)
    state = {k: v.clone() for k, v in m0.state_dict().items()}
    full, h_full = train_captioner(sc, vocab, init=m0, **kw)
    ck = tmp_path / "gaic.pt"

    def interrupt(epoch, history):
        if epoch == 1: raise KeyboardInterrupt
    m1 = sat_model(len(vocab.itos), width=4, hidden=16); m1.load_state_dict(state)
    with pytest.raises(KeyboardInterrupt):
        train_captioner(sc, vocab, init=m1, checkpoint=ck, callback=interrupt, **kw)
    m2 = sat_model(len(vocab.itos), width=4, hidden=16)
    resumed, h_res = train_captioner(sc, vocab, init=m2, checkpoint=ck, resume=True, **kw)
    np.testing.assert_allclose(h_res.loss, h_full.loss, rtol=1e-4)
    with pytest.raises(ValueError, match="variant='GAIC'"):
        train_captioner(sc, vocab, init=m2, checkpoint=ck, resume=True, **{**kw, "variant": "baseline"})
    with pytest.raises(ValueError, match="variant must be one of"):
        train_captioner(sc, vocab, variant="gaic")


def test_run_variants_and_the_train_command(tmp_path, monkeypatch):
    from biasamp_nb.train import captioner
    monkeypatch.setitem(captioner.CAPTIONER_CONFIGS, "small", dict(n_train=160, n_test=40, size=16, cue=0.6, pre_epochs=1, epochs=1,
                                                                   batch_size=32, lr=3e-3, ft_lr=1e-3, width=4, hidden=16))
    with pytest.raises(ValueError, match="config must be one of"): run_variants("huge")
    with pytest.raises(ValueError, match="variants must be among"): run_variants("small", variants=["GAIC", "Equalizer"])
    from biasamp_nb.cli import main
    out = tmp_path / "cap"
    assert main(["train", "captioner", "--config", "small", "--out", str(out)]) == 0
    res = pd.read_csv(out / "results.csv")
    assert len(res) == 3 * len(VARIANTS) and set(res.split) == {"iid", "balanced", "anti"}
    np.testing.assert_allclose(res[["man correct", "man wrong", "man neutral"]].sum(axis=1), 100.0)
    assert all((out / f"{v}.pt").exists() for v in ("pretrained", *VARIANTS))
    before = {v: (out / f"{v}.pt").stat().st_mtime_ns for v in VARIANTS}
    assert main(["train", "captioner", "--config", "small", "--out", str(out), "--resume"]) == 0
    assert {v: (out / f"{v}.pt").stat().st_mtime_ns for v in VARIANTS} == before    # finished models are reused
    pd.testing.assert_frame_equal(pd.read_csv(out / "results.csv"), res)
    wide = results_table(res)
    assert list(wide.index) == list(VARIANTS)
    assert wide.columns.get_level_values(0).unique().tolist() == ["iid", "balanced", "anti"]
    assert wide.loc["GAIC", ("anti", "man wrong")] == res.set_index(["variant", "split"]).loc[("GAIC", "anti"), "man wrong"]


def test_evaluate_captioner_matches_a_second_computation(tiny):
    "Outcomes from the generated captions, and Pointing Game / Attention Sum recomputed from token ids and argmaxes."
    sc, vocab = tiny
    torch.manual_seed(3)
    model, _ = train_captioner(sc, vocab, init=sat_model(len(vocab.itos), width=4, hidden=16), epochs=8, batch_size=16, lr=1e-2)
    ev = evaluate_captioner(model, vocab, sc, lic_seeds=0)
    caps, atts = ev["captions"], ev["attention"]
    row = ev["row"]
    for g, other in (("woman", "man"), ("man", "woman")):
        named = [set(c.split()) for c, t in zip(caps, sc.group) if t == g]
        words = {"woman": {"woman", "girl", "women", "girls"}, "man": {"man", "boy", "men", "boys"}}
        wrong = np.mean([bool(n & words[other]) and not (n & words[g]) for n in named])
        assert row[f"{g} wrong"] == pytest.approx(100 * wrong)
    hits, mass, iou = [], [], []
    for i, c in enumerate(caps):
        ids = [vocab.stoi[w] for w in c.split()]
        pos = next((t for t, j in enumerate(ids) if vocab.gendered[j]), None)
        if pos is None: continue
        up = upsample(atts[i][pos], sc.person_mask.shape[1:])
        hits.append(sc.person_mask[i].flatten()[up.argmax()]); mass.append(up[sc.person_mask[i]].sum())
        x, y = up / up.sum(), sc.person_mask[i] / sc.person_mask[i].sum()  # Attention-IoU by its definition
        iou.append((x * y).sum() / (((x + y) / 2) ** 2).sum())
    assert len(hits) > 10
    assert row["pointing_game"] == pytest.approx(100 * np.mean(hits)) and row["attention_sum"] == pytest.approx(100 * np.mean(mass))
    assert row["attention_iou"] == pytest.approx(100 * np.mean(iou)) and np.isfinite(row["attention_iou_floor"])
    assert np.isnan(row["LIC"])
    with pytest.raises(ValueError, match="lic_seeds"): evaluate_captioner(model, vocab, sc, lic_seeds=-1)


def test_bad_settings_are_named(tiny):
    sc, vocab = tiny
    x, y, yn, m, s = _batch(sc, vocab, 4)
    with pytest.raises(ValueError, match="variant must be one of"):
        captioner_loss(sat_model(len(vocab.itos), width=4, hidden=16), x, y, yn, m, s, vocab.gendered, variant="gaic")
    with pytest.raises(ValueError, match="epochs must be a positive number"): train_captioner(sc, vocab, epochs=0)
    with pytest.raises(ValueError, match="batch_size must be a positive number"): train_captioner(sc, vocab, batch_size=-1)
