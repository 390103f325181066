"""Prediction over raw values with shallow numeric trees laid out as perfect binary trees
and walked sixteen rows at a time, the rows' node ids held in registers.

A tree of depth ``D`` becomes the complete tree of ``2**D - 1`` internal nodes in
breadth-first order: the children of node ``j`` are ``2j + 1`` (left) and ``2j + 2``
(right), and ``2**D`` leaf slots follow. A leaf above depth ``D`` becomes a node every row
passes through to the left (threshold ``+inf``) down to a leaf slot holding its value, so
a step needs no child array and no leaf test, and every row takes exactly ``D`` steps.

Missing values cost nothing in the step: each chunk of rows is copied once, feature-major,
into *slots*, a slot being a column with its missing values written as ``-inf`` (read by
the nodes whose missing values go left: ``-inf <= threshold``) or as ``+inf`` (the others:
``+inf <= threshold`` is false for a finite threshold). A column whose nodes all send
missing values the same way takes one slot, the others two. A step is then::

    j = 2 j + 2 - (copy[feature[j] + row] <= threshold[j])

where ``feature[j]`` is the node's slot times the chunk's rows. Sixteen rows walk a tree
together with their ``j`` in registers: the compiled step is the slot and threshold loads,
a compare with the copy in memory, an add with carry and two adds, plus a reload of a base
pointer that does not fit the registers, and sixteen independent chains hide the loads'
latency; the root's slot and threshold are loaded once for the sixteen rows. Measured on
200,000 x 28 float32 rows, 100 depth-6 trees, 2 threads (AMD EPYC): 49 ms against 73.5 ms
for the lockstep walk of :mod:`.predict_walks` (1.5x), with bit-identical margins. Tried
and not kept (same model and rows): without the root's hoisting 53 ms; the second level's
two nodes selected without loads 53 ms; integer keys compared instead of floats 61 ms;
slot and threshold interleaved in one array 56 ms; 8 rows at a time 4 ms slower; chunks of
32, 64 or 128 rows alike; float32 copies and thresholds for float32 rows 1% faster.

A tree keeps the lockstep walk when it has a categorical split, vector leaves, a depth
above :data:`MAX_DEPTH`, a complete tree much larger than itself (:data:`MAX_PADDING`), or a
numeric node with a threshold of ``+inf`` or NaN whose missing values go right (a ``+inf``
row and a missing one would then need different answers from the same copy). The whole
ensemble keeps it when the copies would cost more than the walk (see
:func:`use_perfect`). Margins are summed tree by tree in tree order in both walks, so a
row's margin is the same whichever walk each tree takes.

Layout of :class:`PerfectTrees` (``T`` trees, ``P`` internal nodes, ``L`` leaf slots)::

    is_perfect   uint8   (T,)      1: the tree is laid out here
    node_offset  int64   (T + 1,)  the tree's internal nodes in ``feature`` / ``threshold``
    feature      uint32  (P,)      the node's slot * CHUNK_ROWS
    threshold    float64 (P,)      x <= threshold goes left (+inf at padding nodes)
    leaf_offset  int64   (T + 1,)  the tree's leaf slots in ``leaf_value``
    leaf_value   float64 (L,)      leaf values times the tree weight
    slot_column  int64   (S,)      the feature each slot copies
    slot_missing float64 (S,)      the value a missing one takes in the slot (-inf, +inf)
    is_oblivious uint8   (T,)      1: every level of the laid-out tree has one split

An *oblivious* tree (CatBoost's symmetric trees, ``grow_policy="symmetric"``) has one
slot and threshold a level: its walk loads them once a level for the chunk's 128 rows and
steps every row with ``j = 2 j + (copy[row] > threshold)``, a loop the compiler turns into
vector compares (:func:`_walk_oblivious`).
"""
from typing import NamedTuple

import numpy as np
from numba import njit

from .parallel import RANGE_KERNEL, run_ranges
from .predict_walks import (
    _U32,
    _U64,
    CHUNK_ROWS,
    EARLY_EXIT_DEPTH,
    _add_leaf_values,
    _walk_raw_general,
    _walk_raw_numeric,
)

#: Deepest tree laid out as a perfect tree (2**10 leaf slots).
MAX_DEPTH = 10
#: A tree is laid out when its complete tree has at most this many times its nodes: a
#: deep, thin tree (a chain) would walk padding nodes spread over many cache lines.
MAX_PADDING = 8
#: Rows walked together with their node ids in registers (16 node ids, the chunk copy's
#: base and the tree's two arrays fit x86-64's 16 general registers with few spills).
GROUP_ROWS = 16
#: The copies hold at most this many slots (128 rows x 8 bytes x 512 = 512 KiB, an L2):
#: wider models keep the lockstep walk.
MAX_SLOTS = 512


