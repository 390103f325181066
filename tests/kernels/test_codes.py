"""Mixed-width codes (``kernels/codes.py``): a ``PlaneCodes`` holds the same codes as the
uint16 matrix it stands for, and every kernel that reads block codes gives, from it,
exactly what it gives from the matrix."""
import numpy as np
import pytest
from numba import njit

from oocboost.common import aligned_zeros, hist_column_starts, hist_width
from oocboost.kernels import histogram as kh
from oocboost.kernels.codes import PlaneCodes, as_array, code_arrays, read_code
from oocboost.kernels.partition import pack_routes, partition_select_rows, route_to_leaves
from oocboost.kernels.sampling import gather_rows
from oocboost.utils.threads import thread_limit

MAX_BIN = 256


@njit
def _read_all(low, wide, wide_row, out):
    for f in range(out.shape[0]):
        for i in range(out.shape[1]):
            out[f, i] = read_code(low, wide, wide_row, f, i)


def mixed_codes(n_rows, wide, seed=0):
    """A uint16 matrix whose ``wide`` rows hold codes past 255 (the missing code 255
    among them) and whose other rows hold codes up to 255."""
    rng = np.random.default_rng(seed)
    n_value_bins = np.where(wide, 700, 40)
    codes = np.empty((len(wide), n_rows), np.uint16)
    for f, bins in enumerate(n_value_bins):
        codes[f] = rng.integers(0, bins, n_rows)
        codes[f, rng.random(n_rows) < 0.05] = MAX_BIN - 1
    return codes, n_value_bins


WIDE_LAYOUTS = {"first": [1, 0, 0, 0, 0], "middle": [0, 0, 1, 0, 0],
                "last": [0, 0, 0, 0, 1], "two": [1, 0, 0, 1, 0], "none": [0, 0, 0, 0, 0]}


@pytest.mark.parametrize("layout", WIDE_LAYOUTS)
def test_plane_codes_hold_the_matrix(layout):
    wide = np.array(WIDE_LAYOUTS[layout], bool)
    codes, _ = mixed_codes(500, wide)
    planes = PlaneCodes.from_array(codes, wide)
    assert planes.shape == codes.shape and planes.dtype == np.uint16
    np.testing.assert_array_equal(planes.to_array(), codes)
    np.testing.assert_array_equal(as_array(planes), codes)
    assert planes.nbytes == codes.shape[1] * (len(wide) + 2 * wide.sum()) + 8 * len(wide)
    out = np.empty_like(codes)
    _read_all(*code_arrays(planes), out)
    np.testing.assert_array_equal(out, codes)
    out[:] = 0
    _read_all(*code_arrays(codes), out)
    np.testing.assert_array_equal(out, codes)
    # the byte planes as stored on disk give the same
    pairs = codes.view(np.uint8).reshape(codes.shape + (2,))
    from_disk = PlaneCodes.from_planes(pairs[..., 0].copy(), pairs[..., 1], wide)
    np.testing.assert_array_equal(from_disk.to_array(), codes)
    assert not from_disk.low.flags.writeable and not from_disk.wide.flags.writeable


def test_a_narrow_column_past_255_is_refused():
    codes = np.array([[3, 256], [1, 2]], np.uint16)
    with pytest.raises(ValueError, match="narrow holds a code past 255"):
        PlaneCodes.from_array(codes, [False, False])
    with pytest.raises(ValueError, match="one wide flag a row"):
        PlaneCodes.from_array(codes, [True])


def _hist(n_slots, column_of, n_stats, padded):
    width = hist_width(n_stats) if padded else n_stats
    return aligned_zeros((n_slots, int(column_of[-1]), MAX_BIN, width), np.float64)


@pytest.mark.parametrize("layout", WIDE_LAYOUTS)
@pytest.mark.parametrize("n_stats,padded", [(2, True), (3, True), (2, False)])
@pytest.mark.parametrize("threads", [1, 2])
def test_histograms_of_plane_codes_equal_the_matrixs(layout, n_stats, padded, threads):
    """From plane codes, the histograms of the matrix they stand for: against the
    matrix's own histograms for boosting's two statistics (the matrix in the narrowest
    dtype that holds it, as a cache stores it), and against a numpy twin always (the
    matrix's histograms of other widths would only add kernel specializations to
    compile that no cache reads)."""
    wide = np.array(WIDE_LAYOUTS[layout], bool)
    codes, n_value_bins = mixed_codes(3000, wide, seed=1)
    planes = PlaneCodes.from_array(codes, wide)
    matrix = codes if wide.any() else codes.astype(np.uint8)
    column_of = hist_column_starts(n_value_bins, MAX_BIN)
    rng = np.random.default_rng(2)
    stats = rng.integers(-5, 6, (2, codes.shape[1], n_stats)).astype(np.float32)
    twin_all = np.zeros((2, int(column_of[-1]), MAX_BIN, n_stats))
    for t in range(2):
        for f in range(codes.shape[0]):
            col, b = np.divmod(codes[f].astype(np.int64), MAX_BIN)
            np.add.at(twin_all[t], (column_of[f] + col, b), stats[t])
    with thread_limit(threads):
        if padded and n_stats == 2:
            # every row into its tree's root (a boosting root pass)
            ref, got = (
                _hist(2, column_of, n_stats, padded),
                _hist(2, column_of, n_stats, padded),
            )
            roots = np.array([0, 1], np.int32)
            kh.build_histograms_all(matrix, stats, roots, ref, column_of)
            kh.build_histograms_all(planes, stats, roots, got, column_of)
            np.testing.assert_array_equal(got, ref)
            np.testing.assert_array_equal(got[..., :n_stats], twin_all)
        rows = np.sort(rng.choice(codes.shape[1], (2, 1000), replace=True), axis=1)
        rows = rows.astype(np.int32)
        slots = rng.integers(0, 3, (2, 1000)).astype(np.int32)
        slots[1] += 3
        chunk_start = np.array([0, 400], np.int64)
        chunk_count = np.array([[400, 600], [400, 600]], np.int64)
        got = _hist(6, column_of, n_stats, padded)
        kh.build_histograms_selected(planes, stats, rows, slots, chunk_start, chunk_count,
                                     got, column_of)
        if n_stats == 2:
            ref = _hist(6, column_of, n_stats, padded)
            kh.build_histograms_selected(matrix, stats, rows, slots, chunk_start,
                                         chunk_count, ref, column_of)
            np.testing.assert_array_equal(got, ref)
    assert not got[..., n_stats:].any()
    twin = np.zeros_like(got[..., :n_stats])
    for t in range(2):
        for j in range(1000):
            i, s = rows[t, j], slots[t, j]
            for f in range(codes.shape[0]):
                col, b = divmod(int(codes[f, i]), MAX_BIN)
                twin[s, column_of[f] + col, b] += stats[t, i]
    np.testing.assert_array_equal(got[..., :n_stats], twin)


