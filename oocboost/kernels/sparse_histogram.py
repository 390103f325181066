"""Histograms of sparse columns: only their entries are walked, the implied bin is derived.

A sparse column of a block (``codes.SparseCodes``) keeps the rows whose code is not its
implied one (the code of an absent entry). Its histogram takes those entries alone::

    hist[slot, column, code] += stats[row]          for each entry (row, code)

and, once a pass has added every block, its implied bin is the rest of the node::

    hist[slot, column, implied] = total[slot] - sum of hist[slot, column, b], b != implied

where ``total`` sums the statistics of the rows the pass added into the slot. This is
XGBoost's sparsity-aware split finding and LightGBM's most-frequent-bin trick: a column
with 1% entries costs 1% of a dense column's updates. The overwrite is right for a
column that was dense in some blocks too (their rows are in ``total`` and in their own
bins), so every column that was sparse in any block of the pass is filled. For integer
statistics the result is exact; for float sums it is the same sum in another order.

Layouts as ``histogram.py``'s::

    hist[slot, column, bin, lane]    float64 or int32, (n_slots, n_columns, max_bin, width)
    stats[tree, row, stat]           float32/float64/int32, (n_trees, n_rows, n_stats)
    slot_of_row[tree, row]           int32, (n_trees, n_rows); -1 = row not added
    totals[slot, lane]               the histograms' dtype, (n_slots, width)
"""
import numpy as np
from numba import njit, prange

from .codes import read_only
from .histogram import _row_lanes, _row_stat, _stat_arrays
from .simd import add2, add4


@njit(cache=True, nogil=True)
def _slots_of_listed_rows(rows, slots, chunk_start, chunk_count, slot_of_row):
    n_trees = rows.shape[0]
    for t in range(n_trees):
        slot_of_row[t, :] = -1
        for c in range(chunk_start.shape[0]):
            lo = chunk_start[c]
            for j in range(lo, lo + chunk_count[t, c]):
                slot_of_row[t, rows[t, j]] = slots[t, j]


def slots_of_listed_rows(rows, slots, chunk_start, chunk_count, slot_of_row):
    """Each row's slot from the row lists of ``partition.partition_select_rows``.

    Parameters
    ----------
    rows, slots : ndarray (n_trees, n_rows) int32                   # IN
    chunk_start : ndarray (n_chunks,) int64                         # IN
    chunk_count : ndarray (n_trees, n_chunks) int64                 # IN
    slot_of_row : ndarray (n_trees, n_rows) int32                   # OUT, -1 unlisted
    """
    _slots_of_listed_rows(rows, slots, chunk_start, chunk_count, slot_of_row)


@njit(cache=True, nogil=True)
def _add_slot_totals(stats, row_class, draws, slot_of_row, totals, n_stats):
    n_trees, n_rows = slot_of_row.shape
    for t in range(n_trees):
        stats_t = stats[t]
        for i in range(n_rows):
            s = slot_of_row[t, i]
            if s < 0:
                continue
            for m in range(n_stats):
                totals[s, m] += _row_stat(stats_t, row_class, draws, t, i, m, n_stats - 1)


@njit(parallel=True, cache=True, nogil=True)
def _add_sparse_columns(ptr, rows, values, hist_column, stats, row_class, draws,
                        slot_of_row, hist, n_stats):
    n_trees = slot_of_row.shape[0]
    n_columns, n_bins, width = hist.shape[1], hist.shape[2], hist.shape[3]
    for k in prange(ptr.shape[0] - 1):
        h = hist_column[k]
        lo, hi = ptr[k], ptr[k + 1]
        # one tree at a time, its arrays taken once: a column's rows ascend, so its
        # rows' slots and statistics are read in order
        for t in range(n_trees):
            slots_t = slot_of_row[t]
            stats_t = stats[t]
            for e in range(lo, hi):
                i = np.int64(rows[e])
                s = np.int64(slots_t[i])
                if s < 0:
                    continue
                at = ((s * n_columns + h) * n_bins + np.int64(values[e])) * width
                if width == 4 and n_stats <= 4:
                    s0, s1, s2, s3 = _row_lanes(stats_t, row_class, draws, t, i, n_stats)
                    add4(hist, at, s0, s1, s2, s3)
                elif width == 2 and n_stats <= 2:
                    s0, s1, _, _ = _row_lanes(stats_t, row_class, draws, t, i, n_stats)
                    add2(hist, at, s0, s1)
                else:
                    flat = hist.reshape(-1)
                    for m in range(n_stats):
                        flat[at + m] += _row_stat(stats_t, row_class, draws, t, i, m,
                                                  n_stats - 1)


