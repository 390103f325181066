"""Histogram kernels: per (slot, feature, bin) sums of per-row statistics, one block at a time.

Layout::

    hist[slot, feature, bin, stat]   float64, (n_slots, n_features, max_bin, n_stats)
    stats[tree, row, stat]           float32, (n_trees, n_rows, n_stats)
    slot_of_row[tree, row]           int32,   (n_trees, n_rows); -1 = row not accumulated
    codes[feature, row]              uint8/uint16, (n_features, n_rows)

A *slot* is a histogram in the grower's pool; several trees grown in the same pass share one
pool, so ``slot_of_row`` already encodes the tree. The kernels never allocate or zero
``hist``: the same node histogram receives one call per block.

Parallelism is over features: each thread owns whole ``hist[:, f]`` slices, so there are
no write conflicts and no per-thread copies to reduce.
"""
import numba
import numpy as np
from numba import njit, prange


#: Features a thread updates per row visit. The row's statistics are loaded once and
#: added into this many feature histograms, whose independent read-modify-writes overlap;
#: one feature at a time re-loads the statistics for every (row, feature) and stalls on
#: repeated bins of low-cardinality features. Measured on 1M x 28 codes, 2 threads:
#: root pass 40 ms (one feature at a time, 16K-row tiles) -> 23 ms (7 features), passes
#: over 30-45% of the rows 15-23 ms -> 8-11 ms; 2 and 4 features were slower, and all 14
#: of a thread's features at once was slower at the root (too many column streams).
FEATURE_CHUNK = 7


@njit(cache=True, nogil=True)
def compact_rows(slot_of_row, stats, count_stat, rows, slots):
    """List the rows that go into some histogram, with their slots, per tree.

    Skipping unselected rows inside the histogram loop is a data-dependent branch that
    mispredicts about half the time below the root; a compacted list makes the hot loop
    branch-free (measured 67 ms -> 25 ms for 1M x 28 codes with half the rows selected).
    Rows whose count statistic is 0 (out of a tree's bootstrap sample, or dropped by
    ``subsample``) add only zeros, so they are left out too: about 37% of a forest's rows.

    Parameters
    ----------
    slot_of_row : ndarray (n_trees, n_rows) int32, -1 = not accumulated   # IN
    stats : ndarray (n_trees, n_rows, n_stats)                             # IN
    count_stat : int, index of the count statistic; -1 keeps every row
    rows, slots : ndarray (n_trees, n_rows) int32                          # OUT
    Returns
    -------
    counts : ndarray (n_trees,) int64, selected rows per tree
    """
    n_trees, n_rows = slot_of_row.shape
    counts = np.zeros(n_trees, np.int64)
    for t in range(n_trees):
        k = 0
        for i in range(n_rows):
            s = slot_of_row[t, i]
            if s >= 0 and (count_stat < 0 or stats[t, i, count_stat] != 0):
                rows[t, k] = i
                slots[t, k] = s
                k += 1
        counts[t] = k
    return counts


@njit(parallel=True, cache=True, nogil=True)
def _build_histograms_grouped(codes, stats, rows, slots, chunk_start, chunk_count, hist,
                              n_groups, feature_chunk):
    n_features = codes.shape[0]
    n_trees = stats.shape[0]
    n_stats = stats.shape[2]
    n_chunks = chunk_start.shape[0]
    for g in prange(n_groups):
        f_lo = g * n_features // n_groups
        f_hi = (g + 1) * n_features // n_groups
        for f0 in range(f_lo, f_hi, feature_chunk):
            f1 = min(f_hi, f0 + feature_chunk)
            for t in range(n_trees):
                rows_t = rows[t]
                slots_t = slots[t]
                stats_t = stats[t]
                for c in range(n_chunks):
                    lo = chunk_start[c]
                    hi = lo + chunk_count[t, c]
                    if n_stats == 3:
                        # Boosting (gradient, hessian, count) and binary CART: the hot path.
                        for j in range(lo, hi):
                            i = rows_t[j]
                            s = slots_t[j]
                            s0 = stats_t[i, 0]
                            s1 = stats_t[i, 1]
                            s2 = stats_t[i, 2]
                            for f in range(f0, f1):
                                b = codes[f, i]
                                hist[s, f, b, 0] += s0
                                hist[s, f, b, 1] += s1
                                hist[s, f, b, 2] += s2
                    else:
                        for j in range(lo, hi):
                            i = rows_t[j]
                            s = slots_t[j]
                            for f in range(f0, f1):
                                b = codes[f, i]
                                for k in range(n_stats):
                                    hist[s, f, b, k] += stats_t[i, k]


