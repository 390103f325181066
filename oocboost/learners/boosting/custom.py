"""Your own objective and metric in ``train()``, as ``xgboost.train(obj=, custom_metric=)``
takes them, called block by block with NumPy arrays:

- ``obj(predt, labels) -> (grad, hess)``: ``predt`` the block's raw margins, ``(n,)`` for
  one output or ``(n, K)``, and ``grad``, ``hess`` of the same shape (or flat). The
  block's sample weights multiply both afterwards (XGBoost leaves that to you, through
  ``dtrain.get_weight()``; here there is no DMatrix to ask).
- ``custom_metric(predt, labels) -> (name, value)``: ``predt`` as the named objective
  transforms the margins (probabilities for ``binary:logistic``), all rows of an
  evaluation set at once.

Example
-------
>>> def pseudo_huber(predt, labels):                                  # doctest: +SKIP
...     d = predt - labels
...     scale = 1 + d ** 2
...     return d / np.sqrt(scale), 1 / (scale * np.sqrt(scale))
>>> oocboost.train({"eta": 0.1}, cache, 100, obj=pseudo_huber)        # doctest: +SKIP
"""
import numpy as np

from ...errors import ParameterError


class CustomGradients:
    """The named objective (intercept, transforms, label checks, default metric) with
    the gradients of ``fn``."""

    def __init__(self, objective, fn):
        if not callable(fn):
            raise ParameterError(f"obj must be a callable (predt, labels) -> (grad, hess), "
                                 f"got {type(fn).__name__}")
        self._objective = objective
        self._fn = fn

    def __getattr__(self, name):
        return getattr(self._objective, name)

    def gradients(self, label, margin, weight, out_grad, out_hess):
        """The callable's gradient and hessian, checked, times ``weight``."""
        margin = np.asarray(margin, dtype=np.float64)
        k = self._objective.n_outputs
        predt = margin[:, 0].copy() if k == 1 else np.ascontiguousarray(margin)
        result = self._fn(predt, np.asarray(label))
        if not (isinstance(result, tuple) and len(result) == 2):
            raise ParameterError("obj must return a pair (grad, hess)")
        n = margin.shape[0]
        for name, values, out in (("grad", result[0], out_grad),
                                  ("hess", result[1], out_hess)):
            values = np.asarray(values, dtype=np.float64)
            if values.size != n * k:
                raise ParameterError(f"obj returned {name} of shape {values.shape}; "
                                     f"expected {predt.shape} like predt")
            values = values.reshape(n, k)
            bad = ~np.isfinite(values)
            if bad.any():
                row = int(np.argwhere(bad)[0][0])
                raise ParameterError(f"obj returned a non-finite {name} "
                                     f"({values[bad][0]!r}) for row {row} of the block")
            if weight is not None:
                values = values * np.asarray(weight, dtype=np.float64)[:, None]
            out[...] = values


class CustomMetric:
    """A ``custom_metric(predt, labels) -> (name, value)`` as a metric of the evaluation
    log; its ``name`` is the one it returned last."""

    is_additive = False
    multiclass = False

    def __init__(self, fn):
        if not callable(fn):
            raise ParameterError(f"custom_metric must be a callable (predt, labels) -> "
                                 f"(name, value), got {type(fn).__name__}")
        self._fn = fn
        self.name = getattr(fn, "__name__", "custom")

    @property
    def higher_is_better(self):
        return False  # XGBoost minimises unknown metrics; pass EarlyStopping(maximize=)

    def __call__(self, label, prediction, weight=None):
        result = self._fn(prediction, label)
        if not (isinstance(result, tuple) and len(result) == 2
                and isinstance(result[0], str)):
            raise ParameterError("custom_metric must return a pair (name, value)")
        self.name = result[0]
        try:
            return float(result[1])
        except (TypeError, ValueError):
            raise ParameterError(f"custom_metric {result[0]!r} returned {result[1]!r}, "
                                 f"not a number") from None
