"""Split search on histograms: XGBoost second-order gain and CART impurity criteria.

The splitter sees only histograms and node sums, never rows. For every evaluated node it
returns the best split over the allowed features, with a learned direction for missing
values and categorical splits given as a bitset of the categories that go left.

Layout::

    hist[slot, feature, bin, stat]   float64, (n_slots, n_features, max_bin, width)
                                     (width >= n_stats: see common.hist_width)
    node_sums[slot, stat]            float64, (n_slots, n_stats), totals incl. missing rows
    slots[e]                         int32,   (n_eval,), the slots to evaluate
    feature_mask[e, feature]         bool,    (n_eval, n_features), colsample / max_features

Bins of feature ``f``: value codes ``0 .. n_value_bins[f] - 1`` and the missing code
``missing_bin = max_bin - 1`` (see ``oocboost/common.py``); codes in between are empty.

Outputs (one row per evaluated node ``e``)::

    gain / improvement[e]    float64   -inf when the node has no valid split
    feature[e]               int32     -1 when no valid split
    bin_idx[e]               int32     numeric: ``code <= bin_idx`` goes left; -1 categorical
    default_left[e]          bool      where missing values (and, see below, unseen codes) go
    is_cat[e]                bool
    cat_bitset[e, w]         uint32    (n_eval, n_words), n_words = ceil(max_bin / 32);
                                       bit c of word c >> 5 set <=> category code c goes left
    left_sums[e, stat]       float64   (n_eval, n_stats), right_sums = node_sums - left_sums

``bin_idx == n_value_bins[f] - 1`` means "every non-missing value goes left, missing goes
right" (raw threshold +inf). Each kernel fully overwrites its output rows.

Ties: within a feature the first candidate in the scan order below wins (strict ``>``);
across features the smallest feature index wins (XGBoost's ``SplitEntry::NeedReplace``).
Candidate scans skip empty bins: such a candidate is the same partition as an earlier
one, so skipping it leaves the choice unchanged. CART bins carry a row count, which is
exact after histogram subtraction, so a bin emptied by subtraction (holding 1e-17 in its
other statistics) is skipped too. Boosting bins hold only (G, H), as XGBoost's and
LightGBM's do: a bin is empty when both sums are exactly 0, and a bin emptied by
subtraction may hold float noise and is scanned, as XGBoost scans every bin. Its candidate
is the partition of the node's rows an earlier bin gives, with a gain equal up to that
noise; when the noise makes it win, the threshold lies later within a range of values
the node has no rows in, which only moves where unseen values in that range go.

Boosting (``find_splits_gradient``), n_stats = 2 = (sum gradient G, sum hessian H)
---------------------------------------------------------------------------------------
Semantics of XGBoost's ``hist`` updater (``src/tree/hist/evaluate_splits.h``, checked
against xgboost 3.2)::

    T(G)          = sign(G) * max(|G| - alpha, 0)                     (ThresholdL1)
    w(G, H)       = 0 if H < min_child_weight or H <= 0, else -T(G) / (H + lambda),
                    clipped to [-max_delta_step, max_delta_step] when max_delta_step > 0
    score(G, H)   = 0                               if H <= 0
                  = T(G)^2 / (H + lambda)           if max_delta_step == 0
                  = -(2 G w + (H + lambda) w^2)     otherwise, w = w(G, H), raw G (this is
                                                    XGBoost's CalcGainGivenWeight; with
                                                    alpha > 0 it is not T(G)^2/(H+lambda)
                                                    even without clipping)
    gain          = score(G_L, H_L) + score(G_R, H_R) - score(G, H)

This is twice Eq. 7 of Chen & Guestrin (2016) without the ``- gamma``: XGBoost reports
this ``loss_chg`` as the node's "Gain"; ``policies.GradientPolicy`` splits only when
``gain > max(gamma, 1e-6)`` (XGBoost's kRtEps; XGBoost prunes when ``loss_chg <
min_split_loss``, so ours differs only for a gain exactly equal to gamma; no 1/2 factor
is applied anywhere).
A candidate is valid when both children have ``H > 0`` and ``H >= min_child_weight`` (XGBoost checks ``H >= min_child_weight`` during the scan and
rejects a chosen split with a zero-hessian child when expanding). Non-finite gains are
skipped. Sums are float64 throughout (XGBoost rounds gains to float32).

Numerical feature, two scans (XGBoost ``EnumerateSplit<+1>`` then ``<-1>``)::

    forward  (missing -> right, default_left=False): b = 0 .. nvb-1 ascending,
             left = bins 0..b, candidate only when bin b is non-empty
    backward (missing -> left,  default_left=True), only if the node has missing rows:
             right = bins i..nvb-1 for i = nvb-1 .. 1 descending, reported as b = i - 1,
             candidate only when bin i is non-empty

So with equal partitions the forward scan reports the lowest bin (threshold right after
the last left value) and the backward scan the highest (right before the first right
value), as XGBoost does. A node without missing rows gets ``default_left = False``.
XGBoost's backward candidate at i = 0 (only missing rows left) mirrors the forward
candidate at the last bin and is not evaluated.

Categorical feature with ``n_value_bins[f] < max_cat_to_onehot`` (strict, XGBoost's
``UseOneHot``): one-vs-rest. For each category code c ascending (empty ones included, as
XGBoost does): (1) c goes RIGHT, everything else and missing left (default_left=True);
(2) c and missing go right (default_left=False). The left bitset is every value code but
c. With no missing rows (1) and (2) tie and (1) wins.

Categorical feature with ``n_value_bins[f] >= max_cat_to_onehot``: XGBoost's partition
search. All value codes 0..nvb-1 (empty ones included, weight 0) are stable-sorted by
ascending w(G_c, H_c) (XGBoost's ``CalcWeightCat``); with k_max = min(max_cat_threshold,
nvb) - 1 prefixes::

    forward : right = sorted[:k], k = 1..k_max, missing -> left  (default_left=True)
    backward: left  = sorted[nvb-k:], k = 1..k_max, missing -> right (default_left=False)

Both scans always run. The left bitset is the complement of the right set within
0..nvb-1 (XGBoost stores the right set; ours is the left set, see internals.md).

CART (``find_splits_cart``): scikit-learn's BestSplitter semantics (sklearn >= 1.3)
--------------------------------------------------------------------------------
Classification: n_stats = K + 1, stats[0..K-1] weighted class counts, stats[K] the count
of rows with positive weight. Regression: n_stats = 4 = (sum w, sum w*y, sum w*y^2,
count). Impurities (Breiman et al. 1984, as scikit-learn computes them, ``_criterion.pyx``)::

    gini          1 - sum_k c_k^2 / W^2                    W = sum_k c_k
    entropy       -sum_{c_k > 0} p_k * ln(p_k) / ln(2)     p_k = c_k / W  (log base 2)
    squared_error S2 / W - (S / W)^2                        (W, S, S2) = stats[0:3]

Choice is by scikit-learn's proxy: classification ``-(W_R * imp_R + W_L * imp_L)``,
squared error ``S_L^2 / W_L + S_R^2 / W_R``. For the chosen split the real decrease is::

    impurity_decrease = W / W_total * (imp - W_R / W * imp_R - W_L / W * imp_L)

(W = node weight incl. missing rows, W_total = ``total_weight``, the root's weight) which
the grower compares with ``min_impurity_decrease`` and sums into feature importances.
Valid: ``count_L, count_R >= max(1, min_samples_leaf)`` and ``W_L, W_R > 0`` and
``W_L, W_R >= min_weight_leaf`` (= min_weight_fraction_leaf * total weight).

Numerical feature, scikit-learn's order: pass A, missing right, thresholds b ascending
over non-empty bins b that leave a non-empty non-missing right part; pass B (only with
missing rows) the same thresholds with missing left; pass C (only with missing rows):
all non-missing left, missing right (``bin_idx = nvb - 1``, threshold +inf). When the
node has no missing rows, ``default_left = count_L > count_R`` (scikit-learn sends missing
values to the child with more samples; a tie goes right). scikit-learn visits features
in a random order, so its ties between features are random; ours go to the lowest index.

Extra trees: ``random_bin[e, f] >= 0`` restricts numeric feature f to the single
threshold ``code <= random_bin[e, f]`` (passes A and B only; valid only when both sides
hold non-missing rows, and the missing direction is still learned, unlike scikit-learn's
random direction). ``random_bin[e, f] == -1`` is the best search; an empty (0, 0) array
means best search everywhere. ``draw_random_bins`` maps uniforms to thresholds uniform
over the node's range of non-empty bins. Categorical features ignore ``random_bin``.

Categorical feature (CART): only categories non-empty in the node are candidates. For
regression and for binary classification they are stable-sorted by mean response (S/W,
or the weighted share of class 1) and the prefixes ``sorted[:k]``, k = 1..m-1, go left
(Breiman's shortcut, exact for these cases); for K > 2 classes each category alone goes
left (one-vs-rest). Same passes A, B, C as numeric features (pass C: all non-missing
categories left, missing right). Categories empty in the node go where missing values go
(their bits are set iff ``default_left``).
"""
import math

