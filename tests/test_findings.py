"""The answer a report gives agrees with its tables: verdicts never hide a pair beyond noise, the pairs' test
holds at no amplification, the default Multi interval is calibrated, one planted label is named once, and an
`Audit` and the report it writes show one computation."""
import json
import sys

import numpy as np
import pandas as pd
import pytest

from biasamp_nb.cooccurrence import ba_directional, ba_mals
from biasamp_nb.coverage import calibration_scenarios, coverage_sample, stand_in_predictions
from biasamp_nb.findings import pair_findings, pairs_p_value
from biasamp_nb.multi import multi_directional, multi_mals
from biasamp_nb.registry import DEFAULT_N_NULL
from biasamp_nb.report import Audit, answer, drivers, evaluate, verdict, write_report
from biasamp_nb import datasets

POP, _ = calibration_scenarios()["no amplification"]  # 16 tasks, two groups of 40% and 60%


def _case(seed, n=1500, plant=(), drop=0.6):
    "A synthetic evaluation set with the stand-in model (no amplification) and planted (group, task) cuts."
    rng = np.random.default_rng(seed)
    T, A, _ = coverage_sample(POP, n, rng)
    T, A = pd.DataFrame(T, columns=POP["names"]), pd.DataFrame(A, columns=POP["groups"])
    pos = [(list(A.columns).index(a), list(T.columns).index(t)) for a, t in plant]
    P = pd.DataFrame(stand_in_predictions(T, A, 0.3, pos, drop, rng), columns=T.columns)
    return T, A, P


@pytest.mark.parametrize("seed", range(20))
def test_verdicts_never_contradict_their_pairs(seed):
    "On random cases, planted or not: each verdict's pair counts are its table's, and 'no pair' means none has q ≤ 0.05."
    rng = np.random.default_rng(100 + seed)
    plant = [(f"g{rng.integers(2)}", f"t{t}") for t in rng.choice(16, rng.integers(0, 4), replace=False)]
    T, A, P = _case(seed, n=int(rng.integers(400, 2500)), plant=plant, drop=float(rng.uniform(0.2, 0.8)))
    kw = dict(n_null=39, random_state=seed, min_count=5)
    res = {"BA_MALS": ba_mals(T, A, P, **kw), "BA→ (A->T)": ba_directional(T, A, P, direction="A->T", **kw),
           "Multi→ (A->T)": multi_directional(T, A, P, direction="A->T", max_size=2, **kw),
           "Multi_MALS": multi_mals(T, A, P, max_size=2, **kw)}
    for name, r in res.items():
        if r.trials is not None: continue
        v, f = verdict(name, r), pair_findings(r)
        q = r.per_pair["q"].to_numpy(float)
        hit = (np.nan_to_num(q, nan=1.0) <= 0.05).any()
        assert hit == (len(f) > 0) == (pairs_p_value(r) <= 0.05)  # the pairs' test rejects exactly when a pair is found
        assert ("no pair beyond noise" in v or "no single pair" in v or v.startswith("not distinguishable")) == (not hit), v
        assert (drivers(r) == "no pair beyond noise") == (not hit)
        if v.startswith("not distinguishable"): assert r.p_value > 0.05 and not hit
        own = f[f.explained_by == ""] if "explained_by" in f else f
        for d in ("amplified", "attenuated"):
            k = int((own.direction == d).sum())
            assert (f" {d}" in v.split(";")[-1]) == (k > 0), (v, d, k)
            if k: assert f"{k} " in v.split(";")[-1]
    a = answer(res)
    amplified = any(verdict(m, r).startswith("amplified") for m, r in res.items()) or any(
        (pair_findings(r).direction == "amplified").any() for r in res.values() if r.trials is None)
    assert a.startswith("Yes, beyond noise") == amplified, a


def test_the_pairs_test_finds_sparse_amplification_the_mean_misses():
    "Three planted pairs of 32: the mean's test often misses them; the pairs' test names them, and the verdict says so."
    plant = [("g1", "t8"), ("g0", "t9"), ("g0", "t13")]
    T, A, P = _case(3, n=3000, plant=plant)
    r = ba_directional(T, A, T_pred=P, direction="A->T", n_null=199, random_state=0)
    f = pair_findings(r)
    assert set(zip(f.group, f.task)) >= set(plant) and pairs_p_value(r) <= 0.001
    v = verdict("BA→ (A->T)", r)
    assert "3 pairs amplified" in v or ("pairs amplified" in v and len(f) > 3), v
    quiet = ba_directional(*_case(4, n=3000), direction="A->T", n_null=199, random_state=0)
    assert pairs_p_value(quiet) > 0.05 and verdict("BA→ (A->T)", quiet).startswith("not distinguishable")


