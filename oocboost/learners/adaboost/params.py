"""The parameters of ``--learner adaboost``: scikit-learn's AdaBoost names and defaults,
the algorithm, and the weak trees' CART parameters."""
from ...utils.params import Param, ParamSpec
from ..common import cart_params as cart

ADABOOST_SPEC = ParamSpec("adaboost", [
    Param("algorithm", "str", None, "SAMME, SAMME.R, gentle, logitboost, arc-x4, M1, MH "
                                    "or R2 (and their aliases)",
          default_doc="SAMME; R2 with a reg:* objective"),
    Param("learning_rate", "float", 1.0, "shrinks each round's weight", low=0.0,
          low_open=True),
    Param("max_depth", "int", None, "depth of the weak trees", low=1,
          default_doc="1 (classifiers), 3 (R2, the regressor), as scikit-learn"),
    Param("loss", "choice", "linear", "R2's loss", choices=("linear", "square",
                                                           "exponential")),
    Param("n_classes", "int", None, "classes (None: from the labels)", low=2),
    Param("random_state", "any", None, "seed: None, an int, or a numpy generator",
          aliases=("seed",)),
    Param("n_threads", "int", None, "kernel threads (None: every core)", low=1,
          aliases=("n_jobs",)),
    cart.PREFETCH,
    Param("verbosity", "any", None, "accepted for the command line's habits; --verbose "
                                    "prints"),
    cart.OBJECTIVE,
    cart.CRITERION, cart.SPLITTER, cart.MIN_SAMPLES_SPLIT, cart.MIN_SAMPLES_LEAF,
    cart.MIN_WEIGHT_FRACTION_LEAF, cart.MAX_FEATURES, cart.MAX_LEAF_NODES,
    cart.MIN_IMPURITY_DECREASE, cart.CLASS_WEIGHT, cart.CCP_ALPHA,
])
