"""Every learner reads a cache with sparse columns (``kernels.codes.SparseCodes``) through
the same engine and grows the model it grows from the same data stored dense: the same
splits, and predictions equal (float sums of the derived implied bins may differ in their
last bits), whatever the block size and thread count; bundled columns may be sparse too."""
import numpy as np
import pytest

import oocboost
from oocboost.learners import train_learner
from oocboost.utils.threads import thread_limit


def table(n_rows, seed=0):
    """(X, y): two dense columns (one with missing values), mostly-zero columns of
    different shares, a one-hot block of 12 columns (bundled unless told not to)."""
    rng = np.random.default_rng(seed)
    X = np.zeros((n_rows, 20))
    X[:, 0] = rng.normal(size=n_rows)
    X[:, 1] = rng.normal(size=n_rows)
    X[rng.random(n_rows) < 0.05, 1] = np.nan
    for j, share in zip(range(2, 8), (0.01, 0.03, 0.06, 0.1, 0.15, 0.25)):
        on = rng.random(n_rows) < share
        X[on, j] = rng.integers(1, 6, on.sum())
    hot = rng.integers(0, 80, n_rows)
    for j in range(12):
        X[hot == j, 8 + j] = 1.0
    score = X[:, 0] + 1.5 * X[:, 2] - X[:, 4] + 0.7 * X[:, 6] + X[:, 9] + 2 * X[:, 12]
    y = (score + rng.normal(size=n_rows) * 0.5 > 0.3).astype(float)
    return X, y


@pytest.fixture(scope="module")
def caches(tmp_path_factory):
    """{(block_rows, bundled): (sparse cache, dense cache)} and the data."""
    X, y = table(6000)
    path = tmp_path_factory.mktemp("sparse-learners")
    out = {}
    for block_rows, bundle in ((1000, False), (6000, False), (1000, True)):
        common = dict(label=y, block_rows=block_rows, quiet=True, enable_bundle=bundle)
        name = f"{block_rows}-{bundle}"
        sparse = oocboost.build_cache(X, path / f"s{name}", **common)
        dense = oocboost.build_cache(X, path / f"d{name}", enable_sparse=False, **common)
        assert sparse.sparse_summary()["column_blocks"] > 0
        assert (sparse.bundles is not None) == bundle
        out[block_rows, bundle] = (sparse, dense)
    return X, y, out


LEARNERS = {
    "boosting": ("gbtree", {"objective": "binary:logistic", "max_depth": 4}, 6),
    "lossguide": ("gbtree", {"objective": "binary:logistic", "grow_policy": "lossguide",
                             "max_leaves": 12, "max_depth": 0, "subsample": 0.7,
                             "seed": 1}, 6),
    "forest": ("random-forest", {"max_depth": 6, "random_state": 0}, 4),
    "forest-max-features": ("random-forest", {"max_depth": 6, "random_state": 0,
                                              "max_features": 0.3}, 4),
    "tree": ("decision-tree", {"max_depth": 6}, 1),
    "adaboost": ("adaboost", {"max_depth": 2}, 4),
    "hoeffding": ("hoeffding-tree", {"grace_period": 200}, 1),
    "isolation": ("isolation-forest", {"random_state": 0}, 8),
}


def assert_same_model(a, b, X):
    assert a.n_trees == b.n_trees
    for s, t in zip(a.trees, b.trees):
        np.testing.assert_array_equal(s.feature, t.feature)
        np.testing.assert_array_equal(s.bin_threshold, t.bin_threshold)
        np.testing.assert_array_equal(s.left, t.left)
    np.testing.assert_allclose(a.predict(X), b.predict(X), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", list(LEARNERS))
@pytest.mark.parametrize("layout", [(1000, False), (6000, False), (1000, True)],
                         ids=["blocks-1000", "one-block", "bundled"])
def test_the_sparse_cache_grows_the_dense_caches_model(caches, name, layout):
    X, _, built = caches
    learner, params, n_estimators = LEARNERS[name]
    sparse, dense = built[layout]
    a = train_learner(learner, params, sparse, n_estimators=n_estimators)
    b = train_learner(learner, params, dense, n_estimators=n_estimators)
    assert_same_model(a, b, X)
    np.testing.assert_allclose(a.predict(sparse), b.predict(dense), rtol=1e-12, atol=1e-12)
    if name == "boosting":
        used = {int(f) for t in a.trees for f in t.feature if f >= 0}
        assert used & {2, 3, 4, 5}, "some split is on a sparse column"


@pytest.mark.parametrize("threads", [1, 2])
def test_the_model_does_not_depend_on_the_thread_count(caches, threads):
    X, _, built = caches
    sparse, _ = built[1000, False]
    params = {"objective": "binary:logistic", "max_depth": 5}
    with thread_limit(1):
        one = oocboost.train(params, sparse, 5, verbose_eval=False)
    with thread_limit(threads):
        other = oocboost.train(params, sparse, 5, verbose_eval=False)
    assert_same_model(one, other, X)
    np.testing.assert_array_equal(one.predict(X), other.predict(X))


def test_the_estimators_fit_a_sparse_cache(caches):
    X, y, built = caches
    sparse, dense = built[1000, True]
    a = oocboost.GradientBoostingClassifier(n_estimators=5, max_depth=3).fit(sparse)
    b = oocboost.GradientBoostingClassifier(n_estimators=5, max_depth=3).fit(dense)
    np.testing.assert_allclose(a.predict_proba(X), b.predict_proba(X), rtol=1e-12)
    assert ((a.predict(X) == y).mean()) > 0.7