def test_the_default_multi_interval_is_calibrated_at_no_amplification():
    "multi_directional(..., n_boot=) alone makes the swap draws and covers 0; the basic interval, asked for, does not."
    r = multi_mals(*_case(0, n=1500), max_size=2, min_count=10, n_boot=50, random_state=0)
    assert r.ci_method == "bracket" and r.info["n_null"] == DEFAULT_N_NULL and r.ci[0] == 0
    covers, basic = [], []
    for seed in range(12):
        T, A, P = _case(seed, n=1500)
        r = multi_directional(T, A, T_pred=P, direction="A->T", max_size=2, min_count=10, n_boot=100, random_state=seed)
        assert r.ci_method == "bracket" and r.info["n_null"] == DEFAULT_N_NULL and r.p_value is not None
        covers.append(r.ci[0] <= 0 <= r.ci[1])
        b = multi_directional(T, A, T_pred=P, direction="A->T", max_size=2, min_count=10, n_boot=100,
                              random_state=seed, ci_method="basic")
        assert b.info["n_null"] is None and b.p_value is None
        basic.append(b.ci[0] <= 0 <= b.ci[1])
    assert np.mean(covers) >= 0.9, covers
    assert np.mean(basic) < 0.5, basic  # what the default used to be: the test above can fail


def test_a_planted_label_is_named_once_among_multi_drivers():
    "Combinations that contain a planted label move with it; the driver list names the label, not its combinations."
    T, A, P = _case(5, n=4000, plant=[("g1", "t12")], drop=0.7)
    r = multi_directional(T, A, T_pred=P, direction="A->T", max_size=2, min_count=10, n_null=199, random_state=0)
    f = pair_findings(r)
    with_it = f[f.combination.str.contains("t12")]
    assert (with_it["size"] if "size" in with_it else with_it.combination.str.count(r"\+") + 1).max() >= 1
    assert len(with_it) > 1  # combinations with t12 are beyond noise too ...
    assert (with_it.loc[with_it.combination != "t12", "explained_by"] == "t12").mean() >= 0.8
    d = drivers(r, k=5)
    assert d.count("t12") == 1 and d.startswith("g1 · t12 "), d  # ... and named once, by the label


def test_an_audit_and_its_report_are_one_computation(tmp_path):
    "write_report renders an Audit as it is: results.json holds the audit's numbers; a case given as data agrees."
    case = datasets.compas()
    au = Audit(**case, n_boot=30, n_null=39, n_trials=2, random_state=1, name="COMPAS")
    write_report({"COMPAS": au}, tmp_path / "a")
    got = json.loads((tmp_path / "a" / "results.json").read_text())["COMPAS"]
    assert got == json.loads(json.dumps(au.to_dict()))
    write_report({"COMPAS": case}, tmp_path / "b", n_boot=30, n_null=39, n_trials=2, random_state=1)
    again = json.loads((tmp_path / "b" / "results.json").read_text())["COMPAS"]
    assert {m: (v["value"], v["ci"], v["p_value"]) for m, v in again.items()} == \
        {m: (v["value"], v["ci"], v["p_value"]) for m, v in got.items()}
    rec = json.loads((tmp_path / "a" / "inputs.json").read_text())["options"]
    assert rec == au.options  # the report says what the audit ran with, not its own defaults
    with pytest.raises(ValueError, match="audits were made with different options"):
        write_report({"a": au, "b": Audit(**case, n_boot=20, n_null=39, n_trials=2, name="b")}, tmp_path / "c")
    md = (tmp_path / "a" / "report.md").read_text()
    assert f"**COMPAS**: {answer(au.by_title())}".replace("<", "&lt;")[:60] in md.replace("\\", "")
    summ = pd.read_csv(tmp_path / "a" / "summary.csv").set_index("metric")
    for m, r in au.by_title().items():
        assert summ.loc[m, "value"] == pytest.approx(r.value, abs=1e-12)
        if r.trials is None: assert summ.loc[m, "pairs_amplified"] == (pair_findings(r).direction == "amplified").sum()


def _explained_one_by_one(pp, found, rates, z_crit):
    "`_explaining` as its definition reads (by name): each found combination's parts in turn, the first explaining it."
    from biasamp_nb.findings import _predicted, _subsets, before_after
    out = pd.Series("", index=found)
    key = {(str(g), c): i for i, g, c in zip(pp.index, pp["group"], pp["combination"])}
    singles = set(pp.loc[pp["size"] == 1, "combination"])
    _, before, after = before_after(pp)
    b0, b1 = pd.Series(before, index=pp.index), pd.Series(after, index=pp.index)
    for i in [i for i in found if pp.at[i, "size"] > 1]:
        for s in _subsets(pp.at[i, "combination"], int(pp.at[i, "size"]), singles):
            j = key.get((str(pp.at[i, "group"]), s))
            if j is None or j not in found: continue
            if abs(b1[i] - b0[i] - float(_predicted(b0[i], b0[j], b1[j], rates))) <= z_crit * pp.at[i, "se"]:
                out[i] = s; break
    return out


