"""The steps of the prediction walks over the flat layout of :mod:`.predict`: a chunk
of rows advances through one tree level by level (the rows' node ids in ``nodes``), over
raw values or bin codes, then adds the leaves' values. The kernels of :mod:`.predict`,
:mod:`.predict_perfect` and :mod:`.predict_table` inline them."""
import numpy as np
from numba import njit

#: Rows advanced together through one tree. Chunks of 64 in lockstep measured 1.7M rows/s
#: vs 0.8M rows/s for one row at a time (2 threads, 100 depth-6 trees, 28 features); 128
#: rows (28 KiB of float64 features, in L1) 2.26M against 2.08M with 64 (AMD EPYC, 2
#: threads, 200k rows), 256 slower (1.6M).
CHUNK_ROWS = 128
#: Node ids and row and column indices are cast to unsigned types in the walks: numba
#: handles a negative signed index (counting from the end) with a compare and a select on
#: every array access, and a step makes five. Unsigned indices drop them: 2.2M rows/s
#: against 1.3M (same model and rows). Flat node ids fit 32 bits (checked when flattening).
_U32 = np.uint32
_U64 = np.uint64
#: Bin threshold stored at leaves: every code is <= it.
LEAF_BIN_THRESHOLD = np.iinfo(np.int32).max
#: Trees deeper than this check after each level whether the whole chunk is on leaves.
EARLY_EXIT_DEPTH = 10

# --------------------------------------------------------------------------- kernels
#
# Each kernel walks a tree in one of two ways:
# * the fast path (no categorical split, depth <= EARLY_EXIT_DEPTH): a plain, branch-free
#   level loop written into the kernel (inline). Keeping any other code path inside this
#   loop (a categorical test or the early-exit flag) measured 20-25% slower;
# * the general path (a function call per chunk and tree): categorical splits and the
#   early exit of deep trees.


@njit(cache=True, inline="always")
def _in_bitset(code, node, cat_offset, cat_n_bits, cat_bitset):
    """Whether integer ``code`` is in the node's set; codes outside ``[0, n_bits)`` are not."""
    if code < 0 or code >= cat_n_bits[node]:
        return False
    word = cat_bitset[cat_offset[node] + (code >> 5)]
    return (word >> np.uint32(code & 31)) & np.uint32(1) != 0


@njit(cache=True, inline="always")
def _walk_raw_numeric(X, s, m, nodes, depth, left, feature, threshold, default_left):
    """Fast path: advance ``nodes[:m]`` (rows ``s .. s+m``) ``depth`` levels."""
    for _level in range(depth):
        for r in range(m):
            i = _U64(r)
            node = nodes[i]
            x = X[_U64(s + r), _U32(feature[node])]
            # Branch-free: NaN fails the comparison and takes the default direction.
            go = (x <= threshold[node]) | ((default_left[node] != 0) & (x != x))
            nodes[i] = _U32(left[node]) + _U32(1) - _U32(go)


@njit(cache=True)
def _walk_raw_general(X, s, m, nodes, depth, left, feature, threshold, default_left,
                      is_categorical, cat_offset, cat_n_bits, cat_bitset):
    """General path of :func:`_walk_raw_numeric`: categorical splits, early exit."""
    for _level in range(depth):
        moved = False
        for r in range(m):
            i = _U64(r)
            node = nodes[i]
            x = X[_U64(s + r), _U32(feature[node])]
            if is_categorical[node]:
                if x != x:
                    go = default_left[node] != 0
                elif x >= 0.0 and x < cat_n_bits[node]:
                    # compared as floats first: int() of inf or of a huge value is undefined
                    go = _in_bitset(np.int64(x), node, cat_offset, cat_n_bits, cat_bitset)
                else:
                    go = False
            else:
                go = (x <= threshold[node]) | ((default_left[node] != 0) & (x != x))
            new = _U32(left[node]) + _U32(1) - _U32(go)
            moved |= new != node
            nodes[i] = new
        if not moved:
            break


@njit(cache=True, inline="always")
def _walk_binned_numeric(codes, missing_bin, s, m, nodes, depth, left, feature,
                         bin_threshold, default_left):
    """Binned fast path; ``codes`` is (n_features, n_rows)."""
    for _level in range(depth):
        for r in range(m):
            i = _U64(r)
            node = nodes[i]
            code = np.int64(codes[_U32(feature[node]), _U64(s + r)])
            missing = code == missing_bin
            go = ((code <= bin_threshold[node]) & (not missing)) | (
                (default_left[node] != 0) & missing)
            nodes[i] = _U32(left[node]) + _U32(1) - _U32(go)


@njit(cache=True)
def _walk_binned_general(codes, missing_bin, s, m, nodes, depth, left, feature,
                         bin_threshold, default_left, is_categorical, cat_offset, cat_n_bits,
                         cat_bitset):
    """Binned general path."""
    for _level in range(depth):
        moved = False
        for r in range(m):
            i = _U64(r)
            node = nodes[i]
            code = np.int64(codes[_U32(feature[node]), _U64(s + r)])
            missing = code == missing_bin
            if missing:
                go = default_left[node] != 0
            elif is_categorical[node]:
                go = _in_bitset(code, node, cat_offset, cat_n_bits, cat_bitset)
            else:
                go = code <= bin_threshold[node]
            new = _U32(left[node]) + _U32(1) - _U32(go)
            moved |= new != node
            nodes[i] = new
        if not moved:
            break


@njit(cache=True, inline="always")
def _add_leaf_values(out, s, m, nodes, t, lo, tree_group, tree_n_cols, value_offset, value):
    g = tree_group[t]
    n_cols = tree_n_cols[t]
    v0 = value_offset[t]
    if g >= 0:
        for r in range(m):
            out[s + r, g] += value[v0 + (np.int64(nodes[r]) - lo)]
    else:
        for r in range(m):
            base = v0 + (np.int64(nodes[r]) - lo) * n_cols
            for k in range(n_cols):
                out[s + r, k] += value[base + k]
