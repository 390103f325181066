"""Prediction through trees with oblique splits (``model/oblique.py``): the row-at-a-time
walk of :mod:`.predict_dag` over the flat sibling order of :mod:`.predict`, where an
oblique node sends a row left when ``sum_j w_j x_j <= threshold`` (raw values, or the
bins' middle values ``rep`` for cache codes) and a row missing one of them by its
default direction.

Flat oblique arrays (:class:`FlatOblique`): ``start``, ``end`` (N,) int64 per flat node,
``feature`` int32 and ``weight`` float64 of all terms.
"""
from typing import NamedTuple

import numpy as np
from numba import njit

from .codes import read_only
from .parallel import RANGE_KERNEL, run_ranges
from .predict_dag import add_leaf, front_ends

CHUNK_ROWS = 64


class FlatOblique(NamedTuple):
    start: np.ndarray
    end: np.ndarray
    feature: np.ndarray
    weight: np.ndarray


def flatten_oblique(trees, node_offset, node_id):
    """:class:`FlatOblique` of flattened trees, or None when no tree has oblique nodes."""
    if all(getattr(t, "oblique", None) is None for t in trees):
        return None
    n_total = int(node_offset[-1])
    start = np.zeros(n_total, np.int64)
    end = np.zeros(n_total, np.int64)
    feats, weights = [], []
    base = 0
    for t, tree in enumerate(trees):
        ob = tree.oblique
        if ob is None:
            continue
        lo, hi = int(node_offset[t]), int(node_offset[t + 1])
        old = node_id[lo:hi].astype(np.int64)
        start[lo:hi] = base + ob.offset[old]
        end[lo:hi] = base + ob.offset[old + 1]
        feats.append(ob.feature)
        weights.append(ob.weight)
        base += len(ob.feature)
    return FlatOblique(start, end, np.concatenate(feats).astype(np.int32),
                       np.concatenate(weights).astype(np.float64))


@njit(cache=True)
def _leaf(X, codes, rep, binned, missing_bin, row, lo, left, feature, threshold,
          bin_threshold, default_left, is_categorical, cat_offset, cat_n_bits, cat_bitset,
          o_start, o_end, o_feature, o_weight):
    node = lo
    while left[node] != node:
        if o_end[node] > o_start[node]:
            z = 0.0
            for j in range(o_start[node], o_end[node]):
                f = o_feature[j]
                x = rep[f, codes[f, row]] if binned else X[row, f]
                z += o_weight[j] * x
            go = default_left[node] != 0 if z != z else z <= threshold[node]
        else:
            if binned:
                code = np.int64(codes[feature[node], row])
                missing = code == missing_bin
            else:
                x = X[row, feature[node]]
                missing = x != x
                code = np.int64(x) if is_categorical[node] and x >= 0.0 and \
                    x < cat_n_bits[node] else np.int64(-1)
            if missing:
                go = default_left[node] != 0
            elif is_categorical[node]:
                go = code >= 0 and code < cat_n_bits[node] and (
                    cat_bitset[cat_offset[node] + (code >> 5)] >> np.uint32(code & 31)
                ) & np.uint32(1) != 0
            elif binned:
                go = code <= bin_threshold[node]
            else:
                go = X[row, feature[node]] <= threshold[node]
        node = left[node] + 1 - np.int64(go)
    return node


@njit(**RANGE_KERNEL)
def _predict_oblique_range(c_lo, c_hi, X, codes, rep, binned, missing_bin, tree_start,
                           tree_end, node_offset, tree_group, tree_n_cols, value_offset, left,
                           feature, threshold, bin_threshold, default_left, is_categorical,
                           cat_offset, cat_n_bits, cat_bitset, value, o_start, o_end,
                           o_feature, o_weight, leaves, out):
    """:func:`predict_oblique` for the chunks ``c_lo .. c_hi - 1``."""
    n_rows = codes.shape[1] if binned else X.shape[0]
    for c in range(c_lo, c_hi):
        for row in range(c * CHUNK_ROWS, min(n_rows, (c + 1) * CHUNK_ROWS)):
            for t in range(tree_start, tree_end):
                leaf = _leaf(X, codes, rep, binned, missing_bin, row, node_offset[t], left,
                             feature, threshold, bin_threshold, default_left,
                             is_categorical, cat_offset, cat_n_bits, cat_bitset, o_start,
                             o_end, o_feature, o_weight)
                if leaves.shape[1]:
                    leaves[row, t - tree_start] = leaf
                else:
                    add_leaf(out, row, t, leaf, node_offset, tree_group, tree_n_cols,
                             value_offset, value)


def predict_oblique(X, codes, rep, binned, missing_bin, tree_start, tree_end, node_offset,
                    tree_group, tree_n_cols, value_offset, left, feature, threshold,
                    bin_threshold, default_left, is_categorical, cat_offset, cat_n_bits,
                    cat_bitset, value, o_start, o_end, o_feature, o_weight, leaves, out):
    """Margins (``out`` accumulated, trees in order per row), or, when ``leaves`` has
    columns, each tree's flat leaf."""
    # read-only views: one compile for arrays made in memory and read from a cache
    run_ranges(_predict_oblique_range,
               ((codes.shape[1] if binned else X.shape[0]) + CHUNK_ROWS - 1) // CHUNK_ROWS,
               read_only(X), read_only(codes), rep, binned, missing_bin, tree_start, tree_end,
               node_offset, tree_group, tree_n_cols, value_offset, left, feature, threshold,
               bin_threshold, default_left, is_categorical, cat_offset, cat_n_bits, cat_bitset,
               value, o_start, o_end, o_feature, o_weight, leaves, out)


def _run(flat, X, codes, rep, binned, missing_bin, tree_start, tree_end, leaves, out):
    ob = flat.oblique
    predict_oblique(X, codes, rep, binned, missing_bin, tree_start, tree_end,
                    flat.node_offset, flat.tree_group, flat.tree_n_cols, flat.value_offset,
                    flat.left, flat.feature, flat.threshold, flat.bin_threshold,
                    flat.default_left, flat.is_categorical, flat.cat_offset, flat.cat_n_bits,
                    flat.cat_bitset, flat.value, ob.start, ob.end, ob.feature, ob.weight,
                    leaves, out)


#: raw values need no bin values (cache codes do: :func:`binned_margins`)
_NO_REP = np.zeros((0, 0))


def _run_raw(flat, X, codes, binned, missing_bin, tree_start, tree_end, leaves, out):
    _run(flat, X, codes, _NO_REP, binned, missing_bin, tree_start, tree_end, leaves, out)


raw_margins, _, raw_leaves = front_ends(_run_raw)


def binned_margins(flat, codes, missing_bin, rep, tree_start, tree_end, out):
    """Margins of cache codes, reading each bin as ``rep[f, code]``."""
    _run(flat, np.zeros((0, 0)), codes, rep, True, missing_bin, tree_start, tree_end,
         np.zeros((0, 0), np.int64), out)
