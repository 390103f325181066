"""Every oocboost estimator inside scikit-learn's own tools: clone, tags, nested
parameters, the HTML repr, cross-validation, grid search, pipelines, stacking,
calibration, permutation importance and partial dependence. Where a tool's answer can be
computed by hand (cross-validation, grid search's refit, pipelines, partial dependence),
the test computes it and asks for the same numbers."""
import os
import subprocess
import sys

import numpy as np
import pytest
from sklearn.base import clone, is_classifier, is_regressor
from sklearn.calibration import CalibratedClassifierCV
from sklearn.ensemble import StackingClassifier, StackingRegressor
from sklearn.inspection import partial_dependence, permutation_importance
from sklearn.linear_model import LinearRegression, LogisticRegression
from sklearn.model_selection import GridSearchCV, KFold, StratifiedKFold, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils import get_tags

import oocboost

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def classifiers():
    return [oocboost.GradientBoostingClassifier(n_estimators=8, max_depth=3),
            oocboost.DecisionTreeClassifier(max_depth=4),
            oocboost.RandomForestClassifier(n_estimators=5, max_depth=4, random_state=0),
            oocboost.ExtraTreesClassifier(n_estimators=5, max_depth=4, random_state=0),
            oocboost.BaggingClassifier(n_estimators=4, random_state=0),
            oocboost.AdaBoostClassifier(n_estimators=8)]


def regressors():
    return [oocboost.GradientBoostingRegressor(n_estimators=8, max_depth=3),
            oocboost.DecisionTreeRegressor(max_depth=4),
            oocboost.RandomForestRegressor(n_estimators=5, max_depth=4, random_state=0),
            oocboost.ExtraTreesRegressor(n_estimators=5, max_depth=4, random_state=0),
            oocboost.BaggingRegressor(n_estimators=4, random_state=0),
            oocboost.AdaBoostRegressor(n_estimators=8)]


ALL = classifiers() + regressors()
IDS = [type(e).__name__ for e in ALL]


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 4))
    X[rng.random(X.shape) < 0.03] = np.nan
    signal = np.nan_to_num(X[:, 0]) + 0.5 * np.nan_to_num(X[:, 1]) ** 2
    y_class = (signal + 0.3 * rng.normal(size=300) > 0.4).astype(int)
    y_reg = signal + 0.1 * rng.normal(size=300)
    return X, y_class, y_reg


def _y(est, data):
    return data[1] if is_classifier(est) else data[2]


def _score_by_hand(est, X, y, folds):
    scores = []
    for train, test in folds.split(X, y):
        model = clone(est).fit(X[train], y[train])
        scores.append(model.score(X[test], y[test]))
    return np.array(scores)


@pytest.mark.parametrize("est", ALL, ids=IDS)
def test_estimator_protocol(est):
    assert is_classifier(est) != is_regressor(est)
    assert get_tags(est).input_tags.allow_nan
    twin = clone(est)
    assert twin is not est and twin.get_params() == est.get_params()
    assert type(est).__name__ in est._repr_html_()
    with pytest.raises(oocboost.ParameterError, match="invalid parameter"):
        est.set_params(not_a_parameter=1)


def test_nested_parameters_of_bagging():
    bag = oocboost.BaggingClassifier(estimator=oocboost.DecisionTreeClassifier())
    assert "estimator__max_depth" in bag.get_params(deep=True)
    bag.set_params(estimator__max_depth=3, n_estimators=7)
    assert bag.estimator.max_depth == 3 and bag.n_estimators == 7


@pytest.mark.parametrize("est", ALL, ids=IDS)
def test_cross_val_score_equals_the_folds_by_hand(est, data):
    X, y = data[0], _y(est, data)
    folds = (StratifiedKFold(3, shuffle=True, random_state=0) if is_classifier(est)
             else KFold(3, shuffle=True, random_state=0))
    scores = cross_val_score(est, X, y, cv=folds)
    np.testing.assert_array_equal(scores, _score_by_hand(est, X, y, folds))
    assert np.all(np.isfinite(scores))


@pytest.mark.parametrize("est", [classifiers()[0], classifiers()[2], regressors()[1],
                                 regressors()[5]],
                         ids=["GradientBoostingClassifier", "RandomForestClassifier",
                              "DecisionTreeRegressor", "AdaBoostRegressor"])