class PerfectTrees(NamedTuple):
    """Complete-tree layout of an ensemble's shallow numeric trees (module docstring)."""

    is_perfect: np.ndarray
    node_offset: np.ndarray
    feature: np.ndarray
    threshold: np.ndarray
    leaf_offset: np.ndarray
    leaf_value: np.ndarray
    slot_column: np.ndarray
    slot_missing: np.ndarray
    is_oblivious: np.ndarray


def _eligible(flat):
    """(T,) bool: which flattened trees take the perfect layout."""
    depth = flat.tree_depth.astype(np.int64)
    n_nodes = np.diff(flat.node_offset)
    ok = (flat.tree_has_cat == 0) & (flat.tree_group >= 0) & (flat.tree_n_cols == 1)
    ok &= (depth <= MAX_DEPTH) & ((1 << np.minimum(depth, 62)) - 1 <= MAX_PADDING * n_nodes)
    internal = flat.left != np.arange(flat.left.shape[0])
    # +inf (or NaN) thresholds whose missing values go right: see the module docstring
    bad = internal & ~(flat.threshold < np.inf) & (flat.default_left == 0)
    bad_trees = np.searchsorted(flat.node_offset, np.flatnonzero(bad), side="right") - 1
    ok[bad_trees] = False
    return ok


def build_perfect_trees(flat):
    """:class:`PerfectTrees` of a :class:`~.predict.FlatTrees` (plain trees only: no
    shared nodes, surrogates or oblique splits). One vectorised step per tree level."""
    ok = _eligible(flat)
    depth = flat.tree_depth.astype(np.int64)
    node_offset = np.zeros(ok.shape[0] + 1, np.int64)
    np.cumsum(np.where(ok, (1 << depth) - 1, 0), out=node_offset[1:])
    leaf_offset = np.zeros(ok.shape[0] + 1, np.int64)
    np.cumsum(np.where(ok, 1 << depth, 0), out=leaf_offset[1:])
    column = np.zeros(int(node_offset[-1]), np.int64)
    threshold = np.full(int(node_offset[-1]), np.inf)
    default_left = np.zeros(int(node_offset[-1]), bool)
    leaf_value = np.zeros(int(leaf_offset[-1]), np.float64)
    for t in np.flatnonzero(ok):
        slots = np.array([flat.node_offset[t]], np.int64)  # flat node at each slot
        for level in range(int(depth[t])):
            a = node_offset[t] + (1 << level) - 1
            leaf = flat.left[slots] == slots
            column[a:a + slots.shape[0]] = np.where(leaf, 0, flat.feature[slots])
            threshold[a:a + slots.shape[0]] = np.where(leaf, np.inf, flat.threshold[slots])
            default_left[a:a + slots.shape[0]] = ~leaf & (flat.default_left[slots] != 0)
            left = flat.left[slots].astype(np.int64)
            children = np.empty(2 * slots.shape[0], np.int64)
            children[0::2] = np.where(leaf, slots, left)
            children[1::2] = np.where(leaf, slots, left + 1)
            slots = children
        first_value = flat.value_offset[t] - flat.node_offset[t]
        leaf_value[leaf_offset[t]:leaf_offset[t + 1]] = flat.value[first_value + slots]
    # a +inf threshold (padding, or a node whose missing values go left) sends every
    # copied value left: any slot will do
    padding = threshold == np.inf
    key = 2 * column + default_left
    keys = np.unique(key[~padding])
    if keys.shape[0] == 0:
        keys = np.zeros(1, np.int64)
    slot = np.where(padding, 0, np.searchsorted(keys, key))
    slot_missing = np.where(keys % 2 == 1, -np.inf, np.inf)
    feature = (slot * CHUNK_ROWS).astype(np.uint32)
    return PerfectTrees(ok.astype(np.uint8), node_offset, feature, threshold, leaf_offset,
                        leaf_value, keys // 2, slot_missing,
                        _oblivious(ok, depth, node_offset, feature, threshold))