def build_histograms_selected(codes, stats, rows, slots, chunk_start, chunk_count, hist):
    """Add listed rows of one block into the histograms of their slots.

    The rows come as consecutive chunks of a list: chunk ``c`` of tree ``t`` is
    ``rows[t, chunk_start[c] : chunk_start[c] + chunk_count[t, c]]`` with its slots in
    ``slots``, rows ascending across the chunks (what ``partition.partition_select_rows``
    writes, one chunk per thread's share of the block, so it need not be compacted again).

    Parameters
    ----------
    codes : ndarray (n_features, n_rows) uint8 or uint16            # IN
    stats : ndarray (n_trees, n_rows, n_stats) float32 or float64   # IN
    rows, slots : ndarray (n_trees, n_rows) int32                   # IN
    chunk_start : ndarray (n_chunks,) int64                         # IN
    chunk_count : ndarray (n_trees, n_chunks) int64                 # IN
    hist : ndarray (n_slots, n_features, max_bin, n_stats) float64  # IN/OUT, accumulated

    One parallel region per call: thread ``g`` owns a contiguous range of features and
    walks the listed rows once per chunk of ``FEATURE_CHUNK`` of them, so threads never
    wait for each other mid-block. (A launch per tile measured 2.5-4x slower when the
    cores were shared with other processes.) Each (slot, feature) histogram is summed by
    one thread in row order, so the result does not depend on the thread count::

        thread 0: rows [f0..f6]   rows [f7..f13]
        thread 1: rows [f14..f20] rows [f21..f27]
    """
    n_groups = max(1, min(numba.get_num_threads(), codes.shape[0]))
    _build_histograms_grouped(codes, stats, rows, slots, chunk_start, chunk_count, hist,
                              n_groups, FEATURE_CHUNK)


def build_histograms(codes, stats, slot_of_row, hist, count_stat=-1):
    """Add one block's rows into the histograms of their slots.

    Parameters
    ----------
    codes : ndarray (n_features, n_rows) uint8 or uint16            # IN
    stats : ndarray (n_trees, n_rows, n_stats) float32              # IN
    slot_of_row : ndarray (n_trees, n_rows) int32, -1 to skip       # IN
    hist : ndarray (n_slots, n_features, max_bin, n_stats) float64  # IN/OUT, accumulated
    count_stat : int, the statistic that counts rows; rows where it is 0 contribute
        nothing and are skipped (-1: keep every row). The sums are the same either way.

    The same sums as :func:`build_histograms_selected` after :func:`compact_rows`.
    """
    n_trees, n_rows = slot_of_row.shape
    rows = np.empty((n_trees, n_rows), np.int32)
    slots = np.empty((n_trees, n_rows), np.int32)
    counts = compact_rows(slot_of_row, stats, count_stat, rows, slots)
    build_histograms_selected(codes, stats, rows, slots, np.zeros(1, np.int64),
                              counts[:, None], hist)


@njit(cache=True)
def subtract_histograms(hist, parent_slots, built_slots, sibling_slots):
    """``hist[sibling] = hist[parent] - hist[built]`` for each triple (the subtraction trick).

    Parameters
    ----------
    hist : ndarray (n_slots, n_features, max_bin, n_stats) float64   # IN/OUT
    parent_slots, built_slots, sibling_slots : ndarray (n,) int32     # IN
    """
    for j in range(parent_slots.shape[0]):
        hist[sibling_slots[j]] = hist[parent_slots[j]] - hist[built_slots[j]]


@njit(cache=True)
def node_sums_from_histograms(hist, slots, out):
    """Totals of each slot's node: the sum over all bins of feature 0.

    Every row falls in exactly one bin of every feature (missing rows in the missing bin),
    so any feature's histogram sums to the node totals.

    Parameters
    ----------
    hist : ndarray (n_slots, n_features, max_bin, n_stats) float64  # IN
    slots : ndarray (n,) int32                                      # IN
    out : ndarray (n, n_stats) float64                              # OUT
    """
    n_bins = hist.shape[2]
    n_stats = hist.shape[3]
    for j in range(slots.shape[0]):
        for k in range(n_stats):
            total = 0.0
            for b in range(n_bins):
                total += hist[slots[j], 0, b, k]
            out[j, k] = total
