"""Surrogate splits of finished trees (``missing_values="surrogate"``), found as rpart
finds them, from histograms gathered in passes over the cache.

For each split node, one pass adds the node's rows (those with the primary feature
present) into a histogram per feature, split by the side the primary sends them
(``kernels/surrogate.py``); each feature's best surrogate then comes from that
histogram alone. The histograms of all split nodes rarely fit at once: a pass takes as
many nodes as ``budget_bytes`` holds (``n_features * max_bin * 32`` bytes each), so a
tree of ``s`` split nodes costs ``ceil(s / nodes_per_pass)`` passes.

Prediction: a row whose primary value is missing follows the first surrogate (by
agreement) whose feature it has, else the majority direction (rpart's
``usesurrogate=2``); the tree's ``default_left`` becomes that majority direction.
"""
import math

import numpy as np

from ..errors import ParameterError
from ..kernels import surrogate as ks
from ..kernels.codes import code_arrays
from .nodes import raw_thresholds

#: rpart's ``maxsurrogate``.
DEFAULT_MAX_SURROGATES = 5
#: Bytes of one bin of a surrogate histogram (4 float64 lanes).
_BIN_BYTES = 32


def check_surrogate_cache(cache):
    """Refuse caches whose codes a surrogate histogram cannot index: two-byte (wide)
    columns."""
    wide = [name for name, n in zip(cache.feature_names, cache.bin_mapper.n_value_bins)
            if n >= cache.max_bin]
    if wide:
        raise ParameterError(f"cache {cache.path}: missing_values='surrogate' needs "
                             f"features of fewer than {cache.max_bin} bins; "
                             f"{wide[0]!r} has more (fold rare categories with "
                             f"--max-categories)")


def _split_nodes(trees):
    """(tree, node) of every split node, tree by tree."""
    pairs = [(t, n) for t, arrays in enumerate(trees)
             for n in np.flatnonzero(arrays["left"] >= 0)]
    return np.array(pairs, dtype=np.int64).reshape(-1, 2)


def _depth(left, right):
    depth = np.zeros(len(left), np.int64)
    for node in range(len(left)):
        if left[node] >= 0:
            depth[left[node]] = depth[right[node]] = depth[node] + 1
    return int(depth.max()) if len(depth) else 0


