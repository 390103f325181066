"""A forest's pass loop: trees grown ``trees_per_pass`` at a time over the blocks, with
row draws, class counts or CART statistics made per block; the out-of-bag pass; the
choice of ``trees_per_pass`` within the memory plan."""
import dataclasses
import time
from dataclasses import dataclass

import numpy as np

from ...common import HIST_DTYPE, INT_HIST_DTYPE, INT_HIST_MAX, scratch_view
from ...engine.blocks import timed_blocks
from ...engine.grower import TreeGrower
from ...engine.nodes import GrowerTelemetry, GrowthParams, sampled_columns
from ...engine.passes import grow_passes
from ...engine.rowstate import RowStateSpec, make_row_state, spill_dir_for
from ...errors import MemoryLimitError
from ...kernels import cart_stats as kc
from ...kernels.codes import read_only
from ...kernels.histogram import ClassCounts
from ..common.cart_policy import ForestCartPolicy
from ..common.tree_features import tree_feature_sets

#: Most trees grown in the same passes when ``trees_per_pass`` is not given.
MAX_TREES_PER_PASS = 16
# Purposes of the per-tree random generators.
_RNG_FEATURES, _RNG_THRESHOLDS = 1, 2
#: Use integer statistics and int32 histograms where they are exact (:func:`integer_stats`);
#: False forces float64 (the tests compare the two).
INTEGER_STATS = True


@dataclass
class ForestResult:
    """Trees grown by :func:`grow_trees` and what was measured."""

    trees: list                    # dicts of tree arrays (``Tree(**d)``)
    node_stats: list               # per tree {"impurity", "weighted_n"} or None
    telemetry: dict


def counted_blocks(cache, plan, counters):
    """One pass's blocks (``engine.blocks.timed_blocks``), their wait and bytes added to
    ``counters``."""
    def account(wait_s, nbytes):
        counters["io_wait_s"] += wait_s
        counters["bytes_read"] += nbytes

    return timed_blocks(cache, plan, account)


