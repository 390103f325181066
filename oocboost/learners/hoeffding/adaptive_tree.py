"""Hoeffding adaptive trees (Bifet and Gavaldà 2009; river's
``tree.HoeffdingAdaptiveTreeClassifier``): a Hoeffding tree whose every node watches
the error of the rows through it and grows an alternate subtree when that error rises,
which replaces the node's subtree once it is significantly better.

Per batch of rows::

    predict    each row by the tree before learning it (prequential)
    learn      each row with max(1, Poisson(1)) copies (river's bootstrap sampling)
    watch      the rows' 0/1 errors into an ADWIN per node on each row's path, in row
               order, and each node's mean error since its last change
               (kernels/adwin.py: adwin_update_paths)
    alternate  a node whose detector reported a rise in its error gets a fresh
               alternate tree (a new one if it had one), which learns the rows that
               reach the node from the next batch on, and keeps its own mean error
    switch     once both have seen more than ``drift_window_threshold`` rows, the
               alternate replaces the node's subtree when its error is lower by more
               than ``sqrt(2 e (1 - e) ln(2 / switch_significance) (1/n_alt + 1/n))``
               (``e`` the node's error), or is dropped when higher by as much

Where this differs from river: a change is a rise in the error when the detector's
window after the change has a higher mean than before it (MOA's rule, and the paper's
"the error increases"; river asks whether the node's running mean error rose with the
one row the change was detected on, so a change detected on a correctly predicted row
grows no alternate, and after a tree that predicted perfectly, half of the changes were
lost that way); a batch is learned as a whole (an alternate starts at the
next batch); an alternate is a plain Hoeffding tree (river's is itself adaptive, with
alternates of its own); and prediction, prequential and of the saved model, is by the
tree alone, where river lets an alternate's leaf vote beside the tree's (each weighted
by the inverse square of its error).
"""
import math

import numpy as np

from ...kernels.adwin import adwin_update_paths, new_state
from .adaptive import ADWIN_CLOCK, ADWIN_GRACE, ADWIN_MAX_BUCKETS, ADWIN_MIN_LENGTH


class _Alternate:
    def __init__(self, learner):
        self.learner = learner
        self.error_sum = 0.0
        self.error_sq = 0.0
        self.error_count = 0.0


