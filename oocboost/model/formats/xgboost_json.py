"""Export to XGBoost's JSON model (``xgboost.Booster(model_file="model.json")``, and
UBJSON, ``.ubj``, the same document in XGBoost's binary JSON).

What is kept: every tree, the side a missing value takes, split gains and covers (XGBoost's
``get_score`` importances), the objective with its parameters, the classes and outputs.
XGBoost compares a float32 value with a float32 ``split_condition`` by ``x < c``; an
oocboost split ``x <= t`` is written as ``c`` = the float32 just above the largest
float32 not above ``t``, so every float32 value takes the same side as in oocboost (a
float64 value between two float32 ones is rounded by XGBoost before it is compared, as
for its own models). Leaf values become float32 and XGBoost sums in float32: predictions
agree to about 1e-6 relative, not bit for bit.

The base margin: XGBoost's ``base_score`` is in prediction space and passes through
the objective's inverse link, which rounds in float32; it is written as the neutral
value (0, 0.5 for the logistic family, 1 for the log links) and the model's base margin
is added to the leaves of each output's first tree instead.

Averaged models (random forests, AdaBoost's SAMME) are written as sums of their trees
with the leaf values divided by the count (XGBoost sums trees); a forest's class
probabilities as ``num_target`` identity outputs (``reg:squarederror``), one tree per
class and tree.

Refused by name: categorical splits (not yet translated), AdaBoost.R2's weighted median,
objectives XGBoost does not have, and what no format here expresses
(``formats/common.py``).
"""
from __future__ import annotations

import json

import numpy as np

from ...errors import ModelError
from ..aggregate import is_weighted_median
from .common import ScalarTree, constant_tree, trees_by_round

_FORMAT = "XGBoost's JSON model"
#: XGBoost's version the document declares (the layout of 2.1 and later).
_VERSION = [2, 1, 0]
#: base_score that the objective's inverse link maps to a margin of 0.
_NEUTRAL = {"binary:logistic": 0.5, "reg:logistic": 0.5, "binary:logitraw": 0.5,
            "count:poisson": 1.0, "reg:gamma": 1.0, "reg:tweedie": 1.0,
            "survival:cox": 1.0, "survival:aft": 1.0}
_ROOT_PARENT = 2147483647


def _objective(model) -> tuple[dict, str]:
    """(XGBoost's objective section, the objective name written)."""
    name, p = model.objective_name, model.objective_params or {}
    if name == "multi:proba":
        return {"name": "reg:squarederror", "reg_loss_param": {"scale_pos_weight": "1"}}, \
            "reg:squarederror"
    scale = {"reg_loss_param": {"scale_pos_weight": str(p.get("scale_pos_weight", 1))}}
    sections = {
        "reg:squarederror": scale, "binary:logistic": scale, "reg:logistic": scale,
        "binary:logitraw": scale, "reg:gamma": scale,
        "reg:absoluteerror": {}, "binary:hinge": {}, "survival:cox": {},
        "reg:pseudohubererror": {"pseudo_huber_param": {
            "huber_slope": str(p.get("huber_slope", 1.0))}},
        "count:poisson": {"poisson_regression_param": {
            "max_delta_step": str(p.get("max_delta_step", 0.7))}},
        "reg:tweedie": {"tweedie_regression_param": {
            "tweedie_variance_power": str(p.get("tweedie_variance_power", 1.5))}},
        "multi:softprob": {"softmax_multiclass_param": {"num_class": str(model.n_outputs)}},
        "multi:softmax": {"softmax_multiclass_param": {"num_class": str(model.n_outputs)}},
        "rank:ndcg": {}, "rank:pairwise": {}, "rank:map": {},
    }
    if name == "reg:quantileerror":
        alpha = np.atleast_1d(p.get("quantile_alpha", 0.5))
        if alpha.size != 1 or model.n_outputs != 1:
            raise ModelError(f"{_FORMAT}: export a quantile model of one level (this one "
                             f"has {alpha.size})")
        return {"name": name, "quantile_loss_param": {
            "quantile_alpha": f"[{float(alpha[0])!r}]"}}, name
    if name not in sections:
        raise ModelError(f"{_FORMAT}: the objective {name!r} has no XGBoost counterpart "
                         f"this export writes")
    return {"name": name, **sections[name]}, name


def _f32(values) -> list[float]:
    return [float(v) for v in np.asarray(values, dtype=np.float32)]


_F32_MAX = float(np.finfo(np.float32).max)


