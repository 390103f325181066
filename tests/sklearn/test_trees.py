"""Single CART trees against scikit-learn's on the same data.

With a bin per distinct value (``max_bin`` above the number of distinct values) our tree
must make the same splits (feature, partition of the training rows) with the same leaf
values as scikit-learn's; thresholds differ only inside the gap between neighbouring
values (ours: the column's midpoint, scikit-learn's: the node's). Continuous features
and ``min_samples_leaf=3`` keep gain ties (broken at random by scikit-learn) out.
Our node ids are renumbered in depth-first preorder, as scikit-learn's depth-first
builder numbers them, so node arrays are compared id by id.
"""
import os

import numpy as np
import pytest
from sklearn import tree as sktree

import oocboost
from oocboost.inspection.tree_text import export_text
from oocboost.sklearn.trees import DecisionTreeClassifier, DecisionTreeRegressor

N = 160


def _data(task, seed=0, nan=False):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(N, 4))
    if task == "regression":
        # float32-exact targets (the cache stores labels as float32)
        y = np.round(X[:, 0] * 3 + np.sin(2 * X[:, 1]) * 2 + rng.normal(size=N), 3)
        y = y.astype(np.float32).astype(np.float64)
    elif task == "multiclass":
        y = np.digitize(X[:, 0] + 0.5 * X[:, 2] + 0.3 * rng.normal(size=N), [-0.5, 0.5])
    else:
        y = (X[:, 0] + X[:, 1] ** 2 + 0.5 * rng.normal(size=N) > 0.8).astype(int)
    if nan:
        X[rng.random(X.shape) < 0.1] = np.nan
    return X, y


def _cache(tmp_path, X, y, block_rows, w=None, name="c"):
    return oocboost.build_cache(X, os.path.join(tmp_path, f"{name}{block_rows}"),
                                label=np.asarray(y, np.float64), weight=w, max_bin=1024,
                                block_rows=block_rows, quiet=True)


