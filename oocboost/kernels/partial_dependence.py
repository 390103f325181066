"""Margins of every row at every point of a partial-dependence grid, in one walk of each
tree per row.

Partial dependence by brute force predicts each row once per grid point with the grid
features overwritten (scikit-learn's ``method="brute"``): ``rows x points x trees x
depth`` steps. Yet a tree only looks at a grid feature at its splits on that feature, and
a split ``x <= t`` sends the points of a sorted grid with values up to ``t`` left and the
rest right: a prefix and a suffix of the grid's indices. So one walk per row and tree
suffices, following the row's own values at the other splits and both children where the
grid's interval (a rectangle of indices for two features) is cut in two; each leaf reached
owns a rectangle of points, and the leaves reached tile the grid::

    grid a (sorted)  0 1 2 3 4 5     split on a at t: cut[node] = points <= t = 4
    interval [1, 6)  -> left [1, 4), right [4, 6)

A leaf adds its value to the points of its rectangle: per row and tree, the nodes walked
plus one addition per point (contiguous, vectorised), instead of ``points x depth``
dependent steps. Each point receives the trees' leaf values in tree order, as the
prediction walks add them, so the margins equal the brute force's bit for bit (a
difference array would add fewer values but round differently: a forest's probability
of 0 came out as -2e-16). The naive twin, the brute force over a NumPy walk, is in
``tests/kernels/test_partial_dependence.py``.

The trees are :class:`.predict.FlatTrees` without oblique splits, surrogates or shared
nodes (``predict.is_plain``); a grid feature's splits are numeric. The rows are raw
values or bin codes, with the rules of :mod:`.predict`.
"""
import numpy as np
from numba import njit

from .codes import read_only
from .parallel import RANGE_KERNEL, run_ranges
from .predict_walks import _in_bitset


@njit(cache=True, inline="always")
def _row_goes_left(X, codes, binned, missing_bin, r, node, f, threshold, bin_threshold,
                   default_left, is_categorical, cat_offset, cat_n_bits, cat_bitset):
    """The decision rules of ``kernels/predict.py`` for row ``r`` at ``node``."""
    if binned:
        code = np.int64(codes[f, r])
        missing = code == missing_bin
        if is_categorical[node] and not missing:
            return _in_bitset(code, node, cat_offset, cat_n_bits, cat_bitset)
        # branch-free, as the prediction walks
        return ((code <= bin_threshold[node]) & (not missing)) | (
            (default_left[node] != 0) & missing)
    x = X[r, f]
    if is_categorical[node] and x == x:
        if x >= 0.0 and x < cat_n_bits[node]:
            return _in_bitset(np.int64(x), node, cat_offset, cat_n_bits, cat_bitset)
        return False
    return (x <= threshold[node]) | ((default_left[node] != 0) & (x != x))


@njit(cache=True, inline="always")
def _fill_rectangle(tree_values, a0, a1, b0, b1, n_b, base, n_cols, value):
    """A leaf's value(s) at the points ``[a0, a1) x [b0, b1)`` (flat index a * n_b + b)."""
    for c in range(n_cols):
        v = value[base + c]
        for a in range(a0, a1):
            for b in range(a * n_b + b0, a * n_b + b1):
                tree_values[c, b] = v


#: Rows that go through one tree before the next: the tree's nodes stay in the L1 cache
#: (a row walking all the trees in turn, 300 depth-6 trees of 1.1 MB, spent 280 ns a tree
#: waiting on them, as the prediction walks found; ``predict_walks.CHUNK_ROWS``).
CHUNK_ROWS = 32


@njit(cache=True, inline="always")
def _walk_grid(X, codes, binned, missing_bin, r, t, lo, n_a, n_b, fa, fb, cut, stack,
               tree_values, tree_n_cols, value_offset, left, feature, threshold,
               bin_threshold, default_left, is_categorical, cat_offset, cat_n_bits,
               cat_bitset, value):
    """Tree ``t``'s leaf value(s) for row ``r`` at every grid point, into
    ``tree_values``: the row's own way at other splits, both ways where a split on a grid
    feature cuts the points' rectangle (the right part waits on the stack)."""
    n_cols = tree_n_cols[t]
    stack[0, 0] = lo
    stack[0, 1] = 0
    stack[0, 2] = n_a
    stack[0, 3] = 0
    stack[0, 4] = n_b
    top = 1
    while top > 0:
        top -= 1
        node = stack[top, 0]
        a0, a1 = stack[top, 1], stack[top, 2]
        b0, b1 = stack[top, 3], stack[top, 4]
        while True:
            child = np.int64(left[node])
            if child == node:
                _fill_rectangle(tree_values, a0, a1, b0, b1, n_b,
                                value_offset[t] + (np.int64(node) - lo) * n_cols, n_cols,
                                value)
                break
            f = feature[node]
            if f == fa or f == fb:
                # the points going left: a prefix of the grid's indices
                along_a = f == fa
                start, end = (a0, a1) if along_a else (b0, b1)
                split = min(max(cut[0 if along_a else 1, node], start), end)
                if split == start:
                    node = child + 1
                    continue
                if split < end:
                    stack[top, 0] = child + 1
                    stack[top, 1] = split if along_a else a0
                    stack[top, 2] = a1
                    stack[top, 3] = b0 if along_a else split
                    stack[top, 4] = b1
                    top += 1
                    if along_a:
                        a1 = split
                    else:
                        b1 = split
                node = child
                continue
            go = _row_goes_left(X, codes, binned, missing_bin, r, node, f, threshold,
                                bin_threshold, default_left, is_categorical, cat_offset,
                                cat_n_bits, cat_bitset)
            node = child + 1 - np.int64(go)


