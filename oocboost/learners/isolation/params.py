"""The parameters of ``--learner isolation-forest``: scikit-learn's ``IsolationForest``
names and defaults, plus ours for reading out of core."""
from ...utils.params import Param, ParamSpec
from ..common import cart_params as cart

ISOLATION_SPEC = ParamSpec("isolation-forest", [
    Param("max_samples", "any", "auto", "rows each tree is grown on: 'auto' (min(256, "
                                        "rows)), an int, or a fraction of the rows"),
    Param("contamination", "any", "auto", "share of outliers in the training rows: "
                                          "'auto' (the paper's threshold, score 0.5) or a "
                                          "float in (0, 0.5]"),
    Param("max_features", "any", 1.0, "features each tree sees: an int or a fraction"),
    Param("bootstrap", "bool", False, "draw each tree's rows with replacement"),
    Param("trees_per_pass", "int", None, "trees whose rows one read of the data gathers "
                                         "(None: from the memory plan)", low=1),
    cart.N_JOBS,
    cart.RANDOM_STATE, cart.VERBOSE,
    cart.PREFETCH,
])
