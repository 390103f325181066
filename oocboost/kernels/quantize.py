"""Gradient quantization for ``use_quantized_grad`` (LightGBM 4's quantized training).

Each round, every row's gradient ``g`` and hessian ``h`` (per output) become small
integers on one scale per output::

    g_scale = max|g| / (num_grad_quant_bins // 2)     g_q in [-(bins // 2), bins // 2]
    h_scale = max h  / num_grad_quant_bins            h_q in [0, bins]

    g_q = trunc(g / g_scale + u)  for g >= 0,   trunc(g / g_scale - u)  for g < 0
    h_q = trunc(h / h_scale + u)

with ``u`` uniform in [0, 1) (stochastic rounding, unbiased: E[g_q] g_scale = g) or
``u = 1/2`` (round to nearest). The histograms then add int8 statistics into int32 sums
(half the bytes of float64 sums, integer adds), and the split search reads those sums
times the scales (``dequantize_histograms``).

``u`` is a pure function of (seed, round, global row, output, lane): 24 bits each of
one draw of the counter hash of ``kernels/sampling.py`` per row and output. So the
quantized values, and the model, do not depend on the block size, prefetch depth, thread
count or the number of Dask workers.

Layouts::

    stats[output, row, lane]    float32   lane 0 gradient, 1 hessian
    qstats[output, row, lane]   int8
    extremes[output, lane]      float64   max |g|, max h
"""
import numpy as np
from numba import njit, prange, uint64

from .sampling import _splitmix64, _stream_key

#: Offset of the quantization's random streams from the rounds' subsample streams
#: (``uniform_per_row(seed, round, ...)``), so the two never draw the same numbers.
QUANT_STREAM = 0x5155414E54000000


@njit(cache=True, nogil=True)
def gradient_extremes(stats, extremes):
    """Raise ``extremes[c, 0]`` to the largest ``|g|`` and ``extremes[c, 1]`` to the largest
    ``h`` of output ``c`` over the block's rows (callers start from 0 and pass every
    block). NaN statistics are skipped (the objective refuses NaN labels).

    Parameters
    ----------
    stats : ndarray (n_outputs, n_rows, 2) float32     # IN
    extremes : ndarray (n_outputs, 2) float64          # IN/OUT
    """
    for c in range(stats.shape[0]):
        g_max = extremes[c, 0]
        h_max = extremes[c, 1]
        for i in range(stats.shape[1]):
            g = abs(np.float64(stats[c, i, 0]))
            h = np.float64(stats[c, i, 1])
            if g > g_max:
                g_max = g
            if h > h_max:
                h_max = h
        extremes[c, 0] = g_max
        extremes[c, 1] = h_max


#: 2^-24: a 24-bit integer as a uniform in [0, 1).
UNIFORM_24 = 1.0 / 16777216.0
#: Rows a thread quantizes per task.
CHUNK_ROWS = 16384


@njit(parallel=True, cache=True, nogil=True)
def quantize_gradients(stats, inverse_scales, seed, round_index, row_start, stochastic,
                       qstats):
    """Quantize one block's statistics (module docstring): ``trunc(y + copysign(u, y))``
    with ``y = x / scale``, which is ``trunc(y + u)`` above zero and ``-trunc(-y + u)``
    below. (Written with branches, the loop ran 4x slower: 2.4 against 0.6 ms for 262k
    rows.)

    Parameters
    ----------
    stats : ndarray (n_outputs, n_rows, 2) float32         # IN
    inverse_scales : ndarray (n_outputs, 2) float64        # IN, 1 / g_scale, 1 / h_scale
        (0 for an output whose statistics are all zero)
    seed, round_index : int                                # IN, the random stream
    row_start : int                                        # IN, global index of row 0
    stochastic : bool                                      # IN, else round to nearest
    qstats : ndarray (n_outputs, n_rows, 2) int8           # OUT
    """
    n_outputs, n_rows = stats.shape[0], stats.shape[1]
    key = _stream_key(seed, uint64(QUANT_STREAM) + uint64(round_index))
    n_chunks = (n_rows + CHUNK_ROWS - 1) // CHUNK_ROWS
    for k in prange(n_chunks):
        lo = k * CHUNK_ROWS
        hi = min(n_rows, lo + CHUNK_ROWS)
        for c in range(n_outputs):
            g_inverse = inverse_scales[c, 0]
            h_inverse = inverse_scales[c, 1]
            if stochastic:
                for i in range(lo, hi):
                    # one 64-bit draw a (row, output): its high and low 24 bits are the
                    # gradient's and the hessian's uniforms (two draws cost 2x as long)
                    bits = _splitmix64(key ^ ((uint64(row_start) + uint64(i))
                                              * uint64(n_outputs) + uint64(c)))
                    u_g = np.float64(bits >> uint64(40)) * UNIFORM_24
                    u_h = np.float64(bits & uint64(0xFFFFFF)) * UNIFORM_24
                    y = np.float64(stats[c, i, 0]) * g_inverse
                    qstats[c, i, 0] = np.int8(np.trunc(y + np.copysign(u_g, y)))
                    y = np.float64(stats[c, i, 1]) * h_inverse
                    qstats[c, i, 1] = np.int8(np.trunc(y + np.copysign(u_h, y)))
            else:
                for i in range(lo, hi):
                    y = np.float64(stats[c, i, 0]) * g_inverse
                    qstats[c, i, 0] = np.int8(np.trunc(y + np.copysign(0.5, y)))
                    y = np.float64(stats[c, i, 1]) * h_inverse
                    qstats[c, i, 1] = np.int8(np.trunc(y + np.copysign(0.5, y)))


@njit(parallel=True, cache=True, nogil=True)
def dequantize_histograms(hist, slots, scales, out):
    """``out[e] = hist[slots[e]] * scales[e]`` lane by lane: the integer sums of the
    evaluated slots as the float64 (gradient, hessian) sums the split search reads.

    Parameters
    ----------
    hist : ndarray (n_slots, n_columns, max_bin, width) int32 or float64   # IN
    slots : ndarray (n_eval,) int32                                         # IN
    scales : ndarray (n_eval, 2) float64, g_scale and h_scale of each slot's tree   # IN
    out : ndarray (n_eval, n_columns, max_bin, width) float64               # OUT
        lanes past the second are zero
    """
    n_columns, n_bins, width = hist.shape[1], hist.shape[2], hist.shape[3]
    for e in prange(slots.shape[0]):
        s = slots[e]
        g_scale = scales[e, 0]
        h_scale = scales[e, 1]
        for q in range(n_columns):
            for b in range(n_bins):
                out[e, q, b, 0] = hist[s, q, b, 0] * g_scale
                out[e, q, b, 1] = hist[s, q, b, 1] * h_scale
                for m in range(2, width):
                    out[e, q, b, m] = 0.0
