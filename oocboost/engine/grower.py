"""The grower: turns histograms into trees, reading the data once per pass.

One grower grows ``n_trees`` trees at once (the K trees of a multiclass boosting round, or
several forest trees) over the same stream of blocks. The caller (a learner) drives the
passes, because it owns the per-row state and decides what each row contributes::

    grower.start()                       # root of every tree is the expandable frontier
    while grower.needs_pass():
        for block, stats, node_of_row in learner_pass():   # learner makes stats on pass 0
            grower.accumulate(block.codes, stats, node_of_row)
        grower.finish_pass()             # subtraction, split search, expansion
    trees = grower.trees()

Each pass first moves every row one level down for the splits decided after the previous
pass (``partition_select_rows``), then adds it into the histogram of its new node when that node
is being built this pass. Of two siblings only the one with fewer rows is built; the other
is ``parent - built``::

    pass k:   rows -> children of the nodes expanded after pass k-1
              hist[small child] += rows;  hist[large child] = hist[parent] - hist[small]

The splits decided after the *last* pass are not applied to ``node_of_row`` by the grower:
``apply_pending`` does it, so a learner can fuse it with its next pass (margin update plus
next root histogram), which saves one read of the data per tree.

Growth policies
---------------
``depthwise``: every frontier node with a valid split is expanded each pass (one pass per
level). ``lossguide``: the ``leaves_per_pass`` frontier nodes with the largest gain are
expanded each pass, up to ``max_leaves`` leaves (LightGBM's best-first order, batched so
that a pass grows several leaves).
"""
import time
from dataclasses import dataclass

import numba
import numpy as np

from ..common import HIST_DTYPE, NODE_DTYPE, aligned_zeros, binned_dtype, hist_width
from ..kernels.histogram import (build_histograms_all, build_histograms_columns,
                                 build_histograms_selected, record_words,
                                 records_to_histograms, node_sums_from_histograms,
                                 subtract_histograms, zero_slots)
from ..kernels.partition import ROUTE_FLAGS, partition_select_rows, route_flags
from ..kernels.sampling import node_feature_subsets


@dataclass
class GrowthParams:
    """Structure-level growth settings shared by every learner.

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
    """

    max_depth: object = 6
    max_leaves: object = None
    grow_policy: str = "depthwise"
    leaves_per_pass: int = 8
    colsample_bytree: float = 1.0
    colsample_bylevel: float = 1.0
    colsample_bynode: float = 1.0
    features_per_node: object = None
    max_hist_slots: object = None


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

    def add(self, other):
        for name in self.__dataclass_fields__:
            setattr(self, name, getattr(self, name) + getattr(other, name))
        return self

    def as_dict(self):
        return {name: getattr(self, name) for name in self.__dataclass_fields__}


#: Rows per chunk of the partition sweep at least (a chunk is one task of the parallel loop).
MIN_CHUNK_ROWS = 16384

#: Let small per-node histograms be built from row records (``_use_records``). Measured on
#: 16 depth-12 forest trees, 1M x 28, 2 threads: below a few thousand rows a node's
#: histogram updates missed the cache at 20-35 ns each (3 ns at the root); models are
#: bit-identical either way (``tests/test_forest.py``, ``tests/test_histogram.py``).
RECORD_SMALL_NODES = True


