"""Split search for boosting: XGBoost's second-order gain (Chen and Guestrin 2016,
Eq. 7) with ``lambda``, ``alpha``, ``max_delta_step`` and ``min_child_weight``, a learned
direction for missing values, one-vs-rest and partition splits of categorical features,
and the leaf values of the same formulas. Layout and outputs: :mod:`.split`."""
import numpy as np
from numba import njit

from .parallel import MIN_PAIRS, RANGE_KERNEL, run_ranges
from .sorting import stable_argsort
from .split import categorical_positions, pick_best_pairs, set_bit


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
# boosting
# --------------------------------------------------------------------------------------
@njit(cache=True)
def gain_given_weight(sum_grad, sum_hess, w, reg_lambda):
    """XGBoost's ``CalcGainGivenWeight``: ``-(2 G w + (H + lambda) w^2)``; 0 if H <= 0."""
    if sum_hess <= 0.0:
        return 0.0
    return -(2.0 * sum_grad * w + (sum_hess + reg_lambda) * w * w)


@njit(cache=True)
def bounded_weight(sum_grad, sum_hess, lower, upper, reg_lambda, reg_alpha, max_delta_step,
                   min_child_weight):
    """The leaf weight clipped to a node's monotone bounds ``[lower, upper]``."""
    w = leaf_weight(sum_grad, sum_hess, reg_lambda, reg_alpha, max_delta_step,
                    min_child_weight)
    return min(max(w, lower), upper)


@njit(cache=True)
def _grad_gain(gl, hl, g, h, parent_score, cons, reg_lambda, reg_alpha, max_delta_step,
               min_child_weight):
    """Gain of the split (left = (gl, hl), right = parent - left); -inf if invalid.

    ``cons`` = (direction, lower, upper, on): with monotone constraints on (``on`` 1),
    both children's weights are clipped to the node's bounds, the gain is computed at
    those weights (XGBoost's ``TreeEvaluator``), and a split whose weights go against
    the feature's direction (+1 increasing, -1 decreasing) is invalid."""
    gr = g - gl
    hr = h - hl
    if hl <= 0.0 or hr <= 0.0:
        return -np.inf
    if hl < min_child_weight or hr < min_child_weight:
        return -np.inf
    if cons[3] != 0.0:
        wl = bounded_weight(gl, hl, cons[1], cons[2], reg_lambda, reg_alpha,
                            max_delta_step, min_child_weight)
        wr = bounded_weight(gr, hr, cons[1], cons[2], reg_lambda, reg_alpha,
                            max_delta_step, min_child_weight)
        if (cons[0] > 0.0 and wl > wr) or (cons[0] < 0.0 and wl < wr):
            return -np.inf
        sl = gain_given_weight(gl, hl, wl, reg_lambda)
        sr = gain_given_weight(gr, hr, wr, reg_lambda)
    else:
        sl = node_score(gl, hl, reg_lambda, reg_alpha, max_delta_step, min_child_weight)
        sr = node_score(gr, hr, reg_lambda, reg_alpha, max_delta_step, min_child_weight)
    gain = (sl + sr) - parent_score
    if not np.isfinite(gain):
        return -np.inf
    return gain


@njit(inline="always")
def _plain_gain(gl, hl, g, hs, parent_score, reg_lambda, min_child_weight):
    """:func:`_grad_gain` without constraints, ``alpha`` or ``max_delta_step``: the same
    float operations in the same order (so the same bits), with no branch before the
    divisions."""
    gr = g - gl
    hr = hs - hl
    gain = (gl * gl / (hl + reg_lambda) + gr * gr / (hr + reg_lambda)) - parent_score
    ok = (hl > 0.0 and hr > 0.0 and hl >= min_child_weight and hr >= min_child_weight
          and np.isfinite(gain))
    return gain if ok else -np.inf


@njit(inline="always")
def _bin_gain(plain, nonempty, gl, hl, g, hs, parent_score, cons, reg_lambda, reg_alpha,
              max_delta_step, min_child_weight):
    """The gain of splitting after a bin, -inf for an empty one."""
    if plain:
        gain = _plain_gain(gl, hl, g, hs, parent_score, reg_lambda, min_child_weight)
        return gain if nonempty else -np.inf
    if not nonempty:
        return -np.inf
    return _grad_gain(gl, hl, g, hs, parent_score, cons, reg_lambda, reg_alpha,
                      max_delta_step, min_child_weight)


