"""Objectives: gradients vs finite differences and naive numpy, XGBoost agreement on leaf
sums, intercepts vs numpy, transforms, label checks, LabelStats block invariance."""
import json
import math

import numpy as np
import pytest
import xgboost as xgb
from hypothesis import given, settings
from hypothesis import strategies as st

from oocboost.cache.label_stats import LabelStats
from oocboost.errors import InputError, ParameterError
from oocboost.model.objectives import OBJECTIVE_NAMES, get_objective

RNG_SEED = 1234

# Per-row loss l(y, m) of each objective, written independently of the library.
# m is (n, K); returns (n,). scale_pos_weight / max_delta_step enter only g, h.


def loss_squared(y, m, p):
    return 0.5 * (m[:, 0] - y) ** 2


def loss_absolute(y, m, p):
    return np.abs(m[:, 0] - y)


def loss_huber(y, m, p):
    d = p.get("huber_slope", 1.0)
    z = m[:, 0] - y
    return d * d * (np.sqrt(1.0 + (z / d) ** 2) - 1.0)


def loss_quantile(y, m, p):
    """Summed over the levels (one margin column each)."""
    a = np.atleast_1d(p.get("quantile_alpha", 0.5))
    r = y[:, None] - m
    return np.where(r >= 0, a * r, (a - 1.0) * r).sum(axis=1)


def loss_logistic(y, m, p):
    # log(1 + e^m) - y m, stable
    return np.logaddexp(0.0, m[:, 0]) - y * m[:, 0]


def loss_softmax(y, m, p):
    lse = np.logaddexp.reduce(m, axis=1)
    return lse - m[np.arange(len(y)), y.astype(int)]


def loss_poisson(y, m, p):
    return np.exp(m[:, 0]) - y * m[:, 0]


def loss_gamma(y, m, p):
    return y * np.exp(-m[:, 0]) + m[:, 0]


def loss_tweedie(y, m, p):
    rho = p.get("tweedie_variance_power", 1.5)
    return (-y * np.exp((1 - rho) * m[:, 0]) / (1 - rho)
            + np.exp((2 - rho) * m[:, 0]) / (2 - rho))


CASES = [
    # name, params, loss, label maker, hess factor vs true hessian (None: h == w)
    ("reg:squarederror", {}, loss_squared, "real", 1.0),
    ("reg:absoluteerror", {}, loss_absolute, "real", None),
    ("reg:pseudohubererror", {"huber_slope": 1.7}, loss_huber, "real", 1.0),
    ("reg:quantileerror", {"quantile_alpha": 0.3}, loss_quantile, "real", None),
    ("reg:quantileerror", {"quantile_alpha": [0.2, 0.7]}, loss_quantile, "real", None),
    ("binary:logistic", {}, loss_logistic, "binary", 1.0),
    ("multi:softprob", {"num_class": 4}, loss_softmax, "multi", 2.0),
    ("multi:softmax", {"num_class": 3}, loss_softmax, "multi", 2.0),
    ("count:poisson", {}, loss_poisson, "count", math.exp(0.7)),
    ("count:poisson", {"max_delta_step": 0.0}, loss_poisson, "count", 1.0),
    ("reg:logistic", {}, loss_logistic, "probability", 1.0),
    ("binary:logitraw", {}, loss_logistic, "binary", 1.0),
    ("reg:gamma", {}, loss_gamma, "positive", 1.0),
    ("reg:tweedie", {"tweedie_variance_power": 1.3}, loss_tweedie, "count", 1.0),
]


def make_labels(kind, n, rng, n_classes=2):
    if kind == "real":
        return rng.normal(2.0, 3.0, n).astype(np.float32)
    if kind == "binary":
        return (rng.random(n) < 0.4).astype(np.float32)
    if kind == "multi":
        return rng.integers(0, n_classes, n).astype(np.float32)
    if kind == "probability":
        return rng.random(n).astype(np.float32)
    if kind == "positive":
        return rng.gamma(2.0, 1.5, n).astype(np.float32)
    return rng.poisson(3.0, n).astype(np.float32)


def run_gradients(obj, y, m, w=None):
    g = np.empty(m.shape, np.float32)
    h = np.empty(m.shape, np.float32)
    obj.gradients(y, m, w, g, h)
    return g, h


