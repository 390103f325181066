"""Dask estimators, shaped as xgboost.dask's and lightgbm.dask's: ``fit`` takes Dask
DataFrames / Arrays (the shards are built from them) or a shard set, ``predict`` and
``predict_proba`` return Dask collections, each partition predicted where it lives.

The parameters, defaults and fitted attributes are :class:`oocboost.GradientBoostingClassifier`
and :class:`oocboost.GradientBoostingRegressor`'s (XGBoost's scikit-learn names), plus
the ``client`` attribute (default: the current client; set it as ``est.client =
client``, as in ``xgboost.dask``) and ``cache_dir`` (where the shards go; default a
temporary folder, removed after the fit; a real cluster needs shared storage).

Example
-------
>>> from oocboost.dask import DaskGradientBoostingClassifier          # doctest: +SKIP
>>> clf = DaskGradientBoostingClassifier(n_estimators=200)          # doctest: +SKIP
>>> clf.client = client                                               # doctest: +SKIP
>>> clf.fit(ddf[features], ddf["y"])                                  # doctest: +SKIP
>>> clf.predict_proba(ddf[features]).compute()                        # doctest: +SKIP
"""
import json
import os
import shutil
import tempfile

import numpy as np

from ..cache.shards import ShardSet
from ..errors import ParameterError
from ..learners.common.data import require_classes
from ..learners.forest.distributed import CHECKPOINT_TREES
from ..sklearn.boosting import (
    GradientBoostingClassifier,
    GradientBoostingRegressor,
)
from ..sklearn.forests import RandomForestClassifier, RandomForestRegressor
from .collective import DEFAULT_TIMEOUT
from .forest import _train_forest
from .shards import _client, build_cache
from .training import MAX_RESTARTS, train

_LABEL = "__oocboost_label__"


def _as_frame(X, y):
    """A Dask DataFrame of ``X``'s columns and ``y`` as the label column."""
    import dask.array as da
    import dask.dataframe as dd

    if isinstance(X, da.Array):
        X = dd.from_dask_array(X, columns=[f"f{j}" for j in range(X.shape[1])])
        y = dd.from_dask_array(y) if isinstance(y, da.Array) else y
        # from_dask_array numbers each collection's rows the same way: they align
        y = y.to_frame(_LABEL)[_LABEL] if hasattr(y, "to_frame") else y
    if not hasattr(X, "to_delayed"):
        raise ParameterError(f"X must be a Dask DataFrame or Array (or a shard set), got "
                             f"{type(X).__name__}")
    if y is None:
        raise ParameterError("y is required when X is a Dask collection")
    if X.npartitions != getattr(y, "npartitions", None):
        raise ParameterError(f"X has {X.npartitions} partitions and y "
                             f"{getattr(y, 'npartitions', None)}: split them alike")
    return X.assign(**{_LABEL: y})


class _DaskFit:
    """What the Dask estimators add to the in-memory ones."""

    @property
    def client(self):
        """The Dask client to train with (None: the current one). An attribute, not a
        parameter, as in ``xgboost.dask``: ``clone`` and ``get_params`` leave it out."""
        return getattr(self, "_client", None)

    @client.setter
    def client(self, value):
        self._client = value

    def __getstate__(self):
        # a pickled estimator (saved with pickle or joblib) has no client
        state = super().__getstate__()
        state.pop("_client", None)
        return state

    def _shards(self, X, y, client):
        """``(shard set, folder to remove or None)``."""
        if isinstance(X, ShardSet):
            return X, None
        if isinstance(X, (str, os.PathLike)):
            return ShardSet.load(X), None
        folder = tempfile.mkdtemp(prefix="oocboost-shards-", dir=self.cache_dir)
        try:
            shards = build_cache(_as_frame(X, y), folder, label=_LABEL,
                                 max_bin=self.max_bin, memory_limit=self.memory_limit,
                                 client=client)
        except BaseException:
            shutil.rmtree(folder, ignore_errors=True)
            raise
        return shards, folder

    def _dask_fit(self, shards, objective, extra, client):
        self.model_ = train(client, self._booster_params(objective, extra), shards,
                            self.n_estimators)
        self.n_features_in_ = self.model_.n_features
        self.feature_names_in_ = np.array(self.model_.feature_names, dtype=object)
        return self

    def _map(self, X, method, meta_columns=None):
        """The in-memory estimator's ``method`` over each partition (or row block) of
        ``X``. The fitted estimator travels as its parameters and its model's JSON (no
        pickle), which Dask also hashes to name the tasks."""
        import dask.array as da

        fitted = json.dumps({"params": self.get_params(), "model": self.model_.to_json_dict(),
                             "classes": getattr(self, "classes_", np.zeros(0)).tolist()},
                            default=str)
        kind = type(self).__name__
        if isinstance(X, da.Array):
            chunks = (X.chunks[0],) if meta_columns is None else \
                (X.chunks[0], (meta_columns,))
            return X.map_blocks(_predict_part, kind, fitted, method, dtype=np.float64,
                                chunks=chunks, drop_axis=1 if meta_columns is None else None)
        return X.map_partitions(_predict_part, kind, fitted, method,
                                meta=np.zeros((0,) if meta_columns is None
                                              else (0, meta_columns)))