def assert_same_tree(ours, theirs, X):
    """Same structure, sizes, values and impurities; a node whose feature differs must
    be a tie (children of the same sizes and values), as scikit-learn breaks ties in a
    random feature order."""
    t, s = ours.tree_, theirs.tree_
    assert t.n_nodes == s.node_count
    leaf = t.left < 0
    np.testing.assert_array_equal(np.where(leaf, -1, t.left), s.children_left)
    np.testing.assert_array_equal(t.n_samples, s.n_node_samples)
    np.testing.assert_allclose(t.cover, s.weighted_n_node_samples, rtol=1e-12)
    np.testing.assert_allclose(t.value, s.value[:, 0, :], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(ours.tree_impurity_, s.impurity, rtol=1e-7, atol=1e-12)
    ties = np.flatnonzero(np.where(leaf, -2, t.feature) != s.feature)
    assert len(ties) <= 1
    if len(ties) == 0:  # then also the same partition of the training rows
        np.testing.assert_array_equal(ours.apply(X), theirs.apply(X))
    pred = ours.predict_proba(X) if hasattr(ours, "predict_proba") else ours.predict(X)
    ref = theirs.predict_proba(X) if hasattr(theirs, "predict_proba") else theirs.predict(X)
    np.testing.assert_allclose(pred, ref, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("criterion,task", [("gini", "binary"), ("entropy", "multiclass"),
                                            ("log_loss", "binary"),
                                            ("squared_error", "regression")])
@pytest.mark.parametrize("block_rows", [7, N])
def test_tree_equals_sklearn(tmp_path, criterion, task, block_rows):
    X, y = _data(task)
    cache = _cache(tmp_path, X, y, block_rows)
    kw = dict(criterion=criterion, max_depth=4, min_samples_leaf=5)
    if task == "regression":
        ours = DecisionTreeRegressor(**kw).fit(cache)
        theirs = sktree.DecisionTreeRegressor(random_state=0, **kw).fit(X, y)
    else:
        ours = DecisionTreeClassifier(**kw).fit(cache)
        theirs = sktree.DecisionTreeClassifier(random_state=0, **kw).fit(X, y)
    assert_same_tree(ours, theirs, X)
    np.testing.assert_allclose(ours.feature_importances_, theirs.feature_importances_,
                               atol=1e-9)
    assert ours.get_depth() == theirs.get_depth()
    assert ours.get_n_leaves() == theirs.get_n_leaves()


def test_unlimited_depth_weights_and_class_weight(tmp_path):
    X, y = _data("multiclass", seed=3)
    w = np.random.default_rng(1).integers(1, 4, size=N).astype(np.float64)
    kw = dict(min_samples_leaf=4, class_weight={0: 2.0, 1: 1.0, 2: 0.5},
              min_weight_fraction_leaf=0.02, min_samples_split=10)
    ours = DecisionTreeClassifier(**kw).fit(_cache(tmp_path, X, y, 7, w=w))
    theirs = sktree.DecisionTreeClassifier(random_state=0, **kw).fit(X, y, sample_weight=w)
    assert_same_tree(ours, theirs, X)


def test_max_leaf_nodes_best_first_equals_sklearn(tmp_path):
    X, y = _data("regression", seed=5)
    kw = dict(max_leaf_nodes=9, min_samples_leaf=3)
    ours = DecisionTreeRegressor(**kw).fit(_cache(tmp_path, X, y, 7))
    theirs = sktree.DecisionTreeRegressor(random_state=0, **kw).fit(X, y)
    assert ours.get_n_leaves() == 9
    # node numbering differs (scikit-learn's best-first builder numbers nodes when made)
    np.testing.assert_allclose(
        np.sort(ours.tree_.value[ours.tree_.left < 0, 0]),
        np.sort(theirs.tree_.value[theirs.tree_.children_left < 0, 0, 0]),
        rtol=1e-9,
    )
    np.testing.assert_allclose(ours.predict(X), theirs.predict(X), rtol=1e-9)


def test_missing_values_follow_learned_side(tmp_path):
    X, y = _data("binary", seed=2, nan=True)
    kw = dict(max_depth=3, min_samples_leaf=5)
    ours = DecisionTreeClassifier(**kw).fit(_cache(tmp_path, X, y, 7))
    theirs = sktree.DecisionTreeClassifier(random_state=0, **kw).fit(X, y)
    np.testing.assert_allclose(ours.predict_proba(X), theirs.predict_proba(X), atol=1e-12)


def test_arrays_path_labels_export_and_paths(tmp_path):
    X, y = _data("binary")
    labels = np.array(["no", "yes"])[y]
    clf = DecisionTreeClassifier(max_depth=2, min_samples_leaf=3,
                                 max_bin=1024).fit(X, labels)
    assert list(clf.classes_) == ["no", "yes"]
    assert set(clf.predict(X)) <= {"no", "yes"}
    text = export_text(clf, feature_names=["a", "b", "c", "d"])
    lines = text.strip().splitlines()
    assert lines[0].startswith("|--- ") and "<=" in lines[0]
    assert sum("class:" in ln for ln in lines) == clf.get_n_leaves()
    path = clf.decision_path(X)
    assert path.shape == (N, clf.tree_.n_nodes)
    # every row passes the root and exactly depth+1 nodes on its way to a leaf
    assert np.all(path[:, 0].toarray() == 1)
    leaves = clf.apply(X)
    assert np.all(path[np.arange(N), leaves] == 1)
    assert clf.tree_.left[leaves].max() == -1


def test_parameter_errors(tmp_path):
    X, y = _data("binary")
    with pytest.raises(oocboost.ParameterError, match="criterion"):
        DecisionTreeClassifier(criterion="squared_error").fit(X, y)
    with pytest.raises(oocboost.ParameterError, match="max_depth"):
        DecisionTreeClassifier(max_depth=0).fit(X, y)
    with pytest.raises(oocboost.ParameterError, match="max_features"):
        DecisionTreeClassifier(max_features="half").fit(X, y)
    with pytest.raises(oocboost.ParameterError, match="not fitted"):
        DecisionTreeClassifier().predict(X)


@pytest.mark.parametrize("kw", [dict(max_depth=4), dict(min_impurity_decrease=0.5),
                                dict(max_leaf_nodes=7)])
def test_friedman_mse_equals_scikit_learn(kw):
    """scikit-learn >= 1.9 maps friedman_mse to squared_error; so do we, with its
    results on a bin-per-value data set."""
    import warnings

    from sklearn.tree import DecisionTreeRegressor as SkTree

    rng = np.random.default_rng(0)
    X = rng.integers(0, 6, size=(500, 3)).astype(float)
    y = X[:, 0] ** 2 - X[:, 1] * X[:, 2] + rng.normal(size=500)
    ours = oocboost.DecisionTreeRegressor(criterion="friedman_mse", **kw).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # its deprecation of the name
        theirs = SkTree(criterion="friedman_mse", random_state=0, **kw).fit(X, y)
    np.testing.assert_allclose(ours.predict(X), theirs.predict(X), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(ours.feature_importances_, theirs.feature_importances_,
                               atol=1e-8)
    same = oocboost.DecisionTreeRegressor(criterion="squared_error", **kw).fit(X, y)
    np.testing.assert_array_equal(same.predict(X), ours.predict(X))
    with pytest.raises(oocboost.ParameterError, match="criterion"):
        oocboost.DecisionTreeRegressor(criterion="huber").fit(X, y)


@pytest.mark.parametrize("kw", [dict(max_depth=4), dict(min_impurity_decrease=0.01),
                                dict(max_leaf_nodes=7), dict(ccp_alpha=0.005),
                                dict(max_depth=3, min_samples_leaf=20)])
@pytest.mark.parametrize("weighted", [False, True])
def test_poisson_criterion_equals_scikit_learn(kw, weighted):
    from sklearn.tree import DecisionTreeRegressor as SkTree

    rng = np.random.default_rng(0)
    X = rng.integers(0, 6, size=(600, 3)).astype(float)
    y = rng.poisson(np.exp(0.3 * X[:, 0] - 0.2 * X[:, 1])).astype(float)
    # float32 weights, as the cache stores them
    w = rng.uniform(0.5, 2.0, 600).astype(np.float32).astype(float) if weighted else None
    ours = oocboost.DecisionTreeRegressor(criterion="poisson", **kw).fit(X, y, w)
    theirs = SkTree(criterion="poisson", random_state=0, **kw).fit(X, y, sample_weight=w)
    np.testing.assert_allclose(ours.predict(X), theirs.predict(X), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(ours.feature_importances_, theirs.feature_importances_,
                               atol=1e-9)


def test_poisson_forest_and_refusals():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(400, 3))
    y = rng.poisson(np.exp(X[:, 0])).astype(float)
    forest = oocboost.RandomForestRegressor(n_estimators=5, criterion="poisson",
                                            random_state=0).fit(X, y)
    assert (forest.predict(X) > 0).all()
    with pytest.raises(oocboost.InputError, match=">= 0"):
        oocboost.DecisionTreeRegressor(criterion="poisson").fit(X, y - 1.0)
    with pytest.raises(oocboost.InputError, match="positive sum"):
        oocboost.DecisionTreeRegressor(criterion="poisson").fit(X, np.zeros(400))


def test_export_text_weights_in_scikit_learn_format():
    X, y = _data("binary")
    ours = DecisionTreeClassifier(max_depth=2).fit(X, y)
    theirs = sktree.DecisionTreeClassifier(max_depth=2, random_state=0).fit(X, y)

    def leaves(text):
        return sorted(ln.split("weights:")[1] for ln in text.splitlines() if "weights:" in ln)

    ours_leaves = leaves(export_text(ours, show_weights=True))
    assert ours_leaves == leaves(sktree.export_text(theirs, show_weights=True))
    assert "np.float64" not in "".join(ours_leaves)
