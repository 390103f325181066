"""The grower against a brute-force depth-wise tree builder written in plain numpy.

The reference enumerates every (feature, threshold, missing direction) on raw rows with
XGBoost's gain and builds the tree recursively; the grower streams blocks, builds
histograms, subtracts siblings. They must choose the same splits and leaf values for any
block size, and lossguide with enough leaves must find the same tree as depthwise.
"""
import numpy as np
import pytest

from oocboost.engine.grower import TreeGrower, merge_searches
from oocboost.engine.nodes import GrowthParams
from oocboost.engine.policies import MIN_GAIN_EPS, GradientPolicy

LAMBDA = 1.0
MISSING = 15  # max_bin 16


def score(g, h):
    return g * g / (h + LAMBDA)


def brute_force_tree(codes, g, h, max_depth, n_value_bins):
    """Nested dict tree: {"feature","bin","default_left","left","right"} or {"value"}."""

    def build(rows, depth):
        G, H = g[rows].sum(), h[rows].sum()
        node = {"value": -G / (H + LAMBDA), "rows": rows}
        if depth == max_depth:
            return node
        best = (MIN_GAIN_EPS, None)
        for f in range(codes.shape[1]):
            c = codes[rows, f]
            miss = c == MISSING
            has_missing = miss.any()
            for default_left in ([False, True] if has_missing else [False]):
                for b in range(n_value_bins[f]):
                    left = (c <= b) & ~miss
                    if default_left:
                        left |= miss
                    right = ~left
                    if left.sum() == 0 or right.sum() == 0:
                        continue
                    hl, hr = h[rows][left].sum(), h[rows][right].sum()
                    if hl < 1.0 or hr < 1.0:  # min_child_weight 1
                        continue
                    gain = (score(g[rows][left].sum(), hl) + score(g[rows][right].sum(), hr)
                            - score(G, H))
                    if gain > best[0] + 1e-9:
                        best = (gain, (f, b, default_left, left))
        if best[1] is None:
            return node
        f, b, default_left, left = best[1]
        node.update(feature=f, bin=b, default_left=default_left, gain=best[0],
                    left=build(rows[left], depth + 1), right=build(rows[~left], depth + 1))
        return node

    return build(np.arange(len(g)), 0)


def leaf_of_rows(tree, n_rows):
    out = {}

    def walk(node, path):
        if "feature" not in node:
            for r in node["rows"]:
                out[r] = (path, node["value"])
            return
        walk(node["left"], path + "L")
        walk(node["right"], path + "R")

    walk(tree, "")
    return [out[i] for i in range(n_rows)]


def grower_leaves(arrays, codes):
    """(path, value) of each row by walking the grower's flat tree on codes."""
    result = []
    for i in range(codes.shape[0]):
        node, path = 0, ""
        while arrays["left"][node] >= 0:
            c = codes[i, arrays["feature"][node]]
            if c == MISSING:
                go_left = arrays["default_left"][node]
            else:
                go_left = c <= arrays["bin_threshold"][node]
            node = arrays["left"][node] if go_left else arrays["right"][node]
            path += "L" if go_left else "R"
        result.append((path, arrays["value"][node, 0]))
    return result


def make_problem(seed, n_rows=600, n_features=4):
    rng = np.random.default_rng(seed)
    codes = rng.integers(0, 12, size=(n_rows, n_features)).astype(np.uint8)
    codes[rng.random((n_rows, n_features)) < 0.05] = MISSING
    n_value_bins = np.full(n_features, 12, np.int32)
    y = (codes[:, 0] > 5).astype(float) + 0.5 * (codes[:, 1] < 3) + rng.normal(0, .3, n_rows)
    g = (0.0 - y).astype(np.float32)  # squared error at margin 0
    h = np.ones(n_rows, np.float32)
    return codes, g, h, n_value_bins


