"""scikit-learn style AdaBoost estimators over :mod:`oocboost.learners.adaboost.adaboost`.

``fit`` takes arrays or DataFrames (a temporary cache is built and removed after training)
or a ``Cache`` (trained from directly: the out-of-core path). Names and defaults follow
scikit-learn's ``AdaBoostClassifier`` / ``AdaBoostRegressor``: ``estimator`` takes an
oocboost ``DecisionTreeClassifier`` / ``DecisionTreeRegressor`` whose parameters shape
the weak trees; without it ``max_depth`` sets their depth (1 for the classifier, 3 for
the regressor, scikit-learn's defaults).

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
from ..learners.adaboost.adaboost import (
    CLASSIFIER_ALGORITHMS,
    canonical_algorithm,
    check_boost_params,
    train_adaboost,
)
from ..model.adaboost import (
    REGRESSOR_ALGORITHM,
    margins_to_decision,
    predict_adaboost,
    staged_margins,
    tree_predictions,
)
from ..model.aggregate import round_weights, weighted_median
from .base import (
    ClassifierMixin,
    ParamsMixin,
    RegressorMixin,
    TrainingData,
    set_feature_attributes,
)
from .validation import fit_input, predict_input

# --------------------------------------------------------------------------- estimators


class _AdaBoostBase(ParamsMixin):

    def _train(self, X, y, sample_weight, algorithm, n_classes=None):
        check_boost_params(self.n_estimators, self.learning_rate, self.max_depth,
                           getattr(self, "loss", "linear"))
        if sample_weight is not None and np.any(np.asarray(sample_weight) < 0):
            raise ParameterError("sample_weight must be non-negative")
        weak_tree = self._weak_tree()
        data = TrainingData(self.cache_dir, self.memory_limit, self.max_bin)
        try:
            cache = data.cache(X, y, sample_weight, "train")
            self.model_ = train_adaboost(
                cache, algorithm=algorithm, n_estimators=int(self.n_estimators),
                learning_rate=float(self.learning_rate), max_depth=self.max_depth,
                weak_tree=weak_tree,
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
        set_feature_attributes(self, X)
        return self

    def _weak_tree(self):
        """The estimator's tree parameters, or None for depth-``max_depth`` trees."""
        from .trees import DecisionTreeBase

        est = self.estimator
        if est is None:
            return None
        if not isinstance(est, DecisionTreeBase) or est._task != self._tree_task:
            raise ParameterError(
                f"estimator must be an oocboost.{self._tree_name} (the weak trees grow on "
                f"the shared engine, from a cache too), got {type(est).__name__}")
        if self.max_depth != self._default_max_depth:
            raise ParameterError(f"max_depth={self.max_depth!r} and an estimator: set the "
                                 f"depth in the estimator ({self._tree_name}(max_depth=...))")
        return est.get_params()

    @property
    def feature_importances_(self):
        """Impurity-based importances: each round's (normalised) split gains, averaged
        with the estimator weights (scikit-learn's definition), (n_features,)."""
        self._check_fitted()
        model = self.model_
        n_f = model.n_features
        tpr = int(model.trees_per_round)
        weights = round_weights(model)
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

    def staged_score(self, X, y, sample_weight=None):
        """Yield the score (accuracy or R^2) after each round."""
        for pred in self.staged_predict(X):
            yield self._score(np.asarray(y), pred, sample_weight)


