"""Symmetric (oblivious) trees, CatBoost's ``grow_policy="SymmetricTree"``: a policy
that gives every node of a level the one split whose gain summed over the level is
largest (``kernels/split_symmetric.py``), on XGBoost's second-order scores.

The grower stays depth-wise: each pass builds the histograms of a whole level, and this
policy's search sees all of its nodes at once (the learner plans the histogram pool so
that no expansion waits: ``symmetric_nodes_in_flight``). Every node of the level is
split by the chosen condition, empty children included, so a tree of depth ``D`` is a
complete tree whose ``2^D`` leaves a row reaches by ``D`` comparisons.
"""
from __future__ import annotations

import numpy as np

from ..common import hist_column_starts
from ..kernels.split_cart import hist_bin_starts
from ..kernels.split_gradient import node_score
from ..kernels.split_symmetric import level_gains
from .policies import MIN_GAIN_EPS, GradientPolicy, _outputs, _slot_sums


def symmetric_nodes_in_flight(max_depth: int, n_trees: int) -> int:
    """Histograms a depth-``max_depth`` symmetric growth holds at once for ``n_trees``
    trees: at the last level that builds any, its parents (kept for subtraction) and two
    children each."""
    return int(n_trees) * 3 * 2 ** max(int(max_depth) - 2, 0)


class SymmetricGradientPolicy(GradientPolicy):
    """:class:`GradientPolicy`'s scores and leaf weights, one split a level (module
    docstring). ``min_child_weight`` does not bar a split (a child may be empty, as in
    CatBoost); a level splits when its summed gain beats ``max(gamma, 1e-6)``."""

    def find_splits(self, hist: np.ndarray, sums: np.ndarray, slots: np.ndarray,
                    feature_mask: np.ndarray, trees: np.ndarray | None = None,
                    node_ids: np.ndarray | None = None) -> dict[str, np.ndarray]:
        n_eval, n_features = len(slots), len(self.n_value_bins)
        out = _outputs(n_eval, self.n_words, self.n_stats)
        slots = np.ascontiguousarray(slots, np.int32)
        trees = np.zeros(n_eval, np.int64) if trees is None else np.asarray(trees, np.int64)
        groups, group = np.unique(trees, return_inverse=True)
        allowed = np.ones((len(groups), n_features), bool)
        np.logical_and.at(allowed, group, np.asarray(feature_mask, bool))
        starts = hist_column_starts(self.n_value_bins, self.missing_bin + 1)
        bin_start, flat = hist_bin_starts(hist, starts, n_features)
        node_sums = _slot_sums(hist, sums, slots)
        gains = np.empty((len(groups), n_features, self.missing_bin + 1, 2))
        level_gains(flat, bin_start, node_sums, slots, group.astype(np.int64), allowed,
                    self.n_value_bins, self.is_categorical, self.missing_bin,
                    self.reg_lambda, self.reg_alpha, self.max_delta_step, gains)
        out["feature"][:] = -1
        out["bin"][:] = 0
        out["default_left"][:] = False
        out["is_categorical"][:] = False
        out["gain"][:] = -np.inf
        level_gain = np.full(n_eval, -np.inf)
        for g in range(len(groups)):
            best = int(np.argmax(gains[g]))   # the first best, in (feature, bin, side) order
            f, b, d = np.unravel_index(best, gains[g].shape)
            if not np.isfinite(gains[g].flat[best]):
                continue
            rows = np.flatnonzero(group == g)
            start = int(bin_start[f])
            left = flat[slots[rows], start:start + b + 1, :2].sum(axis=1)
            if d:
                left = left + flat[slots[rows], start + self.missing_bin, :2]
            out["feature"][rows], out["bin"][rows], out["default_left"][rows] = f, b, bool(d)
            out["left_sums"][rows] = left
            out["right_sums"][rows] = node_sums[slots[rows], :2] - left
            out["gain"][rows] = [self._gain(node_sums[s], lft) for s, lft in
                                 zip(slots[rows], left)]
            level_gain[rows] = gains[g].flat[best]
        out["level_gain"] = level_gain
        return out

    def _gain(self, node_sum, left):
        """One node's share of the level's gain (its split's importance)."""
        def score(g, h):
            return node_score(float(g), float(h), self.reg_lambda, self.reg_alpha,
                              self.max_delta_step, 0.0)
        return (score(*left) + score(node_sum[0] - left[0], node_sum[1] - left[1])
                - score(node_sum[0], node_sum[1]))

    def accept_splits(self, result: dict[str, np.ndarray], sums: np.ndarray,
                      trees: np.ndarray | None = None,
                      node_ids: np.ndarray | None = None) -> np.ndarray:
        """bool (n_eval,): every node of a level whose summed gain beats
        ``max(gamma, 1e-6)``."""
        return (result["feature"] >= 0) & (result["level_gain"] > max(self.gamma,
                                                                       MIN_GAIN_EPS))
