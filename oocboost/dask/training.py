"""``oocboost.dask.train``: boosting on a shard set, one rank per worker.

Every worker runs the same training loop (``learners.boosting.training.train_with``) on
its own shard, with two hooks:

* after each data pass, the histograms the pass built are summed over the workers
  (:class:`~.collective.Collective`), so each worker's split search sees every row and,
  the sums being the same bytes everywhere, every worker picks the same splits and leaf
  values: the trees are identical on all workers without being sent;
* after each round, rank 0 evaluates the round on the evaluation caches and sends the
  scores to every rank, so early stopping stops everyone at the same round.

Per-row state (margins, gradients, the node of each row) never leaves its worker; only
histograms move: ``nodes built x columns x bins x 2 float64`` per pass and rank.
"""
from ..cache.shards import ShardSet
from .collective import DEFAULT_TIMEOUT
from .ranks import live_workers, run_ranks, run_with_recovery, with_worker_defaults
from .shards import _client

#: Rounds between two checkpoints rank 0 saves (a run that loses a worker resumes there).
CHECKPOINT_ROUNDS = 10
#: Restarts after lost workers before a run gives up.
MAX_RESTARTS = 3


def _boost_work(cache, params, num_boost_round, evals, early_stopping_rounds,
                verbose_eval, callbacks, checkpoint, checkpoint_rounds, init_model, *,
                distributed):
    """One rank's boosting (``ranks.run_ranks``'s work): rank 0 evaluates, prints and
    saves checkpoints; every rank runs the user's callbacks."""
    from ..learners.boosting.callback import TrainingCheckPoint
    from ..learners.boosting.training import train_with

    rank0 = distributed.rank == 0
    callbacks = list(callbacks or [])
    if rank0 and checkpoint is not None:
        callbacks.append(TrainingCheckPoint(checkpoint, checkpoint_rounds))
    return train_with(params, cache, num_boost_round, evals=evals,
                      early_stopping_rounds=early_stopping_rounds, callbacks=callbacks,
                      init_model=init_model, verbose_eval=verbose_eval if rank0 else False,
                      distributed=distributed)


def _check_boost_plan(cache, params):
    from ..learners.boosting.training import check_plan

    check_plan(params, cache)


def _check_params(params):
    from ..learners.boosting.training import check_distributed_params

    check_distributed_params(params)
    return dict(params or {})


def _rounds_done(path):
    from ..model.model import load_model

    return f"{load_model(path).n_rounds} rounds"


def train(client, params, shards, num_boost_round=10, *, evals=(),
          early_stopping_rounds=None, verbose_eval=False, callbacks=None,
          checkpoint_rounds=CHECKPOINT_ROUNDS, max_restarts=MAX_RESTARTS,
          timeout=DEFAULT_TIMEOUT, return_figures=False):
    """Train gradient boosting on a shard set, one rank per worker.

    Parameters
    ----------
    client : distributed.Client or None
        Default: the current client.
    params : dict
        As :func:`oocboost.train` (``booster="gbtree"``). ``n_threads`` defaults to each
        worker's thread count, ``memory_limit`` to 80% of the Dask worker's own
        ``memory_limit`` (where Dask pauses it); every worker checks first that its
        limit holds its part, and refuses, naming itself, before any rank starts.
    shards : ShardSet or str
        A shard set (:func:`oocboost.dask.build_cache`) or its folder.
    num_boost_round : int
    evals : sequence of (cache or path, name)
        Evaluation caches binned with the shard set's edges, readable by the worker of
        rank 0 (which evaluates each round and tells the others the scores).
    early_stopping_rounds : int or None
    verbose_eval : bool or int
        Rank 0 prints the evaluation (in its worker's log).
    callbacks : list of TrainingCallback or None
        Run on every rank (as in ``xgboost.dask``); they travel to the workers by Dask.
    checkpoint_rounds : int
        Rank 0 saves the model every this many rounds in the shard set's folder; a run
        that loses a worker resumes from there (the file is removed at the end).
    max_restarts : int
        Lost workers a run survives before it raises ``WorkerLost``.
    timeout : float
        Seconds a rank waits for another before failing the run.
    return_figures : bool
        Also return figures: per rank seconds, bytes sent, reductions (the last
        attempt's), and ``restarts``.

    Returns
    -------
    Model, or (Model, figures) with ``return_figures``.

    Example
    -------
    >>> from distributed import Client, LocalCluster                   # doctest: +SKIP
    >>> client = Client(LocalCluster(n_workers=2, threads_per_worker=1))  # doctest: +SKIP
    >>> shards = oocboost.dask.build_cache(ddf, "/shared/train", label="y")  # doctest: +SKIP
    >>> model = oocboost.dask.train(client, {"objective": "binary:logistic"}, shards, 100)
    ...                                                                  # doctest: +SKIP
    """
    from ..model.model import load_model

    client = _client(client)
    params = _check_params(params)
    shard_set = shards if isinstance(shards, ShardSet) else ShardSet.load(shards)
    eval_paths = [(getattr(c, "path", c), name) for c, name in (evals or ())]

    def attempt(checkpoint, resume):
        workers = live_workers(client)
        done = 0 if resume is None else load_model(resume).n_rounds
        args = (num_boost_round - done, eval_paths, early_stopping_rounds, verbose_eval,
                callbacks, checkpoint, checkpoint_rounds, resume)

        def args_of(worker, rank):
            p = with_worker_defaults(params, workers.get(worker, {}),
                                     ("n_threads", "nthread"))
            return (p,) if rank is None else (p,) + args   # None: the plan check

        return run_ranks(client, shard_set, _boost_work, args_of, check=_check_boost_plan,
                         timeout=timeout)

    (model, figures), restarts = run_with_recovery(
        client, shard_set, attempt, max_restarts=max_restarts, what=_rounds_done)
    figures = [dict(f, restarts=restarts) for f in figures]
    return (model, figures) if return_figures else model
