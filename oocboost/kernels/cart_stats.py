"""CART kernels: per-row statistics from labels and weights, out-of-bag sums, pruning.

Per-row statistics (what a forest feeds the grower, made again in every pass from the
labels, weights and each row's stored draw)::

    classification (n_stats = K + 1):  stats[t, i, k] = w_ti * 1{y_i == k},  k < K
                                       stats[t, i, K] = 1 if w_ti > 0 else 0
    regression     (n_stats = 4):      stats[t, i] = (w_ti, w_ti y_i, w_ti y_i^2 (Poisson:
                                       w_ti y_i log y_i),
                                                      1 if w_ti > 0 else 0)

    w_ti = sample_weight_i * class_weight[t, y_i] * draw(seed, tree t, global row i)

The draw is a pure function of (seed, tree index, global row index) (see
``kernels/sampling.py``), so no bootstrap index is ever stored and the statistics are the
same for any block size, prefetch depth or thread count (a forest keeps each row's draw,
one byte per tree, for the passes of its group of trees: :func:`row_draws`)::

    mode 0  every row once                          (bootstrap=False)
    mode 1  Poisson(lam) copies                     (bootstrap=True; lam = 1 is
                                                     ``poisson1_per_row`` bit for bit)
    mode 2  Bernoulli(lam): once with probability lam   (subsampling without replacement)

Drawing ``m = lam * n`` rows with replacement gives each row a Binomial(m, 1/n) count,
whose large-``n`` limit is Poisson(lam): that is how ``max_samples`` is honoured out of
core.

Statistics are float64 (not ``G_H_DTYPE``): they are never stored per row (one block's
worth at a time, in a buffer the memory plan counts), and float64 keeps ``w * y^2``
exact for float32 labels, so node impurities (min_impurity_decrease, importances,
pruning) match scikit-learn's float64 arithmetic.
Unweighted classification statistics (draws and counts) are not written at all: the
histogram kernels make them from each row's class and draw
(``kernels.histogram.ClassCounts``, ``learners/forest.integer_stats``).
"""
import math

import numpy as np
from numba import njit, prange

from .sampling import _stream_key, _uniform, _uniform_keyed

#: dtype of the per-row CART statistics (see the module docstring).
STATS_DTYPE = np.float64

MODE_ALL = 0
MODE_POISSON = 1
MODE_BERNOULLI = 2


@njit(inline="always")
def _draw(seed, stream, row, mode, lam):
    """Copies of global row ``row`` in tree ``stream`` (float)."""
    if mode == MODE_ALL:
        return 1.0
    u = _uniform(seed, stream, row)
    if mode == MODE_BERNOULLI:
        return 1.0 if u < lam else 0.0
    # Inversion of the Poisson(lam) CDF; for lam = 1 the same arithmetic (and the same
    # cap of 20) as ``sampling.poisson1_per_row``.
    k = 0
    p = math.exp(-lam)
    cdf = p
    cap = 20 if lam <= 1.0 else int(20 + 10 * lam)
    while u > cdf and k < cap:
        k += 1
        p = p * lam / k
        cdf += p
    return float(k)


@njit(cache=True)
def _poisson_cdf(lam):
    """``cdf[k] = P(X <= k)`` for X ~ Poisson(lam), k = 0..cap, with the arithmetic of
    :func:`_draw` step for step, so a table lookup gives the same count bit for bit."""
    cap = 20 if lam <= 1.0 else int(20 + 10 * lam)
    cdf = np.empty(cap + 1, np.float64)
    p = math.exp(-lam)
    cdf[0] = p
    for k in range(1, cap + 1):
        p = p * lam / k
        cdf[k] = cdf[k - 1] + p
    return cdf


@njit(inline="always")
def _draw_keyed(key, row, mode, lam, cdf):
    """:func:`_draw` with the stream's key and the Poisson CDF computed once per call of
    the kernel: a draw costs one hash and a short table walk instead of three hashes, an
    ``exp`` and a division per step (cart_stats went from 11 to about 3 ms a block of
    262k rows x 4 trees)."""
    if mode == MODE_ALL:
        return 1.0
    u = _uniform_keyed(key, row)
    if mode == MODE_BERNOULLI:
        return 1.0 if u < lam else 0.0
    k = 0
    cap = cdf.shape[0] - 1
    while u > cdf[k] and k < cap:
        k += 1
    return float(k)


@njit(cache=True)
def _stream_keys(seed, streams):
    keys = np.empty(streams.shape[0], np.uint64)
    for t in range(streams.shape[0]):
        keys[t] = _stream_key(seed, streams[t])
    return keys


@njit(parallel=True, cache=True)
def row_draws(seed, streams, row_start, mode, lam, out):
    """Copies of each row in each tree.

    Parameters
    ----------
    seed : int                                # IN
    streams : ndarray (n_trees,) int64        # IN, global tree indices
    row_start : int                           # IN, global index of the block's first row
    mode : int, lam : float                   # IN, see the module docstring
    out : ndarray (n_trees, n_rows) float64   # OUT
    """
    n_trees, n_rows = out.shape
    keys = _stream_keys(seed, streams)
    cdf = _poisson_cdf(lam)
    for i in prange(n_rows):
        for t in range(n_trees):
            out[t, i] = _draw_keyed(keys[t], row_start + i, mode, lam, cdf)