@pytest.mark.parametrize("name,params,loss,kind,hess_factor", CASES)
def test_gradients_match_finite_differences(name, params, loss, kind, hess_factor):
    rng = np.random.default_rng(RNG_SEED)
    obj = get_objective(name, params)
    n, K = 400, obj.n_outputs
    y = make_labels(kind, n, rng, K)
    m = rng.normal(0.0, 1.5, (n, K))
    if kind == "real":
        m += 2.0
    if kind in ("count", "positive"):
        m = rng.normal(1.0, 0.5, (n, K))
    g, h = run_gradients(obj, y, m)
    y64 = y.astype(np.float64)
    eps = 1e-4
    for k in range(K):
        e = np.zeros((1, K))
        e[0, k] = eps
        lp, l0, lm = loss(y64, m + e, params), loss(y64, m, params), loss(y64, m - e, params)
        fd_g = (lp - lm) / (2 * eps)
        fd_h = (lp - 2 * l0 + lm) / eps**2
        smooth = np.abs(m[:, k] - y64) > 10 * eps if K == 1 else np.ones(n, bool)
        np.testing.assert_allclose(g[smooth, k], fd_g[smooth], rtol=1e-5, atol=1e-6)
        if hess_factor is None:
            np.testing.assert_array_equal(h[:, k], 1.0)
        else:
            np.testing.assert_allclose(h[:, k], hess_factor * fd_h, rtol=2e-4, atol=1e-5)


def naive_gradients(name, params, y, m, w):
    """Independent numpy transcription of XGBoost's formulas (float64)."""
    y = y.astype(np.float64)
    w = np.ones(len(y)) if w is None else w.astype(np.float64)
    m0 = m[:, 0]
    if name == "reg:squarederror":
        return w * (m0 - y), w
    if name == "reg:absoluteerror":
        return w * np.sign(m0 - y), w
    if name == "reg:pseudohubererror":
        d = params["huber_slope"]
        z = m0 - y
        s = np.sqrt(1 + z * z / d**2)
        return w * z / s, w * d * d / ((d * d + z * z) * s)
    if name == "reg:quantileerror":
        a = np.atleast_1d(params["quantile_alpha"])
        g = np.where(m >= y[:, None], 1 - a, -a) * w[:, None]
        return g, np.repeat(w[:, None], len(a), axis=1)
    if name in ("binary:logistic", "reg:logistic", "binary:logitraw"):
        w = np.where(y == 1, w * params["scale_pos_weight"], w)
        p = 1 / (1 + np.exp(-m0))
        return w * (p - y), w * np.maximum(p * (1 - p), 1e-16)
    if name.startswith("multi:"):
        e = np.exp(m - m.max(axis=1, keepdims=True))
        p = e / e.sum(axis=1, keepdims=True)
        onehot = np.eye(m.shape[1])[y.astype(int)]
        return w[:, None] * (p - onehot), np.maximum(2 * p * (1 - p) * w[:, None], 1e-16)
    if name == "count:poisson":
        return w * (np.exp(m0) - y), w * np.exp(m0 + params["max_delta_step"])
    if name == "reg:gamma":
        return w * (1 - y / np.exp(m0)), w * y / np.exp(m0)
    if name == "reg:tweedie":
        rho = params["tweedie_variance_power"]
        a, b = np.exp((1 - rho) * m0), np.exp((2 - rho) * m0)
        return w * (-y * a + b), w * (-y * (1 - rho) * a + (2 - rho) * b)
    if name == "binary:hinge":
        s = 2 * y - 1
        inside = m0 * s < 1
        return np.where(inside, -w * s, 0.0), np.where(inside, w, np.finfo(np.float32).tiny)
    raise AssertionError(name)


