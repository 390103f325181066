"""Suite-wide settings."""
import os
import time

import pytest

# No automatic warm-up processes in tests (kernels/warmup.py): they would race the
# suite's own workers for the cores. tests/kernels/test_warmup.py turns it on itself.
os.environ.setdefault("OOCBOOST_WARMUP", "0")
# scikit-learn's check_array_api_input (NumPy inputs with array API dispatch on, which
# every estimator gets) skips unless SciPy was imported with its array API support
# on: it must be set before anything imports SciPy.
os.environ.setdefault("SCIPY_ARRAY_API", "1")


def pytest_configure(config):
    """In a pytest-xdist worker, numba's parallel kernels run on the worker's share of
    the cores (``NUMBA_NUM_THREADS // workers``, at least 1). With every worker's kernels
    on every core, 2 workers ran 4 OpenMP threads on 2 cores, and a parallel region whose
    threads wait for each other stalled while the other process held a core: a 3 s test
    took 61 s. Tests of thread counts set their own (``utils.threads.thread_limit``), up
    to ``NUMBA_NUM_THREADS``, which is unchanged; kernels called from other threads
    (prefetch, Dask) keep numba's default.

    Training on few rows uses fewer threads than asked (``MIN_ROWS_PER_THREAD``): the
    suite's data is small, so tests get the thread counts they ask for, and the cap's
    own test (tests/utils/test_threads.py) sets it back."""
    from oocboost.utils import threads

    threads.MIN_ROWS_PER_THREAD = 1
    workerinput = getattr(config, "workerinput", None)
    if not workerinput:
        return
    import numba

    workers = max(1, int(workerinput.get("workercount", 1)))
    numba.set_num_threads(max(1, numba.config.NUMBA_NUM_THREADS // workers))


def pytest_sessionstart(session):
    """With pytest-xdist (``-n``) and numba's cache empty (a fresh clone, or CI's empty
    ``NUMBA_CACHE_DIR``), compile the learners' kernels once on every core
    (``oocboost warmup``) before the workers start. Otherwise each worker compiles the
    same kernels itself the first time one of its tests calls them: the scikit-learn
    estimator checks alone took 455 s from an empty cache against 210 s after the
    warm-up (62 s on 2 processes) and 72 s with every kernel cached. The first-run path
    keeps tests of its own: tests/kernels/test_warmup.py compiles into an empty cache of
    its own, and tests/test_cli.py raises the interrupt that a Ctrl-C landing while
    numba compiles turns into (a KeyboardInterrupt dropped in a ``__del__``)."""
    config = session.config
    if hasattr(config, "workerinput") or not getattr(config.option, "numprocesses", None):
        return
    from oocboost.kernels import warmup

    cold = [p for p in warmup.PROFILES if warmup.is_cold(p)]
    if cold:
        t0 = time.perf_counter()
        warmup.warm_up(cold)
        print(f"\nnumba's kernel cache was empty: compiled the kernels of {', '.join(cold)} "
              f"first ({time.perf_counter() - t0:.0f} s)")


@pytest.fixture(autouse=True)
def _package_logger_restored():
    """Put the ``oocboost`` logger back as it was after each test: a verbose run gives it
    a console handler and stops its propagation (``utils.log.console``), and a later
    test of the same worker that reads ``caplog`` then saw nothing. Which tests share a
    worker depends on the machine (``--dist loadfile``): a test passed here and failed
    on the project's runner."""
    import logging

    logger = logging.getLogger("oocboost")
    saved = (list(logger.handlers), logger.level, logger.propagate, logger.disabled)
    yield
    logger.handlers[:], logger.level, logger.propagate, logger.disabled = (
        saved[0], saved[1], saved[2], saved[3])


#: Test files that take longest from an empty kernel cache (``--durations``), run first:
#: pytest-xdist's ``--dist loadfile`` hands files out in collection order, and one of
#: these started last kept one worker busy minutes after the other had run out of files.
LONG_FILES = ("tests/test_memory_footprint.py", "tests/sklearn/test_estimator_checks.py",
              "tests/kernels/test_histogram.py",
              "tests/test_cli.py", "tests/test_docs_examples.py",
              "tests/plotting/test_cli_plot.py", "tests/kernels/test_codes.py",
              "tests/engine/test_surrogates.py", "tests/learners/test_forest.py")


#: The files that hold the ``browser`` tests: .ci/run names them, so their run collects
#: one file instead of the whole suite (17-20 s a run). A marked test elsewhere fails
#: the collection.
MARKED_FILES = {"browser": ("tests/plotting/test_report.py",)}


def _check_marked_files(items):
    for item in items:
        path = item.nodeid.split("::", 1)[0]
        for marker, files in MARKED_FILES.items():
            if item.get_closest_marker(marker) and path not in files:
                raise pytest.UsageError(
                    f"{item.nodeid} is marked {marker}, but only {', '.join(files)} are "
                    f"run for {marker} tests (.ci/run): move it there, or "
                    f"add its file to MARKED_FILES in tests/conftest.py and to .ci/run")


def pytest_collection_modifyitems(session, config, items):
    """Move the items of ``LONG_FILES`` to the front (stable: order kept within each),
    after checking that every ``browser`` test is in ``MARKED_FILES``."""
    _check_marked_files(items)
    rank = {path: k for k, path in enumerate(LONG_FILES)}

    def key(item):
        path = item.nodeid.split("::", 1)[0]
        return rank.get(path, len(LONG_FILES))

    items.sort(key=key)


#: Skipped tests of this run (``nodeid: reason``), gathered on the controller
_SKIPPED: list[str] = []


def pytest_runtest_logreport(report):
    """Gather skips (not expected failures): under ``CI`` each fails the run. A test of a
    peer library that is missing from the test extra skips on ``importorskip``, and a
    green run would then hold none of what that test checks."""
    if report.skipped and not hasattr(report, "wasxfail"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else report.longrepr
        _SKIPPED.append(f"{report.nodeid}: {reason}")


def pytest_sessionfinish(session, exitstatus):
    if hasattr(session.config, "workerinput") or not os.environ.get("CI") or not _SKIPPED:
        return
    print("\nCI runs every test, but these were skipped (install what they need, or fix "
          "their condition):\n  " + "\n  ".join(_SKIPPED))
    if session.exitstatus == 0:
        session.exitstatus = 1
