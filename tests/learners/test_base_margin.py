"""Per-row base margins (offsets) in boosting, checked against XGBoost's ``base_margin``:
training starts each row from its offset, predictions and SHAP values add it in place of
the constant base, evaluation sets and cross-validation carry theirs. Features take few
distinct values, so both libraries bin them alike and the models must be equal."""
import logging
import warnings

import numpy as np
import pandas as pd
import pytest
import xgboost as xgb

import oocboost
from oocboost.cache.store.weighted import RowWeightedCache
from oocboost.errors import ParameterError
from oocboost.model.predict import evaluate

from ..cli_runner import run_cli

PARAMS = {"max_depth": 3, "eta": 0.3, "reg_lambda": 1.0, "min_child_weight": 1.0}


def _poisson(n_rows=3000, seed=0):
    """Counts over an exposure: the textbook offset, log(exposure)."""
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 8, size=(n_rows, 4)).astype(float)
    exposure = rng.uniform(0.5, 3.0, n_rows)
    y = rng.poisson(np.exp(0.3 * X[:, 0] - 0.2 * X[:, 1]) * exposure).astype(float)
    return X, y, np.log(exposure)


def _xgb(params, X, y, margin, rounds):
    dtrain = xgb.DMatrix(X, label=y, base_margin=margin)
    return xgb.train(dict(params, tree_method="hist", nthread=2), dtrain, rounds), dtrain


@pytest.mark.parametrize("block_rows,prefetch", [(256, 1), (1000, 2), (3000, 3)])
def test_poisson_exposure_equals_xgboost(tmp_path, block_rows, prefetch):
    X, y, offset = _poisson()
    params = dict(PARAMS, objective="count:poisson", prefetch=prefetch)
    cache = oocboost.build_cache(X, tmp_path / "c.oocb", label=y, base_margin=offset,
                                 block_rows=block_rows, quiet=True)
    model = oocboost.train(params, cache, 20)
    booster, dtrain = _xgb(dict(params, prefetch=None), X, y, offset, 20)
    theirs = booster.predict(dtrain, output_margin=True)
    np.testing.assert_allclose(model.predict(X, base_margin=offset, output_margin=True),
                               theirs, atol=2e-6)
    # the cache's own offsets are used when predicting on it
    np.testing.assert_allclose(model.predict(cache, output_margin=True), theirs, atol=2e-6)
    np.testing.assert_allclose(model.predict(X, base_margin=offset),
                               booster.predict(dtrain), rtol=2e-6)
    # SHAP: the bias holds the row's offset, as XGBoost's pred_contribs
    np.testing.assert_allclose(model.predict(X, base_margin=offset, pred_contribs=True),
                               booster.predict(dtrain, pred_contribs=True), atol=2e-6)
    # without offsets XGBoost falls back on its intercept, and so do we
    plain = xgb.DMatrix(X)
    np.testing.assert_allclose(model.predict(X, output_margin=True),
                               booster.predict(plain, output_margin=True), atol=2e-6)


def test_offsets_change_the_model(tmp_path):
    X, y, offset = _poisson()
    params = dict(PARAMS, objective="count:poisson")
    with_offsets = oocboost.train(params, oocboost.build_cache(
        X, tmp_path / "a.oocb", label=y, base_margin=offset, quiet=True), 10)
    without = oocboost.train(params, oocboost.build_cache(
        X, tmp_path / "b.oocb", label=y, quiet=True), 10)
    gap = np.abs(with_offsets.predict(X, output_margin=True)
                 - without.predict(X, output_margin=True)).max()
    assert gap > 0.1


