"""Oblique splits (``splitter="oblique"``): moving rows through split nodes that test
``sum_j w_j x_j <= t`` on 2-3 features, and the per-direction histograms of those sums a
level's extra pass gathers. Over bin codes a feature's value is its bin's middle
(``rep[f, code]``, NaN for the missing code, ``model.mars.representatives``).

Node kinds: 0 leaf (or not split yet), 1 axis-aligned (bin threshold or category set),
2 oblique (``obl_feature`` padded with -1, ``obl_weight``, ``obl_threshold``). A row
missing any feature of an oblique split takes the node's default direction.
"""
import numpy as np
from numba import njit, prange

from .surrogate import axis_goes_left

KIND_LEAF, KIND_AXIS, KIND_OBLIQUE = 0, 1, 2


@njit(inline="always")
def _oblique_sum(codes, rep, i, features, weights):
    """``sum_j w_j rep[f_j, code]`` of row ``i`` (NaN when a value is missing)."""
    z = 0.0
    for j in range(features.shape[0]):
        f = features[j]
        if f < 0:
            break
        z += weights[j] * rep[f, codes[f, i]]
    return z


@njit(parallel=True, cache=True)
def advance_rows(codes, rep, node_of_row, kind, feature, bin_threshold, default_left,
                 is_cat, bits, obl_feature, obl_weight, obl_threshold, left, right,
                 missing_bin):
    """Move every row one level down its tree (rows at leaves stay).

    Parameters
    ----------
    codes : ndarray (n_features, n_rows) uint8/uint16                         # IN
    rep : ndarray (n_features, n_codes) float64                               # IN
    node_of_row : ndarray (n_trees, n_rows) int32                             # IN/OUT
    kind, feature, bin_threshold, default_left, is_cat : (n_trees, capacity)  # IN
    bits : ndarray (n_trees, capacity, n_words) uint32                        # IN
    obl_feature : (n_trees, capacity, 3) int32, obl_weight : float64 (same)   # IN
    obl_threshold, left, right : (n_trees, capacity)                          # IN
    """
    n_trees, n_rows = node_of_row.shape
    for i in prange(n_rows):
        for t in range(n_trees):
            node = node_of_row[t, i]
            k = kind[t, node]
            if k == KIND_LEAF:
                continue
            if k == KIND_AXIS:
                code = np.int64(codes[feature[t, node], i])
                go = axis_goes_left(code, node, bin_threshold[t], default_left[t], is_cat[t],
                                bits[t], missing_bin)
            else:
                z = _oblique_sum(codes, rep, i, obl_feature[t, node], obl_weight[t, node])
                go = default_left[t, node] if z != z else z <= obl_threshold[t, node]
            node_of_row[t, i] = left[t, node] if go else right[t, node]


@njit(parallel=True, cache=True)
def projection_histograms(codes, rep, node_of_row, stats, slot_of_node, features, weights,
                          z_low, z_width, out):
    """Histograms of ``z = sum_j w_dj x_j`` for every candidate direction ``d`` of every
    evaluated node: bin ``floor((z - z_low) / z_width)`` clipped to the node's bins, the
    last bin for rows missing a value.

    Parameters
    ----------
    node_of_row : ndarray (n_trees, n_rows) int32                             # IN
    stats : ndarray (n_trees, n_rows, n_stats) float32/float64                # IN
    slot_of_node : ndarray (n_trees, capacity) int32, -1: not evaluated       # IN
    features : ndarray (n_slots, 3) int32, padded with -1                     # IN
    weights : ndarray (n_slots, n_dirs, 3) float64                            # IN
    z_low, z_width : ndarray (n_slots, n_dirs) float64                        # IN
    out : ndarray (n_slots, n_dirs, n_bins + 1, width >= n_stats) float64     # IN/OUT
    """
    n_trees, n_rows = node_of_row.shape
    n_dirs = weights.shape[1]
    n_bins = out.shape[2] - 1
    n_stats = stats.shape[2]
    for d in prange(n_dirs):
        for t in range(n_trees):
            for i in range(n_rows):
                s = slot_of_node[t, node_of_row[t, i]]
                if s < 0:
                    continue
                z = _oblique_sum(codes, rep, i, features[s], weights[s, d])
                if z != z:
                    b = n_bins
                else:
                    b = np.int64((z - z_low[s, d]) / z_width[s, d])
                    b = min(max(b, 0), n_bins - 1)
                for k in range(n_stats):
                    out[s, d, b, k] += stats[t, i, k]
