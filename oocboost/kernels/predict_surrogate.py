"""Prediction through trees with surrogate splits (``model/surrogates.py``): the walk of
:mod:`.predict`'s general path, where a row whose split value is missing tries the node's
surrogates in order and takes the first one it has a value for (else the node's default
direction, the majority direction of such trees).

Flat surrogate arrays (:class:`FlatSurrogates`), ``S`` surrogates in all::

    start, end      int64   (N,)   surrogates of flat node n: start[n] .. end[n] - 1
    feature         int32   (S,)
    threshold       float64 (S,)   raw ``x <= threshold``
    bin_threshold   int32   (S,)   binned ``code <= bin_threshold``
    left_le         uint8   (S,)   1: values <= the threshold go left, 0: they go right
    is_categorical  uint8   (S,)
    cat_bitset      uint32  (S, 2W) categories going left (first W words), right (last W)

A surrogate on a categorical feature decides only for the categories of its two sets;
any other value (or a missing one) passes to the next surrogate.
"""
from typing import NamedTuple

import numpy as np
from numba import njit

from .codes import read_only
from .parallel import RANGE_KERNEL, run_ranges
from .predict_dag import add_leaf as _add_leaf
from .predict_dag import front_ends

#: Rows a task walks through every tree (a row at a time: surrogates break the
#: lockstep of :mod:`.predict`'s chunks).
CHUNK_ROWS = 64


class FlatSurrogates(NamedTuple):
    start: np.ndarray
    end: np.ndarray
    feature: np.ndarray
    threshold: np.ndarray
    bin_threshold: np.ndarray
    left_le: np.ndarray
    is_categorical: np.ndarray
    cat_bitset: np.ndarray


def flatten_surrogates(trees, node_offset, node_id):
    """:class:`FlatSurrogates` for flattened ``trees`` (None when no tree has any).

    ``node_offset`` and ``node_id`` are the :class:`~.predict.FlatTrees` arrays (flat node
    -> the node's id in its tree)."""
    if all(t.surrogates is None for t in trees):
        return None
    n_total = int(node_offset[-1])
    start = np.zeros(n_total, np.int64)
    end = np.zeros(n_total, np.int64)
    words = max((t.surrogates.n_words for t in trees if t.surrogates is not None), default=0)
    parts = []
    base = 0
    for t, tree in enumerate(trees):
        sur = tree.surrogates
        if sur is None:
            continue
        lo, hi = int(node_offset[t]), int(node_offset[t + 1])
        old = node_id[lo:hi].astype(np.int64)
        start[lo:hi] = base + sur.offset[old]
        end[lo:hi] = base + sur.offset[old + 1]
        bits = np.zeros((sur.n_surrogates, 2 * max(words, 1)), np.uint32)
        w = sur.n_words
        bits[:, :w] = sur.cat_bitset[:, :w]
        bits[:, max(words, 1):max(words, 1) + w] = sur.cat_bitset[:, w:]
        parts.append((sur, bits))
        base += sur.n_surrogates

    def cat(name, dtype):
        return np.ascontiguousarray(np.concatenate(
            [getattr(s, name) for s, _ in parts]).astype(dtype))

    return FlatSurrogates(start, end, cat("feature", np.int32), cat("threshold", np.float64),
                          cat("bin_threshold", np.int32), cat("left_le", np.uint8),
                          cat("is_categorical", np.uint8),
                          np.ascontiguousarray(np.concatenate([b for _, b in parts])))


@njit(inline="always")
def _in_set(bits, j, first_word, code):
    n_words = bits.shape[1] // 2
    if code < 0 or code >= 32 * n_words:
        return False
    word = bits[j, first_word + (code >> 5)]
    return (word >> np.uint32(code & 31)) & np.uint32(1) != 0


@njit(cache=True)
def _surrogate_raw(X, row, node, default_left, s_start, s_end, s_feature, s_threshold,
                   s_left_le, s_is_cat, s_bits):
    """Direction (True: left) of a row whose split value at ``node`` is missing."""
    n_words = s_bits.shape[1] // 2
    for j in range(s_start[node], s_end[node]):
        x = X[row, s_feature[j]]
        if x != x:
            continue
        if s_is_cat[j]:
            if not (x >= 0.0 and x < 32.0 * n_words):
                continue
            code = np.int64(x)
            if _in_set(s_bits, j, 0, code):
                return True
            if _in_set(s_bits, j, n_words, code):
                return False
            continue
        le = x <= s_threshold[j]
        return le if s_left_le[j] else not le
    return default_left[node] != 0


@njit(cache=True)
def _surrogate_binned(codes, missing_bin, row, node, default_left, s_start, s_end,
                      s_feature, s_bin, s_left_le, s_is_cat, s_bits):
    n_words = s_bits.shape[1] // 2
    for j in range(s_start[node], s_end[node]):
        code = np.int64(codes[s_feature[j], row])
        if code == missing_bin:
            continue
        if s_is_cat[j]:
            if _in_set(s_bits, j, 0, code):
                return True
            if _in_set(s_bits, j, n_words, code):
                return False
            continue
        le = code <= s_bin[j]
        return le if s_left_le[j] else not le
    return default_left[node] != 0