def _predict_part(part, kind, fitted, method):
    """``method`` of the estimator ``kind`` rebuilt from :meth:`_DaskFit._map`'s JSON."""
    from ..model.model import Model

    doc = json.loads(fitted)
    estimator = _ESTIMATORS[kind](**doc["params"])
    estimator.model_ = Model.from_json_dict(doc["model"])
    estimator.n_features_in_ = estimator.model_.n_features
    estimator.feature_names_in_ = np.array(estimator.model_.feature_names, dtype=object)
    if doc["classes"]:
        estimator.classes_ = np.array(doc["classes"])
        estimator.n_classes_ = len(estimator.classes_)
    return getattr(estimator, method)(part)


def _is_dask(X):
    return hasattr(X, "dask") and hasattr(X, "compute")


class DaskGradientBoostingRegressor(_DaskFit, GradientBoostingRegressor):
    """:class:`oocboost.GradientBoostingRegressor` on a Dask cluster (module docstring)."""

    def fit(self, X, y=None):
        """Train on Dask collections (shards built in ``cache_dir``) or a shard set."""
        client = _client(self.client)
        shards, folder = self._shards(X, y, client)
        try:
            return self._dask_fit(shards, *self._cache_objective(None), client)
        finally:
            if folder is not None:
                shutil.rmtree(folder, ignore_errors=True)

    def predict(self, X, iteration_range=None, base_margin=None):
        """Predictions as a Dask collection with ``X``'s partitions (in-memory data:
        an array, as the in-memory estimator)."""
        self._check_fitted()
        if not _is_dask(X):
            return super().predict(X, iteration_range, base_margin)
        _no_dask_offsets(base_margin)
        return self._map(X, "predict")


class DaskGradientBoostingClassifier(_DaskFit, GradientBoostingClassifier):
    """:class:`oocboost.GradientBoostingClassifier` on a Dask cluster (module
    docstring). Labels must be the integers ``0 .. K-1`` (as in ``xgboost.dask``);
    ``classes_`` holds them."""

    def fit(self, X, y=None):
        """Train on Dask collections (shards built in ``cache_dir``) or a shard set."""
        client = _client(self.client)
        shards, folder = self._shards(X, y, client)
        try:
            self.classes_ = np.asarray(require_classes(shards))
            self.n_classes_ = len(self.classes_)
            self._dask_fit(shards, *self._objective_for(self.classes_), client)
        finally:
            if folder is not None:
                shutil.rmtree(folder, ignore_errors=True)
        self.model_.classes = self.classes_.tolist()
        self.model_.n_classes = self.n_classes_
        return self

    def predict_proba(self, X, iteration_range=None, base_margin=None):
        """Class probabilities as a Dask collection (n_rows, n_classes); in-memory data:
        an array, as the in-memory estimator."""
        self._check_fitted()
        if not _is_dask(X):
            return super().predict_proba(X, iteration_range, base_margin)
        _no_dask_offsets(base_margin)
        return self._map(X, "predict_proba", meta_columns=self.n_classes_)

    def predict(self, X, iteration_range=None, base_margin=None):
        """Most probable classes as a Dask collection (in-memory data: an array)."""
        self._check_fitted()
        if not _is_dask(X):
            return super().predict(X, iteration_range, base_margin)
        _no_dask_offsets(base_margin)
        return self._map(X, "predict")


