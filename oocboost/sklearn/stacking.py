"""Stacking over a cache: base learners trained per fold from the cache (never copied:
each fold trains on it with its held-out rows weighted zero; gradient boosting grows all
folds in the same passes through :func:`oocboost.cv`), a final estimator trained on
their out-of-fold predictions, the base learners then refitted on every row.

The parameters are scikit-learn's ``StackingClassifier`` / ``StackingRegressor``'s, and
``cv=int`` gives its folds (``StratifiedKFold`` / ``KFold`` without shuffling, computed
from the labels alone). What differs: the base learners must be oocboost estimators
(they train from the cache), and ``passthrough`` needs raw features, so it is refused
when ``fit`` gets a cache (which holds bin codes).

Example
-------
>>> from sklearn.linear_model import LogisticRegression
>>> stack = oocboost.StackingClassifier(
...     [("gb", oocboost.GradientBoostingClassifier(n_estimators=200)),
...      ("rf", oocboost.RandomForestClassifier(n_estimators=100))],
...     final_estimator=LogisticRegression(), cv=5)                         # doctest: +SKIP
>>> stack.fit(oocboost.Cache("train.oocb")).predict_proba("test.csv")     # doctest: +SKIP
"""
import numpy as np

from ..errors import ParameterError
from ..learners.common.data import require_classes
from .base import ClassifierMixin, ParamsMixin, RegressorMixin, TrainingData
from .validation import NotFittedError, fit_input, has_column_names

try:
    from sklearn.base import TransformerMixin
except ImportError:  # scikit-learn is optional: fit_transform by hand
    class TransformerMixin:
        def fit_transform(self, X, y=None, **fit_params):
            return self.fit(X, y, **fit_params).transform(X)


