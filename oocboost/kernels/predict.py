"""Prediction kernels: traverse every tree of an ensemble for every row, over raw values or bin
codes.

The ensemble is flattened once (:func:`flatten_trees`) into concatenated node arrays, and
the kernels only see those plain arrays. Two layout changes make the traversal fast:

* **siblings are adjacent**: nodes are renumbered so that ``right == left + 1``; a step is
  ``node = left[node] + 1 - goes_left`` with no branch on the direction;
* **leaves loop on themselves**: a leaf's ``left`` is the leaf itself, its threshold
  ``+inf``, its bin threshold ``INT32_MAX`` and its default direction left, so every row
  of a tree takes exactly ``depth`` steps and rows of a chunk advance in lockstep::

      chunk of CHUNK_ROWS rows      tree t, level by level
      nodes[0..m) = root   ->  nodes[r] = left[nodes[r]] + 1 - goes_left(x[r], nodes[r])
                               (depth times; rows are independent, so the CPU overlaps
                               their loads)  ->  out[r, group] += value[nodes[r]]

  Trees with long thin branches stop early when a whole chunk sits on leaves.

Over raw values, shallow numeric trees are further laid out as perfect binary trees and
walked sixteen rows at a time (:mod:`.predict_perfect`, 1.45x faster); the walks of this
layout (:mod:`.predict_walks`) take the other trees, bin codes and leaf indices.

Layout of :class:`FlatTrees` (``N`` = total nodes, ``T`` = trees)::

    node_offset    int64   (T + 1,)  first flat node of each tree
    tree_depth     int32   (T,)      levels to walk (max leaf depth)
    tree_group     int32   (T,)      output the tree adds to; -1: adds value[k] to output k
    tree_n_cols    int32   (T,)      value columns (1, or n_outputs when the group is -1)
    value_offset   int64   (T + 1,)  first value of each tree in ``value``
    tree_has_cat   uint8   (T,)      1 when the tree has a categorical split
    left           int32   (N,)      flat id of the left child (the node itself at leaves);
                                     the right child is ``left + 1``
    feature        int32   (N,)      feature index (0 at leaves)
    threshold      float64 (N,)      raw rule ``x <= threshold`` goes left (+inf at leaves)
    bin_threshold  int32   (N,)      binned rule ``code <= bin_threshold`` goes left
    default_left   uint8   (N,)      1: a missing value goes left
    is_categorical uint8   (N,)      1: bitset split
    cat_offset     int64   (N,)      first word of the node's bitset in ``cat_bitset``
    cat_n_bits     int64   (N,)      bits in the node's bitset (0 for numeric nodes)
    cat_bitset     uint32  (W,)      concatenated bitsets; code ``c`` in the set goes left
    value          float64 (V,)      leaf values times the tree weight, rows by flat node
    node_id        int32   (N,)      the node's id in its own tree (for leaf indices)

Decision rules (the same in the naive twins in ``tests/model/test_predict.py``):

* numeric, raw: ``x`` NaN -> default direction, else ``x <= threshold`` -> left;
* numeric, binned: ``code == missing_bin`` -> default direction, else ``code <=
  bin_threshold`` -> left;
* categorical: missing (NaN / ``missing_bin``) -> default direction; else the code is
  ``int(x)`` (the float is truncated) and goes left iff ``0 <= code < n_bits`` and its bit
  is set. A code beyond the bitset width, or negative, is not in the set and goes right.

Margins are accumulated tree by tree in tree order, so a row's sum does not depend on the
chunking or the thread count.
"""
from typing import NamedTuple

import numpy as np
from numba import njit

from . import predict_perfect as _perfect
from .codes import read_only
from .parallel import RANGE_KERNEL, run_ranges
from .predict_walks import (
    _U32,
    CHUNK_ROWS,
    EARLY_EXIT_DEPTH,
    LEAF_BIN_THRESHOLD,
    _add_leaf_values,
    _walk_binned_general,
    _walk_binned_numeric,
    _walk_raw_general,
    _walk_raw_numeric,
)


