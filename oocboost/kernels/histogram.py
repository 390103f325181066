"""Histogram kernels: per (slot, feature, bin) sums of per-row statistics, one block at a time.

Layout::

    hist[slot, feature, bin, lane]   float64 or int32, (n_slots, n_features, max_bin, width)
    stats[tree, row, stat]           float32, (n_trees, n_rows, n_stats)
    slot_of_row[tree, row]           int32,   (n_trees, n_rows); -1 = row not accumulated
    codes[feature, row]              uint8/uint16, (n_features, n_rows)
    column_of[feature]               int64, (n_features + 1,) or None

``column_of`` (``common.hist_column_starts``) gives each feature its first histogram
column; a wide categorical feature owns several consecutive columns and its bins run on
through them (bin ``b`` of the feature is column ``column_of[f] + b // max_bin``, bin
``b % max_bin``). None: column ``f`` is feature ``f``, the only case numba compiles
without the lookup (and the only one forests' per-node columns take).

``width`` is ``common.hist_width(n_stats)``: up to 4 statistics are padded to 4 lanes so a
bin is updated by one vector add (``kernels/simd.py``); lanes past ``n_stats`` stay 0.
Sums are float64, or int32 when every statistic is an integer (a forest's unweighted
class counts, ``common.INT_HIST_DTYPE``): the same sums, exactly, in half the bytes.
The kernels also accept an unpadded ``width == n_stats`` (a scalar loop), so callers
outside the grower may pass plain ``(..., n_stats)`` arrays.

A *slot* is a histogram in the grower's pool; several trees grown in the same pass share one
pool, so ``slot_of_row`` already encodes the tree. The kernels never allocate or zero
``hist``: the same node histogram receives one call per block.

Parallelism is over features: each thread owns whole ``hist[:, f]`` slices, so there are
no write conflicts and no per-thread copies to reduce.
"""
from typing import NamedTuple

import numba
import numpy as np
from numba import njit, prange

from ..common import HIST_LANES
from .codes import PlaneCodes, code_arrays, read_only
from .hist_ops import record_words
from .partition import partition_select_rows
from .simd import add2, add4

#: Features a thread updates per row visit, at most. The row's statistics are loaded once
#: and added into this many feature histograms, whose independent read-modify-writes
#: overlap; one feature at a time re-loads the statistics for every (row, feature) and
#: stalls on repeated bins of low-cardinality features. Measured on 1M x 28 codes, 2
#: threads, with the 4-lane vector update: 14 features (each thread's whole share) beat
#: 7 at every depth (root 17.8 -> 15.5 ms, 45% of the rows 8.5 -> 6.9 ms, 10% 2.4 -> 1.9);
#: with scalar updates 7 had been best. Wider data still walks its rows in chunks of 14
#: features so a pass reads at most 14 code columns at once.
FEATURE_CHUNK = 14

#: Columns a row's update covers in the loop compiled with a fixed trip count, which LLVM
#: unrolls (with 256 bins; see _update). Equal to FEATURE_CHUNK, so a thread's whole
#: chunk of features takes it: 28 features on 1 or 2 threads do throughout; other widths
#: take the generic loop (up to 1.8x slower per update).
UNROLLED_COLUMNS = 14

#: The other width compiled with a fixed trip count: 8 features on 2 threads (4 a
#: thread) walked their rows 2.5x faster at the root and 1.5x on listed rows with it. It
#: is a specialization of its own, chosen by the type of the kernels' ``unroll`` tag
#: (:func:`_unroll_tag`), never a branch beside the 14-column loop: in one function the
#: two fixed loops made both slower (28 features 1.5x, 8 features 1.3x) and doubled the
#: compile time of every specialization.
SMALL_UNROLLED_COLUMNS = 4
#: ``unroll`` tags: numba compiles the kernels once per tag type and reads ``ndim`` as a
#: constant, so each specialization holds one fixed-count loop.
UNROLL_WIDE = np.empty(0, np.uint8)
UNROLL_SMALL = np.empty((0, 0), np.uint8)
#: ``lanes`` tags of the kernels, by the lanes of a bin's update (4, 2, or 0 for the
#: scalar loop): read as a constant (``ndim``) like the ``unroll`` tags, so a
#: specialization compiles the one loop it runs. (As a runtime integer every
#: specialization compiled all three: 2.4-2.7 s of each boosting histogram kernel's
#: 4.3 s, of which the 4-lane and scalar loops it never ran were 1.2-1.3 s.)
LANES_TAGS = {4: np.empty((0, 0, 0), np.uint8), 2: np.empty((0, 0), np.uint8),
              0: np.empty(0, np.uint8)}


