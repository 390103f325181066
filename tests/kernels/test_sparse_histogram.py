"""Sparse columns (``kernels/codes.SparseCodes``, ``kernels/sparse_histogram.py``): the
sparse form holds the codes of the matrix it stands for, and the histograms made from
its entries and the nodes' totals equal, exactly for integer statistics and to the
last bits for float ones, those of the matrix; each kernel against its naive twin."""
import numpy as np
import pytest

from oocboost.kernels.codes import SparseCodes, as_array, code_arrays
from oocboost.kernels.histogram import ClassCounts, build_histograms_selected
from oocboost.kernels.sparse_histogram import (
    add_sparse_columns,
    fill_implied_bins,
    slots_of_listed_rows,
)
from oocboost.utils.threads import thread_limit

MAX_BIN = 16


def sparse_matrix(n_rows, seed=0, dtype=np.uint8):
    """Codes of 6 columns: two dense, three mostly at their implied code (0, 3, the
    missing code), one never sparse (implied -1)."""
    rng = np.random.default_rng(seed)
    codes = rng.integers(0, MAX_BIN - 1, (6, n_rows)).astype(dtype)
    implied = np.array([-1, 0, 3, MAX_BIN - 1, 0, 0])
    for c, share in ((1, 0.9), (2, 0.95), (3, 0.85), (5, 1.0)):
        at = rng.random(n_rows) < share
        codes[c, at] = implied[c]
    codes[4] = rng.integers(0, 5, n_rows)           # implied 0 but dense
    return codes, implied


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16])
@pytest.mark.parametrize("threshold", [0.5, 0.8, 0.9, 1.0])
def test_sparse_codes_hold_the_matrix(dtype, threshold):
    codes, implied = sparse_matrix(500, dtype=dtype)
    sparse = SparseCodes.from_array(codes, implied, threshold)
    assert isinstance(sparse, SparseCodes)
    at_implied = (codes == np.maximum(implied, 0)[:, None]).mean(axis=1)
    want = np.flatnonzero((implied >= 0) & (at_implied >= threshold))
    assert sparse.columns.tolist() == want.tolist()
    assert sparse.shape == codes.shape and sparse.dtype == codes.dtype
    np.testing.assert_array_equal(sparse.to_array(), codes)
    np.testing.assert_array_equal(as_array(sparse), codes)
    np.testing.assert_array_equal(code_arrays(sparse)[0], codes)
    pick = np.array([5, 0, 3, 2])
    np.testing.assert_array_equal(sparse.take_columns(pick), codes[pick])
    # entries: exactly the rows off the implied code, ascending in each column
    for k, c in enumerate(sparse.columns):
        lo, hi = sparse.ptr[k], sparse.ptr[k + 1]
        off = np.flatnonzero(codes[c] != implied[c])
        assert sparse.rows[lo:hi].tolist() == off.tolist()
        assert sparse.values[lo:hi].tolist() == codes[c, off].tolist()
    assert sparse.nbytes < codes.nbytes * 2


def test_no_sparse_column_is_the_matrix_itself():
    codes, implied = sparse_matrix(100)
    assert SparseCodes.from_array(codes, np.full(6, -1), 0.8) is codes
    dense = np.ones((2, 10), np.uint8)
    assert SparseCodes.from_array(dense, np.zeros(2), 0.8) is dense


def naive_histograms(codes, stats, slot_of_row, n_slots):
    """Plain loops: every (tree, row) with a slot adds its statistics to each column's
    bin, in row order (as the kernels sum each column)."""
    n_trees, n_rows, n_stats = stats.shape
    hist = np.zeros((n_slots, codes.shape[0], MAX_BIN, n_stats),
                    np.int32 if stats.dtype.kind == "i" else np.float64)
    for c in range(codes.shape[0]):
        for i in range(n_rows):
            for t in range(n_trees):
                s = slot_of_row[t, i]
                if s >= 0:
                    hist[s, c, codes[c, i]] += stats[t, i]
    return hist


def naive_sparse(sparse, stats, slot_of_row, hist, totals):
    """Twin of add_sparse_columns and fill_implied_bins: entries, totals, then the
    implied bin as the total minus the other bins in bin order."""
    n_trees = stats.shape[0]
    for k, c in enumerate(sparse.columns):
        for e in range(sparse.ptr[k], sparse.ptr[k + 1]):
            i = sparse.rows[e]
            for t in range(n_trees):
                if slot_of_row[t, i] >= 0:
                    hist[slot_of_row[t, i], c, sparse.values[e]] += stats[t, i]
    for t in range(n_trees):
        for i in range(stats.shape[1]):
            if slot_of_row[t, i] >= 0:
                totals[slot_of_row[t, i]] += stats[t, i]
    for s in np.unique(slot_of_row[slot_of_row >= 0]):
        for k, c in enumerate(sparse.columns):
            z = sparse.implied[k]
            rest = totals[s].copy()
            for b in range(MAX_BIN):
                if b != z:
                    rest -= hist[s, c, b]
            hist[s, c, z] = rest


