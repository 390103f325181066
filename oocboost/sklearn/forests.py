"""scikit-learn style random forests, extra trees and bagging (out of core), on the
shared tree estimator base of :mod:`oocboost.sklearn.trees` (whose docstring lists the
differences from scikit-learn).

Example
-------
>>> from oocboost import RandomForestClassifier                           # doctest: +SKIP
>>> rf = RandomForestClassifier(n_estimators=200, oob_score=True, random_state=0,
...                             memory_limit="2GB").fit(cache)         # doctest: +SKIP
>>> rf.oob_score_, rf.predict_proba(X_test)[:, 1]                      # doctest: +SKIP
"""

from ..errors import ParameterError
from .trees import (
    DecisionTreeBase,
    DecisionTreeClassifier,
    DecisionTreeRegressor,
    TreeClassifierMixin,
    TreeEnsembleBase,
    TreeRegressorMixin,
)


class _Forest(TreeEnsembleBase):
    _DEFAULTS_DIFFER = {
        "max_features": "'default': sqrt for a classifier, 1.0 for a regressor",
        "bootstrap": "'default': True for a random forest, False for extra trees",
    }
    def __init__(self, n_estimators=100, *, criterion=None, max_depth=None,
                 min_samples_split=2, min_samples_leaf=1, min_weight_fraction_leaf=0.0,
                 max_features="default", max_leaf_nodes=None, min_impurity_decrease=0.0,
                 bootstrap="default", oob_score=False, n_jobs=None, random_state=None,
                 verbose=0, warm_start=False, class_weight=None, ccp_alpha=0.0,
                 max_samples=None, trees_per_pass=None, leaves_per_pass=None,
                 memory_limit=None, cache_dir=None, max_bin=256, prefetch=None,
                 missing_values="learn", max_surrogates=5, splitter=None,
                 quantile_samples_leaf=None, monotonic_cst=None):
        self.n_estimators = n_estimators
        self.criterion = criterion
        self.max_depth = max_depth
        self.min_samples_split = min_samples_split
        self.min_samples_leaf = min_samples_leaf
        self.min_weight_fraction_leaf = min_weight_fraction_leaf
        self.max_features = max_features
        self.max_leaf_nodes = max_leaf_nodes
        self.min_impurity_decrease = min_impurity_decrease
        self.bootstrap = bootstrap
        self.oob_score = oob_score
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose
        self.warm_start = warm_start
        self.class_weight = class_weight
        self.ccp_alpha = ccp_alpha
        self.max_samples = max_samples
        self.trees_per_pass = trees_per_pass
        self.leaves_per_pass = leaves_per_pass
        self.memory_limit = memory_limit
        self.cache_dir = cache_dir
        self.max_bin = max_bin
        self.prefetch = prefetch
        self.missing_values = missing_values
        self.max_surrogates = max_surrogates
        self.splitter = splitter
        self.quantile_samples_leaf = quantile_samples_leaf
        self.monotonic_cst = monotonic_cst

    def _learner_params(self):
        p = self.get_params()
        if p["criterion"] is None:
            p.pop("criterion")
        if p["splitter"] is None:   # the learner's own: best (forests), random (extra trees)
            p.pop("splitter")
        for name in ("max_features", "bootstrap"):
            if isinstance(p[name], str) and p[name] == "default":
                p.pop(name)  # the learner's scikit-learn default
        p.pop("warm_start")
        p.pop("n_estimators")
        return p


class RandomForestClassifier(TreeClassifierMixin, _Forest):
    """Breiman's random forest for classification (scikit-learn's
    ``RandomForestClassifier``: ``n_estimators=100``, ``max_features="sqrt"``,
    ``bootstrap=True``), trained out of core; predictions average the trees' class
    proportions.

    ``max_features``: "sqrt", "log2", int, float fraction or None; Breiman's classic
    ``log2(p) + 1`` is ``max_features=int(np.log2(p)) + 1``. ``max_samples`` (int or
    fraction of rows, with ``bootstrap=True``): each row gets Poisson(max_samples / n)
    copies. ``oob_score=True`` adds ``oob_score_`` (accuracy) and
    ``oob_decision_function_`` (one more data pass). ``warm_start=True`` adds trees
    (identical to growing them all at once). ``n_jobs``: numba threads.
    """

    _learner = "random_forest"


class RandomForestRegressor(TreeRegressorMixin, _Forest):
    """Random forest for regression (``max_features=1.0``, ``bootstrap=True``); the
    prediction is the mean of the trees'. ``oob_score=True`` adds ``oob_score_`` (R^2) and
    ``oob_prediction_``. See :class:`RandomForestClassifier`."""

    _learner = "random_forest"


