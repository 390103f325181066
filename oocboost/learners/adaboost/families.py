"""The AdaBoost families, each a strategy that feeds the shared grower: SAMME,
SAMME.R and arc-x4 (Gini trees on reweighted rows); gentle AdaBoost and LogitBoost
(Friedman, Hastie and Tibshirani 2000: regression trees on working responses);
AdaBoost.R2 (Drucker 1997).
"""
import math

import numpy as np

from ...common import G_H_DTYPE, NODE_DTYPE, weighted_sum
from ...kernels import adaboost_kernels as ak
from ...kernels.partition import add_node_values
from .run import (
    STOP_CHANCE,
    STOP_PERFECT,
    RoundResult,
    class_labels,
    sample_weight,
    weighted_error,
)

#: LogitBoost's working-response clip (FHT 2000 recommend a value between 2 and 4).
LOGITBOOST_Z_MAX = 4.0
from ...model.adaboost import REGRESSOR_ALGORITHM

# --------------------------------------------------------------------------- SAMME family


class GiniBoost:
    """SAMME, SAMME.R and arc-x4: gini trees on per-row sample weights."""

    def __init__(self, run, algorithm, n_classes, learning_rate):
        self.run = run
        self.algorithm = algorithm
        self.K = int(n_classes)
        self.lr = float(learning_rate)
        self.n_trees = 1
        self.prev = None          # grower of the previous round (pending splits)
        self.prev_leaf_class = None
        self.prev_log_proba = None
        self.alpha = 0.0
        self.scale = 1.0

    @staticmethod
    def state_fields(n_classes, algorithm):
        fields = {"weight": ((None,), np.float64), "node": ((1, None), NODE_DTYPE),
                  "stats": ((1, None, n_classes + 1), G_H_DTYPE)}
        if algorithm == "arc-x4":
            fields["n_missed"] = ((None,), np.float32)
        return fields

    def prepare_block(self, block, views):
        y = class_labels(block, self.K)
        w = views["weight"]
        node = views["node"]
        sw, has_w = sample_weight(block)
        if self.prev is None:
            if self.algorithm == "arc-x4":
                views["n_missed"][:] = 0.0
                ak.arc_x4_reweight(np.empty(0, NODE_DTYPE), np.empty(1, np.int32), y, sw,
                                   has_w, 1.0, views["n_missed"], w)
            else:
                w[:] = sw if has_w else 1.0
        else:
            self.prev.apply_pending(block.stored_codes, node)
            if self.algorithm in ("SAMME", "M1"):
                ak.samme_reweight(node[0], self.prev_leaf_class, y, self.alpha, self.scale, w)
            elif self.algorithm == "SAMME.R":
                ak.samme_r_reweight(node[0], self.prev_log_proba, y,
                                    self.lr * (self.K - 1) / self.K, self.scale, w)
            else:
                ak.arc_x4_reweight(node[0], self.prev_leaf_class, y, sw, has_w, self.scale,
                                   views["n_missed"], w)
        ak.class_weight_stats(y, w, views["stats"][0])
        node[:] = 0

    def grow_round(self, round_index):
        grower = self.run.grow_weighted_tree(self, round_index, self.K)
        return self._end_round(grower, round_index)

    def _end_round(self, grower, round_index):
        arrays = grower.tree_arrays(0)
        K = self.K
        wrong, total = weighted_error(arrays)
        err = wrong / total if total > 0 else 0.0
        value = arrays["value"]
        leaf_class = np.argmax(value, axis=1).astype(np.int32)
        out = dict(arrays)
        if self.algorithm == "SAMME":
            code = np.full((len(value), K), -1.0 / (K - 1))
            code[np.arange(len(value)), leaf_class] = 1.0
            out["value"] = code / (K - 1)
            if err <= 0:
                return RoundResult([out], 1.0, 0.0, STOP_PERFECT)
            if err >= 1.0 - 1.0 / K:
                return RoundResult([out], 0.0, err, STOP_CHANCE, keep=False)
            alpha = self.lr * (math.log((1.0 - err) / err) + math.log(K - 1.0))
            self.alpha = alpha
            # new total = W (1 - err) + W err e^alpha: normalise the weights to sum 1
            self.scale = 1.0 / (total * (1.0 - err) + total * err * math.exp(alpha))
            weight = alpha
        elif self.algorithm == "M1":
            return self._end_m1(out, value, leaf_class, err, total, grower)
        elif self.algorithm == "SAMME.R":
            log_proba = np.log(np.clip(value, ak.PROBA_EPS, None))
            out["value"] = log_proba - log_proba.mean(axis=1, keepdims=True)
            if err <= 0:
                return RoundResult([out], 1.0, 0.0, STOP_PERFECT)
            self.prev_log_proba = np.ascontiguousarray(log_proba)
            self.scale = 1.0 / total if total > 0 else 1.0
            weight = 1.0
        else:  # arc-x4
            vote = np.zeros((len(value), K))
            vote[np.arange(len(value)), leaf_class] = 1.0
            out["value"] = vote
            if err <= 0:
                return RoundResult([out], 1.0, 0.0, STOP_PERFECT)
            if err >= 1.0 - 1.0 / K:
                return RoundResult([out], 0.0, err, STOP_CHANCE, keep=False)
            self.scale = 1.0
            weight = 1.0
        self.prev = grower
        self.prev_leaf_class = leaf_class
        return RoundResult([out], weight, err)

    def _end_m1(self, out, value, leaf_class, err, total, grower):
        """AdaBoost.M1 (Freund and Schapire 1996): one-hot votes weighted by
        ``alpha = lr log((1 - err) / err)``; stop once a tree's error reaches 1/2."""
        vote = np.zeros((len(value), self.K))
        vote[np.arange(len(value)), leaf_class] = 1.0
        out["value"] = vote
        if err <= 0:
            return RoundResult([out], 1.0, 0.0, STOP_PERFECT)
        if err >= 0.5:
            return RoundResult([out], 0.0, err, STOP_CHANCE, keep=False)
        alpha = self.lr * math.log((1.0 - err) / err)
        self.alpha = alpha
        self.scale = 1.0 / (total * (1.0 - err) + total * err * math.exp(alpha))
        self.prev = grower
        self.prev_leaf_class = leaf_class
        return RoundResult([out], alpha, err)

    def finish(self):
        """Nothing pending: the last tree's error came from its leaf sums."""


