"""Decision streams (Ignatov and Ignatov 2017) grown from a cache, one level a pass.

Each level's nodes get their histograms in one pass over the blocks (the batch
learners' kernels: ``partition_select_rows`` moves each row one level down and lists it
by its node's slot, ``build_histograms_selected`` adds it); the CART policy splits them;
then the new children are merged greedily while two of them are statistically
indistinguishable (``merge.py``), so a node of the next level may gather rows from many
branches. The result is a directed acyclic graph: a node may have several parents.

Rows keep "arrival" ids: every split gives its two children two new consecutive ids, and
the routes of all the ids a merged node gathers point to that node's split. So the
partition kernel's routes (left child, ``left + 1`` right) work unchanged, and every id of
a merged node adds into the node's one histogram slot.
"""
import time
from dataclasses import dataclass

import numpy as np

from ...common import G_H_DTYPE, HIST_DTYPE, hist_column_starts, hist_width
from ...engine.blocks import timed_blocks
from ...engine.nodes import raw_thresholds
from ...engine.partitioner import chunk_starts
from ...engine.plan import plan_train
from ...engine.policies import CartPolicy
from ...engine.rowstate import RowStateSpec, make_row_state, spill_dir_for
from ...errors import ParameterError
from ...kernels import adaboost_kernels as ak
from ...kernels.histogram import build_histograms_selected
from ...kernels.partition import partition_select_rows, route_flags
from .merge import homogeneity_p, merge_nodes, welch_p


@dataclass
class StreamConfig:
    """Validated settings of a decision stream (see the estimator's docstring)."""

    task: str
    n_classes: int
    criterion: str
    max_depth: object
    min_samples_split: int
    min_samples_leaf: int
    min_impurity_decrease: float
    significance: float
    memory_limit: object = None
    prefetch: object = None
    n_jobs: object = None
    learner: str = "decision_stream"

    @property
    def n_outputs(self):
        return self.n_classes if self.task == "classification" else 1


def resolve_stream_config(params, *, task, n_classes, n_rows):
    """Validate a decision stream's parameters (scikit-learn's tree names, plus
    ``significance``) into a :class:`StreamConfig`."""
    from ..common.cart_config import CLASSIFICATION_CRITERIA
    from ..common.validate import count_or_fraction
    from .params import STREAM_SPEC as spec

    classification = task == "classification"
    criterion = params.get("criterion") or ("gini" if classification else "squared_error")
    allowed = CLASSIFICATION_CRITERIA if classification else ("squared_error",
                                                             "friedman_mse")
    if criterion not in allowed:
        raise ParameterError(f"criterion must be one of {allowed} for a decision stream "
                             f"({task}), got {criterion!r}")
    leaf = count_or_fraction("min_samples_leaf", params.get("min_samples_leaf", 1), n_rows, 1)
    split = count_or_fraction("min_samples_split", params.get("min_samples_split", 2),
                               n_rows, 2)
    significance = spec["significance"].check(params.get("significance", 0.05))
    return StreamConfig(
        task=task, n_classes=int(n_classes) if classification else 0, criterion=criterion,
        max_depth=spec["max_depth"].check(params.get("max_depth")),
        min_samples_split=max(split, 2 * leaf), min_samples_leaf=leaf,
        min_impurity_decrease=spec["min_impurity_decrease"].check(
            params.get("min_impurity_decrease", 0.0)),
        significance=significance, memory_limit=params.get("memory_limit"),
        prefetch=spec["prefetch"].check(params.get("prefetch")),
        n_jobs=params.get("n_jobs"))


class StreamGraph:
    """The nodes of a growing stream (grown lists, turned into tree arrays at the end)."""

    def __init__(self, n_stats, n_words):
        self.n_words = n_words
        self.sums = [np.zeros(n_stats)]
        self.depth = [0]
        self.split = {}     # node -> (feature, bin, default_left, is_cat, bitset, gain)
        self.children = {}  # node -> (left node, right node)

    def add(self, depth):
        self.sums.append(None)
        self.depth.append(depth)
        return len(self.depth) - 1


class _Ids:
    """Arrival ids: routes (left child id, feature, bin, flags) and category sets."""

    def __init__(self, n_words):
        self.route = np.full((64, 4), -1, np.int32)
        self.bits = np.zeros((64, max(n_words, 1)), np.uint32)
        self.n = 1

    def allocate(self, count):
        first = self.n
        self.n += count
        if self.n > len(self.route):
            grow = max(self.n, 2 * len(self.route))
            route = np.full((grow, 4), -1, np.int32)
            route[:len(self.route)] = self.route
            bits = np.zeros((grow, self.bits.shape[1]), np.uint32)
            bits[:len(self.bits)] = self.bits
            self.route, self.bits = route, bits
        return first


