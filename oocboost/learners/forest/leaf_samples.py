"""The label samples a regression forest's leaves keep for quantile prediction
(``quantile_samples_leaf``; ``model/leaf_samples.py``): one pass over the cache after
the trees are grown.

Each row counts in each tree with its weight in that tree (sample weight times its
bootstrap copies, recomputed from the hash of (seed, tree, row)); rows of weight 0 are
not in the tree. A leaf keeps at most ``m`` of its rows: those with the smallest keys
``u(seed, tree, row)`` (a second hash, independent of the draws), so the kept rows are a
uniform sample of the leaf's rows that depends neither on the blocks nor on their order.
"""
import numpy as np

from ...errors import MemoryLimitError
from ...kernels import cart_stats as kc
from ...kernels.sampling import uniform_per_row
from ...model.leaf_samples import LeafSamples, QuantileLeaves
from ...model.tree import binned_leaves

#: Trees whose leaves one block is routed to at once (a (trees, rows) int32 array).
TREES_AT_ONCE = 16
#: Added to a tree's index for the keys' hash stream (the draws use the index itself).
_KEY_STREAM = 1 << 40
#: Bytes a kept label takes while the pass runs (leaf, key, value, weight).
BYTES_PER_SAMPLE = 28


def _keep_smallest(leaf, key, value, weight, m):
    """The entries of each leaf with the ``m`` smallest keys."""
    order = np.lexsort((key, leaf))
    leaf, key, value, weight = leaf[order], key[order], value[order], weight[order]
    first = np.flatnonzero(np.r_[True, leaf[1:] != leaf[:-1]])
    rank = np.arange(len(leaf)) - np.repeat(first, np.diff(np.r_[first, len(leaf)]))
    keep = rank < m
    return leaf[keep], key[keep], value[keep], weight[keep]


def check_sample_memory(model, tree_ids, m, n_rows, memory_limit):
    """MemoryLimitError when the labels the leaves may keep cannot fit ``memory_limit``
    (at most ``m`` a leaf, and at most the rows, in each tree)."""
    if memory_limit is None:
        return
    from ...engine.plan import check_limit
    from ...utils.rss import current_rss

    limit = check_limit(memory_limit)
    bound = sum(min(n_rows, m * model.trees[t].n_leaves) for t in tree_ids) \
        * BYTES_PER_SAMPLE
    if current_rss() + bound > limit:
        raise MemoryLimitError(
            f"quantile_samples_leaf={m}: the leaves of {len(tree_ids)} trees may keep "
            f"{bound / 2**20:.0f} MiB of labels, more than memory_limit leaves free; "
            f"lower quantile_samples_leaf or raise memory_limit")


def collect_leaf_samples(cache, model, config, tree_ids, blocks):
    """The :class:`LeafSamples` of model trees ``tree_ids`` (global tree indices, the
    seeds of their draws), from one pass over ``blocks()``.

    Returns
    -------
    QuantileLeaves
    """
    m = int(config.quantile_samples_leaf)
    kept = {t: [np.empty(0, np.int32), np.empty(0), np.empty(0), np.empty(0)]
            for t in tree_ids}
    missing_bin = cache.max_bin - 1
    for block in blocks():
        keys = np.empty(block.n_rows)
        label = block.label.astype(np.float64)
        for c0 in range(0, len(tree_ids), TREES_AT_ONCE):
            chunk = tree_ids[c0:c0 + TREES_AT_ONCE]
            leaves = binned_leaves([model.trees[t] for t in chunk], block.codes,
                                   missing_bin)
            draws = np.ones((len(chunk), block.n_rows), kc.draw_dtype(config.sample_mode,
                                                                      config.sample_lam))
            if config.sample_mode != kc.MODE_ALL:
                kc.row_draws(config.seed, np.asarray(chunk, np.int64), block.row_start,
                             config.sample_mode, config.sample_lam, draws)
            for j, t in enumerate(chunk):
                weight = draws[j].astype(np.float64)
                if block.weight is not None:
                    weight *= block.weight
                rows = np.flatnonzero(weight > 0)
                uniform_per_row(config.seed, _KEY_STREAM + t, block.row_start, keys)
                old = kept[t]
                kept[t] = list(_keep_smallest(
                    np.concatenate([old[0], leaves[j, rows]]),
                    np.concatenate([old[1], keys[rows]]),
                    np.concatenate([old[2], label[rows]]),
                    np.concatenate([old[3], weight[rows]]), m))
    return QuantileLeaves([_entry(t, *kept[t]) for t in tree_ids])


def _entry(tree, leaf, key, value, weight):
    """One tree's samples, each leaf's labels ascending."""
    order = np.lexsort((value, leaf))
    leaf, value, weight = leaf[order], value[order], weight[order]
    node, first = np.unique(leaf, return_index=True)
    return LeafSamples(tree, node, np.r_[first, len(leaf)], value, weight)
