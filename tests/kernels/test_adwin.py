"""The ADWIN kernel against river's ``drift.ADWIN``, the detector it follows: the same
values reported as changes, and after every value the same window width, total and
variance, on streams of 0/1 errors and of reals whose mean moves; several detectors kept
in one set of arrays do not disturb one another."""
import numpy as np
import pytest

from oocboost.kernels.adwin import SQ_DEV, TOTAL, WIDTH, adwin_update, new_state

river_drift = pytest.importorskip("river.drift")


def _streams():
    rng = np.random.default_rng(0)
    errors = np.concatenate([rng.random(3000) < 0.1, rng.random(3000) < 0.4,
                             rng.random(2000) < 0.15]).astype(float)
    reals = np.concatenate([rng.normal(0, 1, 2500), rng.normal(0.8, 2, 2500)])
    return {"errors": errors, "reals": reals}


@pytest.mark.parametrize("stream", ["errors", "reals"])
@pytest.mark.parametrize("delta, clock, max_buckets", [(0.002, 32, 5), (0.01, 1, 5),
                                                       (0.001, 32, 3)])
def test_changes_and_windows_equal_rivers(stream, delta, clock, max_buckets):
    values = _streams()[stream]
    theirs = river_drift.ADWIN(delta=delta, clock=clock, max_buckets=max_buckets)
    state = new_state(3, max_buckets)
    changed = np.zeros(len(values), np.uint8)
    # detector 1 of three, fed in pieces of uneven length
    for lo, hi in ((0, 1), (1, 700), (700, 3001), (3001, len(values))):
        adwin_update(1, values[lo:hi], delta, clock, max_buckets, 5.0, 10.0, *state,
                     changed[lo:hi])
    scalars = state[3]
    expected = []
    for v in values:
        theirs.update(v)
        expected.append(theirs.drift_detected)
    assert np.flatnonzero(changed).tolist() == np.flatnonzero(expected).tolist()
    assert changed.sum() >= 1
    assert scalars[1, WIDTH] == theirs.width
    assert scalars[1, TOTAL] == pytest.approx(theirs.total, rel=1e-12, abs=1e-9)
    assert scalars[1, SQ_DEV] == pytest.approx(theirs.variance, rel=1e-9, abs=1e-9)
    assert not scalars[[0, 2]].any()


def test_width_and_estimate_follow_river_value_by_value():
    values = _streams()["errors"][:4000]
    theirs = river_drift.ADWIN(delta=0.002)
    state = new_state(1, 5)
    changed = np.zeros(1, np.uint8)
    for v in values:
        adwin_update(0, np.array([v]), 0.002, 32, 5, 5.0, 10.0, *state, changed)
        theirs.update(v)
        assert state[3][0, WIDTH] == theirs.width
        assert state[3][0, TOTAL] / state[3][0, WIDTH] == pytest.approx(theirs.estimation,
                                                                        abs=1e-12)
