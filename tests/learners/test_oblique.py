"""Oblique trees and forests (``splitter="oblique"``): a depth-2 oblique tree learns a
rotated boundary that a depth-2 axis-aligned tree cannot; the oblique kernels against
NumPy twins; block sizes; model files and their checks; what is refused."""
import json

import numpy as np
import pytest

import oocboost
from oocboost.errors import ModelError, ParameterError
from oocboost.kernels import oblique as ko
from oocboost.kernels.codes import read_only


def _rotated(n, seed):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, 4))
    y = (X[:, 0] + X[:, 1] > 0.1).astype(int)
    return X, y


def test_depth_two_oblique_tree_learns_a_rotated_boundary():
    X, y = _rotated(6000, 0)
    Xt, yt = _rotated(3000, 1)
    oblique = oocboost.DecisionTreeClassifier(max_depth=2, splitter="oblique").fit(X, y)
    axis = oocboost.DecisionTreeClassifier(max_depth=2).fit(X, y)
    acc_o, acc_a = oblique.score(Xt, yt), axis.score(Xt, yt)
    assert acc_o >= 0.97 and acc_a <= acc_o - 0.08, (acc_o, acc_a)
    root = oblique.model_.trees[0]
    feats, weights = root.oblique.terms(0)
    assert set(feats[:2].tolist()) == {0, 1}
    w = dict(zip(feats.tolist(), weights.tolist()))
    assert abs(w[0] / w[1] - 1.0) < 0.15           # the boundary's direction


@pytest.mark.parametrize("block_rows", [397, 4000])
def test_forest_does_not_depend_on_block_size(tmp_path, block_rows):
    X, y = _rotated(4000, 2)
    Xt, yt = _rotated(2000, 3)
    kw = dict(n_estimators=6, max_depth=3, splitter="oblique", random_state=0,
              trees_per_pass=3)
    whole = oocboost.RandomForestClassifier(**kw).fit(X, y)
    cache = oocboost.build_cache(X, tmp_path / "c.oocb", label=y.astype(float),
                                 block_rows=block_rows, quiet=True)
    blocks = oocboost.RandomForestClassifier(**kw).fit(cache)
    for a, b in zip(whole.model_.trees, blocks.model_.trees):
        np.testing.assert_array_equal(a.feature, b.feature)
        np.testing.assert_array_equal(a.threshold, b.threshold)
    axis = oocboost.RandomForestClassifier(n_estimators=6, max_depth=3, random_state=0)
    assert blocks.score(Xt, yt) > axis.fit(X, y).score(Xt, yt) + 0.03
    # raw and cache prediction agree but near the oblique thresholds (bin middles)
    agree = (blocks.predict(cache) == blocks.predict(X)).mean()
    assert agree > 0.98


def test_regression_tree_with_oblique_splits():
    rng = np.random.default_rng(4)
    X = rng.uniform(-1, 1, size=(5000, 3))
    y = np.where(X[:, 0] - X[:, 2] > 0, 3.0, 0.0) + 0.1 * rng.normal(size=5000)
    oblique = oocboost.DecisionTreeRegressor(max_depth=2, splitter="oblique").fit(X, y)
    axis = oocboost.DecisionTreeRegressor(max_depth=2).fit(X, y)
    assert oblique.score(X, y) > axis.score(X, y) + 0.2


def test_model_file_round_trip_and_checks(tmp_path):
    X, y = _rotated(3000, 5)
    X[::9, 0] = np.nan
    tree = oocboost.DecisionTreeClassifier(max_depth=3, splitter="oblique").fit(X, y)
    path = tmp_path / "t.json"
    tree.save_model(path)
    model = oocboost.load_model(path)
    np.testing.assert_array_equal(model.predict(X), tree.predict_proba(X))
    assert model.predict_leaf(X).shape == (len(X), 1)
    with pytest.raises(ModelError, match="oblique"):
        model.predict_contributions(X[:3])
    doc = json.loads(path.read_text())
    for mutate, pattern in (
            (lambda o: o["weight"].__setitem__(0, None), "weight"),
            (lambda o: o.__setitem__("feature", [o["feature"][1], o["feature"][0]]
                                     + o["feature"][2:]), "first term"),
            (lambda o: o["offset"].__setitem__(1, 999), "offset"),
            (lambda o: o.__setitem__("bias", 1), "exactly n_terms")):
        bad = json.loads(json.dumps(doc))
        mutate(bad["trees"][0]["oblique"])
        target = tmp_path / "bad.json"
        target.write_text(json.dumps(bad))
        with pytest.raises(ModelError, match=pattern):
            oocboost.load_model(target)


