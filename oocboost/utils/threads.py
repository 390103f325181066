"""Thread-count control for numba kernels (``n_threads`` / ``n_jobs``)."""
import contextlib

import numba


@contextlib.contextmanager
def thread_limit(n_threads):
    """Run the body with at most ``n_threads`` numba threads (None: all cores).

    Results do not depend on the thread count: every kernel either writes disjoint
    outputs per thread or reduces in a fixed order.
    """
    if n_threads is None:
        yield
        return
    previous = numba.get_num_threads()
    numba.set_num_threads(max(1, min(int(n_threads), numba.config.NUMBA_NUM_THREADS)))
    try:
        yield
    finally:
        numba.set_num_threads(previous)