@njit(cache=True, error_model="numpy")
def _grad_numeric(h, node_sum, n_value_bins, missing_bin, parent_score, cons, reg_lambda,
                  reg_alpha, max_delta_step, min_child_weight, left_out):
    """Best split of one numeric feature of one node. Returns (gain, bin, default_left).

    With the defaults (no constraint, ``alpha`` or ``max_delta_step``) each bin's gain is
    computed branch-free and an invalid one made -inf (numpy's error model: lambda 0 and
    an empty side divide by 0 into inf or nan, where Python's raises), the same bits as
    the general gain: the numeric pairs' kernel of 100 depth-6 trees on 1M x 28 rows,
    2 threads, 0.59 -> 0.19 s. Ties go to the first split found."""
    plain = cons[3] == 0.0 and reg_alpha == 0.0 and max_delta_step <= 0.0
    g = node_sum[0]
    hs = node_sum[1]
    best = -np.inf
    best_bin = -1
    best_dl = False
    best_gl = best_hl = 0.0
    gl = 0.0
    hl = 0.0
    for b in range(n_value_bins):  # missing rows go right
        gl += h[b, 0]
        hl += h[b, 1]
        gain = _bin_gain(plain, h[b, 0] != 0.0 or h[b, 1] != 0.0, gl, hl, g, hs,
                         parent_score, cons, reg_lambda, reg_alpha, max_delta_step,
                         min_child_weight)
        if gain > best:
            best, best_bin, best_gl, best_hl = gain, b, gl, hl
    if h[missing_bin, 0] != 0.0 or h[missing_bin, 1] != 0.0:
        gr = 0.0
        hr = 0.0
        for i in range(n_value_bins - 1, 0, -1):  # missing rows go left
            gr += h[i, 0]
            hr += h[i, 1]
            gl = g - gr
            hl = hs - hr
            gain = _bin_gain(plain, h[i, 0] != 0.0 or h[i, 1] != 0.0, gl, hl, g, hs,
                             parent_score, cons, reg_lambda, reg_alpha, max_delta_step,
                             min_child_weight)
            if gain > best:
                best, best_bin, best_dl, best_gl, best_hl = gain, i - 1, True, gl, hl
    if best_bin >= 0:
        left_out[0] = best_gl
        left_out[1] = best_hl
    return best, best_bin, best_dl


