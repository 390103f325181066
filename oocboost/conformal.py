"""Conformal prediction intervals and sets around any regressor or classifier, of oocboost
or scikit-learn, from arrays or from a cache.

``ConformalRegressor(estimator, method="split" | "cv+")`` and
``ConformalClassifier(estimator)`` wrap an unfitted estimator. ``fit`` trains it and
computes conformity scores on rows it did not train on; ``predict_interval(X, alpha)``
and ``predict_set(X, alpha)`` then cover a new row's label with probability at least
``1 - alpha`` (for exchangeable rows), whatever the model. The formulas and finite-sample
ranks are MAPIE's (``SplitConformalRegressor``, ``CrossConformalRegressor(method=
"plus")``, ``SplitConformalClassifier`` with the ``"lac"`` score), and the tests hold
the intervals to MAPIE's:

- **split**: the estimator is trained on all but a calibration share of the rows
  (``calibration_size``, drawn by ``random_state``), or on all rows when ``fit`` is
  given ``calibration=`` (a cache, or ``(X, y)``). A regressor's scores are
  ``|y - y_hat|``; the interval is ``y_hat -/+ q``, ``q`` the ``ceil((1 - alpha)(n +
  1))``-th smallest of the ``n`` scores. A classifier's score is ``1 - p_y``; the set
  holds the classes whose ``1 - p_k`` is at most the same order statistic.
- **cv+** (regressors; Barber et al.'s CV+, MAPIE's ``method="plus"``): ``cv`` models,
  each trained without one fold; row ``i``'s score ``R_i`` is its residual under the
  model that did not see it. A new row's interval runs from the ``(n + 1 - ceil((1 -
  alpha)(n + 1)))``-th smallest of ``mu_k(i)(x) - R_i`` to the ``ceil((1 - alpha)(n +
  1))``-th smallest of ``mu_k(i)(x) + R_i`` over the ``n`` training rows: every
  training row counts for every new row, ``n`` values each (computed in batches of rows
  of ``BATCH_VALUES`` values), so split is the method for data of millions of rows.

From a cache, the held-out rows are the cache's rows weighted zero
(``cache.store.weighted.RowWeightedCache``): nothing is copied, and the estimator must
take a ``Cache`` in ``fit`` (oocboost's do). Where MAPIE raises because the calibration
rows are too few for ``alpha`` (the rank exceeds ``n``), so do these, unless
``allow_infinite_bounds=True`` (then the bound is infinite, as MAPIE's option).

Example
-------
>>> from oocboost import GradientBoostingRegressor                         # doctest: +SKIP
>>> from oocboost.conformal import ConformalRegressor                      # doctest: +SKIP
>>> cr = ConformalRegressor(GradientBoostingRegressor(), method="cv+", cv=5)
>>> cr.fit(X, y).predict_interval(X_new, alpha=0.1)     # (n, 2): 90% intervals
"""
from __future__ import annotations

import math

import numpy as np

from .cache.store import Cache
from .cache.store.weighted import RowWeightedCache
from .errors import ParameterError

#: Values (rows x training rows) a batch of cv+ intervals holds at once: 64 MiB.
BATCH_VALUES = 1 << 23
METHODS = ("split", "cv+")


def _clone(estimator):
    from sklearn.base import clone

    return clone(estimator)


def _check_alpha(alpha):
    try:
        alpha = float(alpha)
    except (TypeError, ValueError):
        raise ParameterError(f"alpha must be a number in (0, 1), got {alpha!r}") from None
    if not 0.0 < alpha < 1.0:
        raise ParameterError(f"alpha must be in (0, 1) (0.1 for 90% coverage), got {alpha}")
    return alpha


def upper_rank(n: int, alpha: float) -> int:
    """MAPIE's finite-sample rank of the ``1 - alpha`` bound among ``n`` scores:
    ``ceil((1 - alpha)(n + 1))`` (1-based; above ``n`` when ``n`` is too small)."""
    return int(math.ceil((1.0 - alpha) * (n + 1)))


