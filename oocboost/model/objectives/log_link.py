"""Objectives with a log link for positive targets: Poisson counts, gamma and Tweedie
regression."""
import math

import numpy as np

from ...errors import InputError, ParameterError
from ...kernels import objective_kernels as _k
from .base import Objective


class Poisson(Objective):
    """``count:poisson`` with log link: ``l = exp(m) - y m``, ``g = w (exp(m) - y)``,
    ``h = w exp(m + max_delta_step)`` (default 0.7, XGBoost's). Labels >= 0.
    Intercept: ``log(sum w y / sum w)``, which needs a positive mean."""

    name = "count:poisson"
    default_metric = "poisson-nloglik"

    def _check_domain(self, label, where, row_start):
        self._first_bad(label, label < 0, where, row_start, "non-negative count labels")

    def _gradients(self, label, margin, weight, has_weight, out_grad, out_hess):
        _k.poisson_gradients(label, margin, weight, has_weight,
                             self.params["max_delta_step"], out_grad, out_hess)

    def _base_margin(self, stats):
        mean = stats.weighted_mean
        if not mean > 0:
            raise InputError(
                f"{self.name}: cannot estimate base_score: the weighted label mean is "
                f"{mean!r}; expected a positive mean (some positive counts)"
            )
        return math.log(mean)

    def _link(self, value):
        if not value > 0:
            raise ParameterError(f"{self.name}: base_score is a mean count and must be > 0, "
                                 f"got {value!r}")
        return math.log(value)

    def _transform(self, margin):
        return np.exp(margin[:, 0])


def _log_mean(objective, stats):
    mean = stats.weighted_mean
    if not mean > 0:
        raise InputError(f"{objective.name}: cannot estimate base_score: the weighted label "
                         f"mean is {mean!r}; expected a positive mean")
    return math.log(mean)


class Gamma(Objective):
    """``reg:gamma`` with log link: ``l = y exp(-m) + m``, ``g = w (1 - y exp(-m))``,
    ``h = w y exp(-m)``. Labels > 0. Intercept ``log(sum w y / sum w)``; predicts
    ``exp(m)``; ``gamma-deviance`` by default (XGBoost 3's)."""

    name = "reg:gamma"
    default_metric = "gamma-deviance"

    def _check_domain(self, label, where, row_start):
        self._first_bad(label, ~(label > 0), where, row_start, "positive labels")

    def _gradients(self, label, margin, weight, has_weight, out_grad, out_hess):
        _k.gamma_gradients(label, margin, weight, has_weight, out_grad, out_hess)

    def _base_margin(self, stats):
        return _log_mean(self, stats)

    def _link(self, value):
        if not value > 0:
            raise ParameterError(f"{self.name}: base_score is a mean and must be > 0, got "
                                 f"{value!r}")
        return math.log(value)

    def _transform(self, margin):
        return np.exp(margin[:, 0])


class Tweedie(Gamma):
    """``reg:tweedie`` with log link and ``tweedie_variance_power`` ``rho`` in (1, 2)
    (default 1.5): ``g = w (-y e^((1-rho) m) + e^((2-rho) m))``, ``h = w (-y (1-rho)
    e^((1-rho) m) + (2-rho) e^((2-rho) m))``. Labels >= 0 (exact zeros are the point of
    it). Intercept ``log`` of the weighted mean; ``tweedie-nloglik@rho`` by default."""

    name = "reg:tweedie"

    @property
    def default_metric(self):
        return f"tweedie-nloglik@{self.params['tweedie_variance_power']:g}"

    def _check_domain(self, label, where, row_start):
        self._first_bad(label, ~(label >= 0), where, row_start, "non-negative labels")

    def _gradients(self, label, margin, weight, has_weight, out_grad, out_hess):
        _k.tweedie_gradients(label, margin, weight, has_weight,
                             self.params["tweedie_variance_power"], out_grad, out_hess)
