"""Input checks of the estimators, with scikit-learn's messages where its tools look for
them (``check_estimator``): arrays are converted and checked as ``check_array`` does
(complex, sparse, empty, 1-D, object and infinite inputs refused with its wording), a
fitted estimator checks the column count, an unfitted one raises ``NotFittedError``.

Tables (pandas, Polars, pyarrow), caches and file paths are passed on unchanged: the
ingest layer reads them and names what is wrong.
"""
import warnings

import numpy as np

from ..errors import ParameterError

try:
    from sklearn.exceptions import DataConversionWarning as _DataConversionWarning
    from sklearn.exceptions import NotFittedError as _SkNotFittedError
    from sklearn.utils.multiclass import check_classification_targets
    from sklearn.utils.validation import check_array
except ImportError:  # scikit-learn is optional: plain NumPy checks
    _SkNotFittedError = AttributeError
    _DataConversionWarning = UserWarning
    check_array = check_classification_targets = None


class NotFittedError(ParameterError, _SkNotFittedError):
    """An estimator used before ``fit`` (scikit-learn's ``NotFittedError`` when installed,
    and an oocboost :class:`~oocboost.errors.ParameterError`)."""


def _is_passed_on(X):
    """Data the ingest layer reads itself: caches, tables, paths."""
    from ..cache.store import Cache

    return (isinstance(X, (Cache, str)) or hasattr(X, "columns")
            or hasattr(X, "column_names") or hasattr(X, "__fspath__"))


def as_matrix(X, name):
    """``X`` as a float64 (n_rows, n_features) array, NaN allowed, or scikit-learn's
    error for what it cannot be; tables, caches and paths unchanged."""
    if _is_passed_on(X):
        return X
    if type(X) is np.ndarray and X.dtype == np.float64 and X.ndim == 2 \
            and X.shape[0] and X.shape[1] and not np.isinf(X).any():
        # what check_array returns for it (a streaming learner's partial_fit on small
        # chunks spent a third of its call in check_array's general path)
        return X
    # SciPy sparse matrices stay sparse: the ingest layer and the predictor densify them
    # a block at a time (absent entries 0.0)
    sparse = ("csr", "csc", "coo")
    if check_array is not None:
        try:
            return check_array(X, dtype=np.float64, ensure_all_finite="allow-nan",
                               estimator=name, accept_sparse=sparse)
        except TypeError as exc:  # scikit-learn < 1.6 names it force_all_finite
            if "ensure_all_finite" not in str(exc):
                raise
            return check_array(X, dtype=np.float64, force_all_finite="allow-nan",
                               estimator=name, accept_sparse=sparse)
    from ..cache.ingest.memory import is_scipy_sparse

    if is_scipy_sparse(X):
        return X.tocsr().astype(np.float64)
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2:
        raise ParameterError(f"{name}: expected a 2-D array, got shape {X.shape}; "
                             f"reshape your data")
    if X.shape[0] == 0 or X.shape[1] == 0:
        raise ParameterError(f"{name}: found array with shape {X.shape}: no samples or "
                             f"features")
    return X


def fit_input(estimator, X, y, sample_weight, classifier):
    """``(X, y, sample_weight)`` checked for ``fit``; a Cache brings its own labels."""
    from ..cache.store import Cache

    name = type(estimator).__name__
    if isinstance(X, Cache):
        if y is not None:
            raise ParameterError("when X is a Cache its labels come from the cache: "
                                 "pass y=None")
        return X, y, sample_weight
    if y is None:
        raise ParameterError(f"{name} requires y to be passed, but the target y is None")
    X = as_matrix(X, name)
    y = np.asarray(y)
    if y.ndim == 2 and y.shape[1] == 1:
        warnings.warn("A column-vector y was passed when a 1d array was expected: it is "
                      "raveled", _DataConversionWarning, stacklevel=3)
        y = y.ravel()
    if classifier and check_classification_targets is not None:
        check_classification_targets(y)  # "Unknown label type" for continuous targets
    elif not classifier:
        y = np.asarray(y, dtype=np.float64)
        if not np.all(np.isfinite(y)):
            raise ParameterError(f"Input y contains NaN or infinity at row "
                                 f"{int(np.flatnonzero(~np.isfinite(y))[0])}: a regression "
                                 f"target must be finite")
    if sample_weight is not None:
        sample_weight = np.asarray(sample_weight, dtype=np.float64)
        if sample_weight.size and not np.any(sample_weight):
            raise ParameterError("sample_weight: every weight is zero; at least one must "
                                 "be positive")
    return X, y, sample_weight


def has_column_names(X):
    """True for data that names its columns: a Cache, or a pandas, Polars or pyarrow
    table with string column names."""
    from ..cache.store import Cache

    if isinstance(X, Cache):
        return True
    columns = getattr(X, "column_names", None)  # pyarrow (its .columns are the arrays)
    if columns is None:
        columns = getattr(X, "columns", None)  # pandas, Polars
    return columns is not None and all(isinstance(c, str) for c in columns)


def _warn_feature_names(estimator, X):
    """scikit-learn's warnings when the data to predict names its columns and the
    training data did not, or the reverse. Files and paths are read by their own
    column names: no warning; nor for a fit on a cache of unnamed columns (f0, f1...)."""
    if isinstance(X, str) or hasattr(X, "__fspath__"):
        return
    fitted = getattr(estimator, "feature_names_in_", None)
    fitted_named = fitted is not None and list(fitted) != [
        f"f{j}" for j in range(len(fitted))]
    named = has_column_names(X)
    name = type(estimator).__name__
    if fitted_named and not named:
        warnings.warn(f"X does not have valid feature names, but {name} was fitted with "
                      f"feature names", UserWarning, stacklevel=4)
    elif named and fitted is None:
        warnings.warn(f"X has feature names, but {name} was fitted without feature names",
                      UserWarning, stacklevel=4)


_PREDICTION = None


def prediction_module():
    """``oocboost.model.predict``, imported on the first prediction (it loads the
    prediction kernels, which importing the estimators does not) and kept: an import
    statement in a call costs a one-row prediction about a microsecond each."""
    global _PREDICTION
    if _PREDICTION is None:
        from ..model import predict as module

        _PREDICTION = module
    return _PREDICTION


def predict_input(estimator, X):
    """``X`` checked for prediction by a fitted estimator (NotFittedError otherwise);
    scikit-learn's warning when it names its columns and the training data did not, or
    the reverse."""
    if not hasattr(estimator, "model_"):
        raise NotFittedError(f"this {type(estimator).__name__} is not fitted yet: call fit "
                             f"before using this estimator")
    if type(X) is np.ndarray and X.dtype == np.float64 and X.ndim == 2 and X.shape[0] \
            and X.shape[1] == getattr(estimator, "n_features_in_", -1) \
            and getattr(estimator, "feature_names_in_", None) is None \
            and not np.isinf(X).any():
        # what the checks below return for it, without their steps (online serving's
        # one-row calls spent a third of predict_proba in them)
        return X
    _warn_feature_names(estimator, X)
    X = as_matrix(X, type(estimator).__name__)
    if not _is_passed_on(X) and X.shape[1] != estimator.n_features_in_:
        raise ParameterError(f"X has {X.shape[1]} features, but {type(estimator).__name__} "
                             f"is expecting {estimator.n_features_in_} features as input")
    return X
