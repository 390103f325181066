"""Load the next items on a background thread while the consumer works on the current one.

::

    items:     0    1    2    3    4    5 ...
               |    |    |    |
    consumer  [0]   |    |    |            <- held by the consumer (yielded)
    worker         [1]  [2]  [3]           <- loaded or loading, at most `depth` of them
                                  4 ...    <- waits for a slot

A semaphore with ``depth`` slots bounds what the worker holds, so memory is
``(depth + 1) x item`` (``depth`` ahead plus the one the consumer holds). Results come out
in item order and do not depend on ``depth``.

The worker must only do I/O, decompression and checksums. Never let it run a
``parallel=True`` numba kernel: numba's default ``workqueue`` threading layer aborts the
process when two Python threads launch parallel kernels at the same time.
"""
import copy
import queue
import threading

from ..errors import ParameterError

_OK, _ERR, _DONE = 0, 1, 2


def check_depth(depth):
    """Validate a prefetch depth (int >= 0)."""
    if isinstance(depth, bool) or not isinstance(depth, int) or depth < 0:
        raise ParameterError(f"prefetch depth must be an integer >= 0, got {depth!r}")
    return depth


def prefetch(load, items, depth=2):
    """Yield ``load(item)`` for each item in order, loading up to ``depth`` items ahead.

    Parameters
    ----------
    load : callable
        ``load(item) -> value``. Runs on the background thread (when ``depth > 0``): I/O,
        decompression and checksums only, no parallel numba kernels.
    items : iterable
        Arguments for ``load``, e.g. block indices. Iterated on the background thread.
    depth : int, default 2
        Items loaded ahead of the consumer. ``0`` loads synchronously in the calling
        thread (no thread at all).

    Yields
    ------
    value
        ``load(item)``, in the order of ``items``.

    Raises
    ------
    Exception
        An exception raised by ``load`` (or by iterating ``items``) on the worker is raised
        again in the consumer, as a copy of the same type whose ``__cause__`` is the
        original (carrying the worker's traceback). Items before the failing one are
        yielded first.

    Notes
    -----
    The thread starts on the first ``next()`` and is joined when the generator finishes,
    is closed (``break`` out of a ``for`` loop, ``close()``, garbage collection) or the
    consumer raises; a load in progress is finished, then the worker exits.
    """
    depth = check_depth(depth)
    if depth == 0:
        return _prefetch_sync(load, items)
    return _prefetch_thread(load, items, depth)


def _prefetch_sync(load, items):
    for item in items:
        yield load(item)


def _reraise(exc):
    # A fresh exception of the same type lets callers catch CacheError etc. as usual,
    # while __cause__ keeps the worker-side traceback. Exceptions whose constructor
    # cannot be replayed from their args are raised as they are.
    try:
        new = copy.copy(exc)
    except Exception:
        new = None
    if new is None or new is exc or type(new) is not type(exc):
        raise exc
    new.__traceback__ = None
    raise new from exc


def _prefetch_thread(load, items, depth):
    results = queue.SimpleQueue()
    slots = threading.Semaphore(depth)
    stop = threading.Event()

    def worker():
        try:
            for item in items:
                slots.acquire()
                if stop.is_set():
                    return
                value = load(item)
                results.put((_OK, value))
                # Drop our reference so the semaphore alone bounds memory.
                value = None
                if stop.is_set():
                    return
            results.put((_DONE, None))
        except BaseException as exc:  # forwarded to the consumer, which decides
            results.put((_ERR, exc))

    thread = threading.Thread(target=worker, name="oocboost-prefetch", daemon=True)
    thread.start()
    try:
        while True:
            kind, value = results.get()
            if kind == _DONE:
                return
            if kind == _ERR:
                _reraise(value)
            slots.release()
            yield value
            value = None
    finally:
        stop.set()
        # Wake a worker waiting for a slot so it sees `stop` and exits.
        slots.release()
        thread.join()