# --------------------------------------------------------------------------- FHT 2000


class AdditiveLogistic:
    """Gentle AdaBoost and LogitBoost: weighted least-squares trees on scores ``F``."""

    def __init__(self, run, algorithm, n_classes, learning_rate):
        self.run = run
        self.algorithm = algorithm
        self.K = int(n_classes)
        self.lr = float(learning_rate)
        self.n_trees = 1 if self.K == 2 else self.K
        self.prev = None
        self.prev_f = None        # raw leaf values f of the previous round, per tree
        self.prev_step = None     # what was added to F, per tree
        self.offset = np.zeros(self.n_trees)
        self.wsum = np.zeros(self.n_trees)
        self.wrong = np.zeros(self.n_trees)
        self.pending_error_round = None

    @staticmethod
    def state_fields(n_classes, algorithm):
        T = 1 if n_classes == 2 else n_classes
        return {"F": ((None, T), np.float64), "node": ((T, None), NODE_DTYPE),
                "stats": ((T, None, 4), G_H_DTYPE)}

    def _positive_class(self, t):
        return 1 if self.n_trees == 1 else t

    def _apply_previous(self, block, views, y):
        """Leaf of each row in the previous trees, their weighted sign error, F += step."""
        node, F, stats = views["node"], views["F"], views["stats"]
        self.prev.apply_pending(block.stored_codes, node)
        for t in range(self.n_trees):
            self.wrong[t] += ak.sign_error(node[t], self.prev_f[t], y,
                                           self._positive_class(t), stats[t, :, 0])
            self.wsum[t] += float(np.sum(stats[t, :, 0], dtype=np.float64))
            add_node_values(node[t], self.prev_step[t], 1.0, F[:, t])

    def prepare_block(self, block, views):
        y = class_labels(block, self.K)
        sw, has_w = sample_weight(block)
        if self.prev is None:
            views["F"][:] = 0.0
        else:
            self._apply_previous(block, views, y)
        stats = views["stats"]
        if self.algorithm == "gentle":
            ak.gentle_stats(y, views["F"], self.offset, sw, has_w, stats)
        else:
            ak.logitboost_stats(y, views["F"], sw, has_w, LOGITBOOST_Z_MAX, stats)
        views["node"][:] = 0
        self.round_total += np.sum(stats[:, :, 0], axis=1, dtype=np.float64)

    def _previous_error(self):
        """Mean over trees of the previous round's weighted sign errors."""
        errs = np.divide(self.wrong, self.wsum, out=np.zeros(self.n_trees),
                         where=self.wsum > 0)
        self.wrong[:] = 0.0
        self.wsum[:] = 0.0
        return float(errs.mean())

    def grow_round(self, round_index):
        policy = self.run.policy(0, round_index, self.n_trees)
        grower = self.run.new_grower(self.n_trees, policy, round_index)
        self.round_total = np.zeros(self.n_trees)
        self.run.grow(grower, self.prepare_block)
        previous_error = self._previous_error() if self.prev is not None else None
        if self.algorithm == "gentle":
            # rescale next round's weights by this round's totals (gentle_stats' offset)
            self.offset += np.log(np.where(self.round_total > 0, self.round_total, 1.0))
        K = self.K
        trees, f, step = [], [], []
        for t in range(self.n_trees):
            arrays = grower.tree_arrays(t)
            raw = np.ascontiguousarray(arrays["value"][:, 0])
            if self.algorithm == "gentle":
                s = self.lr * raw
            elif self.n_trees == 1:
                s = self.lr * 0.5 * raw
            else:
                # FHT Alg. 6 also centres f_k over the classes; softmax is invariant to
                # adding the same value to every class, so the centring is left out.
                s = self.lr * (K - 1.0) / K * raw
            arrays["value"] = np.column_stack([-s, s]) if self.n_trees == 1 else s[:, None]
            trees.append(arrays)
            f.append(raw)
            step.append(np.ascontiguousarray(s))
        self.prev, self.prev_f, self.prev_step = grower, f, step
        result = RoundResult(trees, 1.0, np.nan)
        result.previous_error = previous_error
        return result

    def finish(self):
        """One more pass: the last trees' leaves and weighted sign errors."""
        if self.prev is None:
            return None
        for block in self.run.blocks():
            views = self.run.rows.load(block.index)
            self._apply_previous(block, views, class_labels(block, self.K))
            views["node"][:] = 0
            self.run.rows.store(block.index, views)
        self.prev = None
        return self._previous_error()


