"""The parameters of ``--learner hoeffding-tree``, ``online-bagging`` and
``adaptive-random-forest``: river's names and defaults (``config.resolve_config`` checks
the rules between them)."""
import dataclasses

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
    Param("min_samples_split", "float", 5, "regressor: weight each side of a split needs",
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

#: river's ARFClassifier / ARFRegressor: their trees' defaults, and the forest's own
#: parameters.
_ARF_TREE_DEFAULTS = {"grace_period": 50, "delta": 0.01}
_NOT_IN_ARF = ("split_revision", "min_samples_reevaluate")

ADAPTIVE_FOREST_SPEC = ParamSpec("adaptive-random-forest", [
    *(dataclasses.replace(p, default=_ARF_TREE_DEFAULTS[p.name])
      if p.name in _ARF_TREE_DEFAULTS else p
      for p in HOEFFDING_SPEC if p.name not in _NOT_IN_ARF),
    Param("aggregation_method", "choice", "median", "regressor: the trees' median or mean",
          choices=("median", "mean")),
    Param("max_features", "any", "sqrt", "features a leaf may split on: 'sqrt', 'log2', "
                                         "a count, a share in (0, 1], or None (all)"),
    Param("lambda_value", "float", 6.0, "mean of each row's Poisson copies in a tree",
          low=0.0, low_open=True, high=32.0),
    Param("disable_weighted_vote", "bool", None, "average the votes (else by accuracy, "
                                                 "a regressor's by its squared error)",
          default_doc="False (classifier), True (regressor)"),
    Param("drift_delta", "float", 0.001, "ADWIN confidence of a tree's drift detector "
                                         "(None: no drift detection)", low=0.0,
          low_open=True, high=1.0, high_open=True, nullable=True),
    Param("warning_delta", "float", 0.01, "ADWIN confidence of its warning detector, "
                                          "which starts a background tree (None: none)",
          low=0.0, low_open=True, high=1.0, high_open=True, nullable=True),
])

#: river's HoeffdingAdaptiveTreeClassifier / Regressor: the tree's parameters and its
#: drift handling.
ADAPTIVE_TREE_SPEC = ParamSpec("hoeffding-adaptive-tree", [
    *(p for p in HOEFFDING_SPEC if p.name not in _NOT_IN_ARF),
    Param("bootstrap_sampling", "bool", True, "learn each row max(1, Poisson(1)) times"),
    Param("drift_window_threshold", "float", 300, "rows a node and its alternate need "
                                                  "before they are compared", low=0.0),
    Param("drift_delta", "float", 0.002, "ADWIN confidence of each node's detector",
          low=0.0, low_open=True, high=1.0, high_open=True),
    Param("switch_significance", "float", 0.05, "significance of the switch test",
          low=0.0, low_open=True, high=1.0, high_open=True),
])
