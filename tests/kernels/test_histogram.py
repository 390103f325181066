"""Histogram kernels vs a naive numpy twin; block-size and feature-chunk invariance."""
import numba
import numpy as np
import pytest

from oocboost.common import aligned_zeros, hist_width
from oocboost.kernels import hist_ops as ho
from oocboost.kernels import histogram as kh
from oocboost.utils.threads import thread_limit

#: "lanes": the grower's layout (statistics padded to 4 float64 lanes, 64-byte aligned,
#: one vector add per update); "plain": width == n_stats, the scalar loop.
LAYOUTS = ["lanes", "plain"]


def new_hist(n_slots, n_columns, max_bin, n_stats, layout, dtype=np.float64):
    width = hist_width(n_stats) if layout == "lanes" else n_stats
    return aligned_zeros((n_slots, n_columns, max_bin, width), dtype)


def stats_part(hist, n_stats):
    """The statistics of a histogram; padding lanes must have stayed 0."""
    assert not hist[..., n_stats:].any()
    return hist[..., :n_stats]


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


#: Each code width with each update the kernels compile (2 or 4 vector lanes, scalar),
#: but two-byte codes only with the 2 lanes of boosting's gradient and hessian: every
#: (codes, lanes) pair is a kernel specialization of its own to compile (~3-5 s each in a
#: cold suite), and the loops do not depend on the code width.
MATCHES_NAIVE_CASES = [(layout, n_stats, max_bin) for max_bin in (16, 256)
                       for n_stats in (3, 2, 4, 5) for layout in LAYOUTS] + [("lanes", 2, 300)]


@pytest.mark.parametrize("layout,n_stats,max_bin", MATCHES_NAIVE_CASES)
@pytest.mark.parametrize("n_trees", [1, 3])
def test_matches_naive(layout, n_stats, n_trees, max_bin):
    codes, stats, slot_of_row = make_data(300, 4, n_trees, n_stats, 5, max_bin, seed=1)
    hist = new_hist(5, 4, max_bin, n_stats, layout)
    kh.build_histograms(codes, stats, slot_of_row, hist)
    np.testing.assert_array_equal(stats_part(hist, n_stats),
                                  naive_histograms(codes, stats, slot_of_row, 5, max_bin))


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


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("chunk", [1, 2, 5, 7, 14, 64])
@pytest.mark.parametrize("n_stats", [3, 4])
def test_feature_chunk_does_not_change_sums(layout, chunk, n_stats, monkeypatch):
    # 11 features: not a multiple of any chunk or of the thread count; non-integer
    # statistics, so a change of summation order would show.
    rng = np.random.default_rng(3)
    codes = rng.integers(0, 8, size=(11, 1000)).astype(np.uint8)
    stats = rng.random((2, 1000, n_stats)).astype(np.float32)
    slots = rng.integers(-1, 3, size=(2, 1000)).astype(np.int32)
    ref = naive_histograms(codes, stats, slots, 3, 8)
    monkeypatch.setattr(kh, "FEATURE_CHUNK", chunk)
    got = new_hist(3, 11, 8, n_stats, layout)
    kh.build_histograms(codes, stats, slots, got)
    np.testing.assert_array_equal(ref, stats_part(got, n_stats))


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("n_stats", [3, 4])
def test_rows_with_zero_count_are_skipped_without_changing_sums(layout, n_stats):
    # About a third of the rows out of the sample (count 0, all statistics 0), as a
    # bootstrap or subsample leaves them; the others have non-integer statistics.
    rng = np.random.default_rng(7)
    codes = rng.integers(0, 16, size=(5, 2000)).astype(np.uint8)
    stats = rng.random((2, 2000, n_stats)).astype(np.float32)
    stats[:, :, -1] = 1.0
    stats[rng.random((2, 2000)) < 0.37] = 0.0
    slots = rng.integers(-1, 4, size=(2, 2000)).astype(np.int32)
    ref = naive_histograms(codes, stats, slots, 4, 16)
    got = new_hist(4, 5, 16, n_stats, layout)
    kept = kh.build_histograms(codes, stats, slots, got, count_stat=n_stats - 1)
    np.testing.assert_array_equal(ref, stats_part(got, n_stats))
    np.testing.assert_array_equal(kept, ((slots >= 0) & (stats[:, :, -1] != 0)).sum(axis=1))