class FlatTrees(NamedTuple):
    """Concatenated node arrays of an ensemble (see the module docstring for the layout)."""

    node_offset: np.ndarray
    tree_depth: np.ndarray
    tree_group: np.ndarray
    tree_n_cols: np.ndarray
    value_offset: np.ndarray
    tree_has_cat: np.ndarray
    left: np.ndarray
    feature: np.ndarray
    threshold: np.ndarray
    bin_threshold: np.ndarray
    default_left: np.ndarray
    is_categorical: np.ndarray
    cat_offset: np.ndarray
    cat_n_bits: np.ndarray
    cat_bitset: np.ndarray
    value: np.ndarray
    node_id: np.ndarray
    #: :class:`.predict_surrogate.FlatSurrogates` when some tree has surrogate splits
    surrogates: object = None
    #: (N,) int32 right children when some tree shares nodes (a DAG, ``.predict_dag``):
    #: then no tree is reordered and ``left`` is each node's left child (itself at leaves)
    right: object = None
    #: :class:`.predict_oblique.FlatOblique` when some tree has oblique splits
    oblique: object = None
    #: :class:`.predict_perfect.PerfectTrees` of plain trees (None for the others)
    perfect: object = None

    @property
    def n_trees(self):
        return self.tree_depth.shape[0]


def sibling_order(left, right):
    """New ids putting siblings side by side: root 0, children of the k-th internal node
    (in id order) at ``2k + 1`` (left) and ``2k + 2`` (right). A bijection for a valid tree
    (each non-root node has exactly one parent). Returns ``new_of_old`` int64 (n_nodes,)."""
    n_nodes = left.shape[0]
    internal = np.flatnonzero(left >= 0)
    new_of_old = np.zeros(n_nodes, dtype=np.int64)
    k = np.arange(internal.shape[0], dtype=np.int64)
    new_of_old[left[internal]] = 2 * k + 1
    new_of_old[right[internal]] = 2 * k + 2
    return new_of_old


def is_dag(left, right):
    """True when some node has more than one parent (a decision stream's graph)."""
    internal = left >= 0
    children = np.concatenate((left[internal], right[internal]))
    return bool(children.size) and np.unique(children).size < children.size


def compute_tree_depth(left, right):
    """Maximum leaf depth of a valid tree or graph (root alone: 0), one vectorised step
    per level.

    Terminates because in a valid tree children ids exceed their parent's.
    """
    frontier = np.zeros(1, dtype=np.int64)
    depth = 0
    while True:
        frontier = frontier[left[frontier] >= 0]
        if frontier.shape[0] == 0:
            return depth
        # unique: a node several parents share (a decision stream) is walked once
        frontier = np.unique(np.concatenate((left[frontier], right[frontier]))).astype(
            np.int64)
        depth += 1


