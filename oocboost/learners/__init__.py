"""Learners: what each algorithm feeds the shared grower (gradients, bootstrap weights,
sample weights). No learner has its own data loop: all go through
store -> prefetch -> histogram -> split -> grow.

``train_learner`` is the command line's entry for the non-boosting learners.
"""


def train_learner(name, params, cache, *, n_estimators=100, memory_limit=None,
                  verbose=False):
    """Train the learner ``name`` ("random-forest", "extra-trees", "decision-tree",
    "adaboost") on a cache with parameters given as a dict of estimator arguments.

    Returns
    -------
    Model
    """
    from ..errors import ParameterError

    if name in ("random-forest", "extra-trees", "decision-tree"):
        from .forest.forest import train_forest_from_params

        return train_forest_from_params(name, params, cache, n_estimators=n_estimators,
                                        memory_limit=memory_limit, verbose=verbose)
    if name == "adaboost":
        from .adaboost.adaboost import train_adaboost_from_params

        return train_adaboost_from_params(params, cache, n_estimators=n_estimators,
                                          memory_limit=memory_limit, verbose=verbose)
    raise ParameterError(f"unknown learner {name!r}; expected gbtree, random-forest, "
                         f"extra-trees, decision-tree or adaboost")
