"""Predictability metrics: bounds, zero for perfect predictions, sign for a group-copying model, equalization, bad input."""
import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings, strategies as st

from biasamp_nb import dpa, leakage_amplification
from biasamp_nb.datasets import compas
from biasamp_nb.attackers import PerLabel, TorchMLP, mlp_attacker
from biasamp_nb.predictive import simulate_cells
from biasamp_nb.trials import predictability
from biasamp_nb.quality import accuracy, equalize_quality, macro_f1


def data(n=1500, k=1, seed=0, strength=0.2):
    rng = np.random.default_rng(seed)
    A = np.eye(2, dtype=int)[rng.integers(0, 2, n)]
    p = np.where(A[:, [1]] == 1, 0.5 + strength, 0.5 - strength)
    T = (rng.random((n, k)) < p).astype(int)
    return T, A, rng


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 10_000), st.sampled_from(["A->T", "T->A"]), st.floats(0.0, 0.3))
def test_dpa_is_bounded(seed, direction, noise):
    T, A, rng = data(400, seed=seed)
    Tp = T ^ (rng.random(T.shape) < noise)
    Ap = np.where(rng.random((len(A), 1)) < noise, A[:, ::-1], A)
    r = dpa(T, A, Tp, Ap, direction=direction, n_trials=3, random_state=seed)
    assert (r.trials.dpa > -1).all() and (r.trials.dpa < 1).all()


@pytest.mark.parametrize("direction", ["A->T", "T->A"])
def test_identical_predictions_give_zero(direction):
    T, A, _ = data()
    r = dpa(T, A, T, A, direction=direction, n_trials=5, random_state=0)
    assert abs(r.value) <= max(2 * r.info["std"], 1e-12)
    l = leakage_amplification(T, A, T, n_trials=5, random_state=0)
    assert abs(l.value) <= max(2 * l.info["std"], 1e-12)


def test_group_copying_model_gives_positive_a_to_t_dpa():
    T, A, _ = data(strength=0.1)
    r = dpa(T, A, T_pred=A[:, [1]], direction="A->T", n_trials=5, random_state=0)
    assert r.value > 0.2 and r.ci[0] > 0
    # and the same model increases leakage of the group from the task
    l = leakage_amplification(T, A, A[:, [1]], n_trials=5, random_state=0)
    assert l.value > 0.2


def test_dpa_per_trial_values_are_consistent():
    ex = compas(pairing="agree")
    r = dpa(ex["T"], ex["A"], A_pred=ex["A_pred"], direction="T->A", n_trials=4, random_state=3)
    tri = r.trials
    np.testing.assert_allclose(tri.dpa, (tri.psi_M - tri.psi_D) / (tri.psi_M + tri.psi_D))
    assert r.value == pytest.approx(tri.dpa.mean())
    assert r.ci[0] < r.value < r.ci[1]
    # T->A on COMPAS: the attacker sees one binary input, so Ψ_M is the majority share of Â in each T stratum
    # of the held-out rows; over the full table that is (1575 + 1532) / 5278
    assert tri.psi_M.mean() == pytest.approx((1575 + 1532) / 5278, abs=0.02)


@pytest.mark.parametrize("balanced, direction, low, high", [
    (False, "T->A", 0.03, 0.2),   # published 0.063; a peer reports 0.110 ± 0.010 with random pairing
    (True, "T->A", 0.02, 0.15),   # published 0.061
    (True, "A->T", 0.04, 0.2),    # published 0.100
])
def test_compas_dpa_sign_and_size(balanced, direction, low, high):
    ex = compas(balanced, pairing="random")
    r = dpa(ex["T"], ex["A"], ex["T_pred"], ex["A_pred"], direction=direction, n_trials=10, random_state=0)
    assert low < r.value < high


def test_equalization_hits_target_accuracy_and_f1():
    rng = np.random.default_rng(5)
    for acc in (0.95, 0.8, 0.6):
        y = (rng.random((3000, 1)) < 0.3).astype(int)
        yp = np.where(rng.random((3000, 1)) < acc, y, 1 - y)
        assert accuracy(equalize_quality(y, yp, random_state=1), y) == pytest.approx(accuracy(yp, y), abs=0.01)
    # three classes, one-hot
    c = rng.integers(0, 3, 3000); Y = np.eye(3, dtype=int)[c]
    Yp = np.eye(3, dtype=int)[np.where(rng.random(3000) < 0.7, c, rng.integers(0, 3, 3000))]
    Ys = equalize_quality(Y, Yp, random_state=2)
    assert (Ys.sum(1) == 1).all() and accuracy(Ys.argmax(1), c) == pytest.approx(accuracy(Yp.argmax(1), c), abs=0.01)
    # several labels: macro-F1
    for flip in (0.05, 0.2):
        Y = (rng.random((3000, 8)) < 0.25).astype(int); Yp = Y ^ (rng.random(Y.shape) < flip)
        assert macro_f1(Y, equalize_quality(Y, Yp, random_state=3)) == pytest.approx(macro_f1(Y, Yp), abs=0.01)