# --------------------------------------------------------------------------- AdaBoost.R2


class R2Boost:
    """AdaBoost.R2 (Drucker 1997) with scikit-learn's normalisation and stop rules."""

    algorithm = REGRESSOR_ALGORITHM

    def __init__(self, run, loss, learning_rate):
        self.run = run
        self.loss = loss
        self.loss_code = ak.LOSS_CODES[loss]
        self.lr = float(learning_rate)
        self.n_trees = 1
        self.beta = None
        self.error_max = 0.0
        self.scale = 1.0

    @staticmethod
    def state_fields():
        return {"weight": ((None,), np.float64), "error": ((None,), np.float64),
                "node": ((1, None), NODE_DTYPE), "stats": ((1, None, 4), G_H_DTYPE)}

    def prepare_block(self, block, views):
        w = views["weight"]
        if self.beta is None:
            sw, has_w = sample_weight(block)
            w[:] = sw if has_w else 1.0
        else:
            ak.r2_reweight(views["error"], self.error_max, self.loss_code, self.beta, self.lr,
                           self.scale, w)
        ak.regression_stats(block.label, w, views["stats"][0])
        views["node"][:] = 0

    def grow_round(self, round_index):
        grower = self.run.grow_weighted_tree(self, round_index, 0)
        arrays = grower.tree_arrays(0)
        value = np.ascontiguousarray(arrays["value"][:, 0])
        # error pass: leaf of each row, |f(x) - y|, the largest error, the loss sums
        error_max, total = 0.0, 0.0
        sums = np.zeros(2)
        for block in self.run.blocks():
            views = self.run.rows.load(block.index)
            grower.apply_pending(block.stored_codes, views["node"])
            e, w = views["error"], views["weight"]
            ak.abs_errors(views["node"][0], value, block.label, e)
            positive = w > 0
            if positive.any():
                error_max = max(error_max, float(e[positive].max()))
            total += float(w.sum())
            sums += (weighted_sum(w, e), weighted_sum(w, e * e))
            self.run.rows.store(block.index, views)
        if self.loss_code == 2:
            loss_sum = 0.0
            for _, views in self.run.state_blocks():
                loss_sum += ak.r2_weighted_loss(views["error"], views["weight"], error_max, 2)
        else:
            d = error_max if error_max != 0 else 1.0
            loss_sum = sums[0] / d if self.loss_code == 0 else sums[1] / (d * d)
        err = loss_sum / total if total > 0 else 0.0
        if err <= 0:
            return RoundResult([arrays], 1.0, 0.0, STOP_PERFECT)
        if err >= 0.5:
            # scikit-learn keeps a first estimator (with weight 0) and drops later ones
            return RoundResult([arrays], 0.0, err, STOP_CHANCE, keep=round_index == 0)
        self.beta = err / (1.0 - err)
        self.error_max = error_max
        self.scale = 1.0 / total
        return RoundResult([arrays], self.lr * math.log(1.0 / self.beta), err)

    def finish(self):
        """Nothing pending: the error pass applied the last tree."""
