"""The base every scikit-learn style estimator shares: parameters as constructor
arguments, scikit-learn's estimator protocol, and the temporary cache that ``fit`` builds
from arrays or DataFrames.

With scikit-learn installed (the ``sklearn`` extra, or any scikit-learn >= 1.4) the
estimators derive from its ``BaseEstimator``, ``ClassifierMixin`` and ``RegressorMixin``,
as XGBoost's and LightGBM's do: ``clone``, nested ``set_params``, tags, the HTML repr and
every model-selection tool then work. scikit-learn stays optional: training, prediction
and the command line never need it, and it brings SciPy (about 100 MB) into every
container or Dask worker. Without it the estimators keep ``get_params`` / ``set_params``
from the ``__init__`` signature and a plain repr.
"""
import inspect
import os
import shutil
import tempfile

import numpy as np

from ..errors import ParameterError
from .persistence import class_or_instance_method, load_estimator, save_estimator
from .validation import NotFittedError, has_column_names, predict_input

try:
    from sklearn.base import BaseEstimator as _Base
    from sklearn.base import ClassifierMixin as _ClassifierMixin
    from sklearn.base import RegressorMixin as _RegressorMixin
    HAVE_SKLEARN = True
except ImportError:  # the estimators work without scikit-learn, as plain classes
    HAVE_SKLEARN = False

    class _Base:
        """``get_params`` / ``set_params`` from the ``__init__`` signature, as
        scikit-learn's ``BaseEstimator`` has them (no nested parameters)."""

        @classmethod
        def _get_param_names(cls):
            sig = inspect.signature(cls.__init__)
            return sorted(p.name for p in sig.parameters.values()
                          if p.name != "self" and p.kind != p.VAR_KEYWORD)

        def get_params(self, deep=True):
            return {name: getattr(self, name) for name in self._get_param_names()}

        def set_params(self, **params):
            valid = self._get_param_names()
            for key, value in params.items():
                if key not in valid:
                    raise ValueError(f"Invalid parameter {key!r}")
                setattr(self, key, value)
            return self

        def __repr__(self):
            defaults = {p.name: p.default for p in
                        inspect.signature(type(self).__init__).parameters.values()}
            changed = [f"{k}={v!r}" for k, v in self.get_params().items()
                       if defaults.get(k, inspect.Parameter.empty) is not v
                       and defaults.get(k) != v]
            return f"{type(self).__name__}({', '.join(changed)})"

    class _ClassifierMixin:
        _estimator_type = "classifier"

    class _RegressorMixin:
        _estimator_type = "regressor"


#: Estimator arguments that are not a learner's parameters: they say how ``fit`` builds
#: its cache or runs, not what the learner does (tests/learners/test_param_specs.py).
NOT_LEARNER_PARAMS = {
    "n_estimators": "rounds or trees: train()'s num_boost_round, the command line's --rounds",
    "n_models": "river's name of an adaptive random forest's trees (the command line's "
                "--rounds)",
    "early_stopping_rounds": "train()'s argument, the command line's --early-stopping",
    "max_bin": "codes per feature of the cache fit builds (build-cache --max-bin)",
    "cat_encoding": "how fit's cache encodes categories (build-cache --cat-encoding)",
    "ts_combinations": "fit's cache's ordered-TS pairs of columns (build-cache "
                       "--ts-combinations)",
    "cache_dir": "where fit builds its temporary cache",
    "memory_limit": "peak memory of the run (train()'s and --memory-limit)",
    "reference": "the cache whose bins fit's cache takes (build-cache --reference)",
    "batch_rows": "rows per batch when partial_fit or fit streams arrays",
    "warm_start": "scikit-learn's: the next fit adds trees to these",
    "estimator": "scikit-learn's: the weak learner, a template of our tree estimators",
    "bootstrap_features": "bagging's: each tree's features drawn with replacement",
    "verbose": "scikit-learn's progress switch",
}


