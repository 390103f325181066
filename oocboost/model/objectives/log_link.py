"""Objectives with a log link for positive targets: Poisson counts, gamma and Tweedie
regression."""
import math

import numpy as np

from ...errors import InputError, ParameterError
from ...kernels import objective_kernels as _k
from .base import Objective


class LogLink(Objective):
    """Objectives whose prediction is ``exp(m)``: ``base_score`` (a positive mean, rate
    or hazard ratio) enters through the log."""

    def _link(self, value):
        if not value > 0:
            raise ParameterError(f"{self.name}: base_score enters through a log and must be "
                                 f"> 0, got {value!r}")
        return math.log(value)

    def _transform(self, margin):
        return np.exp(margin[:, 0])


class Poisson(LogLink):
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


def _log_mean(objective, stats):
    mean = stats.weighted_mean
    if not mean > 0:
        raise InputError(f"{objective.name}: cannot estimate base_score: the weighted label "
                         f"mean is {mean!r}; expected a positive mean")
    return math.log(mean)


class Gamma(LogLink):
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


class CoxPH(LogLink):
    """``survival:cox``: Cox proportional hazards (negative partial log-likelihood,
    Breslow's ties), labels the survival times with right-censored ones negative, as
    XGBoost's. A row's gradient depends on every row with a later time, so the gradients
    are computed over all rows at once (:meth:`all_gradients`; the booster keeps the
    per-row state in RAM for it). Predicts the hazard ratio ``exp(m)``; intercept 0
    (XGBoost's ``base_score`` 1); ``cox-nloglik`` by default."""

    name = "survival:cox"
    default_metric = "cox-nloglik"
    needs_all_rows = True

    def _check_domain(self, label, where, row_start):
        self._first_bad(label, label == 0, where, row_start,
                        "non-zero survival times (negative: right-censored)")

    def _gradients(self, label, margin, weight, has_weight, out_grad, out_hess):
        raise InputError("survival:cox gradients need every row at once: all_gradients")

    @staticmethod
    def label_order(label):
        """The rows sorted by ``|y|`` (stable), which :meth:`all_gradients` scans."""
        return np.argsort(np.abs(np.asarray(label, np.float64)), kind="stable")

    def all_gradients(self, order, label, margin, weight, out_grad, out_hess):
        """Gradients of every row: ``order`` from :meth:`label_order`; arrays (n,) and
        (n, 1) as :meth:`gradients` takes them."""
        has_weight = weight is not None
        _k.cox_gradients(np.ascontiguousarray(order, np.int64), label,
                         np.asarray(margin, np.float64).reshape(len(label), 1),
                         np.empty(0, np.float32) if weight is None else weight, has_weight,
                         out_grad, out_hess)

    def _base_margin(self, stats):
        return 0.0
