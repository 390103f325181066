"""Hoeffding trees as scikit-learn incremental estimators, with river's parameter names.

``fit`` learns a whole dataset in one streamed pass (arrays through a temporary cache,
or a :class:`~oocboost.cache.store.Cache`); ``partial_fit`` learns one more chunk, as
scikit-learn's incremental estimators (``classes=`` on the first call of a classifier).
Predictions go through the same model and predictor as every learner (``model_``, saved
with ``save_model``).

Bins for ``partial_fit``: from ``reference`` (a Cache or cache path whose bins to use)
when given, else from the first chunk: ``max_bin`` quantile bins of its values (a bin
per distinct value when it has fewer), the rule of ``build-cache``; later values
outside the first chunk's range fall in the first or last bin. Give a first chunk of a
few thousand rows or more, or a reference cache, for bins that resolve the data.

Where we differ from river, all from learning a block of rows at a time on binned data:
splits are binary (river splits a nominal feature multiway) at bin edges (river's
Gaussian splitter tries 10 points between the class means); the rows of a chunk all
reach the leaves the tree had when the chunk began (river may split between two rows),
which with chunks of more than ``grace_period`` rows delays the first splits; naive
Bayes leaves read their per-bin class counts (a Gaussian per class for numeric
features, as river's, fitted to bin midpoints).

Example
-------
>>> from oocboost import HoeffdingTreeClassifier                         # doctest: +SKIP
>>> clf = HoeffdingTreeClassifier(grace_period=200, delta=1e-7)         # doctest: +SKIP
>>> for X, y in chunks:                                                  # doctest: +SKIP
...     clf.partial_fit(X, y, classes=[0, 1])
>>> clf.predict_proba(X_test)[:2]                                        # doctest: +SKIP
"""
import numpy as np

from ..errors import ParameterError
from ..learners.hoeffding.config import resolve_config
from ..learners.hoeffding.export import hoeffding_model
from ..learners.hoeffding.stream import Prequential, learn_cache, learn_rows, new_learners
from .base import ClassifierMixin, ParamsMixin, RegressorMixin, TrainingData, _n_rows
from .validation import NotFittedError, as_matrix, fit_input, predict_input

#: Rows a block is planned with when a saved tree is restored (the data to come is not
#: known yet; only a memory_limit makes the plan matter).
_RESTORE_BLOCK_ROWS = 1 << 16
#: Parameters handed to ``learners.hoeffding.config.resolve_config``.
_TREE_PARAMS = ("grace_period", "max_depth", "delta", "tau", "leaf_prediction",
                "merit_preprune", "max_leaves", "memory_limit")