def test_fresh_perturbation_each_trial():
    y = np.r_[np.ones(100), np.zeros(100)].astype(int)[:, None]; yp = y.copy(); yp[:30] = 0
    a, b = equalize_quality(y, yp, random_state=1), equalize_quality(y, yp, random_state=2)
    assert (a != b).any() and (a != y).sum() == (b != y).sum() == 30


def test_multilabel_targets_and_attackers():
    T, A, rng = data(800, k=5)
    Tp = T ^ (rng.random(T.shape) < 0.1)
    r1 = dpa(T, A, Tp, direction="A->T", quality="macro_f1", n_trials=2, random_state=0)
    r2 = dpa(T, A, Tp, direction="A->T", attacker=PerLabel(mlp_attacker((4,))), n_trials=2, random_state=0)
    r3 = dpa(T, A, Tp, direction="A->T", attacker=TorchMLP(hidden=(8,), epochs=50), n_trials=2, random_state=0)
    for r in (r1, r2, r3): assert -1 < r.value < 1 and len(r.trials) == 2


def test_continuous_tasks_with_inverse_rmse():
    rng = np.random.default_rng(0)
    A = np.eye(2, dtype=int)[rng.integers(0, 2, 600)]
    T = A[:, 1] * 2.0 + rng.normal(size=600); Tp = A[:, 1] * 2.0 + 0.3 * rng.normal(size=600)
    r = dpa(T, A, Tp, direction="A->T", quality="inv_rmse", n_trials=3, random_state=0)
    assert r.value > 0.2  # the predictions follow the group more tightly than the truth


@pytest.mark.parametrize("call, msg", [
    (lambda T, A: dpa(T.astype(float) * 0.5 + 0.25, A, T, direction="A->T"), "values other than 0/1"),
    (lambda T, A: predictability(A, T * 0.7 + 0.1, A, T, quality="accuracy"), "needs 0/1 label targets"),
    (lambda T, A: dpa(T, A, T, direction="A->T", quality=lambda t, p: -1.0, n_trials=2), "a quality must be >= 0"),
    (lambda T, A: dpa(T[:4], A[:4], T[:4], direction="A->T", n_trials=2), "each side needs at least 10 rows"),
    (lambda T, A: dpa(T, A, T, direction="sideways"), "direction must be"),
    (lambda T, A: dpa(T, A, direction="A->T"), "pass T_pred"),
    (lambda T, A: dpa(T, A, T, direction="A->T", n_trials=0), "n_trials must be an integer >= 2"),
    (lambda T, A: dpa(T, A, A_pred=np.c_[A[:, 0], A[:, 0]], direction="T->A", n_trials=2), "exactly one label per row"),
])
def test_bad_input(call, msg):
    T, A, _ = data(200)
    with pytest.raises(ValueError, match=msg):
        call(T, A)


def test_simulation_cells():
    s = simulate_cells(0.2, -0.1, n=1000)
    T, A, Ap = s["T"].argmax(1), s["A"].argmax(1), s["A_pred"].argmax(1)
    assert pd.crosstab(A, T).values.tolist() == [[450, 250], [250, 50]]
    # model cells (0.15, 0.25, 0.25, 0.35): predicted groups follow P(Â=1 | T) = 0.25/0.40 (T=0), 0.35/0.60 (T=1)
    assert Ap[T == 0].mean() == pytest.approx(0.25 / 0.40, abs=2e-3)
    assert Ap[T == 1].mean() == pytest.approx(0.35 / 0.60, abs=4e-3)
    # and agree with the true groups as far as those counts allow
    for t in (0, 1):
        k1, a1 = Ap[T == t].sum(), A[T == t].sum()
        assert ((Ap == 1) & (A == 1) & (T == t)).sum() == min(k1, a1)


class _SklearnLR:
    "scikit-learn's logistic regression fitted by scikit-learn on every row (not the table solver), to tight tolerance."
    def __init__(self): from sklearn.linear_model import LogisticRegression; self.m = LogisticRegression(solver="newton-cholesky", tol=1e-12, max_iter=1000)
    def get_params(self, deep=False): return {}
    def fit(self, X, y): self.m.fit(X, y); return self
    def predict(self, X): return self.m.predict(X)
    def decision_function(self, X): return self.m.decision_function(X)


@pytest.mark.parametrize("seed, d, k, C", [(0, 2, 6, 1.0), (1, 3, 1, 0.01), (2, 5, 4, 10.0)])
def test_table_logistic_is_the_optimum_scikit_learn_converges_to(seed, d, k, C):
    "The input × label table solver gives the coefficients of scikit-learn's fit on every row, to 1e-7 in the margin."
    from sklearn.linear_model import LogisticRegression
    from biasamp_nb.fitting import distinct_rows, logistic_on_table
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 2, (3000, d)); X[:, 0] = 1 - X[:, 1] if d > 1 else X[:, 0]
    Y = (rng.random((3000, k)) < 0.2 + 0.5 * X[:, [1 % d]] * rng.random(k)).astype(int)
    ux, inv = distinct_rows(X)
    pos = np.stack([np.bincount(inv, weights=Y[:, j], minlength=len(ux)) for j in range(k)], 1)
    th = logistic_on_table(ux, pos, np.bincount(inv, minlength=len(ux)), C)
    for j in range(k):
        m = LogisticRegression(C=C, solver="newton-cholesky", tol=1e-12, max_iter=1000).fit(X, Y[:, j])
        np.testing.assert_allclose(np.c_[ux, np.ones(len(ux))] @ th[j], m.decision_function(ux), atol=1e-7)