def _unroll_tag(n_features, n_groups, vector=2):
    """UNROLL_SMALL when every thread's group of features is SMALL_UNROLLED_COLUMNS
    wide (the groups of :func:`_build_histograms_grouped`) and a bin is boosting's 2
    lanes, else UNROLL_WIDE. (Only boosting: every tag is one more compiled
    specialization of the kernels, and the test suite's cold run has a time budget.)"""
    if vector != 2:
        return UNROLL_WIDE
    sizes = {(g + 1) * n_features // n_groups - g * n_features // n_groups
             for g in range(n_groups)}
    return UNROLL_SMALL if sizes == {SMALL_UNROLLED_COLUMNS} else UNROLL_WIDE


class ClassCounts(NamedTuple):
    """The statistics of unweighted classification, made in the kernels instead of read.

    Row ``i`` of tree ``t`` adds its draw ``d = draws[t, i]`` (1 when ``draws`` has no
    columns: every row once) to lane ``row_class[i]`` and ``1 if d > 0`` to the count lane
    ``n_classes``: the statistics ``kernels/cart_stats.cart_stats`` writes for unit
    weights, without writing them. A binary forest of 16 trees then reads 2 bytes per
    (row, tree) instead of 24 (three float64 statistics), and skips the statistics sweep
    of every pass.

    Accepted wherever the kernels take ``stats``, with int32 histograms.
    """

    row_class: np.ndarray    # (n_rows,) uint8 or uint16, class index 0..K-1
    draws: np.ndarray        # (n_trees, n_rows) uint8 (float32 past 255 copies), or
    #                          (n_trees, 0)
    n_classes: int           # K

    @property
    def n_trees(self):
        return self.draws.shape[0]

    @property
    def n_stats(self):
        return self.n_classes + 1


def _stat_arrays(stats):
    """``(dense, row_class, draws)`` for the kernels: stored statistics with
    ``row_class = draws = None`` (numba then compiles the kernels without the class
    branch: as a runtime test it made the boosting histograms 50% slower), or a
    :class:`ClassCounts` with an empty ``(n_trees, 0, n_stats)`` int32 array standing
    for the stored statistics."""
    if isinstance(stats, ClassCounts):
        dense = np.zeros((stats.n_trees, 0, stats.n_stats), np.int32)
        return dense, stats.row_class, stats.draws
    return stats, None, None


@njit(inline="always")
def _draw(draws, t, i):
    """Copies of row ``i`` in tree ``t`` (1 when ``draws`` has no columns)."""
    return np.int32(draws[t, i]) if draws.shape[1] > 0 else np.int32(1)


@njit(inline="always")
def _class_lane(d, k, m, n_classes):
    """Lane ``m`` of a row of class ``k`` drawn ``d`` times (:class:`ClassCounts`)."""
    if m < n_classes:
        return d if k == m else np.int32(0)
    if m == n_classes:
        return np.int32(d > 0)
    return np.int32(0)


@njit(inline="always")
def _row_stat(stats_t, row_class, draws, t, i, m, n_classes):
    """Statistic ``m`` of row ``i`` of tree ``t``: stored, or from its class and draw. For
    the record kernel's per-row paths; ``row_class is None`` is pruned at compile time."""
    if row_class is None:
        return stats_t[i, m]
    return _class_lane(_draw(draws, t, i), np.int64(row_class[i]), m, n_classes)


@njit(inline="always")
def _row_lanes(stats_t, row_class, draws, t, i, n_stats):
    """The 4 vector lanes of row ``i`` of tree ``t`` (statistics, then 0 padding):
    stored, or from its class and draw when ``row_class`` is not None (pruned at
    compile time, see :func:`_stat_arrays`)."""
    if row_class is None:
        u = np.uint64(i)
        return (stats_t[u, 0], stats_t[u, 1] if n_stats > 1 else 0,
                stats_t[u, 2] if n_stats > 2 else 0, stats_t[u, 3] if n_stats > 3 else 0)
    d = _draw(draws, t, i)
    k = np.int64(row_class[i])
    n_classes = n_stats - 1
    return (_class_lane(d, k, 0, n_classes), _class_lane(d, k, 1, n_classes),
            _class_lane(d, k, 2, n_classes), _class_lane(d, k, 3, n_classes))


