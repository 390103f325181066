"""ADWIN, the adaptive-window change detector (Bifet and Gavaldà 2007, its compressed
form ADWIN2), for many detectors at once: each keeps a window of its recent values
summarised as an exponential histogram and drops the oldest part when the window's two
sides differ in mean by more than a bound.

A detector's window is held in buckets: level ``l`` keeps up to ``max_buckets`` (+1
while merging) buckets of ``2^l`` values, oldest first, each with its values' total and
the sum of their squared deviations from their mean::

    level 2:  [t v] [t v]            <- oldest (4 values each)
    level 1:  [t v] [t v] [t v]
    level 0:  [t v] [t v]            <- newest (1 value each)

A new value enters level 0; a level that reaches ``max_buckets + 1`` buckets merges its
two oldest into one bucket of the next level (totals add; squared deviations add with
``n/2 (mu_a - mu_b)^2``, n the buckets' size). Every ``clock`` values, once the window
holds more than ``grace_period`` values, each cut between buckets splits it into an older
``W0`` (``n0`` values, mean ``mu0``) and a newer ``W1``; the window changed when, for a
cut with both sides of at least ``min_window_length`` values::

    |mu0 - mu1| > sqrt(2 m sigma^2 d) + 2/3 d m,     d = ln(2 ln(n) / delta),
    m = 1/(n0 - min_window_length + 1) + 1/(n1 - min_window_length + 1)

(``sigma^2`` the window's variance, ``n`` its width). Then the oldest bucket is dropped
and the cuts are tested again, until none differs. As river's ``drift.ADWIN``, a
detector that reported a change starts again empty at its next value.

State of detector ``d`` (the caller allocates it with :func:`new_state` shapes)::

    totals, sq_devs : (n_detectors, MAX_LEVELS, max_buckets + 1) float64
    counts          : (n_detectors, MAX_LEVELS) int64   buckets per level
    scalars         : (n_detectors, 5) float64          total, squared deviations,
                                                         width, ticks, detections
    levels          : (n_detectors,) int64               levels in use
"""
import numpy as np
from numba import njit

#: Levels of buckets a window may use (2^60 values).
MAX_LEVELS = 60
TOTAL, SQ_DEV, WIDTH, TICKS, DETECTIONS = 0, 1, 2, 3, 4


def new_state(n_detectors, max_buckets):
    """Zeroed arrays for ``n_detectors`` empty windows:
    ``(totals, sq_devs, counts, scalars, levels)``."""
    return (np.zeros((n_detectors, MAX_LEVELS, max_buckets + 1)),
            np.zeros((n_detectors, MAX_LEVELS, max_buckets + 1)),
            np.zeros((n_detectors, MAX_LEVELS), np.int64),
            np.zeros((n_detectors, 5)),
            np.ones(n_detectors, np.int64))


@njit(cache=True)
def _clear(d, totals, sq_devs, counts, scalars, levels):
    totals[d] = 0.0
    sq_devs[d] = 0.0
    counts[d] = 0
    detections = scalars[d, DETECTIONS]
    scalars[d] = 0.0
    scalars[d, DETECTIONS] = detections
    levels[d] = 1


@njit(cache=True)
def _shift_out(d, level, n_out, totals, sq_devs, counts):
    """Drop the ``n_out`` oldest buckets of ``level``."""
    c = counts[d, level]
    for k in range(c - n_out):
        totals[d, level, k] = totals[d, level, k + n_out]
        sq_devs[d, level, k] = sq_devs[d, level, k + n_out]
    for k in range(c - n_out, c):
        totals[d, level, k] = 0.0
        sq_devs[d, level, k] = 0.0
    counts[d, level] = c - n_out