def test_per_node_columns_refuse_plane_codes():
    codes, _ = mixed_codes(10, np.array([1, 0], bool))
    planes = PlaneCodes.from_array(codes, [True, False])
    with pytest.raises(ValueError, match="one-byte codes"):
        kh.build_histograms_columns(planes, np.zeros((1, 10, 2), np.float32),
                                    np.zeros((1, 10), np.int32), np.zeros((1, 10), np.int32),
                                    np.zeros(1, np.int64), np.zeros((1, 1), np.int64),
                                    np.zeros((1, 2), np.int32), _hist(1, [0, 2], 2, True))


def _routes():
    """Depth 3 over 5 features: a numeric split at the root, a categorical split on
    feature 2 (wide in some layouts) with categories past 255 in its set, numeric splits
    below on features 0 and 4 (wide in others)."""
    left = np.array([[1, 3, 5, -1, -1, 7, -1, -1, -1]])
    right = np.where(left >= 0, left + 1, -1)
    feature = np.array([[1, 2, 3, 0, 0, 4, 0, 0, 0]])
    threshold = np.array([[20, 0, 10, 0, 0, 30, 0, 0, 0]])
    default_left = np.array([[0, 1, 0, 0, 0, 1, 0, 0, 0]])
    is_cat = np.array([[0, 1, 0, 0, 0, 0, 0, 0, 0]])
    route = pack_routes(left, right, feature, threshold, default_left, is_cat)
    bitset = np.zeros((1, 9, 700 // 32 + 1), np.uint32)
    bitset[0, 1, ::3] = 0x5A5A5A5A          # categories below and past 255
    return route, bitset


@pytest.mark.parametrize("layout", WIDE_LAYOUTS)
def test_partition_of_plane_codes_equals_the_matrixs(layout):
    wide = np.array(WIDE_LAYOUTS[layout], bool)
    codes, _ = mixed_codes(5000, wide, seed=3)
    planes = PlaneCodes.from_array(codes, wide)
    route, bitset = _routes()
    slot_of_node = np.array([[-1, -1, -1, 0, 1, -1, 2, 3, 4]], np.int32)
    chunk_start = np.array([0, 2500], np.int64)
    results = []
    # the matrix as a cache stores it: one byte a code when no column is wide
    for c in (codes if wide.any() else codes.astype(np.uint8), planes):
        node = np.zeros((1, 5000), np.int32)
        rows, slots = np.empty((1, 5000), np.int32), np.empty((1, 5000), np.int32)
        count = np.empty((1, 2), np.int64)
        for _level in range(3):
            partition_select_rows(c, node, route, bitset, MAX_BIN - 1, slot_of_node,
                                  np.zeros((1, 0), np.uint8), chunk_start, rows, slots,
                                  count)
        swept = np.zeros((1, 5000), np.int32)
        route_to_leaves(c, swept, route, bitset, MAX_BIN - 1)
        results.append((node, rows, slots, count, swept))
    for got, ref in zip(results[1], results[0]):
        np.testing.assert_array_equal(got, ref)
    # the rows reach every leaf, the categorical set's wide codes included
    assert set(np.unique(results[0][0])) == {3, 4, 6, 7, 8}
    np.testing.assert_array_equal(results[0][4], results[0][0])


def test_gathered_rows_of_plane_codes_are_the_matrixs():
    wide = np.array([0, 1, 0], bool)
    codes, _ = mixed_codes(300, wide, seed=4)
    stats = np.arange(600, dtype=np.float32).reshape(1, 300, 2)
    index = np.array([0, 5, 17, 299])
    out_codes = np.zeros((3, 10), np.uint16)
    out_stats = np.zeros((1, 10, 2), np.float32)
    gather_rows(PlaneCodes.from_array(codes, wide), stats, index, 2, out_codes, out_stats)
    np.testing.assert_array_equal(out_codes[:, 2:6], codes[:, index])
    np.testing.assert_array_equal(out_stats[0, 2:6], stats[0, index])