class _Conformal:
    def __init__(self, estimator, *, method="split", cv=5, calibration_size=0.25,
                 random_state=0, allow_infinite_bounds=False):
        self.estimator = estimator
        self.method = method
        self.cv = cv
        self.calibration_size = calibration_size
        self.random_state = random_state
        self.allow_infinite_bounds = allow_infinite_bounds

    # ------------------------------------------------------------------ data
    def _labels(self, X, y):
        """``(n_rows, labels)`` of the training data (a cache's from its label column)."""
        if isinstance(X, Cache):
            if y is not None:
                raise ParameterError("when X is a Cache its labels come from the cache: "
                                     "pass y=None")
            labels, _ = X.read_labels()
            if labels is None or labels.ndim != 1:
                raise ParameterError(f"cache {X.path} needs one label column")
            return X.n_rows, np.asarray(labels)
        if y is None:
            raise ParameterError("y is required when X is not a Cache")
        y = np.asarray(y)
        if y.ndim != 1 or len(y) != _n_rows(X):
            raise ParameterError(f"y must be 1-D with one label per row of X "
                                 f"({_n_rows(X)}), got shape {y.shape}")
        return len(y), y

    def _fit_on(self, X, y, keep, sample_weight):
        """A clone of the estimator fitted on the rows where ``keep`` is True."""
        est = _clone(self.estimator)
        if isinstance(X, Cache):
            factor = keep.astype(np.float32)
            est.fit(RowWeightedCache(X, factor))
            return est
        rows = np.flatnonzero(keep)
        Xk = X.iloc[rows] if hasattr(X, "iloc") else np.asarray(X)[rows]
        kwargs = {} if sample_weight is None else \
            {"sample_weight": np.asarray(sample_weight)[rows]}
        est.fit(Xk, y[rows], **kwargs)
        return est

    @staticmethod
    def _rows(X, rows):
        if isinstance(X, Cache):
            return X
        return X.iloc[rows] if hasattr(X, "iloc") else np.asarray(X)[rows]

    def _calibration_rows(self, n):
        share = self.calibration_size
        if isinstance(share, float) and 0.0 < share < 1.0:
            n_cal = int(math.ceil(share * n))
        elif isinstance(share, (int, np.integer)) and not isinstance(share, bool) and \
                0 < share < n:
            n_cal = int(share)
        else:
            raise ParameterError(f"calibration_size must be a share in (0, 1) or a row "
                                 f"count below the {n} rows, got {share!r}")
        rng = np.random.default_rng(self.random_state)
        held = np.zeros(n, bool)
        held[rng.permutation(n)[:n_cal]] = True
        return held

    def _fit_split(self, X, labels, n, sample_weight, calibration, output):
        """Split's fit: ``self.estimator_`` trained on all but a held-out share of the
        rows (or on all of them, scored on ``calibration``); returns the scored rows'
        labels and the model's ``output`` (``"predict"``, ``"predict_proba"``) on them."""
        if calibration is not None:
            self.estimator_ = self._fit_on(X, labels, np.ones(n, bool), sample_weight)
            Xc, truth = _calibration_data(calibration)
            return truth, np.asarray(getattr(self.estimator_, output)(Xc), dtype=np.float64)
        held = self._calibration_rows(n)
        self.estimator_ = self._fit_on(X, labels, ~held, sample_weight)
        scored = np.asarray(getattr(self.estimator_, output)(
            self._rows(X, np.flatnonzero(held))), dtype=np.float64)
        return labels[held], scored[held] if isinstance(X, Cache) else scored

    def _check_method(self, allowed):
        if self.method not in allowed:
            raise ParameterError(f"method must be one of {allowed}, got {self.method!r}")

    def _rank_or_raise(self, n, alpha):
        rank = upper_rank(n, alpha)
        if rank > n and not self.allow_infinite_bounds:
            need = int(math.ceil((1.0 - alpha) / alpha))  # the least n with rank <= n
            raise ParameterError(f"{n} calibration scores are too few for alpha={alpha}: "
                                 f"the bound is the {rank}-th smallest; give at least "
                                 f"{need} rows, or allow_infinite_bounds=True")
        return rank

    def _check_fitted(self):
        if not hasattr(self, "conformity_scores_"):
            raise ParameterError(f"this {type(self).__name__} is not fitted yet: call fit")