class ParamsMixin(_Base):
    """The base of every oocboost estimator: scikit-learn's ``BaseEstimator`` (when
    installed) with oocboost's tags and errors.

    Tags: NaN is a value like any other (missing values go the learned way), and ``fit``
    also takes a :class:`~oocboost.cache.store.Cache`, whose labels come from the cache.
    """

    def set_params(self, **params):
        """Set parameters (``estimator__max_depth`` for a nested estimator); an unknown
        name raises :class:`~oocboost.errors.ParameterError` listing the valid ones."""
        try:
            return super().set_params(**params)
        except ValueError as exc:
            if isinstance(exc, ParameterError):
                raise
            raise ParameterError(f"invalid parameter for {type(self).__name__}: {exc}; "
                                 f"valid: {sorted(self.get_params(deep=False))}") from None

    def _check_fitted(self):
        if not hasattr(self, "model_"):
            raise NotFittedError(f"this {type(self).__name__} is not fitted yet: call fit "
                                 f"before using this estimator")

    def save_model(self, path, **options):
        """Write the fitted model as a JSON model file (``oocboost.load_model`` and every
        CLI command read it), atomically, with this estimator (its class, parameters and
        fitted attributes such as ``classes_``) in the model's ``attributes``, for
        :meth:`load_model`."""
        save_estimator(self, path, **options)

    @class_or_instance_method
    def load_model(cls, self, path, memory_limit=None):
        """A fitted estimator from a model file: ``Estimator.load_model(path)`` returns a
        new one, ``est.load_model(path)`` (XGBoost's spelling) loads into ``est`` and
        returns it. A file written by :meth:`save_model` restores the parameters and
        fitted attributes; any other model file (``oocboost train``, ``Model.save_model``)
        gives ``classes_`` (classifiers), ``n_features_in_`` and, for named features,
        ``feature_names_in_`` from the model. ModelError for a file saved by another
        estimator class, naming it.

        Parameters
        ----------
        path : str or os.PathLike
        memory_limit : int, str or None
            As :func:`oocboost.load_model`'s.
        """
        loaded = load_estimator(cls, path, memory_limit=memory_limit)
        if self is None:
            return loaded
        self.__dict__.clear()
        self.__dict__.update(loaded.__dict__)
        return self

    def _adopt_model(self, model):
        """Become fitted with ``model`` (:meth:`load_model`)."""
        self.model_ = model

    def get_booster(self):
        """The fitted :class:`~oocboost.model.model.Model` (XGBoost's ``get_booster``):
        save it, export it (``Model.export``), predict or explain with it directly."""
        self._check_fitted()
        return self.model_

    def predict_contributions(self, X, iteration_range=None, interactions=False):
        """SHAP values of the margin (exact path-dependent Tree SHAP), bias last; rows sum
        to the margin. ``X``: an array, a DataFrame (categories as strings), a file or a
        cache binned with the training edges. ``interactions``: SHAP interaction values
        (one more trailing axis of n_features + 1).

        Returns
        -------
        ndarray (n_rows, n_features + 1), or (n_rows, n_outputs, n_features + 1)
        """
        from ..model.predict import predict

        X = predict_input(self, X)
        if hasattr(self, "_iteration_range"):  # boosting: the best iteration by default
            iteration_range = self._iteration_range(iteration_range)
        return predict(self.model_, X, iteration_range=iteration_range,
                       pred_contribs=not interactions, pred_interactions=interactions)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        tags.input_tags.sparse = True   # SciPy sparse X: densified a block at a time
        return tags

    def _more_tags(self):
        # scikit-learn < 1.6 reads tags from here
        return {"allow_nan": True}


def set_feature_attributes(estimator, X):
    """``n_features_in_`` and, as scikit-learn sets it, ``feature_names_in_`` only when
    the training data named its columns (a DataFrame, a pyarrow or Polars table, or a
    Cache); a NumPy array leaves it unset, and any earlier fit's is removed. Both count
    the columns read from the data, not the derived ordered-TS features."""
    from ..model.raw_input import input_names

    inputs = input_names(estimator.model_)
    estimator.n_features_in_ = len(inputs)
    if has_column_names(X):
        estimator.feature_names_in_ = np.array(inputs, dtype=object)
    elif hasattr(estimator, "feature_names_in_"):
        del estimator.feature_names_in_


def importances_per_input(model, importances):
    """Per-feature ``importances`` (n_features,) as one per column read from the data
    (``n_features_in_``): a derived ordered-TS feature's (per class, a pair of columns)
    is shared equally by the columns it is computed from."""
    from ..model.raw_input import input_names

    importances = np.asarray(importances, dtype=np.float64)
    inputs = input_names(model)
    if len(inputs) == model.n_features:
        return importances
    position = {name: k for k, name in enumerate(inputs)}
    out = np.zeros(len(inputs))
    features = (model.bin_mapper or {}).get("features") or []
    for f, name in enumerate(model.feature_names):
        sources = (features[f].get("encoder") or {}).get("sources", [name])
        for source in sources:
            out[position[source]] += importances[f] / len(sources)
    return out


class ClassifierMixin(_ClassifierMixin):
    """scikit-learn's ``ClassifierMixin`` (``is_classifier``, the classifier tags)."""

    # what oocboost reads (scikit-learn >= 1.6 keeps it in the tags only)
    _estimator_type = "classifier"


