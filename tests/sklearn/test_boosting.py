"""scikit-learn style GradientBoostingClassifier / Regressor (estimators.py)."""
import numpy as np
import pytest
from sklearn.base import clone

import oocboost
from oocboost import GradientBoostingClassifier, GradientBoostingRegressor
from oocboost.datasets import generate_arrays
from oocboost.errors import ParameterError
from oocboost.model.metrics import get_metric


@pytest.fixture(scope="module")
def binary():
    d = generate_arrays(4000, 6, seed=5)
    return d.X[:3000], d.y[:3000], d.X[3000:], d.y[3000:]


def test_classifier_matches_train_and_exposes_sklearn_api(binary, tmp_path):
    X, y, Xt, yt = binary
    labels = np.where(y == 1, "yes", "no")  # any sortable labels
    clf = GradientBoostingClassifier(n_estimators=20, learning_rate=0.2, max_depth=4,
                                     cache_dir=str(tmp_path)).fit(X, labels)
    assert list(clf.classes_) == ["no", "yes"] and clf.n_features_in_ == 6
    proba = clf.predict_proba(Xt)
    assert proba.shape == (1000, 2) and np.allclose(proba.sum(axis=1), 1.0)
    assert set(clf.predict(Xt)) <= {"no", "yes"}
    # the same model as oocboost.train on the same data and parameters
    cache = oocboost.build_cache(X, tmp_path / "c", label=y.astype(float), quiet=True)
    model = oocboost.train({"objective": "binary:logistic", "eta": 0.2, "max_depth": 4,
                            "verbosity": 0}, cache, 20)
    np.testing.assert_allclose(
        proba[:, 1], oocboost.model.predict.predict(model, Xt), rtol=1e-12
    )
    assert get_metric("auc")(yt, proba[:, 1]) > 0.8
    imp = clf.feature_importances_
    assert imp.shape == (6,) and imp.sum() == pytest.approx(1.0)
    staged = list(clf.staged_predict_proba(Xt))
    assert len(staged) == 20 and np.allclose(staged[-1], proba)
    assert 0.5 < clf.score(Xt, np.where(yt == 1, "yes", "no")) <= 1.0
    assert not list((tmp_path).glob("oocboost-fit-*"))  # temporary caches removed


def test_eval_set_and_early_stopping(binary):
    X, y, Xt, yt = binary
    clf = GradientBoostingClassifier(n_estimators=300, learning_rate=1.0, max_depth=6,
                                     early_stopping_rounds=5, eval_metric="logloss")
    clf.fit(X, y, eval_set=[(Xt, yt)])
    losses = clf.evals_result_["validation_0"]["logloss"]
    assert clf.best_iteration_ == int(np.argmin(losses)) and len(losses) < 300
    # predictions use the best iteration by default
    best = clf.predict_proba(Xt, iteration_range=(0, clf.best_iteration_ + 1))
    np.testing.assert_array_equal(clf.predict_proba(Xt), best)


def test_multiclass_and_regressor(tmp_path):
    d = generate_arrays(3000, 5, task="multiclass", n_classes=3, seed=6)
    clf = GradientBoostingClassifier(n_estimators=10).fit(d.X, d.y)
    assert clf.model_.objective == "multi:softprob" and clf.model_.n_outputs == 3
    assert clf.predict_proba(d.X).shape == (3000, 3)
    r = generate_arrays(3000, 5, task="regression", seed=7)
    reg = GradientBoostingRegressor(n_estimators=30, max_depth=4).fit(r.X, r.y)
    assert reg.predict(r.X).shape == (3000,) and reg.score(r.X, r.y) > 0.5
    path = tmp_path / "reg.json"
    reg.save_model(path)
    np.testing.assert_array_equal(
        oocboost.model.predict.predict(oocboost.load_model(path), r.X), reg.predict(r.X)
    )


def test_fit_on_a_cache(binary, tmp_path):
    X, y, _, _ = binary
    cache = oocboost.build_cache(X, tmp_path / "c", label=y.astype(float), quiet=True)
    from_cache = GradientBoostingClassifier(n_estimators=5).fit(cache)
    from_arrays = GradientBoostingClassifier(n_estimators=5).fit(X, y)
    np.testing.assert_array_equal(from_cache.predict_proba(X), from_arrays.predict_proba(X))
    with pytest.raises(oocboost.ParameterError, match="y=None"):
        GradientBoostingClassifier().fit(cache, y)


def test_params_clone_and_errors():
    est = GradientBoostingRegressor(n_estimators=7, reg_lambda=2.0, memory_limit="1GB")
    params = est.get_params()
    assert params["n_estimators"] == 7 and params["reg_lambda"] == 2.0
    twin = clone(est)
    assert twin.get_params() == params and twin is not est
    est.set_params(max_depth=3)
    assert est.max_depth == 3
    with pytest.raises(oocboost.ParameterError, match="invalid parameter"):
        est.set_params(max_dept=3)
    with pytest.raises(oocboost.ParameterError, match="not fitted"):
        est.predict(np.zeros((2, 3)))
    with pytest.raises(oocboost.ParameterError, match="single class"):
        GradientBoostingClassifier().fit(np.zeros((10, 2)), np.ones(10))


def test_cat_encoding_ordered_ts_from_a_dataframe():
    """The estimators build their cache with ``cat_encoding``: ordered target statistics
    from a pandas category column, raw strings at predict time; a multiclass classifier's
    are one per class, derived features that ``n_features_in_`` and the importances
    leave out."""
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(0)
    n = 3000
    level = rng.integers(0, 150, n)
    effect = rng.normal(size=150)
    frame = pd.DataFrame({"shop": pd.Categorical([f"s{v}" for v in level]),
                          "x": rng.normal(size=n)})
    y = (effect[level] + frame["x"].to_numpy() + rng.normal(size=n) * 0.5 > 0).astype(int)
    clf = GradientBoostingClassifier(n_estimators=20, max_depth=3,
                                     cat_encoding="ordered_ts").fit(frame, y)
    assert clf.model_.feature_types == ["ordered_ts", "numeric"]
    assert (clf.predict(frame) == y).mean() > 0.75
    multi = GradientBoostingClassifier(n_estimators=20, max_depth=3,
                                       cat_encoding="ordered_ts").fit(frame, level % 3)
    assert multi.model_.feature_names == ["shop", "x", "shop[y=1]", "shop[y=2]"]
    assert multi.n_features_in_ == 2 and list(multi.feature_names_in_) == ["shop", "x"]
    assert multi.feature_importances_.shape == (2,)
    assert multi.feature_importances_[0] > 0.9          # the class is the shop's
    assert (multi.predict(frame) == level % 3).mean() > 0.95
    with pytest.raises(ParameterError, match="ts_combinations goes with"):
        GradientBoostingClassifier(n_estimators=2, ts_combinations=2).fit(frame, y)
