"""``oocboost.dask.build_cache``: a Dask DataFrame binned into one shard per partition,
on the worker that holds it.

Pass 1 sketches each partition on the worker that holds it; the sketches are merged in a
tree of Dask tasks and the merged edges are sent to every worker, which bins its
partitions into its shard (pass 2). Only sketches and edges cross the network, never
rows. Shards are written where ``folder`` points on each worker: shared storage lets any
worker read any shard (needed to resume a run without one of the workers).
"""
import os

from ..cache import shards as _shards
from ..errors import ParameterError


def _client(client):
    if client is not None:
        return client
    from distributed import default_client

    try:
        return default_client()
    except ValueError:
        raise ParameterError("no Dask client: pass client=, or create a "
                             "distributed.Client first") from None


def _tree_reduce(client, futures, combine):
    while len(futures) > 1:
        nxt = [client.submit(combine, a, b, pure=False)
               for a, b in zip(futures[0::2], futures[1::2])]
        if len(futures) % 2:
            nxt.append(futures[-1])
        futures = nxt
    return futures[0]


def _from_files(client, files, folder, options, max_bin, max_categories, memory_limit):
    """One shard per file, each sketched and binned by a worker (the files on storage
    every worker reads)."""
    os.makedirs(folder, exist_ok=True)
    sketches = client.map(_shards.sketch_part, files, max_bin=max_bin,
                          max_categories=max_categories, memory_limit=memory_limit,
                          pure=False, **options)
    edges = client.submit(_shards.edges_from_sketches,
                          _tree_reduce(client, sketches, _shards.merge_sketches), folder,
                          pure=False)
    outputs = [os.path.join(folder, f"shard-{k}.oocb") for k in range(len(files))]
    built = client.map(_build_file_shard, files, outputs, edges=edges,
                       options=dict(options, memory_limit=memory_limit), pure=False)
    paths, workers = zip(*client.gather(built))
    # a worker's shards one after the other (the set's order is the rows' order)
    order = sorted(range(len(files)), key=lambda k: (str(workers[k]), k))
    return _shards.ShardSet.create(folder, [paths[k] for k in order], edges.result(),
                                   workers=[workers[k] for k in order],
                                   partitions=[[k] for k in order])


def _build_file_shard(path, output, edges, options):
    from distributed import get_worker

    return _shards.build_shard(path, output, edges, **options).path, get_worker().address


def _build_part_shard(edges, output, options, part):
    """Pass 2 of one partition on the worker that holds it (one partition in memory at
    a time: a worker's partitions are not concatenated)."""
    return _shards.build_shard(part, output, edges, **options).path


def build_cache(data, folder, *, label=None, weight=None, categorical="auto", drop=(),
                max_bin=256, max_categories=None, memory_limit=None, client=None):
    """Bin a Dask DataFrame into a shard set at ``folder`` (one shard per partition,
    ``folder/shard-K.oocb``, and ``folder/shards.json``).

    Parameters
    ----------
    data : dask.dataframe.DataFrame, or files
        A Dask DataFrame (one shard per partition, written by the worker that holds it;
        the set lists a worker's shards one after the other), or files
        every worker can read: a folder of CSV/Parquet/Arrow files, a glob pattern or a
        list (one shard per file, written by the worker that read it).
    folder : str
        A folder every worker can write (shared storage in a real cluster).
    label, weight, categorical, drop, max_bin, max_categories, memory_limit
        As :func:`oocboost.build_cache`; ``memory_limit`` applies to each worker's
        build.
    client : distributed.Client or None
        Default: the current client.

    Returns
    -------
    oocboost.cache.shards.ShardSet

    Example
    -------
    >>> import dask.dataframe as dd, oocboost.dask                    # doctest: +SKIP
    >>> ddf = dd.read_parquet("s3://bucket/train/")                   # doctest: +SKIP
    >>> shards = oocboost.dask.build_cache(ddf, "/shared/train", label="y")  # doctest: +SKIP
    """
    client = _client(client)
    folder = os.path.abspath(os.fspath(folder))
    options = dict(label=label, weight=weight, categorical=categorical, drop=drop)
    if isinstance(data, (str, os.PathLike, list, tuple)):
        return _from_files(client, _shards.source_files(data), folder, options, max_bin,
                           max_categories, memory_limit)
    if not hasattr(data, "to_delayed"):
        raise ParameterError(f"data must be a Dask DataFrame, or files (a folder, a glob "
                             f"pattern or a list), got {type(data).__name__}")
    os.makedirs(folder, exist_ok=True)
    parts = client.compute(data.to_delayed())
    sketches = client.map(_shards.sketch_part, parts, max_bin=max_bin,
                          max_categories=max_categories, memory_limit=memory_limit,
                          pure=False, **options)
    merged = _tree_reduce(client, sketches, _shards.merge_sketches)
    edges = client.submit(_shards.edges_from_sketches, merged, folder, pure=False)
    from distributed import wait

    wait(parts)
    who_has = client.who_has(parts)
    by_worker = {}
    for i, part in enumerate(parts):
        holders = sorted(who_has.get(part.key) or ())
        by_worker.setdefault(holders[0] if holders else None, []).append(i)
    jobs = []
    # a worker's shards one after the other: a rank trains them as one contiguous run
    for worker, its_parts in sorted(by_worker.items(), key=lambda kv: str(kv[0])):
        for i in its_parts:
            output = os.path.join(folder, f"shard-{len(jobs)}.oocb")
            jobs.append((worker, [i], client.submit(
                _build_part_shard, edges, output, dict(options, memory_limit=memory_limit),
                parts[i], workers=None if worker is None else [worker], pure=False)))
    paths = client.gather([f for _, _, f in jobs])
    return _shards.ShardSet.create(folder, paths, edges.result(),
                                   workers=[w for w, _, _ in jobs],
                                   partitions=[p for _, p, _ in jobs])