import numpy as np
from numba import njit, prange

CRITERION_GINI = 0
CRITERION_ENTROPY = 1
CRITERION_SQUARED_ERROR = 2
#: Name -> ``criterion_code`` of :func:`find_splits_cart`.
CRITERIA = {"gini": CRITERION_GINI, "entropy": CRITERION_ENTROPY,
            "squared_error": CRITERION_SQUARED_ERROR}

#: XGBoost's default ``max_cat_to_onehot`` and ``max_cat_threshold``.
DEFAULT_MAX_CAT_TO_ONEHOT = 4
DEFAULT_MAX_CAT_THRESHOLD = 64

_LN2 = math.log(2.0)


def n_bitset_words(max_bin):
    """Number of uint32 words of a categorical bitset over ``max_bin`` codes."""
    return (int(max_bin) + 31) // 32


# --------------------------------------------------------------------------------------
# XGBoost scalar formulas
# --------------------------------------------------------------------------------------
@njit(cache=True)
def threshold_l1(g, alpha):
    """XGBoost's ``ThresholdL1``: ``sign(g) * max(|g| - alpha, 0)`` (soft threshold)."""
    if g > alpha:
        return g - alpha
    if g < -alpha:
        return g + alpha
    return 0.0


@njit(cache=True)
def leaf_weight(sum_grad, sum_hess, reg_lambda, reg_alpha, max_delta_step,
                min_child_weight):
    """Optimal leaf weight, XGBoost's ``CalcWeight`` (Chen & Guestrin 2016, Eq. 5).

    ``w = -T(G) / (H + lambda)`` clipped to ``[-max_delta_step, max_delta_step]`` when
    ``max_delta_step > 0``; 0 when ``H < min_child_weight`` or ``H <= 0``.
    """
    if sum_hess < min_child_weight or sum_hess <= 0.0:
        return 0.0
    w = -threshold_l1(sum_grad, reg_alpha) / (sum_hess + reg_lambda)
    if max_delta_step > 0.0:
        if w > max_delta_step:
            w = max_delta_step
        elif w < -max_delta_step:
            w = -max_delta_step
    return w


