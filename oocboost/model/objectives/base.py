"""The base of every objective: parameter parsing and :class:`Objective`'s contract
(gradients into caller-owned buffers, intercepts from label statistics, transforms,
label checks)."""
import math
import numbers

import numpy as np

from ...cache.label_stats import as_label
from ...common import G_H_DTYPE
from ...errors import InputError, ParameterError
from ...kernels.codes import read_only

#: Clip of the weighted label mean before the logit in the logistic intercept.
LOGISTIC_BASE_CLIP = 1e-6

_NO_WEIGHT = read_only(np.empty(0, dtype=np.float32))


# --------------------------------------------------------------------------------------
# parameter parsing
# --------------------------------------------------------------------------------------
def _real_param(params, key, default, objective, *, low=None, high=None, low_open=True,
                high_open=True):
    value = params.get(key, default)
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or \
            not math.isfinite(float(value)):
        raise ParameterError(f"{objective}: {key} must be a finite number, got {value!r}")
    value = float(value)
    bad_low = low is not None and (value <= low if low_open else value < low)
    bad_high = high is not None and (value >= high if high_open else value > high)
    if bad_low or bad_high:
        lo = "-inf" if low is None else low
        hi = "inf" if high is None else high
        brackets = ("(" if low_open else "[") + f"{lo}, {hi}" + (")" if high_open else "]")
        raise ParameterError(f"{objective}: {key} must be in {brackets}, got {value!r}")
    return value


def _num_class_param(params, objective):
    if "num_class" not in params or params["num_class"] is None:
        raise ParameterError(f"{objective} needs the parameter num_class (an integer >= 2)")
    value = params["num_class"]
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 2:
        raise ParameterError(f"{objective}: num_class must be an integer >= 2, got {value!r}")
    return int(value)


