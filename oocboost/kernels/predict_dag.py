"""Prediction through trees whose nodes may share children (a decision stream's
directed acyclic graph, ``learners/decision_stream``). Siblings cannot all sit side by
side when a node has several parents, so these walks read an explicit ``right`` array
(:class:`~.predict.FlatTrees` ``right``, node ids kept in each tree's order) instead of
``left + 1``; the decision rules are :mod:`.predict`'s. Leaves loop on themselves
(``left == right == node``)."""
import numpy as np
from numba import njit

from .codes import read_only
from .parallel import RANGE_KERNEL, run_ranges

#: Rows a task walks through every tree.
CHUNK_ROWS = 64


@njit(inline="always")
def _in_set(code, node, cat_offset, cat_n_bits, cat_bitset):
    if code < 0 or code >= cat_n_bits[node]:
        return False
    word = cat_bitset[cat_offset[node] + (code >> 5)]
    return (word >> np.uint32(code & 31)) & np.uint32(1) != 0


@njit(cache=True)
def _leaf_raw(X, row, lo, left, right, feature, threshold, default_left, is_categorical,
              cat_offset, cat_n_bits, cat_bitset):
    node = lo
    while left[node] != node:
        x = X[row, feature[node]]
        if x != x:
            go = default_left[node] != 0
        elif is_categorical[node]:
            go = x >= 0.0 and x < cat_n_bits[node] and _in_set(
                np.int64(x), node, cat_offset, cat_n_bits, cat_bitset)
        else:
            go = x <= threshold[node]
        node = left[node] if go else right[node]
    return node


@njit(cache=True)
def _leaf_binned(codes, missing_bin, row, lo, left, right, feature, bin_threshold,
                 default_left, is_categorical, cat_offset, cat_n_bits, cat_bitset):
    node = lo
    while left[node] != node:
        code = np.int64(codes[feature[node], row])
        if code == missing_bin:
            go = default_left[node] != 0
        elif is_categorical[node]:
            go = _in_set(code, node, cat_offset, cat_n_bits, cat_bitset)
        else:
            go = code <= bin_threshold[node]
        node = left[node] if go else right[node]
    return node


@njit(inline="always")
def add_leaf(out, row, t, leaf, node_offset, tree_group, tree_n_cols, value_offset, value):
    """``out[row] +=`` the values of flat leaf ``leaf`` of tree ``t`` (the walks of a
    row at a time here and in :mod:`.predict_surrogate`)."""
    local = leaf - node_offset[t]
    g = tree_group[t]
    if g >= 0:
        out[row, g] += value[value_offset[t] + local]
    else:
        base = value_offset[t] + local * tree_n_cols[t]
        for j in range(tree_n_cols[t]):
            out[row, j] += value[base + j]


@njit(**RANGE_KERNEL)
def _predict_dag_range(c_lo, c_hi, X, codes, binned, missing_bin, tree_start, tree_end,
                       node_offset, tree_group, tree_n_cols, value_offset, left, right,
                       feature, threshold, bin_threshold, default_left, is_categorical,
                       cat_offset, cat_n_bits, cat_bitset, value, leaves, out):
    """:func:`predict_dag` for the chunks ``c_lo .. c_hi - 1``."""
    n_rows = codes.shape[1] if binned else X.shape[0]
    for c in range(c_lo, c_hi):
        for row in range(c * CHUNK_ROWS, min(n_rows, (c + 1) * CHUNK_ROWS)):
            for t in range(tree_start, tree_end):
                if binned:
                    leaf = _leaf_binned(codes, missing_bin, row, node_offset[t], left,
                                        right, feature, bin_threshold, default_left,
                                        is_categorical, cat_offset, cat_n_bits, cat_bitset)
                else:
                    leaf = _leaf_raw(X, row, node_offset[t], left, right, feature,
                                     threshold, default_left, is_categorical, cat_offset,
                                     cat_n_bits, cat_bitset)
                if leaves.shape[1]:
                    leaves[row, t - tree_start] = leaf
                else:
                    add_leaf(out, row, t, leaf, node_offset, tree_group, tree_n_cols,
                             value_offset, value)


def predict_dag(X, codes, binned, missing_bin, tree_start, tree_end, node_offset, tree_group,
                tree_n_cols, value_offset, left, right, feature, threshold, bin_threshold,
                default_left, is_categorical, cat_offset, cat_n_bits, cat_bitset, value,
                leaves, out):
    """Margins of raw rows (``binned`` False) or bin codes, trees summed in order for
    each row; or, when ``leaves`` has columns, each tree's flat leaf (one kernel, one
    compilation)."""
    # read-only views: one compile for arrays made in memory and read from a cache
    run_ranges(_predict_dag_range,
               ((codes.shape[1] if binned else X.shape[0]) + CHUNK_ROWS - 1) // CHUNK_ROWS,
               read_only(X), read_only(codes), binned, missing_bin, tree_start, tree_end,
               node_offset, tree_group, tree_n_cols, value_offset, left, right, feature,
               threshold, bin_threshold, default_left, is_categorical, cat_offset, cat_n_bits,
               cat_bitset, value, leaves, out)


def _run(flat, X, codes, binned, missing_bin, tree_start, tree_end, leaves, out):
    predict_dag(X, codes, binned, missing_bin, tree_start, tree_end, flat.node_offset,
                flat.tree_group, flat.tree_n_cols, flat.value_offset, flat.left,
                flat.right, flat.feature, flat.threshold, flat.bin_threshold,
                flat.default_left, flat.is_categorical, flat.cat_offset, flat.cat_n_bits,
                flat.cat_bitset, flat.value, leaves, out)


_NO_X, _NO_CODES, _NO_LEAVES = np.zeros((0, 0)), np.zeros((0, 0), np.uint8), \
    np.zeros((0, 0), np.int64)


def front_ends(run):
    """``(raw_margins, binned_margins, raw_leaves)`` of :mod:`.predict`'s interface over
    a row-at-a-time kernel ``run(flat, X, codes, binned, missing_bin, tree_start,
    tree_end, leaves, out)`` (``leaves`` with columns: write flat leaves, not margins)."""
    def raw_margins(flat, X, tree_start, tree_end, out):
        run(flat, X, _NO_CODES, False, -1, tree_start, tree_end, _NO_LEAVES, out)

    def binned_margins(flat, codes, missing_bin, tree_start, tree_end, out):
        run(flat, _NO_X, codes, True, missing_bin, tree_start, tree_end, _NO_LEAVES, out)

    def raw_leaves(flat, X, tree_start, tree_end, out):
        leaves = np.empty((X.shape[0], tree_end - tree_start), np.int64)
        run(flat, X, _NO_CODES, False, -1, tree_start, tree_end, leaves, _NO_X)
        out[:] = flat.node_id[leaves]

    return raw_margins, binned_margins, raw_leaves


raw_margins, binned_margins, raw_leaves = front_ends(_run)
