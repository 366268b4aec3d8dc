"""Benchmark of the training pieces: scene generation, classifier and captioner throughput; prints a table.

Runs on the CPU here and on a GPU where PyTorch sees one (the device is printed).

    python bench/bench_training.py
"""
import time

import pandas as pd

from biasamp_nb.scenes import make_scenes, scenes_per_second
from biasamp_nb.train.classifier import predict, train_classifier
from biasamp_nb.train.captioner import Vocab, generate, sat_model, train_captioner


def main():
    import torch
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    rows = [dict(work="scene generation (64×64)", device="cpu", images_per_second=round(scenes_per_second(5000, 64)))]
    for size, width in ((32, 16), (64, 16)):
        sc = make_scenes(2000, size=size, random_state=0)
        _, h = train_classifier(sc, epochs=2, batch_size=128, width=width, device=dev)
        rows.append(dict(work=f"classifier training ({size}×{size}, width {width})", device=dev,
                         images_per_second=round(h.images_per_second.iloc[-1])))
        m, _ = train_classifier(sc, epochs=1, batch_size=128, width=width, device=dev)
        t = time.perf_counter(); predict(m, sc.images); secs = time.perf_counter() - t
        rows.append(dict(work=f"classifier inference ({size}×{size}, width {width})", device=dev, images_per_second=round(len(sc) / secs)))
    sc = make_scenes(2000, size=32, cue=0.6, random_state=0)
    vocab = Vocab(sc.captions)
    for variant in ("baseline", "GAIC"):   # GAIC runs a second stream on the masked images
        _, h = train_captioner(sc, vocab, variant=variant, init=sat_model(len(vocab.itos)), epochs=2, batch_size=64, device=dev)
        rows.append(dict(work=f"captioner training, {variant} (32×32)", device=dev, images_per_second=round(h.images_per_second.iloc[-1])))
    m, _ = train_captioner(sc, vocab, init=sat_model(len(vocab.itos)), epochs=1, batch_size=64, device=dev)
    for beam in (1, 3):
        n = len(sc) if beam == 1 else 200
        t = time.perf_counter(); generate(m, sc.images[:n], vocab, beam=beam); secs = time.perf_counter() - t
        rows.append(dict(work=f"captioner decoding, {'greedy' if beam == 1 else f'beam {beam}'} (32×32)", device=dev,
                         images_per_second=round(n / secs)))
    print(pd.DataFrame(rows).to_string(index=False))


if __name__ == "__main__":
    main()
