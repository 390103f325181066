"""Adaptive random forests (Gomes et al. 2017; river's ``forest.ARFClassifier``): online
bagging of Hoeffding trees that each split on random feature subsets, with a drift
detector per tree that replaces a tree whose error rises.

Per batch of rows, for every tree ``t``::

    predict    the rows before learning them (prequential; the tree's accuracy since
               it started, which weighs its vote, counts every row)
    learn      with Poisson(lambda_value) copies of each row (and so does its
               background tree, when it has one)
    detect     the tree's 0/1 errors on the rows it learned (copies > 0), in order, into
               an ADWIN of ``warning_delta`` and one of ``drift_delta``
               (kernels/adwin.py):
      warning  -> a background tree starts (a fresh one, learning from the next batch)
      drift    -> the tree is replaced by its background tree (or a fresh one), its
                  accuracy forgotten

The ensemble predicts each tree's class probabilities weighted by its accuracy (a tree
of accuracy 0, a fresh one, votes with weight 1, as river's), normalised to sum to 1.

Where this differs from river: a batch is learned as a whole, so a background tree or a
replacement starts learning at the batch after the warning or drift (river: at the next
row), and the detectors read the errors of the trees as they were when the batch began.
"""
import math

import numpy as np

from ...errors import ParameterError
from ...kernels.adwin import DETECTIONS, adwin_update, new_state

#: river's ADWIN settings: checks every 32 values, 5 buckets a level, sides of at least
#: 5 values, no check before 10 values.
ADWIN_CLOCK, ADWIN_MAX_BUCKETS, ADWIN_MIN_LENGTH, ADWIN_GRACE = 32, 5, 5.0, 10.0


def subspace_size(max_features, n_features):
    """Features a leaf draws: river's rules for ``"sqrt"``, ``"log2"``, a count, a
    share in (0, 1], or None (all); at least 1.

    >>> subspace_size("sqrt", 10), subspace_size(0.5, 10), subspace_size(None, 10)
    (3, 5, 10)
    """
    if max_features is None:
        k = n_features
    elif max_features == "sqrt":
        k = round(math.sqrt(n_features))
    elif max_features == "log2":
        k = round(math.log2(n_features))
    elif isinstance(max_features, (int, np.integer)) and not isinstance(max_features, bool) \
            and max_features >= 1:
        k = int(max_features)
    elif isinstance(max_features, float) and 0.0 < max_features <= 1.0:
        k = int(max_features * n_features)
    else:
        raise ParameterError(f"max_features must be 'sqrt', 'log2', a count >= 1, a share "
                             f"in (0, 1] or None, got {max_features!r}")
    return int(min(max(k, 1), n_features))


