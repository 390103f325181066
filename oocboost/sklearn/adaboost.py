"""scikit-learn style AdaBoost estimators over :mod:`oocboost.learners.adaboost.adaboost`.

``fit`` takes arrays or DataFrames (a temporary cache is built and removed after training)
or a ``Cache`` (trained from directly: the out-of-core path). Names and defaults follow
scikit-learn's ``AdaBoostClassifier`` / ``AdaBoostRegressor``; instead of an
``estimator=DecisionTreeClassifier(max_depth=1)`` the weak trees are ours and
``max_depth`` sets their depth (1 for the classifier, 3 for the regressor, scikit-learn's
defaults).

Example
-------
>>> from oocboost import AdaBoostClassifier
>>> clf = AdaBoostClassifier(n_estimators=100, algorithm="SAMME").fit(X, y)  # doctest: +SKIP
>>> clf.predict_proba(X)[:, 1]                                               # doctest: +SKIP
>>> clf.estimator_weights_[:3], clf.estimator_errors_[:3]                    # doctest: +SKIP

Differences from scikit-learn
-----------------------------
- Splits are searched on the cache's bins (exact when a feature has fewer than
  ``max_bin`` distinct values); ties between equally good splits are broken by feature
  order, not by a random feature permutation.
- scikit-learn clips the boosting weights to ``eps`` each round; we do not.
- ``SAMME.R``, ``gentle``, ``logitboost`` and ``arc-x4`` are not in scikit-learn >= 1.6
  (SAMME.R was removed); ``SAMME.R`` follows scikit-learn 1.5's implementation.
- AdaBoost.R2: scikit-learn fits each tree on a weighted bootstrap sample; out of core we
  grow the tree with the weights directly (no resampling; the R2 weight update, error
  and weighted-median prediction are scikit-learn's).
- A model file of an R2 regressor says ``attributes["adaboost"]["prediction"] ==
  "weighted_median"``; ``oocboost predict``, ``oocboost.model.predict.predict`` and
  ``evaluate`` honour it and give the weighted median of the trees (only
  ``Model.predict_margin`` on its own gives their weighted mean).
"""
import numpy as np

from ..errors import ParameterError
from .boosting import ParamsMixin, TrainingData
from ..kernels import adaboost_kernels as ak
from ..learners.adaboost.adaboost import (CLASSIFIER_ALGORITHMS, REGRESSOR_ALGORITHM,
                                          canonical_algorithm, check_boost_params,
                                          train_adaboost)


# --------------------------------------------------------------------------- model level


def _info(model):
    info = (model.attributes or {}).get("adaboost")
    if model.learner != "adaboost" or not isinstance(info, dict):
        raise ParameterError("not an AdaBoost model (learner "
                             f"{model.learner!r}); use oocboost.model.predict.predict")
    return info


def _sum_view(model, per_tree=False):
    """The same trees aggregated by "sum" (weighted leaf values), optionally with one
    output per tree (``per_tree``: margin column ``t`` is tree ``t``'s prediction)."""
    from ..model.model import Model

    n = model.n_trees
    return Model(model.trees,
                 tree_group=np.arange(n, dtype=np.int32) if per_tree else model.tree_group,
                 tree_weight=np.ones(n) if per_tree else model.tree_weight,
                 n_outputs=n if per_tree else model.n_outputs, objective=model.objective,
                 objective_params=dict(model.objective_params), learner=model.learner,
                 aggregation="sum", trees_per_round=1 if per_tree else model.trees_per_round,
                 feature_names=list(model.feature_names),
                 feature_types=list(model.feature_types), bin_mapper=model.bin_mapper)


def _round_weights(model):
    tpr = int(model.trees_per_round)
    return np.asarray(model.tree_weight[::tpr], dtype=np.float64)


def _margins_to_decision(info, margin):
    """scikit-learn's ``decision_function`` from the model's margins."""
    K = int(info["n_classes"])
    algorithm = info["algorithm"]
    if algorithm in ("gentle", "logitboost"):
        return margin[:, 1] if K == 2 else margin
    if K == 2:
        return margin[:, 1] - margin[:, 0]
    return margin * (K - 1) if algorithm in ("SAMME", "SAMME.R") else margin


def staged_margins(model, data):
    """Yield the model's margins after each round (as ``Model.predict_margin`` with
    ``iteration_range=(0, r)``), reading ``data`` once per round.

    Parameters
    ----------
    model : Model
    data : array-like, Cache, cache path or file path

    Yields
    ------
    ndarray (n_rows, n_outputs) float64
    """
    from ..model.predict import predict

    view = _sum_view(model)
    weights = _round_weights(model)
    total = None
    norm = 0.0
    for r in range(model.n_rounds):
        part = predict(view, data, output_margin=True, iteration_range=(r, r + 1))
        total = part if total is None else total + part
        if model.aggregation == "mean":
            norm += weights[r]
            yield total / norm if norm != 0 else total.copy()
        else:
            yield total + model.base_margin


