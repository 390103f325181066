"""Ordered target statistics kernels (CatBoost's ordered TS, out of core).

Each permutation ``p`` orders the rows by (slice, row index): a row's slice
``s = floor(u * n_slices)`` comes from a counter-based uniform ``u`` of (seed, p, row)
(``kernels/sampling.py``), and within a slice rows keep their order. The statistic of row
``i`` for permutation ``p`` uses only the rows of its category before it in that order::

    TS_p(i) = (S_before + a * prior) / (N_before + a)

    S_before = prefix_sum[p, c, s] + running_sum[p, c, s]   (earlier slices, then the
    N_before = prefix_cnt[p, c, s] + running_cnt[p, c, s]    rows of slice s seen so far)

and the row's value is the mean over the permutations. Layout::

    sums[t, p, category, slice]  float64, (n_targets, n_permutations, n_categories,
                                 n_slices): one table per target (the label, or the
                                 indicator of one class: ``ts_per_class``)
    counts[p, category, slice]   float64, (n_permutations, n_categories, n_slices)
    slices[p, row]               int32,   (n_permutations, n_rows)
"""
import numpy as np
from numba import njit, prange

from .sampling import _uniform


@njit(parallel=True, cache=True)
def add_slice_stats(index, labels, slices, sums, counts):
    """Pass 1: add each row's labels into its (category, slice) cell of every
    permutation, one table per target (the label, or one indicator per class).

    Parameters
    ----------
    index : ndarray (n_rows,) int64, the row's category, -1 for missing (skipped)   # IN
    labels : ndarray (n_targets, n_rows) float64                                  # IN
    slices : ndarray (n_permutations, n_rows) int32                               # IN
    sums : ndarray (n_targets, n_permutations, n_categories, n_slices) float64   # IN/OUT
    counts : ndarray (n_permutations, n_categories, n_slices) float64            # IN/OUT
    """
    n_rows = index.shape[0]
    for p in prange(slices.shape[0]):
        for i in range(n_rows):
            c = index[i]
            if c >= 0:
                s = slices[p, i]
                for t in range(labels.shape[0]):
                    sums[t, p, c, s] += labels[t, i]
                counts[p, c, s] += 1.0


@njit(parallel=True, cache=True)
def ordered_target_stats(index, labels, slices, prefix_sum, prefix_cnt, running_sum,
                         running_cnt, priors, prior_weight, out):
    """Pass 2: each row's ordered statistics (means over the permutations), one per
    target, then the row joins its (category, slice) for the rows after it. Rows are
    taken in order, so a block's call continues the previous block's.

    Parameters
    ----------
    index : ndarray (n_rows,) int64, category of the row, -1 for missing           # IN
    labels : ndarray (n_targets, n_rows) float64                                   # IN
    slices : ndarray (n_permutations, n_rows) int32                                # IN
    prefix_sum : ndarray (n_targets, n_permutations, n_categories, n_slices)
        float64, the sums of the earlier slices                                    # IN
    prefix_cnt : ndarray (n_permutations, n_categories, n_slices), their counts    # IN
    running_sum, running_cnt : the same shapes, the rows of each slice seen so far # IN/OUT
    priors : ndarray (n_targets,) float64; prior_weight : float (``a``)
    out : ndarray (n_targets, n_rows) float64, NaN for missing rows               # OUT
    """
    n_rows = index.shape[0]
    n_perm = slices.shape[0]
    n_targets = labels.shape[0]
    for t in range(n_targets):
        for i in range(n_rows):
            out[t, i] = 0.0 if index[i] >= 0 else np.nan
    # permutations are independent: one thread each, rows in order within one
    acc = np.zeros((n_perm, n_targets, n_rows))
    for p in prange(n_perm):
        for i in range(n_rows):
            c = index[i]
            if c < 0:
                continue
            s = slices[p, i]
            count = prefix_cnt[p, c, s] + running_cnt[p, c, s]
            for t in range(n_targets):
                total = prefix_sum[t, p, c, s] + running_sum[t, p, c, s]
                acc[p, t, i] = (total + prior_weight * priors[t]) / (count + prior_weight)
                running_sum[t, p, c, s] += labels[t, i]
            running_cnt[p, c, s] += 1.0
    for i in range(n_rows):
        if index[i] >= 0:
            for t in range(n_targets):
                total = 0.0
                for p in range(n_perm):
                    total += acc[p, t, i]
                out[t, i] = total / n_perm


@njit(parallel=True, cache=True)
def slices_of_rows(seed, n_permutations, n_slices, row_start, out):
    """``out[p, i]``: the slice of global row ``row_start + i`` in permutation ``p``.

    Parameters
    ----------
    seed : int; n_permutations, n_slices : int
    row_start : int, global index of the first row
    out : ndarray (n_permutations, n_rows) int32                                  # OUT
    """
    for p in range(n_permutations):
        for i in prange(out.shape[1]):
            s = np.int64(_uniform(seed, 1000003 + p, row_start + i) * n_slices)
            out[p, i] = min(s, n_slices - 1)