class RegressorMixin(_RegressorMixin):
    """scikit-learn's ``RegressorMixin`` (``is_regressor``, the regressor tags)."""

    _estimator_type = "regressor"


class TrainingData:
    """Turns estimator inputs into caches; removes temporary caches when closed."""

    def __init__(self, cache_dir=None, memory_limit=None, max_bin=256, block_rows=None,
                 cat_encoding="native", ts_options=None):
        self.cache_dir = cache_dir
        self.memory_limit = memory_limit
        self.max_bin = max_bin
        self.block_rows = block_rows
        self.cat_encoding = cat_encoding
        #: ``build_cache``'s ts_* arguments with ``cat_encoding="ordered_ts"``
        self.ts_options = dict(ts_options or {})
        self._tmp = None

    def _folder(self):
        if self._tmp is None:
            self._tmp = tempfile.mkdtemp(prefix="oocboost-fit-", dir=self.cache_dir)
        return self._tmp

    def cache(self, X, y, sample_weight=None, name="train", reference=None, group=None,
              base_margin=None, split_points=None):
        from ..cache.build import build_cache
        from ..cache.store import Cache

        if isinstance(X, Cache):
            if y is not None:
                raise ParameterError("when X is a Cache its labels come from the cache: "
                                     "pass y=None")
            if base_margin is not None:
                raise ParameterError("when X is a Cache its base margins come from the "
                                     "cache: build it with base_margin=")
            return X
        if y is None:
            raise ParameterError("y is required when X is not a Cache")
        y = np.asarray(y, dtype=np.float64)
        if y.ndim not in (1, 2) or len(y) != _n_rows(X):
            raise ParameterError(f"y must be 1-D (or 2-D: one column per target) with one "
                                 f"row per row of X ({_n_rows(X)}), got shape {y.shape}")
        if sample_weight is not None:
            sample_weight = np.asarray(sample_weight, dtype=np.float64)
            if sample_weight.shape != y.shape[:1]:
                raise ParameterError(f"sample_weight must hold one weight per row "
                                     f"({len(y)}), got shape {sample_weight.shape}")
        import os

        return build_cache(X, os.path.join(self._folder(), name), label=y,
                           weight=sample_weight, max_bin=self.max_bin, quiet=True,
                           block_rows=self.block_rows,
                           memory_limit=self.memory_limit, reference=reference,
                           overwrite=True, group=group, base_margin=base_margin,
                           split_points=split_points,
                           cat_encoding="native" if reference is not None
                           else self.cat_encoding,
                           **(self.ts_options if reference is None
                              and self.cat_encoding == "ordered_ts" else {}))

    def close(self):
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None


def _n_rows(X):
    shape = getattr(X, "shape", None)
    if shape is not None:
        return int(shape[0])
    num_rows = getattr(X, "num_rows", None)
    if num_rows is not None:
        return int(num_rows)
    return len(X)


def continued_model(init_model, xgb_model, classes=None):
    """The model ``fit`` continues from: ``init_model`` (LightGBM's name) or
    ``xgb_model`` (XGBoost's), each a ``Model``, a fitted estimator or a model file's
    path; None for neither. ``classes``: the classifier's, which the model's must be."""
    from ..model.model import Model, load_model

    if init_model is not None and xgb_model is not None:
        raise ParameterError("init_model and xgb_model name the same model: give one")
    given = init_model if init_model is not None else xgb_model
    if given is None:
        return None
    if hasattr(given, "get_booster"):
        given = given.get_booster()
    if isinstance(given, (str, os.PathLike)):
        given = load_model(given)
    if not isinstance(given, Model):
        raise ParameterError(f"init_model must be a Model, a fitted estimator or a model "
                             f"file's path, got {type(given).__name__}")
    if classes is not None and given.classes is not None and \
            list(given.classes) != np.asarray(classes).tolist():
        raise ParameterError(f"init_model was trained on the classes {given.classes}, "
                             f"not {np.asarray(classes).tolist()}")
    return given


def edges_of(model, folder):
    """The bin edges a cache of new rows must have for ``model`` to continue on it
    (``TrainingData.cache`` keywords): the model's own edges, or, for an imported model
    with none, edges holding its split points."""
    if model is None:
        return {}
    if model.bin_mapper is None:
        return {"split_points": model}
    from ..cache.binning import BinMapper
    from ..cache.shards import EdgesReference

    features = [{"name": n, "type": t} for n, t in zip(model.feature_names,
                                                       model.feature_types)]
    return {"reference": EdgesReference(BinMapper.from_dict(model.bin_mapper), features,
                                        os.path.join(folder, "init_model"))}