def test_default_attacker_equals_row_by_row_fit():
    "DPA with the default attacker (the table solver) equals DPA with scikit-learn fitting every row to tight tolerance."
    T, A, rng = data(2000, k=5, seed=3)
    Tp = T ^ (rng.random(T.shape) < 0.1); Ap = A.copy(); Ap[:100] = Ap[:100, ::-1]
    for direction in ("A->T", "T->A"):
        a = dpa(T, A, Tp, Ap, direction=direction, n_trials=3, random_state=1)
        b = dpa(T, A, Tp, Ap, direction=direction, n_trials=3, random_state=1, attacker=_SklearnLR())
        pd.testing.assert_frame_equal(a.trials, b.trials)


def test_flip_scores_equal_macro_f1_at_every_midpoint():
    """The counted bisection scores equal macro-F1 of the flipped matrix; equalization equals the direct bisection where
    it draws every cell, and reaches the target where it draws only the cells below its cap."""
    from biasamp_nb.quality import flip_scores
    rng = np.random.default_rng(4)
    t = (rng.random((4000, 7)) < 0.15).astype(np.int8); U = rng.random(t.shape)
    sc = flip_scores(t, U, 1e-4)
    for m in list(rng.integers(0, 1 << 14, 40)) + [0, 1, 1 << 13, (1 << 14) - 1]:
        assert sc(m / (1 << 14)) == macro_f1(t, t ^ (U < m / (1 << 14)))
    tp = t ^ (rng.random(t.shape) < 0.3)  # far from the truth: every cell's U is drawn, as the direct bisection draws
    def direct(seed):  # the bisection on the flipped matrices themselves
        U = np.random.default_rng(seed).random(t.shape); lo, hi = 0.0, 1.0
        while hi - lo > 1e-4:
            mid = (lo + hi) / 2
            if macro_f1(t, t ^ (U < mid)) > macro_f1(t, tp): lo = mid
            else: hi = mid
        return t ^ (U < (lo + hi) / 2)
    for seed in range(3): np.testing.assert_array_equal(equalize_quality(t, tp, random_state=seed), direct(seed))
    near = t ^ (rng.random(t.shape) < 0.02)  # close to the truth: only the cells below the cap are drawn
    for seed in range(3):
        e = equalize_quality(t, near, random_state=seed)
        assert abs(macro_f1(t, e) - macro_f1(t, near)) < 0.01 and 0.005 < (e != t).mean() < 0.04


def test_row_keys_keep_numpy_unique_order():
    "Distinct rows by codes and the canonical order by 8-byte words give exactly what np.unique and a byte-wise lexsort give."
    from biasamp_nb.fitting import distinct_rows
    from biasamp_nb.row_order import canonical_order
    rng = np.random.default_rng(6)
    for p in (1, 3, 9, 16, 20):
        X = (rng.random((500, p)) < 0.3).astype(np.int8)
        ux, inv = distinct_rows(X)
        u, i = np.unique(X, axis=0, return_inverse=True)
        np.testing.assert_array_equal(ux, u); np.testing.assert_array_equal(inv, i.ravel())
    T, A, F = (rng.random((400, 70)) < 0.05).astype(int), np.eye(2, dtype=int)[rng.integers(0, 2, 400)], rng.random((400, 2))
    T[:50] = T[50:100]  # ties: identical rows keep their order
    bytes_ = [np.packbits(x.astype(bool), axis=1).astype(float) for x in (T, A)] + [F]
    np.testing.assert_array_equal(canonical_order(T, A, F), np.lexsort(np.hstack(bytes_).T[::-1]))


def test_compas_from_the_raw_file_gives_table_2_truth():
    "ProPublica's filter with `is_recid` rebuilds Tokas et al.'s Table 2 ground-truth cells exactly; the balanced draw has 874 per cell."
    from biasamp_nb.datasets import compas_raw, compas_rows, data_dir
    if data_dir() is None or not (data_dir() / "compas" / "compas-scores-two-years.csv").is_file():
        pytest.skip("ProPublica's COMPAS file is not present")
    raw = compas_raw()
    assert len(raw) == 5278
    cells = pd.crosstab(raw.is_recid, raw.race)[["Caucasian", "African-American"]].to_numpy()
    np.testing.assert_array_equal(cells, [[1229, 1402], [874, 1773]])
    for seed in (0, 1):
        b = compas_rows(balanced=True, random_state=seed)
        np.testing.assert_array_equal(pd.crosstab(b["T"].recid, b["A"].african_american).to_numpy(), [[874, 874], [874, 874]])
        assert b["X"].shape == (4 * 874, 5)
    with pytest.raises(ValueError, match="is not a file"): compas_raw("/nonexistent/compas.csv")


