"""Model.predict_contributions: exact path-dependent Tree SHAP, against its naive twin
(Shapley values by brute force over every feature subset, with the subset's value taken
as the tree's prediction when the features outside it follow both branches weighted by
cover), and local accuracy (rows sum to the margin) for every learner."""
import itertools
import math

import numpy as np
import pyarrow as pa
import pytest

import oocboost
from oocboost.errors import ModelError


def _subset_value(tree, x, subset, node=0):
    """E[tree(x) | x_S]: features in S follow x, the others both branches by cover."""
    if tree.left[node] < 0:
        return tree.value[node].astype(np.float64)
    f = tree.feature[node]
    left, right = tree.left[node], tree.right[node]
    if f in subset:
        v = x[f]
        if np.isnan(v):
            go_left = tree.default_left[node]
        elif tree.is_categorical[node]:
            code = int(v)
            words = tree.cat_bitset.shape[1]
            go_left = 0 <= code < 32 * words and bool(
                (tree.cat_bitset[node, code // 32] >> (code % 32)) & 1)
        else:
            go_left = v <= tree.threshold[node]
        return _subset_value(tree, x, subset, left if go_left else right)
    w = tree.cover[node]
    return (tree.cover[left] / w * _subset_value(tree, x, subset, left)
            + tree.cover[right] / w * _subset_value(tree, x, subset, right))


def _brute_force_shap(tree, x, n_features):
    """Shapley values of one tree for one row: (n_features + 1, n_cols), bias last."""
    n_cols = tree.value.shape[1]
    phi = np.zeros((n_features + 1, n_cols))
    others = list(range(n_features))
    for i in range(n_features):
        rest = [j for j in others if j != i]
        for size in range(len(rest) + 1):
            weight = (math.factorial(size) * math.factorial(n_features - size - 1)
                      / math.factorial(n_features))
            for subset in itertools.combinations(rest, size):
                s = set(subset)
                phi[i] += weight * (_subset_value(tree, x, s | {i})
                                    - _subset_value(tree, x, s))
    phi[n_features] = _subset_value(tree, x, set())
    return phi


def _brute_force_model(model, X):
    out = np.zeros((len(X), model.n_outputs, model.n_features + 1))
    totals = model._mean_totals(0, model.n_trees)
    for t, tree in enumerate(model.trees):
        group = int(model.tree_group[t])
        cols = [group] if group >= 0 else list(range(model.n_outputs))
        for r, x in enumerate(X):
            phi = _brute_force_shap(tree, x, model.n_features)
            for c, k in enumerate(cols):
                out[r, k] += phi[:, c] * model.tree_weight[t] / totals[k]
    out[:, :, -1] += model.base_margin
    return out


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(8)
    X = rng.normal(size=(400, 4))
    X[rng.random(X.shape) < 0.1] = np.nan
    X[:, 3] = rng.integers(0, 3, size=400)  # a categorical feature as codes
    y = np.nan_to_num(X[:, 0]) * (X[:, 3] == 1) + np.nan_to_num(X[:, 1]) ** 2
    return X, y


def _models(X, y, tmp_path):
    table = pa.table({"a": X[:, 0], "b": X[:, 1], "c": X[:, 2],
                      "d": pa.array(np.array(["x", "y", "z"])[X[:, 3].astype(int)]),
                      "y": y, "cls": np.digitize(y, [0.3, 1.2]).astype(float)})
    reg = oocboost.build_cache(table.drop(["cls"]), tmp_path / "reg.oocb", label="y",
                               quiet=True)
    cls = oocboost.build_cache(table.drop(["y"]), tmp_path / "cls.oocb", label="cls",
                               quiet=True)
    return [oocboost.train({"objective": "reg:squarederror", "max_depth": 3}, reg, 4),
            oocboost.train({"objective": "multi:softprob", "num_class": 3, "max_depth": 2},
                           cls, 2),
            oocboost.RandomForestClassifier(n_estimators=3, max_depth=3,
                                            random_state=0).fit(cls).model_,
            oocboost.AdaBoostClassifier(n_estimators=3, max_depth=2).fit(cls).model_]


def test_equals_brute_force_shapley_values(data, tmp_path):
    X, y = data
    rows = np.ascontiguousarray(X[:12])
    for model in _models(X, y, tmp_path):
        ours = model.predict_contributions(rows)
        expected = _brute_force_model(model, rows)
        if model.n_outputs == 1:
            expected = expected[:, 0, :]
        np.testing.assert_allclose(ours, expected, rtol=1e-9, atol=1e-12)


def test_rows_sum_to_the_margin_for_every_learner(data, tmp_path):
    X, y = data
    for model in _models(X, y, tmp_path):
        phi = model.predict_contributions(X)
        margin = model.predict_margin(X)
        total = phi.sum(axis=-1)
        np.testing.assert_allclose(total.reshape(margin.shape), margin, rtol=1e-9,
                                   atol=1e-9)
        first = model.predict_contributions(X, iteration_range=(0, 1))
        np.testing.assert_allclose(first.sum(axis=-1).reshape(margin.shape),
                                   model.predict_margin(X, iteration_range=(0, 1)),
                                   rtol=1e-9, atol=1e-9)


def test_a_feature_the_trees_never_use_gets_nothing(data, tmp_path):
    X, y = data
    model = _models(X, y, tmp_path)[0]
    used = {int(f) for tree in model.trees for f in tree.feature if f >= 0}
    phi = model.predict_contributions(X)
    for f in set(range(4)) - used:
        np.testing.assert_array_equal(phi[:, f], 0.0)


def test_adaboost_r2_is_refused(data):
    X, y = data
    model = oocboost.AdaBoostRegressor(n_estimators=2).fit(np.nan_to_num(X), y).model_
    with pytest.raises(ModelError, match="weighted median"):
        model.predict_contributions(np.nan_to_num(X))


def test_dataframes_files_and_estimators(tmp_path):
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(4)
    frame = pd.DataFrame({"x": rng.normal(size=300),
                          "city": rng.choice(["oslo", "rome", "lima"], size=300)})
    y = frame["x"].to_numpy() + (frame["city"] == "rome").to_numpy()
    est = oocboost.GradientBoostingRegressor(n_estimators=5, max_depth=3).fit(frame, y)
    phi = est.predict_contributions(frame)
    assert phi.shape == (300, 3)
    np.testing.assert_allclose(phi.sum(axis=1), est.predict(frame), rtol=1e-9, atol=1e-12)
    path = tmp_path / "x.csv"
    frame.to_csv(path, index=False)
    np.testing.assert_array_equal(est.model_.predict(str(path), pred_contribs=True), phi)
    cache = oocboost.build_cache(frame.assign(y=y), tmp_path / "c.oocb", label="y",
                                 quiet=True)
    with pytest.raises(oocboost.ParameterError, match="from raw data"):
        est.model_.predict(cache, pred_contribs=True)
    clf = oocboost.GradientBoostingClassifier(n_estimators=3).fit(frame, y > 0.5)
    margin = clf.model_.predict(frame, output_margin=True)
    np.testing.assert_allclose(clf.predict_contributions(frame).sum(axis=1), margin,
                               rtol=1e-9, atol=1e-12)
