"""criterion="absolute_error": trees equal scikit-learn's on labels of few values (the
statistics then hold every distinct label), the weighted median is scikit-learn's, and
labels of many values are grouped into 1024 quantiles with a small loss of accuracy."""
import numpy as np
import pytest

import oocboost
from oocboost.engine.policies import weighted_medians

sklearn_tree = pytest.importorskip("sklearn.tree")


def _data(n=400, seed=0):
    """Integer labels over a wide range, features of many values: few exact ties."""
    rng = np.random.default_rng(seed)
    X = np.round(rng.normal(size=(n, 3)), 2)
    y = np.round(5 * X[:, 0] + 3 * X[:, 1] ** 2 + rng.normal(scale=2, size=n))
    return X, y, rng.integers(1, 4, n).astype(float)


def _brute_median(values, weights):
    """scikit-learn's rule, row by row: sort the rows, walk the cumulative weight."""
    order = np.argsort(values, kind="stable")
    v, w = values[order], weights[order]
    half = w.sum() / 2
    below = 0.0
    for i in range(len(v)):
        if below + w[i] > half:
            return (v[i - 1] + v[i]) / 2 if below == half and i > 0 else v[i]
        below += w[i]
    return v[-1]


@pytest.mark.parametrize("seed", range(6))
def test_weighted_median_is_scikit_learns(seed):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 5, 12).astype(float)
    weights = rng.integers(1, 3, 12).astype(float)
    values = np.unique(labels)
    lanes = np.array([[weights[labels == v].sum() for v in values]])
    assert weighted_medians(lanes, values)[0] == _brute_median(labels, weights)


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("depth", [1, 2, 4])
@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_trees_equal_scikit_learns(weighted, depth, seed):
    # In small nodes deeper down, absolute error's flat plateaus tie splits of
    # different features: ours take the lowest feature, scikit-learn the first in a
    # random feature order (its trees then change with random_state)
    X, y, w = _data(seed=seed)
    sw = w if weighted else None
    ours = oocboost.DecisionTreeRegressor(criterion="absolute_error", max_depth=depth)
    theirs = sklearn_tree.DecisionTreeRegressor(criterion="absolute_error", max_depth=depth,
                                                random_state=0)
    ours.fit(X, y, sample_weight=sw)
    theirs.fit(X, y, sample_weight=sw)
    np.testing.assert_array_equal(ours.predict(X), theirs.predict(X))
    assert ours.get_n_leaves() == theirs.get_n_leaves()
    if depth <= 2:  # deeper, a tied split can move without changing a prediction
        np.testing.assert_allclose(ours.feature_importances_, theirs.feature_importances_,
                                   atol=1e-12)


def test_grown_out_trees_fit_the_training_rows_as_scikit_learns():
    # both grow until the leaves are pure or cannot be split: the same training error
    X, y, w = _data(seed=1)
    for sw in (None, w):
        ours = oocboost.DecisionTreeRegressor(criterion="absolute_error").fit(
            X, y, sample_weight=sw)
        theirs = sklearn_tree.DecisionTreeRegressor(criterion="absolute_error").fit(
            X, y, sample_weight=sw)
        assert np.average(np.abs(y - ours.predict(X)), weights=sw) == pytest.approx(
            np.average(np.abs(y - theirs.predict(X)), weights=sw), abs=1e-12)


def test_many_label_values_are_grouped_into_quantiles():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(6000, 4))
    y = 2 * X[:, 0] + np.abs(X[:, 1]) + rng.standard_t(2, size=6000)
    ours = oocboost.DecisionTreeRegressor(criterion="absolute_error", max_depth=5).fit(X, y)
    theirs = sklearn_tree.DecisionTreeRegressor(criterion="absolute_error",
                                                max_depth=5).fit(X, y)
    ours_mae = np.mean(np.abs(y - ours.predict(X)))
    theirs_mae = np.mean(np.abs(y - theirs.predict(X)))
    assert ours_mae <= theirs_mae * 1.02


def test_a_forest_without_sampling_is_the_tree():
    X, y, _ = _data(seed=2)
    tree = oocboost.DecisionTreeRegressor(criterion="absolute_error", max_depth=4).fit(X, y)
    forest = oocboost.RandomForestRegressor(criterion="absolute_error", max_depth=4,
                                            n_estimators=3, bootstrap=False,
                                            max_features=None).fit(X, y)
    np.testing.assert_array_equal(forest.predict(X), tree.predict(X))
