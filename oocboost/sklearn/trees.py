"""scikit-learn style decision trees, random forests, extra trees and bagging (out of core).

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
  for ``splitter="best"``; extra trees learn it too).
* ``criterion`` supports gini, entropy/log_loss and squared_error.

Example
-------
>>> from oocboost.sklearn.trees import RandomForestClassifier       # doctest: +SKIP
>>> rf = RandomForestClassifier(n_estimators=200, oob_score=True, random_state=0,
...                             memory_limit="2GB").fit(cache)         # doctest: +SKIP
>>> rf.oob_score_, rf.predict_proba(X_test)[:, 1]                      # doctest: +SKIP
"""
import numpy as np

from ..errors import ParameterError
from .boosting import ParamsMixin, TrainingData
from ..learners.forest import config as _config
from ..learners.forest import forest as _forest
from ..learners.forest import passes as _passes



def _to_py(values):
    return [v.item() if hasattr(v, "item") else v for v in values]


class _TreeEnsembleBase(ParamsMixin):
    """Shared fit/predict; subclasses set ``_learner`` and ``_task``."""

    _learner = None
    _task = None

    # ------------------------------------------------------------------ parameters
    def _learner_params(self):
        return self.get_params()

    def _n_trees(self):
        return int(getattr(self, "n_estimators", 1))

    # ------------------------------------------------------------------ fitting
    def fit(self, X, y=None, sample_weight=None):
        """Grow the trees.

        Parameters
        ----------
        X : array-like (n_rows, n_features), DataFrame, or Cache
            With a Cache, ``y`` and ``sample_weight`` must be None (the cache has them).
        y : array-like (n_rows,)
            Class labels (any sortable values) or targets.
        sample_weight : array-like (n_rows,) or None

        Returns
        -------
        self
        """
        from ..cache.store import Cache

        params = self._learner_params()
        classification = self._task == "classification"
        data = TrainingData(self.cache_dir, self.memory_limit, self.max_bin)
        try:
            if isinstance(X, Cache):
                if sample_weight is not None:
                    raise ParameterError("when X is a Cache its sample weights come from the "
                                         "cache: pass sample_weight=None")
                cache = data.cache(X, y)
                if classification:
                    classes = _passes.cache_classes(cache)
                    if classes is None or len(classes) < 2:
                        raise ParameterError(f"cache {cache.path}: labels must be class "
                                             f"indices 0..K-1 with K >= 2")
                    classes_ = np.asarray(classes)
                    y_code = None
            else:
                if y is None:
                    raise ParameterError("y is required when X is not a Cache")
                y_arr = np.asarray(y)
                if classification:
                    if y_arr.ndim != 1:
                        raise ParameterError(f"y must be 1-D, got shape {y_arr.shape}")
                    classes_, y_code = np.unique(y_arr, return_inverse=True)
                    if len(classes_) < 2:
                        raise ParameterError(f"y has a single class ({_to_py(classes_)}); "
                                             f"classification needs at least two")
                    if getattr(self, "warm_start", False) and hasattr(self, "classes_") \
                            and not np.array_equal(classes_, self.classes_):
                        raise ParameterError("warm_start: y has other classes than the "
                                             "first fit")
                    cache = data.cache(X, y_code.astype(np.float64), sample_weight)
                else:
                    cache = data.cache(X, y_arr.astype(np.float64), sample_weight)
            counts = None
            if classification:
                counts = _passes.label_summary(cache, "classification", len(classes_))
            else:
                _passes.label_summary(cache, "regression")
            config = _config.resolve_config(
                self._learner, params, task=self._task, n_rows=cache.n_rows,
                n_features=cache.n_features,
                classes=_to_py(classes_) if classification else None, class_counts=counts)
            if getattr(self, "warm_start", False) and hasattr(self, "model_") \
                    and self.model_.n_trees:
                config.seed = int(self.model_.attributes.get("seed", config.seed))
                model = self.model_
                if list(model.feature_names) != list(cache.feature_names):
                    raise ParameterError("warm_start: X has other features than the first fit")
            else:
                model = None
            self.model_, node_stats, oob = _forest.train_forest(
                cache, config, self._n_trees(), model=model,
                classes=_to_py(classes_) if classification else None)
        finally:
            data.close()
        if classification:
            self.classes_ = classes_
            self.n_classes_ = len(classes_)
        self.n_features_in_ = self.model_.n_features
        self.feature_names_in_ = np.array(self.model_.feature_names, dtype=object)
        self.n_outputs_ = 1
        self._node_stats = node_stats
        self.config_ = config
        if config.oob_score:
            self.oob_score_ = self.model_.attributes["oob_score"]
            if classification:
                self.oob_decision_function_ = oob
            else:
                self.oob_prediction_ = None if oob is None else oob[:, 0]
        return self

    # ------------------------------------------------------------------ fitted
    def _check_fitted(self):
        if not hasattr(self, "model_"):
            raise ParameterError(f"this {type(self).__name__} is not fitted yet: call fit")

    def _raw(self, X):
        from ..model.predict import predict

        self._check_fitted()
        return predict(self.model_, X, output_margin=True)

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
            return np.zeros(n_features)
        mean = np.mean(per_tree, axis=0)
        total = mean.sum()
        return mean / total if total > 0 else mean

    def apply(self, X):
        """Leaf index of each row: (n_rows,) for a tree, (n_rows, n_estimators) for an
        ensemble (node ids of the model's trees)."""
        from ..model.predict import predict

        self._check_fitted()
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

    def save_model(self, path):
        """Save the fitted model as JSON (``oocboost.load_model``, CLI predict/evaluate)."""
        self._check_fitted()
        self.model_.save_model(path)


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


