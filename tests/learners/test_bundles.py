"""Exclusive feature bundling end to end: every learner trained on a bundled cache gives
the model trained on the same data without bundling (no conflicts), whatever the block
size and prefetch depth, while it reads fewer bytes of codes; the model predicts raw data,
the bundled cache and the unbundled one alike, and survives a save/load."""
import numpy as np
import pytest

import oocboost
from tests.cache.test_bundles import as_matrix, one_hot_table


@pytest.fixture(scope="module")
def caches(tmp_path_factory):
    """(X, y, bundled cache, unbundled cache): two dense columns (one with missing
    values), one-hot blocks of 40 and 9 columns, a wide categorical code column."""
    rng = np.random.default_rng(0)
    columns, y = one_hot_table(rng, 6000, blocks=(40, 9))
    columns["x1"][::13] = np.nan
    X, names = as_matrix(columns)
    path = tmp_path_factory.mktemp("bundles")
    common = dict(label=y, feature_names=names, block_rows=2048, quiet=True)
    bundled = oocboost.build_cache(X, path / "b", **common)
    # one code a row and feature: neither bundled nor sparse (tests/learners/
    # test_sparse_columns.py has the sparse layout)
    plain = oocboost.build_cache(X, path / "p", enable_bundle=False, enable_sparse=False,
                                 **common)
    assert bundled.n_columns == 4 and plain.n_columns == 51
    return X, y, bundled, plain


BOOSTING = {
    "depthwise": {"max_depth": 4},
    "lossguide": {"grow_policy": "lossguide", "max_leaves": 12, "max_depth": 0},
    "goss": {"max_depth": 4, "data_sample_strategy": "goss", "learning_rate": 0.5},
    "multiclass": {"objective": "multi:softprob", "num_class": 3, "max_depth": 3,
                   "subsample": 0.7, "colsample_bynode": 0.5},
    "hinge-leaves": {"objective": "reg:absoluteerror", "max_depth": 3},
}


def _labels(params, y, X):
    if params.get("objective") == "multi:softprob":
        return y + (X[:, 2] > 0)        # three classes
    return y


@pytest.mark.parametrize("name", list(BOOSTING))
def test_boosting_equals_the_unbundled_model(caches, tmp_path, name):
    X, y, bundled, plain = caches
    params = dict(BOOSTING[name], seed=3)
    if name == "multiclass":
        labels = _labels(params, y, X)
        common = dict(feature_names=bundled.feature_names, block_rows=2048, quiet=True)
        bundled = oocboost.build_cache(X, tmp_path / "b", label=labels, **common)
        plain = oocboost.build_cache(X, tmp_path / "p", label=labels, enable_bundle=False,
                                     enable_sparse=False, **common)
    a = oocboost.train(params, bundled, 15, verbose_eval=False)
    b = oocboost.train(params, plain, 15, verbose_eval=False)
    np.testing.assert_array_equal(a.predict(bundled), b.predict(plain))
    np.testing.assert_array_equal(a.predict(X), b.predict(X))
    np.testing.assert_array_equal(a.predict(plain), a.predict(bundled))
    features = {int(f) for t in a.trees for f in t.feature if f >= 0}
    assert features & set(range(2, 51)), "some split is on a bundled feature"
    assert a.training_log["bytes_read"] < b.training_log["bytes_read"] / 5
    a.save_model(tmp_path / "m.json")
    np.testing.assert_array_equal(oocboost.load_model(tmp_path / "m.json").predict(bundled),
                                  a.predict(bundled))


@pytest.mark.parametrize("prefetch", [0, 2])
@pytest.mark.parametrize("block_rows", [700, 6000])
def test_blocks_and_prefetch_do_not_matter(caches, tmp_path, block_rows, prefetch):
    X, y, _, plain = caches
    cache = oocboost.build_cache(X, tmp_path / "b", label=y, block_rows=block_rows,
                                 feature_names=plain.feature_names, quiet=True)
    params = {"max_depth": 5, "prefetch": prefetch, "seed": 1}
    a = oocboost.train(params, cache, 10, verbose_eval=False)
    b = oocboost.train(params, plain, 10, verbose_eval=False)
    np.testing.assert_array_equal(a.predict(X), b.predict(X))


@pytest.mark.parametrize("estimator, kwargs", [
    (oocboost.RandomForestClassifier, {"n_estimators": 6, "max_features": None}),
    (oocboost.ExtraTreesRegressor, {"n_estimators": 4, "max_features": None}),
    (oocboost.RandomForestClassifier, {"n_estimators": 6, "max_features": 0.3}),
    (oocboost.DecisionTreeClassifier, {"max_depth": 6}),
    (oocboost.AdaBoostClassifier, {"n_estimators": 8}),
])
def test_trees_forests_and_adaboost(caches, estimator, kwargs):
    X, y, bundled, plain = caches
    a = estimator(random_state=0, **kwargs).fit(bundled)
    proba = "predict_proba" if hasattr(a, "predict_proba") else "predict"
    got = getattr(a, proba)(bundled)
    assert np.isfinite(got).all()
    if kwargs.get("max_features") == 0.3:
        # per-node feature draws take the full-histogram path on a bundled cache (as
        # with a wide feature), so the forest differs from the unbundled one: it must
        # still learn the label
        assert np.mean((got[:, 1] > 0.5) == y) > 0.8
        return
    b = estimator(random_state=0, **kwargs).fit(plain)
    np.testing.assert_array_equal(got, getattr(b, proba)(plain))
    np.testing.assert_array_equal(getattr(a, proba)(X), getattr(b, proba)(X))


def test_inspection_reads_decoded_codes(caches):
    X, y, bundled, plain = caches
    model = oocboost.train({"max_depth": 3, "seed": 0}, bundled, 5, verbose_eval=False)
    np.testing.assert_allclose(model.predict(bundled, pred_contribs=True),
                               model.predict(plain, pred_contribs=True), rtol=0, atol=0)
    tree = oocboost.DecisionTreeClassifier(max_depth=4, random_state=0).fit(bundled)
    a = oocboost.permutation_importance(tree, bundled, n_repeats=2, random_state=0)
    b = oocboost.permutation_importance(tree, plain, n_repeats=2, random_state=0)
    np.testing.assert_array_equal(a["importances"], b["importances"])