def test_attackers_are_scikit_learn_estimators():
    "PerLabel and TorchMLP subclass BaseEstimator: parameters, clone and set_params come from scikit-learn."
    from sklearn.base import BaseEstimator, ClassifierMixin, clone
    from sklearn.linear_model import LogisticRegression
    pl = PerLabel(LogisticRegression(C=0.5))
    assert isinstance(pl, BaseEstimator) and pl.get_params()["estimator__C"] == 0.5
    c = clone(pl)
    assert c is not pl and c.estimator is not pl.estimator and c.get_params()["estimator__C"] == 0.5
    assert pl.set_params(estimator__C=2.0).estimator.C == 2.0
    mlp = TorchMLP(hidden=(4,), epochs=3)
    assert isinstance(mlp, ClassifierMixin) and clone(mlp).get_params() == mlp.get_params()
    assert mlp.set_params(lr=0.5).lr == 0.5 and "hidden=(4,)" in repr(mlp)


def test_the_lic_text_classifier_is_a_scikit_learn_estimator():
    from sklearn.base import BaseEstimator, clone
    from biasamp_nb.caption_leakage import BiLSTMClassifier
    m = BiLSTMClassifier(hidden_dim=8, epochs=1)
    assert isinstance(m, BaseEstimator) and clone(m).get_params() == m.get_params()
    assert m.set_params(epochs=3).epochs == 3


def test_distinct_rows_equals_numpy_unique():
    "distinct_rows codes 0/1 rows with the counting engine's row coder; rows and inverse as np.unique gives them."
    from biasamp_nb.fitting import distinct_rows
    rng = np.random.default_rng(0)
    for _ in range(200):
        n, p = int(rng.integers(0, 60)), int(rng.integers(1, 20))
        X = (rng.random((n, p)) < rng.random()).astype(rng.choice([np.int8, np.int64, np.float64, bool]))
        U, inv = distinct_rows(X)
        u2, inv2 = np.unique(X, axis=0, return_inverse=True)
        assert U.dtype == X.dtype and np.array_equal(U, u2) and np.array_equal(inv, inv2.ravel())


def test_report_runs_predictability_under_several_attackers(tmp_path):
    "evaluate records each attacker's value (the first is the headline); the report shows them with their agreement."
    from biasamp_nb import datasets
    from biasamp_nb.attackers import Subsampled, mlp_attacker
    from biasamp_nb.report import evaluate, write_report
    h = datasets.hiring()
    res = evaluate(**h, n_trials=3)
    for name in ("Leakage", "DPA (A->T)"):
        at = res[name].info["attackers"]
        assert list(at) == ["logistic", "MLP (32, 32)", "tree (depth 3)"] and at["logistic"] == res[name].value
    net = mlp_attacker((32, 32), early_stopping=True, batch_size=1_000, learning_rate_init=0.005, n_iter_no_change=5)
    mlp = Subsampled(net, max_rows=20_000, dtype=np.float32, few="majority")
    by_hand = dpa(h["T"], h["A"], h["T_pred"], direction="A->T", n_trials=3, random_state=0, attacker=mlp).value
    assert res["DPA (A->T)"].info["attackers"]["MLP (32, 32)"] == by_hand
    by_hand = leakage_amplification(h["T"], h["A"], h["T_pred"], n_trials=3, random_state=0, attacker=mlp).value
    assert res["Leakage"].info["attackers"]["MLP (32, 32)"] == by_hand
    assert "attackers" not in evaluate(**h, n_trials=3, attackers=False)["Leakage"].info
    write_report({"hiring": h, "hiring again": h}, tmp_path / "r", n_boot=None, n_null=None, n_trials=3)
    text = (tmp_path / "r" / "report.md").read_text()
    assert "## Attacker sensitivity" in text and "order 100% of the pairs of cases alike" in text


def test_report_order_does_not_depend_on_what_was_imported_first():
    """Metrics register when their module is imported; the report lists them family by family all the same, whether
    the predictability module or the report was imported first."""
    import subprocess, sys
    code = ("{}from biasamp_nb.metrics import report_runs, count_metrics; "
            "print([r[0] for r in report_runs()], list(count_metrics()))")
    run = lambda first: subprocess.run([sys.executable, "-c", code.format(first)], capture_output=True, text=True,
                                       check=True).stdout
    runs = [run(first) for first in ("", "import biasamp_nb.predictive, biasamp_nb.associations; ")]
    assert runs[0] == runs[1] and runs[0].index("Multi_MALS") < runs[0].index("Leakage")


def test_rows_and_columns_gathered_in_one_pass_equal_the_two_gathers():
    # the trials read the tasks in their canonical column order without a copy in that order: the row order and the
    # gathered rows must be those of the copy, across several blocks of rows
    from biasamp_nb.row_order import _BLOCK, gather_rows, order_of, canonical_order
    rng = np.random.default_rng(0)
    n = 2 * _BLOCK + 123
    X = (rng.random((n, 21)) < 0.2).astype(np.int8)
    y = rng.integers(0, 2, (n, 1)).astype(np.int8)
    f = rng.normal(size=(n, 3))  # not 0/1: compared as floats
    c = rng.permutation(21)
    order = order_of([X, y, f], [c, None, np.array([2, 0, 1])])
    np.testing.assert_array_equal(order, canonical_order(X[:, c], y, f[:, [2, 0, 1]]))
    rows = rng.permutation(n)[: n - 7]
    got = gather_rows(X, rows, c)
    np.testing.assert_array_equal(got, X[rows][:, c])
    assert got.dtype == X.dtype and got.flags.c_contiguous
    np.testing.assert_array_equal(gather_rows(X, rows), X[rows])


