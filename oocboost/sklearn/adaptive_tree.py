"""Hoeffding adaptive trees (Bifet and Gavaldà 2009) as a scikit-learn incremental
estimator with river's ``tree.HoeffdingAdaptiveTreeClassifier`` names and defaults: a
Hoeffding tree whose nodes watch their error with ADWIN and grow alternate subtrees that
replace them when better (``learners/hoeffding/adaptive_tree.py``).

Example
-------
>>> from oocboost import HoeffdingAdaptiveTreeClassifier                 # doctest: +SKIP
>>> hat = HoeffdingAdaptiveTreeClassifier(seed=0)                        # doctest: +SKIP
>>> for X, y in chunks:                                                  # doctest: +SKIP
...     hat.partial_fit(X, y, classes=[0, 1])
"""
from ..errors import ParameterError
from ..learners.common.validate import resolve_seed
from ..learners.hoeffding.adaptive_tree import BootstrapCopies, new_adaptive_tree
from .hoeffding import HoeffdingTreeClassifier, HoeffdingTreeRegressor


class _AdaptiveTreeMixin:
    """The drift handling both adaptive trees share (module docstring)."""

    def _draws(self, model=None):
        self.seed_ = resolve_seed(self.seed)
        if not isinstance(self.bootstrap_sampling, bool):
            raise ParameterError(f"bootstrap_sampling must be True or False, got "
                                 f"{self.bootstrap_sampling!r}")
        return BootstrapCopies(self.seed_, self.bootstrap_sampling)

    def _make_learners(self, mapper, block_rows, code_bytes_per_row):
        learners, self._tree = new_adaptive_tree(
            self._config_, mapper, drift_delta=self.drift_delta,
            drift_window_threshold=self.drift_window_threshold,
            switch_significance=self.switch_significance, block_rows=block_rows,
            code_bytes_per_row=code_bytes_per_row, prefetch=self.prefetch)
        return learners

    def _ensemble(self):
        return self._tree

    def _rows_seen(self):
        return self._tree.rows_seen

    def _restore(self, init_model):
        raise ParameterError("a Hoeffding adaptive tree keeps its detectors and alternate "
                             "trees in memory only: go on learning with partial_fit, or "
                             "fit again (init_model is not offered)")

    @property
    def n_alternate_trees_(self):
        """Alternate trees started so far."""
        self._check_fitted()
        return self._tree.n_alternate_trees

    @property
    def n_switch_alternate_trees_(self):
        """Alternates that replaced their node's subtree."""
        self._check_fitted()
        return self._tree.n_switch_alternate_trees

    @property
    def n_pruned_alternate_trees_(self):
        """Alternates dropped for doing worse."""
        self._check_fitted()
        return self._tree.n_pruned_alternate_trees