@njit(cache=True)
def node_score(sum_grad, sum_hess, reg_lambda, reg_alpha, max_delta_step,
               min_child_weight):
    """Structure score of one node (twice the loss reduction of Eq. 6, Chen & Guestrin 2016).

    ``T(G)^2 / (H + lambda)`` when ``max_delta_step == 0``, else XGBoost's
    ``CalcGainGivenWeight`` ``-(2 G w + (H + lambda) w^2)`` at the clipped weight; 0 when
    ``H <= 0``.
    """
    if sum_hess <= 0.0:
        return 0.0
    if max_delta_step <= 0.0:
        t = threshold_l1(sum_grad, reg_alpha)
        return t * t / (sum_hess + reg_lambda)
    w = leaf_weight(sum_grad, sum_hess, reg_lambda, reg_alpha, max_delta_step,
                    min_child_weight)
    return -(2.0 * sum_grad * w + (sum_hess + reg_lambda) * w * w)


@njit(cache=True)
def leaf_values_gradient(node_sums, reg_lambda, reg_alpha, max_delta_step,
                         min_child_weight, out):
    """Leaf weights of nodes from their (G, H) sums (XGBoost ``CalcWeight``, no learning rate).

    Parameters
    ----------
    node_sums : ndarray (n_nodes, n_stats >= 2) float64, columns (G, H, ...)   # IN
    reg_lambda, reg_alpha, max_delta_step, min_child_weight : float
    out : ndarray (n_nodes,) float64                                          # OUT

    Returns
    -------
    out : the same array.
    """
    for i in range(node_sums.shape[0]):
        out[i] = leaf_weight(node_sums[i, 0], node_sums[i, 1], reg_lambda, reg_alpha,
                             max_delta_step, min_child_weight)
    return out


# --------------------------------------------------------------------------------------
# shared helpers
# --------------------------------------------------------------------------------------
@njit(cache=True)
def _set_bit(bits, c):
    bits[c >> 5] |= np.uint32(1) << np.uint32(c & 31)


@njit(cache=True)
def _categorical_index(is_categorical):
    """Position of each categorical feature among the categorical ones, -1 for numeric."""
    n_features = is_categorical.shape[0]
    cat_index = np.full(n_features, -1, np.int64)
    n_cat = 0
    for f in range(n_features):
        if is_categorical[f]:
            cat_index[f] = n_cat
            n_cat += 1
    return cat_index, n_cat


@njit(cache=True)
def _write_result(e, f, p, p_gain, p_bin, p_dl, p_left, p_bits, cat_index, node_sum,
                  gain, feature, bin_idx, default_left, is_cat, cat_bitset, left_sums,
                  right_sums):
    """Copy the per-(node, feature) winner ``p`` (or "no split" when f < 0) to row e."""
    n_stats = left_sums.shape[1]
    cat_bitset[e, :] = 0
    if f < 0:
        gain[e] = -np.inf
        feature[e] = -1
        bin_idx[e] = -1
        default_left[e] = False
        is_cat[e] = False
        left_sums[e, :] = 0.0
        right_sums[e, :] = 0.0
        return
    gain[e] = p_gain[p]
    feature[e] = f
    bin_idx[e] = p_bin[p]
    default_left[e] = p_dl[p]
    ci = cat_index[f]
    is_cat[e] = ci >= 0
    if ci >= 0:
        cat_bitset[e, :] = p_bits[e, ci, :]
    for k in range(n_stats):
        left_sums[e, k] = p_left[p, k]
        right_sums[e, k] = node_sum[k] - p_left[p, k]


# --------------------------------------------------------------------------------------
# boosting
# --------------------------------------------------------------------------------------
@njit(cache=True)
def _grad_gain(gl, hl, g, h, parent_score, reg_lambda, reg_alpha, max_delta_step,
               min_child_weight):
    """Gain of the split (left = (gl, hl), right = parent - left); -inf if invalid."""
    gr = g - gl
    hr = h - hl
    if hl <= 0.0 or hr <= 0.0:
        return -np.inf
    if hl < min_child_weight or hr < min_child_weight:
        return -np.inf
    sl = node_score(gl, hl, reg_lambda, reg_alpha, max_delta_step, min_child_weight)
    sr = node_score(gr, hr, reg_lambda, reg_alpha, max_delta_step, min_child_weight)
    gain = (sl + sr) - parent_score
    if not np.isfinite(gain):
        return -np.inf
    return gain


