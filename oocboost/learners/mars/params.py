"""The parameters of ``--learner mars``: py-earth's names and defaults, and the
classifier's logistic fit (scikit-learn's ``LogisticRegression`` names)."""
from ...utils.params import Param, ParamSpec
from ..common import cart_params as cart

MARS_SPEC = ParamSpec("mars", [
    Param("max_terms", "int", None, "terms of the forward pass at most", low=2,
          default_doc="min(2 n_features + 1, 41)"),
    Param("max_degree", "int", 1, "hinges multiplied in a term at most", low=1),
    Param("penalty", "float", 3.0, "GCV's cost of a knot", low=0.0),
    Param("thresh", "float", 0.001, "the forward pass stops below this R^2 gain", low=0.0),
    Param("min_span", "int", None, "rows between knots", low=1,
          default_doc="Friedman's endspan"),
    Param("C", "float", 1.0, "classifier: inverse L2 strength of the logistic fit",
          low=0.0, low_open=True),
    Param("max_iter", "int", 100, "classifier: Newton iterations at most", low=1),
    Param("tol", "float", 1e-6, "classifier: convergence tolerance", low=0.0,
          low_open=True),
    cart.N_JOBS, cart.PREFETCH, cart.TASK, cart.OBJECTIVE,
    Param("verbosity", "any", None, "accepted for the command line's habits; unused"),
    Param("seed", "any", None, "accepted and unused: MARS draws nothing",
          aliases=("random_state",)),
])