class _HoeffdingBase(ParamsMixin):
    _task = None
    _extra_params = ()
    _learner_name = "hoeffding_tree"

    def _n_trees(self):
        return 1

    def _draws(self, model=None):
        """Per-tree row copies ``(row_start, n_rows) -> (n_trees, n_rows)``, or None
        (``model``: the one being continued)."""
        return None

    def _ensemble(self):
        """What learns each batch in place of the trees one by one (an adaptive
        forest's drift handling), or None."""
        return None

    def _tree_weights(self):
        """The trees' votes in the model (None: equal)."""
        return None

    def _aggregation(self):
        """How the model combines its trees."""
        return "mean"

    # ------------------------------------------------------------------ state
    def _config(self, n_classes):
        names = _TREE_PARAMS + self._extra_params
        return resolve_config(self._task, n_classes,
                              **{k: getattr(self, k) for k in names})

    def _make_learners(self, mapper, block_rows, code_bytes_per_row):
        """The trees that will learn (``_config_`` and ``_row_draws`` are set)."""
        return new_learners(self._config_, mapper, self._n_trees(), block_rows=block_rows,
                            code_bytes_per_row=code_bytes_per_row, prefetch=self.prefetch)

    def _start(self, mapper, n_classes, feature_names, block_rows, code_bytes_per_row):
        self._config_ = self._config(n_classes)
        self._row_draws = self._draws()
        self._learners = self._make_learners(mapper, block_rows, code_bytes_per_row)
        self._mapper = mapper
        self.feature_names_in_ = np.asarray(feature_names, dtype=object)
        self.n_features_in_ = len(feature_names)
        self._score = Prequential(self._task == "classification")
        self._exported = {}

    def _reset(self):
        for name in ("_learners", "_exported", "_mapper", "classes_", "n_features_in_",
                     "feature_names_in_", "_score", "_row_draws"):
            self.__dict__.pop(name, None)

    @property
    def model_(self):
        """The tree as a :class:`~oocboost.model.model.Model` (exported when asked)."""
        if "_learners" not in self.__dict__:
            raise AttributeError("model_")
        # exported on first use after learning, kept in a dict made by fit so that
        # predicting leaves the estimator's attributes as they were
        if "model" not in self._exported:
            classes = getattr(self, "classes_", None)
            self._exported["model"] = hoeffding_model(
                self._learners, list(self.feature_names_in_),
                learner_name=self._learner_name, tree_weight=self._tree_weights(),
                aggregation=self._aggregation(),
                classes=None if classes is None else [c.item() if hasattr(c, "item") else c
                                                      for c in classes],
                params={k: v for k, v in self.get_params().items()
                        if isinstance(v, (int, float, str, bool, type(None)))},
                attributes={"prequential": self._score.scores(),
                            "prequential_weight": self._score.weight,
                            "rows_seen": self._rows_seen(),
                            **({"seed": int(self.seed_)} if hasattr(self, "seed_")
                               else {})})
        return self._exported["model"]

    def _check_fitted(self):
        # not hasattr(self, "model_"): that would export the whole tree (its naive Bayes
        # tables and learning state, copies of every histogram) just to check
        if "_learners" not in self.__dict__:
            raise NotFittedError(f"this {type(self).__name__} is not fitted yet: call fit "
                                 f"before using this estimator")

    @property
    def prequential_score_(self):
        """Test-then-train scores over every row learned so far (dict)."""
        self._check_fitted()
        return self._score.scores()

    @property
    def n_leaves_(self):
        self._check_fitted()
        return int(self._learners[0].tree.leaves().size)

    @property
    def n_active_leaves_(self):
        """Leaves collecting split statistics (holding a histogram)."""
        self._check_fitted()
        tree = self._learners[0].tree
        return int(np.count_nonzero(tree.slot[tree.leaves()] >= 0))

    def save_model(self, path, state=True):
        """Write ``model_`` as a JSON model file (temporary file, then rename); with
        ``state`` (default) it keeps what ``fit(init_model=...)`` needs to go on
        learning (``model/stream_state.py``: the active leaves' histograms)."""
        from .persistence import save_estimator

        save_estimator(self, path, state=state)

    def _adopt_model(self, model):
        self._restore(model)

    # ------------------------------------------------------------------ learning
    def _labels(self, y, first):
        return np.asarray(y, dtype=np.float64)

    def fit(self, X, y=None, sample_weight=None, init_model=None):
        """Learn ``X`` in one streamed pass, from scratch or from ``init_model``.

        Parameters
        ----------
        X : array-like (n_rows, n_features), DataFrame, or Cache
        y : array-like (n_rows,), or None with a Cache
        sample_weight : array-like (n_rows,) or None
        init_model : Model, model file or None
            A model this estimator saved (with its learning state): learning goes on
            from it, with this estimator's parameters, on rows binned with its bins
            (numeric arrays, or caches built with the same edges).

        Returns
        -------
        self
        """
        from ..cache.store import Cache

        self._reset()
        if init_model is not None:
            self._restore(init_model)
            return self.partial_fit(X, y, sample_weight=sample_weight)
        classification = self._task == "classification"
        X, y, sample_weight = fit_input(self, X, y, sample_weight, classifier=classification)
        data = TrainingData(self.cache_dir, self.memory_limit, self.max_bin)
        try:
            if isinstance(X, Cache):
                cache = data.cache(X, None)
                n_classes = self._cache_classes(cache)
            else:
                y_code, n_classes = self._fit_labels(y)
                cache = data.cache(X, y_code, sample_weight)
            self._start(cache.bin_mapper, n_classes, list(cache.feature_names),
                        cache.block_rows, cache.code_bytes_per_row)
            self._score = learn_cache(self._learners, cache, prefetch=self.prefetch,
                                      evaluate=True, draws=self._row_draws,
                                      batch_rows=self._batch_rows(),
                                      ensemble=self._ensemble())
        finally:
            data.close()
        return self

    def partial_fit(self, X, y=None, classes=None, sample_weight=None):
        """Learn one more chunk of rows (or a whole Cache binned as the first).

        Parameters
        ----------
        X : array-like (n_rows, n_features), DataFrame / Arrow table (categories as
            strings), or Cache
        y : array-like (n_rows,), or None with a Cache
        classes : array-like, required on a classifier's first call
            Every class label the stream will hold (scikit-learn's rule).
        sample_weight : array-like (n_rows,) or None

        Returns
        -------
        self
        """
        from ..cache.store import Cache

        first = "_learners" not in self.__dict__
        if first:
            self._first_chunk(X, y, classes)
        elif classes is not None and self._task == "classification" and \
                not np.array_equal(np.sort(np.asarray(classes)), self.classes_):
            raise ParameterError(f"classes={list(classes)} differs from the classes of "
                                 f"the first partial_fit call {list(self.classes_)}")
        if isinstance(X, Cache):
            if y is not None or sample_weight is not None:
                raise ParameterError("when X is a Cache its labels and weights come from "
                                     "the cache: pass y=None and sample_weight=None")
            if X.bin_mapper != self._mapper:
                raise ParameterError(f"cache {X.path} is not binned with the bins this "
                                     f"estimator learns on (build it with reference=)")
            self._merge_score(learn_cache(self._learners, X, prefetch=self.prefetch,
                                          evaluate=True, draws=self._row_draws,
                                          row_offset=self._rows_seen(),
                                          batch_rows=self._batch_rows(),
                                          ensemble=self._ensemble()))
        else:
            codes, n_rows = self._chunk_codes(as_matrix(X, type(self).__name__))
            y_code = self._chunk_labels(y, n_rows)
            w = self._chunk_weights(sample_weight, n_rows)
            learn_rows(self._learners, codes, y_code, w, self._score, self._row_draws,
                       row_start=self._rows_seen(), batch_rows=self._batch_rows(),
                       ensemble=self._ensemble())
        self._exported.clear()     # the next model_ exports the grown tree
        return self

    def _restore(self, init_model):
        from ..learners.hoeffding.state import restore_learners
        from ..learners.hoeffding.stream import Prequential
        from ..model.model import Model, load_model

        model = init_model if isinstance(init_model, Model) else load_model(init_model)
        n_classes = 0
        if self._task == "classification":
            if not model.classes:
                raise ParameterError("init_model has no classes: it is not a classifier's")
            self.classes_ = np.asarray(model.classes)
            n_classes = len(self.classes_)
        if model.n_trees != self._n_trees():
            raise ParameterError(f"init_model has {model.n_trees} trees; this estimator "
                                 f"grows {self._n_trees()}")
        self._config_ = self._config(n_classes)
        self._learners = restore_learners(
            model, self._config_, block_rows=_RESTORE_BLOCK_ROWS,
            code_bytes_per_row=2 * model.n_features, prefetch=self.prefetch,
            learner_name=self._learner_name)
        self._mapper = model.mapper()
        self.feature_names_in_ = np.asarray(model.feature_names, dtype=object)
        self.n_features_in_ = model.n_features
        self._score = Prequential(self._task == "classification")
        weight = float(model.attributes.get("prequential_weight") or 0.0)
        self._score.weight = weight
        self._score.sums = {k: v * weight for k, v in
                            (model.attributes.get("prequential") or {}).items()}
        self._row_draws = self._draws(model)
        self._exported = {}

    def _rows_seen(self):
        """Rows of the stream learned so far (the copies' row counter)."""
        return int(self._learners[0].rows_seen)

    def _batch_rows(self):
        from ..learners.common.validate import int_param

        return int_param("batch_rows", self.batch_rows, 1, allow_none=True)

    def _merge_score(self, score):
        for k, v in score.sums.items():
            self._score.sums[k] = self._score.sums.get(k, 0.0) + v
        self._score.weight += score.weight

    def _first_chunk(self, X, y, classes):
        from ..cache.store import Cache

        n_classes = 0
        if self._task == "classification":
            if classes is None:
                raise ParameterError("classes must be passed on the first call to "
                                     "partial_fit (every label the stream will hold)")
            self.classes_ = np.unique(np.asarray(classes))
            if len(self.classes_) < 2:
                raise ParameterError(f"classes must hold at least two labels, got "
                                     f"{list(classes)}")
            n_classes = len(self.classes_)
        reference = self.reference
        if reference is None and isinstance(X, Cache):
            reference = X
        if reference is not None:
            ref = reference if isinstance(reference, Cache) else Cache(reference)
            self._start(ref.bin_mapper, n_classes, list(ref.feature_names), ref.block_rows,
                        ref.code_bytes_per_row)
            return
        X = as_matrix(X, type(self).__name__)
        data = TrainingData(self.cache_dir, self.memory_limit, self.max_bin)
        try:
            cache = data.cache(X, np.zeros(_n_rows(X)))
            self._start(cache.bin_mapper, n_classes, list(cache.feature_names),
                        cache.block_rows, cache.code_bytes_per_row)
        finally:
            data.close()

    def _chunk_codes(self, X):
        """``(codes, n_rows)`` of a chunk: a numeric array, or a table (pandas, Polars,
        Arrow; categories as strings) with the first chunk's columns."""
        if isinstance(X, np.ndarray):
            if X.shape[1] != self.n_features_in_:
                raise ParameterError(f"X has {X.shape[1]} features, but "
                                     f"{type(self).__name__} is expecting "
                                     f"{self.n_features_in_} features as input")
            return self._mapper.transform_numeric(X), X.shape[0]
        from ..cache.ingest import open_source

        mapper = self._mapper
        cats = [n for n, t in zip(mapper.feature_names, mapper.feature_types)
                if t != "numeric"]
        source = open_source(X, categorical=cats or None)
        if list(source.feature_names) != list(mapper.feature_names):
            raise ParameterError(f"the chunk's columns {list(source.feature_names)} differ "
                                 f"from the first chunk's {list(mapper.feature_names)}")
        codes = [mapper.transform_batch(batch) for batch in source.batches()]
        codes = np.concatenate(codes, axis=1) if codes else np.zeros(
            (mapper.n_features, 0), mapper.codes_dtype)
        return codes, codes.shape[1]

    def _chunk_weights(self, sample_weight, n):
        if sample_weight is None:
            return np.ones(n)
        w = np.asarray(sample_weight, dtype=np.float64).reshape(-1)
        if w.shape != (n,) or not np.all(np.isfinite(w)) or np.any(w < 0):
            raise ParameterError(f"sample_weight must hold {n} finite weights >= 0")
        return w

    # ------------------------------------------------------------------ prediction
    def _raw_predict(self, X):
        from ..model.predict import predict

        X = predict_input(self, X)
        return predict(self.model_, X)