def _oblivious(ok, depth, node_offset, feature, threshold):
    """(T,) uint8: laid-out trees whose every level's nodes share one slot and a finite
    threshold (one vectorised check a level)."""
    out = np.zeros(ok.shape[0], np.uint8)
    for t in np.flatnonzero(ok & (depth > 0)):
        same = True
        for level in range(int(depth[t])):
            a = node_offset[t] + (1 << level) - 1
            b = a + (1 << level)
            same &= bool(np.all(feature[a:b] == feature[a])
                         and np.all(threshold[a:b] == threshold[a])
                         and threshold[a] < np.inf)
        out[t] = same
    return out


def use_perfect(perfect, tree_depth, tree_start, tree_end):
    """Whether the walk of trees ``tree_start .. tree_end - 1`` should use the layout:
    some tree is laid out, the copies' slots fit :data:`MAX_SLOTS`, and copying the
    slots costs less than the perfect trees' steps (both per row)."""
    if perfect is None:
        return False
    laid_out = perfect.is_perfect[tree_start:tree_end] != 0
    steps = int(tree_depth[tree_start:tree_end][laid_out].sum())
    n_slots = perfect.slot_column.shape[0]
    return steps > 0 and n_slots <= MAX_SLOTS and n_slots <= steps


# --------------------------------------------------------------------------- kernels


@njit(cache=True)
def _copy_chunk(X, s, m, slot_column, slot_missing, copies):
    """Copy rows ``s .. s+m`` into the slots, feature-major, NaN as the slot's missing
    value; rows ``m .. CHUNK_ROWS`` as 0 (walked, never added)."""
    for j in range(slot_column.shape[0]):
        f = _U64(slot_column[j])
        fill = slot_missing[j]
        first = _U64(j * CHUNK_ROWS)
        for r in range(CHUNK_ROWS):
            x = np.float64(X[_U64(s + r), f]) if r < m else 0.0
            copies[first + _U64(r)] = fill if x != x else x


@njit(cache=True, inline="always")
def _step(copies, row, node, feature, threshold):
    x = copies[_U64(feature[node]) + row]
    return _U32(2) * node + _U32(2) - _U32(x <= threshold[node])


@njit(cache=True)
def _walk_perfect(copies, depth, feature, threshold, leaf_value, g, acc):
    """Add a tree's leaf values to ``acc[:, g]`` for the chunk's CHUNK_ROWS rows (rows
    past the chunk's end walk the copies' zeros into ``acc``'s spare rows); ``feature``,
    ``threshold``: the tree's internal nodes, ``leaf_value`` its leaf slots."""
    first_leaf = _U64((1 << depth) - 1)
    for r0 in range(0, CHUNK_ROWS, GROUP_ROWS):
        o = _U64(r0)
        n0 = n1 = n2 = n3 = n4 = n5 = n6 = n7 = _U32(0)
        n8 = n9 = n10 = n11 = n12 = n13 = n14 = n15 = _U32(0)
        if depth > 0:
            # the root's step with its slot and threshold loaded once for the 16 rows:
            # 8% of the walk's time (53 -> 49 ms on the bench model); doing the same for
            # the second level (a select between two nodes) was slower (53 ms)
            root = copies[_U64(feature[0]) + o:]
            root_threshold = threshold[0]
            n0 = _U32(2) - _U32(root[0] <= root_threshold)
            n1 = _U32(2) - _U32(root[1] <= root_threshold)
            n2 = _U32(2) - _U32(root[2] <= root_threshold)
            n3 = _U32(2) - _U32(root[3] <= root_threshold)
            n4 = _U32(2) - _U32(root[4] <= root_threshold)
            n5 = _U32(2) - _U32(root[5] <= root_threshold)
            n6 = _U32(2) - _U32(root[6] <= root_threshold)
            n7 = _U32(2) - _U32(root[7] <= root_threshold)
            n8 = _U32(2) - _U32(root[8] <= root_threshold)
            n9 = _U32(2) - _U32(root[9] <= root_threshold)
            n10 = _U32(2) - _U32(root[10] <= root_threshold)
            n11 = _U32(2) - _U32(root[11] <= root_threshold)
            n12 = _U32(2) - _U32(root[12] <= root_threshold)
            n13 = _U32(2) - _U32(root[13] <= root_threshold)
            n14 = _U32(2) - _U32(root[14] <= root_threshold)
            n15 = _U32(2) - _U32(root[15] <= root_threshold)
        for _level in range(depth - 1):
            n0 = _step(copies, o, n0, feature, threshold)
            n1 = _step(copies, o + _U64(1), n1, feature, threshold)
            n2 = _step(copies, o + _U64(2), n2, feature, threshold)
            n3 = _step(copies, o + _U64(3), n3, feature, threshold)
            n4 = _step(copies, o + _U64(4), n4, feature, threshold)
            n5 = _step(copies, o + _U64(5), n5, feature, threshold)
            n6 = _step(copies, o + _U64(6), n6, feature, threshold)
            n7 = _step(copies, o + _U64(7), n7, feature, threshold)
            n8 = _step(copies, o + _U64(8), n8, feature, threshold)
            n9 = _step(copies, o + _U64(9), n9, feature, threshold)
            n10 = _step(copies, o + _U64(10), n10, feature, threshold)
            n11 = _step(copies, o + _U64(11), n11, feature, threshold)
            n12 = _step(copies, o + _U64(12), n12, feature, threshold)
            n13 = _step(copies, o + _U64(13), n13, feature, threshold)
            n14 = _step(copies, o + _U64(14), n14, feature, threshold)
            n15 = _step(copies, o + _U64(15), n15, feature, threshold)
        acc[r0, g] += leaf_value[_U64(n0) - first_leaf]
        acc[r0 + 1, g] += leaf_value[_U64(n1) - first_leaf]
        acc[r0 + 2, g] += leaf_value[_U64(n2) - first_leaf]
        acc[r0 + 3, g] += leaf_value[_U64(n3) - first_leaf]
        acc[r0 + 4, g] += leaf_value[_U64(n4) - first_leaf]
        acc[r0 + 5, g] += leaf_value[_U64(n5) - first_leaf]
        acc[r0 + 6, g] += leaf_value[_U64(n6) - first_leaf]
        acc[r0 + 7, g] += leaf_value[_U64(n7) - first_leaf]
        acc[r0 + 8, g] += leaf_value[_U64(n8) - first_leaf]
        acc[r0 + 9, g] += leaf_value[_U64(n9) - first_leaf]
        acc[r0 + 10, g] += leaf_value[_U64(n10) - first_leaf]
        acc[r0 + 11, g] += leaf_value[_U64(n11) - first_leaf]
        acc[r0 + 12, g] += leaf_value[_U64(n12) - first_leaf]
        acc[r0 + 13, g] += leaf_value[_U64(n13) - first_leaf]
        acc[r0 + 14, g] += leaf_value[_U64(n14) - first_leaf]
        acc[r0 + 15, g] += leaf_value[_U64(n15) - first_leaf]


