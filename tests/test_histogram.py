"""Histogram kernels vs a naive numpy twin; block-size and feature-chunk invariance."""
import numpy as np
import pytest

from oocboost.kernels import histogram as kh


def naive_histograms(codes, stats, slot_of_row, n_slots, max_bin):
    n_trees, n_rows, n_stats = stats.shape
    hist = np.zeros((n_slots, codes.shape[0], max_bin, n_stats))
    for t in range(n_trees):
        for i in range(n_rows):
            s = slot_of_row[t, i]
            if s >= 0:
                for f in range(codes.shape[0]):
                    hist[s, f, codes[f, i]] += stats[t, i]
    return hist


def make_data(n_rows, n_features, n_trees, n_stats, n_slots, max_bin, seed):
    rng = np.random.default_rng(seed)
    dtype = np.uint8 if max_bin <= 256 else np.uint16
    codes = rng.integers(0, max_bin, size=(n_features, n_rows)).astype(dtype)
    # integer-valued stats: float sums are then exact whatever the order
    stats = rng.integers(-5, 6, size=(n_trees, n_rows, n_stats)).astype(np.float32)
    slot_of_row = rng.integers(-1, n_slots, size=(n_trees, n_rows)).astype(np.int32)
    return codes, stats, slot_of_row


@pytest.mark.parametrize("n_stats", [3, 2, 5])
@pytest.mark.parametrize("n_trees", [1, 3])
@pytest.mark.parametrize("max_bin", [16, 256, 300])
def test_matches_naive(n_stats, n_trees, max_bin):
    codes, stats, slot_of_row = make_data(300, 4, n_trees, n_stats, 5, max_bin, seed=1)
    hist = np.zeros((5, 4, max_bin, n_stats))
    kh.build_histograms(codes, stats, slot_of_row, hist)
    np.testing.assert_array_equal(hist, naive_histograms(codes, stats, slot_of_row, 5, max_bin))


@pytest.mark.parametrize("block_rows", [1, 7, 64, 1000])
def test_blockwise_accumulation_equals_one_pass(block_rows, monkeypatch):
    codes, stats, slot_of_row = make_data(1000, 3, 2, 3, 4, 32, seed=2)
    whole = np.zeros((4, 3, 32, 3))
    kh.build_histograms(codes, stats, slot_of_row, whole)
    blocked = np.zeros_like(whole)
    for start in range(0, 1000, block_rows):
        sl = slice(start, start + block_rows)
        kh.build_histograms(np.ascontiguousarray(codes[:, sl]),
                            np.ascontiguousarray(stats[:, sl]),
                            np.ascontiguousarray(slot_of_row[:, sl]), blocked)
    np.testing.assert_array_equal(whole, blocked)


@pytest.mark.parametrize("chunk", [1, 2, 5, 7, 64])
@pytest.mark.parametrize("n_stats", [3, 4])
def test_feature_chunk_does_not_change_sums(chunk, n_stats, monkeypatch):
    # 11 features: not a multiple of any chunk or of the thread count; non-integer
    # statistics, so a change of summation order would show.
    rng = np.random.default_rng(3)
    codes = rng.integers(0, 8, size=(11, 1000)).astype(np.uint8)
    stats = rng.random((2, 1000, n_stats)).astype(np.float32)
    slots = rng.integers(-1, 3, size=(2, 1000)).astype(np.int32)
    ref = naive_histograms(codes, stats, slots, 3, 8)
    monkeypatch.setattr(kh, "FEATURE_CHUNK", chunk)
    got = np.zeros_like(ref)
    kh.build_histograms(codes, stats, slots, got)
    np.testing.assert_array_equal(ref, got)


@pytest.mark.parametrize("n_stats", [3, 4])
def test_rows_with_zero_count_are_skipped_without_changing_sums(n_stats):
    # About a third of the rows out of the sample (count 0, all statistics 0), as a
    # bootstrap or subsample leaves them; the others have non-integer statistics.
    rng = np.random.default_rng(7)
    codes = rng.integers(0, 16, size=(5, 2000)).astype(np.uint8)
    stats = rng.random((2, 2000, n_stats)).astype(np.float32)
    stats[:, :, -1] = 1.0
    stats[rng.random((2, 2000)) < 0.37] = 0.0
    slots = rng.integers(-1, 4, size=(2, 2000)).astype(np.int32)
    ref = naive_histograms(codes, stats, slots, 4, 16)
    got = np.zeros_like(ref)
    kept = kh.build_histograms(codes, stats, slots, got, count_stat=n_stats - 1)
    np.testing.assert_array_equal(ref, got)
    np.testing.assert_array_equal(kept, ((slots >= 0) & (stats[:, :, -1] != 0)).sum(axis=1))


def test_subtraction_gives_sibling():
    codes, stats, _ = make_data(500, 3, 1, 3, 1, 16, seed=4)
    rng = np.random.default_rng(5)
    goes_left = rng.random(500) < 0.3
    hist = np.zeros((3, 3, 16, 3))
    kh.build_histograms(codes, stats, np.zeros((1, 500), np.int32), hist)          # parent
    kh.build_histograms(codes, stats, np.where(goes_left, 1, -1)[None].astype(np.int32),
                        hist)                                                      # left
    kh.subtract_histograms(hist, np.array([0], np.int32), np.array([1], np.int32),
                           np.array([2], np.int32))
    right = naive_histograms(codes, stats, np.where(goes_left, -1, 0)[None].astype(np.int32),
                             1, 16)[0]
    np.testing.assert_array_equal(hist[2], right)


def test_node_sums_are_totals():
    codes, stats, slots = make_data(400, 3, 1, 3, 2, 16, seed=6)
    hist = np.zeros((2, 3, 16, 3))
    kh.build_histograms(codes, stats, slots, hist)
    out = np.empty((2, 3))
    kh.node_sums_from_histograms(hist, np.array([0, 1], np.int32), out)
    for s in range(2):
        np.testing.assert_array_equal(out[s], stats[0][slots[0] == s].sum(axis=0,
                                                                         dtype=np.float64))
