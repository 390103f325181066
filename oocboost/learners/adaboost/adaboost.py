"""The AdaBoost family on the shared grower: weak trees grown from per-row sample weights.

Every weak learner is a tree grown by :class:`~oocboost.engine.grower.TreeGrower` from cache
blocks with a :class:`~oocboost.engine.policies.CartPolicy` (stumps by default, any depth). The
algorithms differ only in the per-row statistics they hand the grower and in how the
per-row state (sample weights, scores ``F``, miss counts) is updated after each tree:

==============  ===========  ==============================  ==========================
algorithm       criterion    per-row state                   update after tree ``m``
==============  ===========  ==============================  ==========================
``SAMME``       gini         weight                          ``w *= exp(alpha 1{miss})``
``SAMME.R``     gini         weight                          ``w *= exp(-(K-1)/K c.log p)``
``arc-x4``      gini         weight, times missed ``m``      ``w = s (1 + m^4)``
``gentle``      squared      scores ``F`` (T columns)        ``F += f``, ``w = s e^{-y*F}``
``logitboost``  squared      scores ``F`` (T columns)        ``F += f/2`` (or (K-1)/K f)
``R2``          squared      weight, abs. error              ``w *= beta^(1 - L)``
==============  ===========  ==============================  ==========================

Per-row state lives in RAM while it fits ``memory_limit`` and is otherwise spilled per
block beside the cache (``rowstate.py``), exactly like boosting margins.

Passes over the data per round
------------------------------
A depth-``d`` tree is grown in ``d`` passes (root histogram, then one pass per level; a
stump is one pass: its children are terminal). The splits of the last level are applied
in the *next* round's first pass, fused with the weight update and the next root
histogram (as gradient boosting fuses its margin update)::

    round m, pass 0   for each block: apply tree m-1's last splits -> leaf of each row,
                      update the row's weight (or F) with tree m-1, make this round's
                      statistics, add the rows into the root histogram of tree m
    round m, pass k   rows move one level down, histograms of level k

This works because the update of tree ``m-1`` needs only numbers known when it ends:

- SAMME, SAMME.R and arc-x4: the weighted training error of a tree is a function of its
  leaves' class-weight sums, which the grower already has (``err = sum over leaves of
  W_leaf - max_k W_leaf,k``), so ``alpha`` and the stop rules are decided without a pass.
  SAMME normalises exactly (the new total is ``W (1 - err) + W err e^alpha``); SAMME.R
  and arc-x4 normalise lazily by the previous total (gini and leaf proportions are
  invariant to a constant factor on the weights).
- Gentle and LogitBoost: the weights are functions of ``F``; Gentle's are rescaled by the
  previous round's total (a per-tree offset ``c``: ``w = s exp(-y* F - c)``). Their
  ``estimator_errors_`` (weighted error of ``sign f``) are counted in that fused pass,
  so one extra pass at the very end counts the last tree's.
- AdaBoost.R2 normalises errors by their maximum over all rows, so it needs one
  error pass per round (``d + 1`` passes; ``exponential`` loss also one pass over the
  per-row state only, no cache read).

So: SAMME, SAMME.R, arc-x4: ``d`` passes per round; Gentle, LogitBoost: ``d`` per round
plus one at the end; R2: ``d + 1`` per round. ``model.training_log["data_passes"]`` counts
them.

Model encoding
--------------
The weak trees' leaf values hold their contribution to the margins, so
``Model.predict_margin`` (and ``oocboost predict``) give the ensemble's scores:

- SAMME: leaf ``(K,)`` vector ``code / (K-1)``, ``code = 1`` for the leaf's class and
  ``-1/(K-1)`` for the others, tree weight ``alpha``, aggregation ``"mean"``;
  SAMME.R: ``log p - mean_k log p_k`` (= ``h / (K-1)``), weight 1, ``"mean"``. The
  margin is scikit-learn's ``decision_function / (K-1)`` (K > 2; for two classes
  ``decision = margin[:, 1] - margin[:, 0]``), objective ``multi:softprob``: softmax of
  the margin is scikit-learn's ``predict_proba`` (``softmax(decision / (K-1))``, and
  ``softmax([-d, d] / 2)`` for two classes).
- arc-x4: one-hot leaf votes, weight 1, ``"mean"``, objective ``multi:proba``: the margin
  is the fraction of votes per class.
- Gentle, LogitBoost: ``"sum"``, objective ``multi:softprob``. Two classes: one tree per
  round with leaf vector ``(-f, f)`` (so softmax gives FHT's ``p = e^F / (e^F + e^-F)``);
  K classes: K trees per round, tree ``k`` adds to output ``k``.
- AdaBoost.R2: leaf means, weight ``log(1/beta)``, ``"mean"``, ``reg:squarederror``:
  ``Model.predict_margin`` is the weighted *mean* of the trees. AdaBoost.R2 predicts the
  weighted *median*, which is not a sum; the model says so in
  ``attributes["adaboost"]["prediction"] == "weighted_median"`` and ``oocboost.model.predict``
  (hence ``oocboost predict``/``evaluate``) and the estimator honour it.
"""
import math
import time