@pytest.mark.parametrize("name,params,loss,kind,hess_factor", CASES)
@pytest.mark.parametrize("weighted", [False, True])
def test_gradients_match_naive_numpy(name, params, loss, kind, hess_factor, weighted):
    rng = np.random.default_rng(7)
    obj = get_objective(name, dict(params, scale_pos_weight=2.5))
    # several of logistic_gradients' 512-row stretches and a partial one
    n, K = 1537, obj.n_outputs
    y = make_labels(kind, n, rng, K)
    m = rng.normal(0.0, 2.0, (n, K))
    m[:5] = 0.0  # ties with labels at 0 for the sign / pinball branches
    y[:3] = 0.0
    w = rng.uniform(0.0, 3.0, n).astype(np.float32) if weighted else None
    g, h = run_gradients(obj, y, m, w)
    ng, nh = naive_gradients(name, obj.params, y, m, w)
    ng, nh = ng.reshape(n, K), nh.reshape(n, K)
    if name in ("reg:squarederror", "reg:absoluteerror", "reg:quantileerror"):
        # no transcendental functions: bit-exact after the float32 rounding
        np.testing.assert_array_equal(g, ng.astype(np.float32))
        np.testing.assert_array_equal(h, nh.astype(np.float32))
    else:  # exp/sqrt may differ by an ulp between numba's libm and numpy
        np.testing.assert_allclose(g, ng, rtol=3e-7, atol=1e-30)
        np.testing.assert_allclose(h, nh, rtol=3e-7, atol=1e-30)


@pytest.mark.parametrize("weighted", [False, True])
def test_hinge_gradients_match_naive_numpy(weighted):
    rng = np.random.default_rng(5)
    obj = get_objective("binary:hinge")
    y = make_labels("binary", 300, rng)
    m = rng.normal(0.0, 1.5, (300, 1))
    m[:4] = [[1.0], [-1.0], [0.0], [1.0]]  # on the margin: outside (m s = 1 is not < 1)
    y[:4] = [1, 0, 1, 0]
    w = rng.uniform(0.0, 3.0, 300).astype(np.float32) if weighted else None
    g, h = run_gradients(obj, y, m, w)
    ng, nh = naive_gradients("binary:hinge", {}, y, m, w)
    np.testing.assert_array_equal(g[:, 0], ng.astype(np.float32))
    np.testing.assert_array_equal(h[:, 0], nh.astype(np.float32))


@pytest.mark.parametrize("name, labels", [
    ("reg:absoluteerror", "positive"), ("reg:quantileerror", "positive"),
    ("reg:logistic", "probability"), ("binary:logitraw", "binary"),
    ("binary:hinge", "binary"), ("reg:gamma", "positive"), ("reg:tweedie", "count")])
def test_intercepts_and_predictions_agree_with_xgboost(name, labels, tmp_path):
    """XGBoost's fitted base_score (in prediction space) and its predictions after a
    few rounds, against ours on the same data."""
    import oocboost

    rng = np.random.default_rng(2)
    X = rng.integers(0, 6, size=(2000, 3)).astype(float)  # a bin per value: same splits
    y = make_labels(labels, 2000, rng)
    if labels == "probability":
        y = np.clip(0.2 * X[:, 0] + 0.1 * rng.random(2000), 0, 1).astype(np.float32)
    elif labels in ("positive", "count"):
        y = (y * (1 + X[:, 0])).astype(np.float32)
    else:
        y = ((X[:, 0] + rng.normal(size=2000)) > 2.5).astype(np.float32)
    params = {"objective": name, "max_depth": 2, "eta": 0.3}
    if name == "reg:quantileerror":
        params["quantile_alpha"] = 0.8
    booster = xgb.train({**params, "tree_method": "hist", "nthread": 1},
                        xgb.DMatrix(X, label=y), 5)
    base = float(json.loads(booster.save_config())["learner"]["learner_model_param"]
                 ["base_score"].strip("[]"))
    obj = get_objective(name, params)
    stats = LabelStats().update(y)
    link = obj.base_margin(stats)[0]
    expected = obj.transform(np.array([[link]]))[0]
    refreshed = obj.leaf_refresh_quantile is not None
    # XGBoost interpolates its median / quantile intercept; ours is a label value (the
    # sketch's). The refreshed leaves absorb the difference, so predictions still agree.
    assert expected == pytest.approx(base, rel=1e-2 if refreshed else 1e-5, abs=1e-6)
    cache = oocboost.build_cache(X, tmp_path / "c.oocb", label=y.astype(float), quiet=True)
    ours = oocboost.train(params, cache, 5, verbose_eval=False).predict(X)
    np.testing.assert_allclose(ours, booster.predict(xgb.DMatrix(X)),
                               rtol=2e-3 if refreshed else 2e-4, atol=2e-5)


