"""Split search for CART trees, forests and AdaBoost's weak trees: gini, entropy and
squared-error impurity decrease, a learned direction for missing values, categorical
splits by sorted category, and the random thresholds of extra trees. Layout and
outputs: :mod:`.split`."""
import math

import numpy as np
from numba import njit

from .parallel import MIN_PAIRS, RANGE_KERNEL, run_ranges
from .sorting import stable_argsort
from .split import (
    CRITERION_ABSOLUTE_ERROR,
    CRITERION_GAIN_RATIO,
    CRITERION_GINI,
    CRITERION_MH_Z,
    CRITERION_POISSON,
    CRITERION_SQUARED_ERROR,
    categorical_positions,
    copy_into,
    first_best,
    set_bit,
    write_result,
)

_LN2 = math.log(2.0)
#: scikit-learn's EPSILON below which a Poisson child's sum of targets counts as 0.
POISSON_EPSILON = np.finfo(np.float64).eps


# --------------------------------------------------------------------------------------
# CART
# --------------------------------------------------------------------------------------
@njit(inline="always")
def _moments(criterion_code):
    """Squared error and Poisson read (w, w y, w y^2 or w y log y, count); the other
    criteria one weight per class (or per label value) and the count."""
    return criterion_code == CRITERION_SQUARED_ERROR or criterion_code == CRITERION_POISSON


@njit(cache=True)
def _absolute_error(v, node_sum, side, n_classes, values):
    """``(W, sum w |y - median|)`` of a distribution over label ``values``: ``v`` itself
    (``side`` 0) or ``node_sum - v`` (``side`` 1). The weighted median is scikit-learn's:
    the smallest value whose cumulative weight exceeds half the total, or the mid-point
    of the two values around an exact half."""
    w = 0.0
    for k in range(n_classes):
        w += node_sum[k] - v[k] if side else v[k]
    if w <= 0.0:
        return 0.0, 0.0
    half = 0.5 * w
    below = 0.0
    prev = -1
    median = values[n_classes - 1]
    for k in range(n_classes):
        c = node_sum[k] - v[k] if side else v[k]
        if c <= 0.0:
            continue
        if below + c > half:
            median = values[k]
            if below == half and prev >= 0:
                median = 0.5 * (values[prev] + values[k])
            break
        below += c
        prev = k
    ae = 0.0
    for k in range(n_classes):
        c = node_sum[k] - v[k] if side else v[k]
        if c > 0.0:
            ae += c * abs(values[k] - median)
    return w, ae


@njit(cache=True)
def _stats_weight(v, criterion_code, n_classes):
    if _moments(criterion_code):
        return v[0]
    w = 0.0
    for k in range(n_classes):
        w += v[k]
    return w


@njit(cache=True)
def _mh_z(v, node_sum, side, n_classes):
    """``sum_l sqrt(W+_l W-_l)`` of ``v`` (``side`` 0) or of ``node_sum - v`` (1), over
    AdaBoost.MH's statistics (``n_classes`` = 2K lanes)."""
    K = n_classes // 2
    z = 0.0
    for k in range(K):
        wp = node_sum[k] - v[k] if side else v[k]
        wm = node_sum[K + k] - v[K + k] if side else v[K + k]
        if wp > 0.0 and wm > 0.0:
            z += math.sqrt(wp * wm)
    return z


@njit(cache=True)
def _impurity(v, criterion_code, n_classes, values):
    """Impurity of one stats vector (scikit-learn's ``node_impurity``); 0 when W <= 0."""
    if criterion_code == CRITERION_ABSOLUTE_ERROR:
        w, ae = _absolute_error(v, v, 0, n_classes, values)
        return ae / w if w > 0.0 else 0.0
    if _moments(criterion_code):
        w = v[0]
        if w <= 0.0:
            return 0.0
        mean = v[1] / w
        if criterion_code == CRITERION_POISSON:
            return (v[2] - v[1] * math.log(mean)) / w if mean > 0.0 else 0.0
        return v[2] / w - mean * mean
    w = 0.0
    for k in range(n_classes):
        w += v[k]
    if w <= 0.0:
        return 0.0
    if criterion_code == CRITERION_MH_Z:
        return 2.0 * _mh_z(v, v, 0, n_classes) / w
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
def node_impurity(node_sums, criterion_code, n_classes, values, out):
    """Impurity of nodes from their CART stats (scikit-learn ``Criterion.node_impurity``).

    Parameters
    ----------
    node_sums : ndarray (n_nodes, n_stats) float64    # IN
    criterion_code : int, 0 gini, 1 entropy (log2), 2 squared_error, 3 poisson,
        4 absolute_error, 5 AdaBoost.MH's Z (``n_classes`` = 2K lanes)
    n_classes : int, K (label values for absolute_error; ignored for the moments)
    values : ndarray (K,) float64, the label values of absolute_error, else empty  # IN
    out : ndarray (n_nodes,) float64                   # OUT

    Returns
    -------
    out : the same array.
    """
    for i in range(node_sums.shape[0]):
        out[i] = _impurity(node_sums[i], criterion_code, n_classes, values)
    return out


