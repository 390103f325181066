"""The parameters of ``--learner decision-stream``: scikit-learn's tree names and the
merge test's significance."""
from ...utils.params import Param, ParamSpec
from ..common import cart_params as cart

STREAM_SPEC = ParamSpec("decision-stream", [
    cart.CRITERION, cart.MAX_DEPTH, cart.MIN_SAMPLES_SPLIT, cart.MIN_SAMPLES_LEAF,
    cart.MIN_IMPURITY_DECREASE,
    Param("significance", "float", 0.05, "level of the test that merges similar leaves",
          low=0.0, low_open=True, high=1.0),
    cart.N_JOBS, cart.PREFETCH, cart.TASK, cart.OBJECTIVE,
    Param("verbosity", "any", None, "accepted for the command line's habits; unused"),
    Param("seed", "any", None, "accepted and unused: a decision stream draws nothing",
          aliases=("random_state",)),
])
