"""Partition kernels: move each row of a block to the child its node's split sends it to.

The grower keeps, for every tree grown in the pass, node arrays of a fixed capacity::

    left[tree, node], right[tree, node]    int32, -1 while the node is a leaf
    feature[tree, node], bin_threshold     int32
    default_left, is_categorical           uint8
    cat_bitset[tree, node, word]           uint32 (category code in set -> left)
    slot_of_node[tree, node]               int32, histogram slot or -1

A row sits at a leaf of the growing tree (``node_of_row``). When its leaf was split since
the last pass, the row moves one level down; rows at leaves that were not split stay.
Because a node's children are created together with its split, "move if the node has
children" applies each split exactly once per row.
"""
import numpy as np
from numba import njit, prange


@njit(parallel=True, cache=True, nogil=True)
def partition_rows(codes, node_of_row, left, right, feature, bin_threshold, default_left,
                   is_categorical, cat_bitset, missing_bin, slot_of_node, slot_of_row):
    """Apply pending splits to one block and look up each row's histogram slot.

    Parameters
    ----------
    codes : ndarray (n_features, n_rows) uint8/uint16           # IN
    node_of_row : ndarray (n_trees, n_rows) int32               # IN/OUT
    left, right, feature, bin_threshold : ndarray (n_trees, capacity) int32   # IN
    default_left, is_categorical : ndarray (n_trees, capacity) uint8          # IN
    cat_bitset : ndarray (n_trees, capacity, n_words) uint32    # IN
    missing_bin : int                                           # IN
    slot_of_node : ndarray (n_trees, capacity) int32            # IN
    slot_of_row : ndarray (n_trees, n_rows) int32               # OUT
    """
    n_trees, n_rows = node_of_row.shape
    n_words = cat_bitset.shape[2]
    for i in prange(n_rows):
        for t in range(n_trees):
            node = node_of_row[t, i]
            if left[t, node] >= 0:
                code = codes[feature[t, node], i]
                if code == missing_bin:
                    go_left = default_left[t, node] != 0
                elif is_categorical[t, node]:
                    # Only categorical splits touch the bitset: a per-row view of it cost
                    # as much as the rest of the loop.
                    word = code >> 5
                    go_left = word < n_words and (cat_bitset[t, node, word] >> (code & 31)) & 1 == 1
                else:
                    go_left = code <= bin_threshold[t, node]
                node = left[t, node] if go_left else right[t, node]
                node_of_row[t, i] = node
            slot_of_row[t, i] = slot_of_node[t, node]


@njit(parallel=True, cache=True, nogil=True)
def add_node_values(node_of_row, node_value, scale, out):
    """``out[i] += scale * node_value[node_of_row[i]]`` (apply a finished tree to margins).

    Parameters
    ----------
    node_of_row : ndarray (n_rows,) int32       # IN, leaf of each row
    node_value : ndarray (n_nodes,) float64     # IN
    scale : float                               # IN, learning rate or tree weight
    out : ndarray (n_rows,) float64             # IN/OUT, e.g. a margin column
    """
    for i in prange(node_of_row.shape[0]):
        out[i] += scale * node_value[node_of_row[i]]