class AdaBoostClassifier(ClassifierMixin, _AdaBoostBase):
    """AdaBoost classifiers trained out of core: SAMME (discrete AdaBoost for two
    classes), SAMME.R (Real AdaBoost), Gentle AdaBoost, LogitBoost, arc-x4, AdaBoost.M1
    and AdaBoost.MH.

    Parameters
    ----------
    estimator : oocboost.DecisionTreeClassifier or None, default None
        The weak learner: its tree parameters (``max_depth``, ``min_samples_leaf``,
        ``min_samples_split``, ``min_weight_fraction_leaf``, ``max_features``,
        ``max_leaf_nodes``, ``min_impurity_decrease``, ``splitter``, and ``criterion``
        for the gini families) shape every weak tree; None: depth-``max_depth`` trees.
        ``class_weight`` and ``ccp_alpha`` are refused (the boosting weights are the row
        weights; weak trees are not pruned).
    n_estimators : int, default 50
        Boosting rounds at most (SAMME and arc-x4 stop at a perfect or a no-better-than-
        chance tree, SAMME.R at a perfect one; ``stop_reason_`` says which).
    learning_rate : float, default 1.0
        Multiplies SAMME's ``alpha``, SAMME.R's weight update exponent and Gentle /
        LogitBoost's tree contributions (arc-x4 ignores it).
    algorithm : {"SAMME", "SAMME.R", "gentle", "logitboost", "arc-x4", "M1", "MH"}, \
default "SAMME"
        ``M1``: Freund and Schapire's AdaBoost.M1 (``alpha = log((1 - err) / err)``,
        stops at an error of 1/2; for two classes it is SAMME). ``MH``: Schapire and
        Singer's AdaBoost.MH, one weight per (row, class), trees split by their ``Z``
        criterion with real-valued leaf predictions per class.
    max_depth : int or None, default 1
        Depth of the weak trees (1: stumps) when ``estimator`` is None.
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
    _DEFAULTS_DIFFER = {
        "algorithm": "the classifier's SAMME (the command line picks R2 for reg:*)",
        "max_depth": "scikit-learn's stump, 1, for a classifier",
    }

    _tree_task, _tree_name, _default_max_depth = "classification", "DecisionTreeClassifier", 1

    def __init__(self, estimator=None, n_estimators=50, learning_rate=1.0, algorithm="SAMME",
                 max_depth=1, random_state=None, max_bin=256, n_jobs=None, memory_limit=None,
                 cache_dir=None, verbose=False):
        self.estimator = estimator
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
        from ..cache.label_stats import LabelStats
        from ..cache.store import Cache

        X, y, sample_weight = fit_input(self, X, y, sample_weight, classifier=True)
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
            raise ParameterError(f"y has a single class (1 class: {self.classes_.tolist()}); "
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
        X = predict_input(self, X)
        return predict_adaboost(self.model_, X, output="decision")

    def predict_proba(self, X):
        """Class probabilities (n_rows, K): ``softmax(decision / (K-1))`` for SAMME and
        SAMME.R (scikit-learn's), ``softmax(F)`` for Gentle / LogitBoost (two classes:
        ``e^F / (e^F + e^-F)``), vote fractions for arc-x4."""
        X = predict_input(self, X)
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
            yield margins_to_decision(info, margin)

    def staged_predict_proba(self, X):
        """Yield class probabilities after each round."""
        from ..model.predict import model_objective

        X = predict_input(self, X)
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


class AdaBoostRegressor(RegressorMixin, _AdaBoostBase):
    """AdaBoost.R2 (Drucker 1997) trained out of core.

    Parameters
    ----------
    estimator : oocboost.DecisionTreeRegressor or None, default None
        The weak learner's tree parameters (see :class:`AdaBoostClassifier`; criterion
        ``squared_error`` or ``friedman_mse``); None: depth-``max_depth`` trees.
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
    _DEFAULTS_DIFFER = {"max_depth": "scikit-learn's 3 for AdaBoostRegressor (R2)"}

    _tree_task, _tree_name, _default_max_depth = "regression", "DecisionTreeRegressor", 3

    def __init__(self, estimator=None, n_estimators=50, learning_rate=1.0, loss="linear",
                 max_depth=3, random_state=None, max_bin=256, n_jobs=None, memory_limit=None,
                 cache_dir=None, verbose=False):
        self.estimator = estimator
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
        X, y, sample_weight = fit_input(self, X, y, sample_weight, classifier=False)
        return self._train(X, y, sample_weight, REGRESSOR_ALGORITHM)

    def predict(self, X):
        """Weighted median of the trees' predictions, (n_rows,)."""
        X = predict_input(self, X)
        return predict_adaboost(self.model_, X)

    def staged_predict(self, X):
        """Yield the weighted median of the first 1, 2, ... trees."""
        X = predict_input(self, X)
        preds = tree_predictions(self.model_, X)
        weights = round_weights(self.model_)
        for limit in range(1, preds.shape[1] + 1):
            yield weighted_median(preds[:, :limit], weights[:limit])

    @staticmethod
    def _score(y, pred, sample_weight):
        from ..model.metrics import get_metric

        return float(get_metric("r2")(np.asarray(y, np.float64), pred, sample_weight))

    def score(self, X, y, sample_weight=None):
        """R^2 of the predictions (scikit-learn's regressor score)."""
        return self._score(y, self.predict(X), sample_weight)
