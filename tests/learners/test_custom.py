"""Custom objectives and metrics: a callable that computes a built-in loss's gradients
grows the built-in's trees; XGBoost given the same callable predicts the same; a custom
metric is logged under its name and early stopping minimises it; bad returns are named."""
import numpy as np
import pyarrow as pa
import pytest
import xgboost as xgb

import oocboost


def squared(predt, labels):
    return predt - labels, np.ones_like(predt)


def logistic(predt, labels):
    p = 1 / (1 + np.exp(-predt))
    return p - labels, np.maximum(p * (1 - p), 1e-16)


def softmax(predt, labels):
    e = np.exp(predt - predt.max(axis=1, keepdims=True))
    p = e / e.sum(axis=1, keepdims=True)
    onehot = np.eye(predt.shape[1])[labels.astype(int)]
    return p - onehot, np.maximum(2 * p * (1 - p), 1e-16)


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.integers(0, 8, size=(1500, 3)).astype(float)  # a bin per value: same splits
    signal = X[:, 0] - 0.5 * X[:, 1] + rng.normal(size=1500)
    return X, signal, rng.uniform(0.5, 2.0, 1500)


def _cache(tmp_path, X, y, w=None, block_rows=512):
    table = {"a": X[:, 0], "b": X[:, 1], "c": X[:, 2], "y": y}
    if w is not None:
        table["w"] = w
    return oocboost.build_cache(pa.table(table), tmp_path / "c.oocb", label="y",
                                weight="w" if w is not None else None, quiet=True,
                                block_rows=block_rows)


def _same_trees(a, b):
    assert a.n_trees == b.n_trees
    np.testing.assert_allclose(a.base_margin, b.base_margin)
    for ta, tb in zip(a.trees, b.trees):
        np.testing.assert_array_equal(ta.feature, tb.feature)
        np.testing.assert_array_equal(ta.bin_threshold, tb.bin_threshold)
        np.testing.assert_allclose(ta.value, tb.value, rtol=1e-6, atol=1e-12)


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("case", ["squared", "logistic", "softmax"])
def test_a_callable_of_a_built_in_loss_grows_its_trees(data, tmp_path, case, weighted):
    X, signal, w = data
    if case == "squared":
        y, named, fn = signal, {"objective": "reg:squarederror"}, squared
    elif case == "logistic":
        y, named, fn = (signal > 1).astype(float), {"objective": "binary:logistic"}, logistic
    else:
        y = np.digitize(signal, [0, 2]).astype(float)
        named, fn = {"objective": "multi:softprob", "num_class": 3}, softmax
    cache = _cache(tmp_path, X, y, w if weighted else None)
    params = {**named, "max_depth": 3, "eta": 0.3}
    ours = oocboost.train(params, cache, 5, obj=fn, verbose_eval=False)
    builtin = oocboost.train({**params, "base_score": 0.5}, cache, 5, verbose_eval=False)
    _same_trees(ours, builtin)
    assert ours.attributes["custom_objective"] == fn.__name__
    np.testing.assert_allclose(ours.predict(X), builtin.predict(X), rtol=1e-6)
    again = oocboost.load_model(_saved(ours, tmp_path))
    np.testing.assert_array_equal(again.predict(X), ours.predict(X))


def _saved(model, tmp_path):
    path = tmp_path / "m.json"
    model.save_model(path)
    return path


def test_xgboost_with_the_same_callable_predicts_the_same(data, tmp_path):
    X, signal, _ = data
    y = (signal > 1).astype(float)

    def xgb_logistic(predt, dtrain):
        return logistic(predt, dtrain.get_label())

    params = {"objective": "binary:logistic", "max_depth": 3, "eta": 0.3}
    theirs = xgb.train({**params, "tree_method": "hist", "nthread": 1},
                       xgb.DMatrix(X, label=y), 6, obj=xgb_logistic)
    ours = oocboost.train(params, _cache(tmp_path, X, y), 6, obj=logistic,
                          verbose_eval=False)
    np.testing.assert_allclose(ours.predict(X), theirs.predict(xgb.DMatrix(X)), rtol=2e-4,
                               atol=1e-6)


def test_custom_metric_is_logged_and_minimised_by_early_stopping(data, tmp_path):
    X, signal, _ = data
    cache = _cache(tmp_path, X, signal)
    calls = []

    def mean_abs(predt, labels):
        calls.append(len(predt))
        return "mean-abs", float(np.mean(np.abs(predt - labels)))

    log = {}
    model = oocboost.train({"eta": 1.0, "max_depth": 6}, cache, 40,
                           evals=[(cache, "train")], custom_metric=mean_abs,
                           early_stopping_rounds=3, evals_result=log, verbose_eval=False)
    assert set(log["train"]) == {"rmse", "mean-abs"}
    values = log["train"]["mean-abs"]
    assert calls[0] == cache.n_rows
    r = 2
    expected = np.mean(np.abs(model.predict(cache, iteration_range=(0, r + 1)) -
                              cache.read_labels()[0]))
    assert values[r] == pytest.approx(expected, rel=1e-9)
    assert model.best_iteration == int(np.argmin(values))


@pytest.mark.parametrize("bad, message", [
    (lambda p, y: (p,), "pair"),
    (lambda p, y: (p[:-1], np.ones_like(p)), "shape"),
    (lambda p, y: (p - y, np.full_like(p, np.nan)), "non-finite hess"),
])
def test_bad_objectives_are_named(data, tmp_path, bad, message):
    X, signal, _ = data
    with pytest.raises(oocboost.ParameterError, match=message):
        oocboost.train({}, _cache(tmp_path, X, signal), 1, obj=bad, verbose_eval=False)
    with pytest.raises(oocboost.ParameterError, match="callable"):
        oocboost.train({}, _cache(tmp_path, X, signal), 1, obj="squared",
                       verbose_eval=False)


def test_estimators_take_scikit_learn_style_callables(data):
    X, signal, _ = data

    def squared_sklearn(y_true, y_pred):
        return y_pred - y_true, np.ones_like(y_pred)

    def max_error(y_true, y_pred):
        return float(np.max(np.abs(y_true - y_pred)))

    ours = oocboost.GradientBoostingRegressor(n_estimators=4, objective=squared_sklearn,
                                              eval_metric=max_error).fit(
        X, signal, eval_set=[(X, signal)])
    builtin = oocboost.GradientBoostingRegressor(n_estimators=4, base_score=0.5).fit(X, signal)
    np.testing.assert_allclose(ours.predict(X), builtin.predict(X), rtol=1e-6)
    assert ours.evals_result_["validation_0"]["max_error"][-1] == pytest.approx(
        max_error(signal, ours.predict(X)), rel=1e-6)
