"""Lookup-table prediction ("bonsai") of shallow trees over bin codes.

A shallow tree reads few features, and over bin codes each of them takes few distinct
paths: the codes of feature ``f`` fall into classes that every split of the tree on
``f`` treats alike (numeric thresholds cut the codes into intervals; the missing code
and category sets make further classes). The tree's leaf is then a function of one class
per feature, tabulated once::

    leaf = table[t][ sum_j lut[j, code of feature f_j] ]     (lut holds class x stride)

so a row takes ``|features of the tree|`` independent loads instead of ``depth``
dependent steps. Trees whose table would be large, or that read more than two features
per level of depth, keep the traversal of :mod:`.predict`; both give the same leaf, and margins
are summed tree by tree in the same order, so the result is bit for bit the traversal's.

Layout of :class:`LeafTables` (``T`` trees, ``J`` (tree, feature) pairs)::

    has_table      uint8   (T,)       1: the tree is tabulated
    pair_offset    int64   (T + 1,)   the tree's pairs in ``pair_feature`` / ``lut``
    pair_feature   int32   (J,)
    lut            int32   (J, n_codes) class of each code times the pair's stride
    table_offset   int64   (T + 1,)   the tree's entries in ``table``
    table          int32   (E,)       flat leaf node of each entry
"""
import math
from typing import NamedTuple

import numpy as np
from numba import njit

from .parallel import RANGE_KERNEL, run_ranges
from .predict_walks import (
    CHUNK_ROWS,
    EARLY_EXIT_DEPTH,
    _add_leaf_values,
    _walk_binned_general,
    _walk_binned_numeric,
)

#: Largest table of one tree (entries of 4 bytes: 64 KiB, an L2-sized table). Measured
#: on 1M rows x 20 features, 100 trees of depth 5 (bench classic lookup_tables): 4,096
#: entries tabulate 12 trees (0.73 s against 0.78 s walked), 16,384 tabulate 44 (0.61 s),
#: 65,536 tabulate 59 (0.57 s, but 256 KiB a table).
MAX_TABLE_ENTRIES = 1 << 14
#: A tree is tabulated when it reads at most this many features per level of depth:
#: one load per feature beats the dependent steps of a walk up to about two features a
#: level (same runs: depth 2, 1.0 -> 42 trees, 0.29 s; 2.0 -> all 100, 0.23 s).
MAX_FEATURES_PER_LEVEL = 2.0
#: Table entries of a whole model (4 bytes each).
MAX_TOTAL_ENTRIES = 1 << 26


class LeafTables(NamedTuple):
    has_table: np.ndarray
    pair_offset: np.ndarray
    pair_feature: np.ndarray
    lut: np.ndarray
    table_offset: np.ndarray
    table: np.ndarray

    @property
    def n_tabulated(self):
        return int(self.has_table.sum())


