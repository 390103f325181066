"""A small batch of a streaming tree (a Hoeffding tree's ``partial_fit`` of a few rows)
in a few serial calls instead of the block kernels' parallel sweeps.

The block kernels (``partition.route_to_leaves``, ``partition_select_rows``,
``histogram.build_histograms_selected``) launch a parallel region each, list the rows
and walk them by feature groups: for ten rows the launches and the Python around them
were most of a call (three parallel launches ~60 us, 2 ms each on a machine whose
cores are busy). Here a batch is routed to its leaves, predicted, and added into its
leaves' histograms and statistics row by row, on the calling thread. Every sum is made in
the same order as there (a histogram cell and a node's totals add their rows in row
order, from the value they held), so both ways give the same tree, bit for bit.
"""
import numpy as np
from numba import njit

from .codes import read_code
from .partition import _move_row, _tree_kinds


@njit(cache=True, nogil=True)
def row_stats(y, w, n_classes, y_offset, out):
    """Each row's statistics: its weight in its class's lane (``y`` class indices), or
    with ``n_classes`` 0 ``(w, w c, w c^2)`` of its target about ``y_offset`` (``c = y -
    y_offset``); the last lane 1 for a row of positive weight (its count).

    Parameters
    ----------
    y, w : ndarray (n_rows,) float64                                            # IN
    n_classes : int, 0 for a regressor
    y_offset : float
    out : ndarray (n_rows, n_stats) float32, zeros                              # OUT
    """
    count = out.shape[1] - 1
    for i in range(y.shape[0]):
        if n_classes > 0:
            out[i, np.int64(y[i])] = w[i]
        else:
            centred = y[i] - y_offset
            out[i, 0] = w[i]
            out[i, 1] = w[i] * centred
            out[i, 2] = w[i] * centred * centred
        out[i, count] = 1.0 if w[i] > 0 else 0.0


@njit(cache=True, nogil=True)
def route_rows_serial(low, wide, wide_row, route, cat_bitset, missing_bin, node_of_row):
    """Each row from the root down to its leaf of one tree (``partition.route_to_leaves``
    of one tree, serially).

    Parameters
    ----------
    low, wide, wide_row : ``codes.code_arrays`` of the block's codes          # IN
    route : ndarray (1, capacity, 4) int32, one tree's routes                  # IN
    cat_bitset : ndarray (1, capacity, n_words) uint32                         # IN
    missing_bin : int
    node_of_row : ndarray (n_rows,) int32                                       # OUT
    """
    kind = _tree_kinds(route, wide_row)[0]
    for i in range(node_of_row.shape[0]):
        node = np.int64(0)
        while True:
            child = _move_row(low, wide, wide_row, i, node, route[0], cat_bitset[0],
                              missing_bin, kind)
            if child == node:
                break
            node = child
        node_of_row[i] = node


@njit(cache=True, nogil=True)
def majority_predictions(dist, node_of_row, n_classes, y_offset, out):
    """Each row's prediction from its leaf's statistics: the class weights normalised
    (uniform at a leaf without weight), or, with ``n_classes`` 0, the mean target
    (``w y / w``, 0 without weight) plus ``y_offset``.

    Parameters
    ----------
    dist : ndarray (n_nodes, n_stats) float64, a node's class weights then count, or
        (w, w y, w y^2, count)                                                  # IN
    node_of_row : ndarray (n_rows,) int32                                       # IN
    n_classes : int, 0 for a regressor
    y_offset : float
    out : ndarray (n_rows, max(n_classes, 1)) float64                           # OUT
    """
    for i in range(node_of_row.shape[0]):
        node = node_of_row[i]
        if n_classes == 0:
            w = dist[node, 0]
            mean = dist[node, 1] / w if w > 0 else 0.0
            out[i, 0] = mean + y_offset
            continue
        total = 0.0
        for k in range(n_classes):
            total += dist[node, k]
        for k in range(n_classes):
            out[i, k] = dist[node, k] / total if total > 0 else 1.0 / n_classes