@njit(cache=True)
def _cart_proxy(left, node_sum, w_node, criterion_code, n_classes, count_stat,
                min_samples_leaf, min_weight_leaf, values):
    """scikit-learn's proxy improvement of (left, node - left); -inf when invalid."""
    nl = left[count_stat]
    nr = node_sum[count_stat] - nl
    if nl <= 0.0 or nr <= 0.0 or nl < min_samples_leaf or nr < min_samples_leaf:
        return -np.inf
    if criterion_code == CRITERION_ABSOLUTE_ERROR:
        wl, ae_l = _absolute_error(left, node_sum, 0, n_classes, values)
        wr, ae_r = _absolute_error(left, node_sum, 1, n_classes, values)
        if wl <= 0.0 or wr <= 0.0 or wl < min_weight_leaf or wr < min_weight_leaf:
            return -np.inf
        # scikit-learn's order of operations: W * (AE / W), so ties break as there
        return -wr * (ae_r / wr) - wl * (ae_l / wl)
    if _moments(criterion_code):
        wl = left[0]
        wr = w_node - wl
        if wl <= 0.0 or wr <= 0.0 or wl < min_weight_leaf or wr < min_weight_leaf:
            return -np.inf
        sl = left[1]
        sr = node_sum[1] - sl
        if criterion_code == CRITERION_POISSON:
            if sl <= POISSON_EPSILON or sr <= POISSON_EPSILON:
                return -np.inf
            return sl * math.log(sl / wl) + sr * math.log(sr / wr)
        return sl * sl / wl + sr * sr / wr
    wl = 0.0
    for k in range(n_classes):
        wl += left[k]
    wr = w_node - wl
    if wl <= 0.0 or wr <= 0.0 or wl < min_weight_leaf or wr < min_weight_leaf:
        return -np.inf
    if criterion_code == CRITERION_MH_Z:
        # W * impurity = 2 Z, as for the other criteria
        return -2.0 * (
            _mh_z(left, node_sum, 1, n_classes) + _mh_z(left, node_sum, 0, n_classes)
        )
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
    if criterion_code == CRITERION_GAIN_RATIO:
        w = wl + wr
        parent = _impurity(node_sum, criterion_code, n_classes, values)
        split_info = -(wl * math.log(wl / w) + wr * math.log(wr / w)) / (w * _LN2)
        return (w * parent - wr * imp_r - wl * imp_l) / split_info
    return -wr * imp_r - wl * imp_l


@njit(cache=True)
def monotone_ok(left, node_sum, w_node, criterion_code, cst, lower, upper):
    """scikit-learn's ``_check_monotonicity``: both children's values within the node's
    ``[lower, upper]`` and ordered as the constraint ``cst`` (+1: left <= right)."""
    if _moments(criterion_code):
        wl = left[0]
        wr = w_node - wl
    else:
        wl = left[0] + left[1]
        wr = w_node - wl
    if wl <= 0.0 or wr <= 0.0:
        return False
    vl = left[1] / wl
    vr = (node_sum[1] - left[1]) / wr
    return (vl >= lower and vr >= lower and vl <= upper and vr <= upper
            and (vl - vr) * cst <= 0.0)


