"""Learning objectives with XGBoost's names and semantics.

An :class:`Objective` knows, for one loss ``l(y, m)`` of a label ``y`` and a margin ``m``
(the raw, untransformed score):

- ``gradients``: per-row ``g = w dl/dm`` and ``h = w d2l/dm2`` into float32 buffers the
  caller owns (numba kernels in :mod:`oocboost.kernels.objective_kernels`);
- ``base_margin``: the starting margin (intercept) from streamed :class:`LabelStats`, as
  XGBoost >= 2 estimates ``base_score`` when the user gives none;
- ``base_score_to_margin``: a user ``base_score`` (prediction space) to margin space;
- ``transform`` / ``transform_proba`` / ``eval_transform``: margins to predictions;
- ``check_labels``: label validity, naming the source and the first bad row.

================================  ============  ===============  ======================
name                              n_outputs     link             default_metric
================================  ============  ===============  ======================
``reg:squarederror``              1             identity         ``rmse``
``reg:absoluteerror``             1             identity         ``mae``
``reg:pseudohubererror``          1             identity         ``mphe``
``reg:quantileerror``             1             identity         ``quantile``
``binary:logistic``               1             sigmoid          ``logloss``
``multi:softprob``                num_class     softmax          ``mlogloss``
``multi:softmax``                 num_class     softmax, argmax  ``mlogloss``
``count:poisson``                 1             exp              ``poisson-nloglik``
================================  ============  ===============  ======================

``get_objective(obj.name, obj.params)`` rebuilds an objective (``obj.to_dict()`` holds both).

Known differences from XGBoost
------------------------------
- ``reg:absoluteerror`` and ``reg:quantileerror``: XGBoost, after growing each tree,
  resets every leaf to the weighted median (``alpha``-quantile) of the residuals
  ``y - m`` of its rows (``UpdateTreeLeaf``). oocboost keeps the Newton leaf values
  ``-G / (H + lambda)``; :attr:`Objective.leaf_refresh_quantile` names the quantile the
  refresh would use and :meth:`Objective.leaf_refresh` is the (not yet active) hook.
- ``reg:pseudohubererror`` intercept: XGBoost (3.2) uses its generic intercept fit
  (Newton steps on the gradients), which can land far from the labels' centre; we use
  the weighted median of the labels, which the loss is robust around.
- ``count:poisson``: XGBoost's ``max_delta_step`` is both this objective's hessian
  inflation (default 0.7) and the tree parameter clipping leaf values (default 0). The
  objective reads it for the hessian inflation; ``train`` passes a user-set value to the
  trees' leaf clipping too, as XGBoost does (unset: 0.7 for the hessian, no clipping).
- Arithmetic is float64 (XGBoost: float32); results are rounded to float32 once.
"""
import math
import numbers

import numpy as np

from ..cache.label_stats import as_label
from ..common import G_H_DTYPE
from ..errors import InputError, ParameterError
from ..kernels import objective_kernels as _k

__all__ = ["Objective", "get_objective", "OBJECTIVE_NAMES"]

#: Clip of the weighted label mean before the logit in the logistic intercept.
LOGISTIC_BASE_CLIP = 1e-6

_NO_WEIGHT = np.empty(0, dtype=np.float32)


# --------------------------------------------------------------------------------------
# parameter parsing
# --------------------------------------------------------------------------------------
def _real_param(params, key, default, objective, *, low=None, high=None, low_open=True,
                high_open=True):
    value = params.get(key, default)
    if isinstance(value, (list, tuple, np.ndarray)) and key == "quantile_alpha":
        values = list(np.ravel(value))
        if len(values) != 1:
            raise ParameterError(
                f"{objective}: quantile_alpha must be a single number in (0, 1); oocboost "
                f"fits one quantile per model, got {value!r}"
            )
        value = values[0]
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


