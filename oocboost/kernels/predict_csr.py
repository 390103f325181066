"""Prediction over the rows of a CSR matrix, never made dense.

A row of a scipy.sparse CSR matrix keeps its stored entries (column index ascending,
values); every other entry is 0.0. A tree's node reads its feature's value by a binary
search in the row's indices (``log2`` of the row's entries, a few steps for the rows of
hashed or one-hot data), and decides as the raw walk of :mod:`.predict_walks` does: a NaN
stored in the row takes the node's default direction, a categorical split truncates the
value to its code. Rows go in chunks of ``CHUNK_ROWS``, one tree at a time, and each
row's leaves are added in tree order: the margins are the dense matrix's, bit for bit
(``tests/model/test_predict_csr.py``). A matrix of a million columns then costs its
entries, where densifying even 256 rows took 2 GB.

Layout of the matrix (``scipy.sparse.csr_matrix`` in canonical form: no duplicate
entries, indices sorted within a row)::

    indptr[row]    int64 (n_rows + 1,)   row ``row``'s entries: indptr[row] .. indptr[row+1]
    indices[e]     int32/int64 (nnz,)    column of entry ``e``
    data[e]        float64 (nnz,)        its value
"""
import numpy as np
from numba import njit

from .parallel import RANGE_KERNEL, run_ranges
from .predict_walks import _U32, CHUNK_ROWS, _add_leaf_values, _in_bitset


@njit(cache=True, inline="always")
def _csr_value(indices, data, a, b, feature):
    """The value of column ``feature`` in the row whose entries are ``a .. b``: its stored
    value, or 0.0 when it has none (binary search: indices ascend)."""
    lo, hi = a, b
    while lo < hi:
        mid = (lo + hi) >> 1
        if indices[mid] < feature:
            lo = mid + 1
        else:
            hi = mid
    if lo < b and indices[lo] == feature:
        return data[lo]
    return 0.0


@njit(**RANGE_KERNEL)
def _predict_csr_range(c_lo, c_hi, indptr, indices, data, tree_start, tree_end,
                       node_offset, tree_depth, tree_group, tree_n_cols, value_offset,
                       left, feature, threshold, default_left, is_categorical, cat_offset,
                       cat_n_bits, cat_bitset, value, out):
    n_rows = indptr.shape[0] - 1
    nodes = np.empty(CHUNK_ROWS, dtype=np.uint32)
    for c in range(c_lo, c_hi):
        s = c * CHUNK_ROWS
        m = min(n_rows, s + CHUNK_ROWS) - s
        for t in range(tree_start, tree_end):
            lo = node_offset[t]
            depth = tree_depth[t]
            for r in range(m):
                a, b = indptr[s + r], indptr[s + r + 1]
                node = _U32(lo)
                for _level in range(depth):
                    x = _csr_value(indices, data, a, b, feature[node])
                    if x != x:
                        go = default_left[node] != 0
                    elif is_categorical[node]:
                        if x >= 0.0 and x < cat_n_bits[node]:
                            go = _in_bitset(np.int64(x), node, cat_offset, cat_n_bits,
                                            cat_bitset)
                        else:
                            go = False
                    else:
                        go = x <= threshold[node]
                    node = _U32(left[node]) + _U32(1) - _U32(go)
                nodes[r] = node
            _add_leaf_values(out, s, m, nodes, t, lo, tree_group, tree_n_cols, value_offset,
                             value)


def predict_csr(flat, indptr, indices, data, tree_start, tree_end, out):
    """Add the trees ``tree_start .. tree_end`` of ``flat`` (plain trees:
    ``predict.is_plain``) to the margins ``out`` of a CSR matrix's rows.

    Parameters
    ----------
    flat : predict.FlatTrees
    indptr : ndarray (n_rows + 1,) int64                                  # IN
    indices : ndarray (nnz,) int32 or int64, ascending within each row    # IN
    data : ndarray (nnz,) float64                                         # IN
    out : ndarray (n_rows, n_outputs) float64                             # IN/OUT, accumulated
    """
    n_chunks = (indptr.shape[0] - 1 + CHUNK_ROWS - 1) // CHUNK_ROWS
    run_ranges(_predict_csr_range, n_chunks, indptr, indices, data, tree_start, tree_end,
               flat.node_offset, flat.tree_depth, flat.tree_group, flat.tree_n_cols,
               flat.value_offset, flat.left, flat.feature, flat.threshold,
               flat.default_left, flat.is_categorical, flat.cat_offset, flat.cat_n_bits,
               flat.cat_bitset, flat.value, out)