def _tree_predictions(model, data):
    """(n_rows, n_trees) float64: each tree's prediction (R2's weak learners)."""
    from ..model.predict import predict

    return np.ascontiguousarray(predict(_sum_view(model, per_tree=True), data,
                                        output_margin=True), dtype=np.float64)


def _weighted_median(predictions, weights):
    out = np.empty(predictions.shape[0])
    ak.weighted_median(np.ascontiguousarray(predictions),
                       np.ascontiguousarray(weights, dtype=np.float64), out)
    return out


def predict_adaboost(model, data, *, output="predict"):
    """Predictions of an AdaBoost model (from the estimator or a model file).

    Parameters
    ----------
    model : Model
        ``learner == "adaboost"``.
    data : array-like, Cache, cache path or file path
    output : {"predict", "proba", "decision"}
        Classifiers: class indices (mapped to ``model.classes`` when stored), class
        probabilities, or scikit-learn's ``decision_function``. R2 regressors: "predict"
        only (the weighted median of the trees).

    Returns
    -------
    ndarray
    """
    from ..model.predict import model_objective, predict

    info = _info(model)
    if info["algorithm"] == REGRESSOR_ALGORITHM:
        if output != "predict":
            raise ParameterError(f"an AdaBoost.R2 regressor has no {output!r} output")
        return _weighted_median(_tree_predictions(model, data), _round_weights(model))
    margin = predict(model, data, output_margin=True)
    if output == "proba":
        return model_objective(model).transform_proba(margin)
    decision = _margins_to_decision(info, margin)
    if output == "decision":
        return decision
    if output != "predict":
        raise ParameterError(f"output must be 'predict', 'proba' or 'decision', got "
                             f"{output!r}")
    index = (decision > 0).astype(np.int64) if decision.ndim == 1 else np.argmax(decision, 1)
    return np.asarray(model.classes)[index] if model.classes is not None else index


# --------------------------------------------------------------------------- estimators


class _AdaBoostBase(ParamsMixin):
    def _check_fitted(self):
        if not hasattr(self, "model_"):
            raise ParameterError(f"this {type(self).__name__} is not fitted yet: call fit")

    def _train(self, X, y, sample_weight, algorithm, n_classes=None):
        check_boost_params(self.n_estimators, self.learning_rate, self.max_depth,
                           getattr(self, "loss", "linear"))
        if sample_weight is not None and np.any(np.asarray(sample_weight) < 0):
            raise ParameterError("sample_weight must be non-negative")
        data = TrainingData(self.cache_dir, self.memory_limit, self.max_bin)
        try:
            cache = data.cache(X, y, sample_weight, "train")
            self.model_ = train_adaboost(
                cache, algorithm=algorithm, n_estimators=int(self.n_estimators),
                learning_rate=float(self.learning_rate), max_depth=self.max_depth,
                loss=getattr(self, "loss", "linear"), n_classes=n_classes,
                random_state=self.random_state, memory_limit=self.memory_limit,
                n_threads=self.n_jobs if self.n_jobs and self.n_jobs > 0 else None,
                verbose=bool(self.verbose))
        finally:
            data.close()
        info = self.model_.attributes["adaboost"]
        self.estimator_weights_ = np.asarray(info["estimator_weights"], dtype=np.float64)
        self.estimator_errors_ = np.asarray(info["estimator_errors"], dtype=np.float64)
        self.stop_reason_ = info["stop_reason"]
        self.n_features_in_ = self.model_.n_features
        self.feature_names_in_ = np.array(self.model_.feature_names, dtype=object)
        return self

    @property
    def feature_importances_(self):
        """Impurity-based importances: each round's (normalised) split gains, averaged
        with the estimator weights (scikit-learn's definition), (n_features,)."""
        self._check_fitted()
        model = self.model_
        n_f = model.n_features
        tpr = int(model.trees_per_round)
        weights = _round_weights(model)
        out = np.zeros(n_f)
        for r in range(model.n_rounds):
            imp = np.zeros(n_f)
            for tree in model.trees[r * tpr:(r + 1) * tpr]:
                split = tree.left != -1
                imp += np.bincount(tree.feature[split], weights=tree.gain[split],
                                   minlength=n_f)[:n_f]
            if imp.sum() > 0:
                out += weights[r] * imp / imp.sum()
        norm = self.estimator_weights_.sum()
        return out / norm if norm > 0 else out

    def save_model(self, path):
        """Save the fitted model as JSON (loadable with ``oocboost.load_model``)."""
        self._check_fitted()
        self.model_.save_model(path)

    def staged_score(self, X, y, sample_weight=None):
        """Yield the score (accuracy or R^2) after each round."""
        for pred in self.staged_predict(X):
            yield self._score(np.asarray(y), pred, sample_weight)


