"""Association metrics against independent scalar formulas, edge cases, and the rare-vs-common finding."""
import math
import warnings

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from hypothesis import given, settings, strategies as st
from scipy import stats

from biasamp_nb import association, association_gap
from biasamp_nb.associations import METRICS, association_from_counts, planted_associations, top_associations
from biasamp_nb.core import to_labels


def scalar(metric, n, cx, cy, cxy):
    "Each metric straight from its definition on one 2×2 table, with the documented edge-case values."
    px, py, pxy = cx / n, cy / n, cxy / n
    if metric == "dp": return pxy / px if px > 0 else 0.0
    if metric in ("pmi", "pmi2", "llr", "npmi_y") and pxy == 0: return -math.inf
    if metric == "pmi": return math.log(pxy / (px * py))
    if metric == "pmi2": return math.log(pxy ** 2 / (px * py))
    if metric == "llr": return math.log(pxy / px)
    if metric == "npmi_y": return 0.0 if py == 1 else math.log(pxy / (px * py)) / -math.log(py)
    if metric == "npmi_xy":
        if pxy == 0: return -1.0
        if pxy == 1: return 1.0
        return math.log(pxy / (px * py)) / -math.log(pxy)
    if metric == "sdc": return 2 * pxy / (px + py) if px + py > 0 else 0.0
    if metric == "jaccard": return pxy / (px + py - pxy) if px + py - pxy > 0 else 0.0
    if metric == "t_test": return (pxy - px * py) / math.sqrt(px * py) if px * py > 0 else 0.0
    if metric == "kendall_tau_b":
        x = np.r_[np.ones(cxy), np.ones(cx - cxy), np.zeros(cy - cxy), np.zeros(n - cx - cy + cxy)]
        y = np.r_[np.ones(cxy), np.zeros(cx - cxy), np.ones(cy - cxy), np.zeros(n - cx - cy + cxy)]
        if x.min() == x.max() or y.min() == y.max(): return 0.0
        return stats.kendalltau(x, y, variant="b").statistic   # an independent implementation
    raise KeyError(metric)


@st.composite
def tables(draw):
    "A 2×2 table (n, c(x), c(y), c(x,y)), edge cases included."
    n = draw(st.integers(1, 60))
    cx, cy = draw(st.integers(0, n)), draw(st.integers(0, n))
    cxy = draw(st.integers(max(0, cx + cy - n), min(cx, cy)))
    return n, cx, cy, cxy


@settings(max_examples=300, deadline=None)
@given(tables())
def test_metrics_match_scalar_formulas(t):
    n, cx, cy, cxy = t
    with warnings.catch_warnings():
        warnings.simplefilter("error")   # no warning may leak, whatever the table
        got = association_from_counts(n, cx, cy, cxy)
    for m in METRICS:
        want = scalar(m, n, cx, cy, cxy)
        assert float(got[m]) == pytest.approx(want, abs=1e-12, rel=1e-9), (m, t)


@pytest.mark.parametrize("t, name", [((10, 4, 5, 0), "p(x,y)=0"), ((10, 4, 10, 4), "p(y)=1"), ((10, 0, 5, 0), "p(x)=0"),
                                     ((10, 10, 10, 10), "p(x,y)=1")])
def test_named_edge_cases(t, name):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = association_from_counts(*t)
    for m in METRICS:
        assert float(got[m]) == pytest.approx(scalar(m, *t), abs=1e-12), (m, name)
        assert not np.isnan(got[m]), (m, name)


def test_vectorised_equals_per_label_and_sparse_equals_dense():
    rng = np.random.default_rng(0)
    X = np.eye(2, dtype=int)[rng.integers(0, 2, 500)]
    Y = (rng.random((500, 30)) < np.linspace(0.002, 0.5, 30)).astype(int)
    a = association(X, Y)
    b = association(X, sp.csr_matrix(Y))
    pd.testing.assert_frame_equal(a, b)
    for j in (0, 7, 29):
        for i, x in enumerate(("x0", "x1")):
            for m in METRICS:
                want = scalar(m, 500, X[:, i].sum(), Y[:, j].sum(), (X[:, i] & Y[:, j]).sum())
                assert a.loc[f"y{j}", (x, m)] == pytest.approx(want, abs=1e-12)


