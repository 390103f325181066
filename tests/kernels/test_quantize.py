"""The quantization kernels (``use_quantized_grad``) against plain NumPy twins."""
import numpy as np
import pytest
from numba import njit, uint64

from oocboost.kernels import quantize as kq
from oocboost.kernels.sampling import _splitmix64, _stream_key


@njit
def _uniforms(seed, round_index, row_start, n_rows, n_outputs):
    """The draws the kernel uses, per (row, output, lane): the high and low 24 bits of
    one hash of the (row, output) counter."""
    out = np.empty((n_outputs, n_rows, 2))
    key = _stream_key(seed, uint64(kq.QUANT_STREAM) + uint64(round_index))
    for i in range(n_rows):
        for c in range(n_outputs):
            bits = _splitmix64(key ^ ((uint64(row_start) + uint64(i)) * uint64(n_outputs)
                                      + uint64(c)))
            out[c, i, 0] = (bits >> uint64(40)) / 16777216.0
            out[c, i, 1] = (bits & uint64(0xFFFFFF)) / 16777216.0
    return out


def _naive_quantize(stats, inverse, u):
    """trunc(|x| inverse + u) with the sign of x, in NumPy."""
    y = stats.astype(np.float64) * inverse[:, None, :]
    return (np.sign(y) * np.floor(np.abs(y) + u)).astype(np.int8)


def _stats(rng, n_outputs, n_rows):
    stats = np.empty((n_outputs, n_rows, 2), np.float32)
    stats[..., 0] = rng.standard_normal((n_outputs, n_rows))
    stats[..., 1] = rng.random((n_outputs, n_rows))
    stats[:, :5] = 0.0      # rows a subsample left out
    return stats


@pytest.mark.parametrize("n_outputs", [1, 3])
def test_gradient_extremes_are_the_largest_magnitudes(n_outputs):
    rng = np.random.default_rng(0)
    stats = _stats(rng, n_outputs, 1000)
    extremes = np.zeros((n_outputs, 2))
    for lo in range(0, 1000, 300):              # block by block, as the gradient pass
        kq.gradient_extremes(stats[:, lo:lo + 300], extremes)
    np.testing.assert_array_equal(extremes[:, 0], np.abs(stats[..., 0]).max(axis=1))
    np.testing.assert_array_equal(extremes[:, 1], stats[..., 1].max(axis=1))


@pytest.mark.parametrize("stochastic", [False, True])
@pytest.mark.parametrize("bins", [2, 4, 16, 127])
@pytest.mark.parametrize("n_outputs", [1, 3])
def test_quantize_gradients_equals_its_twin(stochastic, bins, n_outputs):
    rng = np.random.default_rng(bins)
    stats = _stats(rng, n_outputs, 2000)
    extremes = np.zeros((n_outputs, 2))
    kq.gradient_extremes(stats, extremes)
    inverse = 1.0 / (extremes / np.array([bins // 2, bins]))
    out = np.empty(stats.shape, np.int8)
    kq.quantize_gradients(stats, inverse, 7, 3, 1000, stochastic, out)
    u = (_uniforms(7, 3, 1000, 2000, n_outputs) if stochastic
         else np.full(stats.shape, 0.5))
    np.testing.assert_array_equal(out, _naive_quantize(stats, inverse, u))
    assert np.abs(out[..., 0]).max() <= bins // 2 and out[..., 1].min() >= 0
    assert out[..., 1].max() <= bins
    assert not out[:, :5].any()                 # zero stays zero
    # rounded down or up, never further
    y = stats * inverse[:, None, :]
    assert np.all(np.abs(out - y) < 1.0)


def test_stochastic_rounding_is_unbiased_and_blockwise_the_same():
    """E[g_q] = g / scale: the mean of many rows of one value converges to it; a block
    quantized from its own first row gives the rows the same values as the whole."""
    stats = np.zeros((1, 200_000, 2), np.float32)
    stats[0, :, 0] = 0.3
    stats[0, :, 1] = 0.7
    inverse = np.array([[1.0, 1.0]])
    out = np.empty(stats.shape, np.int8)
    kq.quantize_gradients(stats, inverse, 0, 0, 0, True, out)
    assert set(np.unique(out[0, :, 0])) == {0, 1}
    assert abs(out[0, :, 0].mean() - 0.3) < 0.005
    assert abs(out[0, :, 1].mean() - 0.7) < 0.005
    part = np.empty((1, 1000, 2), np.int8)
    kq.quantize_gradients(np.ascontiguousarray(stats[:, 5000:6000]), inverse, 0, 0, 5000,
                          True, part)
    np.testing.assert_array_equal(part, out[:, 5000:6000])
    # another round draws other numbers
    other = np.empty(stats.shape, np.int8)
    kq.quantize_gradients(stats, inverse, 0, 1, 0, True, other)
    assert (other != out).any()


@pytest.mark.parametrize("dtype", [np.int32, np.float64])
def test_dequantize_histograms_scales_each_slot(dtype):
    rng = np.random.default_rng(1)
    hist = rng.integers(-50, 50, (5, 3, 8, 2)).astype(dtype)
    slots = np.array([4, 0, 2], np.int32)
    scales = rng.random((3, 2))
    out = np.full((3, 3, 8, 2), np.nan)
    kq.dequantize_histograms(hist, slots, scales, out)
    np.testing.assert_array_equal(out, hist[slots] * scales[:, None, None, :])
    wide = np.full((3, 3, 8, 4), np.nan)
    kq.dequantize_histograms(np.pad(hist, ((0, 0),) * 3 + ((0, 2),)), slots, scales, wide)
    np.testing.assert_array_equal(wide[..., :2], out)
    assert not wide[..., 2:].any()