@njit(cache=True)
def _cart_numeric(h, node_sum, w_node, n_value_bins, missing_bin, criterion_code,
                  n_classes, count_stat, min_samples_leaf, min_weight_leaf, rand_bin,
                  left_out, acc, left, values, cst, lower, upper):
    """Best CART split of one numeric feature. Returns (proxy, bin, default_left).
    ``acc`` and ``left`` are scratch vectors of ``n_stats`` (allocating them per call
    cost 12% of the search: 0.74 -> 0.65 s for 16 depth-12 forest trees). ``cst``: the
    feature's monotonic constraint (0: none; else splits must pass :func:`monotone_ok`
    within the node's bounds ``lower``, ``upper``)."""
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
                                count_stat, min_samples_leaf, min_weight_leaf, values)
            if proxy > best and (cst == 0 or monotone_ok(left, node_sum, w_node,
                                                         criterion_code, cst, lower, upper)):
                best = proxy
                best_bin = b
                if has_missing:
                    best_dl = miss_left
                else:
                    best_dl = left[count_stat] > node_sum[count_stat] - left[count_stat]
                copy_into(left_out, left)
    if has_missing and rand_bin < 0:
        # pass C: every non-missing value left, missing right
        acc[:] = 0.0
        for b in range(n_value_bins):
            for k in range(n_stats):
                acc[k] += h[b, k]
        proxy = _cart_proxy(acc, node_sum, w_node, criterion_code, n_classes, count_stat,
                            min_samples_leaf, min_weight_leaf, values)
        if proxy > best and (cst == 0 or monotone_ok(acc, node_sum, w_node, criterion_code,
                                                     cst, lower, upper)):
            best = proxy
            best_bin = n_value_bins - 1
            best_dl = False
            copy_into(left_out, acc)
    return best, best_bin, best_dl


@njit(cache=True)
def _category_keys(h, cats, criterion_code, n_classes, values):
    """The order of categories for a sorted partition search: the mean target (moments,
    absolute error's mean label) or the share of class 1 (two classes)."""
    keys = np.empty(cats.shape[0])
    for j in range(cats.shape[0]):
        c = cats[j]
        if criterion_code == CRITERION_ABSOLUTE_ERROR:
            w = 0.0
            wy = 0.0
            for k in range(n_classes):
                w += h[c, k]
                wy += h[c, k] * values[k]
            keys[j] = wy / w if w > 0.0 else 0.0
            continue
        w = h[c, 0] if _moments(criterion_code) else h[c, 0] + h[c, 1]
        keys[j] = h[c, 1] / w if w > 0.0 else 0.0
    return keys


@njit(cache=True)
def _cart_categorical(h, node_sum, w_node, n_value_bins, missing_bin, criterion_code,
                      n_classes, count_stat, min_samples_leaf, min_weight_leaf, left_out,
                      bits_out, values):
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
        if h[c, count_stat] > 0.0 and c != missing_bin:
            cats[m] = c
            m += 1
    sorted_mode = _moments(criterion_code) or n_classes == 2 or \
        criterion_code == CRITERION_ABSOLUTE_ERROR
    seq = cats[:m].copy()
    if sorted_mode and m > 1:
        keys = _category_keys(h, cats[:m], criterion_code, n_classes, values)
        seq = cats[:m][stable_argsort(keys)]
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
                                count_stat, min_samples_leaf, min_weight_leaf, values)
            if proxy > best:
                best = proxy
                best_kind = 0 if sorted_mode else 1
                best_j = j
                if has_missing:
                    best_dl = miss_left
                else:
                    best_dl = left[count_stat] > node_sum[count_stat] - left[count_stat]
                copy_into(left_out, left)
    if has_missing and m > 0:
        acc[:] = 0.0
        for j in range(m):
            for k in range(n_stats):
                acc[k] += h[cats[j], k]
        proxy = _cart_proxy(acc, node_sum, w_node, criterion_code, n_classes, count_stat,
                            min_samples_leaf, min_weight_leaf, values)
        if proxy > best:
            best = proxy
            best_kind = 2
            best_dl = False
            copy_into(left_out, acc)
    if best_kind == 0:
        for j in range(best_j + 1):
            set_bit(bits_out, seq[j])
    elif best_kind == 1:
        set_bit(bits_out, seq[best_j])
    elif best_kind == 2:
        for j in range(m):
            set_bit(bits_out, cats[j])
    if best_kind >= 0 and best_dl:
        for c in range(n_value_bins):
            if h[c, count_stat] <= 0.0 and c != missing_bin:
                set_bit(bits_out, c)
    return best, best_dl


