"""The grower's collaborators on their own, each against plain numpy: the partitioner
moves and lists rows, the histogram builder sums them into slots and subtracts, the
feature sampler masks features, the split finder keeps what the policy accepts."""
import numba
import numpy as np
import pytest

from oocboost.engine.feature_sampling import FeatureSampler
from oocboost.engine.histograms import HistogramBuilder
from oocboost.engine.nodes import GrowerTelemetry, GrowthParams, NodeArrays
from oocboost.engine.partitioner import MIN_CHUNK_ROWS, Partitioner, chunk_starts
from oocboost.engine.policies import GradientPolicy
from oocboost.engine.split_finder import SplitFinder
from oocboost.kernels.partition import ROUTE_FLAGS, route_flags

MAX_BIN = 16
MISSING = MAX_BIN - 1


def _one_split_nodes(feature, bin_, default_left):
    """One tree whose root splits ``codes[feature] <= bin_`` (children 1 and 2)."""
    nodes = NodeArrays(1, 3, 1, 1, 2)
    nodes.n_nodes[:] = 3
    nodes.left[0, 0], nodes.right[0, 0] = 1, 2
    nodes.route[0, 0, 0], nodes.route[0, 0, 1], nodes.route[0, 0, 2] = 1, feature, bin_
    nodes.route[0, 0, ROUTE_FLAGS] = route_flags(np.array([default_left]),
                                                 np.array([False]))[0]
    return nodes


@pytest.mark.parametrize("n_rows", [7, MIN_CHUNK_ROWS * 3 + 5])
@pytest.mark.parametrize("default_left", [False, True])
def test_partitioner_moves_rows_and_lists_those_of_nodes_with_slots(n_rows, default_left):
    rng = np.random.default_rng(n_rows)
    codes = rng.integers(0, MAX_BIN, size=(2, n_rows)).astype(np.uint8)
    nodes = _one_split_nodes(feature=1, bin_=6, default_left=default_left)
    slot_of_node = np.array([[-1, 4, -1]], np.int32)   # only the left child is built
    counts = rng.integers(0, 2, size=(1, n_rows)).astype(np.uint8)
    node_of_row = np.zeros((1, n_rows), np.int32)
    part = Partitioner(1, MISSING, GrowerTelemetry())
    rows, slots, chunk_start, chunk_count = part.partition(codes, node_of_row, nodes,
                                                           slot_of_node, counts)
    c = codes[1]
    left = np.where(c == MISSING, default_left, c <= 6)
    np.testing.assert_array_equal(node_of_row[0], np.where(left, 1, 2))
    listed = np.concatenate([rows[0, s:s + k] for s, k in zip(chunk_start, chunk_count[0])])
    np.testing.assert_array_equal(listed, np.flatnonzero(left & (counts[0] > 0)))
    assert set(np.concatenate([slots[0, s:s + k] for s, k in
                               zip(chunk_start, chunk_count[0])]).tolist()) <= {4}
    assert part.telemetry.partition_s > 0
    again = np.zeros((1, n_rows), np.int32)
    part.to_leaves(codes, again, nodes)
    np.testing.assert_array_equal(again, node_of_row)


def test_chunk_starts_cover_the_block():
    for n_rows in (0, 1, MIN_CHUNK_ROWS, 10 * MIN_CHUNK_ROWS + 3):
        starts = chunk_starts(n_rows)
        assert starts[0] == 0 and np.all(np.diff(starts) >= 0)
        assert len(starts) <= max(1, 4 * numba.get_num_threads())


def _builder(max_slots=None, reuse=None):
    return HistogramBuilder(shape=(2, MAX_BIN, 2), dtype=np.float64, max_slots=max_slots,
                            reuse=reuse, column_of=None, per_node_columns=0, bundles=None,
                            n_value_bins=np.full(2, MISSING, np.int32), n_stats=2,
                            use_records=False, telemetry=GrowerTelemetry())


def test_histogram_builder_sums_listed_rows_and_subtracts_siblings():
    rng = np.random.default_rng(1)
    n_rows = 500
    codes = rng.integers(0, MAX_BIN, size=(2, n_rows)).astype(np.uint8)
    stats = rng.normal(size=(1, n_rows, 2)).astype(np.float32)
    b = _builder()
    parent, small = b.take(2, zero=True)
    b.zero_taken()
    b.add_roots(codes, stats, np.array([parent], np.int32))
    picked = np.flatnonzero(codes[0] < 5).astype(np.int32)
    rows = np.zeros((1, n_rows), np.int32)
    slots = np.zeros((1, n_rows), np.int32)
    rows[0, :len(picked)] = picked
    slots[0, :len(picked)] = small
    b.add_rows(codes, stats, rows, slots, np.array([0], np.int64),
               np.array([[len(picked)]], np.int64))
    expected = np.zeros((2, MAX_BIN, 2))
    for f in range(2):
        for s in range(2):
            np.add.at(expected[f, :, s], codes[f], stats[0, :, s].astype(np.float64))
    np.testing.assert_allclose(b.hist[parent][..., :2], expected, rtol=1e-12)
    sibling = b.take(1, zero=False)[0]
    b.subtract([np.array([[parent, small, sibling]])])
    rest = np.setdiff1d(np.arange(n_rows), picked)
    want = np.zeros((2, MAX_BIN, 2))
    for f in range(2):
        for s in range(2):
            np.add.at(want[f, :, s], codes[f, rest], stats[0, rest, s].astype(np.float64))
    np.testing.assert_allclose(b.hist[sibling][..., :2], want, atol=1e-9)
    np.testing.assert_allclose(b.node_sums(np.array([sibling], np.int32))[0],
                               stats[0, rest].astype(np.float64).sum(axis=0), atol=1e-9)
    assert b.take(1, zero=True)[0] == parent   # the parent's slot was freed