def _listed(n_trees, n_rows, n_slots, rng):
    """Row lists as the partition writes them: two chunks, rows ascending, some rows
    in no slot, each tree's slots its own."""
    per_tree = n_slots // n_trees
    slot_of_row = rng.integers(-1, per_tree, (n_trees, n_rows)).astype(np.int32)
    slot_of_row += np.where(slot_of_row >= 0, per_tree * np.arange(n_trees)[:, None], 0
                            ).astype(np.int32)
    chunk_start = np.array([0, n_rows // 2], np.int64)
    rows = np.zeros((n_trees, n_rows), np.int32)
    slots = np.zeros((n_trees, n_rows), np.int32)
    count = np.zeros((n_trees, 2), np.int64)
    for t in range(n_trees):
        for c, (lo, hi) in enumerate(((0, n_rows // 2), (n_rows // 2, n_rows))):
            listed = lo + np.flatnonzero(slot_of_row[t, lo:hi] >= 0)
            rows[t, lo: lo + len(listed)] = listed
            slots[t, lo: lo + len(listed)] = slot_of_row[t, listed]
            count[t, c] = len(listed)
    return slot_of_row, rows, slots, chunk_start, count


# float statistics (boosting's, CART's) and class counts into int32 sums (forests'): the
# two kinds the engine hands the kernels (each kind more is a compile of its own)
@pytest.mark.parametrize("kind", ["float", "classes"])
@pytest.mark.parametrize("threads", [1, 2])
def test_sparse_histograms_equal_the_twin_and_the_dense_ones(kind, threads):
    rng = np.random.default_rng(3)
    n_trees, n_rows, n_slots = 2, 400, 6
    codes, implied = sparse_matrix(n_rows, seed=1)
    sparse = SparseCodes.from_array(codes, implied, 0.8)
    slot_of_row, rows, slots, chunk_start, count = _listed(n_trees, n_rows, n_slots, rng)
    got_slots = np.empty_like(slot_of_row)
    slots_of_listed_rows(rows, slots, chunk_start, count, got_slots)
    np.testing.assert_array_equal(got_slots, slot_of_row)
    if kind == "float":
        stats = rng.normal(size=(n_trees, n_rows, 2)).astype(np.float32)
        kernel_stats, width = stats, 2
    else:
        row_class = rng.integers(0, 2, n_rows).astype(np.uint8)
        draws = rng.integers(0, 3, (n_trees, n_rows)).astype(np.uint8)
        kernel_stats, width = ClassCounts(row_class, draws, 2), 4
        stats = np.zeros((n_trees, n_rows, 3), np.int32)
        stats[:, :, 0] = np.where(row_class == 0, draws, 0)
        stats[:, :, 1] = np.where(row_class == 1, draws, 0)
        stats[:, :, 2] = draws > 0
    dtype = np.float64 if kind == "float" else np.int32
    hist = np.zeros((n_slots, codes.shape[0], MAX_BIN, width), dtype)
    totals = np.zeros((n_slots, width), dtype)
    with thread_limit(threads):
        add_sparse_columns(sparse, kernel_stats, slot_of_row, hist, sparse.columns, totals)
        column_of = np.append(sparse.dense_columns, codes.shape[0]).astype(np.int64)
        build_histograms_selected(sparse.dense, kernel_stats, rows, slots, chunk_start,
                                  count, hist, column_of)
        # value bins: the codes drawn (MAX_BIN - 1 of them, the missing code last)
        fill_implied_bins(hist, np.unique(slot_of_row[slot_of_row >= 0]), sparse.columns,
                          sparse.implied, np.full(len(sparse.columns), MAX_BIN - 1), totals)
    n_stats = stats.shape[2]
    twin = np.zeros((n_slots, codes.shape[0], MAX_BIN, n_stats), dtype)
    twin[:, sparse.dense_columns] = naive_histograms(
        sparse.dense, stats, slot_of_row, n_slots)
    twin_totals = np.zeros((n_slots, n_stats), dtype)
    naive_sparse(sparse, stats.astype(dtype), slot_of_row, twin, twin_totals)
    np.testing.assert_array_equal(hist[..., :n_stats], twin)
    np.testing.assert_array_equal(totals[:, :n_stats], twin_totals)
    dense = naive_histograms(codes, stats, slot_of_row, n_slots)
    if kind == "float":
        np.testing.assert_allclose(hist[..., :n_stats], dense, rtol=0, atol=1e-9)
    else:
        np.testing.assert_array_equal(hist[..., :n_stats], dense)
