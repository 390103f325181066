"""Path-dependent Tree SHAP by leaf weight tables (the idea of Fast TreeSHAP v2, Yang
2021, "Fast TreeSHAP: Accelerating SHAP Value Computation for Trees").

Tree SHAP (``kernels/shap.py``) gives a leaf's share of its value to each unique feature
on the leaf's path from weights that depend on the path's zero fractions (cover shares:
fixed by the tree) and one fractions (1 where the row agrees with every split of that
feature on the path, else 0: the row's only influence). A leaf with ``s`` unique
features has ``2**s`` agreement patterns, so its weights can be computed once per tree
for every pattern, with the same extend / unwound-sum arithmetic, and a row then costs
one pattern lookup and ``s`` additions per leaf instead of ``O(s**2)`` divisions::

    table[offset[leaf] + pattern * s + i, c] = unwound_sum_i * (one_i - zero_i) * value_c

A row's patterns are made top down: each split clears, in the pattern it hands the child
the row does not take, the bit of its feature's slot (a feature's slot is the same on every
path through the node). Rows go through a tree in chunks of :data:`CHUNK_ROWS`, split by
split, so each split's rule is read once a chunk and its loop over rows has no branch for
numeric splits.

The tables hold ``sum over leaves of 2**s * s`` float64 values, which the caller bounds
(``model/contributions.py``); deeper trees keep the row-by-row recursion. Slots are the
path's unique features in order of first appearance from the root: Shapley weights do not
depend on the order. The naive twin (the Shapley formula over the subsets of one leaf's
path) is in ``tests/kernels/test_shap_table.py``.
"""
import numpy as np
from numba import njit

from .parallel import RANGE_KERNEL, run_ranges
from .shap import _extend, _goes_left, _unwound_sum

#: Rows a tree's splits are applied to at a time (their patterns: CHUNK_ROWS x n_nodes
#: int64, 64 KiB for a depth-6 tree).
CHUNK_ROWS = 64


@njit(cache=True)
def leaf_paths(left, right, feature, cover, max_depth):
    """Each leaf's unique path features (slots) and their zero fractions, and each split's
    slot.

    Parameters
    ----------
    left, right, feature : int32 (n_nodes,)   # IN  the tree (-1 at leaves), children ids
                                              #     above their parent's
    cover : float64 (n_nodes,)                # IN  training cover
    max_depth : int                           # the tree's depth (>= 1)

    Returns
    -------
    leaf_node : int64 (n_leaves,)             # the leaves in node order
    node_slot : int64 (n_nodes,)              # slot of each split's feature (0 at leaves)
    slot_feature : int64 (n_leaves, max_depth)
    slot_zero : float64 (n_leaves, max_depth) # product of the cover shares of the
                                              # feature's splits on the path (unused 1)
    n_slots : int64 (n_leaves,)
    """
    n_nodes = left.shape[0]
    parent = np.full(n_nodes, -1, np.int64)
    n_leaves = 0
    for node in range(n_nodes):
        if left[node] >= 0:
            parent[left[node]] = node
            parent[right[node]] = node
        else:
            n_leaves += 1
    leaf_node = np.empty(n_leaves, np.int64)
    node_slot = np.zeros(n_nodes, np.int64)
    slot_feature = np.full((n_leaves, max_depth), -1, np.int64)
    slot_zero = np.ones((n_leaves, max_depth))
    n_slots = np.zeros(n_leaves, np.int64)
    reversed_path = np.empty(max_depth + 1, np.int64)
    leaf = 0
    for node in range(n_nodes):
        if left[node] >= 0:
            continue
        leaf_node[leaf] = node
        length = 0
        child = node
        while parent[child] >= 0:
            reversed_path[length] = child
            length += 1
            child = parent[child]
        for k in range(length - 1, -1, -1):
            child = reversed_path[k]
            split = parent[child]
            w = cover[split]
            share = cover[child] / w if w > 0.0 else 0.5
            slot = -1
            for j in range(n_slots[leaf]):
                if slot_feature[leaf, j] == feature[split]:
                    slot = j
                    break
            if slot < 0:
                slot = n_slots[leaf]
                n_slots[leaf] += 1
                slot_feature[leaf, slot] = feature[split]
            slot_zero[leaf, slot] *= share
            node_slot[split] = slot
        leaf += 1
    return leaf_node, node_slot, slot_feature, slot_zero, n_slots