import numpy as np

from ...common import G_H_DTYPE, NODE_DTYPE
from ...errors import ParameterError
from ...engine.grower import GrowerTelemetry, GrowthParams, TreeGrower
from ...kernels import adaboost_kernels as ak
from ...kernels.partition import add_node_values
from ...engine.policies import CartPolicy
from ...engine.rowstate import RowStateSpec, make_row_state, spill_dir_for
from ...engine.blocks import timed_blocks
from ...model.adaboost import REGRESSOR_ALGORITHM

CLASSIFIER_ALGORITHMS = ("SAMME", "SAMME.R", "gentle", "logitboost", "arc-x4")
_ALIASES = {"samme": "SAMME", "discrete": "SAMME", "samme.r": "SAMME.R", "real": "SAMME.R",
            "gentle": "gentle", "logitboost": "logitboost", "logit": "logitboost",
            "arc-x4": "arc-x4", "arcx4": "arc-x4", "arc_x4": "arc-x4", "r2": "R2",
            "adaboost.r2": "R2"}
LOSSES = tuple(ak.LOSS_CODES)
#: LogitBoost's working-response clip (FHT 2000 recommend a value between 2 and 4).
LOGITBOOST_Z_MAX = 4.0

STOP_PERFECT = "perfect"
STOP_CHANCE = "no better than chance"


def canonical_algorithm(name):
    """The canonical spelling of an algorithm name (case-insensitive), or ParameterError."""
    key = str(name).strip().lower() if isinstance(name, str) else None
    if key not in _ALIASES:
        raise ParameterError(f"algorithm must be one of {CLASSIFIER_ALGORITHMS + ('R2',)}, "
                             f"got {name!r}")
    return _ALIASES[key]


def check_boost_params(n_estimators, learning_rate, max_depth, loss="linear"):
    """Validate the shared parameters; raise ParameterError naming the culprit."""
    if not isinstance(n_estimators, (int, np.integer)) or isinstance(n_estimators, bool) \
            or n_estimators < 1:
        raise ParameterError(f"n_estimators must be a positive integer, got {n_estimators!r}")
    if not isinstance(learning_rate, (int, float, np.number)) or isinstance(learning_rate, bool) \
            or not (learning_rate > 0 and math.isfinite(learning_rate)):
        raise ParameterError(f"learning_rate must be a positive finite number, got "
                             f"{learning_rate!r}")
    if max_depth is not None and (not isinstance(max_depth, (int, np.integer))
                                  or isinstance(max_depth, bool) or max_depth < 1):
        raise ParameterError(f"max_depth must be a positive integer or None, got "
                             f"{max_depth!r}")
    if loss not in LOSSES:
        raise ParameterError(f"loss must be one of {LOSSES}, got {loss!r}")


# --------------------------------------------------------------------------- plumbing


