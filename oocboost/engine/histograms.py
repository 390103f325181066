"""Rows into node histograms: the grower's histogram builder.

It owns the histogram memory, a pool of slots (one node's histogram each, taken and
released as nodes are built and split, zeroed in bulk, grown under the plan's cap), and
turns a block's listed rows into sums in their nodes' slots (``kernels/histogram.py``).
Three ways, all ending in the same per-feature histograms before the split search:

* full histograms, one column per feature (or several for a wide categorical feature);
* per-node column subsets (a forest's ``max_features``): a slot holds its node's drawn
  features alone; small nodes may append row records instead and have them summed once
  the pass ends (``RECORD_SMALL_NODES``);
* bundled features (``cache/bundles.py``): rows go into histograms of the stored columns,
  expanded to features when the pass ends.

A block of a cache with sparse columns (``kernels.codes.SparseCodes``) adds its dense
columns as any block and walks only the entries of its sparse ones; when the pass ends,
each sparse column's implied bin is its node's total minus its other bins
(``kernels/sparse_histogram.py``). Per-node column subsets take such a block whole.

Once a pass ends, the other child of each split is its parent minus its built sibling
(``subtract``); a distributed run sums the built slots over the workers first.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numba
import numpy as np

from ..common import aligned_zeros, hist_column_starts, scratch_view
from ..kernels.bundles import expand_histograms
from ..kernels.codes import SparseCodes, as_array
from ..kernels.hist_ops import (
    node_sums_from_histograms,
    record_words,
    records_to_histograms,
    subtract_histograms,
    zero_slots,
)
from ..kernels.histogram import (
    build_histograms_all,
    build_histograms_columns,
    build_histograms_selected,
)
from ..kernels.sparse_histogram import (
    add_sparse_columns,
    fill_implied_bins,
    slots_of_listed_rows,
)
from .nodes import GrowerTelemetry

#: Let small per-node histograms be built from row records. Measured on 16 depth-12
#: forest trees, 1M x 28, 2 threads: below a few thousand rows a node's histogram updates
#: missed the cache at 20-35 ns each (3 ns at the root); models are bit-identical either
#: way (``tests/learners/test_forest.py``, ``tests/kernels/test_histogram.py``).
RECORD_SMALL_NODES = True


class HistogramBuilder:
    """The histograms of one grower's trees (module docstring).

    Parameters
    ----------
    shape : (n_columns, max_bin, width)
        One slot's histogram.
    dtype : numpy dtype
        float64 sums, or int32 when the policy's statistics are integers.
    max_slots : int or None
        Slots at most (``GrowthParams.max_hist_slots``).
    reuse : ndarray or None
        A previous builder's ``hist``, reused when its shape and dtype fit.
    column_of : ndarray or None
        First histogram column of each feature when a feature spans several.
    per_node_columns : int
        Columns a slot holds with per-node column subsets (0: full histograms).
    bundles : FeatureBundles or None
    n_value_bins : ndarray (n_features,) int32
    n_stats : int
    use_records : bool
        Small nodes may take record slots (per-node columns and a count statistic).
    telemetry : GrowerTelemetry
    """

    def __init__(self, *, shape: tuple[int, int, int], dtype: np.dtype,
                 max_slots: int | None, reuse: np.ndarray | None,
                 column_of: np.ndarray | None, per_node_columns: int, bundles: Any,
                 n_value_bins: np.ndarray, n_stats: int, use_records: bool,
                 telemetry: GrowerTelemetry) -> None:
        self.dtype = np.dtype(dtype)
        self.max_slots = max_slots
        self.column_of = column_of
        self.per_node_columns = per_node_columns
        self.n_stats = n_stats
        self.telemetry = telemetry
        self.reduce_hook: Callable[[np.ndarray, np.ndarray], None] | None = None
        fits = (reuse is not None and reuse.shape[1:] == tuple(shape)
                and reuse.dtype == self.dtype
                and (max_slots is None or reuse.shape[0] <= max_slots))
        # a reused pool's slots are zeroed when taken
        self.hist = reuse if fits else aligned_zeros((0,) + tuple(shape), self.dtype)
        self.bundles = bundles
        if bundles is not None:
            self._feature_starts = hist_column_starts(n_value_bins, shape[1])
            self._stored_starts = hist_column_starts(
                bundles.stored_value_bins(n_value_bins), shape[1])
            # rows go into stored-column histograms, all zero between passes
            self.stored_hist = aligned_zeros(
                (len(self.hist), int(self._stored_starts[-1])) + tuple(shape[1:]),
                self.dtype)
        #: Features of each slot's columns (per-node column subsets).
        self.slot_columns = np.zeros((len(self.hist), shape[0]), np.int32)
        self._n_slots = 0
        self._free: list[int] = []
        self._to_zero: list[np.ndarray] = []
        # Slots known to be all zero: per-node histograms are zeroed by the split search
        # right after it scans them (a reused pool's slots are not known to be zero).
        self.clean = np.zeros(len(self.hist), bool)
        # Record slots: expected rows per slot (0 for a histogram slot), rows appended so
        # far, and the record slots of the pass under way.
        self._record_capacity = np.zeros(len(self.hist), np.int64)
        self._record_fill = np.zeros(len(self.hist), np.int64)
        self._pass_records: list[tuple[np.ndarray, np.ndarray]] = []
        self.records = RECORD_SMALL_NODES and use_records and bool(per_node_columns)
        self._sparse = SparseColumns(n_value_bins if bundles is None
                                     else bundles.stored_value_bins(n_value_bins))

    # ------------------------------------------------------------------ slots
    @property
    def n_slots(self) -> int:
        """Slots allocated so far (each ``n_columns * max_bin * width`` numbers)."""
        return self.hist.shape[0]

    def take(self, count: int, zero: bool, return_clean: bool = False) -> Any:
        """``count`` free slots (int64 array). ``zero``: zeroed by :meth:`zero_taken`
        unless known to be zero; siblings filled by subtraction pass False, as the
        subtraction overwrites the whole slot, and so do record slots. ``return_clean``:
        also return which of them were known to be zero."""
        reused = min(count, len(self._free))
        slots = np.empty(count, np.int64)
        if reused:
            slots[:reused] = self._free[len(self._free) - reused:]
            del self._free[len(self._free) - reused:]
        if count > reused:
            first = self._n_slots
            self._n_slots += count - reused
            slots[reused:] = np.arange(first, self._n_slots)
            if self._n_slots > self.hist.shape[0]:
                self._grow(self._n_slots)
        was_clean = self.clean[slots]
        if zero:
            self._to_zero.append(slots[~was_clean])
        # taken slots receive rows or a subtraction next: none stays known to be zero
        self.clean[slots] = False
        return (slots, was_clean) if return_clean else slots

    def free(self, slots: list[int]) -> None:
        """Give slots back to the pool."""
        self._free.extend(slots)

    def zero_taken(self) -> None:
        """Zero the slots taken since the last call that were not known to be zero, in one
        parallel kernel call (one ``hist[slot] = 0`` per node cost 0.65 of 9.5 s for 16
        forest trees)."""
        if self._to_zero:
            dirty = np.concatenate(self._to_zero)
            if len(dirty):
                zero_slots(self.hist, dirty)
            self._to_zero = []

    def _grow(self, needed: int) -> None:
        """Grow the pool to at least ``needed`` slots, doubling under the cap."""
        size = self.hist.shape[0]
        cap = self.max_slots
        while size < needed:
            grown = max(2 * size, 4)
            if cap is not None:
                # Past 64 slots, straight to the planned pool: doubling a pool of hundreds
                # of MiB holds the old and the new copy at once (200 MiB over the plan,
                # measured). Slots never used are never touched, so the unused part of
                # the pool costs no RSS.
                grown = cap if grown > 64 else min(grown, cap)
            size = grown if grown > size else needed
        pool = aligned_zeros((size,) + self.hist.shape[1:], self.dtype)
        pool[: self.hist.shape[0]] = self.hist
        clean = np.ones(size, bool)  # the new slots are fresh zeros
        clean[: self.hist.shape[0]] = self.clean
        self.hist = pool
        self.clean = clean
        if self.bundles is not None:
            stored = aligned_zeros((size,) + self.stored_hist.shape[1:], self.dtype)
            stored[: len(self.stored_hist)] = self.stored_hist
            self.stored_hist = stored
        for name in ("_record_capacity", "_record_fill"):
            grown_array = np.zeros(size, np.int64)
            old = getattr(self, name)
            grown_array[: len(old)] = old
            setattr(self, name, grown_array)
        columns = np.zeros((size, self.slot_columns.shape[1]), np.int32)
        columns[: len(self.slot_columns)] = self.slot_columns
        self.slot_columns = columns

    # ------------------------------------------------------------------ records
    def record_fits(self, counts: np.ndarray, codes_dtype: np.dtype) -> np.ndarray:
        """Per new node with ``counts`` rows of non-zero count: True when its rows are to
        be recorded, i.e. their records fit in its slot."""
        if not self.records:
            return np.zeros(len(counts), bool)
        n_columns, max_bin, width = self.hist.shape[1:]
        words = record_words(self.n_stats, n_columns, np.dtype(codes_dtype).itemsize,
                             self.hist.itemsize)
        return (counts > 0) & (counts * words <= n_columns * max_bin * width)

    def expect_records(self, slots: np.ndarray, counts: np.ndarray,
                       was_clean: np.ndarray) -> None:
        """Record slots taken for nodes of ``counts`` rows, filled during the next pass."""
        self._record_capacity[slots] = counts.astype(np.int64)
        self._pass_records.append((slots, was_clean))

    def _sum_records(self, codes_dtype: np.dtype) -> None:
        slots = np.concatenate([s for s, _ in self._pass_records])
        was_clean = np.concatenate([c for _, c in self._pass_records])
        self._pass_records = []
        filled = self._record_fill[slots]
        if not np.array_equal(filled, self._record_capacity[slots]):
            raise RuntimeError("record slots received other row counts than their nodes "
                               "hold: the partition and the split disagree")
        t0 = time.perf_counter()
        words = self.hist.reshape(self.hist.shape[0], -1)
        records_to_histograms(self.hist, words, words.view(codes_dtype), slots, filled,
                              was_clean, self.n_stats)
        self.telemetry.histogram_s += time.perf_counter() - t0
        self.telemetry.record_nodes += len(slots)
        self._record_capacity[slots] = 0
        self._record_fill[slots] = 0

    # ------------------------------------------------------------------ rows in
    def _target(self) -> tuple[np.ndarray, np.ndarray | None]:
        """``(hist, column_of)`` that rows are added into: the stored columns' when
        features are bundled."""
        if self.bundles is None:
            return self.hist, self.column_of
        starts = self._stored_starts
        return self.stored_hist, None if starts[-1] == len(starts) - 1 else starts

    def can_add_roots(self, n_stats: int) -> bool:
        """Whether :meth:`add_roots` takes this layout (full histograms of 2 or 4 sums)."""
        return (not self.per_node_columns and self.hist.shape[3] in (2, 4)
                and n_stats <= self.hist.shape[3])

    def add_roots(self, codes: Any, stats: np.ndarray, root_slots: np.ndarray) -> None:
        """Every row of each tree into its root's slot, in order."""
        hist, column_of = self._target()
        t0 = time.perf_counter()
        if isinstance(codes, SparseCodes):
            slot_of_row = self._sparse.slot_scratch(len(root_slots), codes.n_rows)
            slot_of_row[:] = np.asarray(root_slots, np.int32)[:, None]
            column_of = self._sparse.add(codes, stats, slot_of_row, hist, column_of)
            if codes.dense.shape[0]:
                build_histograms_all(codes.dense, stats, root_slots, hist, column_of)
        else:
            build_histograms_all(codes, stats, root_slots, hist, column_of)
        self._account(t0, codes)

    def add_rows(self, codes: Any, stats: np.ndarray, rows: np.ndarray, slots: np.ndarray,
                 chunk_start: np.ndarray, chunk_count: np.ndarray) -> None:
        """The listed rows (``Partitioner.partition``) into their slots."""
        t0 = time.perf_counter()
        if self.per_node_columns:
            records = ((self._record_capacity, self._record_fill) if self._pass_records
                       else None)
            build_histograms_columns(as_array(codes), stats, rows, slots, chunk_start,
                                     chunk_count, self.slot_columns, self.hist, records)
        elif isinstance(codes, SparseCodes):
            hist, column_of = self._target()
            slot_of_row = self._sparse.slot_scratch(rows.shape[0], codes.n_rows)
            slots_of_listed_rows(rows, slots, chunk_start, chunk_count, slot_of_row)
            column_of = self._sparse.add(codes, stats, slot_of_row, hist, column_of)
            if codes.dense.shape[0]:
                build_histograms_selected(codes.dense, stats, rows, slots, chunk_start,
                                          chunk_count, hist, column_of)
        else:
            hist, column_of = self._target()
            build_histograms_selected(codes, stats, rows, slots, chunk_start, chunk_count,
                                      hist, column_of)
        self._account(t0, codes)

    def _account(self, t_start: float, codes: Any) -> None:
        tel = self.telemetry
        tel.histogram_s += time.perf_counter() - t_start
        tel.rows_streamed += codes.shape[1]
        tel.code_bytes_streamed += codes.nbytes

    # ------------------------------------------------------------------ pass end
    def complete_pass(self, built: np.ndarray, codes_dtype: np.dtype) -> None:
        """Finish the slots rows went into this pass (``built``): sum the record slots,
        expand bundled columns to features, and sum over the workers of a distributed
        run. Histogram time, not split time."""
        if self._pass_records:
            self._sum_records(codes_dtype)
        if self._sparse.seen is not None and len(built):
            t0 = time.perf_counter()
            self._sparse.fill(self._target()[0], np.unique(built))
            self.telemetry.histogram_s += time.perf_counter() - t0
        if self.bundles is not None and len(built):
            t0 = time.perf_counter()
            b = self.bundles
            expand_histograms(self.stored_hist, self.hist, built, b.col_ptr, b.col_members,
                              b.default_bin, b.code_feature, b.code_bin,
                              self._stored_starts, self._feature_starts)
            zero_slots(self.stored_hist, built)
            self.telemetry.histogram_s += time.perf_counter() - t0
        if self.reduce_hook is not None:
            self.reduce_hook(self.hist, np.unique(built).astype(np.int64))

    def subtract(self, triples: list[np.ndarray]) -> None:
        """``hist[sibling] = hist[parent] - hist[built]`` for each ``(parent, built,
        sibling)`` row of ``triples``; the parents' slots are freed."""
        # contiguous rows: numpy flags a one-triple column slice contiguous and a longer
        # one not, which had numba compile the kernel twice
        parents, built, siblings = np.ascontiguousarray(np.concatenate(triples).T)
        subtract_histograms(self.hist, parents, built, siblings)
        self.free(parents.tolist())

    def node_sums(self, slots: np.ndarray) -> np.ndarray:
        """float64 ``(len(slots), n_stats)``: each node's statistics summed over the bins
        of one feature (the first of the narrowest: one column unless every feature is
        wide)."""
        if self.column_of is None:
            first, width = 0, 1
        else:
            widths = np.diff(self.column_of)
            f = int(np.argmin(widths))
            first, width = int(self.column_of[f]), int(widths[f])
        sums = np.empty((len(slots), self.n_stats), np.float64)
        node_sums_from_histograms(self.hist, slots, sums, first, width)
        return sums