def split_conditions(threshold: np.ndarray) -> np.ndarray:
    """float32 ``c`` with ``x < c`` exactly when ``x <= threshold`` for float32 ``x``:
    the float32 after the largest float32 not above ``threshold``. Conditions stay
    finite (JSON has no infinity): a threshold at or past the float32 range sends every
    float32 but its largest, 3.4e38, the same way (that one goes right in XGBoost)."""
    t = np.clip(np.asarray(threshold, dtype=np.float64), -_F32_MAX, _F32_MAX)
    below = t.astype(np.float32)
    over = below.astype(np.float64) > t
    below[over] = np.nextafter(below[over], np.float32(-np.inf))
    with np.errstate(over="ignore"):            # the largest float32's next: inf
        above = np.nextafter(below, np.float32(np.inf))
    return np.minimum(above, np.float32(_F32_MAX))


def _tree_json(index: int, tree: ScalarTree, n_features: int, names: list[str]) -> dict:
    internal = tree.left >= 0
    if tree.is_categorical[internal].any():
        node = int(np.flatnonzero(internal & tree.is_categorical)[0])
        raise ModelError(f"{_FORMAT}: categorical splits are not exported yet (feature "
                         f"{names[int(tree.feature[node])]!r})")
    n = tree.n_nodes
    parents = np.full(n, _ROOT_PARENT, dtype=np.int64)
    parents[tree.left[internal]] = np.flatnonzero(internal)
    parents[tree.right[internal]] = np.flatnonzero(internal)
    conditions = np.where(internal, split_conditions(np.where(internal, tree.threshold, 0)),
                          tree.value.astype(np.float32))
    return {
        "base_weights": _f32(tree.value), "categories": [], "categories_nodes": [],
        "categories_segments": [], "categories_sizes": [],
        "default_left": [int(v) for v in tree.default_left & internal], "id": index,
        "left_children": [int(v) for v in tree.left],
        "loss_changes": _f32(np.where(internal, tree.gain, 0.0)),
        "parents": [int(v) for v in parents],
        "right_children": [int(v) for v in tree.right],
        "split_conditions": _f32(conditions),
        "split_indices": [int(v) for v in np.where(internal, tree.feature, 0)],
        "split_type": [0] * n, "sum_hessian": _f32(tree.cover),
        "tree_param": {"num_deleted": "0", "num_feature": str(n_features),
                       "num_nodes": str(n), "size_leaf_vector": "1"},
    }


def _rounds_as_sums(model) -> list[list[ScalarTree]]:
    """The trees by round, an average written as a sum (values over the count) and the
    base margin in each output's first tree."""
    rounds = trees_by_round(model, _FORMAT)
    if model.aggregation == "mean" and rounds:
        for one_round in rounds:
            for tree in one_round:
                tree.value = tree.value / len(rounds)
    base = np.asarray(model.base_margin, dtype=np.float64)
    if np.any(base):
        if not rounds:
            rounds = [[constant_tree(0.0) for _ in base]]
        for k, tree in enumerate(rounds[0]):
            tree.value = tree.value + base[k]
    return rounds


def _default_names(model) -> bool:
    return list(model.feature_names) == [f"f{j}" for j in range(len(model.feature_names))]


def to_xgboost_dict(model) -> dict:
    """The model as XGBoost's JSON document (module docstring); ModelError naming what
    the format cannot express."""
    if is_weighted_median(model):
        raise ModelError(f"{_FORMAT} cannot express AdaBoost.R2's weighted median of the "
                         f"trees (it sums them)")
    objective, written = _objective(model)
    n_outputs, n_features = int(model.n_outputs), len(model.feature_names)
    rounds = _rounds_as_sums(model)
    trees = [tree for one_round in rounds for tree in one_round]
    multiclass = written in ("multi:softprob", "multi:softmax")
    neutral = _NEUTRAL.get(written, 0.0)
    base_score = ",".join(repr(neutral) for _ in range(n_outputs if multiclass else 1))
    return {
        "learner": {
            "attributes": {},
            # XGBoost's own default is no names (then any array predicts); names make
            # it check the data's, as for a model trained on a DataFrame
            "feature_names": [] if _default_names(model) else list(model.feature_names),
            "feature_types": [] if _default_names(model) else ["float"] * n_features,
            "gradient_booster": {"model": {
                "gbtree_model_param": {"num_parallel_tree": "1",
                                       "num_trees": str(len(trees))},
                "iteration_indptr": [n_outputs * r for r in range(len(rounds) + 1)],
                "tree_info": [k for _ in rounds for k in range(n_outputs)],
                "trees": [_tree_json(i, t, n_features, model.feature_names)
                          for i, t in enumerate(trees)],
            }, "name": "gbtree"},
            "learner_model_param": {
                "base_score": f"[{base_score}]", "boost_from_average": "1",
                "num_class": str(n_outputs if multiclass else 0),
                "num_feature": str(n_features),
                "num_target": str(1 if multiclass else n_outputs)},
            "objective": objective,
        },
        "version": _VERSION,
    }


def to_xgboost_json(model) -> str:
    """:func:`to_xgboost_dict` as JSON text."""
    return json.dumps(to_xgboost_dict(model), allow_nan=False, separators=(",", ":"))