@njit(inline="always")
def _update(codes, i, hist, first, q0, width, n_bins, slot_columns, column_of, s, s0, s1,
            s2, s3, lanes):
    """Add one row's lanes (4, or the first 2; ``lanes`` is a compile-time literal) into
    columns ``q0 .. q0 + width`` of slot ``s``, whose column ``q0`` starts at flat index
    ``first`` of ``hist``. Offsets are taken from column ``q0`` so that, with ``width``
    and ``n_bins`` known at compile time, each column's offset is a constant of the
    instruction instead of a register (LLVM spilled the 14 hoisted offsets to the
    stack). With ``column_of`` the bin is moved by the columns the feature lies past
    column ``q``, which lands a wide feature's code in its own later columns."""
    for qq in range(width):
        q = q0 + qq
        f = q if slot_columns is None else slot_columns[s, q]
        b = np.int64(codes[np.uint64(f), np.uint64(i)])
        if column_of is not None:
            b += (column_of[f] - q) * n_bins
        if lanes == 4:
            add4(hist, first + (qq * n_bins + b) * 4, s0, s1, s2, s3)
        else:
            add2(hist, first + (qq * n_bins + b) * 2, s0, s1)


@njit(cache=True, nogil=True)
def _add_rows(codes, wide, wide_row, stats, row_class, draws, t, rows_t, slots_t, lo, hi, q0,
              q1, slot_columns, column_of, hist, n_stats, lanes, unroll):
    """Add listed rows ``lo .. hi`` of tree ``t`` into columns ``q0 .. q1`` of their slots'
    histograms; with ``rows_t`` None, rows ``lo .. hi`` themselves into slot
    ``slots_t[0]`` (a root pass, see :func:`build_histograms_all`). Column ``q`` of slot
    ``s`` is feature ``slot_columns[s, q]``, or feature ``q`` when ``slot_columns`` is
    None (full histograms; numba compiles that case without the lookup, which cost 5-8%
    of the full kernel as a runtime test). The statistics are ``stats[t]``'s, or, when
    ``row_class`` is not None, made from the rows' classes and draws
    (:class:`ClassCounts`).

    One compiled loop per bin width (4 lanes, 2 lanes, scalar), and in the vector loops
    an update of exactly ``UNROLLED_COLUMNS`` columns (of 256 bins, the default) compiled
    with that trip count, which LLVM unrolls: 1M rows x 28 features, 2 threads, 2 lanes,
    12.9 -> 8.0 ms for listed rows and 11.2 -> 6.1 ms for every row. (A runtime trip
    count gave a loop; all widths in one loop kept LLVM from unrolling.)

    ``wide`` and ``wide_row`` are a ``PlaneCodes``' (``codes`` its low bytes), or None
    for plain codes (pruned at compile time). ``lanes`` is a ``LANES_TAGS`` tag."""
    if wide is not None:
        if lanes.ndim == 3:
            _add_rows_mixed(codes, wide, wide_row, stats[t], row_class, draws, t, rows_t,
                            slots_t, lo, hi, q0, q1, column_of, hist, n_stats, 4)
        elif lanes.ndim == 2:
            _add_rows_mixed(codes, wide, wide_row, stats[t], row_class, draws, t, rows_t,
                            slots_t, lo, hi, q0, q1, column_of, hist, n_stats, 2)
        else:
            _add_rows_mixed(codes, wide, wide_row, stats[t], row_class, draws, t, rows_t,
                            slots_t, lo, hi, q0, q1, column_of, hist, n_stats, 0)
        return
    if lanes.ndim == 3:
        _add_rows_vector(codes, stats[t], row_class, draws, t, rows_t, slots_t, lo, hi, q0,
                         q1, slot_columns, column_of, hist, n_stats, 4, unroll)
    elif lanes.ndim == 2:
        _add_rows_vector(codes, stats[t], row_class, draws, t, rows_t, slots_t, lo, hi, q0,
                         q1, slot_columns, column_of, hist, n_stats, 2, unroll)
    else:
        _add_rows_scalar(codes, stats[t], row_class, draws, t, rows_t, slots_t, lo, hi, q0,
                         q1, slot_columns, column_of, hist, n_stats)


@njit(inline="always")
def _row_and_slot(rows_t, slots_t, j):
    """Row ``j`` of the list and its slot; with no list (``rows_t`` None, pruned at
    compile time) row ``j`` itself, in slot ``slots_t[0]``."""
    if rows_t is None:
        return np.int64(j), np.int64(slots_t[0])
    return np.int64(rows_t[j]), np.int64(slots_t[j])