@njit(cache=True)
def _walk_oblivious(copies, depth, feature, threshold, leaf_value, g, acc, index):
    """:func:`_walk_perfect` for an oblivious tree: level ``l``'s split is its first node
    ``2^l - 1``'s; ``index``: scratch (CHUNK_ROWS,) uint32."""
    for r in range(CHUNK_ROWS):
        index[r] = 0
    for level in range(depth):
        j = (1 << level) - 1
        column = copies[_U64(feature[j]):_U64(feature[j]) + _U64(CHUNK_ROWS)]
        cut = threshold[j]
        for r in range(CHUNK_ROWS):
            index[r] = _U32(2) * index[r] + _U32(column[r] > cut)
    for r in range(CHUNK_ROWS):
        acc[r, g] += leaf_value[index[r]]


@njit(cache=True)
def _predict_chunk(X, s, m, tree_start, tree_end, use_perfect, node_offset, tree_depth,
                   tree_group, tree_n_cols, value_offset, tree_has_cat, left, feature,
                   threshold, default_left, is_categorical, cat_offset, cat_n_bits,
                   cat_bitset, value, is_perfect, p_node_offset, p_feature, p_threshold,
                   p_leaf_offset, p_leaf_value, p_is_oblivious, copies, acc):
    """Add the leaf values of trees ``tree_start .. tree_end - 1`` for rows ``s .. s+m``
    to ``acc[:m]``; ``copies``: the chunk's slots (:func:`_copy_chunk`) when
    ``use_perfect``."""
    nodes = np.empty(CHUNK_ROWS, dtype=np.uint32)
    for t in range(tree_start, tree_end):
        depth = tree_depth[t]
        if use_perfect and is_perfect[t] != 0:
            a, b = p_node_offset[t], p_node_offset[t + 1]
            leaves = p_leaf_value[p_leaf_offset[t]:p_leaf_offset[t + 1]]
            if p_is_oblivious[t] != 0:
                _walk_oblivious(copies, depth, p_feature[a:b], p_threshold[a:b], leaves,
                                tree_group[t], acc, nodes)
            else:
                _walk_perfect(copies, depth, p_feature[a:b], p_threshold[a:b], leaves,
                              tree_group[t], acc)
            continue
        lo = node_offset[t]
        for r in range(m):
            nodes[r] = _U32(lo)
        if tree_has_cat[t] == 0 and depth <= EARLY_EXIT_DEPTH:
            _walk_raw_numeric(X, s, m, nodes, depth, left, feature, threshold, default_left)
        else:
            _walk_raw_general(X, s, m, nodes, depth, left, feature, threshold, default_left,
                              is_categorical, cat_offset, cat_n_bits, cat_bitset)
        _add_leaf_values(acc, 0, m, nodes, t, lo, tree_group, tree_n_cols, value_offset,
                         value)