class _Run:
    """What every algorithm shares: the cache, the per-row state, growers and telemetry."""

    def __init__(self, cache, spec, plan, *, max_depth, seed, prefetch, state_in_ram):
        self.cache = cache
        self.spec = spec
        self.plan = plan
        self.prefetch = plan.prefetch if prefetch is None else int(prefetch)
        in_ram = plan.state_in_ram if state_in_ram is None else bool(state_in_ram)
        self.rows = make_row_state(spec, cache.block_row_starts, cache.n_rows,
                                   in_memory=in_ram,
                                   spill_dir=spill_dir_for(cache))
        self.state_in_ram = in_ram
        self.max_depth = max_depth
        self.seed = seed
        self.telemetry = GrowerTelemetry()
        self.passes = 0
        self.state_passes = 0
        self.io_wait_s = 0.0
        self.update_s = 0.0
        self.bytes_read = 0

    def close(self):
        self.rows.close()

    def blocks(self):
        """Blocks of the cache, timing the wait for each."""
        self.passes += 1
        return timed_blocks(self.cache, self.plan, self._account, prefetch=self.prefetch)

    def _account(self, wait_s, nbytes):
        self.io_wait_s += wait_s
        self.bytes_read += nbytes

    def state_blocks(self):
        """(block index, views) of the per-row state only: no cache read."""
        self.state_passes += 1
        for b in range(self.cache.n_blocks):
            views = self.rows.load(b)
            yield b, views
            self.rows.store(b, views)

    def new_grower(self, n_trees, policy, round_index):
        cache = self.cache
        mapper = cache.bin_mapper
        growth = GrowthParams(max_depth=self.max_depth,
                              max_hist_slots=2 * int(self.plan.hist_nodes))
        rng = np.random.default_rng([self.seed, round_index])
        return TreeGrower(n_trees, cache.n_features, cache.max_bin, mapper.n_value_bins,
                          mapper.is_categorical, mapper.bin_edges, policy, growth, rng)

    def grow_weighted_tree(self, family, round_index):
        """Grow one tree for ``family`` (its ``policy()`` and ``prepare_block``), whose
        first pass sums the round's row weights into ``family.total``; the CART policy
        normalises impurity decreases by that total. Returns the grower."""
        policy = family.policy()
        grower = self.new_grower(1, policy, round_index)
        family.total = 0.0

        def after_first_pass():
            policy.total_weight = family.total if family.total > 0 else 1.0

        self.grow(grower, family.prepare_block, after_first_pass)
        return grower

    def grow(self, grower, prepare_block, after_first_pass):
        """Drive the grower's passes; ``prepare_block(block, views)`` runs on the first
        pass (fused update + statistics), ``after_first_pass()`` before its split search."""
        grower.start()
        first = True
        while grower.needs_pass():
            for block in self.blocks():
                views = self.rows.load(block.index)
                if first:
                    t0 = time.perf_counter()
                    prepare_block(block, views)
                    self.update_s += time.perf_counter() - t0
                grower.accumulate(block.codes, views["stats"], views["node"])
                self.rows.store(block.index, views)
            if first:
                after_first_pass()
            grower.finish_pass()
            first = False
        self.telemetry.add(grower.telemetry)


def _sample_weight(block):
    if block.weight is None:
        return np.empty(0, np.float32), False
    return np.ascontiguousarray(block.weight, dtype=np.float32), True


def _class_labels(block, n_classes):
    y = np.empty(block.n_rows, np.int32)
    bad = ak.class_indices(np.ascontiguousarray(block.label), int(n_classes), y)
    if bad >= 0:
        raise ParameterError(f"row {block.row_start + bad}: label {block.label[bad]!r} is not "
                             f"a class index in [0, {n_classes}); AdaBoostClassifier on a "
                             f"cache needs labels 0..K-1")
    return y


def _leaf_class_weights(arrays):
    """(class weights (n_nodes, K), leaf mask) from a CART classification tree's arrays."""
    return arrays["value"] * arrays["cover"][:, None], arrays["left"] < 0


def _weighted_error(arrays):
    """(weighted misclassification, total weight) of a gini tree on its training rows:
    ``sum over leaves of W_leaf - max_k W_leaf,k`` (the leaf predicts its argmax)."""
    cw, leaf = _leaf_class_weights(arrays)
    cover = arrays["cover"]
    wrong = float(np.sum(cover[leaf] - cw[leaf].max(axis=1)))
    return max(wrong, 0.0), float(cover[0])


class RoundResult:
    """What one round produced: trees (dicts of arrays), their weight, the error, and
    why boosting stops after it (None: go on)."""

    def __init__(self, trees, weight, error, stop=None, keep=True):
        self.trees = trees
        self.weight = weight
        self.error = error
        self.stop = stop
        self.keep = keep


