"""Quantile regression forests (Meinshausen 2006): a row's conditional quantiles from the
label samples of the leaves it reaches.

Each tree's leaf keeps a weighted sample of the labels of its training rows. For a row
reaching leaves ``l_1 .. l_T``, the forest's conditional distribution is the average of
the leaves' weighted empirical distributions (Meinshausen's weights ``w_i(x)``)::

    F(y | x) = 1/T  sum_t  sum_{j in l_t, y_j <= y} w_j / sum_{j in l_t} w_j

and the ``q``-quantile is the smallest kept label ``y`` with ``F(y | x) >= q`` (the
inverse of the step function, as the paper defines it).
"""
import numpy as np
from numba import njit

from .parallel import MIN_ROWS, RANGE_KERNEL, run_ranges
from .sorting import stable_argsort


@njit(**RANGE_KERNEL)
def _leaf_quantiles_range(lo, hi, leaves, node_offset, sample_start, sample_end, value,
                          weight, levels, level_column, capacity, out):
    n_trees = leaves.shape[1]
    buf_value = np.empty(capacity)
    buf_weight = np.empty(capacity)
    for i in range(lo, hi):
        k = 0
        n_used = 0
        for t in range(n_trees):
            g = node_offset[t] + leaves[i, t]
            a = sample_start[g]
            b = sample_end[g]
            total = 0.0
            for j in range(a, b):
                total += weight[j]
            if total <= 0.0:
                continue
            for j in range(a, b):
                buf_value[k] = value[j]
                buf_weight[k] = weight[j] / total
                k += 1
            n_used += 1
        if n_used == 0:
            for q in range(levels.shape[0]):
                out[i, level_column[q]] = np.nan
            continue
        order = stable_argsort(buf_value[:k])
        cum = 0.0
        q = 0
        tolerance = 1e-12 * n_used
        for r in range(k):
            j = order[r]
            cum += buf_weight[j]
            while q < levels.shape[0] and cum >= levels[q] * n_used - tolerance:
                out[i, level_column[q]] = buf_value[j]
                q += 1
        while q < levels.shape[0]:  # rounding left the top levels: the largest label
            out[i, level_column[q]] = buf_value[order[k - 1]]
            q += 1


def leaf_quantiles(leaves, node_offset, sample_start, sample_end, value, weight, quantiles,
                   out):
    """Each row's quantiles from the samples of the leaves it reaches (module docstring).

    Parameters
    ----------
    leaves : ndarray (n_rows, n_trees) int32, the leaf of each row in each tree    # IN
    node_offset : ndarray (n_trees + 1,) int64, first global node of each tree     # IN
    sample_start, sample_end : ndarray (n_nodes_total,) int64: a node's samples are
        ``value[start:end]`` (empty for split nodes and leaves without samples)      # IN
    value, weight : ndarray (n_samples,) float64, labels and their weights (> 0)    # IN
    quantiles : ndarray (n_levels,) float64 in [0, 1], any order                     # IN
    out : ndarray (n_rows, n_levels) float64; NaN for a row whose leaves hold none  # OUT
    """
    order = np.argsort(quantiles, kind="stable")
    levels = np.ascontiguousarray(quantiles[order], dtype=np.float64)
    sizes = sample_end - sample_start
    capacity = 0
    for t in range(len(node_offset) - 1):
        span = sizes[node_offset[t]:node_offset[t + 1]]
        capacity += int(span.max()) if span.size else 0
    run_ranges(_leaf_quantiles_range, leaves.shape[0], leaves, node_offset, sample_start,
               sample_end, value, weight, levels, order.astype(np.int64), max(capacity, 1),
               out, min_tasks=MIN_ROWS // 64)
