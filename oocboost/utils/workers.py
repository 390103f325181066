"""A background thread that applies a function to submitted items in order."""
import queue
import threading


class InOrderWorker:
    """Applies ``fn`` to submitted items, in order, on one background thread.

    A build's pass 1 sketches and spools a batch on it while pyarrow parses the next:
    both mostly run without the GIL (the sketch's kernels, the CSV reader), so on 2
    cores the sketch time hides behind the parse. One thread and a FIFO keep the order,
    so the sketches (which depend on how values are grouped into batches) are the same
    as when fed in the caller's thread.
    An exception in ``fn`` is raised again in the caller at the next ``submit`` or at
    ``close``; later items are then dropped.

    Parameters
    ----------
    fn : callable(item)
    max_pending : int
        Items queued at most (each batch holds about one CSV block of parsed values;
        ``memory.plan_build`` counts them).
    threaded : bool
        False runs ``fn`` in the caller at ``submit`` (sources whose batches are large
        and cheap to read: Parquet, Arrow, in-memory data).
    name : str
        The thread's name (seen in tracebacks and profilers).
    """

    def __init__(self, fn, max_pending=1, threaded=True, name="oocboost-worker"):
        self._fn = fn
        self._queue = queue.Queue(maxsize=max_pending)
        self._error = None
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._threaded = threaded
        if threaded:
            self._thread.start()

    def _run(self):
        while True:
            item = self._queue.get()
            if item is _DONE:
                return
            if self._error is None:
                try:
                    self._fn(item)
                except BaseException as exc:  # noqa: BLE001 (re-raised in the caller)
                    self._error = exc

    def _raise(self):
        if self._error is not None:
            error, self._error = self._error, None
            raise error

    def submit(self, item):
        self._raise()
        if self._threaded:
            self._queue.put(item)
        else:
            self._fn(item)

    def close(self):
        """Wait for every submitted item; re-raise the first error."""
        if self._thread.is_alive():
            self._queue.put(_DONE)
            self._thread.join()
        self._raise()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self.close()
        elif self._thread.is_alive():
            # the caller's error wins; stop the thread without running what is queued
            self._error = self._error or exc
            self._queue.put(_DONE)
            self._thread.join()


_DONE = object()
