"""Decision streams (Ignatov and Ignatov 2017) as scikit-learn estimators, grown out of
core (``learners/decision_stream``): a CART tree whose new nodes, at every level, merge
while a two-sample test cannot tell their labels apart, so branches rejoin and the
model is a directed acyclic graph with fewer leaves than the tree.

Example
-------
>>> from oocboost import DecisionStreamClassifier                       # doctest: +SKIP
>>> ds = DecisionStreamClassifier(max_depth=12, significance=0.05).fit(X, y)  # doctest: +SKIP
>>> ds.n_leaves_, ds.score(X_test, y_test)                               # doctest: +SKIP
"""
import numpy as np

from ..learners.decision_stream.learn import resolve_stream_config
from ..learners.decision_stream.train import train_stream_model
from .trees import TreeClassifierMixin, TreeEnsembleBase, TreeRegressorMixin, _to_py


class _DecisionStream(TreeEnsembleBase):
    _learner = "decision_stream"

    def __init__(self, *, criterion=None, max_depth=None, min_samples_split=2,
                 min_samples_leaf=1, min_impurity_decrease=0.0, significance=0.05,
                 n_jobs=None, memory_limit=None, cache_dir=None, max_bin=256,
                 prefetch=None):
        self.criterion = criterion
        self.max_depth = max_depth
        self.min_samples_split = min_samples_split
        self.min_samples_leaf = min_samples_leaf
        self.min_impurity_decrease = min_impurity_decrease
        self.significance = significance
        self.n_jobs = n_jobs
        self.memory_limit = memory_limit
        self.cache_dir = cache_dir
        self.max_bin = max_bin
        self.prefetch = prefetch

    def _train(self, cache, classes_, counts, params):
        config = resolve_stream_config(
            params, task=self._task, n_rows=cache.n_rows,
            n_classes=len(classes_) if classes_ is not None else 0)
        self.model_ = train_stream_model(cache, config,
                                         None if classes_ is None else _to_py(classes_))
        self.config_ = config

    @property
    def n_leaves_(self):
        """Leaves of the stream (int)."""
        self._check_fitted()
        return self.model_.trees[0].n_leaves

    @property
    def n_nodes_(self):
        """Nodes of the stream (int); several parents may share one."""
        self._check_fitted()
        return self.model_.trees[0].n_nodes

    @property
    def depth_(self):
        """Levels of the stream (int)."""
        self._check_fitted()
        return self.model_.trees[0].depth

    def apply(self, X):
        """Leaf node id of each row (n_rows,)."""
        return np.asarray(super().apply(X)).reshape(-1)

    def decision_path(self, X):
        """Not defined: a row's leaf does not tell its path through a graph whose nodes
        have several parents (``apply`` gives the leaf)."""
        from ..errors import ParameterError

        raise ParameterError("a decision stream's nodes are shared by several parents, so "
                             "a row's path is not a function of its leaf; use apply(X) "
                             "for the leaves")

    def get_depth(self):
        return self.depth_

    def get_n_leaves(self):
        return self.n_leaves_


class DecisionStreamClassifier(TreeClassifierMixin, _DecisionStream):
    """Decision stream classifier.

    Parameters
    ----------
    criterion : {"gini", "entropy", "log_loss"} or None, default None (gini)
    max_depth : int or None, default None
        Levels at most; None grows until no node splits.
    min_samples_split, min_samples_leaf : int or float, default 2, 1
        scikit-learn's rules, on each merged node.
    min_impurity_decrease : float, default 0.0
    significance : float in (0, 1], default 0.05
        Two new nodes merge while the chi-square test of homogeneity of their class
        weights has a p-value above it (larger: more merging, fewer leaves).
    n_jobs, memory_limit, cache_dir, max_bin, prefetch :
        As for :class:`~oocboost.DecisionTreeClassifier`.

    Attributes
    ----------
    classes_, n_classes_, model_ (one tree whose nodes may have several parents),
    n_leaves_, n_nodes_, depth_, feature_importances_
    """


class DecisionStreamRegressor(TreeRegressorMixin, _DecisionStream):
    """Decision stream regressor: new nodes merge while Welch's test cannot tell their
    mean targets apart (p-value above ``significance``). See
    :class:`DecisionStreamClassifier`."""


__all__ = ["DecisionStreamClassifier", "DecisionStreamRegressor"]
