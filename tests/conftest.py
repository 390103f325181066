"""Suite-wide settings."""
import os

# No automatic warm-up processes in tests (kernels/warmup.py): they would race the
# suite's own workers for the cores. tests/kernels/test_warmup.py turns it on itself.
os.environ.setdefault("OOCBOOST_WARMUP", "0")


#: Test files that take longest from an empty kernel cache (``--durations``), run first:
#: pytest-xdist's ``--dist loadfile`` hands files out in collection order, and one of
#: these started last kept one worker busy minutes after the other had run out of files.
#: The footprint tests measure subprocesses against baselines taken in the same
#: subprocess, so they run beside the others (their file alone took 204 s).
LONG_FILES = ("tests/test_memory_footprint.py", "tests/sklearn/test_estimator_checks.py",
              "tests/kernels/test_histogram.py", "tests/learners/test_forest.py",
              "tests/test_cli.py",
              "tests/kernels/test_codes.py", "tests/learners/test_adaboost.py")


def pytest_collection_modifyitems(session, config, items):
    """Move the items of ``LONG_FILES`` to the front (stable: order kept within each)."""
    rank = {path: k for k, path in enumerate(LONG_FILES)}

    def key(item):
        path = item.nodeid.split("::", 1)[0]
        return rank.get(path, len(LONG_FILES))

    items.sort(key=key)
