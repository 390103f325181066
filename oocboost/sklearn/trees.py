"""scikit-learn style decision trees and the base of every tree estimator (out of core).

Parameter names and defaults are scikit-learn's (1.9). ``fit`` takes arrays/DataFrames
(a temporary cache is built and removed) or a :class:`~oocboost.cache.store.Cache` (the
out-of-core path: labels and weights come from the cache; class labels must be
``0..K-1``). Every estimator also takes ``memory_limit`` (peak RSS, e.g. ``"1GB"``),
``cache_dir`` (temporary caches), ``max_bin`` (bins of the temporary cache), ``prefetch``,
and the forests ``trees_per_pass`` (trees grown in the same data passes; default: as many
as the memory plan allows, at most 16) and ``leaves_per_pass`` (with ``max_leaf_nodes``:
leaves expanded per pass; 1 gives scikit-learn's best-first order exactly, the default
for a single tree; forests default to 8, fewer passes for an order that is best-first
only within each batch).

Differences from scikit-learn, all consequences of training on binned data:

* Split thresholds are bin edges: with a bin per distinct value (``max_bin`` above the
  number of distinct values) a tree makes the same splits (same partition of the
  training rows) and leaf values as scikit-learn's, but a threshold lies at the midpoint
  of the *whole column's* neighbouring values, scikit-learn's at the midpoint of the
  *node's* neighbouring values, so unseen values in between may go the other way.
* Bootstrap is Poisson(1) copies per row (Poisson(m/n) for ``max_samples=m``) from a
  hash of (seed, tree, row), not a draw of exactly ``n`` rows; same distribution in the
  large-``n`` limit. Results are reproducible for a fixed ``random_state`` but differ
  from scikit-learn's for the same seed.
* ``max_features`` draws the subset per node without scikit-learn's rule of drawing more
  features when the drawn ones are constant in the node; ties between features go to the
  lowest index (scikit-learn's visit order is random).
* Extra trees draw a threshold uniformly over the node's range of bins, not of values.
* Missing values (NaN) go to the side learned at each split (scikit-learn >= 1.3's rule
  for ``splitter="best"``; extra trees learn it too). ``missing_values="surrogate"``
  (trees and forests) finds rpart's surrogate splits instead (``max_surrogates``, default
  5, per split): a row missing a split's feature at prediction follows the first
  surrogate it has a value for, else the majority direction (``engine/surrogates.py``).
* ``criterion`` supports gini, entropy/log_loss, squared_error, friedman_mse (the
  same as squared_error, as scikit-learn >= 1.9 maps it), poisson and absolute_error,
  and ours: ``gain_ratio`` (C4.5's gain ratio of a binary split). ``multiway=True``
  (ours) splits a categorical feature into one child per category (C4.5's multiway
  splits, stored as a chain of binary nodes; docs/parameters.md).

Example
-------
>>> from oocboost import DecisionTreeClassifier, export_text             # doctest: +SKIP
>>> tree = DecisionTreeClassifier(max_depth=4, ccp_alpha=1e-4).fit(cache)  # doctest: +SKIP
>>> print(export_text(tree, feature_names=cache.feature_names))          # doctest: +SKIP
"""
import numpy as np

from ..errors import ParameterError
from ..learners.common import cart_config as _config
from ..learners.common import data as _data
from ..learners.forest import forest as _forest
from .base import (
    ClassifierMixin,
    ParamsMixin,
    RegressorMixin,
    TrainingData,
    continued_model,
    edges_of,
    importances_per_input,
    set_feature_attributes,
)
from .validation import fit_input, predict_input, prediction_module


def _to_py(values):
    return [v.item() if hasattr(v, "item") else v for v in values]


#: The learners whose models ``fit(init_model=)`` continues.
_FOREST_LEARNERS = ("random_forest", "extra_trees", "bagging")