@njit(cache=True)
def _grad_numeric(h, node_sum, n_value_bins, missing_bin, parent_score, reg_lambda,
                  reg_alpha, max_delta_step, min_child_weight, left_out):
    """Best split of one numeric feature of one node. Returns (gain, bin, default_left)."""
    g = node_sum[0]
    hs = node_sum[1]
    best = -np.inf
    best_bin = -1
    best_dl = False
    # forward scan: missing rows go right
    gl = 0.0
    hl = 0.0
    for b in range(n_value_bins):
        gl += h[b, 0]
        hl += h[b, 1]
        if (h[b, 0] == 0.0 and h[b, 1] == 0.0):
            continue
        gain = _grad_gain(gl, hl, g, hs, parent_score, reg_lambda, reg_alpha,
                          max_delta_step, min_child_weight)
        if gain > best:
            best = gain
            best_bin = b
            best_dl = False
            left_out[0] = gl
            left_out[1] = hl
    if (h[missing_bin, 0] != 0.0 or h[missing_bin, 1] != 0.0):
        # backward scan: missing rows go left; right = bins i .. nvb-1
        gr = 0.0
        hr = 0.0
        for i in range(n_value_bins - 1, 0, -1):
            gr += h[i, 0]
            hr += h[i, 1]
            if (h[i, 0] == 0.0 and h[i, 1] == 0.0):
                continue
            gl = g - gr
            hl = hs - hr
            gain = _grad_gain(gl, hl, g, hs, parent_score, reg_lambda, reg_alpha,
                              max_delta_step, min_child_weight)
            if gain > best:
                best = gain
                best_bin = i - 1
                best_dl = True
                left_out[0] = gl
                left_out[1] = hl
    return best, best_bin, best_dl


@njit(cache=True)
def _grad_categorical(h, node_sum, n_value_bins, missing_bin, parent_score, reg_lambda,
                      reg_alpha, max_delta_step, min_child_weight, max_cat_to_onehot,
                      max_cat_threshold, left_out, bits_out):
    """Best split of one categorical feature of one node. Returns (gain, default_left).

    Writes the left sums into ``left_out`` and the left set into ``bits_out`` (zeroed).
    """
    g = node_sum[0]
    hs = node_sum[1]
    mg = h[missing_bin, 0]
    mh = h[missing_bin, 1]
    nvb = n_value_bins
    best = -np.inf
    best_dl = False
    bits_out[:] = 0
    if nvb < max_cat_to_onehot:
        best_c = -1
        for c in range(nvb):
            # (1) c right, missing left
            gl = g - h[c, 0]
            hl = hs - h[c, 1]
            gain = _grad_gain(gl, hl, g, hs, parent_score, reg_lambda, reg_alpha,
                              max_delta_step, min_child_weight)
            if gain > best:
                best = gain
                best_c = c
                best_dl = True
                left_out[0] = gl
                left_out[1] = hl
            # (2) c and missing right
            gl = g - (h[c, 0] + mg)
            hl = hs - (h[c, 1] + mh)
            gain = _grad_gain(gl, hl, g, hs, parent_score, reg_lambda, reg_alpha,
                              max_delta_step, min_child_weight)
            if gain > best:
                best = gain
                best_c = c
                best_dl = False
                left_out[0] = gl
                left_out[1] = hl
        if best_c >= 0:
            for c in range(nvb):
                if c != best_c:
                    _set_bit(bits_out, c)
        return best, best_dl

    keys = np.empty(nvb)
    for c in range(nvb):
        if (h[c, 0] == 0.0 and h[c, 1] == 0.0):
            keys[c] = 0.0
        else:
            keys[c] = leaf_weight(h[c, 0], h[c, 1], reg_lambda, reg_alpha,
                                  max_delta_step, min_child_weight)
    order = np.argsort(keys, kind="mergesort")
    k_max = min(max_cat_threshold, nvb) - 1
    best_k = 0
    # forward: right = order[:k], missing left
    gr = 0.0
    hr = 0.0
    for j in range(k_max):
        c = order[j]
        gr += h[c, 0]
        hr += h[c, 1]
        if (h[c, 0] == 0.0 and h[c, 1] == 0.0):
            continue
        gl = g - gr
        hl = hs - hr
        gain = _grad_gain(gl, hl, g, hs, parent_score, reg_lambda, reg_alpha,
                          max_delta_step, min_child_weight)
        if gain > best:
            best = gain
            best_k = j + 1
            best_dl = True
            left_out[0] = gl
            left_out[1] = hl
    # backward: left = order[nvb-k:], missing right
    gl = 0.0
    hl = 0.0
    for j in range(k_max):
        c = order[nvb - 1 - j]
        gl += h[c, 0]
        hl += h[c, 1]
        if (h[c, 0] == 0.0 and h[c, 1] == 0.0):
            continue
        gain = _grad_gain(gl, hl, g, hs, parent_score, reg_lambda, reg_alpha,
                          max_delta_step, min_child_weight)
        if gain > best:
            best = gain
            best_k = nvb - 1 - j      # left = order[best_k:]
            best_dl = False
            left_out[0] = gl
            left_out[1] = hl
    if best > -np.inf:
        for j in range(best_k, nvb):
            _set_bit(bits_out, order[j])
    return best, best_dl


