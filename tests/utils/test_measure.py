"""Tests of oocboost.utils.measure: peak RSS of a command or a function in a subprocess."""
import sys

import pytest

from oocboost.errors import ParameterError
from oocboost.utils.measure import MeasurementError, measure_peak_rss
from oocboost.utils.sizes import MiB, format_size

# Run with the footprint tests, after the parallel part of the suite (README, .ci/run):
# in a two-worker run an idle interpreter once read 246 MiB instead of 127 and these
# assertions failed (cause not found; alone or in a serial run they hold).
pytestmark = pytest.mark.memory


def allocate(n_mib):
    """Run in a child by measure_peak_rss: allocate and touch ``n_mib`` MiB."""
    import numpy as np

    a = np.ones(n_mib * MiB // 8)
    return {"sum": float(a.sum()), "n": a.size}


ALLOC_200 = (
    "import numpy as np, pyarrow, numba, h5py, oocboost\n"
    "a = np.ones(200 * 1024 * 1024 // 8)\n"
)
IDLE = "import numpy, pyarrow, numba, h5py, oocboost\n"


@pytest.fixture(autouse=True)
def fresh_baseline(monkeypatch):
    """Each test measures its own idle baseline: the per-process cache may hold one
    measured long before, under other conditions (a full CI run once read 257 MiB for
    an interpreter that peaks at 130), and these tests are about the arithmetic."""
    from oocboost.utils import measure

    monkeypatch.setattr(measure, "_BASELINE_CACHE", {})


def test_measure_command_allocating_200_mib():
    r = measure_peak_rss([sys.executable, "-c", ALLOC_200])
    assert r.returncode == 0 and r.seconds > 0
    assert 80 * MiB < r.baseline_bytes < 1024 * MiB
    assert 190 * MiB <= r.increase_bytes <= 260 * MiB, format_size(r.increase_bytes)
    assert r.peak_bytes == max(r.polled_peak_bytes, r.maxrss_bytes)


def test_measure_command_allocating_nothing():
    r = measure_peak_rss([sys.executable, "-c", IDLE])
    assert abs(r.increase_bytes) <= 30 * MiB, format_size(r.increase_bytes)


def test_measure_callable_returns_result_and_is_independent_of_this_process():
    import numpy as np

    ballast = np.ones(300 * MiB // 8)  # this process grows; the child's figure must not
    r = measure_peak_rss(f"{__name__}:allocate", 200)
    assert r.result == {"sum": float(200 * MiB // 8), "n": 200 * MiB // 8}
    assert 190 * MiB <= r.increase_bytes <= 260 * MiB, format_size(r.increase_bytes)
    del ballast


def test_measure_failure_raises_with_stderr_tail():
    with pytest.raises(MeasurementError, match="(?s)exited with code 3.*boom"):
        measure_peak_rss(
            [sys.executable, "-c", "import sys; sys.stderr.write('boom'); sys.exit(3)"],
            imports=None,
        )
    r = measure_peak_rss(
        [sys.executable, "-c", "import sys; sys.exit(3)"], imports=None, check=False
    )
    assert r.returncode == 3 and r.baseline_bytes == 0


def test_measure_timeout_kills():
    with pytest.raises(MeasurementError, match="timed out") as info:
        measure_peak_rss(
            [sys.executable, "-c", "import time; time.sleep(30)"], imports=None, timeout=0.5
        )
    assert info.value.timed_out


def test_measure_rejects_bad_targets():
    with pytest.raises(ParameterError):
        measure_peak_rss("not a target")
    with pytest.raises(ParameterError):
        measure_peak_rss([])


def test_baseline_is_the_smallest_of_its_runs(monkeypatch):
    from oocboost.utils import measure

    peaks = iter([(300, 250), (120, 127), (200, 90)])  # (polled, maxrss) a run

    def fake_run(argv, **kwargs):
        polled, maxrss = next(peaks)
        return 0, 0.1, polled * MiB, maxrss * MiB, "", ""

    monkeypatch.setattr(measure, "_run_polled", fake_run)
    monkeypatch.setattr(measure, "BASELINE_RUNS", 3)
    assert measure.baseline_rss(("numpy",)) == 127 * MiB