def flatten_trees(trees, tree_group, tree_weight, n_outputs):
    """Flatten validated trees into one :class:`FlatTrees`.

    Parameters
    ----------
    trees : sequence of Tree
        Valid trees (``oocboost.model.Tree``: ``left``, ``right``, ``feature``,
        ``threshold``, ``bin_threshold``, ``default_left``, ``is_categorical``,
        ``cat_bitset``, ``value``).
    tree_group : ndarray (n_trees,) int32
        Output each tree adds to, or -1 when its value vector adds to all outputs.
    tree_weight : ndarray (n_trees,) float64
        Multiplies the leaf values (``value = tree_weight[t] * tree.value``).
    n_outputs : int

    Returns
    -------
    FlatTrees
    """
    n_trees = len(trees)
    dag = any(is_dag(t.left, t.right) for t in trees)
    sizes = np.array([t.left.shape[0] for t in trees], dtype=np.int64)
    node_offset = np.zeros(n_trees + 1, dtype=np.int64)
    np.cumsum(sizes, out=node_offset[1:])
    n_total = int(node_offset[-1])
    if n_total >= 1 << 32:
        raise ValueError(f"the ensemble has {n_total:,} nodes; prediction indexes nodes "
                         f"with 32 bits (at most {(1 << 32) - 1:,})")
    tree_group = np.asarray(tree_group, dtype=np.int32)
    tree_n_cols = np.where(tree_group < 0, n_outputs, 1).astype(np.int32)
    value_offset = np.zeros(n_trees + 1, dtype=np.int64)
    np.cumsum(sizes * tree_n_cols, out=value_offset[1:])
    # bitsets are copied only for trees that have a categorical split
    words = np.array([t.cat_bitset.shape[1] if np.any(t.is_categorical & (t.left != -1))
                      else 0 for t in trees], dtype=np.int64)
    bitset_offset = np.zeros(n_trees + 1, dtype=np.int64)
    np.cumsum(sizes * words, out=bitset_offset[1:])

    tree_depth = np.zeros(n_trees, dtype=np.int32)
    tree_has_cat = np.zeros(n_trees, dtype=np.uint8)
    left_flat = np.empty(n_total, dtype=np.int32)
    feature = np.empty(n_total, dtype=np.int32)
    threshold = np.empty(n_total, dtype=np.float64)
    bin_threshold = np.empty(n_total, dtype=np.int32)
    default_left = np.empty(n_total, dtype=np.uint8)
    is_categorical = np.empty(n_total, dtype=np.uint8)
    cat_offset = np.zeros(n_total, dtype=np.int64)
    cat_n_bits = np.zeros(n_total, dtype=np.int64)
    cat_bitset = np.zeros(int(bitset_offset[-1]), dtype=np.uint32)
    value = np.empty(int(value_offset[-1]), dtype=np.float64)
    node_id = np.empty(n_total, dtype=np.int32)
    right_flat = np.empty(n_total, dtype=np.int32) if dag else None

    for t, tree in enumerate(trees):
        lo, hi = int(node_offset[t]), int(node_offset[t + 1])
        left = tree.left.astype(np.int64)
        right = tree.right.astype(np.int64)
        new_of_old = np.arange(hi - lo, dtype=np.int64) if dag else sibling_order(left,
                                                                                    right)
        old_of_new = np.empty_like(new_of_old)
        old_of_new[new_of_old] = np.arange(new_of_old.shape[0])
        leaf = left[old_of_new] < 0
        new_self = np.arange(hi - lo, dtype=np.int64)
        new_left = np.where(leaf, new_self, new_of_old[np.maximum(left[old_of_new], 0)])
        left_flat[lo:hi] = new_left + lo
        if dag:
            right_flat[lo:hi] = np.where(leaf, new_self, right[old_of_new]) + lo
        feature[lo:hi] = np.where(leaf, 0, tree.feature[old_of_new])
        threshold[lo:hi] = np.where(leaf, np.inf, tree.threshold[old_of_new])
        bin_threshold[lo:hi] = np.where(
            leaf, LEAF_BIN_THRESHOLD, tree.bin_threshold[old_of_new]
        )
        default_left[lo:hi] = np.where(leaf, True, tree.default_left[old_of_new])
        cat = tree.is_categorical[old_of_new] & ~leaf
        is_categorical[lo:hi] = cat
        node_id[lo:hi] = old_of_new
        n_words = int(words[t])
        if n_words > 0:
            tree_has_cat[t] = 1
            b0 = int(bitset_offset[t])
            cat_bitset[b0:b0 + (hi - lo) * n_words] = tree.cat_bitset[old_of_new].ravel()
            cat_offset[lo:hi] = b0 + new_self * n_words
            cat_n_bits[lo:hi] = np.where(cat, 32 * n_words, 0)
        v = tree.value[old_of_new] * tree_weight[t]
        value[value_offset[t]:value_offset[t + 1]] = v.ravel()
        tree_depth[t] = compute_tree_depth(left, right)
    from .predict_oblique import flatten_oblique
    from .predict_surrogate import flatten_surrogates

    flat = FlatTrees(node_offset, tree_depth, tree_group, tree_n_cols, value_offset,
                     tree_has_cat, left_flat, feature, threshold, bin_threshold,
                     default_left, is_categorical, cat_offset, cat_n_bits, cat_bitset,
                     value, node_id, flatten_surrogates(trees, node_offset, node_id),
                     right_flat, flatten_oblique(trees, node_offset, node_id))
    if is_plain(flat):
        flat = flat._replace(perfect=_perfect.build_perfect_trees(flat))
    return flat


# --------------------------------------------------------------------------- kernels