def test_histogram_pool_grows_under_its_cap_and_reuses_a_fitting_pool():
    b = _builder(max_slots=5)
    b.take(5, zero=True)
    assert b.n_slots == 5
    b.hist[:] = 1.0
    again = _builder(max_slots=5, reuse=b.hist)
    assert again.hist is b.hist
    slot = again.take(1, zero=True)
    again.zero_taken()     # a reused slot is not known to be zero
    assert not again.hist[slot].any()
    assert _builder(max_slots=3, reuse=b.hist).hist is not b.hist   # over the cap


def test_feature_sampler_masks():
    rng = np.random.default_rng(0)
    trees, nodes, depths = np.zeros(6, int), np.arange(6), np.zeros(6, int)
    every = FeatureSampler(GrowthParams(), 10, 1, rng)
    assert every.mask(trees, nodes, depths).all()
    per_node = FeatureSampler(GrowthParams(features_per_node=3), 10, 1, rng)
    assert (per_node.mask(trees, nodes, depths).sum(axis=1) == 3).all()
    weights = np.zeros(10)
    weights[[2, 5, 7]] = 1.0
    weighted = FeatureSampler(GrowthParams(colsample_bytree=0.5, feature_weights=weights),
                              10, 1, rng)
    assert set(weighted.tree_features[0].tolist()) <= {2, 5, 7}
    sets = (frozenset({0, 1}), frozenset({2, 3}))
    inter = FeatureSampler(GrowthParams(interaction_constraints=sets), 4, 1, rng)
    inter.on_split(np.array([0]), np.array([0]), np.array([2]), np.array([1]),
                   np.array([2]))
    mask = inter.mask(np.array([0, 0]), np.array([1, 2]), np.array([1, 1]))
    np.testing.assert_array_equal(mask, [[False, False, True, True]] * 2)


def test_split_finder_keeps_only_accepted_splits():
    rng = np.random.default_rng(3)
    n_rows = 400
    codes = rng.integers(0, MISSING, size=(2, n_rows)).astype(np.uint8)
    g = np.where(codes[0] < 7, -1.0, 1.0).astype(np.float32)    # feature 0 splits at 6
    stats = np.stack([g, np.ones(n_rows, np.float32)], axis=1)[None]
    b = _builder()
    slot = b.take(1, zero=True)
    b.zero_taken()
    b.add_roots(codes, stats, np.array([slot[0]], np.int32))
    policy = GradientPolicy(reg_lambda=1.0, reg_alpha=0.0, max_delta_step=0.0,
                            min_child_weight=1.0, max_cat_to_onehot=4, gamma=0.0,
                            n_value_bins=np.full(2, MISSING, np.int32),
                            is_categorical=np.zeros(2, bool), missing_bin=MISSING)
    finder = SplitFinder(policy, FeatureSampler(GrowthParams(), 2, 1, rng), 0)
    slots = slot.astype(np.int32)
    sums = b.node_sums(slots)
    found, accepted = finder.find(b.hist, b.slot_columns, np.zeros(1, np.int64),
                                  np.zeros(1, np.int64), slots, sums, np.zeros(1, int))
    assert accepted.tolist() == [0]
    assert found["feature"].tolist() == [0] and found["bin"].tolist() == [6]
    np.testing.assert_allclose(found["left_sums"][0], [-(codes[0] < 7).sum(),
                                                       (codes[0] < 7).sum()])
    strict = GradientPolicy(reg_lambda=1.0, reg_alpha=0.0, max_delta_step=0.0,
                            min_child_weight=1.0, max_cat_to_onehot=4, gamma=1e9,
                            n_value_bins=np.full(2, MISSING, np.int32),
                            is_categorical=np.zeros(2, bool), missing_bin=MISSING)
    found, accepted = SplitFinder(strict, finder.sampler, 0).find(
        b.hist, b.slot_columns, np.zeros(1, np.int64), np.zeros(1, np.int64), slots, sums,
        np.zeros(1, int))
    assert len(accepted) == 0 and len(found["tree"]) == 0
