"""Naive Bayes scores of rows at the leaves of a tree: the leaf predictions of Hoeffding
trees (``leaf_prediction="nb"``), read from the class counts a leaf keeps per bin.

Layout::

    codes[feature, row]            uint8/uint16, or PlaneCodes (kernels/codes.py)
    node_of_row[row]               int32, the leaf each row reached
    table_of_node[node]            int32, the leaf's table, or -1 (no naive Bayes there)
    bin_start[feature]             int64, first cell of the feature in a table
    log_likelihood[table, cell, k] float64, log P(bin | class k) of cell bin_start[f] + code
    log_prior[table, k]            float64, log P(class k)

A table's cells are a leaf's histogram columns laid end to end (bin ``b`` of feature
``f`` is cell ``bin_start[f] + b``, ``bin_start = column_of * max_bin``), so a wide
categorical feature's codes run on through its columns as in the histograms.
"""
from numba import njit, prange

from .codes import code_arrays, read_code


def naive_bayes_scores(codes, node_of_row, table_of_node, bin_start, log_likelihood,
                       log_prior, out):
    """Add ``log P(k) + sum_f log P(code_f | k)`` of each row's leaf table into ``out``;
    rows whose leaf has no table (``table_of_node`` -1) are left as they are.

    Parameters
    ----------
    codes : ndarray (n_features, n_rows) uint8/uint16, or PlaneCodes   # IN
    node_of_row : ndarray (n_rows,) int32                              # IN
    table_of_node : ndarray (n_nodes,) int32                           # IN
    bin_start : ndarray (n_features,) int64                            # IN
    log_likelihood : ndarray (n_tables, n_cells, n_classes) float64     # IN
    log_prior : ndarray (n_tables, n_classes) float64                   # IN
    out : ndarray (n_rows, n_classes) float64                           # OUT (rows with a
        table are overwritten)

    >>> codes = np.array([[0, 1]], np.uint8)
    >>> ll = np.log(np.array([[[0.75, 0.25], [0.25, 0.75]]]))
    >>> out = np.zeros((2, 2))
    >>> naive_bayes_scores(codes, np.zeros(2, np.int32), np.zeros(1, np.int32),
    ...                    np.zeros(1, np.int64), ll, np.log([[0.5, 0.5]]), out)
    >>> np.exp(out).round(3).tolist()
    [[0.375, 0.125], [0.125, 0.375]]
    """
    low, wide, wide_row = code_arrays(codes)
    _naive_bayes_scores(low, wide, wide_row, node_of_row, table_of_node, bin_start,
                        log_likelihood, log_prior, out)


@njit(parallel=True, cache=True, nogil=True)
def _naive_bayes_scores(low, wide, wide_row, node_of_row, table_of_node, bin_start,
                        log_likelihood, log_prior, out):
    n_rows = node_of_row.shape[0]
    n_features = bin_start.shape[0]
    n_classes = out.shape[1]
    for i in prange(n_rows):
        t = table_of_node[node_of_row[i]]
        if t < 0:
            continue
        for k in range(n_classes):
            out[i, k] = log_prior[t, k]
        for f in range(n_features):
            cell = bin_start[f] + read_code(low, wide, wide_row, f, i)
            for k in range(n_classes):
                out[i, k] += log_likelihood[t, cell, k]