def max_draw(mode, lam):
    """Largest number of copies a row can get in one tree (the Poisson cap, or 1)."""
    return _poisson_cdf(lam).shape[0] - 1 if mode == MODE_POISSON else 1


def draw_dtype(mode, lam):
    """Smallest dtype that holds every draw of ``mode``/``lam`` exactly (for stored draws).

    Poisson counts are capped at ``20 + 10 lam`` (``_poisson_cdf``): uint8 up to lam 23.5,
    which covers every ``max_samples <= n_rows``.
    """
    if mode != MODE_POISSON or _poisson_cdf(lam).shape[0] <= 256:
        return np.uint8
    return np.float32


#: Rows per task of :func:`cart_stats`.
STATS_CHUNK_ROWS = 8192


@njit(inline="always")
def _row_stats(label, weight, class_weight, n_classes, mode, lam, draws, keys, cdf,
               row_start, t, i, log_moment, out):
    """Statistics of row ``i`` for tree ``t`` (see the module docstring)."""
    w = weight[i] if weight.shape[0] > 0 else 1.0
    if draws.shape[0] > 0:
        w *= np.float64(draws[t, i])
    else:
        w *= _draw_keyed(keys[t], row_start + i, mode, lam, cdf)
    if n_classes > 0:
        k = int(label[i])
        if class_weight.shape[0] > 0:
            w *= class_weight[t, k]
        for j in range(out.shape[2]):
            out[t, i, j] = 0.0
        out[t, i, k] = w
        out[t, i, n_classes] = 1.0 if w > 0.0 else 0.0
    else:
        y = np.float64(label[i])
        out[t, i, 0] = w
        out[t, i, 1] = w * y
        if log_moment:  # Poisson impurity: w y log y (0 at y = 0)
            out[t, i, 2] = w * y * math.log(y) if y > 0.0 else 0.0
        else:
            out[t, i, 2] = w * y * y
        out[t, i, 3] = 1.0 if w > 0.0 else 0.0


@njit(parallel=True, cache=True)
def cart_stats(label, weight, class_weight, n_classes, seed, streams, row_start, mode, lam,
               draws, out, log_moment=False):
    """CART statistics of one block for every tree grown in the pass.

    Parameters
    ----------
    label : ndarray (n_rows,) float32            # IN, class index 0..K-1 or target
    weight : ndarray (n_rows,) float32, or (0,) for unit weights            # IN
    class_weight : ndarray (n_trees, K) float64, or (0, 0) for none          # IN
    n_classes : int, K; 0 for regression
    seed : int
    streams : ndarray (n_trees,) int64, global tree indices                  # IN
    row_start : int, global index of the block's first row
    mode : int, lam : float, row sampling (module docstring)
    draws : ndarray (n_trees, n_rows) uint8/float32, the draws already made by
        :func:`row_draws` (a forest stores them in its first pass), or shape (0, 0) to
        draw here. Drawing costs a hash and a table walk per (tree, row): 26 of the 35 ms
        a block of 262k rows x 16 trees took, in every pass.                # IN
    out : ndarray (n_trees, n_rows, n_stats) float64                         # OUT
    log_moment : bool
        Regression's third statistic is ``w y log y`` (the Poisson criterion) instead
        of ``w y^2``.
    """
    n_trees = out.shape[0]
    n_rows = out.shape[1]
    keys = _stream_keys(seed, streams)
    cdf = _poisson_cdf(lam)
    # Chunks of rows in parallel, one tree at a time inside a chunk, so each tree's rows
    # are written in order (row-outer, tree-inner wrote 16 interleaved streams: 19 ms
    # instead of 8 for 262k rows x 16 trees).
    n_chunks = (n_rows + STATS_CHUNK_ROWS - 1) // STATS_CHUNK_ROWS
    for c in prange(n_chunks):
        for t in range(n_trees):
            for i in range(c * STATS_CHUNK_ROWS, min(n_rows, (c + 1) * STATS_CHUNK_ROWS)):
                _row_stats(label, weight, class_weight, n_classes, mode, lam, draws, keys,
                           cdf, row_start, t, i, log_moment, out)


@njit(cache=True)
def sampled_class_counts(label, seed, streams, row_start, mode, lam, out):
    """``out[t, k] += copies of rows of class k in tree t`` (``balanced_subsample``).

    Parameters
    ----------
    label : ndarray (n_rows,) float32, class indices 0..K-1   # IN
    seed, streams, row_start, mode, lam : see :func:`cart_stats`
    out : ndarray (n_trees, K) float64                         # IN/OUT, accumulated
    """
    for i in range(label.shape[0]):
        k = int(label[i])
        for t in range(streams.shape[0]):
            out[t, k] += _draw(seed, streams[t], row_start + i, mode, lam)


