"""Every feature's best CART split at each node, not only the node's best: the candidates
the Hoeffding tree's bound compares (``learners.hoeffding.decide``) and the oblique
forest's per-feature proxies. The criteria and the per-histogram searches are
:mod:`.split_cart`'s."""
import numpy as np
from numba import njit

from .parallel import MIN_PAIRS, RANGE_KERNEL, run_ranges
from .split_cart import _cart_categorical, _cart_numeric, _stats_weight, hist_bin_starts


def find_feature_splits_cart(hist, node_sums, slots, n_value_bins, is_categorical,
                             missing_bin, criterion_code, n_classes, min_weight_leaf,
                             proxy, bin_idx, default_left, cat_bitset, left_sums,
                             column_of=None):
    """Best CART split of every (node, feature) pair, not only each node's best: what a
    Hoeffding tree compares (its best two features, and the merit of the feature a
    node already splits on).

    Parameters
    ----------
    hist : ndarray (n_slots, n_columns, max_bin, width >= n_stats) float64     # IN
        Full histograms (every feature), statistics as :func:`find_splits_cart`.
    node_sums : ndarray (n_slots, n_stats) float64                             # IN
    slots : ndarray (n_eval,) int32                                            # IN
    n_value_bins : ndarray (n_features,) int32                                 # IN
    is_categorical : ndarray (n_features,) bool                                # IN
    missing_bin : int, ``max_bin - 1``
    criterion_code : int, 0 gini, 1 entropy, 2 squared_error
    n_classes : int
    min_weight_leaf : ndarray (n_eval,) float64, least weight of either side    # IN
    proxy : ndarray (n_eval, n_features) float64        # OUT, -inf: no valid split
    bin_idx : ndarray (n_eval, n_features) int32        # OUT, numeric threshold bin
    default_left : ndarray (n_eval, n_features) bool    # OUT
    cat_bitset : ndarray (n_eval, n_features, n_words) uint32   # OUT, left set
    left_sums : ndarray (n_eval, n_features, n_stats) float64    # OUT
    column_of : ndarray (n_features + 1,) int64 or None, as :func:`find_splits_cart`
    """
    n_features = n_value_bins.shape[0]
    bin_start, flat = hist_bin_starts(hist, column_of, n_features)
    # a C-contiguous copy of a strided view: one compiled kernel whatever the caller holds
    node_sums = np.ascontiguousarray(node_sums, dtype=np.float64)
    _find_feature_splits_cart(flat, bin_start, node_sums, slots, n_value_bins,
                              is_categorical, missing_bin, criterion_code, n_classes,
                              min_weight_leaf, proxy, bin_idx, default_left, cat_bitset,
                              left_sums)


@njit(**RANGE_KERNEL)
def _find_feature_splits_cart_range(p_lo, p_hi, hist, bin_start, node_sums, slots,
                                    n_value_bins, is_categorical, missing_bin, criterion_code,
                                    n_classes, min_weight_leaf, proxy, bin_idx, default_left,
                                    cat_bitset, left_sums):
    """:func:`_find_feature_splits_cart` for the pairs ``p_lo .. p_hi - 1``."""
    n_features = n_value_bins.shape[0]
    n_stats = left_sums.shape[2]
    count_stat = n_stats - 1
    no_values = np.empty(0)
    for p in range(p_lo, p_hi):
        e = p // n_features
        f = p - e * n_features
        s = slots[e]
        h = hist[s, bin_start[f]:bin_start[f + 1]]
        w_node = _stats_weight(node_sums[s], criterion_code, n_classes)
        bin_idx[e, f] = -1
        if is_categorical[f]:
            g, dl = _cart_categorical(h, node_sums[s], w_node, n_value_bins[f], missing_bin,
                                      criterion_code, n_classes, count_stat, 0.0,
                                      min_weight_leaf[e], left_sums[e, f], cat_bitset[e, f],
                                      no_values)
        else:
            cat_bitset[e, f, :] = 0
            scratch = np.empty((2, n_stats))
            g, b, dl = _cart_numeric(h, node_sums[s], w_node, n_value_bins[f], missing_bin,
                                     criterion_code, n_classes, count_stat, 0.0,
                                     min_weight_leaf[e], -1, left_sums[e, f], scratch[0],
                                     scratch[1], no_values, 0, -np.inf, np.inf)
            bin_idx[e, f] = b
        proxy[e, f] = g
        default_left[e, f] = dl