@njit(**RANGE_KERNEL)
def _predict_binned_range(c_lo, c_hi, codes, missing_bin, tree_start, tree_end, node_offset,
                          tree_depth, tree_group, tree_n_cols, value_offset, tree_has_cat,
                          left, feature, bin_threshold, default_left, is_categorical,
                          cat_offset, cat_n_bits, cat_bitset, value, out):
    """:func:`predict_binned` for the chunks ``c_lo .. c_hi - 1``."""
    n_rows = codes.shape[1]
    for c in range(c_lo, c_hi):
        s = c * CHUNK_ROWS
        m = min(n_rows, s + CHUNK_ROWS) - s
        nodes = np.empty(CHUNK_ROWS, dtype=np.uint32)
        for t in range(tree_start, tree_end):
            lo = node_offset[t]
            for r in range(m):
                nodes[r] = _U32(lo)
            depth = tree_depth[t]
            if tree_has_cat[t] == 0 and depth <= EARLY_EXIT_DEPTH:
                _walk_binned_numeric(codes, missing_bin, s, m, nodes, depth, left, feature,
                                     bin_threshold, default_left)
            else:
                _walk_binned_general(codes, missing_bin, s, m, nodes, depth, left, feature,
                                     bin_threshold, default_left, is_categorical, cat_offset,
                                     cat_n_bits, cat_bitset)
            _add_leaf_values(out, s, m, nodes, t, lo, tree_group, tree_n_cols, value_offset,
                             value)


def predict_binned(codes, missing_bin, tree_start, tree_end, node_offset, tree_depth,
                   tree_group, tree_n_cols, value_offset, tree_has_cat, left, feature,
                   bin_threshold, default_left, is_categorical, cat_offset, cat_n_bits,
                   cat_bitset, value, out):
    """Binned twin of :func:`.predict_perfect.predict_raw`.

    Parameters
    ----------
    codes : ndarray (n_features, n_rows) uint8 or uint16, C-contiguous   # IN
    missing_bin : int
        The missing code (``max_bin - 1``).
    out : ndarray (n_rows, n_outputs) float64                             # IN/OUT, accumulated
    """
    run_ranges(_predict_binned_range, (codes.shape[1] + CHUNK_ROWS - 1) // CHUNK_ROWS, codes,
               missing_bin, tree_start, tree_end, node_offset, tree_depth, tree_group,
               tree_n_cols, value_offset, tree_has_cat, left, feature, bin_threshold,
               default_left, is_categorical, cat_offset, cat_n_bits, cat_bitset, value, out)


@njit(**RANGE_KERNEL)
def _predict_leaf_raw_range(c_lo, c_hi, X, tree_start, tree_end, node_offset, tree_depth,
                            tree_has_cat, left, feature, threshold, default_left,
                            is_categorical, cat_offset, cat_n_bits, cat_bitset, node_id, out):
    """:func:`predict_leaf_raw` for the chunks ``c_lo .. c_hi - 1``."""
    n_rows = X.shape[0]
    for c in range(c_lo, c_hi):
        s = c * CHUNK_ROWS
        m = min(n_rows, s + CHUNK_ROWS) - s
        nodes = np.empty(CHUNK_ROWS, dtype=np.uint32)
        for t in range(tree_start, tree_end):
            lo = node_offset[t]
            for r in range(m):
                nodes[r] = _U32(lo)
            depth = tree_depth[t]
            if tree_has_cat[t] == 0 and depth <= EARLY_EXIT_DEPTH:
                _walk_raw_numeric(X, s, m, nodes, depth, left, feature, threshold,
                                  default_left)
            else:
                _walk_raw_general(X, s, m, nodes, depth, left, feature, threshold,
                                  default_left, is_categorical, cat_offset, cat_n_bits,
                                  cat_bitset)
            for r in range(m):
                out[s + r, t - tree_start] = node_id[nodes[r]]


def predict_leaf_raw(X, tree_start, tree_end, node_offset, tree_depth, tree_has_cat, left,
                     feature, threshold, default_left, is_categorical, cat_offset, cat_n_bits,
                     cat_bitset, node_id, out):
    """Leaf reached by each row in each tree of the range.

    Parameters
    ----------
    X : ndarray (n_rows, n_features) float64, C-contiguous        # IN
    out : ndarray (n_rows, tree_end - tree_start) int32            # OUT
        The leaf's node id within its own tree.
    """
    run_ranges(_predict_leaf_raw_range, (X.shape[0] + CHUNK_ROWS - 1) // CHUNK_ROWS, X,
               tree_start, tree_end, node_offset, tree_depth, tree_has_cat, left, feature,
               threshold, default_left, is_categorical, cat_offset, cat_n_bits, cat_bitset,
               node_id, out)


