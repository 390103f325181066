"""oocboost.inspection.permutation_importance for every learner: streamed over a cache,
it equals the same permutations applied to the raw rows and scored by the estimator's own
``score``; on arrays it works for every estimator, with labels of any type."""
import numpy as np
import pytest

import oocboost
from oocboost.inspection import permutation_importance


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(11)
    X = rng.normal(size=(500, 3))
    y = 1.5 * X[:, 0] + X[:, 1] ** 2 + 0.2 * rng.normal(size=500)
    return X, y


def _classes(y, k):
    return np.digitize(y, np.quantile(y, np.arange(1, k) / k)).astype(float)


ESTIMATORS = [
    ("binary boosting", lambda: oocboost.GradientBoostingClassifier(n_estimators=6), 2),
    ("multiclass boosting", lambda: oocboost.GradientBoostingClassifier(n_estimators=4), 3),
    ("poisson boosting", lambda: oocboost.GradientBoostingRegressor(
        n_estimators=6, objective="count:poisson"), "counts"),
    ("forest", lambda: oocboost.RandomForestClassifier(n_estimators=4, random_state=0), 3),
    ("SAMME", lambda: oocboost.AdaBoostClassifier(n_estimators=5), 2),
    ("logitboost", lambda: oocboost.AdaBoostClassifier(n_estimators=4,
                                                      algorithm="logitboost"), 2),
    ("AdaBoost.R2", lambda: oocboost.AdaBoostRegressor(n_estimators=4), None),
    ("tree", lambda: oocboost.DecisionTreeRegressor(max_depth=4), None),
]


def _labels(y, kind):
    if kind == "counts":
        return np.floor(np.exp(y / 3.0))
    return y if kind is None else _classes(y, kind)


@pytest.mark.parametrize("name, make, kind", ESTIMATORS, ids=[e[0] for e in ESTIMATORS])
def test_on_a_cache_equals_the_permutations_by_hand(data, tmp_path, name, make, kind):
    X, y = data
    labels = _labels(y, kind)
    cache = oocboost.build_cache(X, tmp_path / "c.oocb", label=labels, block_rows=4096,
                                 quiet=True)  # one block: the permutations are global
    est = make().fit(cache)
    result = permutation_importance(est, cache, n_repeats=2, random_state=7)
    baseline = est.score(X, labels)
    by_hand = np.empty((3, 2))
    for f in range(3):
        for r in range(2):
            perm = np.random.default_rng([7, 0, f, r]).permutation(len(X))
            Xp = X.copy()
            Xp[:, f] = X[perm, f]
            by_hand[f, r] = baseline - est.score(Xp, labels)
    # R^2 from block sums (sum y^2 - (sum y)^2 / n) against scikit-learn's two-pass
    # formula: they differ in the last digits; accuracy is exact
    np.testing.assert_allclose(result.importances, by_hand, rtol=1e-7, atol=1e-12)


def test_on_arrays_with_string_labels(data):
    X, y = data
    labels = np.where(y > np.median(y), "high", "low")
    est = oocboost.GradientBoostingClassifier(n_estimators=6).fit(X, labels)
    result = permutation_importance(est, X, labels, n_repeats=3, random_state=0)
    assert result.importances.shape == (3, 3)
    assert result.importances_mean.argmax() == 0
    assert abs(result.importances_mean[2]) < 0.02  # noise feature