def test_subtraction_gives_sibling():
    codes, stats, _ = make_data(500, 3, 1, 3, 1, 16, seed=4)
    rng = np.random.default_rng(5)
    goes_left = rng.random(500) < 0.3
    hist = np.zeros((3, 3, 16, 3))
    kh.build_histograms(codes, stats, np.zeros((1, 500), np.int32), hist)          # parent
    kh.build_histograms(codes, stats, np.where(goes_left, 1, -1)[None].astype(np.int32),
                        hist)                                                      # left
    ho.subtract_histograms(hist, np.array([0], np.int32), np.array([1], np.int32),
                           np.array([2], np.int32))
    right = naive_histograms(codes, stats, np.where(goes_left, -1, 0)[None].astype(np.int32),
                             1, 16)[0]
    np.testing.assert_array_equal(hist[2], right)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_node_sums_are_totals(layout):
    codes, stats, slots = make_data(400, 3, 1, 3, 2, 16, seed=6)
    hist = new_hist(2, 3, 16, 3, layout)
    kh.build_histograms(codes, stats, slots, hist)
    for first, n_columns in [(0, 1), (2, 1), (1, 2)]:
        out = np.empty((2, 3))
        ho.node_sums_from_histograms(hist, np.array([0, 1], np.int32), out, first, n_columns)
        for s in range(2):
            # integer statistics: the sums are exact whichever feature is summed
            expected = stats[0][slots[0] == s].sum(axis=0, dtype=np.float64)
            np.testing.assert_array_equal(out[s], expected * n_columns)


def _row_lists(slot_of_row):
    """The selected-row lists build_histograms_selected/_columns read (one chunk)."""
    n_trees, n_rows = slot_of_row.shape
    rows = np.zeros((n_trees, n_rows), np.int32)
    slots = np.zeros((n_trees, n_rows), np.int32)
    count = np.zeros((n_trees, 1), np.int64)
    for t in range(n_trees):
        kept = np.flatnonzero(slot_of_row[t] >= 0)
        rows[t, : len(kept)] = kept
        slots[t, : len(kept)] = slot_of_row[t, kept]
        count[t, 0] = len(kept)
    return rows, slots, np.zeros(1, np.int64), count


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("n_stats", [2, 3, 4, 6])
@pytest.mark.parametrize("n_trees", [1, 4])
@pytest.mark.parametrize("threads", [1, 2])
def test_sampled_columns_match_naive(layout, n_stats, n_trees, threads):
    """Per-node histograms of a few features: column q of slot s sums feature
    slot_columns[s, q]; the same sums for any thread count (non-integer statistics, in
    float64 as the forests' CART statistics that take this path)."""
    rng = np.random.default_rng(8)
    n_features, n_slots, k, max_bin = 9, 6, 3, 32
    codes = rng.integers(0, max_bin, size=(n_features, 1500)).astype(np.uint8)
    stats = rng.random((n_trees, 1500, n_stats))
    # trees own disjoint slots, as in the grower
    slot_of_row = np.full((n_trees, 1500), -1, np.int32)
    for t in range(n_trees):
        mine = np.arange(t, n_slots, n_trees)
        if len(mine):
            slot_of_row[t] = np.where(rng.random(1500) < 0.8, rng.choice(mine, 1500), -1)
    slot_columns = np.sort(np.array([rng.choice(n_features, k, replace=False)
                                     for _ in range(n_slots)]), axis=1).astype(np.int32)
    full = naive_histograms(codes, stats, slot_of_row, n_slots, max_bin)
    want = full[np.arange(n_slots)[:, None], slot_columns]
    got = new_hist(n_slots, k, max_bin, n_stats, layout)
    before = numba.get_num_threads()
    numba.set_num_threads(threads)
    try:
        kh.build_histograms_columns(codes, stats, *_row_lists(slot_of_row), slot_columns,
                                    got)
    finally:
        numba.set_num_threads(before)
    np.testing.assert_array_equal(stats_part(got, n_stats), want)