@njit(parallel=True, cache=True)
def find_splits_gradient(hist, node_sums, slots, feature_mask, n_value_bins,
                         is_categorical, missing_bin, reg_lambda, reg_alpha,
                         max_delta_step, min_child_weight, max_cat_to_onehot,
                         max_cat_threshold, gain, feature, bin_idx, default_left, is_cat,
                         cat_bitset, left_sums, right_sums):
    """Best XGBoost split of each evaluated node (see the module docstring for the rules).

    Parameters
    ----------
    hist : ndarray (n_slots, n_features, max_bin, width >= 2) float64, (G, H)        # IN
    node_sums : ndarray (n_slots, 2) float64, node totals incl. missing rows       # IN
    slots : ndarray (n_eval,) int32, slots to evaluate                           # IN
    feature_mask : ndarray (n_eval, n_features) bool, features allowed per node  # IN
    n_value_bins : ndarray (n_features,) int32                                   # IN
    is_categorical : ndarray (n_features,) bool                                  # IN
    missing_bin : int, ``max_bin - 1``
    reg_lambda, reg_alpha, max_delta_step, min_child_weight : float
        XGBoost's ``lambda``, ``alpha``, ``max_delta_step`` (0 = off), ``min_child_weight``.
    max_cat_to_onehot : int
        One-vs-rest when ``n_value_bins[f] < max_cat_to_onehot`` (XGBoost default 4).
    max_cat_threshold : int
        Longest prefix tried by the partition search (XGBoost default 64).
    gain : ndarray (n_eval,) float64                       # OUT, XGBoost loss_chg; -inf
    feature : ndarray (n_eval,) int32                      # OUT, -1 = no valid split
    bin_idx : ndarray (n_eval,) int32                      # OUT, -1 for categorical
    default_left : ndarray (n_eval,) bool                  # OUT
    is_cat : ndarray (n_eval,) bool                        # OUT
    cat_bitset : ndarray (n_eval, n_words) uint32          # OUT, left set
    left_sums, right_sums : ndarray (n_eval, 2) float64    # OUT

    Parallel over (node, feature) pairs; the per-node reduction is serial and in feature
    order, so results do not depend on the thread count.
    """
    n_eval = slots.shape[0]
    n_features = hist.shape[1]
    n_stats = left_sums.shape[1]   # hist may carry padding lanes past n_stats
    n_words = cat_bitset.shape[1]
    cat_index, n_cat = _categorical_index(is_categorical)
    n_pairs = n_eval * n_features
    p_gain = np.empty(n_pairs)
    p_bin = np.empty(n_pairs, np.int32)
    p_dl = np.zeros(n_pairs, np.bool_)
    p_left = np.zeros((n_pairs, n_stats))
    p_bits = np.zeros((n_eval, max(n_cat, 1), n_words), np.uint32)
    parent_score = np.empty(n_eval)
    for e in range(n_eval):
        s = slots[e]
        parent_score[e] = node_score(node_sums[s, 0], node_sums[s, 1], reg_lambda,
                                     reg_alpha, max_delta_step, min_child_weight)
    for p in prange(n_pairs):
        e = p // n_features
        f = p - e * n_features
        p_gain[p] = -np.inf
        p_bin[p] = -1
        if not feature_mask[e, f]:
            continue
        s = slots[e]
        if is_categorical[f]:
            g, dl = _grad_categorical(hist[s, f], node_sums[s], n_value_bins[f],
                                      missing_bin, parent_score[e], reg_lambda,
                                      reg_alpha, max_delta_step, min_child_weight,
                                      max_cat_to_onehot, max_cat_threshold, p_left[p],
                                      p_bits[e, cat_index[f]])
            p_gain[p] = g
            p_dl[p] = dl
        else:
            g, b, dl = _grad_numeric(hist[s, f], node_sums[s], n_value_bins[f],
                                     missing_bin, parent_score[e], reg_lambda, reg_alpha,
                                     max_delta_step, min_child_weight, p_left[p])
            p_gain[p] = g
            p_bin[p] = b
            p_dl[p] = dl
    for e in range(n_eval):
        best = -np.inf
        best_f = -1
        for f in range(n_features):
            if p_gain[e * n_features + f] > best:
                best = p_gain[e * n_features + f]
                best_f = f
        _write_result(e, best_f, e * n_features + best_f, p_gain, p_bin, p_dl, p_left,
                      p_bits, cat_index, node_sums[slots[e]], gain, feature, bin_idx,
                      default_left, is_cat, cat_bitset, left_sums, right_sums)


# --------------------------------------------------------------------------------------
# CART
# --------------------------------------------------------------------------------------
@njit(cache=True)
def _stats_weight(v, criterion_code, n_classes):
    if criterion_code == CRITERION_SQUARED_ERROR:
        return v[0]
    w = 0.0
    for k in range(n_classes):
        w += v[k]
    return w


@njit(cache=True)
def _impurity(v, criterion_code, n_classes):
    """Impurity of one stats vector (scikit-learn's ``node_impurity``); 0 when W <= 0."""
    if criterion_code == CRITERION_SQUARED_ERROR:
        w = v[0]
        if w <= 0.0:
            return 0.0
        mean = v[1] / w
        return v[2] / w - mean * mean
    w = 0.0
    for k in range(n_classes):
        w += v[k]
    if w <= 0.0:
        return 0.0
    if criterion_code == CRITERION_GINI:
        sq = 0.0
        for k in range(n_classes):
            sq += v[k] * v[k]
        return 1.0 - sq / (w * w)
    ent = 0.0
    for k in range(n_classes):
        if v[k] > 0.0:
            p = v[k] / w
            ent -= p * (math.log(p) / _LN2)
    return ent


