"""Partition kernels: move each row of a block to the child its node's split sends it to.

The grower keeps, for every tree grown in the pass, node arrays of a fixed capacity; the
partition reads each node's split as one *route* of 4 int32 words::

    route[tree, node] = (left, feature, bin_threshold, flags)
        left                -1 while the node is a leaf; its right child is left + 1
        flags               bit 0: missing values go left; bit 1: categorical split;
                            bit 2: pass-through (a multiway split's chain node)
    cat_bitset[tree, node, word]           uint32 (category code in set -> left)
    slot_of_node[tree, node]               int32, histogram slot or -1

A row sits at a leaf of the growing tree (``node_of_row``). When its leaf was split since
the last pass, the row moves one level down; rows at leaves that were not split stay.
Because a node's children are created together with its split, "move if the node has
children" applies each split exactly once per row. The chain nodes of a multiway split
(``engine/multiway.py``) are made split, below a node split in the same step: a row that
reaches one moves on in the same pass (``ROUTE_PASS_THROUGH``).
"""
import numpy as np
from numba import njit, prange

from .codes import code_arrays, read_code, read_only

#: Word of a route holding the flags, and its bits.
ROUTE_FLAGS = 3
ROUTE_DEFAULT_LEFT = 1
ROUTE_CATEGORICAL = 2
ROUTE_PASS_THROUGH = 4


def pack_routes(left, right, feature, bin_threshold, default_left, is_categorical):
    """Routes (see the module docstring) from per-node arrays of shape (n_trees, capacity).

    Raises ValueError when a split node's right child is not ``left + 1`` (the grower
    numbers children that way; a route stores the left child only).

    >>> pack_routes(*[np.array([[1, -1, -1]]), np.array([[2, -1, -1]])],
    ...             np.array([[0, 0, 0]]), np.array([[4, 0, 0]]),
    ...             np.array([[1, 0, 0]]), np.array([[0, 0, 0]]))[0, 0].tolist()
    [1, 0, 4, 1]
    """
    left = np.asarray(left)
    split = left >= 0
    if np.any(np.asarray(right)[split] != left[split] + 1):
        raise ValueError("a route needs each split node's right child to be left + 1")
    route = np.empty(left.shape + (4,), np.int32)
    route[..., 0] = np.where(split, left, -1)
    route[..., 1] = feature
    route[..., 2] = bin_threshold
    route[..., ROUTE_FLAGS] = route_flags(default_left, is_categorical)
    return route


def route_flags(default_left, is_categorical):
    """The flags word of routes: bit 0 for missing values going left, bit 1 for a
    categorical split (arrays of any shape, nonzero = set)."""
    return ((np.asarray(default_left) != 0) * ROUTE_DEFAULT_LEFT
            + (np.asarray(is_categorical) != 0) * ROUTE_CATEGORICAL)


@njit(nogil=True)
def _in_category_set(cat_bitset, node, code):
    """1 when category ``code`` is in ``node``'s set (it goes left), else 0.

    A function of its own, not inlined: reading ``cat_bitset`` in :func:`_move_row`'s
    body made numba take a reference to the array for every row, an atomic
    increment and decrement around each (a serial sweep of 262k rows at depth 4: 3.5 ms
    against 0.96 ms with this call on the categorical branch only; the parallel sweep
    over 1M rows went 2.15 -> 1.94 ms)."""
    word = code >> 5
    if word < cat_bitset.shape[1]:
        return np.int64((cat_bitset[node, word] >> (code & 31)) & 1)
    return np.int64(0)


@njit(inline="always")
def _move_row(low, wide, wide_row, i, node, route, cat_bitset, missing_bin, kind):
    """The child of ``node`` that row ``i`` goes to (``node`` itself at a leaf), from one
    tree's routes (2-D; ``cat_bitset`` 2-D).

    Branch-free in the direction: which child a row takes is a coin flip to the branch
    predictor, and the branchy form measured 13 ns a row per thread, mostly mispredicts.
    ``kind`` (:func:`_tree_kinds`) without ``TREE_CATEGORICAL`` skips the categorical
    test; with 1-D arrays it halved the sweep (0.7 vs 1.3 ms for 262k rows at depth 5). One
    route
    of 4 words instead of 5 separate node arrays (and the right child as left + 1) made
    the sweep 16% faster (1M rows at depth 4, 2 threads: 2.15 -> 1.8 ms).
    """
    u = np.uint64(node)
    lft = np.int64(route[u, 0])
    if lft < 0:
        return np.int64(node)
    f = route[u, 1]
    flags = route[u, ROUTE_FLAGS]
    if (kind & TREE_CATEGORICAL) != 0 and (flags & ROUTE_CATEGORICAL) != 0:
        code = read_code(low, wide, wide_row, f, i)
        go_left = _in_category_set(cat_bitset, node, code)
    else:
        # numeric splits read one byte unless the tree splits a wide column numerically
        # (testing each code's width cost 30% of a categorical bench's partition)
        if wide is not None and (kind & TREE_NUMERIC_WIDE) != 0:
            code = read_code(low, wide, wide_row, f, i)
        else:
            code = np.int64(low[np.uint64(f), np.uint64(i)])
        go_left = np.int64(code <= route[u, 2])
    is_missing = np.int64(code == missing_bin)
    go_left = go_left + is_missing * (np.int64(flags & ROUTE_DEFAULT_LEFT) - go_left)
    return lft + 1 - go_left