@njit(cache=True, nogil=True)
def _add_rows_vector(codes, stats_t, row_class, draws, t, rows_t, slots_t, lo, hi, q0, q1,
                     slot_columns, column_of, hist, n_stats, lanes, unroll):
    """The vector loop of :func:`_add_rows`. ``lanes`` (4 or 2) is a literal at every call,
    so numba compiles one loop per width and prunes the other width's update (one loop
    testing the lane count per update had made boosting's histograms 17% slower).

    (Loops with a constant count for 7 and 4 columns too made 8 features' root pass 2x
    faster but every specialization of this kernel took 2x longer to compile: the test
    suite's cold run went past its 15 minutes. Not kept.)"""
    n_bins = hist.shape[2]
    slot_size = hist.shape[1] * n_bins * lanes
    for j in range(lo, hi):
        i, s = _row_and_slot(rows_t, slots_t, j)
        s0, s1, s2, s3 = _row_lanes(stats_t, row_class, draws, t, i, n_stats)
        first = s * slot_size + q0 * n_bins * lanes
        if unroll.ndim == 2:
            if q1 - q0 == SMALL_UNROLLED_COLUMNS and n_bins == 256:
                _update(codes, i, hist, first, q0, SMALL_UNROLLED_COLUMNS, 256,
                        slot_columns, column_of, s, s0, s1, s2, s3, lanes)
            else:
                _update(codes, i, hist, first, q0, q1 - q0, n_bins, slot_columns,
                        column_of, s, s0, s1, s2, s3, lanes)
        elif q1 - q0 == UNROLLED_COLUMNS and n_bins == 256:
            _update(codes, i, hist, first, q0, UNROLLED_COLUMNS, 256, slot_columns,
                    column_of, s, s0, s1, s2, s3, lanes)
        else:
            _update(codes, i, hist, first, q0, q1 - q0, n_bins, slot_columns, column_of,
                    s, s0, s1, s2, s3, lanes)


@njit(cache=True, nogil=True)
def _add_rows_scalar(codes, stats_t, row_class, draws, t, rows_t, slots_t, lo, hi, q0, q1,
                     slot_columns, column_of, hist, n_stats):
    n_classes = n_stats - 1
    for j in range(lo, hi):
        i, s = _row_and_slot(rows_t, slots_t, j)
        if row_class is None:
            for q in range(q0, q1):
                c, b = _column_and_bin(codes, i, s, q, slot_columns, column_of, hist)
                for m in range(n_stats):
                    hist[s, c, b, m] += stats_t[i, m]
        else:
            d = _draw(draws, t, i)
            k = np.int64(row_class[i])
            for q in range(q0, q1):
                c, b = _column_and_bin(codes, i, s, q, slot_columns, column_of, hist)
                for m in range(n_stats):
                    hist[s, c, b, m] += _class_lane(d, k, m, n_classes)


@njit(cache=True, nogil=True)
def _add_rows_mixed(low, wide, wide_row, stats_t, row_class, draws, t, rows_t, slots_t, lo,
                    hi, q0, q1, column_of, hist, n_stats, lanes):
    """:func:`_add_rows` over a ``PlaneCodes`` (full histograms, ``column_of`` given): per
    row, the runs of one-byte columns are updated as plain codes and each wide column
    from its two-byte codes, so the statistics are read once a row and the narrow
    columns never test their width. (Testing it per code made a categorical bench's
    histograms 25% slower than two-byte codes; a sweep of its own for the wide column
    15%.) ``lanes``: 4 or 2 for the vector update, 0 for the scalar loop."""
    n_bins = hist.shape[2]
    width = hist.shape[3]
    slot_size = hist.shape[1] * n_bins * width
    runs = np.empty((q1 - q0 + 1, 2), np.int64)
    wide_columns = np.empty(q1 - q0, np.int64)
    n_runs = n_wide = 0
    start = q0
    for q in range(q0, q1 + 1):
        if q < q1 and wide_row[q] < 0:
            continue
        if q > start:
            runs[n_runs, 0] = start
            runs[n_runs, 1] = q
            n_runs += 1
        if q < q1:
            wide_columns[n_wide] = q
            n_wide += 1
        start = q + 1
    a0 = runs[0, 0]
    width0 = runs[0, 1] - a0
    wide0 = wide_columns[0] if n_wide > 0 else 0
    wide_k0 = wide_row[wide0]
    flat = hist.reshape(-1)
    for j in range(lo, hi):
        i, s = _row_and_slot(rows_t, slots_t, j)
        base = s * slot_size
        if lanes == 0:
            for q in range(q0, q1):
                k = wide_row[q]
                code = np.int64(low[q, i]) if k < 0 else np.int64(wide[k, i])
                at = base + (column_of[q] * n_bins + code) * width
                for m in range(n_stats):
                    flat[at + m] += _row_stat(stats_t, row_class, draws, t, i, m,
                                              n_stats - 1)
            continue
        s0, s1, s2, s3 = _row_lanes(stats_t, row_class, draws, t, i, n_stats)
        # the first run and wide column from locals: read from the arrays after every
        # store to hist (which LLVM cannot prove apart), they made the loop 40% slower
        if n_runs > 0:
            _update(low, i, hist, base + a0 * n_bins * lanes, a0, width0, n_bins, None,
                    column_of, s, s0, s1, s2, s3, lanes)
        for r in range(1, n_runs):
            a = runs[r, 0]
            _update(low, i, hist, base + a * n_bins * lanes, a, runs[r, 1] - a, n_bins,
                    None, column_of, s, s0, s1, s2, s3, lanes)
        for w in range(n_wide):
            q = wide0 if w == 0 else wide_columns[w]
            k = wide_k0 if w == 0 else wide_row[q]
            at = base + (column_of[q] * n_bins + np.int64(wide[k, i])) * lanes
            if lanes == 4:
                add4(hist, at, s0, s1, s2, s3)
            else:
                add2(hist, at, s0, s1)