class _ClassifierMixin:
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
        self._check_fitted()
        return self.classes_[np.argmax(self.predict_proba(X), axis=1)]

    def score(self, X, y, sample_weight=None):
        """Accuracy."""
        hit = (self.predict(X) == np.asarray(y)).astype(np.float64)
        return float(np.average(hit, weights=sample_weight))


class _RegressorMixin:
    _task = "regression"

    def predict(self, X):
        """Mean of the trees' leaf means (n_rows,)."""
        return np.asarray(self._raw(X), dtype=np.float64).reshape(-1)

    def score(self, X, y, sample_weight=None):
        """R^2."""
        from ..model.metrics import get_metric

        return float(get_metric("r2")(np.asarray(y, np.float64), self.predict(X),
                                      sample_weight))


# ---------------------------------------------------------------------- decision trees
class _DecisionTree(_TreeEnsembleBase):
    _learner = "decision_tree"

    def __init__(self, *, criterion=None, splitter="best", max_depth=None,
                 min_samples_split=2, min_samples_leaf=1, min_weight_fraction_leaf=0.0,
                 max_features=None, random_state=None, max_leaf_nodes=None,
                 min_impurity_decrease=0.0, class_weight=None, ccp_alpha=0.0,
                 leaves_per_pass=None, n_jobs=None, memory_limit=None, cache_dir=None,
                 max_bin=256, prefetch=None):
        self.criterion = criterion
        self.splitter = splitter
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
        return self._node_stats[0]["impurity"]

    @property
    def tree_weighted_n_node_samples_(self):
        return self._node_stats[0]["weighted_n"]

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


class DecisionTreeClassifier(_ClassifierMixin, _DecisionTree):
    """A CART classification tree (scikit-learn's ``DecisionTreeClassifier``), grown out
    of core: one data pass per level (or per ``leaves_per_pass`` leaves with
    ``max_leaf_nodes``).

    Parameters are scikit-learn's (``criterion="gini"``, ``"entropy"`` / ``"log_loss"``;
    ``max_depth``, ``min_samples_split``, ``min_samples_leaf``,
    ``min_weight_fraction_leaf``, ``max_features``, ``max_leaf_nodes``,
    ``min_impurity_decrease``, ``class_weight``, ``ccp_alpha``, ``random_state``) plus
    the out-of-core ones in the module docstring.
    """


class DecisionTreeRegressor(_RegressorMixin, _DecisionTree):
    """A CART regression tree (``criterion="squared_error"``), scikit-learn's
    ``DecisionTreeRegressor`` grown out of core. See :class:`DecisionTreeClassifier`."""


# ---------------------------------------------------------------------- forests
class _Forest(_TreeEnsembleBase):
    def __init__(self, n_estimators=100, *, criterion=None, max_depth=None,
                 min_samples_split=2, min_samples_leaf=1, min_weight_fraction_leaf=0.0,
                 max_features="default", max_leaf_nodes=None, min_impurity_decrease=0.0,
                 bootstrap="default", oob_score=False, n_jobs=None, random_state=None,
                 verbose=0, warm_start=False, class_weight=None, ccp_alpha=0.0,
                 max_samples=None, trees_per_pass=None, leaves_per_pass=None,
                 memory_limit=None, cache_dir=None, max_bin=256, prefetch=None):
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

    def _learner_params(self):
        p = self.get_params()
        if p["criterion"] is None:
            p.pop("criterion")
        for name in ("max_features", "bootstrap"):
            if isinstance(p[name], str) and p[name] == "default":
                p.pop(name)  # the learner's scikit-learn default
        p.pop("warm_start")
        p.pop("n_estimators")
        return p


