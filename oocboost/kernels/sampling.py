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
    for e in range(nodes.shape[0]):
        node_key = _splitmix64(uint64(tree_key) ^ (uint64(nodes[e]) * _GOLDEN))
        for j in range(n_allowed):
            u[j] = _uniform_keyed(node_key, j)
        chosen = np.sort(allowed[np.argsort(u)[:k]])
        for j in range(k):
            out[e, j] = chosen[j]