@njit(inline="always")
def _column_and_bin(codes, i, s, q, slot_columns, column_of, hist):
    """Histogram column and bin of row ``i``'s code in column ``q`` (a wide feature's code
    runs on into its later columns)."""
    f = q if slot_columns is None else slot_columns[s, q]
    b = np.int64(codes[f, i])
    if column_of is None:
        return q, b
    n_bins = hist.shape[2]
    return column_of[f] + b // n_bins, b % n_bins


@njit(parallel=True, cache=True, nogil=True)
def _build_histograms_grouped(codes, wide, wide_row, stats, row_class, draws, rows, slots,
                              chunk_start, chunk_count, column_of, hist, n_groups,
                              feature_chunk, lanes, unroll):
    """Full histograms: thread ``g`` owns a range of features for every tree. With
    ``rows`` None every row of tree ``t`` goes into slot ``slots[t, 0]``."""
    n_features = codes.shape[0]
    n_trees = stats.shape[0]
    n_stats = stats.shape[2]
    n_chunks = chunk_start.shape[0]
    for g in prange(n_groups):
        f_lo = g * n_features // n_groups
        f_hi = (g + 1) * n_features // n_groups
        for f0 in range(f_lo, f_hi, feature_chunk):
            f1 = min(f_hi, f0 + feature_chunk)
            for t in range(n_trees):
                if rows is None:
                    _add_rows(codes, wide, wide_row, stats, row_class, draws, t, None,
                              slots[t], 0, codes.shape[1], f0, f1, None, column_of, hist,
                              n_stats, lanes, unroll)
                    continue
                for c in range(n_chunks):
                    lo = chunk_start[c]
                    _add_rows(codes, wide, wide_row, stats, row_class, draws, t, rows[t],
                              slots[t], lo, lo + chunk_count[t, c], f0, f1, None,
                              column_of, hist, n_stats, lanes, unroll)


def _column_lookup(codes, hist, column_of):
    """``column_of`` for the kernels: None when column ``f`` is feature ``f``."""
    if column_of is None:
        if hist.shape[1] != codes.shape[0]:
            raise ValueError(f"histograms of {hist.shape[1]} columns for {codes.shape[0]} "
                             f"features need the features' first columns (column_of)")
        return None
    column_of = np.ascontiguousarray(column_of, dtype=np.int64)
    if column_of.shape != (codes.shape[0] + 1,) or column_of[-1] != hist.shape[1]:
        raise ValueError(f"column_of must hold {codes.shape[0] + 1} column starts ending "
                         f"at the histograms' {hist.shape[1]} columns, got {column_of}")
    return None if column_of[-1] == codes.shape[0] else column_of


