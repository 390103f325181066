"""scikit-learn's ``monotonic_cst`` for decision trees and forests: the same trees as
scikit-learn's where no two features tie, and predictions monotone in the constrained
features whatever the data."""
import numpy as np
import pytest
from sklearn.tree import DecisionTreeClassifier as SkTreeClassifier
from sklearn.tree import DecisionTreeRegressor as SkTreeRegressor

import oocboost
from oocboost.kernels.split import CRITERIA
from oocboost.kernels.split_cart import monotone_ok


def _data(n=3000, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 50, size=(n, 3)).astype(float)  # a bin per value: exact splits
    y = 0.1 * X[:, 0] + np.sin(X[:, 0] / 3) + 0.05 * X[:, 1] + 0.5 * rng.normal(size=n)
    return X, y


@pytest.mark.parametrize("cst", [[1, 0, 0], [-1, 0, 1], [0, -1, 0]])
@pytest.mark.parametrize("depth", [3, 6])
def test_regression_tree_equals_scikit_learns(cst, depth):
    X, y = _data()
    ours = oocboost.DecisionTreeRegressor(max_depth=depth, monotonic_cst=cst).fit(X, y)
    theirs = SkTreeRegressor(max_depth=depth, monotonic_cst=cst, random_state=0).fit(X, y)
    np.testing.assert_allclose(ours.predict(X), theirs.predict(X), atol=1e-6)
    assert ours.model_.trees[0].n_nodes == theirs.tree_.node_count


@pytest.mark.parametrize("cst", [[1, 0, 0], [-1, 1, 0]])
def test_binary_classifier_constrains_the_probability_of_class_1_as_scikit_learn(cst):
    X, y = _data(seed=1)
    labels = np.where(y > np.median(y), "yes", "no")
    ours = oocboost.DecisionTreeClassifier(max_depth=5, monotonic_cst=cst).fit(X, labels)
    theirs = SkTreeClassifier(max_depth=5, monotonic_cst=cst, random_state=0).fit(X, labels)
    np.testing.assert_allclose(ours.predict_proba(X), theirs.predict_proba(X), atol=1e-12)


def _grid(X, feature, n=60):
    base = np.repeat(X[:40], n, axis=0)
    base[:, feature] = np.tile(np.linspace(X[:, feature].min() - 1,
                                           X[:, feature].max() + 1, n), 40)
    return base, n


@pytest.mark.parametrize("make", [
    lambda: oocboost.RandomForestRegressor(n_estimators=20, monotonic_cst=[1, 0, -1],
                                           random_state=0),
    lambda: oocboost.ExtraTreesRegressor(n_estimators=20, monotonic_cst=[1, 0, -1],
                                         random_state=0),
    lambda: oocboost.RandomForestClassifier(n_estimators=20, monotonic_cst=[1, 0, -1],
                                            max_features=None, random_state=0),
])
def test_forests_are_monotone_in_each_constrained_feature(make):
    X, y = _data(seed=2)
    X[::17, 0] = np.nan  # missing values take a learned side; the others stay ordered
    est = make()
    classifier = isinstance(est, oocboost.RandomForestClassifier)
    est.fit(X, (y > np.median(y)).astype(int) if classifier else y)
    for feature, sign in ((0, 1), (2, -1)):
        grid, n = _grid(np.nan_to_num(X), feature)
        pred = est.predict_proba(grid)[:, 1] if classifier else est.predict(grid)
        steps = np.diff(pred.reshape(40, n), axis=1) * sign
        assert steps.min() >= -1e-12
    unconstrained = make().set_params(monotonic_cst=None).fit(
        X, (y > np.median(y)).astype(int) if classifier else y)
    grid, n = _grid(np.nan_to_num(X), 0)
    free = unconstrained.predict_proba(grid)[:, 1] if classifier else \
        unconstrained.predict(grid)
    assert np.diff(free.reshape(40, n), axis=1).min() < 0   # the data is not monotone


def test_constraints_by_name_from_a_cache(tmp_path):
    X, y = _data(seed=3)
    import pyarrow as pa

    table = pa.table({"a": X[:, 0], "b": X[:, 1], "c": X[:, 2], "y": y})
    cache = oocboost.build_cache(table, tmp_path / "c", label="y", quiet=True)
    by_name = oocboost.DecisionTreeRegressor(max_depth=4, monotonic_cst={"a": 1}).fit(cache)
    by_list = oocboost.DecisionTreeRegressor(max_depth=4, monotonic_cst=[1, 0, 0]).fit(X, y)
    np.testing.assert_allclose(by_name.predict(cache), by_list.predict(X))


@pytest.mark.parametrize("params,y_kind,message", [
    ({"monotonic_cst": [1, 0]}, "reg", r"monotonic_cst has shape \(2,\) but the input "
                                       r"data has 3 features"),
    ({"monotonic_cst": [1, 0, 2]}, "reg", "must be -1, 0 or 1"),
    ({"monotonic_cst": [1, 0, 0]}, "multiclass", "multiclass"),
    ({"monotonic_cst": [1, 0, 0], "criterion": "absolute_error"}, "reg", "absolute_error"),
    ({"monotonic_cst": {"z": 1}}, "reg", "'z' is not a feature"),
])
def test_refusals_name_the_parameter(params, y_kind, message):
    X, y = _data(n=300, seed=4)
    if y_kind == "multiclass":
        est, y = oocboost.DecisionTreeClassifier(**params), np.digitize(y, [0.5, 1.5])
    else:
        est = oocboost.DecisionTreeRegressor(**params)
    with pytest.raises(oocboost.ParameterError, match=message):
        est.fit(X, y)


def test_a_categorical_feature_cannot_be_constrained(tmp_path):
    pd = pytest.importorskip("pandas")
    X, y = _data(n=300, seed=5)
    frame = pd.DataFrame({"a": X[:, 0], "city": np.where(X[:, 1] > 25, "x", "y")})
    with pytest.raises(oocboost.ParameterError, match="'city' is categorical"):
        oocboost.DecisionTreeRegressor(monotonic_cst={"city": 1}).fit(frame, y)


@pytest.mark.parametrize("criterion", ["squared_error", "gini"])
def test_monotone_check_equals_scikit_learns_rule(criterion):
    rng = np.random.default_rng(6)
    code = CRITERIA[criterion]
    for _ in range(200):
        node = rng.uniform(1, 10, size=3)
        left = node * rng.uniform(0.1, 0.9, size=3)
        if criterion == "squared_error":
            w_node, wl, wr = node[0], left[0], node[0] - left[0]
            vl, vr = left[1] / wl, (node[1] - left[1]) / wr
        else:
            w_node, wl = node[0] + node[1], left[0] + left[1]
            vl, vr = left[1] / wl, (node[1] - left[1]) / (w_node - wl)
        cst = int(rng.choice([-1, 1]))
        lower, upper = sorted(rng.uniform(0, 2, size=2))
        want = (min(vl, vr) >= lower and max(vl, vr) <= upper and (vl - vr) * cst <= 0)
        assert monotone_ok(left, node, w_node, code, cst, lower, upper) == want
