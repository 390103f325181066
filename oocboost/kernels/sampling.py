"""Counter-based random draws per row: a pure function of (seed, stream, global row index).

Because each row's draw depends only on its global index, subsampling masks and bootstrap
weights are the same whatever the block size, prefetch depth or thread count, and no
sample index is ever stored (a forest keeps each row's draw for the passes of one group
of trees, in its per-row state, only because recomputing it in every pass was slower).
The same hash draws the features of each tree node (:func:`node_feature_subsets`).

The generator is SplitMix64 (Steele, Lea & Flood 2014) applied to a key mixed from the
three counters; its output passes BigCrush and is well suited to hashing counters.
"""
import numpy as np
from numba import njit, prange, uint64

from .codes import code_arrays, read_code
from .sorting import stable_argsort

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


@njit(inline="always")
def _splitmix64(x):
    x = (x + uint64(0x9E3779B97F4A7C15))
    x = (x ^ (x >> uint64(30))) * uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> uint64(27))) * uint64(0x94D049BB133111EB)
    return x ^ (x >> uint64(31))


@njit(inline="always")
def _stream_key(seed, stream):
    """The per-(seed, stream) half of the hash: hoisted out of row loops."""
    return _splitmix64(uint64(seed) ^ _splitmix64(uint64(stream) + uint64(0x632BE59BD9B4E019)))


@njit(inline="always")
def _uniform_keyed(key, row):
    bits = _splitmix64(key ^ uint64(row))
    # 53 random bits -> a double in [0, 1)
    return (bits >> uint64(11)) * (1.0 / 9007199254740992.0)


@njit(inline="always")
def _uniform(seed, stream, row):
    return _uniform_keyed(_stream_key(seed, stream), row)


@njit(parallel=True, cache=True)
def uniform_per_row(seed, stream, row_start, out):
    """Fill ``out[i]`` with U[0,1) for global rows ``row_start + i``.

    Parameters
    ----------
    seed, stream : int          # IN, e.g. the user's seed and the boosting round
    row_start : int             # IN, global index of the block's first row
    out : ndarray (n,) float64  # OUT
    """
    for i in prange(out.shape[0]):
        out[i] = _uniform(seed, stream, row_start + i)


@njit(parallel=True, cache=True)
def poisson1_per_row(seed, stream, row_start, out):
    """Fill ``out[i]`` with a Poisson(1) draw for global rows ``row_start + i``.

    Poisson(1) counts are the large-sample limit of bootstrap multiplicities (Breiman's
    bagging draws n rows with replacement; each row's count is Binomial(n, 1/n)).
    Inversion of the CDF with one uniform per row.

    Parameters
    ----------
    seed, stream : int          # IN, e.g. the forest seed and the tree index
    row_start : int             # IN
    out : ndarray (n,) float32  # OUT
    """
    for i in prange(out.shape[0]):
        u = _uniform(seed, stream, row_start + i)
        k = 0
        p = np.exp(-1.0)
        cdf = p
        while u > cdf and k < 20:
            k += 1
            p = p / k
            cdf += p
        out[i] = k


@njit(cache=True)
def node_feature_subsets(tree_key, nodes, allowed, k, out):
    """The ``k`` features each node may split on: a uniform ``k``-subset of ``allowed``,
    a pure function of (tree_key, node id), in ascending order.

    The ``k`` smallest of one uniform per (node, allowed feature) are a uniform subset;
    hashing instead of a sequential generator makes a node's features independent of
    which other nodes were drawn before it (pass grouping, memory limit).

    Parameters
    ----------
    tree_key : int, the tree's key (drawn once per tree from its generator)
    nodes : ndarray (n,) int64, node ids                       # IN
    allowed : ndarray (n_allowed,) int64, ascending features   # IN
    k : int, 1 <= k <= n_allowed
    out : ndarray (n, k) int32                                 # OUT
    """
    n_allowed = allowed.shape[0]
    u = np.empty(n_allowed)
    picked = np.empty(n_allowed, np.bool_)
    for e in range(nodes.shape[0]):
        node_key = _splitmix64(uint64(tree_key) ^ (uint64(nodes[e]) * _GOLDEN))
        for j in range(n_allowed):
            u[j] = _uniform_keyed(node_key, j)
            picked[j] = False
        # the k smallest draws pick the features; written in ascending order, as
        # ``allowed`` is
        order = stable_argsort(u)
        for j in range(k):
            picked[order[j]] = True
        m = 0
        for j in range(n_allowed):
            if picked[j]:
                out[e, m] = allowed[j]
                m += 1


@njit(parallel=True, cache=True)
def gradient_scores(stats, mvs_lambda, out):
    """Each row's importance for gradient-based sampling, from its statistics.

    ``out[i] = sum_t |g h|`` (GOSS, ``mvs_lambda < 0``) or ``sqrt(sum_t g^2 + mvs_lambda
    h^2)`` (MVS), over the outputs ``t``, in float64.

    Parameters
    ----------
    stats : ndarray (n_outputs, n_rows, 2) float32, gradient and hessian   # IN
    mvs_lambda : float
    out : ndarray (n_rows,) float64                                       # OUT
    """
    n_outputs = stats.shape[0]
    for i in prange(stats.shape[1]):
        total = 0.0
        for t in range(n_outputs):
            g = np.float64(stats[t, i, 0])
            h = np.float64(stats[t, i, 1])
            if mvs_lambda < 0.0:
                total += abs(g * h)
            else:
                total += g * g + mvs_lambda * h * h
        out[i] = total if mvs_lambda < 0.0 else np.sqrt(total)