class ExtraTreesClassifier(TreeClassifierMixin, _Forest):
    """Extremely randomised trees (Geurts et al. 2006; scikit-learn's
    ``ExtraTreesClassifier``: ``bootstrap=False``, ``max_features="sqrt"``): one random
    threshold per candidate feature and node, the best of those is taken."""

    _learner = "extra_trees"


class ExtraTreesRegressor(TreeRegressorMixin, _Forest):
    """Extremely randomised trees for regression (``max_features=1.0``,
    ``bootstrap=False``). See :class:`ExtraTreesClassifier`."""

    _learner = "extra_trees"


# ---------------------------------------------------------------------- bagging
_TREE_PARAMS = ("criterion", "splitter", "max_depth", "min_samples_split",
                "min_samples_leaf", "min_weight_fraction_leaf", "max_leaf_nodes",
                "min_impurity_decrease", "class_weight", "ccp_alpha", "leaves_per_pass",
                "missing_values", "max_surrogates")


class _Bagging(TreeEnsembleBase):
    _DEFAULTS_DIFFER = {
        "max_samples": "scikit-learn's bagging draws as many rows as the data has",
        "max_features": "bagging's: the share of features each tree sees, 1.0",
        "bootstrap": "scikit-learn's bagging draws rows with replacement",
    }
    _learner = "bagging"
    _tree_class = None

    def __init__(self, estimator=None, n_estimators=10, *, max_samples=1.0,
                 max_features=1.0, bootstrap=True, bootstrap_features=False,
                 oob_score=False, warm_start=False, n_jobs=None, random_state=None,
                 verbose=0, trees_per_pass=None, memory_limit=None, cache_dir=None,
                 max_bin=256, prefetch=None):
        self.estimator = estimator
        self.n_estimators = n_estimators
        self.max_samples = max_samples
        self.max_features = max_features
        self.bootstrap = bootstrap
        self.bootstrap_features = bootstrap_features
        self.oob_score = oob_score
        self.warm_start = warm_start
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose
        self.trees_per_pass = trees_per_pass
        self.memory_limit = memory_limit
        self.cache_dir = cache_dir
        self.max_bin = max_bin
        self.prefetch = prefetch

    def fit(self, X, y=None, sample_weight=None, init_model=None, xgb_model=None):
        """Grow the bagged trees (see the class docstring). With a scikit-learn
        estimator that is not an oocboost tree, in-memory ``X`` is bagged by
        scikit-learn's own ``Bagging*`` (kept as ``delegate_``), a cache by
        ``bagging_cache.CacheBagging`` on rows decoded to their bins' middles.
        ``init_model`` (alias ``xgb_model``): a bagging model of oocboost trees to add
        ``n_estimators`` trees to."""
        from ..cache.store import Cache

        if self.estimator is None or isinstance(self.estimator, DecisionTreeBase):
            self.delegate_ = None
            return super().fit(X, y, sample_weight, init_model=init_model,
                               xgb_model=xgb_model)
        if init_model is not None or xgb_model is not None:
            raise ParameterError("init_model continues bagged oocboost trees; bagging "
                                 f"{type(self.estimator).__name__} starts afresh")
        if isinstance(X, Cache):
            return self._fit_cache_bags(X, y, sample_weight)
        try:
            from sklearn import ensemble
        except ImportError:
            raise ParameterError("a scikit-learn estimator needs scikit-learn installed "
                                 "(pip install 'oocboost[sklearn]')") from None
        cls = getattr(ensemble, "BaggingClassifier" if self._task == "classification"
                      else "BaggingRegressor")
        self.delegate_ = cls(
            estimator=self.estimator, n_estimators=self.n_estimators,
            max_samples=self.max_samples, max_features=self.max_features,
            bootstrap=self.bootstrap, bootstrap_features=self.bootstrap_features,
            oob_score=self.oob_score, warm_start=self.warm_start, n_jobs=self.n_jobs,
            random_state=self.random_state, verbose=self.verbose)
        fit_kw = {} if sample_weight is None else {"sample_weight": sample_weight}
        self.delegate_.fit(X, y, **fit_kw)
        for name in ("classes_", "n_classes_", "estimators_features_", "oob_score_",
                     "oob_decision_function_", "oob_prediction_", "n_features_in_",
                     "feature_names_in_"):
            if hasattr(self.delegate_, name) and not isinstance(
                    getattr(type(self), name, None), property):
                setattr(self, name, getattr(self.delegate_, name))
        if hasattr(self, "model_"):
            del self.model_
        return self

    def _fit_cache_bags(self, cache, y, sample_weight):
        """Bag a scikit-learn estimator from a cache (``bagging_cache.py``)."""
        from ..learners.common.validate import resolve_seed
        from .bagging_cache import CacheBagging

        if y is not None or sample_weight is not None:
            raise ParameterError("when X is a Cache its labels and weights come from the "
                                 "cache: pass y=None and sample_weight=None")
        if self.oob_score or self.warm_start:
            raise ParameterError("bagging a scikit-learn estimator from a cache has no "
                                 "oob_score or warm_start (bag oocboost trees for them)")
        self.delegate_ = CacheBagging(
            self.estimator, n_estimators=self.n_estimators, max_samples=self.max_samples,
            max_features=self.max_features, bootstrap=self.bootstrap,
            bootstrap_features=self.bootstrap_features,
            seed=resolve_seed(self.random_state),
            classifier=self._task == "classification",
            memory_limit=self.memory_limit).fit(cache)
        for name in ("classes_", "n_classes_", "n_features_in_", "feature_names_in_"):
            if hasattr(self.delegate_, name):
                setattr(self, name, getattr(self.delegate_, name))
        if hasattr(self, "model_"):
            del self.model_
        return self

    @property
    def estimators_features_(self):
        """The columns each tree grew on (list of sorted int arrays), as scikit-learn's
        ``estimators_features_``; with ``bootstrap=False, max_features < 1`` these are
        Ho's random subspaces."""
        d = getattr(self, "delegate_", None)
        if d is not None:
            return d.estimators_features_
        self._check_fitted()
        from ..learners.common.tree_features import tree_feature_sets

        a = self.model_.attributes
        n_features = self.model_.n_features
        return tree_feature_sets(a["seed"], range(self.model_.n_trees), n_features,
                                 a.get("tree_features"), a.get("bootstrap_features", False))

    def _learner_params(self):
        est = self.estimator if self.estimator is not None else self._tree_class()
        if not isinstance(est, DecisionTreeBase):
            raise ParameterError(f"estimator must be an oocboost DecisionTreeClassifier / "
                                 f"DecisionTreeRegressor (bagging grows our trees on the "
                                 f"shared engine), got {type(est).__name__}")
        if est._task != self._task:
            raise ParameterError(f"estimator must be a {self._tree_class.__name__}, got "
                                 f"{type(est).__name__}")
        tp = est._learner_params()
        p = {k: tp[k] for k in _TREE_PARAMS if k in tp}
        p["tree_max_features"] = tp.get("max_features")
        p.update(max_samples=self.max_samples, max_features=self.max_features,
                 bootstrap=self.bootstrap, bootstrap_features=self.bootstrap_features,
                 oob_score=self.oob_score, n_jobs=self.n_jobs,
                 random_state=self.random_state, verbose=self.verbose,
                 trees_per_pass=self.trees_per_pass, memory_limit=self.memory_limit,
                 prefetch=self.prefetch)
        return p