@njit(cache=True)
def _grad_onehot(h, node_sum, nvb, missing_bin, parent_score, cons, reg_lambda, reg_alpha,
                 max_delta_step, min_child_weight, left_out, bits_out):
    """One-vs-rest split of a categorical feature with few categories: one category goes
    right (with or without the missing values), the rest left. Returns (gain,
    default_left); ``bits_out`` must be zeroed."""
    g = node_sum[0]
    hs = node_sum[1]
    mg = h[missing_bin, 0]
    mh = h[missing_bin, 1]
    best = -np.inf
    best_dl = False
    best_c = -1
    for c in range(nvb):
        # (1) c right, missing left
        gl = g - h[c, 0]
        hl = hs - h[c, 1]
        gain = _grad_gain(gl, hl, g, hs, parent_score, cons, reg_lambda, reg_alpha,
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
        gain = _grad_gain(gl, hl, g, hs, parent_score, cons, reg_lambda, reg_alpha,
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
                set_bit(bits_out, c)
    return best, best_dl


#: Positions in the ``cat_params`` array of :func:`find_splits_gradient`.
CAT_SEARCH, CAT_ONEHOT, CAT_THRESHOLD, CAT_SMOOTH, CAT_L2, CAT_MIN_GROUP = range(6)
#: ``cat_params[CAT_SEARCH]``: LightGBM's partition search or XGBoost's.
CAT_SEARCH_LIGHTGBM = 0.0
CAT_SEARCH_XGBOOST = 1.0


@njit(cache=True)
def _value_codes(nvb, missing_bin):
    """The value codes ``0 .. nvb - 1`` but the missing code (inside a wide feature's
    range)."""
    n = nvb - 1 if nvb > missing_bin else nvb
    out = np.empty(n, np.int64)
    k = 0
    for c in range(nvb):
        if c != missing_bin:
            out[k] = c
            k += 1
    return out


@njit(cache=True)
def _grad_partition_xgboost(h, node_sum, codes, missing_bin, parent_score, cons,
                            reg_lambda, reg_alpha, max_delta_step, min_child_weight,
                            max_cat_threshold, left_out, bits_out):
    """XGBoost's partition search over ``codes`` (module docstring). Returns (gain,
    default_left)."""
    g = node_sum[0]
    hs = node_sum[1]
    nvb = codes.shape[0]
    best = -np.inf
    best_dl = False
    keys = np.empty(nvb)
    for j in range(nvb):
        c = codes[j]
        if (h[c, 0] == 0.0 and h[c, 1] == 0.0):
            keys[j] = 0.0
        else:
            keys[j] = leaf_weight(h[c, 0], h[c, 1], reg_lambda, reg_alpha,
                                  max_delta_step, min_child_weight)
    order = codes[stable_argsort(keys)]
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
        gain = _grad_gain(g - gr, hs - hr, g, hs, parent_score, cons, reg_lambda, reg_alpha,
                          max_delta_step, min_child_weight)
        if gain > best:
            best = gain
            best_k = j + 1
            best_dl = True
            left_out[0] = g - gr
            left_out[1] = hs - hr
    # backward: left = order[nvb-k:], missing right
    gl = 0.0
    hl = 0.0
    for j in range(k_max):
        c = order[nvb - 1 - j]
        gl += h[c, 0]
        hl += h[c, 1]
        if (h[c, 0] == 0.0 and h[c, 1] == 0.0):
            continue
        gain = _grad_gain(gl, hl, g, hs, parent_score, cons, reg_lambda, reg_alpha,
                          max_delta_step, min_child_weight)
        if gain > best:
            best = gain
            best_k = nvb - 1 - j      # left = order[best_k:]
            best_dl = False
            left_out[0] = gl
            left_out[1] = hl
    if best > -np.inf:
        for j in range(best_k, nvb):
            set_bit(bits_out, order[j])
    return best, best_dl


@njit(inline="always")
def _keep_smallest(keys, codes, n, key, code, ties_first):
    """Insert ``(key, code)`` into the ``n`` smallest keys kept so far, ascending, at most
    ``len(keys)``; an equal key goes after those kept (it came later), as in a stable
    sort, or before them with ``ties_first``. Returns the new count. The end of a stable
    ascending sort read backwards is the smallest of ``-key`` with ``ties_first``."""
    if n == keys.shape[0]:
        last = keys[n - 1]
        if key > last or (key == last and not ties_first):
            return n
        n -= 1
    p = n
    while p > 0 and (keys[p - 1] > key or (ties_first and keys[p - 1] == key)):
        keys[p] = keys[p - 1]
        codes[p] = codes[p - 1]
        p -= 1
    keys[p] = key
    codes[p] = code
    return n + 1


@njit(cache=True)
def _grad_partition_lightgbm(h, node_sum, codes, missing_bin, parent_score, cons,
                             reg_lambda, reg_alpha, max_delta_step, min_child_weight,
                             cat_params, rows_per_hessian, left_out, bits_out):
    """LightGBM's partition search over ``codes`` (module docstring), with a learned side
    for the missing values and the categories too rare to sort. Returns (gain,
    default_left)."""
    g = node_sum[0]
    hs = node_sum[1]
    cat_smooth = cat_params[CAT_SMOOTH]
    min_group = cat_params[CAT_MIN_GROUP]
    reg_cat = reg_lambda + cat_params[CAT_L2]
    n_node = np.rint(hs * rows_per_hessian)
    # rows of the missing code and of categories below cat_smooth rows go together
    mg = h[missing_bin, 0]
    mh = h[missing_bin, 1]
    # Only the max_cat_threshold categories at each end of the sorted order are scanned:
    # keep those two ends (in the order of a stable sort) instead of sorting every
    # category, 10,000 of them per node on the categorical bench
    threshold = int(cat_params[CAT_THRESHOLD])
    k = max(1, threshold)
    low_key, high_key = np.empty(k), np.empty(k)
    low, high = np.empty(k, np.int64), np.empty(k, np.int64)
    n_low = n_high = n_used = 0
    for j in range(codes.shape[0]):
        c = codes[j]
        if np.rint(h[c, 1] * rows_per_hessian) >= cat_smooth and h[c, 1] > 0.0:
            key = h[c, 0] / (h[c, 1] + cat_smooth)
            n_low = _keep_smallest(low_key, low, n_low, key, c, False)
            n_high = _keep_smallest(high_key, high, n_high, -key, c, True)
            n_used += 1
        else:
            mg += h[c, 0]
            mh += h[c, 1]
    max_cats = min(threshold, (n_used + 1) // 2)
    has_missing = mh > 0.0 or mg != 0.0
    best = -np.inf
    best_dl = False
    best_dir = 0
    best_k = 0
    for direction in range(2):
        for miss_left in range(2 if has_missing else 1):
            gl = mg if miss_left else 0.0
            hl = mh if miss_left else 0.0
            n_left = np.rint(hl * rows_per_hessian)
            n_group = 0.0
            for i in range(max_cats):
                c = low[i] if direction == 0 else high[i]
                gl += h[c, 0]
                hl += h[c, 1]
                n_c = np.rint(h[c, 1] * rows_per_hessian)
                n_left += n_c
                n_group += n_c
                if n_node - n_left < min_group:
                    break
                if n_group < min_group:
                    continue
                n_group = 0.0
                gain = _grad_gain(gl, hl, g, hs, parent_score, cons, reg_cat, reg_alpha,
                                  max_delta_step, min_child_weight)
                if gain > best:
                    best = gain
                    best_dl = miss_left == 1
                    best_dir = direction
                    best_k = i + 1
                    left_out[0] = gl
                    left_out[1] = hl
    if best > -np.inf:
        for i in range(best_k):
            set_bit(bits_out, low[i] if best_dir == 0 else high[i])
        if best_dl:
            # the rare and the empty categories go with the missing values
            for j in range(codes.shape[0]):
                c = codes[j]
                if not np.rint(h[c, 1] * rows_per_hessian) >= cat_smooth \
                        or not h[c, 1] > 0.0:
                    set_bit(bits_out, c)
    return best, best_dl


@njit(cache=True)
def _grad_categorical(h, node_sum, n_value_bins, missing_bin, parent_score, cons,
                      reg_lambda, reg_alpha, max_delta_step, min_child_weight, cat_params,
                      rows_per_hessian, left_out, bits_out):
    """Best split of one categorical feature of one node. Returns (gain, default_left).

    Writes the left sums into ``left_out`` and the left set into ``bits_out`` (zeroed).
    """
    nvb = n_value_bins
    bits_out[:] = 0
    xgboost = cat_params[CAT_SEARCH] == CAT_SEARCH_XGBOOST
    onehot = cat_params[CAT_ONEHOT]
    if (nvb < onehot) if xgboost else (nvb <= onehot):
        return _grad_onehot(h, node_sum, nvb, missing_bin, parent_score, cons, reg_lambda,
                            reg_alpha, max_delta_step, min_child_weight, left_out, bits_out)
    codes = _value_codes(nvb, missing_bin)
    if xgboost:
        return _grad_partition_xgboost(h, node_sum, codes, missing_bin, parent_score, cons,
                                       reg_lambda, reg_alpha, max_delta_step,
                                       min_child_weight, int(cat_params[CAT_THRESHOLD]),
                                       left_out, bits_out)
    return _grad_partition_lightgbm(h, node_sum, codes, missing_bin, parent_score, cons,
                                    reg_lambda, reg_alpha, max_delta_step, min_child_weight,
                                    cat_params, rows_per_hessian, left_out, bits_out)


def find_splits_gradient(hist, node_sums, slots, feature_mask, n_value_bins,
                         is_categorical, missing_bin, reg_lambda, reg_alpha,
                         max_delta_step, min_child_weight, max_cat_to_onehot,
                         max_cat_threshold, monotone, lower, upper, gain, feature, bin_idx,
                         default_left, is_cat, cat_bitset, left_sums, right_sums, *,
                         column_of=None, cat_params=None, rows_per_hessian=None):
    """Best XGBoost split of each evaluated node (see the module docstring for the rules).

    Parameters
    ----------
    hist : ndarray (n_slots, n_columns, max_bin, width >= 2) float64, (G, H)       # IN
    node_sums : ndarray (n_slots, 2) float64, node totals incl. missing rows       # IN
    slots : ndarray (n_eval,) int32, slots to evaluate                           # IN
    feature_mask : ndarray (n_eval, n_features) bool, features allowed per node  # IN
    n_value_bins : ndarray (n_features,) int32                                   # IN
    is_categorical : ndarray (n_features,) bool                                  # IN
    missing_bin : int, ``max_bin - 1``
    reg_lambda, reg_alpha, max_delta_step, min_child_weight : float
        XGBoost's ``lambda``, ``alpha``, ``max_delta_step`` (0 = off), ``min_child_weight``.
    max_cat_to_onehot : int
        One-vs-rest below it (XGBoost's search, default 4) or up to it (LightGBM's).
    max_cat_threshold : int
        Most categories in the set a partition search moves (XGBoost default 64,
        LightGBM 32).
    monotone : ndarray (n_features,) int8, or (0,) for no constraint              # IN
        +1 / -1: the feature's children weights must not decrease / increase.
    lower, upper : ndarray (n_eval,) float64, the nodes' weight bounds           # IN
        (read only with constraints; the root's are -inf, inf)
    gain : ndarray (n_eval,) float64                       # OUT, XGBoost loss_chg; -inf
    feature : ndarray (n_eval,) int32                      # OUT, -1 = no valid split
    bin_idx : ndarray (n_eval,) int32                      # OUT, -1 for categorical
    default_left : ndarray (n_eval,) bool                  # OUT
    is_cat : ndarray (n_eval,) bool                        # OUT
    cat_bitset : ndarray (n_eval, n_words) uint32          # OUT, left set
    left_sums, right_sums : ndarray (n_eval, 2) float64    # OUT
    column_of : ndarray (n_features + 1,) int64 or None
        First histogram column of each feature (``common.hist_column_starts``); None:
        one column per feature.
    cat_params : ndarray (6,) float64 or None
        ``(search, max_cat_to_onehot, max_cat_threshold, cat_smooth, cat_l2,
        min_data_per_group)`` at the ``CAT_*`` positions; None: XGBoost's search with
        the two arguments above.
    rows_per_hessian : ndarray (n_eval,) float64 or None
        LightGBM's search counts rows as ``round(H * rows_per_hessian)``; None: 1.

    Parallel over (node, feature) pairs; the per-node reduction is serial and in feature
    order, so results do not depend on the thread count.
    """
    n_features = n_value_bins.shape[0]
    max_bin = hist.shape[2]
    if column_of is None:
        column_of = np.arange(n_features + 1, dtype=np.int64)
    bin_start = np.ascontiguousarray(column_of, dtype=np.int64) * max_bin
    if bin_start.shape != (n_features + 1,) or bin_start[-1] != hist.shape[1] * max_bin:
        raise ValueError(f"column_of must hold {n_features + 1} column starts ending at "
                         f"the histograms' {hist.shape[1]} columns")
    if cat_params is None:
        cat_params = np.array([CAT_SEARCH_XGBOOST, max_cat_to_onehot, max_cat_threshold,
                               0.0, 0.0, 0.0])
    if rows_per_hessian is None:
        rows_per_hessian = np.ones(len(slots))
    flat = hist.reshape(hist.shape[0], hist.shape[1] * max_bin, hist.shape[3])
    n_eval = len(slots)
    n_pairs = n_eval * n_features
    cat_index, cat_features = categorical_positions(is_categorical)
    p_gain = np.empty(n_pairs)
    p_bin = np.empty(n_pairs, np.int32)
    p_dl = np.zeros(n_pairs, np.bool_)
    p_left = np.zeros((n_pairs, left_sums.shape[1]))
    p_bits = np.zeros((n_eval, max(len(cat_features), 1), cat_bitset.shape[1]), np.uint32)
    parent_score = np.empty(n_eval)
    run_ranges(_gradient_numeric_pairs, n_pairs, flat, bin_start, node_sums, slots,
               feature_mask, n_value_bins, is_categorical, missing_bin, reg_lambda,
               reg_alpha, max_delta_step, min_child_weight, monotone, lower, upper,
               parent_score, p_gain, p_bin, p_dl, p_left, min_tasks=MIN_PAIRS)
    # the categorical search compiles (about 5 s cold) only when a node can use it
    if len(cat_features) and feature_mask[:, cat_features].any():
        run_ranges(
            _gradient_categorical_pairs, n_eval * len(cat_features), flat, bin_start,
            node_sums, slots, feature_mask, n_value_bins, cat_features,
            missing_bin, reg_lambda, reg_alpha, max_delta_step, min_child_weight,
            np.ascontiguousarray(cat_params, dtype=np.float64),
            np.ascontiguousarray(rows_per_hessian, dtype=np.float64), monotone, lower,
            upper, parent_score, p_gain, p_dl, p_left, p_bits)
    pick_best_pairs(p_gain, p_bin, p_dl, p_left, p_bits, cat_index, node_sums, slots,
                    gain, feature, bin_idx, default_left, is_cat, cat_bitset, left_sums,
                    right_sums)


@njit(cache=True)
def _constraint(monotone, lower, upper, e, f):
    """``(sign, lower, upper, on)`` of feature ``f`` at node ``e`` for the gain kernels."""
    cons = np.zeros(4)
    if monotone.shape[0] > 0:
        cons[0] = monotone[f]
        cons[1] = lower[e]
        cons[2] = upper[e]
        cons[3] = 1.0
    return cons


@njit(cache=True)
def _parent_score(node_sum, constrained, lower, upper, reg_lambda, reg_alpha,
                  max_delta_step, min_child_weight):
    """A node's score: its weight's gain, the weight within ``lower .. upper`` when
    ``constrained``."""
    if constrained:
        w = bounded_weight(node_sum[0], node_sum[1], lower, upper, reg_lambda, reg_alpha,
                           max_delta_step, min_child_weight)
        return gain_given_weight(node_sum[0], node_sum[1], w, reg_lambda)
    return node_score(node_sum[0], node_sum[1], reg_lambda, reg_alpha, max_delta_step,
                      min_child_weight)


@njit(**RANGE_KERNEL)
def _gradient_numeric_pairs(lo, hi, hist, bin_start, node_sums, slots, feature_mask,
                            n_value_bins, is_categorical, missing_bin, reg_lambda, reg_alpha,
                            max_delta_step, min_child_weight, monotone, lower, upper,
                            parent_score, p_gain, p_bin, p_dl, p_left):
    """Pairs ``lo .. hi - 1`` (pair ``e * n_features + f``): the best split of each
    (node, numeric feature) pair into the ``p_*`` arrays (-inf gain for masked and
    categorical pairs), and each node's score into ``parent_score`` (by its pair with
    feature 0). ``hist`` is (n_slots, n_columns * max_bin, width): feature ``f``'s bins
    are ``bin_start[f] .. bin_start[f + 1] - 1``."""
    n_features = n_value_bins.shape[0]
    constrained = monotone.shape[0] > 0
    for p in range(lo, hi):
        e = p // n_features
        f = p - e * n_features
        s = slots[e]
        score = _parent_score(node_sums[s], constrained, lower[e] if constrained else 0.0,
                              upper[e] if constrained else 0.0, reg_lambda, reg_alpha,
                              max_delta_step, min_child_weight)
        if f == 0:
            parent_score[e] = score
        p_gain[p] = -np.inf
        p_bin[p] = -1
        if not feature_mask[e, f] or is_categorical[f]:
            continue
        h = hist[s, bin_start[f]:bin_start[f + 1]]
        g, b, dl = _grad_numeric(h, node_sums[s], n_value_bins[f], missing_bin, score,
                                 _constraint(monotone, lower, upper, e, f),
                                 reg_lambda, reg_alpha, max_delta_step, min_child_weight,
                                 p_left[p])
        p_gain[p] = g
        p_bin[p] = b
        p_dl[p] = dl


@njit(**RANGE_KERNEL)
def _gradient_categorical_pairs(lo, hi, hist, bin_start, node_sums, slots, feature_mask,
                                n_value_bins, cat_features, missing_bin, reg_lambda,
                                reg_alpha, max_delta_step, min_child_weight, cat_params,
                                rows_per_hessian, monotone, lower, upper, parent_score,
                                p_gain, p_dl, p_left, p_bits):
    """Tasks ``lo .. hi - 1`` (``e * n_cat + k``): the best split of each (node,
    categorical feature) pair into the ``p_*`` arrays
    and its left set into ``p_bits[e, k]`` (``k``: the feature's place in
    ``cat_features``); after :func:`_gradient_numeric_pairs`."""
    n_features = n_value_bins.shape[0]
    n_cat = cat_features.shape[0]
    for task in range(lo, hi):
        e = task // n_cat
        k = task - e * n_cat
        f = cat_features[k]
        if not feature_mask[e, f]:
            continue
        p = e * n_features + f
        s = slots[e]
        h = hist[s, bin_start[f]:bin_start[f + 1]]
        g, dl = _grad_categorical(h, node_sums[s], n_value_bins[f], missing_bin,
                                  parent_score[e], _constraint(monotone, lower, upper, e, f),
                                  reg_lambda, reg_alpha, max_delta_step, min_child_weight,
                                  cat_params, rows_per_hessian[e], p_left[p], p_bits[e, k])
        p_gain[p] = g
        p_dl[p] = dl