@njit(cache=True)
def leaf_weight_tables(slot_zero, n_slots, offsets, leaf_value, table):
    """Every leaf's share of its value to each slot, for each agreement pattern.

    Parameters
    ----------
    slot_zero : float64 (n_leaves, max_depth)   # IN  from :func:`leaf_paths`
    n_slots : int64 (n_leaves,)                 # IN
    offsets : int64 (n_leaves + 1,)             # IN  first row of each leaf's table:
                                                #     cumulative 2**s * s
    leaf_value : float64 (n_leaves, n_cols)     # IN  the leaves' values (scaled)
    table : float64 (offsets[-1], n_cols)       # OUT ``[offset + pattern * s + i, c]``:
                                                #     the share of column c going to slot
                                                #     i when the row agrees with the slots
                                                #     whose bits are set in pattern
    """
    width = slot_zero.shape[1] + 1
    fi = np.empty((1, width), np.int64)
    zf = np.empty((1, width))
    of = np.empty((1, width))
    pw = np.empty((1, width))
    for leaf in range(n_slots.shape[0]):
        s = n_slots[leaf]
        for pattern in range(1 << s):
            # the root's entry first, as the recursion extends it
            _extend(fi, zf, of, pw, 0, 0, 1.0, 1.0, -1)
            for j in range(s):
                one = 1.0 if (pattern >> j) & 1 else 0.0
                _extend(fi, zf, of, pw, 0, j + 1, slot_zero[leaf, j], one, j)
            base = offsets[leaf] + pattern * s
            for i in range(s):
                w = _unwound_sum(zf, of, pw, 0, s, i + 1) * (of[0, i + 1] - zf[0, i + 1])
                for c in range(leaf_value.shape[1]):
                    table[base + i, c] = w * leaf_value[leaf, c]


@njit(cache=True, inline="always")
def _chunk_patterns(X, r0, n, left, right, feature, threshold, default_left, is_categorical,
                    cat_bitset, node_slot, pattern):
    """``pattern[node, j]`` of the rows ``r0 .. r0 + n - 1``: the slots whose splits on
    the way to ``node`` the row agrees with (all bits set at the root)."""
    for j in range(n):
        pattern[0, j] = -1
    for node in range(left.shape[0]):
        lo = left[node]
        if lo < 0:
            continue
        hi = right[node]
        f = feature[node]
        bit = np.int64(1) << node_slot[node]
        if is_categorical[node]:
            for j in range(n):
                g = np.int64(_goes_left(X[r0 + j], node, feature, threshold, default_left,
                                        is_categorical, cat_bitset))
                p = pattern[node, j]
                pattern[lo, j] = p & ~((1 - g) * bit)
                pattern[hi, j] = p & ~(g * bit)
        else:
            t = threshold[node]
            missing_left = default_left[node]
            for j in range(n):
                v = X[r0 + j, f]
                g = np.int64((v <= t) | ((v != v) & missing_left))
                p = pattern[node, j]
                pattern[lo, j] = p & ~((1 - g) * bit)
                pattern[hi, j] = p & ~(g * bit)


