"""Row-keyed draws and the count metrics on a Dask cluster: the same counts, intervals, floors, p-values and q-values
as one process gives with row-keyed draws, however the rows are split, and after a worker dies."""
import os
import time

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from biasamp_nb.intervals import Bootstrap
from biasamp_nb.row_keys import (POISSON_CUTS, KeyedDraws, draw_key, keyed_words, poisson_weights, row_keyed_draws,
                                 swap_coins)


def test_a_rows_words_depend_on_its_id_alone():
    rng = np.random.default_rng(0)
    ids = rng.permutation(10_000)[:3000]
    whole = keyed_words(11, "boot", 4, ids)
    cut = np.sort(rng.choice(np.arange(1, 3000), 5, replace=False))
    test = np.concatenate([keyed_words(11, "boot", 4, part) for part in np.split(ids, cut)])
    assert np.array_equal(test, whole)
    assert len(np.unique(whole)) == len(whole)  # 3000 distinct words (a collision has odds of about 2^-42)
    with pytest.raises(ValueError, match="ids must be a 1-d array of non-negative integer row ids"):
        keyed_words(11, "boot", 0, np.array([-1, 2]))
    with pytest.raises(ValueError, match="stream must be one of"):
        keyed_words(11, "bootstrap", 0, np.arange(3))


def test_the_weights_are_poisson_one_and_the_coins_fair():
    k = np.arange(len(POISSON_CUTS))
    assert np.allclose(POISSON_CUTS.astype(float) / 2**64, stats.poisson.cdf(k, 1), rtol=0, atol=1e-15)
    W = poisson_weights(draw_key(5), range(50), np.arange(20_000))
    obs = np.bincount(W.ravel(), minlength=8)[:8]
    exp = stats.poisson.pmf(np.arange(8), 1) * W.size
    exp[-1] += W.size - exp.sum()  # the tail beyond 7 with the last cell
    obs[-1] += W.size - obs.sum()
    assert stats.chisquare(obs, exp).pvalue > 1e-4
    c = swap_coins(draw_key(5), range(50), np.arange(20_000))
    assert abs(c.mean() - 0.5) < 4 * 0.5 / np.sqrt(c.size)
    # draws and rows are independent: the weights of neighbouring rows and draws do not correlate
    assert abs(np.corrcoef(W[:, 1:].ravel(), W[:, :-1].ravel())[0, 1]) < 0.01
    assert abs(np.corrcoef(W[1:].ravel(), W[:-1].ravel())[0, 1]) < 0.01