class AdaBoostClassifier(_AdaBoostBase):
    """AdaBoost classifiers trained out of core: SAMME (discrete AdaBoost for two
    classes), SAMME.R (Real AdaBoost), Gentle AdaBoost, LogitBoost and arc-x4.

    Parameters
    ----------
    n_estimators : int, default 50
        Boosting rounds at most (SAMME and arc-x4 stop at a perfect or a no-better-than-
        chance tree, SAMME.R at a perfect one; ``stop_reason_`` says which).
    learning_rate : float, default 1.0
        Multiplies SAMME's ``alpha``, SAMME.R's weight update exponent and Gentle /
        LogitBoost's tree contributions (arc-x4 ignores it).
    algorithm : {"SAMME", "SAMME.R", "gentle", "logitboost", "arc-x4"}, default "SAMME"
    max_depth : int or None, default 1
        Depth of the weak trees (1: stumps).
    random_state : int or None
    max_bin : int, default 256
        Codes per feature of the temporary cache built from arrays.
    n_jobs : int or None
        numba threads.
    memory_limit : int or str or None
        Peak memory, e.g. "1GB"; the per-row weights are spilled beside the cache when
        they do not fit.
    cache_dir : str or None
        Where the temporary cache of in-memory data goes.
    verbose : bool

    Attributes
    ----------
    classes_ : ndarray (K,)
    n_classes_ : int
    estimator_weights_ : ndarray (n_estimators,) float64
        ``alpha`` per round (SAMME), 1 otherwise; 0 after an early stop.
    estimator_errors_ : ndarray (n_estimators,) float64
        Weighted training error of each weak learner (Gentle / LogitBoost: of the sign of
        its output, averaged over the K one-vs-rest trees); 1 after an early stop, 0 for
        a perfect learner.
    stop_reason_ : str or None
        "perfect" or "no better than chance" when boosting stopped early.
    model_ : Model

    Examples
    --------
    >>> import numpy as np
    >>> from oocboost.sklearn.adaboost import AdaBoostClassifier
    >>> X = np.random.default_rng(0).normal(size=(200, 3)); y = X[:, 0] + X[:, 1] > 0
    >>> AdaBoostClassifier(n_estimators=20).fit(X, y).score(X, y) > 0.9     # doctest: +SKIP
    True
    """

    def __init__(self, n_estimators=50, learning_rate=1.0, algorithm="SAMME", max_depth=1,
                 random_state=None, max_bin=256, n_jobs=None, memory_limit=None,
                 cache_dir=None, verbose=False):
        self.n_estimators = n_estimators
        self.learning_rate = learning_rate
        self.algorithm = algorithm
        self.max_depth = max_depth
        self.random_state = random_state
        self.max_bin = max_bin
        self.n_jobs = n_jobs
        self.memory_limit = memory_limit
        self.cache_dir = cache_dir
        self.verbose = verbose

    def fit(self, X, y=None, sample_weight=None):
        """Train on arrays/DataFrames (a temporary cache is built) or on a ``Cache``
        whose labels are the class indices ``0..K-1``."""
        from ..model.objectives import LabelStats
        from ..cache.store import Cache

        algorithm = canonical_algorithm(self.algorithm)
        if algorithm not in CLASSIFIER_ALGORITHMS:
            raise ParameterError(f"AdaBoostClassifier algorithm must be one of "
                                 f"{CLASSIFIER_ALGORITHMS}, got {self.algorithm!r}")
        if isinstance(X, Cache):
            stats = X.manifest.get("label_stats") or {}
            classes = LabelStats.from_dict(stats).class_weights if stats else None
            if not classes:
                raise ParameterError(f"cache {X.path}: labels are not integer classes")
            self.classes_ = np.arange(int(max(classes)) + 1)
            y_enc = y
        else:
            if y is None:
                raise ParameterError("y is required when X is not a Cache")
            self.classes_, y_enc = np.unique(np.asarray(y), return_inverse=True)
        self.n_classes_ = len(self.classes_)
        if self.n_classes_ < 2:
            raise ParameterError(f"y has a single class ({self.classes_.tolist()}); "
                                 f"classification needs at least two")
        self._train(X, y_enc, sample_weight, algorithm, self.n_classes_)
        self.model_.classes = self.classes_.tolist()
        return self

    def _info(self):
        self._check_fitted()
        return self.model_.attributes["adaboost"]

    def decision_function(self, X):
        """scikit-learn's decision function: (n_rows,) for two classes (positive means
        ``classes_[1]``), else (n_rows, K). SAMME / SAMME.R: the estimator-weighted mean
        of the class codes / ``h``; Gentle / LogitBoost: ``F``; arc-x4: vote fractions."""
        self._check_fitted()
        return predict_adaboost(self.model_, X, output="decision")

    def predict_proba(self, X):
        """Class probabilities (n_rows, K): ``softmax(decision / (K-1))`` for SAMME and
        SAMME.R (scikit-learn's), ``softmax(F)`` for Gentle / LogitBoost (two classes:
        ``e^F / (e^F + e^-F)``), vote fractions for arc-x4."""
        self._check_fitted()
        return predict_adaboost(self.model_, X, output="proba")

    def predict(self, X):
        """Class labels from ``classes_``."""
        return self._labels(self.decision_function(X))

    def _labels(self, decision):
        index = (decision > 0).astype(np.int64) if decision.ndim == 1 \
            else np.argmax(decision, axis=1)
        return self.classes_[index]

    def staged_decision_function(self, X):
        """Yield the decision function after each round."""
        info = self._info()
        for margin in staged_margins(self.model_, X):
            yield _margins_to_decision(info, margin)

    def staged_predict_proba(self, X):
        """Yield class probabilities after each round."""
        from ..model.predict import model_objective

        self._check_fitted()
        objective = model_objective(self.model_)
        for margin in staged_margins(self.model_, X):
            yield objective.transform_proba(margin)

    def staged_predict(self, X):
        """Yield predicted labels after each round."""
        for decision in self.staged_decision_function(X):
            yield self._labels(decision)

    @staticmethod
    def _score(y, pred, sample_weight):
        return float(np.average((pred == y).astype(np.float64), weights=sample_weight))

    def score(self, X, y, sample_weight=None):
        """Accuracy (scikit-learn's classifier score)."""
        return self._score(np.asarray(y), self.predict(X), sample_weight)