class Objective:
    """Base class; see the module docstring. Build with :func:`get_objective`.

    Attributes
    ----------
    name : str
        XGBoost name, e.g. ``"binary:logistic"``.
    params : dict
        The objective's own parameters with defaults filled in (JSON-safe).
    n_outputs : int
        Margin columns: ``num_class`` for ``multi:*``, else 1.
    is_classification : bool
    default_metric : str
        XGBoost's default evaluation metric name (see :mod:`oocboost.model.metrics`).
    default_metric_params : dict
        Keyword arguments for ``get_metric(default_metric, **default_metric_params)``.
    leaf_refresh_quantile : float or None
        Quantile of the residuals each new leaf is reset to after its tree is grown
        (absolute / quantile error, as XGBoost; ``learners/boosting/leaf_refresh.py``).
    """

    name = None
    n_outputs = 1
    is_classification = False
    default_metric = None
    leaf_refresh_quantile = None
    #: True when a row's gradient depends on other rows (``survival:cox``): the booster
    #: then computes every row's at once (``all_gradients``).
    needs_all_rows = False

    def __init__(self, params):
        self.params = params

    @property
    def default_metric_params(self):
        return {}

    def to_dict(self):
        """``{"name": ..., "params": ...}``; ``get_objective(**d)`` rebuilds it."""
        return {"name": self.name, "params": dict(self.params)}

    def __repr__(self):
        return f"get_objective({self.name!r}, {self.params!r})"

    def __eq__(self, other):
        return isinstance(other, Objective) and self.to_dict() == other.to_dict()

    def __hash__(self):
        return hash(self.name)

    # ---------------------------------------------------------------- labels ----------
    def check_labels(self, label, where, row_start=0):
        """Raise :class:`InputError` unless every label is valid for this objective.

        Parameters
        ----------
        label : ndarray of shape (n,), float32 or float64
        where : str
            Names the source in the message, e.g. ``"cache /path/x (block 3)"``.
        row_start : int
            Added to the in-array index of the offending row in the message (the global
            row index of ``label[0]``).

        Raises
        ------
        InputError
            Naming ``where``, the first offending row and its value, and what was expected.
        """
        label = as_label(label)
        self._first_bad(label, ~np.isfinite(label), where, row_start, "finite labels")
        self._check_domain(label, where, row_start)

    def _check_domain(self, label, where, row_start):
        pass

    def _first_bad(self, label, bad, where, row_start, expected):
        if np.any(bad):
            i = int(np.argmax(bad))
            raise InputError(
                f"{where}: objective {self.name} expects {expected}; row "
                f"{int(row_start) + i} has label {float(label[i])!r}"
            )

    # ---------------------------------------------------------------- gradients -------
    def gradients(self, label, margin, weight, out_grad, out_hess):
        """Per-row gradients and hessians of the loss in the margin, times the weights.

        Parameters
        ----------
        label : ndarray of shape (n,), float32 or float64
            Valid labels (see :meth:`check_labels`; not re-checked here).
        margin : ndarray of shape (n, n_outputs), float64
            Raw scores (``(n,)`` accepted when ``n_outputs == 1``).
        weight : ndarray of shape (n,) or None
            Sample weights; they multiply both ``g`` and ``h``.
        out_grad, out_hess : ndarray of shape (n, n_outputs), float32
            OUT: ``g = w dl/dm``, ``h = w d2l/dm2`` (formulas in each subclass).
        """
        label = as_label(label)
        n = label.shape[0]
        margin = np.asarray(margin, dtype=np.float64)
        if margin.ndim == 1 and self.n_outputs == 1:
            margin = margin.reshape(-1, 1)
        shape = (n, self.n_outputs)
        if margin.shape != shape:
            raise InputError(
                f"{self.name}: margin must have shape {shape}, got {margin.shape}"
            )
        for buf_name, buf in (("out_grad", out_grad), ("out_hess", out_hess)):
            if not isinstance(buf, np.ndarray) or buf.shape != shape or \
                    buf.dtype != G_H_DTYPE:
                raise InputError(
                    f"{self.name}: {buf_name} must be a float32 array of shape {shape}, got "
                    f"{getattr(buf, 'dtype', type(buf))} {getattr(buf, 'shape', '')}"
                )
        if weight is None:
            weight, has_weight = _NO_WEIGHT, False
        else:
            weight = np.asarray(weight)
            if weight.dtype not in (np.float32, np.float64):
                weight = weight.astype(np.float64)
            if weight.shape != (n,):
                raise InputError(f"{self.name}: weight must have shape ({n},), got "
                                 f"{weight.shape}")
            has_weight = True
        # read-only views: a cache's labels and weights are, arrays made in memory are
        # not, and numba would compile every gradient kernel once for each
        self._gradients(read_only(label), margin, read_only(weight), has_weight, out_grad,
                        out_hess)

    def _gradients(self, label, margin, weight, has_weight, out_grad, out_hess):
        raise NotImplementedError

    # ---------------------------------------------------------------- intercepts ------
    def base_margin(self, label_stats):
        """Intercept in margin space estimated from the labels, shape ``(n_outputs,)``.

        Parameters
        ----------
        label_stats : LabelStats

        Returns
        -------
        ndarray of shape (n_outputs,), float64
        """
        if self.n_outputs == 1 and not label_stats.sum_weight > 0:
            raise InputError(
                f"{self.name}: cannot estimate base_score: the labelled rows have total "
                f"weight {label_stats.sum_weight!r}; expected a positive total weight"
            )
        return np.full(self.n_outputs, float(self._base_margin(label_stats)))

    def _base_margin(self, label_stats):
        raise NotImplementedError

    def base_score_to_margin(self, base_score):
        """A user ``base_score`` (prediction space, as XGBoost) to margin space.

        Returns
        -------
        ndarray of shape (n_outputs,), float64
        """
        if isinstance(base_score, bool) or not isinstance(base_score, numbers.Real) or \
                not math.isfinite(float(base_score)):
            raise ParameterError(f"base_score must be a finite number, got {base_score!r}")
        return np.full(self.n_outputs, self._link(float(base_score)))

    def _link(self, value):
        return value

    # ---------------------------------------------------------------- transforms ------
    def _margin2d(self, margin):
        margin = np.asarray(margin, dtype=np.float64)
        if margin.ndim == 1 and self.n_outputs == 1:
            margin = margin[:, None]
        if margin.ndim != 2 or margin.shape[1] != self.n_outputs:
            raise InputError(f"{self.name}: margin must have shape (n, {self.n_outputs}), "
                             f"got {margin.shape}")
        return margin

    def transform(self, margin):
        """Margins ``(n, n_outputs)`` float64 to predictions: ``(n,)`` for single-output
        objectives (``sigmoid`` / ``exp`` / identity), ``(n, K)`` probabilities for
        ``multi:softprob``, ``(n,)`` class indices as float64 for ``multi:softmax``."""
        return self._transform(self._margin2d(margin))

    def _transform(self, margin):
        return margin[:, 0].copy()

    def eval_transform(self, margin):
        """Predictions as the metrics take them (XGBoost's ``EvalTransform``): as
        :meth:`transform`, but ``multi:softmax`` gives ``(n, K)`` probabilities."""
        return self.transform(margin)

    def transform_proba(self, margin):
        """Class probabilities ``(n, K)`` (``K = 2`` for ``binary:logistic``: columns
        ``1 - p, p``). Raises ParameterError for regression objectives."""
        raise ParameterError(f"{self.name} is not a classification objective: it has no "
                             f"class probabilities")
