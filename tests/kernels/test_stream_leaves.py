"""The serial kernels of a streaming tree's small batches against plain NumPy twins, and
against the block kernels they stand in for (the same leaves and the same sums, bit for
bit)."""
import numpy as np
import pytest

from oocboost.common import hist_column_starts
from oocboost.kernels import stream_leaves as ks
from oocboost.kernels.codes import PlaneCodes, code_arrays
from oocboost.kernels.histogram import build_histograms_selected
from oocboost.kernels.partition import pack_routes, partition_select_rows, route_to_leaves

MAX_BIN = 16
MISSING_BIN = MAX_BIN - 1


def _tree(rng, n_features, n_splits, n_value_bins):
    """A random tree whose children come after their parents (right = left + 1), some
    splits categorical: its per-node arrays."""
    left, feature, threshold, default_left, is_cat = [-1], [-1], [0], [False], [False]
    words = (int(n_value_bins.max()) + 31) // 32
    bitset = [np.zeros(words, np.uint32)]
    for _ in range(n_splits):
        leaves = [n for n in range(len(left)) if left[n] < 0]
        node = int(rng.choice(leaves))
        f = int(rng.integers(n_features))
        left[node] = len(left)
        feature[node] = f
        threshold[node] = int(rng.integers(n_value_bins[f] - 1))
        default_left[node] = bool(rng.integers(2))
        is_cat[node] = bool(rng.random() < 0.3)
        if is_cat[node]:
            codes = rng.choice(n_value_bins[f], size=max(1, n_value_bins[f] // 2),
                               replace=False)
            for c in codes:
                bitset[node][c // 32] |= np.uint32(1 << (c % 32))
        for _ in range(2):
            left.append(-1)
            feature.append(-1)
            threshold.append(0)
            default_left.append(False)
            is_cat.append(False)
            bitset.append(np.zeros(words, np.uint32))
    left = np.array(left, np.int32)
    return dict(left=left, right=np.where(left >= 0, left + 1, -1).astype(np.int32),
                feature=np.array(feature, np.int32), threshold=np.array(threshold, np.int32),
                default_left=np.array(default_left), is_cat=np.array(is_cat),
                bitset=np.array(bitset, np.uint32))


def _naive_leaf(tree, codes, i):
    node = 0
    while tree["left"][node] >= 0:
        c = int(codes[tree["feature"][node], i])
        if c == MISSING_BIN:
            go_left = bool(tree["default_left"][node])
        elif tree["is_cat"][node]:
            go_left = bool((int(tree["bitset"][node, c // 32]) >> (c % 32)) & 1)
        else:
            go_left = c <= tree["threshold"][node]
        node = tree["left"][node] + (0 if go_left else 1)
    return node


def _routes(tree):
    route = pack_routes(tree["left"][None], tree["right"][None], tree["feature"][None],
                        tree["threshold"][None], tree["default_left"][None],
                        tree["is_cat"][None])
    return np.ascontiguousarray(route), np.ascontiguousarray(tree["bitset"][None])


def _case(seed, n_rows=300, wide=False):
    """(tree, codes as given to the kernels, codes as a matrix, n_value_bins): with
    ``wide`` one feature has more values than ``MAX_BIN`` (two-byte plane codes)."""
    rng = np.random.default_rng(seed)
    n_features = 5
    n_value_bins = np.full(n_features, MAX_BIN - 1, np.int32)
    if wide:
        n_value_bins[2] = 40
    matrix = np.empty((n_features, n_rows), np.uint16 if wide else np.uint8)
    for f in range(n_features):
        matrix[f] = rng.integers(0, n_value_bins[f], n_rows)
        matrix[f, rng.random(n_rows) < 0.1] = MISSING_BIN
    tree = _tree(rng, n_features, 9, n_value_bins)
    codes = (PlaneCodes.from_array(matrix, n_value_bins > MAX_BIN) if wide
             else np.ascontiguousarray(matrix))
    return tree, codes, matrix, n_value_bins


@pytest.mark.parametrize("wide", [False, True])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_route_rows_serial_equals_naive_and_block_kernel(seed, wide):
    tree, codes, matrix, _ = _case(seed, wide=wide)
    route, bits = _routes(tree)
    got = np.full(matrix.shape[1], -7, np.int32)
    ks.route_rows_serial(*code_arrays(codes), route, bits, MISSING_BIN, got)
    want = [_naive_leaf(tree, matrix, i) for i in range(matrix.shape[1])]
    np.testing.assert_array_equal(got, want)
    block = np.zeros((1, matrix.shape[1]), np.int32)
    route_to_leaves(codes, block, route, bits, MISSING_BIN)
    np.testing.assert_array_equal(got, block[0])


def _stats(rng, n_rows, n_stats):
    stats = rng.normal(size=(n_rows, n_stats)).astype(np.float32)
    stats[:, -1] = rng.random(n_rows) < 0.9
    return stats


@pytest.mark.parametrize("wide", [False, True])
@pytest.mark.parametrize("n_stats", [3, 4])
def test_add_rows_at_leaves_equals_naive_and_block_kernels(n_stats, wide):
    rng = np.random.default_rng(n_stats)
    tree, codes, matrix, n_value_bins = _case(10 + n_stats, wide=wide)
    route, bits = _routes(tree)
    n_rows, n_nodes = matrix.shape[1], len(tree["left"])
    node_of_row = np.zeros(n_rows, np.int32)
    ks.route_rows_serial(*code_arrays(codes), route, bits, MISSING_BIN, node_of_row)
    stats = _stats(rng, n_rows, n_stats)
    leaves = np.flatnonzero(tree["left"] < 0)
    slot = np.full(n_nodes, -1, np.int32)
    slot[leaves[::2]] = np.arange(len(leaves[::2])) + 1      # some leaves hold none
    columns = hist_column_starts(n_value_bins, MAX_BIN)
    n_slots = int(slot.max()) + 2
    width = 4
    hist0 = rng.normal(size=(n_slots, int(columns[-1]), MAX_BIN, width))
    dist0 = rng.normal(size=(n_nodes + 3, n_stats))
    sums0 = rng.normal(size=(n_slots, n_stats))
    hist, dist, sums = hist0.copy(), dist0.copy(), sums0.copy()
    totals = np.zeros((n_nodes, n_stats))
    ks.add_rows_at_leaves(*code_arrays(codes), node_of_row, stats, slot, columns, hist,
                          totals, dist, sums)

    # NumPy: each row in order into its leaf's cells, sums from their starting values
    want_hist, want_totals = hist0.copy(), np.zeros((n_nodes, n_stats))
    for i in range(n_rows):
        node = node_of_row[i]
        want_totals[node] += stats[i].astype(np.float64)
        if slot[node] < 0:
            continue
        for f in range(matrix.shape[0]):
            c = int(matrix[f, i])
            want_hist[slot[node], columns[f] + c // MAX_BIN, c % MAX_BIN, :n_stats] += \
                stats[i].astype(np.float64)
    np.testing.assert_array_equal(totals, want_totals)
    np.testing.assert_array_equal(hist, want_hist)
    want_dist = dist0.copy()
    want_dist[:n_nodes] += want_totals
    np.testing.assert_array_equal(dist, want_dist)
    want_sums = sums0.copy()
    held = slot >= 0
    want_sums[slot[held]] += want_totals[held]
    np.testing.assert_array_equal(sums, want_sums)

    # the block kernels: the partition's listing, then the grouped histogram sweep
    block_hist = hist0.copy()
    starts = np.array([0, n_rows // 2], np.int64)
    rows = np.empty((1, n_rows), np.int32)
    slots = np.empty((1, n_rows), np.int32)
    count = np.empty((1, 2), np.int64)
    partition_select_rows(codes, node_of_row[None].copy(), route, bits, MISSING_BIN,
                          slot[None], np.zeros((1, 0), np.uint8), starts, rows, slots, count)
    build_histograms_selected(codes, stats[None], rows, slots, starts, count, block_hist,
                              columns if wide else None)
    np.testing.assert_array_equal(hist, block_hist)


def _node_arrays(rng, n_nodes, n_classes):
    left = np.full(n_nodes, -1, np.int32)
    left[[0, 2]] = [1, 3]
    slot = np.where(rng.random(n_nodes) < 0.7, np.arange(n_nodes), -1).astype(np.int32)
    can_grow = rng.random(n_nodes) < 0.8
    reachable = np.ones(n_nodes, bool)
    reachable[-1] = False
    n_stats = n_classes + 1 if n_classes else 4
    dist = rng.uniform(0, 400, size=(n_nodes, n_stats))
    checked = dist[:, :max(n_classes, 1)].sum(axis=1) - rng.uniform(0, 300, n_nodes)
    return left, slot, can_grow, reachable, dist, checked


def _candidates(left, slot, can_grow, reachable):
    return (left < 0) & (slot >= 0) & can_grow & reachable


@pytest.mark.parametrize("n_classes", [0, 2, 3])
def test_due_and_waiting_leaves_equal_numpy(n_classes):
    rng = np.random.default_rng(n_classes)
    for _ in range(20):
        left, slot, can_grow, reachable, dist, checked = _node_arrays(rng, 12, n_classes)
        weight = dist[:, 0] if n_classes == 0 else dist[:, :n_classes].sum(axis=1)
        due = _candidates(left, slot, can_grow, reachable) & (weight - checked >= 200.0)
        assert ks.due_leaves(left, slot, can_grow, reachable, dist, checked, 200.0,
                             n_classes) == due.sum()
        waiting = (left < 0) & (slot < 0) & can_grow & reachable
        assert ks.waiting_leaves(left, slot, can_grow, reachable) == waiting.sum()


@pytest.mark.parametrize("staleness", [0.0, 0.25])
@pytest.mark.parametrize("n_classes", [0, 2])
def test_rows_until_due_equals_numpy(n_classes, staleness):
    rng = np.random.default_rng(7)
    for _ in range(20):
        left, slot, can_grow, reachable, dist, checked = _node_arrays(rng, 12, n_classes)
        share = np.where(rng.random(12) < 0.8, rng.random(12), 0.0)
        sums = rng.uniform(0, 500, size=(12, dist.shape[1]))
        period, slack, row_weight = 200.0, 50.0, 1.5
        got = ks.rows_until_due(left, slot, can_grow, reachable, dist, checked, share,
                                sums, n_classes, period, slack, row_weight, staleness)
        ok = _candidates(left, slot, can_grow, reachable) & (share > 0)
        if not ok.any():
            assert got == np.inf
            continue
        weight = dist[:, 0] if n_classes == 0 else dist[:, :n_classes].sum(axis=1)
        held = sums[:, 0] if n_classes == 0 else sums[:, :n_classes].sum(axis=1)
        pace = share[ok] * row_weight
        rows = (np.maximum(period - (weight - checked)[ok], 0) + slack) / pace
        if staleness:
            fresh = np.maximum(staleness * held[slot[ok]], slack) / pace
            rows = np.minimum(rows, fresh)
        assert got == pytest.approx(rows.min(), rel=1e-12)


@pytest.mark.parametrize("n_classes", [0, 3])
def test_row_stats_and_majority_predictions_equal_numpy(n_classes):
    rng = np.random.default_rng(3)
    n = 50
    w = rng.uniform(0, 2, n)
    w[::7] = 0.0
    y = rng.integers(0, 3, n).astype(np.float64) if n_classes else rng.normal(size=n)
    n_stats = n_classes + 1 if n_classes else 4
    got = np.zeros((n, n_stats), np.float32)
    ks.row_stats(y, w, n_classes, 0.25, got)
    want = np.zeros((n, n_stats), np.float32)
    if n_classes:
        want[np.arange(n), y.astype(int)] = w
    else:
        c = y - 0.25
        want[:, 0], want[:, 1], want[:, 2] = w, w * c, w * c * c
    want[:, -1] = w > 0
    np.testing.assert_array_equal(got, want)

    dist = rng.uniform(0, 5, size=(6, n_stats))
    dist[2] = 0.0                                   # a node without weight
    node_of_row = rng.integers(0, 6, n).astype(np.int32)
    pred = np.empty((n, max(n_classes, 1)))
    ks.majority_predictions(dist, node_of_row, n_classes, 0.25, pred)
    d = dist[node_of_row]
    if n_classes:
        total = d[:, :n_classes].sum(axis=1, keepdims=True)
        want = np.where(total > 0, d[:, :n_classes] / np.where(total > 0, total, 1),
                        1 / n_classes)
    else:
        want = (np.where(d[:, 0] > 0, d[:, 1] / np.where(d[:, 0] > 0, d[:, 0], 1), 0)
                + 0.25)[:, None]
    np.testing.assert_allclose(pred, want, rtol=1e-15)


def test_scores_equal_numpy():
    rng = np.random.default_rng(5)
    pred = rng.dirichlet(np.ones(3), size=40)
    pred[0] = [0.5, 0.5, 0.0]                      # a tie: the first class is taken
    pred[1, 1] = 0.0                               # log loss clipped at 1e-15
    y = rng.integers(0, 3, 40).astype(np.float64)
    y[:2] = [1, 1]
    w = rng.uniform(0, 2, 40)
    right, loss = ks.class_scores(pred, y, w)
    k = y.astype(int)
    assert right == pytest.approx((w * (pred.argmax(axis=1) == k)).sum(), rel=1e-13)
    assert loss == pytest.approx(
        (-w * np.log(np.clip(pred[np.arange(40), k], 1e-15, 1))).sum(), rel=1e-13)
    target = rng.normal(size=40)
    squared, absolute = ks.regression_scores(pred[:, :1], target, w)
    err = pred[:, 0] - target
    assert squared == pytest.approx((w * err * err).sum(), rel=1e-13)
    assert absolute == pytest.approx((w * np.abs(err)).sum(), rel=1e-13)


def _numpy_impurity(sums, n_classes, gini):
    """Entropy in bits / Gini of class weights, or the variance of (w, w y, w y^2)."""
    if n_classes == 0:
        w = sums[..., 0]
        safe = np.where(w > 0, w, 1.0)
        mean = sums[..., 1] / safe
        return np.where(w > 0, np.maximum(sums[..., 2] / safe - mean * mean, 0.0), 0.0)
    counts = sums[..., :n_classes]
    w = counts.sum(axis=-1, keepdims=True)
    p = counts / np.where(w > 0, w, 1.0)
    if gini:
        return np.where(w[..., 0] > 0, 1.0 - (p * p).sum(axis=-1), 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(p > 0, -p * np.log2(np.where(p > 0, p, 1.0)), 0.0).sum(axis=-1)


@pytest.mark.parametrize("n_classes,gini", [(2, False), (3, False), (3, True), (0, False)])
def test_feature_merits_equal_numpy(n_classes, gini):
    from oocboost.kernels.split_cart_features import feature_merits

    rng = np.random.default_rng(n_classes + gini)
    n_eval, n_features = 3, 6
    n_stats = n_classes + 1 if n_classes else 4
    if n_classes:
        node = rng.uniform(10, 100, size=(n_eval, n_stats))
        left = node[:, None, :] * rng.uniform(0, 1, size=(n_eval, n_features, n_stats))
        left[0, 0, :n_classes] = 0.0                       # an empty side
        left[1, 1, :n_classes] = 0.005 * node[1, :n_classes]   # under min_fraction
    else:
        y = rng.normal(size=(n_eval, 40))
        node = np.stack([np.full(n_eval, 40.0), y.sum(1), (y * y).sum(1),
                         np.full(n_eval, 40.0)], axis=1)
        cut = rng.integers(1, 40, size=(n_eval, n_features))
        cut[0, 0] = 3                                   # a side under min_side_weight
        left = np.empty((n_eval, n_features, 4))
        for e in range(n_eval):
            for f in range(n_features):
                part = y[e, :cut[e, f]]
                left[e, f] = [len(part), part.sum(), (part * part).sum(), len(part)]
    proxy = rng.normal(size=(n_eval, n_features))
    proxy[2, 2] = -np.inf                                  # the search found no split
    got = np.empty((n_eval, n_features))
    feature_merits(node, left, proxy, n_classes, gini, 0.01, 5.0, got)

    total = node[:, None, :]
    right = total - left
    weight = (lambda s: s[..., 0]) if n_classes == 0 else (
        lambda s: s[..., :n_classes].sum(axis=-1))
    w, wl, wr = weight(total), weight(left), weight(right)
    merit = (_numpy_impurity(total, n_classes, gini)
             - (wl * _numpy_impurity(left, n_classes, gini)
                + wr * _numpy_impurity(right, n_classes, gini)) / w)
    valid = np.isfinite(proxy) & (wl > 0) & (wr > 0)
    valid &= ((wl >= 5.0) & (wr >= 5.0)) if n_classes == 0 else (
        (wl > 0.01 * w) & (wr > 0.01 * w))
    assert (~valid).sum() >= 2
    np.testing.assert_array_equal(np.isinf(got), ~valid)
    np.testing.assert_allclose(got[valid], merit[valid], rtol=1e-12, atol=1e-15)