def choose_trees_per_pass(cache, config, n_new, plan_train, distributed=None):
    """Trees per pass and the memory plan: as many as fit (at most 16 and ``n_new``).

    Each tree of a pass costs 4 bytes of node index per row (and 1 of stored draw with
    row sampling), its statistics for one block (``block_rows * n_stats * 8`` bytes) and
    its frontier's histograms (``hist_columns * max_bin * hist_width(n_stats) * 8`` bytes
    per node in flight); a candidate is accepted when the plan leaves room for at least
    two nodes per tree. In a distributed run (``distributed``) every worker takes the
    smallest choice of any worker, for both the trees and the nodes in flight: they must
    grow the same nodes in the same passes.
    """
    n_stats = _n_stats(config)
    integer = integer_stats(cache, config, _total_rows(cache, distributed))
    common = dict(n_rows=cache.n_rows, n_features=cache.n_features, max_bin=cache.max_bin,
                  n_stats=n_stats, n_outputs=max(config.n_outputs, 1),
                  block_rows=cache.block_rows, n_blocks=cache.n_blocks,
                  codes_itemsize=np.dtype(cache.codes_dtype).itemsize,
                  code_bytes_per_row=cache.code_bytes_per_row,
                  prefetch=config.prefetch)

    # Every tree's feature set has the size of tree 0's, except with bootstrap_features
    # (duplicates drawn and dropped), where the plan assumes full histograms; so does the
    # grower when a feature is wide or bundled.
    full = (config.bootstrap_features or cache.bundles is not None
            or cache.n_hist_columns != cache.n_features)
    columns = None if full else sampled_columns(
        _growth_params(config, 1), cache.n_features,
        _tree_feature_sets(config, [0], cache.n_features))
    n_columns = columns or cache.planned_hist_columns

    def scratch_bytes(t):
        # integer statistics are made in the kernels from each row's class
        if integer:
            return cache.block_rows * _row_classes(np.zeros(1, np.float32),
                                                   config.n_classes).itemsize
        return t * cache.block_rows * n_stats * np.dtype(kc.STATS_DTYPE).itemsize

    def plan_for(t):
        # 64 nodes in flight per tree with full histograms; as many more as the smaller
        # per-node histograms of sampled features allow
        return plan_train(config.memory_limit, n_trees_in_pass=t,
                          max_nodes_in_flight=64 * t * max(1, cache.n_features // n_columns),
                          state_bytes_per_row=_row_state_spec(config, t).bytes_per_row(),
                          block_scratch_bytes=scratch_bytes(t), block_scratch_detail=(
                              "row classes" if integer else f"{t} trees x "
                              f"{cache.block_rows:,} rows x {n_stats} stats x "
                              f"{np.dtype(kc.STATS_DTYPE).itemsize} B"),
                          n_hist_columns=n_columns,
                          hist_itemsize=np.dtype(INT_HIST_DTYPE if integer
                                                 else HIST_DTYPE).itemsize, **common)

    t, plan = _fit_trees(config, n_new, plan_for)
    if distributed is not None:
        agreed = distributed.agree_min(t)
        if agreed != t:
            t, plan = agreed, plan_for(agreed)
        plan = dataclasses.replace(plan, hist_nodes=distributed.agree_min(plan.hist_nodes))
    return t, plan


def _fit_trees(config, n_new, plan_for):
    """``(trees per pass, plan)``: the given ``trees_per_pass``, else as many as fit."""
    if config.trees_per_pass is not None:
        t = max(1, min(config.trees_per_pass, n_new))
        return t, plan_for(t)
    t = max(1, min(MAX_TREES_PER_PASS, n_new))
    while True:
        try:
            plan = plan_for(t)
        except MemoryLimitError:
            # each tree's block statistics and node indices may be what does not fit
            if t == 1:
                raise
            t //= 2
            continue
        if t == 1 or config.memory_limit is None or plan.hist_nodes >= 2 * t:
            return t, plan
        t //= 2


def _growth_params(config, hist_nodes):
    return GrowthParams(
        max_depth=config.max_depth, max_leaves=config.max_leaf_nodes,
        grow_policy="lossguide" if config.max_leaf_nodes else "depthwise",
        leaves_per_pass=config.leaves_per_pass, features_per_node=config.features_per_node,
        max_hist_slots=2 * int(hist_nodes))


def _tree_feature_sets(config, tree_ids, n_features):
    if config.tree_features is None and not config.bootstrap_features:
        return None
    return tree_feature_sets(config.seed, tree_ids, n_features, config.tree_features,
                             config.bootstrap_features)


def _total_rows(cache, distributed):
    return cache.n_rows if distributed is None else int(distributed.n_rows)


def _row_offset(distributed):
    """The first row of this worker's shard in the whole data (0 on one machine): row
    draws hash the global row number, so they do not depend on the sharding."""
    return 0 if distributed is None else int(distributed.row_offset)


def _group_class_weights(cache, config, tree_ids, counters, distributed=None):
    """(T, K) class weights of a group (``balanced_subsample`` needs a labels pass)."""
    T, K = len(tree_ids), config.n_classes
    if config.task != "classification" or config.class_weight is None:
        return np.zeros((0, 0))
    if not isinstance(config.class_weight, str):
        return np.ascontiguousarray(np.tile(config.class_weight, (T, 1)))
    counts = np.zeros((T, K))
    streams = np.asarray(tree_ids, np.int64)
    for block in cache.iter_blocks(prefetch=1, with_codes=False):
        kc.sampled_class_counts(block.label, config.seed, streams,
                                block.row_start + _row_offset(distributed),
                                config.sample_mode, config.sample_lam, counts)
    counters["label_passes"] += 1
    if distributed is not None:
        distributed.sum_(counts)
    n_present = (counts > 0).sum(axis=1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        w = counts.sum(axis=1, keepdims=True) / (n_present * counts)
    return np.ascontiguousarray(np.where(counts > 0, w, 0.0))


def _block_stats(block, config, streams, class_weight, draws, scratch, row_offset=0):
    """Per-row CART statistics of one block for the trees ``streams``, into a buffer kept
    in ``scratch`` (a dict) between blocks and passes.

    ``draws`` : ndarray (n_trees, n_rows), the stored bootstrap draws, or shape (0, 0)
    without row sampling.
    """
    n_stats = _n_stats(config)
    shape = (len(streams), block.n_rows, n_stats)
    scratch["stats"], out = scratch_view(scratch.get("stats"), shape, kc.STATS_DTYPE)
    weight = block.weight if block.weight is not None else np.empty(0, np.float32)
    label, n_lanes = block.label, config.n_classes
    if config.label_values is not None:
        label, n_lanes = _label_lanes(label, config.label_values), len(config.label_values)
    # read-only views: a cache's labels and weights are, those made in memory are not,
    # and numba would compile the kernel once for each
    kc.cart_stats(
        read_only(label),
        read_only(weight),
        class_weight,
        n_lanes,
        config.seed,
        streams,
        block.row_start + row_offset,
        config.sample_mode,
        config.sample_lam,
        draws,
        out,
        config.criterion == "poisson",
    )
    return out


def integer_stats(cache, config, n_rows=None):
    """True when a forest's statistics are integers whose sums fit in int32: they are then
    made inside the histogram kernels from each row's class and draw
    (``kernels.histogram.ClassCounts``, nothing per row is written) and summed into int32
    histograms (``common.INT_HIST_DTYPE``).

    That is classification without sample weights in the cache and without class
    weights: a row's statistics are then its draw (0, 1, or a Poisson count of at most
    ``kc.max_draw``) in its class's lane and 1 in the count lane. No sum can exceed
    ``n_rows * max_draw``; while that is at most ``INT_HIST_MAX`` every integer add is
    exact, and each sum is the same number the float64 path computes (float64 holds
    these integers exactly too), so the trees are bit for bit the same. A bin then
    takes 16 bytes instead of 32, and the per-pass statistics sweep is gone: 16
    depth-12 trees on 1M x 28 rows fit in 5.1 s instead of 6.4 (histogram 3.3 -> 2.6 s,
    statistics 0.8 -> 0.15 s).

    ``n_rows``: the rows of every shard of a distributed run (default the cache's), so
    that every worker makes the same choice.
    """
    return bool(INTEGER_STATS and config.task == "classification"
                and config.n_classes <= 65536
                and config.class_weight is None and not cache.has_weight
                and (cache.n_rows if n_rows is None else n_rows)
                * kc.max_draw(config.sample_mode, config.sample_lam) <= INT_HIST_MAX)


def _row_classes(label, n_classes):
    """Class index of each row as the smallest unsigned integers that hold them."""
    return label.astype(np.uint8 if n_classes <= 256 else np.uint16)


def _n_stats(config):
    if config.label_values is not None:  # absolute_error: a lane per label value
        return len(config.label_values) + 1
    return config.n_classes + 1 if config.task == "classification" else 4


#: Distinct label values ``absolute_error`` keeps exactly; more are grouped into this
#: many quantile bins of the labels.
MAX_LABEL_VALUES = 1024


def label_values(cache):
    """The ascending label values of ``absolute_error``: every distinct label when there
    are at most :data:`MAX_LABEL_VALUES`, else that many weighted quantiles of the labels
    (each row then counts at its nearest one). One labels-only pass."""
    from ...cache.label_stats import LabelStats

    distinct = np.empty(0)
    for block in cache.iter_blocks(prefetch=1, with_codes=False):
        distinct = np.union1d(distinct, block.label.astype(np.float64))
        if distinct.size > MAX_LABEL_VALUES:
            stats = LabelStats.from_dict(cache.manifest["label_stats"])
            levels = np.linspace(0.0, 1.0, MAX_LABEL_VALUES)
            return np.unique([stats.quantile(q) for q in levels])
    return distinct


def _label_lanes(label, values):
    """Each row's lane: the index of its nearest label value, as float32."""
    mid = 0.5 * (values[1:] + values[:-1])
    return np.searchsorted(mid, label.astype(np.float64)).astype(np.float32)


def _row_state_spec(config, trees_per_pass):
    """Per-row state of a pass: each tree's node of the row and, with row sampling, the
    row's draw for each tree (made in the pass's first read, then reused)."""
    fields = {"node": ((trees_per_pass, None), np.int32)}
    if config.sample_mode != kc.MODE_ALL:
        fields["draw"] = ((trees_per_pass, None),
                          kc.draw_dtype(config.sample_mode, config.sample_lam))
    return RowStateSpec(fields)


def grow_trees(cache, config, tree_ids, *, plan, trees_per_pass, counters,
               distributed=None):
    """Grow the trees ``tree_ids`` (global indices), ``trees_per_pass`` at a time.

    Parameters
    ----------
    cache : Cache
    config : ForestConfig
    tree_ids : sequence of int
        Global tree indices: they seed each tree's draws.
    plan : TrainPlan
    trees_per_pass : int
    counters : dict
        Telemetry accumulated in place (``io_wait_s``, ``bytes_read``, ``stats_s``,
        ``label_passes``).
    distributed : object or None
        One worker of a distributed run (``oocboost.dask``): ``reduce_histograms(hist,
        slots)`` sums a pass's histograms over the workers, ``sum_(array)`` any array,
        ``n_rows`` and ``row_offset`` place this worker's shard in the whole data.

    Returns
    -------
    ForestResult
    """
    spec = _row_state_spec(config, trees_per_pass)
    rows = make_row_state(spec, cache.block_row_starts, cache.n_rows,
                          in_memory=plan.state_in_ram,
                          spill_dir=spill_dir_for(cache))
    telemetry = GrowerTelemetry()
    trees, node_stats = [], []
    integer = integer_stats(cache, config, _total_rows(cache, distributed))
    try:
        for g0 in range(0, len(tree_ids), trees_per_pass):
            group = [int(g) for g in tree_ids[g0:g0 + trees_per_pass]]
            policy, grower = _group_grower(cache, config, group, plan, integer)
            if distributed is not None:
                grower.distribute(distributed.reduce_histograms,
                                  distributed.reduce_histograms_to_root,
                                  distributed.share_search)
            _grow_group(cache, config, group, grower, rows, plan, counters, integer,
                        distributed)
            finished = list(_finished_trees(grower, policy, config, len(group)))
            if config.missing_values == "surrogate":
                from .surrogate_pass import add_surrogates

                counters["surrogate_passes"] += add_surrogates(
                    cache,
                    config,
                    group,
                    [a for a, _ in finished],
                    plan,
                    lambda: counted_blocks(cache, plan, counters),
                )
            for arrays, stats in finished:
                trees.append(arrays)
                node_stats.append(stats)
            telemetry.add(grower.telemetry)
    finally:
        rows.close()
    return ForestResult(trees=trees, node_stats=node_stats, telemetry=telemetry.as_dict())


def _group_grower(cache, config, group, plan, integer):
    """The policy and the started grower of one group of trees (global indices)."""
    mapper = cache.bin_mapper
    policy = ForestCartPolicy(
        n_trees=len(group), criterion=config.criterion, n_classes=config.n_classes,
        n_value_bins=mapper.n_value_bins, is_categorical=mapper.is_categorical,
        missing_bin=cache.max_bin - 1, min_samples_leaf=config.min_samples_leaf,
        min_impurity_decrease=config.min_impurity_decrease,
        min_samples_split=config.min_samples_split,
        min_weight_fraction_leaf=config.min_weight_fraction_leaf,
        hist_dtype=INT_HIST_DTYPE if integer else HIST_DTYPE,
        label_values=config.label_values, monotonic_cst=config.monotonic_cst,
        multiway=config.multiway,
        threshold_rngs=([np.random.default_rng([config.seed, g, _RNG_THRESHOLDS])
                         for g in group] if config.splitter == "random" else None))
    grower = TreeGrower(
        len(group), cache.n_features, cache.max_bin, mapper.n_value_bins,
        mapper.is_categorical, mapper.bin_edges, policy,
        _growth_params(config, plan.hist_nodes),
        np.random.default_rng([config.seed, group[0]]),
        feature_rngs=[np.random.default_rng([config.seed, g, _RNG_FEATURES])
                      for g in group],
        tree_features=_tree_feature_sets(config, group, cache.n_features),
        bundles=cache.bundles)
    grower.start()
    return policy, grower


def _grow_group(cache, config, group, grower, rows, plan, counters, integer,
                distributed=None):
    """The data passes that grow one group of trees, one level (or leaf batch) a pass."""
    T = len(group)
    streams = np.asarray(group, np.int64)
    class_weight = _group_class_weights(cache, config, group, counters, distributed)
    offset = _row_offset(distributed)
    scratch = {}
    no_draws = np.zeros((0, 0), np.uint8)
    every_row = np.zeros((T, 0), np.uint8)

    def block_statistics(block, views, first):
        node = views["node"][:T]
        t0 = time.perf_counter()
        draws = views["draw"][:T] if "draw" in views else no_draws
        if first:
            node[:] = 0
            if "draw" in views:
                kc.row_draws(config.seed, streams, block.row_start + offset,
                             config.sample_mode, config.sample_lam, draws)
        if integer:
            # made from labels and draws inside the histogram kernels
            stats = ClassCounts(_row_classes(block.label, config.n_classes),
                                draws if draws.size else every_row, config.n_classes)
        else:
            stats = _block_stats(block, config, streams, class_weight, draws, scratch,
                                 offset)
        counters["stats_s"] += time.perf_counter() - t0
        # rows outside the bootstrap (draw 0) have all-zero statistics; without draws,
        # unweighted rows all count, weighted ones by their count statistic
        return stats, node, (draws if draws.size else every_row if integer else None)

    grow_passes(grower, lambda: counted_blocks(cache, plan, counters), rows, block_statistics,
                later_written=("node",))


def _finished_trees(grower, policy, config, n_trees):
    """``(arrays, node_stats)`` of each tree of the group, pruned when asked."""
    from ...engine.pruning import prune_tree

    for t in range(n_trees):
        arrays = grower.tree_arrays(t)
        n = len(arrays["left"])
        sums = grower.nodes.sums[t, :n]
        impurity = policy.impurity(sums)
        weighted_n = policy.weights(sums)
        if config.ccp_alpha > 0.0 or config.keep_node_stats:
            arrays, _ = prune_tree(arrays, weighted_n, impurity, config.ccp_alpha,
                                   extra={"impurity": impurity, "weighted_n": weighted_n})
            impurity = arrays.pop("impurity")
            weighted_n = arrays.pop("weighted_n")
        yield arrays, ({"impurity": impurity, "weighted_n": weighted_n}
                       if config.keep_node_stats else None)


def oob_pass(cache, model, config, tree_ids, plan, counters, keep_arrays=True,
             distributed=None):
    """Out-of-bag predictions and score, in one streaming pass.

    Each tree's value is added to the rows it did not draw (draw == 0, recomputed from the
    hash of (seed, tree, row)); a row's OOB prediction is the mean over those trees.
    As in scikit-learn, the score is over every row (a row no tree left out predicts
    class 0, or 0) and ignores sample weights: accuracy for classification, R^2 for
    regression.

    Parameters
    ----------
    model : Model
        Its trees ``tree_ids`` are used (tree ``j`` of the model is global tree
        ``tree_ids[j]``).
    keep_arrays : bool
        Return the per-row arrays (``n_rows x n_outputs`` float64 in RAM).
    distributed : object or None
        One worker of a distributed run (as :func:`grow_trees`): the score's sums are
        summed over the workers; ``decision`` is then this worker's rows only.

    Returns
    -------
    score : float
    decision : ndarray (n_rows, n_outputs) float64 or None
        Mean OOB prediction per row (class proportions for classifiers).
    n_without : int
        Rows that no tree left out.
    """
    K = model.n_outputs
    missing_bin = cache.max_bin - 1
    decision = np.zeros((cache.n_rows, K)) if keep_arrays else None
    hits = 0.0
    sse = sy = syy = 0.0
    n_without = 0
    for block in counted_blocks(cache, plan, counters):
        n = block.n_rows
        oob_sum = np.zeros((n, K))
        oob_count = np.zeros(n, np.int32)
        for j, g in enumerate(tree_ids):
            values = model.predict_margin_binned(block.codes, missing_bin,
                                                 iteration_range=(j, j + 1),
                                                 include_base=False)
            kc.add_oob_values(config.seed, int(g), block.row_start
                              + _row_offset(distributed), config.sample_mode,
                              config.sample_lam, np.ascontiguousarray(values), oob_sum,
                              oob_count)
        n_without += int(np.count_nonzero(oob_count == 0))
        pred = oob_sum / np.maximum(oob_count, 1)[:, None]
        y = block.label.astype(np.float64)
        if config.task == "classification":
            hits += float(np.count_nonzero(np.argmax(pred, axis=1) == y))
        else:
            sse += float(np.sum((y - pred[:, 0]) ** 2))
            sy += float(y.sum())
            syy += float(np.sum(y * y))
        if decision is not None:
            decision[block.row_start:block.row_start + n] = pred
    counters["oob_passes"] += 1
    n_rows = cache.n_rows
    if distributed is not None:
        sums = distributed.sum_(np.array([hits, sse, sy, syy, n_without], np.float64))
        hits, sse, sy, syy = (float(v) for v in sums[:4])
        n_without, n_rows = int(sums[4]), int(distributed.n_rows)
    if config.task == "classification":
        score = hits / n_rows
    else:
        sst = syy - sy * sy / n_rows
        score = 1.0 - sse / sst if sst > 0 else (1.0 if sse == 0 else 0.0)
    return score, decision, n_without


def new_counters():
    return {"io_wait_s": 0.0, "bytes_read": 0, "stats_s": 0.0, "label_passes": 0,
            "oob_passes": 0, "surrogate_passes": 0}


