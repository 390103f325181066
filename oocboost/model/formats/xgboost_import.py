"""Models in from XGBoost's JSON model (``Booster.save_model("m.json")``; UBJSON decoded
first by ``ubjson.py``): an oocboost :class:`~oocboost.model.model.Model` that predicts
what XGBoost predicts, with the same leaf indices and Tree SHAP values.

How XGBoost's trees map: node ids are kept (``pred_leaf`` agrees); a split ``x < c``
(XGBoost compares the float32 value) becomes ``x <= t`` with ``t`` the largest float32
below ``c``, the same side for every float32 value (a float64 value between two float32
ones may round the other way in XGBoost, as between XGBoost's own float32 and float64
inputs); the side of a missing value, split gains and covers (the hessian sums Tree SHAP
weighs by) are kept; each internal node's value is its children's cover-weighted mean. The
objective with its parameters, ``base_score`` (through the objective's link), the output
groups of the trees, DART's tree weights and ``best_iteration`` come along. XGBoost
records no row counts: ``n_samples`` is 0.

Refused by name: ``gblinear``, categorical features, multi-output trees
(``multi_strategy="multi_output_tree"``), objectives oocboost lacks.

Every field is checked before use: the file is untrusted.
"""
from __future__ import annotations

import numpy as np

from ...errors import ModelError
from ..objectives import get_objective
from .reading import field, int_list, number_list, string_number, tree_from_arrays

_FORMAT = "XGBoost model"
#: XGBoost objective section -> the parameters it holds (oocboost's names are XGBoost's).
_PARAM_SECTIONS = {
    "reg_loss_param": ("scale_pos_weight",),
    "pseudo_huber_param": ("huber_slope",),
    "poisson_regression_param": ("max_delta_step",),
    "tweedie_regression_param": ("tweedie_variance_power",),
    "softmax_multiclass_param": ("num_class",),
    "aft_loss_param": ("aft_loss_distribution", "aft_loss_distribution_scale"),
}


def is_xgboost_document(doc) -> bool:
    """Whether parsed JSON is an XGBoost model (``{"learner": ..., "version": [...]}``)."""
    return isinstance(doc, dict) and isinstance(doc.get("learner"), dict) and \
        isinstance(doc.get("version"), list)


def _objective(learner: dict, where: str, n_targets: int):
    section = field(learner, "objective", dict, where)
    name = field(section, "name", str, where + ": objective")
    params = {}
    for key, names in _PARAM_SECTIONS.items():
        values = section.get(key)
        if isinstance(values, dict):
            for p in names:
                if p in values:
                    params[p] = string_number(values[p], f"{where}: objective {key}.{p}",
                                              keep_text=p == "aft_loss_distribution")
    quantile = section.get("quantile_loss_param")
    if isinstance(quantile, dict) and "quantile_alpha" in quantile:
        params["quantile_alpha"] = number_list(
            quantile["quantile_alpha"], f"{where}: quantile_alpha")
    if n_targets > 1:
        params["n_targets"] = n_targets
    try:
        return get_objective(name, params)
    except Exception as exc:       # the objective's own ParameterError, named here
        raise ModelError(f"{where}: objective {name!r} cannot be read: {exc}") from None


def _tree(d, where: str, n_features: int):
    param = field(d, "tree_param", dict, where)
    n_nodes = int(string_number(param.get("num_nodes"), where + ": num_nodes"))
    if int(string_number(param.get("size_leaf_vector", "1"), where)) > 1:
        raise ModelError(f"{where}: multi-output trees (multi_strategy="
                         f"'multi_output_tree') are not imported; train with "
                         f"'one_output_per_tree'")
    left = int_list(d, "left_children", n_nodes, where)
    right = int_list(d, "right_children", n_nodes, where)
    split_type = int_list(d, "split_type", n_nodes, where) if "split_type" in d \
        else np.zeros(n_nodes, np.int64)
    internal = left >= 0
    if np.any(split_type[internal] != 0):
        node = int(np.flatnonzero(internal & (split_type != 0))[0])
        raise ModelError(f"{where}, node {node}: categorical splits are not imported; "
                         f"export categorical models from oocboost instead")
    feature = np.where(internal, int_list(d, "split_indices", n_nodes, where), -1)
    conditions = number_list(d.get("split_conditions"), where + ": split_conditions",
                             n_nodes)
    c32 = conditions.astype(np.float32)
    threshold = np.where(internal, np.nextafter(c32, np.float32(-np.inf)).astype(
        np.float64), 0.0)
    cover = number_list(d.get("sum_hessian"), where + ": sum_hessian", n_nodes)
    gain = np.where(internal, number_list(d.get("loss_changes"), where + ": loss_changes",
                                          n_nodes), 0.0)
    default_left = int_list(d, "default_left", n_nodes, where).astype(bool) & internal
    return tree_from_arrays(left, right, feature, threshold,
                            np.where(internal, 0.0, conditions), default_left, gain, cover,
                            np.zeros(n_nodes), n_features, where)


