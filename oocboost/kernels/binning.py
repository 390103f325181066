"""Numba kernels that turn raw values into bin codes (see ``oocboost/common.py``).

Every kernel writes into an ``out`` buffer the caller owns, so one preallocated
``(n_features, n_rows)`` codes block receives one call per feature. ``out`` is uint8 or
uint16 (``common.binned_dtype``); numba compiles one specialisation per dtype.

Each parallel kernel has a sequential naive twin (suffix ``_naive``) that the tests run
against it.
"""
import numpy as np
from numba import njit

from .parallel import MIN_ROWS, RANGE_KERNEL, run_ranges


@njit(cache=True)
def _searchsorted_left(edges, x):
    # Number of edges strictly below x, i.e. np.searchsorted(edges, x, side="left").
    # Branch-free halving (the comparison compiles to a conditional move): random values
    # defeat the branch predictor, and this runs about 6x faster than the textbook loop.
    n = edges.shape[0]
    if n == 0:
        return 0
    base = 0
    while n > 1:
        half = n >> 1
        # invariant: edges[:base] < x <= edges[base + n:]
        base = base + half if edges[base + half - 1] < x else base
        n -= half
    return base + (1 if edges[base] < x else 0)


@njit(**RANGE_KERNEL)
def _map_to_bins_range(i_lo, i_hi, values, edges, missing_code, out):
    """:func:`map_to_bins` for the rows ``i_lo .. i_hi - 1``."""
    for i in range(i_lo, i_hi):
        x = values[i]
        if np.isnan(x):
            out[i] = missing_code
        else:
            out[i] = _searchsorted_left(edges, x)


def map_to_bins(values, edges, missing_code, out):
    """Bin one numeric column: ``code = searchsorted(edges, x, side="left")``.

    Parameters
    ----------
    values : ndarray of float64, shape (n_rows,)
        IN. Raw values; NaN is missing, +-inf are ordinary values.
    edges : ndarray of float64, shape (n_edges,)
        IN. Strictly increasing finite bin upper bounds (``n_value_bins - 1`` of them).
    missing_code : int
        Code written for NaN (``max_bin - 1``).
    out : ndarray of uint8 or uint16, shape (n_rows,)
        OUT. Bin codes; bin ``b`` holds ``edges[b-1] < x <= edges[b]``.
    """
    run_ranges(_map_to_bins_range, values.shape[0], values, edges, missing_code, out,
               min_tasks=MIN_ROWS)


@njit(**RANGE_KERNEL)
def _map_features_to_bins_range(j_lo, j_hi, values, edges, n_edges, feature_index,
                                missing_code, out):
    """:func:`map_features_to_bins` for the columns ``j_lo .. j_hi - 1``."""
    n_rows = values.shape[1]
    for j in range(j_lo, j_hi):
        e = edges[j, : n_edges[j]]
        dst = out[feature_index[j]]
        src = values[j]
        for i in range(n_rows):
            x = src[i]
            if np.isnan(x):
                dst[i] = missing_code
            else:
                dst[i] = _searchsorted_left(e, x)


def map_features_to_bins(values, edges, n_edges, feature_index, missing_code, out):
    """Bin several numeric columns in one parallel launch (parallel over features).

    One launch per batch instead of one per column: a parallel launch costs little on
    an idle machine but whole scheduler time slices when the cores are shared, and a
    1 MiB CSV block holds only ~5000 rows (28 launches per block cost 24 s of a 1M-row
    build under load; one launch per block, under 1 s).

    Parameters
    ----------
    values : ndarray of float64, shape (n_numeric, n_rows)
        IN. Raw values of the numeric columns; NaN is missing.
    edges : ndarray of float64, shape (n_numeric, max_edges)
        IN. Row j holds column j's edges in its first ``n_edges[j]`` entries.
    n_edges : ndarray of int64, shape (n_numeric,)
        IN.
    feature_index : ndarray of int64, shape (n_numeric,)
        IN. Row of ``out`` that column j's codes go to.
    missing_code : int
    out : ndarray of uint8 or uint16, shape (n_features, n_rows)
        OUT. Only the rows named by ``feature_index`` are written.
    """
    run_ranges(_map_features_to_bins_range, values.shape[0], values, edges, n_edges,
               feature_index, missing_code, out, min_tasks=_min_columns(values.shape[1]))


#: Edges per group of the two-level search (:func:`map_features_to_bins_grouped`).
GROUP = 16
#: Most edges the two-level search handles: 16 groups of 16, the last entry always +inf.
GROUPED_MAX_EDGES = GROUP * GROUP - 1


def grouped_edges(edges, n_edges):
    """Edges laid out for :func:`map_features_to_bins_grouped`.

    Parameters
    ----------
    edges : ndarray (n_numeric, max_edges) float64, row j's first n_edges[j] entries used
    n_edges : ndarray (n_numeric,) int64, each at most ``GROUPED_MAX_EDGES``

    Returns
    -------
    padded : ndarray (n_numeric, 256) float64, the edges then +inf
    pivots : ndarray (n_numeric, 16) float64, the last edge of each group of 16
    """
    padded = np.full((len(n_edges), GROUP * GROUP), np.inf)
    for j, n in enumerate(n_edges):
        padded[j, :n] = edges[j, :n]
    pivots = np.ascontiguousarray(padded[:, GROUP - 1::GROUP])
    return padded, pivots