def _chunk_starts(n_rows):
    """First rows of the chunks a block is partitioned in: about four per thread, so an
    uneven chunk (rows in many split nodes) does not leave the other threads idle."""
    n_chunks = max(1, min(4 * numba.get_num_threads(), n_rows // MIN_CHUNK_ROWS))
    return (np.arange(n_chunks, dtype=np.int64) * n_rows) // n_chunks


def sampled_columns(params, n_features, tree_features=None):
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


def node_index_dtype(max_depth, max_leaves):
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


def _sample_count(n_available, fraction):
    return max(1, int(n_available * fraction))


class _NodeArrays:
    """Growable per-tree node arrays, laid out for the partition kernel (tree, node)."""

    def __init__(self, n_trees, capacity, n_words, n_outputs, n_stats):
        self.n_trees = n_trees
        self.n_words = n_words
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
                         "value", "sums",
                         "gain", "depth"):
                getattr(self, name)[:, :n] = old[name]
        self.capacity = capacity

    def reserve(self, capacity):
        if capacity > self.capacity:
            self._alloc(max(capacity, 2 * self.capacity))


def _take(frontier, index):
    """The frontier entries at ``index``. The frontier (nodes with an accepted split,
    waiting to be expanded) is a dict of arrays, one entry per node: a Python object per
    node and per-node bookkeeping cost about 20 us a node, 7 of 50 s for a 100-tree,
    depth-12 forest."""
    return {k: v[index] for k, v in frontier.items()}


def _concat(first, second):
    return {k: np.concatenate([first[k], second[k]]) for k in first}


def _rank_within(trees, n_trees):
    """For each entry, how many earlier entries belong to the same tree."""
    order = np.argsort(trees, kind="stable")
    counts = np.bincount(trees, minlength=n_trees)
    group_start = np.concatenate([[0], np.cumsum(counts)[:-1]])
    rank = np.empty(len(trees), np.int64)
    rank[order] = np.arange(len(trees)) - group_start[trees[order]]
    return rank


class TreeGrower:
    """Grow ``n_trees`` trees from streamed histograms with one split policy.

    Parameters
    ----------
    n_trees : int
        Trees grown in the same passes.
    n_features, max_bin : int
        Shape of the binned data; the missing code is ``max_bin - 1``.
    n_value_bins : ndarray (n_features,) int32
    is_categorical : ndarray (n_features,) bool
    bin_edges : list of ndarray float64
        Raw upper bounds per numeric feature (to store raw thresholds).
    policy : object
        Split policy: ``n_stats``, ``n_outputs``, ``count_stat`` (the stat counting rows,
        or None), ``size_stat`` (the stat deciding which sibling is smaller),
        ``cover(sums)``, ``find_splits(hist, node_sums, slots, feature_mask, trees,
        node_ids) -> dict``, ``accept_splits(result,
        node_sums, trees, node_ids) -> bool array`` (the learner's rule: gamma, min_impurity_decrease, purity) and
        ``leaf_values(node_sums) -> (n, n_outputs)``.
    params : GrowthParams
    rng : numpy.random.Generator
        Feature sampling shared by the trees of the pass (boosting).
    feature_rngs : list of numpy.random.Generator or None
        One generator per tree for its feature sampling, so that a tree depends only on
        its own seed, not on which trees share its pass (forests).
    tree_features : list of int arrays or None
        Features each tree may use (bagging's per-estimator feature subsets); replaces
        the ``colsample_bytree`` draw.
    hist_pool : ndarray or None
        A previous grower's ``hist`` to reuse when its shape fits (boosting grows one
        grower per round; allocating the pool every round cost 3% of training).
    """

    def __init__(self, n_trees, n_features, max_bin, n_value_bins, is_categorical, bin_edges,
                 policy, params, rng, feature_rngs=None, tree_features=None, hist_pool=None):
        self.n_trees = n_trees
        self.n_features = n_features
        self.max_bin = max_bin
        self.missing_bin = max_bin - 1
        self.n_value_bins = np.asarray(n_value_bins, dtype=np.int32)
        self.is_categorical_feature = np.asarray(is_categorical, dtype=bool)
        self.bin_edges = bin_edges
        self.policy = policy
        self.params = params
        self.rng = rng
        self.feature_rngs = feature_rngs
        self.tree_feature_sets = tree_features
        self._hist_pool = hist_pool
        # int32 sums when the policy's statistics are integers (common.INT_HIST_DTYPE)
        self._hist_dtype = np.dtype(getattr(policy, "hist_dtype", HIST_DTYPE))
        # A policy without a count statistic (boosting) lists every row: rows it leaves out
        # (a subsample) have zero statistics. Skipping them would cost the partition sweep
        # a strided read of the statistics (15% of the sweep).
        self._select_count_stat = -1 if policy.count_stat is None else policy.count_stat
        self.n_words = (max_bin + 31) // 32
        self.telemetry = GrowerTelemetry()
        self._no_slots = None      # apply_pending: every slot -1
        self._every_row = np.zeros((n_trees, 0), np.uint8)   # row_counts keeping every row
        self._row_list = None
        self._codes_dtype = binned_dtype(max_bin)   # the codes of the blocks accumulated

    # ------------------------------------------------------------------ set-up
    def _initial_capacity(self):
        p = self.params
        if p.grow_policy == "depthwise" and p.max_depth is not None and p.max_depth <= 12:
            cap = 2 ** (p.max_depth + 1) - 1
        elif p.max_leaves:
            cap = 2 * p.max_leaves - 1
        else:
            cap = 255
        if p.max_leaves:
            cap = min(cap, 2 * p.max_leaves - 1)
        return max(cap, 1)

    def start(self):
        """Reset for a new set of trees; every root is to be built in the next pass."""
        pol = self.policy
        self.nodes = _NodeArrays(self.n_trees, self._initial_capacity(), self.n_words,
                                 pol.n_outputs, pol.n_stats)
        self._n_slots = 0
        self._free_slots = []
        self._columns = sampled_columns(self.params, self.n_features, self.tree_feature_sets)
        n_columns = self._columns or self.n_features
        shape = (n_columns, self.max_bin, hist_width(pol.n_stats))
        pool = self._hist_pool
        fits = (pool is not None and pool.shape[1:] == shape
                and pool.dtype == self._hist_dtype
                and (self.params.max_hist_slots is None
                     or pool.shape[0] <= self.params.max_hist_slots))
        if fits:
            self.hist = pool          # slots are zeroed when taken
        else:
            self.hist = aligned_zeros((0,) + shape, self._hist_dtype)
        self._slot_columns = np.zeros((len(self.hist), n_columns), np.int32)
        self._pending_columns = []        # (slot, tree, node) whose features to draw
        self._slots_to_zero = []
        # Slots known to be all zero: per-node histograms are zeroed by the split search
        # right after it scans them (pool slots inherited from an earlier grower are not
        # known to be zero).
        self._clean = np.zeros(len(self.hist), bool)
        # Record slots (see _use_records): expected rows per slot, 0 for a histogram slot,
        # rows appended so far, and the record slots of the pass under way.
        self._record_capacity = np.zeros(len(self.hist), np.int64)
        self._record_fill = np.zeros(len(self.hist), np.int64)
        self._pass_records = []           # (slots, was_clean) arrays
        self._records = self._use_records()
        if self.tree_feature_sets is not None:
            self._tree_features = [np.asarray(f, dtype=np.int64)
                                   for f in self.tree_feature_sets]
        else:
            self._tree_features = [self._draw(np.arange(self.n_features),
                                              self.params.colsample_bytree, t)
                                   for t in range(self.n_trees)]
        self._level_features = {}
        # nodes.slot_of_node holds only the slots rows are added into during the next pass;
        # nodes.held_slot every histogram still held (for subtraction), _n_held of them.
        self._n_held = 0
        self._pending_subtractions = []   # (k, 3) arrays: parent, built, sibling slot
        self._to_evaluate = []            # (trees, nodes) arrays completing this pass
        self._frontier = None             # dict of arrays (see _take), or None when empty
        self._n_leaves = np.ones(self.n_trees, dtype=np.int64)
        self._pass_has_work = True
        self._order = 0
        if self._columns:
            self._tree_keys = [int(self._rng(t).integers(0, 2 ** 63))
                               for t in range(self.n_trees)]
        trees = np.arange(self.n_trees, dtype=np.int64)
        roots = np.zeros(self.n_trees, dtype=np.int64)
        slots = self._take_slots(self.n_trees, zero=True)
        self._hold(trees, roots, slots, rows_added=True)
        self._to_evaluate.append((trees, roots))
        self._draw_pending_columns()
        self._zero_new_slots()

    def _rng(self, tree):
        return self.rng if self.feature_rngs is None else self.feature_rngs[tree]

    def _draw(self, features, fraction, tree):
        if fraction >= 1.0:
            return features
        n = _sample_count(len(features), fraction)
        return np.sort(self._rng(tree).choice(features, size=n, replace=False))

    def _take_slots(self, count, zero, return_clean=False):
        """``count`` free histogram slots (int64 array); zeroed in :meth:`_zero_new_slots`
        (unless known to be zero already) when ``zero`` is True; siblings filled by
        subtraction pass False, as the subtraction overwrites all of the slot, and so do
        record slots, which :func:`records_to_histograms` fills. ``return_clean``: also
        return which of them were known to be zero."""
        reused = min(count, len(self._free_slots))
        slots = np.empty(count, np.int64)
        if reused:
            slots[:reused] = self._free_slots[len(self._free_slots) - reused:]
            del self._free_slots[len(self._free_slots) - reused:]
        if count > reused:
            first = self._n_slots
            self._n_slots += count - reused
            slots[reused:] = np.arange(first, self._n_slots)
            if self._n_slots > self.hist.shape[0]:
                self._grow_pool(self._n_slots)
        was_clean = self._clean[slots]
        if zero:
            self._slots_to_zero.append(slots[~was_clean])
        # taken slots receive rows or a subtraction next: none stays known to be zero
        self._clean[slots] = False
        return (slots, was_clean) if return_clean else slots

    def _grow_pool(self, needed):
        """Grow the histogram pool to at least ``needed`` slots, doubling under the cap."""
        size = self.hist.shape[0]
        cap = self.params.max_hist_slots
        while size < needed:
            grown = max(2 * size, 4)
            if cap is not None:
                # Past 64 slots, straight to the planned pool: doubling a pool of hundreds
                # of MiB holds the old and the new copy at once (200 MiB over the plan,
                # measured). Slots never used are never touched, so the unused part of
                # the pool costs no RSS.
                grown = cap if grown > 64 else min(grown, cap)
            size = grown if grown > size else needed
        pool = aligned_zeros((size,) + self.hist.shape[1:], self._hist_dtype)
        pool[: self.hist.shape[0]] = self.hist
        clean = np.ones(size, bool)  # the new slots are fresh zeros
        clean[: self.hist.shape[0]] = self._clean
        self.hist = pool
        self._clean = clean
        for name in ("_record_capacity", "_record_fill"):
            grown_array = np.zeros(size, np.int64)
            old = getattr(self, name)
            grown_array[: len(old)] = old
            setattr(self, name, grown_array)
        columns = np.zeros((size, self._slot_columns.shape[1]), np.int32)
        columns[: len(self._slot_columns)] = self._slot_columns
        self._slot_columns = columns

    def _hold(self, trees, nodes, slots, rows_added):
        """Record that nodes hold histogram slots; ``rows_added``: rows are added into
        them in the next pass (else they are filled by subtraction)."""
        nd = self.nodes
        nd.held_slot[trees, nodes] = slots
        self._n_held += len(slots)
        if rows_added:
            nd.slot_of_node[trees, nodes] = slots
            self._pending_columns.append(np.stack([slots, trees, nodes], axis=1))

    def _use_records(self):
        """Whether small nodes may take record slots (``kernels.histogram``,
        ``build_histograms_columns``): per-node sampled-feature histograms, statistics
        whose last column counts rows (the CART statistics), and at least as many trees
        in the pass as threads (records are appended one tree per thread)."""
        return (RECORD_SMALL_NODES and bool(self._columns)
                and getattr(self.policy, "count_marks_rows", False)
                and self.n_trees >= numba.get_num_threads())

    def _record_nodes(self, counts):
        """Per new node with ``counts`` rows of non-zero count (from its parent's split):
        True when its rows are to be recorded, i.e. their records fit in its slot."""
        if not self._records:
            return np.zeros(len(counts), bool)
        n_stats, (n_columns, max_bin, width) = self.policy.n_stats, self.hist.shape[1:]
        words = record_words(n_stats, n_columns, np.dtype(self._codes_dtype).itemsize,
                             self.hist.itemsize)
        return (counts > 0) & (counts * words <= n_columns * max_bin * width)

    def _sum_records(self):
        """Sum this pass's record slots into their histograms (before they are read)."""
        slots = np.concatenate([s for s, _ in self._pass_records])
        was_clean = np.concatenate([c for _, c in self._pass_records])
        self._pass_records = []
        filled = self._record_fill[slots]
        if not np.array_equal(filled, self._record_capacity[slots]):
            raise RuntimeError("record slots received other row counts than their nodes "
                               "hold: the partition and the split disagree")
        t0 = time.perf_counter()
        words = self.hist.reshape(self.hist.shape[0], -1)
        records_to_histograms(self.hist, words, words.view(self._codes_dtype), slots,
                              filled, was_clean, self.policy.n_stats)
        self.telemetry.histogram_s += time.perf_counter() - t0
        self.telemetry.record_nodes += len(slots)
        self._record_capacity[slots] = 0
        self._record_fill[slots] = 0

    def _zero_new_slots(self):
        """Zero the slots taken since the last call that were not known to be zero, in one
        parallel kernel call (one ``hist[slot] = 0`` per node cost 0.65 of 9.5 s for 16
        forest trees)."""
        if self._slots_to_zero:
            dirty = np.concatenate(self._slots_to_zero)
            if len(dirty):
                zero_slots(self.hist, dirty)
            self._slots_to_zero = []

    def _draw_pending_columns(self):
        """Draw the features of every slot created since the last call (sampled mode)."""
        if not self._columns:
            self._pending_columns = []
            return
        if not self._pending_columns:
            return
        pending = np.concatenate(self._pending_columns)
        self._pending_columns = []
        for t in np.unique(pending[:, 1]):
            of_tree = pending[pending[:, 1] == t]
            out = np.empty((len(of_tree), self._columns), np.int32)
            node_feature_subsets(self._tree_keys[t], np.ascontiguousarray(of_tree[:, 2]),
                                 np.asarray(self._tree_features[t], np.int64),
                                 self._columns, out)
            self._slot_columns[of_tree[:, 0]] = out

    def _release_slots(self, trees, nodes, at_most=None):
        """Free the histograms held by these nodes (the first ``at_most`` that hold one)."""
        held = self.nodes.held_slot[trees, nodes]
        which = np.flatnonzero(held >= 0)
        if at_most is not None:
            which = which[:max(0, at_most)]
        if len(which):
            self._free_slots.extend(held[which].tolist())
            self.nodes.held_slot[trees[which], nodes[which]] = -1
            self._n_held -= len(which)

    @property
    def n_hist_slots(self):
        """Histogram slots allocated so far (each ``n_features * max_bin * n_stats * 8`` bytes)."""
        return self.hist.shape[0]

    # ------------------------------------------------------------------ passes
    def needs_pass(self):
        """True while some histogram must still be built."""
        return self._pass_has_work

    def accumulate(self, codes, stats, node_of_row, row_counts=None):
        """Partition one block's rows and add them into the histograms built this pass.

        Parameters
        ----------
        codes : ndarray (n_features, n_rows) uint8/uint16
        stats : ndarray (n_trees, n_rows, n_stats) float32
        node_of_row : ndarray (n_trees, n_rows) int32, updated in place
        row_counts : ndarray (n_trees, n_rows) or None
            Rows that are 0 here are left out of the histograms; only rows whose
            statistics are all 0 may be (a forest's bootstrap draws). Default: the count
            statistic; every row for a policy without one (boosting).
        """
        self._codes_dtype = codes.dtype
        if row_counts is None:
            if self._select_count_stat >= 0:
                row_counts = stats[:, :, self._select_count_stat]
            else:
                row_counts = self._every_row
        if self._root_pass_all_rows(row_counts):
            # every row is at its tree's root (the only node) and counts: nothing to move
            # or list
            t1 = time.perf_counter()
            build_histograms_all(codes, stats, self.nodes.slot_of_node[:, 0], self.hist)
            self._account_histogram(t1, codes)
            return
        rows, slots, chunk_start, chunk_count = self._partition(
            codes, node_of_row, self.nodes.slot_of_node, row_counts)
        t1 = time.perf_counter()
        if self._columns:
            records = (self._record_capacity, self._record_fill) if self._pass_records \
                else None
            build_histograms_columns(codes, stats, rows, slots, chunk_start, chunk_count,
                                     self._slot_columns, self.hist, records)
        else:
            build_histograms_selected(codes, stats, rows, slots, chunk_start, chunk_count,
                                      self.hist)
        self._account_histogram(t1, codes)

    def _account_histogram(self, t_start, codes):
        tel = self.telemetry
        tel.histogram_s += time.perf_counter() - t_start
        tel.rows_streamed += codes.shape[1]
        tel.code_bytes_streamed += codes.nbytes

    def _root_pass_all_rows(self, row_counts):
        """True when this pass builds full histograms of the roots alone and keeps every
        row (``row_counts`` has no columns): then each tree's rows all go into its root's
        slot, in order (``build_histograms_all``)."""
        nd = self.nodes
        return (row_counts.shape[1] == 0 and not self._columns
                and self.hist.shape[3] in (2, 4) and self.policy.n_stats <= self.hist.shape[3]
                and bool((nd.n_nodes == 1).all()) and bool((nd.slot_of_node[:, 0] >= 0).all()))

    def apply_pending(self, codes, node_of_row):
        """Move rows down for splits decided after the last pass; no histograms.

        After this, ``node_of_row`` holds each row's leaf in the finished trees.
        """
        if self._no_slots is None:
            self._no_slots = np.full_like(self.nodes.slot_of_node, -1)
        self._partition(codes, node_of_row, self._no_slots, self._every_row)

    def _partition(self, codes, node_of_row, slot_of_node, row_counts):
        """Move a block's rows to their new nodes and list, per chunk, those whose node has
        a slot in ``slot_of_node``; returns ``(rows, slots, chunk_start, chunk_count)``."""
        n_rows = codes.shape[1]
        rows, slots = self._scratch_rows(n_rows)
        chunk_start = _chunk_starts(n_rows)
        chunk_count = np.empty((self.n_trees, len(chunk_start)), np.int64)
        nd = self.nodes
        t0 = time.perf_counter()
        partition_select_rows(codes, node_of_row, nd.route, nd.cat_bitset, self.missing_bin,
                              slot_of_node, row_counts, chunk_start, rows, slots,
                              chunk_count)
        self.telemetry.partition_s += time.perf_counter() - t0
        return rows, slots, chunk_start, chunk_count

    def _scratch_rows(self, n_rows):
        if self._row_list is None or self._row_list[0].shape[1] < n_rows:
            self._row_list = (np.empty((self.n_trees, n_rows), np.int32),
                              np.empty((self.n_trees, n_rows), np.int32))
        return self._row_list[0][:, :n_rows], self._row_list[1][:, :n_rows]

    def finish_pass(self):
        """Complete this pass's histograms, search splits, and choose what to expand next."""
        if self._pass_records:
            self._sum_records()        # histogram time, not split time
        t0 = time.perf_counter()
        self.telemetry.passes += 1
        nd = self.nodes
        if self._pending_subtractions:
            trip = np.concatenate(self._pending_subtractions)
            subtract_histograms(self.hist, trip[:, 0], trip[:, 1], trip[:, 2])
            self._free_slots.extend(trip[:, 0].tolist())
            self._pending_subtractions = []
        nd.slot_of_node.fill(-1)
        evaluate = self._to_evaluate
        self._to_evaluate = []
        if evaluate:
            trees = np.concatenate([t for t, _ in evaluate])
            node_ids = np.concatenate([n for _, n in evaluate])
            slots = nd.held_slot[trees, node_ids].astype(np.int32)
            sums = np.empty((len(trees), self.policy.n_stats), np.float64)
            node_sums_from_histograms(self.hist, slots, sums)
            nd.sums[trees, node_ids] = sums
            nd.value[trees, node_ids] = self.policy.leaf_values(sums)
            self._evaluate(trees, node_ids, slots, sums)
        self._expand()
        self.telemetry.split_s += time.perf_counter() - t0

    def _feature_mask(self, trees, node_ids):
        p = self.params
        trees = np.asarray(trees)
        mask = np.zeros((len(trees), self.n_features), dtype=np.bool_)
        k = p.features_per_node
        for t in np.unique(trees):
            rows = np.flatnonzero(trees == t)
            allowed = np.asarray(self._tree_features[t])
            if p.colsample_bylevel < 1.0:
                for r in rows:
                    key = (int(t), int(self.nodes.depth[t, node_ids[r]]))
                    if key not in self._level_features:
                        self._level_features[key] = self._draw(allowed, p.colsample_bylevel,
                                                               t)
                    self._allow(mask, r, self._level_features[key], k, t)
                continue
            if k is not None:
                if k >= len(allowed):
                    mask[rows[:, None], allowed[None, :]] = True
                else:
                    # k features per node, drawn for all of the tree's nodes at once:
                    # the k smallest of uniform keys are a uniform k-subset.
                    keys = self._rng(t).random((len(rows), len(allowed)))
                    pick = np.argpartition(keys, k - 1, axis=1)[:, :k]
                    mask[rows[:, None], allowed[pick]] = True
                continue
            for r in rows:
                self._allow(mask, r, allowed, None, t)
        return mask

    def _allow(self, mask, row, allowed, k, tree):
        if k is not None and k < len(allowed):
            allowed = self._rng(tree).choice(allowed, size=k, replace=False)
        elif k is None and self.params.colsample_bynode < 1.0:
            allowed = self._draw(allowed, self.params.colsample_bynode, tree)
        mask[row, allowed] = True

    def _evaluate(self, trees, node_ids, slots, sums):
        p = self.params
        nd = self.nodes
        depth = nd.depth[trees, node_ids]
        can_split = np.ones(len(trees), dtype=bool)
        if p.max_depth is not None:
            can_split &= depth < p.max_depth
        idx = np.flatnonzero(can_split)
        res = None
        if len(idx) and self._columns:
            # the node's histogram holds exactly its sampled features
            # Nothing reads a per-node histogram after its split search (it is never
            # subtracted), so the search zeroes it while it is in cache.
            res = self.policy.find_splits(
                self.hist, sums[idx], slots[idx], np.ones((len(idx), self._columns), bool),
                trees=trees[idx], node_ids=node_ids[idx],
                column_feature=self._slot_columns[slots[idx]], zero_after=True)
            self._clean[slots[idx]] = True
        elif len(idx):
            mask = self._feature_mask(trees[idx], node_ids[idx])
            res = self.policy.find_splits(self.hist, sums[idx], slots[idx], mask,
                                          trees=trees[idx], node_ids=node_ids[idx])
        taken = np.zeros(len(trees), dtype=bool)
        if len(idx):
            accepted = np.flatnonzero(np.asarray(self.policy.accept_splits(
                res, sums[idx], trees=trees[idx], node_ids=node_ids[idx]), dtype=bool))
            i = idx[accepted]
            taken[i] = True
            importance = res.get("importance_gain", res["gain"])
            batch = dict(
                tree=trees[i].astype(np.int64), node=node_ids[i].astype(np.int64),
                gain=np.asarray(res["gain"], np.float64)[accepted],
                feature=np.asarray(res["feature"], np.int64)[accepted],
                bin=np.asarray(res["bin"], np.int64)[accepted],
                default_left=np.asarray(res["default_left"], bool)[accepted],
                is_categorical=np.asarray(res["is_categorical"], bool)[accepted],
                bitset=np.asarray(res["cat_bitset"], np.uint32)[accepted],
                left_sums=np.asarray(res["left_sums"], np.float64)[accepted],
                right_sums=np.asarray(res["right_sums"], np.float64)[accepted],
                importance_gain=np.asarray(importance, np.float64)[accepted],
                order=self._order + 1 + np.arange(len(i), dtype=np.int64))
            self._order += len(i)
            self._frontier = batch if self._frontier is None else _concat(self._frontier, batch)
        # Sampled-feature histograms serve no subtraction: every one is freed once read.
        done = np.arange(len(trees)) if self._columns else np.flatnonzero(~taken)
        self._release_slots(trees[done], node_ids[done])

    def _expand(self):
        """Choose which frontier nodes split now (policy, leaf limit, histogram pool) and
        split them; the rest wait or become leaves."""
        p = self.params
        fr = self._frontier
        self._frontier = None
        if fr is not None and len(fr["tree"]):
            if p.grow_policy == "lossguide":
                fr = _take(fr, np.lexsort((fr["order"], -fr["gain"])))
            else:
                fr = _take(fr, np.argsort(fr["order"], kind="stable"))
            t = fr["tree"]
            # the first `limit` candidates of each tree, in this order, are expanded
            limit = np.bincount(t, minlength=self.n_trees)
            if p.grow_policy == "lossguide":
                limit = np.minimum(limit, p.leaves_per_pass)
            if p.max_leaves is not None:
                limit = np.minimum(limit, np.maximum(p.max_leaves - self._n_leaves, 0))
            chosen = _rank_within(t, self.n_trees) < limit[t]
            self._n_leaves += limit
            room = (np.ones(len(t), bool) if p.max_leaves is None
                    else self._n_leaves[t] < p.max_leaves)
            wait = ~chosen & room & (p.grow_policy == "lossguide")
            drop = ~chosen & ~wait
            self._release_slots(t[drop], fr["node"][drop])
            if wait.any():
                self._frontier = _take(fr, wait)
            expand, deferred = self._fit_pool(_take(fr, chosen))
            if len(deferred["tree"]):
                np.subtract.at(self._n_leaves, deferred["tree"], 1)
                self._frontier = (deferred if self._frontier is None
                                  else _concat(deferred, self._frontier))
            if len(expand["tree"]):
                self._split_nodes(expand)
        self._draw_pending_columns()
        self._zero_new_slots()
        self._pass_has_work = bool(self._to_evaluate)
        if not self._pass_has_work and self._frontier is not None:
            self._release_slots(self._frontier["tree"], self._frontier["node"])
            self._frontier = None

    def _fit_pool(self, chosen):
        """Bound the histograms held during the next pass by ``max_hist_slots``.

        Held during a pass: the frontier's histograms (kept for subtraction) plus two new
        ones per non-terminal expansion. Returns (expanded now, deferred).
        """
        cap = self.params.max_hist_slots
        n = len(chosen["tree"])
        if cap is None or n == 0:
            return chosen, _take(chosen, slice(0, 0))
        needs = np.where(self._children_terminal(chosen["tree"], chosen["node"]), 0, 2)
        need_total = int(needs.sum())
        if self._n_held + need_total <= cap:
            return chosen, _take(chosen, slice(0, 0))
        # 1. histograms of waiting nodes, lowest priority first
        waiting = self._frontier
        if waiting is not None:
            self._release_slots(waiting["tree"][::-1], waiting["node"][::-1],
                                at_most=self._n_held + need_total - cap)
        # 2. parents about to expand: terminal children need no parent histogram at all,
        #    the others then build both children instead of subtracting one
        if self._n_held + need_total > cap:
            order = np.argsort(needs != 0, kind="stable")
            self._release_slots(chosen["tree"][order], chosen["node"][order],
                                at_most=self._n_held + need_total - cap)
        # 3. expansions that still do not fit wait for the next pass
        kept = max(1, int(np.count_nonzero(self._n_held + np.cumsum(needs) <= cap)))
        return _take(chosen, slice(0, kept)), _take(chosen, slice(kept, n))

    def _children_terminal(self, trees, nodes):
        """Per node: its children can never split, so they need no histogram (their sums
        are known)."""
        p = self.params
        terminal = np.zeros(len(trees), dtype=bool)
        if p.max_depth is not None:
            terminal |= self.nodes.depth[trees, nodes] + 1 >= p.max_depth
        if p.max_leaves is not None:
            terminal |= self._n_leaves[trees] >= p.max_leaves
        return terminal

    def _split_nodes(self, c):
        """Split the chosen nodes ``c`` (frontier arrays): children get consecutive ids per
        tree in ``c``'s order, and histogram slots unless they are terminal."""
        nd = self.nodes
        t, n = c["tree"], c["node"]
        terminal = self._children_terminal(t, n)
        per_tree = np.bincount(t, minlength=self.n_trees)
        nd.reserve(int((nd.n_nodes + 2 * per_tree).max()))
        left_id = nd.n_nodes[t] + 2 * _rank_within(t, self.n_trees)
        right_id = left_id + 1
        nd.n_nodes += 2 * per_tree
        nd.left[t, n] = left_id
        nd.right[t, n] = right_id
        nd.feature[t, n] = c["feature"]
        nd.bin_threshold[t, n] = c["bin"]
        nd.default_left[t, n] = c["default_left"]
        nd.is_categorical[t, n] = c["is_categorical"]
        nd.cat_bitset[t, n, : c["bitset"].shape[1]] = c["bitset"]
        nd.route[t, n, 0] = left_id
        nd.route[t, n, 1] = c["feature"]
        nd.route[t, n, 2] = c["bin"]
        nd.route[t, n, ROUTE_FLAGS] = route_flags(c["default_left"], c["is_categorical"])
        nd.gain[t, n] = c["importance_gain"]
        nd.depth[t, left_id] = nd.depth[t, right_id] = nd.depth[t, n] + 1

        # terminal children: sums from the split, leaf values in one call
        k = np.flatnonzero(terminal)
        if len(k):
            tt = np.repeat(t[k], 2)
            children = np.stack([left_id[k], right_id[k]], axis=1).ravel()
            sums = np.stack([c["left_sums"][k], c["right_sums"][k]], axis=1)
            sums = sums.reshape(-1, sums.shape[2])
            nd.sums[tt, children] = sums
            nd.value[tt, children] = self.policy.leaf_values(sums)
            self._release_slots(t[k], n[k])

        k = np.flatnonzero(~terminal)
        if not len(k):
            return
        self._to_evaluate.append((np.repeat(t[k], 2),
                                  np.stack([left_id[k], right_id[k]], axis=1).ravel()))
        parent_slot = nd.held_slot[t[k], n[k]]
        # No parent histogram (dropped to bound memory, or sampled-feature histograms,
        # which are never subtracted): build both children.
        both = k[parent_slot < 0]
        if len(both):
            trees = np.repeat(t[both], 2)
            children = np.stack([left_id[both], right_id[both]], axis=1).ravel()
            if self._records:
                counts = np.stack([c["left_sums"][both, self.policy.count_stat],
                                   c["right_sums"][both, self.policy.count_stat]],
                                  axis=1).ravel()
            else:
                counts = np.zeros(2 * len(both))
            record = self._record_nodes(counts)
            if (~record).any():
                slots = self._take_slots(int((~record).sum()), zero=True)
                self._hold(trees[~record], children[~record], slots, rows_added=True)
            if record.any():
                slots, was_clean = self._take_slots(int(record.sum()), zero=False,
                                                    return_clean=True)
                self._hold(trees[record], children[record], slots, rows_added=True)
                self._record_capacity[slots] = counts[record].astype(np.int64)
                self._pass_records.append((slots, was_clean))
        # Otherwise build the child with fewer rows; the sibling is parent - built.
        sub = k[parent_slot >= 0]
        if len(sub):
            cs = self.policy.size_stat
            build_left = c["left_sums"][sub, cs] <= c["right_sums"][sub, cs]
            small = np.where(build_left, left_id[sub], right_id[sub])
            large = np.where(build_left, right_id[sub], left_id[sub])
            parents = nd.held_slot[t[sub], n[sub]]
            nd.held_slot[t[sub], n[sub]] = -1     # freed once subtracted (finish_pass)
            self._n_held -= len(sub)
            small_slots = self._take_slots(len(sub), zero=True)
            large_slots = self._take_slots(len(sub), zero=False)
            self._hold(t[sub], small, small_slots, rows_added=True)
            self._hold(t[sub], large, large_slots, rows_added=False)
            self._pending_subtractions.append(
                np.stack([parents, small_slots, large_slots], axis=1))

    # ------------------------------------------------------------------ results
    def tree_arrays(self, t):
        """The finished tree ``t`` as a dict of flat arrays (see docs/internals.md)."""
        nd = self.nodes
        n = int(nd.n_nodes[t])
        feature = nd.feature[t, :n].copy()
        bins = nd.bin_threshold[t, :n].copy()
        is_cat = nd.is_categorical[t, :n].astype(bool)
        threshold = np.zeros(n, np.float64)
        for node in np.flatnonzero((feature >= 0) & ~is_cat):
            edges = self.bin_edges[feature[node]]
            b = bins[node]
            # The last value bin holds everything up to +inf: all values go left.
            threshold[node] = edges[b] if b < len(edges) else np.finfo(np.float64).max
        leaf = nd.left[t, :n] < 0
        return dict(
            left=nd.left[t, :n].copy(), right=nd.right[t, :n].copy(), feature=feature,
            threshold=threshold, bin_threshold=np.where(leaf, 0, bins).astype(np.int32),
            default_left=nd.default_left[t, :n].astype(bool), is_categorical=is_cat,
            cat_bitset=nd.cat_bitset[t, :n].copy() if is_cat.any() else
            np.zeros((n, 0), np.uint32),
            value=nd.value[t, :n].copy(), gain=np.where(leaf, 0.0, nd.gain[t, :n]),
            cover=np.asarray(self.policy.cover(nd.sums[t, :n]), dtype=np.float64),
            n_samples=(nd.sums[t, :n, self.policy.count_stat].copy()
                       if self.policy.count_stat is not None else np.zeros(n)),
        )

    def leaf_values_of_tree(self, t):
        """ndarray (n_nodes, n_outputs): value of every node of tree ``t`` (leaves used)."""
        return self.nodes.value[t, : int(self.nodes.n_nodes[t])]
