"""kernels/bundles.py against naive twins: codes bundled and unbundled one row at a time,
feature histograms counted straight from the feature codes."""
import numpy as np
import pytest

from oocboost.cache.bundles import FeatureBundles
from oocboost.common import hist_column_starts


def naive_encode(codes, bundles):
    out = np.zeros((bundles.n_columns, codes.shape[1]), codes.dtype)
    conflicts = np.zeros(bundles.n_columns, np.int64)
    for s in range(bundles.n_columns):
        members = bundles.col_members[bundles.col_ptr[s]:bundles.col_ptr[s + 1]]
        for i in range(codes.shape[1]):
            if len(members) == 1:
                out[s, i] = codes[members[0], i]
                continue
            for f in members:
                c, d = int(codes[f, i]), int(bundles.default_bin[f])
                if c != d:
                    conflicts[s] += out[s, i] != 0
                    out[s, i] = bundles.offset[f] + 1 + (c if c < d else c - 1)
    return out, conflicts


def naive_decode(stored, bundles):
    out = np.zeros((bundles.n_features, stored.shape[1]), stored.dtype)
    for f in range(bundles.n_features):
        s = bundles.column_of_feature[f]
        for i in range(stored.shape[1]):
            c = int(stored[s, i])
            if bundles.default_bin[f] < 0:
                out[f, i] = c
            elif bundles.code_feature[s, c] == f:
                out[f, i] = bundles.code_bin[s, c]
            else:
                out[f, i] = bundles.default_bin[f]
    return out


def sparse_codes(rng, n_rows, n_value_bins, bundles, dtype, conflict_rows=0):
    """Feature codes where each bundle has at most one feature off its default per row
    (but for the first ``conflict_rows`` rows); other features any value bin or missing."""
    max_bin = bundles.max_bin
    codes = np.empty((len(n_value_bins), n_rows), dtype)
    for f, nvb in enumerate(n_value_bins):
        codes[f] = rng.integers(0, nvb, n_rows)
        codes[f, rng.random(n_rows) < 0.1] = max_bin - 1
    for b in bundles.bundles:
        for f, d in b:
            codes[f] = d
        owner = rng.integers(-1, len(b), n_rows)
        for k, (f, d) in enumerate(b):
            rows = np.flatnonzero(owner == k)
            choices = np.delete(np.arange(n_value_bins[f]), d)
            codes[f, rows] = rng.choice(choices, len(rows))
        for i in range(conflict_rows):
            for f, d in b[:2]:
                codes[f, i] = (d + 1) % n_value_bins[f]
    return codes


def make_bundles(max_bin=32, wide=False):
    # features 1, 3, 4 and 6, 7 are bundled; 0, 2, 5 (and 8 when wide) are not
    n_value_bins = np.array([20, 3, 9, 5, 2, 31, 4, 10] + ([2 * max_bin + 3] if wide else []))
    bundles = FeatureBundles(n_value_bins, max_bin, [[(1, 0), (3, 2), (4, 1)],
                                                     [(6, 3), (7, 0)]])
    return n_value_bins, bundles


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16])
@pytest.mark.parametrize("n_rows", [1, 37, 1000])
def test_encode_decode_equal_naive_twins(dtype, n_rows):
    rng = np.random.default_rng(n_rows)
    n_value_bins, bundles = make_bundles(wide=dtype == np.uint16)
    codes = sparse_codes(rng, n_rows, n_value_bins, bundles, dtype,
                         conflict_rows=min(n_rows, 5))
    stored = bundles.encode(codes)
    want, conflicts = naive_encode(codes, bundles)
    np.testing.assert_array_equal(stored, want)
    assert stored.dtype == dtype and stored.shape == (bundles.n_columns, n_rows)
    np.testing.assert_array_equal(bundles.conflicts, conflicts)
    assert bundles.conflicts.sum() >= 2 * min(n_rows, 5)   # each bundle, each such row
    decoded = bundles.decode(stored)
    np.testing.assert_array_equal(decoded, naive_decode(stored, bundles))
    # rows without conflicts come back exactly
    clean = slice(min(n_rows, 5), None)
    np.testing.assert_array_equal(decoded[:, clean], codes[:, clean])


def naive_histograms(codes, stats, starts, max_bin):
    hist = np.zeros((int(starts[-1]), max_bin, stats.shape[1]))
    for f in range(codes.shape[0]):
        for i in range(codes.shape[1]):
            c = int(codes[f, i])
            hist[starts[f] + c // max_bin, c % max_bin] += stats[i]
    return hist


@pytest.mark.parametrize("wide", [False, True])
@pytest.mark.parametrize("dtype", [np.float64, np.int32])
def test_expanded_histograms_equal_feature_histograms(wide, dtype):
    rng = np.random.default_rng(3)
    max_bin = 32
    n_value_bins, bundles = make_bundles(max_bin, wide)
    codes = sparse_codes(rng, 500, n_value_bins, bundles,
                         np.uint16 if wide else np.uint8)
    stats = (rng.integers(0, 5, (500, 4)) if dtype == np.int32
             else rng.normal(size=(500, 4)))
    feature_starts = hist_column_starts(n_value_bins, max_bin)
    stored_starts = hist_column_starts(bundles.stored_value_bins(n_value_bins), max_bin)
    stored = bundles.encode(codes)
    slots = np.array([2, 0], np.int64)
    stored_hist = np.zeros((3, int(stored_starts[-1]), max_bin, 4), dtype)
    for slot, rows in ((2, slice(0, 300)), (0, slice(300, 500))):
        stored_hist[slot] = naive_histograms(stored[:, rows], stats[rows], stored_starts,
                                             max_bin)
    hist = np.full((3, int(feature_starts[-1]), max_bin, 4), 7, dtype)
    from oocboost.kernels.bundles import expand_histograms
    expand_histograms(stored_hist, hist, slots, bundles.col_ptr, bundles.col_members,
                      bundles.default_bin, bundles.code_feature, bundles.code_bin,
                      stored_starts, feature_starts)
    for slot, rows in ((2, slice(0, 300)), (0, slice(300, 500))):
        want = naive_histograms(codes[:, rows], stats[rows], feature_starts, max_bin)
        np.testing.assert_allclose(hist[slot], want, rtol=0, atol=1e-9)
    assert (hist[1] == 7).all()      # a slot not listed is left alone
