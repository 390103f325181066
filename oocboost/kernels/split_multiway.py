"""Multiway categorical splits (C4.5, ID3): one child per category of a node.

A categorical feature split multiway sends each of its categories present at the node
(rows with a positive count) to a child of its own. Missing values join the child with
the most rows, and so do the categories absent at the node (at prediction). The split's
score is on the same scale as the binary CART splits' (``split_cart._cart_proxy``), so a
node compares its best multiway categorical split with its best binary numeric one:

* gini, entropy, absolute error: ``-sum_i W_i imp_i`` (the weighted impurity of the
  children); squared error ``sum_i S_i^2 / W_i`` and Poisson ``sum_i S_i log(S_i / W_i)``
  (the same up to a node constant);
* gain_ratio: ``(W imp - sum_i W_i imp_i) / split_info``, ``split_info = -sum_i (W_i / W)
  log2(W_i / W)`` (Quinlan 1993).

A split is valid when it has at least two children and every child keeps
``min_samples_leaf`` rows and ``min_weight_leaf`` weight. The grower lays the split out
as a chain of one-category-vs-rest binary nodes (``engine/grower.py``).
"""
import math

import numpy as np
from numba import njit

from .split import CRITERION_GAIN_RATIO, CRITERION_POISSON
from .split_cart import POISSON_EPSILON, _impurity, _moments, _stats_weight

_LN2 = math.log(2.0)


@njit(cache=True)
def multiway_children(h, missing_bin, n_value_bins, count_stat, child_out):
    """Fill ``child_out`` (n_codes, n_stats) with the statistics of each category's
    child (missing rows added to the largest) and zeros elsewhere. Returns (number of
    children, code of the largest child; -1 when none)."""
    n_stats = child_out.shape[1]
    for c in range(child_out.shape[0]):
        for k in range(n_stats):
            child_out[c, k] = 0.0
    n_children = 0
    largest = -1
    for c in range(n_value_bins):
        if c == missing_bin or h[c, count_stat] <= 0.0:
            continue
        n_children += 1
        for k in range(n_stats):
            child_out[c, k] = h[c, k]
        if largest < 0 or h[c, count_stat] > h[largest, count_stat]:
            largest = c
    if largest >= 0 and missing_bin < h.shape[0] and h[missing_bin, count_stat] > 0.0:
        for k in range(n_stats):
            child_out[largest, k] += h[missing_bin, k]
    return n_children, largest


@njit(cache=True)
def multiway_proxy(child, node_sum, w_node, n_value_bins, criterion_code, n_classes,
                   count_stat, min_samples_leaf, min_weight_leaf, values):
    """Score of the multiway split whose children are the rows of ``child`` with a
    positive count (module docstring); -inf when it is not valid."""
    weighted = 0.0
    split_info = 0.0
    n_children = 0
    for c in range(n_value_bins):
        n = child[c, count_stat]
        if n <= 0.0:
            continue
        w = _stats_weight(child[c], criterion_code, n_classes)
        if n < min_samples_leaf or w <= 0.0 or w < min_weight_leaf:
            return -np.inf
        n_children += 1
        if criterion_code == CRITERION_POISSON:
            if child[c, 1] <= POISSON_EPSILON:
                return -np.inf
            weighted -= child[c, 1] * math.log(child[c, 1] / w)
        elif _moments(criterion_code):
            weighted -= child[c, 1] * child[c, 1] / w
        else:
            weighted += w * _impurity(child[c], criterion_code, n_classes, values)
        share = w / w_node
        split_info -= share * (math.log(share) / _LN2)
    if n_children < 2:
        return -np.inf
    if criterion_code == CRITERION_GAIN_RATIO:
        parent = _impurity(node_sum, criterion_code, n_classes, values)
        return (w_node * parent - weighted) / split_info if split_info > 0.0 else -np.inf
    return -weighted


@njit(cache=True)
def find_multiway_splits(hist, bin_start, node_sums, slots, column_feature, feature_mask,
                         n_value_bins, is_categorical, missing_bin, criterion_code,
                         n_classes, min_samples_leaf, min_weight_leaf, total_weight, values,
                         improvement, impurity_decrease, feature, child_sums):
    """Each node's best multiway split over its categorical columns.

    Parameters
    ----------
    hist : ndarray (n_slots, n_columns * max_bin, width >= n_stats), a flat view  # IN
        (``split_cart.hist_bin_starts``)
    bin_start : ndarray (n_columns + 1,) int64, first bin of each column           # IN
    node_sums : ndarray (n_slots, n_stats) float64                                 # IN
    slots : ndarray (n_eval,) int32                                                # IN
    column_feature, feature_mask : ndarray (n_eval, n_columns), as CART's search   # IN
    improvement : ndarray (n_eval,) float64     # OUT, the score; -inf when none
    impurity_decrease : ndarray (n_eval,)       # OUT, ``W/W_root (imp - sum W_i/W imp_i)``
    feature : ndarray (n_eval,) int32           # OUT, -1 when none
    child_sums : ndarray (n_eval, n_codes, n_stats) float64   # OUT, each code's child
    """
    n_eval, n_columns = column_feature.shape
    n_stats = child_sums.shape[2]
    count_stat = n_stats - 1
    scratch = np.zeros((child_sums.shape[1], n_stats))
    for e in range(n_eval):
        improvement[e] = -np.inf
        impurity_decrease[e] = -np.inf
        feature[e] = -1
        node_sum = node_sums[slots[e]]
        w_node = _stats_weight(node_sum, criterion_code, n_classes)
        if w_node <= 0.0:
            continue
        for q in range(n_columns):
            f = column_feature[e, q]
            if not feature_mask[e, q] or not is_categorical[f]:
                continue
            h = hist[slots[e], bin_start[q]:bin_start[q + 1]]
            nvb = n_value_bins[f]
            multiway_children(h, missing_bin, nvb, count_stat, scratch)
            proxy = multiway_proxy(scratch, node_sum, w_node, nvb, criterion_code,
                                   n_classes, count_stat, min_samples_leaf,
                                   min_weight_leaf, values)
            # columns ascend by feature: the first best is the smallest feature
            if proxy > improvement[e]:
                improvement[e] = proxy
                feature[e] = f
                # element loops: a slice copy compiles numba's shape checks
                for c in range(child_sums.shape[1]):
                    for k in range(n_stats):
                        child_sums[e, c, k] = scratch[c, k]
        if feature[e] >= 0:
            imp = _impurity(node_sum, criterion_code, n_classes, values)
            weighted = 0.0
            for c in range(child_sums.shape[1]):
                if child_sums[e, c, count_stat] > 0.0:
                    w = _stats_weight(child_sums[e, c], criterion_code, n_classes)
                    weighted += w * _impurity(child_sums[e, c], criterion_code, n_classes,
                                              values)
            impurity_decrease[e] = (w_node / total_weight) * (imp - weighted / w_node)
