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
pass (``partition_select_rows``), then adds it into the histogram of its new node when that
node is being built this pass. Of two siblings only the one with fewer rows is built; the other
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

Collaborators
-------------
The grower decides which nodes to build, search and expand, and keeps the trees' node
arrays (``engine/nodes.py``). The work is done by four collaborators with narrow
contracts: the ``Partitioner`` moves rows to their nodes (``engine/partitioner.py``), the
``HistogramBuilder`` turns listed rows into node histograms and owns their memory
(``engine/histograms.py``), the ``FeatureSampler`` says which features a node may use
(``engine/feature_sampling.py``), and the ``SplitFinder`` searches and accepts splits
through the learner's ``SplitPolicy`` (``engine/split_finder.py``).
"""
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from ..common import binned_dtype, hist_column_starts, hist_width
from ..kernels.partition import ROUTE_FLAGS, ROUTE_PASS_THROUGH, route_flags
from .bundled import route_stored_columns
from .feature_sampling import FeatureSampler
from .histograms import HistogramBuilder, use_records
from .multiway import chain_codes, chain_ids, chain_sums
from .nodes import (
    GrowerTelemetry,
    GrowthParams,
    NodeArrays,
    concat_frontier,
    rank_within,
    raw_thresholds,
    sampled_columns,
    take_frontier,
)
from .partitioner import Partitioner, chunk_starts  # noqa: F401  (chunk_starts: public)
from .policies import SplitPolicy
from .split_finder import SplitFinder


def merge_searches(n_nodes: int, parts: list) -> dict[str, np.ndarray]:
    """The result of :meth:`TreeGrower._search` over ``n_nodes`` nodes from the results
    of its shares: ``parts`` lists ``(positions, result)``, each result that of the nodes
    at ``positions`` (ascending), the shares together every node once. A node's search
    does not depend on the others searched with it, so this is the one search's result
    array for array: the splits in the order of the nodes."""
    sums = None
    searched, accepted_at, splits = [], [], []
    for positions, part in parts:
        positions = np.asarray(positions, np.int64)
        if sums is None:
            sums = np.empty((n_nodes,) + part["sums"].shape[1:], part["sums"].dtype)
        sums[positions] = part["sums"]
        at = positions[np.asarray(part["searched"], np.int64)]
        searched.append(at)
        if "accepted" in part:
            accepted_at.append(at[np.asarray(part["accepted"], np.int64)])
            splits.append({k: v for k, v in part.items() if k.startswith("split.")})
    found = {"sums": sums, "searched": np.sort(np.concatenate(searched))}
    if accepted_at:
        at = np.concatenate(accepted_at)
        order = np.argsort(at, kind="stable")
        found["accepted"] = np.searchsorted(found["searched"], at[order])
        for name in splits[0]:
            found[name] = np.concatenate([s[name] for s in splits])[order]
    return found


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
    policy : engine.policies.SplitPolicy
        The learner's criterion (statistics, split search, acceptance rule, leaf values).
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
    bundles : FeatureBundles or None
        The cache's bundled features (``cache/bundles.py``): the blocks' codes are then
        its stored columns, histograms are built over them and expanded to features
        before the split search, and routes read the stored columns.
    """

    def __init__(self, n_trees: int, n_features: int, max_bin: int,
                 n_value_bins: np.ndarray, is_categorical: np.ndarray, bin_edges: list,
                 policy: SplitPolicy, params: GrowthParams, rng: np.random.Generator,
                 feature_rngs: list | None = None, tree_features: list | None = None,
                 hist_pool: np.ndarray | None = None, bundles: Any = None) -> None:
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
        # A policy without a count statistic (boosting) lists every row: rows it leaves out
        # (a subsample) have zero statistics. Skipping them would cost the partition sweep
        # a strided read of the statistics (15% of the sweep).
        self._select_count_stat = -1 if policy.count_stat is None else policy.count_stat
        # a wide categorical feature's histogram spans several columns
        # (common.hist_column_starts); per-node column subsets take one column a feature
        starts = hist_column_starts(self.n_value_bins, max_bin)
        self.column_of = None if starts[-1] == n_features else starts
        self.n_hist_columns = int(starts[-1])
        self.n_words = (max(max_bin, int(self.n_value_bins.max(initial=0))) + 31) // 32
        self.bundles = bundles
        #: Distributed training (``oocboost.dask``; set by :meth:`distribute`).
        self.reduce_hook = None
        self.share_hook = None
        self.telemetry = GrowerTelemetry()
        self.partitioner = Partitioner(n_trees, self.missing_bin, self.telemetry)
        self._no_slots = None      # apply_pending: every slot -1
        self._every_row = np.zeros((n_trees, 0), np.uint8)   # row_counts keeping every row
        self._codes_dtype = binned_dtype(max_bin)   # the codes of the blocks accumulated
        # set by a learner whose later passes read a sample of the rows, so that only
        # the sample's rows know their nodes (see move_to_leaves)
        self.grown_from_sample = False

    # ------------------------------------------------------------------ set-up
    def _initial_capacity(self) -> int:
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

    def start(self) -> None:
        """Reset for a new set of trees; every root is to be built in the next pass."""
        pol = self.policy
        self.nodes = NodeArrays(self.n_trees, self._initial_capacity(), self.n_words,
                                pol.n_outputs, pol.n_stats,
                                route_words=0 if self.bundles is None else self.n_words)
        # per-node column subsets are of features, not of a wide feature's columns, and
        # not of bundled columns
        columns = (0 if self.column_of is not None or self.bundles is not None else
                   sampled_columns(self.params, self.n_features, self.tree_feature_sets)
                   or 0)
        self._columns = columns
        self.histograms = HistogramBuilder(
            shape=(columns or self.n_hist_columns, self.max_bin, hist_width(pol.n_stats)),
            dtype=pol.hist_dtype, max_slots=self.params.max_hist_slots,
            reuse=self._hist_pool, column_of=self.column_of, per_node_columns=columns,
            bundles=self.bundles, n_value_bins=self.n_value_bins, n_stats=pol.n_stats,
            use_records=use_records(self.n_trees, pol.count_marks_rows),
            telemetry=self.telemetry)
        self.histograms.reduce_hook = self.reduce_hook
        self.features = FeatureSampler(self.params, self.n_features, self.n_trees,
                                       self.rng, self.feature_rngs, self.tree_feature_sets,
                                       per_node_columns=columns)
        self.splits = SplitFinder(pol, self.features, columns)
        # nodes.slot_of_node holds only the slots rows are added into during the next pass;
        # nodes.held_slot every histogram still held (for subtraction), _n_held of them.
        self._n_held = 0
        self._pending_columns = []        # (slot, tree, node) whose features to draw
        self._pending_subtractions = []   # (k, 3) arrays: parent, built, sibling slot
        self._to_evaluate = []            # (trees, nodes) arrays completing this pass
        self._frontier = None             # dict of arrays (see take_frontier), or None
        self._n_leaves = np.ones(self.n_trees, dtype=np.int64)
        self._pass_has_work = True
        self._order = 0
        trees = np.arange(self.n_trees, dtype=np.int64)
        roots = np.zeros(self.n_trees, dtype=np.int64)
        slots = self.histograms.take(self.n_trees, zero=True)
        self._hold(trees, roots, slots, rows_added=True)
        self._to_evaluate.append((trees, roots))
        self._draw_pending_columns()
        self.histograms.zero_taken()

    def distribute(self, reduce_hook: Callable[[np.ndarray, np.ndarray], None],
                   root_reduce_hook: Callable[[np.ndarray, np.ndarray], None] | None = None,
                   share_hook: Callable[..., list] | None = None) -> None:
        """After :meth:`start`, grow as one worker of a distributed run: once a pass's
        histograms are built, ``reduce_hook(hist, slots)`` sums ``hist[slots]`` over the
        workers. No small node is recorded (its record slot is sized by all its rows).

        Per-node column histograms are read by the split search alone (never
        subtracted): given ``root_reduce_hook`` and ``share_hook``, they are summed on
        rank 0 only (``root_reduce_hook``: the other ranks send theirs and zero them),
        and ``share_hook(hist, slots, trees, search)`` shares the search out: each
        worker runs ``search(positions)`` (:meth:`_search` of those nodes) on its share
        and every worker gets every share's ``(positions, result)``, merged here into
        the one search's result. Each node is searched once, on one worker, and no sum
        travels back whole."""
        self.reduce_hook = reduce_hook
        self.share_hook = None
        if self._columns and root_reduce_hook is not None and share_hook is not None:
            self.reduce_hook, self.share_hook = root_reduce_hook, share_hook
        self.histograms.reduce_hook = self.reduce_hook
        self.histograms.records = False

    @property
    def hist(self) -> np.ndarray:
        """The histogram pool (a next grower may reuse it: ``hist_pool``)."""
        return self.histograms.hist

    @property
    def n_hist_slots(self) -> int:
        """Histogram slots allocated so far (each ``n_features * max_bin * n_stats * 8``
        bytes)."""
        return self.histograms.n_slots

    # ------------------------------------------------------------------ node slots
    def _hold(self, trees, nodes, slots, rows_added):
        """Record that nodes hold histogram slots; ``rows_added``: rows are added into
        them in the next pass (else they are filled by subtraction)."""
        nd = self.nodes
        nd.held_slot[trees, nodes] = slots
        self._n_held += len(slots)
        if rows_added:
            nd.slot_of_node[trees, nodes] = slots
            self._pending_columns.append(np.stack([slots, trees, nodes], axis=1))

    def _release_slots(self, trees, nodes, at_most=None):
        """Free the histograms held by these nodes (the first ``at_most`` that hold one)."""
        held = self.nodes.held_slot[trees, nodes]
        which = np.flatnonzero(held >= 0)
        if at_most is not None:
            which = which[:max(0, at_most)]
        if len(which):
            self.histograms.free(held[which].tolist())
            self.nodes.held_slot[trees[which], nodes[which]] = -1
            self._n_held -= len(which)

    def _draw_pending_columns(self):
        """Draw the features of every slot created since the last call (per-node column
        subsets)."""
        pending, self._pending_columns = self._pending_columns, []
        if not self._columns or not pending:
            return
        pending = np.concatenate(pending)
        for t in np.unique(pending[:, 1]):
            of_tree = pending[pending[:, 1] == t]
            self.histograms.slot_columns[of_tree[:, 0]] = self.features.node_columns(
                int(t), of_tree[:, 2], self._columns)

    # ------------------------------------------------------------------ passes
    def needs_pass(self) -> bool:
        """True while some histogram must still be built."""
        return self._pass_has_work

    def accumulate(self, codes: Any, stats: np.ndarray, node_of_row: np.ndarray,
                   row_counts: np.ndarray | None = None) -> None:
        """Partition one block's rows and add them into the histograms built this pass.

        Parameters
        ----------
        codes : ndarray (n_features, n_rows) uint8/uint16, or PlaneCodes (``kernels/codes.py``)
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
        nd = self.nodes
        if self._root_pass_all_rows(row_counts):
            # every row is at its tree's root (the only node) and counts: nothing to move
            # or list
            self.histograms.add_roots(codes, stats, nd.slot_of_node[:, 0])
            return
        listed = self.partitioner.partition(codes, node_of_row, nd, nd.slot_of_node,
                                            row_counts)
        self.histograms.add_rows(codes, stats, *listed)

    def _root_pass_all_rows(self, row_counts):
        """True when this pass builds full histograms of the roots alone and keeps every
        row (``row_counts`` has no columns): then each tree's rows all go into its root's
        slot, in order."""
        nd = self.nodes
        return (row_counts.shape[1] == 0 and self.histograms.can_add_roots(self.policy.n_stats)
                and bool((nd.n_nodes == 1).all()) and bool((nd.slot_of_node[:, 0] >= 0).all()))

    def apply_pending(self, codes: Any, node_of_row: np.ndarray) -> None:
        """Move rows down for splits decided after the last pass; no histograms.

        After this, ``node_of_row`` holds each row's leaf in the finished trees.
        """
        if self._no_slots is None:
            self._no_slots = np.full_like(self.nodes.slot_of_node, -1)
        self.partitioner.partition(codes, node_of_row, self.nodes, self._no_slots,
                                   self._every_row)

    def move_to_leaves(self, codes: Any, node_of_row: np.ndarray) -> None:
        """Move a block's rows to their leaves in the finished trees: the splits decided
        after the last pass, or, for trees grown from a sample (``grown_from_sample``),
        every split from the root down, in one sweep."""
        if not self.grown_from_sample:
            self.apply_pending(codes, node_of_row)
            return
        self.partitioner.to_leaves(codes, node_of_row, self.nodes)

    def finish_pass(self) -> None:
        """Complete this pass's histograms, search splits, and choose what to expand next."""
        nd = self.nodes
        built = nd.slot_of_node[nd.slot_of_node >= 0].astype(np.int64)
        self.histograms.complete_pass(built, self._codes_dtype)
        t0 = time.perf_counter()
        self.telemetry.passes += 1
        if self._pending_subtractions:
            self.histograms.subtract(self._pending_subtractions)
            self._pending_subtractions = []
        nd.slot_of_node.fill(-1)
        evaluate = self._to_evaluate
        self._to_evaluate = []
        if evaluate:
            trees = np.concatenate([t for t, _ in evaluate])
            node_ids = np.concatenate([n for _, n in evaluate])
            slots = nd.held_slot[trees, node_ids].astype(np.int32)
            if self.share_hook is None:
                found = self._search(trees, node_ids, slots)
            else:
                found = merge_searches(len(trees), self.share_hook(
                    self.histograms.hist, slots, trees,
                    lambda pos: self._search(trees[pos], node_ids[pos], slots[pos])))
            sums = found["sums"]
            nd.sums[trees, node_ids] = sums
            nd.value[trees, node_ids] = self.policy.leaf_values(sums, trees, node_ids)
            self._evaluate(trees, node_ids, slots, found)
        self._expand()
        self.telemetry.split_s += time.perf_counter() - t0

    def _search(self, trees: np.ndarray, node_ids: np.ndarray,
                slots: np.ndarray) -> dict[str, np.ndarray]:
        """The statistics and splits of the nodes completed this pass, as arrays:
        ``sums``, ``searched`` (the positions of the nodes above ``max_depth``),
        ``accepted`` (positions in ``searched``) and the split finder's candidates as
        ``split.<name>``."""
        sums = self.policy.histogram_sums(self.histograms.node_sums(slots), trees)
        depth = self.nodes.depth[trees, node_ids]
        idx = (np.arange(len(trees)) if self.params.max_depth is None
               else np.flatnonzero(depth < self.params.max_depth))
        found = {"sums": sums, "searched": idx}
        if len(idx):
            batch, accepted = self.splits.find(
                self.histograms.hist, self.histograms.slot_columns, trees[idx],
                node_ids[idx], slots[idx], sums[idx], depth[idx])
            found["accepted"] = accepted
            found.update({f"split.{k}": v for k, v in batch.items()})
        return found

    def _evaluate(self, trees, node_ids, slots, found):
        """The accepted splits of :meth:`_search` join the frontier; the other nodes'
        histograms are freed."""
        idx = found["searched"]
        taken = np.zeros(len(trees), dtype=bool)
        if len(idx):
            accepted = found["accepted"]
            batch = {k[len("split."):]: v for k, v in found.items()
                     if k.startswith("split.")}
            if self._columns:
                # zeroed by the search (in a distributed run by the rank that searched
                # the node; the others zeroed theirs when they sent them)
                self.histograms.clean[slots[idx]] = True
            taken[idx[accepted]] = True
            batch["order"] = self._order + 1 + np.arange(len(accepted), dtype=np.int64)
            self._order += len(accepted)
            self._frontier = (batch if self._frontier is None
                              else concat_frontier(self._frontier, batch))
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
                fr = take_frontier(fr, np.lexsort((fr["order"], -fr["gain"])))
            else:
                fr = take_frontier(fr, np.argsort(fr["order"], kind="stable"))
            t = fr["tree"]
            # the first `limit` candidates of each tree, in this order, are expanded
            limit = np.bincount(t, minlength=self.n_trees)
            if p.grow_policy == "lossguide":
                limit = np.minimum(limit, p.leaves_per_pass)
            if p.max_leaves is not None:
                limit = np.minimum(limit, np.maximum(p.max_leaves - self._n_leaves, 0))
            chosen = rank_within(t, self.n_trees) < limit[t]
            self._n_leaves += limit
            room = (np.ones(len(t), bool) if p.max_leaves is None
                    else self._n_leaves[t] < p.max_leaves)
            wait = ~chosen & room & (p.grow_policy == "lossguide")
            drop = ~chosen & ~wait
            self._release_slots(t[drop], fr["node"][drop])
            if wait.any():
                self._frontier = take_frontier(fr, wait)
            expand, deferred = self._fit_pool(take_frontier(fr, chosen))
            if len(deferred["tree"]):
                np.subtract.at(self._n_leaves, deferred["tree"], 1)
                self._frontier = (deferred if self._frontier is None
                                  else concat_frontier(deferred, self._frontier))
            if len(expand["tree"]):
                self._split_nodes(expand)
        self._draw_pending_columns()
        self.histograms.zero_taken()
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
            return chosen, take_frontier(chosen, slice(0, 0))
        needs = np.where(self._children_terminal(chosen["tree"], chosen["node"]), 0,
                         self._n_children(chosen))
        need_total = int(needs.sum())
        if self._n_held + need_total <= cap:
            return chosen, take_frontier(chosen, slice(0, 0))
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
        return take_frontier(chosen, slice(0, kept)), take_frontier(chosen, slice(kept, n))

    def _n_children(self, c):
        """Children of each split of frontier ``c``: 2, or a multiway split's count."""
        if "multiway" not in c:
            return np.full(len(c["tree"]), 2)
        count = c["child_sums"][..., self.policy.count_stat]
        return np.where(c["multiway"], (count > 0).sum(axis=1), 2)

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

    def _record_paths(self, t, n, c, left_id, right_id):
        """What children inherit from their split (splits, not rows): the monotone
        bounds of a policy that keeps them, and the path features of the interaction
        constraints."""
        self.policy.on_split(t, n, c["feature"], left_id, right_id, c["left_sums"],
                             c["right_sums"])
        self.features.on_split(t, n, c["feature"], left_id, right_id)

    def _split_nodes(self, c):
        """Split the chosen nodes ``c`` (frontier arrays), multiway splits one by one."""
        if "multiway" in c and c["multiway"].any():
            for i in np.flatnonzero(c["multiway"]):
                self._split_multiway(take_frontier(c, i))
            c = take_frontier(c, ~c["multiway"])
        if len(c["tree"]):
            self._split_binary(c)

    def _split_binary(self, c):
        """Split the chosen nodes ``c`` in two: children get consecutive ids per tree in
        ``c``'s order, and histogram slots unless they are terminal."""
        nd = self.nodes
        t, n = c["tree"], c["node"]
        terminal = self._children_terminal(t, n)
        per_tree = np.bincount(t, minlength=self.n_trees)
        nd.reserve(int((nd.n_nodes + 2 * per_tree).max()))
        left_id = nd.n_nodes[t] + 2 * rank_within(t, self.n_trees)
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
        if self.bundles is not None:
            route_stored_columns(self.bundles, nd, t, n, c)
        nd.gain[t, n] = c["importance_gain"]
        nd.depth[t, left_id] = nd.depth[t, right_id] = nd.depth[t, n] + 1
        self._record_paths(t, n, c, left_id, right_id)

        # terminal children: sums from the split, leaf values in one call
        k = np.flatnonzero(terminal)
        if len(k):
            tt = np.repeat(t[k], 2)
            children = np.stack([left_id[k], right_id[k]], axis=1).ravel()
            sums = np.stack([c["left_sums"][k], c["right_sums"][k]], axis=1)
            sums = sums.reshape(-1, sums.shape[2])
            nd.sums[tt, children] = sums
            nd.value[tt, children] = self.policy.leaf_values(sums, tt, children)
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
            hs = self.histograms
            if hs.records:
                counts = np.stack([c["left_sums"][both, self.policy.count_stat],
                                   c["right_sums"][both, self.policy.count_stat]],
                                  axis=1).ravel()
            else:
                counts = np.zeros(2 * len(both))
            record = hs.record_fits(counts, self._codes_dtype)
            if (~record).any():
                slots = hs.take(int((~record).sum()), zero=True)
                self._hold(trees[~record], children[~record], slots, rows_added=True)
            if record.any():
                slots, was_clean = hs.take(int(record.sum()), zero=False,
                                           return_clean=True)
                self._hold(trees[record], children[record], slots, rows_added=True)
                hs.expect_records(slots, counts[record], was_clean)
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
            small_slots = self.histograms.take(len(sub), zero=True)
            large_slots = self.histograms.take(len(sub), zero=False)
            self._hold(t[sub], small, small_slots, rows_added=True)
            self._hold(t[sub], large, large_slots, rows_added=False)
            self._pending_subtractions.append(
                np.stack([parents, small_slots, large_slots], axis=1))

    def _split_multiway(self, c):
        """Lay out one multiway split (frontier entry ``c``) as a chain of binary nodes
        (``engine/multiway.py``); each category's child gets a histogram slot unless
        it is terminal, and none is found by subtraction."""
        nd = self.nodes
        t, n = int(c["tree"]), int(c["node"])
        f = int(c["feature"])
        codes = chain_codes(c["child_sums"][:, self.policy.count_stat])
        k = len(codes)
        first = int(nd.n_nodes[t])
        nd.reserve(first + 2 * (k - 1))
        nd.n_nodes[t] += 2 * (k - 1)
        self._n_leaves[t] += k - 2
        chain, children = chain_ids(first, n, k)
        trees = np.full(k - 1, t)
        lefts, rights = children[:-1], children[:-1] + 1
        nd.left[t, chain], nd.right[t, chain] = lefts, rights
        nd.feature[t, chain] = f
        nd.bin_threshold[t, chain] = 0
        nd.default_left[t, chain] = False
        nd.is_categorical[t, chain] = True
        bitset = np.zeros((k - 1, nd.n_words), np.uint32)
        bitset[np.arange(k - 1), codes[:-1] >> 5] = np.uint32(1) << (codes[:-1] & 31)
        nd.cat_bitset[t, chain] = bitset
        nd.route[t, chain, 0] = lefts
        nd.route[t, chain, 1] = f
        nd.route[t, chain, 2] = 0
        nd.route[t, chain, ROUTE_FLAGS] = route_flags(False, True)
        if self.bundles is not None:
            route_stored_columns(self.bundles, nd, trees, chain,
                                 dict(feature=np.full(k - 1, f), bin=np.zeros(k - 1, int),
                                      bitset=bitset))
        # rows arrive at the chain's later nodes in the pass that moves them out of n
        nd.route[t, chain[1:], ROUTE_FLAGS] |= ROUTE_PASS_THROUGH
        nd.gain[t, chain] = np.r_[c["importance_gain"], np.zeros(k - 2)]
        depth = nd.depth[t, n] + 1
        nd.depth[t, chain[1:]] = nd.depth[t, children] = depth
        sums = chain_sums(c["child_sums"], codes)
        nd.sums[t, chain[1:]] = sums[1:]
        nd.value[t, chain[1:]] = self.policy.leaf_values(sums[1:], trees[1:], chain[1:])
        child = c["child_sums"][codes]
        right_sums = np.r_[sums[1:], child[-1:]]
        for j in range(k - 1):   # in chain order: a node's bounds come from its parent's
            self._record_paths(trees[j:j + 1], chain[j:j + 1],
                               dict(feature=np.array([f]), left_sums=child[j:j + 1],
                                    right_sums=right_sums[j:j + 1]),
                               lefts[j:j + 1], rights[j:j + 1])
        self._release_slots(np.array([t]), np.array([n]))
        if self._children_terminal(np.array([t]), np.array([n]))[0]:
            nd.sums[t, children] = child
            nd.value[t, children] = self.policy.leaf_values(child, np.full(k, t), children)
            return
        self._to_evaluate.append((np.full(k, t, np.int64), children))
        self._hold(np.full(k, t, np.int64), children, self.histograms.take(k, zero=True),
                   rows_added=True)

    # ------------------------------------------------------------------ results
    def tree_arrays(self, t: int) -> dict[str, np.ndarray]:
        """The finished tree ``t`` as a dict of flat arrays (see docs/internals.md)."""
        nd = self.nodes
        n = int(nd.n_nodes[t])
        feature = nd.feature[t, :n].copy()
        bins = nd.bin_threshold[t, :n].copy()
        is_cat = nd.is_categorical[t, :n].astype(bool)
        threshold = raw_thresholds(feature, bins, is_cat, self.bin_edges)
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

    def leaf_values_of_tree(self, t: int) -> np.ndarray:
        """ndarray (n_nodes, n_outputs): value of every node of tree ``t`` (leaves used)."""
        return self.nodes.value[t, : int(self.nodes.n_nodes[t])]