def train_stream(cache, config):
    """Grow a decision stream over ``cache`` (labels: class indices, or targets).

    Returns ``(graph, policy, telemetry)``; :func:`stream_arrays` turns the graph into
    tree arrays.
    """
    mapper = cache.bin_mapper
    classification = config.task == "classification"
    policy = CartPolicy(criterion=config.criterion,
                        n_classes=config.n_classes if classification else 0,
                        n_value_bins=mapper.n_value_bins, is_categorical=mapper.is_categorical,
                        missing_bin=cache.max_bin - 1, total_weight=1.0,
                        min_samples_leaf=config.min_samples_leaf,
                        min_impurity_decrease=config.min_impurity_decrease)
    starts = hist_column_starts(mapper.n_value_bins, cache.max_bin)
    n_columns = int(starts[-1])
    column_of = None if n_columns == cache.n_features else starts
    spec = RowStateSpec({"node": ((1, None), np.int32)})
    plan = plan_train(
        config.memory_limit,
        n_rows=cache.n_rows,
        n_features=cache.n_features,
        max_bin=cache.max_bin,
        n_stats=policy.n_stats,
        block_rows=cache.block_rows,
        n_blocks=cache.n_blocks,
        codes_itemsize=np.dtype(cache.codes_dtype).itemsize,
        code_bytes_per_row=cache.code_bytes_per_row,
        prefetch=config.prefetch,
        state_bytes_per_row=spec.bytes_per_row(),
        n_hist_columns=n_columns,
    )
    rows = make_row_state(spec, cache.block_row_starts, cache.n_rows,
                          in_memory=plan.state_in_ram, spill_dir=spill_dir_for(cache))
    n_words = (max(cache.max_bin, int(np.max(mapper.n_value_bins))) + 31) // 32
    graph, ids = StreamGraph(policy.n_stats, n_words), _Ids(n_words)
    telemetry = {"passes": 0, "histogram_s": 0.0, "split_s": 0.0, "merge_s": 0.0,
                 "io_wait_s": 0.0}
    members = {0: [0]}
    frontier = [0]
    try:
        while frontier:
            width = hist_width(policy.n_stats)
            sums = np.empty((len(frontier), policy.n_stats))
            hists = []
            batch = max(1, int(plan.hist_nodes))
            for lo in range(0, len(frontier), batch):
                part = frontier[lo:lo + batch]
                hist = np.zeros((len(part), n_columns, cache.max_bin, width), HIST_DTYPE)
                _level_pass(cache, plan, rows, ids, members, part, hist, column_of, config,
                            telemetry, first=graph.depth[frontier[0]] == 0 and lo == 0)
                sums[lo:lo + len(part)] = _slot_sums(hist, policy.n_stats, column_of)
                hists.append(hist)
            for k, g in enumerate(frontier):
                graph.sums[g] = sums[k]
            depth = graph.depth[frontier[0]]
            if config.max_depth is not None and depth >= config.max_depth:
                break
            frontier, members = _grow_level(graph, ids, policy, config, frontier, members,
                                            np.concatenate(hists), sums, telemetry)
    finally:
        rows.close()
    return graph, policy, telemetry


def _block_stats(block, config):
    stats = np.empty((1, block.n_rows, 4 if config.task != "classification"
                      else config.n_classes + 1), G_H_DTYPE)
    w = (np.ones(block.n_rows) if block.weight is None
         else np.asarray(block.weight, np.float64))
    if config.task == "classification":
        y = np.ascontiguousarray(block.label, np.float64).astype(np.int32)
        ak.class_weight_stats(y, w, stats[0])
    else:
        ak.regression_stats(np.ascontiguousarray(block.label), w, stats[0])
    return stats


def _level_pass(cache, plan, rows, ids, members, part, hist, column_of, config, telemetry,
                first):
    """One pass: rows move a level down and add into the slots of the nodes ``part``."""
    slot_of_id = np.full((1, ids.n), -1, np.int32)
    for k, g in enumerate(part):
        slot_of_id[0, members[g]] = k
    route, bits = ids.route[None, :ids.n], ids.bits[None, :ids.n]
    no_counts = np.zeros((1, 0), np.uint8)

    def account(wait_s, nbytes):
        telemetry["io_wait_s"] += wait_s

    telemetry["passes"] += 1
    for block in timed_blocks(cache, plan, account):
        views = rows.load(block.index)
        node = views["node"]
        if first:
            node[:] = 0
        t0 = time.perf_counter()
        # bundled sparse features: the per-feature codes (the histograms are per feature)
        codes = block.codes if block.bundles is not None else block.stored_codes
        n = block.n_rows
        chunk_start = chunk_starts(n)
        listed = np.empty((1, n), np.int32)
        slots = np.empty((1, n), np.int32)
        chunk_count = np.empty((1, len(chunk_start)), np.int64)
        partition_select_rows(codes, node, route, bits, cache.max_bin - 1, slot_of_id,
                              no_counts, chunk_start, listed, slots, chunk_count)
        build_histograms_selected(codes, _block_stats(block, config), listed, slots,
                                  chunk_start, chunk_count, hist, column_of)
        telemetry["histogram_s"] += time.perf_counter() - t0
        rows.store(block.index, views)