def hist_bin_starts(hist, column_of, n_columns):
    """First bin of each histogram column of :func:`find_splits_cart` in ``hist`` seen as
    (n_slots, n_columns * max_bin, width), and that view."""
    max_bin = hist.shape[2]
    if column_of is None:
        if n_columns != hist.shape[1]:
            raise ValueError(f"{n_columns} columns per node for histograms of "
                             f"{hist.shape[1]} columns need the features' column starts")
        column_of = np.arange(n_columns + 1, dtype=np.int64)
    column_of = np.ascontiguousarray(column_of, dtype=np.int64)
    if column_of.shape != (n_columns + 1,) or column_of[-1] != hist.shape[1]:
        raise ValueError(f"column_of must hold {n_columns + 1} column starts ending at "
                         f"the histograms' {hist.shape[1]} columns")
    flat = hist.reshape(hist.shape[0], hist.shape[1] * max_bin, hist.shape[3])
    return column_of * max_bin, flat


def find_splits_cart(hist, node_sums, slots, column_feature, feature_mask, n_value_bins,
                     is_categorical, missing_bin, criterion_code, n_classes, min_samples_leaf,
                     min_weight_leaf, total_weight, random_bin, improvement,
                     impurity_decrease, feature, bin_idx, default_left, is_cat,
                     cat_bitset, left_sums, right_sums, zero_after, values, column_of=None,
                     monotone=None):
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
    values : ndarray (K,) float64, ascending label values (absolute_error), else empty
    zero_after : bool
        Zero each evaluated slot's histogram once it is scanned, while it is in cache,
        for a caller that reads it no more (per-node histograms are never subtracted):
        the slot is then reused without a separate zeroing pass over memory (0.40 s of
        5.7 s for 16 depth-12 forest trees on 1M rows).
    column_of : ndarray (n_features + 1,) int64 or None
        First histogram column of each feature (``common.hist_column_starts``) for full
        histograms with a wide feature, ``column_feature`` then every feature in order;
        None: column ``q`` is one histogram column.
    monotone : (cst, lower, upper) or None
        scikit-learn's ``monotonic_cst``: ``cst`` (n_features,) int8 of -1/0/+1 on the
        mean (regression) or the share of class 1 (two classes), and each evaluated
        node's bounds ``lower``, ``upper`` (n_eval,) float64; a split on a constrained
        feature must keep both children's values within them, in the constraint's order.
    """
    bin_start, flat = hist_bin_starts(hist, column_of, column_feature.shape[1])
    n_eval, n_columns = column_feature.shape
    if monotone is None:
        monotone = (np.zeros(0, np.int8), np.zeros(0), np.zeros(0))
    n_stats = left_sums.shape[1]
    cat_index, cat_features = categorical_positions(is_categorical)
    p_gain = np.empty(n_eval * n_columns)
    p_bin = np.empty(n_eval * n_columns, np.int32)
    p_dl = np.zeros(n_eval * n_columns, np.bool_)
    p_left = np.zeros((n_eval * n_columns, n_stats))
    p_bits = np.zeros((n_eval, max(len(cat_features), 1), cat_bitset.shape[1]), np.uint32)
    w_nodes = _node_weights(node_sums, slots, criterion_code, n_classes)
    _cart_numeric_pairs(flat, bin_start, node_sums, slots, column_feature, feature_mask,
                        n_value_bins, is_categorical, missing_bin, criterion_code, n_classes,
                        min_samples_leaf, min_weight_leaf, random_bin, zero_after, values,
                        w_nodes, p_gain, p_bin, p_dl, p_left, *monotone)
    # the categorical search compiles only when a node can use it (a cold start's time)
    if len(cat_features) and (is_categorical[column_feature] & feature_mask).any():
        _cart_categorical_pairs(flat, bin_start, node_sums, slots, column_feature,
                                feature_mask, n_value_bins, is_categorical, cat_index,
                                missing_bin, criterion_code, n_classes, min_samples_leaf,
                                min_weight_leaf, zero_after, values, w_nodes, p_gain, p_dl,
                                p_left, p_bits)
    _pick_best_cart(column_feature, criterion_code, n_classes, total_weight, values,
                    w_nodes, p_gain, p_bin, p_dl, p_left, p_bits, cat_index, node_sums,
                    slots, improvement, impurity_decrease, feature, bin_idx, default_left,
                    is_cat, cat_bitset, left_sums, right_sums)


@njit(cache=True)
def _node_weights(node_sums, slots, criterion_code, n_classes):
    w_nodes = np.empty(slots.shape[0])
    for e in range(slots.shape[0]):
        w_nodes[e] = _stats_weight(node_sums[slots[e]], criterion_code, n_classes)
    return w_nodes


@njit(**RANGE_KERNEL)
def _cart_numeric_pairs_range(p_lo, p_hi, hist, bin_start, node_sums, slots, column_feature,
                              feature_mask, n_value_bins, is_categorical, missing_bin,
                              criterion_code, n_classes, min_samples_leaf, min_weight_leaf,
                              random_bin, zero_after, values, w_nodes, p_gain, p_bin, p_dl,
                              p_left, cst, lower, upper):
    """:func:`_cart_numeric_pairs` for the pairs ``p_lo .. p_hi - 1``."""
    n_columns = bin_start.shape[0] - 1
    n_stats = p_left.shape[1]
    count_stat = n_stats - 1
    has_random = random_bin.shape[0] > 0
    scratch = np.empty((2, n_stats))
    for p in range(p_lo, p_hi):
        e = p // n_columns
        q = p - e * n_columns
        f = column_feature[e, q]
        p_gain[p] = -np.inf
        p_bin[p] = -1
        h = hist[slots[e], bin_start[q]:bin_start[q + 1]]
        if not feature_mask[e, q]:
            if zero_after:
                h[:] = 0
            continue
        if is_categorical[f]:
            continue
        rb = -1
        if has_random:
            rb = random_bin[e, q]
        c, lo, hi = 0, -np.inf, np.inf
        if cst.shape[0] > 0:
            c, lo, hi = cst[f], lower[e], upper[e]
        g, b, dl = _cart_numeric(h, node_sums[slots[e]], w_nodes[e], n_value_bins[f],
                                 missing_bin, criterion_code, n_classes, count_stat,
                                 min_samples_leaf, min_weight_leaf, rb, p_left[p],
                                 scratch[0], scratch[1], values, c, lo, hi)
        p_gain[p] = g
        p_bin[p] = b
        p_dl[p] = dl
        if zero_after:
            h[:] = 0


def _cart_numeric_pairs(hist, bin_start, node_sums, slots, column_feature, feature_mask,
                        n_value_bins, is_categorical, missing_bin, criterion_code, n_classes,
                        min_samples_leaf, min_weight_leaf, random_bin, zero_after, values,
                        w_nodes, p_gain, p_bin, p_dl, p_left, cst, lower, upper):
    """The best split of each (node, numeric column) pair into the ``p_*`` arrays (pair
    ``e * n_columns + q``; -inf gain for masked and categorical pairs). ``hist`` is
    (n_slots, n_columns * max_bin, width): column ``q``'s bins are ``bin_start[q] ..
    bin_start[q + 1] - 1``. Masked columns are zeroed here with ``zero_after``,
    categorical ones by :func:`_cart_categorical_pairs`."""
    run_ranges(_cart_numeric_pairs_range, slots.shape[0] * (bin_start.shape[0] - 1), hist,
               bin_start, node_sums, slots, column_feature, feature_mask, n_value_bins,
               is_categorical, missing_bin, criterion_code, n_classes, min_samples_leaf,
               min_weight_leaf, random_bin, zero_after, values, w_nodes, p_gain, p_bin, p_dl,
               p_left, cst, lower, upper, min_tasks=MIN_PAIRS)


@njit(**RANGE_KERNEL)
def _cart_categorical_pairs_range(p_lo, p_hi, hist, bin_start, node_sums, slots,
                                  column_feature, feature_mask, n_value_bins, is_categorical,
                                  cat_index, missing_bin, criterion_code, n_classes,
                                  min_samples_leaf, min_weight_leaf, zero_after, values,
                                  w_nodes, p_gain, p_dl, p_left, p_bits):
    """:func:`_cart_categorical_pairs` for the pairs ``p_lo .. p_hi - 1``."""
    n_columns = bin_start.shape[0] - 1
    count_stat = p_left.shape[1] - 1
    for p in range(p_lo, p_hi):
        e = p // n_columns
        q = p - e * n_columns
        f = column_feature[e, q]
        if not feature_mask[e, q] or not is_categorical[f]:
            continue
        h = hist[slots[e], bin_start[q]:bin_start[q + 1]]
        g, dl = _cart_categorical(h, node_sums[slots[e]], w_nodes[e], n_value_bins[f],
                                  missing_bin, criterion_code, n_classes, count_stat,
                                  min_samples_leaf, min_weight_leaf, p_left[p],
                                  p_bits[e, cat_index[f]], values)
        p_gain[p] = g
        p_dl[p] = dl
        if zero_after:
            h[:] = 0


def _cart_categorical_pairs(hist, bin_start, node_sums, slots, column_feature, feature_mask,
                            n_value_bins, is_categorical, cat_index, missing_bin,
                            criterion_code, n_classes, min_samples_leaf, min_weight_leaf,
                            zero_after, values, w_nodes, p_gain, p_dl, p_left, p_bits):
    """The best split of each (node, categorical column) pair, after
    :func:`_cart_numeric_pairs`; its left set into ``p_bits[e, cat_index[f]]``."""
    run_ranges(_cart_categorical_pairs_range, slots.shape[0] * (bin_start.shape[0] - 1), hist,
               bin_start, node_sums, slots, column_feature, feature_mask, n_value_bins,
               is_categorical, cat_index, missing_bin, criterion_code, n_classes,
               min_samples_leaf, min_weight_leaf, zero_after, values, w_nodes, p_gain, p_dl,
               p_left, p_bits, min_tasks=MIN_PAIRS)


@njit(cache=True)
def _pick_best_cart(column_feature, criterion_code, n_classes, total_weight, values,
                    w_nodes, p_gain, p_bin, p_dl, p_left, p_bits, cat_index, node_sums,
                    slots, improvement, impurity_decrease, feature, bin_idx, default_left,
                    is_cat, cat_bitset, left_sums, right_sums):
    """Each node's best column (serial, in column order) written to row ``e``, with its
    weighted impurity decrease."""
    n_eval, n_columns = column_feature.shape
    for e in range(n_eval):
        # columns ascend by feature, so the first best column is the smallest feature
        best_q = first_best(p_gain, e * n_columns, n_columns)
        best_f = column_feature[e, best_q] if best_q >= 0 else -1
        node_sum = node_sums[slots[e]]
        write_result(e, best_f, e * n_columns + best_q, p_gain, p_bin, p_dl, p_left,
                      p_bits, cat_index, node_sum, improvement, feature, bin_idx,
                      default_left, is_cat, cat_bitset, left_sums, right_sums)
        if best_f < 0:
            impurity_decrease[e] = -np.inf
            continue
        w = w_nodes[e]
        wl = _stats_weight(left_sums[e], criterion_code, n_classes)
        wr = _stats_weight(right_sums[e], criterion_code, n_classes)
        imp = _impurity(node_sum, criterion_code, n_classes, values)
        imp_l = _impurity(left_sums[e], criterion_code, n_classes, values)
        imp_r = _impurity(right_sums[e], criterion_code, n_classes, values)
        impurity_decrease[e] = (w / total_weight) * (imp - wr / w * imp_r - wl / w * imp_l)


def draw_random_bins(hist, slots, column_feature, n_value_bins, is_categorical, count_stat,
                     uniforms, random_bin, column_of=None):
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
    column_of : as :func:`find_splits_cart`
    """
    bin_start, flat = hist_bin_starts(hist, column_of, column_feature.shape[1])
    _draw_random_bins(flat, bin_start, slots, column_feature, n_value_bins, is_categorical,
                      count_stat, uniforms, random_bin)


@njit(cache=True)
def _draw_random_bins(hist, bin_start, slots, column_feature, n_value_bins, is_categorical,
                      count_stat, uniforms, random_bin):
    n_eval = slots.shape[0]
    n_columns = bin_start.shape[0] - 1
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
                if hist[s, bin_start[q] + b, count_stat] > 0.0:
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
