"""C4.5's gain ratio (``criterion="gain_ratio"``): each split is the one whose entropy
decrease over its split information is largest, checked against a brute-force NumPy
search node by node."""
import numpy as np
import pytest

import oocboost


def _entropy(y, w):
    total = w.sum()
    p = np.array([w[y == k].sum() for k in np.unique(y)]) / total
    p = p[p > 0]
    return float(-(p * np.log2(p)).sum())


def _best_ratio(X, y, w):
    best = None
    for f in range(X.shape[1]):
        values = np.unique(X[:, f])
        for t in values[:-1]:
            left = X[:, f] <= t
            pl = w[left].sum() / w.sum()
            gain = _entropy(y, w) - pl * _entropy(y[left], w[left]) \
                - (1 - pl) * _entropy(y[~left], w[~left])
            ratio = gain / -(pl * np.log2(pl) + (1 - pl) * np.log2(1 - pl))
            if best is None or ratio > best[0] + 1e-12:
                best = (ratio, f, t)
    return best


@pytest.mark.parametrize("seed", range(3))
def test_every_split_of_a_depth_3_tree_is_the_best_gain_ratio(seed):
    rng = np.random.default_rng(seed)
    n = 1500
    X = np.c_[rng.integers(0, 40, n), rng.integers(0, 3, n), rng.integers(0, 8, n)]
    X = X.astype(float)
    y = ((X[:, 0] > 36) | ((X[:, 1] == 2) & (rng.random(n) < 0.6))).astype(int)
    w = rng.uniform(0.5, 2.0, size=n)
    tree = oocboost.DecisionTreeClassifier(criterion="gain_ratio", max_depth=3).fit(
        X, y, sample_weight=w).model_.trees[0]
    leaves = tree.left < 0
    pending = [(0, np.ones(n, bool))]
    checked = 0
    while pending:
        node, rows = pending.pop()
        if leaves[node]:
            continue
        ratio, f, t = _best_ratio(X[rows], y[rows], w[rows])
        assert tree.feature[node] == f
        # thresholds are the midpoints between the column's neighbouring values
        assert t < tree.threshold[node] < t + 1
        go_left = rows & (X[:, f] <= t)
        pending += [(tree.left[node], go_left), (tree.right[node], rows & ~go_left)]
        checked += 1
    assert checked >= 3


def test_gain_ratio_prefers_a_small_pure_group_that_entropy_passes_over():
    rng = np.random.default_rng(7)
    n = 4000
    small = rng.random(n) < 0.02
    X = np.c_[small.astype(float), rng.integers(0, 2, n)].astype(float)
    y = np.where(small, 1, (rng.random(n) < np.where(X[:, 1] == 1, 0.65, 0.35))).astype(int)
    ratio = oocboost.DecisionTreeClassifier(criterion="gain_ratio", max_depth=1).fit(X, y)
    entropy = oocboost.DecisionTreeClassifier(criterion="entropy", max_depth=1).fit(X, y)
    assert ratio.model_.trees[0].feature[0] == 0
    assert entropy.model_.trees[0].feature[0] == 1
    assert _best_ratio(X, y, np.ones(n))[1] == 0
