"""The isolation split kernel and the average path length against plain NumPy twins."""
import numpy as np
import pytest

from oocboost.kernels.isolation import average_path_length, isolation_splits
from oocboost.kernels.sampling import _splitmix64


def _naive_split(counts, n_value_bins, is_cat, missing_bin, position, mask, u):
    """One node: ``counts[f, b, k]`` its statistics per feature and bin."""
    n_features = counts.shape[0]
    n_stats = counts.shape[2]

    def present(f):
        return [b for b in range(n_value_bins[f]) if b != missing_bin
                and counts[f, b, n_stats - 1] > 0]

    ok = [f for f in range(n_features) if mask[f] and len(present(f)) >= 2]
    if not ok:
        return None
    f = ok[min(int(u[0] * len(ok)), len(ok) - 1)]
    bins = present(f)
    left_bins = set()
    bits = np.zeros(8, np.uint32)
    threshold = 0
    if is_cat[f]:
        key = np.uint64(u[2] * 9007199254740992.0)
        for b in bins:
            if int(_splitmix64(key ^ np.uint64(b))) >> 63:
                left_bins.add(b)
        if len(left_bins) in (0, len(bins)):
            left_bins ^= {bins[0]}
        for b in left_bins:
            bits[b >> 5] |= np.uint32(1 << (b & 31))
    else:
        lo, hi = bins[0], bins[-1]
        t = position[f, lo] + u[1] * (position[f, hi] - position[f, lo])
        threshold = max([b for b in range(lo, hi) if position[f, b] <= t])
        left_bins = set(range(threshold + 1))
    values = [b for b in range(n_value_bins[f]) if b != missing_bin]
    left = sum(counts[f, b] for b in values if b in left_bins)
    right = sum(counts[f, b] for b in values if b not in left_bins)
    missing_left = u[3] < 0.5
    if missing_left:
        left = left + counts[f, missing_bin]
    else:
        right = right + counts[f, missing_bin]
    return f, threshold, missing_left, bool(is_cat[f]), bits, left, right


@pytest.mark.parametrize("seed", range(6))
def test_isolation_splits_equal_the_naive_twin(seed):
    rng = np.random.default_rng(seed)
    n_slots, n_features, max_bin, n_stats = 5, 4, 16, 2
    missing_bin = max_bin - 1
    n_value_bins = rng.integers(1, max_bin - 1, size=n_features).astype(np.int32)
    is_cat = rng.random(n_features) < 0.3
    hist = np.zeros((n_slots, n_features, max_bin, n_stats), np.int32)
    for s in range(n_slots):
        for f in range(n_features):
            occupied = rng.random(max_bin) < rng.choice([0.05, 0.3, 0.8])
            occupied[n_value_bins[f]:missing_bin] = False
            count = rng.integers(1, 4, size=max_bin) * occupied
            hist[s, f, :, 1] = count
            hist[s, f, :, 0] = count * rng.integers(1, 3, size=max_bin)
    position = np.sort(rng.normal(size=(n_features, max_bin)), axis=1)
    slots = np.array([4, 0, 2, 1], np.int32)
    mask = rng.random((len(slots), n_features)) < 0.8
    uniforms = rng.random((len(slots), 4))
    n = len(slots)
    out = dict(feature=np.empty(n, np.int32), bin_idx=np.empty(n, np.int32),
               default_left=np.empty(n, bool), is_cat=np.empty(n, bool),
               cat_bitset=np.zeros((n, 1), np.uint32), left_sums=np.empty((n, n_stats)),
               right_sums=np.empty((n, n_stats)))
    columns = np.tile(np.arange(n_features, dtype=np.int32), (n, 1))
    isolation_splits(hist, slots, columns, mask, n_value_bins, is_cat, missing_bin, 1,
                     position, uniforms, out["feature"], out["bin_idx"],
                     out["default_left"], out["is_cat"], out["cat_bitset"],
                     out["left_sums"], out["right_sums"])
    found = 0
    for e, s in enumerate(slots):
        want = _naive_split(hist[s], n_value_bins, is_cat, missing_bin, position, mask[e],
                            uniforms[e])
        if want is None:
            assert out["feature"][e] == -1
            continue
        found += 1
        f, threshold, missing_left, cat, bits, left, right = want
        assert out["feature"][e] == f and out["is_cat"][e] == cat
        assert out["default_left"][e] == missing_left
        if cat:
            assert out["cat_bitset"][e, 0] == bits[0]
        else:
            assert out["bin_idx"][e] == threshold
        np.testing.assert_array_equal(out["left_sums"][e], left)
        np.testing.assert_array_equal(out["right_sums"][e], right)
        missing_right = 0 if missing_left else hist[s, f, missing_bin, 1]
        assert left[1] > 0 and right[1] - missing_right > 0
    assert found


def test_average_path_length_equals_scikit_learns():
    from sklearn.ensemble._iforest import _average_path_length

    n = np.array([0, 1, 2, 3, 10, 256, 1e6])
    np.testing.assert_allclose(average_path_length(n), _average_path_length(n), rtol=1e-14)
