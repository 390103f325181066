"""Split search for symmetric (oblivious) trees, CatBoost's ``SymmetricTree``: every
node of a level splits on one shared condition, the one whose gain summed over the
level's nodes is largest.

For each candidate ``(feature f, bin b, missing side d)`` and each node ``n`` of the
level, with ``(G, H)`` the node's gradient and hessian sums and ``(G_L, H_L)`` those of
its rows with code ``<= b`` (and its missing rows when ``d`` is left)::

    gain(n, f, b, d) = S(G_L, H_L) + S(G - G_L, H - H_L) - S(G, H)
    S(G, H)          = XGBoost's node score (``split_gradient.node_score``), 0 for H <= 0

and the level takes ``argmax_{f, b, d} sum_n gain(n, f, b, d)``. A child may be empty:
its score is 0, as in CatBoost, and every node splits, so a tree of depth ``D`` has
``2^D`` leaves.
"""
import numpy as np
from numba import njit

from .parallel import RANGE_KERNEL, run_ranges
from .split_gradient import node_score


@njit(**RANGE_KERNEL)
def _level_gains_range(f_lo, f_hi, hist, bin_start, node_sums, slots, group,
                       feature_allowed, n_value_bins, is_categorical, missing_bin,
                       reg_lambda, reg_alpha, max_delta_step, out):
    """:func:`level_gains` for the features ``f_lo .. f_hi - 1``."""
    n_eval = slots.shape[0]
    for f in range(f_lo, f_hi):
        for g in range(out.shape[0]):
            for b in range(out.shape[2]):
                out[g, f, b, 0] = -np.inf
                out[g, f, b, 1] = -np.inf
        nvb = n_value_bins[f]
        if is_categorical[f] or nvb < 2:
            continue
        for g in range(out.shape[0]):
            if feature_allowed[g, f]:
                for b in range(nvb - 1):
                    out[g, f, b, 0] = 0.0
                    out[g, f, b, 1] = 0.0
        start = bin_start[f]
        for e in range(n_eval):
            g = group[e]
            if not feature_allowed[g, f]:
                continue
            s = slots[e]
            grad = node_sums[s, 0]
            hess = node_sums[s, 1]
            parent = node_score(grad, hess, reg_lambda, reg_alpha, max_delta_step, 0.0)
            miss_g = hist[s, start + missing_bin, 0]
            miss_h = hist[s, start + missing_bin, 1]
            left_g = 0.0
            left_h = 0.0
            for b in range(nvb - 1):
                left_g += hist[s, start + b, 0]
                left_h += hist[s, start + b, 1]
                for d in range(2):
                    lg = left_g + miss_g * d
                    lh = left_h + miss_h * d
                    out[g, f, b, d] += (
                        node_score(lg, lh, reg_lambda, reg_alpha, max_delta_step, 0.0)
                        + node_score(grad - lg, hess - lh, reg_lambda, reg_alpha,
                                     max_delta_step, 0.0) - parent)


def level_gains(hist, bin_start, node_sums, slots, group, feature_allowed, n_value_bins,
                is_categorical, missing_bin, reg_lambda, reg_alpha, max_delta_step, out):
    """Each group's (a tree's level) summed gain of every candidate (module docstring).

    Parameters
    ----------
    hist : ndarray (n_slots, n_columns * max_bin, width >= 2) float64, column ``f``'s
        bins from ``bin_start[f]`` (``split_cart.hist_bin_starts``)               # IN
    bin_start : ndarray (n_features + 1,) int64                                    # IN
    node_sums : ndarray (n_slots, 2) float64, gradient and hessian of each slot   # IN
    slots : ndarray (n_eval,) int32; group : ndarray (n_eval,) int64 in [0, n_groups)
    feature_allowed : ndarray (n_groups, n_features) bool                          # IN
    n_value_bins : ndarray (n_features,) int32; is_categorical : (n_features,) bool
    missing_bin : int; reg_lambda, reg_alpha, max_delta_step : float
    out : ndarray (n_groups, n_features, max_bin, 2) float64: -inf where no split  # OUT
    """
    run_ranges(_level_gains_range, n_value_bins.shape[0], hist, bin_start, node_sums, slots,
               group, feature_allowed, n_value_bins, is_categorical, missing_bin,
               reg_lambda, reg_alpha, max_delta_step, out)