# --------------------------------------------------------------------------- SAMME family


class _GiniBoost:
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
        self.total = 0.0

    @staticmethod
    def state_fields(n_classes, algorithm):
        fields = {"weight": ((None,), np.float64), "node": ((1, None), NODE_DTYPE),
                  "stats": ((1, None, n_classes + 1), G_H_DTYPE)}
        if algorithm == "arc-x4":
            fields["n_missed"] = ((None,), np.float32)
        return fields

    def policy(self):
        mapper = self.run.cache.bin_mapper
        return CartPolicy(criterion="gini", n_classes=self.K, n_value_bins=mapper.n_value_bins,
                          is_categorical=mapper.is_categorical,
                          missing_bin=self.run.cache.max_bin - 1, total_weight=1.0)

    def prepare_block(self, block, views):
        y = _class_labels(block, self.K)
        w = views["weight"]
        node = views["node"]
        sw, has_w = _sample_weight(block)
        if self.prev is None:
            if self.algorithm == "arc-x4":
                views["n_missed"][:] = 0.0
                ak.arc_x4_reweight(np.empty(0, NODE_DTYPE), np.empty(1, np.int32), y, sw,
                                   has_w, 1.0, views["n_missed"], w)
            else:
                w[:] = sw if has_w else 1.0
        else:
            self.prev.apply_pending(block.codes, node)
            if self.algorithm == "SAMME":
                ak.samme_reweight(node[0], self.prev_leaf_class, y, self.alpha, self.scale, w)
            elif self.algorithm == "SAMME.R":
                ak.samme_r_reweight(node[0], self.prev_log_proba, y,
                                    self.lr * (self.K - 1) / self.K, self.scale, w)
            else:
                ak.arc_x4_reweight(node[0], self.prev_leaf_class, y, sw, has_w, self.scale,
                                   views["n_missed"], w)
        ak.class_weight_stats(y, w, views["stats"][0])
        node[:] = 0
        self.total += float(np.sum(w))

    def grow_round(self, round_index):
        grower = self.run.grow_weighted_tree(self, round_index)
        return self._end_round(grower, round_index)

    def _end_round(self, grower, round_index):
        arrays = grower.tree_arrays(0)
        K = self.K
        wrong, total = _weighted_error(arrays)
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

    def finish(self):
        """Nothing pending: the last tree's error came from its leaf sums."""


# --------------------------------------------------------------------------- FHT 2000


class _AdditiveLogistic:
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

    def policy(self):
        mapper = self.run.cache.bin_mapper
        return CartPolicy(criterion="squared_error", n_classes=0,
                          n_value_bins=mapper.n_value_bins, is_categorical=mapper.is_categorical,
                          missing_bin=self.run.cache.max_bin - 1, total_weight=1.0)

    def _positive_class(self, t):
        return 1 if self.n_trees == 1 else t

    def _apply_previous(self, block, views, y):
        """Leaf of each row in the previous trees, their weighted sign error, F += step."""
        node, F, stats = views["node"], views["F"], views["stats"]
        self.prev.apply_pending(block.codes, node)
        for t in range(self.n_trees):
            self.wrong[t] += ak.sign_error(node[t], self.prev_f[t], y,
                                           self._positive_class(t), stats[t, :, 0])
            self.wsum[t] += float(np.sum(stats[t, :, 0], dtype=np.float64))
            add_node_values(node[t], self.prev_step[t], 1.0, F[:, t])

    def prepare_block(self, block, views):
        y = _class_labels(block, self.K)
        sw, has_w = _sample_weight(block)
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
        policy = self.policy()
        grower = self.run.new_grower(self.n_trees, policy, round_index)
        self.round_total = np.zeros(self.n_trees)

        def after_first_pass():
            total = float(self.round_total.mean())
            policy.total_weight = total if total > 0 else 1.0

        self.run.grow(grower, self.prepare_block, after_first_pass)
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
            self._apply_previous(block, views, _class_labels(block, self.K))
            views["node"][:] = 0
            self.run.rows.store(block.index, views)
        self.prev = None
        return self._previous_error()


# --------------------------------------------------------------------------- AdaBoost.R2