def _cart_like_stats(rng, n_trees, n_rows, n_stats, integer=False):
    """Statistics whose last column counts rows: 1 for a row of positive weight, and all
    0 for a row of zero weight (the CART statistics that record slots require).
    ``integer``: int32 draw-like weights (the forest's integer statistics)."""
    stats = (rng.integers(1, 4, (n_trees, n_rows, n_stats)).astype(np.int32) if integer
             else rng.random((n_trees, n_rows, n_stats)))
    zero = rng.random((n_trees, n_rows)) < 0.2
    stats[zero] = 0
    stats[..., n_stats - 1] = np.where(zero, 0, 1)
    return stats


#: Every update (2 and 4 lanes, scalar) for one-byte codes and both sums; two-byte codes
#: with the 4 lanes of a forest's class counts (each (codes, sums, lanes) triple is a
#: kernel specialization to compile).
RECORD_CASES = [(sums, max_bin, layout, n_stats) for sums in (np.float64, np.int32)
                for max_bin in (64,) for layout in LAYOUTS for n_stats in (2, 3, 4, 6)] + [
    (np.int32, 300, "lanes", 3), (np.float64, 300, "lanes", 3)]


@pytest.mark.parametrize("sums,max_bin,layout,n_stats", RECORD_CASES)
@pytest.mark.parametrize("n_blocks", [1, 3])
def test_record_slots_give_the_same_histograms(layout, n_stats, max_bin, n_blocks, sums):
    """Record slots (rows appended, summed after the pass) give bit-identical sums to
    direct accumulation, block after block, for slots that held a histogram before
    (garbage in them) and slots known to be zero; histogram slots in the same call are
    unaffected. Records take the words of float64 or int32 (integer statistics) slots."""
    rng = np.random.default_rng(11)
    n_features, n_slots, k, n_trees, n_rows = 9, 8, 3, 4, 120
    dtype = np.uint8 if max_bin <= 256 else np.uint16
    codes = rng.integers(0, max_bin, size=(n_blocks, n_features, n_rows)).astype(dtype)
    stats = _cart_like_stats(rng, n_blocks * n_trees, n_rows, n_stats,
                             integer=sums == np.int32).reshape(
        n_blocks, n_trees, n_rows, n_stats)
    slot_of_row = np.full((n_blocks, n_trees, n_rows), -1, np.int32)
    for t in range(n_trees):
        mine = np.arange(t, n_slots, n_trees)
        slot_of_row[:, t] = np.where(rng.random((n_blocks, n_rows)) < 0.8,
                                     rng.choice(mine, (n_blocks, n_rows)), -1)
    slot_columns = np.sort(np.array([rng.choice(n_features, k, replace=False)
                                     for _ in range(n_slots)]), axis=1).astype(np.int32)
    direct = new_hist(n_slots, k, max_bin, n_stats, layout, sums)
    for b in range(n_blocks):
        kh.build_histograms_columns(codes[b], stats[b], *_row_lists(slot_of_row[b]),
                                    slot_columns, direct)

    record_slots = np.array([0, 1, 2, 5, 6], np.int64)
    expected = np.zeros(n_slots, np.int64)
    for b in range(n_blocks):
        for t in range(n_trees):
            listed = slot_of_row[b, t] >= 0
            counted = stats[b, t, :, n_stats - 1] != 0
            np.add.at(expected, slot_of_row[b, t][listed & counted], 1)
    capacity = np.zeros(n_slots, np.int64)
    capacity[record_slots] = expected[record_slots]
    fill = np.zeros(n_slots, np.int64)
    got = new_hist(n_slots, k, max_bin, n_stats, layout, sums)
    was_clean = np.array([True, False, True, False, True])
    got[record_slots[~was_clean]] = 7             # a histogram held before: overwritten
    words = ho.record_words(n_stats, k, np.dtype(dtype).itemsize, got.itemsize)
    assert (capacity * words <= got[0].size).all(), "the test's records must fit a slot"
    for b in range(n_blocks):
        kh.build_histograms_columns(codes[b], stats[b], *_row_lists(slot_of_row[b]),
                                    slot_columns, got, (capacity, fill))
    np.testing.assert_array_equal(fill, capacity)
    flat = got.reshape(n_slots, -1)
    ho.records_to_histograms(got, flat, flat.view(dtype), record_slots,
                             fill[record_slots], was_clean, n_stats)
    np.testing.assert_array_equal(got, direct)     # padding lanes included


