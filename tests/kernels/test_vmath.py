"""vmath.exp against numpy's exp: within 1 ulp on its range, clamped outside it."""
import numpy as np
import pytest
from numba import njit, prange

from oocboost.kernels import vmath


@njit(parallel=True)
def _exp_array(x, out):
    for i in prange(x.shape[0]):
        out[i] = vmath.exp(x[i])


def _exp(x):
    x = np.asarray(x, np.float64)
    out = np.empty_like(x)
    _exp_array(x, out)
    return out


def test_within_one_ulp_of_numpy_on_its_range():
    rng = np.random.default_rng(0)
    x = np.concatenate([np.linspace(vmath.EXP_MIN, vmath.EXP_MAX, 400_001),
                        rng.standard_normal(200_000) * 5, rng.uniform(-1e-3, 1e-3, 1000),
                        [0.0, -0.0, 1.0, -1.0, np.log(2.0) / 2, -np.log(2.0) / 2]])
    want = np.exp(x)
    ulps = np.abs(_exp(x) - want) / np.spacing(want)
    assert ulps.max() <= 1.0
    assert _exp([0.0])[0] == 1.0


def test_same_bits_at_any_position():
    """Vectorized stretches and scalar remainders give the same bits, so a row's value
    does not depend on the block it is in (block-size invariance of the models)."""
    x = np.random.default_rng(1).standard_normal(1001) * 20
    whole = _exp(x)
    for start in (1, 3, 7, 500):
        np.testing.assert_array_equal(_exp(x[start:]), whole[start:])
    np.testing.assert_array_equal([_exp([v])[0] for v in x[:50]], whole[:50])


@pytest.mark.parametrize("x, edge", [(-1e4, vmath.EXP_MIN), (-709.5, vmath.EXP_MIN),
                                     (709.9, vmath.EXP_MAX), (1e300, vmath.EXP_MAX),
                                     (-np.inf, vmath.EXP_MIN), (np.inf, vmath.EXP_MAX)])
def test_arguments_beyond_the_range_are_clamped(x, edge):
    got = _exp([x])[0]
    assert np.isfinite(got) and got > 0
    assert got == _exp([edge])[0]
    np.testing.assert_allclose(got, np.exp(edge), rtol=1e-15)


def test_nan_stays_nan():
    assert np.isnan(_exp([np.nan])[0])
