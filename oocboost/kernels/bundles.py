"""Exclusive feature bundling kernels: sparse features that are rarely non-default in the
same row share one stored column (LightGBM's EFB).

A cache's *stored columns* are its features grouped: a group of one is the feature's own
codes; a group of several (a bundle) holds in one code which of its features is off its
default bin and at which bin::

    col_ptr, col_members        CSR: stored column s holds features
                                col_members[col_ptr[s]:col_ptr[s + 1]]
    default_bin[f]              the bundled feature's most common bin (-1 unbundled)
    offset[f]                   bundle code of f's bin b != default is
                                offset[f] + 1 + b - (b > default_bin[f]); code 0 = every
                                feature of the bundle at its default bin
    code_feature[s, c]          the feature bundle code c of column s stands for (-1: none;
                                c runs to the most codes a bundle uses)
    code_bin[s, c]              and its bin

A bundle's codes stay below the missing code (its features have no missing values), so
the partition's missing test never fires on a bundle column. Rows where two features of a
bundle are off their default (conflicts) keep the later feature's bin.
"""
import numpy as np
from numba import njit, prange


@njit(inline="always")
def _copy_row(src, i, dst, j):
    """``dst[j] = src[i]`` (a feature that is a stored column of its own)."""
    for r in range(src.shape[1]):
        dst[j, r] = src[i, r]


@njit(parallel=True, cache=True, nogil=True)
def encode_bundles(codes, col_ptr, col_members, default_bin, offset, out, conflicts):
    """Stored columns from feature codes.

    Parameters
    ----------
    codes : ndarray (n_features, n_rows) uint8/uint16                  # IN
    col_ptr, col_members, default_bin, offset : int64 arrays (module docstring)   # IN
    out : ndarray (n_columns, n_rows), codes' dtype                      # OUT
    conflicts : ndarray (n_columns,) int64                               # IN/OUT
        Rows where a feature overwrote another's non-default code are added.
    """
    n_rows = codes.shape[1]
    for s in prange(col_ptr.shape[0] - 1):
        a = col_ptr[s]
        b = col_ptr[s + 1]
        if b - a == 1:
            _copy_row(codes, col_members[a], out, s)
            continue
        for i in range(n_rows):
            out[s, i] = 0
        n_conflicts = 0
        for k in range(a, b):
            f = col_members[k]
            d = default_bin[f]
            base = offset[f] + 1
            for i in range(n_rows):
                c = np.int64(codes[f, i])
                if c != d:
                    n_conflicts += out[s, i] != 0
                    out[s, i] = base + c - (c > d)
        conflicts[s] += n_conflicts


@njit(parallel=True, cache=True, nogil=True)
def decode_bundles(stored, col_ptr, col_members, default_bin, code_feature, code_bin, out):
    """Feature codes from stored columns (the inverse of :func:`encode_bundles` where no
    row conflicts).

    Parameters
    ----------
    stored : ndarray (n_columns, n_rows) uint8/uint16                    # IN
    col_ptr, col_members, default_bin, code_feature, code_bin : arrays   # IN
    out : ndarray (n_features, n_rows), stored's dtype                   # OUT
    """
    n_rows = stored.shape[1]
    for s in prange(col_ptr.shape[0] - 1):
        a = col_ptr[s]
        b = col_ptr[s + 1]
        if b - a == 1:
            _copy_row(stored, s, out, col_members[a])
            continue
        for k in range(a, b):
            f = col_members[k]
            d = default_bin[f]
            for i in range(n_rows):
                out[f, i] = d
        for i in range(n_rows):
            c = np.int64(stored[s, i])
            if c != 0:
                out[code_feature[s, c], i] = code_bin[s, c]


@njit(parallel=True, cache=True, nogil=True)
def expand_histograms(stored_hist, hist, slots, col_ptr, col_members, default_bin,
                      code_feature, code_bin, stored_start, feature_start):
    """Feature histograms of ``slots`` from stored-column histograms.

    A group of one is copied (all of its histogram columns). A bundle's code ``c > 0``
    is its feature's bin; a bundled feature's default bin is the node's total (the sum
    over all of the bundle's codes) less its other bins; its missing bin is zero.

    Parameters
    ----------
    stored_hist : ndarray (n_slots, n_stored_hist_columns, max_bin, width)   # IN
    hist : ndarray (n_slots, n_hist_columns, max_bin, width)                 # OUT (slots)
    slots : ndarray (k,) int64                                               # IN
    stored_start, feature_start : ndarray int64
        First histogram column of each stored column / feature (plus the end).
    """
    max_bin = hist.shape[2]
    width = hist.shape[3]
    n_columns = col_ptr.shape[0] - 1
    for j in prange(slots.shape[0]):
        slot = slots[j]
        for s in range(n_columns):
            a = col_ptr[s]
            b = col_ptr[s + 1]
            src = stored_start[s]
            if b - a == 1:
                dst = feature_start[col_members[a]]
                for q in range(stored_start[s + 1] - src):
                    for k in range(max_bin):
                        for w in range(width):
                            hist[slot, dst + q, k, w] = stored_hist[slot, src + q, k, w]
                continue
            for m in range(a, b):
                f = col_members[m]
                col = feature_start[f]
                d = default_bin[f]
                for k in range(max_bin):
                    for w in range(width):
                        hist[slot, col, k, w] = 0
                for c in range(max_bin):
                    for w in range(width):
                        hist[slot, col, d, w] += stored_hist[slot, src, c, w]
            for c in range(1, code_feature.shape[1]):
                f = code_feature[s, c]
                if f < 0:
                    continue
                col = feature_start[f]
                k = code_bin[s, c]
                d = default_bin[f]
                for w in range(width):
                    v = stored_hist[slot, src, c, w]
                    hist[slot, col, k, w] = v
                    hist[slot, col, d, w] -= v