#: Bits of a tree's kind (:func:`_tree_kinds`).
TREE_CATEGORICAL = 1
TREE_NUMERIC_WIDE = 2
TREE_CHAIN = 4


@njit(cache=True)
def _tree_kinds(route, wide_row):
    """Per tree: ``TREE_CATEGORICAL`` when some split node is categorical,
    ``TREE_NUMERIC_WIDE`` when a numeric split reads a wide column (``wide_row``, None
    for plain codes)."""
    n_trees = route.shape[0]
    out = np.zeros(n_trees, np.int64)
    for t in range(n_trees):
        for node in range(route.shape[1]):
            if route[t, node, 0] < 0:
                continue
            if (route[t, node, ROUTE_FLAGS] & ROUTE_PASS_THROUGH) != 0:
                out[t] |= TREE_CHAIN
            if (route[t, node, ROUTE_FLAGS] & ROUTE_CATEGORICAL) != 0:
                out[t] |= TREE_CATEGORICAL
            elif wide_row is not None and wide_row[route[t, node, 1]] >= 0:
                out[t] |= TREE_NUMERIC_WIDE
    return out


#: Rows a task of :func:`route_to_leaves` sweeps level by level.
ROUTE_CHUNK_ROWS = 1024


def route_to_leaves(codes, node_of_row, route, cat_bitset, missing_bin):
    """Move every row from its node down to a leaf through all the splits below it, in
    one sweep (rows of trees grown from a sample, whose positions were never kept).

    Parameters
    ----------
    codes : ndarray (n_features, n_rows) uint8/uint16, or PlaneCodes   # IN
    node_of_row : ndarray (n_trees, n_rows) uint8/int32         # IN/OUT
    route : ndarray (n_trees, capacity, 4) int32                # IN
    cat_bitset : ndarray (n_trees, capacity, n_words) uint32    # IN
    missing_bin : int                                           # IN
    """
    low, wide, wide_row = code_arrays(codes)
    kinds = _tree_kinds(route, wide_row)
    for t in range(node_of_row.shape[0]):
        _route_tree(low, wide, wide_row, node_of_row[t], route[t], cat_bitset[t], missing_bin,
                    kinds[t], _depth(route[t]))


@njit(cache=True, nogil=True)
def _depth(route):
    """Levels of one tree's routes below its root (children are numbered after their
    parents, so one forward sweep sees each parent first)."""
    depth = np.zeros(route.shape[0], np.int64)
    deepest = 0
    for node in range(route.shape[0]):
        left = route[node, 0]
        if left >= 0:
            depth[left] = depth[left + 1] = depth[node] + 1
            deepest = max(deepest, depth[node] + 1)
    return deepest


@njit(parallel=True, cache=True, nogil=True)
def _route_tree(low, wide, wide_row, node_of_row, route, cat_bitset, missing_bin, kind,
                depth):
    """:func:`route_to_leaves` for one tree's 2-D arrays (views taken once, not per
    row: a view per row made the sweep 8x slower). Chunks of rows are swept ``depth``
    times, one level each (a row at a leaf stays): rows in a sweep are independent, so
    their loads overlap, where following one row down to its leaf chained them (262k
    rows at depth 6, 2 threads: 4.4 -> 2.6 ms)."""
    n_rows = node_of_row.shape[0]
    n_chunks = (n_rows + ROUTE_CHUNK_ROWS - 1) // ROUTE_CHUNK_ROWS
    for c in prange(n_chunks):
        lo = c * ROUTE_CHUNK_ROWS
        hi = min(n_rows, lo + ROUTE_CHUNK_ROWS)
        for _ in range(depth):
            for i in range(lo, hi):
                node_of_row[i] = _move_row(low, wide, wide_row, i, np.int64(node_of_row[i]),
                                           route, cat_bitset, missing_bin, kind)


