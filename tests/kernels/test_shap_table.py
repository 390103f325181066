"""Tree SHAP by leaf weight tables (kernels/shap_table.py): each leaf's table equals the
Shapley formula over the subsets of its path's features (the naive twin), the paths and
slots equal a walk from the root in NumPy, and the values of whole trees equal the
row-by-row recursion (kernels/shap.py, itself checked against brute-force Shapley values
in tests/model/test_contributions.py) for any thread count and any number of rows."""
import itertools
import math

import numpy as np
import pytest

from oocboost.kernels import shap as ks
from oocboost.kernels import shap_table as kt
from oocboost.utils.threads import thread_limit


def _shapley_leaf_weights(zero, pattern):
    """Naive twin: the leaf's share of a unit value to each of its s path features,
    from Shapley's formula, where a coalition S is worth prod(one[S]) * prod(zero[not S])
    (features in S follow the row, one = 1 when it agrees with the path; the others
    follow both branches by cover)."""
    s = len(zero)
    one = np.array([(pattern >> j) & 1 for j in range(s)], dtype=np.float64)
    phi = np.zeros(s)
    for i in range(s):
        rest = [j for j in range(s) if j != i]
        for size in range(s):
            weight = math.factorial(size) * math.factorial(s - size - 1) / math.factorial(s)
            for subset in itertools.combinations(rest, size):
                inside = np.prod([one[j] for j in subset])
                outside = np.prod([zero[j] for j in rest if j not in subset])
                phi[i] += weight * inside * outside * (one[i] - zero[i])
    return phi


def _random_leaves(rng, n_slots, max_depth):
    """Zero fractions of each leaf's slots (1 beyond them) and two value columns."""
    zero = np.ones((len(n_slots), max_depth))
    for leaf, s in enumerate(n_slots):
        zero[leaf, :s] = rng.uniform(0.05, 1.0, size=s)
    return zero, rng.normal(size=(len(n_slots), 2))


def _filled(fill, sizes, zero, n_slots, value):
    """``(offsets, table)`` of the leaves' tables laid end to end, filled by ``fill``."""
    offsets = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
    table = np.full((offsets[-1], value.shape[1]), np.nan)
    fill(zero, n_slots, offsets, value, table)
    return offsets, table


def test_leaf_tables_equal_the_shapley_formula():
    rng = np.random.default_rng(1)
    n_slots = np.array([1, 2, 3, 4, 5, 3], np.int64)
    max_depth = 6
    zero, value = _random_leaves(rng, n_slots, max_depth)
    zero[5, :3] = [1.0, 0.5, 0.25]          # a share of 1 (a split all rows took)
    offsets, table = _filled(kt.leaf_weight_tables, (1 << n_slots) * n_slots, zero,
                             n_slots, value)
    for leaf, s in enumerate(n_slots):
        for pattern in range(1 << s):
            expected = _shapley_leaf_weights(zero[leaf, :s], pattern)
            got = table[offsets[leaf] + pattern * s:offsets[leaf] + (pattern + 1) * s]
            np.testing.assert_allclose(got, expected[:, None] * value[leaf], rtol=1e-12,
                                       atol=1e-15)


def _shapley_leaf_interactions(zero, pattern):
    """Naive twin: a unit leaf's Shapley interaction index of each pair of its path
    features (half of it on each side, shap's layout), coalitions worth as above."""
    s = len(zero)
    one = np.array([(pattern >> j) & 1 for j in range(s)], dtype=np.float64)

    def worth(subset):
        return np.prod([one[q] if q in subset else zero[q] for q in range(s)])

    out = np.zeros((s, s))
    for i, j in itertools.combinations(range(s), 2):
        rest = [q for q in range(s) if q not in (i, j)]
        total = 0.0
        for size in range(len(rest) + 1):
            weight = (math.factorial(size) * math.factorial(s - size - 2)
                      / (2 * math.factorial(s - 1)))
            for subset in itertools.combinations(rest, size):
                S = set(subset)
                total += weight * (worth(S | {i, j}) - worth(S | {i}) - worth(S | {j})
                                   + worth(S))
        out[i, j] = out[j, i] = total
    return out


def test_leaf_interaction_tables_equal_the_shapley_interaction_index():
    rng = np.random.default_rng(4)
    n_slots = np.array([1, 2, 3, 4, 5], np.int64)
    zero, value = _random_leaves(rng, n_slots, 6)
    offsets, table = _filled(kt.leaf_interaction_tables, (1 << n_slots) * n_slots ** 2,
                             zero, n_slots, value)
    for leaf, s in enumerate(n_slots):
        for pattern in range(1 << s):
            expected = _shapley_leaf_interactions(zero[leaf, :s], pattern)
            start = offsets[leaf] + pattern * s * s
            got = table[start:start + s * s].reshape(s, s, 2)
            np.testing.assert_allclose(got, expected[:, :, None] * value[leaf],
                                       rtol=1e-12, atol=1e-15)