@njit(cache=True, nogil=True)
def add_rows_at_leaves(low, wide, wide_row, node_of_row, stats, slot, column_of, hist,
                       totals, dist, hist_sums):
    """Add each row's statistics into its leaf's histogram (when the leaf holds one) and
    into ``totals``, the batch's sums per node; then the totals into each node's
    statistics ``dist`` and, for a node holding a histogram, into its slot's sums.

    Parameters
    ----------
    low, wide, wide_row : ``codes.code_arrays`` of the block's codes          # IN
    node_of_row : ndarray (n_rows,) int32                                       # IN
    stats : ndarray (n_rows, n_stats) float32                                   # IN
    slot : ndarray (n_nodes,) int32, histogram slot of each node or -1          # IN
    column_of : ndarray (n_features + 1,) int64, first histogram column of each
        feature (a code ``b`` is bin ``b % max_bin`` of column ``column_of[f] + b //
        max_bin``)                                                              # IN
    hist : ndarray (n_slots, n_columns, max_bin, width >= n_stats) float64  # IN/OUT
    totals : ndarray (n_nodes, n_stats) float64, zeros                         # IN/OUT
    dist : ndarray (>= n_nodes, n_stats) float64                                # IN/OUT
    hist_sums : ndarray (n_slots, n_stats) float64                              # IN/OUT
    """
    n_features = column_of.shape[0] - 1
    n_bins = hist.shape[2]
    n_stats = stats.shape[1]
    for i in range(node_of_row.shape[0]):
        node = node_of_row[i]
        for m in range(n_stats):
            totals[node, m] += np.float64(stats[i, m])
        s = slot[node]
        if s < 0:
            continue
        for f in range(n_features):
            code = read_code(low, wide, wide_row, f, i)
            column = column_of[f] + code // n_bins
            b = code - (code // n_bins) * n_bins
            for m in range(n_stats):
                hist[s, column, b, m] += np.float64(stats[i, m])
    for node in range(totals.shape[0]):
        s = slot[node]
        for m in range(n_stats):
            dist[node, m] += totals[node, m]
            if s >= 0:
                hist_sums[s, m] += totals[node, m]


@njit(cache=True, nogil=True)
def due_leaves(left, slot, can_grow, reachable, dist, checked_at, period, n_classes):
    """How many reachable leaves holding a histogram, still able to grow, have seen at
    least ``period`` of weight since their last attempt (``checked_at``). The weight of
    a node is its class weights' sum (``n_classes`` > 0) or its ``w``.

    A shortcut for the caller, which makes the attempts (and the exact test) only when
    some leaf is due: the test here leaves a relative 1e-9 of slack so that a sum made
    in another order cannot miss a leaf."""
    count = 0
    for node in range(left.shape[0]):
        if left[node] >= 0 or slot[node] < 0 or not can_grow[node] or not reachable[node]:
            continue
        w = _node_weight(dist, node, n_classes)
        if w - checked_at[node] >= period - 1e-9 * (abs(w) + period):
            count += 1
    return count


@njit(cache=True, nogil=True)
def waiting_leaves(left, slot, can_grow, reachable):
    """How many reachable leaves still able to grow hold no histogram (waiting for a
    slot to come free)."""
    count = 0
    for node in range(left.shape[0]):
        if left[node] < 0 and slot[node] < 0 and can_grow[node] and reachable[node]:
            count += 1
    return count


@njit(inline="always")
def _node_weight(sums, node, n_classes):
    if n_classes == 0:
        return sums[node, 0]
    w = 0.0
    for k in range(n_classes):
        w += sums[node, k]
    return w


@njit(cache=True, nogil=True)
def rows_until_due(left, slot, can_grow, reachable, dist, checked_at, share, hist_sums,
                   n_classes, period, slack, row_weight, staleness):
    """Rows until the first leaf that can split is expected to be due: its ``period``
    of new weight (less what it has) plus ``slack``, at its ``share`` of a row's weight
    ``row_weight``; with ``staleness`` > 0 (naive Bayes leaves) no more than that
    fraction of what its histogram holds (at least ``slack``). inf when no such leaf
    has a share. Leaves as :func:`due_leaves`' (``hist_sums`` by slot)."""
    best = np.inf
    for node in range(left.shape[0]):
        if left[node] >= 0 or slot[node] < 0 or not can_grow[node] or not reachable[node]:
            continue
        if not share[node] > 0:
            continue
        pace = share[node] * row_weight
        pending = period - (_node_weight(dist, node, n_classes) - checked_at[node])
        rows = (max(pending, 0.0) + slack) / pace
        if staleness > 0:
            held = _node_weight(hist_sums, slot[node], n_classes)
            rows = min(rows, max(staleness * held, slack) / pace)
        best = min(best, rows)
    return best


@njit(cache=True, nogil=True)
def class_scores(pred, y, w):
    """``(accuracy, log_loss)`` sums of class probabilities ``pred`` (n_rows, K) against
    class indices ``y``, weighted by ``w`` (a row is right when its most probable class,
    the first of ties, is its class; probabilities are clipped to [1e-15, 1])."""
    right = 0.0
    loss = 0.0
    for i in range(pred.shape[0]):
        k = np.int64(y[i])
        best = 0
        for j in range(1, pred.shape[1]):
            if pred[i, j] > pred[i, best]:
                best = j
        if best == k:
            right += w[i]
        loss -= w[i] * np.log(min(max(pred[i, k], 1e-15), 1.0))
    return right, loss


@njit(cache=True, nogil=True)
def regression_scores(pred, y, w):
    """``(squared error, absolute error)`` sums of ``pred[:, 0]`` against ``y``,
    weighted by ``w``."""
    squared = 0.0
    absolute = 0.0
    for i in range(pred.shape[0]):
        err = pred[i, 0] - y[i]
        squared += w[i] * err * err
        absolute += w[i] * abs(err)
    return squared, absolute
