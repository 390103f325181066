"""model/formats/lightgbm_text.py: models exported to LightGBM's text format predict, in
``lightgbm.Booster(model_file=...)``, what they predict in oocboost (with missing values;
every learner whose trees LightGBM can sum or average), and what it cannot express is
refused by name."""

import lightgbm as lgb
import numpy as np
import pytest

import oocboost
from oocboost.errors import ModelError, ParameterError
from oocboost.model.formats import format_of

from ...cli_runner import run_cli
from .cases import cases_but, categorical_model, categorical_params, data, label


def _booster(model, tmp_path, name="model.txt"):
    path = tmp_path / name
    assert model.export(path) == "lightgbm"
    return lgb.Booster(model_file=str(path))


@pytest.mark.parametrize("kind,make", cases_but("binary-hinge"))
def test_lightgbm_predicts_what_oocboost_predicts(kind, make, tmp_path):
    X, signal = data()
    est = make().fit(X, label(kind, signal))
    model = est.get_booster()
    booster = _booster(model, tmp_path)
    ours = model.predict(X)
    theirs = booster.predict(X)
    if ours.ndim == 2 and theirs.ndim == 1:      # binary: LightGBM gives P(class 1)
        ours = ours[:, 1]
    np.testing.assert_allclose(theirs, ours, rtol=1e-12, atol=1e-12)
    margin = model.predict(X, output_margin=True)
    raw = booster.predict(X, raw_score=True)
    if model.aggregation == "mean":     # LightGBM's raw score of averaged trees: the sum
        raw = raw / booster.current_iteration()
    np.testing.assert_allclose(raw, margin, rtol=1e-12, atol=1e-12)
    assert booster.num_trees() >= model.n_trees
    assert booster.feature_name() == model.feature_names


@pytest.mark.parametrize("make, kind", [
    (lambda: oocboost.GradientBoostingRegressor(n_estimators=6, max_depth=3,
                                                linear_tree=True, linear_lambda=0.5),
     "squarederror"),
    (lambda: oocboost.GradientBoostingClassifier(n_estimators=5, max_depth=3,
                                                 linear_tree=True), "multiclass"),
], ids=["regression", "multiclass"])
def test_linear_leaves_are_lightgbms_linear_trees(make, kind, tmp_path):
    """``is_linear=1`` trees, evaluated by LightGBM on raw values (rows missing a
    leaf's feature take its value in both), and read back as they were written."""
    X, signal = data()
    model = make().fit(X, label(kind, signal)).get_booster()
    booster = _booster(model, tmp_path)
    margin = model.predict(X, output_margin=True)
    np.testing.assert_allclose(booster.predict(X, raw_score=True).reshape(margin.shape),
                               margin, rtol=1e-12, atol=1e-12)
    assert "is_linear=1" in (tmp_path / "model.txt").read_text()
    again = oocboost.load_model(tmp_path / "model.txt")
    np.testing.assert_allclose(again.predict(X, output_margin=True), margin, rtol=1e-12,
                               atol=1e-12)


def test_softmax_models_give_the_probabilities_whose_argmax_oocboost_predicts(tmp_path):
    X, signal = data()
    model = oocboost.train({"objective": "multi:softmax", "num_class": 3, "max_depth": 3},
                           oocboost.build_cache(X, str(tmp_path / "c.oocb"),
                                                label=np.digitize(signal, [0.0, 1.0]),
                                                quiet=True), 6)
    proba = _booster(model, tmp_path).predict(X)
    np.testing.assert_array_equal(proba.argmax(axis=1), model.predict(X))


def test_a_base_margin_lives_in_the_first_trees(tmp_path):
    X, signal = data()
    model = oocboost.GradientBoostingRegressor(n_estimators=3, max_depth=2).fit(
        X, 3 * signal + 100.0).get_booster()
    assert abs(model.base_margin[0]) > 1
    np.testing.assert_allclose(_booster(model, tmp_path).predict(X), model.predict(X),
                               rtol=1e-12)


@pytest.mark.parametrize("make", categorical_params())
def test_categorical_splits_are_lightgbm_bitsets(make, tmp_path):
    import pandas as pd

    frame, model = categorical_model(make)
    booster = _booster(model, tmp_path)
    ours = model.predict(frame)
    np.testing.assert_allclose(booster.predict(model.export_input(frame)), ours,
                               rtol=1e-12, atol=1e-12)
    # a frame of pandas categories is mapped by the file's pandas_categorical
    typed = frame.assign(city=pd.Categorical(frame["city"], categories=model_cities(model)))
    np.testing.assert_allclose(booster.predict(typed), ours, rtol=1e-12, atol=1e-12)


