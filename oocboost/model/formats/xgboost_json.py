"""Export to XGBoost's JSON model (``xgboost.Booster(model_file="model.json")``), and
UBJSON (``.ubj``), the same document in XGBoost's binary JSON.

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

Categorical features are XGBoost's (feature type ``c``, the names written): a category
goes in as its position in the model's list (``Model.export_input``; pandas' codes of a
column with those categories), and a split lists the positions that go right, as
XGBoost's own (positions past the list, which no data of the model's categories has, go
left in XGBoost and right in oocboost).

Refused by name: target-statistic features, AdaBoost.R2's weighted median,
objectives XGBoost does not have, and what no format here expresses
(``formats/common.py``).
"""
from __future__ import annotations

import json

import numpy as np

from ...errors import ModelError
from ..aggregate import is_weighted_median
from .common import ScalarTree, category_lists, exported_rounds, left_categories

_FORMAT = "XGBoost's JSON model"
#: XGBoost's version the document declares (the layout of 2.1 and later).
_VERSION = [2, 1, 0]
#: base_score that the objective's inverse link maps to a margin of 0.
#: (binary:logitraw's base_score is a margin already: 0.)
_NEUTRAL = {"binary:logistic": 0.5, "reg:logistic": 0.5,
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


def _categorical_fields(tree: ScalarTree, internal, categories, max_bin, names) -> dict:
    """XGBoost's categorical split fields: per categorical node the category positions
    that go right (XGBoost sends a listed category right, the others left)."""
    nodes = np.flatnonzero(internal & tree.is_categorical)
    fields = {"categories": [], "categories_nodes": [int(v) for v in nodes],
              "categories_segments": [], "categories_sizes": []}
    for node in nodes:
        feature = int(tree.feature[node])
        if feature not in categories:
            raise ModelError(f"{_FORMAT}: a categorical split on numeric feature "
                             f"{names[feature]!r}")
        n_positions = len(categories[feature])
        right = np.setdiff1d(np.arange(n_positions), left_categories(
            tree.cat_bitset[node], max_bin))
        # XGBoost wants a category on each node: one past the list, which no data holds
        right = right if right.size else np.array([n_positions])
        fields["categories_segments"].append(len(fields["categories"]))
        fields["categories_sizes"].append(int(right.size))
        fields["categories"].extend(int(v) for v in right)
    return fields


def _tree_json(index: int, tree: ScalarTree, n_features: int, names: list[str],
               categories: dict, max_bin) -> dict:
    internal = tree.left >= 0
    n = tree.n_nodes
    parents = np.full(n, _ROOT_PARENT, dtype=np.int64)
    parents[tree.left[internal]] = np.flatnonzero(internal)
    parents[tree.right[internal]] = np.flatnonzero(internal)
    numeric = internal & ~tree.is_categorical
    conditions = np.where(numeric, split_conditions(np.where(numeric, tree.threshold, 0)),
                          np.where(internal, 0.0, tree.value).astype(np.float32))
    return {
        "base_weights": _f32(tree.value),
        **_categorical_fields(tree, internal, categories, max_bin, names),
        "default_left": [int(v) for v in tree.default_left & internal], "id": index,
        "left_children": [int(v) for v in tree.left],
        "loss_changes": _f32(np.where(internal, tree.gain, 0.0)),
        "parents": [int(v) for v in parents],
        "right_children": [int(v) for v in tree.right],
        "split_conditions": _f32(conditions),
        "split_indices": [int(v) for v in np.where(internal, tree.feature, 0)],
        "split_type": [int(v) for v in internal & tree.is_categorical],
        "sum_hessian": _f32(tree.cover),
        "tree_param": {"num_deleted": "0", "num_feature": str(n_features),
                       "num_nodes": str(n), "size_leaf_vector": "1"},
    }


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
    rounds = exported_rounds(model, _FORMAT)
    categories = category_lists(model, _FORMAT)
    trees = [tree for one_round in rounds for tree in one_round]
    named = bool(categories) or not _default_names(model)
    multiclass = written in ("multi:softprob", "multi:softmax")
    neutral = _NEUTRAL.get(written, 0.0)
    base_score = ",".join(repr(neutral) for _ in range(n_outputs if multiclass else 1))
    return {
        "learner": {
            "attributes": {},
            # XGBoost's own default is no names (then any array predicts); names make
            # it check the data's, as for a model trained on a DataFrame
            "feature_names": list(model.feature_names) if named else [],
            "feature_types": ["c" if f in categories else "float"
                              for f in range(n_features)] if named else [],
            "gradient_booster": {"model": {
                "gbtree_model_param": {"num_parallel_tree": "1",
                                       "num_trees": str(len(trees))},
                "iteration_indptr": [n_outputs * r for r in range(len(rounds) + 1)],
                "tree_info": [k for _ in rounds for k in range(n_outputs)],
                "trees": [_tree_json(i, t, n_features, model.feature_names, categories,
                                     model.max_bin) for i, t in enumerate(trees)],
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


#: The typed arrays of a tree in XGBoost's UBJSON (its reader wants these dtypes).
_UBJSON_ARRAYS = {
    np.float32: ("base_weights", "loss_changes", "split_conditions", "sum_hessian"),
    np.int32: ("left_children", "right_children", "parents", "split_indices",
               "categories_nodes", "categories"),
    np.int64: ("categories_segments", "categories_sizes"),
    np.uint8: ("default_left", "split_type"),
}


def to_xgboost_ubjson(model) -> bytes:
    """:func:`to_xgboost_dict` as XGBoost's UBJSON (``.ubj``): the trees' arrays typed
    as XGBoost writes them."""
    from .ubjson import encode

    doc = to_xgboost_dict(model)
    for tree in doc["learner"]["gradient_booster"]["model"]["trees"]:
        for dtype, keys in _UBJSON_ARRAYS.items():
            for key in keys:
                tree[key] = np.asarray(tree[key], dtype=dtype)
    return encode(doc)