def test_weights_scale_gradients_and_1d_margin_and_strided_outputs():
    rng = np.random.default_rng(3)
    obj = get_objective("reg:pseudohubererror")
    y = rng.normal(size=50).astype(np.float64)
    m = rng.normal(size=50)
    w = rng.uniform(0.5, 2.0, 50)
    g1, h1 = run_gradients(obj, y, m[:, None])
    stats = np.zeros((50, 3), np.float32)  # a (g, h, count) buffer; columns are strided
    obj.gradients(y, m, w, stats[:, 0:1], stats[:, 1:2])
    np.testing.assert_allclose(stats[:, 0], w * g1[:, 0], rtol=1e-6)
    np.testing.assert_allclose(stats[:, 1], w * h1[:, 0], rtol=1e-6)
    np.testing.assert_array_equal(stats[:, 2], 0.0)


def test_extreme_margins_stay_finite():
    obj = get_objective("binary:logistic")
    m = np.array([[-800.0], [800.0], [0.0]])
    g, h = run_gradients(obj, np.array([1.0, 0.0, 1.0], np.float32), m)
    assert np.all(np.isfinite(g)) and np.all(h > 0)
    np.testing.assert_allclose(g[:, 0], [-1.0, 1.0, -0.5])
    np.testing.assert_allclose(h[:, 0], [1e-16, 1e-16, 0.25], rtol=1e-6)
    sm = get_objective("multi:softprob", {"num_class": 3})
    m = np.array([[1000.0, -1000.0, 0.0]])
    g, h = run_gradients(sm, np.array([1.0]), m)
    np.testing.assert_allclose(g[0], [1.0, -1.0, 0.0], atol=1e-7)
    assert np.all(h >= 1e-16)
    np.testing.assert_allclose(sm.transform(m), [[1.0, 0.0, 0.0]])


def xgb_root_leaf(params, X, y, margin, w):
    """One XGBoost round whose tree is a single leaf: value -G/H with lambda = 0."""
    d = xgb.DMatrix(X, label=y, weight=w, base_margin=margin.ravel())
    p = dict(params, eta=1.0, gamma=1e30, reg_lambda=0.0, min_child_weight=0.0,
             tree_method="hist", nthread=1)
    bst = xgb.train(p, d, 1)
    out = bst.predict(d, output_margin=True).reshape(margin.shape) - margin
    return out[0]


@pytest.mark.parametrize("name,params,kind", [
    ("reg:squarederror", {}, "real"),
    ("reg:pseudohubererror", {"huber_slope": 2.0}, "real"),
    ("binary:logistic", {"scale_pos_weight": 3.0}, "binary"),
    ("multi:softprob", {"num_class": 3}, "multi"),
    ("count:poisson", {}, "count"),
    ("reg:logistic", {}, "probability"),
    ("binary:logitraw", {"scale_pos_weight": 2.0}, "binary"),
    ("binary:hinge", {}, "binary"),
    ("reg:gamma", {}, "positive"),
    ("reg:tweedie", {"tweedie_variance_power": 1.2}, "count"),
])
def test_leaf_sums_agree_with_xgboost(name, params, kind):
    rng = np.random.default_rng(11)
    obj = get_objective(name, params)
    n, K = 500, obj.n_outputs
    X = rng.normal(size=(n, 2))
    y = make_labels(kind, n, rng, K)
    m = rng.normal(0.0, 0.7, (n, K)) + (1.0 if kind in ("count", "positive") else 0.0)
    w = rng.uniform(0.2, 2.0, n).astype(np.float32)
    g, h = run_gradients(obj, y, m, w)
    ours = -g.astype(np.float64).sum(axis=0) / h.astype(np.float64).sum(axis=0)
    xgb_params = dict(params, objective=name)
    np.testing.assert_allclose(ours, xgb_root_leaf(xgb_params, X, y, m, w), rtol=2e-5,
                               atol=1e-6)


# ------------------------------------------------------------------ construction -----
def test_unknown_objective_lists_known_names():
    with pytest.raises(ParameterError) as err:
        get_objective("reg:linear")
    for name in OBJECTIVE_NAMES:
        assert name in str(err.value)
    with pytest.raises(ParameterError):
        get_objective(None)