def grow(codes, g, h, n_value_bins, block_rows, params):
    n_rows, n_features = codes.shape
    policy = GradientPolicy(reg_lambda=LAMBDA, reg_alpha=0.0, max_delta_step=0.0,
                            min_child_weight=1.0, max_cat_to_onehot=4,
                            n_value_bins=n_value_bins,
                            is_categorical=np.zeros(n_features, bool), missing_bin=MISSING)
    edges = [np.arange(nvb - 1, dtype=float) + 0.5 for nvb in n_value_bins]
    grower = TreeGrower(1, n_features, 16, n_value_bins, np.zeros(n_features, bool), edges,
                        policy, params, np.random.default_rng(0))
    stats = np.stack([g, h], axis=1)[None].astype(np.float32)
    node_of_row = np.zeros((1, n_rows), np.int32)
    codes_fm = np.ascontiguousarray(codes.T)
    grower.start()
    while grower.needs_pass():
        for start in range(0, n_rows, block_rows):
            sl = slice(start, start + block_rows)
            grower.accumulate(np.ascontiguousarray(codes_fm[:, sl]),
                              np.ascontiguousarray(stats[:, sl]), node_of_row[:, sl])
        grower.finish_pass()
    for start in range(0, n_rows, block_rows):
        sl = slice(start, start + block_rows)
        grower.apply_pending(np.ascontiguousarray(codes_fm[:, sl]), node_of_row[:, sl])
    return grower, node_of_row[0]


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("block_rows", [1, 37, 600])
def test_depthwise_equals_brute_force(seed, block_rows):
    codes, g, h, nvb = make_problem(seed)
    ref = leaf_of_rows(brute_force_tree(codes, g, h, 3, nvb), len(g))
    grower, node_of_row = grow(codes, g, h, nvb, block_rows, GrowthParams(max_depth=3))
    arrays = grower.tree_arrays(0)
    got = grower_leaves(arrays, codes)
    assert [p for p, _ in got] == [p for p, _ in ref]
    np.testing.assert_allclose([v for _, v in got], [v for _, v in ref], rtol=1e-6)
    # node_of_row after apply_pending is the leaf the flat tree sends each row to
    assert np.all(arrays["left"][node_of_row] == -1)
    assert grower.telemetry.passes == 3  # one pass per level; the last level is pending


def test_lossguide_with_room_equals_depthwise():
    codes, g, h, nvb = make_problem(5)
    depthwise, _ = grow(codes, g, h, nvb, 100, GrowthParams(max_depth=3))
    lossguide, _ = grow(codes, g, h, nvb, 100,
                        GrowthParams(max_depth=3, grow_policy="lossguide", max_leaves=64,
                                     leaves_per_pass=2))
    a, b = grower_leaves(depthwise.tree_arrays(0), codes), grower_leaves(
        lossguide.tree_arrays(0), codes)
    assert [p for p, _ in a] == [p for p, _ in b]
    assert lossguide.telemetry.passes >= depthwise.telemetry.passes


def test_lossguide_respects_max_leaves_and_picks_best_gain_first():
    codes, g, h, nvb = make_problem(6)
    grower, _ = grow(
        codes,
        g,
        h,
        nvb,
        100,
        GrowthParams(max_depth=None, grow_policy="lossguide", max_leaves=4, leaves_per_pass=1),
    )
    arrays = grower.tree_arrays(0)
    assert (arrays["left"] == -1).sum() == 4
    # best-first: the root's split has the largest gain of all splits taken
    gains = arrays["gain"][arrays["left"] >= 0]
    assert gains[0] == gains.max()


def test_histogram_pool_reuses_slots():
    codes, g, h, nvb = make_problem(7, n_rows=2000)
    grower, _ = grow(codes, g, h, nvb, 500, GrowthParams(max_depth=5))
    # a depth-5 tree has up to 32 leaves; the pool holds far fewer histograms
    assert grower.n_hist_slots <= 3 * 2 ** 4


@pytest.mark.parametrize("max_hist_slots", [2, 3, 5, 9])
def test_bounded_histogram_pool_gives_the_same_tree(max_hist_slots):
    codes, g, h, nvb = make_problem(8, n_rows=1500)
    free, _ = grow(codes, g, h, nvb, 300, GrowthParams(max_depth=5))
    bounded, _ = grow(codes, g, h, nvb, 300, GrowthParams(max_depth=5,
                                                          max_hist_slots=max_hist_slots))
    assert grower_leaves(bounded.tree_arrays(0), codes) == grower_leaves(
        free.tree_arrays(0), codes)
    assert bounded.n_hist_slots <= max_hist_slots  # the pool never grew past it
    assert bounded.telemetry.passes >= free.telemetry.passes