@pytest.mark.parametrize("layout,n_stats", [("lanes", 3), ("plain", 3), ("lanes", 6)])
@pytest.mark.parametrize("columns", [False, True])
def test_int32_sums_of_integer_statistics_equal_float64_sums(layout, n_stats, columns):
    """int32 histograms of integer statistics (a forest's unweighted class counts) hold
    the same sums as float64 histograms of the same values, block after block, for full
    and per-node-column histograms."""
    rng = np.random.default_rng(13)
    n_features, n_slots, n_trees, max_bin, n_rows = 7, 6, 3, 40, 400
    codes = rng.integers(0, max_bin, size=(2, n_features, n_rows)).astype(np.uint8)
    stats = _cart_like_stats(rng, 2 * n_trees, n_rows, n_stats, integer=True).reshape(
        2, n_trees, n_rows, n_stats)
    slot_of_row = np.full((2, n_trees, n_rows), -1, np.int32)
    for t in range(n_trees):
        mine = np.arange(t, n_slots, n_trees)
        slot_of_row[:, t] = np.where(rng.random((2, n_rows)) < 0.9,
                                     rng.choice(mine, (2, n_rows)), -1)
    slot_columns = np.sort(np.array([rng.choice(n_features, 3, replace=False)
                                     for _ in range(n_slots)]), axis=1).astype(np.int32)
    n_columns = 3 if columns else n_features
    got = new_hist(n_slots, n_columns, max_bin, n_stats, layout, np.int32)
    want = new_hist(n_slots, n_columns, max_bin, n_stats, layout)
    for b in range(2):
        for hist, st in ((got, stats[b]), (want, stats[b].astype(np.float64))):
            if columns:
                kh.build_histograms_columns(codes[b], st, *_row_lists(slot_of_row[b]),
                                            slot_columns, hist)
            else:
                kh.build_histograms(codes[b], st, slot_of_row[b], hist)
    assert want.any()
    np.testing.assert_array_equal(got, want)