class HoeffdingAdaptiveTreeClassifier(_AdaptiveTreeMixin, HoeffdingTreeClassifier):
    """Hoeffding adaptive tree classifier (river's ``HoeffdingAdaptiveTreeClassifier``).

    Parameters
    ----------
    grace_period, max_depth, split_criterion, delta, tau, leaf_prediction, nb_threshold,
    min_branch_fraction, max_share_to_split, merit_preprune : as
        :class:`HoeffdingTreeClassifier` (river's defaults)
    bootstrap_sampling : bool, default True
        Learn each row ``max(1, Poisson(1))`` times.
    drift_window_threshold : int, default 300
        Rows a node and its alternate both need before they are compared.
    drift_delta : float, default 0.002
        Confidence of each node's ADWIN (river's ``drift_detector=ADWIN()``).
    switch_significance : float, default 0.05
        Significance of the test that switches to (or drops) an alternate.
    seed : int or None
        The bootstrap draws (None: a fresh seed).
    memory_limit, max_bin, cache_dir, prefetch, reference, batch_rows : as
        :class:`HoeffdingTreeClassifier` (histograms planned for the tree and as many
        alternates).
    """
    _DEFAULTS_DIFFER = {"seed": "None draws a fresh seed, as river's None",
                        "leaf_prediction": "river's classifier default, nba"}
    _learner_name = "hoeffding_adaptive_tree"

    def __init__(self, grace_period=200, max_depth=None, split_criterion="info_gain",
                 delta=1e-7, tau=0.05, leaf_prediction="nba", nb_threshold=0,
                 bootstrap_sampling=True, drift_window_threshold=300, drift_delta=0.002,
                 switch_significance=0.05, min_branch_fraction=0.01,
                 max_share_to_split=0.99, merit_preprune=True, seed=None,
                 memory_limit=None, max_bin=256, cache_dir=None, prefetch=None,
                 reference=None, batch_rows=None):
        self.bootstrap_sampling = bootstrap_sampling
        self.drift_window_threshold = drift_window_threshold
        self.drift_delta = drift_delta
        self.switch_significance = switch_significance
        self.seed = seed
        super().__init__(grace_period=grace_period, max_depth=max_depth,
                         split_criterion=split_criterion, delta=delta, tau=tau,
                         leaf_prediction=leaf_prediction, nb_threshold=nb_threshold,
                         min_branch_fraction=min_branch_fraction,
                         max_share_to_split=max_share_to_split,
                         merit_preprune=merit_preprune, memory_limit=memory_limit,
                         max_bin=max_bin, cache_dir=cache_dir, prefetch=prefetch,
                         reference=reference, batch_rows=batch_rows)


class HoeffdingAdaptiveTreeRegressor(_AdaptiveTreeMixin, HoeffdingTreeRegressor):
    """Hoeffding adaptive tree regressor (river's ``HoeffdingAdaptiveTreeRegressor``
    with ``leaf_prediction="mean"``): each node's detector reads the absolute errors, and
    an alternate replaces (or is dropped from) its node when a z-test of the two mean
    absolute errors is significant at ``switch_significance``.

    Parameters
    ----------
    grace_period, max_depth, delta, tau, min_samples_split, merit_preprune : as
        :class:`HoeffdingTreeRegressor`
    leaf_prediction : {"mean"}
        The leaf's mean target (river's default is its ``"adaptive"`` linear leaves,
        which need per-row state the engine does not keep; not offered).
    bootstrap_sampling, drift_window_threshold, drift_delta, switch_significance, seed,
    memory_limit, max_bin, cache_dir, prefetch, reference, batch_rows : as
        :class:`HoeffdingAdaptiveTreeClassifier`
    """
    _DEFAULTS_DIFFER = {"seed": "None draws a fresh seed, as river's None",
                        "leaf_prediction": "the mean (river's regressor default, its "
                                           "linear leaves, is not offered)"}
    _learner_name = "hoeffding_adaptive_tree"

    def __init__(self, grace_period=200, max_depth=None, delta=1e-7, tau=0.05,
                 leaf_prediction="mean", min_samples_split=5, bootstrap_sampling=True,
                 drift_window_threshold=300, drift_delta=0.002, switch_significance=0.05,
                 merit_preprune=True, seed=None, memory_limit=None, max_bin=256,
                 cache_dir=None, prefetch=None, reference=None, batch_rows=None):
        self.bootstrap_sampling = bootstrap_sampling
        self.drift_window_threshold = drift_window_threshold
        self.drift_delta = drift_delta
        self.switch_significance = switch_significance
        self.seed = seed
        super().__init__(grace_period=grace_period, max_depth=max_depth, delta=delta,
                         tau=tau, leaf_prediction=leaf_prediction,
                         min_samples_split=min_samples_split,
                         merit_preprune=merit_preprune, memory_limit=memory_limit,
                         max_bin=max_bin, cache_dir=cache_dir, prefetch=prefetch,
                         reference=reference, batch_rows=batch_rows)