class AdaptiveTree:
    """A Hoeffding adaptive tree around ``learners[0]`` (module docstring).

    Parameters
    ----------
    learners : list of one HoeffdingLearner
        The tree (grafted in place when an alternate wins).
    make_learner : callable ``() -> HoeffdingLearner``
        A fresh alternate.
    drift_delta : float
        Confidence of the nodes' ADWIN detectors (river's default ADWIN, 0.002).
    drift_window_threshold : float
        Rows both a node and its alternate need before they are compared.
    switch_significance : float
    """

    def __init__(self, learners, make_learner, drift_delta=0.002,
                 drift_window_threshold=300, switch_significance=0.05):
        self.learners = learners
        self.make_learner = make_learner
        self.delta = float(drift_delta)
        self.window = float(drift_window_threshold)
        self.significance = float(switch_significance)
        self.alternates = {}
        self.n_alternate_trees = 0
        self.n_pruned_alternate_trees = 0
        self.n_switch_alternate_trees = 0
        self.rows_seen = 0
        self._capacity = 0
        self._grow(64)

    def _grow(self, capacity):
        old, self._capacity = self._capacity, capacity
        state = new_state(capacity, ADWIN_MAX_BUCKETS)
        if old:
            for new, cur in zip(state, self.state):
                new[:old] = cur
        self.state = state
        for name in ("error_sum", "error_sq", "error_count"):
            grown = np.zeros(capacity)
            if old:
                grown[:old] = getattr(self, name)
            setattr(self, name, grown)

    def _reset_node(self, node):
        totals, sq_devs, counts, scalars, levels = self.state
        totals[node] = sq_devs[node] = 0.0
        counts[node] = 0
        scalars[node] = 0.0
        levels[node] = 1
        self.error_sum[node] = self.error_sq[node] = self.error_count[node] = 0.0

    def growing(self):
        """The tree and the alternates (whose leaves set the batches' length)."""
        return self.learners + [a.learner for a in self.alternates.values()]

    def learn_batch(self, codes, y, w, copies):
        """Learn one batch (``copies``: (2, n_rows) bootstrap copies, the tree's and the
        alternates'); returns the tree's (n_rows, n_classes) predictions from before."""
        main = self.learners[0]
        tree = main.tree
        n_nodes = tree.n_nodes
        parent = np.full(n_nodes, -1, np.int32)
        split = np.flatnonzero(tree.left[:n_nodes] >= 0)
        parent[tree.left[split]] = split
        parent[tree.left[split] + 1] = split
        node_of_row = main.route(codes)
        pred = main.learn(codes, y, w * copies[0], predict=True, node_of_row=node_of_row)
        errors = _errors(main, pred, y)
        if tree.n_nodes > self._capacity:
            self._grow(max(2 * self._capacity, tree.n_nodes))
        raised = np.zeros(self._capacity, np.uint8)
        has_alternate = np.zeros(self._capacity, np.uint8)
        has_alternate[list(self.alternates)] = 1
        regression = not main.classification
        adwin_update_paths(node_of_row, parent, errors, self.delta, ADWIN_CLOCK,
                           ADWIN_MAX_BUCKETS, ADWIN_MIN_LENGTH, ADWIN_GRACE, *self.state,
                           self.error_sum, self.error_sq, self.error_count, has_alternate,
                           regression, raised)
        self._learn_alternates(codes, y, w * copies[1], node_of_row, parent)
        was_split = np.zeros(n_nodes, bool)
        was_split[split] = True
        # a leaf that split this batch is a new branch: river gives it a fresh detector
        for node in np.flatnonzero(~was_split & (tree.left[:n_nodes] >= 0)).tolist():
            self._reset_node(node)
        for node in np.flatnonzero(raised[:n_nodes]).tolist():
            # a split node (leaves watch their error too, but grow no alternate); river's
            # regressor keeps an alternate it has, its classifier starts a new one
            if was_split[node] and tree.left[node] >= 0 and tree.reachable()[node] \
                    and not (regression and node in self.alternates):
                alternate = self.make_learner()
                # a regressor's sums are about its first mean: the tree's, so that the
                # alternate's statistics can be grafted as they are
                alternate.y_offset = main.y_offset
                self.alternates[node] = _Alternate(alternate)
                self.n_alternate_trees += 1
        self.rows_seen += len(y)
        return pred

    def _learn_alternates(self, codes, y, w, node_of_row, parent):
        """Each alternate learns the rows through its node (the others weigh 0), then
        is compared with the node."""
        for node, alt in list(self.alternates.items()):
            if self.alternates.get(node) is not alt:  # gone with a switch above it
                continue
            through = _passes(node_of_row, parent, node)
            pred = alt.learner.learn(codes, y, w * through, predict=True)
            errors = _errors(alt.learner, pred, y)[through]
            alt.error_sum += float(errors.sum())
            alt.error_sq += float(np.sum(errors * errors))
            alt.error_count += float(len(errors))
            self._compare(node, alt)

    def _compare(self, node, alt):
        n_tree, n_alt = self.error_count[node], alt.error_count
        if n_tree <= self.window or n_alt <= self.window:
            return
        tree_error = self.error_sum[node] / n_tree
        alt_error = alt.error_sum / n_alt
        if self.learners[0].classification:
            bound = math.sqrt(2.0 * tree_error * (1.0 - tree_error)
                              * math.log(2.0 / self.significance)
                              * (1.0 / n_alt + 1.0 / n_tree))
            better, worse = bound < tree_error - alt_error, bound < alt_error - tree_error
        else:  # river's regressor: a z-test of the mean absolute errors
            spread = math.sqrt(_variance(alt.error_sum, alt.error_sq, n_alt) / n_alt
                               + _variance(self.error_sum[node], self.error_sq[node],
                                           n_tree) / n_tree)
            z = (alt_error - tree_error) / spread if spread > 0 else 0.0
            significant = math.erfc(abs(z) / math.sqrt(2.0)) <= self.significance
            better, worse = significant and alt_error < tree_error, \
                significant and alt_error >= tree_error
        if better:
            self._switch(node, alt)
        elif worse:
            del self.alternates[node]
            self.n_pruned_alternate_trees += 1

    def _switch(self, node, alt):
        """The alternate's tree takes the node's place (its subtree's alternates go)."""
        main = self.learners[0]
        below = set(main.tree.subtree(node).tolist())
        for other in [m for m in self.alternates if m in below]:
            del self.alternates[other]
        main.graft(node, alt.learner)
        if main.tree.n_nodes > self._capacity:
            self._grow(max(2 * self._capacity, main.tree.n_nodes))
        self._reset_node(node)
        self.error_sum[node], self.error_count[node] = alt.error_sum, alt.error_count
        self.error_sq[node] = alt.error_sq
        self.n_switch_alternate_trees += 1