def check_delta(name, value):
    """A detector's confidence in (0, 1), or None (the detector off)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) \
            or not 0.0 < float(value) < 1.0:
        raise ParameterError(f"{name} must be a confidence in (0, 1) or None, got "
                             f"{value!r}")
    return float(value)


def new_adaptive_forest(config, mapper, n_trees, *, max_features="sqrt", seed=0,
                        drift_delta=0.001, warning_delta=0.01, weighted_vote=True,
                        aggregation="median", block_rows, code_bytes_per_row,
                        prefetch=None):
    """``(learners, forest)``: ``n_trees`` fresh trees on random subspaces and the
    :class:`AdaptiveForest` that watches them; histograms planned for every tree and a
    background tree each (``stream.plan_slots``)."""
    from ...utils.budget import DEFAULT_PREFETCH
    from .stream import plan_slots

    size = subspace_size(max_features, len(mapper.n_value_bins))
    drift = check_delta("drift_delta", drift_delta)
    warning = check_delta("warning_delta", warning_delta)
    max_slots = plan_slots(config, mapper, block_rows, code_bytes_per_row,
                           DEFAULT_PREFETCH if prefetch is None else prefetch,
                           n_trees=2 * n_trees)
    make_learner = RandomSubspaceTrees(config, mapper, max_slots, size, seed, n_trees)
    learners = [make_learner(t) for t in range(n_trees)]
    if aggregation not in ("median", "mean"):
        raise ParameterError(f"aggregation_method must be 'median' or 'mean', got "
                             f"{aggregation!r}")
    return learners, AdaptiveForest(learners, make_learner, drift, warning, weighted_vote,
                                    aggregation)


class RandomSubspaceTrees:
    """Makes the forest's trees (a picklable callable ``(t) -> HoeffdingLearner``):
    each leaf of a tree splits on ``subspace_size`` features drawn from its own
    generator, seeded by (seed, position, trees made at that position)."""

    def __init__(self, config, mapper, max_slots, subspace_size, seed, n_trees):
        self.config, self.mapper, self.max_slots = config, mapper, max_slots
        self.subspace_size, self.seed = int(subspace_size), int(seed)
        self.made = np.zeros(n_trees, np.int64)

    def __call__(self, t):
        from .learn import HoeffdingLearner

        learner = HoeffdingLearner(self.config, self.mapper, self.max_slots)
        learner.subspace_size = self.subspace_size
        learner.subspace_rng = np.random.default_rng([self.seed, t, int(self.made[t])])
        self.made[t] += 1
        return learner


class DriftDetectors:
    """One ADWIN of confidence ``delta`` per tree (state in ``kernels/adwin.py``
    arrays)."""

    def __init__(self, n_trees, delta):
        self.delta = float(delta)
        self.state = new_state(n_trees, ADWIN_MAX_BUCKETS)

    def update(self, t, values):
        """Feed tree ``t``'s values; the indices of those that made it report a change."""
        changed = np.zeros(len(values), np.uint8)
        adwin_update(t, np.ascontiguousarray(values, np.float64), self.delta, ADWIN_CLOCK,
                     ADWIN_MAX_BUCKETS, ADWIN_MIN_LENGTH, ADWIN_GRACE, *self.state, changed)
        return np.flatnonzero(changed)

    def reset(self, t):
        """Tree ``t``'s detector empty again (its count of detections kept)."""
        totals, sq_devs, counts, scalars, levels = self.state
        detections = abs(scalars[t, DETECTIONS])
        totals[t] = 0.0
        sq_devs[t] = 0.0
        counts[t] = 0
        scalars[t] = 0.0
        scalars[t, DETECTIONS] = detections
        levels[t] = 1


