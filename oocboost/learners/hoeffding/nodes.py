"""The growing tree of a Hoeffding learner: node arrays that only grow (children are
numbered after their parents, the right child ``left + 1``, as the engine's routes want)
and a pool of histogram slots, one per node that collects split statistics.

Per node::

    left, feature, bin_threshold, default_left, is_categorical, cat_bitset   the split
    depth                 root 0
    dist[node, stat]      statistics of every row that reached the node, plus the
                          estimate its parent's split gave it (river's initial stats)
    slot[node]            histogram slot, or -1: an active leaf's per-bin statistics,
                          and (split_revision) an internal node's
    can_grow              False once max_depth is reached or the null split won
    checked_at            dist weight at the last split attempt or re-evaluation
    mc_correct, nb_correct  weight the leaf predicted right by majority class and by
                          naive Bayes (leaf_prediction="nba")

A node that is not a leaf is never turned back into one except by
:meth:`StreamTree.collapse` (split revision), which keeps its id: ids of removed nodes
are not reused, so a node's arrays are valid until the model is exported, which
renumbers the reachable nodes.
"""
import numpy as np

from ...common import HIST_DTYPE, hist_column_starts, hist_width
from ...kernels.partition import pack_routes

_GROW = 64


class StreamTree:
    """Nodes and histogram slots of one Hoeffding tree.

    Parameters
    ----------
    n_value_bins : ndarray (n_features,) int32
    is_categorical : ndarray (n_features,) bool
    max_bin : int
    n_stats : int
    max_slots : int
        Histograms kept at most (the memory plan's).
    classification : bool
        Statistics are K class weights and a count (else w, w y, w y^2, count).
    """

    def __init__(self, n_value_bins, is_categorical, max_bin, n_stats, max_slots,
                 classification=True):
        self.classification = bool(classification)
        self.n_value_bins = np.asarray(n_value_bins, np.int32)
        self.is_categorical_feature = np.asarray(is_categorical, bool)
        self.max_bin = int(max_bin)
        self.missing_bin = self.max_bin - 1
        self.n_stats = int(n_stats)
        self.max_slots = int(max_slots)
        starts = hist_column_starts(self.n_value_bins, self.max_bin)
        self.n_columns = int(starts[-1])
        self.column_of = None if self.n_columns == len(self.n_value_bins) else starts
        #: first histogram column of every feature (``column_of`` or not)
        self.hist_columns = np.ascontiguousarray(starts, np.int64)
        self.bin_start = starts[:-1] * self.max_bin
        self.n_words = (max(self.max_bin, int(self.n_value_bins.max(initial=0))) + 31) // 32
        self.n_nodes = 0
        self._capacity = 0
        self._grow(_GROW)
        # All the slots at once: np.zeros maps pages lazily, so only the slots taken
        # (zeroed, then filled) count in RSS; growing the pool by copies would briefly
        # hold two of it.
        self.hist = np.zeros((self.max_slots, self.n_columns, self.max_bin,
                              hist_width(self.n_stats)), HIST_DTYPE)
        self.hist_sums = np.zeros((self.max_slots, self.n_stats))
        self.free_slots = list(range(self.max_slots - 1, -1, -1))
        self._routes = self._reachable = None
        self.add_node(-1, np.zeros(self.n_stats))

    # ------------------------------------------------------------------ storage
    def _grow(self, capacity):
        old = self._capacity

        def grown(name, fill, dtype, tail=()):
            a = np.full((capacity,) + tail, fill, dtype)
            if old:
                a[:old] = getattr(self, name)[:old]
            setattr(self, name, a)

        grown("left", -1, np.int32)
        grown("feature", -1, np.int32)
        grown("bin_threshold", 0, np.int32)
        grown("default_left", False, np.bool_)
        grown("is_categorical", False, np.bool_)
        grown("cat_bitset", 0, np.uint32, (self.n_words,))
        grown("depth", 0, np.int32)
        grown("slot", -1, np.int32)
        grown("can_grow", True, np.bool_)
        grown("dist", 0.0, np.float64, (self.n_stats,))
        grown("checked_at", 0.0, np.float64)
        grown("mc_correct", 0.0, np.float64)
        grown("nb_correct", 0.0, np.float64)
        grown("merit", 0.0, np.float64)
        self._capacity = capacity

    def add_node(self, parent, dist):
        """Append a leaf below ``parent`` (-1: the root) starting from ``dist``."""
        if self.n_nodes == self._capacity:
            self._grow(2 * self._capacity)
        n = self.n_nodes
        self.n_nodes += 1
        self.depth[n] = 0 if parent < 0 else self.depth[parent] + 1
        self.dist[n] = dist
        self.checked_at[n] = self.weight(dist)
        self._routes = self._reachable = None
        return n

    def weight(self, sums):
        """Weight in statistics ``sums`` (..., n_stats): the class weights' sum, or w."""
        sums = np.asarray(sums)
        return sums[..., :-1].sum(axis=-1) if self.classification else sums[..., 0]

    # ------------------------------------------------------------------ slots
    def take_slot(self, node):
        """Give ``node`` a zeroed histogram slot; False when the pool is full."""
        if not self.free_slots:
            return False
        s = self.free_slots.pop()
        self.hist[s] = 0.0
        self.hist_sums[s] = 0.0
        self.slot[node] = s
        return True

    def release_slot(self, node):
        s = int(self.slot[node])
        if s >= 0:
            self.free_slots.append(s)
            self.slot[node] = -1

    @property
    def n_active(self):
        return int(np.count_nonzero(self.slot[:self.n_nodes] >= 0))

    # ------------------------------------------------------------------ structure
    def is_leaf(self, node):
        return self.left[node] < 0

    def leaves(self):
        """Ids of the reachable leaves, ascending."""
        return np.flatnonzero(self.reachable() & (self.left[:self.n_nodes] < 0))

    def reachable(self):
        """Bool mask of the nodes under the root (split revision orphans subtrees)."""
        if self._reachable is None:
            self._reachable = self._walk_reachable()
        return self._reachable

    def _walk_reachable(self):
        n = self.n_nodes
        seen = np.zeros(n, bool)
        seen[0] = True
        for node in range(n):
            if seen[node] and self.left[node] >= 0:
                seen[self.left[node]] = seen[self.left[node] + 1] = True
        return seen

    def subtree(self, node):
        """Ids of ``node`` and every node below it."""
        out = [node]
        i = 0
        while i < len(out):
            lft = self.left[out[i]]
            if lft >= 0:
                out += [int(lft), int(lft) + 1]
            i += 1
        return np.asarray(out, np.int64)

    def split(self, node, split, left_dist, right_dist):
        """Turn leaf ``node`` into a split with two new leaves; returns their ids.

        ``split`` holds ``feature``, ``bin_threshold``, ``default_left``,
        ``is_categorical``, ``cat_bitset`` and ``merit``.
        """
        lft = self.add_node(node, left_dist)
        self.add_node(node, right_dist)
        self.left[node] = lft
        self.feature[node] = split["feature"]
        self.bin_threshold[node] = split["bin_threshold"]
        self.default_left[node] = split["default_left"]
        self.is_categorical[node] = split["is_categorical"]
        self.cat_bitset[node] = split["cat_bitset"]
        self.merit[node] = split["merit"]
        self._routes = self._reachable = None
        return lft, lft + 1

    def collapse(self, node):
        """Make ``node`` a leaf again (its subtree's slots freed, its own kept)."""
        for m in self.subtree(node)[1:]:
            self.release_slot(m)
        self.left[node] = -1
        self.feature[node] = -1
        self.is_categorical[node] = False
        self.cat_bitset[node] = 0
        self.merit[node] = 0.0
        self._routes = self._reachable = None

    def graft(self, node, other):
        """Replace the subtree at ``node`` by a copy of tree ``other`` (a Hoeffding
        adaptive tree's alternate): ``node`` takes ``other``'s root, the other nodes come
        after the existing ones, in ``other``'s order (children stay after parents, a
        right child after its left one), each with its statistics and histogram (a
        node whose histogram finds no free slot waits, as a leaf past the pool does).
        Returns ``new_id``, ``other``'s node -> id here (-1: not copied)."""
        self.collapse(node)
        self.release_slot(node)
        keep = other.reachable()
        new_id = np.full(other.n_nodes, -1, np.int64)
        new_id[0] = node
        fields = ("feature", "bin_threshold", "default_left", "is_categorical", "cat_bitset",
                  "can_grow", "dist", "checked_at", "mc_correct", "nb_correct", "merit")
        for m in range(other.n_nodes):
            if not keep[m] or other.left[m] < 0:
                continue
            here = int(new_id[m])
            lft = self.add_node(here, other.dist[other.left[m]])
            self.add_node(here, other.dist[other.left[m] + 1])
            self.left[here] = lft
            new_id[other.left[m]], new_id[other.left[m] + 1] = lft, lft + 1
        for m in np.flatnonzero(keep).tolist():
            here = int(new_id[m])
            for name in fields:
                getattr(self, name)[here] = getattr(other, name)[m]
            if other.slot[m] >= 0 and self.take_slot(here):
                self.hist[self.slot[here]] = other.hist[other.slot[m]]
                self.hist_sums[self.slot[here]] = other.hist_sums[other.slot[m]]
        self._routes = self._reachable = None
        return new_id

    def routes(self):
        """``(route, cat_bitset)`` of this tree for the partition kernels (one tree)."""
        if self._routes is None:
            n = self.n_nodes
            left = self.left[:n]
            right = np.where(left >= 0, left + 1, -1)
            route = pack_routes(left[None], right[None], self.feature[None, :n],
                                self.bin_threshold[None, :n], self.default_left[None, :n],
                                self.is_categorical[None, :n])
            self._routes = (np.ascontiguousarray(route),
                            np.ascontiguousarray(self.cat_bitset[None, :n]))
        return self._routes
