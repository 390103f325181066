"""Adaptive random forests (Gomes et al. 2017) as a scikit-learn incremental estimator
with river's ``forest.ARFClassifier`` names and defaults: online bagging of Hoeffding
trees with Poisson(6) copies, a random subset of features at every leaf, and ADWIN drift
detection replacing each tree whose error rises (``learners/hoeffding/adaptive.py``).

Example
-------
>>> from oocboost import AdaptiveRandomForestClassifier                  # doctest: +SKIP
>>> arf = AdaptiveRandomForestClassifier(n_models=10, seed=0)            # doctest: +SKIP
>>> for X, y in chunks:                                                  # doctest: +SKIP
...     arf.partial_fit(X, y, classes=[0, 1])
>>> arf.prequential_score_["accuracy"]                                   # doctest: +SKIP
"""
from ..errors import ParameterError
from ..learners.common.validate import int_param, resolve_seed
from ..learners.hoeffding.adaptive import new_adaptive_forest
from ..learners.hoeffding.stream import poisson_draws
from .hoeffding import HoeffdingTreeClassifier, HoeffdingTreeRegressor


class _AdaptiveForestMixin:
    """What both adaptive random forests share (module docstring)."""

    def _n_trees(self):
        return int_param("n_models", self.n_models, 1)

    def _config(self, n_classes):
        if isinstance(self.lambda_value, bool) or not isinstance(
                self.lambda_value, (int, float)) or not 0.0 < self.lambda_value <= 32.0:
            raise ParameterError(f"lambda_value must be a number in (0, 32], got "
                                 f"{self.lambda_value!r}")
        return super()._config(n_classes)

    def _make_learners(self, mapper, block_rows, code_bytes_per_row):
        learners, self._forest = new_adaptive_forest(
            self._config_, mapper, self._n_trees(), max_features=self.max_features,
            seed=self.seed_, drift_delta=self.drift_delta, warning_delta=self.warning_delta,
            weighted_vote=not self.disable_weighted_vote,
            aggregation=getattr(self, "aggregation_method", "mean"), block_rows=block_rows,
            code_bytes_per_row=code_bytes_per_row, prefetch=self.prefetch)
        return learners

    def _draws(self, model=None):
        self.seed_ = resolve_seed(self.seed)
        return poisson_draws(self.seed_, self._n_trees(), float(self.lambda_value))

    def _ensemble(self):
        return self._forest

    def _rows_seen(self):
        return self._forest.rows_seen

    def _tree_weights(self):
        return self._forest.vote_weights()

    def _aggregation(self):
        return self._forest.model_aggregation()

    def _restore(self, init_model):
        raise ParameterError("an adaptive random forest keeps its drift detectors and "
                             "background trees in memory only: go on learning with "
                             "partial_fit, or fit again (init_model is not offered)")

    @property
    def n_warnings_detected_(self):
        """(n_models,) warnings each tree position has raised."""
        self._check_fitted()
        return self._forest.n_warnings.copy()

    @property
    def n_drifts_detected_(self):
        """(n_models,) drifts each tree position has raised (each replaced its tree)."""
        self._check_fitted()
        return self._forest.n_drifts.copy()


