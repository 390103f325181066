"""Path-dependent Tree SHAP (Lundberg, Erion and Lee 2018, Algorithm 2): exact Shapley
values of one tree's prediction, with the value of a feature subset ``S`` taken as the
tree's prediction when the features outside ``S`` follow both branches weighted by the
training cover (the node's ``cover``: hessian sums for boosting, weights for forests).

One row's traversal keeps, per depth, the unique path of features met so far with their
zero fractions (the cover share of the branch taken), one fractions (1 when the row goes
that way, else 0) and the permutation weights, extended at every node and unwound when a
feature repeats; a leaf adds ``w * (one - zero) * value`` to each path feature. The
recursion is written as an explicit stack, one level per depth::

    level d:  node, stage (0 enter, 1 hot child done, 2 both done), unique depth,
              the path (feature, zero, one, weight) in row d of the path arrays

Both children copy their parent's path, so the parent's row stays intact for the cold
child after the hot one returns. The naive twin (brute force over all subsets) is in
``tests/model/test_contributions.py``.
"""
import numpy as np
from numba import njit

from .parallel import RANGE_KERNEL, run_ranges


@njit(cache=True, inline="always")
def _goes_left(x, node, feature, threshold, default_left, is_categorical, cat_bitset):
    """The raw decision rule of ``kernels/predict.py``."""
    v = x[feature[node]]
    if np.isnan(v):
        return default_left[node]
    if is_categorical[node]:
        code = int(v)
        if code < 0 or code >= cat_bitset.shape[1] * 32:
            return False
        return ((cat_bitset[node, code >> 5] >> np.uint32(code & 31)) & np.uint32(1)) == 1
    return v <= threshold[node]


@njit(cache=True)
def _extend(fi, zf, of, pw, d, depth, zero_fraction, one_fraction, feature_index):
    fi[d, depth] = feature_index
    zf[d, depth] = zero_fraction
    of[d, depth] = one_fraction
    pw[d, depth] = 1.0 if depth == 0 else 0.0
    for i in range(depth - 1, -1, -1):
        pw[d, i + 1] += one_fraction * pw[d, i] * (i + 1) / (depth + 1)
        pw[d, i] = zero_fraction * pw[d, i] * (depth - i) / (depth + 1)


@njit(cache=True)
def _unwind(fi, zf, of, pw, d, depth, path_index):
    one = of[d, path_index]
    zero = zf[d, path_index]
    next_one = pw[d, depth]
    for i in range(depth - 1, -1, -1):
        if one != 0.0:
            tmp = pw[d, i]
            pw[d, i] = next_one * (depth + 1) / ((i + 1) * one)
            next_one = tmp - pw[d, i] * zero * (depth - i) / (depth + 1)
        else:
            pw[d, i] = pw[d, i] * (depth + 1) / (zero * (depth - i))
    for i in range(path_index, depth):
        fi[d, i] = fi[d, i + 1]
        zf[d, i] = zf[d, i + 1]
        of[d, i] = of[d, i + 1]


@njit(cache=True)
def _unwound_sum(zf, of, pw, d, depth, path_index):
    one = of[d, path_index]
    zero = zf[d, path_index]
    next_one = pw[d, depth]
    total = 0.0
    for i in range(depth - 1, -1, -1):
        if one != 0.0:
            tmp = next_one * (depth + 1) / ((i + 1) * one)
            total += tmp
            next_one = pw[d, i] - tmp * zero * (depth - i) / (depth + 1)
        else:
            total += (pw[d, i] / zero) / ((depth - i) / (depth + 1))
    return total


@njit(cache=True, inline="always")
def _copy_parent_path(fi, zf, of, pw, level, depth):
    # one entry more than the depth: a conditioned feature is not extended, so the
    # parent's last entry is kept as it is
    for i in range(depth + 1):
        fi[level, i] = fi[level - 1, i]
        zf[level, i] = zf[level - 1, i]
        of[level, i] = of[level - 1, i]
        pw[level, i] = pw[level - 1, i]


@njit(cache=True, inline="always")
def _add_leaf(fi, zf, of, pw, level, depth, leaf_value, fraction, out_cols, col_scale,
              out_row):
    """A leaf's share to each feature on the path (Algorithm 2, line 6)."""
    for i in range(1, depth + 1):
        w = _unwound_sum(zf, of, pw, level, depth, i)
        scale = w * (of[level, i] - zf[level, i]) * fraction
        f = fi[level, i]
        for c in range(out_cols.shape[0]):
            out_row[out_cols[c], f] += scale * leaf_value[c] * col_scale[c]


@njit(cache=True, inline="always")
def _split_condition(fraction, hot_zero, cold_zero, child_depth, split, condition,
                     condition_feature):
    """The condition fraction passed to the hot and the cold child, and the children's
    unique depth: a split on the conditioned feature sends everything the row's way
    (present) or both ways by cover (absent), and never enters the path."""
    if condition == 0 or split != condition_feature:
        return fraction, fraction, child_depth
    if condition > 0:
        return fraction, 0.0, child_depth - 1
    return fraction * hot_zero, fraction * cold_zero, child_depth - 1