def _class_counts_case(rng, n_trees, n_rows, n_classes, with_draws):
    """A ClassCounts and the statistics it stands for (cart_stats's, unit weights)."""
    label = rng.integers(0, n_classes, n_rows)
    draws = (np.minimum(rng.poisson(1.0, (n_trees, n_rows)), 20).astype(np.uint8)
             if with_draws else np.zeros((n_trees, 0), np.uint8))
    d = draws if with_draws else np.ones((n_trees, n_rows))
    dense = np.zeros((n_trees, n_rows, n_classes + 1))
    dense[:, np.arange(n_rows), label] = d
    dense[:, :, n_classes] = d > 0
    return kh.ClassCounts(label.astype(np.uint8), draws, n_classes), dense


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("n_classes", [1, 2, 3, 5])
@pytest.mark.parametrize("with_draws", [True, False])
@pytest.mark.parametrize("kind", ["full", "columns", "records"])
def test_class_counts_equal_the_statistics_they_stand_for(layout, n_classes, with_draws,
                                                          kind):
    """ClassCounts (statistics made in the kernels from classes and draws) give the
    sums of the stored statistics, into int32 histograms, for full histograms,
    per-node columns and record slots."""
    rng = np.random.default_rng(14)
    n_features, n_slots, n_trees, max_bin, n_rows, k = 7, 6, 3, 64, 300, 3
    n_stats = n_classes + 1
    codes = rng.integers(0, max_bin, size=(n_features, n_rows)).astype(np.uint8)
    counts, dense = _class_counts_case(rng, n_trees, n_rows, n_classes, with_draws)
    slot_of_row = np.full((n_trees, n_rows), -1, np.int32)
    for t in range(n_trees):
        mine = np.arange(t, n_slots, n_trees)
        slot_of_row[t] = np.where(rng.random(n_rows) < 0.9, rng.choice(mine, n_rows), -1)
    if with_draws:           # the grower leaves out rows drawn 0 times
        slot_of_row[counts.draws == 0] = -1
    slot_columns = np.sort(np.array([rng.choice(n_features, k, replace=False)
                                     for _ in range(n_slots)]), axis=1).astype(np.int32)
    n_columns = n_features if kind == "full" else k
    got = new_hist(n_slots, n_columns, max_bin, n_stats, layout, np.int32)
    want = new_hist(n_slots, n_columns, max_bin, n_stats, layout)
    if kind == "full":
        kh.build_histograms_selected(codes, counts, *_row_lists(slot_of_row), got)
        kh.build_histograms_selected(codes, dense, *_row_lists(slot_of_row), want)
    else:
        kh.build_histograms_columns(codes, dense, *_row_lists(slot_of_row), slot_columns,
                                    want)
        records = None
        if kind == "records":
            capacity = np.zeros(n_slots, np.int64)
            np.add.at(capacity, slot_of_row[slot_of_row >= 0], 1)
            capacity[1::2] = 0                   # half the slots stay histograms
            records = (capacity, np.zeros(n_slots, np.int64))
        kh.build_histograms_columns(codes, counts, *_row_lists(slot_of_row), slot_columns,
                                    got, records)
        if kind == "records":
            flat = got.reshape(n_slots, -1)
            used = np.flatnonzero(capacity)
            ho.records_to_histograms(got, flat, flat.view(codes.dtype), used,
                                     records[1][used], np.ones(len(used), bool), n_stats)
    assert want.any()
    np.testing.assert_array_equal(got, want)


def test_int32_histograms_refuse_float_statistics():
    """Float statistics cannot go into int32 sums (they would be truncated)."""
    codes = np.zeros((2, 5), np.uint8)
    stats = np.full((1, 5, 3), 0.5)
    hist = new_hist(1, 2, 4, 3, "lanes", np.int32)
    with pytest.raises(ValueError, match="integer statistics"):
        kh.build_histograms(codes, stats, np.zeros((1, 5), np.int32), hist)


def test_record_slot_overflow_is_an_error():
    """More rows than a record slot expects raise instead of writing past the slot."""
    rng = np.random.default_rng(12)
    codes = rng.integers(0, 16, size=(4, 50)).astype(np.uint8)
    stats = _cart_like_stats(rng, 1, 50, 3)
    stats[..., 2] = 1.0
    slot_of_row = np.zeros((1, 50), np.int32)
    hist = new_hist(1, 2, 16, 3, "lanes")
    capacity, fill = np.array([10], np.int64), np.zeros(1, np.int64)
    with pytest.raises(RuntimeError, match="record slot full"):
        kh.build_histograms_columns(codes, stats, *_row_lists(slot_of_row),
                                    np.array([[0, 3]], np.int32), hist, (capacity, fill))


