"""AdaBoost.MH (Schapire and Singer 1999), real-valued predictions on the partitions of
trees: one weight ``D(i, l)`` per (row, label), labels ``Y_il = +1`` for the row's class
and -1 for the others.

Each round grows a tree minimising ``Z = 2 sum_leaves sum_l sqrt(W+_jl W-_jl)`` (the
``adaboost_mh`` split criterion over the per-label positive and negative weights), sets
leaf ``j``'s prediction for label ``l`` to ``c_jl = lr / 2 ln((W+_jl + eps) / (W-_jl +
eps))`` with Schapire and Singer's smoothing ``eps = 1 / (n K)`` (weights normalised to
sum 1), and updates ``D(i, l) <- D(i, l) exp(-Y_il c_jl) / Z_t``. ``H(x, l) = sum_t c``;
the class is ``argmax_l H``. As SAMME does, the update of a round is fused into the next
round's first pass: the normaliser ``Z_t`` comes from the leaves' sums.
"""
import numpy as np

from ...common import G_H_DTYPE, NODE_DTYPE
from ...kernels import adaboost_kernels as ak
from .run import STOP_CHANCE, STOP_PERFECT, RoundResult, class_labels, sample_weight


class MHBoost:
    """AdaBoost.MH with trees as the domain-partitioning weak learners."""

    algorithm = "MH"

    def __init__(self, run, algorithm, n_classes, learning_rate):
        self.run = run
        self.K = int(n_classes)
        self.lr = float(learning_rate)
        self.n_trees = 1
        self.prev = None            # grower of the previous round (pending splits)
        self.prev_value = None      # its leaf predictions c (n_nodes, K)
        self.scale = 1.0
        self.eps = 1.0 / (max(run.cache.n_rows, 1) * self.K)

    @staticmethod
    def state_fields(n_classes, algorithm):
        return {"dist": ((None, n_classes), np.float64), "node": ((1, None), NODE_DTYPE),
                "stats": ((1, None, 2 * n_classes + 1), G_H_DTYPE)}

    def prepare_block(self, block, views):
        y = class_labels(block, self.K)
        dist, node = views["dist"], views["node"]
        if self.prev is None:
            sw, has_w = sample_weight(block)
            dist[:] = (sw[:, None] if has_w else 1.0)
        else:
            self.prev.apply_pending(block.stored_codes, node)
            ak.mh_reweight(node[0], self.prev_value, y, self.scale, dist)
        ak.mh_stats(y, dist, views["stats"][0])
        node[:] = 0

    def grow_round(self, round_index):
        grower = self.run.grow_weighted_tree(self, round_index, self.K)
        arrays = grower.tree_arrays(0)
        K = self.K
        # the policy's leaf values are the 2K lanes' proportions: back to (W+, W-)
        lanes = arrays["value"] * arrays["cover"][:, None]
        w_pos, w_neg = lanes[:, :K], lanes[:, K:]
        total = float(arrays["cover"][0])
        eps = self.eps * total
        value = 0.5 * self.lr * np.log((w_pos + eps) / (w_neg + eps))
        out = dict(arrays)
        out["value"] = value
        leaf = arrays["left"] < 0
        # weighted Hamming error of sign(h): the wrong lane of every (leaf, label)
        wrong = np.where(value[leaf] > 0, w_neg[leaf], w_pos[leaf])
        err = float(wrong.sum() / total) if total > 0 else 0.0
        if err <= 0:
            return RoundResult([out], 1.0, 0.0, STOP_PERFECT)
        new_total = float(np.sum(w_pos[leaf] * np.exp(-value[leaf])
                                 + w_neg[leaf] * np.exp(value[leaf])))
        if not new_total < total:
            # Z_t >= 1: the tree has no edge on any label
            return RoundResult([out], 0.0, err, STOP_CHANCE, keep=False)
        self.scale = 1.0 / new_total
        self.prev = grower
        self.prev_value = np.ascontiguousarray(value)
        return RoundResult([out], 1.0, err)

    def finish(self):
        """Nothing pending: the last tree's error came from its leaf sums."""

