"""Metrics vs scikit-learn, XGBoost's own evaluation and brute-force formulas."""
import math
import re

import numpy as np
import pytest
import sklearn.metrics as skm
import xgboost as xgb

from oocboost.errors import InputError, ParameterError
from oocboost.model.metrics import METRIC_NAMES, get_metric
from oocboost.model.objectives import get_objective

N = 400


@pytest.fixture(params=[False, True], ids=["unweighted", "weighted"])
def weight(request):
    if not request.param:
        return None
    return np.random.default_rng(99).uniform(0.0, 3.0, N)


def data(seed=0):
    rng = np.random.default_rng(seed)
    y_reg = rng.normal(1.0, 2.0, N)
    p_reg = y_reg + rng.normal(0.0, 1.0, N)
    y_bin = (rng.random(N) < 0.35).astype(np.float64)
    p_bin = np.clip(0.35 + 0.3 * (y_bin - 0.35) + rng.normal(0, 0.2, N), 0.001, 0.999)
    return rng, y_reg, p_reg, y_bin, p_bin


def test_regression_metrics_match_sklearn(weight):
    _, y, p, _, _ = data()
    close = dict(rtol=1e-12)
    np.testing.assert_allclose(get_metric("rmse")(y, p, weight), math.sqrt(
        skm.mean_squared_error(y, p, sample_weight=weight)), **close)
    np.testing.assert_allclose(get_metric("mae")(y, p, weight),
                               skm.mean_absolute_error(y, p, sample_weight=weight), **close)
    np.testing.assert_allclose(get_metric("r2")(y, p, weight),
                               skm.r2_score(y, p, sample_weight=weight), **close)
    for alpha in (0.1, 0.5, 0.9):
        np.testing.assert_allclose(
            get_metric("quantile", alpha=alpha)(y, p, weight),
            skm.mean_pinball_loss(y, p, alpha=alpha, sample_weight=weight), **close)


def test_r2_edge_cases_like_sklearn():
    y = np.full(5, 2.0)
    assert get_metric("r2")(y, y) == skm.r2_score(y, y) == 1.0
    assert get_metric("r2")(y, y + 1) == skm.r2_score(y, y + 1) == 0.0


def test_classification_metrics_match_sklearn(weight):
    rng, _, _, y, p = data(1)
    close = dict(rtol=1e-12)
    np.testing.assert_allclose(get_metric("logloss")(y, p, weight),
                               skm.log_loss(y, p, sample_weight=weight), **close)
    np.testing.assert_allclose(get_metric("auc")(y, p, weight),
                               skm.roc_auc_score(y, p, sample_weight=weight), **close)
    np.testing.assert_allclose(get_metric("accuracy")(y, p, weight),
                               skm.accuracy_score(y, p > 0.5, sample_weight=weight), **close)
    np.testing.assert_allclose(get_metric("error")(y, p, weight),
                               1 - skm.accuracy_score(y, p > 0.5, sample_weight=weight),
                               **close)
    np.testing.assert_allclose(get_metric("error@0.3")(y, p, weight),
                               1 - skm.accuracy_score(y, p > 0.3, sample_weight=weight),
                               **close)
    K = 4
    yk = rng.integers(0, K, N).astype(np.float64)
    pk = rng.dirichlet(np.ones(K), N)
    pk[np.arange(N), yk.astype(int)] += 0.3
    pk /= pk.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(get_metric("mlogloss")(yk, pk, weight),
                               skm.log_loss(yk, pk, sample_weight=weight, labels=range(K)),
                               **close)
    acc = skm.accuracy_score(yk, pk.argmax(axis=1), sample_weight=weight)
    np.testing.assert_allclose(get_metric("merror")(yk, pk, weight), 1 - acc, **close)
    np.testing.assert_allclose(get_metric("accuracy")(yk, pk, weight), acc, **close)


