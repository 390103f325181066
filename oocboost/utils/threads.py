"""Thread-count control for numba kernels (``n_threads`` / ``n_jobs``), and BLAS kept
to one thread while they run."""
import contextlib
import sys

import numba
from threadpoolctl import ThreadpoolController

_controller = None
_controller_modules = -1


def _blas_controller():
    """threadpoolctl's view of the loaded BLAS libraries, made again only when modules
    were imported since (a new one may have loaded a BLAS): making it scans every loaded
    library, 4 ms a call in a process with scikit-learn imported, paid by every fit."""
    global _controller, _controller_modules
    n_modules = len(sys.modules)
    if _controller is None or n_modules != _controller_modules:
        _controller, _controller_modules = ThreadpoolController(), n_modules
    return _controller


#: Fewest training rows a thread is given (``thread_limit``'s ``n_rows``): below it a
#: kernel's parallel region costs more than it shares out, and on a machine whose other
#: cores are busy every region waits for a thread the system has descheduled (OpenMP
#: threads spin, then sleep): a 3,000-row, 100-round boosting fit took 1.0-1.8 s on one
#: thread and 8.9-10.0 s on two while another process kept both cores busy.
MIN_ROWS_PER_THREAD = 16_384


@contextlib.contextmanager
def thread_limit(n_threads, n_rows=None):
    """Run the body with at most ``n_threads`` numba threads (None: as many as now) and
    numpy's BLAS (OpenBLAS, MKL, BLIS) on one thread; with ``n_rows`` (the rows a
    training run reads), at most one thread per ``MIN_ROWS_PER_THREAD`` of them.

    Results do not depend on the thread count: every kernel either writes disjoint
    outputs per thread or reduces in a fixed order.

    One BLAS thread: after a call, OpenBLAS's threads keep spinning for a while on the
    cores the next numba kernels need. MARS's matrix products made its fit on 1M rows
    1.9x slower (1.06 s against 0.57 s with one BLAS thread); a custom objective or
    callback calling ``np.dot`` every round would do the same to boosting. The limit
    is lifted when the body ends (``threadpoolctl``, which scikit-learn uses too).
    """
    with contextlib.ExitStack() as stack:
        stack.enter_context(_blas_controller().limit(limits=1, user_api="blas"))
        if n_rows is not None:
            by_rows = max(1, int(n_rows) // MIN_ROWS_PER_THREAD)
            if by_rows < (numba.get_num_threads() if n_threads is None else int(n_threads)):
                n_threads = by_rows
        if n_threads is not None:
            previous = numba.get_num_threads()
            numba.set_num_threads(max(1, min(int(n_threads),
                                             numba.config.NUMBA_NUM_THREADS)))
            stack.callback(numba.set_num_threads, previous)
        yield