def _random_tree(rng, depth, n_features, categorical=False):
    """A full binary tree in node order (children after parents), features repeating on
    paths, covers that add up, thresholds near the data."""
    n_nodes = 2 ** (depth + 1) - 1
    left = np.full(n_nodes, -1, np.int32)
    right = np.full(n_nodes, -1, np.int32)
    feature = np.full(n_nodes, -1, np.int32)
    for node in range(2 ** depth - 1):
        left[node], right[node] = 2 * node + 1, 2 * node + 2
        feature[node] = rng.integers(0, n_features)
    cover = np.zeros(n_nodes)
    leaves = left < 0
    cover[leaves] = rng.uniform(1.0, 10.0, size=leaves.sum())
    for node in range(n_nodes - 1, -1, -1):
        if left[node] >= 0:
            cover[node] = cover[left[node]] + cover[right[node]]
    threshold = rng.normal(scale=0.7, size=n_nodes)
    default_left = rng.random(n_nodes) < 0.5
    is_categorical = np.zeros(n_nodes, bool)
    cat_bitset = np.zeros((n_nodes, 1), np.uint32)
    if categorical:
        # feature 0 holds category codes 0..5; its splits test a random set
        cat_nodes = (feature == 0)
        is_categorical[cat_nodes] = True
        cat_bitset[cat_nodes, 0] = rng.integers(0, 64, size=cat_nodes.sum())
    value = rng.normal(size=(n_nodes, 2))
    return (left, right, feature, threshold, default_left, is_categorical, cat_bitset,
            value, cover)


def test_paths_and_slots_equal_a_walk_from_the_root():
    rng = np.random.default_rng(2)
    left, right, feature, *_, cover = _random_tree(rng, 5, 3)
    leaf_node, node_slot, slot_feature, slot_zero, n_slots = kt.leaf_paths(
        left, right, feature, cover, 5)
    np.testing.assert_array_equal(leaf_node, np.flatnonzero(left < 0))
    parent = {int(c): p for p in range(len(left)) if left[p] >= 0
              for c in (left[p], right[p])}
    for k, leaf in enumerate(leaf_node):
        path = [int(leaf)]
        while path[-1] in parent:
            path.append(parent[path[-1]])
        path = path[::-1]                       # root .. leaf
        slots, zero = [], {}
        for split, child in zip(path[:-1], path[1:]):
            f = int(feature[split])
            if f not in slots:
                slots.append(f)
            zero[f] = zero.get(f, 1.0) * cover[child] / cover[split]
            assert node_slot[split] == slots.index(f)
        assert n_slots[k] == len(slots)
        np.testing.assert_array_equal(slot_feature[k, :len(slots)], slots)
        np.testing.assert_allclose(slot_zero[k, :len(slots)], [zero[f] for f in slots],
                                   rtol=1e-14)


def _by_tables(X, tree, out_cols, scale, n_outputs):
    left, right, feature, threshold, default_left, is_categorical, cat_bitset, value, \
        cover = tree
    depth = int(np.log2(len(left) + 1)) - 1
    leaf_node, node_slot, slot_feature, slot_zero, n_slots = kt.leaf_paths(
        left, right, feature, cover, depth)
    offsets, table = _filled(kt.leaf_weight_tables, (1 << n_slots) * n_slots, slot_zero,
                             n_slots, np.ascontiguousarray(value[leaf_node] * scale))
    out = np.zeros((len(X), n_outputs, X.shape[1] + 1))
    kt.table_shap(X, left, right, feature, threshold, default_left, is_categorical,
                  cat_bitset, node_slot, leaf_node, slot_feature, n_slots, offsets, table,
                  out_cols, out)
    return out


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("n_rows", [1, kt.CHUNK_ROWS, 3 * kt.CHUNK_ROWS + 17])
@pytest.mark.parametrize("categorical", [False, True])
def test_tree_values_equal_the_recursion(threads, n_rows, categorical):
    rng = np.random.default_rng(n_rows)
    n_features = 4
    X = rng.normal(size=(n_rows, n_features))
    X[rng.random(X.shape) < 0.15] = np.nan
    if categorical:
        X[:, 0] = rng.integers(0, 8, size=n_rows)      # codes 6, 7: beyond the bitset
    out_cols = np.array([2, 0], np.int64)                # value columns -> outputs
    scale = np.array([0.5, 2.0])
    for depth in (1, 3, 6):
        tree = _random_tree(rng, depth, n_features, categorical)
        with thread_limit(threads):
            got = _by_tables(X, tree, out_cols, scale, 3)
        expected = np.zeros_like(got)
        ks.tree_shap(X, *tree[:8], tree[8], depth, out_cols, scale, expected)
        np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("categorical", [False, True])
def test_tree_interactions_equal_the_recursion(threads, categorical):
    rng = np.random.default_rng(7)
    n_rows, n_features = kt.CHUNK_ROWS + 9, 4
    X = rng.normal(size=(n_rows, n_features))
    X[rng.random(X.shape) < 0.15] = np.nan
    if categorical:
        X[:, 0] = rng.integers(0, 8, size=n_rows)
    out_cols = np.array([1, 0], np.int64)
    scale = np.array([0.5, 2.0])
    for depth in (1, 3, 5):
        tree = _random_tree(rng, depth, n_features, categorical)
        left, right, feature, threshold, default_left, is_categorical, cat_bitset, value, \
            cover = tree
        leaf_node, node_slot, slot_feature, slot_zero, n_slots = kt.leaf_paths(
            left, right, feature, cover, depth)
        values = np.ascontiguousarray(value[leaf_node] * scale)
        tables = [*_filled(kt.leaf_weight_tables, (1 << n_slots) * n_slots, slot_zero,
                           n_slots, values),
                  *_filled(kt.leaf_interaction_tables, (1 << n_slots) * n_slots ** 2,
                           slot_zero, n_slots, values)]
        got = np.zeros((n_rows, 2, n_features + 1, n_features + 1))
        with thread_limit(threads):
            kt.table_shap_interactions(X, left, right, feature, threshold, default_left,
                                       is_categorical, cat_bitset,
                                       (node_slot, leaf_node, slot_feature, n_slots),
                                       *tables, out_cols, got)
        expected = np.zeros_like(got)
        used = np.unique(feature[left >= 0]).astype(np.int64)
        ks.tree_shap_interactions(X, *tree[:8], cover, depth, out_cols, scale, used,
                                  expected)
        np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-12)