def find_surrogates(trees, blocks, row_weights, *, mapper, max_bin, max_surrogates,
                    budget_bytes):
    """Surrogates and majority directions of the split nodes of ``trees``.

    Parameters
    ----------
    trees : list of dict
        Finished trees' arrays (``left``, ``right``, ``feature``, ``bin_threshold``,
        ``default_left``, ``is_categorical``, ``cat_bitset``), as ``TreeGrower.tree_arrays``.
    blocks : callable
        ``blocks()`` starts one pass over the cache: an iterator of Blocks.
    row_weights : callable
        ``row_weights(block)`` -> (n_trees, n_rows) float64: each tree's weight of each
        row (0 for rows the tree was not grown on).
    mapper : BinMapper
    max_bin : int
    max_surrogates : int
        Surrogates kept per node (rpart's ``maxsurrogate``).
    budget_bytes : int
        Bytes the surrogate histograms of one pass may take.

    Returns
    -------
    list of dict, per tree: ``offset`` (n_nodes + 1,) and, per surrogate, ``feature``,
    ``bin_threshold``, ``threshold`` (raw), ``left_le``, ``is_categorical``,
    ``cat_bitset`` (n, 2 n_words), ``agreement``, ``adjusted``; and ``majority_left``
    (n_nodes,) bool.
    """
    n_features = len(mapper.n_value_bins)
    pairs = _split_nodes(trees)
    node_bytes = n_features * max_bin * _BIN_BYTES
    per_pass = max(1, int(budget_bytes // node_bytes))
    found = {}
    for lo in range(0, len(pairs), per_pass):
        batch = pairs[lo:lo + per_pass]
        hist = _gather(trees, batch, blocks, row_weights, n_features, max_bin)
        found.update(_choose(trees, batch, hist, mapper, max_surrogates))
    return [_tree_table(arrays, t, found, mapper) for t, arrays in enumerate(trees)]


def _gather(trees, batch, blocks, row_weights, n_features, max_bin):
    """One pass: the surrogate histograms of the (tree, node) pairs of ``batch``."""
    hist = np.zeros((len(batch), n_features, max_bin, 4))
    slot_of_node = [np.full(len(a["left"]), -1, np.int32) for a in trees]
    for s, (t, n) in enumerate(batch):
        slot_of_node[t][n] = s
    active = sorted({int(t) for t in batch[:, 0]})
    depth = {t: max(1, _depth(trees[t]["left"], trees[t]["right"])) for t in active}
    missing_bin = max_bin - 1
    for block in blocks():
        # bundled sparse features: the per-feature codes (a histogram per feature)
        low, wide, wide_row = code_arrays(block.codes if block.bundles is not None else
                                          block.stored_codes)
        weights = row_weights(block)
        for t in active:
            a = trees[t]
            w = np.ascontiguousarray(weights[t], dtype=np.float64)
            path_slot = np.empty((block.n_rows, depth[t]), np.int32)
            path_side = np.empty((block.n_rows, depth[t]), np.uint8)
            ks.surrogate_paths(low, wide, wide_row, a["left"], a["right"], a["feature"],
                               a["bin_threshold"], a["default_left"], a["is_categorical"],
                               _bitset(a), missing_bin, slot_of_node[t], w, path_slot,
                               path_side)
            ks.add_surrogate_rows(low, wide, wide_row, path_slot, path_side, w, hist)
    return hist


def _bitset(arrays):
    bits = arrays["cat_bitset"]
    return bits if bits.shape[1] else np.zeros((len(arrays["left"]), 1), np.uint32)


def _choose(trees, batch, hist, mapper, max_surrogates):
    """(tree, node) -> (majority_left, surrogates sorted by agreement) of the batch."""
    n_features = hist.shape[1]
    n_words = max(1, math.ceil(hist.shape[2] / 32))
    out = {}
    agreement = np.empty(n_features)
    adjusted = np.empty(n_features)
    bin_out = np.empty(n_features, np.int32)
    direction = np.empty(n_features, np.uint8)
    bits = np.empty((n_features, 2 * n_words), np.uint32)
    is_cat = np.asarray(mapper.is_categorical, np.bool_)
    n_value_bins = np.asarray(mapper.n_value_bins, np.int64)
    for s, (t, n) in enumerate(batch):
        primary = int(trees[t]["feature"][n])
        total_left = float(hist[s, primary, :, 0].sum())
        total_right = float(hist[s, primary, :, 1].sum())
        ks.best_surrogates(hist[s], n_value_bins, is_cat, primary, total_left,
                           total_right, agreement, adjusted, bin_out, direction, bits)
        # by agreement, ties to the lower feature (a stable sort)
        order = np.argsort(-agreement, kind="stable")
        order = order[agreement[order] > 0][:max_surrogates]
        out[(int(t), int(n))] = (not total_left < total_right,
                                 dict(feature=order.astype(np.int32),
                                      bin_threshold=bin_out[order].copy(),
                                      left_le=direction[order] == ks.LEFT_LE,
                                      is_categorical=is_cat[order].copy(),
                                      cat_bitset=bits[order].copy(),
                                      agreement=agreement[order].copy(),
                                      adjusted=adjusted[order].copy()))
    return out


def _tree_table(arrays, t, found, mapper):
    """One tree's surrogate arrays, in node order (CSR ``offset``)."""
    n_nodes = len(arrays["left"])
    majority_left = np.asarray(arrays["default_left"], bool).copy()
    parts = []
    counts = np.zeros(n_nodes, np.int64)
    for n in np.flatnonzero(arrays["left"] >= 0):
        majority, sur = found[(t, int(n))]
        majority_left[n] = majority
        parts.append(sur)
        counts[n] = len(sur["feature"])
    offset = np.zeros(n_nodes + 1, np.int32)
    np.cumsum(counts, out=offset[1:])
    table = {k: np.concatenate([p[k] for p in parts]) if parts else np.zeros(0)
             for k in ("feature", "bin_threshold", "left_le", "is_categorical",
                       "agreement", "adjusted")}
    table["cat_bitset"] = (np.concatenate([p["cat_bitset"] for p in parts]) if parts
                           else np.zeros((0, 2), np.uint32))
    table["feature"] = table["feature"].astype(np.int32)
    table["bin_threshold"] = np.where(table["is_categorical"].astype(bool), 0,
                                      table["bin_threshold"]).astype(np.int32)
    table["threshold"] = raw_thresholds(table["feature"], table["bin_threshold"],
                                        table["is_categorical"].astype(bool),
                                        mapper.bin_edges)
    table["offset"] = offset
    table["majority_left"] = majority_left
    return table