class HoeffdingTreeClassifier(ClassifierMixin, _HoeffdingBase):
    """Hoeffding tree classifier (VFDT), or the Extremely Fast Decision Tree with
    ``split_revision=True``; river's names and defaults.

    Parameters
    ----------
    grace_period : float, default 200
        Weight a leaf sees between split attempts.
    max_depth : int or None
    split_criterion : {"info_gain", "gini"}
    delta : float, default 1e-7
        Significance of the Hoeffding bound (split when the best two merits differ by
        more than ``sqrt(R^2 ln(1/delta) / 2n)``).
    tau : float, default 0.05
        Split anyway when the bound falls below it (a tie).
    leaf_prediction : {"nba", "mc", "nb"}
        Majority class, naive Bayes, or the one that has predicted better at each leaf.
    nb_threshold : float, default 0
        Weight a leaf needs before it predicts by naive Bayes.
    min_branch_fraction, max_share_to_split, merit_preprune : river's split rules.
    split_revision : bool, default False
        EFDT (Hoeffding Anytime Tree): split as soon as the best split beats not
        splitting, and re-evaluate split nodes every ``min_samples_reevaluate`` weight,
        replacing a split whose feature is beaten.
    min_samples_reevaluate : float, default 20
    max_leaves : int or None
        Leaves collecting split statistics at most (others predict, and wait).
    memory_limit : str or int or None
        Peak RSS (e.g. "512MB") within which the histograms are kept; None: 256 MiB of
        histograms.
    max_bin, cache_dir, prefetch : binning of ``fit``'s arrays, temporary caches, blocks
        read ahead.
    reference : Cache or path or None
        Bins for ``partial_fit``'s arrays (else the first chunk's).
    batch_rows : int or None
        Rows learned at a time; None (default) ends each batch when the first leaf is
        expected to be due for a split attempt (``learners/hoeffding/batches.py``:
        ``grace_period`` rows while the root takes every row, up to 8192 later).
    """
    _DEFAULTS_DIFFER = {"leaf_prediction": "river's classifier default, nba"}

    _task = "classification"
    _extra_params = ("split_criterion", "nb_threshold", "min_branch_fraction",
                     "max_share_to_split", "split_revision", "min_samples_reevaluate")

    def __init__(self, grace_period=200, max_depth=None, split_criterion="info_gain",
                 delta=1e-7, tau=0.05, leaf_prediction="nba", nb_threshold=0,
                 min_branch_fraction=0.01, max_share_to_split=0.99, merit_preprune=True,
                 split_revision=False, min_samples_reevaluate=20, max_leaves=None,
                 memory_limit=None, max_bin=256, cache_dir=None, prefetch=None,
                 reference=None, batch_rows=None):
        self.batch_rows = batch_rows
        self.grace_period = grace_period
        self.max_depth = max_depth
        self.split_criterion = split_criterion
        self.delta = delta
        self.tau = tau
        self.leaf_prediction = leaf_prediction
        self.nb_threshold = nb_threshold
        self.min_branch_fraction = min_branch_fraction
        self.max_share_to_split = max_share_to_split
        self.merit_preprune = merit_preprune
        self.split_revision = split_revision
        self.min_samples_reevaluate = min_samples_reevaluate
        self.max_leaves = max_leaves
        self.memory_limit = memory_limit
        self.max_bin = max_bin
        self.cache_dir = cache_dir
        self.prefetch = prefetch
        self.reference = reference

    def _cache_classes(self, cache):
        from ..learners.common.data import cache_classes

        classes = cache_classes(cache)
        if classes is None or len(classes) < 2:
            raise ParameterError(f"cache {cache.path}: labels must be class indices "
                                 f"0..K-1 with K >= 2")
        self.classes_ = np.asarray(classes)
        return len(classes)

    def _fit_labels(self, y):
        y = np.asarray(y)
        if y.ndim != 1:
            raise ParameterError(f"y must be 1-D, got shape {y.shape}")
        self.classes_, y_code = np.unique(y, return_inverse=True)
        if len(self.classes_) < 2:
            raise ParameterError(f"y has 1 class ({list(self.classes_)}); "
                                 f"classification needs at least two")
        return y_code.astype(np.float64), len(self.classes_)

    def _chunk_labels(self, y, n):
        if y is None:
            raise ParameterError("y is required when X is not a Cache")
        y = np.asarray(y).reshape(-1)
        if y.shape != (n,):
            raise ParameterError(f"y must hold one label per row ({n}), got {y.shape}")
        pos = np.searchsorted(self.classes_, y)
        pos = np.minimum(pos, len(self.classes_) - 1)
        bad = self.classes_[pos] != y
        if bad.any():
            raise ParameterError(f"y holds label {y[np.flatnonzero(bad)[0]]!r} at row "
                                 f"{int(np.flatnonzero(bad)[0])}, not among the classes "
                                 f"{list(self.classes_)} of the first partial_fit call")
        return pos.astype(np.float64)

    def predict_proba(self, X):
        """(n_rows, n_classes) class probabilities, columns in ``classes_`` order."""
        return self._raw_predict(X)

    def predict(self, X):
        """Most probable class label of each row."""
        proba = self.predict_proba(X)
        return self.classes_[np.argmax(proba, axis=1)]