@njit(**RANGE_KERNEL)
def _predict_raw_chunks(chunk_lo, chunk_hi, X, tree_start, tree_end, use_perfect,
                        node_offset, tree_depth, tree_group, tree_n_cols, value_offset,
                        tree_has_cat, left, feature, threshold, default_left, is_categorical,
                        cat_offset, cat_n_bits, cat_bitset, value, is_perfect, p_node_offset,
                        p_feature, p_threshold, p_leaf_offset, p_leaf_value, p_slot_column,
                        p_slot_missing, p_is_oblivious, out):
    """:func:`predict_raw` for the chunks ``chunk_lo .. chunk_hi - 1`` of CHUNK_ROWS
    rows."""
    n_rows = X.shape[0]
    n_outputs = out.shape[1]
    acc = np.empty((CHUNK_ROWS, n_outputs))
    copies = np.empty(p_slot_column.shape[0] * CHUNK_ROWS if use_perfect else 0)
    for c in range(chunk_lo, chunk_hi):
        s = c * CHUNK_ROWS
        m = min(n_rows, s + CHUNK_ROWS) - s
        for r in range(CHUNK_ROWS):
            for k in range(n_outputs):
                acc[r, k] = out[s + r, k] if r < m else 0.0
        if use_perfect:
            _copy_chunk(X, s, m, p_slot_column, p_slot_missing, copies)
        _predict_chunk(X, s, m, tree_start, tree_end, use_perfect, node_offset, tree_depth,
                       tree_group, tree_n_cols, value_offset, tree_has_cat, left, feature,
                       threshold, default_left, is_categorical, cat_offset, cat_n_bits,
                       cat_bitset, value, is_perfect, p_node_offset, p_feature, p_threshold,
                       p_leaf_offset, p_leaf_value, p_is_oblivious, copies, acc)
        for r in range(m):
            for k in range(n_outputs):
                out[s + r, k] = acc[r, k]


def predict_raw(X, tree_start, tree_end, use_perfect, node_offset, tree_depth, tree_group,
                tree_n_cols, value_offset, tree_has_cat, left, feature, threshold,
                default_left, is_categorical, cat_offset, cat_n_bits, cat_bitset, value,
                is_perfect, p_node_offset, p_feature, p_threshold, p_leaf_offset,
                p_leaf_value, p_slot_column, p_slot_missing, p_is_oblivious, out):
    """Add the leaf values of trees ``tree_start .. tree_end - 1`` to ``out``, chunks of
    CHUNK_ROWS rows on numba's threads (:func:`.parallel.run_ranges`).

    Parameters
    ----------
    X : ndarray (n_rows, n_features) float64 or float32, C-contiguous   # IN
        Raw values, categorical features as float codes, NaN = missing.
    tree_start, tree_end : int
        Half-open range of trees (flat tree indices).
    use_perfect : bool
        Walk the trees laid out in the ``p_*`` arrays (:class:`PerfectTrees`) there;
        False: every tree takes the lockstep walk.
    node_offset .. value : FlatTrees arrays                          # IN
    is_perfect .. p_is_oblivious : PerfectTrees arrays               # IN
    out : ndarray (n_rows, n_outputs) float64                        # IN/OUT, accumulated
    """
    n_chunks = (X.shape[0] + CHUNK_ROWS - 1) // CHUNK_ROWS
    run_ranges(_predict_raw_chunks, n_chunks, X, int(tree_start), int(tree_end),
               bool(use_perfect), node_offset, tree_depth, tree_group, tree_n_cols,
               value_offset, tree_has_cat, left, feature, threshold, default_left,
               is_categorical, cat_offset, cat_n_bits, cat_bitset, value, is_perfect,
               p_node_offset, p_feature, p_threshold, p_leaf_offset, p_leaf_value,
               p_slot_column, p_slot_missing, p_is_oblivious, out)
