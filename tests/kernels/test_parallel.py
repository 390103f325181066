"""Range kernels on threads: every task done once, whatever the thread count and the
smallest range; the same results as one serial call; errors of any range raised; a
forked child makes its own pool."""
import os

import numba
import numpy as np
import pytest
from numba import njit

from oocboost.kernels.parallel import RANGE_KERNEL, run_ranges, task_bounds
from oocboost.utils.threads import thread_limit


@njit(**RANGE_KERNEL)
def _count_tasks(lo, hi, seen, owner):
    for i in range(lo, hi):
        seen[i] += 1
        owner[i] = lo


@njit(**RANGE_KERNEL)
def _fail_at(lo, hi, bad, out):
    for i in range(lo, hi):
        if i == bad:
            raise ValueError("task failed")
        out[i] = i


@pytest.mark.parametrize("n_tasks, n_ranges", [(0, 1), (1, 2), (7, 2), (10, 3), (64, 5)])
def test_bounds_split_evenly(n_tasks, n_ranges):
    bounds = task_bounds(n_tasks, n_ranges)
    sizes = np.diff(bounds)
    assert bounds[0] == 0 and bounds[-1] == n_tasks and len(sizes) == n_ranges
    assert sizes.min() >= 0 and sizes.max() - sizes.min() <= 1


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("n_tasks, min_tasks", [(0, 1), (1, 1), (5, 1), (1000, 1),
                                                (1000, 400), (1000, 600)])
def test_every_task_once(threads, n_tasks, min_tasks):
    seen = np.zeros(n_tasks, np.int64)
    owner = np.full(n_tasks, -1, np.int64)
    with thread_limit(threads):
        run_ranges(_count_tasks, n_tasks, seen, owner, min_tasks=min_tasks)
        available = numba.get_num_threads()
    np.testing.assert_array_equal(seen, 1)
    if n_tasks:
        # one range a thread, each of at least min_tasks tasks (or one range in all)
        assert len(np.unique(owner)) == max(1, min(available, n_tasks // min_tasks))


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("bad", [3, 990])          # in the caller's range, in the pool's
def test_an_error_in_any_range_is_raised(threads, bad):
    out = np.zeros(1000, np.int64)
    with thread_limit(threads), pytest.raises(ValueError, match="task failed"):
        run_ranges(_fail_at, 1000, bad, out)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork is POSIX's")
def test_a_forked_child_runs_ranges_on_its_own_pool():
    seen = np.zeros(100, np.int64)
    with thread_limit(2):
        run_ranges(_count_tasks, 100, seen, np.zeros(100, np.int64))  # pool made here
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: a copy of the parent's pool would have no threads
        try:
            child = np.zeros(100, np.int64)
            with thread_limit(2):
                run_ranges(_count_tasks, 100, child, np.zeros(100, np.int64))
            os.write(write, b"ok" if (child == 1).all() else b"no")
        finally:
            os._exit(0)
    os.close(write)
    answer = os.read(read, 2)
    os.waitpid(pid, 0)
    assert answer == b"ok"
