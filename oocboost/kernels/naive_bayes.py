"""Naive Bayes scores of rows at the leaves of a tree: the leaf predictions of Hoeffding
trees (``leaf_prediction="nb"``), read from the class counts a leaf keeps per bin.

Layout::

    codes[feature, row]            uint8/uint16, or PlaneCodes (kernels/codes.py)
    node_of_row[row]               int32, the leaf each row reached
    table_of_node[node]            int32, the leaf's table, or -1 (no naive Bayes there)
    counts[row_of_table, cell, k]  float64, class weights per cell (a histogram slot's
                                   first K lanes: a leaf's histogram read in place)
    count_row[table]               int64, the table's row of ``counts``
    bin_start[feature]             int64, first cell of the feature
    cell_value[cell]               float64, the value a numeric bin stands for
    moments[table, f, k, :]        (weight present, sum w v, sum w v^2, weight missing)
    params[table, f, k, :]         numeric: (mean, 1 / (2 var), log P(present | k) +
                                   log of the density's normaliser, log P(missing | k));
                                   categorical: (0, 0, -log(n_k + codes), 0)
    log_prior[table, k]            float64

A table's cells are a leaf's histogram columns laid end to end (bin ``b`` of feature
``f`` is cell ``bin_start[f] + b``, ``bin_start = column_of * max_bin``), so a wide
categorical feature's codes run on through its columns as in the histograms.
"""
import math

from numba import njit, prange

from .codes import code_arrays, read_code


@njit(parallel=True, cache=True, nogil=True)
def class_moments(counts, count_row, bin_start, n_value_bins, missing_bin, is_categorical,
                  cell_value, out):
    """Per (table, feature, class): weight of rows with a value, their sums of values
    and squared values (bin values), and weight of missing rows; categorical features:
    the class's whole weight in slot 0.

    Parameters
    ----------
    counts : ndarray (n, n_cells, lanes >= K) float64     # IN
    count_row : ndarray (n_tables,) int64                 # IN
    bin_start, n_value_bins : ndarray (n_features,)       # IN
    missing_bin : int
    is_categorical : ndarray (n_features,) bool           # IN
    cell_value : ndarray (n_cells,) float64               # IN
    out : ndarray (n_tables, n_features, K, 4) float64     # OUT
    """
    n_classes = out.shape[2]
    for t in prange(out.shape[0]):
        r = count_row[t]
        for f in range(bin_start.shape[0]):
            s = bin_start[f]
            for k in range(n_classes):
                n = 0.0
                sv = 0.0
                svv = 0.0
                if is_categorical[f]:
                    for b in range(max(n_value_bins[f], missing_bin + 1)):
                        n += counts[r, s + b, k]
                    out[t, f, k, 0] = n
                    out[t, f, k, 1] = 0.0
                    out[t, f, k, 2] = 0.0
                    out[t, f, k, 3] = 0.0
                    continue
                for b in range(n_value_bins[f]):
                    c = counts[r, s + b, k]
                    v = cell_value[s + b]
                    n += c
                    sv += c * v
                    svv += c * v * v
                out[t, f, k, 0] = n
                out[t, f, k, 1] = sv
                out[t, f, k, 2] = svv
                out[t, f, k, 3] = counts[r, s + missing_bin, k]


def naive_bayes_scores(codes, node_of_row, table_of_node, counts, count_row, bin_start,
                       is_categorical, missing_bin, cell_value, params, log_prior, out):
    """Write ``log P(k) + sum_f log P(code_f | k)`` of each row whose leaf has a table
    into ``out``; other rows are left as they are.

    Parameters
    ----------
    codes : ndarray (n_features, n_rows) uint8/uint16, or PlaneCodes   # IN
    node_of_row : ndarray (n_rows,) int32                              # IN
    table_of_node : ndarray (n_nodes,) int32                           # IN
    counts, count_row, bin_start, cell_value, params, log_prior : module docstring  # IN
    is_categorical : ndarray (n_features,) bool                        # IN
    missing_bin : int
    out : ndarray (n_rows, n_classes) float64                          # OUT

    >>> import numpy as np
    >>> codes = np.array([[0, 1]], np.uint8)
    >>> counts = np.array([[[3.0, 1.0], [1.0, 3.0]]])
    >>> params = np.zeros((1, 1, 2, 4)); params[..., 2] = -np.log(4.0 + 2.0)
    >>> out = np.zeros((2, 2))
    >>> naive_bayes_scores(codes, np.zeros(2, np.int32), np.zeros(1, np.int32), counts,
    ...                    np.zeros(1, np.int64), np.zeros(1, np.int64), np.ones(1, bool),
    ...                    1, np.zeros(2), params, np.log([[0.5, 0.5]]), out)
    >>> np.exp(out).round(3).tolist()
    [[0.333, 0.167], [0.167, 0.333]]
    """
    low, wide, wide_row = code_arrays(codes)
    _naive_bayes_scores(low, wide, wide_row, node_of_row, table_of_node, counts, count_row,
                        bin_start, is_categorical, missing_bin, cell_value, params,
                        log_prior, out)


