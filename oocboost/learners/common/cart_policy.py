"""The CART policy of a forest: per-tree root weights and per-tree randomness on top of
:class:`~oocboost.engine.policies.CartPolicy`."""

import numpy as np

from ...engine.policies import CartPolicy, full_columns
from ...kernels import split_cart as kcart


class ForestCartPolicy(CartPolicy):
    """:class:`CartPolicy` for several trees of different root weights in one pass.

    The root weight ``W_root`` of each tree (bootstrap draws make it differ per tree)
    normalises its impurity decreases and sets ``min_weight_leaf =
    min_weight_fraction_leaf * W_root``. It is read from the roots' sums when the grower
    evaluates them (first pass), before any split search of that tree. Adds
    scikit-learn's ``min_samples_split`` rule to :meth:`accept_splits`. Extra-trees
    thresholds are drawn from per-tree generators.
    """

    def __init__(self, *, n_trees, min_samples_split=2, min_weight_fraction_leaf=0.0,
                 threshold_rngs=None, **kwargs):
        super().__init__(total_weight=1.0, splitter="best", rng=None, min_weight_leaf=0.0,
                         **kwargs)
        self.root_weight = np.full(n_trees, np.nan)
        self.min_samples_split = float(min_samples_split)
        self.min_weight_fraction_leaf = float(min_weight_fraction_leaf)
        self.threshold_rngs = threshold_rngs

    def find_splits(self, hist, sums, slots, feature_mask, trees=None, node_ids=None,
                    random_bin=None, column_feature=None, zero_after=False):
        slots = np.ascontiguousarray(slots, np.int32)
        trees = np.asarray(trees, dtype=np.int64)
        roots = np.asarray(node_ids) == 0
        if roots.any():
            # The roots are evaluated first, in the tree's first pass: every later split
            # search of that tree sees its root weight.
            self.root_weight[trees[roots]] = self.weights(np.asarray(sums)[roots])
        if column_feature is None:
            column_feature = full_columns(len(slots), len(self.n_value_bins))
        n_eval, n_columns = len(slots), column_feature.shape[1]
        if self.threshold_rngs is not None and n_eval:
            uniforms = np.empty((n_eval, n_columns))
            for t in np.unique(trees):
                sel = trees == t
                uniforms[sel] = self.threshold_rngs[t].random((int(sel.sum()), n_columns))
            random_bin = np.empty((n_eval, n_columns), np.int32)
            kcart.draw_random_bins(hist, slots, column_feature, self.n_value_bins,
                                   self.is_categorical, self.count_stat, uniforms, random_bin,
                                   column_of=self.hist_columns(hist, column_feature))
        # One search per tree, with that tree's own root weight: the gains are then
        # computed exactly as for a lone tree, whatever the other trees of the pass.
        out = None
        if n_eval == 0:
            return super().find_splits(hist, sums, slots, feature_mask, random_bin=random_bin,
                                       column_feature=column_feature, zero_after=zero_after)
        for t in np.unique(trees):
            sel = np.flatnonzero(trees == t)
            self.total_weight = float(self.root_weight[t])
            self.min_weight_leaf = self.min_weight_fraction_leaf * self.total_weight
            part = super().find_splits(hist, sums[sel], slots[sel], feature_mask[sel],
                                       trees=trees[sel],
                                       node_ids=np.asarray(node_ids)[sel],
                                       random_bin=None if random_bin is None
                                       else random_bin[sel],
                                       column_feature=column_feature[sel],
                                       zero_after=zero_after)
            if out is None:
                out = {k: np.empty((n_eval,) + v.shape[1:], v.dtype) for k, v in part.items()
                       if k != "importance_gain"}
            for k in out:
                out[k][sel] = part[k]
        out["importance_gain"] = out["gain"]
        return out

    def accept_splits(self, result, sums, trees=None, node_ids=None):
        ok = super().accept_splits(result, sums)
        return ok & (np.asarray(sums)[:, self.count_stat] >= self.min_samples_split)