def test_grid_search_refits_the_best_parameters(est, data):
    X, y = data[0], _y(est, data)
    search = GridSearchCV(est, {"max_depth": [1, 3]}, cv=3).fit(X, y)
    assert search.best_params_["max_depth"] in (1, 3)
    means = search.cv_results_["mean_test_score"]
    assert search.best_score_ == means.max()
    refit = clone(est).set_params(**search.best_params_).fit(X, y)
    np.testing.assert_array_equal(search.predict(X), refit.predict(X))


@pytest.mark.parametrize("est", [classifiers()[0], regressors()[2]],
                         ids=["GradientBoostingClassifier", "RandomForestRegressor"])
def test_pipeline_equals_the_steps_by_hand(est, data):
    X, y = data[0], _y(est, data)
    pipe = make_pipeline(StandardScaler(), clone(est)).fit(X, y)
    scaled = StandardScaler().fit(X).transform(X)
    by_hand = clone(est).fit(scaled, y)
    np.testing.assert_array_equal(pipe.predict(X), by_hand.predict(scaled))


def test_stacking_classifier_and_regressor(data):
    X, y_class, y_reg = data
    stack = StackingClassifier(
        [("gb", classifiers()[0]), ("rf", classifiers()[2])],
        final_estimator=LogisticRegression(), cv=3).fit(X, y_class)
    proba = stack.predict_proba(X)
    assert proba.shape == (len(X), 2) and np.allclose(proba.sum(axis=1), 1.0)
    assert stack.score(X, y_class) > 0.8
    reg = StackingRegressor([("gb", regressors()[0]), ("tree", regressors()[1])],
                            final_estimator=LinearRegression(), cv=3).fit(X, y_reg)
    assert reg.score(X, y_reg) > 0.7


def test_calibrated_classifier(data):
    X, y = data[0], data[1]
    calibrated = CalibratedClassifierCV(classifiers()[0], cv=3).fit(X, y)
    proba = calibrated.predict_proba(X)
    assert proba.shape == (len(X), 2)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert calibrated.score(X, y) > 0.8


@pytest.mark.parametrize("est", [classifiers()[0], regressors()[2]],
                         ids=["GradientBoostingClassifier", "RandomForestRegressor"])
def test_permutation_importance_of_scikit_learn(est, data):
    X, y = data[0], _y(est, data)
    est = clone(est).fit(X, y)
    result = permutation_importance(est, X, y, n_repeats=3, random_state=0)
    assert result.importances.shape == (4, 3)
    # the label depends on features 0 and 1 only
    assert set(np.argsort(result.importances_mean)[-2:]) == {0, 1}


@pytest.mark.parametrize("est", [classifiers()[0], classifiers()[5], regressors()[0],
                                 regressors()[3]],
                         ids=["GradientBoostingClassifier", "AdaBoostClassifier",
                              "GradientBoostingRegressor", "ExtraTreesRegressor"])
def test_partial_dependence_equals_the_average_by_hand(est, data):
    X, y = data[0], _y(est, data)
    X = np.nan_to_num(X)  # scikit-learn's grid needs finite values
    est = clone(est).fit(X, y)
    result = partial_dependence(est, X, [0], grid_resolution=7, kind="average",
                                method="brute")
    grid = result["grid_values"][0]
    by_hand = []
    for value in grid:
        Xv = X.copy()
        Xv[:, 0] = value
        by_hand.append(est.predict_proba(Xv)[:, 1].mean() if is_classifier(est)
                       else est.predict(Xv).mean())
    np.testing.assert_allclose(result["average"][0], by_hand, rtol=1e-12)


def test_feature_names_follow_scikit_learn(data):
    pd = pytest.importorskip("pandas")
    X, y = data[0], data[1]
    frame = pd.DataFrame(X, columns=["a", "b", "c", "d"])
    est = oocboost.GradientBoostingClassifier(n_estimators=3).fit(frame, y)
    assert est.n_features_in_ == 4
    assert list(est.feature_names_in_) == ["a", "b", "c", "d"]
    est.fit(X, y)  # an array has no column names: scikit-learn sets none
    assert est.n_features_in_ == 4 and not hasattr(est, "feature_names_in_")


