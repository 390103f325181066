"""model/formats/xgboost_json.py: models exported to XGBoost's JSON model predict, in
``xgboost.Booster(model_file=...)``, what they predict in oocboost (float32 data with
missing values; XGBoost's float32 leaves and sums: 1e-5), with the same leaves reached,
and what XGBoost cannot express is refused by name."""
import numpy as np
import pytest
import xgboost as xgb

import oocboost
from oocboost.errors import ParameterError
from oocboost.model.formats import format_of
from oocboost.model.formats.xgboost_json import split_conditions

from .cases import cases_but, categorical_frame, data, label


def _booster(model, tmp_path):
    path = tmp_path / "model.json"
    assert model.export(path, format="xgboost") == "xgboost"
    return xgb.Booster(model_file=str(path))


@pytest.mark.parametrize("kind,make", cases_but())
def test_xgboost_predicts_what_oocboost_predicts(kind, make, tmp_path):
    X, signal = data(float32=True)
    model = make().fit(X, label(kind, signal)).get_booster()
    booster = _booster(model, tmp_path)
    dmatrix = xgb.DMatrix(X)
    ours = model.predict(X)
    theirs = booster.predict(dmatrix)
    if ours.ndim == 2 and theirs.ndim == 1:      # binary: XGBoost gives P(class 1)
        ours = ours[:, 1]
    np.testing.assert_allclose(theirs, ours, rtol=1e-5, atol=1e-5)
    if model.aggregation == "sum":              # XGBoost's margin is the same sum
        np.testing.assert_allclose(booster.predict(dmatrix, output_margin=True),
                                   model.predict(X, output_margin=True), rtol=1e-5,
                                   atol=1e-5)
        if model.n_outputs == 1:                # the same leaves, by oocboost's ids
            np.testing.assert_array_equal(booster.predict(dmatrix, pred_leaf=True),
                                          model.predict(X, pred_leaf=True))
        # the same Tree SHAP values (XGBoost's float32 arithmetic: 1e-5 of their size)
        theirs = booster.predict(dmatrix, pred_contribs=True)
        np.testing.assert_allclose(model.predict(X, pred_contribs=True), theirs,
                                   atol=1e-5 * max(1.0, float(np.abs(theirs).max())))
    assert booster.feature_names is None          # default names: XGBoost's none


def test_named_features_are_checked_as_xgboost_checks_a_dataframe(tmp_path):
    import pandas as pd

    X, signal = data(float32=True)
    frame = pd.DataFrame(X, columns=["age", "income", "c", "d", "e"])
    model = oocboost.GradientBoostingRegressor(n_estimators=3, max_depth=3).fit(
        frame, signal).get_booster()
    booster = _booster(model, tmp_path)
    assert booster.feature_names == ["age", "income", "c", "d", "e"]
    np.testing.assert_allclose(booster.predict(xgb.DMatrix(frame)), model.predict(frame),
                               rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("make", [
    lambda: oocboost.GradientBoostingRegressor(n_estimators=10, max_depth=4),
    lambda: oocboost.GradientBoostingClassifier(n_estimators=6, max_depth=3),
], ids=["regression", "multiclass"])
def test_categorical_splits_are_xgboost_category_sets(make, tmp_path):
    import pandas as pd

    frame, y = categorical_frame()
    frame[["a", "b", "c"]] = frame[["a", "b", "c"]].astype(np.float32)
    label = y if isinstance(make(), oocboost.GradientBoostingRegressor) else \
        np.digitize(y, [0.0, 1.5])
    model = make().fit(frame, label).get_booster()
    assert any(t.is_categorical[t.left >= 0].any() for t in model.trees)
    booster = _booster(model, tmp_path)
    assert booster.feature_types == ["float", "float", "float", "c"]
    cities = model.bin_mapper["features"][3]["categories"]
    typed = frame.assign(city=pd.Categorical(frame["city"], categories=cities))
    dmatrix = xgb.DMatrix(typed, enable_categorical=True)
    np.testing.assert_allclose(booster.predict(dmatrix), model.predict(frame), rtol=1e-5,
                               atol=1e-5)
    np.testing.assert_allclose(booster.predict(dmatrix, output_margin=True),
                               model.predict(frame, output_margin=True), rtol=1e-5,
                               atol=1e-5)


def test_ubjson_is_the_same_model(tmp_path):
    frame, y = categorical_frame()
    frame[["a", "b", "c"]] = frame[["a", "b", "c"]].astype(np.float32)
    model = oocboost.GradientBoostingClassifier(n_estimators=5, max_depth=3).fit(
        frame, np.digitize(y, [0.0, 1.5])).get_booster()
    assert model.export(tmp_path / "model.ubj") == "xgboost"       # by the extension
    assert (tmp_path / "model.ubj").read_bytes()[:2] == b"{L"        # binary JSON
    booster = xgb.Booster(model_file=str(tmp_path / "model.ubj"))
    dmatrix = xgb.DMatrix(model.export_input(frame), feature_names=booster.feature_names,
                          feature_types=booster.feature_types)
    np.testing.assert_allclose(booster.predict(dmatrix), model.predict(frame), rtol=1e-5,
                               atol=1e-6)


def test_every_float32_takes_the_side_oocboost_sends_it():
    rng = np.random.default_rng(3)
    thresholds = np.concatenate([rng.normal(size=2000) * 10.0 ** rng.integers(-5, 6, 2000),
                                 np.float32(rng.normal(size=500)).astype(np.float64),
                                 [1.7976931348623157e308, -1.7976931348623157e308,
                                  3.4028234663852886e38, 1e-45, -1e-45, 0.0]])
    conditions = split_conditions(thresholds)
    assert conditions.dtype == np.float32
    for t, c in zip(thresholds, conditions):
        with np.errstate(over="ignore"):
            around = np.float32(t)
            near = np.array([np.nextafter(around, np.float32(-np.inf)), around,
                             np.nextafter(around, np.float32(np.inf))], dtype=np.float32)
        near = near[np.isfinite(near) & (np.abs(near) < np.finfo(np.float32).max)]
        np.testing.assert_array_equal(near < c, near.astype(np.float64) <= t)
    assert np.all(np.isfinite(conditions))


def test_a_softmax_model_predicts_the_same_classes(tmp_path):
    X, signal = data(float32=True)
    cache = oocboost.build_cache(X, str(tmp_path / "c.oocb"),
                                 label=np.digitize(signal, [0.0, 1.0]), quiet=True)
    model = oocboost.train({"objective": "multi:softmax", "num_class": 3, "max_depth": 3},
                           cache, 6)
    np.testing.assert_array_equal(_booster(model, tmp_path).predict(xgb.DMatrix(X)),
                                  model.predict(X))


def test_json_needs_the_format_named():
    assert format_of("m.json", "xgboost") == "xgboost"
    with pytest.raises(ParameterError, match=r"m.json: a .json file is oocboost's own "
                                             r"model .*format='xgboost'"):
        format_of("m.json", None)
