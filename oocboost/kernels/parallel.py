"""Run a serial kernel over contiguous ranges of its tasks on several threads.

A kernel's parallel loop can be numba's ``prange`` (``parallel=True``) or, here, a serial
kernel compiled with ``nogil=True`` that takes the half-open range of tasks it does
(``kernel(lo, hi, *args)``), called from Python threads, one range each. The results are
the same (numba's ``prange`` also hands each thread one contiguous range); the compile
is not: numba's parallel transformation compiles the loop body a second time as a
"gufunc" with its scheduling wrappers, which cost 3.3 s of the 8.1 s that
``predict_raw`` took to compile (4.8 s serial), and 39% of the boosting run's kernels'
compile time (47.3 s against 28.9 s, every kernel compiled serially). A first run pays
that on every new machine, container and worker. One call with a single task range
(one row to predict) also skips the parallel launch (~100 us). A Python thread needs the
GIL to start its range (20-200 us a call), so the kernels called per block and pass in
training keep ``prange``; which kernels use which: docs/internals.md, "Range kernels on
threads".

The threads are numba's thread count of the calling thread (``numba.get_num_threads``,
which :func:`oocboost.utils.threads.thread_limit` sets); the caller runs the first range
itself. The pool is made on first use and again in a forked child (a fork copies no
threads).

Example::

    @njit(**RANGE_KERNEL)
    def _scale_rows(lo, hi, x, out):
        for i in range(lo, hi):
            out[i] = 2.0 * x[i]

    run_ranges(_scale_rows, x.shape[0], x, out, min_tasks=10_000)
"""
import os
import threading
from concurrent.futures import ThreadPoolExecutor

import numba
from numba.core.compiler import CompilerBase, DefaultPassBuilder

#: Fewest rows a thread takes in a kernel of a few operations a row (a margin update,
#: gradients): a thread's start costs about as much as 10,000 such rows.
MIN_ROWS = 16_384
#: Fewest (node, feature) pairs a thread takes in a split search: a pair scans up to
#: max_bin bins (about a microsecond), a thread's start costs tens.
MIN_PAIRS = 32



class NoAliasPipeline(CompilerBase):
    """numba's nopython pipeline with the arguments marked ``noalias`` to LLVM, as numba
    marks the body of a parallel loop (``parfor_lowering``: ``flags.noalias`` when the
    loop creates no alias). Without it LLVM must assume an output array may overlap an
    input, and keeps loops scalar: ``logistic_gradients`` on 262k rows took 4.3 ms a
    thread against 2.0 ms with it (and against 7.9 ms with numba's default Python error
    model, which tests every division for zero)."""

    def define_pipelines(self):
        self.state.flags.noalias = True
        return [DefaultPassBuilder.define_nopython_pipeline(self.state)]


#: ``njit`` options of a range kernel (``kernel(lo, hi, *args)``): cached, the GIL
#: released, NumPy's error model and no aliasing (:class:`NoAliasPipeline`), as the body
#: of a ``prange`` loop is compiled. Its array arguments must not overlap where one of
#: them is written.
RANGE_KERNEL = {"cache": True, "nogil": True, "error_model": "numpy",
                "pipeline_class": NoAliasPipeline}
#: A range kernel whose arguments include views of one another (a histogram and its
#: record slots): LLVM keeps the order of their stores.
RANGE_KERNEL_ALIASED = {"cache": True, "nogil": True, "error_model": "numpy"}

_pool = None
_pool_lock = threading.Lock()


def _forget_pool():
    global _pool
    _pool = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)


def _executor():
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max(1, numba.config.NUMBA_NUM_THREADS - 1),
                                       thread_name_prefix="oocboost-kernel")
        return _pool


def task_bounds(n_tasks: int, n_ranges: int) -> list:
    """``n_ranges + 1`` bounds splitting ``0 .. n_tasks`` into contiguous ranges whose
    sizes differ by at most one."""
    return [(k * n_tasks) // n_ranges for k in range(n_ranges + 1)]


def run_ranges(kernel, n_tasks: int, *args, min_tasks: int = 1) -> None:
    """``kernel(lo, hi, *args)`` over ``0 .. n_tasks`` in contiguous ranges, one per
    thread, at least ``min_tasks`` tasks a range (rows, chunks, nodes: fewer tasks than
    ``2 * min_tasks`` run in the calling thread alone). ``kernel`` must release the GIL
    (``nogil=True``) and write disjoint outputs per task; exceptions re-raise here."""
    # (a call of few tasks, as a one-row prediction's, skips asking numba its threads)
    n_ranges = n_tasks // max(1, min_tasks)
    if n_ranges > 1:
        n_ranges = min(numba.get_num_threads(), n_ranges)
    if n_ranges <= 1:
        kernel(0, n_tasks, *args)
        return
    bounds = task_bounds(n_tasks, n_ranges)
    pool = _executor()
    futures = [pool.submit(kernel, bounds[k], bounds[k + 1], *args)
               for k in range(1, n_ranges)]
    try:
        kernel(bounds[0], bounds[1], *args)
    finally:
        for future in futures:
            future.result()