@njit(parallel=True, cache=True)
def add_oob_values(seed, stream, row_start, mode, lam, values, oob_sum, oob_count):
    """Add one tree's predictions to the rows it did not see (draw == 0).

    Parameters
    ----------
    seed, stream, row_start, mode, lam : see :func:`cart_stats` (one tree)
    values : ndarray (n_rows, n_outputs) float64, the tree's leaf value per row   # IN
    oob_sum : ndarray (n_rows, n_outputs) float64                                 # IN/OUT
    oob_count : ndarray (n_rows,) int32                                           # IN/OUT
    """
    n_rows, n_outputs = values.shape
    for i in prange(n_rows):
        if _draw(seed, stream, row_start + i, mode, lam) == 0.0:
            for k in range(n_outputs):
                oob_sum[i, k] += values[i, k]
            oob_count[i] += 1


@njit(cache=True)
def permute_in_place(values, perm, scratch):
    """``values[:] = values[perm]`` through ``scratch`` (one feature's codes in a block).

    Parameters
    ----------
    values : ndarray (n,)        # IN/OUT
    perm : ndarray (n,) int64    # IN
    scratch : ndarray (n,)       # scratch, same dtype as values
    """
    for i in range(values.shape[0]):
        scratch[i] = values[perm[i]]
    for i in range(values.shape[0]):
        values[i] = scratch[i]


# --------------------------------------------------------------------------------------
# Minimal cost-complexity pruning (Breiman et al. 1984, ch. 3; scikit-learn's
# ``_cost_complexity_prune``), on flat tree arrays. Loops over nodes, not rows.
# --------------------------------------------------------------------------------------
@njit(cache=True)
def cost_complexity_prune(left, right, weighted_n, impurity, ccp_alpha, find_path,
                          leaves_in_subtree, alphas, impurities):
    """Weakest-link pruning, scikit-learn's algorithm step for step.

    ``r_node[i] = W_i * imp_i / W_root``; while the root has children, the internal node
    with the smallest ``(r_node - r_branch) / (n_leaves - 1)`` (first node id on ties) is
    collapsed into a leaf. With ``find_path`` every step is recorded; otherwise pruning
    stops before the first step whose alpha exceeds ``ccp_alpha``.

    Parameters
    ----------
    left, right : ndarray (n_nodes,) int32, -1 at leaves        # IN
    weighted_n : ndarray (n_nodes,) float64                     # IN
    impurity : ndarray (n_nodes,) float64                       # IN
    ccp_alpha : float                                           # IN
    find_path : bool                                            # IN
    leaves_in_subtree : ndarray (n_nodes,) uint8                # OUT, leaves of the pruned
    tree
    alphas, impurities : ndarray (n_nodes + 1,) float64         # OUT, the path

    Returns
    -------
    count : int, entries of the path written
    in_subtree : ndarray (n_nodes,) uint8, nodes kept
    """
    n = left.shape[0]
    total = weighted_n[0]
    r_node = np.empty(n)
    for i in range(n):
        r_node[i] = weighted_n[i] * impurity[i] / total
    parent = np.full(n, -1, np.int64)
    for i in range(n):
        if left[i] >= 0:
            parent[left[i]] = i
            parent[right[i]] = i
    n_leaves = np.zeros(n, np.int64)
    r_branch = np.zeros(n)
    leaves_in_subtree[:] = 0
    for i in range(n):
        if left[i] < 0:
            leaves_in_subtree[i] = 1
    for leaf in range(n):
        if not leaves_in_subtree[leaf]:
            continue
        r_branch[leaf] = r_node[leaf]
        cur = r_node[leaf]
        j = leaf
        while j != 0:
            p = parent[j]
            r_branch[p] += cur
            n_leaves[p] += 1
            j = p
    candidate = np.zeros(n, np.uint8)
    for i in range(n):
        candidate[i] = 1 - leaves_in_subtree[i]
    in_subtree = np.ones(n, np.uint8)
    count = 0
    alphas[count] = 0.0
    impurities[count] = r_branch[0]
    count += 1
    stack = np.empty(n, np.int64)
    while candidate[0]:
        effective = np.finfo(np.float64).max
        pruned = -1
        for i in range(n):
            if not candidate[i]:
                continue
            a = (r_node[i] - r_branch[i]) / (n_leaves[i] - 1)
            if a < effective:
                effective = a
                pruned = i
        if not find_path and ccp_alpha < effective:
            break
        top = 0
        stack[top] = pruned
        top += 1
        while top > 0:
            top -= 1
            j = stack[top]
            if not in_subtree[j]:
                continue
            candidate[j] = 0
            leaves_in_subtree[j] = 0
            in_subtree[j] = 0
            if left[j] >= 0:
                stack[top] = left[j]
                top += 1
                stack[top] = right[j]
                top += 1
        leaves_in_subtree[pruned] = 1
        in_subtree[pruned] = 1
        n_pruned = n_leaves[pruned] - 1
        n_leaves[pruned] = 0
        r_diff = r_node[pruned] - r_branch[pruned]
        r_branch[pruned] = r_node[pruned]
        j = parent[pruned]
        while j != -1:
            n_leaves[j] -= n_pruned
            r_branch[j] += r_diff
            j = parent[j]
        alphas[count] = effective
        impurities[count] = r_branch[0]
        count += 1
    return count, in_subtree