def use_records(n_trees: int, count_marks_rows: bool) -> bool:
    """Records are appended one tree per thread: only with at least as many trees in the
    pass as threads, and statistics whose last column counts rows (CART's)."""
    return bool(count_marks_rows) and n_trees >= numba.get_num_threads()


class SparseColumns:
    """The sparse columns of one pass's blocks (``kernels/sparse_histogram.py``): which
    histogram columns were sparse in some block and their implied codes, and the rows'
    statistics summed per slot, until :meth:`fill` completes the pass."""

    def __init__(self, value_bins: np.ndarray) -> None:
        self.value_bins = np.asarray(value_bins, np.int64)   # per stored column
        self.seen: np.ndarray | None = None      # bool per histogram column, or None
        self.implied: np.ndarray | None = None   # int64 per histogram column
        self.column_bins: np.ndarray | None = None   # value bins per histogram column
        self.total_column: int | None = None    # histogram column that sums each node
        self.totals: np.ndarray | None = None    # (n_slots, width)
        self._slot_of_row: np.ndarray | None = None

    def slot_scratch(self, n_trees: int, n_rows: int) -> np.ndarray:
        """An int32 ``(n_trees, n_rows)`` buffer for each row's slot, kept between
        blocks."""
        view = scratch_view(self._slot_of_row, (n_trees, n_rows), np.int32)
        self._slot_of_row = view[0]
        return view[1]

    def add(self, codes: SparseCodes, stats: Any, slot_of_row: np.ndarray,
            hist: np.ndarray, column_of: np.ndarray | None) -> np.ndarray:
        """Add the block's sparse entries and its rows' totals; returns the histogram
        column of each dense column, with the end column (``column_of`` of
        ``codes.dense``)."""
        n_columns, width = hist.shape[1], hist.shape[3]
        starts = np.arange(n_columns + 1) if column_of is None else np.asarray(column_of)
        if self.seen is None or self.seen.shape[0] != n_columns:
            self.seen = np.zeros(n_columns, bool)
            self.implied = np.zeros(n_columns, np.int64)
            self.column_bins = np.zeros(n_columns, np.int64)
        if self.totals is None or self.totals.shape[0] < hist.shape[0] or \
                self.totals.shape[1] != width or self.totals.dtype != hist.dtype:
            grown = np.zeros((hist.shape[0], width), hist.dtype)
            if self.totals is not None and self.totals.shape[1:] == (width,):
                grown[: len(self.totals)] = self.totals
            self.totals = grown
        sparse_columns = starts[codes.columns]
        self.seen[sparse_columns] = True
        self.implied[sparse_columns] = codes.implied
        self.column_bins[sparse_columns] = self.value_bins[codes.columns]
        # a column dense in every block has every row of a node in its histogram: the
        # node's total is its sum, so the rows are not summed again (a narrow one only)
        c = codes.total_column
        self.total_column = (int(starts[c]) if c >= 0 and starts[c + 1] - starts[c] == 1
                             else None)
        add_sparse_columns(codes, stats, slot_of_row, hist, sparse_columns,
                           self.totals if self.total_column is None else None)
        return np.append(starts[codes.dense_columns], starts[-1]).astype(np.int64)

    def fill(self, hist: np.ndarray, built: np.ndarray) -> None:
        """Complete the implied bins of the columns seen sparse, in the ``built`` slots,
        and start the next pass."""
        columns = np.flatnonzero(self.seen)
        if len(columns):
            if self.total_column is not None:
                self.totals[built] = hist[built, self.total_column].sum(axis=1)
            fill_implied_bins(hist, built, columns, self.implied[columns],
                              self.column_bins[columns], self.totals)
        self.totals[built] = 0
        self.seen[:] = False
