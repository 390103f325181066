"""model/loading.py and the importers: XGBoost JSON / UBJSON and LightGBM text models that
those libraries trained load with ``oocboost.load_model`` (by content) and predict what
the libraries predict (the same leaves, the same Tree SHAP values), on data with missing
values; what oocboost cannot express is refused by name, a damaged file by place."""

import lightgbm as lgb
import numpy as np
import pandas as pd
import pytest
import xgboost as xgb

import oocboost
from oocboost.errors import ModelError

from ...cli_runner import run_cli
from .cases import data


def _xy(kind, float32=True):
    X, signal = data(n=1500, float32=float32)
    if kind == "multiclass":
        return X, np.digitize(signal, [0.0, 1.0])
    if kind == "binary":
        return X, (signal > 0.5).astype(int)
    if kind == "count":
        return X, np.random.default_rng(1).poisson(np.exp(np.clip(signal, -2, 2) / 2))
    return X, 3 * signal


XGB_CASES = [
    ("binary", {"objective": "binary:logistic", "max_depth": 4}),
    ("number", {"objective": "reg:squarederror", "max_depth": 5, "eta": 0.2}),
    ("count", {"objective": "count:poisson", "max_depth": 3}),
    ("number", {"objective": "reg:pseudohubererror", "huber_slope": 2.0, "max_depth": 3}),
    ("multiclass", {"objective": "multi:softprob", "num_class": 3, "max_depth": 3}),
    ("binary", {"objective": "binary:logistic", "booster": "dart", "rate_drop": 0.3,
                "max_depth": 3}),
    ("binary", {"objective": "binary:logistic", "num_parallel_tree": 3, "subsample": 0.7,
                "colsample_bynode": 0.7, "max_depth": 4}),
]


@pytest.mark.parametrize("suffix", ["json", "ubj"])
@pytest.mark.parametrize("kind,params", XGB_CASES,
                         ids=[p.get("booster", p["objective"]) +
                              ("-forest" if "num_parallel_tree" in p else "")
                              for _, p in XGB_CASES])