class _R2:
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

    def policy(self):
        mapper = self.run.cache.bin_mapper
        return CartPolicy(criterion="squared_error", n_classes=0,
                          n_value_bins=mapper.n_value_bins, is_categorical=mapper.is_categorical,
                          missing_bin=self.run.cache.max_bin - 1, total_weight=1.0)

    def prepare_block(self, block, views):
        w = views["weight"]
        if self.beta is None:
            sw, has_w = _sample_weight(block)
            w[:] = sw if has_w else 1.0
        else:
            ak.r2_reweight(views["error"], self.error_max, self.loss_code, self.beta, self.lr,
                           self.scale, w)
        ak.regression_stats(block.label, w, views["stats"][0])
        views["node"][:] = 0
        self.total += float(np.sum(w))

    def grow_round(self, round_index):
        grower = self.run.grow_weighted_tree(self, round_index)
        arrays = grower.tree_arrays(0)
        value = np.ascontiguousarray(arrays["value"][:, 0])
        # error pass: leaf of each row, |f(x) - y|, the largest error, the loss sums
        error_max, total = 0.0, 0.0
        sums = np.zeros(2)
        for block in self.run.blocks():
            views = self.run.rows.load(block.index)
            grower.apply_pending(block.codes, views["node"])
            e, w = views["error"], views["weight"]
            ak.abs_errors(views["node"][0], value, block.label, e)
            positive = w > 0
            if positive.any():
                error_max = max(error_max, float(e[positive].max()))
            total += float(w.sum())
            sums += (float(np.dot(w, e)), float(np.dot(w, e * e)))
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


# --------------------------------------------------------------------------- driver


def _n_classes_of(cache, n_classes):
    from ...cache.label_stats import LabelStats

    if n_classes is not None:
        return int(n_classes)
    stats = cache.manifest.get("label_stats") or {}
    classes = LabelStats.from_dict(stats).class_weights if stats else None
    if not classes:
        raise ParameterError(f"cache {cache.path}: labels are not integer classes; "
                             f"AdaBoost classification needs labels 0..K-1")
    return int(max(classes)) + 1


