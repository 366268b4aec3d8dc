"""The torchmetrics metric: the in-memory value under any batching, in two processes (gloo), and its refusals."""
import subprocess
import sys
import textwrap

import numpy as np
import pandas as pd
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torchmetrics")

from biasamp_nb import association_gap, ba_directional, multi_directional, task_combinations
from biasamp_nb.tracking import AmplificationMetric


def _data(n=1500, seed=0):
    rng = np.random.default_rng(seed)
    g = rng.random(n) < 0.35
    T = (rng.random((n, 5)) < np.where(g[:, None], [0.6, 0.4, 0.2, 0.3, 0.1], [0.2, 0.3, 0.4, 0.3, 0.3])).astype(np.int8)
    P = T.copy()
    P[rng.random((n, 5)) < 0.2] ^= 1
    P[g, 0] = 1  # the model adds task 0 to group 1
    Ap = np.c_[g, ~g].astype(np.int8)
    Ap[rng.random(n) < 0.1] ^= 1  # and misreads some groups
    tasks, groups = [f"t{j}" for j in range(5)], ["g1", "g0"]
    f = lambda x, c: pd.DataFrame(x, columns=c)
    return f(T, tasks), f(np.c_[g, ~g].astype(np.int8), groups), f(P, tasks), f(Ap, groups)


@pytest.mark.parametrize("direction", ["A->T", "T->A"])
def test_ba_equals_in_memory_under_any_batching(direction):
    T, A, P, Ap = _data()
    ref = ba_directional(T, A, T_pred=P, A_pred=Ap, direction=direction)
    for parts in (1, 3, 17):
        m = AmplificationMetric("ba_directional", groups=list(A), tasks=list(T), direction=direction)
        for b in np.array_split(np.random.default_rng(parts).permutation(len(T)), parts):
            pred = dict(T_pred=torch.tensor(P.to_numpy()[b])) if direction == "A->T" else dict(A_pred=torch.tensor(Ap.to_numpy()[b]))
            m.update(torch.tensor(T.to_numpy()[b]), torch.tensor(A.to_numpy()[b]), **pred)
        assert m.compute().item() == pytest.approx(ref.value, abs=1e-12)
        pd.testing.assert_frame_equal(m.result().per_pair, ref.per_pair)


def test_multi_and_association_gap_equal_in_memory():
    T, A, P, _ = _data(seed=1)
    combos = task_combinations(T, max_size=3, min_count=15).combination
    ref = multi_directional(T, A, T_pred=P, direction="A->T", max_size=3, min_count=15)
    m = AmplificationMetric("multi_directional", groups=list(A), tasks=list(T), direction="A->T", combinations=combos)
    g = AmplificationMetric("association_gap", groups=list(A), tasks=list(T), x1="g1", measure="pmi")
    for b in np.array_split(np.arange(len(T)), 4):
        m.update(T.to_numpy()[b], A.to_numpy()[b], T_pred=P.to_numpy()[b])  # numpy batches are taken too
        g.update(torch.tensor(P.to_numpy()[b]), torch.tensor(A.to_numpy()[b]))
    assert len(combos) > 5 and m.compute().item() == pytest.approx(ref.value, abs=1e-12)
    np.testing.assert_allclose(g.compute().numpy(), association_gap(A, P, "g1")["pmi"].to_numpy(), rtol=0, atol=1e-12)


def test_reset_and_refusals():
    T, A, P, _ = _data(n=200)
    m = AmplificationMetric("ba_directional", groups=2, tasks=5, direction="A->T")
    m.update(torch.tensor(T.to_numpy()), torch.tensor(A.to_numpy()), T_pred=torch.tensor(P.to_numpy()))
    assert int(m.counts().n) == 200
    m.reset()
    assert int(m.counts().n) == 0
    with pytest.raises(ValueError, match="0/1"):
        m.update(torch.ones(3, 5), torch.ones(3, 2), T_pred=torch.full((3, 5), 0.4))
    with pytest.raises(ValueError, match="T_pred is needed"):
        m.update(torch.ones(3, 5), torch.ones(3, 2))
    with pytest.raises(ValueError, match="made for 5"):
        m.update(torch.ones(3, 4), torch.ones(3, 2), T_pred=torch.ones(3, 4))


WORKER = textwrap.dedent('''
    import os, sys, json
    import numpy as np, torch, torch.distributed as dist, torch.multiprocessing as mp
    sys.path.insert(0, sys.argv[3])
    from test_tracking import _data
    from biasamp_nb.tracking import AmplificationMetric

    def work(rank, port, out):
        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        dist.init_process_group("gloo", rank=rank, world_size=2)
        T, A, P, _ = _data()
        m = AmplificationMetric("ba_directional", groups=list(A), tasks=list(T), direction="A->T")
        rows = np.arange(len(T))[rank::2]  # each process its own shard, in batches of 100
        for b in np.array_split(rows, 5):
            m.update(torch.tensor(T.to_numpy()[b]), torch.tensor(A.to_numpy()[b]), T_pred=torch.tensor(P.to_numpy()[b]))
        local = int(m.counts().n)
        value = m.compute().item()
        with open(f"{out}.{rank}", "w") as fh: json.dump(dict(value=value, local_rows=local), fh)
        dist.destroy_process_group()

    if __name__ == "__main__":
        mp.spawn(work, args=(int(sys.argv[1]), sys.argv[2]), nprocs=2)
''')