@pytest.mark.parametrize("groups", [2, 3])
def test_a_tree_read_off_the_table_equals_the_trees_scikit_learn_fits(groups):
    "DPA A→T with a depth-3 tree: every label's tree read off the input × label table gives the fitted trees' values."
    from sklearn.tree import DecisionTreeClassifier

    class Fitted(DecisionTreeClassifier):  # the same tree, fitted by scikit-learn label by label
        pass

    rng = np.random.default_rng(groups)
    n, k = 3000, 40
    g = rng.integers(0, groups, n)
    p = rng.uniform(0.02, 0.6, (groups, k))
    T = (rng.random((n, k)) < p[g]).astype(np.int8)
    T[:, 0] = (g == 0) & (rng.random(n) < 0.97)  # a label of group 0 alone
    Tp = T ^ (rng.random((n, k)) < 0.05)
    A = np.eye(groups, dtype=np.int8)[g]
    for q in ("accuracy", "macro_f1"):
        a, b = (dpa(T, A, Tp, direction="A->T", attacker=cls(max_depth=3, random_state=0), n_trials=4, random_state=1,
                    quality=q) for cls in (DecisionTreeClassifier, Fitted))
        pd.testing.assert_frame_equal(a.trials, b.trials)
        assert a.value == b.value and a.ci == b.ci


def _wide_tasks(seed, n, k, rarest, commonest, flip):
    """n rows × k task labels with prevalences log-uniform in [rarest, commonest], tilted by one of two groups (×1.4 /
    ×0.6); predictions flip each cell with probability `flip`, predicted groups are wrong for 10% of rows."""
    rng = np.random.default_rng(seed)
    g = rng.integers(0, 2, n)
    prev = np.exp(rng.uniform(np.log(rarest), np.log(commonest), k))
    T = (rng.random((n, k)) < prev * np.where(g[:, None] == 1, 1.4, 0.6)).astype(np.int8)
    Tp = T ^ (rng.random((n, k)) < flip)
    A = np.eye(2, dtype=np.int8)[g]
    return T, A, Tp, np.eye(2, dtype=np.int8)[np.where(rng.random(n) < 0.1, 1 - g, g)]


def test_a_tree_grown_from_counts_equals_the_tree_scikit_learn_fits(monkeypatch):
    "Leakage and DPA T→A with a depth-3 tree on wide sparse tasks: grown from counts, the same trials as fitted."
    import biasamp_nb.fitting as att
    from sklearn.tree import DecisionTreeClassifier

    class Fitted(DecisionTreeClassifier):  # the same tree, fitted by scikit-learn
        pass

    # 16,384 × 300 = 4.9·10⁶ cells: the attackers read the tasks as a sparse matrix
    T, A, Tp, Ap = _wide_tasks(8, 16_384, 300, 0.002, 0.05, 0.002)
    grown = []
    real = att._counted_tree
    monkeypatch.setattr(att, "_counted_tree", lambda est, *a: grown.append((type(est), real(est, *a))) or grown[-1][1])
    runs = [(leakage_amplification(T, A, Tp, attacker=cls(max_depth=3, random_state=0), n_trials=3, random_state=2),
             dpa(T, A, Tp, Ap, direction="T->A", attacker=cls(max_depth=3, random_state=0), n_trials=3,
                 random_state=2)) for cls in (DecisionTreeClassifier, Fitted)]
    mine = [t for cls, t in grown if cls is DecisionTreeClassifier]
    # each of the twelve fits is grown once, from its distinct rows or its rows, or twice when the distinct rows' tree
    # defers to scikit-learn and the rows are tried; most of them were grown
    assert 4 * 3 <= len(mine) <= 2 * 4 * 3 and sum(t is not None for t in mine) >= 8
    assert all(t is None for cls, t in grown if cls is Fitted)  # the other side: every tree fitted by scikit-learn
    for a, b in zip(*runs):
        pd.testing.assert_frame_equal(a.trials, b.trials)
        assert a.value == b.value and a.ci == b.ci


def test_the_two_sides_fitted_at_once_give_the_trials_fitted_one_after_the_other(monkeypatch):
    "Leakage and DPA T→A with the default logistic regression on a large sparse input: the same trials either way."
    import biasamp_nb.trial_fits as att
    import biasamp_nb.trials as P
    import biasamp_nb.row_order as R

    # 0.8 · 82,000 fitting rows ≥ SIDE_BY_SIDE_ROWS; 82,000 × 64 ≥ 2^22 cells: the attacker reads sparse tasks
    T, A, Tp, Ap = _wide_tasks(9, 82_000, 64, 0.005, 0.1, 0.003)
    seen = []
    real = P.fits_side_by_side
    monkeypatch.setattr(P, "fits_side_by_side", lambda a, X: seen.append(real(a, X)) or seen[-1])
    runs = {}
    for cpus in (2, 1):  # two cores: fitted side by side, in a thread of their own (P._CORES); one: in turn
        monkeypatch.setattr(att, "_CORES", cpus); monkeypatch.setattr(P, "_CORES", cpus)
        runs[cpus] = (leakage_amplification(T, A, Tp, n_trials=3, random_state=4),
                      dpa(T, A, Tp, Ap, direction="T->A", n_trials=3, random_state=4))
    assert seen == [True] * 6 + [False] * 6  # three trials of two metrics, side by side and then not
    for a, b in zip(runs[2], runs[1]):
        pd.testing.assert_frame_equal(a.trials, b.trials)
        assert a.value == b.value and a.ci == b.ci