class RandomForestClassifier(_ClassifierMixin, _Forest):
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


class RandomForestRegressor(_RegressorMixin, _Forest):
    """Random forest for regression (``max_features=1.0``, ``bootstrap=True``); the
    prediction is the mean of the trees'. ``oob_score=True`` adds ``oob_score_`` (R^2) and
    ``oob_prediction_``. See :class:`RandomForestClassifier`."""

    _learner = "random_forest"


class ExtraTreesClassifier(_ClassifierMixin, _Forest):
    """Extremely randomised trees (Geurts et al. 2006; scikit-learn's
    ``ExtraTreesClassifier``: ``bootstrap=False``, ``max_features="sqrt"``): one random
    threshold per candidate feature and node, the best of those is taken."""

    _learner = "extra_trees"


class ExtraTreesRegressor(_RegressorMixin, _Forest):
    """Extremely randomised trees for regression (``max_features=1.0``,
    ``bootstrap=False``). See :class:`ExtraTreesClassifier`."""

    _learner = "extra_trees"


# ---------------------------------------------------------------------- bagging
_TREE_PARAMS = ("criterion", "splitter", "max_depth", "min_samples_split",
                "min_samples_leaf", "min_weight_fraction_leaf", "max_leaf_nodes",
                "min_impurity_decrease", "class_weight", "ccp_alpha", "leaves_per_pass")


class _Bagging(_TreeEnsembleBase):
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

    def _learner_params(self):
        est = self.estimator if self.estimator is not None else self._tree_class()
        if not isinstance(est, _DecisionTree):
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


class BaggingClassifier(_ClassifierMixin, _Bagging):
    """Bagging of decision trees (scikit-learn's ``BaggingClassifier`` over our
    :class:`DecisionTreeClassifier`): each tree sees a bootstrap of the rows
    (Poisson(max_samples) copies per row; without ``bootstrap``, each row with
    probability ``max_samples``) and ``max_features`` columns (drawn with replacement
    when ``bootstrap_features``); predictions average the trees' class proportions
    (soft vote, as scikit-learn does for estimators with ``predict_proba``)."""

    _tree_class = DecisionTreeClassifier


class BaggingRegressor(_RegressorMixin, _Bagging):
    """Bagging of :class:`DecisionTreeRegressor` trees; the prediction is their mean.
    See :class:`BaggingClassifier`."""

    _tree_class = DecisionTreeRegressor