@njit(cache=True)
def _insert(d, value, totals, sq_devs, counts, scalars, levels, max_buckets):
    width = scalars[d, WIDTH] + 1.0
    if width > 1.0:
        diff = value - scalars[d, TOTAL] / (width - 1.0)
        scalars[d, SQ_DEV] += (width - 1.0) * diff * diff / width
    scalars[d, WIDTH] = width
    scalars[d, TOTAL] += value
    c = counts[d, 0]
    totals[d, 0, c] = value
    sq_devs[d, 0, c] = 0.0
    counts[d, 0] = c + 1
    level = 0
    while counts[d, level] == max_buckets + 1 and level + 1 < totals.shape[1]:
        size = float(1 << level)
        t0, t1 = totals[d, level, 0], totals[d, level, 1]
        gap = t0 / size - t1 / size
        merged_sq = sq_devs[d, level, 0] + sq_devs[d, level, 1] + size * 0.5 * gap * gap
        up = level + 1
        if up >= levels[d]:
            levels[d] = up + 1
        cu = counts[d, up]
        totals[d, up, cu] = t0 + t1
        sq_devs[d, up, cu] = merged_sq
        counts[d, up] = cu + 1
        _shift_out(d, level, 2, totals, sq_devs, counts)
        level = up


@njit(cache=True)
def _drop_oldest(d, totals, sq_devs, counts, scalars, levels):
    top = levels[d] - 1
    size = float(1 << top)
    t, v = totals[d, top, 0], sq_devs[d, top, 0]
    width = scalars[d, WIDTH] - size
    total = scalars[d, TOTAL] - t
    scalars[d, WIDTH] = width
    scalars[d, TOTAL] = total
    gap = t / size - total / width
    scalars[d, SQ_DEV] -= v + size * width * gap * gap / (size + width)
    _shift_out(d, top, 1, totals, sq_devs, counts)
    if counts[d, top] == 0 and top > 0:
        levels[d] = top


@njit(cache=True)
def _cut_differs(n0, n1, mean_gap, width, sq_dev, delta, min_length):
    d = np.log(2.0 * np.log(width) / delta)
    m = 1.0 / (n0 - min_length + 1.0) + 1.0 / (n1 - min_length + 1.0)
    bound = np.sqrt(2.0 * m * (sq_dev / width) * d) + 2.0 / 3.0 * d * m
    return abs(mean_gap) > bound


@njit(cache=True)
def _check(d, totals, sq_devs, counts, scalars, levels, delta, min_length):
    """Drop the oldest buckets while a cut differs; whether one did."""
    changed = False
    again = True
    while again:
        again = False
        n0, u0 = 0.0, 0.0
        n1, u1 = scalars[d, WIDTH], scalars[d, TOTAL]
        for level in range(levels[d] - 1, -1, -1):
            size = float(1 << level)
            c = counts[d, level]
            for k in range(c):
                n0 += size
                n1 -= size
                u0 += totals[d, level, k]
                u1 -= totals[d, level, k]
                if level == 0 and k == c - 1:
                    break
                if n1 >= min_length and n0 >= min_length and _cut_differs(
                        n0, n1, u0 / n0 - u1 / n1, scalars[d, WIDTH], scalars[d, SQ_DEV],
                        delta, min_length):
                    changed = True
                    if scalars[d, WIDTH] > 0.0:
                        _drop_oldest(d, totals, sq_devs, counts, scalars, levels)
                        again = True
                    break
            if again:
                break
    return changed


@njit(cache=True)
def _update_one(d, value, delta, clock, max_buckets, min_length, grace_period, totals,
                sq_devs, counts, scalars, levels):
    """One value into detector ``d``; whether it reported a change."""
    if scalars[d, DETECTIONS] < 0.0:     # reported a change at its last value
        scalars[d, DETECTIONS] = -scalars[d, DETECTIONS]
        _clear(d, totals, sq_devs, counts, scalars, levels)
    _insert(d, value, totals, sq_devs, counts, scalars, levels, max_buckets)
    scalars[d, TICKS] += 1.0
    hit = False
    if scalars[d, TICKS] % clock == 0 and scalars[d, WIDTH] > grace_period:
        hit = _check(d, totals, sq_devs, counts, scalars, levels, delta, min_length)
    if hit:  # counted, and marked negative: the next value starts a new window
        scalars[d, DETECTIONS] = -(scalars[d, DETECTIONS] + 1.0)
    return hit