def test_evaluate_caps_the_attackers_fitting_rows_when_asked():
    "evaluate hands max_fit_rows to leakage and DPA (the same values as calling them with it); None fits every row."
    from biasamp_nb import datasets
    from biasamp_nb.report import evaluate
    h = datasets.hiring()
    capped = evaluate(**h, n_trials=3, max_fit_rows=40, attackers=False)
    every = evaluate(**h, n_trials=3, attackers=False)
    for name, fn in (("Leakage", lambda m: leakage_amplification(h["T"], h["A"], h["T_pred"], n_trials=3,
                                                                 random_state=0, max_fit_rows=m)),
                     ("DPA (A->T)", lambda m: dpa(h["T"], h["A"], h["T_pred"], direction="A->T", n_trials=3,
                                                  random_state=0, max_fit_rows=m))):
        assert fn(40).value != fn(None).value  # on these 120 fitting rows the cap changes the value ...
        assert capped[name].value == fn(40).value and every[name].value == fn(None).value  # ... and evaluate passes it


def test_the_equalizer_flips_a_private_truth_in_place_and_flips_it_back():
    """With `reuse`, several labels and few cells to flip, the equalizer flips the truth it was handed (an array held
    for it alone) and flips those cells back at the next call: every call's matrix equals the copying equalizer's
    for the same seed, which it could not if the last call's cells stayed flipped. A truth that shares memory with
    the prediction is never written: it gets a copy."""
    from biasamp_nb.quality import quality_equalizer

    rng = np.random.default_rng(5)
    t = (rng.random((400, 12)) < 0.3).astype(np.int8)
    p = t.copy(); p[rng.random(t.shape) < 0.04] ^= 1
    copying, mine = quality_equalizer(t.copy(), p, 1e-4), t.copy()
    reusing = quality_equalizer(mine, p, 1e-4, reuse=True, flip_truth=True)
    for s in range(5):
        a, b = copying(np.random.default_rng(s)), reusing(np.random.default_rng(s))
        assert b is mine  # flipped where it lies
        np.testing.assert_array_equal(a, b)
        assert 0 < (a != t).sum() < 0.2 * t.size
    big = (rng.random((20_000, 12)) < 0.3).astype(np.int8)
    same = big.copy()  # one array passed as truth and prediction: the bisection's tolerance still flips a few cells
    out = quality_equalizer(same, same, 1e-4, reuse=True, flip_truth=True)(np.random.default_rng(0))
    np.testing.assert_array_equal(same, big)  # the prediction, unchanged
    assert not np.shares_memory(out, same) and 0 < (out != big).sum() < 100
    np.testing.assert_array_equal(out, quality_equalizer(big.copy(), big, 1e-4)(np.random.default_rng(0)))


@pytest.mark.parametrize("layout", ["F", "C"])
def test_an_input_every_attacker_reads_sparse_is_gathered_as_its_ones(monkeypatch, layout):
    """`gather_ones` (blocks of rows read into a CSR matrix, then put in order) is the matrix `attacker_input`
    makes of the dense gathered copy, entry for entry and in the same index types; and DPA T->A's trials, where the
    tasks are the input every attacker reads as their ones, give the same table as through the dense copy."""
    import scipy.sparse as sp
    import biasamp_nb.trial_fits as At
    import biasamp_nb.trials as P
    import biasamp_nb.row_order as R
    from sklearn.tree import DecisionTreeClassifier

    rng = np.random.default_rng(11)
    T = np.asarray(rng.random((3000, 40)) < 0.06, dtype=np.int8, order=layout)
    T[:, 3] = 0
    rows, cols = rng.permutation(3000), rng.permutation(40)
    monkeypatch.setattr(R, "_BLOCK", 700)  # five blocks, the last of 200 rows
    monkeypatch.setattr(At, "SPARSE_MIN_CELLS", 1000)
    for c in (None, cols):
        got = R.gather_ones(T, rows, c)
        ref = At.attacker_input(R.gather_rows(T, rows, c), None)
        assert sp.issparse(ref) and got.dtype == ref.dtype == np.float64 and got.has_sorted_indices
        assert got.indices.dtype == ref.indices.dtype and got.indptr.dtype == ref.indptr.dtype
        for f in ("data", "indices", "indptr"): np.testing.assert_array_equal(getattr(got, f), getattr(ref, f))
    g = rng.integers(0, 2, 3000); A = np.c_[g, 1 - g]; Ap = A.copy(); Ap[rng.random(3000) < 0.1] ^= 1
    tree = {"tree": DecisionTreeClassifier(max_depth=3, random_state=0)}
    run = lambda: dpa(T, A, A_pred=Ap, direction="T->A", n_trials=3, random_state=1, other_attackers=tree)
    calls = []
    real = R.gather_ones
    monkeypatch.setattr(P, "gather_ones", lambda *a: calls.append(1) or real(*a))
    new = run()
    monkeypatch.setattr(P, "takes_sparse_ones", lambda v: False)  # the dense copy, then attacker_input
    old = run()
    assert calls == [1]  # the tasks, once, read on both sides
    pd.testing.assert_frame_equal(new.trials, old.trials)
    assert new.value == old.value and new.info["other_attackers"] == old.info["other_attackers"]