def build_histograms_all(codes, stats, slot_of_tree, hist, column_of=None):
    """Add every row of one block into one histogram per tree: tree ``t``'s rows into slot
    ``slot_of_tree[t]`` (a boosting root pass, where no row has moved and none is left
    out).

    :func:`build_histograms_selected` with no row list: the rows are walked in order, so
    the sums are the same, bit for bit, and the partition sweep that would list them is
    skipped. On 1M x 28 codes, 2 threads, a root pass took 15.1 ms against 19.3 ms for
    listing the rows and adding the list (6.1 ms with the unrolled updates of
    :func:`_add_rows`).

    Parameters
    ----------
    codes : ndarray (n_features, n_rows) uint8 or uint16, or PlaneCodes   # IN
    stats : ndarray (n_trees, n_rows, n_stats) float32 or int32, or ClassCounts   # IN
    slot_of_tree : ndarray (n_trees,) int32                         # IN
    hist : ndarray (n_slots, n_columns, max_bin, width) float64 or int32, ``width`` 2 or 4
        lanes for up to as many statistics                          # IN/OUT, accumulated
    column_of : ndarray (n_features + 1,) int64 or None, see the module docstring   # IN
    """
    dense, row_class, draws = _stat_arrays(stats)
    vector = _vector_update(dense, hist)
    if vector == 0:
        raise ValueError(f"build_histograms_all takes histograms of 2 or 4 lanes a bin for "
                         f"up to as many statistics, got width {hist.shape[3]} for "
                         f"{dense.shape[2]} statistics")
    n_groups = max(1, min(numba.get_num_threads(), codes.shape[0]))
    slots = np.ascontiguousarray(slot_of_tree, dtype=np.int32).reshape(-1, 1)
    no_chunks = np.zeros((slots.shape[0], 0), np.int64)
    _build_histograms_grouped(*code_arrays(codes), dense, row_class, draws, None, slots,
                              no_chunks[0], no_chunks, _column_lookup(codes, hist, column_of),
                              hist, n_groups, FEATURE_CHUNK, LANES_TAGS[vector],
                              _unroll_tag(codes.shape[0], n_groups, vector))


def _vector_update(stats, hist):
    """Lanes of the vector add that updates a bin: 4 (up to 4 statistics padded to 4),
    2 (2 statistics), or 0 for the scalar loop. Raises for a histogram the kernels
    cannot address (they compute flat offsets) and for float statistics into int32
    sums."""
    if not (hist.flags.c_contiguous and hist.dtype in (np.float64, np.int32)):
        raise ValueError(f"histograms must be a C-contiguous float64 or int32 array, got "
                         f"{hist.dtype} with strides {hist.strides}")
    if hist.dtype == np.int32 and stats.dtype.kind not in "iu":
        raise ValueError(f"int32 histograms take integer statistics, got {stats.dtype}")
    if hist.shape[3] == HIST_LANES and stats.shape[2] <= HIST_LANES:
        return HIST_LANES
    if hist.shape[3] == 2 and stats.shape[2] <= 2:
        return 2
    return 0


def build_histograms_selected(codes, stats, rows, slots, chunk_start, chunk_count, hist,
                              column_of=None):
    """Add listed rows of one block into the histograms of their slots.

    The rows come as consecutive chunks of a list: chunk ``c`` of tree ``t`` is
    ``rows[t, chunk_start[c] : chunk_start[c] + chunk_count[t, c]]`` with its slots in
    ``slots``, rows ascending across the chunks (what ``partition.partition_select_rows``
    writes, one chunk per thread's share of the block, so it need not be compacted again).

    Parameters
    ----------
    codes : ndarray (n_features, n_rows) uint8 or uint16, or PlaneCodes   # IN
    stats : ndarray (n_trees, n_rows, n_stats) float32, float64 or int32,
        or ClassCounts                                              # IN
    rows, slots : ndarray (n_trees, n_rows) int32                   # IN
    chunk_start : ndarray (n_chunks,) int64                         # IN
    chunk_count : ndarray (n_trees, n_chunks) int64                 # IN
    hist : ndarray (n_slots, n_columns, max_bin, width) float64    # IN/OUT, accumulated
        ``width`` is ``hist_width(n_stats)`` (vector updates) or ``n_stats``.
    column_of : ndarray (n_features + 1,) int64 or None, see the module docstring   # IN

    One parallel region per call: thread ``g`` owns a contiguous range of features and
    walks the listed rows once per chunk of ``FEATURE_CHUNK`` of them, so threads never
    wait for each other mid-block. (A launch per tile measured 2.5-4x slower when the
    cores were shared with other processes.) Each (slot, feature) histogram is summed by
    one thread in row order, so the result does not depend on the thread count::

        28 features, 2 threads:  thread 0: rows x [f0..f13]   thread 1: rows x [f14..f27]
        60 features, 2 threads:  thread 0: rows x [f0..f13], rows x [f14..f27], rows x
        [f28..f29]
    """
    n_groups = max(1, min(numba.get_num_threads(), codes.shape[0]))
    dense, row_class, draws = _stat_arrays(stats)
    vector = _vector_update(dense, hist)
    _build_histograms_grouped(*code_arrays(codes), dense, row_class, draws, rows, slots,
                              chunk_start, chunk_count, _column_lookup(codes, hist, column_of),
                              hist, n_groups, FEATURE_CHUNK, LANES_TAGS[vector],
                              _unroll_tag(codes.shape[0], n_groups, vector))


