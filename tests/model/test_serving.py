"""A few rows of numbers (model/serving.py): the serving path gives what the general
path gives, bit for bit, for every model it takes; what it does not take (options,
other inputs, other models) takes the general path, errors included."""
import copy

import numpy as np
import pytest

import oocboost
from oocboost.errors import SchemaError
from oocboost.model import serving


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(800, 5))
    X[rng.random(X.shape) < 0.05] = np.nan
    y_bin = (np.nan_to_num(X[:, 0]) + np.nan_to_num(X[:, 1]) > 0).astype(int)
    y_multi = np.digitize(np.nan_to_num(X[:, 2]), [-0.5, 0.5])
    y_count = rng.poisson(np.exp(0.3 * np.nan_to_num(X[:, 0])))
    return X, y_bin, y_multi, y_count


@pytest.fixture(scope="module")
def models(data):
    X, y_bin, y_multi, y_count = data
    small = {"n_estimators": 12, "max_depth": 4}
    return {
        "binary": oocboost.GradientBoostingClassifier(**small).fit(X, y_bin).get_booster(),
        "softprob": oocboost.GradientBoostingClassifier(**small).fit(X, y_multi)
        .get_booster(),
        "squared": oocboost.GradientBoostingRegressor(**small).fit(X, y_count)
        .get_booster(),
        "poisson": oocboost.GradientBoostingRegressor(objective="count:poisson", **small)
        .fit(X, y_count).get_booster(),
        "forest": oocboost.RandomForestClassifier(n_estimators=5, random_state=0)
        .fit(X, y_multi).model_,
        "forest regressor": oocboost.RandomForestRegressor(n_estimators=5, max_depth=6,
                                                           random_state=0)
        .fit(X, y_count).model_,
        "adaboost.r2": oocboost.AdaBoostRegressor(n_estimators=5).fit(X, y_count).model_,
    }


def _general(model, X, **options):
    """The general path: the same rows among 40, which the serving path leaves alone."""
    padded = np.vstack([X, np.zeros((40, X.shape[1]), X.dtype)])
    return model.predict(padded, **options)[:len(X)]


@pytest.mark.parametrize("kind", ["binary", "softprob", "squared", "poisson", "forest",
                                  "forest regressor", "adaboost.r2"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_same_predictions_as_the_general_path(data, models, kind, dtype):
    model = models[kind]
    X = data[0].astype(dtype)
    takes = kind != "adaboost.r2"  # a weighted median of the trees
    for n_rows in (1, 2, 31):
        rows = np.ascontiguousarray(X[100:100 + n_rows])
        fast = serving.serving_predict(model, rows)
        assert (fast is not None) == takes
        np.testing.assert_array_equal(model.predict(rows), _general(model, rows))
        if takes:
            np.testing.assert_array_equal(fast, _general(model, rows))
        for options in ({"output_margin": True}, {"iteration_range": (1, 3)},
                        {"output_margin": True, "iteration_range": (0, 2)}):
            np.testing.assert_array_equal(model.predict(rows, **options),
                                          _general(model, rows, **options))


def test_what_it_does_not_take_goes_the_general_way(data, models):
    model = models["binary"]
    X = data[0]
    assert serving.serving_predict(model, X[:32]) is None            # 32 rows: chunks
    assert serving.serving_predict(model, X[:4, ::-1]) is None       # not contiguous
    assert serving.serving_predict(model, np.ones((4, 5), np.int64)) is None
    assert serving.serving_predict(model, X[:4, :3]) is None
    with pytest.raises(SchemaError, match="X has 3 columns; the model was trained on 5"):
        model.predict(np.ascontiguousarray(X[:1, :3]))
    np.testing.assert_array_equal(model.predict(X[:3, ::-1][:, ::-1]),
                                  model.predict(np.ascontiguousarray(X[:3])))
    margins = model.predict(X[:2], output_margin=True)
    np.testing.assert_allclose(1 / (1 + np.exp(-margins)), model.predict(X[:2]),
                               rtol=1e-14)
    assert model.predict(X[:0]).shape == (0,)


def test_a_changed_model_is_planned_again(data, models):
    model = copy.deepcopy(models["binary"])
    row = np.ascontiguousarray(data[0][:1])
    before = model.predict(row)
    plan = model._serving_plan
    model.trees = model.trees[:3]
    model.tree_group = model.tree_group[:3]
    model.tree_weight = model.tree_weight[:3]
    assert model._serving_plan is plan
    np.testing.assert_array_equal(model.predict(row), _general(model, row))
    assert model._serving_plan is not plan and model.predict(row) != before
    model.objective = "binary:logitraw"
    np.testing.assert_array_equal(model.predict(row), model.predict(row,
                                                                   output_margin=True))
