"""Bagging any scikit-learn estimator from a cache: rows decoded to their bins' middles,
each bag's estimator fitted on its drawn rows and columns, scikit-learn's aggregation."""
import numpy as np
import pytest
from sklearn.base import clone
from sklearn.ensemble import BaggingClassifier as SkBagging
from sklearn.linear_model import Ridge
from sklearn.neighbors import KNeighborsClassifier
from sklearn.svm import LinearSVC

import oocboost
from oocboost.sklearn.bagging_cache import _bag_rows


def _integers(n=3000, seed=0):
    """Evenly spaced integer values: a bin per value, whose middle is the value."""
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 40, size=(n, 4)).astype(float)
    y = (X[:, 0] + X[:, 1] + rng.normal(scale=4, size=n) > 40).astype(int)
    return X, y


@pytest.mark.parametrize("bootstrap,max_features", [(True, 1.0), (False, 0.5)])
def test_each_bag_is_its_estimator_fitted_on_its_rows_and_columns(tmp_path, bootstrap,
                                                                  max_features):
    X, y = _integers()
    cache = oocboost.build_cache(X, tmp_path / "c", label=y, quiet=True)
    bag = oocboost.BaggingClassifier(KNeighborsClassifier(n_neighbors=7), n_estimators=4,
                                     max_samples=500, bootstrap=bootstrap,
                                     max_features=max_features, random_state=3).fit(cache)
    proba = np.zeros((len(X), 2))
    for t, (est, features) in enumerate(zip(bag.estimators_, bag.estimators_features_)):
        rows = _bag_rows(3, t, len(X), 500, bootstrap)
        twin = clone(KNeighborsClassifier(n_neighbors=7)).fit(X[np.ix_(rows, features)],
                                                              y[rows])
        np.testing.assert_array_equal(est.predict(X[:, features]),
                                      twin.predict(X[:, features]))
        proba += twin.predict_proba(X[:, features])
    np.testing.assert_allclose(bag.predict_proba(X), proba / 4)
    np.testing.assert_allclose(bag.predict_proba(cache), proba / 4)   # decoded blocks


def test_accuracy_next_to_scikit_learns_bagging_in_memory(tmp_path):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(12000, 6))
    y = (X[:, 0] + X[:, 1] > 0).astype(int)
    cache = oocboost.build_cache(X[:9000], tmp_path / "c", label=y[:9000], quiet=True)
    ours = oocboost.BaggingClassifier(KNeighborsClassifier(), n_estimators=8,
                                      max_samples=2000, random_state=0).fit(cache)
    theirs = SkBagging(KNeighborsClassifier(), n_estimators=8, max_samples=2000,
                       random_state=0).fit(X[:9000], y[:9000])
    assert abs(ours.score(X[9000:], y[9000:]) - theirs.score(X[9000:], y[9000:])) < 0.01


def test_votes_without_predict_proba_and_regression(tmp_path):
    X, y = _integers(seed=2)
    cache = oocboost.build_cache(X, tmp_path / "c", label=y, quiet=True)
    svc = oocboost.BaggingClassifier(LinearSVC(), n_estimators=3, max_samples=0.5,
                                     random_state=0).fit(cache)
    votes = np.mean([e.predict(X[:, f]) for e, f in zip(svc.estimators_,
                                                         svc.estimators_features_)], axis=0)
    np.testing.assert_allclose(svc.predict_proba(X)[:, 1], votes)
    target = X[:, 0] * 2 - X[:, 2]
    reg_cache = oocboost.build_cache(X, tmp_path / "r", label=target, quiet=True)
    ridge = oocboost.BaggingRegressor(Ridge(), n_estimators=3, random_state=0).fit(reg_cache)
    assert ridge.score(X, target) > 0.999


def test_categories_are_codes_and_missing_values_nan(tmp_path):
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"x": [1.0, np.nan, 3.0, 2.0] * 50,
                          "city": ["rome", "oslo", "rome", None] * 50,
                          "y": [0, 1, 0, 1] * 50})
    cache = oocboost.build_cache(frame, tmp_path / "c", label="y", quiet=True)
    from oocboost.sklearn.bagging_cache import _decoder

    block = next(iter(cache.iter_blocks()))
    values = _decoder(cache.bin_mapper)(block.codes)
    assert np.isnan(values[1, 0]) and np.isnan(values[3, 1])
    rome = cache.bin_mapper.category_names(1).index("rome")
    assert values[0, 1] == rome and values[0, 0] == 1.0


def test_refusals_name_what_to_do(tmp_path):
    X, y = _integers(n=500)
    cache = oocboost.build_cache(X, tmp_path / "c", label=y, quiet=True)
    with pytest.raises(oocboost.ParameterError, match="oob_score"):
        oocboost.BaggingClassifier(KNeighborsClassifier(), oob_score=True).fit(cache)
    with pytest.raises(oocboost.MemoryLimitError, match="lower max_samples"):
        oocboost.BaggingClassifier(KNeighborsClassifier(), max_samples=500,
                                   memory_limit="300MB").fit(cache)
