"""Several targets at once (a label of ``k`` columns): multi-output regression and
multi-label classification, XGBoost's ``multi_strategy="one_output_per_tree"``.

:class:`MultiTarget` applies a one-column objective to each label column: output ``j``
(one tree per round) is fitted to column ``j`` with that objective's gradients, intercept
and link. The metrics average over every (row, target) pair, as XGBoost's do.
"""
import numpy as np

from ...errors import InputError, ParameterError
from .base import Objective

#: Objectives whose loss is a sum over targets of a one-column loss (XGBoost accepts a
#: 2-D label for the same ones).
MULTI_TARGET_OBJECTIVES = ("reg:squarederror", "reg:pseudohubererror", "reg:logistic",
                           "binary:logistic", "binary:logitraw", "binary:hinge",
                           "count:poisson", "reg:gamma", "reg:tweedie")


def check_n_targets(name, value):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ParameterError(f"{name}: n_targets must be an integer >= 1 (the label "
                             f"columns), got {value!r}")
    if value > 1 and name not in MULTI_TARGET_OBJECTIVES:
        raise ParameterError(
            f"{name} takes one label column; several targets (a label of {value} columns) "
            f"work with {', '.join(MULTI_TARGET_OBJECTIVES)}")
    return int(value)


class MultiTarget(Objective):
    """``base`` applied to each of ``n_targets`` label columns (module docstring).

    Parameters
    ----------
    base : Objective
        A one-output objective of :data:`MULTI_TARGET_OBJECTIVES`.
    n_targets : int
        Label columns, and outputs.
    """

    def __init__(self, base, n_targets):
        super().__init__({**base.params, "n_targets": int(n_targets)})
        self.base = base
        self.name = base.name
        self.n_outputs = int(n_targets)
        self.is_classification = base.is_classification
        self.default_metric = base.default_metric

    @property
    def default_metric_params(self):
        return self.base.default_metric_params

    def _columns(self, label, what):
        label = np.asarray(label)
        if label.ndim != 2 or label.shape[1] != self.n_outputs:
            raise InputError(f"{what}: {self.name} with {self.n_outputs} targets expects "
                             f"labels of shape (n, {self.n_outputs}), got {label.shape}")
        return label

    def check_labels(self, label, where, row_start=0):
        label = self._columns(label, where)
        for j in range(self.n_outputs):
            self.base.check_labels(label[:, j], f"{where} (label column {j})", row_start)

    def gradients(self, label, margin, weight, out_grad, out_hess):
        label = self._columns(label, self.name)
        margin = np.asarray(margin, dtype=np.float64)
        for j in range(self.n_outputs):
            self.base.gradients(label[:, j], margin[:, j:j + 1], weight,
                                out_grad[:, j:j + 1], out_hess[:, j:j + 1])

    def base_margin(self, label_stats):
        if not isinstance(label_stats, (list, tuple)) or len(label_stats) != self.n_outputs:
            raise InputError(f"{self.name}: expected label statistics for each of the "
                             f"{self.n_outputs} label columns")
        return np.array([self.base.base_margin(s)[0] for s in label_stats])

    def base_score_to_margin(self, base_score):
        return np.full(self.n_outputs, self.base.base_score_to_margin(base_score)[0])

    def _transform(self, margin):
        return np.column_stack([self.base.transform(margin[:, j:j + 1])
                                for j in range(self.n_outputs)])

    def eval_transform(self, margin):
        margin = self._margin2d(margin)
        return np.column_stack([self.base.eval_transform(margin[:, j:j + 1])
                                for j in range(self.n_outputs)])

    def transform_proba(self, margin):
        """Each target's probability of 1, ``(n, n_targets)`` (multi-label)."""
        margin = self._margin2d(margin)
        if not self.is_classification:
            return super().transform_proba(margin)
        return np.column_stack([self.base.transform_proba(margin[:, j:j + 1])[:, 1]
                                for j in range(self.n_outputs)])
