"""Monotone constraints: predictions never go against a constrained feature's direction
along a grid of its values (every other feature fixed at each of many rows), names and
indices and XGBoost's string agree, bad specs are named, and the held-out AUC equals
XGBoost's with the same constraints within 0.003."""
import numpy as np
import pyarrow as pa
import pytest

import oocboost
from oocboost.engine.constraints import parse_monotone_constraints


def _data(n, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    X[rng.random(X.shape) < 0.03] = np.nan
    z = np.nan_to_num(X)
    # not monotone in f0 and f1 overall: the constraint has work to do
    logit = 1.5 * z[:, 0] - 0.8 * z[:, 0] ** 2 - np.sin(2 * z[:, 1]) + z[:, 2] * z[:, 3]
    y = (logit + rng.logistic(size=n) > 0).astype(float)
    return X, y


def _grid_directions(model, X, feature, n_rows=200):
    grid = np.linspace(-3, 3, 41)
    rows = np.repeat(np.nan_to_num(X[:n_rows]), len(grid), axis=0)
    rows[:, feature] = np.tile(grid, n_rows)
    margin = model.predict(rows, output_margin=True).reshape(n_rows, len(grid))
    return np.diff(margin, axis=1)


@pytest.mark.parametrize("grow_policy", ["depthwise", "lossguide"])
def test_predictions_follow_each_constrained_direction(tmp_path, grow_policy):
    X, y = _data(6000)
    table = pa.table({"f0": X[:, 0], "f1": X[:, 1], "f2": X[:, 2], "f3": X[:, 3], "y": y})
    cache = oocboost.build_cache(table, tmp_path / "c.oocb", label="y", quiet=True,
                                 block_rows=1024)
    params = {
        "objective": "binary:logistic",
        "max_depth": 5,
        "eta": 0.3,
        "grow_policy": grow_policy,
        "max_leaves": 24 if grow_policy == "lossguide" else 0,
        "monotone_constraints": {"f0": 1, "f1": -1},
    }
    model = oocboost.train(params, cache, 25, verbose_eval=False)
    assert (_grid_directions(model, X, 0) >= -1e-12).all()
    assert (_grid_directions(model, X, 1) <= 1e-12).all()
    free = oocboost.train({k: v for k, v in params.items() if k != "monotone_constraints"},
                          cache, 25, verbose_eval=False)
    assert (_grid_directions(free, X, 0) < -1e-6).any(), "unconstrained, f0 is not monotone"
    same = oocboost.train({**params, "monotone_constraints": "(1,-1,0,0)"}, cache, 25,
                          verbose_eval=False)
    np.testing.assert_array_equal(same.predict(X), model.predict(X))
    also = oocboost.train({**params, "monotone_constraints": (1, -1)}, cache, 25,
                          verbose_eval=False)
    np.testing.assert_array_equal(also.predict(X), model.predict(X))


def test_parsing_and_refusals():
    names, cat = ["a", "b", "c"], [False, False, True]
    np.testing.assert_array_equal(parse_monotone_constraints({"b": -1}, names, cat),
                                  [0, -1, 0])
    np.testing.assert_array_equal(parse_monotone_constraints("(1,0)", names, cat), [1, 0, 0])
    assert parse_monotone_constraints((0, 0), names, cat) is None
    for bad, message in (({"zz": 1}, "not a feature"), ((2,), "must be -1, 0 or 1"),
                         ({"c": 1}, "categorical"), ("(1,x)", "expected")):
        with pytest.raises(oocboost.ParameterError, match=message):
            parse_monotone_constraints(bad, names, cat)


def test_same_auc_as_xgboost_with_the_same_constraints(tmp_path):
    xgb = pytest.importorskip("xgboost")
    from oocboost.model.metrics import get_metric

    X, y = _data(20000, seed=1)
    train, test = slice(0, 16000), slice(16000, None)
    cache = oocboost.build_cache(X[train], tmp_path / "c.oocb", label=y[train], quiet=True)
    params = {"objective": "binary:logistic", "max_depth": 4, "eta": 0.3}
    theirs = xgb.train({**params, "tree_method": "hist", "monotone_constraints": "(1,-1,0,0)"},
                       xgb.DMatrix(X[train], label=y[train]), 30).predict(xgb.DMatrix(X[test]))
    ours = oocboost.train({**params, "monotone_constraints": (1, -1, 0, 0)}, cache, 30,
                          verbose_eval=False).predict(X[test])
    auc = get_metric("auc")
    assert auc(y[test], ours, None) == pytest.approx(auc(y[test], theirs, None), abs=0.003)