def test_leakage_reads_its_model_side_as_ones_with_the_same_trials(monkeypatch):
    """Leakage perturbs the data side's labels to the model side's quality: with every attacker reading sparse input,
    the model side is made as its ones alone and that quality comes from the label counts of the tables as given,
    in the trials' column order; the data side is then perturbed as its ones too (`ones_equalizer`). The trials are
    those of the dense path; a prediction with one label a row is still needed whole, and the equaliser refuses to go
    without either."""
    import biasamp_nb.trial_fits as At
    import biasamp_nb.trials as P
    import biasamp_nb.row_order as R
    import biasamp_nb.quality as Q
    from sklearn.tree import DecisionTreeClassifier

    rng = np.random.default_rng(12)
    T = (rng.random((3000, 40)) < 0.05).astype(np.int8)
    g = rng.integers(0, 2, 3000); A = np.c_[g, 1 - g]
    T[:, 5] |= g.astype(np.int8)  # a label that leaks the group (8% ones in all: read sparse)
    Tp = T.copy(); Tp[rng.random(T.shape) < 0.03] ^= 1
    monkeypatch.setattr(At, "SPARSE_MIN_CELLS", 1000)
    tree = {"tree": DecisionTreeClassifier(max_depth=3, random_state=0)}
    run = lambda: leakage_amplification(T, A, Tp, n_trials=3, random_state=2, other_attackers=tree)
    calls = []
    real = R.gather_ones
    monkeypatch.setattr(P, "gather_ones", lambda *a: calls.append(1) or real(*a))
    new = run()
    monkeypatch.setattr(P, "takes_sparse_ones", lambda v: False)  # both sides dense, the quality from them
    old = run()
    assert calls == [1, 1]  # the model side and the data side, in the first run
    pd.testing.assert_frame_equal(new.trials, old.trials)
    assert new.value == old.value and new.info["other_attackers"] == old.info["other_attackers"]
    tc = rng.permutation(40)
    tp, fp, fn = Q.label_counts(T, Tp)
    assert Q.f1_from_counts(tp[tc], fp[tc], fn[tc]) == Q.macro_f1(T[:, tc], Tp[:, tc])  # the counts, in any column order
    with pytest.raises(ValueError, match="pass pred"): Q.quality_equalizer(T, None, 1e-4)
    with pytest.raises(ValueError, match="needs pred"): Q.quality_equalizer(A, None, 1e-4, target=0.5)




def test_a_trials_rows_and_perturbed_input_are_let_go_before_the_next_trials_are_made(monkeypatch):
    """When a trial perturbs its data side, nothing of the trial before it is held any more: neither its perturbed
    input nor the fitting and held-out rows cut from it (on a large case each is as large as the input)."""
    import weakref
    import biasamp_nb.trial_fits as At
    import biasamp_nb.trials as P

    rng = np.random.default_rng(14)
    T = (rng.random((3000, 40)) < 0.06).astype(np.int8)
    g = rng.integers(0, 2, 3000); A = np.c_[g, 1 - g]
    Tp = T.copy(); Tp[rng.random(T.shape) < 0.03] ^= 1
    monkeypatch.setattr(At, "SPARSE_MIN_CELLS", 1000)
    monkeypatch.setattr(P, "DISTINCT_SHARE", 0.0)  # fitted on each trial's rows
    made, held = [], []
    real_views, real_take = P._perturbed_views, P.take_rows
    def views(X, *a):
        held.append(sum(r() is not None for r in made))  # what is still alive of the trials before
        out = real_views(X, *a); made.append(weakref.ref(X))
        return out
    def take(x, idx):
        out = real_take(x, idx); made.append(weakref.ref(out))
        return out
    monkeypatch.setattr(P, "_perturbed_views", views); monkeypatch.setattr(P, "take_rows", take)
    leakage_amplification(T, A, Tp, n_trials=3, random_state=4)
    assert len(held) == 3 and len(made) > 3 and held == [0, 0, 0]