def _decisions(flat, nodes, n_codes, missing_bin):
    """(n_codes, len(nodes)) bool: does each code go left at each of ``nodes`` (the
    binned rules of :mod:`.predict`)."""
    codes = np.arange(n_codes)
    out = np.empty((n_codes, len(nodes)), bool)
    for j, node in enumerate(nodes):
        if flat.is_categorical[node]:
            n_bits = int(flat.cat_n_bits[node])
            bits = flat.cat_bitset[flat.cat_offset[node]:flat.cat_offset[node] + n_bits // 32]
            inside = codes < n_bits
            word = bits[np.where(inside, codes >> 5, 0)]
            go = inside & (((word >> (codes & 31).astype(np.uint32)) & 1) != 0)
        else:
            go = codes <= flat.bin_threshold[node]
        go[codes == missing_bin] = bool(flat.default_left[node])
        out[:, j] = go
    return out


def _tree_table(flat, t, n_codes, missing_bin):
    """(features, luts, table) of tree ``t``, or None when it is not worth a table:
    more features than levels, or more than :data:`MAX_TABLE_ENTRIES` entries."""
    lo, hi = int(flat.node_offset[t]), int(flat.node_offset[t + 1])
    split = np.flatnonzero(flat.left[lo:hi] != np.arange(lo, hi)) + lo
    features = np.unique(flat.feature[split])
    depth = int(flat.tree_depth[t])
    if len(features) == 0 or len(features) > MAX_FEATURES_PER_LEVEL * depth:
        return None
    decisions, classes, reps = [], [], []
    for f in features:
        nodes = split[flat.feature[split] == f]
        d = _decisions(flat, nodes, n_codes, missing_bin)
        _, first, inverse = np.unique(d, axis=0, return_index=True, return_inverse=True)
        decisions.append((nodes, d))
        classes.append(inverse.reshape(-1))
        reps.append(first)
    sizes = [len(r) for r in reps]
    # Python's integers: numpy's product of a deep tree's sizes wrapped past int64
    n_entries = math.prod(sizes)
    if n_entries > MAX_TABLE_ENTRIES:
        return None
    strides = np.ones(len(sizes), np.int64)
    for j in range(len(sizes) - 2, -1, -1):
        strides[j] = strides[j + 1] * sizes[j + 1]
    # every combination of classes, through a representative code of each: the
    # direction at every split node, then the walk down
    index = np.indices(sizes).reshape(len(sizes), -1)
    # a leaf's left is itself: "going left" keeps a row there
    go = np.ones((hi - lo, n_entries), bool)
    for j, (nodes, d) in enumerate(decisions):
        code = reps[j][index[j]]
        for k, node in enumerate(nodes):
            go[node - lo] = d[code, k]
    entries = np.arange(n_entries)
    node = np.full(n_entries, lo, np.int64)
    for _ in range(depth):
        node = flat.left[node] + 1 - go[node - lo, entries]
    luts = np.stack([classes[j] * strides[j] for j in range(len(features))])
    return features.astype(np.int32), luts.astype(np.int32), node


def build_leaf_tables(flat, n_codes, missing_bin, tree_start=0, tree_end=None):
    """:class:`LeafTables` of the trees of ``flat`` worth a table (see the module
    docstring); ``n_codes``: codes per feature (``max_bin``)."""
    n_trees = flat.n_trees
    tree_end = n_trees if tree_end is None else tree_end
    has_table = np.zeros(n_trees, np.uint8)
    pair_offset = np.zeros(n_trees + 1, np.int64)
    table_offset = np.zeros(n_trees + 1, np.int64)
    feats, luts, tables = [], [], []
    total = 0
    for t in range(n_trees):
        built = _tree_table(flat, t, n_codes, missing_bin) \
            if tree_start <= t < tree_end and total < MAX_TOTAL_ENTRIES else None
        total += len(built[2]) if built is not None else 0
        if built is not None:
            has_table[t] = 1
            feats.append(built[0])
            luts.append(built[1])
            tables.append(built[2])
        pair_offset[t + 1] = pair_offset[t] + (len(built[0]) if built else 0)
        table_offset[t + 1] = table_offset[t] + (len(built[2]) if built else 0)
    return LeafTables(
        has_table, pair_offset,
        np.concatenate(feats).astype(np.int32) if feats else np.zeros(0, np.int32),
        np.ascontiguousarray(np.concatenate(luts)) if luts
        else np.zeros((0, n_codes), np.int32),
        table_offset,
        np.concatenate(tables).astype(np.int32) if tables else np.zeros(0, np.int32))


@njit(**RANGE_KERNEL)
def _predict_binned_tables_range(c_lo, c_hi, codes, missing_bin, tree_start, tree_end,
                                 node_offset, tree_depth, tree_group, tree_n_cols,
                                 value_offset, tree_has_cat, left, feature, bin_threshold,
                                 default_left, is_categorical, cat_offset, cat_n_bits,
                                 cat_bitset, value, has_table, pair_offset, pair_feature, lut,
                                 table_offset, table, out):
    """:func:`predict_binned_tables` for the chunks ``c_lo .. c_hi - 1``."""
    n_rows = codes.shape[1]
    for c in range(c_lo, c_hi):
        s = c * CHUNK_ROWS
        m = min(n_rows, s + CHUNK_ROWS) - s
        nodes = np.empty(CHUNK_ROWS, dtype=np.uint32)
        index = np.empty(CHUNK_ROWS, dtype=np.int64)
        for t in range(tree_start, tree_end):
            lo = node_offset[t]
            if has_table[t]:
                for r in range(m):
                    index[r] = 0
                for j in range(pair_offset[t], pair_offset[t + 1]):
                    f = pair_feature[j]
                    for r in range(m):
                        index[r] += lut[j, codes[f, s + r]]
                t0 = table_offset[t]
                for r in range(m):
                    nodes[r] = np.uint32(table[t0 + index[r]])
            else:
                for r in range(m):
                    nodes[r] = np.uint32(lo)
                depth = tree_depth[t]
                if tree_has_cat[t] == 0 and depth <= EARLY_EXIT_DEPTH:
                    _walk_binned_numeric(codes, missing_bin, s, m, nodes, depth, left,
                                         feature, bin_threshold, default_left)
                else:
                    _walk_binned_general(codes, missing_bin, s, m, nodes, depth, left,
                                         feature, bin_threshold, default_left,
                                         is_categorical, cat_offset, cat_n_bits, cat_bitset)
            _add_leaf_values(out, s, m, nodes, t, lo, tree_group, tree_n_cols, value_offset,
                             value)


def predict_binned_tables(codes, missing_bin, tree_start, tree_end, node_offset, tree_depth,
                          tree_group, tree_n_cols, value_offset, tree_has_cat, left, feature,
                          bin_threshold, default_left, is_categorical, cat_offset, cat_n_bits,
                          cat_bitset, value, has_table, pair_offset, pair_feature, lut,
                          table_offset, table, out):
    """:func:`.predict.predict_binned` where tabulated trees are looked up."""
    run_ranges(_predict_binned_tables_range, (codes.shape[1] + CHUNK_ROWS - 1) // CHUNK_ROWS,
               codes, missing_bin, tree_start, tree_end, node_offset, tree_depth, tree_group,
               tree_n_cols, value_offset, tree_has_cat, left, feature, bin_threshold,
               default_left, is_categorical, cat_offset, cat_n_bits, cat_bitset, value,
               has_table, pair_offset, pair_feature, lut, table_offset, table, out)


def binned_margins_tables(flat, tables, codes, missing_bin, tree_start, tree_end, out):
    """:func:`.predict.binned_margins` with ``tables`` (``out`` accumulated)."""
    predict_binned_tables(codes, missing_bin, tree_start, tree_end, flat.node_offset,
                          flat.tree_depth, flat.tree_group, flat.tree_n_cols,
                          flat.value_offset, flat.tree_has_cat, flat.left, flat.feature,
                          flat.bin_threshold, flat.default_left, flat.is_categorical,
                          flat.cat_offset, flat.cat_n_bits, flat.cat_bitset, flat.value,
                          tables.has_table, tables.pair_offset, tables.pair_feature,
                          tables.lut, tables.table_offset, tables.table, out)