def test_root_pass_adds_every_row_without_listing_them(monkeypatch):
    """A boosting root pass adds every row into the root histogram without the partition
    sweep (``build_histograms_all``), and grows the tree the listed path grows, bit for
    bit."""
    import oocboost.engine.grower as grower_mod
    import oocboost.engine.histograms as histograms_mod
    import oocboost.engine.partitioner as partitioner_mod
    codes, g, h, nvb = make_problem(3)
    g = g * np.float32(1.37)                 # non-integer sums
    calls = {"all": 0, "partition": 0}

    def counted(name, fn):
        def wrapper(*args, **kwargs):
            calls[name] += 1
            return fn(*args, **kwargs)
        return wrapper

    monkeypatch.setattr(histograms_mod, "build_histograms_all",
                        counted("all", histograms_mod.build_histograms_all))
    monkeypatch.setattr(partitioner_mod, "partition_select_rows",
                        counted("partition", partitioner_mod.partition_select_rows))
    direct, _ = grow(codes, g, h, nvb, 100, GrowthParams(max_depth=3))
    # 6 blocks: the root pass lists nothing; passes 1 and 2 and apply_pending partition
    assert calls == {"all": 6, "partition": 18}
    monkeypatch.setattr(grower_mod.TreeGrower, "_root_pass_all_rows", lambda self, rc: False)
    listed, _ = grow(codes, g, h, nvb, 100, GrowthParams(max_depth=3))
    assert calls["all"] == 6
    for key, want in listed.tree_arrays(0).items():
        np.testing.assert_array_equal(direct.tree_arrays(0)[key], want, err_msg=key)


class _SharedSearch:
    """A distributed run's hooks (``oocboost.dask``'s ``WorkerRun``) for one process:
    the histograms are whole already, and the split search is shared out over
    ``n_shares`` ranks that run one after the other, last rank first: by tree as
    ``WorkerRun.share_search`` does, or with ``by_position`` node by node across the
    trees, each pass's merged result then checked against one search of every node."""

    rank, row_offset, label_stats = 0, 0, None

    def __init__(self, n_rows, n_shares, by_position):
        self.n_rows = n_rows
        self.n_shares = n_shares
        self.by_position = by_position
        self.shared = self.checked = 0

    def reduce_histograms(self, hist, slots):
        pass

    reduce_histograms_to_root = reduce_histograms

    def sum_(self, array):
        return array

    def agree_min(self, value):
        return int(value)

    def share_search(self, hist, slots, trees, search):
        self.shared += 1
        key = np.arange(len(trees)) if self.by_position else np.asarray(trees)
        if self.by_position:
            kept = hist.copy()
            whole = search(np.arange(len(trees)))
            hist[...] = kept          # the search zeroes what it read
        parts = [(pos, search(pos)) for pos in
                 (np.flatnonzero(key % self.n_shares == r)
                  for r in reversed(range(self.n_shares)))][::-1]
        if self.by_position:
            merged = merge_searches(len(trees), parts)
            assert list(merged) == list(whole)
            for name, array in whole.items():
                assert merged[name].dtype == array.dtype, name
                assert np.array_equal(merged[name], array), name
            self.checked += 1
        return parts


@pytest.mark.parametrize("n_shares", [1, 2, 3])
@pytest.mark.parametrize("learner, by_position", [("random-forest", False),
                                                  ("random-forest", True),
                                                  ("extra-trees", False)])
def test_a_search_shared_out_merges_into_the_one_search(tmp_path, learner, by_position,
                                                        n_shares):
    """merge_searches: nodes searched in shares (a share with no node of a pass, shares
    run in any order; by tree, or node by node) give the one search's result array for
    array, and the forest of one search, tree for tree."""
    import oocboost
    from oocboost.learners.forest.distributed import train_forest_on_shard
    from oocboost.learners.forest.forest import cli_params, train_forest_from_params
    from tests.dask.helpers import assert_same_trees, frame

    df = frame(3000, 5).drop(columns=["y", "y3"])
    cache = oocboost.build_cache(df, tmp_path / "c.oocb", label="y2", quiet=True)
    params = {"max_depth": 5, "max_features": "sqrt", "n_jobs": 1, "random_state": 4}
    single = train_forest_from_params(learner, params, cache, n_estimators=5)
    hooks = _SharedSearch(cache.n_rows, n_shares, by_position)
    shared, _ = train_forest_on_shard(learner.replace("-", "_"),
                                      cli_params(learner, params), cache, 5,
                                      task="classification", classes=[0.0, 1.0],
                                      distributed=hooks)
    assert hooks.shared > 0 and hooks.checked == (hooks.shared if by_position else 0)
    assert_same_trees(shared, single, exact_values=True)
