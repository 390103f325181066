"""Learners: what each algorithm feeds the shared grower (gradients, bootstrap weights,
sample weights). No learner has its own data loop: all go through
store -> prefetch -> histogram -> split -> grow.

Each learner is a folder with a ``registration.py`` (:mod:`.registry`); ``common/`` is
the toolkit they share. No learner imports another.
"""


def train_learner(name, params, cache, *, n_estimators=100, memory_limit=None,
                  verbose=False, init_model=None):
    """Train the registered learner ``name`` (``oocboost train --help`` lists them) on a
    cache with parameters given as a dict of its own names; forests add
    ``n_estimators`` trees to ``init_model`` (a Model or model file) when given;
    Hoeffding trees go on learning from it.

    Returns
    -------
    Model
    """
    from .registry import TrainRequest, train

    return train(TrainRequest(learner=name, params=dict(params or {}), cache=cache,
                              n_estimators=n_estimators, memory_limit=memory_limit,
                              verbose=verbose, init_model=init_model))
