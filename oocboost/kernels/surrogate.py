"""Surrogate splits (Breiman et al. 1984, as rpart finds them): the kernels that gather,
for every split node, how the rows the primary split sends left and right spread over
the bins of every other feature, and that find each feature's best surrogate from that
histogram.

A node's surrogate histogram is ``(n_features, max_bin, 4)`` float64: per bin, the
weight of the node's rows (with the primary feature present) that the primary sends
left, right, and their counts. Rows whose primary value is missing are left out, as
rpart's agreement counts only rows with both values present.
"""
import numpy as np
from numba import njit, prange

from .codes import read_code

#: Lanes of a surrogate histogram bin.
LANE_LEFT_WEIGHT, LANE_RIGHT_WEIGHT, LANE_LEFT_COUNT, LANE_RIGHT_COUNT = 0, 1, 2, 3
#: ``best_surrogates`` direction codes: values <= the bin threshold go left or right.
LEFT_LE, RIGHT_LE = 1, 0


@njit(inline="always")
def axis_goes_left(code, node, bin_threshold, default_left, is_categorical, cat_bitset,
                   missing_bin):
    """Whether bin ``code`` goes left at an axis-aligned split node (the partition
    kernel's rules, on per-node arrays of one tree)."""
    if code == missing_bin:
        return default_left[node]
    if is_categorical[node]:
        word = code >> 5
        if word >= cat_bitset.shape[1]:
            return False
        return (cat_bitset[node, word] >> np.uint32(code & 31)) & np.uint32(1) != 0
    return code <= bin_threshold[node]


@njit(parallel=True, cache=True)
def surrogate_paths(low, wide, wide_row, left, right, feature, bin_threshold, default_left,
                    is_categorical, cat_bitset, missing_bin, slot_of_node, weight, path_slot,
                    path_side):
    """Walk every row of a block down one tree and list the split nodes on its way that
    have a surrogate histogram, with the side the primary split sends the row to.

    Parameters
    ----------
    low, wide, wide_row : the block's codes (``kernels.codes.code_arrays``)     # IN
    left, right, feature, bin_threshold, default_left, is_categorical : (n_nodes,)  # IN
        The tree (``right`` need not be ``left + 1``).
    cat_bitset : ndarray (n_nodes, n_words) uint32                              # IN
    missing_bin : int
    slot_of_node : ndarray (n_nodes,) int32, a histogram slot or -1             # IN
    weight : ndarray (n_rows,) float64, rows of weight 0 are not listed        # IN
    path_slot : ndarray (n_rows, max_steps) int32                               # OUT
        The slots on the row's way, then -1. Nodes where the row's primary value is
        missing are skipped (the row still goes on, by the default direction).
    path_side : ndarray (n_rows, max_steps) uint8, 0 left, 1 right              # OUT
    """
    n_rows = path_slot.shape[0]
    max_steps = path_slot.shape[1]
    for i in prange(n_rows):
        d = 0
        node = 0
        if weight[i] > 0:
            while left[node] >= 0:
                code = read_code(low, wide, wide_row, feature[node], i)
                go = axis_goes_left(code, node, bin_threshold, default_left, is_categorical,
                                cat_bitset, missing_bin)
                if code != missing_bin and slot_of_node[node] >= 0 and d < max_steps:
                    path_slot[i, d] = slot_of_node[node]
                    path_side[i, d] = 0 if go else 1
                    d += 1
                node = left[node] if go else right[node]
        for k in range(d, max_steps):
            path_slot[i, k] = -1


@njit(parallel=True, cache=True)
def add_surrogate_rows(low, wide, wide_row, path_slot, path_side, weight, hist):
    """Add every listed (row, node) into the node's surrogate histogram, over every
    feature (one feature a task, so no two tasks write the same cell).

    Parameters
    ----------
    path_slot, path_side : from :func:`surrogate_paths`                        # IN
    weight : ndarray (n_rows,) float64                                          # IN
    hist : ndarray (n_slots, n_features, max_bin, 4) float64                     # IN/OUT
    """
    n_rows, max_steps = path_slot.shape
    n_features = hist.shape[1]
    for f in prange(n_features):
        for i in range(n_rows):
            if path_slot[i, 0] < 0:
                continue
            code = read_code(low, wide, wide_row, f, i)
            w = weight[i]
            for d in range(max_steps):
                s = path_slot[i, d]
                if s < 0:
                    break
                side = np.int64(path_side[i, d])
                hist[s, f, code, side] += w
                hist[s, f, code, 2 + side] += 1.0


