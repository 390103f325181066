"""Conformal intervals and sets: MAPIE's own classes, given the same fitted models and
rows, give the same bounds and sets (split, cv+, LAC); held-out coverage is at least the
nominal one less sampling noise; caches work as arrays do; refusals name the fix."""
import mapie.classification as mapie_classification
import mapie.regression as mapie_regression
import numpy as np
import pytest
from sklearn.model_selection import PredefinedSplit

import oocboost
from oocboost.conformal import ConformalClassifier, ConformalRegressor, upper_rank
from oocboost.errors import ParameterError


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(21)
    n = 2400
    X = rng.normal(size=(n, 4))
    y = X[:, 0] - X[:, 1] * X[:, 2] + rng.normal(0, 0.4 + 0.3 * np.abs(X[:, 3]), n)
    classes = np.digitize(y + rng.normal(0, 0.5, n), [-0.6, 0.6])
    return X, y, classes


def _regressor():
    return oocboost.GradientBoostingRegressor(n_estimators=15, max_depth=3)


def test_split_intervals_are_mapies(data):
    X, y, _ = data
    train, calib, test = slice(0, 1200), slice(1200, 1800), slice(1800, None)
    cr = ConformalRegressor(_regressor()).fit(X[train], y[train],
                                              calibration=(X[calib], y[calib]))
    for alpha in (0.05, 0.1, 0.3):
        ref = mapie_regression.SplitConformalRegressor(cr.estimator_,
                                                       confidence_level=1 - alpha,
                                                       prefit=True)
        ref.conformalize(X[calib], y[calib])
        _, bounds = ref.predict_interval(X[test])
        np.testing.assert_allclose(cr.predict_interval(X[test], alpha=alpha),
                                   bounds[:, :, 0], rtol=1e-12, atol=1e-12)


