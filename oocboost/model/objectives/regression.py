"""Regression objectives with the identity link: squared, absolute, pseudo-Huber and
quantile error."""
import numpy as np

from ...kernels import objective_kernels as _k
from .base import Objective


class SquaredError(Objective):
    """``reg:squarederror``: ``l = (m - y)^2 / 2``, ``g = w (m - y)``, ``h = w``.
    Intercept: weighted mean ``sum w y / sum w``."""

    name = "reg:squarederror"
    default_metric = "rmse"

    def _gradients(self, label, margin, weight, has_weight, out_grad, out_hess):
        _k.squared_error_gradients(label, margin, weight, has_weight, out_grad, out_hess)

    def _base_margin(self, stats):
        return stats.weighted_mean


class AbsoluteError(Objective):
    """``reg:absoluteerror``: ``l = |m - y|``, ``g = w sign(m - y)`` (0 at a tie),
    ``h = w``. Intercept: weighted median. Each new tree's leaves are then reset to the
    weighted median of their rows' residuals, as XGBoost's (``leaf_refresh_quantile``)."""

    name = "reg:absoluteerror"
    default_metric = "mae"
    leaf_refresh_quantile = 0.5

    def _gradients(self, label, margin, weight, has_weight, out_grad, out_hess):
        _k.absolute_error_gradients(label, margin, weight, has_weight, out_grad, out_hess)

    def _base_margin(self, stats):
        return stats.quantile(0.5)


class PseudoHuberError(Objective):
    """``reg:pseudohubererror`` with ``d = huber_slope``, ``z = m - y``:
    ``l = d^2 (sqrt(1 + (z/d)^2) - 1)``, ``g = w z / sqrt(1 + z^2/d^2)``,
    ``h = w d^3 / (d^2 + z^2)^{3/2}``. Intercept: weighted median (XGBoost differs, see
    the module docstring)."""

    name = "reg:pseudohubererror"
    default_metric = "mphe"

    @property
    def default_metric_params(self):
        return {"huber_slope": self.params["huber_slope"]}

    def _gradients(self, label, margin, weight, has_weight, out_grad, out_hess):
        _k.pseudo_huber_gradients(label, margin, weight, has_weight,
                                  self.params["huber_slope"], out_grad, out_hess)

    def _base_margin(self, stats):
        return stats.quantile(0.5)


class QuantileError(Objective):
    """``reg:quantileerror`` at level ``a = quantile_alpha``: pinball loss
    ``l = a (y - m)`` if ``y >= m`` else ``(1 - a)(m - y)``; XGBoost's subgradient
    ``g = w (1 - a)`` if ``m >= y`` else ``-w a``, and ``h = w`` (the true second
    derivative is 0; XGBoost uses the weight so leaves are weighted means of ``-g``).
    Intercept: weighted ``a``-quantile. Each new tree's leaves are then reset to the
    ``a``-quantile of their rows' residuals, as XGBoost's (``leaf_refresh_quantile``).

    A list of levels (``quantile_alpha=[0.1, 0.5, 0.9]``) makes one output per level,
    one tree per level a round, as XGBoost's; predictions are then (n, levels)."""

    name = "reg:quantileerror"
    default_metric = "quantile"

    def __init__(self, params):
        super().__init__(params)
        self.alphas = np.atleast_1d(np.asarray(params["quantile_alpha"], dtype=np.float64))
        self.n_outputs = len(self.alphas)

    @property
    def leaf_refresh_quantile(self):
        return self.params["quantile_alpha"]

    @property
    def default_metric_params(self):
        return {"alpha": self.params["quantile_alpha"]}

    def _gradients(self, label, margin, weight, has_weight, out_grad, out_hess):
        _k.quantile_gradients(label, margin, weight, has_weight, self.alphas, out_grad,
                              out_hess)

    def base_margin(self, label_stats):
        first = super().base_margin(label_stats)  # checks the weight, level 0
        return np.array([first[0]] + [label_stats.quantile(a) for a in self.alphas[1:]])

    def _base_margin(self, stats):
        return stats.quantile(float(self.alphas[0]))

    def _transform(self, margin):
        return margin[:, 0].copy() if self.n_outputs == 1 else margin.copy()