@pytest.mark.parametrize("arrow", [True, False])  # names split by Arrow, or name by name where pyarrow is missing
@pytest.mark.parametrize("names", [object, "str"])  # names as Python objects, or as pandas' strings (a built table's)
@pytest.mark.parametrize("direction", ["A->T", "T->A"])
def test_explained_by_equals_the_parts_taken_one_by_one(direction, names, arrow, monkeypatch):
    "The combinations' `explained_by`, found for all at once, is what taking each one's parts in turn finds."
    import itertools
    from types import SimpleNamespace
    from biasamp_nb.findings import _explaining
    rng = np.random.default_rng(5)
    labels = list("abcdef")
    combos = labels + ["+".join(c) for s in (2, 3) for c in itertools.combinations(labels, s)]
    pp = pd.DataFrame([dict(group=g, combination=c, size=c.count("+") + 1) for g in ("m", "w") for c in combos])
    pp["p_test"] = rng.uniform(0.05, 0.5, len(pp))
    pp["p_pred"] = pp.p_test * rng.choice([1.0, 0.5, 1.5], len(pp)) + rng.normal(0, 0.01, len(pp))
    pp.loc[rng.random(len(pp)) < 0.05, "p_test"] = 0.0  # a part's rate of 0: its ratio is not finite
    pp["se"], pp["y"] = rng.uniform(0.002, 0.05, len(pp)), rng.integers(0, 2, len(pp))
    pp.index = rng.permutation(len(pp)) + 100  # labels that are not positions
    if direction == "T->A": pp = pp.rename(columns={"p_test": "bias_test", "p_pred": "bias_pred"}).drop(columns="y")
    found = list(pp.index[rng.random(len(pp)) < 0.6])
    want = _explained_one_by_one(pp, found, direction == "A->T", 1.96)
    pp = pp.astype({"group": names, "combination": names})
    with monkeypatch.context() as m:
        if not arrow: m.setitem(sys.modules, "pyarrow", None)  # `import pyarrow` fails, as where it is not installed
        by = _explaining(pp, found, SimpleNamespace(info={"direction": direction}), 1.96)
    assert (want != "").sum() > 10 and (want == "").sum() > 10  # both outcomes occur
    got = [pp.at[found[j], "combination"] if j >= 0 else "" for j in by]  # each one's part, by its place among them
    assert got == want.tolist()


def _strongest_of_all(res, alpha, k):
    "The strongest findings from every metric's findings concatenated whole (the reference for `_strongest`)."
    f = [pair_findings(r, alpha).assign(metric=m) for m, r in res.items() if r.trials is None]
    f = [x.rename(columns={"combination": "task"}) for x in f if len(x)]
    if not f: return pd.DataFrame()
    f = pd.concat(f, ignore_index=True)
    f = f[f.get("explained_by", pd.Series("", index=f.index)).fillna("") == ""]
    f = f.iloc[np.lexsort((-f["z"].abs().to_numpy(float), f["low_support"].to_numpy(bool)))]
    return f.drop_duplicates(["group", "task", "direction"]).head(k)


@pytest.mark.parametrize("seed", range(4))
def test_strongest_equals_taking_every_finding(seed):
    "The case's strongest findings, read from each metric's first k, are those of all findings sorted together."
    from dataclasses import replace
    from biasamp_nb.verdicts import _strongest
    rng = np.random.default_rng(300 + seed)
    T, A, P = _case(seed, n=2000, plant=[("g0", "t1"), ("g1", "t3"), ("g0", "t5")], drop=0.7)
    kw = dict(n_null=39, random_state=seed, min_count=int(rng.integers(250, 400)))  # many low-support findings
    res = {"BA_MALS": ba_mals(T, A, P, **kw), "BA→ (A->T)": ba_directional(T, A, P, direction="A->T", **kw),
           "Multi→ (A->T)": multi_directional(T, A, P, direction="A->T", max_size=3, **kw),
           "Multi_MALS": multi_mals(T, A, P, max_size=2, **kw)}
    tied = {m: replace(r, per_pair=r.per_pair.assign(z=r.per_pair["z"].round(0))) for m, r in res.items()}  # ties
    for case in (res, tied):
        for alpha in (0.05, 0.5):
            assert len(_strongest_of_all(case, alpha, 100)) > 3  # findings from several metrics to choose among
            for k in (1, 3, 6, 100):
                pd.testing.assert_frame_equal(_strongest(case, alpha, k), _strongest_of_all(case, alpha, k))