@njit(cache=True)
def node_impurity(node_sums, criterion_code, n_classes, out):
    """Impurity of nodes from their CART stats (scikit-learn ``Criterion.node_impurity``).

    Parameters
    ----------
    node_sums : ndarray (n_nodes, n_stats) float64    # IN
    criterion_code : int, 0 gini, 1 entropy (log2), 2 squared_error
    n_classes : int, K (ignored for squared_error)
    out : ndarray (n_nodes,) float64                   # OUT

    Returns
    -------
    out : the same array.
    """
    for i in range(node_sums.shape[0]):
        out[i] = _impurity(node_sums[i], criterion_code, n_classes)
    return out


@njit(cache=True)
def _cart_proxy(left, node_sum, w_node, criterion_code, n_classes, count_stat,
                min_samples_leaf, min_weight_leaf):
    """scikit-learn's proxy improvement of (left, node - left); -inf when invalid."""
    nl = left[count_stat]
    nr = node_sum[count_stat] - nl
    if nl <= 0.0 or nr <= 0.0 or nl < min_samples_leaf or nr < min_samples_leaf:
        return -np.inf
    if criterion_code == CRITERION_SQUARED_ERROR:
        wl = left[0]
        wr = w_node - wl
        if wl <= 0.0 or wr <= 0.0 or wl < min_weight_leaf or wr < min_weight_leaf:
            return -np.inf
        sl = left[1]
        sr = node_sum[1] - sl
        return sl * sl / wl + sr * sr / wr
    wl = 0.0
    for k in range(n_classes):
        wl += left[k]
    wr = w_node - wl
    if wl <= 0.0 or wr <= 0.0 or wl < min_weight_leaf or wr < min_weight_leaf:
        return -np.inf
    if criterion_code == CRITERION_GINI:
        sql = 0.0
        sqr = 0.0
        for k in range(n_classes):
            cl = left[k]
            cr = node_sum[k] - cl
            sql += cl * cl
            sqr += cr * cr
        imp_l = 1.0 - sql / (wl * wl)
        imp_r = 1.0 - sqr / (wr * wr)
    else:
        imp_l = 0.0
        imp_r = 0.0
        for k in range(n_classes):
            cl = left[k]
            cr = node_sum[k] - cl
            if cl > 0.0:
                pl = cl / wl
                imp_l -= pl * (math.log(pl) / _LN2)
            if cr > 0.0:
                pr = cr / wr
                imp_r -= pr * (math.log(pr) / _LN2)
    return -wr * imp_r - wl * imp_l


@njit(cache=True)
def _cart_numeric(h, node_sum, w_node, n_value_bins, missing_bin, criterion_code,
                  n_classes, count_stat, min_samples_leaf, min_weight_leaf, rand_bin,
                  left_out, acc, left):
    """Best CART split of one numeric feature. Returns (proxy, bin, default_left).
    ``acc`` and ``left`` are scratch vectors of ``n_stats`` (allocating them per call
    cost 12% of the search: 0.74 -> 0.65 s for 16 depth-12 forest trees)."""
    n_stats = left_out.shape[0]   # h may have padding lanes past n_stats
    n_miss = h[missing_bin, count_stat]
    has_missing = n_miss > 0.0
    n_nonmiss = 0.0
    for b in range(n_value_bins):
        n_nonmiss += h[b, count_stat]
    best = -np.inf
    best_bin = -1
    best_dl = False
    for ps in range(2 if has_missing else 1):
        miss_left = ps == 1
        acc[:] = 0.0
        for b in range(n_value_bins - 1):
            for k in range(n_stats):
                acc[k] += h[b, k]
            if rand_bin >= 0:
                if b != rand_bin:
                    continue
                if acc[count_stat] <= 0.0:
                    break
            elif h[b, count_stat] <= 0.0:
                continue
            if n_nonmiss - acc[count_stat] <= 0.0:
                break
            for k in range(n_stats):
                if miss_left:
                    left[k] = acc[k] + h[missing_bin, k]
                else:
                    left[k] = acc[k]
            proxy = _cart_proxy(left, node_sum, w_node, criterion_code, n_classes,
                                count_stat, min_samples_leaf, min_weight_leaf)
            if proxy > best:
                best = proxy
                best_bin = b
                if has_missing:
                    best_dl = miss_left
                else:
                    best_dl = left[count_stat] > node_sum[count_stat] - left[count_stat]
                left_out[:] = left
    if has_missing and rand_bin < 0:
        # pass C: every non-missing value left, missing right
        acc[:] = 0.0
        for b in range(n_value_bins):
            for k in range(n_stats):
                acc[k] += h[b, k]
        proxy = _cart_proxy(acc, node_sum, w_node, criterion_code, n_classes, count_stat,
                            min_samples_leaf, min_weight_leaf)
        if proxy > best:
            best = proxy
            best_bin = n_value_bins - 1
            best_dl = False
            left_out[:] = acc
    return best, best_bin, best_dl


