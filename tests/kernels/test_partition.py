"""Partition kernel vs naive traversal; counter-based sampling is block-size invariant."""
import numpy as np
import pytest

from oocboost.kernels.partition import (
    ROUTE_PASS_THROUGH,
    add_node_values,
    pack_routes,
    partition_select_rows,
    route_to_leaves,
)
from oocboost.kernels.sampling import gather_rows, poisson1_per_row, uniform_per_row


def naive_partition(codes, node_of_row, left, right, feature, bin_thr, default_left, is_cat,
                    bitset, missing_bin, slot_of_node, pass_through=None):
    """One level down; on through nodes marked ``pass_through`` (a multiway chain)."""
    node_of_row = node_of_row.copy()
    slots = np.empty(node_of_row.shape, np.int32)
    for t in range(node_of_row.shape[0]):
        for i in range(node_of_row.shape[1]):
            n = node_of_row[t, i]
            moves = True
            while moves and left[t, n] >= 0:
                c = int(codes[feature[t, n], i])
                if c == missing_bin:
                    go_left = bool(default_left[t, n])
                elif is_cat[t, n]:
                    go_left = bool((int(bitset[t, n, c // 32]) >> (c % 32)) & 1)
                else:
                    go_left = c <= bin_thr[t, n]
                n = left[t, n] if go_left else right[t, n]
                node_of_row[t, i] = n
                moves = pass_through is not None and bool(pass_through[t, n])
            slots[t, i] = slot_of_node[t, n]
    return node_of_row, slots


@pytest.mark.parametrize("node_dtype", [np.int32, np.uint8])
@pytest.mark.parametrize("n_chunks", [1, 3])
@pytest.mark.parametrize("count_stat", [-1, 1, "draws"])
@pytest.mark.parametrize("seed", range(3))
def test_select_matches_naive(seed, count_stat, n_chunks, node_dtype):
    """Rows move like a naive traversal; each chunk lists, ascending, the rows whose new
    node has a slot (and, with ``count_stat`` or draws, a nonzero count). Tree 1 has a
    categorical
    split, tree 0 none (the numeric-only path)."""
    rng = np.random.default_rng(seed)
    n_trees, cap, n_rows, n_features, max_bin = 2, 7, 500, 3, 40
    codes = rng.integers(0, max_bin, size=(n_features, n_rows)).astype(np.uint8)
    left = np.full((n_trees, cap), -1, np.int32)
    right = np.full((n_trees, cap), -1, np.int32)
    left[:, 0], right[:, 0] = 1, 2
    left[:, 1], right[:, 1] = 3, 4
    feature = rng.integers(0, n_features, size=(n_trees, cap)).astype(np.int32)
    bin_thr = rng.integers(0, max_bin - 1, size=(n_trees, cap)).astype(np.int32)
    default_left = rng.integers(0, 2, size=(n_trees, cap)).astype(np.uint8)
    is_cat = np.zeros((n_trees, cap), np.uint8)
    is_cat[1, 0] = 1
    bitset = rng.integers(0, 2**32, size=(n_trees, cap, 2), dtype=np.uint64).astype(np.uint32)
    slot_of_node = rng.integers(-1, 4, size=(n_trees, cap)).astype(np.int32)
    node_of_row = rng.integers(0, 3, size=(n_trees, n_rows)).astype(node_dtype)
    stats = rng.integers(0, 2, size=(n_trees, n_rows, 2)).astype(np.float32)
    expect_nodes, expect_slots = naive_partition(codes, node_of_row, left, right, feature,
                                                 bin_thr, default_left, is_cat, bitset,
                                                 max_bin - 1, slot_of_node)
    chunk_start = np.array([0, 170, 333][:n_chunks], np.int64)
    rows = np.empty((n_trees, n_rows), np.int32)
    slots = np.empty((n_trees, n_rows), np.int32)
    chunk_count = np.empty((n_trees, n_chunks), np.int64)
    draws = rng.integers(0, 3, size=(n_trees, n_rows)).astype(np.uint8)
    if count_stat == "draws":                                   # a forest's stored draws
        row_counts = draws
    elif count_stat >= 0:                                       # strided, like boosting's
        row_counts = stats[:, :, count_stat]
    else:
        row_counts = np.zeros((n_trees, 0), np.uint8)
    route = pack_routes(left, right, feature, bin_thr, default_left, is_cat)
    partition_select_rows(codes, node_of_row, route, bitset, max_bin - 1, slot_of_node,
                          row_counts, chunk_start, rows, slots, chunk_count)
    assert node_of_row.dtype == node_dtype
    np.testing.assert_array_equal(node_of_row, expect_nodes)
    bounds = list(chunk_start) + [n_rows]
    for t in range(n_trees):
        for c in range(n_chunks):
            lo, hi = bounds[c], bounds[c + 1]
            keep = expect_slots[t, lo:hi] >= 0
            if count_stat == "draws":
                keep &= draws[t, lo:hi] != 0
            elif count_stat >= 0:
                keep &= stats[t, lo:hi, count_stat] != 0
            want = lo + np.flatnonzero(keep)
            k = int(chunk_count[t, c])
            np.testing.assert_array_equal(rows[t, lo:lo + k], want)
            np.testing.assert_array_equal(slots[t, lo:lo + k], expect_slots[t, want])


@pytest.mark.parametrize("seed", range(3))
def test_rows_pass_through_a_multiway_chain_in_one_sweep(seed):
    """Tree 1's root was just split into a chain (nodes 2 and 4 pass-through, made split
    in the same step): a row at the root ends at one of the chain's leaves 1, 3, 5, 6.
    Tree 0 has no chain (rows move one level)."""
    rng = np.random.default_rng(seed)
    n_trees, cap, n_rows, max_bin = 2, 7, 400, 8
    codes = rng.integers(0, max_bin, size=(2, n_rows)).astype(np.uint8)
    left = np.full((n_trees, cap), -1, np.int32)
    right = np.full((n_trees, cap), -1, np.int32)
    for t, chain in ((0, (0,)), (1, (0, 2, 4))):
        for node in chain:
            left[t, node], right[t, node] = node + 1, node + 2
    feature = np.zeros((n_trees, cap), np.int32)
    bin_thr = np.full((n_trees, cap), 3, np.int32)
    default_left = np.zeros((n_trees, cap), np.uint8)
    is_cat = np.zeros((n_trees, cap), np.uint8)
    is_cat[1] = 1
    bitset = np.zeros((n_trees, cap, 1), np.uint32)
    bitset[1, [0, 2, 4], 0] = [1 << 2, 1 << 0, (1 << 5) | (1 << 6)]
    pass_through = np.zeros((n_trees, cap), bool)
    pass_through[1, [2, 4]] = True
    slot_of_node = np.arange(n_trees * cap, dtype=np.int32).reshape(n_trees, cap)
    node_of_row = np.zeros((n_trees, n_rows), np.int32)
    expect_nodes, expect_slots = naive_partition(codes, node_of_row, left, right, feature,
                                                 bin_thr, default_left, is_cat, bitset,
                                                 max_bin - 1, slot_of_node, pass_through)
    route = pack_routes(left, right, feature, bin_thr, default_left, is_cat)
    route[pass_through, 3] |= ROUTE_PASS_THROUGH
    rows = np.empty((n_trees, n_rows), np.int32)
    slots = np.empty((n_trees, n_rows), np.int32)
    chunk_count = np.empty((n_trees, 2), np.int64)
    partition_select_rows(codes, node_of_row, route, bitset, max_bin - 1, slot_of_node,
                          np.zeros((n_trees, 0), np.uint8), np.array([0, 150], np.int64),
                          rows, slots, chunk_count)
    np.testing.assert_array_equal(node_of_row, expect_nodes)
    assert set(np.unique(node_of_row[1])) == {1, 3, 5, 6}
    np.testing.assert_array_equal(node_of_row[1][codes[0] == 2], 1)
    np.testing.assert_array_equal(node_of_row[1][codes[0] == 7], 6)   # missing: right
    np.testing.assert_array_equal(slots[:, :chunk_count[0, 0]], expect_slots[:, :150])
    # the trees' own sweep to the leaves agrees
    again = np.zeros_like(node_of_row)
    route_to_leaves(codes, again, route, bitset, max_bin - 1)
    np.testing.assert_array_equal(again, expect_nodes)


def test_select_with_no_slots_only_moves_rows():
    """``apply_pending``'s use: every slot -1 lists nothing and still moves every row."""
    codes = np.array([[1, 9, 255, 4]], np.uint8)
    left = np.array([[1, -1, -1]], np.int32)
    right = np.array([[2, -1, -1]], np.int32)
    node_of_row = np.zeros((1, 4), np.uint8)
    chunk_count = np.empty((1, 1), np.int64)
    route = pack_routes(left, right, np.zeros((1, 3), np.int32),
                        np.full((1, 3), 4, np.int32), np.ones((1, 3), np.uint8),
                        np.zeros((1, 3), np.uint8))
    partition_select_rows(codes, node_of_row, route, np.zeros((1, 3, 8), np.uint32), 255,
                          np.full((1, 3), -1, np.int32), np.zeros((1, 0), np.uint8),
                          np.zeros(1, np.int64), np.empty((1, 4), np.int32),
                          np.empty((1, 4), np.int32), chunk_count)
    np.testing.assert_array_equal(node_of_row, [[1, 2, 1, 1]])   # 255 is missing: left
    assert chunk_count[0, 0] == 0


def test_add_node_values():
    nodes = np.array([0, 2, 2, 1], np.int32)
    out = np.ones(4)
    add_node_values(nodes, np.array([10.0, 20.0, 30.0]), 0.5, out)
    np.testing.assert_array_equal(out, [6.0, 16.0, 16.0, 11.0])


@pytest.mark.parametrize("block_rows", [1, 7, 1000])
def test_sampling_depends_only_on_global_row(block_rows):
    whole_u = np.empty(1000)
    uniform_per_row(3, 9, 0, whole_u)
    whole_p = np.empty(1000, np.float32)
    poisson1_per_row(3, 9, 0, whole_p)
    for start in range(0, 1000, block_rows):
        n = min(block_rows, 1000 - start)
        u = np.empty(n)
        uniform_per_row(3, 9, start, u)
        p = np.empty(n, np.float32)
        poisson1_per_row(3, 9, start, p)
        np.testing.assert_array_equal(u, whole_u[start:start + n])
        np.testing.assert_array_equal(p, whole_p[start:start + n])


def test_poisson1_moments_and_streams_differ():
    p = np.empty(200_000, np.float32)
    poisson1_per_row(0, 0, 0, p)
    assert abs(p.mean() - 1.0) < 0.01 and abs(p.var() - 1.0) < 0.02
    assert abs((p == 0).mean() - np.exp(-1)) < 0.005
    q = np.empty(200_000, np.float32)
    poisson1_per_row(0, 1, 0, q)
    assert np.corrcoef(p, q)[0, 1] < 0.01


def test_routes_need_consecutive_children():
    """A route keeps the left child only: a right child that is not left + 1 is refused."""
    left = np.array([[1, -1, -1]], np.int32)
    with pytest.raises(ValueError, match="left \\+ 1"):
        pack_routes(left, np.array([[3, -1, -1]]), np.zeros((1, 3)), np.zeros((1, 3)),
                    np.zeros((1, 3)), np.zeros((1, 3)))
    route = pack_routes(left, np.array([[2, -1, -1]]), np.array([[5, 0, 0]]),
                        np.array([[9, 0, 0]]), np.array([[1, 0, 0]]), np.array([[1, 0, 1]]))
    assert route.dtype == np.int32
    # the leaf flagged categorical keeps its flag; only split nodes are read
    np.testing.assert_array_equal(route[0], [[1, 5, 9, 3], [-1, 0, 0, 0], [-1, 0, 0, 2]])


def random_tree(rng, n_features, max_bin, depth, n_trees):
    """Full trees of ``depth`` levels (children of node n at 2n+1, 2n+2), a random
    numeric or categorical split at every internal node."""
    n_nodes = 2 ** (depth + 1) - 1
    internal = np.arange(n_nodes) < 2 ** depth - 1
    shape = (n_trees, n_nodes)
    left = np.where(internal, 2 * np.arange(n_nodes) + 1, -1) * np.ones(shape, np.int64)
    right = np.where(internal, left + 1, -1)
    feature = rng.integers(0, n_features, shape)
    bin_thr = rng.integers(0, max_bin - 2, shape)
    default_left = rng.random(shape) < 0.5
    is_cat = rng.random(shape) < 0.3
    bitset = rng.integers(0, 2 ** 32, (n_trees, n_nodes, (max_bin + 31) // 32),
                          dtype=np.uint64).astype(np.uint32)
    return left, right, feature, bin_thr, default_left, is_cat, bitset


@pytest.mark.parametrize("depth", [0, 1, 5])
def test_route_to_leaves_equals_level_by_level_partitions(depth):
    rng = np.random.default_rng(depth)
    n_features, max_bin, n_rows, n_trees = 5, 40, 3000, 2
    codes = rng.integers(0, max_bin, (n_features, n_rows)).astype(np.uint8)
    parts = random_tree(rng, n_features, max_bin, depth, n_trees)
    left, right, feature, bin_thr, default_left, is_cat, bitset = parts
    route = pack_routes(left, right, feature, bin_thr, default_left, is_cat)
    node = np.zeros((n_trees, n_rows), np.int32)
    route_to_leaves(codes, node, route, bitset, max_bin - 1)
    expected = np.zeros((n_trees, n_rows), np.int32)
    no_slots = np.full(left.shape, -1, np.int32)
    for _ in range(depth):
        expected, _ = naive_partition(codes, expected, left, right, feature, bin_thr,
                                      default_left, is_cat, bitset, max_bin - 1, no_slots)
    np.testing.assert_array_equal(node, expected)
    assert (left[np.arange(n_trees)[:, None], node] == -1).all()


def test_gather_rows_copies_the_kept_rows_in_order():
    rng = np.random.default_rng(0)
    codes = rng.integers(0, 65535, (3, 500)).astype(np.uint16)
    stats = rng.normal(size=(2, 500, 2)).astype(np.float32)
    index = np.flatnonzero(rng.random(500) < 0.4)
    out_codes = np.zeros((3, 700), np.uint16)
    out_stats = np.zeros((2, 700, 2), np.float32)
    gather_rows(codes, stats, index, 100, out_codes, out_stats)
    end = 100 + len(index)
    np.testing.assert_array_equal(out_codes[:, 100:end], codes[:, index])
    np.testing.assert_array_equal(out_stats[:, 100:end], stats[:, index])
    assert not out_codes[:, :100].any() and not out_codes[:, end:].any()