def _find_feature_splits_cart(hist, bin_start, node_sums, slots, n_value_bins, is_categorical,
                              missing_bin, criterion_code, n_classes, min_weight_leaf, proxy,
                              bin_idx, default_left, cat_bitset, left_sums):
    """Each (node, feature) pair's best split into the per-pair outputs."""
    run_ranges(_find_feature_splits_cart_range, slots.shape[0] * n_value_bins.shape[0], hist,
               bin_start, node_sums, slots, n_value_bins, is_categorical, missing_bin,
               criterion_code, n_classes, min_weight_leaf, proxy, bin_idx, default_left,
               cat_bitset, left_sums, min_tasks=MIN_PAIRS)

@njit(cache=True, nogil=True)
def feature_merits(node_sums, left_sums, proxy, n_classes, gini, min_fraction,
                   min_side_weight, merit):
    """Each (node, feature) split's merit as a Hoeffding tree ranks it: the node's
    impurity less the weighted impurities of its two sides, -inf for an invalid split.

    Impurities: entropy in bits or Gini (``gini``) of the class weights, or with
    ``n_classes`` 0 the variance of ``(w, w y, w y^2)``. A split is invalid when its
    search found none (``proxy`` -inf), a side has no weight, or (classification) a
    side holds no more than ``min_fraction`` of the node's weight, or (regression) less
    than ``min_side_weight``.

    Parameters
    ----------
    node_sums : ndarray (n_eval, n_stats) float64                                  # IN
    left_sums : ndarray (n_eval, n_features, n_stats) float64, the left side's sums  # IN
    proxy : ndarray (n_eval, n_features) float64                                   # IN
    n_classes : int, 0 for a regressor
    gini : bool
    min_fraction, min_side_weight : float
    merit : ndarray (n_eval, n_features) float64                                   # OUT
    """
    n_stats = node_sums.shape[1]
    right = np.empty(n_stats)
    for e in range(left_sums.shape[0]):
        total = node_sums[e]
        w = _weight(total, n_classes)
        parent = _impurity_of(total, n_classes, gini)
        for f in range(left_sums.shape[1]):
            left = left_sums[e, f]
            for k in range(n_stats):
                right[k] = total[k] - left[k]
            wl = _weight(left, n_classes)
            wr = _weight(right, n_classes)
            valid = proxy[e, f] > -np.inf and proxy[e, f] == proxy[e, f] \
                and wl > 0 and wr > 0
            if n_classes == 0:
                valid = valid and wl >= min_side_weight and wr >= min_side_weight
            else:
                valid = valid and wl > min_fraction * w and wr > min_fraction * w
            if not valid:
                merit[e, f] = -np.inf
                continue
            children = wl * _impurity_of(left, n_classes, gini) \
                + wr * _impurity_of(right, n_classes, gini)
            merit[e, f] = parent - children / (w if w > 0 else 1.0)


@njit(inline="always")
def _weight(sums, n_classes):
    if n_classes == 0:
        return sums[0]
    w = 0.0
    for k in range(n_classes):
        w += sums[k]
    return w


@njit(inline="always")
def _impurity_of(sums, n_classes, gini):
    """Entropy in bits or Gini of class weights, or the variance of ``(w, w y, w
    y^2)``; 0 without weight."""
    w = _weight(sums, n_classes)
    if w <= 0:
        return 0.0
    if n_classes == 0:
        mean = sums[1] / w
        return max(sums[2] / w - mean * mean, 0.0)
    total = 0.0
    for k in range(n_classes):
        p = sums[k] / w
        if gini:
            total += p * p
        elif p > 0:
            total += -p * np.log2(p)
    return 1.0 - total if gini else total
