"""survival:aft: the kernel's gradients and hessians are the derivatives of a plain
Python twin of the likelihood (finite differences), the models and both metrics equal
XGBoost's for the three distributions with every kind of censoring, and bad intervals or
a wrong number of label columns are refused."""
import math

import numpy as np
import pytest

import oocboost
from oocboost.kernels.survival import aft_row

_DISTS = {"normal": 0, "logistic": 1, "extreme": 2}


def _cdf(dist, z):
    if dist == "normal":
        return 0.5 * (1 + math.erf(z / math.sqrt(2)))
    if dist == "logistic":
        return 1 / (1 + math.exp(-z))
    return 1 - math.exp(-math.exp(z))


def _pdf(dist, z):
    if dist == "normal":
        return math.exp(-z * z / 2) / math.sqrt(2 * math.pi)
    if dist == "logistic":
        return math.exp(-z) / (1 + math.exp(-z)) ** 2
    return math.exp(z - math.exp(z))


def twin_loss(dist, sigma, lower, upper, m):
    """-log likelihood of one interval, written from the model's definition."""
    if lower == upper:
        z = (math.log(lower) - m) / sigma
        return -math.log(_pdf(dist, z) / (sigma * lower))
    hi = 1.0 if math.isinf(upper) else _cdf(dist, (math.log(upper) - m) / sigma)
    lo = 0.0 if lower == 0 else _cdf(dist, (math.log(lower) - m) / sigma)
    return -math.log(hi - lo) if hi - lo > 1e-9 else math.inf  # beyond the kernel's floor


def _intervals(n, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 8, size=(n, 4)).astype(float)
    t = np.exp(0.3 * X[:, 0] - 0.2 * X[:, 1] + rng.normal(scale=0.5, size=n))
    lower, upper = t.copy(), t.copy()
    kind = rng.random(n)
    upper[kind < 0.3] = np.inf                                 # right-censored
    lower[(kind >= 0.3) & (kind < 0.4)] = 0.0                  # left-censored
    inside = (kind >= 0.4) & (kind < 0.5)                      # interval-censored
    lower[inside], upper[inside] = t[inside] * 0.7, t[inside] * 1.4
    return X, np.c_[lower, upper], rng.uniform(0.5, 2.0, n)


@pytest.mark.parametrize("dist", list(_DISTS))
@pytest.mark.parametrize("sigma", [0.7, 1.3])
def test_gradients_are_the_derivatives_of_the_likelihood(dist, sigma):
    _, bounds, _ = _intervals(60, seed=1)
    compared = 0
    for (lower, upper), m in zip(bounds, np.linspace(-1.0, 2.5, 60)):
        loss, g, h = aft_row(_DISTS[dist], sigma, lower, upper, m)
        eps = 1e-4
        f = [twin_loss(dist, sigma, lower, upper, m + d * eps) for d in (-1, 0, 1)]
        if not max(f) < -math.log(1e-12):
            continue  # the kernel floors probabilities at 1e-12 (XGBoost's), the twin not
        assert loss == pytest.approx(f[1], rel=1e-9)
        compared += 1
        if abs(g) < 15:  # not clipped
            assert g == pytest.approx((f[2] - f[0]) / (2 * eps), rel=1e-5, abs=1e-7)
        if 1e-12 < h < 15:
            assert h == pytest.approx((f[2] - 2 * f[1] + f[0]) / eps ** 2, rel=1e-3,
                                      abs=1e-6)
    assert compared > 40


def test_limits_and_clipping_far_from_the_interval():
    # a margin far above a right-censored time: no pull (0 gradient), the floor hessian
    _, g, h = aft_row(0, 1.0, 1.0, np.inf, 60.0)
    assert g == 0.0 and h == 1e-16
    # far below an observed time: the gradient is clipped at -15
    _, g, _ = aft_row(0, 1.0, 1e6, 1e6, -60.0)
    assert g == -15.0