class AdaptiveRandomForestClassifier(_AdaptiveForestMixin, HoeffdingTreeClassifier):
    """Adaptive random forest classifier (river's ``ARFClassifier``).

    Parameters
    ----------
    n_models : int, default 10
        Trees.
    max_features : "sqrt", "log2", int, float or None, default "sqrt"
        Features each leaf may split on (drawn per leaf).
    lambda_value : float, default 6
        Mean of the Poisson copies of each row in each tree.
    disable_weighted_vote : bool, default False
        Average the trees' votes instead of weighing them by their accuracy.
    drift_delta : float or None, default 0.001
        Confidence of each tree's drift detector (river's ``drift_detector=ADWIN(0.001)``);
        None: no drift detection.
    warning_delta : float or None, default 0.01
        Confidence of its warning detector, which starts a background tree (river's
        ``warning_detector=ADWIN(0.01)``); None: no background trees.
    seed : int or None
        The Poisson copies and the leaves' feature draws (None: a fresh seed).
    grace_period, max_depth, split_criterion, delta, tau, leaf_prediction, nb_threshold,
    min_branch_fraction, max_share_to_split, merit_preprune : each tree's, river's ARF
        defaults (``grace_period=50``, ``delta=0.01``).
    memory_limit, max_bin, cache_dir, prefetch, reference, batch_rows : as
        :class:`HoeffdingTreeClassifier` (histograms planned for every tree and a
        background tree each).
    """
    _DEFAULTS_DIFFER = {"seed": "None draws a fresh seed, as river's None",
                        "leaf_prediction": "river's classifier default, nba",
                        "disable_weighted_vote": "river's classifier default, False"}
    _learner_name = "adaptive_random_forest"

    def __init__(self, n_models=10, max_features="sqrt", lambda_value=6,
                 disable_weighted_vote=False, drift_delta=0.001, warning_delta=0.01,
                 grace_period=50, max_depth=None, split_criterion="info_gain", delta=0.01,
                 tau=0.05, leaf_prediction="nba", nb_threshold=0, min_branch_fraction=0.01,
                 max_share_to_split=0.99, merit_preprune=True, seed=None,
                 memory_limit=None, max_bin=256, cache_dir=None, prefetch=None,
                 reference=None, batch_rows=None):
        self.n_models = n_models
        self.max_features = max_features
        self.lambda_value = lambda_value
        self.disable_weighted_vote = disable_weighted_vote
        self.drift_delta = drift_delta
        self.warning_delta = warning_delta
        self.seed = seed
        super().__init__(grace_period=grace_period, max_depth=max_depth,
                         split_criterion=split_criterion, delta=delta, tau=tau,
                         leaf_prediction=leaf_prediction, nb_threshold=nb_threshold,
                         min_branch_fraction=min_branch_fraction,
                         max_share_to_split=max_share_to_split,
                         merit_preprune=merit_preprune, memory_limit=memory_limit,
                         max_bin=max_bin, cache_dir=cache_dir, prefetch=prefetch,
                         reference=reference, batch_rows=batch_rows)


class AdaptiveRandomForestRegressor(_AdaptiveForestMixin, HoeffdingTreeRegressor):
    """Adaptive random forest regressor (river's ``ARFRegressor`` with
    ``leaf_prediction="mean"``): the detectors read each tree's error ``y - prediction``
    scaled to ``(e + 3 sd) / (6 sd)`` by the standard deviation of its errors so far, and
    the forest predicts the trees' median (``aggregation_method="median"``, the model's
    ``"median"`` aggregation) or their mean, weighted by ``sum(MSE) - MSE_t`` unless
    ``disable_weighted_vote`` (river's default True).

    Parameters
    ----------
    n_models, max_features, lambda_value, drift_delta, warning_delta, seed : as
        :class:`AdaptiveRandomForestClassifier`
    aggregation_method : {"median", "mean"}, default "median"
    disable_weighted_vote : bool, default True
    grace_period, max_depth, delta, tau, min_samples_split, merit_preprune : each tree's
        (river's ARF defaults ``grace_period=50``, ``delta=0.01``)
    leaf_prediction : {"mean"}
        river's default, linear leaves (``"adaptive"``), is not offered.
    memory_limit, max_bin, cache_dir, prefetch, reference, batch_rows : as
        :class:`HoeffdingTreeRegressor`

    Where it differs from river besides batches: with ``aggregation_method="mean"`` and
    weighted votes, river multiplies the normalised weights into the predictions and
    then averages them (a prediction ``n_models`` times too small); this takes their
    weighted mean.
    """
    _DEFAULTS_DIFFER = {"seed": "None draws a fresh seed, as river's None",
                        "leaf_prediction": "the mean (river's linear leaves are not "
                                           "offered)",
                        "disable_weighted_vote": "river's regressor default, True"}
    _learner_name = "adaptive_random_forest"

    def __init__(self, n_models=10, max_features="sqrt", aggregation_method="median",
                 lambda_value=6, disable_weighted_vote=True, drift_delta=0.001,
                 warning_delta=0.01, grace_period=50, max_depth=None, delta=0.01,
                 tau=0.05, leaf_prediction="mean", min_samples_split=5,
                 merit_preprune=True, seed=None, memory_limit=None, max_bin=256,
                 cache_dir=None, prefetch=None, reference=None, batch_rows=None):
        self.n_models = n_models
        self.max_features = max_features
        self.aggregation_method = aggregation_method
        self.lambda_value = lambda_value
        self.disable_weighted_vote = disable_weighted_vote
        self.drift_delta = drift_delta
        self.warning_delta = warning_delta
        self.seed = seed
        super().__init__(grace_period=grace_period, max_depth=max_depth, delta=delta,
                         tau=tau, leaf_prediction=leaf_prediction,
                         min_samples_split=min_samples_split,
                         merit_preprune=merit_preprune, memory_limit=memory_limit,
                         max_bin=max_bin, cache_dir=cache_dir, prefetch=prefetch,
                         reference=reference, batch_rows=batch_rows)
