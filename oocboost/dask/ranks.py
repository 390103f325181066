"""Running one training rank per worker, and carrying on without a worker that died.

A run places the shard set's shards on the workers as ranks (:func:`place`): each rank
is a contiguous run of shards, in the set's order, so that row numbers stay global
(row draws and subsamples hash them). A rank is a Dask task pinned to its worker that
opens its shards (chained when more than one) and calls the learner's work function
with its :class:`WorkerRun` hooks; the ranks talk through :mod:`.collective`.

When a worker dies mid-run, its peers lose their connection and fail with a
``CollectiveError``; :func:`run_with_recovery` then sees which worker left the cluster,
warns naming it, places the shards again on the workers that remain (a lost worker's
shard is read from shared storage by a neighbour, or by a worker the nanny restarted)
and runs again from the last checkpoint rank 0 saved.
"""
import os
import time
import uuid
import warnings

import numpy as np

from ..errors import OocboostError, ParameterError
from .collective import Collective, CollectiveError, listen, new_token

#: Listening sockets of rank 0, by run, between the two tasks that set a run up.
_SERVERS = {}
#: Seconds to wait for the scheduler to notice a dead worker after its peers failed.
DEATH_NOTICE_SECONDS = 10.0
#: Share of a Dask worker's ``memory_limit`` a run budgets when ``memory_limit`` is not
#: given: Dask pauses a worker at 80% of its limit (``distributed.worker.memory.pause``).
WORKER_MEMORY_SHARE = 0.8


class WorkerLost(OocboostError):
    """A worker of a run left the cluster (raised when no restart is left)."""


class WorkerRun:
    """The hooks a rank hands to the learner (``distributed=``)."""

    def __init__(self, collective, n_rows, label_stats, row_offset):
        self.collective = collective
        self.n_rows = n_rows
        self.label_stats = label_stats
        self.row_offset = row_offset

    @property
    def rank(self):
        return self.collective.rank

    def reduce_histograms(self, hist, slots):
        """``hist[slots]`` replaced by its sum over the ranks."""
        self.collective.sum_slots(hist, slots)

    def reduce_histograms_to_root(self, hist, slots):
        """``hist[slots]`` summed over the ranks on rank 0; zeroed on the others (what
        :meth:`share_search` starts from)."""
        self.collective.sum_slots(hist, slots, to_root=True)

    def share_search(self, hist, slots, trees, search):
        """Each rank searches the nodes of its share of the trees (tree ``t`` on rank
        ``t % n_ranks``, always the same, which keeps a tree's searches and their random
        draws on one rank): rank 0 sends each rank those nodes' summed histograms
        (``hist[slots]``, summed by :meth:`reduce_histograms_to_root`), each runs
        ``search(positions)`` on its nodes' positions, and every rank gets every
        rank's ``(positions, result)`` in rank order (results: dicts of arrays)."""
        n = self.collective.n_ranks
        owner = np.asarray(trees, np.int64) % n
        positions = [np.flatnonzero(owner == r) for r in range(n)]
        self.collective.scatter_slots(hist, [np.unique(np.asarray(slots)[p])
                                             for p in positions])
        mine = positions[self.rank]
        found = self.collective.allgather_arrays(search(mine))
        return list(zip(positions, found))

    def sum_(self, array):
        """``array`` replaced by its sum over the ranks (and returned)."""
        return self.collective.sum_(array)

    def agree_min(self, value):
        """The smallest ``value`` (an int) of any rank, on every rank."""
        values = self.collective.gather(int(value))
        return int(self.collective.broadcast(None if values is None else min(values)))

    def agree_max(self, array):
        """The elementwise largest of ``array`` (same shape on every rank) over the
        ranks, on every rank."""
        array = np.asarray(array, dtype=np.float64)
        values = self.collective.gather(array.ravel().tolist())
        largest = None
        if values is not None:
            if any(not isinstance(v, list) or len(v) != array.size for v in values):
                raise CollectiveError(f"a rank sent other than {array.size} values to "
                                      f"agree on")
            largest = np.max(np.asarray(values, dtype=np.float64), axis=0).tolist()
        return np.asarray(self.collective.broadcast(largest),
                          dtype=np.float64).reshape(array.shape)

    def evaluate(self, model, objective, eval_sets, metrics, round_trees):
        from ..learners.boosting.training import _evaluate

        scores = None
        if self.collective.rank == 0:
            scores = _evaluate(model, objective, eval_sets, metrics, round_trees)
        return self.collective.broadcast(scores)