@pytest.mark.parametrize("name,params,fragment", [
    ("multi:softprob", {}, "num_class"),
    ("multi:softmax", {"num_class": 1}, "num_class"),
    ("multi:softmax", {"num_class": 2.5}, "num_class"),
    ("reg:pseudohubererror", {"huber_slope": 0.0}, "huber_slope"),
    ("reg:quantileerror", {"quantile_alpha": 1.0}, "quantile_alpha"),
    ("reg:quantileerror", {"quantile_alpha": [0.1, 1.5]}, "quantile_alpha"),
    ("reg:quantileerror", {"quantile_alpha": [0.1, 0.1]}, "twice"),
    ("reg:quantileerror", {"quantile_alpha": []}, "empty"),
    ("binary:logistic", {"scale_pos_weight": -1}, "scale_pos_weight"),
    ("count:poisson", {"max_delta_step": float("nan")}, "max_delta_step"),
    ("count:poisson", {"max_delta_step": True}, "max_delta_step"),
    ("reg:tweedie", {"tweedie_variance_power": 2.0}, "tweedie_variance_power"),
    ("reg:tweedie", {"tweedie_variance_power": 1.0}, "tweedie_variance_power"),
    ("anomaly:isolation", {}, "max_samples"),
    ("anomaly:isolation", {"max_samples": 0}, "max_samples"),
])
def test_bad_parameters(name, params, fragment):
    with pytest.raises(ParameterError, match=fragment):
        get_objective(name, params)


def test_attributes_and_roundtrip():
    table = {
        "reg:squarederror": (1, False, "rmse"),
        "reg:absoluteerror": (1, False, "mae"),
        "reg:pseudohubererror": (1, False, "mphe"),
        "reg:quantileerror": (1, False, "quantile"),
        "binary:logistic": (1, True, "logloss"),
        "multi:softprob": (5, True, "mlogloss"),
        "multi:softmax": (5, True, "mlogloss"),
        "count:poisson": (1, False, "poisson-nloglik"),
        "multi:proba": (5, True, "mlogloss"),
        "reg:logistic": (1, False, "rmse"),
        "binary:logitraw": (1, True, "logloss"),
        "binary:hinge": (1, True, "error"),
        "reg:gamma": (1, False, "gamma-deviance"),
        "reg:tweedie": (1, False, "tweedie-nloglik@1.5"),
        "survival:cox": (1, False, "cox-nloglik"),
        "rank:pairwise": (1, False, "ndcg@32"),
        "rank:ndcg": (1, False, "ndcg@32"),
        "rank:map": (1, False, "map@32"),
        "survival:aft": (1, False, "aft-nloglik"),
        "anomaly:isolation": (1, False, "auc"),
    }
    assert set(table) == set(OBJECTIVE_NAMES)
    for name, (n_out, is_clf, metric) in table.items():
        obj = get_objective(name, {"num_class": 5, "learning_rate": 0.1,
                                   "max_samples": 256})
        assert (obj.n_outputs, obj.is_classification, obj.default_metric) == \
            (n_out, is_clf, metric)
        d = json.loads(json.dumps(obj.to_dict()))
        assert get_objective(**d) == obj
        assert "learning_rate" not in obj.params
    assert get_objective("count:poisson").params == {"max_delta_step": 0.7}
    q = get_objective("reg:quantileerror", {"quantile_alpha": [0.9]})
    assert q.default_metric_params == {"alpha": 0.9} and q.leaf_refresh_quantile == 0.9
    three = get_objective("reg:quantileerror", {"quantile_alpha": [0.1, 0.5, 0.9]})
    assert three.n_outputs == 3 and three.params == {"quantile_alpha": [0.1, 0.5, 0.9]}
    assert get_objective(**json.loads(json.dumps(three.to_dict()))) == three
    assert get_objective("reg:absoluteerror").leaf_refresh_quantile == 0.5


