"""``missing_values="surrogate"``: the surrogate splits of a group's finished trees,
from passes over the cache with each tree's own row weights (sample weight times the
tree's bootstrap draw), as ``engine/surrogates.py`` describes."""
import numpy as np

from ...engine.surrogates import find_surrogates
from ...kernels import cart_stats as kc
from ...model.surrogates import Surrogates

MISSING_VALUES = ("learn", "surrogate")


def add_surrogates(cache, config, group, trees, plan, blocks):
    """Give each tree of ``group`` (arrays dicts, in place) its ``surrogates`` and make
    its ``default_left`` the majority direction of each split.

    Parameters
    ----------
    cache : Cache
    config : ForestConfig
    group : list of int
        Global tree indices (they seed the bootstrap draws).
    trees : list of dict
        The group's finished (and pruned) trees.
    plan : TrainPlan
        Its histogram budget bounds the surrogate histograms of one pass.
    blocks : callable
        ``blocks()`` starts a pass over the cache.

    Returns
    -------
    int : the passes taken.
    """
    streams = np.asarray(group, np.int64)
    n_passes = [0]

    def row_weights(block):
        w = np.ones((len(group), block.n_rows))
        if block.weight is not None:
            w *= np.asarray(block.weight, np.float64)
        if config.sample_mode != kc.MODE_ALL:
            draws = np.empty((len(group), block.n_rows),
                             kc.draw_dtype(config.sample_mode, config.sample_lam))
            kc.row_draws(config.seed, streams, block.row_start, config.sample_mode,
                         config.sample_lam, draws)
            w *= draws
        return w

    def counted_blocks():
        n_passes[0] += 1
        return blocks()

    budget = max(int(plan.hist_nodes) * int(plan.hist_bytes_per_node), 1 << 24)
    tables = find_surrogates(trees, counted_blocks, row_weights, mapper=cache.bin_mapper,
                             max_bin=cache.max_bin, max_surrogates=config.max_surrogates,
                             budget_bytes=budget)
    for arrays, table in zip(trees, tables):
        arrays["default_left"] = table.pop("majority_left")
        arrays["surrogates"] = Surrogates.from_table(table)
    return n_passes[0]