def test_xgboost_models_predict_as_in_xgboost(kind, params, suffix, tmp_path):
    X, y = _xy(kind)
    booster = xgb.train({**params, "seed": 0}, xgb.DMatrix(X, label=y), 8)
    path = tmp_path / f"model.{suffix}"
    booster.save_model(path)
    model = oocboost.load_model(path)
    assert model.attributes["imported_from"] == "xgboost"
    dmatrix = xgb.DMatrix(X)
    np.testing.assert_allclose(model.predict(X), booster.predict(dmatrix), rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_allclose(model.predict(X, output_margin=True),
                               booster.predict(dmatrix, output_margin=True), rtol=1e-5,
                               atol=1e-5)
    if params.get("booster") != "dart":          # DART's leaves: XGBoost scales at predict
        np.testing.assert_array_equal(model.predict(X, pred_leaf=True),
                                      booster.predict(dmatrix, pred_leaf=True))
        theirs = booster.predict(dmatrix, pred_contribs=True)
        np.testing.assert_allclose(model.predict(X, pred_contribs=True), theirs,
                                   atol=1e-4 * max(1.0, np.abs(theirs).max()))


LGB_CASES = [
    ("binary", {"objective": "binary"}),
    ("number", {"objective": "regression", "learning_rate": 0.2}),
    ("count", {"objective": "poisson"}),
    ("multiclass", {"objective": "multiclass", "num_class": 3}),
    ("binary", {"objective": "binary", "boosting": "rf", "bagging_fraction": 0.6,
                "bagging_freq": 1}),
]


@pytest.mark.parametrize("kind,params", LGB_CASES,
                         ids=[p.get("boosting", p["objective"]) for _, p in LGB_CASES])
def test_lightgbm_models_predict_exactly_as_in_lightgbm(kind, params, tmp_path):
    X, y = _xy(kind, float32=False)
    booster = lgb.train({**params, "num_leaves": 15, "verbose": -1, "seed": 0},
                        lgb.Dataset(X, label=y), 8)
    booster.save_model(tmp_path / "model.txt")
    model = oocboost.load_model(tmp_path / "model.txt")
    assert model.feature_names == booster.feature_name()
    np.testing.assert_allclose(model.predict(X), booster.predict(X), rtol=1e-12,
                               atol=1e-13)
    contributions = model.predict(X, pred_contribs=True).reshape(len(X), -1)
    if params.get("boosting") == "rf":      # LightGBM sums an average's contributions
        contributions = contributions * booster.current_iteration()
    np.testing.assert_allclose(contributions, booster.predict(X, pred_contrib=True),
                               rtol=1e-9, atol=1e-10)
    leaves = booster.predict(X, pred_leaf=True)
    internal = np.array([t.n_nodes // 2 for t in model.trees])    # LightGBM counts apart
    np.testing.assert_array_equal(model.predict(X, pred_leaf=True), leaves + internal)


@pytest.mark.parametrize("kind,params", [
    ("number", {"objective": "regression", "linear_lambda": 0.1}),
    ("multiclass", {"objective": "multiclass", "num_class": 3}),
])
def test_lightgbm_linear_trees_predict_exactly_as_in_lightgbm(kind, params, tmp_path):
    """Leaves with linear models (and the first tree's constants), rows missing a
    leaf's feature taking its value, in both libraries."""
    X, y = _xy(kind, float32=False)
    booster = lgb.train({**params, "linear_tree": True, "num_leaves": 15, "verbose": -1,
                         "seed": 0}, lgb.Dataset(X, label=y), 8)
    booster.save_model(tmp_path / "model.txt")
    model = oocboost.load_model(tmp_path / "model.txt")
    assert len(model.part("linear_leaves").entries) == model.n_trees
    assert np.isnan(X).any()
    np.testing.assert_allclose(model.predict(X), booster.predict(X), rtol=1e-12,
                               atol=1e-13)
    with pytest.raises(ModelError, match="linear"):
        model.predict(X, pred_contribs=True)


def test_lightgbms_missing_type_none_sends_nan_where_zero_goes(tmp_path):
    X, y = _xy("number", float32=False)
    complete = np.nan_to_num(X)              # no NaN in training: missing type None
    booster = lgb.train({"objective": "regression", "num_leaves": 15, "verbose": -1},
                        lgb.Dataset(complete, label=y), 6)
    booster.save_model(tmp_path / "model.txt")
    lines = [line for line in (tmp_path / "model.txt").read_text().splitlines()
             if line.startswith("decision_type=")]
    types = np.array([int(v) for line in lines for v in line.split("=")[1].split()])
    assert np.all((types >> 2) & 3 == 0)     # LightGBM's missing type None everywhere
    model = oocboost.load_model(tmp_path / "model.txt")
    np.testing.assert_allclose(model.predict(X), booster.predict(X), rtol=1e-12)


def test_what_oocboost_cannot_express_is_refused_by_name(tmp_path):
    cities = np.array(["x", "y", "z"])[np.arange(300) % 3]
    frame = pd.DataFrame({"a": np.arange(300.0) % 7, "city": pd.Categorical(cities)})
    y = (frame["city"] == "y") * 2.0 + frame["a"]
    lgb.train({"objective": "regression", "verbose": -1, "min_data_per_group": 5,
               "cat_smooth": 1}, lgb.Dataset(frame, label=y), 3).save_model(
        tmp_path / "cat.txt")
    with pytest.raises(ModelError, match=r"cat.txt: tree \d+ \(line \d+\): categorical "
                                         r"split on feature 'city'"):
        oocboost.load_model(tmp_path / "cat.txt")
    xgb.train({"objective": "reg:squarederror"}, xgb.DMatrix(frame, label=y,
                                                             enable_categorical=True),
              2).save_model(tmp_path / "cat.json")
    with pytest.raises(ModelError, match=r"feature 'city' is categorical"):
        oocboost.load_model(tmp_path / "cat.json")
    X, y = _xy("number")
    xgb.train({"booster": "gblinear"}, xgb.DMatrix(X, label=y), 2).save_model(
        tmp_path / "linear.json")
    with pytest.raises(ModelError, match=r"a 'gblinear' booster is not imported"):
        oocboost.load_model(tmp_path / "linear.json")


def test_damaged_files_are_refused_by_place(tmp_path):
    X, y = _xy("binary")
    booster = xgb.train({"objective": "binary:logistic"}, xgb.DMatrix(X, label=y), 3)
    booster.save_model(tmp_path / "m.ubj")
    raw = (tmp_path / "m.ubj").read_bytes()
    (tmp_path / "cut.ubj").write_bytes(raw[: len(raw) // 2])
    with pytest.raises(ModelError, match=r"cut.ubj: not valid UBJSON at byte \d+"):
        oocboost.load_model(tmp_path / "cut.ubj")
    text = lgb.train({"objective": "binary", "verbose": -1}, lgb.Dataset(X, label=y),
                     2).model_to_string()
    (tmp_path / "cut.txt").write_text(text[: len(text) // 2])
    with pytest.raises(ModelError, match=r"no 'end of trees' line"):
        oocboost.load_model(tmp_path / "cut.txt")
    (tmp_path / "bad.txt").write_text(text.replace("left_child=", "left_child=x ", 1))
    with pytest.raises(ModelError, match=r"tree 0 \(line \d+\): 'left_child' holds a "
                                         r"value that is not a number"):
        oocboost.load_model(tmp_path / "bad.txt")


def test_an_exported_model_comes_back_the_same(tmp_path):
    X, signal = data(n=800, float32=True)
    model = oocboost.GradientBoostingClassifier(n_estimators=5, max_depth=3).fit(
        X, signal > 0.5).get_booster()
    model.export(tmp_path / "m.txt")
    np.testing.assert_allclose(oocboost.load_model(tmp_path / "m.txt").predict(X),
                               model.predict(X), rtol=1e-12)
    model.export(tmp_path / "m.json", format="xgboost")
    np.testing.assert_allclose(oocboost.load_model(tmp_path / "m.json").predict(X),
                               model.predict(X), rtol=1e-5)


def test_every_command_takes_a_foreign_model(tmp_path):
    X, y = _xy("binary")
    booster = lgb.train({"objective": "binary", "verbose": -1},
                        lgb.Dataset(X, label=y), 5)
    # a file's columns are matched by name: LightGBM's default names (Column_0, ...)
    frame = pd.DataFrame(X, columns=booster.feature_name()).assign(label=y)
    frame.to_csv(tmp_path / "rows.csv", index=False)
    booster.save_model(tmp_path / "model.txt")
    done = run_cli("predict", tmp_path / "model.txt", tmp_path / "rows.csv", "-o",
                   tmp_path / "p.csv")
    assert done.returncode == 0, done.stderr
    predicted = pd.read_csv(tmp_path / "p.csv")["prob_1"].to_numpy()
    np.testing.assert_allclose(predicted, booster.predict(X), rtol=1e-12)
    done = run_cli("evaluate", tmp_path / "model.txt", tmp_path / "rows.csv", "--label",
                   "label", "--metric", "auc")
    assert done.returncode == 0, done.stderr
    assert "auc" in done.stdout


def test_an_imported_model_predicts_and_continues_on_a_cache_of_its_split_points(tmp_path):
    from oocboost.errors import ParameterError, SchemaError

    X, y = _xy("binary")
    booster = xgb.train({"objective": "binary:logistic", "max_depth": 4},
                        xgb.DMatrix(X, label=y), 6)
    booster.save_model(tmp_path / "xgb.json")
    imported = oocboost.load_model(tmp_path / "xgb.json")
    plain = oocboost.build_cache(X, str(tmp_path / "plain.oocb"), label=y, quiet=True)
    with pytest.raises(SchemaError, match=r"not on the cache's bin edges.*split_points"):
        imported.predict(plain)
    with pytest.raises(ParameterError, match=r"split_points=init_model"):
        oocboost.train({"objective": "binary:logistic"}, plain, 2, init_model=imported)
    cache = oocboost.build_cache(X, str(tmp_path / "c.oocb"), label=y, quiet=True,
                                 split_points=imported)
    # from the codes as from the raw values, and so as XGBoost
    np.testing.assert_array_equal(imported.predict(cache), imported.predict(X))
    more = oocboost.train({"objective": "binary:logistic", "max_depth": 3}, cache, 3,
                          init_model=str(tmp_path / "xgb.json"))
    assert more.n_trees == imported.n_trees + 3
    np.testing.assert_allclose(more.predict(X, iteration_range=(0, 6), output_margin=True),
                               booster.predict(xgb.DMatrix(X), output_margin=True),
                               rtol=1e-5, atol=1e-5)
    from oocboost.model.predict import evaluate

    before = evaluate(imported, cache, metrics=["logloss"])["logloss"]
    assert evaluate(more, cache, metrics=["logloss"])["logloss"] < before


def test_split_points_beyond_max_bin_are_refused_by_feature(tmp_path):
    from oocboost.errors import ParameterError

    X, y = _xy("number")
    points = {"f0": np.linspace(-2, 2, 40)}
    with pytest.raises(ParameterError, match=r"feature 'f0' is split at 40 points, more "
                                             r"than the 30 edges max_bin=32 allows"):
        oocboost.build_cache(X, str(tmp_path / "c.oocb"), label=y, max_bin=32,
                             split_points=points, quiet=True)


def test_the_report_of_an_imported_model_from_the_command_line(tmp_path):
    X, y = _xy("binary")
    booster = lgb.train({"objective": "binary", "verbose": -1, "num_leaves": 7},
                        lgb.Dataset(X, label=y), 4)
    booster.save_model(tmp_path / "model.txt")
    frame = pd.DataFrame(X, columns=booster.feature_name()).assign(label=y)
    frame.to_csv(tmp_path / "valid.csv", index=False)
    done = run_cli("build-cache", tmp_path / "valid.csv", "-o", tmp_path / "valid.oocb",
                   "--label", "label", "--split-points", tmp_path / "model.txt", "--quiet")
    assert done.returncode == 0, done.stderr
    done = run_cli("report", tmp_path / "model.txt", "--cache", tmp_path / "valid.oocb",
                   "-o", tmp_path / "report.html", "--quiet")
    assert done.returncode == 0, done.stderr
    assert "<img" in (tmp_path / "report.html").read_text()