class AdaBoostRegressor(_AdaBoostBase):
    """AdaBoost.R2 (Drucker 1997) trained out of core.

    Parameters
    ----------
    n_estimators : int, default 50
    learning_rate : float, default 1.0
    loss : {"linear", "square", "exponential"}, default "linear"
    max_depth : int or None, default 3
    random_state, max_bin, n_jobs, memory_limit, cache_dir, verbose :
        See :class:`AdaBoostClassifier`.

    Attributes
    ----------
    estimator_weights_, estimator_errors_ : ndarray (n_estimators,) float64
        ``learning_rate * log(1/beta)`` and the average loss of each round (0 and 1
        after an early stop).
    stop_reason_ : str or None
    model_ : Model
        Trees weighted by ``estimator_weights_``; ``predict`` is their weighted median,
        and so is ``oocboost predict`` on the saved model file.

    Notes
    -----
    scikit-learn grows each tree on a weighted bootstrap sample of the rows; here each
    tree is grown on all rows with the boosting weights (no sample to hold in memory).
    """

    def __init__(self, n_estimators=50, learning_rate=1.0, loss="linear", max_depth=3,
                 random_state=None, max_bin=256, n_jobs=None, memory_limit=None,
                 cache_dir=None, verbose=False):
        self.n_estimators = n_estimators
        self.learning_rate = learning_rate
        self.loss = loss
        self.max_depth = max_depth
        self.random_state = random_state
        self.max_bin = max_bin
        self.n_jobs = n_jobs
        self.memory_limit = memory_limit
        self.cache_dir = cache_dir
        self.verbose = verbose

    def fit(self, X, y=None, sample_weight=None):
        """Train on arrays/DataFrames (a temporary cache is built) or on a ``Cache``."""
        return self._train(X, y, sample_weight, REGRESSOR_ALGORITHM)

    def predict(self, X):
        """Weighted median of the trees' predictions, (n_rows,)."""
        self._check_fitted()
        return predict_adaboost(self.model_, X)

    def staged_predict(self, X):
        """Yield the weighted median of the first 1, 2, ... trees."""
        self._check_fitted()
        preds = _tree_predictions(self.model_, X)
        weights = _round_weights(self.model_)
        for limit in range(1, preds.shape[1] + 1):
            yield _weighted_median(preds[:, :limit], weights[:limit])

    @staticmethod
    def _score(y, pred, sample_weight):
        from ..model.metrics import get_metric

        return float(get_metric("r2")(np.asarray(y, np.float64), pred, sample_weight))

    def score(self, X, y, sample_weight=None):
        """R^2 of the predictions (scikit-learn's regressor score)."""
        return self._score(y, self.predict(X), sample_weight)