@njit(**RANGE_KERNEL)
def _map_features_to_bins_grouped_range(j_lo, j_hi, values, padded, pivots, feature_index,
                                        missing_code, out):
    """:func:`map_features_to_bins_grouped` for the columns ``j_lo .. j_hi - 1``."""
    n_rows = values.shape[1]
    for j in range(j_lo, j_hi):
        e = padded[j]
        piv = pivots[j]
        dst = out[feature_index[j]]
        src = values[j]
        for i in range(n_rows):
            x = src[i]
            if np.isnan(x):
                dst[i] = missing_code
            else:
                g = 0
                for k in range(GROUP):
                    g += piv[k] < x
                base = g * GROUP
                c = 0
                for k in range(GROUP):
                    c += e[base + k] < x
                dst[i] = base + c


def map_features_to_bins_grouped(values, padded, pivots, feature_index, missing_code, out):
    """:func:`map_features_to_bins` for columns of at most 255 edges, by counting.

    ``code = #(edges < x)`` is found in two steps of 16 comparisons each: the groups of
    16 edges whose last edge is below x, then the edges below x in the next group. Both
    are fixed-length loops of independent comparisons that compile to SIMD, where a
    binary search is a chain of 8 dependent loads (about 19 ns a value, latency-bound).

    Parameters
    ----------
    values : ndarray (n_numeric, n_rows) float64       # IN, NaN is missing
    padded, pivots : from :func:`grouped_edges`         # IN
    feature_index : ndarray (n_numeric,) int64          # IN, row of ``out`` per column
    missing_code : int
    out : ndarray (n_features, n_rows) uint8/uint16     # OUT
    """
    run_ranges(_map_features_to_bins_grouped_range, values.shape[0], values, padded, pivots,
               feature_index, missing_code, out, min_tasks=_min_columns(values.shape[1]))


def _min_columns(n_rows):
    """Fewest columns of ``n_rows`` a thread takes: a thread's start costs about
    ``MIN_ROWS`` rows of binning (a 10-row chunk of 10 columns handed half its columns
    to a second thread, and took longer than one thread binning them all)."""
    return max(1, -(-MIN_ROWS // max(int(n_rows), 1)))


@njit(cache=True)
def map_to_bins_naive(values, edges, missing_code, out):
    """Sequential twin of :func:`map_to_bins` that counts edges below x one by one."""
    for i in range(values.shape[0]):
        x = values[i]
        if np.isnan(x):
            out[i] = missing_code
            continue
        code = 0
        for j in range(edges.shape[0]):
            if edges[j] < x:
                code += 1
        out[i] = code


@njit(**RANGE_KERNEL)
def _map_categories_range(i_lo, i_hi, indices, lookup, missing_code, out):
    """:func:`map_categories` for the rows ``i_lo .. i_hi - 1``."""
    for i in range(i_lo, i_hi):
        k = indices[i]
        if k < 0:
            out[i] = missing_code
        else:
            out[i] = lookup[k]


def map_categories(indices, lookup, missing_code, out):
    """Map dictionary indices of a categorical column to codes through a lookup table.

    Parameters
    ----------
    indices : ndarray of int32 or int64, shape (n_rows,)
        IN. Index of each row's string in the column's dictionary; negative is missing.
    lookup : ndarray of uint8 or uint16, shape (n_dictionary,)
        IN. Code of each dictionary entry (already "other" or missing for unknown ones).
    missing_code : int
        Code written for missing rows (``max_bin - 1``).
    out : ndarray of uint8 or uint16, shape (n_rows,)
        OUT. Category codes.
    """
    run_ranges(_map_categories_range, indices.shape[0], indices, lookup, missing_code, out,
               min_tasks=MIN_ROWS)


@njit(cache=True)
def map_categories_naive(indices, lookup, missing_code, out):
    """Sequential twin of :func:`map_categories`."""
    for i in range(indices.shape[0]):
        out[i] = missing_code if indices[i] < 0 else lookup[indices[i]]


@njit(**RANGE_KERNEL)
def _map_float_codes_range(i_lo, i_hi, values, n_codes, unknown_code, missing_code, out):
    """:func:`map_float_codes` for the rows ``i_lo .. i_hi - 1``."""
    for i in range(i_lo, i_hi):
        x = values[i]
        if np.isnan(x):
            out[i] = missing_code
        elif x >= 0.0 and x < n_codes and x == np.floor(x):
            out[i] = np.int64(x)
        else:
            out[i] = unknown_code



def map_float_codes(values, n_codes, unknown_code, missing_code, out):
    """Map category codes given as floats (in-memory matrices) to codes.

    Parameters
    ----------
    values : ndarray of float64, shape (n_rows,)
        IN. Category codes as floats; NaN is missing.
    n_codes : int
        Codes ``0 .. n_codes - 1`` are kept as they are.
    unknown_code : int
        Code for any other value (negative, fractional, too large): the "other" code when
        the feature has one, else the missing code.
    missing_code : int
        Code written for NaN.
    out : ndarray of uint8 or uint16, shape (n_rows,)
        OUT. Category codes.
    """
    run_ranges(_map_float_codes_range, values.shape[0], values, n_codes, unknown_code,
               missing_code, out, min_tasks=MIN_ROWS)