def train_adaboost(cache, *, algorithm="SAMME", n_estimators=50, learning_rate=1.0,
                   max_depth=1, loss="linear", n_classes=None, random_state=None,
                   memory_limit=None, prefetch=None, state_in_ram=None, n_threads=None,
                   verbose=False):
    """Train an AdaBoost ensemble from a cache.

    Parameters
    ----------
    cache : Cache or path
        Training cache with a label column (class indices ``0..K-1`` for classification,
        any real label for ``R2``) and optional sample weights.
    algorithm : {"SAMME", "SAMME.R", "gentle", "logitboost", "arc-x4", "R2"}
        ``R2`` is AdaBoost.R2 regression; the others classify.
    n_estimators : int
        Boosting rounds (upper bound: boosting stops early on a perfect or useless tree).
    learning_rate : float
        Shrinks each tree's weight (SAMME, R2) or contribution (SAMME.R weights update,
        gentle, logitboost).
    max_depth : int or None
        Depth of the weak trees (1: stumps).
    loss : {"linear", "square", "exponential"}
        AdaBoost.R2's loss.
    n_classes : int or None
        K; None reads it from the cache's label statistics (largest class + 1).
    random_state : int or None
        Seed of the grower's random generator (ties are broken deterministically, so it
        does not change the result today).
    memory_limit : int or str or None
        Peak memory; decides whether the per-row state stays in RAM.
    prefetch : int or None
        Blocks read ahead (None: the memory plan's choice). Results do not depend on it.
    state_in_ram : bool or None
        Force the per-row state in RAM (True) or spilled beside the cache (False); None
        lets the memory plan decide.
    n_threads : int or None
    verbose : bool
        Print the memory plan and the telemetry.

    Returns
    -------
    Model
        ``learner="adaboost"``; ``attributes["adaboost"]`` holds ``algorithm``,
        ``estimator_weights`` and ``estimator_errors`` (length ``n_estimators``, zeros
        and ones after an early stop, as scikit-learn), ``stop_reason``, ``stop_round``,
        ``n_classes`` and ``prediction`` (``"margin"`` or ``"weighted_median"``).
    """
    from ...engine.plan import plan_train
    from ...model.model import Model, source_attributes
    from ...utils.threads import thread_limit
    from ..boosting.training import open_cache

    algorithm = canonical_algorithm(algorithm)
    check_boost_params(n_estimators, learning_rate, max_depth, loss)
    cache = open_cache(cache)
    if not cache.has_label:
        raise ParameterError(f"training cache {cache.path} has no label column; rebuild it "
                             f"with --label")
    regression = algorithm == REGRESSOR_ALGORITHM
    if regression:
        K, fields = 0, _R2.state_fields()
    else:
        K = _n_classes_of(cache, n_classes)
        if K < 2:
            raise ParameterError(f"classification needs at least two classes, got {K}")
        family = _GiniBoost if algorithm in ("SAMME", "SAMME.R", "arc-x4") else _AdditiveLogistic
        fields = family.state_fields(K, algorithm)
    spec = RowStateSpec(fields)
    n_trees_in_pass = 1 if regression or algorithm not in ("gentle", "logitboost") or K == 2 \
        else K
    n_stats = 4 if regression or algorithm in ("gentle", "logitboost") else K + 1
    # the planner's per-row formula is 16 * n_outputs + 4 * trees + 4 bytes: pick the
    # n_outputs that covers this algorithm's state
    plan_outputs = max(1, math.ceil((spec.bytes_per_row() - 4 * n_trees_in_pass - 4) / 16))
    # Blocks an earlier run left resident are in this process's RSS, which the plan takes
    # as its baseline: this run budgets residency itself.
    cache.release_resident()
    plan = plan_train(memory_limit, n_rows=cache.n_rows, n_features=cache.n_features,
                      max_bin=cache.max_bin, n_stats=n_stats, n_outputs=plan_outputs,
                      block_rows=cache.block_rows, n_blocks=cache.n_blocks,
                      codes_itemsize=np.dtype(cache.codes_dtype).itemsize,
                      n_trees_in_pass=n_trees_in_pass, prefetch=prefetch,
                      state_bytes_per_row=spec.bytes_per_row())
    if verbose:
        print(plan.describe())
    seed = 0 if random_state is None else int(random_state)
    run = _Run(cache, spec, plan, max_depth=max_depth, seed=seed, prefetch=prefetch,
               state_in_ram=state_in_ram)
    if regression:
        learner = _R2(run, loss, learning_rate)
    elif algorithm in ("SAMME", "SAMME.R", "arc-x4"):
        learner = _GiniBoost(run, algorithm, K, learning_rate)
    else:
        learner = _AdditiveLogistic(run, algorithm, K, learning_rate)

    weights = np.zeros(n_estimators)
    errors = np.ones(n_estimators)
    rounds = []
    stop_reason, stop_round = None, None
    t_start = time.perf_counter()
    try:
        with thread_limit(n_threads):
            for m in range(int(n_estimators)):
                res = learner.grow_round(m)
                prev_err = getattr(res, "previous_error", None)
                if prev_err is not None:
                    errors[m - 1] = prev_err
                if res.keep:
                    rounds.append(res.trees)
                    weights[m] = res.weight
                    errors[m] = res.error
                    if res.stop == STOP_CHANCE:
                        errors[m] = 1.0
                if res.stop is not None:
                    if res.stop == STOP_CHANCE and not rounds:
                        raise ParameterError(
                            f"the first weak learner ({algorithm}, max_depth={max_depth}) "
                            f"is no better than chance (weighted error {res.error:.4g} >= "
                            f"{1 - 1 / max(K, 2):.4g}): the ensemble cannot be fit; try "
                            f"deeper trees (max_depth)")
                    stop_reason, stop_round = res.stop, m
                    break
            last_err = learner.finish()
            if last_err is not None:
                errors[len(rounds) - 1] = last_err
    finally:
        run.close()

    if regression:
        objective, objective_params, aggregation = "reg:squarederror", {}, "mean"
    elif algorithm in ("gentle", "logitboost"):
        objective, objective_params, aggregation = "multi:softprob", {"num_class": K}, "sum"
    elif algorithm == "arc-x4":
        objective, objective_params, aggregation = "multi:proba", {"num_class": K}, "mean"
    else:
        objective, objective_params, aggregation = "multi:softprob", {"num_class": K}, "mean"
    mapper = cache.bin_mapper
    trees_per_round = learner.n_trees
    model = Model([], n_outputs=1 if regression else K, objective=objective,
                  objective_params=objective_params, learner="adaboost",
                  aggregation=aggregation, trees_per_round=trees_per_round,
                  feature_names=list(cache.feature_names),
                  feature_types=list(mapper.feature_types), bin_mapper=mapper.to_dict(),
                  params={"algorithm": algorithm, "n_estimators": int(n_estimators),
                          "learning_rate": float(learning_rate),
                          "max_depth": None if max_depth is None else int(max_depth),
                          "loss": loss, "random_state": random_state},
                  n_classes=None if regression else K,
                  attributes=source_attributes(cache))
    for m, trees in enumerate(rounds):
        model.add_round(trees, [float(weights[m])] * len(trees))
    tel = run.telemetry
    model.attributes["adaboost"] = {
        "algorithm": algorithm, "n_classes": K, "learning_rate": float(learning_rate),
        "estimator_weights": weights.tolist(), "estimator_errors": errors.tolist(),
        "stop_reason": stop_reason, "stop_round": stop_round,
        "prediction": "weighted_median" if regression else "margin",
    }
    model.training_log = {
        "seconds": time.perf_counter() - t_start, "histogram_s": tel.histogram_s,
        "partition_s": tel.partition_s, "split_s": tel.split_s, "update_s": run.update_s,
        "io_wait_s": run.io_wait_s, "bytes_read": run.bytes_read,
        "data_passes": run.passes, "state_only_passes": run.state_passes,
        "passes_per_round": run.passes / max(len(rounds), 1),
        "state_in_ram": bool(run.state_in_ram), "plan": plan.as_dict(),
    }
    if verbose:
        log = model.training_log
        print(f"adaboost {algorithm}: {len(rounds)} rounds in {log['seconds']:.2f}s, "
              f"{log['data_passes']} data passes ({log['passes_per_round']:.2f} per round), "
              f"per-row state {'in RAM' if log['state_in_ram'] else 'spilled to disk'}"
              + (f"; stopped after round {stop_round}: {stop_reason}" if stop_reason else ""))
    return model