def test_two_processes_gloo_equal_in_memory(tmp_path):
    import json, socket
    if not torch.distributed.is_available(): pytest.skip("torch.distributed is not available")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]
    script = tmp_path / "ddp.py"
    script.write_text(WORKER)
    out = tmp_path / "value"
    from pathlib import Path
    r = subprocess.run([sys.executable, str(script), str(port), str(out), str(Path(__file__).parent)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    T, A, P, _ = _data()
    ref = ba_directional(T, A, T_pred=P, direction="A->T").value
    got = [json.loads((tmp_path / f"value.{k}").read_text()) for k in (0, 1)]
    assert [g["local_rows"] for g in got] == [750, 750]  # each process counted only its half ...
    for g in got: assert g["value"] == pytest.approx(ref, abs=1e-12)  # ... and both report the whole data's value


@pytest.mark.parametrize("settings", ["autocast-bf16", "matmul-medium"])
def test_counts_exact_under_autocast_and_low_precision(settings):
    """Under bf16 autocast a float product rounds counts above 256 (5,000 rows once counted as 4,992). Counting
    switches autocast off and counts in float64: the streamed and tracked counts equal the in-memory counts exactly,
    whatever the caller's autocast or matmul precision, and so do the metrics."""
    from biasamp_nb import counts
    from biasamp_nb.streaming import StreamingCounts
    T, A, P, Ap = _data(n=5000, seed=3)
    tt = lambda x: torch.tensor(x.to_numpy())
    ref = counts(T, A, P, Ap)
    before = torch.get_float32_matmul_precision()
    ctx = (torch.autocast("cpu", dtype=torch.bfloat16) if settings == "autocast-bf16" else torch.autocast("cpu", enabled=False))
    try:
        if settings == "matmul-medium": torch.set_float32_matmul_precision("medium")
        with ctx:
            sc = StreamingCounts()
            for lo in range(0, 5000, 1250):
                sl = slice(lo, lo + 1250)
                sc.update(tt(T)[sl], tt(A)[sl], T_pred=tt(P)[sl], A_pred=tt(Ap)[sl])
            m = AmplificationMetric("ba_directional", groups=list(A.columns), tasks=list(T.columns), direction="A->T")
            m.update(tt(T), tt(A), T_pred=tt(P))
            got = float(m.compute())
    finally: torch.set_float32_matmul_precision(before)
    c = sc.counts()
    assert c.n == 5000
    for f in ("at", "at_pred", "apred_t", "apred_tpred"): np.testing.assert_array_equal(getattr(c, f), getattr(ref, f))
    mc = m.counts()
    assert mc.n == 5000
    for f in ("at", "at_pred"): np.testing.assert_array_equal(getattr(mc, f), getattr(ref, f))
    assert got == ba_directional(T, A, T_pred=P, direction="A->T").value


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_counts_exact_under_float16_autocast_on_gpu():
    "The same on a GPU under float16 autocast with TF32 allowed."
    from biasamp_nb import counts
    from biasamp_nb.streaming import StreamingCounts
    T, A, P, Ap = _data(n=5000, seed=4)
    tt = lambda x: torch.tensor(x.to_numpy(), device="cuda")
    torch.backends.cuda.matmul.allow_tf32 = True
    with torch.autocast("cuda", dtype=torch.float16):
        sc = StreamingCounts().update(tt(T), tt(A), T_pred=tt(P), A_pred=tt(Ap))
    c, ref = sc.counts(), counts(T, A, P, Ap)
    for f in ("at", "at_pred", "apred_t", "apred_tpred"): np.testing.assert_array_equal(getattr(c, f), getattr(ref, f))


def test_tracking_imports_without_torch_and_making_a_metric_says_how_to_get_it(tmp_path):
    "The module imports where PyTorch is missing (its docs page builds); making a metric names the extra to install."
    import os
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
    import preview  # its path finder, blind to the train extra's packages
    (tmp_path / "sitecustomize.py").write_text(preview.HIDE.format(names=set(preview.TRAIN_ONLY)))
    code = textwrap.dedent("""
        import importlib.util
        assert importlib.util.find_spec("torch") is None
        from biasamp_nb.tracking import AmplificationMetric
        try: AmplificationMetric("ba_directional", groups=["m", "w"], tasks=["cook"])
        except ImportError as e: print(e)
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env={**os.environ, "PYTHONPATH": str(tmp_path)})
    assert r.returncode == 0, r.stderr[-2000:]
    assert 'needs PyTorch and torchmetrics: pip install "biasamp_nb[train]"' in r.stdout