class TreeEnsembleBase(ParamsMixin):
    """Shared fit/predict; subclasses set ``_learner`` and ``_task``."""

    _learner = None
    _task = None

    # ------------------------------------------------------------------ parameters
    def _learner_params(self):
        return self.get_params()

    def _n_trees(self):
        return int(getattr(self, "n_estimators", 1))

    # ------------------------------------------------------------------ fitting
    def fit(self, X, y=None, sample_weight=None, init_model=None, xgb_model=None):
        """Grow the trees.

        Parameters
        ----------
        X : array-like (n_rows, n_features), DataFrame, or Cache
            With a Cache, ``y`` and ``sample_weight`` must be None (the cache has them).
        y : array-like (n_rows,)
            Class labels (any sortable values) or targets.
        sample_weight : array-like (n_rows,) or None
        init_model : Model, fitted estimator or model file, optional (alias ``xgb_model``)
            A forest of this estimator's learner (random forest, extra trees, bagging):
            its trees are kept and ``n_estimators`` more are grown, with its seed, on
            these rows (arrays are binned with its edges; a cache must have them).

        Returns
        -------
        self
        """
        params = self._learner_params()
        classification = self._task == "classification"
        X, y, sample_weight = fit_input(self, X, y, sample_weight, classifier=classification)
        init = self._init_model(init_model, xgb_model)
        data = TrainingData(self.cache_dir, self.memory_limit, self.max_bin)
        try:
            cache, classes_, counts = self._training_cache(data, X, y, sample_weight,
                                                           params, init)
            self._train(cache, classes_, counts, params,
                        **({} if init is None else {"init": init}))
        finally:
            data.close()
        if classification:
            self.classes_ = classes_
            self.n_classes_ = len(classes_)
        set_feature_attributes(self, X)
        self.n_outputs_ = 1
        return self

    def _init_model(self, init_model, xgb_model):
        """The forest ``fit`` continues (``init_model`` / ``xgb_model``), checked, or
        None."""
        init = continued_model(init_model, xgb_model)
        if init is None:
            return None
        if self._learner not in _FOREST_LEARNERS:
            raise ParameterError(f"{type(self).__name__} grows one model from scratch: "
                                 f"init_model continues forests (a decision tree has one "
                                 f"tree)")
        if init.learner != self._learner:
            raise ParameterError(f"init_model is a {init.learner!r} model; "
                                 f"{type(self).__name__} continues only a "
                                 f"{self._learner!r} forest")
        if (init.n_classes is not None) != (self._task == "classification"):
            kind = "classifier" if init.n_classes else "regressor"
            raise ParameterError(f"init_model is a {kind}; {type(self).__name__} cannot "
                                 f"continue it")
        return init

    def _training_cache(self, data, X, y, sample_weight, params, init=None):
        """``(cache, classes_, class counts)`` of the fit data (a temporary cache of
        in-memory data, labels coded 0..K-1, binned with ``init``'s edges when given; or
        the given Cache, checked)."""
        from ..cache.store import Cache

        classification = self._task == "classification"
        classes_ = y_code = None
        edges = {} if init is None else edges_of(init, data._folder())
        if isinstance(X, Cache):
            if sample_weight is not None:
                raise ParameterError("when X is a Cache its sample weights come from the "
                                     "cache: pass sample_weight=None")
            if init is not None and init.bin_mapper != X.bin_mapper.to_dict():
                raise ParameterError(f"init_model was trained on other bins than cache "
                                     f"{X.path}'s: build it with reference= the first "
                                     f"cache, or pass arrays")
            cache = data.cache(X, y)
            if classification:
                classes = _data.cache_classes(cache)
                if classes is None or len(classes) < 2:
                    raise ParameterError(f"cache {cache.path}: labels must be class "
                                         f"indices 0..K-1 with K >= 2")
                classes_ = np.asarray(classes)
        else:
            if y is None:
                raise ParameterError("y is required when X is not a Cache")
            y_arr = np.asarray(y)
            if classification:
                if y_arr.ndim != 1:
                    raise ParameterError(f"y must be 1-D, got shape {y_arr.shape}")
                classes_, y_code = np.unique(y_arr, return_inverse=True)
                if len(classes_) < 2:
                    raise ParameterError(f"y has a single class (1 class: "
                                         f"{_to_py(classes_)}); classification needs "
                                         f"at least two")
                if getattr(self, "warm_start", False) and hasattr(self, "classes_") \
                        and not np.array_equal(classes_, self.classes_):
                    raise ParameterError("warm_start: y has other classes than the "
                                         "first fit")
                if init is not None and init.classes is not None and \
                        list(init.classes) != _to_py(classes_):
                    raise ParameterError(f"init_model was trained on the classes "
                                         f"{init.classes}, not {_to_py(classes_)}")
                cache = data.cache(X, y_code.astype(np.float64), sample_weight, **edges)
            else:
                cache = data.cache(X, y_arr.astype(np.float64), sample_weight, **edges)
        counts = None
        if classification:
            counts = _data.label_summary(cache, "classification", len(classes_))
        else:
            _data.label_summary(cache, "regression",
                                  poisson=params.get("criterion") == "poisson")
        return cache, classes_, counts

    def _train(self, cache, classes_, counts, params, init=None):
        """Grow the forest's trees on ``cache`` (sets ``model_`` and the OOB results);
        ``n_estimators`` more after ``init``'s when given."""
        classification = self._task == "classification"
        config = _config.resolve_config(
            self._learner, params, task=self._task, n_rows=cache.n_rows,
            n_features=cache.n_features,
            classes=_to_py(classes_) if classification else None, class_counts=counts,
            schema=_config.cache_schema(cache))
        if getattr(self, "warm_start", False) and hasattr(self, "model_") \
                and self.model_.n_trees:
            config.seed = int(self.model_.attributes.get("seed", config.seed))
            model = self.model_
            if list(model.feature_names) != list(cache.feature_names):
                raise ParameterError("warm_start: X has other features than the first fit")
        else:
            model = None
        n_trees = self._n_trees()
        if init is not None:
            from ..model.model import Model

            model = Model.from_json_dict(init.to_json_dict())   # the caller's stays as it was
            config.seed = int(model.attributes.get("seed", config.seed))
            n_trees += model.n_trees
            if int(model.n_outputs) != int(config.n_outputs):
                raise ParameterError(f"init_model has {model.n_outputs} outputs; these "
                                     f"labels make {config.n_outputs}")
        self.model_, node_stats, oob = _forest.train_forest(
            cache, config, n_trees, model=model,
            classes=_to_py(classes_) if classification else None)
        self._node_stats = node_stats
        self.config_ = config
        if config.oob_score:
            self.oob_score_ = self.model_.attributes["oob_score"]
            if classification:
                self.oob_decision_function_ = oob
            else:
                self.oob_prediction_ = None if oob is None else oob[:, 0]

    # ------------------------------------------------------------------ fitted

    def _raw(self, X):
        X = predict_input(self, X)
        return prediction_module().predict(self.model_, X, output_margin=True)

    @property
    def feature_importances_(self):
        """Impurity-based importances (n_features,): each tree's weighted impurity
        decreases per feature normalised to sum 1, averaged over the trees that split,
        normalised again (scikit-learn's definition)."""
        self._check_fitted()
        n_features = self.model_.n_features
        per_tree = []
        for tree in self.model_.trees:
            split = tree.left >= 0
            if not split.any():
                continue
            imp = np.bincount(tree.feature[split], weights=tree.gain[split],
                              minlength=n_features)[:n_features]
            total = imp.sum()
            per_tree.append(imp / total if total > 0 else imp)
        if not per_tree:
            return np.zeros(self.n_features_in_)
        mean = importances_per_input(self.model_, np.mean(per_tree, axis=0))
        total = mean.sum()
        return mean / total if total > 0 else mean

    def apply(self, X):
        """Leaf index of each row: (n_rows,) for a tree, (n_rows, n_estimators) for an
        ensemble (node ids of the model's trees)."""
        from ..model.predict import predict

        X = predict_input(self, X)
        leaves = predict(self.model_, X, pred_leaf=True)
        return leaves[:, 0] if self._learner == "decision_tree" else leaves

    def decision_path(self, X):
        """Node indicator (scipy CSR, n_rows x n_nodes): entry (i, j) is 1 when row i
        passes node j. Ensembles also return ``n_nodes_ptr`` (n_estimators + 1,): tree t's
        nodes are columns ``n_nodes_ptr[t]:n_nodes_ptr[t+1]``."""
        import scipy.sparse as sp

        leaves = np.asarray(self.apply(X))
        if leaves.ndim == 1:
            leaves = leaves[:, None]
        blocks, ptr = [], [0]
        for t, tree in enumerate(self.model_.trees):
            ancestors = _ancestor_matrix(tree)
            blocks.append(ancestors[leaves[:, t]])
            ptr.append(ptr[-1] + tree.n_nodes)
        indicator = sp.hstack(blocks).tocsr()
        if self._learner == "decision_tree":
            return indicator
        return indicator, np.asarray(ptr)

    @property
    def estimators_(self):
        """The fitted trees (:class:`oocboost.model.Tree`), one per estimator."""
        self._check_fitted()
        return list(self.model_.trees)


