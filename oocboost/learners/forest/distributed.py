"""A forest grown on every worker of a distributed run (``oocboost.dask.train_forest``).

Every worker resolves the same configuration from the whole data's rows and classes
(class counts summed over the workers), plans the same trees and nodes per pass (the
smallest any worker can hold), and grows them through ``passes.grow_trees`` with its
own shard: after each pass the histograms are summed over the workers, so every worker
makes the same splits, and row draws hash global row numbers, so they do not depend on
the sharding. The forest is the one a single machine grows on the concatenated shards.

Trees are grown in chunks of ``checkpoint_trees``; after each chunk rank 0 saves the
forest so far, and a run that lost a worker continues from it (a tree depends only on
the seed and its index, so the resumed forest is the same forest).
"""
import dataclasses

import numpy as np

from ...errors import InputError, ParameterError
from ..common.cart_config import cache_schema, resolve_config
from ..common.data import label_summary
from .forest import record_params, train_forest

#: Trees grown between two checkpoints (a chunk is also the most trees a pass holds).
CHECKPOINT_TREES = 16


def check_distributed_forest(params):
    """Refuse, by name, what a distributed forest cannot grow as one machine would."""
    p = params
    why = None
    if p.get("missing_values", "learn") == "surrogate":
        why = "missing_values='surrogate' (surrogates are ranked on each node's own rows)"
    elif p.get("splitter") == "oblique":
        why = "splitter='oblique' (each node's projection is fitted to its own rows)"
    elif p.get("criterion") == "absolute_error":
        why = "criterion='absolute_error' (it keeps every distinct label value)"
    if why is not None:
        raise ParameterError(f"not offered in distributed training yet: {why}")


def _global_config(learner, params, cache, task, classes, distributed):
    """The run's ForestConfig, the same on every worker."""
    if task == "classification":
        counts = distributed.sum_(label_summary(cache, task, len(classes)))
    else:
        counts = None
        poisson = params.get("criterion") == "poisson"
        label_summary(cache, task, poisson=poisson, check_sum=False)
        stats = distributed.label_stats
        if poisson and not (stats and stats.get("max", 0) > 0):
            raise InputError("the targets of every shard sum to 0; criterion='poisson' "
                             "needs a positive sum")
    return resolve_config(learner, params, task=task, n_rows=int(distributed.n_rows),
                          n_features=cache.n_features, classes=classes,
                          class_counts=counts, schema=cache_schema(cache))


def train_forest_on_shard(learner, params, cache, n_estimators, *, task, classes,
                          distributed, model=None, checkpoint=None,
                          checkpoint_trees=CHECKPOINT_TREES):
    """One worker's part of a distributed forest.

    Parameters
    ----------
    learner : str
        ``random_forest``, ``extra_trees`` or ``decision_tree``.
    params : dict
        Resolved by :func:`~.forest.cli_params`; ``random_state`` must be an int (every
        worker draws with it).
    cache : Cache
        This worker's shard (or its shards chained).
    n_estimators : int
        Trees in the finished forest (with ``model``'s).
    task : str
    classes : list or None
        Classes of the whole data.
    distributed : object
        The worker's hooks (``oocboost.dask``): ``reduce_histograms``, ``sum_``,
        ``agree_min``, ``n_rows``, ``row_offset``, ``label_stats``, ``rank``.
    model : Model or None
        A checkpoint to continue.
    checkpoint : str or None
        Where rank 0 saves the forest after each chunk of trees.

    Returns
    -------
    (Model, ForestConfig)
    """
    check_distributed_forest(params)
    cache.require_one_label("a tree or forest")
    config = _global_config(learner, params, cache, task, classes, distributed)
    total = 1 if learner == "decision_tree" else int(n_estimators)
    done = 0 if model is None else model.n_trees
    while done < total or model is None:
        step = min(total, done + int(checkpoint_trees))
        chunk = dataclasses.replace(config, oob_score=config.oob_score and step == total)
        model, _, _ = train_forest(cache, chunk, step, model=model, classes=classes,
                                   distributed=distributed)
        done = step
        if checkpoint is not None and distributed.rank == 0 and done < total:
            model.save_model(checkpoint)
    record_params(model, params, task)
    return model, config


def check_forest_plan(learner, params, cache, n_estimators, *, task, classes, n_rows):
    """Plan one worker's part without growing anything: raises MemoryLimitError when its
    memory limit cannot hold it (a distributed run asks every worker before starting)."""
    from ...engine.plan import plan_train
    from .passes import choose_trees_per_pass

    counts = None if task != "classification" else np.ones(len(classes), np.int64)
    config = resolve_config(learner, params, task=task, n_rows=int(n_rows),
                            n_features=cache.n_features, classes=classes,
                            class_counts=counts, schema=cache_schema(cache))
    choose_trees_per_pass(cache, config, max(1, min(int(n_estimators), CHECKPOINT_TREES)),
                          plan_train)
