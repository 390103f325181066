"""Numba kernels for learning to rank: LambdaMART gradients and the per-group metrics.

Both work on a run of whole query groups given by local boundaries ``group_ptr``
(``(G + 1,)`` int64 offsets into the row arrays). Within a group the documents are
ranked by decreasing score, ties in row order (a stable sort, as XGBoost's ``ArgSort``).

Gradients (Burges 2010, "From RankNet to LambdaRank to LambdaMART"; XGBoost's
``lambdarank_obj``): for a pair with labels ``y_hi > y_lo`` and scores ``s_hi``, ``s_lo``,
``p = sigmoid(s_hi - s_lo)`` and ``d = |delta metric of swapping the two|`` (1 for
``rank:pairwise``), divided by ``|s_hi - s_lo| + 0.01`` when scores differ within the
group (``lambdarank_score_normalization``)::

    g_hi += (p - 1) d        g_lo -= (p - 1) d        h_hi, h_lo += 2 max(p (1 - p), 1e-16) d

Pairs: ``topk`` takes every pair with at least one document among the model's top ``k``;
``mean`` draws ``n_pairs`` partners with another label for each document. With
``lambdarank_normalization`` a group's gradients are scaled by ``1 / n_pairs`` (mean) or
``log2(1 + L) / L`` with ``L = -2 sum g_hi`` (topk), then every group by its weight times
``n_groups / sum of group weights``.
"""
import math

import numpy as np
from numba import njit, prange

from .sampling import _uniform

#: Objective kinds.
PAIRWISE, NDCG, MAP = 0, 1, 2
#: Metric kinds of :func:`group_scores`.
METRIC_NDCG, METRIC_MAP, METRIC_PRE = 0, 1, 2


@njit(inline="always")
def _gain(y, exp_gain):
    return (2.0 ** y - 1.0) if exp_gain else y


@njit(cache=True)
def _ranked(margin, start, stop):
    """Rows ``start .. stop - 1`` by decreasing margin, ties in row order."""
    return np.argsort(-margin[start:stop], kind="mergesort")


@njit(cache=True)
def _inv_idcg(label, start, stop, k, exp_gain):
    order = np.argsort(-label[start:stop].astype(np.float64), kind="mergesort")
    idcg = 0.0
    for i in range(min(stop - start, k)):
        idcg += _gain(float(label[start + order[i]]), exp_gain) / math.log2(i + 2.0)
    return 0.0 if idcg == 0.0 else 1.0 / idcg


@njit(cache=True)
def _delta(kind, y_hi, y_lo, r_hi, r_lo, inv_idcg, exp_gain, n_rel, acc):
    """|change of the group's metric| when the documents at ranks r_hi (label y_hi)
    and r_lo swap."""
    if kind == PAIRWISE:
        return 1.0
    if kind == NDCG:
        g_hi, g_lo = _gain(y_hi, exp_gain), _gain(y_lo, exp_gain)
        d_hi, d_lo = 1.0 / math.log2(r_hi + 2.0), 1.0 / math.log2(r_lo + 2.0)
        return abs((g_hi - g_lo) * (d_hi - d_lo) * inv_idcg)
    # MAP: the two ranks in list order (a < b), their labels ya, yb
    a, b, ya = r_hi, r_lo, y_hi
    if a > b:
        a, b, ya = r_lo, r_hi, y_lo
    total = n_rel[n_rel.shape[0] - 1]
    ra, rb = a + 1.0, b + 1.0
    m, n = n_rel[b], n_rel[a]
    between = acc[b - 1] - acc[a]
    if ya < 0.5:  # a relevant document moves up from b to a
        return abs(((m / rb - (n + 1.0) / ra) - between) / total)
    return abs(((n / ra - m / rb) + between) / total)


@njit(cache=True)
def _pair(kind, label, margin, start, order, i, j, inv_idcg, exp_gain, n_rel, acc,
          score_norm, grad, hess):
    """Add the pair at ranks i, j to the group's grad/hess; returns ``-2 g_hi``."""
    yi, yj = float(label[start + order[i]]), float(label[start + order[j]])
    if yi == yj:
        return 0.0
    hi, lo = (i, j) if yi > yj else (j, i)
    y_hi, y_lo = max(yi, yj), min(yi, yj)
    s_hi, s_lo = margin[start + order[hi]], margin[start + order[lo]]
    d = _delta(kind, y_hi, y_lo, hi, lo, inv_idcg, exp_gain, n_rel, acc)
    n = order.shape[0]
    if score_norm and margin[start + order[0]] != margin[start + order[n - 1]]:
        d /= abs(s_hi - s_lo) + 0.01
    p = 1.0 / (1.0 + math.exp(-(s_hi - s_lo)))
    g = (p - 1.0) * d
    h = max(p * (1.0 - p), 1e-16) * d * 2.0
    grad[order[hi]] += g
    grad[order[lo]] -= g
    hess[order[hi]] += h
    hess[order[lo]] += h
    return -2.0 * g


@njit(cache=True)
def _map_stats(label, start, order):
    n = order.shape[0]
    n_rel = np.empty(n)
    acc = np.empty(n)
    run_rel = run_acc = 0.0
    for k in range(n):
        y = float(label[start + order[k]])
        run_rel += y
        run_acc += y / (k + 1.0)
        n_rel[k] = run_rel
        acc[k] = run_acc
    return n_rel, acc


