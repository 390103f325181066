"""XGBoost's leaf refresh for ``reg:absoluteerror`` and ``reg:quantileerror``: after a
tree is grown on the gradients, each leaf is reset to the weighted ``alpha``-quantile of
the residuals ``y - m`` of its rows (the median for absolute error), times the learning
rate, which the gradient's constant magnitude cannot give.

Out of core this is one extra pass over the data per round: every block's rows are moved
to their leaves (the tree's last splits, which boosting otherwise applies in the next
round's first pass, are applied to a copy of the node positions) and their residuals
feed one :class:`~oocboost.cache.sketch.QuantileSketch` per leaf. While a leaf has fewer
than about 14,000 distinct residuals the sketch holds them all and the quantile is
XGBoost's exactly (interpolated for unit weights, the weighted lower quantile
otherwise); beyond, it is the sketch's value, within 1/1024 of the leaf's weight in rank.
Memory is at most that many 32-byte entries per leaf, whatever the rows.
"""
import numpy as np

from ...cache.sketch import QuantileSketch
from ...common import G_H_DTYPE
from ...kernels.sampling import uniform_per_row


def _row_weights(state, block, round_index, column):
    """The weights the round's tree was fitted with: sample weight, subsample draw,
    and for cross-validation the fold's held-out rows at zero. A gradient-based sample
    (``row_sampling.py``) weighs rows by their gradients, which say nothing of their
    residuals: its rounds refresh the leaves from every row."""
    p = state.params
    weight = (np.ones(block.n_rows) if block.weight is None
              else block.weight.astype(np.float64))
    if p["subsample"] < 1.0 and p["sampling_method"] == "uniform":
        u = np.empty(block.n_rows, np.float64)
        uniform_per_row(p["seed"], round_index, block.row_start, u)
        weight *= (u < p["subsample"]).astype(G_H_DTYPE)
    if state.folds is not None:
        fold_ids, fold_of_row = state.folds
        held = fold_of_row[block.row_start:block.row_start + block.n_rows]
        weight *= held != fold_ids[column // state.objective.n_outputs]
    return weight


def refresh_leaves(state, grower, trees, values, round_index, learning_rate, blocks):
    """Reset the leaf values of the round's ``trees`` (and ``values``, their leaf-value
    columns) in place to ``learning_rate x`` the leaves' residual quantiles.

    Parameters
    ----------
    blocks : callable () -> iterator of Block
        One pass over the training cache.
    """
    # one level per output (several for a multi-quantile model), repeated per fold
    levels = np.atleast_1d(np.asarray(state.objective.leaf_refresh_quantile, np.float64))
    sketches = [{} for _ in trees]
    for block in blocks():
        views = state.rows.load(block.index, ("margin", "node"))
        node = views["node"].copy()
        grower.move_to_leaves(block.stored_codes, node)
        margin = views["margin"]
        if state.dart_drop is not None:  # DART fitted this round without the dropped trees
            margin = margin - state.dart_drop.predict_margin_binned(
                block.codes, state.cache.max_bin - 1, include_base=False)
        for c in range(len(trees)):
            residual = block.label.astype(np.float64) - margin[:, c]
            weight = _row_weights(state, block, round_index, c)
            order = np.argsort(node[c], kind="stable")
            leaves, starts = np.unique(node[c][order], return_index=True)
            bounds = np.append(starts, len(order))
            for leaf, lo, hi in zip(leaves.tolist(), bounds[:-1], bounds[1:]):
                rows = order[lo:hi]
                sketch = sketches[c].setdefault(leaf, QuantileSketch())
                sketch.update(residual[rows], weight[rows])
    unit = _unit_weights(state)
    for c, tree in enumerate(trees):
        alpha = float(levels[c % len(levels)])
        for leaf, sketch in sketches[c].items():
            if sketch.total_weight > 0:
                value = learning_rate * leaf_quantile(sketch, alpha, unit)
                tree["value"][leaf, 0] = value
                values[c][leaf] = value


def _unit_weights(state):
    """Whether every row of the run weighs 1 (no sample weights, subsample or folds)."""
    return (not state.cache.has_weight and state.folds is None
            and (state.params["subsample"] >= 1.0
                 or state.params["sampling_method"] != "uniform"))


def leaf_quantile(sketch, alpha, unit_weights):
    """XGBoost's quantile of a leaf's residuals: with unit weights the interpolated
    ``alpha (n + 1)``-th order statistic (``common::Quantile``), else the first value
    whose cumulative weight reaches ``alpha`` of the total (``WeightedQuantile``). Exact
    while the sketch is; beyond, the sketch's value at that rank."""
    if not sketch.is_exact:
        return float(sketch.quantiles(np.array([alpha]))[0])
    values, weights = sketch.distinct_values()
    cumulative = np.cumsum(weights)
    if not unit_weights:
        at = np.searchsorted(cumulative, alpha * cumulative[-1], side="left")
        return float(values[min(int(at), len(values) - 1)])
    n = cumulative[-1]
    if alpha <= 1.0 / (n + 1):
        return float(values[0])
    if alpha >= n / (n + 1):
        return float(values[-1])
    x = alpha * (n + 1)
    k = int(np.floor(x)) - 1  # 0-based order statistics k and k + 1, d of the way
    d = (x - 1) - k
    v0, v1 = values[np.searchsorted(cumulative, [k + 1, k + 2], side="left")]
    return float(v0 + d * (v1 - v0))