class _Delegated:
    """Predictions through scikit-learn's bagging when ``fit`` delegated to it."""

    def _delegate(self):
        return getattr(self, "delegate_", None)

    @property
    def estimators_(self):
        """The fitted estimators: oocboost trees, or scikit-learn's when delegated."""
        d = self._delegate()
        return d.estimators_ if d is not None else super().estimators_

    def predict(self, X):
        d = self._delegate()
        return d.predict(X) if d is not None else super().predict(X)

    def score(self, X, y, sample_weight=None):
        d = self._delegate()
        return (float(d.score(X, y, sample_weight)) if d is not None
                else super().score(X, y, sample_weight))


class _DelegatedProba(_Delegated):
    def predict_proba(self, X):
        d = self._delegate()
        return d.predict_proba(X) if d is not None else super().predict_proba(X)

    def predict_log_proba(self, X):
        d = self._delegate()
        return d.predict_log_proba(X) if d is not None else super().predict_log_proba(X)


class BaggingClassifier(_DelegatedProba, TreeClassifierMixin, _Bagging):
    """Bagging of decision trees (scikit-learn's ``BaggingClassifier`` over our
    :class:`DecisionTreeClassifier`): each tree sees a bootstrap of the rows
    (Poisson(max_samples) copies per row; without ``bootstrap``, each row with
    probability ``max_samples``) and ``max_features`` columns (drawn with replacement
    when ``bootstrap_features``); predictions average the trees' class proportions
    (soft vote, as scikit-learn does for estimators with ``predict_proba``).

    ``estimator`` may also be any scikit-learn estimator (``KNeighborsClassifier()``,
    ...): on in-memory data ``fit`` hands it to scikit-learn's own ``BaggingClassifier``
    (``delegate_``), as scikit-learn would bag it; from a cache each bag's rows are
    decoded to their bins' middles and its clone fitted on them
    (``sklearn/bagging_cache.py``). Such a model has no oocboost model file."""

    _tree_class = DecisionTreeClassifier


class BaggingRegressor(_Delegated, TreeRegressorMixin, _Bagging):
    """Bagging of :class:`DecisionTreeRegressor` trees; the prediction is their mean.
    See :class:`BaggingClassifier`."""

    _tree_class = DecisionTreeRegressor