def _no_dask_offsets(base_margin):
    if base_margin is not None:
        raise ParameterError("base_margin is taken for in-memory data; for a Dask "
                             "collection it is not offered yet (predict each partition "
                             "with the in-memory estimator's predict(X, base_margin=))")


class _DaskForest(_DaskFit):
    """What the Dask forests add to the in-memory ones: ``fit`` on Dask collections or
    a shard set through :func:`oocboost.dask.train_forest`."""

    def fit(self, X, y=None, sample_weight=None):
        """Grow the forest on Dask collections (shards built in ``cache_dir``) or a
        shard set. Classifier labels must be the integers ``0 .. K-1``."""
        if sample_weight is not None:
            raise ParameterError("sample_weight is not offered by the Dask forests yet: "
                                 "build the shards with a weight column (build_cache(..., "
                                 "weight=)) and fit on the shard set")
        if self.warm_start:
            raise ParameterError("warm_start is not offered by the Dask forests")
        client = _client(self.client)
        shards, folder = self._shards(X, y, client)
        params = self._learner_params()
        for name in ("cache_dir", "max_bin"):  # the shards' business
            params.pop(name)
        params["task"] = self._task
        try:
            self.model_, self.config_, _ = _train_forest(
                client, params, shards, self._n_trees(), self._learner.replace("_", "-"),
                CHECKPOINT_TREES, MAX_RESTARTS, DEFAULT_TIMEOUT)
        finally:
            if folder is not None:
                shutil.rmtree(folder, ignore_errors=True)
        if self._task == "classification":
            self.classes_ = np.asarray(self.model_.attributes["classes"])
            self.n_classes_ = len(self.classes_)
        self.n_features_in_ = self.model_.n_features
        self.feature_names_in_ = np.array(self.model_.feature_names, dtype=object)
        self.n_outputs_ = 1
        self._node_stats = None
        if self.config_.oob_score:
            # per-row out-of-bag predictions stay on the workers
            self.oob_score_ = self.model_.attributes["oob_score"]
        return self


class DaskRandomForestClassifier(_DaskForest, RandomForestClassifier):
    """:class:`oocboost.RandomForestClassifier` on a Dask cluster: the same parameters
    and forest (same seed: the same trees as on one machine on the concatenated data).
    Labels must be the integers ``0 .. K-1``; ``oob_score_`` is set with ``oob_score``,
    but not ``oob_decision_function_`` (per row, it stays on the workers)."""

    def predict_proba(self, X):
        """Class probabilities as a Dask collection (in-memory data: an array)."""
        self._check_fitted()
        if not _is_dask(X):
            return super().predict_proba(X)
        return self._map(X, "predict_proba", meta_columns=self.n_classes_)

    def predict(self, X):
        """Most probable classes as a Dask collection (in-memory data: an array)."""
        self._check_fitted()
        if not _is_dask(X):
            return super().predict(X)
        return self._map(X, "predict")


class DaskRandomForestRegressor(_DaskForest, RandomForestRegressor):
    """:class:`oocboost.RandomForestRegressor` on a Dask cluster (the same forest as
    on one machine on the concatenated data); no ``oob_prediction_``."""

    def predict(self, X):
        """Predictions as a Dask collection (in-memory data: an array)."""
        self._check_fitted()
        if not _is_dask(X):
            return super().predict(X)
        return self._map(X, "predict")


_ESTIMATORS = {"DaskGradientBoostingClassifier": DaskGradientBoostingClassifier,
               "DaskGradientBoostingRegressor": DaskGradientBoostingRegressor,
               "DaskRandomForestClassifier": DaskRandomForestClassifier,
               "DaskRandomForestRegressor": DaskRandomForestRegressor}
