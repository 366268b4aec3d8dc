"""Benchmark of the training pieces: scene generation and classifier training throughput; prints a table.

Runs on the CPU here and on a GPU where PyTorch sees one (the device is printed).

    python bench/bench_training.py
"""
import time

import pandas as pd

from biasamp_nb.scenes import make_scenes, scenes_per_second
from biasamp_nb.train.classifier import predict, train_classifier


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
    print(pd.DataFrame(rows).to_string(index=False))
    print("\n(no captioner is included in this version, so none is benchmarked)")


if __name__ == "__main__":
    main()
