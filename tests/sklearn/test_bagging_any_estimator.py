"""Bagging of any scikit-learn estimator on in-memory data equals scikit-learn's own
bagging of it (the same draws for the same random_state); from a cache it is bagged on
decoded rows (test_bagging_cache.py); oocboost's own trees keep the engine's path."""
import numpy as np
import pytest
from sklearn.ensemble import BaggingClassifier, BaggingRegressor
from sklearn.linear_model import Ridge
from sklearn.neighbors import KNeighborsClassifier

import oocboost


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 4))
    return X, (X[:, 0] + X[:, 1] > 0).astype(int), X @ [1.0, -2.0, 0.5, 0.0]


def test_classifier_equals_scikit_learn_bagging(data):
    X, y, _ = data
    kw = dict(n_estimators=6, max_samples=0.7, max_features=0.75, random_state=3,
              oob_score=True)
    ours = oocboost.BaggingClassifier(KNeighborsClassifier(5), **kw).fit(X, y)
    theirs = BaggingClassifier(KNeighborsClassifier(5), **kw).fit(X, y)
    np.testing.assert_array_equal(ours.predict_proba(X), theirs.predict_proba(X))
    np.testing.assert_array_equal(ours.predict(X), theirs.predict(X))
    assert ours.oob_score_ == theirs.oob_score_
    assert ours.score(X, y) == theirs.score(X, y)
    assert len(ours.estimators_) == 6 and ours.n_features_in_ == 4


def test_regressor_equals_scikit_learn_bagging(data):
    X, _, t = data
    ours = oocboost.BaggingRegressor(Ridge(alpha=0.1), n_estimators=4,
                                     random_state=1).fit(X, t)
    theirs = BaggingRegressor(Ridge(alpha=0.1), n_estimators=4, random_state=1).fit(X, t)
    np.testing.assert_allclose(ours.predict(X), theirs.predict(X), rtol=1e-12)


def test_a_cache_bags_either_and_the_estimator_decides_the_path(data, tmp_path):
    X, y, _ = data
    cache = oocboost.build_cache(X, tmp_path / "c.oocb", label=y.astype(float), quiet=True)
    knn = oocboost.BaggingClassifier(KNeighborsClassifier(), n_estimators=2).fit(cache)
    assert not hasattr(knn, "model_") and len(knn.estimators_) == 2
    own = oocboost.BaggingClassifier(oocboost.DecisionTreeClassifier(max_depth=3),
                                     n_estimators=3, random_state=0).fit(cache)
    assert own.delegate_ is None and own.model_.n_trees == 3
    refit = own.set_params(estimator=KNeighborsClassifier(3)).fit(X, y)
    assert not hasattr(refit, "model_") and refit.delegate_ is not None