@njit(**RANGE_KERNEL)
def _table_shap_range(r_lo, r_hi, X, left, right, feature, threshold, default_left,
                      is_categorical, cat_bitset, node_slot, leaf_node, slot_feature, n_slots,
                      offsets, table, out_cols, out):
    """:func:`table_shap` for the rows ``r_lo .. r_hi - 1``."""
    n_cols = out_cols.shape[0]
    pattern = np.empty((left.shape[0], CHUNK_ROWS), np.int64)
    for r0 in range(r_lo, r_hi, CHUNK_ROWS):
        n = min(CHUNK_ROWS, r_hi - r0)
        _chunk_patterns(X, r0, n, left, right, feature, threshold, default_left,
                        is_categorical, cat_bitset, node_slot, pattern)
        for leaf in range(n_slots.shape[0]):
            s = n_slots[leaf]
            full = (np.int64(1) << s) - 1
            node = leaf_node[leaf]
            first = offsets[leaf]
            for j in range(n):
                base = first + (pattern[node, j] & full) * s
                for i in range(s):
                    f = slot_feature[leaf, i]
                    for c in range(n_cols):
                        out[r0 + j, out_cols[c], f] += table[base + i, c]


def table_shap(X, left, right, feature, threshold, default_left, is_categorical, cat_bitset,
               node_slot, leaf_node, slot_feature, n_slots, offsets, table, out_cols, out):
    """Add one tree's path-dependent SHAP values of every row into ``out``, from the
    tree's leaf weight tables.

    Parameters
    ----------
    X : float64 (n_rows, n_features)             # IN  raw values, NaN missing
    left, right, feature : int32 (n_nodes,)       # IN  the tree (-1 at leaves)
    threshold : float64 (n_nodes,)                # IN  numeric rule ``x <= threshold``
    default_left, is_categorical : bool (n_nodes,)
    cat_bitset : uint32 (n_nodes, n_words)
    node_slot, leaf_node, slot_feature, n_slots   # IN  :func:`leaf_paths`
    offsets, table                                # IN  :func:`leaf_weight_tables`
    out_cols : int64 (n_cols,)                    # IN  output of each value column
    out : float64 (n_rows, n_outputs, n_features + 1)   # OUT accumulated; the bias
                                                        # column is not touched
    """
    run_ranges(_table_shap_range, X.shape[0], X, left, right, feature, threshold,
               default_left, is_categorical, cat_bitset, node_slot, leaf_node, slot_feature,
               n_slots, offsets, table, out_cols, out, min_tasks=CHUNK_ROWS)


@njit(cache=True)
def leaf_interaction_tables(slot_zero, n_slots, offsets, leaf_value, table):
    """Every leaf's share of its value to each pair of slots, for each agreement pattern:
    the SHAP interaction of slot ``j`` with slot ``i != j`` (Lundberg et al. 2018,
    section 4.2, as ``shap.tree_shap_interactions`` computes it by conditioning): half the
    difference of slot ``i``'s value with ``j`` fixed present and fixed absent. Fixing
    ``j`` takes it off the path and scales the leaf by ``one_j`` (present) or ``zero_j``
    (absent), so the difference is ``(one_j - zero_j)`` times ``i``'s weight on the path
    without ``j``.

    Parameters
    ----------
    slot_zero, n_slots                          # IN  from :func:`leaf_paths`
    offsets : int64 (n_leaves + 1,)             # IN  cumulative 2**s * s * s
    leaf_value : float64 (n_leaves, n_cols)     # IN  the leaves' values (scaled)
    table : float64 (offsets[-1], n_cols)       # OUT ``[offset + (pattern * s + j) * s +
                                                #     i, c]``; 0 where i == j
    """
    width = slot_zero.shape[1] + 1
    fi = np.empty((1, width), np.int64)
    zf = np.empty((1, width))
    of = np.empty((1, width))
    pw = np.empty((1, width))
    for leaf in range(n_slots.shape[0]):
        s = n_slots[leaf]
        for pattern in range(1 << s):
            for j in range(s):
                base = offsets[leaf] + (pattern * s + j) * s
                one_j = 1.0 if (pattern >> j) & 1 else 0.0
                half = 0.5 * (one_j - slot_zero[leaf, j])
                # the path without slot j: the root's entry, then the other slots
                _extend(fi, zf, of, pw, 0, 0, 1.0, 1.0, -1)
                depth = 0
                for q in range(s):
                    if q != j:
                        depth += 1
                        one = 1.0 if (pattern >> q) & 1 else 0.0
                        _extend(fi, zf, of, pw, 0, depth, slot_zero[leaf, q], one, q)
                for c in range(leaf_value.shape[1]):
                    table[base + j, c] = 0.0
                for position in range(1, depth + 1):
                    i = fi[0, position]
                    w = _unwound_sum(zf, of, pw, 0, depth, position) * (
                        of[0, position] - zf[0, position])
                    for c in range(leaf_value.shape[1]):
                        table[base + i, c] = half * w * leaf_value[leaf, c]