class AdaptiveForest:
    """The trees, their background trees, detectors and accuracies (module docstring).

    Parameters
    ----------
    learners : list of HoeffdingLearner
        The trees (replaced in place when they drift).
    make_learner : callable ``(t) -> HoeffdingLearner``
        A fresh tree for position ``t``.
    drift_delta, warning_delta : float or None
        The detectors' confidence; None: no drift detection (then no background trees
        either), or no background trees.
    weighted_vote : bool
        Weigh each tree's vote by its accuracy (river's classifier default), or a
        regressor's by its mean squared error (``sum - own``, normalised).
    aggregation : {"mean", "median"}
        A regressor's combination of the trees (river's ``aggregation_method``).
    """

    def __init__(self, learners, make_learner, drift_delta=0.001, warning_delta=0.01,
                 weighted_vote=True, aggregation="mean"):
        n = len(learners)
        self.regression = not learners[0].classification
        self.aggregation = aggregation
        self.squared_error = np.zeros(n)
        # a regressor's errors y - prediction, for the detectors' normalised input
        self.error_norm = np.zeros((n, 3))      # count, sum, sum of squares
        self.learners = learners
        self.make_learner = make_learner
        self.background = [None] * n
        self.drift = None if drift_delta is None else DriftDetectors(n, drift_delta)
        self.warning = (None if warning_delta is None or drift_delta is None
                        else DriftDetectors(n, warning_delta))
        self.weighted_vote = weighted_vote
        self.correct = np.zeros(n)
        self.seen = np.zeros(n)
        self.n_warnings = np.zeros(n, np.int64)
        self.n_drifts = np.zeros(n, np.int64)
        self.rows_seen = 0

    def model_aggregation(self):
        """The model's ``aggregation``: a regressor's median, else the (weighted)
        mean."""
        return "median" if self.regression and self.aggregation == "median" else "mean"

    def growing(self):
        """The trees and background trees (whose leaves set the batches' length)."""
        return self.learners + [b for b in self.background if b is not None]

    def vote_weights(self):
        """(n_trees,) each tree's vote: its accuracy, or 1 while that is 0; a
        regressor's ``sum(MSE) - MSE_t`` (equal while every MSE is 0)."""
        if not self.weighted_vote or (self.regression and self.aggregation == "median"):
            return np.ones(len(self.learners))
        if self.regression:
            mse = np.divide(self.squared_error, self.seen,
                            out=np.zeros_like(self.seen), where=self.seen > 0)
            weights = mse.sum() - mse
            return weights / weights.sum() if weights.sum() > 0 else np.ones(len(mse))
        accuracy = np.divide(self.correct, self.seen, out=np.zeros_like(self.seen),
                             where=self.seen > 0)
        return np.where(accuracy > 0, accuracy, 1.0)

    def learn_batch(self, codes, y, w, copies):
        """Learn one batch (``copies``: (n_trees, n_rows) Poisson draws); returns the
        ensemble's (n_rows, n_classes) probabilities (or (n_rows, 1) targets) from
        before it learned."""
        if self.regression:
            return self._learn_regression(codes, y, w, copies)
        votes = self.vote_weights()
        total = None
        for t in range(len(self.learners)):
            w_t = w * copies[t]
            background = self.background[t]
            fresh = self.learners[t].weight_seen == 0
            pred = self.learners[t].learn(codes, y, w_t, predict=True)
            if background is not None:
                background.learn(codes, y, w_t)
            if fresh:  # a tree that has learned nothing predicts nothing (river's {})
                pred = np.zeros_like(pred)
            wrong = (pred.argmax(axis=1) != y.astype(np.int64)) | fresh
            self.correct[t] += float(np.sum(w * ~wrong))
            self.seen[t] += float(np.sum(w))
            weighted = pred * votes[t]
            total = weighted if total is None else total + weighted
            self._detect(t, wrong[w_t > 0].astype(np.float64))
        self.rows_seen += len(y)
        sums = total.sum(axis=1, keepdims=True)
        return np.divide(total, sums, out=np.zeros_like(total), where=sums > 0)

    def _learn_regression(self, codes, y, w, copies):
        votes = self.vote_weights()
        preds = np.empty((len(self.learners), len(y)))
        for t in range(len(self.learners)):
            w_t = w * copies[t]
            background = self.background[t]
            preds[t] = self.learners[t].learn(codes, y, w_t, predict=True)[:, 0]
            if background is not None:
                background.learn(codes, y, w_t)
            error = y - preds[t]
            self.squared_error[t] += float(np.sum(w * error * error))
            self.seen[t] += float(np.sum(w))
            self._detect(t, self._normalised(t, error[w_t > 0]))
        self.rows_seen += len(y)
        if self.aggregation == "median":
            return np.median(preds, axis=0)[:, None]
        return (votes @ preds / votes.sum())[:, None]

    def _normalised(self, t, error):
        """river's regressor input to the detectors: ``(e + 3 sd) / (6 sd)``, ``sd`` the
        standard deviation (n - 1) of the tree's errors so far, 0.5 for the first error
        and while ``sd`` is 0."""
        if len(error) == 0:
            return error
        n0, s0, q0 = self.error_norm[t]
        n = n0 + np.arange(1, len(error) + 1)
        total = s0 + np.cumsum(error)
        squares = q0 + np.cumsum(error * error)
        variance = np.where(n > 1, (squares - total * total / n) / np.maximum(n - 1, 1),
                            0.0)
        sd = np.sqrt(np.maximum(variance, 0.0))
        self.error_norm[t] = n[-1], total[-1], squares[-1]
        safe = np.where(sd > 0, sd, 1.0)
        return np.where((n > 1) & (sd > 0), (error + 3 * sd) / (6 * safe), 0.5)

    def _detect(self, t, errors):
        if self.drift is None or len(errors) == 0:
            return
        warnings = self.warning.update(t, errors) if self.warning is not None else []
        drifts = self.drift.update(t, errors)
        self.n_warnings[t] += len(warnings)
        self.n_drifts[t] += len(drifts)
        last_drift = drifts[-1] if len(drifts) else -1
        if len(drifts):
            replacement = self.background[t]
            self.learners[t] = replacement if replacement is not None \
                else self.make_learner(t)
            self.background[t] = None
            if replacement is not None:
                self.warning.reset(t)
            self.correct[t] = self.seen[t] = self.squared_error[t] = 0.0
        if self.warning is not None and len(warnings) and warnings[-1] > last_drift:
            self.background[t] = self.make_learner(t)