@pytest.mark.parametrize("n_stats", [1, 2, 3, 4])
@pytest.mark.parametrize("n_trees", [1, 3])
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("feature_chunk", [3, 14])
def test_all_rows_equal_the_listed_rows_bit_for_bit(n_stats, n_trees, threads,
                                                    feature_chunk, monkeypatch):
    """build_histograms_all (a root pass: no row list) gives the sums of listing every
    row into its tree's slot, bit for bit with non-integer statistics, for 2 and 4
    lanes and any thread count or feature chunk."""
    monkeypatch.setattr(kh, "FEATURE_CHUNK", feature_chunk)
    rng = np.random.default_rng(21)
    n_rows, n_features, max_bin, n_slots = 700, 9, 32, 5
    codes = rng.integers(0, max_bin, size=(n_features, n_rows)).astype(np.uint8)
    stats = rng.standard_normal((n_trees, n_rows, n_stats)).astype(np.float32)
    slot_of_tree = rng.permutation(n_slots)[:n_trees].astype(np.int32)
    want = new_hist(n_slots, n_features, max_bin, n_stats, "lanes")
    kh.build_histograms_selected(
        codes, stats, *_row_lists(np.repeat(slot_of_tree[:, None], n_rows, 1)), want)
    got = new_hist(n_slots, n_features, max_bin, n_stats, "lanes")
    with thread_limit(threads):
        kh.build_histograms_all(codes, stats, slot_of_tree, got)
    np.testing.assert_array_equal(got, want)
    naive = naive_histograms(codes, stats.astype(np.float64),
                             np.repeat(slot_of_tree[:, None], n_rows, 1), n_slots, max_bin)
    np.testing.assert_allclose(stats_part(got, n_stats), naive, rtol=1e-12, atol=1e-9)


def test_all_rows_refuse_unpadded_histograms():
    codes = np.zeros((2, 10), np.uint8)
    stats = np.ones((1, 10, 5), np.float32)
    with pytest.raises(ValueError, match="2 or 4 lanes"):
        kh.build_histograms_all(codes, stats, np.zeros(1, np.int32),
                                np.zeros((1, 2, 4, 5)))


@pytest.mark.parametrize("n_features", [8, 14, 28, 31])
@pytest.mark.parametrize("n_stats", [2, 3])
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("kind", ["listed", "all", "columns"])
def test_unrolled_column_updates_match_naive(n_features, n_stats, threads, kind):
    """Updates of exactly UNROLLED_COLUMNS columns of 256 bins take a loop compiled with
    that trip count, and groups of SMALL_UNROLLED_COLUMNS features (8 features over 2
    threads, boosting's 2 lanes) a loop of their own; every mix of unrolled and generic widths
    gives
    the naive sums."""
    assert (kh.UNROLLED_COLUMNS, kh.SMALL_UNROLLED_COLUMNS) == (14, 4)
    rng = np.random.default_rng(n_features * 10 + n_stats)
    n_rows, n_slots, max_bin = 900, 3, 256
    codes = rng.integers(0, max_bin, size=(n_features, n_rows)).astype(np.uint8)
    stats = rng.integers(-5, 6, size=(1, n_rows, n_stats)).astype(np.float32)
    if kind == "all":
        slot_of_row = np.full((1, n_rows), 2, np.int32)
    else:
        slot_of_row = rng.integers(-1, n_slots, size=(1, n_rows)).astype(np.int32)
    want = naive_histograms(codes, stats, slot_of_row, n_slots, max_bin)
    if kind == "columns":            # every slot holds all features, as columns
        slot_columns = np.tile(np.arange(n_features, dtype=np.int32), (n_slots, 1))
    got = new_hist(n_slots, n_features, max_bin, n_stats, "lanes")
    with thread_limit(threads):
        if kind == "all":
            kh.build_histograms_all(codes, stats, np.array([2], np.int32), got)
        elif kind == "listed":
            kh.build_histograms_selected(codes, stats, *_row_lists(slot_of_row), got)
        else:
            kh.build_histograms_columns(codes, stats, *_row_lists(slot_of_row),
                                        slot_columns, got)
    np.testing.assert_array_equal(stats_part(got, n_stats), want)


def test_unroll_tag_marks_groups_of_four_features():
    assert kh._unroll_tag(8, 2) is kh.UNROLL_SMALL
    assert kh._unroll_tag(4, 1) is kh.UNROLL_SMALL
    assert kh._unroll_tag(8, 2, vector=4) is kh.UNROLL_WIDE    # CART statistics
    for n_features, n_groups in [(8, 1), (4, 2), (9, 2), (28, 2), (7, 2), (12, 3)]:
        expected = kh.UNROLL_SMALL if (n_features, n_groups) == (12, 3) else kh.UNROLL_WIDE
        assert kh._unroll_tag(n_features, n_groups) is expected