def test_keyed_draws_do_not_depend_on_how_many_a_block_holds():
    stat = lambda W: np.asarray(W, float)[:, :7].sum(axis=1)
    b = Bootstrap(30, random_state=3, keyed=True)
    a1, _ = b.draws(stat, 500)
    a2, _ = b.draws(stat, 500, cells=(1 << 23) // 4)  # four resamples a block
    assert np.array_equal(a1, a2) and a1.std() > 0
    assert np.array_equal(a1, poisson_weights(draw_key(3), range(30), np.arange(7)).sum(axis=1))
    with pytest.raises(ValueError, match="ci_method='bca' needs a jackknife over rows in one order"):
        Bootstrap(30, method="bca", keyed=True)
    with row_keyed_draws():
        assert Bootstrap(30).keyed and not Bootstrap(30, keyed=False).keyed
    assert not Bootstrap(30).keyed


def test_block_weights_are_the_rows_weights_by_block():
    d = KeyedDraws(draw_key(9), 3, 8, "boot", n=4000, blocks=100)
    W = np.asarray(d.materialize())
    assert W.shape == (5, 4000) and np.array_equal(W[:, 1234:1300], d.weights_at(np.arange(1234, 1300)))
    assert len(np.unique(W[0])) > 2  # whole blocks take the same weight; blocks differ


def _tables(n, seed=0, k=5):
    rng = np.random.default_rng(seed)
    A = pd.DataFrame(np.eye(2, dtype=np.int8)[rng.integers(0, 2, n)], columns=["woman", "man"])
    T = pd.DataFrame((rng.random((n, k)) < 0.2 + 0.2 * A[["woman"]].to_numpy()).astype(np.int8),
                     columns=[f"t{j}" for j in range(k)])
    P = T.where(rng.random(T.shape) > 0.12, 1 - T)
    AP = A.where(np.repeat(rng.random((n, 1)) > 0.1, 2, axis=1), 1 - A)
    A.iloc[-1] = 0; T.iloc[-1] = 0; P.iloc[-1] = 0; AP.iloc[-1] = 0  # no labels at all: named by no record
    return T, A, P, AP


def _write(tmp, name, groups, tasks, shuffled=False):
    from biasamp_nb.scale import write_long_parquet
    p = tmp / f"{name}.parquet"
    write_long_parquet(p, groups, tasks, row_group_size=300)
    if shuffled:  # the records in random order: every range is still read whole
        t = pd.read_parquet(p).sample(frac=1, random_state=1)
        t.to_parquet(p, row_group_size=300, index=False)
    return str(p)


@pytest.fixture(scope="module")
def client():
    pytest.importorskip("distributed")
    from distributed import Client, LocalCluster
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        with Client(cluster) as c:
            assert c.scheduler.address.startswith("tcp://")
            yield c


def _same(c, r):
    assert (c.value, c.ci, c.floor, c.p_value) == (r.value, r.ci, r.floor, r.p_value), (c, r)
    assert np.array_equal(c.boot, r.boot) and np.array_equal(c.null, r.null)
    pd.testing.assert_frame_equal(c.per_pair, r.per_pair)
    assert "q" in r.per_pair and r.per_pair["q"].notna().any()


@pytest.mark.parametrize("n", [700, 2500])  # resampled by rows (n ≤ 1000), by keyed blocks of rows beyond
def test_the_cluster_gives_the_in_memory_numbers(client, tmp_path, n):
    from biasamp_nb import ba_directional, ba_mals, multi_directional, multi_mals
    from biasamp_nb.distributed import dask_evaluate
    T, A, P, AP = _tables(n)
    Tt, At, _, _ = _tables(900, seed=1)
    truth, pred = _write(tmp_path, "truth", A, T, shuffled=True), _write(tmp_path, "pred", AP, P)
    train = _write(tmp_path, "train", At.iloc[:-1], Tt.iloc[:-1])
    skipped = {}
    got = dask_evaluate(truth, ["woman", "man"], pred=pred, client=client, train=train, n_rows=n, n_boot=60,
                        n_null=59, random_state=4, partitions=5, skipped=skipped)
    kw = dict(T_train=Tt.iloc[:-1], A_train=At.iloc[:-1], n_boot=60, n_null=59, random_state=4)
    with row_keyed_draws():
        mem = {"BA_MALS": ba_mals(T, A, P, AP, **kw),
               **{f"BA→ ({d})": ba_directional(T, A, P, AP, direction=d, **kw) for d in ("A->T", "T->A")},
               **{f"Multi→ ({d})": multi_directional(T, A, P, AP, direction=d, min_count=10, max_size=3, **kw)
                  for d in ("A->T", "T->A")},
               "Multi_MALS": multi_mals(T, A, P, AP, min_count=10, max_size=3, **kw)}
    assert set(got) == set(mem)
    for k in mem: _same(got[k], mem[k])
    assert got["Multi_MALS"].info["n_combinations"] == mem["Multi_MALS"].info["n_combinations"] > 15
    assert set(skipped) == {"Leakage", "DPA (A->T)", "DPA (T->A)"} and "on a sample of the rows" in skipped["Leakage"]
    plain = ba_mals(T, A, P, AP, **kw)  # the default draws are another resampling: same value, other draws
    assert plain.value == mem["BA_MALS"].value and not np.array_equal(plain.boot, mem["BA_MALS"].boot)


def test_a_worker_killed_mid_run_is_retried_and_nothing_changes(client, tmp_path):
    from distributed.diagnostics.plugin import WorkerPlugin
    from biasamp_nb import ba_directional
    from biasamp_nb.distributed import ClusterRows, cluster_metric
    from biasamp_nb.registry import metric_spec

    class KillOnce(WorkerPlugin):  # local: sent to the workers by value
        "The first worker to start a task named `prefix`… dies at once (os._exit), once in all."
        def __init__(self, marker, prefix): self.marker, self.prefix = str(marker), prefix

        def transition(self, key, start, finish, **kw):
            name = key[0] if isinstance(key, tuple) else key
            if finish == "executing" and str(name).startswith(self.prefix) and not os.path.exists(self.marker):
                open(self.marker, "w").close()
                os._exit(1)

    T, A, P, AP = _tables(1500, seed=2)
    rows = ClusterRows(client, _write(tmp_path, "truth", A, T), ["woman", "man"], pred=_write(tmp_path, "pred", AP, P),
                       n_rows=1500, partitions=4)
    before = set(client.scheduler_info()["workers"])
    plugin = KillOnce(tmp_path / "killed", "_weighted")
    client.register_plugin(plugin, name="kill-once")  # the swap test's first counting task kills its worker
    try: got = cluster_metric(rows, metric_spec("ba_directional"), "A->T", n_boot=40, n_null=39, random_state=1)
    finally: client.unregister_worker_plugin("kill-once")
    assert (tmp_path / "killed").exists()  # a worker died in the middle of the swap test ...
    for _ in range(600):  # ... and its nanny started another in its place
        now = set(client.scheduler_info()["workers"])
        if len(now) == 2 and now != before: break
        time.sleep(0.1)
    assert len(now) == 2 and now != before
    with row_keyed_draws():
        _same(got, ba_directional(T, A, P, AP, direction="A->T", n_boot=40, n_null=39, random_state=1))


def test_a_cluster_refuses_what_it_cannot_draw(client, tmp_path):
    from biasamp_nb.distributed import ClusterRows, dask_evaluate
    T, A, P, AP = _tables(300)
    rows = ClusterRows(client, _write(tmp_path, "truth", A, T), ["woman", "man"], pred=_write(tmp_path, "pred", AP, P))
    assert rows.n == 299  # the last row names no label: without n_rows the rows end at the largest row id
    with pytest.raises(ValueError, match="row-keyed draws only"):
        rows.counter(("T_pred",))(np.ones((3, rows.n), np.int32))
    with pytest.raises(ValueError, match="client must be a dask.distributed Client"):
        ClusterRows("tcp://127.0.0.1:8786", _write(tmp_path, "truth", A, T), ["woman", "man"])
    with pytest.raises(ValueError, match="n_rows=10 but the files name row_id 298"):
        ClusterRows(client, _write(tmp_path, "truth", A, T), ["woman", "man"], n_rows=10)
    with pytest.raises(ValueError, match="groups: 'nobody' is on no row of the truth files"):
        dask_evaluate(_write(tmp_path, "truth", A, T), ["woman", "man", "nobody"], pred=_write(tmp_path, "pred", AP, P),
                      client=client, n_boot=None, n_null=None, metrics=["BA_MALS"])


def test_the_report_command_runs_on_a_scheduler(client, tmp_path, capsys):
    import json
    from biasamp_nb import ba_mals, multi_mals
    from biasamp_nb.cli import main
    T, A, P, AP = _tables(1200, seed=3)
    truth, pred = _write(tmp_path, "truth", A, T), _write(tmp_path, "pred", AP, P)
    args = ["report", "--scheduler", client.scheduler.address, "--groups", "woman", "man", "--n-boot", "40",
            "--n-null", "39", "--seed", "2", "--max-size", "2", "--trials", "2", "--sample-rows", "600"]
    assert main(args + ["--eval", truth, "--pred", pred, "--out", str(tmp_path / "r")]) == 0
    summ = pd.read_csv(tmp_path / "r" / "summary.csv").set_index("metric")
    with row_keyed_draws(): r = ba_mals(T, A, P, AP, n_boot=40, n_null=39, random_state=2)
    assert summ.loc["BA_MALS", "value"] == pytest.approx(r.value, abs=1e-12)
    assert summ.loc["BA_MALS", "ci_low"] == pytest.approx(r.ci[0], abs=1e-12)
    assert summ.loc["Leakage", "note"] == "fitted on 600 of 1,199 rows, drawn at random"  # the last names no label
    md = (tmp_path / "r" / "report.md").read_text()
    glance = md[md.index("## At a glance"):md.index("## Summary")]  # the first screen says it too, beside the value
    assert all(f"| pred | {m} | " in glance and f"] on 600 of 1,199 rows |" in glance.split(f"| pred | {m} | ")[1]
               .split("\n")[0] for m in ("Leakage", "DPA (A->T)", "DPA (T->A)"))
    assert np.isfinite(summ.loc[["Leakage", "DPA (A->T)", "DPA (T->A)"], "value"]).all()
    rec = json.loads((tmp_path / "r" / "inputs.json").read_text())
    assert "--scheduler" in rec["command"] and rec["cases"]["pred"]["rows"] == 1199  # the last row names no label
    assert rec["options"]["max_size"] == 2 and summ.loc["Multi_MALS", "value"] >= 0
    with row_keyed_draws():
        m = multi_mals(T, A, P, AP, max_size=2, min_count=10, n_boot=40, n_null=39, random_state=2)
    assert summ.loc["Multi_MALS", "value"] == pytest.approx(m.value, abs=1e-12)
    assert rec["cases"]["pred"]["groups"] == dict(zip(["woman", "man"], A.sum().astype(int).tolist()))
    capsys.readouterr()
    assert main(args + ["--eval", truth, "--out", str(tmp_path / "s")]) == 2
    assert "--scheduler needs --pred" in capsys.readouterr().err
    assert main(args + ["--eval", truth, "--pred", pred, "--id", "k", "--out", str(tmp_path / "s")]) == 2
    assert "--id is for tables" in capsys.readouterr().err


def test_wide_parquet_gives_the_same_numbers(client, tmp_path):
    from biasamp_nb import ba_mals, multi_directional
    from biasamp_nb.distributed import ClusterRows, dask_evaluate
    T, A, P, AP = _tables(1200, seed=5)
    for i, (name, df) in enumerate((("truth", pd.concat([A, T], axis=1)), ("pred", pd.concat([AP, P], axis=1)))):
        for j in range(3):  # three files a table, read one after another
            df.iloc[400 * j:400 * (j + 1)].to_parquet(tmp_path / f"{name}{j}.parquet", row_group_size=170, index=False)
    got = dask_evaluate(str(tmp_path / "truth*.parquet"), ["woman", "man"], pred=str(tmp_path / "pred*.parquet"),
                        client=client, n_boot=40, n_null=39, random_state=6, partitions=4)
    kw = dict(n_boot=40, n_null=39, random_state=6)
    with row_keyed_draws():
        _same(got["BA_MALS"], ba_mals(T, A, P, AP, **kw))
        _same(got["Multi→ (A->T)"], multi_directional(T, A, P, AP, direction="A->T", min_count=10, max_size=3, **kw))
    with pytest.raises(ValueError, match="pred has 800 rows but truth has 1200"):
        ClusterRows(client, str(tmp_path / "truth*.parquet"), ["woman", "man"],
                    pred=[str(tmp_path / "pred0.parquet"), str(tmp_path / "pred1.parquet")])
    with pytest.raises(ValueError, match="truth has no column 'gender'; wide files on a cluster take one 0/1 column"):
        ClusterRows(client, str(tmp_path / "truth*.parquet"), ["gender"])


def test_association_gaps_on_a_cluster_are_the_in_memory_ones(client, tmp_path):
    from biasamp_nb import association_gap
    from biasamp_nb.distributed import dask_association_gap
    T, A, _, _ = _tables(1300, seed=7, k=6)
    A = A.assign(child=(np.arange(len(A)) % 7 == 0).astype(np.int8))  # shares rows with both: no test of equal rates
    truth = _write(tmp_path, "truth", A, T, shuffled=True)
    ids = ["woman", "man", "child"]
    for x1, x2, kw in (("woman", "rest", dict(n_boot=50)), ("woman", "man", dict(n_boot=40, ci_method="basic")),
                       ("man", "child", dict(min_count=100)), ("woman", "man", dict(metrics=["dp", "pmi"]))):
        got = dask_association_gap(truth, ids, x1, x2, client=client, n_rows=1300, random_state=5, partitions=3, **kw)
        with row_keyed_draws(): mem = association_gap(A, T, x1, x2, random_state=5, **kw)
        pd.testing.assert_frame_equal(got, mem)
        assert got.attrs == mem.attrs and len(got) > 0
        assert ("p" in got) == (x2 != "child") and ("lo" in " ".join(got.columns)) == ("n_boot" in kw)
    assert mem["p"].between(0, 1).all() and np.allclose(mem["dp"], T.loc[A.woman == 1].mean() - T.loc[A.man == 1].mean())
    with pytest.raises(ValueError, match="ci_method='bca' needs a jackknife"):
        dask_association_gap(truth, ids, "woman", client=client, n_boot=20, ci_method="bca")
    with pytest.raises(ValueError, match="x2='girl' is not a column of X"):
        dask_association_gap(truth, ids, "woman", "girl", client=client)
    with pytest.raises(ValueError, match="identities: 'girl' is on no row of the files"):
        dask_association_gap(truth, ids + ["girl"], "woman", client=client)


def test_a_workers_memory_is_bounded_by_a_range_and_a_block_of_draws(client, tmp_path, monkeypatch):
    "The most rows a task reads and the largest block of draws it makes do not grow with the rows in all."
    from distributed.diagnostics.plugin import WorkerPlugin
    import biasamp_nb.distributed as D

    def spy():  # on each worker: wrap what reads rows and what makes draws (looked up by name at each call)
        import weakref
        import biasamp_nb.distributed as D, biasamp_nb.row_keys as R
        seen = D.__dict__.setdefault("_seen", {})
        seen.clear(); seen.update(rows=0, draws=0, live=0)
        if not hasattr(D, "_plain_read"): D._plain_read, D._plain_load, R._plain = D._read_range, D.load_range, {}
        def read(files, lo, hi, *a):
            seen["rows"] = max(seen["rows"], hi - lo); return D._plain_read(files, lo, hi, *a)
        held = weakref.WeakSet()  # the ranges read and not yet let go
        def load(*a):
            r = D._plain_load(*a); held.add(r); seen["live"] = max(seen["live"], len(held)); return r
        D._read_range, D.load_range = read, load
        for nm in ("weights_at", "coins_at"):
            f = R._plain.setdefault(nm, getattr(R.KeyedDraws, nm))
            def made(self, ids, f=f):
                out = f(self, ids); seen["draws"] = max(seen["draws"], out.size); return out
            setattr(R.KeyedDraws, nm, made)

    class MostHeld(WorkerPlugin):  # the most task results a worker holds at once (ranges, moved rows, counts)
        def setup(self, worker): self.worker = worker; worker.most_held = 0
        def transition(self, key, start, finish, **kw):
            if finish == "memory": self.worker.most_held = max(self.worker.most_held, len(self.worker.data))

    monkeypatch.setattr(D, "RANGE_ROWS", 400)
    peaks = []
    for n in (1600, 6400):
        T, A, P, AP = _tables(n, seed=8)
        truth, pred = _write(tmp_path, f"t{n}", A, T), _write(tmp_path, f"p{n}", AP, P)
        client.run(spy)
        client.register_plugin(MostHeld(), name="most-held")
        got = D.dask_evaluate(truth, ["woman", "man"], pred=pred, client=client, n_rows=n, n_boot=60, n_null=59,
                              metrics=["BA_MALS", "BA→ (A->T)", "Multi→ (A->T)"])
        assert len(got) == 3
        seen = client.run(lambda: __import__("biasamp_nb.distributed").distributed._seen)
        peaks.append([max(s[k] for s in seen.values()) for k in ("rows", "draws", "live")]
                     + [max(client.run(lambda dask_worker: dask_worker.most_held).values())])
        client.unregister_worker_plugin("most-held")
    for rows, draws, live, held in peaks:  # one range of RANGE_ROWS rows at most, one block of 60 draws over it, and
        assert rows == 400 and 0 < draws <= 60 * 400 and live == 1, peaks  # one range at a time (a thread a worker)
        assert held <= 4, peaks  # at most `window` results (two per thread) wait on a worker, whatever the ranges


def test_the_progress_bar_names_each_pass(client, tmp_path, capsys):
    from biasamp_nb.distributed import dask_evaluate
    T, A, P, AP = _tables(1200, seed=9)
    dask_evaluate(_write(tmp_path, "t", A, T), ["woman", "man"], pred=_write(tmp_path, "p", AP, P), client=client,
                  n_boot=20, n_null=19, metrics=["BA_MALS", "Multi→ (A->T)"], progress=True, n_rows=1200)
    err = capsys.readouterr().err
    for what in ("BA_MALS: counts of 1000 blocks of rows", "BA_MALS: swap draws 1–19",
                 "Multi→ (A->T): combinations of 2 tasks", "Multi→ (A->T): bootstrap draws 1–20"):
        assert what in err, (what, err[-1500:])


def test_a_predictions_only_report_counts_its_associations_on_the_cluster(client, tmp_path):
    import json
    from biasamp_nb.cli import main
    from biasamp_nb.report import association_section
    T, A, P, AP = _tables(1500, seed=10, k=8)
    pred = _write(tmp_path, "pred", AP, P, shuffled=True)
    args = ["report", "--scheduler", client.scheduler.address, "--groups", "woman", "man", "--pred", pred]
    assert main(args + ["--out", str(tmp_path / "r")]) == 0
    summ = pd.read_csv(tmp_path / "r" / "summary.csv")
    rows, tables, _ = association_section(AP.iloc[:-1], P.iloc[:-1], tmp_path / "mem.png")  # the last row names no label
    assert len(summ) == len(rows) == 2 and (tmp_path / "r" / "pred_associations.png").exists()
    for r, (_, s) in zip(rows, summ.iterrows()):
        assert (s.metric, s.label) == (r["metric"], r["label"]) and s.value == pytest.approx(r["value"], abs=1e-12)
    md = (tmp_path / "r" / "report.md").read_text()
    assert tables[0][0] == "woman vs man" and tables[0][1].label.iloc[0] in md
    rec = json.loads((tmp_path / "r" / "inputs.json").read_text())["cases"]["pred"]
    assert rec["rows"] == 1499 and rec["predicted_tasks"] and rec["groups"]["woman"] == int(AP.woman.sum())


def test_leakage_and_dpa_run_on_a_random_sample_of_the_clusters_rows(client, tmp_path):
    import scipy.sparse as sp
    from biasamp_nb.report import cluster_audit, evaluate
    T, A, P, AP = _tables(1500, seed=11)
    truth, pred = _write(tmp_path, "truth", A, T, shuffled=True), _write(tmp_path, "pred", AP, P)
    fit = ["Leakage", "DPA (A->T)", "DPA (T->A)"]
    for rows in (700, 100_000):  # a sample, and every row (fewer rows than the sample)
        au = cluster_audit(truth, ["woman", "man"], pred=pred, client=client, n_rows=1500, n_boot=20, n_null=19,
                           n_trials=3, random_state=3, sample_rows=rows)
        got = au.by_title()
        ids = np.arange(1500) if rows > 1500 else np.sort(np.random.default_rng(3).choice(1500, rows, replace=False))
        sub = [sp.csr_matrix(x.iloc[ids].to_numpy()) if x.shape[1] == 5 else x.iloc[ids] for x in (T, A, P, AP)]
        mem = evaluate(*sub, n_trials=3, random_state=3, only=fit)
        for m in fit:
            assert (got[m].value, got[m].ci) == (mem[m].value, mem[m].ci), m
            assert got[m].info["attackers"] == mem[m].info["attackers"]
            assert got[m].info["sample_rows"] == min(rows, 1500) and got[m].info["rows"] == 1500
        assert list(got)[:3] == ["BA_MALS", "BA→ (A->T)", "BA→ (T->A)"] and set(fit) <= set(got)
    with pytest.raises(ValueError, match="only must name report metrics"):
        evaluate(*sub, only=["leakage"])
    au = cluster_audit(truth, ["woman", "man"], pred=pred, client=client, n_boot=20, n_null=19, sample_rows=0)
    assert not set(fit) & set(au.by_title()) and set(fit) <= set(au.skipped)