@njit(cache=True)
def _cart_categorical(h, node_sum, w_node, n_value_bins, missing_bin, criterion_code,
                      n_classes, count_stat, min_samples_leaf, min_weight_leaf, left_out,
                      bits_out):
    """Best CART split of one categorical feature. Returns (proxy, default_left)."""
    n_stats = left_out.shape[0]   # h may have padding lanes past n_stats
    acc = np.empty(n_stats)
    left = np.empty(n_stats)
    bits_out[:] = 0
    n_miss = h[missing_bin, count_stat]
    has_missing = n_miss > 0.0
    cats = np.empty(n_value_bins, np.int64)
    m = 0
    for c in range(n_value_bins):
        if h[c, count_stat] > 0.0:
            cats[m] = c
            m += 1
    sorted_mode = criterion_code == CRITERION_SQUARED_ERROR or n_classes == 2
    seq = cats[:m].copy()
    if sorted_mode and m > 1:
        keys = np.empty(m)
        for j in range(m):
            c = cats[j]
            if criterion_code == CRITERION_SQUARED_ERROR:
                w = h[c, 0]
            else:
                w = h[c, 0] + h[c, 1]
            keys[j] = h[c, 1] / w if w > 0.0 else 0.0
        seq = cats[:m][np.argsort(keys, kind="mergesort")]
    n_cand = m - 1 if sorted_mode else m
    best = -np.inf
    best_kind = -1   # 0 prefix seq[:best_j+1], 1 one-vs-rest seq[best_j], 2 all
    best_j = -1
    best_dl = False
    for ps in range(2 if has_missing else 1):
        miss_left = ps == 1
        acc[:] = 0.0
        for j in range(n_cand):
            c = seq[j]
            for k in range(n_stats):
                if sorted_mode:
                    acc[k] += h[c, k]
                    v = acc[k]
                else:
                    v = h[c, k]
                if miss_left:
                    left[k] = v + h[missing_bin, k]
                else:
                    left[k] = v
            proxy = _cart_proxy(left, node_sum, w_node, criterion_code, n_classes,
                                count_stat, min_samples_leaf, min_weight_leaf)
            if proxy > best:
                best = proxy
                best_kind = 0 if sorted_mode else 1
                best_j = j
                if has_missing:
                    best_dl = miss_left
                else:
                    best_dl = left[count_stat] > node_sum[count_stat] - left[count_stat]
                left_out[:] = left
    if has_missing and m > 0:
        acc[:] = 0.0
        for j in range(m):
            for k in range(n_stats):
                acc[k] += h[cats[j], k]
        proxy = _cart_proxy(acc, node_sum, w_node, criterion_code, n_classes, count_stat,
                            min_samples_leaf, min_weight_leaf)
        if proxy > best:
            best = proxy
            best_kind = 2
            best_dl = False
            left_out[:] = acc
    if best_kind == 0:
        for j in range(best_j + 1):
            _set_bit(bits_out, seq[j])
    elif best_kind == 1:
        _set_bit(bits_out, seq[best_j])
    elif best_kind == 2:
        for j in range(m):
            _set_bit(bits_out, cats[j])
    if best_kind >= 0 and best_dl:
        for c in range(n_value_bins):
            if h[c, count_stat] <= 0.0:
                _set_bit(bits_out, c)
    return best, best_dl