@njit(cache=True)
def _row_shap(x, left, right, feature, threshold, default_left, is_categorical, cat_bitset,
              value, cover, out_cols, col_scale, out_row, fi, zf, of, pw, stack_i, stack_f,
              condition, condition_feature):
    """Add one row's contributions of one tree to ``out_row`` (n_outputs, n_features + 1).

    ``condition`` 0 gives the plain values; +1 / -1 fix ``condition_feature`` present /
    absent (it never enters the path, and each branch's share of the weight is the
    condition fraction), the two halves of the interaction values.

    ``stack_i`` (levels, 7) int64: node, stage, unique depth, hot, cold, split feature,
    child unique depth; ``stack_f`` (levels, 6) float64: zero, one fractions in, the
    incoming zero fraction, the cold child's condition fraction, the cold child's zero
    fraction, the condition fraction in.
    """
    stack_i[0, 0] = 0
    stack_i[0, 1] = 0
    stack_i[0, 2] = 0
    stack_i[0, 5] = -1
    stack_f[0, 0] = 1.0
    stack_f[0, 1] = 1.0
    stack_f[0, 5] = 1.0
    level = 0
    while level >= 0:
        stage = stack_i[level, 1]
        if stage == 0:
            fraction = stack_f[level, 5]
            if fraction == 0.0:
                level -= 1
                continue
            depth = stack_i[level, 2]
            if level > 0:
                _copy_parent_path(fi, zf, of, pw, level, depth)
            incoming_feature = stack_i[level, 5]
            if condition == 0 or incoming_feature != condition_feature:
                _extend(fi, zf, of, pw, level, depth, stack_f[level, 0], stack_f[level, 1],
                        incoming_feature)
            node = stack_i[level, 0]
            if left[node] < 0:
                _add_leaf(fi, zf, of, pw, level, depth, value[node], fraction, out_cols,
                          col_scale, out_row)
                level -= 1
                continue
            split = feature[node]
            if _goes_left(x, node, feature, threshold, default_left, is_categorical,
                          cat_bitset):
                hot, cold = left[node], right[node]
            else:
                hot, cold = right[node], left[node]
            w_node = cover[node]
            hot_zero = cover[hot] / w_node if w_node > 0.0 else 0.5
            cold_zero = cover[cold] / w_node if w_node > 0.0 else 0.5
            incoming_zero = 1.0
            incoming_one = 1.0
            child_depth = depth
            for k in range(depth + 1):
                if fi[level, k] == split:
                    incoming_zero = zf[level, k]
                    incoming_one = of[level, k]
                    _unwind(fi, zf, of, pw, level, depth, k)
                    child_depth = depth - 1
                    break
            hot_fraction, cold_fraction, child_depth = _split_condition(
                fraction, hot_zero, cold_zero, child_depth, split, condition,
                condition_feature)
            stack_i[level, 1] = 1
            stack_i[level, 4] = cold
            stack_i[level, 6] = child_depth
            stack_f[level, 2] = incoming_zero
            stack_f[level, 3] = cold_fraction
            stack_f[level, 4] = cold_zero
            # the hot child: the row's own way
            stack_i[level + 1, 0] = hot
            stack_i[level + 1, 1] = 0
            stack_i[level + 1, 2] = child_depth + 1
            stack_i[level + 1, 5] = split
            stack_f[level + 1, 0] = hot_zero * incoming_zero
            stack_f[level + 1, 1] = incoming_one
            stack_f[level + 1, 5] = hot_fraction
            level += 1
        elif stage == 1:
            # the cold child: the other way, which the row never takes (one fraction 0)
            stack_i[level, 1] = 2
            stack_i[level + 1, 0] = stack_i[level, 4]
            stack_i[level + 1, 1] = 0
            stack_i[level + 1, 2] = stack_i[level, 6] + 1
            stack_i[level + 1, 5] = feature[stack_i[level, 0]]
            stack_f[level + 1, 0] = stack_f[level, 4] * stack_f[level, 2]
            stack_f[level + 1, 1] = 0.0
            stack_f[level + 1, 5] = stack_f[level, 3]
            level += 1
        else:
            level -= 1


@njit(cache=True)
def _scratch(max_depth):
    levels = max_depth + 2
    return (np.empty((levels, levels), np.int64), np.empty((levels, levels)),
            np.empty((levels, levels)), np.empty((levels, levels)),
            np.zeros((levels, 7), np.int64), np.zeros((levels, 6)))


@njit(**RANGE_KERNEL)
def _tree_shap_range(r_lo, r_hi, X, left, right, feature, threshold, default_left,
                     is_categorical, cat_bitset, value, cover, max_depth, out_cols, col_scale,
                     out):
    """:func:`tree_shap` for the rows ``r_lo .. r_hi - 1``."""
    for r in range(r_lo, r_hi):
        fi, zf, of, pw, stack_i, stack_f = _scratch(max_depth)
        _row_shap(X[r], left, right, feature, threshold, default_left, is_categorical,
                  cat_bitset, value, cover, out_cols, col_scale, out[r], fi, zf, of, pw,
                  stack_i, stack_f, 0, -1)


