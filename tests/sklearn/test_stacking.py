"""oocboost's stacking over caches: on the same folds it equals scikit-learn's stacking
of the same oocboost estimators (whose out-of-fold predictions refit each fold from a
subset), boosting's out-of-fold predictions through oocboost.cv equal fold-by-fold fits,
and a cache gives the model of the same data in memory."""
import numpy as np
import pyarrow as pa
import pytest
from sklearn.ensemble import StackingClassifier, StackingRegressor
from sklearn.linear_model import LogisticRegression, RidgeCV
from sklearn.model_selection import KFold

import oocboost
from oocboost.cache.store.weighted import RowWeightedCache
from oocboost.learners.boosting.cv import make_folds
from oocboost.sklearn.validation import NotFittedError


def _data(n=900, classes=2, seed=0):
    # integer features: every value has its own bin in any subset, so a fold refitted
    # from its rows alone splits where the fold trained from the whole cache does
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 8, size=(n, 4)).astype(float)
    signal = X[:, 0] + X[:, 1] * (X[:, 2] > 3) + rng.normal(size=n)
    y_class = np.digitize(signal, np.quantile(signal, np.linspace(0, 1, classes + 1)[1:-1]))
    return X, y_class, signal


def _bases(kind):
    if kind == "classifier":
        return [("gb", oocboost.GradientBoostingClassifier(n_estimators=5, max_depth=3)),
                ("dt", oocboost.DecisionTreeClassifier(max_depth=3))]
    return [("gb", oocboost.GradientBoostingRegressor(n_estimators=5, max_depth=3)),
            ("dt", oocboost.DecisionTreeRegressor(max_depth=3))]


@pytest.mark.parametrize("classes", [2, 3])
def test_classifier_equals_scikit_learn_stacking_on_the_same_folds(classes):
    X, y, _ = _data(classes=classes)
    folds = list(KFold(3, shuffle=True, random_state=0).split(X))
    ours = oocboost.StackingClassifier(_bases("classifier"), LogisticRegression(),
                                       cv=folds).fit(X, y)
    theirs = StackingClassifier(_bases("classifier"), LogisticRegression(),
                                cv=folds).fit(X, y)
    np.testing.assert_allclose(ours.final_estimator_.coef_, theirs.final_estimator_.coef_,
                               rtol=1e-6)
    np.testing.assert_allclose(ours.predict_proba(X), theirs.predict_proba(X), rtol=1e-6)
    np.testing.assert_array_equal(ours.predict(X), theirs.predict(X))
    np.testing.assert_array_equal(ours.classes_, theirs.classes_)


def test_regressor_equals_scikit_learn_stacking_on_the_same_folds():
    X, _, y = _data()
    folds = list(KFold(4, shuffle=True, random_state=1).split(X))
    ours = oocboost.StackingRegressor(_bases("regressor"), RidgeCV(), cv=folds).fit(X, y)
    theirs = StackingRegressor(_bases("regressor"), RidgeCV(), cv=folds).fit(X, y)
    np.testing.assert_allclose(ours.predict(X), theirs.predict(X), rtol=1e-6)
    assert ours.score(X, y) == pytest.approx(theirs.score(X, y), rel=1e-6)


@pytest.mark.parametrize("est", [
    oocboost.GradientBoostingClassifier(n_estimators=4, max_depth=3),
    oocboost.GradientBoostingRegressor(n_estimators=4, max_depth=3)], ids=["clf", "reg"])
@pytest.mark.parametrize("classes", [2, 3])
def test_boosting_out_of_fold_through_cv_equals_fold_by_fold_fits(est, classes, tmp_path):
    X, y_class, signal = _data(classes=classes)
    y = y_class if est._estimator_type == "classifier" else signal
    cache = oocboost.build_cache(X, tmp_path / "c.oocb", label=y.astype(float),
                                 quiet=True, block_rows=256)
    folds = make_folds(cache.n_rows, 3, labels=y, seed=3)
    together = est._cross_val_predictions(cache, folds)
    for fold in range(3):
        alone = type(est)(**est.get_params()).fit(RowWeightedCache(cache, folds != fold))
        prediction = (alone.predict_proba(cache) if est._estimator_type == "classifier"
                      else alone.predict(cache))
        np.testing.assert_allclose(together[folds == fold], prediction[folds == fold],
                                   rtol=1e-6, atol=1e-9)


