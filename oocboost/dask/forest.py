"""``oocboost.dask.train_forest``: random forests, extra trees and decision trees on a
shard set, one rank per worker (``learners/forest/distributed.py`` says how a forest is
grown across workers; ``ranks.py`` how the ranks run and recover).

Only histograms (``nodes x columns x bins x (classes + 1)`` int32 or float64 per pass),
class counts and the out-of-bag score's sums cross the network; the trees are the same
on every worker without being sent.
"""
from ..cache.shards import ShardSet
from ..errors import ParameterError
from .collective import DEFAULT_TIMEOUT
from .ranks import live_workers, run_ranks, run_with_recovery, with_worker_defaults
from .shards import _client
from .training import MAX_RESTARTS

#: The learners ``train_forest`` grows, by command-line name.
FOREST_LEARNERS = ("random-forest", "extra-trees", "decision-tree")


def _forest_work(cache, learner, params, n_estimators, task, classes, checkpoint,
                 checkpoint_trees, resume, *, distributed):
    from ..learners.forest.distributed import train_forest_on_shard
    from ..model.model import load_model

    return train_forest_on_shard(
        learner, params, cache, n_estimators, task=task, classes=classes,
        distributed=distributed, model=None if resume is None else load_model(resume),
        checkpoint=checkpoint, checkpoint_trees=checkpoint_trees)


def _check_forest_plan(cache, learner, params, n_estimators, task, classes, n_rows):
    from ..learners.forest.distributed import check_forest_plan

    check_forest_plan(learner, params, cache, n_estimators, task=task, classes=classes,
                      n_rows=n_rows)


def _trees_done(path):
    from ..model.model import load_model

    return f"{load_model(path).n_trees} trees"


def forest_run(params, shard_set, learner):
    """``(learner, params, task, classes)`` of a distributed forest, checked here before
    anything runs: the command line's names and aliases, ``random_state`` drawn now
    when None (every worker must draw with the same seed), the task and classes from
    the whole set's labels."""
    from ..learners.common.data import task_and_classes
    from ..learners.common.validate import resolve_seed
    from ..learners.forest.distributed import check_distributed_forest
    from ..learners.forest.forest import cli_params, learner_of

    if learner not in FOREST_LEARNERS:
        raise ParameterError(f"learner must be one of {FOREST_LEARNERS}, got {learner!r}")
    name = learner_of(learner)
    p = dict(params or {})
    memory_limit = p.pop("memory_limit", None)
    p = cli_params(learner, p, memory_limit=memory_limit)
    p["random_state"] = resolve_seed(p["random_state"])
    check_distributed_forest(p)
    task, classes = task_and_classes(p, shard_set)
    return name, p, task, classes


def train_forest(client, params, shards, n_estimators=100, *, learner="random-forest",
                 checkpoint_trees=16, max_restarts=MAX_RESTARTS, timeout=DEFAULT_TIMEOUT,
                 return_figures=False):
    """Grow a random forest (or extra trees, or one decision tree) on a shard set.

    The forest is the one :class:`oocboost.RandomForestClassifier` (or the command line's
    ``train --learner random-forest``) grows on the concatenated shards with the same
    parameters: tree for tree, the same splits; leaf values to float rounding.

    Parameters
    ----------
    client : distributed.Client or None
        Default: the current client.
    params : dict
        scikit-learn's names (``max_depth``, ``max_features``, ``min_samples_leaf``,
        ``bootstrap``, ``max_samples``, ``oob_score``, ``class_weight``, ...; the command
        line's ``--param`` list, and ``memory_limit``: each worker's), plus ``task``
        ("classification" or "regression"; default: classification when the labels
        are classes ``0..K-1``). ``n_jobs`` defaults to each worker's thread count;
        ``random_state`` defaults to 0 (as the command line), None draws a seed here;
        ``memory_limit`` defaults to 80% of each Dask worker's own limit.
    shards : ShardSet or str
    n_estimators : int
        Trees (ignored for a decision tree).
    learner : {"random-forest", "extra-trees", "decision-tree"}
    checkpoint_trees : int
        Rank 0 saves the forest every this many trees (in the shard set's folder); a
        run that loses a worker resumes from there, with the same forest as a result.
    max_restarts : int
        Lost workers a run survives before it raises ``WorkerLost``.
    timeout : float
        Seconds a rank waits for another before failing the run.
    return_figures : bool
        Also return per-rank figures (seconds, bytes sent, reductions, restarts).

    Returns
    -------
    Model, or (Model, figures); ``model.attributes["oob_score"]`` with ``oob_score``.

    Example
    -------
    >>> forest = oocboost.dask.train_forest(client, {"max_depth": 12}, "/shared/train",
    ...                                     200)                         # doctest: +SKIP
    """
    model, _, figures = _train_forest(client, params, shards, n_estimators, learner,
                                      checkpoint_trees, max_restarts, timeout)
    return (model, figures) if return_figures else model


def _train_forest(client, params, shards, n_estimators, learner, checkpoint_trees,
                  max_restarts, timeout):
    """``(model, config, figures)`` of :func:`train_forest`."""
    client = _client(client)
    shard_set = shards if isinstance(shards, ShardSet) else ShardSet.load(shards)
    name, p, task, classes = forest_run(params, shard_set, learner)

    def attempt(checkpoint, resume):
        workers = live_workers(client)

        def args_of(worker, rank):
            wp = with_worker_defaults(p, workers.get(worker, {}), ("n_jobs",))
            if rank is None:     # the plan check
                return name, wp, n_estimators, task, classes, shard_set.n_rows
            return (name, wp, n_estimators, task, classes, checkpoint,
                    int(checkpoint_trees), resume)

        return run_ranks(client, shard_set, _forest_work, args_of,
                         check=_check_forest_plan, timeout=timeout)

    ((model, config), figures), restarts = run_with_recovery(
        client, shard_set, attempt, max_restarts=max_restarts, what=_trees_done)
    return model, config, [dict(f, restarts=restarts) for f in figures]