# ------------------------------------------------------------------ Python front ends


def _walker(flat):
    """The module whose row-at-a-time kernels walk trees with oblique splits, shared
    nodes or surrogates (``predict_oblique``, ``predict_dag``, ``predict_surrogate``), or
    None for the kernels here."""
    if flat.oblique is not None:
        from . import predict_oblique as walker
    elif flat.right is not None:
        from . import predict_dag as walker
    elif flat.surrogates is not None:
        from . import predict_surrogate as walker
    else:
        return None
    return walker


#: Fewest rows a call walks with the perfect layout (a chunk is ``CHUNK_ROWS``).
PERFECT_MIN_ROWS = 32


def is_plain(flat):
    """True when ``flat`` has no oblique split, shared node or surrogate: the kernels of
    this module walk it (they read float32 or float64 rows)."""
    return _walker(flat) is None


def raw_margins(flat, X, tree_start, tree_end, out):
    """Call :func:`.predict_perfect.predict_raw` with the arrays of ``flat`` (``out``
    accumulated); the perfect layout when :func:`.predict_perfect.use_perfect`. ``X``
    goes as a read-only view: rows parsed from a file are read-only, arrays of the caller
    are not, and numba would compile the walk once for each."""
    X = read_only(X)
    walker = _walker(flat)
    if walker is not None:
        return walker.raw_margins(flat, X, tree_start, tree_end, out)
    perfect = flat.perfect
    # a short block walks its rows alone: the perfect layout walks and copies a whole
    # chunk of rows (a one-row call spent 90 of its 180 us there)
    use = X.shape[0] >= PERFECT_MIN_ROWS and _perfect.use_perfect(
        perfect, flat.tree_depth, tree_start, tree_end)
    _perfect.predict_raw(X, tree_start, tree_end, use, flat.node_offset, flat.tree_depth,
                         flat.tree_group, flat.tree_n_cols, flat.value_offset,
                         flat.tree_has_cat, flat.left, flat.feature, flat.threshold,
                         flat.default_left, flat.is_categorical, flat.cat_offset,
                         flat.cat_n_bits, flat.cat_bitset, flat.value, *perfect, out)


def binned_margins(flat, codes, missing_bin, tree_start, tree_end, out):
    """Call :func:`predict_binned` with the arrays of ``flat`` (``out`` accumulated).
    Oblique splits read the bins' values: ``predict_oblique.binned_margins``."""
    if flat.oblique is not None:
        raise ValueError("trees with oblique splits read the bins' values: call "
                         "predict_oblique.binned_margins with them")
    walker = _walker(flat)
    if walker is not None:
        return walker.binned_margins(flat, codes, missing_bin, tree_start, tree_end, out)
    predict_binned(codes, missing_bin, tree_start, tree_end, flat.node_offset,
                   flat.tree_depth, flat.tree_group, flat.tree_n_cols, flat.value_offset,
                   flat.tree_has_cat, flat.left, flat.feature, flat.bin_threshold,
                   flat.default_left, flat.is_categorical, flat.cat_offset, flat.cat_n_bits,
                   flat.cat_bitset, flat.value, out)


def raw_leaves(flat, X, tree_start, tree_end, out):
    """Call :func:`predict_leaf_raw` with the arrays of ``flat`` (``X`` read-only, as in
    :func:`raw_margins`)."""
    X = read_only(X)
    walker = _walker(flat)
    if walker is not None:
        return walker.raw_leaves(flat, X, tree_start, tree_end, out)
    predict_leaf_raw(X, tree_start, tree_end, flat.node_offset, flat.tree_depth,
                     flat.tree_has_cat, flat.left, flat.feature, flat.threshold,
                     flat.default_left, flat.is_categorical, flat.cat_offset,
                     flat.cat_n_bits, flat.cat_bitset, flat.node_id, out)