def test_multiclass_offsets_and_evaluation_sets_equal_xgboost():
    rng = np.random.default_rng(1)
    X = rng.integers(0, 6, size=(2000, 3)).astype(float)
    y = rng.integers(0, 3, size=2000)
    margin = rng.normal(size=(2000, 3))
    Xv, yv, mv = X[:500], y[:500], rng.normal(size=(500, 3))
    ours = oocboost.GradientBoostingClassifier(n_estimators=8, max_depth=3,
                                               learning_rate=0.3)
    ours.fit(X, y, base_margin=margin, eval_set=[(Xv, yv)], base_margin_eval_set=[mv])
    theirs = xgb.XGBClassifier(n_estimators=8, max_depth=3, learning_rate=0.3,
                               tree_method="hist", n_jobs=2)
    theirs.fit(X, y, base_margin=margin, eval_set=[(Xv, yv)], base_margin_eval_set=[mv],
               verbose=False)
    np.testing.assert_allclose(ours.predict_proba(X, base_margin=margin),
                               theirs.predict_proba(X, base_margin=margin), atol=1e-6)
    np.testing.assert_allclose(ours.evals_result_["validation_0"]["mlogloss"],
                               theirs.evals_result()["validation_0"]["mlogloss"], atol=1e-6)


def test_lightgbm_names_are_aliases():
    X, y, offset = _poisson(500)
    yb = (y > np.median(y)).astype(int)
    a = oocboost.GradientBoostingClassifier(n_estimators=4).fit(X, yb, base_margin=offset)
    b = oocboost.GradientBoostingClassifier(n_estimators=4).fit(X, yb, init_score=offset)
    np.testing.assert_array_equal(a.predict_proba(X, base_margin=offset),
                                  b.predict_proba(X, base_margin=offset))
    with pytest.raises(ParameterError, match="init_score is an alias of base_margin"):
        oocboost.GradientBoostingClassifier().fit(X, yb, base_margin=offset,
                                                  init_score=offset)


def test_cross_validation_folds_start_from_the_offsets(tmp_path):
    X, y, offset = _poisson(1200)
    params = dict(PARAMS, objective="count:poisson")
    cache = oocboost.build_cache(X, tmp_path / "c.oocb", label=y, base_margin=offset,
                                 block_rows=300, quiet=True)
    fold = np.arange(len(y)) % 3
    _, oof = oocboost.cv(params, cache, 6, folds=fold, return_oof=True, as_pandas=False)
    # each fold's model is the one trained on the cache with its held-out rows weighted 0
    for k in range(3):
        model = oocboost.train(params, RowWeightedCache(cache, fold != k), 6)
        held = fold == k
        np.testing.assert_allclose(
            oof[held], model.predict(X[held], base_margin=offset[held]), rtol=1e-9)


def test_files_use_the_trained_columns(tmp_path, caplog):
    X, y, offset = _poisson(600)
    frame = pd.DataFrame(X, columns=list("abcd")).assign(y=y, log_exposure=offset)
    frame.to_csv(tmp_path / "d.csv", index=False)
    cache = oocboost.build_cache(tmp_path / "d.csv", tmp_path / "c.oocb", label="y",
                                 base_margin="log_exposure", quiet=True)
    model = oocboost.train(dict(PARAMS, objective="count:poisson"), cache, 5)
    assert model.attributes["base_margin"] == ["log_exposure"]
    expected = model.predict(cache)
    np.testing.assert_allclose(model.predict(str(tmp_path / "d.csv")), expected,
                               rtol=1e-12)
    assert evaluate(model, str(tmp_path / "d.csv")) == evaluate(model, cache)
    # a file without the column: the constant base, said
    frame.drop(columns="log_exposure").to_csv(tmp_path / "e.csv", index=False)
    # the package logger may not propagate (utils/log.console): listen to it directly
    package_logger = logging.getLogger("oocboost")
    package_logger.addHandler(caplog.handler)
    try:
        plain = model.predict(str(tmp_path / "e.csv"))
    finally:
        package_logger.removeHandler(caplog.handler)
    assert "trained with per-row base margins (log_exposure)" in caplog.text
    np.testing.assert_allclose(plain, model.predict(X), rtol=1e-12)