def worker_memory_budget(info):
    """The ``memory_limit`` (bytes) a run gives a worker by default: a share of the Dask
    worker's own limit (``info``: its entry in ``client.scheduler_info()["workers"]``),
    or None when the worker has no limit."""
    limit = info.get("memory_limit") or 0
    return int(limit * WORKER_MEMORY_SHARE) if limit > 0 else None


def with_worker_defaults(params, info, threads_keys):
    """``params`` for one worker (``info``: its scheduler entry): the thread count under
    ``threads_keys[0]`` unless one of ``threads_keys`` is given, and ``memory_limit``
    :func:`worker_memory_budget` unless given."""
    p = dict(params)
    if all(p.get(k) is None for k in threads_keys):
        p[threads_keys[0]] = int(info.get("nthreads", 1))
    if p.get("memory_limit") is None:
        p["memory_limit"] = worker_memory_budget(info)
    return p


def open_shards(paths):
    """One shard as a Cache; several as one ChainedCache."""
    from ..cache.chained import ChainedCache
    from ..cache.store import Cache

    return Cache(paths[0]) if len(paths) == 1 else ChainedCache(paths)


def live_workers(client) -> dict:
    """The scheduler's workers (address -> its info). When it lists none, waits up to 30
    s for one to register (a worker restarting under its nanny, or a reply that raced a
    registration: seen as an empty list on a busy 2-core machine) and asks again."""
    workers = client.scheduler_info()["workers"]
    if not workers:
        try:
            client.wait_for_workers(1, timeout=30)
        except (TimeoutError, OSError):
            return {}
        workers = client.scheduler_info()["workers"]
    return workers


def place(shard_set, workers):
    """``[(worker, [shard paths])]`` in rank order.

    Each shard stays on the worker that wrote it while that worker is alive (a
    worker's shards, one after the other in the set, make one rank); a shard whose
    worker is gone goes to a worker without shards if there is one, else joins the rank
    before it (the first rank, for leading shards), so ranks stay contiguous.
    """
    workers = sorted(workers)
    if not workers:
        raise ParameterError("the Dask cluster has no workers")
    writers = {s["worker"] for s in shard_set.shards}
    free = [w for w in workers if w not in writers]
    used, ranks, leading = set(), [], []
    for s in shard_set.shards:
        if ranks and s["worker"] == ranks[-1][0]:
            ranks[-1][1].append(s["path"])
            continue
        w = s["worker"] if s["worker"] in workers and s["worker"] not in used else None
        if w is None and free:
            w = free.pop(0)
        if w is not None:
            used.add(w)
            ranks.append((w, [s["path"]]))
        elif ranks:
            ranks[-1][1].append(s["path"])
        else:
            leading.append(s["path"])
    if leading:
        ranks[0] = (ranks[0][0], leading + ranks[0][1])
    return ranks


def _open_root(run_id, host):
    """Rank 0's listening socket, on its worker's own interface ``host``."""
    server, port = listen(host)
    _SERVERS[run_id] = server
    return port


def _tls_context(root, rank):
    """The worker's Dask TLS context for the collective's socket when the cluster runs
    on TLS (``tls://`` addresses), else None: rank 0 listens, the others connect."""
    if not root.startswith("tls://"):
        return None
    from distributed import get_worker

    security = get_worker().security
    args = (security.get_listen_args("worker") if rank == 0
            else security.get_connection_args("worker"))
    return args["ssl_context"]


def _rank_task(run_id, rank, n_ranks, root, port, token, work, args, paths, shared,
               timeout):
    """One rank (a Dask task on its worker): ``work(cache, *args, distributed=...)``.
    Returns ``(result or None, figures)``: rank 0's result, every rank's figures."""
    context = _tls_context(root, rank)
    if rank == 0:
        collective = Collective.root(_SERVERS.pop(run_id), n_ranks, token, timeout,
                                     ssl_context=context)
    else:
        collective = Collective.connect(rank, n_ranks, _host_of(root), port, token,
                                        timeout, ssl_context=context)
    t0 = time.perf_counter()
    cache = None
    try:
        cache = open_shards(paths)
        result = work(cache, *args, distributed=WorkerRun(collective, **shared))
    finally:
        collective.close()
        if cache is not None:
            cache.close()
    figures = {"rank": rank, "shards": list(paths), "seconds": time.perf_counter() - t0,
               "bytes_sent": collective.bytes_sent, "reduce_seconds": collective.seconds,
               "n_reductions": collective.n_sums}
    return (result if rank == 0 else None), figures


def _precheck(client, ranks, check, args_of):
    """Every rank runs ``check(cache, *args_of(worker))`` on its worker first: one that
    cannot meet its memory limit refuses, naming the worker, before any rank waits."""
    client.gather([client.submit(_checked, check, paths, args_of(w), workers=[w],
                                 allow_other_workers=False, pure=False)
                   for w, paths in ranks])