def _ancestor_matrix(tree):
    """CSR (n_nodes, n_nodes): row j marks j and its ancestors."""
    import scipy.sparse as sp

    n = tree.n_nodes
    parent = np.full(n, -1, np.int64)
    internal = np.flatnonzero(tree.left >= 0)
    parent[tree.left[internal]] = internal
    parent[tree.right[internal]] = internal
    rows, cols = [np.arange(n)], [np.arange(n)]
    cur = parent.copy()
    node = np.arange(n)
    while (cur >= 0).any():  # one step up per tree level, vectorised over nodes
        has = cur >= 0
        rows.append(node[has])
        cols.append(cur[has])
        cur = np.where(has, parent[np.maximum(cur, 0)], -1)
    r, c = np.concatenate(rows), np.concatenate(cols)
    return sp.csr_matrix((np.ones(len(r), np.int8), (r, c)), shape=(n, n))


class TreeClassifierMixin(ClassifierMixin):
    _task = "classification"

    def predict_proba(self, X):
        """Class probabilities (n_rows, n_classes): the mean of the trees' leaf class
        proportions."""
        proba = np.asarray(self._raw(X), dtype=np.float64)
        return proba.reshape(len(proba), -1)

    def predict_log_proba(self, X):
        with np.errstate(divide="ignore"):
            return np.log(self.predict_proba(X))

    def predict(self, X):
        """Most probable class label (from ``classes_``)."""
        X = predict_input(self, X)
        return self.classes_[np.argmax(self.predict_proba(X), axis=1)]

    def score(self, X, y, sample_weight=None):
        """Accuracy."""
        hit = (self.predict(X) == np.asarray(y)).astype(np.float64)
        return float(np.average(hit, weights=sample_weight))