# ---------------------------------------------------------------------- functions
def export_text(decision_tree, feature_names=None, *, max_depth=10, spacing=3, decimals=2,
                show_weights=False, tree_index=0, show_missing=False):
    """A readable dump of a fitted tree in scikit-learn's ``export_text`` layout.

    Parameters
    ----------
    decision_tree : fitted estimator of this module, or oocboost Model
    feature_names : list of str or None
        Default: the model's feature names.
    max_depth : int
        Deeper nodes are shown as ``truncated branch``.
    spacing, decimals : int
    show_weights : bool
        Classification: the weighted class counts at each leaf.
    tree_index : int
        Tree of an ensemble to show.
    show_missing : bool
        Mark the side missing values go to with ``(missing)``.

    Returns
    -------
    str

    Examples
    --------
    >>> print(export_text(DecisionTreeClassifier(max_depth=1).fit(X, y)))  # doctest: +SKIP
    |--- petal_width <= 0.80
    |   |--- class: 0
    |--- petal_width >  0.80
    |   |--- class: 1
    """
    model = getattr(decision_tree, "model_", decision_tree)
    tree = model.trees[tree_index]
    names = list(feature_names) if feature_names is not None else list(model.feature_names)
    if len(names) != model.n_features:
        raise ParameterError(f"feature_names has {len(names)} names, the model "
                             f"{model.n_features} features")
    classes = getattr(decision_tree, "classes_", None)
    if classes is None and model.classes is not None:
        classes = np.asarray(model.classes)
    classification = model.objective == "multi:proba"
    cats = None
    if model.bin_mapper:
        from ..cache.binning import BinMapper

        cats = BinMapper.from_dict(model.bin_mapper).categories
    lines = []
    pad = " " * spacing

    def leaf_text(node, depth):
        indent = ("|" + pad) * depth + "|" + "-" * spacing
        v = tree.value[node]
        if classification:
            k = int(np.argmax(v))
            label = classes[k] if classes is not None else k
            text = f"{indent} class: {label}"
            if show_weights:
                w = np.round(v * tree.cover[node], decimals)
                text = f"{indent} weights: {list(w)} class: {label}"
        else:
            text = f"{indent} value: [{np.round(v[0], decimals)}]"
        lines.append(text)

    def walk(node, depth):
        indent = ("|" + pad) * depth + "|" + "-" * spacing
        if tree.left[node] < 0:
            leaf_text(node, depth)
            return
        if depth >= max_depth:
            lines.append(f"{indent} truncated branch of depth "
                         f"{_subtree_depth(tree, node)}")
            return
        f = int(tree.feature[node])
        miss = miss_r = ""
        if show_missing:
            miss, miss_r = ((" (missing)", "") if tree.default_left[node]
                            else ("", " (missing)"))
        if tree.is_categorical[node]:
            codes = [c for c in range(tree.cat_bitset.shape[1] * 32)
                     if (tree.cat_bitset[node, c >> 5] >> (c & 31)) & 1]
            names_f = cats[f] if cats and cats[f] else None
            shown = [names_f[c] if names_f and c < len(names_f) else str(c) for c in codes]
            lines.append(f"{indent} {names[f]} in {{{', '.join(map(str, shown))}}}{miss}")
            walk(int(tree.left[node]), depth + 1)
            lines.append(f"{indent} {names[f]} not in {{{', '.join(map(str, shown))}}}"
                         f"{miss_r}")
            walk(int(tree.right[node]), depth + 1)
            return
        thr = f"{tree.threshold[node]:.{decimals}f}"
        lines.append(f"{indent} {names[f]} <= {thr}{miss}")
        walk(int(tree.left[node]), depth + 1)
        lines.append(f"{indent} {names[f]} >  {thr}{miss_r}")
        walk(int(tree.right[node]), depth + 1)

    walk(0, 0)
    return "\n".join(lines) + "\n"


def _subtree_depth(tree, node):
    depth, frontier = 0, [node]
    while True:
        children = [c for n in frontier if tree.left[n] >= 0
                    for c in (int(tree.left[n]), int(tree.right[n]))]
        if not children:
            return depth
        depth += 1
        frontier = children


def _scorer(estimator, scoring):
    """(name, kind): accuracy for classifiers, r2 for regressors by default."""
    classification = getattr(estimator, "_task", None) == "classification"
    if scoring is None:
        scoring = "accuracy" if classification else "r2"
    if scoring not in ("accuracy", "r2", "neg_mean_squared_error"):
        raise ParameterError(f"scoring must be None, 'accuracy', 'r2' or "
                             f"'neg_mean_squared_error'; got {scoring!r}")
    if scoring == "accuracy" and not classification:
        raise ParameterError("scoring='accuracy' needs a classifier")
    return scoring


class _ScoreSums:
    """Block-decomposable sums for accuracy, R^2 and MSE (weighted)."""

    def __init__(self):
        self.w = self.hits = self.sse = self.sy = self.syy = 0.0

    def add(self, y, pred, w, classification):
        w = np.ones(len(y)) if w is None else np.asarray(w, np.float64)
        y = np.asarray(y, np.float64)
        self.w += w.sum()
        if classification:
            self.hits += float(np.sum(w * (np.argmax(pred, axis=1) == y)))
        else:
            p = np.asarray(pred, np.float64).reshape(len(y), -1)[:, 0]
            self.sse += float(np.sum(w * (y - p) ** 2))
            self.sy += float(np.sum(w * y))
            self.syy += float(np.sum(w * y * y))

    def score(self, scoring):
        if scoring == "accuracy":
            return self.hits / self.w
        if scoring == "neg_mean_squared_error":
            return -self.sse / self.w
        sst = self.syy - self.sy * self.sy / self.w
        return 1.0 - self.sse / sst if sst > 0 else 0.0