#: Estimator arguments ``train_adaboost_from_params`` understands (CLI ``--param``).
PARAM_NAMES = ("algorithm", "learning_rate", "max_depth", "loss", "n_classes",
               "random_state", "seed", "n_threads", "prefetch", "verbosity", "objective")


def train_adaboost_from_params(params, cache, *, n_estimators=50, memory_limit=None,
                               verbose=False):
    """The command line's entry: ``oocboost train CACHE --learner adaboost --param
    algorithm=SAMME --rounds 200 -o m.json``.

    Parameters
    ----------
    params : dict
        Estimator arguments: ``algorithm`` (default "SAMME"; "R2" for regression, also
        chosen by ``objective="reg:..."``), ``learning_rate`` (1.0), ``max_depth`` (1 for
        classifiers, 3 for R2, as scikit-learn), ``loss`` ("linear"), ``n_classes``,
        ``random_state`` / ``seed``, ``n_threads``, ``prefetch``.
    cache : Cache or path
    n_estimators : int
    memory_limit : int or str or None
    verbose : bool

    Returns
    -------
    Model
    """
    params = dict(params or {})
    unknown = sorted(set(params) - set(PARAM_NAMES))
    if unknown:
        raise ParameterError(f"unknown AdaBoost parameter(s) {unknown}; valid: "
                             f"{sorted(PARAM_NAMES)}")
    objective = params.get("objective")
    default_algorithm = "R2" if isinstance(objective, str) and objective.startswith("reg:") \
        else "SAMME"
    algorithm = canonical_algorithm(params.get("algorithm", default_algorithm))
    max_depth = params.get("max_depth", 3 if algorithm == REGRESSOR_ALGORITHM else 1)
    seed = params.get("random_state", params.get("seed"))
    return train_adaboost(cache, algorithm=algorithm, n_estimators=n_estimators,
                          learning_rate=params.get("learning_rate", 1.0),
                          max_depth=max_depth, loss=params.get("loss", "linear"),
                          n_classes=params.get("n_classes"), random_state=seed,
                          memory_limit=memory_limit, prefetch=params.get("prefetch"),
                          n_threads=params.get("n_threads"), verbose=verbose)