def partition_select_rows(codes, node_of_row, route, cat_bitset, missing_bin, slot_of_node,
                          row_counts, chunk_start, rows, slots, chunk_count):
    """Apply pending splits to one block and list, per tree, the rows that go into a
    histogram this pass, with their slots, in one parallel sweep.

    The block is cut into chunks at ``chunk_start``; each chunk lists its selected rows
    from its own start in ``rows``/``slots``, ascending, and its count in ``chunk_count``,
    which is the form ``histogram.build_histograms_selected`` reads. (A separate serial
    compaction cost 2-3 ms a pass on 1M rows, as much as the partition.) A row is
    selected when its new node has a slot and its entry in ``row_counts`` is not 0.

    With every slot -1 it only moves rows (``TreeGrower.apply_pending``). A kernel
    without the listing measured 2x slower than this one (1.2 vs 0.6 ms, 262k rows at
    depth 6), however its loop was written: LLVM compiles the plain loop worse.

    Parameters
    ----------
    codes : ndarray (n_features, n_rows) uint8/uint16, or PlaneCodes   # IN
    node_of_row : ndarray (n_trees, n_rows) uint8/int32         # IN/OUT
    route : ndarray (n_trees, capacity, 4) int32, see :func:`pack_routes`       # IN
    cat_bitset : ndarray (n_trees, capacity, n_words) uint32    # IN
    missing_bin : int                                           # IN
    slot_of_node : ndarray (n_trees, capacity) int32, histogram slot or -1    # IN
    row_counts : ndarray (n_trees, n_rows), any dtype, may be strided; or (n_trees, 0)
        to keep every row                                       # IN
        Rows with 0 are not listed: a boosting subsample's count statistic, a forest's
        stored bootstrap draws (1 byte a row: reading the float32 count statistic at
        its 12-byte stride instead made the sweep 2x slower).
    chunk_start : ndarray (n_chunks,) int64, ascending, first 0  # IN
    rows, slots : ndarray (n_trees, n_rows) int32               # OUT
    chunk_count : ndarray (n_trees, n_chunks) int64              # OUT
    """
    _partition_select_rows(*code_arrays(codes), node_of_row, route, cat_bitset, missing_bin,
                           slot_of_node, read_only(row_counts), chunk_start, rows, slots,
                           chunk_count)


@njit(parallel=True, cache=True, nogil=True)
def _partition_select_rows(low, wide, wide_row, node_of_row, route, cat_bitset, missing_bin,
                           slot_of_node, row_counts, chunk_start, rows, slots, chunk_count):
    n_trees, n_rows = node_of_row.shape
    n_chunks = chunk_start.shape[0]
    kinds = _tree_kinds(route, wide_row)
    has_counts = row_counts.shape[1] > 0
    for c in prange(n_chunks):
        lo = chunk_start[c]
        hi = chunk_start[c + 1] if c + 1 < n_chunks else n_rows
        for t in range(n_trees):
            chunk_count[t, c] = _select_chunk(
                low, wide, wide_row, node_of_row[t], route[t], cat_bitset[t], missing_bin,
                kinds[t], slot_of_node[t], row_counts[t], has_counts, lo, hi,
                rows[t], slots[t])


@njit(inline="always")
def _select_chunk(low, wide, wide_row, node_of_row, route, cat_bitset, missing_bin, kind,
                  slot_of_node, row_counts, has_counts, lo, hi, rows, slots):
    """Rows ``lo .. hi`` of one tree: move, then list those selected from ``lo`` on.
    Returns how many were listed.

    Two sweeps (move every row, then list) and unsigned indices: numba wraps a negative
    signed index around, a test and an add at every access, and in one loop the listing's
    stores kept the next rows' loads waiting. 1M rows at depth 1-5, 2 threads, on the
    EPYC: 0.92 -> 0.73 ms a 262k-row block (sum of 20 calls of a round 17.5 -> 14.5 ms),
    a boost run's partition 1.8 -> 1.1 s."""
    for j in range(lo, hi):
        i = np.uint64(j)
        node_of_row[i] = _move_row(low, wide, wide_row, i, node_of_row[i], route, cat_bitset,
                                   missing_bin, kind)
    if (kind & TREE_CHAIN) != 0:
        for j in range(lo, hi):
            i = np.uint64(j)
            node = np.int64(node_of_row[i])
            while (route[np.uint64(node), ROUTE_FLAGS] & ROUTE_PASS_THROUGH) != 0:
                node = _move_row(low, wide, wide_row, i, node, route, cat_bitset,
                                 missing_bin, kind)
            node_of_row[i] = node
    k = np.uint64(lo)
    for j in range(lo, hi):
        i = np.uint64(j)
        s = slot_of_node[np.uint64(node_of_row[i])]
        # Branch-free: a row is always written and the cursor advances only when it is
        # selected (about half the rows, unpredictably, below the root).
        rows[k] = i
        slots[k] = s
        keep = s >= 0
        if has_counts:
            keep = keep & (row_counts[i] != 0)
        k += np.uint64(keep)
    return np.int64(k) - lo


@njit(parallel=True, cache=True, nogil=True)
def add_node_values(node_of_row, node_value, scale, out):
    """``out[i] += scale * node_value[node_of_row[i]]`` (apply a finished tree to margins).

    Parameters
    ----------
    node_of_row : ndarray (n_rows,) int32       # IN, leaf of each row
    node_value : ndarray (n_nodes,) float64     # IN
    scale : float                               # IN, learning rate or tree weight
    out : ndarray (n_rows,) float64             # IN/OUT, e.g. a margin column
    """
    for i in prange(node_of_row.shape[0]):
        out[i] += scale * node_value[node_of_row[i]]
