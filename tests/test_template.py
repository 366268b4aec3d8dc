"""A new metric added the way the guide's "Adding a metric" section says: one `<metric>_counts` function, one public
function that follows the template, and one registration (`register_metric`) — and nothing else. Everything the
package offers for count metrics must then work for it: bootstrap intervals, the report and the command line,
streaming counts, the torchmetrics metric and the coverage study."""
import numpy as np
import pandas as pd
import pytest

from biasamp_nb.intervals import bootstrap_weights
from biasamp_nb.core import Counts, Result, check_inputs, pair_table, check_train_counts, train_counts
from biasamp_nb.registry import METRICS, ci_options, metric_result, metric_spec, register_metric
from biasamp_nb.core import to_labels
from biasamp_nb.cooccurrence import conditional_rates, correlation_indicator
from biasamp_nb.multi import multi_directional_counts, multi_mals_counts
from biasamp_nb.streaming import StreamingCounts


@pytest.fixture
def bias_shift():
    "The difference of two bias scores, c(t̂,a)/Σc(t̂,·) − c(t,a)/Σc(t,·), averaged over the pairs."
    def bias_shift_counts(counts: Counts, *, train: Counts = None) -> Result:
        tr = check_train_counts(counts, train)
        with np.errstate(invalid="ignore", divide="ignore"):
            delta = (counts.at_pred / counts.at_pred.sum(axis=-2, keepdims=True)
                     - tr.at / tr.at.sum(axis=-2, keepdims=True))
        value = np.nanmean(delta, axis=(-2, -1))
        if counts.batched: return value
        return Result("bias shift", float(value), pair_table(counts.a_names, counts.t_names, delta=delta))

    @register_metric(family="test", from_counts=bias_shift_counts, label="bias shift",
                     questions={None: "Do predictions move each group's share of a task?"})
    def bias_shift(T, A, T_pred, *, T_train=None, A_train=None, n_boot=None, random_state=None, ci_method=None):
        ci = ci_options(n_boot, 0.95, random_state, ci_method)
        d = check_inputs(T, A, T_pred, T_train=T_train, A_train=A_train)
        count = lambda W: Counts.from_labels(d["T"], d["A"], d["T_pred"], weights=W)
        return metric_result(count, d["T"].n, train=train_counts(d), **ci)

    yield bias_shift
    del METRICS["bias_shift"]


def data(n=60, seed=0):
    rng = np.random.default_rng(seed)
    A = pd.Series(rng.choice(["m", "w"], n))
    T = pd.DataFrame((rng.random((n, 3)) < 0.5).astype(int), columns=["cook", "ski", "read"])
    P = T.where(rng.random(T.shape) < 0.8, 1 - T)
    return T, A, P


def by_hand(T, A, P):
    "The bias scores from pandas group-bys, and the mean of their differences."
    bt = T.groupby(A.to_numpy()).sum(); bp = P.groupby(A.to_numpy()).sum()
    return float(((bp / bp.sum()) - (bt / bt.sum())).to_numpy().mean())


def test_new_metric_value_and_table(bias_shift):
    T, A, P = data()
    r = bias_shift(T, A, P)
    assert r.value == pytest.approx(by_hand(T, A, P), abs=1e-12)
    assert len(r.per_pair) == 6 and r.per_pair.delta.abs().is_monotonic_decreasing
    Ttr, Atr, _ = data(80, seed=1)
    r2 = bias_shift(T, A, P, T_train=Ttr, A_train=Atr)   # the training split as the reference
    bt = Ttr.groupby(Atr.to_numpy()).sum(); bp = P.groupby(A.to_numpy()).sum()
    assert r2.value == pytest.approx(float(((bp / bp.sum()) - (bt / bt.sum())).to_numpy().mean()), abs=1e-12)


def test_new_metric_bootstrap_is_resampling_rows(bias_shift):
    "The template's bootstrap equals recomputing the metric on rows drawn with the same weights."
    T, A, P = data()
    r = bias_shift(T, A, P, n_boot=30, random_state=5)
    W = np.vstack(list(bootstrap_weights(len(T), 30, random_state=5)))
    bt = T.groupby(A.to_numpy()).sum(); ref = bt / bt.sum()   # the reference stays that of the data
    naive = []
    for w in W:
        rows = np.repeat(np.arange(len(T)), w.astype(int))
        bp = P.iloc[rows].groupby(A.iloc[rows].to_numpy()).sum()
        naive.append(float(np.nanmean(((bp / bp.sum()) - ref).to_numpy())))
    np.testing.assert_allclose(r.boot, naive, atol=1e-12)
    assert r.ci_method == "percentile" and r.ci[0] <= r.ci[1]