@njit(parallel=True, cache=True, nogil=True)
def _build_histograms_columns(codes, stats, row_class, draws, rows, slots,
                              chunk_start, chunk_count, slot_columns, hist, n_column_groups,
                              lanes):
    """Per-node columns: task (tree, group of columns); trees own disjoint slots."""
    n_trees = stats.shape[0]
    n_stats = stats.shape[2]
    n_columns = hist.shape[1]
    n_chunks = chunk_start.shape[0]
    for task in prange(n_trees * n_column_groups):
        t = task // n_column_groups
        g = task - t * n_column_groups
        q_lo = g * n_columns // n_column_groups
        q_hi = (g + 1) * n_columns // n_column_groups
        for c in range(n_chunks):
            lo = chunk_start[c]
            _add_rows(codes, None, None, stats, row_class, draws, t, rows[t], slots[t], lo,
                      lo + chunk_count[t, c], q_lo, q_hi, slot_columns, None, hist,
                      n_stats, lanes, UNROLL_WIDE)


@njit(parallel=True, cache=True, nogil=True)
def _build_histograms_columns_records(codes, stats, row_class, draws, rows,
                                      slots, chunk_start, chunk_count, slot_columns, hist,
                                      record_capacity, record_fill, slot_words, slot_codes,
                                      vector):
    """:func:`_build_histograms_columns` with record slots; one task per tree (a tree's
    records are appended in row order by one thread). Returns the number of records
    that found their slot full (0 unless the expected counts were wrong)."""
    n_trees = stats.shape[0]
    n_stats = stats.shape[2]
    n_columns = hist.shape[1]
    n_bins = hist.shape[2]
    n_chunks = chunk_start.shape[0]
    count_stat = n_stats - 1
    words = record_words(n_stats, n_columns, slot_codes.itemsize, slot_words.itemsize)
    per_word = slot_words.itemsize // slot_codes.itemsize
    code_offset = (n_stats - 1) * per_word
    code_stride = words * per_word
    overflow = np.zeros(n_trees, np.int64)
    for t in prange(n_trees):
        stats_t = stats[t]
        rows_t = rows[t]
        slots_t = slots[t]
        for c in range(n_chunks):
            lo = chunk_start[c]
            for j in range(lo, lo + chunk_count[t, c]):
                i = rows_t[j]
                s = slots_t[j]
                capacity = record_capacity[s]
                if capacity == 0:
                    # the inline row update of _add_rows (calling _add_rows for one row
                    # at a time made this kernel 20-30% slower: 16 forest trees, 1M rows)
                    if vector == 4:
                        s0, s1, s2, s3 = _row_lanes(stats_t, row_class, draws, t, i,
                                                    n_stats)
                        _update(codes, i, hist, np.int64(s) * n_columns * n_bins * 4, 0,
                                n_columns, n_bins, slot_columns, None, s, s0, s1, s2, s3,
                                4)
                    else:
                        for q in range(n_columns):
                            b = codes[slot_columns[s, q], i]
                            for m in range(n_stats):
                                hist[s, q, b, m] += _row_stat(stats_t, row_class, draws,
                                                              t, i, m, count_stat)
                    continue
                if _row_stat(stats_t, row_class, draws, t, i, count_stat, count_stat) == 0:
                    continue    # a row of zero weight adds nothing (all its stats are 0)
                k = record_fill[s]
                if k >= capacity:
                    overflow[t] += 1
                    continue
                record_fill[s] = k + 1
                base = k * words
                for m in range(n_stats - 1):
                    slot_words[s, base + m] = _row_stat(stats_t, row_class, draws, t, i,
                                                        m, count_stat)
                cbase = k * code_stride + code_offset
                for q in range(n_columns):
                    slot_codes[s, cbase + q] = codes[slot_columns[s, q], i]
    return overflow.sum()


