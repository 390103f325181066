"""The base class of every evaluation metric (see :mod:`oocboost.model.metrics`)."""
import numpy as np

from ..errors import InputError


def _as_1d(x, what):
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 1:
        raise InputError(f"{what} must be a 1-D array, got shape {x.shape}")
    return x


class Metric:
    """An evaluation metric. Build with :func:`get_metric`.

    Attributes
    ----------
    name : str
        As given to :func:`get_metric`, e.g. ``"error@0.7"``.
    params : dict
        The metric's parameters (``alpha`` for ``quantile``, ``huber_slope`` for ``mphe``,
        ``threshold`` for ``error``).
    higher_is_better : bool
    is_additive : bool
        Whether :meth:`partial` / :meth:`finalize` are available.
    multiclass : bool
        Whether predictions are ``(n, K)`` probabilities.
    """

    higher_is_better = False
    is_additive = True
    multiclass = False

    def __init__(self, name, params=None):
        self.name = name
        self.params = dict(params or {})

    def __repr__(self):
        return f"get_metric({self.name!r}, **{self.params!r})"

    def _inputs(self, label, prediction, weight):
        label, prediction, weight = self._per_target(label, prediction, weight)
        label = _as_1d(label, f"{self.name}: label")
        n = label.shape[0]
        prediction = np.asarray(prediction, dtype=np.float64)
        if self._expects_proba_matrix(prediction):
            if prediction.ndim != 2 or prediction.shape[0] != n:
                raise InputError(f"{self.name} expects class probabilities of shape ({n}, "
                                 f"n_classes), got {prediction.shape}")
            K = prediction.shape[1]
            bad = (label != np.floor(label)) | (label < 0) | (label >= K) | np.isnan(label)
            if np.any(bad):
                i = int(np.argmax(bad))
                raise InputError(f"{self.name} expects integer class labels in [0, {K}); row "
                                 f"{i} has label {float(label[i])!r}")
        elif prediction.shape != (n,):
            raise InputError(f"{self.name} expects predictions of shape ({n},), got "
                             f"{prediction.shape}")
        if np.isnan(prediction).any():
            raise InputError(f"{self.name}: predictions contain NaN")
        if weight is not None:
            weight = _as_1d(weight, f"{self.name}: weight")
            if weight.shape != (n,):
                raise InputError(f"{self.name}: weight must have shape ({n},), got "
                                 f"{weight.shape}")
        return label, prediction, weight

    def _per_target(self, label, prediction, weight):
        """Several targets (labels ``(n, k)``): every (row, target) pair is one
        observation with its row's weight, as XGBoost's metrics count them."""
        label = np.asarray(label)
        if label.ndim != 2 or self.multiclass:
            return label, prediction, weight
        prediction = np.asarray(prediction, dtype=np.float64)
        if prediction.shape != label.shape:
            raise InputError(f"{self.name}: predictions of shape {prediction.shape} for "
                             f"labels of shape {label.shape} (several targets)")
        k = label.shape[1]
        if weight is not None:
            weight = np.repeat(np.asarray(weight, dtype=np.float64), k)
        return label.ravel(), prediction.ravel(), weight

    def _expects_proba_matrix(self, prediction):
        return self.multiclass

    def __call__(self, label, prediction, weight=None):
        """Metric value.

        Parameters
        ----------
        label : array of shape (n,)
        prediction : array of shape (n,) or (n, K), in prediction space
        weight : array of shape (n,) or None

        Returns
        -------
        float
        """
        return self.finalize(self.partial(label, prediction, weight))

    def partial(self, label, prediction, weight=None):
        """Weighted sums of one block, float64 vector; they add across blocks."""
        label, prediction, weight = self._inputs(label, prediction, weight)
        return self._partial(label, prediction, weight)

    def finalize(self, sums):
        """Metric value from summed :meth:`partial` results."""
        raise NotImplementedError

    def _partial(self, label, prediction, weight):
        raise NotImplementedError