_WITHOUT_SKLEARN = """
import sys
sys.modules["sklearn"] = None  # as if scikit-learn were not installed
import numpy as np
import oocboost
from oocboost.sklearn import base
assert not base.HAVE_SKLEARN
X = np.random.default_rng(0).normal(size=(200, 3))
y = (X[:, 0] > 0).astype(int)
est = oocboost.GradientBoostingClassifier(n_estimators=3, max_depth=2)
assert est.get_params()["max_depth"] == 2
est.set_params(max_depth=3)
assert repr(est) == "GradientBoostingClassifier(max_depth=3, n_estimators=3)", repr(est)
try:
    est.set_params(max_dept=3)
except oocboost.ParameterError as exc:
    assert "invalid parameter" in str(exc)
else:
    raise AssertionError("an unknown parameter was accepted")
assert est.fit(X, y).score(X, y) > 0.9
assert est._estimator_type == "classifier"
forest = oocboost.RandomForestClassifier(n_estimators=4, random_state=0).fit(X, y)
result = oocboost.permutation_importance(forest, X, y, n_repeats=2, random_state=0)
assert result.importances.shape == (3, 2) and result["importances_mean"].argmax() == 0
print("ok")
"""


def test_estimators_work_without_scikit_learn():
    r = subprocess.run([sys.executable, "-c", _WITHOUT_SKLEARN], capture_output=True,
                       text=True, timeout=300, cwd=REPO)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr


def test_pandas_category_and_arrow_dictionary_columns_keep_their_names(data):
    pd = pytest.importorskip("pandas")
    import pyarrow as pa

    rng = np.random.default_rng(3)
    frame = pd.DataFrame({"x": rng.normal(size=300),
                          "shop": pd.Categorical(rng.choice(["a", "b", "c"], size=300))})
    y = frame["x"].to_numpy() + 2.0 * (frame["shop"] == "b").to_numpy()
    est = oocboost.GradientBoostingRegressor(n_estimators=10).fit(frame, y)
    assert list(est.feature_names_in_) == ["x", "shop"]
    assert est.model_.feature_types == ["numeric", "categorical"]
    assert est.score(frame, y) > 0.9
    table = pa.Table.from_pandas(frame, preserve_index=False)  # shop: a dictionary column
    assert pa.types.is_dictionary(table.schema.field("shop").type)
    twin = oocboost.GradientBoostingRegressor(n_estimators=10).fit(table, y)
    assert list(twin.feature_names_in_) == ["x", "shop"]
    np.testing.assert_array_equal(twin.predict(table), est.predict(frame))
    # the categories are read by name, whatever their order in the data
    shuffled = frame.assign(shop=frame["shop"].cat.reorder_categories(["c", "b", "a"]))
    np.testing.assert_array_equal(est.predict(shuffled), est.predict(frame))


@pytest.mark.parametrize("est", ALL, ids=IDS)
def test_polars_frames_give_the_models_of_the_same_pandas_frames(est, data):
    """A Polars DataFrame (Categorical, Enum and string columns) trains and predicts as
    the pandas frame of the same values, with its column names kept."""
    pd = pytest.importorskip("pandas")
    pl = pytest.importorskip("polars")
    X, _, _ = data
    rng = np.random.default_rng(5)
    shops = rng.choice(["a", "b", "c"], size=len(X))
    towns = rng.choice(["x", "y"], size=len(X))
    y = _y(est, data)
    frame = pd.DataFrame({"u": X[:, 0], "v": X[:, 1], "shop": pd.Categorical(shops),
                          "town": towns})
    polars_frame = pl.DataFrame({"u": X[:, 0], "v": X[:, 1],
                                 "shop": pl.Series(shops).cast(pl.Categorical),
                                 "town": pl.Series(towns).cast(pl.Enum(["x", "y"]))},
                                nan_to_null=True)
    ours = clone(est).fit(polars_frame, y)
    twin = clone(est).fit(frame, y)
    assert list(ours.feature_names_in_) == ["u", "v", "shop", "town"]
    assert ours.model_.feature_types == ["numeric", "numeric", "categorical", "categorical"]
    np.testing.assert_array_equal(ours.predict(polars_frame), twin.predict(frame))
    with pytest.raises(oocboost.SchemaError, match="shop"):
        ours.predict(polars_frame.drop("shop"))