@njit(parallel=True, cache=True)
def find_splits_cart(hist, node_sums, slots, column_feature, feature_mask, n_value_bins,
                     is_categorical, missing_bin, criterion_code, n_classes, min_samples_leaf,
                     min_weight_leaf, total_weight, random_bin, improvement,
                     impurity_decrease, feature, bin_idx, default_left, is_cat,
                     cat_bitset, left_sums, right_sums, zero_after):
    """Best CART split of each evaluated node, scikit-learn semantics (module docstring).

    Parameters
    ----------
    hist : ndarray (n_slots, n_columns, max_bin, width >= n_stats) float64     # IN
        Classification: n_stats = K + 1 (weighted class counts, count of rows with
        positive weight); squared_error: n_stats = 4 (W, S, S2, count).
    node_sums : ndarray (n_slots, n_stats) float64, totals incl. missing rows  # IN
    slots : ndarray (n_eval,) int32                                            # IN
    column_feature : ndarray (n_eval, n_columns) int32, ascending per row      # IN
        The feature of each histogram column of the node: ``arange(n_features)`` for
        full histograms, the node's sampled features for per-node histograms.
    feature_mask : ndarray (n_eval, n_columns) bool, columns searched          # IN
    n_value_bins : ndarray (n_features,) int32                                 # IN
    is_categorical : ndarray (n_features,) bool                                # IN
    missing_bin : int, ``max_bin - 1``
    criterion_code : int, 0 gini, 1 entropy, 2 squared_error (see ``CRITERIA``)
    n_classes : int, K (ignored for squared_error)
    min_samples_leaf : float, on the count statistic (unweighted rows)
    min_weight_leaf : float, on the weight (scikit-learn's
        ``min_weight_fraction_leaf * total weight``)
    total_weight : float, weight of the root (normalises ``impurity_decrease``)
    random_bin : ndarray (n_eval, n_columns) int32, or (0, 0) for best search   # IN
        Extra trees: threshold bin per numeric column, -1 = best search.
    improvement : ndarray (n_eval,) float64        # OUT, proxy used for the choice; -inf
    impurity_decrease : ndarray (n_eval,) float64  # OUT, weighted decrease; -inf if none
    feature, bin_idx : ndarray (n_eval,) int32     # OUT, -1 = none / categorical
    default_left, is_cat : ndarray (n_eval,) bool  # OUT
    cat_bitset : ndarray (n_eval, n_words) uint32  # OUT, left set
    left_sums, right_sums : ndarray (n_eval, n_stats) float64   # OUT
    zero_after : bool
        Zero each evaluated slot's histogram once it is scanned, while it is in cache,
        for a caller that reads it no more (per-node histograms are never subtracted):
        the slot is then reused without a separate zeroing pass over memory (0.40 s of
        5.7 s for 16 depth-12 forest trees on 1M rows).
    """
    n_eval = slots.shape[0]
    n_columns = hist.shape[1]
    n_stats = left_sums.shape[1]   # hist may carry padding lanes past n_stats
    n_words = cat_bitset.shape[1]
    count_stat = n_stats - 1
    has_random = random_bin.shape[0] > 0
    cat_index, n_cat = _categorical_index(is_categorical)
    n_pairs = n_eval * n_columns
    p_gain = np.empty(n_pairs)
    p_bin = np.empty(n_pairs, np.int32)
    p_dl = np.zeros(n_pairs, np.bool_)
    p_left = np.zeros((n_pairs, n_stats))
    p_scratch = np.empty((n_pairs, 2, n_stats))
    p_bits = np.zeros((n_eval, max(n_cat, 1), n_words), np.uint32)
    w_nodes = np.empty(n_eval)
    for e in range(n_eval):
        w_nodes[e] = _stats_weight(node_sums[slots[e]], criterion_code, n_classes)
    for p in prange(n_pairs):
        e = p // n_columns
        q = p - e * n_columns
        f = column_feature[e, q]
        p_gain[p] = -np.inf
        p_bin[p] = -1
        s = slots[e]
        if not feature_mask[e, q]:
            if zero_after:
                hist[s, q] = 0
            continue
        if is_categorical[f]:
            g, dl = _cart_categorical(hist[s, q], node_sums[s], w_nodes[e],
                                      n_value_bins[f], missing_bin, criterion_code,
                                      n_classes, count_stat, min_samples_leaf,
                                      min_weight_leaf, p_left[p], p_bits[e, cat_index[f]])
            p_gain[p] = g
            p_dl[p] = dl
        else:
            rb = -1
            if has_random:
                rb = random_bin[e, q]
            g, b, dl = _cart_numeric(hist[s, q], node_sums[s], w_nodes[e], n_value_bins[f],
                                     missing_bin, criterion_code, n_classes, count_stat,
                                     min_samples_leaf, min_weight_leaf, rb, p_left[p],
                                     p_scratch[p, 0], p_scratch[p, 1])
            p_gain[p] = g
            p_bin[p] = b
            p_dl[p] = dl
        if zero_after:
            hist[s, q] = 0
    for e in range(n_eval):
        # columns ascend by feature, so the first best column is the smallest feature
        best = -np.inf
        best_q = -1
        for q in range(n_columns):
            if p_gain[e * n_columns + q] > best:
                best = p_gain[e * n_columns + q]
                best_q = q
        best_f = column_feature[e, best_q] if best_q >= 0 else -1
        node_sum = node_sums[slots[e]]
        _write_result(e, best_f, e * n_columns + best_q, p_gain, p_bin, p_dl, p_left,
                      p_bits, cat_index, node_sum, improvement, feature, bin_idx,
                      default_left, is_cat, cat_bitset, left_sums, right_sums)
        if best_f < 0:
            impurity_decrease[e] = -np.inf
            continue
        w = w_nodes[e]
        wl = _stats_weight(left_sums[e], criterion_code, n_classes)
        wr = _stats_weight(right_sums[e], criterion_code, n_classes)
        imp = _impurity(node_sum, criterion_code, n_classes)
        imp_l = _impurity(left_sums[e], criterion_code, n_classes)
        imp_r = _impurity(right_sums[e], criterion_code, n_classes)
        impurity_decrease[e] = (w / total_weight) * (imp - wr / w * imp_r - wl / w * imp_l)


@njit(cache=True)
def draw_random_bins(hist, slots, column_feature, n_value_bins, is_categorical, count_stat,
                     uniforms, random_bin):
    """Extra-trees thresholds: one bin per (node, numeric feature), uniform over the node.

    ``random_bin[e, f] = lo + floor(u * (hi - lo))`` where ``lo``/``hi`` are the lowest and
    highest non-empty value bins of feature f in the node and ``u = uniforms[e, f]`` in
    [0, 1), so both sides hold rows. A feature constant in the node (``hi <= lo``) gets
    ``n_value_bins[f] - 1`` (no split possible); categorical features get -1 (best search).

    Parameters
    ----------
    hist : ndarray (n_slots, n_columns, max_bin, width) float64      # IN
    slots : ndarray (n_eval,) int32                                  # IN
    column_feature : ndarray (n_eval, n_columns) int32 (see find_splits_cart)  # IN
    n_value_bins : ndarray (n_features,) int32                       # IN
    is_categorical : ndarray (n_features,) bool                      # IN
    count_stat : int, index of the count statistic (n_stats - 1 for CART)
    uniforms : ndarray (n_eval, n_columns) float64 in [0, 1)         # IN
    random_bin : ndarray (n_eval, n_columns) int32                   # OUT
    """
    n_eval = slots.shape[0]
    n_columns = hist.shape[1]
    for e in range(n_eval):
        s = slots[e]
        for q in range(n_columns):
            f = column_feature[e, q]
            nvb = n_value_bins[f]
            if is_categorical[f]:
                random_bin[e, q] = -1
                continue
            lo = -1
            hi = -1
            for b in range(nvb):
                if hist[s, q, b, count_stat] > 0.0:
                    if lo < 0:
                        lo = b
                    hi = b
            if hi <= lo:
                random_bin[e, q] = nvb - 1
                continue
            r = lo + int(uniforms[e, q] * (hi - lo))
            if r > hi - 1:
                r = hi - 1
            random_bin[e, q] = r