def test_gap_and_rest():
    rng = np.random.default_rng(1)
    g = rng.integers(0, 3, 400)
    X = pd.DataFrame(np.eye(3, dtype=int)[g], columns=["a", "b", "c"])
    Y = pd.DataFrame((rng.random((400, 5)) < 0.3).astype(int), columns=list("pqrst"))
    gap = association_gap(X, Y, "a", "b")
    full = association(X, Y)
    np.testing.assert_allclose(gap["npmi_xy"], full[("a", "npmi_xy")] - full[("b", "npmi_xy")])
    rest = association_gap(X, Y, "a", "rest")
    notA = pd.DataFrame({"a": X["a"], "rest": 1 - X["a"]})
    np.testing.assert_allclose(rest["dp"], association_gap(notA, Y, "a", "rest")["dp"])
    assert (association_gap(X, Y, "a", min_count=10_000)).empty


def test_planted_associations_table():
    X, Y, names, planted = planted_associations()
    gz = association_gap(X, to_labels(Y, "Y", names=names), "woman", "man", min_count=5)
    hits = {}
    for m in ("dp", "pmi", "npmi_xy", "kendall_tau_b"):
        g = gz[m].round(12).fillna(-np.inf)  # a fixed tie rule: equal gaps (to 12 decimals) ordered by label name
        top = pd.Index(sorted(g.index, key=lambda y: (-g[y], y))[:len(planted)])
        hits[m] = planted[planted.label.isin(top)].band.value_counts().reindex(["rare", "medium", "common"], fill_value=0).astype(float)
        hits[m]["median_freq"] = gz.loc[top, "c(y)"].median() / len(X)
    t = pd.DataFrame(hits).T
    assert t.loc["dp", "rare"] == 0 and t.loc["dp", "common"] == 6                 # DP favours common labels
    assert t.loc["pmi", "common"] == 0 and t.loc["pmi", "median_freq"] < 2e-4      # PMI favours rare labels
    assert t.loc["npmi_xy", "common"] == 6 and t.loc["npmi_xy", "rare"] >= 1       # nPMI reaches both ends
    assert t.loc["npmi_xy", "median_freq"] > 20 * t.loc["pmi", "median_freq"]


def test_pmi2_and_llr_gaps_are_increasing_in_pmi():
    X, Y, names, planted = planted_associations(n=50_000)
    gz = association_gap(X, to_labels(Y, "Y", names=names), "woman", "man")
    fin = np.isfinite(gz["pmi"]).to_numpy()
    assert (np.isinf(gz["llr"]).to_numpy() == ~fin).all() and (np.isinf(gz["pmi2"]).to_numpy() == ~fin).all()
    shift = np.log(X.woman.mean()) - np.log(X.man.mean())
    np.testing.assert_allclose(gz["llr"][fin], gz["pmi"][fin], rtol=0, atol=1e-9)
    np.testing.assert_allclose(gz["pmi2"][fin], 2 * gz["pmi"][fin] + shift, rtol=0, atol=1e-9)


def test_top_associations_orders_both_sides():
    X = pd.DataFrame({"w": [1, 1, 1, 0, 0, 0], "m": [0, 0, 0, 1, 1, 1]})
    Y = pd.DataFrame({"p": [1, 1, 0, 0, 0, 0], "c": [0, 0, 1, 1, 1, 0], "d": [1, 0, 0, 1, 0, 0]})
    top = top_associations(association_gap(X, Y, "w", "m"), "dp", k=1)
    assert top.label.tolist() == ["p", "c"] and top.towards.tolist() == ["w", "m"]


@pytest.mark.parametrize("call, msg", [
    (lambda X, Y: association(X, Y, metrics=["pmi", "phi"]), "unknown metric 'phi'"),
    (lambda X, Y: association(X, Y[:3]), "X has 6 rows but Y has 3"),
    (lambda X, Y: association(X, Y * 0.5), "Y has values other than 0/1"),
    (lambda X, Y: association_gap(X, Y, "w", "z"), "x2='z' is not a column of X"),
    (lambda X, Y: association(X, Y, min_count=-1), "min_count must be an integer >= 0"),
    (lambda X, Y: top_associations(association_gap(X, Y, "w", "m"), "phi"), "metric 'phi' is not in the gap table"),
])
def test_bad_input(call, msg):
    X = pd.DataFrame({"w": [1, 1, 1, 0, 0, 0], "m": [0, 0, 0, 1, 1, 1]})
    Y = np.array([[1, 0], [1, 1], [0, 0], [0, 1], [0, 1], [1, 0]])
    with pytest.raises(ValueError, match=msg.replace("(", r"\(")):
        call(X, Y)