# objectives
# --------------------------------------------------------------------------------------
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
        Quantile of the residuals XGBoost resets leaves to (absolute / quantile error).
    """

    name = None
    n_outputs = 1
    is_classification = False
    default_metric = None
    leaf_refresh_quantile = None

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
            raise InputError(f"{self.name}: margin must have shape {shape}, got {margin.shape}")
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
        self._gradients(label, margin, weight, has_weight, out_grad, out_hess)

    def _gradients(self, label, margin, weight, has_weight, out_grad, out_hess):
        raise NotImplementedError

    def leaf_refresh(self, *args, **kwargs):
        """Hook for XGBoost's post-growth leaf refresh (absolute / quantile error).

        Not active yet: returns None, and the Newton leaf values stand. XGBoost sets each
        leaf to the weighted ``leaf_refresh_quantile``-quantile of ``y - m`` over its rows.
        """
        return None

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
    ``h = w``. Intercept: weighted median. XGBoost also refreshes leaves with the weighted
    median of residuals (not done here; see :meth:`leaf_refresh`)."""

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
    Intercept: weighted ``a``-quantile. XGBoost refreshes leaves with the ``a``-quantile
    of residuals (not done here; see :meth:`leaf_refresh`)."""

    name = "reg:quantileerror"
    default_metric = "quantile"

    @property
    def leaf_refresh_quantile(self):
        return self.params["quantile_alpha"]

    @property
    def default_metric_params(self):
        return {"alpha": self.params["quantile_alpha"]}

    def _gradients(self, label, margin, weight, has_weight, out_grad, out_hess):
        _k.quantile_gradients(label, margin, weight, has_weight,
                              self.params["quantile_alpha"], out_grad, out_hess)

    def _base_margin(self, stats):
        return stats.quantile(self.params["quantile_alpha"])


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
        p = self.transform(margin)
        return np.column_stack([1.0 - p, p])


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


def _make_squared(p):
    return SquaredError({})


def _make_absolute(p):
    return AbsoluteError({})


def _make_huber(p):
    n = "reg:pseudohubererror"
    return PseudoHuberError({"huber_slope": _real_param(p, "huber_slope", 1.0, n, low=0.0)})


def _make_quantile(p):
    n = "reg:quantileerror"
    return QuantileError({"quantile_alpha": _real_param(p, "quantile_alpha", 0.5, n,
                                                        low=0.0, high=1.0)})


def _make_logistic(p):
    n = "binary:logistic"
    return BinaryLogistic({"scale_pos_weight": _real_param(p, "scale_pos_weight", 1.0, n,
                                                           low=0.0)})


def _make_softmax(name):
    return lambda p: Softmax({"num_class": _num_class_param(p, name)}, name)


def _make_poisson(p):
    n = "count:poisson"
    return Poisson({"max_delta_step": _real_param(p, "max_delta_step", 0.7, n, low=0.0,
                                                  low_open=False)})


_FACTORIES = {
    "reg:squarederror": _make_squared,
    "reg:absoluteerror": _make_absolute,
    "reg:pseudohubererror": _make_huber,
    "reg:quantileerror": _make_quantile,
    "binary:logistic": _make_logistic,
    "multi:softprob": _make_softmax("multi:softprob"),
    "multi:softmax": _make_softmax("multi:softmax"),
    "count:poisson": _make_poisson,
    "multi:proba": lambda p: ClassProbability({"num_class": _num_class_param(p,
                                                                           "multi:proba")}),
}
#: Every objective name :func:`get_objective` knows.
OBJECTIVE_NAMES = tuple(_FACTORIES)


def get_objective(name, params=None):
    """Build the objective ``name`` (an XGBoost name) with its parameters.

    Parameters
    ----------
    name : str
        One of :data:`OBJECTIVE_NAMES`.
    params : dict or None
        May hold any training parameters; only the objective's own are read:
        ``huber_slope`` (> 0, default 1.0), ``quantile_alpha`` (in (0, 1), default 0.5,
        a single value), ``scale_pos_weight`` (> 0, default 1.0), ``num_class``
        (integer >= 2, required by ``multi:*``), ``max_delta_step`` (>= 0, default 0.7,
        ``count:poisson``). ``None`` values count as absent.

    Returns
    -------
    Objective

    Raises
    ------
    ParameterError
        Unknown name (the message lists the known ones) or a parameter out of range.
    """
    if not isinstance(name, str) or name not in _FACTORIES:
        raise ParameterError(
            f"unknown objective {name!r}; expected one of: {', '.join(OBJECTIVE_NAMES)}"
        )
    params = {k: v for k, v in (params or {}).items() if v is not None}
    return _FACTORIES[name](params)