# ------------------------------------------------------------------ labels -----------
@pytest.mark.parametrize("name,params,labels,bad_row,expect", [
    ("binary:logistic", {}, [0, 1, 0.25, 1.5, 2], 3, "[0, 1]"),
    ("binary:logistic", {}, [0, -0.0, -1e-9], 2, "[0, 1]"),
    ("multi:softmax", {"num_class": 3}, [0, 2, 1.5, 0], 2, "integer class labels in [0, 3)"),
    ("multi:softprob", {"num_class": 3}, [0, 2, 3, 0], 2, "[0, 3)"),
    ("multi:softprob", {"num_class": 3}, [0, -1], 1, "[0, 3)"),
    ("count:poisson", {}, [0, 3, -2], 2, "non-negative"),
    ("reg:gamma", {}, [1, 0.5, 0.0], 2, "positive labels"),
    ("reg:tweedie", {}, [0, 2, -0.5], 2, "non-negative"),
    ("reg:logistic", {}, [0, 0.3, 1.2], 2, "[0, 1]"),
    ("binary:hinge", {}, [0, 1, 0.5], 2, "0 or 1"),
    ("reg:squarederror", {}, [0, np.inf], 1, "finite"),
    ("reg:quantileerror", {}, [0, 1, np.nan], 2, "finite"),
    ("binary:logistic", {}, [np.nan], 0, "finite"),
])
def test_check_labels_names_source_row_and_value(name, params, labels, bad_row, expect):
    obj = get_objective(name, params)
    label = np.array(labels, np.float32)
    with pytest.raises(InputError) as err:
        obj.check_labels(label, "cache /tmp/x (block 3)", row_start=1000)
    msg = str(err.value)
    assert msg.startswith("cache /tmp/x (block 3)")
    assert f"row {1000 + bad_row} " in msg
    assert repr(float(label[bad_row])) in msg
    assert expect in msg and name in msg


def test_check_labels_accepts_valid():
    get_objective("binary:logistic").check_labels(np.array([0, 1, 0.3]), "x")
    get_objective("multi:softmax", {"num_class": 3}).check_labels(np.array([0., 1, 2]), "x")
    get_objective("count:poisson").check_labels(np.array([0., 1.5, 20]), "x")
    get_objective("reg:squarederror").check_labels(np.array([-1e30, 1e30]), "x")


# ------------------------------------------------------------------ transforms -------
def test_transforms():
    rng = np.random.default_rng(5)
    m1 = rng.normal(0, 3, (20, 1))
    np.testing.assert_array_equal(get_objective("reg:squarederror").transform(m1), m1[:, 0])
    p = get_objective("binary:logistic").transform(m1)
    assert p.shape == (20,)
    np.testing.assert_allclose(p, 1 / (1 + np.exp(-m1[:, 0])), rtol=1e-15)
    proba = get_objective("binary:logistic").transform_proba(m1[:, 0])
    np.testing.assert_allclose(proba, np.column_stack([1 - p, p]))
    np.testing.assert_allclose(get_objective("count:poisson").transform(m1), np.exp(m1[:, 0]))
    mk = rng.normal(0, 3, (20, 4))
    mk[0] = [1.0, 3.0, 3.0, 0.0]  # tie: first maximum wins
    e = np.exp(mk - mk.max(axis=1, keepdims=True))
    ref = e / e.sum(axis=1, keepdims=True)
    sp = get_objective("multi:softprob", {"num_class": 4})
    sm = get_objective("multi:softmax", {"num_class": 4})
    np.testing.assert_allclose(sp.transform(mk), ref, rtol=1e-14)
    np.testing.assert_allclose(sm.transform_proba(mk), ref, rtol=1e-14)
    np.testing.assert_allclose(sm.eval_transform(mk), ref, rtol=1e-14)
    cls = sm.transform(mk)
    assert cls.shape == (20,) and cls.dtype == np.float64 and cls[0] == 1.0
    np.testing.assert_array_equal(cls, np.argmax(mk, axis=1))
    with pytest.raises(ParameterError):
        get_objective("reg:squarederror").transform_proba(m1)
    with pytest.raises(InputError):
        sp.transform(m1)


def test_base_score_to_margin():
    assert get_objective("reg:squarederror").base_score_to_margin(3.5).tolist() == [3.5]
    np.testing.assert_allclose(get_objective("binary:logistic").base_score_to_margin(0.2),
                               [math.log(0.25)])
    np.testing.assert_allclose(get_objective("count:poisson").base_score_to_margin(4.0),
                               [math.log(4.0)])
    np.testing.assert_array_equal(
        get_objective("multi:softprob", {"num_class": 3}).base_score_to_margin(0.5), [0.5] * 3)
    for name, bad in [("binary:logistic", 1.0), ("binary:logistic", 0.0),
                      ("count:poisson", 0.0), ("reg:squarederror", float("nan"))]:
        with pytest.raises(ParameterError):
            get_objective(name).base_score_to_margin(bad)