@njit(cache=True)
def _leaf_raw(X, row, lo, left, feature, threshold, default_left, is_categorical,
              cat_offset, cat_n_bits, cat_bitset, s_start, s_end, s_feature, s_threshold,
              s_left_le, s_is_cat, s_bits):
    """The flat leaf a raw row reaches from root ``lo``."""
    node = lo
    while left[node] != node:
        x = X[row, feature[node]]
        if x != x:
            go = _surrogate_raw(X, row, node, default_left, s_start, s_end, s_feature,
                                s_threshold, s_left_le, s_is_cat, s_bits)
        elif is_categorical[node]:
            go = False
            if x >= 0.0 and x < cat_n_bits[node]:
                code = np.int64(x)
                word = cat_bitset[cat_offset[node] + (code >> 5)]
                go = (word >> np.uint32(code & 31)) & np.uint32(1) != 0
        else:
            go = x <= threshold[node]
        node = left[node] + 1 - np.int64(go)
    return node


@njit(cache=True)
def _leaf_binned(codes, missing_bin, row, lo, left, feature, bin_threshold, default_left,
                 is_categorical, cat_offset, cat_n_bits, cat_bitset, s_start, s_end,
                 s_feature, s_bin, s_left_le, s_is_cat, s_bits):
    node = lo
    while left[node] != node:
        code = np.int64(codes[feature[node], row])
        if code == missing_bin:
            go = _surrogate_binned(codes, missing_bin, row, node, default_left, s_start,
                                   s_end, s_feature, s_bin, s_left_le, s_is_cat, s_bits)
        elif is_categorical[node]:
            go = False
            if code < cat_n_bits[node]:
                word = cat_bitset[cat_offset[node] + (code >> 5)]
                go = (word >> np.uint32(code & 31)) & np.uint32(1) != 0
        else:
            go = code <= bin_threshold[node]
        node = left[node] + 1 - np.int64(go)
    return node


@njit(**RANGE_KERNEL)
def _predict_surrogate_range(c_lo, c_hi, X, codes, binned, missing_bin, tree_start, tree_end,
                             node_offset, tree_group, tree_n_cols, value_offset, left, feature,
                             threshold, bin_threshold, default_left, is_categorical,
                             cat_offset, cat_n_bits, cat_bitset, value, s_start, s_end,
                             s_feature, s_threshold, s_bin, s_left_le, s_is_cat, s_bits,
                             leaves, out):
    """:func:`predict_surrogate` for the chunks ``c_lo .. c_hi - 1``."""
    n_rows = codes.shape[1] if binned else X.shape[0]
    for c in range(c_lo, c_hi):
        for row in range(c * CHUNK_ROWS, min(n_rows, (c + 1) * CHUNK_ROWS)):
            for t in range(tree_start, tree_end):
                if binned:
                    leaf = _leaf_binned(codes, missing_bin, row, node_offset[t], left,
                                        feature, bin_threshold, default_left,
                                        is_categorical, cat_offset, cat_n_bits, cat_bitset,
                                        s_start, s_end, s_feature, s_bin, s_left_le,
                                        s_is_cat, s_bits)
                else:
                    leaf = _leaf_raw(X, row, node_offset[t], left, feature, threshold,
                                     default_left, is_categorical, cat_offset, cat_n_bits,
                                     cat_bitset, s_start, s_end, s_feature, s_threshold,
                                     s_left_le, s_is_cat, s_bits)
                if leaves.shape[1]:
                    leaves[row, t - tree_start] = leaf
                else:
                    _add_leaf(out, row, t, leaf, node_offset, tree_group, tree_n_cols,
                              value_offset, value)


def predict_surrogate(X, codes, binned, missing_bin, tree_start, tree_end, node_offset,
                      tree_group, tree_n_cols, value_offset, left, feature, threshold,
                      bin_threshold, default_left, is_categorical, cat_offset, cat_n_bits,
                      cat_bitset, value, s_start, s_end, s_feature, s_threshold, s_bin,
                      s_left_le, s_is_cat, s_bits, leaves, out):
    """:mod:`.predict`'s margins of raw rows (``binned`` False) or bin codes, trees
    summed in order for each row, through surrogates; or, when ``leaves`` has columns,
    each tree's flat leaf. One kernel for the three (one compilation)."""
    # read-only views: one compile for arrays made in memory and read from a cache
    run_ranges(_predict_surrogate_range,
               ((codes.shape[1] if binned else X.shape[0]) + CHUNK_ROWS - 1) // CHUNK_ROWS,
               read_only(X), read_only(codes), binned, missing_bin, tree_start, tree_end,
               node_offset, tree_group, tree_n_cols, value_offset, left, feature, threshold,
               bin_threshold, default_left, is_categorical, cat_offset, cat_n_bits, cat_bitset,
               value, s_start, s_end, s_feature, s_threshold, s_bin, s_left_le, s_is_cat,
               s_bits, leaves, out)


# ------------------------------------------------------------------ Python front ends


def _run(flat, X, codes, binned, missing_bin, tree_start, tree_end, leaves, out):
    sur = flat.surrogates
    predict_surrogate(X, codes, binned, missing_bin, tree_start, tree_end,
                      flat.node_offset, flat.tree_group, flat.tree_n_cols,
                      flat.value_offset, flat.left, flat.feature, flat.threshold,
                      flat.bin_threshold, flat.default_left, flat.is_categorical,
                      flat.cat_offset, flat.cat_n_bits, flat.cat_bitset, flat.value,
                      sur.start, sur.end, sur.feature, sur.threshold, sur.bin_threshold,
                      sur.left_le, sur.is_categorical, sur.cat_bitset, leaves, out)


#: :func:`.predict.raw_margins`, ``binned_margins`` and ``raw_leaves`` through surrogates
raw_margins, binned_margins, raw_leaves = front_ends(_run)
