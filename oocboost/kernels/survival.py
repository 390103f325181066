"""Numba kernels of ``survival:aft``: the accelerated failure time model
``log T = m + sigma Z`` with ``Z`` normal, logistic or extreme (Gumbel, minimum), for
labels that are intervals ``[lower, upper]`` of the survival time T (Barnwal, Cho &
Hocking 2022, the model of XGBoost's ``survival:aft``):

- uncensored (``lower == upper``): loss ``-log(f(z) / (sigma y))``, ``z = (log y - m) /
  sigma``, ``f`` the density of Z;
- censored: ``-log(F(z_u) - F(z_l))`` with ``F(z_u) = 1`` when ``upper`` is infinite
  (right-censored) and ``F(z_l) = 0`` when ``lower`` is 0 (left-censored).

Gradients and hessians in the margin follow from ``f``, ``f'``, ``f''`` and ``F``; where
their quotient degenerates (a vanishing denominator) the limit as the margin goes to
infinity is used. Gradients are clipped to [-15, 15] and hessians to [1e-16, 15], and
probabilities below 1e-12 to 1e-12 in the loss, as XGBoost's.
"""
import math

from numba import njit, prange

NORMAL, LOGISTIC, EXTREME = 0, 1, 2
MIN_GRAD, MAX_GRAD = -15.0, 15.0
MIN_HESS, MAX_HESS = 1e-16, 15.0
EPS = 1e-12
UNCENSORED, RIGHT, LEFT, INTERVAL = 0, 1, 2, 3


@njit(inline="always")
def _pdf(dist, z):
    if dist == NORMAL:
        return math.exp(-z * z / 2.0) / math.sqrt(2.0 * math.pi)
    w = math.exp(z)
    if dist == LOGISTIC:
        if math.isinf(w) or math.isinf(w * w):
            return 0.0
        return w / ((1.0 + w) * (1.0 + w))
    return 0.0 if math.isinf(w) else w * math.exp(-w)


@njit(inline="always")
def _cdf(dist, z):
    if dist == NORMAL:
        return 0.5 * (1.0 + math.erf(z / math.sqrt(2.0)))
    w = math.exp(z)
    if dist == LOGISTIC:
        return 1.0 if math.isinf(w) else w / (1.0 + w)
    return 1.0 - math.exp(-w)


@njit(inline="always")
def _grad_pdf(dist, z):
    if dist == NORMAL:
        return -z * _pdf(dist, z)
    w = math.exp(z)
    if math.isinf(w):
        return 0.0
    if dist == LOGISTIC:
        return _pdf(dist, z) * (1.0 - w) / (1.0 + w)
    return (1.0 - w) * _pdf(dist, z)


@njit(inline="always")
def _hess_pdf(dist, z):
    if dist == NORMAL:
        return (z * z - 1.0) * _pdf(dist, z)
    w = math.exp(z)
    if math.isinf(w) or math.isinf(w * w):
        return 0.0
    if dist == LOGISTIC:
        return _pdf(dist, z) * (w * w - 4.0 * w + 1.0) / ((1.0 + w) * (1.0 + w))
    return (w * w - 3.0 * w + 1.0) * _pdf(dist, z)


@njit(inline="always")
def _limit_grad(dist, kind, sign, sigma):
    """The gradient's limit as the margin goes to -inf (``sign``: z > 0) or +inf."""
    top = MAX_GRAD if dist == NORMAL else 1.0 / sigma
    bottom = -1.0 / sigma if dist == LOGISTIC else MIN_GRAD
    if kind == RIGHT:
        return bottom if sign else 0.0
    if kind == LEFT:
        return 0.0 if sign else top
    return bottom if sign else top


@njit(inline="always")
def _limit_hess(dist, kind, sign, sigma):
    if dist == NORMAL:
        flat = 1.0 / (sigma * sigma)
        if kind == RIGHT:
            return flat if sign else MIN_HESS
        if kind == LEFT:
            return MIN_HESS if sign else flat
        return flat
    if dist == LOGISTIC or kind == LEFT:
        return MIN_HESS
    return MAX_HESS if sign else MIN_HESS


@njit(inline="always")
def _clip(x, lo, hi):
    return lo if x < lo else (hi if x > hi else x)


@njit(cache=True)
def aft_row(dist, sigma, lower, upper, m):
    """``(loss, gradient, hessian)`` of one row in its margin ``m``."""
    if lower == upper:
        z = (math.log(lower) - m) / sigma
        pdf, gpdf, hpdf = _pdf(dist, z), _grad_pdf(dist, z), _hess_pdf(dist, z)
        loss = -math.log(max(pdf / (sigma * lower), EPS))
        kind, sign = UNCENSORED, z > 0
        g_num, g_den = gpdf, sigma * pdf
        h_num, h_den = -(pdf * hpdf - gpdf * gpdf), sigma * sigma * pdf * pdf
    else:
        kind = INTERVAL
        z_u = z_l = 0.0
        pdf_u = cdf_u = gpdf_u = pdf_l = cdf_l = gpdf_l = 0.0
        cdf_u = 1.0
        if math.isinf(upper):
            kind = RIGHT
        else:
            z_u = (math.log(upper) - m) / sigma
            pdf_u, cdf_u, gpdf_u = _pdf(dist, z_u), _cdf(dist, z_u), _grad_pdf(dist, z_u)
        if lower <= 0.0:
            kind = LEFT
        else:
            z_l = (math.log(lower) - m) / sigma
            pdf_l, cdf_l, gpdf_l = _pdf(dist, z_l), _cdf(dist, z_l), _grad_pdf(dist, z_l)
        cdf_diff, pdf_diff = cdf_u - cdf_l, pdf_u - pdf_l
        loss = -math.log(max(cdf_diff, EPS))
        sign = z_u > 0 or z_l > 0
        g_num, g_den = pdf_diff, sigma * cdf_diff
        h_num = -(cdf_diff * (gpdf_u - gpdf_l) - pdf_diff * pdf_diff)
        h_den = g_den * g_den
    grad = g_num / g_den if g_den != 0.0 else math.nan
    if g_den < EPS and (math.isnan(grad) or math.isinf(grad)):
        grad = _limit_grad(dist, kind, sign, sigma)
    hess = h_num / h_den if h_den != 0.0 else math.nan
    if h_den < EPS and (math.isnan(hess) or math.isinf(hess)):
        hess = _limit_hess(dist, kind, sign, sigma)
    return loss, _clip(grad, MIN_GRAD, MAX_GRAD), _clip(hess, MIN_HESS, MAX_HESS)


@njit(cache=True, parallel=True)
def aft_gradients(dist, sigma, lower, upper, margin, weight, has_weight, out_grad,
                  out_hess):
    """Per-row ``g``, ``h`` (times the weights) into ``out_grad``, ``out_hess``
    ``(n, 1)``; ``lower``, ``upper`` ``(n,)``, ``margin`` ``(n, 1)``."""
    for i in prange(lower.shape[0]):
        _, g, h = aft_row(dist, sigma, lower[i], upper[i], margin[i, 0])
        w = weight[i] if has_weight else 1.0
        out_grad[i, 0] = g * w  # OUT
        out_hess[i, 0] = h * w  # OUT


@njit(cache=True, parallel=True)
def aft_losses(dist, sigma, lower, upper, margin, out):
    """Per-row negative log-likelihood into ``out`` (n,)."""
    for i in prange(lower.shape[0]):
        loss, _, _ = aft_row(dist, sigma, lower[i], upper[i], margin[i])
        out[i] = loss  # OUT