def _slot_sums(hist, n_stats, column_of):
    """Each slot's statistics: the sums over every bin of its first feature."""
    last = 1 if column_of is None else int(column_of[1])
    return hist[:, :last, :, :n_stats].sum(axis=(1, 2))


def _grow_level(graph, ids, policy, config, frontier, members, hist, sums, telemetry):
    """Split the level's nodes, merge their children; the next frontier and members."""
    t0 = time.perf_counter()
    n_nodes = len(frontier)
    found = policy.find_splits(hist, sums, np.arange(n_nodes, dtype=np.int32),
                               np.ones((n_nodes, hist.shape[1]), bool))
    ok = np.asarray(policy.accept_splits(found, sums), bool) & (
        sums[:, policy.count_stat] >= config.min_samples_split)
    telemetry["split_s"] += time.perf_counter() - t0
    splitting = np.flatnonzero(ok)
    if not len(splitting):
        return [], members
    t0 = time.perf_counter()
    child_sums = np.stack([found["left_sums"][splitting], found["right_sums"][splitting]],
                          axis=1).reshape(2 * len(splitting), -1)
    if config.task == "classification":
        def test(a, b, K=config.n_classes):      # class lanes only, not the count
            return homogeneity_p(a[:K], b[:K])
    else:
        test = welch_p
    group, group_sums = merge_nodes(child_sums, np.repeat(np.arange(len(splitting)), 2),
                                    test, config.significance)
    telemetry["merge_s"] += time.perf_counter() - t0
    depth = graph.depth[frontier[0]] + 1
    new_nodes = [graph.add(depth) for _ in range(len(group_sums))]
    first_id = ids.allocate(2 * len(splitting))
    next_members = {g: [] for g in new_nodes}
    for c in range(2 * len(splitting)):
        next_members[new_nodes[group[c]]].append(first_id + c)
    for idx, k in enumerate(splitting):
        g = frontier[k]
        bitset = found["cat_bitset"][k]
        graph.split[g] = (int(found["feature"][k]), int(found["bin"][k]),
                          bool(found["default_left"][k]), bool(found["is_categorical"][k]),
                          bitset, float(found["gain"][k]))
        graph.children[g] = (new_nodes[group[2 * idx]], new_nodes[group[2 * idx + 1]])
        at = members[g]
        ids.route[at, 0] = first_id + 2 * idx
        ids.route[at, 1] = found["feature"][k]
        ids.route[at, 2] = found["bin"][k]
        ids.route[at, 3] = route_flags(found["default_left"][k], found["is_categorical"][k])
        ids.bits[at, :len(bitset)] = bitset
    return new_nodes, next_members


def stream_arrays(graph, policy, bin_edges):
    """The stream as tree arrays (``Tree(**arrays)``; node ids in creation order, so a
    child's id exceeds its parents')."""
    n = len(graph.depth)
    left = np.full(n, -1, np.int32)
    right = np.full(n, -1, np.int32)
    feature = np.full(n, -1, np.int32)
    bins = np.zeros(n, np.int32)
    default_left = np.zeros(n, bool)
    is_cat = np.zeros(n, bool)
    gain = np.zeros(n)
    cat_bitset = np.zeros((n, graph.n_words), np.uint32)
    for g, (f, b, dl, cat, bitset, gn) in graph.split.items():
        left[g], right[g] = graph.children[g]
        feature[g], bins[g], default_left[g], is_cat[g], gain[g] = f, b, dl, cat, gn
        cat_bitset[g, :len(bitset)] = bitset[:graph.n_words]
    sums = np.array(graph.sums)
    return dict(left=left, right=right, feature=feature,
                threshold=raw_thresholds(feature, bins, is_cat, bin_edges),
                bin_threshold=np.where(left < 0, 0, bins).astype(np.int32),
                default_left=default_left, is_categorical=is_cat,
                cat_bitset=cat_bitset if is_cat.any() else np.zeros((n, 0), np.uint32),
                value=np.asarray(policy.leaf_values(sums)), gain=gain,
                cover=np.asarray(policy.cover(sums), np.float64),
                n_samples=sums[:, policy.count_stat].copy())