class HoeffdingTreeRegressor(RegressorMixin, _HoeffdingBase):
    """Hoeffding tree regressor (river's ``HoeffdingTreeRegressor`` with
    ``leaf_prediction="mean"``): variance-reduction splits, decided when the second best
    merit's ratio to the best falls below ``1 - eps`` (or ``eps < tau``).

    Parameters
    ----------
    grace_period, max_depth, delta, tau, merit_preprune, max_leaves, memory_limit,
    max_bin, cache_dir, prefetch, reference, batch_rows : as
    :class:`HoeffdingTreeClassifier`
    leaf_prediction : {"mean"}
        The leaf's mean target. (river's linear-model leaves need per-row state the
        engine does not keep; not offered.)
    min_samples_split : float, default 5
        Weight each side of a split needs (rows, for unit weights), as river counts.
    """
    _DEFAULTS_DIFFER = {"leaf_prediction": "river's regressor default, mean"}

    _task = "regression"
    _extra_params = ("min_samples_split",)

    def __init__(self, grace_period=200, max_depth=None, delta=1e-7, tau=0.05,
                 leaf_prediction="mean", min_samples_split=5, merit_preprune=True,
                 max_leaves=None, memory_limit=None, max_bin=256, cache_dir=None,
                 prefetch=None, reference=None, batch_rows=None):
        self.batch_rows = batch_rows
        self.grace_period = grace_period
        self.max_depth = max_depth
        self.delta = delta
        self.tau = tau
        self.leaf_prediction = leaf_prediction
        self.min_samples_split = min_samples_split
        self.merit_preprune = merit_preprune
        self.max_leaves = max_leaves
        self.memory_limit = memory_limit
        self.max_bin = max_bin
        self.cache_dir = cache_dir
        self.prefetch = prefetch
        self.reference = reference

    def _cache_classes(self, cache):
        return 0

    def _fit_labels(self, y):
        return np.asarray(y, dtype=np.float64), 0

    def _chunk_labels(self, y, n):
        if y is None:
            raise ParameterError("y is required when X is not a Cache")
        y = np.asarray(y, dtype=np.float64).reshape(-1)
        if y.shape != (n,) or not np.all(np.isfinite(y)):
            raise ParameterError(f"y must hold {n} finite targets")
        return y

    def predict(self, X):
        """(n_rows,) predicted targets."""
        return np.asarray(self._raw_predict(X)).reshape(-1)


__all__ = ["HoeffdingTreeClassifier", "HoeffdingTreeRegressor", "NotFittedError"]