@njit(parallel=True, cache=True, nogil=True)
def _naive_bayes_scores(low, wide, wide_row, node_of_row, table_of_node, counts, count_row,
                        bin_start, is_categorical, missing_bin, cell_value, params,
                        log_prior, out):
    n_rows = node_of_row.shape[0]
    n_features = bin_start.shape[0]
    n_classes = out.shape[1]
    for i in prange(n_rows):
        t = table_of_node[node_of_row[i]]
        if t < 0:
            continue
        r = count_row[t]
        for k in range(n_classes):
            out[i, k] = log_prior[t, k]
        for f in range(n_features):
            code = read_code(low, wide, wide_row, f, i)
            cell = bin_start[f] + code
            for k in range(n_classes):
                p = params[t, f, k]
                if is_categorical[f]:
                    out[i, k] += math.log(counts[r, cell, k] + 1.0) + p[2]
                elif code == missing_bin:
                    out[i, k] += p[3]
                else:
                    d = cell_value[cell] - p[0]
                    out[i, k] += p[2] - d * d * p[1]


@njit(cache=True, nogil=True, error_model="numpy")
def nb_parameters(moments, prior, is_categorical, min_var, n_codes, params, log_prior):
    """``params`` and ``log_prior`` (module docstring) from class ``moments`` and each
    table's class weights ``prior``: the Gaussian of a numeric feature per class from
    its sample variance (river's, ddof 1; a class of under two rows, or of one value,
    has none and leaves the feature out), floored at ``min_var``; log P(present | k)
    only where the table has seen missing values of the feature; a table of no weight
    has every class equally likely. Serial: one call per batch of a stream, a few
    tables, where a parallel launch costs more than the work.

    Parameters
    ----------
    moments : ndarray (n_tables, n_features, K, 4) float64      # IN
    prior : ndarray (n_tables, K) float64                       # IN
    is_categorical : ndarray (n_features,) bool                 # IN
    min_var, n_codes : ndarray (n_features,) float64            # IN
    params : ndarray (n_tables, n_features, K, 4) float64       # OUT
    log_prior : ndarray (n_tables, K) float64                   # OUT
    """
    n_tables, n_features, n_classes = moments.shape[0], moments.shape[1], moments.shape[2]
    for t in range(n_tables):
        for f in range(n_features):
            cat = is_categorical[f]
            has_missing = False
            for k in range(n_classes):
                if moments[t, f, k, 3] > 0.0:
                    has_missing = True
            for k in range(n_classes):
                n = moments[t, f, k, 0]
                miss = moments[t, f, k, 3]
                safe = n if n > 0.0 else 1.0
                mean = moments[t, f, k, 1] / safe
                unbiased = (moments[t, f, k, 2] / safe - mean * mean) * n / (
                    n - 1.0 if n > 1.0 else 1.0)
                gauss = n > 1.0 and unbiased > 0.0 and not cat
                var = max(unbiased, min_var[f])
                log_total = math.log(n + miss + 2.0)
                present = math.log(n + 1.0) - log_total if has_missing else 0.0
                params[t, f, k, 0] = mean if gauss else 0.0
                params[t, f, k, 1] = 0.5 / var if gauss else 0.0
                if cat:
                    params[t, f, k, 2] = -math.log(n + n_codes[f])
                    params[t, f, k, 3] = 0.0
                else:
                    params[t, f, k, 2] = present - (
                        0.5 * math.log(2.0 * math.pi * var) if gauss else 0.0)
                    params[t, f, k, 3] = math.log(miss + 1.0) - log_total
        total = 0.0
        for k in range(n_classes):
            total += prior[t, k]
        for k in range(n_classes):
            if total > 0.0:
                share = prior[t, k] / total
                log_prior[t, k] = math.log(share) if share > 0.0 else -math.inf
            else:
                log_prior[t, k] = math.log(1.0 / n_classes)