class TreeRegressorMixin(RegressorMixin):
    _task = "regression"

    def predict(self, X, quantiles=None):
        """Mean of the trees' leaf means (n_rows,); with ``quantiles`` (a level or a list
        in [0, 1]) the quantile regression forest's conditional quantiles of the label
        instead (Meinshausen 2006), (n_rows,) for one level, (n_rows, n_levels) for a
        list. Quantiles need a fit with ``quantile_samples_leaf``: each leaf then kept
        that many of its training labels (docs/parameters.md, "Quantile regression
        forests")."""
        if quantiles is None:
            return np.asarray(self._raw(X), dtype=np.float64).reshape(-1)
        from ..model.predict import predict

        out = predict(self.model_, predict_input(self, X), quantiles=quantiles)
        return out[:, 0] if np.ndim(quantiles) == 0 else out

    def score(self, X, y, sample_weight=None):
        """R^2."""
        from ..model.metrics import get_metric

        return float(get_metric("r2")(np.asarray(y, np.float64), self.predict(X),
                                      sample_weight))


# ---------------------------------------------------------------------- decision trees
class DecisionTreeBase(TreeEnsembleBase):
    _DEFAULTS_DIFFER = {"splitter": "scikit-learn's 'best' for one tree"}
    _learner = "decision_tree"

    def __init__(self, *, criterion=None, splitter="best", max_depth=None,
                 min_samples_split=2, min_samples_leaf=1, min_weight_fraction_leaf=0.0,
                 max_features=None, random_state=None, max_leaf_nodes=None,
                 min_impurity_decrease=0.0, class_weight=None, ccp_alpha=0.0,
                 leaves_per_pass=None, n_jobs=None, memory_limit=None, cache_dir=None,
                 max_bin=256, prefetch=None, missing_values="learn", max_surrogates=5,
                 quantile_samples_leaf=None, monotonic_cst=None, multiway=False):
        self.criterion = criterion
        self.multiway = multiway
        self.splitter = splitter
        self.quantile_samples_leaf = quantile_samples_leaf
        self.monotonic_cst = monotonic_cst
        self.max_depth = max_depth
        self.min_samples_split = min_samples_split
        self.min_samples_leaf = min_samples_leaf
        self.min_weight_fraction_leaf = min_weight_fraction_leaf
        self.max_features = max_features
        self.random_state = random_state
        self.max_leaf_nodes = max_leaf_nodes
        self.min_impurity_decrease = min_impurity_decrease
        self.class_weight = class_weight
        self.ccp_alpha = ccp_alpha
        self.leaves_per_pass = leaves_per_pass
        self.n_jobs = n_jobs
        self.memory_limit = memory_limit
        self.cache_dir = cache_dir
        self.max_bin = max_bin
        self.prefetch = prefetch
        self.missing_values = missing_values
        self.max_surrogates = max_surrogates

    def _learner_params(self):
        p = self.get_params()
        if p["criterion"] is None:
            p.pop("criterion")
        return p

    @property
    def tree_(self):
        """The fitted :class:`oocboost.model.Tree` (flat arrays: ``left``, ``right``,
        ``feature``, ``threshold``, ``value``, ``n_samples``, ``cover``...); ``impurity``
        and ``weighted_n_node_samples`` are on the estimator as ``tree_impurity_`` and
        ``tree_weighted_n_node_samples_``."""
        self._check_fitted()
        return self.model_.trees[0]

    @property
    def tree_impurity_(self):
        return self._training_node_stats("tree_impurity_")["impurity"]

    @property
    def tree_weighted_n_node_samples_(self):
        return self._training_node_stats("tree_weighted_n_node_samples_")["weighted_n"]

    def _training_node_stats(self, name):
        self._check_fitted()
        if not getattr(self, "_node_stats", None):
            raise AttributeError(f"{name} is known after fit, not kept in a model file "
                                 f"(load_model): fit again to get it")
        return self._node_stats[0]

    def get_depth(self):
        """Depth of the tree (a lone root has depth 0)."""
        return self.tree_.depth

    def get_n_leaves(self):
        """Number of leaves."""
        return self.tree_.n_leaves

    def cost_complexity_pruning_path(self, X, y=None, sample_weight=None):
        """Minimal cost-complexity pruning path (scikit-learn's method).

        Grows the unpruned tree with these parameters (``ccp_alpha=0``) and returns the
        effective alphas of the nested optimal subtrees and their total leaf impurities.

        Returns
        -------
        dict with ``ccp_alphas`` and ``impurities`` (ndarray float64, increasing alphas)
        """
        from sklearn.utils import Bunch

        from ..engine.pruning import cost_complexity_pruning_path

        est = type(self)(**{**self.get_params(), "ccp_alpha": 0.0})
        est.fit(X, y, sample_weight)
        tree = est.tree_
        alphas, impurities = cost_complexity_pruning_path(
            tree.left, tree.right, est.tree_weighted_n_node_samples_, est.tree_impurity_)
        return Bunch(ccp_alphas=alphas, impurities=impurities)


class DecisionTreeClassifier(TreeClassifierMixin, DecisionTreeBase):
    """A CART classification tree (scikit-learn's ``DecisionTreeClassifier``), grown out
    of core: one data pass per level (or per ``leaves_per_pass`` leaves with
    ``max_leaf_nodes``).

    Parameters are scikit-learn's (``criterion="gini"``, ``"entropy"`` / ``"log_loss"``;
    ``max_depth``, ``min_samples_split``, ``min_samples_leaf``,
    ``min_weight_fraction_leaf``, ``max_features``, ``max_leaf_nodes``,
    ``min_impurity_decrease``, ``class_weight``, ``ccp_alpha``, ``random_state``) plus
    the out-of-core ones in the module docstring.
    """


class DecisionTreeRegressor(TreeRegressorMixin, DecisionTreeBase):
    """A CART regression tree (``criterion="squared_error"``), scikit-learn's
    ``DecisionTreeRegressor`` grown out of core. See :class:`DecisionTreeClassifier`."""
