"""The parameters of ``--learner hoeffding-tree`` and ``online-bagging``: river's names
and defaults (``config.resolve_config`` checks the rules between them)."""
from ...utils.params import Param, ParamSpec
from ..common import cart_params as cart

HOEFFDING_SPEC = ParamSpec("hoeffding-tree and online-bagging", [
    Param("grace_period", "float", 200, "rows a leaf sees between split attempts",
          low=0.0, low_open=True),
    Param("max_depth", "int", None, "depth limit (None: none)", low=1),
    Param("split_criterion", "choice", "info_gain", "classifier: merit of a split",
          choices=("info_gain", "gini")),
    Param("delta", "float", 1e-7, "Hoeffding bound's allowed error", low=0.0, low_open=True,
          high=1.0, high_open=True),
    Param("tau", "float", 0.05, "ties: split when the bound is below this", low=0.0),
    Param("leaf_prediction", "choice", None, "classifier mc, nb or nba; regressor mean",
          choices=("mc", "nb", "nba", "mean"), default_doc="nba (classifier), mean "
                                                          "(regressor)"),
    Param("nb_threshold", "float", 0, "nba: rows before naive Bayes is tried", low=0.0),
    Param("min_branch_fraction", "float", 0.01, "classifier: weight share of the smaller "
                                                "branch at least", low=0.0, high=0.5,
          high_open=True),
    Param("max_share_to_split", "float", 0.99, "classifier: no split when one class holds "
                                               "this share", low=0.0, low_open=True,
          high=1.0),
    Param("min_samples_split", "float", 5, "regressor: rows a leaf needs to split",
          low=0.0),
    Param("merit_preprune", "bool", True, "compare a split with not splitting"),
    Param("split_revision", "bool", False, "classifier: revisit splits (Extremely Fast "
                                           "Decision Tree)"),
    Param("min_samples_reevaluate", "float", 20, "split_revision: rows between revisions",
          low=0.0, low_open=True),
    Param("max_leaves", "int", None, "leaf limit (None: none)", low=1),
    cart.TASK,
    Param("seed", "int", 0, "online bagging: the Poisson draws", low=0,
          aliases=("random_state",)),
    cart.PREFETCH,
    Param("batch_rows", "int", None, "rows learned per batch (None: from the memory plan)",
          low=1),
])