def brute_auc(y, p, w):
    """O(n^2) pairwise AUC: positive weight w y, negative weight w (1 - y)."""
    pos, neg = w * y, w * (1 - y)
    greater = (p[:, None] > p[None, :]) + 0.5 * (p[:, None] == p[None, :])
    return float(pos @ greater @ neg / (pos.sum() * neg.sum()))


def test_auc_ties_weights_and_probability_labels():
    rng = np.random.default_rng(2)
    y = (rng.random(N) < 0.4).astype(np.float64)
    p = np.round(rng.random(N) * 0.5 + 0.3 * y, 1)  # heavy ties
    w = rng.uniform(0, 2, N)
    w[:20] = 0.0
    auc = get_metric("auc")
    np.testing.assert_allclose(auc(y, p), skm.roc_auc_score(y, p), rtol=1e-12)
    np.testing.assert_allclose(auc(y, p, w), skm.roc_auc_score(y, p, sample_weight=w),
                               rtol=1e-12)
    np.testing.assert_allclose(auc(y, p, w), brute_auc(y, p, w), rtol=1e-12)
    soft = rng.random(N)  # XGBoost counts w y as positive and w (1 - y) as negative
    np.testing.assert_allclose(auc(soft, p, w), brute_auc(soft, p, w), rtol=1e-12)
    assert auc(y, np.zeros(N)) == 0.5
    assert auc(np.array([0.0, 1.0]), np.array([0.1, 0.9])) == 1.0
    assert auc(np.array([0.0, 1.0]), np.array([0.9, 0.1])) == 0.0


def test_auc_single_class_is_nan():
    auc = get_metric("auc")
    assert math.isnan(auc(np.ones(10), np.linspace(0, 1, 10)))
    assert math.isnan(auc(np.zeros(10), np.linspace(0, 1, 10)))
    assert math.isnan(auc(np.array([0.0, 1.0]), np.array([0.2, 0.7]), np.array([1.0, 0.0])))
    assert math.isnan(auc(np.array([]), np.array([])))


def test_formula_metrics(weight):
    rng, y, p, _, _ = data(3)
    wf = np.ones(N) if weight is None else weight
    counts = rng.poisson(2.5, N).astype(np.float64)
    mu = rng.uniform(0.5, 4.0, N)
    mu[:3] = [0.0, -1.0, 1e-20]  # clipped to 1e-16
    mu_c = np.maximum(mu, 1e-16)
    ref = np.array([math.lgamma(c + 1) for c in counts]) + mu_c - counts * np.log(mu_c)
    np.testing.assert_allclose(get_metric("poisson-nloglik")(counts, mu, weight),
                               np.average(ref, weights=wf), rtol=1e-12)
    for slope in (1.0, 2.5):
        z = (p - y) / slope
        ref = slope**2 * (np.sqrt(1 + z * z) - 1)
        kw = {} if slope == 1.0 else {"huber_slope": slope}
        np.testing.assert_allclose(get_metric("mphe", **kw)(y, p, weight),
                                   np.average(ref, weights=wf), rtol=1e-12)


def test_logloss_clipping_like_xgboost():
    y = np.array([1.0, 0.0, 1.0, 0.0])
    p = np.array([0.0, 1.0, 1.0, 0.0])
    expected = (2 * -math.log(1e-16) + 2 * -math.log1p(-1e-16)) / 4
    assert get_metric("logloss")(y, p) == pytest.approx(expected, rel=1e-12)
    pk = np.array([[1.0, 0.0], [0.5, 0.5]])
    assert get_metric("mlogloss")(np.array([1.0, 0.0]), pk) == pytest.approx(
        (-math.log(1e-16) + math.log(2)) / 2, rel=1e-12)


def test_merror_first_maximum_wins_ties():
    pk = np.array([[0.4, 0.4, 0.2], [0.2, 0.4, 0.4]])
    assert get_metric("merror")(np.array([0.0, 2.0]), pk) == 0.5