# ------------------------------------------------------------------ intercepts -------
def brute_weighted_quantile_bounds(y, w, q):
    """All values v with weight(< v) <= q W <= weight(<= v): the set of q-quantiles."""
    order = np.argsort(y, kind="stable")
    ys, ws = y[order], w[order]
    below = np.cumsum(ws) - ws
    upto = np.cumsum(ws)
    total = ws.sum()
    ok = (below <= q * total + 1e-9 * total) & (upto >= q * total - 1e-9 * total)
    return ys[ok].min(), ys[ok].max()


def stats_in_blocks(y, w, block):
    stats = LabelStats()
    for s in range(0, len(y), block):
        stats.update(y[s:s + block], None if w is None else w[s:s + block])
    return stats


@pytest.mark.parametrize("weighted", [False, True])
def test_base_margin_matches_numpy(weighted):
    rng = np.random.default_rng(17)
    n = 300
    w = rng.uniform(0.1, 3.0, n) if weighted else None
    wf = np.ones(n) if w is None else w
    yr = np.round(rng.normal(2.0, 3.0, n), 1)  # <= 255 distinct -> exact sketch
    stats = stats_in_blocks(yr, w, 37)
    np.testing.assert_allclose(get_objective("reg:squarederror").base_margin(stats),
                               [np.average(yr, weights=wf)], rtol=1e-12)
    for name, q in [("reg:absoluteerror", 0.5), ("reg:pseudohubererror", 0.5),
                    ("reg:quantileerror", 0.5)]:
        lo, hi = brute_weighted_quantile_bounds(yr, wf, q)
        (value,) = get_objective(name).base_margin(stats)
        assert lo <= value <= hi, (name, value, lo, hi)
    for alpha in (0.1, 0.8):
        lo, hi = brute_weighted_quantile_bounds(yr, wf, alpha)
        obj = get_objective("reg:quantileerror", {"quantile_alpha": alpha})
        assert lo <= obj.base_margin(stats)[0] <= hi
    yb = (rng.random(n) < 0.3).astype(np.float32)
    mean = np.average(yb, weights=wf)
    np.testing.assert_allclose(get_objective("binary:logistic").base_margin(
        stats_in_blocks(yb, w, 50)), [math.log(mean / (1 - mean))], rtol=1e-12)
    yc = rng.poisson(2.0, n).astype(np.float64)
    np.testing.assert_allclose(get_objective("count:poisson").base_margin(
        stats_in_blocks(yc, w, 64)), [math.log(np.average(yc, weights=wf))], rtol=1e-12)
    np.testing.assert_array_equal(get_objective("multi:softprob", {"num_class": 3})
                                  .base_margin(stats_in_blocks(yc, w, 64)), np.zeros(3))


def test_base_margin_edge_cases():
    all_pos = stats_in_blocks(np.ones(10), None, 4)
    np.testing.assert_allclose(get_objective("binary:logistic").base_margin(all_pos),
                               [math.log((1 - 1e-6) / 1e-6)])
    with pytest.raises(InputError, match="positive mean"):
        get_objective("count:poisson").base_margin(stats_in_blocks(np.zeros(5), None, 2))
    with pytest.raises(InputError, match="positive total weight"):
        get_objective("reg:squarederror").base_margin(
            stats_in_blocks(np.ones(3), np.zeros(3), 2))
    with pytest.raises(InputError):
        get_objective("reg:squarederror").base_margin(LabelStats())


# ------------------------------------------------------------------ LabelStats -------
def test_label_stats_fields_and_roundtrip():
    y = np.array([2, 0, np.nan, 1, 2, 2, 7], np.float32)
    w = np.array([1, 2, 5, 0.5, 1, 1, 3], np.float64)
    s = LabelStats().update(y, w)
    assert (s.n_rows, s.n_missing) == (7, 1)
    assert s.sum_weight == 8.5 and s.weighted_sum == 2 + 0.5 + 2 + 2 + 21
    assert (s.min, s.max) == (0.0, 7.0)
    assert s.class_weights == {0: 2.0, 1: 0.5, 2: 3.0, 7: 3.0}
    d = json.loads(json.dumps(s.to_dict(), allow_nan=False))
    r = LabelStats.from_dict(d)
    assert r.to_dict() == s.to_dict()
    assert r.quantile(0.5) == s.quantile(0.5)
    empty = LabelStats()
    assert math.isnan(empty.quantile(0.5)) and math.isnan(empty.min)
    json.dumps(empty.to_dict(), allow_nan=False)
    assert LabelStats.from_dict(json.loads(json.dumps(empty.to_dict()))).class_weights == {}


