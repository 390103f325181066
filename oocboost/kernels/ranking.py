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
from .sorting import stable_argsort

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
    return stable_argsort(-margin[start:stop])


@njit(cache=True)
def _inv_idcg(label, start, stop, k, exp_gain):
    order = stable_argsort(-label[start:stop].astype(np.float64))
    idcg = 0.0
    for i in range(min(stop - start, k)):
        idcg += _gain(float(label[start + order[i]]), exp_gain) / math.log2(i + 2.0)
    return 0.0 if idcg == 0.0 else 1.0 / idcg


@njit(inline="always")
def _delta_map(a_relevant, ra, rb, n_a, n_b, between, total):
    """|change of average precision| when the documents at ranks ``ra < rb`` (1-based)
    swap: ``n_a``, ``n_b`` relevant documents up to each, ``between`` the sum of
    ``y_k / k`` strictly between them, ``total`` relevant documents in the group."""
    if not a_relevant:  # a relevant document moves up from rb to ra
        return abs(((n_b / rb - (n_a + 1.0) / ra) - between) / total)
    return abs(((n_a / ra - n_b / rb) + between) / total)


@njit(cache=True)
def _pairs(ry, topk, n_pairs, seed, stream, rows):
    """Rank positions ``(first, second)`` of the pairs of one group: every pair with one
    document in the top ``topk``, or (``topk = 0``) ``n_pairs`` random partners with
    another label for each document (``rows``: each rank's global row, for the draws)."""
    n = ry.shape[0]
    if topk > 0:
        top = min(n, topk)
        count = top * n - top * (top + 1) // 2
        first = np.empty(count, np.int64)
        second = np.empty(count, np.int64)
        c = 0
        for i in range(top):
            for j in range(i + 1, n):
                first[c] = i
                second[c] = j
                c += 1
        return first, second
    first = np.empty(n * n_pairs, np.int64)
    second = np.empty(n * n_pairs, np.int64)
    by_label = stable_argsort(-ry)  # buckets of equal labels
    c = 0
    i = 0
    while i < n:
        j = i + 1
        while j < n and ry[by_label[j]] == ry[by_label[i]]:
            j += 1
        outside = i + (n - j)
        if outside > 0:
            for draw in range(n_pairs):
                for q in range(i, j):
                    # counter-based: one uniform per (document, draw)
                    u = _uniform(seed, stream, rows[by_label[q]] * n_pairs + draw)
                    pick = min(int(u * outside), outside - 1)
                    if pick >= i:
                        pick += j - i
                    first[c] = by_label[q]
                    second[c] = by_label[pick]
                    c += 1
        i = j
    return first[:c], second[:c]


@njit(cache=True)
def _map_stats(ry):
    n = ry.shape[0]
    n_rel = np.empty(n)
    acc = np.empty(n)
    run_rel = run_acc = 0.0
    for k in range(n):
        run_rel += ry[k]
        run_acc += ry[k] / (k + 1.0)
        n_rel[k] = run_rel
        acc[k] = run_acc
    return n_rel, acc


@njit(cache=True)
def _group_lambdas(kind, label, margin, start, stop, topk, n_pairs, exp_gain, score_norm,
                   normalization, seed, stream, row0, grad, hess):
    """One group's gradients (unweighted) into ``grad``, ``hess``, by rank; returns the
    rows by rank (``order``) to map them back."""
    n = stop - start
    order = _ranked(margin, start, stop)
    ry = np.empty(n)
    rm = np.empty(n)
    gain = np.empty(n)
    disc = np.empty(n)
    rows = np.empty(n, np.int64)
    for r in range(n):
        ry[r] = label[start + order[r]]
        rm[r] = margin[start + order[r]]
        gain[r] = _gain(ry[r], exp_gain)
        disc[r] = 1.0 / math.log2(r + 2.0)
        rows[r] = row0 + start + order[r]
    inv_idcg = _inv_idcg(label, start, stop, topk if topk > 0 else n, exp_gain) \
        if kind == NDCG else 0.0
    n_rel, acc = disc, disc  # read by rank:map only
    if kind == MAP:
        n_rel, acc = _map_stats(ry)
        if n_rel[n - 1] == 0.0:
            return order  # no relevant document: every swap leaves MAP unchanged
    score_norm = score_norm and rm[0] != rm[n - 1]
    first, second = _pairs(ry, topk, n_pairs, seed, stream, rows)
    total = 0.0
    for c in range(first.shape[0]):
        i, j = first[c], second[c]
        if ry[i] == ry[j]:
            continue
        hi, lo = (i, j) if ry[i] > ry[j] else (j, i)
        if kind == PAIRWISE:
            d = 1.0
        elif kind == NDCG:
            d = abs((gain[hi] - gain[lo]) * (disc[hi] - disc[lo]) * inv_idcg)
        else:
            a, b = min(hi, lo), max(hi, lo)
            d = _delta_map(ry[a] > 0.5, a + 1.0, b + 1.0, n_rel[a], n_rel[b],
                           acc[b - 1] - acc[a], n_rel[n - 1])
        if score_norm:
            d /= abs(rm[hi] - rm[lo]) + 0.01
        p = 1.0 / (1.0 + math.exp(rm[lo] - rm[hi]))
        g = (p - 1.0) * d
        h = max(p * (1.0 - p), 1e-16) * d * 2.0
        grad[hi] += g
        grad[lo] -= g
        hess[hi] += h
        hess[lo] += h
        total -= 2.0 * g
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
    return order


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
        order = _group_lambdas(kind, label, margin, start, stop, topk, n_pairs, exp_gain,
                               score_norm, normalization, seed, stream, row0, grad, hess)
        scale = group_weight[g] * weight_norm
        for r in range(stop - start):
            out_grad[start + order[r]] = grad[r] * scale  # OUT
            out_hess[start + order[r]] = hess[r] * scale  # OUT


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