def tree_shap(X, left, right, feature, threshold, default_left, is_categorical, cat_bitset,
              value, cover, max_depth, out_cols, col_scale, out):
    """Add one tree's path-dependent SHAP values of every row into ``out``.

    Parameters
    ----------
    X : float64 (n_rows, n_features)             # IN  raw values, NaN missing
    left, right, feature : int32 (n_nodes,)       # IN  the tree (-1 at leaves)
    threshold : float64 (n_nodes,)                # IN  numeric rule ``x <= threshold``
    default_left, is_categorical : bool (n_nodes,)
    cat_bitset : uint32 (n_nodes, n_words)
    value : float64 (n_nodes, n_cols)             # IN  leaf values
    cover : float64 (n_nodes,)                    # IN  training cover (children sum to it)
    max_depth : int                               # the tree's depth
    out_cols : int64 (n_cols,)                    # IN  output of each value column
    col_scale : float64 (n_cols,)                 # IN  the tree's weight per column
    out : float64 (n_rows, n_outputs, n_features + 1)   # OUT accumulated; the last
                                                        # column (bias) is not touched
    """
    run_ranges(_tree_shap_range, X.shape[0], X, left, right, feature, threshold, default_left,
               is_categorical, cat_bitset, value, cover, max_depth, out_cols, col_scale, out)


@njit(**RANGE_KERNEL)
def _tree_shap_interactions_range(r_lo, r_hi, X, left, right, feature, threshold, default_left,
                                  is_categorical, cat_bitset, value, cover, max_depth,
                                  out_cols, col_scale, used_features, out):
    """:func:`tree_shap_interactions` for the rows ``r_lo .. r_hi - 1``."""
    n_outputs = out.shape[1]
    n_features = out.shape[2] - 1
    for r in range(r_lo, r_hi):
        fi, zf, of, pw, stack_i, stack_f = _scratch(max_depth)
        plain = np.zeros((n_outputs, n_features + 1))
        on = np.zeros((n_outputs, n_features + 1))
        off = np.zeros((n_outputs, n_features + 1))
        _row_shap(X[r], left, right, feature, threshold, default_left, is_categorical,
                  cat_bitset, value, cover, out_cols, col_scale, plain, fi, zf, of, pw,
                  stack_i, stack_f, 0, -1)
        for c in range(n_outputs):
            for k in range(n_features):
                out[r, c, k, k] += plain[c, k]
        for u in range(used_features.shape[0]):
            j = used_features[u]
            on[:] = 0.0
            off[:] = 0.0
            _row_shap(X[r], left, right, feature, threshold, default_left, is_categorical,
                      cat_bitset, value, cover, out_cols, col_scale, on, fi, zf, of, pw,
                      stack_i, stack_f, 1, j)
            _row_shap(X[r], left, right, feature, threshold, default_left, is_categorical,
                      cat_bitset, value, cover, out_cols, col_scale, off, fi, zf, of, pw,
                      stack_i, stack_f, -1, j)
            for c in range(n_outputs):
                for k in range(n_features):
                    half = (on[c, k] - off[c, k]) / 2.0
                    out[r, c, j, k] += half
                    out[r, c, j, j] -= half


def tree_shap_interactions(X, left, right, feature, threshold, default_left, is_categorical,
                           cat_bitset, value, cover, max_depth, out_cols, col_scale,
                           used_features, out):
    """Add one tree's SHAP interaction values (Lundberg et al. 2018, section 4.2) of every
    row into ``out``: for each feature ``j`` the tree uses, half the difference of the
    values with ``j`` fixed present and fixed absent is ``j``'s interaction with each
    other feature; the diagonal keeps what is left of the plain value, so that each row
    of the matrix sums to the plain SHAP value.

    Parameters
    ----------
    used_features : int64 (k,)                          # IN  features split on in the tree
    out : float64 (n_rows, n_outputs, n_features + 1, n_features + 1)
                                                        # OUT accumulated; the bias
                                                        # entry [-1, -1] is not touched
    other parameters : as :func:`tree_shap`
    """
    run_ranges(_tree_shap_interactions_range, X.shape[0], X, left, right, feature, threshold,
               default_left, is_categorical, cat_bitset, value, cover, max_depth, out_cols,
               col_scale, used_features, out)


@njit(cache=True)
def expected_values(left, right, cover, value, out):
    """Each node's expected value under the cover weighting, bottom up (children ids
    exceed their parent's): ``out[node] = value`` at leaves, else the cover-weighted mean
    of the children's, with the same fractions Tree SHAP uses, so that a row's
    contributions plus the root's expectation equal its prediction exactly.

    out : float64 (n_nodes, n_cols)   # OUT
    """
    for node in range(left.shape[0] - 1, -1, -1):
        if left[node] < 0:
            out[node] = value[node]
        else:
            w = cover[node]
            lo = cover[left[node]] / w if w > 0.0 else 0.5
            hi = cover[right[node]] / w if w > 0.0 else 0.5
            out[node] = lo * out[left[node]] + hi * out[right[node]]