def consecutive_folds(n_rows, nfold, labels=None):
    """The fold of every row (uint8) as scikit-learn's ``KFold(nfold)`` deals them, or
    with ``labels`` its ``StratifiedKFold(nfold)`` (both without shuffling), which its
    stacking uses for ``cv=int``: consecutive rows (of a class) share a fold, so a row of
    weight 2 falls in the fold its two copies would. Computed from the labels alone, no
    index lists (``n_rows`` bytes)."""
    fold = np.empty(n_rows, np.uint8)
    if labels is None:
        sizes = np.full(nfold, n_rows // nfold)
        sizes[:n_rows % nfold] += 1
        fold[:] = np.repeat(np.arange(nfold, dtype=np.uint8), sizes)
        return fold
    # classes numbered by first appearance; each class's rows, in order, are dealt to
    # the folds in the sizes a round-robin over the label-sorted rows gives
    _, first, inverse = np.unique(labels, return_index=True, return_inverse=True)
    encoded = np.argsort(np.argsort(first))[inverse.ravel()]
    ordered = np.sort(encoded)
    n_classes = len(first)
    allocation = np.stack([np.bincount(ordered[i::nfold], minlength=n_classes)
                           for i in range(nfold)])
    for k in range(n_classes):
        fold[encoded == k] = np.repeat(np.arange(nfold, dtype=np.uint8), allocation[:, k])
    return fold


def _clone(estimator):
    try:
        from sklearn.base import clone
    except ImportError:  # without scikit-learn: the same class with the same parameters
        return type(estimator)(**estimator.get_params(deep=False))
    return clone(estimator)


class _Stacking(ParamsMixin):
    def __init__(self, estimators, final_estimator=None, *, cv=5, stack_method="auto",
                 passthrough=False, memory_limit=None, cache_dir=None,
                 max_bin=256, verbose=0):
        self.estimators = estimators
        self.final_estimator = final_estimator
        self.cv = cv
        self.stack_method = stack_method
        self.passthrough = passthrough
        self.memory_limit = memory_limit
        self.cache_dir = cache_dir
        self.max_bin = max_bin
        self.verbose = verbose

    # ------------------------------------------------------------------ fitting
    def fit(self, X, y=None, sample_weight=None):
        """Fit the base learners per fold and on every row, and the final estimator on
        their out-of-fold predictions.

        Parameters
        ----------
        X : Cache, array, DataFrame or table
            A cache trains out of core (its labels and weights are used); other data is
            binned into a temporary cache first.
        y : array-like or None (a cache brings its labels)
        sample_weight : array-like or None
            Used by the base learners and passed to the final estimator's ``fit``.
        """
        from ..cache.store import Cache

        named = self._checked_estimators()
        X, y, sample_weight = fit_input(self, X, y, sample_weight,
                                        classifier=self._estimator_type == "classifier")
        if self.passthrough and isinstance(X, Cache):
            raise ParameterError("passthrough=True needs the raw features, and a cache "
                                 "holds bin codes: fit on the data itself, or leave "
                                 "passthrough off")
        data = TrainingData(self.cache_dir, self.memory_limit, self.max_bin)
        try:
            cache = data.cache(X, self._encode_y(y), sample_weight, "stack")
            labels, weights = cache.read_labels()
            if isinstance(X, Cache):
                self._set_classes_from_cache(cache)
            fold_of_row = self._folds(cache, labels)
            columns, self.estimators_, self.stack_method_ = [], [], []
            for name, est in named:
                method = self._method(name, est)
                oof = self._out_of_fold(est, cache, fold_of_row)
                columns.append(self._features(oof, method))
                self.estimators_.append(_clone(est).fit(cache))
                self.stack_method_.append(method)
            features = self._with_passthrough(np.column_stack(columns), X)
            self.final_estimator_ = _clone(self._final())
            fit_kw = {} if weights is None else {"sample_weight": weights}
            self.final_estimator_.fit(features, self._final_target(labels), **fit_kw)
        finally:
            data.close()
        self.named_estimators_ = dict(zip([n for n, _ in named], self.estimators_))
        first = self.estimators_[0]
        self.n_features_in_ = first.n_features_in_
        if has_column_names(X):
            self.feature_names_in_ = first.feature_names_in_
        elif hasattr(self, "feature_names_in_"):
            del self.feature_names_in_
        return self

    def _checked_estimators(self):
        named = [(n, e) for n, e in (self.estimators or ()) if e != "drop"]
        if not named:
            raise ParameterError("estimators must hold at least one (name, estimator) pair "
                                 "that is not 'drop'")
        for name, est in named:
            if not (hasattr(est, "model_") or type(est).__module__.startswith("oocboost")):
                raise ParameterError(f"estimator {name!r} is a {type(est).__name__}: "
                                     f"stacking over a cache needs oocboost estimators, "
                                     f"which train from the cache")
        return named

    def _folds(self, cache, labels):
        from ..learners.boosting.cv import folds_from_user

        n_splits = 5 if self.cv is None else self.cv
        if isinstance(n_splits, (int, np.integer)) and not isinstance(n_splits, bool):
            if not 2 <= n_splits <= 255:
                raise ParameterError(f"cv must be 2..255 folds, got {self.cv}")
            if cache.n_rows < n_splits:
                raise ParameterError(f"cv={self.cv} folds need at least {n_splits} rows, "
                                     f"got n_samples={cache.n_rows}")
            return consecutive_folds(cache.n_rows, int(n_splits), labels if
                                     self._estimator_type == "classifier" else None)
        return folds_from_user(self.cv, cache.n_rows, labels)[0]

    def _out_of_fold(self, est, cache, fold_of_row):
        """Each row's prediction by ``est`` trained on the other folds."""
        from ..cache.store.weighted import RowWeightedCache

        if hasattr(est, "_cross_val_predictions"):
            return est._cross_val_predictions(cache, fold_of_row)
        out = None
        for fold in range(int(fold_of_row.max()) + 1):
            model = _clone(est).fit(RowWeightedCache(cache, fold_of_row != fold))
            prediction = self._predict_base(model, cache)
            if out is None:
                out = np.empty_like(prediction)
            held = fold_of_row == fold
            out[held] = prediction[held]
        return out

    def _with_passthrough(self, features, X):
        if not self.passthrough:
            return features
        raw = np.asarray(X, dtype=np.float64)
        return np.column_stack([features, raw])

    def _final(self):
        if self.final_estimator is not None:
            return self.final_estimator
        try:
            from sklearn import linear_model
        except ImportError:
            raise ParameterError(f"final_estimator=None means scikit-learn's "
                                 f"{self._DEFAULT_FINAL}: install scikit-learn or pass an "
                                 f"estimator") from None
        return getattr(linear_model, self._DEFAULT_FINAL)()

    # ------------------------------------------------------------------ prediction
    def transform(self, X):
        """The base learners' predictions as the final estimator sees them."""
        if not hasattr(self, "estimators_"):
            raise NotFittedError(f"this {type(self).__name__} is not fitted yet: call fit "
                                 f"before using this estimator")
        columns = [self._features(self._predict_base(est, X), method)
                   for est, method in zip(self.estimators_, self.stack_method_)]
        return self._with_passthrough(np.column_stack(columns), X)

    def predict(self, X):
        """The final estimator's prediction from the base learners' predictions."""
        features = self.transform(X)
        return self._decode(self.final_estimator_.predict(features))


class StackingClassifier(ClassifierMixin, TransformerMixin, _Stacking):
    """Stacked classification over a cache (scikit-learn's ``StackingClassifier``
    parameters): base learners' class probabilities (``stack_method="auto"`` uses
    ``predict_proba``; two classes keep the positive column only, as scikit-learn does),
    out of fold, feed the final estimator (default: scikit-learn's
    ``LogisticRegression``)."""

    def _encode_y(self, y):
        if y is None:
            return None
        self.classes_, encoded = np.unique(np.asarray(y), return_inverse=True)
        return encoded.astype(np.float64)

    def _set_classes_from_cache(self, cache):
        self.classes_ = require_classes(cache)

    def _method(self, name, est):
        if self.stack_method not in ("auto", "predict_proba", "predict"):
            raise ParameterError(f"stack_method must be 'auto', 'predict_proba' or "
                                 f"'predict', got {self.stack_method!r}")
        return "predict" if self.stack_method == "predict" else "predict_proba"

    def _predict_base(self, est, X):
        return est.predict_proba(X)

    def _features(self, proba, method):
        if method == "predict":
            return np.argmax(proba, axis=1)[:, None].astype(np.float64)
        return proba[:, 1:] if proba.shape[1] == 2 else proba

    _DEFAULT_FINAL = "LogisticRegression"

    def _final_target(self, labels):
        return labels.astype(np.int64)

    def _decode(self, predicted):
        return self.classes_[np.asarray(predicted).astype(np.int64)]

    def predict_proba(self, X):
        """The final estimator's class probabilities (n_rows, n_classes)."""
        features = self.transform(X)
        return self.final_estimator_.predict_proba(features)

    def score(self, X, y, sample_weight=None):
        """Accuracy."""
        hit = (self.predict(X) == np.asarray(y)).astype(np.float64)
        return float(np.average(hit, weights=sample_weight))


class StackingRegressor(RegressorMixin, TransformerMixin, _Stacking):
    """Stacked regression over a cache (scikit-learn's ``StackingRegressor``
    parameters): the base learners' out-of-fold predictions feed the final estimator
    (default: scikit-learn's ``RidgeCV``)."""

    def _encode_y(self, y):
        return y

    def _set_classes_from_cache(self, cache):
        pass

    def _method(self, name, est):
        if self.stack_method not in ("auto", "predict"):
            raise ParameterError(f"stack_method must be 'auto' or 'predict' for a "
                                 f"regressor, got {self.stack_method!r}")
        return "predict"

    def _predict_base(self, est, X):
        return est.predict(X)

    def _features(self, prediction, method):
        return np.asarray(prediction, dtype=np.float64).reshape(len(prediction), -1)

    _DEFAULT_FINAL = "RidgeCV"

    def _final_target(self, labels):
        return labels.astype(np.float64)

    def _decode(self, predicted):
        return np.asarray(predicted, dtype=np.float64)

    def score(self, X, y, sample_weight=None):
        """R^2 of the predictions."""
        from ..model.metrics import get_metric

        return get_metric("r2")(np.asarray(y, np.float64), self.predict(X), sample_weight)