@njit(cache=True)
def _group_lambdas(kind, label, margin, start, stop, topk, n_pairs, exp_gain, score_norm,
                   normalization, seed, stream, row0, grad, hess):
    """One group's gradients (unweighted) into ``grad``, ``hess`` (length of the group)."""
    n = stop - start
    order = _ranked(margin, start, stop)
    truncation = topk if topk > 0 else n
    inv_idcg = _inv_idcg(label, start, stop, truncation, exp_gain) if kind == NDCG else 0.0
    if kind == MAP:
        n_rel, acc = _map_stats(label, start, order)
    else:
        n_rel, acc = np.zeros(1), np.zeros(1)
    if kind == MAP and n_rel[n - 1] == 0.0:
        return  # no relevant document: every swap leaves MAP unchanged
    total = 0.0
    if topk > 0:
        for i in range(min(n, topk)):
            for j in range(i + 1, n):
                total += _pair(kind, label, margin, start, order, i, j, inv_idcg, exp_gain,
                               n_rel, acc, score_norm, grad, hess)
    else:
        # ranks sorted by label (descending, stable): buckets of equal labels
        by_label = np.argsort(-label[start + order].astype(np.float64), kind="mergesort")
        i = 0
        while i < n:
            j = i + 1
            y = label[start + order[by_label[i]]]
            while j < n and label[start + order[by_label[j]]] == y:
                j += 1
            outside = i + (n - j)
            if outside > 0:
                for draw in range(n_pairs):
                    for q in range(i, j):
                        # counter-based: one uniform per (document, draw)
                        u = _uniform(seed, stream, (row0 + start + order[by_label[q]])
                                     * n_pairs + draw)
                        pick = min(int(u * outside), outside - 1)
                        if pick >= i:
                            pick += j - i
                        total += _pair(kind, label, margin, start, order, by_label[q],
                                       by_label[pick], inv_idcg, exp_gain, n_rel, acc,
                                       score_norm, grad, hess)
            i = j
    if normalization:
        norm = 1.0
        if topk <= 0:
            norm = 1.0 / n_pairs
        elif total > 0.0:
            norm = math.log2(1.0 + total) / total
        if norm != 1.0:
            for r in range(n):
                grad[r] *= norm
                hess[r] *= norm


@njit(cache=True, parallel=True)
def lambdarank_gradients(kind, group_ptr, label, margin, group_weight, weight_norm, topk,
                         n_pairs, exp_gain, score_norm, normalization, seed, stream, row0,
                         out_grad, out_hess):
    """LambdaMART gradients of whole groups (module docstring).

    Parameters
    ----------
    kind : int                      # PAIRWISE, NDCG or MAP
    group_ptr : (G + 1,) int64      # local boundaries into the row arrays
    label : (n,) float32/float64
    margin : (n,) float64
    group_weight : (G,) float64     # each group's weight
    weight_norm : float             # n_groups / sum of group weights (all of the data)
    topk : int                      # > 0: pairs at the top-k ranks; 0: the mean method
    n_pairs : int                   # partners drawn per document (mean method)
    exp_gain, score_norm, normalization : bool
    seed, stream, row0 : int        # mean-method draws: seed, round, global row of row 0
    out_grad, out_hess : (n,) float32   # OUT
    """
    for g in prange(group_ptr.shape[0] - 1):
        start, stop = group_ptr[g], group_ptr[g + 1]
        grad = np.zeros(stop - start)
        hess = np.zeros(stop - start)
        _group_lambdas(kind, label, margin, start, stop, topk, n_pairs, exp_gain,
                       score_norm, normalization, seed, stream, row0, grad, hess)
        scale = group_weight[g] * weight_norm
        for r in range(stop - start):
            out_grad[start + r] = grad[r] * scale  # OUT
            out_hess[start + r] = hess[r] * scale  # OUT


@njit(cache=True, parallel=True)
def group_scores(kind, group_ptr, label, prediction, k, exp_gain, minus, out):
    """Per-group ``ndcg@k``, ``map@k`` or ``pre@k`` into ``out`` (G,) (XGBoost's
    definitions; ``k <= 0`` means the whole group). A group without relevant documents
    scores 1 (0 with ``minus``) for ndcg and map."""
    for g in prange(group_ptr.shape[0] - 1):
        start, stop = group_ptr[g], group_ptr[g + 1]
        n = stop - start
        top = n if k <= 0 else min(k, n)
        order = _ranked(prediction, start, stop)
        if kind == METRIC_PRE:
            hits = 0.0
            for i in range(top):
                hits += label[start + order[i]]
            out[g] = hits / top  # OUT
        elif kind == METRIC_NDCG:
            inv_idcg = _inv_idcg(label, start, stop, top, exp_gain)
            if inv_idcg <= 0.0:
                out[g] = 0.0 if minus else 1.0  # OUT
                continue
            dcg = 0.0
            for i in range(top):
                dcg += _gain(float(label[start + order[i]]), exp_gain) / math.log2(i + 2.0)
            out[g] = dcg * inv_idcg  # OUT
        else:
            hits = ap = 0.0
            for i in range(n):
                y = label[start + order[i]]
                hits += y
                if i < top:
                    ap += hits / (i + 1.0) * y
            if hits > 0.0:
                out[g] = ap / min(hits, top if k > 0 else n)  # OUT
            else:
                out[g] = 0.0 if minus else 1.0  # OUT
