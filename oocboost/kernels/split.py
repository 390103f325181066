"""Split search on histograms: XGBoost second-order gain and CART impurity criteria.

This module holds what both searches share (constants, the layout below, categorical
bitsets and the result rows); the searches are :mod:`.split_gradient` (boosting) and
:mod:`.split_cart` (trees, forests, AdaBoost).

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
A candidate is valid when both children have ``H > 0`` and ``H >= min_child_weight`` (XGBoost
checks ``H >= min_child_weight`` during the scan and
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
    poisson       (L - S log(S / W)) / W                    L = stats[2] = sum w y log y

Choice is by scikit-learn's proxy: classification ``-(W_R * imp_R + W_L * imp_L)``,
squared error ``S_L^2 / W_L + S_R^2 / W_R``, Poisson ``S_L log(S_L / W_L) + S_R log(S_R /
W_R)`` (a child with ``S <= EPSILON`` is invalid: a Poisson mean must be positive). For the
chosen split the real decrease is::

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

import numpy as np
from numba import njit

CRITERION_GINI = 0
CRITERION_ENTROPY = 1
CRITERION_SQUARED_ERROR = 2
#: Half Poisson deviance (scikit-learn's ``poisson``); squared error and Poisson use the
#: moment statistics (w, w y, w y^2 or w y log y, count).
CRITERION_POISSON = 3
#: Mean absolute error around the weighted median (scikit-learn's ``absolute_error``):
#: statistics laid out as classification's, one lane per distinct label value.
CRITERION_ABSOLUTE_ERROR = 4
#: AdaBoost.MH's ``Z = 2 sum_l sqrt(W+_l W-_l)`` (Schapire and Singer 1999): statistics
#: ``(W+_0 .. W+_{K-1}, W-_0 .. W-_{K-1}, count)``, passed with ``n_classes = 2K``.
CRITERION_MH_Z = 5
#: C4.5's gain ratio (Quinlan 1993): the entropy decrease of a split divided by its split
#: information ``-(p_L log2 p_L + p_R log2 p_R)``, the children's shares of the weight;
#: nodes' impurity (importances, ``min_impurity_decrease``, pruning) is their entropy.
CRITERION_GAIN_RATIO = 6
#: Name -> ``criterion_code`` of :func:`find_splits_cart`.
CRITERIA = {"gini": CRITERION_GINI, "entropy": CRITERION_ENTROPY,
            "squared_error": CRITERION_SQUARED_ERROR, "poisson": CRITERION_POISSON,
            "absolute_error": CRITERION_ABSOLUTE_ERROR, "adaboost_mh": CRITERION_MH_Z,
            "gain_ratio": CRITERION_GAIN_RATIO}

#: XGBoost's default ``max_cat_to_onehot`` and ``max_cat_threshold``.
DEFAULT_MAX_CAT_TO_ONEHOT = 4
DEFAULT_MAX_CAT_THRESHOLD = 64

def n_bitset_words(max_bin):
    """Number of uint32 words of a categorical bitset over ``max_bin`` codes."""
    return (int(max_bin) + 31) // 32


# --------------------------------------------------------------------------------------
# shared helpers
# --------------------------------------------------------------------------------------
@njit(cache=True)
def set_bit(bits, c):
    bits[c >> 5] |= np.uint32(1) << np.uint32(c & 31)


@njit(inline="always")
def copy_into(dst, src):
    """``dst[:] = src`` for 1-d arrays of one length, as a loop: numba compiles the slice
    assignment's shape-mismatch message (string formatting) into every kernel that has
    one, about 2 s of compile time."""
    for k in range(dst.shape[0]):
        dst[k] = src[k]


def categorical_positions(is_categorical):
    """``(cat_index, cat_features)``: each feature's place among the categorical ones
    (-1 for numeric, int64) and the categorical features in order (int64)."""
    is_categorical = np.asarray(is_categorical, dtype=bool)
    cat_features = np.flatnonzero(is_categorical).astype(np.int64)
    cat_index = np.full(is_categorical.shape[0], -1, np.int64)
    cat_index[cat_features] = np.arange(cat_features.shape[0])
    return cat_index, cat_features


@njit(cache=True, inline="always")
def first_best(p_gain, start, n):
    """Offset of the first largest of ``p_gain[start:start + n]`` above -inf, or -1."""
    best = -np.inf
    best_k = -1
    for k in range(n):
        if p_gain[start + k] > best:
            best = p_gain[start + k]
            best_k = k
    return best_k


@njit(cache=True)
def pick_best_pairs(p_gain, p_bin, p_dl, p_left, p_bits, cat_index, node_sums, slots, gain,
                    feature, bin_idx, default_left, is_cat, cat_bitset, left_sums,
                    right_sums):
    """Each node's best (node, feature) pair (pair ``e * n_features + f``; the first
    feature of the best gain) written to row ``e`` by :func:`write_result`. Serial and in
    feature order, so the choice does not depend on the thread count."""
    n_eval = slots.shape[0]
    n_features = cat_index.shape[0]
    for e in range(n_eval):
        best_f = first_best(p_gain, e * n_features, n_features)
        write_result(e, best_f, e * n_features + best_f, p_gain, p_bin, p_dl, p_left,
                     p_bits, cat_index, node_sums[slots[e]], gain, feature, bin_idx,
                     default_left, is_cat, cat_bitset, left_sums, right_sums)


@njit(cache=True)
def write_result(e, f, p, p_gain, p_bin, p_dl, p_left, p_bits, cat_index, node_sum,
                  gain, feature, bin_idx, default_left, is_cat, cat_bitset, left_sums,
                  right_sums):
    """Copy the per-(node, feature) winner ``p`` (or "no split" when f < 0) to row e."""
    # element loops, not slice assignments: those compile numba's shape-checking and
    # message-formatting code (about 2.5 s of a cold start) for a handful of words
    n_stats = left_sums.shape[1]
    n_words = cat_bitset.shape[1]
    for w in range(n_words):
        cat_bitset[e, w] = 0
    if f < 0:
        gain[e] = -np.inf
        feature[e] = -1
        bin_idx[e] = -1
        default_left[e] = False
        is_cat[e] = False
        for k in range(n_stats):
            left_sums[e, k] = 0.0
            right_sums[e, k] = 0.0
        return
    gain[e] = p_gain[p]
    feature[e] = f
    bin_idx[e] = p_bin[p]
    default_left[e] = p_dl[p]
    ci = cat_index[f]
    is_cat[e] = ci >= 0
    if ci >= 0:
        for w in range(n_words):
            cat_bitset[e, w] = p_bits[e, ci, w]
    for k in range(n_stats):
        left_sums[e, k] = p_left[p, k]
        right_sums[e, k] = node_sum[k] - p_left[p, k]
