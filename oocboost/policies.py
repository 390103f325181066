"""Split policies: what the grower asks of a learner's criterion (a strategy object).

A policy turns histograms into split decisions and node sums into leaf values. The grower
is the same for every learner; boosting hands it a ``GradientPolicy`` (XGBoost's
second-order gain), trees and forests a ``CartPolicy`` (gini, entropy, squared error).

Protocol::

    n_stats, n_outputs, count_stat, cover_stat
    find_splits(hist, sums (n_eval, n_stats), slots (n_eval,), feature_mask, random_bin)
        -> dict(gain, feature, bin, default_left, is_categorical, cat_bitset,
                left_sums, right_sums[, importance_gain])
    leaf_values(sums (n, n_stats)) -> (n, n_outputs)
"""
import numpy as np

from .kernels import split as ks

#: XGBoost's kRtEps: a split must gain more than this to be taken.
MIN_GAIN_EPS = 1e-6


def _slot_sums(hist, sums, slots):
    node_sums = np.zeros((hist.shape[0], hist.shape[3]), np.float64)
    node_sums[slots] = sums
    return node_sums


def _outputs(n_eval, n_features, max_bin, n_stats):
    return dict(
        gain=np.empty(n_eval), feature=np.empty(n_eval, np.int32),
        bin=np.empty(n_eval, np.int32), default_left=np.empty(n_eval, np.bool_),
        is_categorical=np.empty(n_eval, np.bool_),
        cat_bitset=np.zeros((n_eval, ks.n_bitset_words(max_bin)), np.uint32),
        left_sums=np.empty((n_eval, n_stats)), right_sums=np.empty((n_eval, n_stats)))


class GradientPolicy:
    """XGBoost's regularised second-order split gain and leaf weights.

    Gain (twice Eq. 7 of Chen & Guestrin 2016, without gamma, as XGBoost reports it)::

        gain = T(G_L)^2/(H_L+lambda) + T(G_R)^2/(H_R+lambda) - T(G)^2/(H+lambda)

    with ``T`` the L1 soft threshold by ``alpha``; leaf weight ``w = -T(G)/(H+lambda)``
    clipped to ``max_delta_step``. A split is taken when ``gain > max(gamma, 1e-6)``
    (XGBoost prunes ``loss_chg < min_split_loss`` and ignores gains below kRtEps).
    """

    n_stats = 3
    n_outputs = 1
    count_stat = ks.GRAD_COUNT_STAT
    cover_stat = 1  # sum of hessians, XGBoost's "cover"

    def __init__(self, *, reg_lambda, reg_alpha, max_delta_step, min_child_weight,
                 max_cat_to_onehot, n_value_bins, is_categorical, missing_bin, gamma=0.0,
                 max_cat_threshold=ks.DEFAULT_MAX_CAT_THRESHOLD):
        self.gamma = float(gamma)
        self.reg_lambda = float(reg_lambda)
        self.reg_alpha = float(reg_alpha)
        self.max_delta_step = float(max_delta_step)
        self.min_child_weight = float(min_child_weight)
        self.max_cat_to_onehot = int(max_cat_to_onehot)
        self.max_cat_threshold = int(max_cat_threshold)
        self.n_value_bins = np.ascontiguousarray(n_value_bins, dtype=np.int32)
        self.is_categorical = np.ascontiguousarray(is_categorical, dtype=np.bool_)
        self.missing_bin = int(missing_bin)

    def find_splits(self, hist, sums, slots, feature_mask, random_bin=None):
        out = _outputs(len(slots), hist.shape[1], hist.shape[2], self.n_stats)
        ks.find_splits_gradient(
            hist, _slot_sums(hist, sums, slots), np.ascontiguousarray(slots, np.int32),
            feature_mask, self.n_value_bins, self.is_categorical, self.missing_bin,
            self.reg_lambda, self.reg_alpha, self.max_delta_step, self.min_child_weight,
            self.max_cat_to_onehot, self.max_cat_threshold, out["gain"], out["feature"],
            out["bin"], out["default_left"], out["is_categorical"], out["cat_bitset"],
            out["left_sums"], out["right_sums"])
        return out

    def accept_splits(self, result, sums):
        """bool (n_eval,): a valid split whose gain beats ``max(gamma, 1e-6)``."""
        gain = result["gain"]
        return (result["feature"] >= 0) & np.isfinite(gain) & (gain > max(self.gamma,
                                                                           MIN_GAIN_EPS))

    def leaf_values(self, sums):
        values = np.empty(len(sums))
        ks.leaf_values_gradient(np.ascontiguousarray(sums), self.reg_lambda, self.reg_alpha,
                                self.max_delta_step, self.min_child_weight, values)
        return values[:, None]