@pytest.mark.parametrize("kwargs, pattern", [
    (dict(ccp_alpha=0.01), "ccp_alpha"),
    (dict(max_leaf_nodes=8), "max_leaf_nodes"),
    (dict(missing_values="surrogate"), "surrogate"),
])
def test_unsupported_combinations_are_refused(kwargs, pattern):
    X, y = _rotated(300, 6)
    with pytest.raises(ParameterError, match=pattern):
        oocboost.DecisionTreeClassifier(splitter="oblique", **kwargs).fit(X, y)


def test_oblique_kernels_match_twins():
    rng = np.random.default_rng(7)
    n, max_bin = 200, 8
    # read-only, as a cache block's codes: the kernel specialization the engine calls
    codes = read_only(rng.integers(0, max_bin, size=(3, n)).astype(np.uint8))
    rep = np.vstack([np.linspace(-1, 1, max_bin)] * 3)
    rep[:, max_bin - 1] = np.nan
    # tree: 0 oblique (f0, f2) -> 1, 2; 1 axis f1 <= 3 -> 3, 4
    cap = 5
    kind = np.array([[2, 1, 0, 0, 0]], np.int8)
    feature = np.array([[0, 1, -1, -1, -1]], np.int32)
    bins = np.array([[0, 3, 0, 0, 0]], np.int32)
    dl = np.array([[True, False, False, False, False]])
    cat = np.zeros((1, cap), bool)
    bits = np.zeros((1, cap, 1), np.uint32)
    of = np.full((1, cap, 3), -1, np.int32)
    of[0, 0, :2] = [0, 2]
    ow = np.zeros((1, cap, 3))
    ow[0, 0, :2] = [0.7, -0.4]
    ot = np.array([[0.05, 0, 0, 0, 0]])
    left = np.array([[1, 3, -1, -1, -1]], np.int32)
    right = np.array([[2, 4, -1, -1, -1]], np.int32)
    node = np.zeros((1, n), np.int32)
    for _ in range(2):
        ko.advance_rows(codes, rep, node, kind, feature, bins, dl, cat, bits, of, ow, ot,
                        left, right, max_bin - 1)
    x = rep[np.arange(3)[:, None], codes]
    z = 0.7 * x[0] - 0.4 * x[2]
    first = np.where(np.isnan(z), True, z <= 0.05)
    second = np.where(codes[1] == max_bin - 1, False, codes[1] <= 3)
    expected = np.where(first, np.where(second, 3, 4), 2)
    np.testing.assert_array_equal(node[0], expected)
    # projection histograms of the root's rows over two directions
    stats = rng.uniform(0, 1, size=(1, n, 2)).astype(np.float32)
    slot = np.full((1, cap), -1, np.int32)
    slot[0, 0] = 0
    root = np.zeros((1, n), np.int32)
    feats = np.array([[0, 2, -1]], np.int32)
    weights = np.array([[[1.0, 1.0, 0.0], [1.0, -2.0, 0.0]]])
    z_low = np.array([[-2.0, -3.0]])
    z_width = np.array([[0.5, 0.75]])
    out = np.zeros((1, 2, 9, 2))
    ko.projection_histograms(codes, rep, root, stats, slot, feats, weights, z_low, z_width,
                             out)
    twin = np.zeros_like(out)
    for d in range(2):
        zz = weights[0, d, 0] * x[0] + weights[0, d, 1] * x[2]
        b = np.where(np.isnan(zz), 8, np.clip(np.floor((zz - z_low[0, d]) / z_width[0, d]),
                                              0, 7)).astype(int)
        for i in range(n):
            twin[0, d, b[i]] += stats[0, i]
    np.testing.assert_allclose(out, twin, rtol=1e-6)