@njit(cache=True)
def adwin_update(detector, values, delta, clock, max_buckets, min_length, grace_period,
                 totals, sq_devs, counts, scalars, levels, changed):
    """Feed ``values`` in order to one detector; ``changed[i] = 1`` where value ``i``
    made it report a change (it then starts again empty at value ``i + 1``).

    Parameters
    ----------
    detector : int                                   # IN, index into the state arrays
    values : ndarray (n,) float64                    # IN, e.g. 1.0 for a wrong prediction
    delta : float                                    # IN, confidence (river's 0.002)
    clock : int                                      # IN, values between two checks (32)
    max_buckets : int                                # IN, buckets a level keeps (5)
    min_length : float                               # IN, fewest values a side (5)
    grace_period : float                             # IN, values before any check (10)
    totals, sq_devs, counts, scalars, levels         # IN/OUT, module docstring
    changed : ndarray (n,) uint8                     # OUT
    """
    for i in range(values.shape[0]):
        hit = _update_one(detector, values[i], delta, clock, max_buckets, min_length,
                          grace_period, totals, sq_devs, counts, scalars, levels)
        changed[i] = 1 if hit else 0


@njit(cache=True)
def _estimate(d, scalars):
    """Detector ``d``'s mean over its window (0 when empty)."""
    if scalars[d, WIDTH] <= 0.0:
        return 0.0
    return scalars[d, TOTAL] / scalars[d, WIDTH]


@njit(cache=True)
def adwin_update_paths(node_of_row, parent, errors, delta, clock, max_buckets, min_length,
                       grace_period, totals, sq_devs, counts, scalars, levels, error_sum,
                       error_sq, error_count, has_alternate, keep_on_rise, raised):
    """Each row's error into the detector of every node on its path (a Hoeffding
    adaptive tree's), rows in order, and each node's error sums since its last change.

    A change is a rise when the detector's mean over the window left after the cut is
    above its mean before the row (MOA's rule; river compares the node's mean error
    before and after the one row, which calls a change detected on a correct row a fall
    whatever the window says). A rise sets ``raised[node]``; any change starts the
    node's sums again, except a rise at a node that has an alternate when
    ``keep_on_rise`` (river's regressor keeps them; its classifier starts them again).

    Parameters
    ----------
    node_of_row : ndarray (n_rows,) int32       # IN, the leaf of each row
    parent : ndarray (n_nodes,) int32           # IN, -1 at the root; detector = node id
    errors : ndarray (n_rows,) float64          # IN, 0/1 wrong, or |y - prediction|
    delta ... levels                            # IN/OUT, as :func:`adwin_update`
    error_sum, error_sq, error_count : ndarray (n_nodes,) float64   # IN/OUT, sums of
                                                # errors, of squared errors, and rows
    has_alternate : ndarray (n_nodes,) uint8    # IN
    keep_on_rise : bool                         # IN
    raised : ndarray (n_nodes,) uint8           # IN/OUT
    """
    for i in range(node_of_row.shape[0]):
        value = errors[i]
        node = node_of_row[i]
        while node >= 0:
            # a detector that reported a change at its last value starts again empty
            before = 0.0 if scalars[node, DETECTIONS] < 0.0 else _estimate(node, scalars)
            hit = _update_one(node, value, delta, clock, max_buckets, min_length,
                              grace_period, totals, sq_devs, counts, scalars, levels)
            error_sum[node] += value
            error_sq[node] += value * value
            error_count[node] += 1.0
            if hit:
                rose = _estimate(node, scalars) > before
                if rose:
                    raised[node] = 1
                if not (rose and keep_on_rise and has_alternate[node]):
                    error_sum[node] = 0.0
                    error_sq[node] = 0.0
                    error_count[node] = 0.0
            node = parent[node]