def xgb_eval(objective_params, metric, label, margin, weight):
    """XGBoost's value of ``metric`` at fixed margins: one round with eta = 0."""
    n = label.shape[0]
    X = np.random.default_rng(0).normal(size=(n, 2))
    d = xgb.DMatrix(X, label=label, weight=weight, base_margin=margin.ravel())
    params = dict(objective_params, eta=0.0, eval_metric=metric, nthread=1)
    out = xgb.train(params, d, 1).eval(d)
    return float(re.search(r"eval-[^:]+:(\S+)", out).group(1))


@pytest.mark.parametrize("obj_name,obj_params,metric,metric_kw", [
    ("reg:squarederror", {}, "rmse", {}),
    ("reg:squarederror", {}, "mae", {}),
    ("reg:pseudohubererror", {"huber_slope": 1.5}, "mphe", {"huber_slope": 1.5}),
    ("reg:quantileerror", {"quantile_alpha": 0.3}, "quantile", {"alpha": 0.3}),
    ("binary:logistic", {}, "logloss", {}),
    ("binary:logistic", {}, "error", {}),
    ("binary:logistic", {}, "error@0.7", {}),
    ("binary:logistic", {}, "auc", {}),
    ("multi:softprob", {"num_class": 3}, "mlogloss", {}),
    ("multi:softmax", {"num_class": 3}, "merror", {}),
    ("count:poisson", {}, "poisson-nloglik", {}),
    ("reg:gamma", {}, "gamma-deviance", {}),
    ("reg:gamma", {}, "gamma-nloglik", {}),
    ("reg:tweedie", {"tweedie_variance_power": 1.5}, "tweedie-nloglik@1.5", {}),
    ("reg:tweedie", {"tweedie_variance_power": 1.2}, "tweedie-nloglik@1.2", {}),
    ("reg:logistic", {}, "rmse", {}),
    ("binary:hinge", {}, "error", {}),
])
@pytest.mark.parametrize("weighted", [False, True])
def test_agrees_with_xgboost_evaluation(obj_name, obj_params, metric, metric_kw, weighted):
    rng = np.random.default_rng(4)
    obj = get_objective(obj_name, obj_params)
    n, K = 300, obj.n_outputs
    if obj.is_classification:
        label = rng.integers(0, max(K, 2), n).astype(np.float64)
        margin = rng.normal(0, 1.5, (n, K)) + (label[:, None] - 0.5 if K == 1 else 0)
    elif obj_name in ("count:poisson", "reg:tweedie"):
        label = rng.poisson(2.0, n).astype(np.float64)
        margin = rng.normal(0.7, 0.5, (n, 1))
    elif obj_name == "reg:gamma":
        label = rng.gamma(2.0, 1.5, n)
        margin = rng.normal(1.0, 0.5, (n, 1))
    elif obj_name == "reg:logistic":
        label = rng.random(n)
        margin = rng.normal(0, 1.5, (n, 1))
    else:
        label = rng.normal(0, 2, n)
        margin = label[:, None] + rng.normal(0, 1.5, (n, 1))
    w = rng.uniform(0.1, 2.0, n) if weighted else None
    ours = get_metric(metric, **metric_kw)(label, obj.eval_transform(margin), w)
    theirs = xgb_eval(dict(obj_params, objective=obj_name), metric, label, margin, w)
    assert ours == pytest.approx(theirs, rel=2e-6, abs=1e-7)


def test_objective_default_metrics_build():
    for name in ("reg:squarederror", "reg:absoluteerror", "reg:pseudohubererror",
                 "reg:quantileerror", "binary:logistic", "count:poisson", "reg:logistic",
                 "binary:logitraw", "binary:hinge", "reg:gamma", "reg:tweedie"):
        obj = get_objective(name)
        m = get_metric(obj.default_metric, **obj.default_metric_params)
        assert m.name == obj.default_metric


