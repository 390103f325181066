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
import time
import uuid

import numpy as np

from ..cache.shards import ShardSet
from ..errors import ParameterError
from .collective import DEFAULT_TIMEOUT, Collective, listen
from .shards import _client

#: Listening sockets of rank 0, by run, between the two tasks that set a run up.
_SERVERS = {}


class WorkerRun:
    """The ``distributed`` hooks of one rank (see ``train_with``)."""

    def __init__(self, collective, n_rows, label_stats, row_offset):
        self.collective = collective
        self.n_rows = n_rows
        self.label_stats = label_stats
        self.row_offset = row_offset

    def reduce_histograms(self, hist, slots):
        built = np.ascontiguousarray(hist[slots])
        self.collective.sum_(built)
        hist[slots] = built

    def evaluate(self, model, objective, eval_sets, metrics, round_trees):
        from ..learners.boosting.training import _evaluate

        scores = None
        if self.collective.rank == 0:
            scores = _evaluate(model, objective, eval_sets, metrics, round_trees)
        return self.collective.broadcast(scores)


def _check_plan(params, shard_path):
    """On a worker: refuse up front when its memory limit cannot hold its shard's run."""
    from ..errors import MemoryLimitError
    from ..learners.boosting.training import check_plan

    try:
        check_plan(params, shard_path)
    except MemoryLimitError as exc:
        from distributed import get_worker

        raise MemoryLimitError(f"worker {get_worker().address} cannot train shard "
                               f"{shard_path} within its memory limit: {exc}") from None


def _open_root(run_id):
    server, port = listen()
    _SERVERS[run_id] = server
    return port


def _train_rank(run_id, rank, n_ranks, host, port, params, shard_path, num_boost_round,
                evals, early_stopping_rounds, shared, verbose_eval, timeout):
    """One rank's training (a Dask task on its worker). Rank 0 returns the model and its
    collective's figures; the others return their figures only."""
    from ..learners.boosting.training import train_with

    if rank == 0:
        collective = Collective.root(_SERVERS.pop(run_id), n_ranks, timeout)
    else:
        collective = Collective.connect(rank, n_ranks, host, port, timeout)
    t0 = time.perf_counter()
    try:
        model = train_with(params, shard_path, num_boost_round, evals=evals,
                           early_stopping_rounds=early_stopping_rounds,
                           verbose_eval=verbose_eval if rank == 0 else False,
                           distributed=WorkerRun(collective, **shared))
    finally:
        collective.close()
    figures = {"rank": rank, "shard": shard_path, "seconds": time.perf_counter() - t0,
               "bytes_sent": collective.bytes_sent, "reduce_seconds": collective.seconds,
               "n_reductions": collective.n_sums}
    return (model if rank == 0 else None), figures


def _assign(shard_set, client):
    """``[(worker, shard path)]``, rank order: each shard on the worker that wrote it
    when alive, else on a worker without a shard."""
    workers = sorted(client.scheduler_info()["workers"])
    if not workers:
        raise ParameterError("the Dask cluster has no workers")
    taken, out, homeless = set(), [], []
    for s in shard_set.shards:
        if s["worker"] in workers and s["worker"] not in taken:
            taken.add(s["worker"])
            out.append((s["worker"], s["path"]))
        else:
            homeless.append(s["path"])
    free = [w for w in workers if w not in taken]
    if len(homeless) > len(free):
        raise ParameterError(f"{len(shard_set.shards)} shards for {len(workers)} workers: "
                             f"this version trains one shard per worker (rebuild the "
                             f"shards on this cluster, or add workers)")
    out += list(zip(free, homeless))
    return out


def _threads(client, worker):
    return int(client.scheduler_info()["workers"][worker].get("nthreads", 1))


def _check_params(params):
    from ..learners.boosting.training import check_distributed_params

    check_distributed_params(params)
    return dict(params or {})


def train(client, params, shards, num_boost_round=10, *, evals=(),
          early_stopping_rounds=None, verbose_eval=False, timeout=DEFAULT_TIMEOUT,
          return_figures=False):
    """Train gradient boosting on a shard set, one rank per worker.

    Parameters
    ----------
    client : distributed.Client or None
        Default: the current client.
    params : dict
        As :func:`oocboost.train` (``booster="gbtree"``). ``n_threads`` defaults to each
        worker's thread count.
    shards : ShardSet or str
        A shard set (:func:`oocboost.dask.build_cache`) or its folder.
    num_boost_round : int
    evals : sequence of (cache or path, name)
        Evaluation caches binned with the shard set's edges, readable by the worker of
        rank 0 (which evaluates each round and tells the others the scores).
    early_stopping_rounds : int or None
    verbose_eval : bool or int
        Rank 0 prints the evaluation (in its worker's log).
    timeout : float
        Seconds a rank waits for another before failing the run (a dead worker).
    return_figures : bool
        Also return a list of per-rank figures: seconds, bytes sent, reductions.

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
    client = _client(client)
    params = _check_params(params)
    shard_set = shards if isinstance(shards, ShardSet) else ShardSet.load(shards)
    placed = _assign(shard_set, client)
    eval_paths = [(getattr(c, "path", c), name) for c, name in (evals or ())]
    worker_params = {}
    for worker, _ in placed:
        p = dict(params)
        if p.get("n_threads") is None and p.get("nthread") is None:
            p["n_threads"] = _threads(client, worker)
        worker_params[worker] = p
    # every worker plans its run first: one that cannot meet its memory limit refuses
    # before any rank waits for it
    client.gather([client.submit(_check_plan, worker_params[w], path, workers=[w],
                                 allow_other_workers=False, pure=False)
                   for w, path in placed])
    run_id = uuid.uuid4().hex
    root = placed[0][0]
    port = client.submit(_open_root, run_id, workers=[root], pure=False).result()
    host = root.split("://")[-1].rsplit(":", 1)[0]
    # the whole data is the shards in the set's order: each shard's first row there
    offsets = dict(zip(shard_set.paths, np.cumsum([0] + [s["n_rows"] for s in
                                                         shard_set.shards])[:-1].tolist()))
    futures = []
    for rank, (worker, path) in enumerate(placed):
        shared = {"n_rows": shard_set.n_rows, "label_stats": shard_set.label_stats,
                  "row_offset": offsets[path]}
        futures.append(client.submit(
            _train_rank, run_id, rank, len(placed), host, port, worker_params[worker],
            path, num_boost_round,
            eval_paths, early_stopping_rounds, shared, verbose_eval, timeout, workers=[worker], allow_other_workers=False,
            pure=False, key=f"oocboost-train-{run_id}-rank{rank}"))
    results = client.gather(futures)
    model = results[0][0]
    figures = [r[1] for r in results]
    return (model, figures) if return_figures else model
