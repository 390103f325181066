"""Learners: what each algorithm feeds the shared grower (gradients, bootstrap weights,
sample weights). No learner has its own data loop: all go through
store -> prefetch -> histogram -> split -> grow.

``train_learner`` is the command line's entry for the non-boosting learners.
"""


def train_learner(name, params, cache, *, n_estimators=100, memory_limit=None,
                  verbose=False, init_model=None):
    """Train the learner ``name`` ("random-forest", "extra-trees", "decision-tree",
    "decision-stream", "mars", "adaboost", "hoeffding-tree", "online-bagging") on a cache with parameters given as
    a dict of estimator arguments; forests add ``n_estimators`` trees to ``init_model``
    (a Model or model file) when given; Hoeffding trees go on learning from it.

    Returns
    -------
    Model
    """
    from ..errors import ParameterError

    if name in ("random-forest", "extra-trees", "decision-tree"):
        from .forest.forest import train_forest_from_params

        return train_forest_from_params(name, params, cache, n_estimators=n_estimators,
                                        memory_limit=memory_limit, verbose=verbose,
                                        init_model=init_model)
    if name in ("hoeffding-tree", "online-bagging"):
        from .hoeffding.train import train_hoeffding_from_params

        return train_hoeffding_from_params(name, params, cache, n_estimators=n_estimators,
                                           memory_limit=memory_limit, verbose=verbose,
                                           init_model=init_model)
    if init_model is not None:
        raise ParameterError(f"--init-model continues boosting, forests and Hoeffding "
                             f"trees; --learner {name} does not take it")
    if name == "decision-stream":
        from .decision_stream.train import train_stream_from_params

        return train_stream_from_params(params, cache, memory_limit=memory_limit,
                                        verbose=verbose)
    if name == "mars":
        from .mars.train import train_mars_from_params

        return train_mars_from_params(params, cache, memory_limit=memory_limit,
                                      verbose=verbose)
    if name == "adaboost":
        from .adaboost.adaboost import train_adaboost_from_params

        return train_adaboost_from_params(params, cache, n_estimators=n_estimators,
                                          memory_limit=memory_limit, verbose=verbose)
    raise ParameterError(f"unknown learner {name!r}; expected gbtree, random-forest, "
                         f"extra-trees, decision-tree, decision-stream, mars, adaboost, "
                         f"hoeffding-tree or online-bagging")