def test_new_metric_streams_and_is_listed(bias_shift):
    T, A, P = data(200)
    sc = StreamingCounts()
    for b in np.array_split(np.arange(200), 7): sc.update(T.iloc[b], A.iloc[b], T_pred=P.iloc[b])
    assert sc.compute("bias_shift").value == bias_shift(T, A, P).value
    assert metric_spec("bias shift") is METRICS["bias_shift"]
    with pytest.raises(ValueError, match="metric must be one of"): sc.compute("bias_shfit")


def test_every_counts_form_equals_its_public_function():
    "The `_counts` forms that BA_MALS and the Multi metrics gained give the public functions' values from counts."
    from biasamp_nb import ba_mals, multi_directional, multi_mals, set_indicator, task_combinations
    T, A, P = data(300, seed=3)
    Ap = pd.get_dummies(A).astype(int).iloc[::-1].set_axis(A.index)   # a group prediction that is often wrong
    sc = StreamingCounts()
    for b in np.array_split(np.arange(300), 4): sc.update(T.iloc[b], A.iloc[b], P.iloc[b], Ap.iloc[b])
    assert sc.compute("ba_mals").value == ba_mals(T, A, P, Ap).value
    Tl = to_labels(T, "T")
    M = [tuple(Tl.names.index(x) for x in c.split("+")) for c in task_combinations(T, max_size=2).combination]
    S, SP = set_indicator(Tl, M), set_indicator(to_labels(P, "T_pred"), M)
    c = Counts.from_labels(S, to_labels(A, "A"), SP)
    sizes = [len(m) for m in M]
    r = multi_mals_counts(c, sizes=sizes)
    assert r.value == multi_mals(T, A, P, max_size=2).value
    assert r.per_pair["size"].max() == 2
    assert multi_directional_counts(c, direction="A->T").value == multi_directional(T, A, P, direction="A->T",
                                                                                    max_size=2).value


@pytest.mark.parametrize("call, msg", [
    (lambda c: correlation_indicator(c, "sgn"), "indicator must be"),
    (lambda c: correlation_indicator(c, y_rows="labelled"),
     "needs counts made with n_any=True"),
    (lambda c: conditional_rates(c, "A>T"), "direction must be"),
    (lambda c: conditional_rates(c, "T->A"), "needs counts with apred_t"),
    (lambda c: multi_mals_counts(c, sizes=[1]), "sizes has 1 entries for 3"),
    (lambda c: pair_table(c.a_names, c.t_names, p=c.at), "needs a `delta` column"),
    (lambda c: pair_table(c.a_names, c.t_names, delta=c.at.T), "column 'delta' has shape"),
    (lambda c: register_metric(family="x", name="not a name")(len), "name must be the metric's function name"),
    (lambda c: register_metric(family="x", sign=False), "register_metric got \\['sign'\\]; the facts are"),
    (lambda c: metric_result(None, 3, metric="bias_shfit"), "metric must be one of"),
    (lambda c: ci_options(10), "outside a registered metric's call"),
])
def test_template_pieces_refuse_bad_input(call, msg):
    T, A, P = data()
    c = Counts.from_labels(to_labels(T, "T"), to_labels(A, "A"), to_labels(P, "T_pred"))
    with pytest.raises(ValueError, match=msg.replace("(", r"\(").replace(")", r"\)")): call(c)


def test_new_metric_is_in_the_report_and_the_command_line(bias_shift, tmp_path):
    "The report runs every registered metric: the new one appears with its question and verdict, from the API and the CLI."
    from biasamp_nb.report import evaluate, skipped_metrics, question, verdict, write_report
    from biasamp_nb.cli import main
    T, A, P = data(200)
    res = evaluate(T, A, P, n_boot=50, n_trials=2, min_count=1)
    assert res["bias shift"].value == bias_shift(T, A, P).value
    assert question("bias shift") == "Do predictions move each group's share of a task?"
    assert verdict("bias shift", res["bias shift"]) in ("amplified", "reduced", "not distinguishable from 0")
    assert "bias shift" in skipped_metrics(dict(T=T, A=A))
    pd.concat([T, A.rename("gender")], axis=1).to_csv(tmp_path / "eval.csv", index_label="id")
    pd.concat([P, A.rename("gender")], axis=1).to_csv(tmp_path / "pred.csv", index_label="id")
    out = tmp_path / "rep"
    assert main(["report", "--eval", str(tmp_path / "eval.csv"), "--pred", str(tmp_path / "pred.csv"), "--groups",
                 "gender", "--id", "id", "--n-boot", "20", "--trials", "2", "--out", str(out)]) == 0
    summary = pd.read_csv(out / "summary.csv")
    row = summary.loc[summary.metric == "bias shift"].iloc[0]
    assert row.value == pytest.approx(bias_shift(T, A, P).value, abs=1e-12)
    assert "Do predictions move each group's share of a task?" in (out / "report.md").read_text()