def test_partial_sums_add_across_blocks(weight):
    _, y, p, yb, pb = data(5)
    for name, yy, pp in [("rmse", y, p), ("r2", y, p), ("logloss", yb, pb),
                         ("error", yb, pb), ("mae", y, p)]:
        metric = get_metric(name)
        assert metric.is_additive
        sums = 0
        for s in range(0, N, 37):
            sums = sums + metric.partial(yy[s:s + 37], pp[s:s + 37],
                                         None if weight is None else weight[s:s + 37])
        assert metric.finalize(sums) == pytest.approx(metric(yy, pp, weight), rel=1e-10)
    auc = get_metric("auc")
    assert not auc.is_additive
    with pytest.raises(ParameterError):
        auc.partial(yb, pb)


def test_higher_is_better():
    for name in METRIC_NAMES:
        name = {"error@t": "error@0.2", "tweedie-nloglik@rho": "tweedie-nloglik@1.3"}.get(
            name, name.replace("@k", "@3"))
        ranking = name.startswith(("ndcg", "map", "pre"))
        assert get_metric(name).higher_is_better == (ranking or name in (
            "auc", "r2", "accuracy", "interval-regression-accuracy"))


def test_bad_names_parameters_and_inputs():
    with pytest.raises(ParameterError) as err:
        get_metric("ndcg@x")
    assert "rmse" in str(err.value) and "auc" in str(err.value)
    with pytest.raises(ParameterError, match="error@t"):
        get_metric("error@abc")
    with pytest.raises(ParameterError, match="alpha"):
        get_metric("rmse", alpha=0.3)
    with pytest.raises(ParameterError, match="alpha"):
        get_metric("quantile", alpha=1.5)
    with pytest.raises(ParameterError, match="huber_slope"):
        get_metric("mphe", huber_slope=0)
    with pytest.raises(InputError, match=r"shape \(3,\)"):
        get_metric("rmse")(np.zeros(3), np.zeros(4))
    with pytest.raises(InputError, match="n_classes"):
        get_metric("mlogloss")(np.zeros(3), np.zeros(3))
    with pytest.raises(InputError, match=r"row 1 has label 3.0"):
        get_metric("mlogloss")(np.array([0.0, 3.0]), np.full((2, 3), 1 / 3))
    with pytest.raises(InputError, match="binary"):
        get_metric("auc")(np.zeros(3), np.zeros((3, 2)))
    with pytest.raises(InputError, match="NaN"):
        get_metric("auc")(np.zeros(2), np.array([0.1, np.nan]))
    assert math.isnan(get_metric("rmse")(np.ones(2), np.ones(2), np.zeros(2)))


@pytest.mark.parametrize("name", ["tweedie-nloglik", "tweedie-nloglik@2.5",
                                  "tweedie-nloglik@x", "tweedie-nloglik@1"])
def test_tweedie_metric_names_its_power(name):
    with pytest.raises(ParameterError, match=r"rho in \(1, 2\)"):
        get_metric(name)


def test_evaluation_metrics_keep_off_blas(weight, monkeypatch):
    """Metrics run every round of training with evaluation sets: numpy's dot of long
    vectors wakes OpenBLAS's threads, which then spin on the cores of the next numba
    kernels (AUC made a whole demo run 2.2x slower), so none may call it."""
    _, y, p, yb, pb = data(7)
    expected = {name: get_metric(name)(yy, pp, weight) for name, yy, pp in [
        ("rmse", y, p), ("r2", y, p), ("logloss", yb, pb), ("auc", yb, pb),
        ("error", yb, pb), ("mae", y, p)]}

    def no_blas(*_args, **_kwargs):
        raise AssertionError("np.dot called by a metric")

    monkeypatch.setattr(np, "dot", no_blas)
    for name, value in expected.items():
        yy, pp = (y, p) if name in ("rmse", "r2", "mae") else (yb, pb)
        assert get_metric(name)(yy, pp, weight) == pytest.approx(value, rel=1e-12), name
