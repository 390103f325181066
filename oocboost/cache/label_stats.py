"""Streaming label statistics: pass 1 of a build keeps them in the manifest, and
objectives start their intercepts from them (XGBoost >= 2 estimates ``base_score`` the
same way when the user gives none)."""
import math

import numpy as np

from ..common import weighted_sum as dot_without_blas
from ..errors import InputError, ParameterError

#: Labels of integer value with at most this many distinct values are counted per class.
MAX_TRACKED_CLASSES = 1024


def as_label(label):
    label = np.asarray(label)
    if label.dtype not in (np.float32, np.float64):
        label = label.astype(np.float64)
    if label.ndim != 1:
        raise InputError(f"labels must be a 1-D array, got shape {label.shape}")
    return label


def _json_float(x):
    """JSON-safe float: finite values as floats, non-finite ones as strings."""
    x = float(x)
    return x if math.isfinite(x) else str(x)


class LabelStats:
    """Streaming label statistics for intercepts and label checks.

    Feed blocks with :meth:`update`, combine partial results with :meth:`merge`; the
    result does not depend on how the rows were split into blocks (up to float rounding
    of the sums, and the sketch's rank error for :meth:`quantile`). Missing (NaN) labels
    are counted in ``n_missing`` and otherwise ignored.

    Attributes
    ----------
    n_rows : int
        Rows seen, missing labels included.
    n_missing : int
        Rows whose label is NaN.
    sum_weight : float
        ``sum_i w_i`` over rows with a label (``w_i = 1`` when no weights are given).
    weighted_sum : float
        ``sum_i w_i y_i`` over rows with a label.
    min, max : float
        Smallest and largest label (``nan`` before any labelled row).
    class_weights : dict[int, float] or None
        ``{k: sum of w_i over rows with y_i == k}`` while every label is an integer value
        and there are at most ``MAX_TRACKED_CLASSES`` (1024) distinct ones; ``None`` once
        that stops holding (and it stays ``None``).
    class_counts : dict[int, int] or None
        ``{k: rows with y_i == k}``, unweighted (``class_weight="balanced"`` counts rows,
        as scikit-learn), under the same rule; ``None`` as well in the label statistics
        of caches built before it was kept.
    sketch : oocboost.cache.sketch.QuantileSketch
        Weighted quantile sketch of the labels (``quantile`` reads it).

    Notes
    -----
    ``weighted_mean = weighted_sum / sum_weight``.
    """

    def __init__(self, eps=None, max_exact=255):
        from .sketch import QuantileSketch

        self.n_rows = 0
        self.n_missing = 0
        self.sum_weight = 0.0
        self.weighted_sum = 0.0
        self.min = math.nan
        self.max = math.nan
        self.class_weights = {}
        self.class_counts = {}
        self.sketch = QuantileSketch(eps=eps, max_exact=max_exact)

    # ----------------------------------------------------------------------------------
    @property
    def weighted_mean(self):
        """``weighted_sum / sum_weight`` (nan when ``sum_weight == 0``)."""
        return self.weighted_sum / self.sum_weight if self.sum_weight != 0 else math.nan

    def update(self, label, weight=None):
        """Add one block of labels.

        Parameters
        ----------
        label : ndarray of shape (n,), float32 or float64
            NaN marks a missing label.
        weight : ndarray of shape (n,) or None
            Sample weights (all 1 when None).
        """
        label = as_label(label)
        n = label.shape[0]
        if weight is not None:
            weight = np.asarray(weight, dtype=np.float64)
            if weight.shape != (n,):
                raise InputError(
                    f"weight must have shape ({n},) like the labels, got {weight.shape}"
                )
        self.n_rows += n
        present = ~np.isnan(label)
        n_present = int(np.count_nonzero(present))
        self.n_missing += n - n_present
        if n_present == 0:
            return self
        y = label[present].astype(np.float64)
        w = None if weight is None else weight[present]
        if w is None:
            self.sum_weight += float(n_present)
            self.weighted_sum += float(np.sum(y))
        else:
            self.sum_weight += float(np.sum(w))
            self.weighted_sum += dot_without_blas(w, y)
        lo, hi = float(np.min(y)), float(np.max(y))
        self.min = lo if math.isnan(self.min) else min(self.min, lo)
        self.max = hi if math.isnan(self.max) else max(self.max, hi)
        self._update_classes(y, w)
        self.sketch.update(y, w)
        return self

    def _update_classes(self, y, w):
        if self.class_weights is None:
            return
        if not np.all(np.isfinite(y)) or not np.all(y == np.floor(y)):
            self.class_weights = self.class_counts = None
            return
        values, inverse = np.unique(y, return_inverse=True)
        if len(values) > MAX_TRACKED_CLASSES:
            self.class_weights = self.class_counts = None
            return
        sums = np.bincount(inverse, weights=w, minlength=len(values))
        counts = np.bincount(inverse, minlength=len(values))
        keys = [int(value) for value in values.tolist()]  # over distinct values
        self._add_classes(dict(zip(keys, sums.tolist())), dict(zip(keys, counts.tolist())))

    def _add_classes(self, sums, counts):
        """Add per-class weight sums and row counts (``counts`` None: unknown)."""
        merged = dict(self.class_weights)
        for key, s in sums.items():
            merged[key] = merged.get(key, 0.0) + float(s)
        if len(merged) > MAX_TRACKED_CLASSES:
            self.class_weights = self.class_counts = None
            return
        self.class_weights = merged
        if self.class_counts is None or counts is None:
            self.class_counts = None
            return
        merged_counts = dict(self.class_counts)
        for key, c in counts.items():
            merged_counts[key] = merged_counts.get(key, 0) + int(c)
        self.class_counts = merged_counts

    def merge(self, other):
        """Add the rows summarised by ``other`` (another :class:`LabelStats`) to ``self``."""
        self.n_rows += other.n_rows
        self.n_missing += other.n_missing
        self.sum_weight += other.sum_weight
        self.weighted_sum += other.weighted_sum
        for attr, pick in (("min", min), ("max", max)):
            a, b = getattr(self, attr), getattr(other, attr)
            setattr(self, attr, b if math.isnan(a) else a if math.isnan(b) else pick(a, b))
        if self.class_weights is None or other.class_weights is None:
            self.class_weights = self.class_counts = None
        else:
            self._add_classes(other.class_weights, other.class_counts)
        self.sketch.merge(other.sketch)
        return self

    def quantile(self, q):
        """Weighted ``q``-quantile of the labels, from the sketch (``QuantileSketch``'s
        definition and rank error apply).

        Parameters
        ----------
        q : float in [0, 1]

        Returns
        -------
        float
        """
        if not 0.0 <= q <= 1.0:
            raise ParameterError(f"quantile level must be in [0, 1], got {q!r}")
        if self.n_rows - self.n_missing == 0:
            return math.nan
        return float(np.asarray(self.sketch.quantiles(np.array([float(q)])))[0])

    def to_dict(self):
        """JSON-safe dict (non-finite floats as strings, class keys as ``[k, w]`` pairs)."""
        return {
            "n_rows": int(self.n_rows),
            "n_missing": int(self.n_missing),
            "sum_weight": _json_float(self.sum_weight),
            "weighted_sum": _json_float(self.weighted_sum),
            "min": _json_float(self.min),
            "max": _json_float(self.max),
            "class_weights": None if self.class_weights is None else
            [[int(k), float(v)] for k, v in sorted(self.class_weights.items())],
            "class_counts": None if self.class_counts is None else
            [[int(k), int(v)] for k, v in sorted(self.class_counts.items())],
            "sketch": self.sketch.to_dict(),
        }

    @classmethod
    def from_dict(cls, d):
        """Inverse of :meth:`to_dict`."""
        from .sketch import QuantileSketch

        self = cls.__new__(cls)
        self.n_rows = int(d["n_rows"])
        self.n_missing = int(d["n_missing"])
        self.sum_weight = float(d["sum_weight"])
        self.weighted_sum = float(d["weighted_sum"])
        self.min = float(d["min"])
        self.max = float(d["max"])
        cw = d["class_weights"]
        self.class_weights = None if cw is None else {int(k): float(v) for k, v in cw}
        cc = d.get("class_counts")  # absent from caches built before it was kept
        self.class_counts = None if cc is None else {int(k): int(v) for k, v in cc}
        self.sketch = QuantileSketch.from_dict(d["sketch"])
        return self

    def __repr__(self):
        return (f"LabelStats(n_rows={self.n_rows}, n_missing={self.n_missing}, "
                f"sum_weight={self.sum_weight!r}, weighted_mean={self.weighted_mean!r}, "
                f"min={self.min!r}, max={self.max!r})")
