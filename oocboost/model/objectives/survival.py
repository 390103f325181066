"""``survival:aft``: the accelerated failure time model over interval labels (two label
columns: the lower and upper bound of each survival time; the kernels and formulas are
in :mod:`oocboost.kernels.survival`)."""
import math

import numpy as np

from ...errors import InputError, ParameterError
from ...kernels import survival as _k
from .base import _real_param
from .log_link import LogLink

AFT_DISTRIBUTIONS = {"normal": _k.NORMAL, "logistic": _k.LOGISTIC, "extreme": _k.EXTREME}
#: XGBoost's ``base_score`` of ``survival:aft`` (no estimate from the labels).
AFT_BASE_SCORE = 0.5


def aft_params(params):
    name = "survival:aft"
    dist = params.get("aft_loss_distribution", "normal")
    if dist not in AFT_DISTRIBUTIONS:
        raise ParameterError(f"{name}: aft_loss_distribution must be one of "
                             f"{', '.join(AFT_DISTRIBUTIONS)}, got {dist!r}")
    return {"aft_loss_distribution": dist,
            "aft_loss_distribution_scale": _real_param(params, "aft_loss_distribution_scale",
                                                       1.0, name, low=0.0)}


def interval_bounds(label, what):
    """``(lower, upper)`` float64 columns of an interval label ``(n, 2)``."""
    label = np.asarray(label)
    if label.ndim != 2 or label.shape[1] != 2:
        raise InputError(f"{what}: survival:aft reads two label columns (the lower and "
                         f"upper bound of each survival time), got labels of shape "
                         f"{label.shape}")
    return label[:, 0].astype(np.float64), label[:, 1].astype(np.float64)


class AFT(LogLink):
    """``survival:aft`` with ``aft_loss_distribution`` (normal, logistic or extreme) and
    ``aft_loss_distribution_scale`` (sigma, default 1). Labels: two columns, lower and
    upper bound of the survival time: equal when observed, upper ``inf`` when
    right-censored, lower 0 when left-censored. Predicts ``exp(m)`` (a time); the metrics
    see the margin, as XGBoost's; intercept ``log 0.5`` unless ``base_score`` is given
    (XGBoost's default base_score, not estimated)."""

    name = "survival:aft"
    default_metric = "aft-nloglik"
    label_columns = 2

    @property
    def default_metric_params(self):
        return dict(self.params)

    def check_labels(self, label, where, row_start=0):
        lower, upper = interval_bounds(label, where)
        bad = ~np.isfinite(lower) | (lower < 0) | np.isnan(upper) | (upper < lower) | \
            (upper <= 0)
        if np.any(bad):
            i = int(np.argmax(bad))
            raise InputError(
                f"{where}: survival:aft expects intervals 0 <= lower <= upper (upper > 0, "
                f"inf when right-censored); row {int(row_start) + i} has [{lower[i]!r}, "
                f"{upper[i]!r}]")

    def gradients(self, label, margin, weight, out_grad, out_hess):
        lower, upper = interval_bounds(label, self.name)
        margin = np.asarray(margin, dtype=np.float64).reshape(len(lower), 1)
        has_weight = weight is not None
        weight = np.empty(0) if weight is None else np.asarray(weight, dtype=np.float64)
        _k.aft_gradients(AFT_DISTRIBUTIONS[self.params["aft_loss_distribution"]],
                         self.params["aft_loss_distribution_scale"], lower, upper, margin,
                         weight, has_weight, out_grad, out_hess)

    def base_margin(self, label_stats):
        return np.array([math.log(AFT_BASE_SCORE)])

    def eval_transform(self, margin):
        return self._margin2d(margin)[:, 0].copy()