def permutation_importance(estimator, X, y=None, *, n_repeats=5, random_state=None,
                           scoring=None, sample_weight=None):
    """Permutation importance (Breiman 2001), computed out of core.

    The drop in score when one feature's values are shuffled, ``n_repeats`` times per
    feature.

    * ``X`` a Cache (binned with the model's edges: the training cache or one built with
      ``reference=``): one streaming pass; in each block, each feature's *codes* are
      permuted within the block (a block-local shuffle; the same as a global shuffle when
      rows are in random order) and the block is predicted ``n_features * n_repeats``
      times. Scores are block-decomposable (accuracy, R^2, MSE), so memory stays one
      block. ``y`` must be None (the cache's labels are used; classifier labels are
      class indices).
    * ``X`` an array/DataFrame: held in memory anyway; each column is shuffled globally
      (scikit-learn's procedure).

    Parameters
    ----------
    estimator : fitted estimator of this module
    X : Cache or array-like (n_rows, n_features)
    y : array-like (n_rows,) or None
    n_repeats : int
    random_state : int or None
    scoring : {None, "accuracy", "r2", "neg_mean_squared_error"}
        None: accuracy for classifiers, R^2 for regressors.
    sample_weight : array-like or None (arrays only; a cache brings its weights)

    Returns
    -------
    sklearn.utils.Bunch
        ``importances_mean`` (n_features,), ``importances_std`` (n_features,),
        ``importances`` (n_features, n_repeats): baseline score minus permuted score.
    """
    from sklearn.utils import Bunch

    from ..kernels.cart_stats import permute_in_place
    from ..cache.store import Cache

    estimator._check_fitted()
    scoring = _scorer(estimator, scoring)
    n_repeats = _config.int_param("n_repeats", n_repeats, 1)
    seed = _config.resolve_seed(random_state)
    model = estimator.model_
    classification = estimator._task == "classification"
    n_features = model.n_features
    if isinstance(X, Cache):
        if y is not None or sample_weight is not None:
            raise ParameterError("with a Cache, labels and weights come from the cache: "
                                 "pass y=None and sample_weight=None")
        if X.manifest.get("bin_mapper") != model.bin_mapper:
            raise ParameterError(f"cache {X.path} was binned with other edges than the "
                                 f"model's training data; build it with reference=")
        base = _ScoreSums()
        perm_sums = [[_ScoreSums() for _ in range(n_repeats)] for _ in range(n_features)]
        missing_bin = X.max_bin - 1
        for block in X.iter_blocks(prefetch=1):
            codes = np.array(block.codes)  # a writable copy of one block
            pred = model.predict_margin_binned(codes, missing_bin)
            base.add(block.label, pred, block.weight, classification)
            scratch = np.empty(block.n_rows, codes.dtype)
            for f in range(n_features):
                saved = codes[f].copy()
                for r in range(n_repeats):
                    rng = np.random.default_rng([seed, block.index, f, r])
                    perm = rng.permutation(block.n_rows)
                    codes[f] = saved
                    permute_in_place(codes[f], perm, scratch)
                    pred = model.predict_margin_binned(codes, missing_bin)
                    perm_sums[f][r].add(block.label, pred, block.weight, classification)
                codes[f] = saved
        baseline = base.score(scoring)
        scores = np.array([[s.score(scoring) for s in row] for row in perm_sums])
    else:
        if y is None:
            raise ParameterError("y is required when X is not a Cache")
        y = np.asarray(y)
        rng = np.random.default_rng(seed)

        def score_of(Xp):
            s = _ScoreSums()
            if classification:
                proba = estimator.predict_proba(Xp)
                pos = np.searchsorted(estimator.classes_, y)
                pos = np.clip(pos, 0, len(estimator.classes_) - 1)
                codes_y = np.where(estimator.classes_[pos] == y, pos, -1)
                s.add(codes_y, proba, sample_weight, True)
            else:
                s.add(y, estimator.predict(Xp), sample_weight, False)
            return s.score(scoring)

        baseline = score_of(X)
        scores = np.empty((n_features, n_repeats))
        is_frame = hasattr(X, "iloc")
        for f in range(n_features):
            for r in range(n_repeats):
                perm = rng.permutation(len(y))
                if is_frame:
                    Xp = X.copy()
                    Xp.iloc[:, f] = X.iloc[perm, f].to_numpy()
                else:
                    Xp = np.array(X, copy=True)
                    Xp[:, f] = Xp[perm, f]
                scores[f, r] = score_of(Xp)
    importances = baseline - scores
    return Bunch(importances_mean=importances.mean(axis=1),
                 importances_std=importances.std(axis=1), importances=importances)