def test_other_learners_warn_and_refuse(tmp_path):
    X, y, offset = _poisson(300)
    yb = (y > np.median(y)).astype(float)
    cache = oocboost.build_cache(X, tmp_path / "c.oocb", label=yb, base_margin=offset,
                                 quiet=True)
    with pytest.warns(UserWarning, match="only gradient boosting adds them"):
        forest = oocboost.RandomForestClassifier(n_estimators=2).fit(cache)
    # a forest's predictions ignore a cache's offsets and refuse given ones
    np.testing.assert_array_equal(forest.model_.predict(cache), forest.model_.predict(X))
    with pytest.raises(ParameterError, match="base_margin applies to gradient boosting"):
        forest.model_.predict(X, base_margin=offset)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        oocboost.train({"objective": "binary:logistic"}, cache, 2)   # no warning


def test_width_and_length_mismatches_are_named(tmp_path):
    X, y, offset = _poisson(300)
    yc = (y % 3).astype(float)
    cache = oocboost.build_cache(X, tmp_path / "c.oocb", label=yc, base_margin=offset,
                                 quiet=True)
    with pytest.raises(ParameterError, match=r"has 1 base margin column\(s\) "
                                             r"\(<base_margin>\); objective multi:softprob "
                                             r"has 3 outputs"):
        oocboost.train({"objective": "multi:softprob", "num_class": 3}, cache, 2)
    model = oocboost.train({"objective": "reg:squarederror"}, cache, 2)
    with pytest.raises(ParameterError, match="base_margin has 299 rows; the data has 300"):
        model.predict(X, base_margin=offset[:299])
    with pytest.raises(ParameterError, match="base_margin has 301 rows; the data has 300"):
        model.predict(X, base_margin=np.append(offset, 0.0))


def _cli(*args):
    r = run_cli(*args)
    assert r.returncode == 0, r.stderr
    return r


def test_command_line_with_a_column_and_with_lightgbms_init_file(tmp_path):
    """``--base-margin COL`` (alias ``--init-score``) at build-cache and predict, and a
    headerless TSV with ``FILE.init`` beside it, LightGBM's regression example layout."""
    X, y, offset = _poisson(800)
    frame = pd.DataFrame(X, columns=list("abcd")).assign(y=y, off=offset)
    frame.to_csv(tmp_path / "d.csv", index=False)
    _cli("build-cache", tmp_path / "d.csv", "-o", tmp_path / "d.oocb", "--label", "y",
         "--init-score", "off", "--quiet")
    info = _cli("info", tmp_path / "d.oocb", "--verify").stdout
    assert "base margin off (8 bytes a row and output)" in info
    assert "bin codes, base margins are as the manifest says" in info
    _cli("train", tmp_path / "d.oocb", "-o", tmp_path / "m.json", "--objective",
         "count:poisson", "--rounds", "5", "--quiet")
    model = oocboost.load_model(tmp_path / "m.json")
    expected = model.predict(X, base_margin=offset)
    frame.rename(columns={"off": "exposure_offset"}).to_csv(tmp_path / "e.csv", index=False)
    _cli("predict", tmp_path / "m.json", tmp_path / "e.csv", "-o", tmp_path / "p.csv",
         "--base-margin", "exposure_offset")
    got = pd.read_csv(tmp_path / "p.csv")["prediction"].to_numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-12)

    tsv = tmp_path / "regression.train"
    tsv.write_text("".join("\t".join(f"{float(v)!r}" for v in [y[i], *X[i]]) + "\n"
                           for i in range(len(y))))
    (tmp_path / "regression.train.init").write_text(
        "".join(f"{float(v)!r}\n" for v in offset))
    _cli("build-cache", tsv, "-o", tmp_path / "r.oocb", "--no-header", "--label", "0",
         "--quiet")
    _cli("train", tmp_path / "r.oocb", "-o", tmp_path / "r.json", "--objective",
         "count:poisson", "--rounds", "5", "--quiet")
    _cli("predict", tmp_path / "r.json", tsv, "--no-header", "-o", tmp_path / "q.csv")
    got = pd.read_csv(tmp_path / "q.csv")["prediction"].to_numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-12)
