"""One Hoeffding tree learning from blocks of bin codes through the engine's kernels.

Per batch of rows (``HoeffdingLearner.learn``)::

    route      rows to their leaves              kernels.partition.route_to_leaves
    predict    each row before it is learned     majority class / naive Bayes (nba
               (prequential: river's test-then-train, a block at a time)
    add        rows into their leaf's histogram  kernels.partition.partition_select_rows
                                                 + kernels.histogram.build_histograms_selected
               (split_revision: into every node on the row's path, one level a sweep)
    decide     leaves past grace_period          decide.py (Hoeffding bound)
               split nodes past min_samples_reevaluate (split_revision)

A batch is learned as a whole: its rows all reach the leaves the tree had when the batch
began, so a split takes effect from the next batch on (river splits between two rows).
``batches.py`` cuts the stream so that a leaf's attempt comes at most a quarter of
``grace_period`` late.
"""
import numpy as np

from ...common import weighted_sum
from ...engine.partitioner import chunk_starts
from ...kernels import stream_leaves as ks
from ...kernels.codes import SparseCodes, code_arrays
from ...kernels.histogram import build_histograms_selected
from ...kernels.partition import partition_select_rows, route_to_leaves
from ...model.naive_bayes import Layout, LeafTables, posterior
from .decide import (
    NULL_SPLIT,
    attempt_decision,
    feature_splits,
    ranked_candidates,
    revision_decision,
)
from .nodes import StreamTree

#: A leaf's split attempt may come this fraction of ``grace_period`` late (module
#: docstring of batches.py): with hundreds of leaves one is always nearly due, and
#: batches cut for it alone would be a few rows long.
DUE_SLACK = 0.25
#: With naive Bayes leaves, the largest share of a leaf's table one batch may add (its
#: predictions within the batch use the table as of the batch's start): measured on the
#: bench's hyperplane, 50,000 rows, adaptive batches without this bound lost 1.3 points
#: of prequential accuracy to river (0.8875 against 0.9008), batches of 100 rows 0.4;
#: on the bench's 200,000-row EFDT run 0.5 left 0.8635 against river's 0.8746, 0.25
#: 0.8660 at the same speed.
NB_STALENESS = 0.25
#: Batches of at most this many rows are routed and added by the serial kernels of
#: ``kernels/stream_leaves.py`` (the same sums, bit for bit), larger ones by the block
#: kernels' parallel sweeps: a partial_fit of 10 rows spent most of its time launching
#: those. On an idle machine 1,000-row calls learn as fast either way (507-540k rows/s
#: at 512, 523-534k at 4,096; 200,000 rows of a 10-feature hyperplane, best of 3,
#: 2026-12-08); on a busy one each parallel sweep waits for a core, and 1,000-row calls
#: took 17 ms instead of 1.4-2.6 ms (another benchmark on both cores).
SERIAL_BATCH_ROWS = 2048


