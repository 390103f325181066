"""Online bagging (Oza and Russell 2001) over Hoeffding trees: every tree learns each
row ``Poisson(1)`` times, the streaming form of the bootstrap. The copies come from the
counter-based hash forests draw their bootstraps with, keyed by (seed, tree, row index in
the stream), so a fit is reproducible for a ``random_state`` whatever the block or chunk
sizes. All trees learn from the same block in the same pass over the data.

river's ``ensemble.BaggingClassifier`` draws its Poisson(1) weights from a random
generator row by row; the distribution is the same, the draws differ.

Example
-------
>>> from oocboost import HoeffdingTreeClassifier, OnlineBaggingClassifier  # doctest: +SKIP
>>> bag = OnlineBaggingClassifier(HoeffdingTreeClassifier(grace_period=100),
...                               n_estimators=10, random_state=0)       # doctest: +SKIP
>>> bag.partial_fit(X_chunk, y_chunk, classes=[0, 1])                    # doctest: +SKIP
"""
from ..errors import ParameterError
from ..learners.common.validate import int_param, resolve_seed
from ..learners.hoeffding.stream import poisson_draws
from .hoeffding import HoeffdingTreeClassifier


class OnlineBaggingClassifier(HoeffdingTreeClassifier):
    """Oza and Russell's online bagging of Hoeffding trees; predicts their mean class
    probabilities.

    Parameters
    ----------
    estimator : HoeffdingTreeClassifier or None
        The trees' parameters (default ``HoeffdingTreeClassifier()``).
    n_estimators : int, default 10
        Trees (river's ``n_models``).
    random_state : int, RandomState, Generator or None
        Seed of the Poisson(1) copies (None: a fresh seed per fit).
    memory_limit : str or int or None
        Peak RSS within which every tree's histograms are kept (split evenly).
    max_bin, cache_dir, prefetch, reference, batch_rows : as
        :class:`HoeffdingTreeClassifier` (a batch ends when any tree's first leaf is due).
    """
    _DEFAULTS_DIFFER = {"random_state": "None draws a fresh seed, as scikit-learn; the "
                                        "command line's seed is 0"}

    _learner_name = "online_bagging"

    def __init__(self, estimator=None, n_estimators=10, random_state=None,
                 memory_limit=None, max_bin=256, cache_dir=None, prefetch=None,
                 reference=None, batch_rows=None):
        self.batch_rows = batch_rows
        self.estimator = estimator
        self.n_estimators = n_estimators
        self.random_state = random_state
        self.memory_limit = memory_limit
        self.max_bin = max_bin
        self.cache_dir = cache_dir
        self.prefetch = prefetch
        self.reference = reference

    def _tree(self):
        tree = self.estimator if self.estimator is not None else HoeffdingTreeClassifier()
        if type(tree) is not HoeffdingTreeClassifier:
            raise ParameterError(f"estimator must be a HoeffdingTreeClassifier, got "
                                 f"{type(tree).__name__}")
        return tree

    def _config(self, n_classes):
        from ..learners.hoeffding.config import resolve_config

        params = self._tree().get_params()
        names = ("grace_period", "max_depth", "delta", "tau", "leaf_prediction",
                 "merit_preprune", "max_leaves", *HoeffdingTreeClassifier._extra_params)
        return resolve_config("classification", n_classes, memory_limit=self.memory_limit,
                              **{k: params[k] for k in names})

    def _n_trees(self):
        return int_param("n_estimators", self.n_estimators, 1)

    def _draws(self, model=None):
        saved = None if model is None else model.attributes.get("seed")
        # continuing a saved ensemble: its seed, so its trees draw as if never stopped
        self.seed_ = int(saved) if isinstance(saved, int) and self.random_state is None \
            else resolve_seed(self.random_state)
        return poisson_draws(self.seed_, self._n_trees())