def _errors(learner, pred, y):
    """(n_rows,) float64: 0/1 wrong classes, or the absolute errors of a regressor."""
    if learner.classification:
        return (pred.argmax(axis=1) != y.astype(np.int64)).astype(np.float64)
    return np.abs(y - pred[:, 0])


def _variance(total, squares, n):
    """Sample variance (n - 1) of ``n`` values from their sum and sum of squares."""
    return max(squares - total * total / n, 0.0) / (n - 1.0) if n > 1 else 0.0


def _passes(node_of_row, parent, node):
    """(n_rows,) bool: the rows whose leaf is ``node`` or below it."""
    n = len(parent)
    below = np.zeros(n, bool)
    below[node] = True
    for m in range(node + 1, n):  # children are numbered after their parents
        if parent[m] >= 0 and below[parent[m]]:
            below[m] = True
    return below[node_of_row]


class BootstrapCopies:
    """river's bootstrap sampling of a Hoeffding adaptive tree: each row learned
    ``max(1, Poisson(1))`` times (a draw of 0 leaves its weight as it is), one stream for
    the tree and one for its alternates (a picklable callable, as ``PoissonDraws``)."""

    def __init__(self, seed, bootstrap=True):
        from .stream import PoissonDraws

        self.draws = PoissonDraws(seed, 2) if bootstrap else None

    def __call__(self, row_start, n_rows):
        if self.draws is None:
            return np.ones((2, n_rows))
        return np.maximum(self.draws(row_start, n_rows), 1.0)


class FreshTrees:
    """Makes a fresh Hoeffding tree (the tree, and each alternate; picklable)."""

    def __init__(self, config, mapper, max_slots):
        self.config, self.mapper, self.max_slots = config, mapper, max_slots

    def __call__(self):
        from .learn import HoeffdingLearner

        return HoeffdingLearner(self.config, self.mapper, self.max_slots)


def new_adaptive_tree(config, mapper, *, drift_delta=0.002, drift_window_threshold=300,
                      switch_significance=0.05, block_rows, code_bytes_per_row,
                      prefetch=None):
    """``(learners, tree)``: the one tree and the :class:`AdaptiveTree` around it;
    histograms planned for the tree and as many alternates. ParameterError names a bad
    setting."""
    from ...errors import ParameterError
    from ...utils.budget import DEFAULT_PREFETCH
    from .adaptive import check_delta
    from .stream import plan_slots

    delta = check_delta("drift_delta", drift_delta)
    significance = check_delta("switch_significance", switch_significance)
    if delta is None or significance is None:
        raise ParameterError("drift_delta and switch_significance must be in (0, 1), "
                             "not None")
    if isinstance(drift_window_threshold, bool) or not isinstance(
            drift_window_threshold, (int, float)) or drift_window_threshold < 0:
        raise ParameterError(f"drift_window_threshold must be a number of rows >= 0, got "
                             f"{drift_window_threshold!r}")
    max_slots = plan_slots(config, mapper, block_rows, code_bytes_per_row,
                           DEFAULT_PREFETCH if prefetch is None else prefetch, n_trees=2)
    make_learner = FreshTrees(config, mapper, max_slots)
    learners = [make_learner()]
    return learners, AdaptiveTree(learners, make_learner, delta, drift_window_threshold,
                                  significance)
