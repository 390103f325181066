"""The in-order background worker (a build's pass-1 thread)."""
import pytest

from oocboost.utils.workers import InOrderWorker


def test_sketching_thread_keeps_order():
    # (The codes of a CSV, sketched on the thread, equal those of the same rows from every
    # other input kind, sketched in the caller:
    # tests/cache/test_build.py::test_same_data_same_cache_through_every_format.)
    seen = []
    with InOrderWorker(seen.append) as worker:
        for i in range(500):
            worker.submit(i)
    assert seen == list(range(500))


def test_sketching_thread_error_reaches_the_caller():
    def fail_on_three(i):
        if i == 3:
            raise ValueError("bad batch 3")

    with pytest.raises(ValueError, match="bad batch 3"):
        with InOrderWorker(fail_on_three) as worker:
            for i in range(100):
                worker.submit(i)


def test_sketching_thread_stops_when_the_caller_fails():
    seen = []
    with pytest.raises(KeyboardInterrupt):
        with InOrderWorker(seen.append) as worker:
            worker.submit(1)
            raise KeyboardInterrupt
    assert worker._thread.is_alive() is False