def test_the_trials_matrices_of_ones_share_one_read_only_array_of_ones(monkeypatch):
    """The matrices of ones that the trials make (each side's input, the perturbed data side, each trial's rows) view
    one read-only array of ones instead of each holding its own: writing to it raises, and leakage's trials, values
    and other attackers are those of matrices that own their ones."""
    import scipy.sparse as sp
    import biasamp_nb.counting as C
    import biasamp_nb.trial_fits as At
    import biasamp_nb.row_order as R
    import biasamp_nb.quality as Q
    import biasamp_nb.trials as P
    from sklearn.tree import DecisionTreeClassifier

    rng = np.random.default_rng(13)
    T = (rng.random((3000, 40)) < 0.06).astype(np.int8)
    g = rng.integers(0, 2, 3000); A = np.c_[g, 1 - g]
    T[:, 5] |= g.astype(np.int8)
    Tp = T.copy(); Tp[rng.random(T.shape) < 0.03] ^= 1
    monkeypatch.setattr(At, "SPARSE_MIN_CELLS", 1000)
    monkeypatch.setattr(P, "DISTINCT_SHARE", 0.0)  # fitted on each trial's rows, not on distinct pairs
    X = R.gather_ones(T, rng.permutation(3000))
    rows = np.flatnonzero(np.arange(3000) % 4)  # three rows in four: a view of the same ones
    half = R.take_rows(X, rows)
    assert C.has_shared_ones(X) and C.has_shared_ones(half) and np.shares_memory(X.data, half.data)
    assert (half != X[rows]).nnz == 0
    with pytest.raises(ValueError, match="read-only"): half.data[0] = 2.0
    tree = {"tree": DecisionTreeClassifier(max_depth=3, random_state=0)}
    run = lambda: leakage_amplification(T, A, Tp, n_trials=3, random_state=4, other_attackers=tree)
    made = []
    real = C.ones_matrix
    for m in (R, At): monkeypatch.setattr(m, "ones_matrix", lambda M: made.append(1) or real(M))
    shared = run()
    assert len(made) >= 2 + 3 * 4  # the two sides, and each trial's fitting and held-out rows of both
    for m in (R, At): monkeypatch.setattr(m, "ones_matrix", lambda M: sp.csr_matrix(M, dtype=np.float64, copy=True))
    monkeypatch.setattr(Q, "shared_ones", lambda n, dtype=np.float64: np.ones(n, dtype))
    monkeypatch.setattr(R, "has_shared_ones", lambda x: False)
    owned = run()
    pd.testing.assert_frame_equal(shared.trials, owned.trials)
    assert shared.value == owned.value and shared.info["other_attackers"] == owned.info["other_attackers"]

def _tied_case(n=400, seed=0):
    "Two groups of equal size (their columns alike in every count) and tasks with two columns alike in counts."
    rng = np.random.default_rng(seed)
    g = np.r_[np.zeros(n // 2, int), np.ones(n // 2, int)]
    rng.shuffle(g)
    A = np.eye(2, dtype=np.int8)[g]
    T = (rng.random((n, 3)) < np.where(g[:, None] == 1, [0.6, 0.3, 0.5], [0.3, 0.5, 0.5])).astype(np.int8)
    T = np.c_[T, 1 - T[:, :1]]  # x and its complement: n/2 ± a few ones each
    Tp = T.copy(); Tp[rng.random(T.shape) < 0.15] ^= 1
    Ap = A.copy(); flip = rng.random(n) < 0.1; Ap[flip] = 1 - Ap[flip]
    return T, A, Tp, Ap


@pytest.mark.parametrize("n", [400, 20_000])  # ties broken within one block of rows, and over several
@pytest.mark.parametrize("metric", ["A->T", "T->A", "leakage"])
def test_predictability_does_not_depend_on_column_names_or_orders(metric, n):
    T, A, Tp, Ap = _tied_case(n)
    run = lambda t, a, tp, ap: (
        leakage_amplification(t, a, tp, n_trials=4, random_state=0) if metric == "leakage" else
        dpa(t, a, tp, ap, direction=metric, n_trials=4, random_state=0)).value
    frame = lambda x, names: pd.DataFrame(x, columns=names)
    tn = ["x", "y", "z", "not_x"]
    want = run(T, A, Tp, Ap)
    perm = np.random.default_rng(1).permutation(len(T))
    for an, at in ((["man", "woman"], [0, 1]), (["woman", "man"], [0, 1]), (["a", "b"], [1, 0]), (["b", "a"], [1, 0])):
        for tcols in ([0, 1, 2, 3], [3, 2, 0, 1]):
            got = run(frame(T[:, tcols], [tn[j] for j in tcols]), frame(A[:, at], an),
                      frame(Tp[:, tcols], [tn[j] for j in tcols]), frame(Ap[:, at], an))
            assert got == want, (an, tcols)
    assert run(T[perm], A[perm], Tp[perm], Ap[perm]) == want  # the rows' order neither


def test_attackers_fit_with_one_blas_thread():
    "Every attacker fit runs with one BLAS thread, however many the caller set, and the caller's setting comes back."
    from sklearn.base import BaseEstimator, ClassifierMixin
    from sklearn.linear_model import LogisticRegression
    from threadpoolctl import threadpool_info, threadpool_limits
    blas = lambda: {i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"}
    seen = []

    class Watching(ClassifierMixin, BaseEstimator):
        def fit(self, X, y):
            seen.append(blas()); self.m_ = LogisticRegression().fit(X, y); self.classes_ = self.m_.classes_
            return self
        def predict(self, X): return self.m_.predict(X)

    T, A, rng = data(300)
    with threadpool_limits(2, user_api="blas"):
        before = blas()
        leakage_amplification(T, A, T ^ (rng.random(T.shape) < 0.1), attacker=Watching(), n_trials=2, random_state=0)
        assert blas() == before  # the caller's setting is back
    assert seen and all(s == {1} for s in seen), seen