def test_new_metric_is_tracked_by_the_torchmetrics_metric(bias_shift):
    pytest.importorskip("torchmetrics")
    import torch
    from biasamp_nb.tracking import AmplificationMetric
    T, A, P = data(120)
    Ad = pd.get_dummies(A).astype(int)
    m = AmplificationMetric("bias_shift", groups=list(Ad.columns), tasks=list(T.columns))
    for b in np.array_split(np.arange(120), 5):
        m.update(torch.tensor(T.iloc[b].to_numpy()), torch.tensor(Ad.iloc[b].to_numpy()),
                 T_pred=torch.tensor(P.iloc[b].to_numpy()))
    assert float(m.compute()) == pytest.approx(bias_shift(T, A, P).value, abs=1e-12)
    with pytest.raises(ValueError, match="bias_shift takes no direction"):
        AmplificationMetric("bias_shift", groups=2, tasks=3, direction="A->T")


def test_new_metric_is_in_the_coverage_study(bias_shift):
    "The study runs it and knows its population value: the metric on the population's expected counts."
    from biasamp_nb.coverage import coverage_population, coverage_study, coverage_truth, population_counts
    pop = coverage_population(n_train=2000)
    with pytest.raises(ValueError, match="n must be a positive number of rows"): population_counts(pop, n=0)
    with pytest.raises(ValueError, match="pop must be the population"): population_counts({"pi": 1})
    p, q, pi = pop["p"], pop["q"], pop["pi"]
    Ttr, Atr = pop["T_train"].astype(float), pop["A_train"].astype(float)
    bt = Atr.T @ Ttr
    by_hand = np.mean(pi[:, None] * q / (pi[:, None] * q).sum(0) - bt / bt.sum(0))
    assert coverage_truth(pop)["bias_shift"] == pytest.approx(by_hand, abs=1e-12)
    table = coverage_study(n_sets=3, n=200, n_boot=20)
    assert set(table.loc[table.metric == "bias_shift", "method"]) == {"percentile", "basic", "shifted", "bca"}


def test_options_are_checked_once(monkeypatch):
    """ba_directional(..., n_boot=...) checks its direction, its indicator options and its bootstrap options once each:
    not again in the counts function, in the bootstrap, or for every chunk of resamples."""
    import biasamp_nb.cooccurrence as co
    import biasamp_nb.intervals as iv
    import biasamp_nb.registry as rg
    from biasamp_nb import ba_directional
    calls = []
    def spy(mod, name):
        real = getattr(mod, name)
        def f(x, arg=None, *a, **k):
            calls.append(arg or "random_state")
            return real(x, arg, *a, **k) if arg is not None else real(x, *a, **k)
        monkeypatch.setattr(mod, name, f)
    for mod in (co, iv, rg):
        for name in ("check_choice", "check_int", "check_level", "check_random_state"):
            if hasattr(mod, name): spy(mod, name)
    T, A, P = data(300)
    r = ba_directional(T, A, P, direction="A->T", n_boot=200, random_state=0)
    assert r.ci is not None
    for arg in ("direction", "indicator", "y_rows", "n_boot", "ci_level", "random_state", "ci_method"):
        assert calls.count(arg) == 1, (arg, calls)


def test_every_metric_is_registered_however_the_package_is_imported():
    "A lookup by name sees every family, whichever module was imported first; FAMILIES lists every registering module."
    import re, subprocess, sys
    from pathlib import Path
    code = ("import biasamp_nb.cooccurrence\nfrom biasamp_nb.registry import metric_spec\n"
            "print(metric_spec('lic').family, metric_spec('DBAC (T->A)').family, metric_spec('mask_score').family)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["caption_leakage", "caption_amplification", "attention"]
    from biasamp_nb.metrics import FAMILIES
    pkg = Path(__file__).parents[1] / "biasamp_nb"
    registering = {p.stem for p in pkg.glob("*.py") if re.search(r"^@register_metric\(", p.read_text(), re.M)}
    assert registering == {m.__name__.rsplit(".", 1)[-1] for m in FAMILIES}


def test_new_metric_is_in_the_cross_cutting_batteries(bias_shift):
    "The trust battery (inputs unchanged, input kinds agree) reads the registry: the new metric is in it, unedited."
    from test_trust import registered_calls
    T, A, P = data()
    calls = dict(registered_calls(T, A, P, A))
    assert "bias shift" in calls
    assert calls["bias shift"]()[0] == pytest.approx(by_hand(T, A, P), abs=1e-12)


def test_the_public_face_holds_every_registered_metric():
    "`import biasamp_nb` offers each registered metric, from the module that registers it."
    import biasamp_nb as B
    from biasamp_nb.registry import load_every_family
    load_every_family()
    got = {name: B._WHERE.get(name) for name in METRICS}
    assert got == {name: s.family for name, s in METRICS.items()}
    assert all(getattr(B, name) is s.fn for name, s in METRICS.items())
