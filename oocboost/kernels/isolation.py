"""Isolation trees (Liu, Ting and Zhou 2008) on binned data: each node's random split,
chosen from the count histogram of the rows the tree was grown on.

scikit-learn's isolation tree (an ``ExtraTreeRegressor`` with ``max_features=1``) draws a
feature at random among those not constant in the node, and a threshold uniformly between
the node's smallest and largest value of it. On bin codes the node's values are known up
to their bins, so the threshold is drawn between the *positions* of the node's lowest and
highest non-empty bins (``bin_position``: a value inside each bin, given by the caller)
and the split falls at the bin edge that threshold crosses::

    lo, hi = lowest and highest non-empty value bin of the feature in the node
    t      = position[lo] + u * (position[hi] - position[lo])
    split after the last bin b in [lo, hi - 1] with position[b] <= t   (codes <= b left)

so wide gaps between a node's values still take most thresholds, as in the paper. A
categorical feature is split by a random subset of the node's categories (each to the
left with probability 1/2, both sides non-empty). Rows missing the feature go to a
random side (scikit-learn's random splitter sends them to a random child).
"""
import numpy as np
from numba import njit

from .sampling import _splitmix64


def isolation_splits(hist, slots, column_feature, feature_mask, n_value_bins,
                     is_categorical, missing_bin, count_stat, bin_position, uniforms,
                     feature, bin_idx, default_left, is_cat, cat_bitset, left_sums,
                     right_sums, column_of=None):
    """Each evaluated node's random isolation split (module docstring).

    Parameters
    ----------
    hist : ndarray (n_slots, n_columns, max_bin, width >= n_stats) int32 or float64  # IN
    slots : ndarray (n_eval,) int32                                                   # IN
    column_feature : ndarray (n_eval, n_columns) int32, the feature of each column  # IN
    feature_mask : ndarray (n_eval, n_columns) bool, columns the node may split on  # IN
    n_value_bins : ndarray (n_features,) int32                                       # IN
    is_categorical : ndarray (n_features,) bool                                      # IN
    missing_bin : int, ``max_bin - 1``
    count_stat : int, the statistic that counts a node's rows
    bin_position : ndarray (n_features, max_value_bins) float64, a value in each bin # IN
    uniforms : ndarray (n_eval, 4) float64 in [0, 1): feature, threshold, categories,
        missing side                                                                  # IN
    feature, bin_idx : ndarray (n_eval,) int32: the split (feature -1: none)        # OUT
    default_left, is_cat : ndarray (n_eval,) bool                                    # OUT
    cat_bitset : ndarray (n_eval, n_words) uint32, categories that go left          # OUT
    left_sums, right_sums : ndarray (n_eval, n_stats) float64, missing rows included # OUT
    column_of : ndarray (n_features + 1,) int64 or None, as ``split_cart.find_splits_cart``
    """
    from .split_cart import hist_bin_starts

    bin_start, flat = hist_bin_starts(hist, column_of, column_feature.shape[1])
    _isolation_splits(flat, bin_start, np.ascontiguousarray(slots, np.int32),
                      np.ascontiguousarray(column_feature, np.int32),
                      np.ascontiguousarray(feature_mask, np.bool_), n_value_bins,
                      is_categorical, int(missing_bin), int(count_stat), bin_position,
                      uniforms, feature, bin_idx, default_left, is_cat, cat_bitset,
                      left_sums, right_sums)


@njit(cache=True)
def _present(hist, s, start, nvb, missing_bin, count_stat):
    """``(lowest, highest, number)`` of the feature's non-empty value bins in slot s."""
    lo = -1
    hi = -1
    n = 0
    for b in range(nvb):
        if b != missing_bin and hist[s, start + b, count_stat] > 0:
            if lo < 0:
                lo = b
            hi = b
            n += 1
    return lo, hi, n


@njit(cache=True)
def _numeric_threshold(position, lo, hi, u):
    """The last bin ``b`` in ``[lo, hi - 1]`` whose position is at most the threshold."""
    t = position[lo] + u * (position[hi] - position[lo])
    b = lo
    while b < hi - 1 and position[b + 1] <= t:
        b += 1
    return b


