"""Prediction through a graph whose nodes have several parents (decision streams)
against a NumPy walk of the same rules, raw and binned, with categorical splits and
missing values."""
import numpy as np
import pytest

from oocboost.model.model import Model
from oocboost.model.tree import Tree


def _graph():
    # 0: x0 <= 0.5 -> 1 else 2;  1: x1 <= 1.5 -> 3 else 4;  2: cat x2 in {1, 3} -> 3 else 5
    # node 3 has parents 1 and 2; 3: x0 <= -1 -> 6 else 4 (4 shared by 1 and 3)
    left = np.array([1, 3, 3, 6, -1, -1, -1])
    right = np.array([2, 4, 5, 4, -1, -1, -1])
    feature = np.array([0, 1, 2, 0, -1, -1, -1])
    threshold = np.array([0.5, 1.5, 0.0, -1.0, 0, 0, 0])
    bins = np.array([1, 2, 0, 0, 0, 0, 0])
    default_left = np.array([True, False, True, False, False, False, False])
    is_cat = np.array([False, False, True, False, False, False, False])
    bits = np.zeros((7, 1), np.uint32)
    bits[2, 0] = (1 << 1) | (1 << 3)
    value = np.arange(7, dtype=float) * 10
    return Tree(left, right, feature, threshold, value, bin_threshold=bins,
                default_left=default_left, is_categorical=is_cat, cat_bitset=bits)


def _walk(tree, x, binned, missing_bin=7):
    node = 0
    while tree.left[node] >= 0:
        v = x[tree.feature[node]]
        missing = (v == missing_bin) if binned else np.isnan(v)
        if missing:
            go = tree.default_left[node]
        elif tree.is_categorical[node]:
            go = bool(tree.cat_bitset[node, 0] >> int(v) & 1) if 0 <= v < 32 else False
        else:
            go = v <= (tree.bin_threshold[node] if binned else tree.threshold[node])
        node = tree.left[node] if go else tree.right[node]
    return node


@pytest.mark.parametrize("n_threads", [1, 2])
def test_graph_prediction_matches_a_numpy_walk(n_threads):
    tree = _graph()
    model = Model([tree], n_outputs=1, learner="decision_stream",
                  feature_names=["a", "b", "c"], feature_types=["numeric", "numeric",
                                                                "categorical"])
    rng = np.random.default_rng(0)
    X = np.c_[rng.normal(size=500), rng.uniform(0, 3, 500), rng.integers(0, 5, 500)]
    X[rng.random(X.shape) < 0.1] = np.nan
    leaves = np.array([_walk(tree, row, False) for row in X])
    np.testing.assert_array_equal(model.predict_leaf(X, n_threads=n_threads)[:, 0], leaves)
    np.testing.assert_array_equal(model.predict_margin(X, n_threads=n_threads)[:, 0],
                                  tree.value[leaves, 0])
    codes = rng.integers(0, 8, size=(3, 500)).astype(np.uint8)
    leaves_b = np.array([_walk(tree, codes[:, i], True) for i in range(500)])
    np.testing.assert_array_equal(
        model.predict_margin_binned(codes, 7, n_threads=n_threads)[:, 0],
        tree.value[leaves_b, 0])