def build_histograms_columns(codes, stats, rows, slots, chunk_start, chunk_count,
                             slot_columns, hist, records=None):
    """:func:`build_histograms_selected` for histograms of a few features per node.

    A forest node searches only its ``max_features`` sampled features, so its histogram
    holds only those: column ``q`` of slot ``s`` is feature ``slot_columns[s, q]``. Such a
    node is built from its own rows, never by subtraction (its sibling has other
    features); with 5 of 28 features that is still 2.8x fewer updates than building the
    smaller child over all features, and 5.6x less histogram memory per node.

    Parameters
    ----------
    codes, stats, rows, slots, chunk_start, chunk_count : as :func:`build_histograms_selected`
    slot_columns : ndarray (>= n_slots, n_columns) int32, features of each slot   # IN
    hist : ndarray (n_slots, n_columns, max_bin, width) float64, C-contiguous      # IN/OUT
    records : (record_capacity, record_fill) or None
        ``record_capacity`` (n_slots,) int64: 0 for a histogram slot; for a *record
        slot*, the number of rows with a non-zero count statistic it will receive in
        the pass. A record slot's rows are not added into its histogram but appended,
        as records, into the slot's own memory (``record_fill`` (n_slots,) int64 counts
        them, IN/OUT); :func:`records_to_histograms` sums them once the pass is over.
        Deep in a tree a node's few hundred rows spread their updates over every
        cache line of its histogram, and those lines have left the cache by the next
        row of the node: one append per row replaces ``n_columns`` cache misses, and
        the sums are later made while the slot is in cache. Only for statistics whose
        last column counts rows (the CART statistics), whose zero rows add nothing.

    Parallel over (tree, group of columns) tasks: the trees of a pass own disjoint
    slots, so a forest pass of 16 trees needs no column split; a single tree splits its
    columns over the threads. With record slots, one task per tree. Each (slot, column)
    is summed by one task in row order, so the sums do not depend on the thread count,
    and records are summed in the order they were appended, the same order.
    """
    if isinstance(codes, PlaneCodes):
        raise ValueError("per-node histogram columns take one-byte codes; a cache with a "
                         "wide categorical feature needs full histograms (column_of)")
    codes = read_only(codes)
    dense, row_class, draws = _stat_arrays(stats)
    n_trees, n_columns = dense.shape[0], hist.shape[1]
    vector = _vector_update(dense, hist)
    if records is not None:
        record_capacity, record_fill = records
        slot_words = hist.reshape(hist.shape[0], -1)
        overflow = _build_histograms_columns_records(
            codes, dense, row_class, draws, rows, slots, chunk_start, chunk_count,
            slot_columns, hist, record_capacity, record_fill, slot_words,
            slot_words.view(codes.dtype), vector)
        if overflow:
            raise RuntimeError(f"{overflow} rows found their record slot full: the "
                               f"expected row counts of the nodes were wrong")
        return
    n_column_groups = max(1, min(n_columns, -(-numba.get_num_threads() // n_trees)))
    _build_histograms_columns(codes, dense, row_class, draws, rows, slots,
                              chunk_start, chunk_count, slot_columns, hist, n_column_groups,
                              LANES_TAGS[vector])


def build_histograms(codes, stats, slot_of_row, hist, count_stat=-1):
    """Add one block's rows into the histograms of their slots.

    Parameters
    ----------
    codes : ndarray (n_features, n_rows) uint8 or uint16, or PlaneCodes   # IN
    stats : ndarray (n_trees, n_rows, n_stats) float32              # IN
    slot_of_row : ndarray (n_trees, n_rows) int32, -1 to skip       # IN
    hist : ndarray (n_slots, n_features, max_bin, n_stats) float64  # IN/OUT, accumulated
    count_stat : int, the statistic that counts rows; rows where it is 0 contribute
        nothing and are skipped (-1: keep every row). The sums are the same either way.

    The grower's path with no split pending: each row sits at a leaf whose slot is its
    ``slot_of_row``, and ``partition.partition_select_rows`` lists the rows (so the rule
    that selects them lives in one place).
    """
    n_trees, n_rows = slot_of_row.shape
    n_slots = hist.shape[0]
    # leaf 0 has no slot; leaf s + 1 has slot s; no node has children
    node_of_row = (slot_of_row + 1).astype(np.int32)
    leaves = np.zeros((n_trees, n_slots + 1, 4), np.int32)
    leaves[:, :, 0] = -1                                       # routes of leaves
    slot_of_node = np.tile(np.arange(-1, n_slots, dtype=np.int32), (n_trees, 1))
    rows = np.empty((n_trees, n_rows), np.int32)
    slots = np.empty((n_trees, n_rows), np.int32)
    chunk_start = np.zeros(1, np.int64)
    chunk_count = np.empty((n_trees, 1), np.int64)
    row_counts = (stats[:, :, count_stat] if count_stat >= 0
                  else np.zeros((n_trees, 0), np.uint8))
    partition_select_rows(codes, node_of_row, leaves,
                          np.zeros((n_trees, n_slots + 1, 1), np.uint32), -1,
                          slot_of_node, row_counts, chunk_start, rows, slots, chunk_count)
    build_histograms_selected(codes, stats, rows, slots, chunk_start, chunk_count, hist)
    return chunk_count[:, 0]