def add_sparse_columns(codes, stats, slot_of_row, hist, hist_column, totals):
    """Add a block's sparse-column entries into their rows' slots, and the rows' statistics
    into their slots' totals.

    Parameters
    ----------
    codes : SparseCodes                                             # IN
    stats : ndarray (n_trees, n_rows, n_stats), or ClassCounts      # IN
    slot_of_row : ndarray (n_trees, n_rows) int32, -1 not added     # IN
    hist : ndarray (n_slots, n_columns, max_bin, width)             # IN/OUT, accumulated
    hist_column : ndarray (n_sparse,) int64, histogram column of each sparse column  # IN
    totals : ndarray (n_slots, width), the histograms' dtype, or None   # IN/OUT, accumulated
        None: the caller takes the totals from a dense column's histogram.

    Each sparse column is summed by one thread in row order, so the sums do not depend
    on the thread count.
    """
    dense, row_class, draws = _stat_arrays(stats)
    n_stats = dense.shape[2]
    if n_stats > hist.shape[3] or not hist.flags.c_contiguous or (
            totals is not None and totals.shape != (hist.shape[0], hist.shape[3])):
        raise ValueError(f"{n_stats} statistics into C-contiguous histograms of width "
                         f"{hist.shape[3]} and totals of their slots and width")
    if totals is not None:
        _add_slot_totals(dense, row_class, draws, slot_of_row, totals, n_stats)
    # read-only views: a cache's entries and those made in memory share one compile
    _add_sparse_columns(read_only(codes.ptr), read_only(codes.rows), read_only(codes.values),
                        np.ascontiguousarray(hist_column, np.int64), dense, row_class,
                        draws, slot_of_row, hist, n_stats)


@njit(parallel=True, cache=True, nogil=True)
def _fill_implied_bins(hist, slots, hist_columns, implied, value_bins, totals):
    width = hist.shape[3]
    missing = hist.shape[2] - 1
    for j in prange(slots.shape[0]):
        s = slots[j]
        for k in range(hist_columns.shape[0]):
            h = hist_columns[k]
            z = implied[k]
            n_value = value_bins[k]
            for m in range(width):
                rest = totals[s, m]
                for b in range(n_value):
                    if b != z:
                        rest -= hist[s, h, b, m]
                if missing >= n_value and missing != z:
                    rest -= hist[s, h, missing, m]
                hist[s, h, z, m] = rest


def fill_implied_bins(hist, slots, hist_columns, implied, value_bins, totals):
    """Set the implied bin of the sparse columns ``hist_columns`` in ``slots``: the slot's
    total minus the column's other bins, subtracted in bin order (module docstring). A
    column's bins are its ``value_bins`` value codes and the missing code (the last bin);
    the bins between are never written, so they are not read (a one-hot column has 2
    value bins of 256).

    Parameters
    ----------
    hist : ndarray (n_slots, n_columns, max_bin, width)             # IN/OUT
    slots : ndarray (n,) int64, the slots a pass added rows into    # IN
    hist_columns, implied, value_bins : ndarray (n_sparse,) int64   # IN
    totals : ndarray (n_slots, width), the histograms' dtype        # IN
    """
    _fill_implied_bins(hist, np.ascontiguousarray(slots, np.int64),
                       np.ascontiguousarray(hist_columns, np.int64),
                       np.ascontiguousarray(implied, np.int64),
                       np.ascontiguousarray(value_bins, np.int64), totals)