def model_cities(model):
    return model.bin_mapper["features"][3]["categories"]


def test_what_lightgbm_cannot_express_is_refused_by_name(tmp_path):
    X, signal = data()
    hinge = oocboost.GradientBoostingRegressor(n_estimators=2, objective="binary:hinge")
    with pytest.raises(ModelError, match=r"no objective that predicts as 'binary:hinge'"):
        hinge.fit(X, (signal > 0.5).astype(int)).get_booster().export(tmp_path / "m.txt")


def test_whitespace_in_feature_names_is_written_as_underscores(tmp_path):
    import pandas as pd

    X, signal = data()
    frame = pd.DataFrame(X, columns=["unit price", "b", "c", "d", "e"])
    model = oocboost.GradientBoostingRegressor(n_estimators=2, max_depth=2).fit(
        frame, signal).get_booster()
    with pytest.warns(UserWarning, match=r"'unit price'.* written with '_'"):
        booster = _booster(model, tmp_path)
    assert booster.feature_name()[0] == "unit_price"


def test_format_from_the_extension_or_named():
    assert format_of("m.txt", None) == "lightgbm"
    assert format_of("m.model", "lightgbm") == "lightgbm"
    with pytest.raises(ParameterError, match=r"m.bin: say the export format .*'\.bin' "
                                             r"names none"):
        format_of("m.bin", None)
    with pytest.raises(ParameterError,
                       match=r"must be one of lightgbm, xgboost, onnx, treelite, got "
                             r"'pmml'"):
        format_of("m.txt", "pmml")


def test_export_command(tmp_path):
    X, signal = data()
    model = oocboost.GradientBoostingRegressor(n_estimators=3, max_depth=3).fit(
        X, signal).get_booster()
    model.save_model(tmp_path / "model.json")
    done = run_cli("export", tmp_path / "model.json", "-o", tmp_path / "model.txt")
    assert done.returncode == 0, done.stderr
    assert "wrote" in done.stdout and "LightGBM's text model" in done.stdout
    booster = lgb.Booster(model_file=str(tmp_path / "model.txt"))
    np.testing.assert_allclose(booster.predict(X), model.predict(X), rtol=1e-12)
    refused = run_cli("export", tmp_path / "model.json", "-o", tmp_path / "model.json",
                      "--format", "lightgbm")
    assert refused.returncode != 0 and "is the input" in refused.stderr
    assert (tmp_path / "model.json").read_text().startswith("{")


def test_row_counts_lightgbms_tree_shap_weighs_by(tmp_path):
    """LightGBM's pred_contrib weighs by row counts: a forest's (without bootstrap they
    are its covers) gives oocboost's SHAP values (summed over the trees, as LightGBM
    sums an averaged model's); a boosted model counts its rows too, and LightGBM's
    values are Tree SHAP with those counts as covers. A model without counts (saved by
    an older version) is exported with a warning, and LightGBM's values are NaN."""
    import copy
    import warnings

    X, signal = data()
    # without bootstrap draws each node's cover is its row count
    forest = oocboost.RandomForestRegressor(n_estimators=3, max_depth=4, bootstrap=False,
                                            max_features=0.6, random_state=0).fit(
        X, signal).get_booster()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        booster = _booster(forest, tmp_path, "forest.txt")
    theirs = booster.predict(X, pred_contrib=True) / forest.n_trees
    np.testing.assert_allclose(theirs, forest.predict_contributions(X), rtol=1e-9,
                               atol=1e-9)
    boosted = oocboost.GradientBoostingRegressor(n_estimators=3, max_depth=3).fit(
        X, signal).get_booster()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        booster = _booster(boosted, tmp_path, "boosted.txt")
    by_counts = copy.deepcopy(boosted)
    for tree in by_counts.trees:
        assert tree.n_samples[0] == len(X)
        tree.cover = tree.n_samples.copy()
    np.testing.assert_allclose(booster.predict(X, pred_contrib=True),
                               by_counts.predict_contributions(X), rtol=1e-9, atol=1e-9)
    uncounted = copy.deepcopy(boosted)
    for tree in uncounted.trees:
        tree.n_samples = np.zeros(tree.n_nodes)
    with pytest.warns(UserWarning, match="no row counts.*pred_contrib.*NaN"):
        booster = _booster(uncounted, tmp_path, "uncounted.txt")
    assert np.isnan(booster.predict(X, pred_contrib=True)).any(axis=1).all()