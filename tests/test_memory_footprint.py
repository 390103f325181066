"""Memory-footprint regression tests (issue 6; issue 2 for build-cache).

Every measurement runs in a fresh subprocess through :func:`oocboost.utils.measure.measure_peak_rss`
(peak RSS of the process tree, polled, and the kernel's ``ru_maxrss``); the jobs live in
``tests/footprint_jobs.py``.

Baselines
---------
``measure_peak_rss`` reports the *idle baseline*: an interpreter that imported numpy,
pyarrow, numba, h5py and oocboost (about 130 MiB). A process that trains or bins also
holds numba's compiled kernels (LLVM and the parallel runtime, about 90-120 MiB whatever
the data). The data-dependent part is measured against the *warm baseline*: the peak of
``footprint_jobs:warm_kernels``, which loads those kernels on a tiny cache and stops. The
measured jobs run the same warm-up first, then the work; the limit is set a fixed headroom
above the warm baseline and

* the data is at least five times larger than that headroom (the allowed increase),
* the measured peak stays under ``memory_limit`` (i.e. the increase over the warm
  baseline under the headroom),
* four times the rows with the same limit raise the peak by at most 20 %.

A cold process (no warm-up) at the smallest limit the planner accepts checks that the
plan itself allows for the kernels it has still to load.

Adding a learner: one entry in ``footprint_jobs.TRAINERS`` and its name in ``LEARNERS``.
Sizes are chosen for about two minutes on two cores; larger runs belong in ``bench/``.
"""
import math
import os
import sys

import pytest

from oocboost.utils.measure import measure_peak_rss
from oocboost.utils.sizes import MiB, format_size

TESTS_DIR = os.path.dirname(os.path.abspath(__file__))
if TESTS_DIR not in sys.path:
    sys.path.insert(0, TESTS_DIR)

import footprint_jobs  # noqa: E402

pytestmark = pytest.mark.memory

#: Learners whose training footprint is tested (each has a ``footprint_jobs.TRAINERS`` entry).
LEARNERS = ["boosting", "forest", "tree", "adaboost"]

# Training: a cache of TRAIN_ROWS x TRAIN_FEATURES one-byte codes (260 MB decompressed),
# and one with a quarter of the rows for the growth check.
TRAIN_FEATURES = 100
TRAIN_ROWS = 2_500_000
TRAIN_BLOCK_ROWS = 16384
TRAIN_ROUNDS = 2
TRAIN_HEADROOM = 48 * MiB  # limit = warm baseline + this: the allowed increase

# build-cache: a generated CSV (28 float features, about 185 bytes a row: 425 MB), and one
# with a quarter of the rows.
BUILD_FEATURES = 28
BUILD_ROWS = 3_800_000
BUILD_HEADROOM = 136 * MiB  # the CSV reader alone holds ~64 MiB (memory.CSV_READER_FIXED_BYTES)

GROWTH_ROWS_FACTOR = 4
MAX_GROWTH = 1.20
DATA_OVER_INCREASE = 5

ENV = dict(os.environ)
ENV["PYTHONPATH"] = os.pathsep.join(p for p in (TESTS_DIR, os.environ.get("PYTHONPATH")) if p)

_RUNS = {}


def _measure(job, *args):
    """``measure_peak_rss`` of ``footprint_jobs:<job>(*args)``, memoised per session."""
    key = (job,) + tuple(args)
    if key not in _RUNS:
        report = measure_peak_rss(f"footprint_jobs:{job}", *args, env=ENV, timeout=900)
        _RUNS[key] = report
        print(f"\n[footprint] {job}{tuple(args)}: peak {format_size(report.peak_bytes)}, "
              f"idle baseline {format_size(report.baseline_bytes)}, increase "
              f"{format_size(report.increase_bytes)}, {report.seconds:.1f} s")
    return _RUNS[key]


def _limit(warm_baseline, headroom):
    """``warm_baseline + headroom``, rounded up to a whole MiB, in bytes."""
    return int(math.ceil((warm_baseline + headroom) / MiB)) * MiB


@pytest.fixture(scope="session")
def warm_baseline():
    """Peak RSS in bytes of an interpreter that imported oocboost and loaded its kernels.

    Measured the second time: the first run may have to compile the kernels into numba's
    on-disk cache (a fresh checkout), which takes more memory than loading them.
    """
    measure_peak_rss("footprint_jobs:warm_kernels", env=ENV, timeout=900)
    report = _measure("warm_kernels")
    assert report.increase_bytes > 0
    return report.peak_bytes