@njit(**RANGE_KERNEL)
def _grid_margins_range(r_lo, r_hi, X, codes, binned, missing_bin, tree_start, tree_end,
                        max_depth, node_offset, tree_group, tree_n_cols, value_offset, left,
                        feature, threshold, bin_threshold, default_left, is_categorical,
                        cat_offset, cat_n_bits, cat_bitset, value, grid_feature, cut, n_b,
                        out):
    """:func:`grid_margins` for the rows ``r_lo .. r_hi - 1``."""
    n_points = out.shape[2]
    n_a = n_points // n_b
    fa, fb = grid_feature[0], grid_feature[1]
    stack = np.empty((max_depth + 2, 5), np.int64)
    # one tree's leaf value at every point: filled leaf by leaf, then added to the row's
    # margins in one contiguous loop (each point gets the trees' values in tree order)
    tree_values = np.empty((out.shape[1], n_points))
    for r0 in range(r_lo, r_hi, CHUNK_ROWS):
        r1 = min(r0 + CHUNK_ROWS, r_hi)
        for t in range(tree_start, tree_end):
            lo = node_offset[t]
            g = tree_group[t]
            n_cols = tree_n_cols[t]
            for r in range(r0, r1):
                _walk_grid(X, codes, binned, missing_bin, r, t, lo, n_a, n_b, fa, fb, cut,
                           stack, tree_values, tree_n_cols, value_offset, left, feature,
                           threshold, bin_threshold, default_left, is_categorical,
                           cat_offset, cat_n_bits, cat_bitset, value)
                for c in range(n_cols):
                    k = g if g >= 0 else c
                    for p in range(n_points):
                        out[r, k, p] += tree_values[c, p]


def grid_margins(flat, X, codes, missing_bin, tree_start, tree_end, grid_feature, cut, n_b,
                 out):
    """Add the trees' margins of every row at every grid point into ``out``.

    Parameters
    ----------
    flat : FlatTrees                       # plain trees (``predict.is_plain``)
    X : float64 (n_rows, n_features)       # IN  raw rows, or None for codes (read-only
                                           #     views compile once, ``codes.read_only``)
    codes : uint8/uint16 (n_features, n_rows)  # IN  bin codes, or None for raw rows
    missing_bin : int                      # the missing code (binned rows)
    tree_start, tree_end : int             # flat tree range
    grid_feature : int64 (2,)              # the grid's features; the second -1 for one
    cut : int64 (2, n_nodes)               # per flat node, how many of the grid's sorted
                                           # points go left at a split on that feature
    n_b : int                              # points along the second feature (1 for one)
    out : float64 (n_rows, n_outputs, n_a * n_b)  # IN/OUT the margins so far (the base
                                                  # margin first, as the walks start),
                                                  # the trees' added; n_b 1 for one
                                                  # feature
    """
    binned = X is None
    # the unused input as a read-only placeholder, as the callers pass the used one, so
    # that raw rows and uint8 codes share one compile
    if binned:
        X = read_only(np.zeros((1, 1)))
        n_rows = codes.shape[1]
    else:
        codes = read_only(np.zeros((1, 1), np.uint8))
        n_rows = X.shape[0]
    max_depth = int(flat.tree_depth[tree_start:tree_end].max(initial=0))
    run_ranges(_grid_margins_range, n_rows, X, codes, binned,
               -1 if missing_bin is None else int(missing_bin),
               int(tree_start), int(tree_end), max_depth, flat.node_offset, flat.tree_group,
               flat.tree_n_cols, flat.value_offset, flat.left, flat.feature, flat.threshold,
               flat.bin_threshold, flat.default_left, flat.is_categorical, flat.cat_offset,
               flat.cat_n_bits, flat.cat_bitset, flat.value, grid_feature, cut, int(n_b), out)
