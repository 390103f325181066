"""LightGBM's ``Booster.refit``: a boosted model's leaf values refitted to new data, the
tree structures kept (``Model.refit``).

Round by round, from the model's base margin (or each row's own), the new rows'
gradients and hessians at the margins of the rounds before are summed per leaf, and each
leaf becomes::

    new = decay_rate * old + (1 - decay_rate) * learning_rate * w(G, H)

with ``w`` XGBoost's (and LightGBM's) leaf weight ``-T(G) / (H + lambda)`` (L1 threshold
``alpha``, ``max_delta_step``), the parameters the model was trained with unless given.
A leaf no new row reaches keeps ``decay_rate * old`` (LightGBM's rule: its weight is 0).

Out of core: one pass reads every block's labels, weights, base margins and the leaf of
every row in every tree (4 bytes per row and tree), and the rounds are refitted in memory,
when that fits ``memory_limit``; otherwise one pass per round keeps only the rows' margins
(8 bytes per row and output) and one tree's leaves. Both give the same values.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..common import G_H_DTYPE
from ..errors import MemoryLimitError, ParameterError
from ..kernels.split_gradient import leaf_weight
from .tree import binned_leaves


def _settings(model, decay_rate, learning_rate, reg_lambda, reg_alpha, max_delta_step):
    from .objectives import get_objective

    if model.learner != "gbtree" or model.aggregation != "sum":
        raise ParameterError(f"refit re-weights a boosted model's leaves; this is a "
                             f"{model.learner!r} model")
    if model.part("linear_leaves") is not None:
        raise ParameterError("refit re-weights constant leaves; this model has linear "
                             "leaves (linear_tree), whose refit is not offered yet")
    if not (isinstance(decay_rate, (int, float)) and 0.0 <= float(decay_rate) <= 1.0):
        raise ParameterError(f"decay_rate must be a number in [0, 1], got {decay_rate!r}")
    objective = get_objective(model.objective, dict(model.objective_params or {}))
    if objective.needs_all_rows or model.objective.startswith("rank:"):
        raise ParameterError(f"refit takes objectives of independent rows; "
                             f"{model.objective} needs whole groups or all rows")
    given = {"learning_rate": learning_rate, "reg_lambda": reg_lambda,
             "reg_alpha": reg_alpha, "max_delta_step": max_delta_step}
    defaults = {"learning_rate": None, "reg_lambda": 1.0, "reg_alpha": 0.0,
                "max_delta_step": 0.0}
    out = {}
    for name, value in given.items():
        value = value if value is not None else model.params.get(name, defaults[name])
        if value is None:
            raise ParameterError(f"the model does not say its {name}: pass refit(..., "
                                 f"{name}=)")
        out[name] = float(value)
    return objective, float(decay_rate), out


def _refit_round(model, objective, r, leaves_of_round, margin, label, weight, decay, hp,
                 new_values):
    """Refit round ``r``'s trees from their rows' leaves ``leaves_of_round`` (list of
    (n,) arrays, one per tree of the round) at ``margin`` (n, K); ``margin`` moves on by
    the refitted trees."""
    n = label.shape[0]
    grad = np.empty((n, objective.n_outputs), G_H_DTYPE)
    hess = np.empty((n, objective.n_outputs), G_H_DTYPE)
    objective.gradients(label, margin, weight, grad, hess)
    tpr = int(model.trees_per_round)
    for k, leaves in enumerate(leaves_of_round):
        t = r * tpr + k
        tree = model.trees[t]
        group = int(model.tree_group[t])
        column = 0 if group < 0 else group
        g_sum = np.bincount(leaves, weights=grad[:, column], minlength=tree.n_nodes)
        h_sum = np.bincount(leaves, weights=hess[:, column], minlength=tree.n_nodes)
        old = tree.value[:, 0]
        fresh = np.array([leaf_weight(float(g), float(h), hp["reg_lambda"],
                                      hp["reg_alpha"], hp["max_delta_step"], 0.0)
                          for g, h in zip(g_sum, h_sum)])   # one step a node, not a row
        values = decay * old + (1.0 - decay) * hp["learning_rate"] * fresh
        values[tree.left >= 0] = old[tree.left >= 0]
        new_values[t] = values
        contribution = model.tree_weight[t] * values[leaves]
        if group < 0:
            margin += contribution[:, None]
        else:
            margin[:, group] += contribution


def refit_model(model: Any, data: Any, *, decay_rate: float = 0.9,
                learning_rate: float | None = None, reg_lambda: float | None = None,
                reg_alpha: float | None = None, max_delta_step: float | None = None,
                memory_limit: int | str | None = None) -> Any:
    """A copy of ``model`` with every leaf refitted to ``data`` (module docstring).

    Parameters
    ----------
    model : Model
        A boosted model (``learner="gbtree"``) whose trees reach leaves by bin codes.
    data : Cache or cache path
        Labelled, binned with the model's edges (``reference=`` the training cache).
    decay_rate : float in [0, 1]
        LightGBM's ``decay_rate`` (default 0.9): the share of the old value kept.
    learning_rate, reg_lambda, reg_alpha, max_delta_step : float or None
        Default: the model's own training parameters.
    memory_limit : int, str or None
        Peak memory; chooses between the one-pass and the pass-a-round refit.

    Returns
    -------
    Model
    """
    from ..cache.store import Cache
    from ..engine.plan import check_limit
    from ..utils.rss import current_rss

    objective, decay, hp = _settings(model, decay_rate, learning_rate, reg_lambda,
                                     reg_alpha, max_delta_step)
    cache = data if isinstance(data, Cache) else Cache(data)
    if not cache.has_label:
        raise ParameterError(f"refit needs labels: cache {cache.path} has none")
    if cache.manifest.get("bin_mapper") != model.bin_mapper:
        raise ParameterError(f"cache {cache.path} was binned with other edges than the "
                             f"model's: build it with reference= the training cache")
    n, n_trees, k = cache.n_rows, model.n_trees, objective.n_outputs
    one_pass = n * (4 * n_trees + 8 * k + 16)
    per_round = n * (8 * k + 4 + 16)
    limit = None if memory_limit is None else check_limit(memory_limit)
    free = None if limit is None else limit - current_rss()
    if free is not None and free < per_round:
        raise MemoryLimitError(f"refit of {n:,} rows needs {per_round / 2**20:.0f} MiB for "
                               f"their margins and one tree's leaves; memory_limit leaves "
                               f"{max(free, 0) / 2**20:.0f} MiB")
    new_values = [None] * n_trees
    if free is None or one_pass <= free:
        _refit_in_memory(model, cache, objective, decay, hp, new_values)
    else:
        _refit_by_rounds(model, cache, objective, decay, hp, new_values)
    return _with_values(model, new_values, decay, cache.n_rows)


def _labels_and_margins(model, cache, k):
    """``(label, weight, margin)`` of every row, and each block's row range."""
    n = cache.n_rows
    label = np.empty(n, np.float64)
    weight = np.empty(n, np.float64) if cache.has_weight else None
    margin = np.empty((n, k))
    margin[:] = model.base_margin
    for block in cache.iter_blocks(prefetch=1, with_codes=False):
        rows = slice(block.row_start, block.row_start + block.n_rows)
        label[rows] = block.label
        if weight is not None:
            weight[rows] = block.weight
        if block.base_margin is not None:
            margin[rows] = np.tile(block.base_margin, (1, k // block.base_margin.shape[1]))
    return label, weight, margin


def _refit_in_memory(model, cache, objective, decay, hp, new_values):
    label, weight, margin = _labels_and_margins(model, cache, objective.n_outputs)
    objective.check_labels(label, f"cache {cache.path}")
    leaves = np.empty((model.n_trees, cache.n_rows), np.int32)
    missing_bin = cache.max_bin - 1
    for block in cache.iter_blocks(prefetch=1):
        leaves[:, block.row_start:block.row_start + block.n_rows] = binned_leaves(
            model.trees, block.codes, missing_bin)
    tpr = int(model.trees_per_round)
    for r in range(model.n_trees // tpr):
        _refit_round(model, objective, r, list(leaves[r * tpr:(r + 1) * tpr]), margin,
                     label, weight, decay, hp, new_values)


def _refit_by_rounds(model, cache, objective, decay, hp, new_values):
    label, weight, margin = _labels_and_margins(model, cache, objective.n_outputs)
    objective.check_labels(label, f"cache {cache.path}")
    missing_bin = cache.max_bin - 1
    tpr = int(model.trees_per_round)
    for r in range(model.n_trees // tpr):
        trees = model.trees[r * tpr:(r + 1) * tpr]
        leaves = np.empty((tpr, cache.n_rows), np.int32)
        for block in cache.iter_blocks(prefetch=1):
            leaves[:, block.row_start:block.row_start + block.n_rows] = binned_leaves(
                trees, block.codes, missing_bin)
        _refit_round(model, objective, r, list(leaves), margin, label, weight, decay, hp,
                     new_values)


def _with_values(model, new_values, decay, n_rows):
    """A copy of ``model`` whose trees take ``new_values``; ``attributes["refit"]``
    records the decay and the rows."""
    copy = type(model).from_json_dict(model.to_json_dict())
    for tree, values in zip(copy.trees, new_values):
        tree.value = np.ascontiguousarray(values, dtype=np.float64)[:, None]
    copy._flat = None
    copy.attributes["refit"] = {"decay_rate": decay, "rows": int(n_rows)}
    return copy