@njit(inline="always")
def _scale_row(stats, i, factor, keep):
    for t in range(stats.shape[0]):
        stats[t, i, 0] *= factor
        stats[t, i, 1] *= factor
    keep[i] = factor > 0.0


@njit(parallel=True, cache=True)
def goss_sample(score, threshold, p_other, multiply, seed, stream, row_start, stats, keep):
    """Gradient-based one-side sampling of one block (LightGBM's GOSS), in place.

    Row ``i`` keeps its statistics when ``score[i] >= threshold`` (a large gradient);
    else, when its draw ``u < p_other``, they are multiplied by ``multiply`` (a sampled
    small gradient, weighted up); else they become 0 (left out of the round).

    Parameters
    ----------
    score : ndarray (n,) float64, ``|g h|`` summed over the outputs    # IN
    threshold : float, the smallest score kept whole
    p_other : float, probability of keeping a row below the threshold
    multiply : float, the factor of such a row (``1 / p_other``)
    seed, stream, row_start : int, the draw's counters (see :func:`uniform_per_row`)
    stats : ndarray (n_outputs, n, 2) float32                         # IN/OUT
    keep : ndarray (n,) bool, the row is in the sample                # OUT
    """
    key = _stream_key(seed, stream)
    for i in prange(score.shape[0]):
        if score[i] >= threshold:
            keep[i] = True
        elif _uniform_keyed(key, row_start + i) < p_other:
            _scale_row(stats, i, multiply, keep)
        else:
            _scale_row(stats, i, 0.0, keep)


@njit(parallel=True, cache=True)
def mvs_sample(reg_grad, threshold, seed, stream, row_start, stats, keep):
    """Minimal variance sampling of one block (XGBoost's ``gradient_based``), in place:
    row ``i`` is kept with probability ``p = min(1, reg_grad[i] / threshold)`` and its
    statistics multiplied by ``1 / p``; the others become 0.

    Parameters
    ----------
    reg_grad : ndarray (n,) float64, ``sqrt(sum g^2 + lambda h^2)``   # IN
    threshold : float, > 0 (``inf``: no row is kept)
    seed, stream, row_start : int, the draw's counters (see :func:`uniform_per_row`)
    stats : ndarray (n_outputs, n, 2) float32                         # IN/OUT
    keep : ndarray (n,) bool, the row is in the sample                # OUT
    """
    key = _stream_key(seed, stream)
    for i in prange(reg_grad.shape[0]):
        p = reg_grad[i] / threshold
        if p >= 1.0:
            keep[i] = True
        elif p > 0.0 and _uniform_keyed(key, row_start + i) <= p:
            _scale_row(stats, i, 1.0 / p, keep)
        else:
            _scale_row(stats, i, 0.0, keep)


def gather_rows(codes, stats, index, start, out_codes, out_stats):
    """Copy rows ``index`` (ascending), in order, to columns ``start ..`` of the outputs
    (a sample gathered block by block).

    Parameters
    ----------
    codes : ndarray (n_features, n_rows) uint8/uint16, or PlaneCodes   # IN
    stats : ndarray (n_outputs, n_rows, 2) float32                     # IN
    index : ndarray (m,) int64, the rows to copy                       # IN
    start : int, the first output column
    out_codes : ndarray (n_features, capacity), codes' dtype           # OUT
    out_stats : ndarray (n_outputs, capacity, 2) float32               # OUT
    """
    _gather_rows(*code_arrays(codes), stats, index, start, out_codes, out_stats)


@njit(parallel=True, cache=True)
def _gather_rows(low, wide, wide_row, stats, index, start, out_codes, out_stats):
    n_features = low.shape[0]
    n_outputs = stats.shape[0]
    m = index.shape[0]
    # one task a feature (or an output's statistics): a thread writes its rows in order
    for task in prange(n_features + n_outputs):
        if task < n_features:
            for j in range(m):
                out_codes[task, start + j] = read_code(low, wide, wide_row, task, index[j])
        else:
            t = task - n_features
            for j in range(m):
                out_stats[t, start + j, 0] = stats[t, index[j], 0]
                out_stats[t, start + j, 1] = stats[t, index[j], 1]


@njit(parallel=True, cache=True)
def sampled_rows(stats, out):
    """``out[i]`` = 1 when row ``i`` has a non-zero statistic for some output (it is in
    the round's sample), else 0.

    Parameters
    ----------
    stats : ndarray (n_outputs, n_rows, 2) float32      # IN
    out : ndarray (n_rows,) uint8                        # OUT
    """
    for i in prange(stats.shape[1]):
        kept = 0
        for t in range(stats.shape[0]):
            if stats[t, i, 0] != 0.0 or stats[t, i, 1] != 0.0:
                kept = 1
        out[i] = kept