class HoeffdingLearner:
    """A Hoeffding tree (VFDT, or EFDT with ``config.split_revision``) over a cache's bins.

    Parameters
    ----------
    config : HoeffdingConfig
    mapper : BinMapper
        Bins of the codes it will learn from (a cache's, or one fitted to a first chunk).
    max_slots : int
        Histograms kept at most (leaves collecting split statistics; with split
        revision, split nodes too).
    """

    def __init__(self, config, mapper, max_slots):
        self.config = config
        self.mapper = mapper
        self.classification = config.task == "classification"
        self.tree = StreamTree(mapper.n_value_bins, mapper.is_categorical, mapper.max_bin,
                               config.n_stats, max_slots, self.classification)
        self.tree.take_slot(0)
        self.y_offset = None
        self.rows_seen = 0
        self.weight_seen = 0.0
        # each node's share of the last batch's weight, and that batch's mean row
        # weight: how many rows until a leaf is due (rows_until_due)
        self.share = np.ones(1)
        self.row_weight = 1.0
        self._child_share = {}
        self.counters = {"splits": 0, "revisions": 0, "collapses": 0, "deactivated": 0,
                         "waiting": 0, "held_by_memory": 0}
        # adaptive random forests: each leaf splits on its own random subset of
        # ``subspace_size`` features (river's RandomLeaf), drawn from ``subspace_rng``
        self.subspace_size = None
        self.subspace_rng = None
        self._leaf_features = {}

    # ------------------------------------------------------------------ statistics
    def block_stats(self, y, w):
        """(1, n_rows, n_stats) float32 statistics of a block's rows."""
        n = len(y)
        stats = np.zeros((1, n, self.config.n_stats), np.float32)
        if not self.classification and self.y_offset is None:
            # sums of squares about a first estimate of the mean keep float32 exact enough
            total = float(w.sum())
            self.y_offset = weighted_sum(w, y) / total if total > 0 else 0.0
        ks.row_stats(np.ascontiguousarray(y, np.float64), np.ascontiguousarray(w, np.float64),
                     self.config.n_classes if self.classification else 0,
                     float(self.y_offset or 0.0), stats[0])
        return stats

    def node_totals(self, node_of_row, stats):
        """(n_nodes, n_stats) sums of the block's rows per leaf they reached (and, with
        split revision, per split node they passed through)."""
        tree = self.tree
        n = tree.n_nodes
        totals = np.stack([np.bincount(node_of_row, weights=stats[0, :, m], minlength=n)
                           for m in range(stats.shape[2])], axis=1)
        if self.config.split_revision:
            # split nodes keep statistics of every row through them (their re-evaluation
            # reads their histograms; these totals keep their weights in step)
            left = tree.left[:n]
            for d in range(int(tree.depth[:n].max()) - 1, -1, -1):
                nodes = np.flatnonzero((tree.depth[:n] == d) & (left >= 0))
                totals[nodes] = totals[left[nodes]] + totals[left[nodes] + 1]
        return totals

    # ------------------------------------------------------------------ prediction
    def route(self, codes):
        """(n_rows,) int32 leaf of each row."""
        route, bits = self.tree.routes()
        if self._serial(codes):
            node_of_row = np.empty(codes.shape[1], np.int32)
            low, wide, wide_row = code_arrays(codes)
            ks.route_rows_serial(low, wide, wide_row, route, bits, self.tree.missing_bin,
                                 node_of_row)
            return node_of_row
        node_of_row = np.zeros((1, codes.shape[1]), np.int32)
        route_to_leaves(codes, node_of_row, route, bits, self.tree.missing_bin)
        return node_of_row[0]

    def _serial(self, codes):
        """Whether a batch goes through the serial kernels (``SERIAL_BATCH_ROWS``)."""
        return codes.shape[1] <= SERIAL_BATCH_ROWS and not isinstance(codes, SparseCodes)

    def leaf_values(self):
        """(n_nodes, n_outputs): class distribution (normalised) or mean of every node."""
        tree = self.tree
        dist = tree.dist[:tree.n_nodes]
        if self.classification:
            counts = dist[:, :self.config.n_classes]
            total = counts.sum(axis=1, keepdims=True)
            uniform = np.full_like(counts, 1.0 / counts.shape[1])
            return np.where(total > 0, counts / np.where(total > 0, total, 1.0), uniform)
        w = dist[:, 0]
        mean = np.where(w > 0, dist[:, 1] / np.where(w > 0, w, 1.0), 0.0)
        return (mean + (self.y_offset or 0.0))[:, None]

    def _naive_bayes_nodes(self, chosen=True):
        """Leaves that may predict by naive Bayes: active leaves past ``nb_threshold``
        ("nb"), of which, when ``chosen``, those that predicted better by naive Bayes
        than by majority class ("nba"); None when the tree does not use naive Bayes."""
        cfg, tree = self.config, self.tree
        if not self.classification or cfg.leaf_prediction == "mc":
            return None
        n = tree.n_nodes
        ok = (tree.left[:n] < 0) & (tree.slot[:n] >= 0)
        ok &= tree.weight(tree.dist[:n]) >= cfg.nb_threshold
        if cfg.leaf_prediction == "nba" and chosen:
            ok &= tree.nb_correct[:n] > tree.mc_correct[:n]
        return np.flatnonzero(ok & tree.reachable())

    def naive_bayes_leaves(self):
        """:class:`LeafTables` (copies of the histograms) of the leaves that predict by
        naive Bayes, or None."""
        nodes = self._naive_bayes_nodes()
        if nodes is None:
            return None
        tree, k = self.tree, self.config.n_classes
        counts = tree.hist[tree.slot[nodes], ..., :k].reshape(
            len(nodes), tree.n_columns * tree.max_bin, k)
        return LeafTables(0, nodes, tree.dist[nodes, :k], counts)

    def _leaf_predictions(self, codes, node_of_row):
        """``(majority, naive_bayes)`` predictions of each row's leaf; the second is None
        without naive Bayes leaves, and equals the first where its leaf has no table."""
        tree = self.tree
        majority = np.empty((len(node_of_row), max(self.config.n_classes, 1)))
        ks.majority_predictions(tree.dist, np.ascontiguousarray(node_of_row, np.int32),
                                self.config.n_classes if self.classification else 0,
                                float(self.y_offset or 0.0), majority)
        nodes = self._naive_bayes_nodes(chosen=False)
        if nodes is None:
            return majority, None
        # tables of the leaves these rows reached only (a small batch reaches few)
        reached = np.zeros(tree.n_nodes, bool)
        reached[node_of_row] = True
        nodes = nodes[reached[nodes]]
        table_of_node = np.full(tree.n_nodes, -1, np.int32)
        table_of_node[nodes] = np.arange(len(nodes), dtype=np.int32)
        counts = tree.hist.reshape(tree.hist.shape[0], tree.n_columns * tree.max_bin,
                                   tree.hist.shape[3])
        bayes = majority.copy()
        posterior(codes, node_of_row, table_of_node, counts,
                  tree.slot[nodes].astype(np.int64), tree.dist[nodes, :self.config.n_classes],
                  Layout.of(self.mapper), bayes)
        return majority, bayes

    def _combine(self, node_of_row, majority, bayes):
        if bayes is None:
            return majority
        if self.config.leaf_prediction == "nb":
            return bayes
        tree = self.tree
        use = (tree.nb_correct > tree.mc_correct)[node_of_row]
        return np.where(use[:, None], bayes, majority)

    def predict_rows(self, codes, node_of_row=None):
        """Predictions of the current tree for a block: (n_rows, K) class probabilities
        or (n_rows, 1) values."""
        if node_of_row is None:
            node_of_row = self.route(codes)
        return self._combine(node_of_row, *self._leaf_predictions(codes, node_of_row))

    def _score_leaf_predictors(self, node_of_row, majority, bayes, y, w):
        """nba: add each row's weight to its leaf's count of right majority-class and
        right naive-Bayes predictions, made before the row is learned."""
        tree, n = self.tree, self.tree.n_nodes
        active = tree.slot[node_of_row] >= 0
        for correct, pred in ((tree.mc_correct, majority), (tree.nb_correct, bayes)):
            right = w * (pred.argmax(axis=1) == y) * active
            correct[:n] += np.bincount(node_of_row, weights=right, minlength=n)

    # ------------------------------------------------------------------ learning
    def learn(self, codes, y, w, predict=False, node_of_row=None):
        """Learn one block. Returns the rows' predictions made before learning them
        when ``predict`` (prequential evaluation), else None.

        Parameters
        ----------
        codes : ndarray (n_features, n_rows) uint8/uint16, or PlaneCodes
        y : ndarray (n_rows,) float64, class indices or targets
        w : ndarray (n_rows,) float64, row weights (0: not learned)
        node_of_row : ndarray (n_rows,) int32 or None
            The rows' leaves (:meth:`route`), when the caller has them already.
        """
        cfg, tree = self.config, self.tree
        n_nodes_before = tree.n_nodes
        stats = self.block_stats(y, w)
        if node_of_row is None:
            node_of_row = self.route(codes)
        before = None
        nba = self.classification and cfg.leaf_prediction == "nba"
        if predict or nba:
            majority, bayes = self._leaf_predictions(codes, node_of_row)
            if predict:
                before = self._combine(node_of_row, majority, bayes)
            if nba:
                self._score_leaf_predictors(node_of_row, majority, bayes,
                                            y.astype(np.int64), w)
        if not cfg.split_revision and self._serial(codes):
            # the rows, then their totals into the nodes' statistics, in one call
            totals = np.zeros((n_nodes_before, stats.shape[2]))
            ks.add_rows_at_leaves(*code_arrays(codes), node_of_row, stats[0],
                                  tree.slot[:n_nodes_before], tree.hist_columns, tree.hist,
                                  totals, tree.dist, tree.hist_sums)
        else:
            if cfg.split_revision:
                self._add_paths(codes, stats)
            else:
                self._add_leaves(codes, stats, node_of_row)
            totals = self.node_totals(node_of_row, stats)
            tree.dist[:n_nodes_before] += totals
            held = tree.slot[:n_nodes_before] >= 0
            tree.hist_sums[tree.slot[:n_nodes_before][held]] += totals[held]
        self.rows_seen += len(y)
        self.weight_seen += float(w.sum())
        self._note_shares(tree.weight(totals), float(w.sum()), len(y))
        if cfg.split_revision:
            self._revise()
        self._attempt_splits()
        self._assign_free_slots()
        self._extend_shares()
        return before

    def graft(self, node, other):
        """Replace the subtree at ``node`` by a copy of learner ``other``'s tree
        (``StreamTree.graft``); the copied nodes' shares of the rows start at 0."""
        if other.y_offset != self.y_offset and not self.classification:
            raise ValueError("a regressor's tree takes only a tree whose sums are about "
                             "the same first mean (y_offset)")
        new_id = self.tree.graft(node, other.tree)
        self._extend_shares()
        return new_id

    def _note_shares(self, node_weight, batch_weight, n_rows):
        if batch_weight > 0:
            self.share = node_weight / batch_weight
            self.row_weight = batch_weight / n_rows

    def _extend_shares(self):
        n = self.tree.n_nodes
        if len(self.share) < n:
            share = np.zeros(n)
            share[:len(self.share)] = self.share
            for node, value in self._child_share.items():
                share[node] = value
            self.share = share
        self._child_share = {}

    def rows_until_due(self):
        """Rows until the first active leaf is expected to have seen ``grace_period``
        more weight (its share of the last batch's rows), inf when none can split.

        With naive Bayes leaves, whose tables are read as of a batch's start, a batch
        may also add at most ``NB_STALENESS`` of what a leaf's table holds (at least
        the slack)."""
        cfg, tree = self.config, self.tree
        n = tree.n_nodes
        nb = self.classification and cfg.leaf_prediction != "mc"
        share = self.share[:n]
        if len(share) < n:        # the kernel reads one per node: none yet is no share
            share = np.concatenate([share, np.zeros(n - len(share))])
        return float(ks.rows_until_due(
            tree.left[:n], tree.slot[:n], tree.can_grow[:n], tree.reachable(),
            tree.dist[:n], tree.checked_at[:n], share, tree.hist_sums,
            cfg.n_classes if self.classification else 0, float(cfg.grace_period),
            DUE_SLACK * cfg.grace_period, float(self.row_weight),
            NB_STALENESS if nb else 0.0))

    def _listing(self, codes, node_of_row, slot_of_node, route, bits):
        n = node_of_row.shape[1]
        chunk_start = chunk_starts(n)
        rows = np.empty((1, n), np.int32)
        slots = np.empty((1, n), np.int32)
        chunk_count = np.empty((1, len(chunk_start)), np.int64)
        partition_select_rows(codes, node_of_row, route, bits, self.tree.missing_bin,
                              np.ascontiguousarray(slot_of_node[None]),
                              np.zeros((1, 0), np.uint8), chunk_start, rows, slots,
                              chunk_count)
        return rows, slots, chunk_start, chunk_count

    def _add_leaves(self, codes, stats, node_of_row):
        """Rows (already at their leaves) into their leaves' histograms."""
        tree = self.tree
        route, bits = tree.routes()
        # rows at leaves do not move, so the listing sweep leaves node_of_row as it is
        listing = self._listing(codes, node_of_row[None], tree.slot[:tree.n_nodes],
                                route, bits)
        build_histograms_selected(codes, stats, *listing, tree.hist, tree.column_of)

    def _add_paths(self, codes, stats):
        """Rows into the histogram of every node on their path, a level a sweep (split
        revision re-evaluates split nodes from them)."""
        tree = self.tree
        n = tree.n_nodes
        route, bits = tree.routes()
        stay = route.copy()
        stay[..., 0] = -1                 # the first sweep lists the root's rows in place
        node_of_row = np.zeros((1, codes.shape[1]), np.int32)
        for d in range(int(tree.depth[:n].max()) + 1):
            slot_at_depth = np.where(tree.depth[:n] == d, tree.slot[:n], -1).astype(np.int32)
            if d == 0 and slot_at_depth[0] < 0:
                continue
            # every sweep but the first moves the rows one level down, then lists them
            listing = self._listing(codes, node_of_row, slot_at_depth,
                                    stay if d == 0 else route, bits)
            build_histograms_selected(codes, stats, *listing, tree.hist, tree.column_of)

    # ------------------------------------------------------------------ growth
    def _split_from(self, res, i, f):
        return {"feature": f, "bin_threshold": int(res["bin_threshold"][i, f]),
                "default_left": bool(res["default_left"][i, f]),
                "is_categorical": bool(self.tree.is_categorical_feature[f]),
                "cat_bitset": res["cat_bitset"][i, f], "merit": float(res["merit"][i, f])}

    def _grow_children(self, node, res, i, f):
        tree, cfg = self.tree, self.config
        children = tree.split(node, self._split_from(res, i, f), res["left"][i, f],
                              res["right"][i, f])
        # until they have seen a batch, children share their parent's rows as it split
        wl, wr = (float(tree.weight(res[k][i, f])) for k in ("left", "right"))
        parent = self.share[node] if node < len(self.share) else 0.0
        for c, wc in zip(children, (wl, wr)):
            self._child_share[c] = parent * wc / (wl + wr) if wl + wr > 0 else 0.0
        if not cfg.split_revision:
            tree.release_slot(node)
        for c in children:
            if cfg.max_depth is not None and tree.depth[c] >= cfg.max_depth:
                tree.can_grow[c] = False
            elif not tree.take_slot(c):
                self.counters["waiting"] += 1
        self.counters["splits"] += 1

    def _deactivate(self, node):
        self.tree.can_grow[node] = False
        self.tree.release_slot(node)
        self.counters["deactivated"] += 1

    def _due(self, nodes, period):
        tree = self.tree
        return nodes[tree.weight(tree.dist[nodes]) - tree.checked_at[nodes] >= period]

    def _attempt_splits(self):
        """VFDT's split attempts at active leaves past ``grace_period`` of new weight."""
        cfg, tree = self.config, self.tree
        n = tree.n_nodes
        if not ks.due_leaves(tree.left[:n], tree.slot[:n], tree.can_grow[:n],
                             tree.reachable(), tree.dist[:n], tree.checked_at[:n],
                             float(cfg.grace_period),
                             cfg.n_classes if self.classification else 0):
            return
        leaves = tree.leaves()
        leaves = self._due(leaves[(tree.slot[leaves] >= 0) & tree.can_grow[leaves]],
                           cfg.grace_period)
        weights = tree.weight(tree.dist[leaves])
        tree.checked_at[leaves] = weights
        if self.classification:
            counts = tree.dist[leaves, :cfg.n_classes]
            pure = np.count_nonzero(counts > 0, axis=1) <= 1
            dominated = counts.max(axis=1) > cfg.max_share_to_split * weights
            for node in leaves[dominated & ~pure]:
                self._deactivate(node)     # river: only the null split is offered
            leaves = leaves[~pure & ~dominated]
            weights = tree.weight(tree.dist[leaves])
        if len(leaves) == 0:
            return
        res = feature_splits(tree, cfg, tree.slot[leaves])
        if self.subspace_size is not None:
            res["merit"] = np.where(self._subspaces(leaves), res["merit"], -np.inf)
        for i, node in enumerate(leaves):
            choice = attempt_decision(ranked_candidates(res["merit"][i], cfg), cfg,
                                      float(weights[i]))
            if choice is None:
                continue
            if choice == NULL_SPLIT:
                self._deactivate(node)
            elif self._children_fit():
                self._grow_children(node, res, i, choice)
            else:
                self.counters["held_by_memory"] += 1

    def _subspaces(self, leaves):
        """(len(leaves), n_features) bool: each leaf's random features, drawn at its
        first split attempt and kept."""
        n_features = len(self.tree.n_value_bins)
        out = np.zeros((len(leaves), n_features), bool)
        for i, node in enumerate(leaves.tolist()):
            if node not in self._leaf_features:
                self._leaf_features[node] = self.subspace_rng.choice(
                    n_features, size=min(self.subspace_size, n_features), replace=False)
            out[i, self._leaf_features[node]] = True
        return out

    def _children_fit(self):
        """Whether a split may go ahead within the histogram pool. With naive Bayes
        leaves a split waits until both children can have a histogram: a child without
        one predicts by majority class only, and at the memory limit every split would
        trade a naive Bayes leaf for one (measured on the bench's stream at a 512MB
        limit: prequential accuracy fell from 0.903 at 4M rows to 0.879 at 16M). A
        majority-class tree splits anyway: its children predict without histograms."""
        if not self.classification or self.config.leaf_prediction == "mc":
            return True
        # the parent's slot comes back to the pool unless split nodes keep theirs
        needed = 2 if self.config.split_revision else 1
        return len(self.tree.free_slots) >= needed

    def _revise(self):
        """EFDT: re-evaluate split nodes past ``min_samples_reevaluate`` of new weight,
        parents first; replace a split whose feature is beaten by the bound."""
        cfg, tree = self.config, self.tree
        n = tree.n_nodes
        split_nodes = np.flatnonzero(tree.reachable() & (tree.left[:n] >= 0)
                                     & (tree.slot[:n] >= 0))
        nodes = self._due(split_nodes, cfg.min_samples_reevaluate)
        if len(nodes) == 0:
            return
        weights = tree.weight(tree.dist[nodes])
        tree.checked_at[nodes] = weights
        res = feature_splits(tree, cfg, tree.slot[nodes])
        for i, node in enumerate(nodes):
            if not tree.reachable()[node] or tree.left[node] < 0:
                continue                  # an ancestor was replaced in this round
            choice = revision_decision(ranked_candidates(res["merit"][i], cfg),
                                       int(tree.feature[node]), cfg, float(weights[i]))
            if choice is None:
                continue
            tree.collapse(node)
            if choice == "collapse":
                self.counters["collapses"] += 1
            else:
                self._grow_children(node, res, i, choice)
                self.counters["revisions"] += 1

    def _promise(self, nodes):
        """River's promise of a leaf: weight it misclassifies (classification), or its
        weight (regression); slots go to the most promising."""
        tree = self.tree
        if self.classification:
            counts = tree.dist[nodes, :self.config.n_classes]
            return counts.sum(axis=1) - counts.max(axis=1)
        return tree.weight(tree.dist[nodes])

    def _assign_free_slots(self):
        """Give free slots to leaves waiting for one, most promising first."""
        tree = self.tree
        n = tree.n_nodes
        if not tree.free_slots or not ks.waiting_leaves(tree.left[:n], tree.slot[:n],
                                                        tree.can_grow[:n], tree.reachable()):
            return
        leaves = tree.leaves()
        waiting = leaves[(tree.slot[leaves] < 0) & tree.can_grow[leaves]]
        for node in waiting[np.argsort(-self._promise(waiting), kind="stable")]:
            if not tree.take_slot(node):
                break
            tree.checked_at[node] = tree.weight(tree.dist[node])