def test_a_cache_gives_the_model_of_the_same_data_in_memory(tmp_path):
    X, y, _ = _data(classes=3)
    table = pa.table({"a": X[:, 0], "b": X[:, 1], "c": X[:, 2], "d": X[:, 3],
                      "y": y.astype(float)})
    cache = oocboost.build_cache(table, tmp_path / "s.oocb", label="y", quiet=True)
    bases = _bases("classifier") + [
        ("rf", oocboost.RandomForestClassifier(n_estimators=4, random_state=0)),
        ("skip", "drop")]
    from_cache = oocboost.StackingClassifier(bases, cv=4).fit(cache)
    in_memory = oocboost.StackingClassifier(bases, cv=4).fit(table.drop(["y"]), y)
    assert list(from_cache.named_estimators_) == ["gb", "dt", "rf"]
    assert list(from_cache.feature_names_in_) == ["a", "b", "c", "d"]
    np.testing.assert_allclose(from_cache.predict_proba(cache),
                               in_memory.predict_proba(table.drop(["y"])), rtol=1e-9)
    assert from_cache.score(X, y) > 0.5
    assert from_cache.transform(cache).shape == (len(X), 3 * 3)


def test_refusals(tmp_path):
    X, y, _ = _data()
    cache = oocboost.build_cache(X, tmp_path / "r.oocb", label=y.astype(float), quiet=True)
    with pytest.raises(oocboost.ParameterError, match="passthrough"):
        oocboost.StackingClassifier(_bases("classifier"), passthrough=True).fit(cache)
    with pytest.raises(oocboost.ParameterError, match="oocboost estimators"):
        oocboost.StackingClassifier([("lr", LogisticRegression())]).fit(X, y)
    with pytest.raises(oocboost.ParameterError, match="at least one"):
        oocboost.StackingClassifier([("a", "drop")]).fit(X, y)
    with pytest.raises(oocboost.ParameterError, match="stack_method"):
        oocboost.StackingRegressor(_bases("regressor"), stack_method="predict_proba").fit(X, y)
    with pytest.raises(NotFittedError, match="not fitted"):
        oocboost.StackingRegressor(_bases("regressor")).predict(X)


def test_passthrough_appends_the_raw_features():
    X, y, _ = _data()
    stack = oocboost.StackingClassifier(_bases("classifier"), passthrough=True,
                                        cv=3).fit(X, y)
    features = stack.transform(X)
    assert features.shape == (len(X), 2 + 4)
    np.testing.assert_array_equal(features[:, 2:], X)


@pytest.mark.parametrize("n_rows,nfold", [(10, 3), (101, 5), (7, 7), (1000, 4)])
def test_int_cv_deals_scikit_learns_folds(n_rows, nfold):
    from sklearn.model_selection import KFold, StratifiedKFold

    from oocboost.sklearn.stacking import consecutive_folds

    rng = np.random.default_rng(n_rows)
    labels = rng.choice(np.array(["b", "a", "c"]), n_rows, p=[0.5, 0.3, 0.2])
    labels[:nfold] = "a"                    # every class at least nfold rows
    labels[nfold:2 * nfold] = "b"
    labels[2 * nfold:3 * nfold] = "c"
    labels = labels[rng.permutation(n_rows)] if n_rows >= 3 * nfold else labels
    for splitter, given in ((KFold(nfold), None), (StratifiedKFold(nfold), labels)):
        expected = np.empty(n_rows, int)
        for k, (_, test) in enumerate(splitter.split(np.zeros((n_rows, 1)), labels)):
            expected[test] = k
        np.testing.assert_array_equal(consecutive_folds(n_rows, nfold, given), expected)
