"""``boosting_type="ordered"``: CatBoost's ordered boosting on the shared engine.

Each row keeps a second margin, its *ordered* margin, beside the model's: the rows'
gradients are taken at their ordered margins, the tree is grown from them as any round's
(same histograms, same split search, leaf values from all its rows), and when the round
is applied each row's ordered margin gains the Newton value of the earlier rows of its
leaf only (``kernels/ordered_boosting.py``), so no row's gradient is computed from a
model fitted to its own label. The order is the cache's, as CatBoost's with
``has_time=True``: shuffle rows whose order carries the label (sorted by time, by
class) before building the cache. One pass of bookkeeping per round, fused with the
pass that applies the round.
"""
from __future__ import annotations

import numpy as np

from ...errors import ParameterError
from ...kernels.ordered_boosting import add_ordered_values

#: Values of ``boosting_type`` and the names users bring for them (CatBoost's
#: capitalised ones, LightGBM's ``gbdt``).
BOOSTING_TYPES = {"plain": "plain", "ordered": "ordered", "gbdt": "plain"}


def check_boosting_type(p: dict) -> None:
    """Normalise ``boosting_type`` in the resolved parameters ``p``; refuse what
    ordered boosting does not combine with."""
    given = p.get("boosting_type")
    name = BOOSTING_TYPES.get(str(given).lower())
    if name is None:
        hint = {"dart": "booster='dart'", "goss": "data_sample_strategy='goss'",
                "rf": "--learner random-forest"}.get(str(given).lower())
        raise ParameterError(f"boosting_type must be 'plain' or 'ordered' (CatBoost's), "
                             f"got {given!r}" + (f"; LightGBM's {given!r} is {hint} here"
                                                  if hint else ""))
    p["boosting_type"] = name
    if name != "ordered":
        return
    objective = p["objective"] if isinstance(p["objective"], str) else ""
    refused = [what for on, what in (
        (p["booster"] == "dart", "booster='dart'"),
        (p["linear_tree"], "linear_tree=True"),
        (objective.startswith("rank:"), f"objective {objective!r}"),
        (objective == "survival:cox", f"objective {objective!r}")) if on]
    if refused:
        raise ParameterError(f"boosting_type='ordered' is not offered with "
                             f"{', '.join(refused)}")


class OrderedMargins:
    """The running leaf sums of one application of a round to the ordered margins,
    carried from block to block (blocks come in the cache's order)."""

    def __init__(self, grower, reg_lambda: float, learning_rate: float) -> None:
        n_trees = grower.nodes.n_nodes.shape[0]
        capacity = int(grower.nodes.n_nodes.max())
        self.run_grad = np.zeros((n_trees, capacity))
        self.run_hess = np.zeros((n_trees, capacity))
        self.reg_lambda = float(reg_lambda)
        self.learning_rate = float(learning_rate)

    def apply(self, views: dict) -> None:
        """Add the round's ordered leaf values to a block's ``ordered_margin`` from its
        rows' leaves (``node``, already moved) and the round's ``stats``."""
        stats = views["stats"]
        for c in range(stats.shape[0]):
            add_ordered_values(views["node"][c], stats[c, :, 0], stats[c, :, 1],
                               self.run_grad[c], self.run_hess[c], self.reg_lambda,
                               self.learning_rate, views["ordered_margin"][:, c])


def model_leaf_values(state, grower, trees: list, values: list, learning_rate: float,
                      blocks, gradients) -> None:
    """The model's leaf values of the round's ``trees`` (and ``values``, their leaf-value
    columns), reset in place from the gradients at the *model's* margins, as CatBoost
    takes its final leaves from its averaging fold: the tree's structure comes from the
    ordered gradients, its values from every row of the leaf. One more pass a round: each
    block's rows are moved to their leaves on a copy of their node positions (the round's
    last splits are applied to the state in the next round's first pass).

    Parameters
    ----------
    blocks : callable () -> iterator of Block
        One pass over the training cache.
    gradients : callable (block, margin) -> ndarray (n_outputs, n_rows, 2)
        The round's gradients and hessians of a block at ``margin``.
    """
    n_nodes = [len(tree["value"]) for tree in trees]
    sums = [np.zeros((n, 2)) for n in n_nodes]
    for block in blocks():
        views = state.rows.load(block.index, ("margin", "node"))
        node = views["node"].copy()
        grower.move_to_leaves(block.stored_codes, node)
        stats = gradients(block, views["margin"])
        for c, n in enumerate(n_nodes):
            for k in range(2):
                sums[c][:, k] += np.bincount(node[c], weights=stats[c, :, k], minlength=n)
    for c, tree in enumerate(trees):
        leaves = np.flatnonzero(tree["left"] < 0)
        fitted = grower.policy.leaf_values(sums[c][leaves], np.full(len(leaves), c),
                                           leaves)[:, 0] * learning_rate
        tree["value"][leaves, 0] = fitted
        values[c][leaves] = fitted