def _checked(check, paths, args):
    from distributed import get_worker

    from ..errors import MemoryLimitError

    cache = open_shards(paths)
    try:
        check(cache, *args)
    except MemoryLimitError as exc:
        what = f"shard {paths[0]}" if len(paths) == 1 else f"shards {', '.join(paths)}"
        raise MemoryLimitError(f"worker {get_worker().address} cannot train {what} "
                               f"within its memory limit: {exc}") from None
    finally:
        cache.close()


def run_ranks(client, shard_set, work, args_of, *, check=None, timeout):
    """Run ``work`` as one rank per placed shard group; rank 0's result and the figures.

    ``args_of(worker, rank)`` gives a rank's extra arguments. Raises :class:`WorkerLost`
    (with the lost workers) when a worker of the run left the cluster during it.
    """
    ranks = place(shard_set, live_workers(client))
    if check is not None:
        _precheck(client, ranks, check, lambda w: args_of(w, None))
    run_id = uuid.uuid4().hex
    token = new_token()   # reaches the ranks as a task argument, through the scheduler
    root = ranks[0][0]
    port = client.submit(_open_root, run_id, _host_of(root), workers=[root],
                         allow_other_workers=False, pure=False).result()
    first_row = dict(zip(shard_set.paths, np.cumsum(
        [0] + [s["n_rows"] for s in shard_set.shards])[:-1].tolist()))
    futures = []
    for rank, (worker, paths) in enumerate(ranks):
        shared = {"n_rows": shard_set.n_rows, "label_stats": shard_set.label_stats,
                  "row_offset": first_row[paths[0]]}
        futures.append(
            client.submit(
                _rank_task,
                run_id,
                rank,
                len(ranks),
                root,
                port,
                token,
                work,
                args_of(worker, rank),
                paths,
                shared,
                timeout,
                workers=[worker],
                allow_other_workers=False,
                pure=False,
                key=f"oocboost-{work.__name__}-{run_id}-rank{rank}",
            )
        )
    results = _gather(client, futures, [w for w, _ in ranks])
    return results[0][0], [r[1] for r in results]


def _host_of(address):
    """The host of a Dask address (``tcp://10.0.0.5:8786``, ``tls://[::1]:40000``)."""
    host = address.split("://")[-1].rsplit(":", 1)[0]
    return host[1:-1] if host.startswith("[") else host


def _gather(client, futures, workers):
    """The ranks' results; :class:`WorkerLost` when one of ``workers`` died.

    Once a rank fails, its peers fail too (they lose their connection); a rank's own
    error (not a ``CollectiveError``) is the run's. All failing with lost connections
    and a worker gone from the scheduler means the worker died.
    """
    from distributed import as_completed

    for future in as_completed(futures):
        if future.status == "error":
            break
    else:
        return client.gather(futures)
    deadline = time.monotonic() + DEATH_NOTICE_SECONDS
    while True:
        alive = set(live_workers(client))
        lost = [w for w in workers if w not in alive]
        errors = [f.exception() for f in futures if f.status == "error"]
        own = [e for e in errors if not isinstance(e, CollectiveError)]
        if lost or (own and all(f.done() for f in futures)) \
                or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    client.cancel(futures)
    if lost:
        raise WorkerLost(f"worker(s) {', '.join(lost)} left the cluster during "
                         f"training") from errors[0]
    raise (own or errors)[0]


def run_with_recovery(client, shard_set, attempt, *, max_restarts, what):
    """``attempt(resume)`` until it completes, ``resume`` the checkpoint path or None;
    after a lost worker, warn and attempt again from the checkpoint (at most
    ``max_restarts`` times). ``what`` names the checkpoint's unit for the message."""
    checkpoint = os.path.join(shard_set.folder, f"checkpoint-{uuid.uuid4().hex}.json")
    restarts = 0
    try:
        while True:
            resume = checkpoint if os.path.exists(checkpoint) else None
            try:
                return attempt(checkpoint, resume), restarts
            except WorkerLost as exc:
                restarts += 1
                if restarts > max_restarts:
                    raise WorkerLost(f"{exc}; gave up after {max_restarts} restarts "
                                     f"(max_restarts)") from exc
                n_workers = len(live_workers(client))
                done = what(checkpoint) if os.path.exists(checkpoint) else "nothing"
                warnings.warn(f"oocboost.dask: {exc}; resuming from the last checkpoint "
                              f"({done} done) on {n_workers} worker(s), its shards read "
                              f"from {shard_set.folder}", UserWarning, stacklevel=3)
    finally:
        if os.path.exists(checkpoint):
            os.unlink(checkpoint)
