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
    cart.MULTIWAY,
    cart.MISSING_VALUES, cart.MAX_SURROGATES, cart.TREES_PER_PASS, cart.LEAVES_PER_PASS,
    cart.N_JOBS,
    cart.RANDOM_STATE, cart.VERBOSE,
    cart.PREFETCH, cart.TASK, cart.OBJECTIVE,
])