@njit(**RANGE_KERNEL)
def _table_interactions_range(r_lo, r_hi, X, left, right, feature, threshold, default_left,
                              is_categorical, cat_bitset, node_slot, leaf_node, slot_feature,
                              n_slots, offsets, table, pair_offsets, pair_table, out_cols,
                              out):
    """:func:`table_shap_interactions` for the rows ``r_lo .. r_hi - 1``."""
    n_cols = out_cols.shape[0]
    pattern = np.empty((left.shape[0], CHUNK_ROWS), np.int64)
    for r0 in range(r_lo, r_hi, CHUNK_ROWS):
        n = min(CHUNK_ROWS, r_hi - r0)
        _chunk_patterns(X, r0, n, left, right, feature, threshold, default_left,
                        is_categorical, cat_bitset, node_slot, pattern)
        for leaf in range(n_slots.shape[0]):
            s = n_slots[leaf]
            full = (np.int64(1) << s) - 1
            node = leaf_node[leaf]
            for j_row in range(n):
                r = r0 + j_row
                p = pattern[node, j_row] & full
                base = offsets[leaf] + p * s
                pair_base = pair_offsets[leaf] + p * s * s
                for c in range(n_cols):
                    k = out_cols[c]
                    for j in range(s):
                        fj = slot_feature[leaf, j]
                        # the plain value on the diagonal, less the pairs below
                        diagonal = table[base + j, c]
                        for i in range(s):
                            v = pair_table[pair_base + j * s + i, c]
                            out[r, k, fj, slot_feature[leaf, i]] += v
                            diagonal -= v
                        out[r, k, fj, fj] += diagonal


def table_shap_interactions(X, left, right, feature, threshold, default_left, is_categorical,
                            cat_bitset, paths, offsets, table, pair_offsets, pair_table,
                            out_cols, out):
    """Add one tree's SHAP interaction values of every row into ``out`` from its leaf
    tables: each row of a feature's matrix sums to its SHAP value, as
    :func:`.shap.tree_shap_interactions` gives them.

    Parameters
    ----------
    X, left, right, feature, threshold, default_left, is_categorical, cat_bitset
                                                  # IN  as :func:`table_shap`
    paths : tuple                                 # IN  node_slot, leaf_node, slot_feature,
                                                  #     n_slots of :func:`leaf_paths`
    offsets, table                                # IN  :func:`leaf_weight_tables`
    pair_offsets, pair_table                      # IN  :func:`leaf_interaction_tables`
    out_cols : int64 (n_cols,)                    # IN  output of each value column
    out : float64 (n_rows, n_outputs, n_features + 1, n_features + 1)
                                                  # OUT accumulated; the bias entry
                                                  #     [-1, -1] is not touched
    """
    run_ranges(_table_interactions_range, X.shape[0], X, left, right, feature, threshold,
               default_left, is_categorical, cat_bitset, *paths, offsets, table,
               pair_offsets, pair_table, out_cols, out, min_tasks=CHUNK_ROWS)