@njit(cache=True)
def _numeric_surrogate(h, n_value_bins):
    """rpart's scan of one numeric feature: ``(agree, bin, direction)``; bin -1 when no
    threshold beats sending every row to the larger side."""
    total_l = 0.0
    total_r = 0.0
    total_n = 0.0
    for b in range(n_value_bins):
        total_l += h[b, 0]
        total_r += h[b, 1]
        total_n += h[b, 2] + h[b, 3]
    agree = max(total_l, total_r)
    best_bin = -1
    direction = LEFT_LE
    below_l = 0.0
    below_r = 0.0
    below_n = 0.0
    for b in range(n_value_bins - 1):
        n_b = h[b, 2] + h[b, 3]
        below_l += h[b, 0]
        below_r += h[b, 1]
        below_n += n_b
        # a threshold after a bin that has rows, at least two rows on each side
        if n_b <= 0 or below_n < 2 or total_n - below_n < 2:
            continue
        right_le = below_r + (total_l - below_l)   # values <= b go right
        left_le = below_l + (total_r - below_r)    # values <= b go left
        if right_le > agree:
            agree, best_bin, direction = right_le, b, RIGHT_LE
        elif left_le > agree:
            agree, best_bin, direction = left_le, b, LEFT_LE
    return agree, best_bin, direction


@njit(cache=True)
def _categorical_surrogate(h, n_value_bins, bits):
    """Each category to the side most of its rows go (ties to the larger side):
    ``agree``; ``bits`` gets the left set in its first half of words, the right set in
    the second (categories without rows in neither)."""
    n_words = bits.shape[0] // 2
    bits[:] = 0
    total_l = 0.0
    total_r = 0.0
    for c in range(n_value_bins):
        total_l += h[c, 0]
        total_r += h[c, 1]
    right_default = not total_l > total_r
    agree = 0.0
    for c in range(n_value_bins):
        if h[c, 2] + h[c, 3] <= 0:
            continue
        if h[c, 0] < h[c, 1] or (h[c, 0] == h[c, 1] and right_default):
            agree += h[c, 1]
            bits[n_words + (c >> 5)] |= np.uint32(1) << np.uint32(c & 31)
        else:
            agree += h[c, 0]
            bits[c >> 5] |= np.uint32(1) << np.uint32(c & 31)
    return agree


@njit(cache=True)
def best_surrogates(hist, n_value_bins, is_categorical, primary, total_left, total_right,
                    agreement, adjusted, bin_out, direction_out, bits_out):
    """The best surrogate split on every feature of one node (rpart's rule).

    Agreement is the weight of rows (primary present) the surrogate sends the primary's
    way, over all the node's rows with the primary present; the adjusted agreement
    ``(agreement - majority) / (1 - majority)`` compares it with sending every row to
    the larger side. A feature is a surrogate only when that is positive.

    Parameters
    ----------
    hist : ndarray (n_features, max_bin, 4) float64, the node's surrogate histogram # IN
    n_value_bins : ndarray (n_features,), is_categorical : ndarray (n_features,)    # IN
    primary : int, the node's split feature (never its own surrogate)
    total_left, total_right : float, weight the primary sends left and right
    agreement, adjusted : ndarray (n_features,) float64                            # OUT
        -1 where the feature is no surrogate.
    bin_out : ndarray (n_features,) int32, numeric threshold bin                    # OUT
    direction_out : ndarray (n_features,) uint8, LEFT_LE or RIGHT_LE                # OUT
    bits_out : ndarray (n_features, 2 n_words) uint32, categorical sets            # OUT
    """
    total = total_left + total_right
    majority = max(total_left, total_right) / total if total > 0 else 1.0
    for f in range(hist.shape[0]):
        agreement[f] = -1.0
        adjusted[f] = -1.0
        bin_out[f] = -1
        direction_out[f] = LEFT_LE
        bits_out[f, :] = 0
        if f == primary or total <= 0 or majority >= 1.0:
            continue
        if is_categorical[f]:
            agree = _categorical_surrogate(hist[f], n_value_bins[f], bits_out[f])
        else:
            agree, b, direction = _numeric_surrogate(hist[f], n_value_bins[f])
            if b < 0:
                continue
            bin_out[f] = b
            direction_out[f] = direction
        share = agree / total
        adj = (share - majority) / (1.0 - majority)
        if adj > 0:
            agreement[f] = share
            adjusted[f] = adj