@pytest.fixture(scope="session")
def train_caches(tmp_path_factory):
    """{"big": path, "small": path}: caches built once per session from a streamed source."""
    folder = tmp_path_factory.mktemp("footprint-train")
    paths = {}
    for name, rows in (("big", TRAIN_ROWS), ("small", TRAIN_ROWS // GROWTH_ROWS_FACTOR)):
        path = str(folder / f"{name}.oocb")
        info = footprint_jobs.build_synthetic(path, rows, TRAIN_FEATURES, TRAIN_BLOCK_ROWS)
        assert info["n_rows"] == rows
        paths[name] = path
    return paths


@pytest.fixture(scope="session")
def build_csvs(tmp_path_factory):
    """{"big": path, "small": path}: generated CSV files."""
    from oocboost.datasets import generate

    folder = tmp_path_factory.mktemp("footprint-build")
    paths = {}
    for name, rows in (("big", BUILD_ROWS), ("small", BUILD_ROWS // GROWTH_ROWS_FACTOR)):
        paths[name] = generate(str(folder / f"{name}.csv"), rows, BUILD_FEATURES, seed=1)
    return paths


def _assert_peak_under_limit(what, report, limit, warm_baseline, data_bytes, data_name):
    """The data is at least DATA_OVER_INCREASE x the allowed increase, and the measured
    peak stays under ``limit``."""
    allowed_increase = limit - warm_baseline
    assert data_bytes >= DATA_OVER_INCREASE * allowed_increase, (
        f"the {data_name} ({format_size(data_bytes)}) must be at least {DATA_OVER_INCREASE}x "
        f"the allowed increase ({format_size(allowed_increase)})")
    assert report.peak_bytes <= limit, (
        f"{what}: peak RSS {format_size(report.peak_bytes)} over memory_limit "
        f"{format_size(limit)} (warm baseline {format_size(warm_baseline)}, increase "
        f"{format_size(report.peak_bytes - warm_baseline)} allowed "
        f"{format_size(allowed_increase)}, {data_name} {format_size(data_bytes)})")


# ----------------------------------------------------------------------------- training
def _train(learner, caches, which, limit):
    report = _measure("train_learner", learner, caches[which], limit, TRAIN_ROUNDS)
    assert report.result["n_trees"] == report.result["expected_trees"]
    return report


@pytest.mark.parametrize("learner", LEARNERS)
def test_training_peak_stays_under_memory_limit(learner, train_caches, warm_baseline):
    limit = _limit(warm_baseline, TRAIN_HEADROOM)
    report = _train(learner, train_caches, "big", limit)
    assert report.result["n_rows"] == TRAIN_ROWS
    _assert_peak_under_limit(learner, report, limit, warm_baseline,
                             report.result["nbytes_raw"], "binned data")
    if "state_in_ram" in report.result:
        # 24 bytes a row do not fit the headroom: the per-row state must be streamed.
        assert report.result["state_in_ram"] is False


@pytest.mark.parametrize("learner", LEARNERS)
def test_training_peak_does_not_grow_with_rows(learner, train_caches, warm_baseline):
    limit = _limit(warm_baseline, TRAIN_HEADROOM)
    small = _train(learner, train_caches, "small", limit)
    big = _train(learner, train_caches, "big", limit)
    assert big.result["n_rows"] == GROWTH_ROWS_FACTOR * small.result["n_rows"]
    assert big.peak_bytes <= MAX_GROWTH * small.peak_bytes, (
        f"{learner}: {GROWTH_ROWS_FACTOR}x the rows raised the peak RSS from "
        f"{format_size(small.peak_bytes)} to {format_size(big.peak_bytes)} (limit "
        f"{format_size(limit)})")


@pytest.mark.parametrize("learner", LEARNERS)
def test_cold_training_at_smallest_accepted_limit(learner, train_caches):
    # No warm-up: the planner must count the kernels it has still to load (about 90 MiB)
    # as part of the baseline, or it hands their memory out to blocks and state.
    report = _measure("train_learner", learner, train_caches["small"], "smallest",
                      TRAIN_ROUNDS, False)
    limit = report.result["memory_limit"]
    assert report.peak_bytes <= limit, (
        f"{learner}, cold process: peak RSS {format_size(report.peak_bytes)} over "
        f"memory_limit {format_size(limit)} (idle baseline "
        f"{format_size(report.baseline_bytes)})")


# ----------------------------------------------------------------------------- build-cache
def _build(build_csvs, which, limit):
    out = os.path.join(os.path.dirname(build_csvs[which]), f"{which}.oocb")
    return _measure("build_from_csv", build_csvs[which], out, limit)


def test_build_cache_peak_stays_under_memory_limit(build_csvs, warm_baseline):
    limit = _limit(warm_baseline, BUILD_HEADROOM)
    report = _build(build_csvs, "big", limit)
    assert report.result["n_rows"] == BUILD_ROWS
    _assert_peak_under_limit("build-cache", report, limit, warm_baseline,
                             report.result["csv_bytes"], "CSV")


def test_build_cache_peak_does_not_grow_with_rows(build_csvs, warm_baseline):
    limit = _limit(warm_baseline, BUILD_HEADROOM)
    small = _build(build_csvs, "small", limit)
    big = _build(build_csvs, "big", limit)
    assert big.result["n_rows"] == GROWTH_ROWS_FACTOR * small.result["n_rows"]
    assert big.peak_bytes <= MAX_GROWTH * small.peak_bytes, (
        f"build-cache: {GROWTH_ROWS_FACTOR}x the rows raised the peak RSS from "
        f"{format_size(small.peak_bytes)} to {format_size(big.peak_bytes)} (limit "
        f"{format_size(limit)})")