def _base_margin(learner_param: dict, objective, where: str) -> np.ndarray:
    scores = number_list(learner_param.get("base_score", "0.5"), where + ": base_score")
    if scores.size not in (1, objective.n_outputs):
        raise ModelError(f"{where}: base_score has {scores.size} values for "
                         f"{objective.n_outputs} outputs")
    if scores.size == 1:
        return objective.base_score_to_margin(float(scores[0]))
    return np.array([objective.base_score_to_margin(float(s))[0] for s in scores])


def from_xgboost_document(doc: dict, where: str, model_class):
    """The :class:`Model` of a parsed XGBoost JSON model (module docstring)."""
    learner = field(doc, "learner", dict, where)
    booster = field(learner, "gradient_booster", dict, where)
    kind = field(booster, "name", str, where + ": gradient_booster")
    if kind not in ("gbtree", "dart"):
        raise ModelError(f"{where}: a {kind!r} booster is not imported (tree boosters "
                         f"only: gbtree, dart)")
    gbtree = field(booster, "gbtree", dict, where) if kind == "dart" else booster
    model_doc = field(gbtree, "model", dict, where + ": gradient_booster")
    learner_param = field(learner, "learner_model_param", dict, where)
    n_features = int(string_number(learner_param.get("num_feature"), where +
                                   ": num_feature"))
    n_class = int(string_number(learner_param.get("num_class", "0"), where))
    n_target = int(string_number(learner_param.get("num_target", "1"), where))
    objective = _objective(learner, where, 1 if n_class else n_target)
    names, types = _features(learner, n_features, where)
    raw_trees = field(model_doc, "trees", list, where)
    trees = [_tree(t, f"{where}: tree {i}", n_features) if isinstance(t, dict) else
             _fail(f"{where}: tree {i} is not an object") for i, t in enumerate(raw_trees)]
    groups = int_list(model_doc, "tree_info", len(trees), where)
    n_outputs = int(objective.n_outputs)
    if np.any((groups < 0) | (groups >= n_outputs)):
        raise ModelError(f"{where}: tree_info names an output outside [0, {n_outputs})")
    weights = np.ones(len(trees))
    if kind == "dart":
        weights = number_list(booster.get("weight_drop"), where + ": weight_drop",
                              len(trees))
    parallel = int(string_number(field(model_doc, "gbtree_model_param", dict, where).get(
        "num_parallel_tree", "1"), where + ": num_parallel_tree"))
    best = (learner.get("attributes") or {}).get("best_iteration")
    model = model_class(
        trees, tree_group=groups.astype(np.int32), tree_weight=weights,
        base_margin=_base_margin(learner_param, objective, where), n_outputs=n_outputs,
        objective=objective.name, objective_params=dict(objective.params),
        learner="gbtree", aggregation="sum", trees_per_round=max(parallel, 1) * n_outputs,
        feature_names=names, feature_types=types, bin_mapper=None, params={},
        best_iteration=int(best) if isinstance(best, str) and best.isdigit() else None,
        n_classes=n_class or None, classes=None,
        attributes={"imported_from": "xgboost",
                    "xgboost_version": ".".join(str(v) for v in doc["version"][:3])})
    model.validate()
    return model


def _features(learner: dict, n_features: int, where: str):
    names = learner.get("feature_names") or [f"f{j}" for j in range(n_features)]
    types = learner.get("feature_types") or ["float"] * n_features
    if not (isinstance(names, list) and len(names) == n_features
            and all(isinstance(n, str) for n in names)):
        raise ModelError(f"{where}: feature_names must be {n_features} strings")
    if "c" in types:
        raise ModelError(f"{where}: feature {names[types.index('c')]!r} is categorical; "
                         f"categorical XGBoost models are not imported")
    return list(names), ["numeric"] * n_features


def _fail(message):
    raise ModelError(message)
