"""A few rows walked one at a time, in the calling thread: the prediction of online
serving (``model/serving.py``), one row a call.

The chunk kernels (:mod:`.predict_perfect`) walk a chunk of rows in lockstep, each
row's node in an array, and take 31 arguments; for one row and 100 trees of depth 6
that was 15.6 us a call (4.6 us of it numba's dispatch of the arguments). Here a row's
node stays in a register down each tree, the trees' arrays are the flat layout's alone
(no perfect-tree copies: 19 arguments), and the margins are added tree by tree in tree
order as there, so a row's sum is the chunk kernels' bit for bit. The rules are those
of :mod:`.predict` (its module docstring).
"""
import numpy as np
from numba import njit

from .predict_walks import _in_bitset


@njit(cache=True, nogil=True, error_model="numpy")
def predict_rows(X, tree_start, tree_end, node_offset, tree_depth, tree_group, tree_n_cols,
                 value_offset, tree_has_cat, left, feature, threshold, default_left,
                 is_categorical, cat_offset, cat_n_bits, cat_bitset, value, out):
    """Add the leaf values of trees ``tree_start .. tree_end - 1`` to ``out``, row by row.

    Parameters
    ----------
    X : ndarray (n_rows, n_features) float64 or float32, C-contiguous   # IN
        Raw values, categorical features as float codes, NaN = missing.
    tree_start, tree_end : int
    node_offset .. value : FlatTrees arrays                          # IN
    out : ndarray (n_rows, n_outputs) float64                        # IN/OUT, accumulated
    """
    for r in range(X.shape[0]):
        for t in range(tree_start, tree_end):
            node = node_offset[t]
            if tree_has_cat[t] == 0:
                for _level in range(tree_depth[t]):
                    x = X[r, feature[node]]
                    go = (x <= threshold[node]) | ((default_left[node] != 0) & (x != x))
                    node = left[node] + 1 - np.int64(go)
            else:
                for _level in range(tree_depth[t]):
                    x = X[r, feature[node]]
                    if is_categorical[node]:
                        if x != x:
                            go = default_left[node] != 0
                        elif x >= 0.0 and x < cat_n_bits[node]:
                            go = _in_bitset(np.int64(x), node, cat_offset, cat_n_bits,
                                            cat_bitset)
                        else:
                            go = False
                    else:
                        go = (x <= threshold[node]) | ((default_left[node] != 0) & (x != x))
                    node = left[node] + 1 - np.int64(go)
            g = tree_group[t]
            leaf = node - node_offset[t]
            if g >= 0:
                out[r, g] += value[value_offset[t] + leaf]
            else:
                n_cols = tree_n_cols[t]
                base = value_offset[t] + leaf * n_cols
                for k in range(n_cols):
                    out[r, k] += value[base + k]
