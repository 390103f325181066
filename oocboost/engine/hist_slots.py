"""The grower's histogram memory: a pool of slots, one node's histogram each, taken and
released as nodes are built and split, zeroed in bulk, grown under the plan's cap; and
record slots, where a small node's rows are appended and summed once the pass ends."""
import time

import numba
import numpy as np

from ..common import aligned_zeros
from ..kernels.hist_ops import record_words, records_to_histograms, zero_slots
from ..kernels.sampling import node_feature_subsets

#: Let small per-node histograms be built from row records (``_use_records``). Measured on
#: 16 depth-12 forest trees, 1M x 28, 2 threads: below a few thousand rows a node's
#: histogram updates missed the cache at 20-35 ns each (3 ns at the root); models are
#: bit-identical either way (``tests/learners/test_forest.py``,
#: ``tests/kernels/test_histogram.py``).
RECORD_SMALL_NODES = True


class HistogramSlots:
    """The slot pool of a :class:`~oocboost.engine.grower.TreeGrower` (a base class: it
    works on the grower's ``hist``, ``nodes``, ``params`` and ``policy``, set up by
    ``TreeGrower.start``)."""

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
        if getattr(self, "bundles", None) is not None:
            stored = aligned_zeros((size,) + self.stored_hist.shape[1:], self._hist_dtype)
            stored[: len(self.stored_hist)] = self.stored_hist
            self.stored_hist = stored
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

    def distribute(self, reduce_hook):
        """After :meth:`start`, grow as one worker of a distributed run: once a pass's
        histograms are built, ``reduce_hook(hist, slots)`` sums ``hist[slots]`` over the
        workers. No small node is recorded (its record slot is sized by all its rows)."""
        self.reduce_hook = reduce_hook
        self._records = False

    def _use_records(self):
        """Whether small nodes may take record slots (``kernels.histogram``,
        ``build_histograms_columns``): per-node sampled-feature histograms, statistics
        whose last column counts rows (the CART statistics), and at least as many trees
        in the pass as threads (records are appended one tree per thread)."""
        return (RECORD_SMALL_NODES and bool(self._columns)
                and self.policy.count_marks_rows
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
        """Histogram slots allocated so far (each ``n_features * max_bin * n_stats * 8``
        bytes)."""
        return self.hist.shape[0]
