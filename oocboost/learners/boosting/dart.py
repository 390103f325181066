"""DART boosting (Rashmi and Gilad-Bachrach 2015) as XGBoost's ``booster="dart"``: each
round drops a random subset of the trees, fits the new tree to the gradients of the
margins without them, then rescales: with ``k`` trees dropped and ``lr = eta / new
trees``, ``normalize_type="tree"`` gives the new trees weight ``1 / (k + lr)`` and
multiplies the dropped ones by ``k / (k + lr)``; ``"forest"`` uses ``1 / (1 + lr)`` for
both. No drop: weight 1. The weights are the model's ``tree_weight``, saved with it.

Out of core the margins of every row are kept, not recomputed: a round's first pass
subtracts the dropped trees' predictions (from the block's codes) before the gradients,
and adds the previous round's change (new trees times their weight, and the dropped
trees' weight change) to the margins, so DART costs two predictions of the dropped
trees per block and round, and no extra pass.
"""
import numpy as np

DART_DEFAULTS = {"rate_drop": 0.0, "one_drop": 0, "skip_drop": 0.0,
                 "normalize_type": "tree", "sample_type": "uniform"}
#: Counter-based stream of the drop draws (seeded per round).
DART_STREAM = 0xDA27


def check_dart_params(p):
    """DART's parameters of resolved params ``p``: each is checked by the booster's spec
    (``params.BOOSTER_SPEC``); ``one_drop`` is used as 0 or 1."""
    p["one_drop"] = int(p["one_drop"])


def choose_dropped(p, round_index, weights):
    """Indices of the trees dropped at ``round_index`` (XGBoost's ``DropTrees``):
    none with probability ``skip_drop``; else each tree with probability ``rate_drop``
    (``weighted``: ``rate_drop * n * w / sum w``), and one tree if ``one_drop`` and none
    was drawn."""
    n = len(weights)
    if n == 0:
        return np.zeros(0, np.int64)
    rng = np.random.default_rng([int(p["seed"]), int(round_index), DART_STREAM])
    if p["skip_drop"] > 0.0 and rng.random() < p["skip_drop"]:
        return np.zeros(0, np.int64)
    share = np.asarray(weights, np.float64) / np.sum(weights)
    prob = (np.full(n, p["rate_drop"]) if p["sample_type"] == "uniform"
            else p["rate_drop"] * n * share)
    dropped = np.flatnonzero(rng.random(n) < prob)
    if p["one_drop"] and len(dropped) == 0:
        pick = (rng.integers(n) if p["sample_type"] == "uniform"
                else rng.choice(n, p=share))
        dropped = np.array([pick], np.int64)
    return dropped


def normalization(p, n_dropped, n_new, learning_rate):
    """``(weight of the new trees, factor of the dropped trees)``."""
    if n_dropped == 0:
        return 1.0, 1.0
    lr = learning_rate / n_new
    if p["normalize_type"] == "forest":
        return 1.0 / (1.0 + lr), 1.0 / (1.0 + lr)
    return 1.0 / (n_dropped + lr), n_dropped / (n_dropped + lr)


def subset(model, tree_ids, weights):
    """A model of the trees ``tree_ids`` with ``weights`` and no intercept (summed), to
    predict the dropped trees' part of the margins; None when empty."""
    if len(tree_ids) == 0:
        return None
    return type(model)([model.trees[i] for i in tree_ids],
                       tree_group=model.tree_group[tree_ids].copy(),
                       tree_weight=np.asarray(weights, np.float64),
                       base_margin=np.zeros(int(model.n_outputs)),
                       n_outputs=model.n_outputs, objective=model.objective,
                       objective_params=dict(model.objective_params),
                       learner=model.learner, aggregation="sum",
                       trees_per_round=1, feature_names=list(model.feature_names),
                       feature_types=list(model.feature_types),
                       bin_mapper=model.bin_mapper)


class DartRound:
    """One round's drop: the dropped trees' model (for the gradients) and, after the
    round, the margin change still to apply (the dropped trees' new minus old weight)."""

    def __init__(self, model, p, round_index):
        self.dropped = choose_dropped(p, round_index, model.tree_weight)
        self.old = model.tree_weight[self.dropped].copy()
        self.drop_model = subset(model, self.dropped, self.old)

    def commit(self, model, p, trees, learning_rate):
        """Append the round's trees with their DART weight and rescale the dropped ones;
        returns ``(new tree weight, model of the dropped trees' margin change)``."""
        w_new, factor = normalization(p, len(self.dropped), len(trees), learning_rate)
        model.add_round(trees, weights=[w_new] * len(trees))
        model.tree_weight[self.dropped] = self.old * factor
        change = subset(model, self.dropped, self.old * (factor - 1.0))
        return w_new, change