def test_cv_plus_intervals_are_mapies(data):
    X, y, _ = data
    Xs, ys = X[:600], y[:600]
    cr = ConformalRegressor(_regressor(), method="cv+", cv=4, random_state=3).fit(Xs, ys)
    ref = mapie_regression.CrossConformalRegressor(
        _regressor(), confidence_level=0.9, method="plus",
        cv=PredefinedSplit(cr.fold_of_row_))
    ref.fit_conformalize(Xs, ys)
    point, bounds = ref.predict_interval(X[1800:1900])
    np.testing.assert_allclose(cr.predict_interval(X[1800:1900], alpha=0.1),
                               bounds[:, :, 0], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(cr.predict(X[1800:1900]), point, rtol=1e-12)


def test_lac_sets_are_mapies(data):
    X, _, classes = data
    labels = np.array(["low", "mid", "high"])[classes]
    cc = ConformalClassifier(oocboost.GradientBoostingClassifier(n_estimators=10,
                                                                 max_depth=3))
    cc.fit(X[:1200], labels[:1200], calibration=(X[1200:1800], labels[1200:1800]))
    ref = mapie_classification.SplitConformalClassifier(cc.estimator_,
                                                         confidence_level=0.8,
                                                         conformity_score="lac",
                                                         prefit=True)
    ref.conformalize(X[1200:1800], labels[1200:1800])
    _, sets = ref.predict_set(X[1800:])
    ours = cc.predict_set(X[1800:], alpha=0.2)
    assert ours.dtype == bool and ours.shape == (600, 3)
    np.testing.assert_array_equal(ours, sets[:, :, 0])


@pytest.mark.parametrize("method", ["split", "cv+"])
def test_held_out_coverage(method):
    """1 - alpha = 90%, averaged over three draws of the calibration rows or folds:
    coverage of 2,000 held-out rows within 2 points of 90%. (One draw's coverage varies
    by about 1.2 points, from its calibration rows and its test rows; the mean of three
    by about 0.7.)"""
    rng = np.random.default_rng(8)
    X = rng.normal(size=(6000, 4))
    y = X[:, 0] - X[:, 1] * X[:, 2] + rng.normal(0, 0.4 + 0.3 * np.abs(X[:, 3]), 6000)
    covered = []
    for seed in range(3):
        cr = ConformalRegressor(_regressor(), method=method, cv=3, random_state=seed)
        bounds = cr.fit(X[:4000], y[:4000]).predict_interval(X[4000:], alpha=0.1)
        assert np.all(bounds[:, 0] < bounds[:, 1])
        covered.append(np.mean((bounds[:, 0] <= y[4000:]) & (y[4000:] <= bounds[:, 1])))
    assert abs(np.mean(covered) - 0.9) <= 0.02, covered


def test_from_a_cache(data, tmp_path):
    """A held-out share of the cache's rows (weighted zero for training), or a
    calibration cache: the scores are the calibration rows' residuals."""
    X, y, classes = data
    cache = oocboost.build_cache(X[:1800], tmp_path / "t.oocb", label=y[:1800], quiet=True)
    calib = oocboost.build_cache(X[1800:2100], tmp_path / "c.oocb", label=y[1800:2100],
                                 reference=cache, quiet=True)
    cr = ConformalRegressor(_regressor()).fit(cache, calibration=calib)
    stored = calib.read_labels()[0].astype(np.float64)      # the cache's float32 labels
    residual = np.sort(np.abs(stored - cr.estimator_.predict(X[1800:2100])))
    q = residual[upper_rank(300, 0.1) - 1]
    np.testing.assert_allclose(cr.predict_interval(X[2100:], alpha=0.1),
                               cr.predict(X[2100:])[:, None] + [-q, q], rtol=1e-9)
    held = ConformalRegressor(_regressor(), calibration_size=0.3).fit(cache)
    assert len(held.conformity_scores_) == 540
    bounds = held.predict_interval(X[2100:], alpha=0.1)
    assert 0.85 <= np.mean((bounds[:, 0] <= y[2100:]) & (y[2100:] <= bounds[:, 1])) <= 0.96
    cls_cache = oocboost.build_cache(X[:1800], tmp_path / "k.oocb", label=classes[:1800],
                                     quiet=True)
    cc = ConformalClassifier(oocboost.GradientBoostingClassifier(n_estimators=5)).fit(
        cls_cache)
    sets = cc.predict_set(X[2100:], alpha=0.1)
    assert np.mean(sets[np.arange(300), classes[2100:]]) >= 0.85


def test_refusals_and_infinite_bounds(data):
    X, y, _ = data
    cr = ConformalRegressor(_regressor()).fit(X[:200], y[:200],
                                              calibration=(X[200:208], y[200:208]))
    with pytest.raises(ParameterError, match="8 calibration scores are too few for "
                                             "alpha=0.1.*at least 9 rows"):
        cr.predict_interval(X[:5], alpha=0.1)
    cr.allow_infinite_bounds = True
    assert np.all(np.isinf(cr.predict_interval(X[:5], alpha=0.1)))
    with pytest.raises(ParameterError, match=r"alpha must be in \(0, 1\)"):
        cr.predict_interval(X[:5], alpha=1.5)
    with pytest.raises(ParameterError, match="method must be one of"):
        ConformalRegressor(_regressor(), method="jackknife").fit(X[:50], y[:50])
    with pytest.raises(ParameterError, match="calibration= is split's"):
        ConformalRegressor(_regressor(), method="cv+").fit(X[:50], y[:50],
                                                           calibration=(X[:5], y[:5]))
    with pytest.raises(ParameterError, match="not fitted yet"):
        ConformalClassifier(_regressor()).predict_set(X[:5])
    with pytest.raises(ParameterError, match="calibration label 'z' is not among"):
        ConformalClassifier(oocboost.GradientBoostingClassifier(n_estimators=2)).fit(
            X[:100], np.array(["a", "b"])[(y[:100] > 0).astype(int)],
            calibration=(X[100:110], np.array(["a"] * 9 + ["z"])))
