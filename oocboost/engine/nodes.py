"""What the grower grows: its parameters and telemetry, the per-tree node arrays laid
out for the partition kernel, the frontier of nodes waiting to be expanded, and the
feature sampling of a tree."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from ..common import NODE_DTYPE


@dataclass(frozen=True)
class GrowthParams:
    """Structure-level growth settings shared by every learner: a frozen, typed object
    the learner builds from its checked parameters (no string keys reach the engine).

    Parameters
    ----------
    max_depth : int or None
        Depth limit (root has depth 0); None for no limit.
    max_leaves : int or None
        Leaf limit per tree; None for no limit.
    grow_policy : {"depthwise", "lossguide"}
    leaves_per_pass : int
        Leaves expanded per data pass with ``lossguide``.
    colsample_bytree, colsample_bylevel, colsample_bynode : float in (0, 1]
        XGBoost's nested feature sampling: by node from the level's set, by level from the
        tree's set.
    features_per_node : int or None
        scikit-learn's ``max_features`` as a count; overrides ``colsample_bynode``.
    max_hist_slots : int or None
        Histograms held at once (each ``n_features * max_bin * n_stats * 8`` bytes), from
        the memory plan. Under pressure a frontier node drops its histogram (its children
        are then both built instead of one built and one subtracted), and expansions that
        still do not fit wait for the next pass: the tree is the same, the passes more.
    interaction_constraints : tuple of frozenset or None
        Sets of feature indices that may interact (``engine/constraints.py``); the
        features a node may split on are masked by its path's.
    feature_weights : ndarray (n_features,) float64 or None
        XGBoost's ``feature_weights``: ``colsample_*`` draws features with these
        probabilities (weighted sampling without replacement); zero never drawn.
    """

    max_depth: int | None = 6
    max_leaves: int | None = None
    grow_policy: Literal["depthwise", "lossguide"] = "depthwise"
    leaves_per_pass: int = 8
    colsample_bytree: float = 1.0
    colsample_bylevel: float = 1.0
    colsample_bynode: float = 1.0
    features_per_node: int | None = None
    max_hist_slots: int | None = None
    interaction_constraints: tuple[frozenset[int], ...] | None = None
    feature_weights: np.ndarray | None = None

    def __post_init__(self) -> None:
        # the learners check their own parameters; this catches a learner's mistake
        if self.grow_policy not in ("depthwise", "lossguide"):
            raise ValueError(f"grow_policy {self.grow_policy!r}")
        for name in ("max_depth", "max_leaves", "features_per_node", "max_hist_slots"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, (int, np.integer))
                                      or value < 1):
                raise ValueError(f"GrowthParams.{name} must be an int >= 1 or None, got "
                                 f"{value!r} (no limit is None, not 0)")
        for name in ("colsample_bytree", "colsample_bylevel", "colsample_bynode"):
            if not 0.0 < getattr(self, name) <= 1.0:
                raise ValueError(f"GrowthParams.{name} must be in (0, 1]")


@dataclass
class GrowerTelemetry:
    """Where a grower's time went (seconds) and how much it read."""

    histogram_s: float = 0.0
    partition_s: float = 0.0
    split_s: float = 0.0
    passes: int = 0
    record_nodes: int = 0
    rows_streamed: int = 0
    code_bytes_streamed: int = 0

    def add(self, other: GrowerTelemetry) -> GrowerTelemetry:
        for name in self.__dataclass_fields__:
            setattr(self, name, getattr(self, name) + getattr(other, name))
        return self

    def as_dict(self) -> dict[str, float]:
        return {name: getattr(self, name) for name in self.__dataclass_fields__}


def raw_thresholds(feature: np.ndarray, bin_threshold: np.ndarray,
                   is_categorical: np.ndarray, bin_edges: list) -> np.ndarray:
    """Raw ``x <= threshold`` of each numeric split from its bin threshold (0 at leaves
    and categorical splits): the upper edge of the bin; the last value bin holds
    everything up to +inf, so all values go left.

    >>> raw_thresholds(np.array([0, -1]), np.array([1, 0]), np.array([False, False]),
    ...                [np.array([0.5, 1.5])]).tolist()
    [1.5, 0.0]
    """
    threshold = np.zeros(len(feature), np.float64)
    for node in np.flatnonzero((np.asarray(feature) >= 0) & ~np.asarray(is_categorical)):
        edges = bin_edges[feature[node]]
        b = bin_threshold[node]
        threshold[node] = edges[b] if b < len(edges) else np.finfo(np.float64).max
    return threshold


def sampled_columns(params: GrowthParams, n_features: int,
                    tree_features: list | None = None) -> int | None:
    """Histogram columns per node when nodes hold only their sampled features, else None.

    With ``features_per_node = k`` smaller than every tree's feature set (a forest's
    ``max_features``, and no colsample_* fractions), a node's histogram is built for its
    ``k`` features alone, drawn when the node is created, with no subtraction (see
    ``kernels.histogram.build_histograms_columns``).
    """
    k = params.features_per_node
    if k is None or min(params.colsample_bytree, params.colsample_bylevel,
                        params.colsample_bynode) < 1.0:
        return None
    sizes = [n_features] if tree_features is None else [len(f) for f in tree_features]
    return int(k) if int(k) < min(sizes) else None


