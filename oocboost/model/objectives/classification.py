"""Classification objectives: logistic (binary), softmax (multi-class) and the class
proportions forests output."""
import math

import numpy as np

from ...errors import ParameterError
from ...kernels import objective_kernels as _k
from .base import LOGISTIC_BASE_CLIP, Objective


class BinaryLogistic(Objective):
    """``binary:logistic``: ``p = sigmoid(m)``, ``l = -y log p - (1 - y) log(1 - p)``,
    ``g = w' (p - y)``, ``h = w' max(p (1 - p), 1e-16)``, where ``w' = w scale_pos_weight``
    for rows with ``y == 1`` exactly. Labels in [0, 1] (probabilities allowed).
    Intercept: ``logit(clip(sum w y / sum w, 1e-6, 1 - 1e-6))`` (plain weights; as
    XGBoost 3, whose base_score is the weighted label mean)."""

    name = "binary:logistic"
    is_classification = True
    default_metric = "logloss"

    def _check_domain(self, label, where, row_start):
        self._first_bad(label, (label < 0) | (label > 1), where, row_start,
                        "labels in [0, 1] (probabilities are allowed)")

    def _gradients(self, label, margin, weight, has_weight, out_grad, out_hess):
        _k.logistic_gradients(label, margin, weight, has_weight,
                              self.params["scale_pos_weight"], out_grad, out_hess)

    def _base_margin(self, stats):
        mean = min(max(stats.weighted_mean, LOGISTIC_BASE_CLIP), 1.0 - LOGISTIC_BASE_CLIP)
        return math.log(mean / (1.0 - mean))

    def _link(self, value):
        if not 0.0 < value < 1.0:
            raise ParameterError(f"{self.name}: base_score is a probability and must be in "
                                 f"(0, 1), got {value!r}")
        return math.log(value / (1.0 - value))

    def _transform(self, margin):
        out = np.empty(margin.shape[0], dtype=np.float64)
        _k.sigmoid(margin, out)
        return out

    def transform_proba(self, margin):
        # both columns in one kernel sweep: column_stack of 1 - p and p took longer than
        # the tree walk's share of a one-row call
        margin = self._margin2d(margin)
        out = np.empty((margin.shape[0], 2), dtype=np.float64)
        _k.sigmoid_proba(margin, out)
        return out


class Softmax(Objective):
    """``multi:softprob`` / ``multi:softmax`` with ``K = num_class`` outputs:
    ``p_k = softmax(m)_k``, ``l = -log p_y``, ``g_k = w (p_k - 1{y == k})``,
    ``h_k = max(2 w p_k (1 - p_k), 1e-16)`` (XGBoost's factor 2 and clipping). Labels are
    integers in ``[0, K)``. Intercept: zeros (a constant margin does not change softmax;
    ``base_score`` is added to every class as a margin, as XGBoost)."""

    is_classification = True
    default_metric = "mlogloss"

    def __init__(self, params, name):
        super().__init__(params)
        self.name = name
        self.n_outputs = params["num_class"]

    def _check_domain(self, label, where, row_start):
        K = self.n_outputs
        bad = (label != np.floor(label)) | (label < 0) | (label >= K)
        self._first_bad(label, bad, where, row_start,
                        f"integer class labels in [0, {K}) (num_class={K})")

    def _gradients(self, label, margin, weight, has_weight, out_grad, out_hess):
        _k.softmax_gradients(label, margin, weight, has_weight, out_grad, out_hess)

    def base_margin(self, label_stats):
        return np.zeros(self.n_outputs)

    def _proba(self, margin):
        out = np.empty(margin.shape, dtype=np.float64)
        _k.softmax(margin, out)
        return out

    def _transform(self, margin):
        if self.name == "multi:softprob":
            return self._proba(margin)
        out = np.empty(margin.shape[0], dtype=np.float64)
        _k.argmax_rows(margin, out)
        return out

    def eval_transform(self, margin):
        return self._proba(self._margin2d(margin))

    def transform_proba(self, margin):
        return self._proba(self._margin2d(margin))


class ClassProbability(Softmax):
    """``multi:proba``: margins already are class probabilities (random forests average
    their leaves' class proportions). The transform is the identity; ``multi:proba`` is
    a model output type, not a training loss, so it has no gradients."""

    def __init__(self, params):
        super().__init__(params, "multi:proba")

    def _gradients(self, label, margin, weight, has_weight, out_grad, out_hess):
        raise ParameterError("multi:proba is the output of forests, not a boosting "
                             "objective; use multi:softprob to boost")

    def _proba(self, margin):
        return np.array(margin, dtype=np.float64)

    def _transform(self, margin):
        return self._proba(margin)


class RegLogistic(BinaryLogistic):
    """``reg:logistic``: the logistic loss and intercept of ``binary:logistic`` as a
    regression onto [0, 1] (probabilities), scored by ``rmse``, as XGBoost's."""

    name = "reg:logistic"
    is_classification = False
    default_metric = "rmse"

    def transform_proba(self, margin):
        return Objective.transform_proba(self, margin)


class LogitRaw(BinaryLogistic):
    """``binary:logitraw``: the logistic loss, predicting the raw margin (log-odds).
    Metrics see probabilities (``eval_transform`` is the sigmoid), so its default
    ``logloss`` is the one of ``binary:logistic``; XGBoost 3.2 scores the raw margins.
    Intercept and ``base_score``: taken as a margin as they are (XGBoost's)."""

    name = "binary:logitraw"

    def _base_margin(self, stats):
        # XGBoost 3.2 starts from the weighted label mean taken as a log-odds, not from
        # its logit: the trees correct it, and the models agree with XGBoost's
        return stats.weighted_mean

    def _link(self, value):
        return value

    def _transform(self, margin):
        return margin[:, 0].copy()

    def eval_transform(self, margin):
        return BinaryLogistic._transform(self, self._margin2d(margin))

    def transform_proba(self, margin):
        p = self.eval_transform(margin)
        return np.column_stack([1.0 - p, p])


class Hinge(Objective):
    """``binary:hinge``: ``l = w max(0, 1 - m s)`` with ``s = 2 y - 1`` for labels 0 and 1;
    predicts the class, ``1`` when ``m > 0`` (XGBoost's ``HingeObj``). Intercept 1 when
    the weighted label mean is over 0.5, else 0, as XGBoost's; ``error`` by default."""

    name = "binary:hinge"
    is_classification = True
    default_metric = "error"

    def _check_domain(self, label, where, row_start):
        self._first_bad(label, (label != 0) & (label != 1), where, row_start,
                        "class labels 0 or 1")

    def _gradients(self, label, margin, weight, has_weight, out_grad, out_hess):
        _k.hinge_gradients(label, margin, weight, has_weight, out_grad, out_hess)

    def _base_margin(self, stats):
        # XGBoost 3.2: one Newton step from 0 (the weighted mean of 2y - 1), then its
        # predicted class taken as the margin: 1 when most weight is on class 1, else 0
        return 1.0 if stats.weighted_mean > 0.5 else 0.0

    def _transform(self, margin):
        return (margin[:, 0] > 0).astype(np.float64)

    def transform_proba(self, margin):
        # both columns in one kernel sweep: column_stack of 1 - p and p took longer than
        # the tree walk's share of a one-row call
        margin = self._margin2d(margin)
        out = np.empty((margin.shape[0], 2), dtype=np.float64)
        _k.sigmoid_proba(margin, out)
        return out
