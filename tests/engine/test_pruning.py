"""Minimal cost-complexity pruning against scikit-learn (path and pruned trees)."""
import os

import numpy as np
import pytest
from sklearn import tree as sktree

import oocboost
from oocboost.engine.pruning import cost_complexity_pruning_path, prune_tree
from oocboost.sklearn.trees import DecisionTreeClassifier, DecisionTreeRegressor

N = 150


def _data(task, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(N, 3))
    if task == "regression":
        y = np.round(2 * X[:, 0] + np.cos(3 * X[:, 1]) + 0.5 * rng.normal(size=N), 3)
        return X, y.astype(np.float32).astype(np.float64)
    return X, (X[:, 0] * X[:, 1] + 0.3 * rng.normal(size=N) > 0).astype(int)


def test_hand_example_path_and_prune():
    # root (W=4, gini .5) -> left leaf (pure) | right node (W=2, gini .5) -> two pure leaves
    left = np.array([1, -1, 3, -1, -1])
    right = np.array([2, -1, 4, -1, -1])
    w = np.array([4.0, 2.0, 2.0, 1.0, 1.0])
    imp = np.array([0.5, 0.0, 0.5, 0.0, 0.0])
    alphas, impurities = cost_complexity_pruning_path(left, right, w, imp)
    # node 2: (2/4 * .5 - 0) / (2 - 1) = .25 ties the root's (.5 - 0) / (3 - 1) = .25:
    # the lowest id (the root) is pruned, in one step to the lone root
    np.testing.assert_allclose(alphas, [0.0, 0.25])
    np.testing.assert_allclose(impurities, [0.0, 0.5])
    arrays = dict(left=left, right=right, feature=np.array([0, -1, 1, -1, -1]),
                  value=np.arange(5.0)[:, None])
    pruned, node_map = prune_tree(arrays, w, imp, 0.1)
    assert len(pruned["left"]) == 5
    pruned, node_map = prune_tree(arrays, w, imp, 0.25)
    assert pruned["left"].tolist() == [-1] and node_map.tolist() == [0] * 5


@pytest.mark.parametrize("task,criterion", [("binary", "gini"), ("binary", "entropy"),
                                            ("regression", "squared_error")])
def test_path_equals_sklearn(tmp_path, task, criterion):
    X, y = _data(task)
    cache = oocboost.build_cache(X, os.path.join(tmp_path, "c"), label=y.astype(float),
                                 max_bin=1024, block_rows=11, quiet=True)
    kw = dict(criterion=criterion, min_samples_leaf=4)
    if task == "regression":
        ours, theirs = DecisionTreeRegressor(**kw), sktree.DecisionTreeRegressor(**kw)
    else:
        ours, theirs = DecisionTreeClassifier(**kw), sktree.DecisionTreeClassifier(**kw)
    path = ours.cost_complexity_pruning_path(cache)
    ref = theirs.set_params(random_state=0).cost_complexity_pruning_path(X, y)
    np.testing.assert_allclose(path.ccp_alphas, ref.ccp_alphas, rtol=1e-7, atol=1e-12)
    np.testing.assert_allclose(path.impurities, ref.impurities, rtol=1e-7, atol=1e-12)
    # pruning with an alpha from the middle of the path gives scikit-learn's subtree
    alpha = float(ref.ccp_alphas[len(ref.ccp_alphas) // 2])
    ours.set_params(ccp_alpha=alpha).fit(cache)
    theirs.set_params(ccp_alpha=alpha).fit(X, y)
    assert ours.get_n_leaves() == theirs.get_n_leaves()
    assert ours.tree_.n_nodes == theirs.tree_.node_count
    np.testing.assert_array_equal(np.where(ours.tree_.left < 0, -1, ours.tree_.left),
                                  theirs.tree_.children_left)
    pred = ours.predict_proba(X) if task != "regression" else ours.predict(X)
    ref_pred = theirs.predict_proba(X) if task != "regression" else theirs.predict(X)
    np.testing.assert_allclose(pred, ref_pred, rtol=1e-9, atol=1e-12)


def test_negative_alpha_refused():
    with pytest.raises(oocboost.ParameterError, match="ccp_alpha"):
        prune_tree(dict(left=np.array([-1]), right=np.array([-1])), np.ones(1),
                   np.zeros(1), -1.0)