def node_index_dtype(max_depth: int | None, max_leaves: int | None) -> type:
    """Smallest dtype for a row's node index in trees grown with these limits.

    A per-row node index is part of the state every pass reads and writes; for depth-6
    trees (127 nodes) one byte holds it instead of four, which cuts the spilled state's
    I/O per pass from 20 to 14 bytes a row. Unbounded trees keep int32.

    >>> node_index_dtype(6, None), node_index_dtype(None, 1000), node_index_dtype(None, None)
    (<class 'numpy.uint8'>, <class 'numpy.uint16'>, <class 'numpy.int32'>)
    """
    leaves = []
    if max_depth is not None and max_depth <= 30:     # both policies stop at max_depth
        leaves.append(2 ** int(max_depth))
    if max_leaves:
        leaves.append(int(max_leaves))
    if not leaves:
        return NODE_DTYPE
    n_nodes = 2 * min(leaves) - 1
    if n_nodes <= 256:
        return np.uint8
    if n_nodes <= 65536:
        return np.uint16
    return NODE_DTYPE


def sample_count(n_available: int, fraction: float) -> int:
    return max(1, int(n_available * fraction))


class NodeArrays:
    """Growable per-tree node arrays, laid out for the partition kernel (tree, node)."""

    def __init__(self, n_trees: int, capacity: int, n_words: int, n_outputs: int,
                 n_stats: int, route_words: int = 0) -> None:
        self.n_trees = n_trees
        self.n_words = n_words
        # bundled features: the partition reads its own bitsets, over stored codes
        self.route_words = route_words
        self.n_outputs = n_outputs
        self.n_stats = n_stats
        self.capacity = 0
        self.n_nodes = np.ones(n_trees, dtype=np.int64)
        self._alloc(capacity)

    def _alloc(self, capacity):
        old = self.__dict__.copy() if self.capacity else None
        t = self.n_trees
        self.left = np.full((t, capacity), -1, NODE_DTYPE)
        self.right = np.full((t, capacity), -1, NODE_DTYPE)
        self.feature = np.full((t, capacity), -1, NODE_DTYPE)
        self.bin_threshold = np.zeros((t, capacity), np.int32)
        self.default_left = np.zeros((t, capacity), np.uint8)
        self.is_categorical = np.zeros((t, capacity), np.uint8)
        self.cat_bitset = np.zeros((t, capacity, max(self.n_words, 1)), np.uint32)
        # the partition's copy of the splits (kernels/partition.py): left, feature,
        # bin_threshold, flags
        self.route = np.zeros((t, capacity, 4), np.int32)
        self.route[:, :, 0] = -1
        self.route_bitset = (np.zeros((t, capacity, self.route_words), np.uint32)
                             if self.route_words else self.cat_bitset)
        self.slot_of_node = np.full((t, capacity), -1, np.int32)
        # every histogram still held, built this pass or kept for subtraction; -1 = none
        self.held_slot = np.full((t, capacity), -1, np.int64)
        self.value = np.zeros((t, capacity, self.n_outputs), np.float64)
        self.sums = np.zeros((t, capacity, self.n_stats), np.float64)
        self.gain = np.zeros((t, capacity), np.float64)
        self.depth = np.zeros((t, capacity), np.int32)
        if old is not None:
            n = self.capacity
            for name in ("left", "right", "feature", "bin_threshold", "default_left",
                         "is_categorical", "cat_bitset", "route", "slot_of_node", "held_slot",
                         *(("route_bitset",) if self.route_words else ()),
                         "value", "sums",
                         "gain", "depth"):
                getattr(self, name)[:, :n] = old[name]
        self.capacity = capacity

    def reserve(self, capacity: int) -> None:
        if capacity > self.capacity:
            self._alloc(max(capacity, 2 * self.capacity))


def take_frontier(frontier: dict[str, np.ndarray], index: Any) -> dict[str, np.ndarray]:
    """The frontier entries at ``index``. The frontier (nodes with an accepted split,
    waiting to be expanded) is a dict of arrays, one entry per node: a Python object per
    node and per-node bookkeeping cost about 20 us a node, 7 of 50 s for a 100-tree,
    depth-12 forest."""
    return {k: v[index] for k, v in frontier.items()}


def concat_frontier(first: dict[str, np.ndarray], second: dict[str, np.ndarray]
                    ) -> dict[str, np.ndarray]:
    return {k: np.concatenate([first[k], second[k]]) for k in first}


def rank_within(trees: np.ndarray, n_trees: int) -> np.ndarray:
    """For each entry, how many earlier entries belong to the same tree."""
    order = np.argsort(trees, kind="stable")
    counts = np.bincount(trees, minlength=n_trees)
    group_start = np.concatenate([[0], np.cumsum(counts)[:-1]])
    rank = np.empty(len(trees), np.int64)
    rank[order] = np.arange(len(trees)) - group_start[trees[order]]
    return rank


