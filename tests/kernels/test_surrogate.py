"""The surrogate kernels against NumPy twins: the path of each row, its histogram adds,
and the best surrogate of each feature from a histogram (numeric and categorical,
weighted, with empty bins and ties)."""
import numpy as np
import pytest

from oocboost.kernels import surrogate as ks
from oocboost.kernels.codes import read_only


def _twin_best(h, nvb, is_cat, primary, tl, tr):
    total = tl + tr
    if total <= 0 or max(tl, tr) == total:   # no split to stand in for
        return [None] * h.shape[0]
    majority = max(tl, tr) / total
    out = []
    for f in range(h.shape[0]):
        if f == primary:
            out.append(None)
            continue
        L, R = h[f, :nvb[f], 0], h[f, :nvb[f], 1]
        n = h[f, :nvb[f], 2] + h[f, :nvb[f], 3]
        if is_cat[f]:
            right_default = not L.sum() > R.sum()
            to_right = (L < R) | ((L == R) & right_default)
            agree = np.where(n > 0, np.where(to_right, R, L), 0).sum()
            rule = ("cat", tuple(np.flatnonzero((n > 0) & ~to_right)),
                    tuple(np.flatnonzero((n > 0) & to_right)))
        else:
            agree, rule = max(L.sum(), R.sum()), None
            for b in range(nvb[f] - 1):
                below = slice(0, b + 1)
                nb = n[below].sum()
                if n[b] <= 0 or nb < 2 or n.sum() - nb < 2:
                    continue
                right_le = R[below].sum() + L[b + 1:].sum()
                left_le = L[below].sum() + R[b + 1:].sum()
                if right_le > agree:
                    agree, rule = right_le, ("num", b, ks.RIGHT_LE)
                elif left_le > agree:
                    agree, rule = left_le, ("num", b, ks.LEFT_LE)
            if rule is None:
                out.append(None)
                continue
        adj = (agree / total - majority) / (1 - majority)
        out.append((agree / total, adj, rule) if adj > 0 else None)
    return out


@pytest.mark.parametrize("seed", range(8))
def test_best_surrogates_matches_twin(seed):
    rng = np.random.default_rng(seed)
    n_features, max_bin = 5, 12
    nvb = rng.integers(2, max_bin, n_features)
    is_cat = rng.random(n_features) < 0.4
    h = np.zeros((n_features, max_bin, 4))
    counts = rng.integers(0, 4, (n_features, max_bin, 2)).astype(float)
    counts[rng.random((n_features, max_bin)) < 0.2] = 0      # empty bins
    weights = counts * (rng.integers(1, 3, counts.shape) if seed % 2 else 1.0)
    h[..., 0:2] = weights
    h[..., 2:4] = counts
    for f in range(n_features):
        h[f, nvb[f]:] = 0
    primary = int(rng.integers(0, n_features))
    tl, tr = h[primary, :, 0].sum(), h[primary, :, 1].sum()
    agreement, adjusted = np.empty(n_features), np.empty(n_features)
    bin_out = np.empty(n_features, np.int32)
    direction = np.empty(n_features, np.uint8)
    bits = np.empty((n_features, 2), np.uint32)
    ks.best_surrogates(h, nvb, is_cat, primary, tl, tr, agreement, adjusted, bin_out,
                       direction, bits)
    for f, expected in enumerate(_twin_best(h, nvb, is_cat, primary, tl, tr)):
        if expected is None:
            assert agreement[f] == -1
            continue
        share, adj, rule = expected
        assert agreement[f] == pytest.approx(share, rel=1e-12)
        assert adjusted[f] == pytest.approx(adj, rel=1e-12)
        if rule[0] == "num":
            assert (bin_out[f], direction[f]) == rule[1:]
        else:
            left = [c for c in range(32) if bits[f, 0] >> c & 1]
            right = [c for c in range(32) if bits[f, 1] >> c & 1]
            assert (tuple(left), tuple(right)) == rule[1:]


def test_paths_and_histogram_adds_match_twin():
    rng = np.random.default_rng(1)
    n_rows, n_features, max_bin = 300, 3, 8
    missing = max_bin - 1
    # read-only, as a cache block's codes: the kernel specialization the engine calls
    codes = read_only(rng.integers(0, max_bin, (n_features, n_rows)).astype(np.uint8))
    # root splits f0 <= 3 (missing left); node 1 splits f1 <= 2 (missing right)
    left = np.array([1, 3, -1, -1, -1], np.int32)
    right = np.array([2, 4, -1, -1, -1], np.int32)
    feature = np.array([0, 1, -1, -1, -1], np.int32)
    bin_threshold = np.array([3, 2, 0, 0, 0], np.int32)
    default_left = np.array([True, False, False, False, False])
    is_cat = np.zeros(5, bool)
    bits = np.zeros((5, 1), np.uint32)
    slot_of_node = np.array([1, 0, -1, -1, -1], np.int32)
    weight = rng.integers(0, 3, n_rows).astype(float)
    path_slot = np.empty((n_rows, 2), np.int32)
    path_side = np.empty((n_rows, 2), np.uint8)
    ks.surrogate_paths(codes, None, None, left, right, feature, bin_threshold, default_left,
                       is_cat, bits, missing, slot_of_node, weight, path_slot, path_side)
    hist = np.zeros((2, n_features, max_bin, 4))
    ks.add_surrogate_rows(codes, None, None, path_slot, path_side, weight, hist)
    twin = np.zeros_like(hist)
    for i in range(n_rows):
        if weight[i] <= 0:
            continue
        node = 0
        while left[node] >= 0:
            c = codes[feature[node], i]
            go = default_left[node] if c == missing else c <= bin_threshold[node]
            if c != missing:
                side = 0 if go else 1
                for f in range(n_features):
                    twin[slot_of_node[node], f, codes[f, i], side] += weight[i]
                    twin[slot_of_node[node], f, codes[f, i], 2 + side] += 1
            node = left[node] if go else right[node]
    np.testing.assert_array_equal(hist, twin)