@pytest.mark.parametrize("dist", list(_DISTS))
@pytest.mark.parametrize("block_rows", [256, 100_000])
def test_models_and_metrics_equal_xgboosts(tmp_path, dist, block_rows):
    xgb = pytest.importorskip("xgboost")
    X, bounds, w = _intervals(3000)
    cache = oocboost.build_cache(X, tmp_path / "c", label=bounds, weight=w, quiet=True,
                                 block_rows=block_rows)
    params = {"objective": "survival:aft", "aft_loss_distribution": dist,
              "aft_loss_distribution_scale": 1.2, "max_depth": 3, "eta": 0.3,
              "eval_metric": ["aft-nloglik", "interval-regression-accuracy"]}
    log = {}
    ours = oocboost.train(params, cache, 5, evals=[(cache, "train")], evals_result=log,
                          verbose_eval=False)
    d = xgb.DMatrix(X, weight=w)
    d.set_float_info("label_lower_bound", bounds[:, 0])
    d.set_float_info("label_upper_bound", bounds[:, 1])
    theirs_log = {}
    theirs = xgb.train({**params, "tree_method": "hist", "nthread": 1}, d, 5,
                       evals=[(d, "train")], evals_result=theirs_log, verbose_eval=False)
    np.testing.assert_allclose(ours.predict(X), theirs.predict(d), rtol=1e-6)
    for name in params["eval_metric"]:
        assert log["train"][name][-1] == pytest.approx(theirs_log["train"][name][-1],
                                                       rel=1e-7)


def test_refusals(tmp_path):
    X, bounds, _ = _intervals(200)
    one = oocboost.build_cache(X, tmp_path / "one", label=bounds[:, 0], quiet=True)
    with pytest.raises(oocboost.ParameterError, match="reads 2 label columns"):
        oocboost.train({"objective": "survival:aft"}, one, 1, verbose_eval=False)
    flipped = bounds.copy()
    flipped[7] = [3.0, 2.0]
    bad = oocboost.build_cache(X, tmp_path / "bad", label=flipped, quiet=True)
    with pytest.raises(oocboost.InputError, match="row 7 has"):
        oocboost.train({"objective": "survival:aft"}, bad, 1, verbose_eval=False)
    with pytest.raises(oocboost.ParameterError, match="aft_loss_distribution"):
        oocboost.train({"objective": "survival:aft", "aft_loss_distribution": "weibull"},
                       oocboost.build_cache(X, tmp_path / "ok", label=bounds, quiet=True), 1,
                       verbose_eval=False)


def _normal_aft_gradients(lower, upper, m, sigma):
    """g, h of the normal AFT loss in numpy, for observed and right-censored rows,
    derived by hand: observed ``g = -z / sigma``, ``h = 1 / sigma^2``; right-censored
    ``g = -phi(z) / (sigma S)``, ``h = (phi(z)^2 - S z phi(z)) / (sigma S)^2`` with
    ``S = 1 - Phi(z)``, ``z = (log lower - m) / sigma``; clipped as XGBoost's."""
    from math import erf

    z = (np.log(lower) - m) / sigma
    phi = np.exp(-z * z / 2) / np.sqrt(2 * np.pi)
    surv = 1 - 0.5 * (1 + np.vectorize(erf)(z / np.sqrt(2)))
    observed = lower == upper
    g = np.where(observed, -z / sigma, -phi / (sigma * surv))
    h = np.where(observed, 1 / sigma ** 2,
                 (phi * phi - surv * z * phi) / (sigma * surv) ** 2)
    return np.clip(g, -15, 15), np.clip(h, 1e-16, 15)


def test_rounds_equal_a_brute_force_numpy_booster(tmp_path):
    from tests.learners.test_training import all_codes, assert_rounds_match

    rng = np.random.default_rng(4)
    n = 300
    X = rng.integers(0, 8, size=(n, 3)).astype(float)
    t = np.exp(0.3 * X[:, 0] - 0.2 * X[:, 1] + rng.normal(scale=0.5, size=n))
    t = t.astype(np.float32).astype(float)  # the cache keeps float32 labels
    upper = np.where(rng.random(n) < 0.3, np.inf, t)
    cache = oocboost.build_cache(X, tmp_path / "c", label=np.c_[t, upper], block_rows=64,
                                 quiet=True)
    params = {"objective": "survival:aft", "aft_loss_distribution_scale": 0.8,
              "eta": 0.5, "max_depth": 2, "verbosity": 0}
    model = oocboost.train(params, cache, 3, verbose_eval=False)
    codes = all_codes(cache)
    assert_rounds_match(model, codes, cache.max_bin - 1,
                        lambda margin: _normal_aft_gradients(t, upper, margin, 0.8),
                        np.full(n, math.log(0.5)), 3, 8)