class ConformalRegressor(_Conformal):
    """Prediction intervals of a regressor (module docstring).

    Parameters
    ----------
    estimator : an unfitted regressor (cloned for each fit)
    method : "split" or "cv+"
    cv : int, folds of cv+ (rows assigned by ``random_state``)
    calibration_size : float or int, split's held-out share (or rows) when ``fit`` is
        given no ``calibration``
    random_state : int
    allow_infinite_bounds : bool, an infinite bound instead of an error when the rows
        are too few for ``alpha``
    """

    def fit(self, X, y=None, sample_weight=None, *, calibration=None):
        """Train and compute the conformity scores; ``calibration``: a cache or ``(X,
        y)`` of rows to score instead of holding out a share (split only)."""
        self._check_method(METHODS)
        n, labels = self._labels(X, y)
        if self.method == "cv+":
            if calibration is not None:
                raise ParameterError("calibration= is split's; cv+ scores every row with "
                                     "the model of the fold that left it out")
            return self._fit_cv_plus(X, labels, n, sample_weight)
        truth, predicted = self._fit_split(X, labels, n, sample_weight, calibration,
                                           "predict")
        self.conformity_scores_ = np.sort(np.abs(truth.astype(np.float64) - predicted))
        return self

    def _fit_cv_plus(self, X, labels, n, sample_weight):
        k = self.cv
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 2 <= k <= n:
            raise ParameterError(f"cv must be an int of folds in [2, {n}], got {k!r}")
        fold = np.random.default_rng(self.random_state).permutation(n) % k
        self.fold_of_row_ = fold
        self.estimators_ = []
        residual = np.empty(n)
        for f in range(k):
            est = self._fit_on(X, labels, fold != f, sample_weight)
            rows = np.flatnonzero(fold == f)
            predicted = np.asarray(est.predict(self._rows(X, rows)), dtype=np.float64)
            if isinstance(X, Cache):
                predicted = predicted[rows]
            residual[rows] = np.abs(labels[rows].astype(np.float64) - predicted)
            self.estimators_.append(est)
        self.conformity_scores_ = residual
        return self

    def predict(self, X):
        """Point predictions: the model's (split), the mean of the fold models' (cv+,
        MAPIE's default aggregation)."""
        self._check_fitted()
        if self.method == "cv+":
            return np.mean(self._fold_predictions(X), axis=1)
        return np.asarray(self.estimator_.predict(X), dtype=np.float64)

    def _fold_predictions(self, X):
        return np.column_stack([np.asarray(e.predict(X), dtype=np.float64)
                                for e in self.estimators_])

    def predict_interval(self, X, alpha=0.1):
        """Intervals ``(n_rows, 2)``: lower and upper bounds covering the label with
        probability at least ``1 - alpha``."""
        self._check_fitted()
        alpha = _check_alpha(alpha)
        scores = self.conformity_scores_
        n = len(scores)
        rank = self._rank_or_raise(n, alpha)
        if self.method == "split":
            q = scores[rank - 1] if rank <= n else np.inf
            centre = self.predict(X)
            return np.column_stack([centre - q, centre + q])
        return self._cv_plus_bounds(self._fold_predictions(X), rank)

    def _cv_plus_bounds(self, fold_pred, rank):
        """CV+ bounds from each fold model's predictions ``(m, K)``; ranks as MAPIE's."""
        scores, fold = self.conformity_scores_, self.fold_of_row_
        n = len(scores)
        low_rank = n + 1 - rank            # the (1 - alpha) rank counted from the top
        out = np.empty((fold_pred.shape[0], 2))
        batch = max(1, BATCH_VALUES // n)
        for s in range(0, fold_pred.shape[0], batch):
            centre = fold_pred[s:s + batch][:, fold]          # (b, n): mu_k(i)(x)
            out[s:s + batch, 0] = _kth_smallest(centre - scores, low_rank, -np.inf)
            out[s:s + batch, 1] = _kth_smallest(centre + scores, rank, np.inf)
        return out


class ConformalClassifier(_Conformal):
    """Prediction sets of a classifier with MAPIE's ``"lac"`` score (module docstring):
    ``predict_set(X, alpha)`` is ``(n_rows, n_classes)`` boolean, column ``k`` for
    ``classes_[k]``. ``method="split"`` (the only one so far)."""

    def fit(self, X, y=None, sample_weight=None, *, calibration=None):
        """Train on all but the calibration rows and score those (``calibration``: a
        cache or ``(X, y)`` instead)."""
        self._check_method(("split",))
        n, labels = self._labels(X, y)
        truth, proba = self._fit_split(X, labels, n, sample_weight, calibration,
                                       "predict_proba")
        self.classes_ = np.asarray(self.estimator_.classes_)
        position = np.searchsorted(self.classes_, truth)
        position = np.clip(position, 0, len(self.classes_) - 1)
        if not np.array_equal(self.classes_[position], truth):
            bad = truth[self.classes_[position] != truth][0]
            bad = bad.item() if hasattr(bad, "item") else bad
            raise ParameterError(f"calibration label {bad!r} is not among the classes "
                                 f"the model was trained on ({self.classes_.tolist()})")
        self.conformity_scores_ = np.sort(1.0 - proba[np.arange(len(truth)), position])
        return self

    def predict(self, X):
        """The model's predicted classes."""
        self._check_fitted()
        return self.estimator_.predict(X)

    def predict_set(self, X, alpha=0.1):
        """Boolean ``(n_rows, n_classes)``: the classes whose score ``1 - p_k`` is within
        the conformal quantile; the set holds the label with probability at least
        ``1 - alpha``."""
        self._check_fitted()
        alpha = _check_alpha(alpha)
        n = len(self.conformity_scores_)
        rank = self._rank_or_raise(n, alpha)
        q = self.conformity_scores_[rank - 1] if rank <= n else np.inf
        proba = np.asarray(self.estimator_.predict_proba(X), dtype=np.float64)
        return 1.0 - proba <= q


def _kth_smallest(values, k, beyond):
    """Each row's ``k``-th smallest value (1-based), ``beyond`` when ``k`` is outside
    ``1 .. n``."""
    if not 1 <= k <= values.shape[1]:
        return np.full(values.shape[0], beyond)
    return np.partition(values, k - 1, axis=1)[:, k - 1]


def _calibration_data(calibration):
    """``(X, labels)`` of a ``calibration=`` argument: a cache or an ``(X, y)`` pair."""
    if isinstance(calibration, Cache):
        labels, _ = calibration.read_labels()
        if labels is None or labels.ndim != 1:
            raise ParameterError(f"calibration cache {calibration.path} needs one label "
                                 f"column")
        return calibration, np.asarray(labels)
    if isinstance(calibration, tuple) and len(calibration) == 2:
        Xc, yc = calibration
        yc = np.asarray(yc)
        if yc.ndim != 1 or len(yc) != _n_rows(Xc):
            raise ParameterError(f"calibration y must be 1-D with one label per row of "
                                 f"its X ({_n_rows(Xc)}), got shape {yc.shape}")
        return Xc, yc
    raise ParameterError(f"calibration must be a Cache or an (X, y) pair, got "
                         f"{type(calibration).__name__}")


def _n_rows(X):
    shape = getattr(X, "shape", None)
    return int(shape[0]) if shape is not None else len(X)