def test_label_stats_class_weights_give_up():
    s = LabelStats().update(np.array([0.0, 1.0]))
    s.update(np.array([0.5]))
    assert s.class_weights is None
    s.update(np.array([1.0]))
    assert s.class_weights is None
    many = LabelStats().update(np.arange(1024, dtype=np.float64))
    assert many.class_weights is not None and len(many.class_weights) == 1024
    many.update(np.array([5000.0]))
    assert many.class_weights is None
    a = LabelStats().update(np.arange(600.0))
    b = LabelStats().update(np.arange(600.0, 1200.0))
    assert a.merge(b).class_weights is None


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(0, 5), min_size=1, max_size=60),
       st.integers(1, 17), st.booleans())
def test_label_stats_blocks_and_merge_equal_one_pass(values, block, weighted):
    y = np.array(values, np.float64)
    y[::7] = np.nan
    w = np.linspace(0.5, 2.0, len(y)) if weighted else None
    whole = LabelStats().update(y, w)
    blocked = stats_in_blocks(y, w, block)
    merged = LabelStats()
    for s in range(0, len(y), block):
        merged.merge(LabelStats().update(y[s:s + block], None if w is None else
                                         w[s:s + block]))
    for other in (blocked, merged):
        assert (other.n_rows, other.n_missing) == (whole.n_rows, whole.n_missing)
        assert other.sum_weight == pytest.approx(whole.sum_weight, rel=1e-12)
        assert other.weighted_sum == pytest.approx(whole.weighted_sum, rel=1e-12, abs=1e-12)
        assert other.min == whole.min or (math.isnan(other.min) and math.isnan(whole.min))
        assert (other.class_weights or {}).keys() == (whole.class_weights or {}).keys()
        for k, v in (whole.class_weights or {}).items():
            assert other.class_weights[k] == pytest.approx(v, rel=1e-12)
        for q in (0.0, 0.3, 0.5, 1.0):
            a, b = other.quantile(q), whole.quantile(q)
            assert a == b or (math.isnan(a) and math.isnan(b))


def test_a_registered_objective_trains_saves_loads_and_predicts(tmp_path):
    """An objective registered from outside the package (here a renamed squared error)
    trains as the built-in one does, and its model files load while it is registered."""
    import oocboost
    from oocboost.errors import ModelError
    from oocboost.model.model import load_model
    from oocboost.model.objectives import register_objective, unregister_objective
    from oocboost.model.objectives.regression import SquaredError

    class Renamed(SquaredError):
        name = "reg:renamed"

    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 3))
    y = X[:, 0] + 0.1 * rng.normal(size=400)
    cache = oocboost.build_cache(X, tmp_path / "c", label=y, quiet=True)
    params = {"max_depth": 3, "verbosity": 0}
    with pytest.raises(ParameterError, match="unknown objective 'reg:renamed'"):
        oocboost.train({**params, "objective": "reg:renamed"}, cache, 3)
    register_objective("reg:renamed", lambda p: Renamed({}))
    try:
        with pytest.raises(ParameterError, match="already registered"):
            register_objective("reg:squarederror", lambda p: Renamed({}))
        ours = oocboost.train({**params, "objective": "reg:renamed"}, cache, 3)
        built_in = oocboost.train({**params, "objective": "reg:squarederror"}, cache, 3)
        np.testing.assert_array_equal(ours.predict(X), built_in.predict(X))
        ours.save_model(tmp_path / "m.json")
        loaded = load_model(tmp_path / "m.json")
        assert loaded.objective == "reg:renamed"
        np.testing.assert_array_equal(loaded.predict(X), built_in.predict(X))
    finally:
        unregister_objective("reg:renamed")
    with pytest.raises(ModelError, match="reg:renamed"):
        load_model(tmp_path / "m.json")