@njit(cache=True)
def _category_subset(hist, s, start, nvb, missing_bin, count_stat, u, bits):
    """A random subset of the node's categories into ``bits`` (both sides non-empty)."""
    key = np.uint64(u * 9007199254740992.0)
    first = -1
    n_left = 0
    n_present = 0
    for b in range(nvb):
        if b == missing_bin or hist[s, start + b, count_stat] <= 0:
            continue
        n_present += 1
        if first < 0:
            first = b
        if _splitmix64(key ^ np.uint64(b)) >> np.uint64(63):
            bits[b >> 5] |= np.uint32(1) << np.uint32(b & 31)
            n_left += 1
    # all on one side: the first category alone goes the other way
    if n_left == 0 or n_left == n_present:
        bits[first >> 5] ^= np.uint32(1) << np.uint32(first & 31)


@njit(cache=True)
def _side_sums(hist, s, start, nvb, missing_bin, f_is_cat, b_split, bits, out_left,
               out_right):
    """Sums of the value bins on each side of the split (missing rows not included)."""
    for k in range(out_left.shape[0]):
        out_left[k] = 0.0
        out_right[k] = 0.0
    for b in range(nvb):
        if b == missing_bin:
            continue
        if f_is_cat:
            left = (bits[b >> 5] >> np.uint32(b & 31)) & np.uint32(1)
        else:
            left = b <= b_split
        for k in range(out_left.shape[0]):
            if left:
                out_left[k] += hist[s, start + b, k]
            else:
                out_right[k] += hist[s, start + b, k]


@njit(cache=True)
def _isolation_splits(hist, bin_start, slots, column_feature, feature_mask, n_value_bins,
                      is_categorical, missing_bin, count_stat, bin_position, uniforms,
                      feature, bin_idx, default_left, is_cat, cat_bitset, left_sums,
                      right_sums):
    n_eval = slots.shape[0]
    n_columns = column_feature.shape[1]
    n_stats = left_sums.shape[1]
    for e in range(n_eval):
        s = slots[e]
        feature[e] = -1
        bin_idx[e] = 0
        default_left[e] = True
        is_cat[e] = False
        for w in range(cat_bitset.shape[1]):
            cat_bitset[e, w] = 0
        n_ok = 0
        for q in range(n_columns):
            if feature_mask[e, q]:
                f = column_feature[e, q]
                n_ok += _present(hist, s, bin_start[q], n_value_bins[f], missing_bin,
                                 count_stat)[2] >= 2
        if n_ok == 0:
            continue
        pick = min(int(uniforms[e, 0] * n_ok), n_ok - 1)
        q = 0
        for q in range(n_columns):
            if feature_mask[e, q]:
                f = column_feature[e, q]
                if _present(hist, s, bin_start[q], n_value_bins[f], missing_bin,
                            count_stat)[2] >= 2:
                    if pick == 0:
                        break
                    pick -= 1
        f = column_feature[e, q]
        start = bin_start[q]
        nvb = n_value_bins[f]
        lo, hi, _ = _present(hist, s, start, nvb, missing_bin, count_stat)
        feature[e] = f
        if is_categorical[f]:
            is_cat[e] = True
            _category_subset(hist, s, start, nvb, missing_bin, count_stat, uniforms[e, 2],
                             cat_bitset[e])
        else:
            bin_idx[e] = _numeric_threshold(bin_position[f], lo, hi, uniforms[e, 1])
        _side_sums(hist, s, start, nvb, missing_bin, is_categorical[f], bin_idx[e],
                   cat_bitset[e], left_sums[e], right_sums[e])
        default_left[e] = uniforms[e, 3] < 0.5
        for k in range(n_stats):
            if default_left[e]:
                left_sums[e, k] += hist[s, start + missing_bin, k]
            else:
                right_sums[e, k] += hist[s, start + missing_bin, k]


def average_path_length(n_rows):
    """``c(n)``: the average path length of an unsuccessful search in a binary search
    tree of ``n`` rows (Liu et al. 2008, Eq. 1), scikit-learn's ``_average_path_length``:
    0 for ``n <= 1``, 1 for ``n == 2``, else ``2 (ln(n - 1) + gamma) - 2 (n - 1) / n``.

    >>> average_path_length(np.array([1, 2, 256])).round(4).tolist()
    [0.0, 1.0, 10.2448]
    """
    n = np.asarray(n_rows, dtype=np.float64)
    out = np.zeros(n.shape)
    big = n > 2
    out[n == 2] = 1.0
    out[big] = 2.0 * (np.log(n[big] - 1.0) + np.euler_gamma) - 2.0 * (n[big] - 1.0) / n[big]
    return out
