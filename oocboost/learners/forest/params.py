"""The parameters of ``--learner random-forest``, ``extra-trees`` and ``decision-tree``:
scikit-learn's names and defaults, plus ours for reading out of core."""
from ...utils.params import Param, ParamSpec
from ..common import cart_params as cart

FOREST_SPEC = ParamSpec("forests and trees", [
    cart.CRITERION, cart.SPLITTER, cart.MAX_DEPTH, cart.MIN_SAMPLES_SPLIT,
    cart.MIN_SAMPLES_LEAF, cart.MIN_WEIGHT_FRACTION_LEAF, cart.MAX_FEATURES,
    cart.MAX_LEAF_NODES, cart.MIN_IMPURITY_DECREASE,
    Param("bootstrap", "bool", None, "draw each tree's rows with replacement",
          default_doc="True (random-forest), False (extra-trees, decision-tree)"),
    Param("oob_score", "any", False, "score each row by the trees that did not draw it "
                                     "(True, or a metric callable(y, pred))"),
    Param("max_samples", "any", None, "rows drawn per tree: an int or a fraction "
                                      "(None: every row)"),
    cart.CLASS_WEIGHT, cart.CCP_ALPHA, cart.QUANTILE_SAMPLES_LEAF, cart.MONOTONIC_CST,
    cart.MISSING_VALUES, cart.MAX_SURROGATES, cart.TREES_PER_PASS, cart.LEAVES_PER_PASS,
    cart.N_JOBS,
    Param("random_state", "any", None, "seed: None, an int, or a numpy generator",
          aliases=("seed",), default_doc="0 on the command line, None (a fresh seed) in "
                                         "the estimators, as scikit-learn"),
    Param("verbose", "int", 0, "0 silent, 1 progress, 2 memory plan", low=0,
          aliases=("verbosity",)),
    cart.PREFETCH, cart.TASK, cart.OBJECTIVE,
])