def test_drivers_and_figure_rows_past_the_first_kept_rows():
    "Where the first 64 pairs by evidence hold too few that qualify, drivers and the figure read the whole table."
    from biasamp_nb.core import Result
    from biasamp_nb.report_pages import _panel_pairs
    from biasamp_nb.verdicts import number_text
    n = 100
    task, grp = [f"t{i}" for i in range(n)], ["w" if i % 2 else "m" for i in range(n)]
    one, z = np.zeros(n), np.arange(n, 0, -1.0)  # z orders the pairs by evidence, t0 first
    one[70] = 0.3  # the one pair with a contribution comes 71st: drivers names it alone
    r = Result("BA→", 0.1, pd.DataFrame(dict(group=grp, task=task, delta=one, contribution=one, z=z,
                                             low_support=False)))
    assert drivers(r, k=3) == f"m · t70 ({number_text(0.3, sign=True)})"
    # the 80 pairs with most evidence have no Δ: the figure's 12 are t80 … t91, with their Δ
    delta = np.r_[np.full(80, np.nan), np.arange(20) / 100]
    r = Result("BA_MALS", 0.1, pd.DataFrame(dict(group=grp, task=task, delta=delta, z=z, low_support=False)))
    got = _panel_pairs(r, 12)
    assert got["task"].tolist() == [f"t{i}" for i in range(80, 92)]
    assert got["contribution"].tolist() == list(np.arange(12) / 100)


def _first_of_all(f, k):
    "The first k findings no smaller combination explains, supported ones first, read from the whole list `f`."
    own = np.flatnonzero((f["explained_by"] == "").to_numpy(bool) if "explained_by" in f else np.ones(len(f), bool))
    at = own[np.argsort(f["low_support"].to_numpy(bool)[own], kind="stable")[:k]]
    return f.iloc[at].assign(place=at)


def test_the_findings_kept_with_a_table_are_its_whole_list_read_small():
    "Counts, rows and first findings kept with a let-go table answer as its whole list does, in a fifth of its bytes."
    from biasamp_nb.findings import finding_counts, finding_rows, first_findings
    from biasamp_nb.report_pages import read_for_pages
    from biasamp_nb.results import read_and_release
    from biasamp_nb.verdicts import _pair_counts
    T, A, P = _case(7, n=4000, plant=[("g0", "t1"), ("g1", "t3"), ("g0", "t5"), ("g1", "t7"), ("g0", "t9")], drop=0.7)
    kw = dict(n_null=39, random_state=7, min_count=60)  # many findings, some on few rows
    res = {"BA→ (A->T)": ba_directional(T, A, P, direction="A->T", **kw),
           "Multi→ (A->T)": multi_directional(T, A, P, direction="A->T", max_size=3, **kw),
           "Multi_MALS": multi_mals(T, A, P, max_size=3, **kw)}
    explained, most, low = 0, 0, False  # some findings explained by a smaller combination, past 64 own, on few rows
    for m, r in res.items():
        read_and_release(r, lambda r: read_for_pages(r, (0.05, 0.5)))
        lazy = callable(r.__dict__.get("_per_pair"))  # a Multi table, let go after the pages' reading
        for alpha in (0.05, 0.5):  # read from the kept record first: the table is not built again for these
            got = (finding_counts(r, alpha), finding_counts(r, alpha, own=True), first_findings(r, alpha, 6),
                   drivers(r, alpha=alpha), _pair_counts(r, alpha))
            assert not lazy or callable(r.__dict__["_per_pair"]), m
            f, index = read_and_release(r, lambda r: (pair_findings(r, alpha), r.per_pair.index))  # the whole list
            own = f[f["explained_by"] == ""] if "explained_by" in f else f
            assert got[0] == {d: int((f.direction == d).sum()) for d in ("amplified", "attenuated", "changed")}
            assert got[1] == {d: int((own.direction == d).sum()) for d in ("amplified", "attenuated", "changed")}
            assert (got[4]["pairs_amplified"], got[4]["pairs_attenuated"]) == (got[0]["amplified"],
                                                                               got[0]["attenuated"])
            explained += len(f) - len(own)
            assert list(index[finding_rows(r, alpha)]) == list(f.index)
            for k in (0, 1, 6, 64, 65, 10_000):  # within the kept first 64 and past them
                pd.testing.assert_frame_equal(read_and_release(r, lambda r: first_findings(r, alpha, k)),
                                              _first_of_all(f, k))
            pd.testing.assert_frame_equal(got[2], _first_of_all(f, 6))
            most = max(most, len(own)); low |= bool(own.low_support.any())
        kept = r.__dict__["_table_memo"][("found", 0.05)][1]
        small = sum(a.nbytes for a in (kept.rows, kept.direction, kept.by) if a is not None)
        assert small <= 9 * len(kept.rows) < pair_findings(r).memory_usage(deep=True).sum() / 5, m
    assert explained > 20 and most > 70 and low, (explained, most, low)
