"""Models in from LightGBM's text model (``Booster.save_model("model.txt")``): an oocboost
:class:`~oocboost.model.model.Model` that predicts what LightGBM predicts, exactly (the
thresholds are doubles compared by ``x <= threshold``, as in oocboost), with the same
Tree SHAP values (LightGBM weighs them by row counts: they become the covers).

How LightGBM's trees map: internal node ``i`` keeps id ``i`` and leaf ``l`` becomes
``num_leaves - 1 + l``; a missing value takes the side LightGBM sends it: for missing
type NaN the default side, for missing type None the side of 0 (LightGBM reads NaN as
0.0 there). The objective (``binary``, ``multiclass``, ``regression``, ``poisson`` ...),
``average_output`` (random forests: the mean of the trees), split gains, hessian sums and
row counts come along.

Linear trees (``linear_tree=True``) come in as the ``linear_leaves`` part: each leaf's
``leaf_const``, features and coefficients (``model/linear_leaves.py``), evaluated on raw
values as LightGBM does (a row missing one of a leaf's features gets its leaf value).

Refused by name: categorical splits, missing type Zero where 0 would not
go the default side (``zero_as_missing=True``), ``sigmoid`` other than 1, and objectives
oocboost lacks (``multiclassova``, ``xentlambda``...).
"""
from __future__ import annotations

import numpy as np

from ...errors import ModelError
from ..objectives import get_objective
from .reading import number_list, tree_from_arrays

#: LightGBM objective -> (oocboost objective, parameters read from the line).
OBJECTIVES = {
    "regression": "reg:squarederror", "regression_l2": "reg:squarederror",
    "l2": "reg:squarederror", "mse": "reg:squarederror", "rmse": "reg:squarederror",
    "regression_l1": "reg:absoluteerror", "l1": "reg:absoluteerror",
    "huber": "reg:pseudohubererror", "fair": "reg:squarederror", "mape": "reg:squarederror",
    "quantile": "reg:quantileerror", "binary": "binary:logistic",
    "cross_entropy": "reg:logistic", "xentropy": "reg:logistic",
    "poisson": "count:poisson", "gamma": "reg:gamma", "tweedie": "reg:tweedie",
    "multiclass": "multi:softprob", "softmax": "multi:softprob",
    "lambdarank": "rank:ndcg", "rank_xendcg": "rank:ndcg",
}
_CATEGORICAL, _DEFAULT_LEFT = 1, 2
_MISSING_NONE, _MISSING_ZERO, _MISSING_NAN = 0, 1, 2
#: Fields of a tree block read as numbers, and whether each is required.
_TREE_FIELDS = {"split_feature": True, "threshold": True, "decision_type": True,
                "left_child": True, "right_child": True, "leaf_value": True,
                "split_gain": False, "internal_count": False, "leaf_count": False,
                "internal_weight": False, "leaf_weight": False}


def _blocks(text: str, where: str) -> tuple[dict, list[dict]]:
    """(header fields, each tree's fields) of the model text."""
    end = text.find("end of trees")
    if end < 0:
        raise ModelError(f"{where}: no 'end of trees' line (truncated LightGBM model?)")
    header: dict = {}
    trees: list[dict] = []
    current = header
    for n, line in enumerate(text[:end].splitlines(), 1):
        line = line.strip()
        if not line:
            continue
        key, sep, value = line.partition("=")
        if key == "Tree":
            current = {"_line": n}
            trees.append(current)
        elif sep:
            current[key] = value
        elif current is header:
            current[key] = True            # flags: average_output, tree...
    return header, trees


def _objective(header: dict, where: str):
    words = str(header.get("objective", "regression")).split()
    name = words[0] if words else "regression"
    options = dict(w.split(":", 1) for w in words[1:] if ":" in w)
    if name not in OBJECTIVES:
        raise ModelError(f"{where}: LightGBM objective {name!r} has no oocboost "
                         f"counterpart (read: {', '.join(sorted(OBJECTIVES))})")
    if name == "binary" and float(options.get("sigmoid", 1)) != 1.0:
        raise ModelError(f"{where}: objective 'binary' with sigmoid:{options['sigmoid']} "
                         f"(oocboost's logistic link has sigmoid 1)")
    params = {}
    if name in ("multiclass", "softmax"):
        params["num_class"] = int(options.get("num_class", header.get("num_class", 1)))
    if name == "tweedie" and "tweedie_variance_power" in options:
        params["tweedie_variance_power"] = float(options["tweedie_variance_power"])
    try:
        return get_objective(OBJECTIVES[name], params)
    except Exception as exc:
        raise ModelError(f"{where}: objective {name!r} cannot be read: {exc}") from None


def _numbers(block: dict, key: str, length: int, where: str) -> np.ndarray:
    text = block.get(key)
    if text is None:
        if _TREE_FIELDS.get(key):
            raise ModelError(f"{where}: no {key!r}")
        return np.zeros(length)
    try:
        values = [float(v) for v in str(text).split()]
    except ValueError:
        raise ModelError(f"{where}: {key!r} holds a value that is not a number") from None
    return number_list(values, f"{where}: {key}", length)


def _tree(block: dict, where: str, n_features: int, names: list[str]):
    try:
        n_leaves = int(block.get("num_leaves", ""))
    except ValueError:
        raise ModelError(f"{where}: 'num_leaves' is not an integer") from None
    if not 1 <= n_leaves <= 1 << 23:
        raise ModelError(f"{where}: num_leaves {n_leaves} is out of range")
    if n_leaves == 1:
        value = _numbers(block, "leaf_value", 1, where)
        return tree_from_arrays(np.full(1, -1), np.full(1, -1), np.full(1, -1),
                                np.zeros(1), value, np.zeros(1, bool), np.zeros(1),
                                np.zeros(1), np.zeros(1), n_features, where)
    n_internal = n_leaves - 1
    # leaf values are written with the tree's shrinkage applied
    fields = {k: _numbers(block, k, n_leaves if k.startswith("leaf") else n_internal,
                          where) for k in _TREE_FIELDS}
    decision = fields["decision_type"].astype(np.int64)
    if np.any(decision & _CATEGORICAL):
        j = int(np.flatnonzero(decision & _CATEGORICAL)[0])
        raise ModelError(f"{where}: categorical split on feature "
                         f"{names[int(fields['split_feature'][j])]!r}: categorical "
                         f"LightGBM models are not imported")
    threshold = fields["threshold"]
    missing = (decision >> 2) & 3
    default_left = (decision & _DEFAULT_LEFT) > 0
    # missing type None: LightGBM reads NaN as 0.0 and compares it
    default_left = np.where(missing == _MISSING_NONE, 0.0 <= threshold, default_left)
    zero = missing == _MISSING_ZERO
    if np.any(zero & (default_left != (0.0 <= threshold))):
        j = int(np.flatnonzero(zero & (default_left != (0.0 <= threshold)))[0])
        raise ModelError(f"{where}: feature {names[int(fields['split_feature'][j])]!r} "
                         f"treats 0 as missing (zero_as_missing=True), sending it "
                         f"away from where 0 compares; oocboost keeps 0 a value")

    def node_ids(child):
        child = child.astype(np.int64)
        return np.where(child >= 0, child, n_internal + ~child)

    n = n_internal + n_leaves
    left = np.full(n, -1, np.int64)
    right = np.full(n, -1, np.int64)
    left[:n_internal] = node_ids(fields["left_child"])
    right[:n_internal] = node_ids(fields["right_child"])

    def both(internal_key, leaf_key):
        return np.concatenate([fields[internal_key], fields[leaf_key]])

    return tree_from_arrays(
        left, right,
        np.concatenate([fields["split_feature"].astype(np.int64),
                        np.full(n_leaves, -1)]),
        np.concatenate([threshold, np.zeros(n_leaves)]),
        np.concatenate([np.zeros(n_internal), fields["leaf_value"]]),
        np.concatenate([default_left, np.zeros(n_leaves, bool)]),
        np.concatenate([fields["split_gain"], np.zeros(n_leaves)]),
        both("internal_count", "leaf_count"),
        both("internal_count", "leaf_count"), n_features, where)


def _linear_leaves(block: dict, where: str, tree_index: int, n_leaves: int):
    """The tree's :class:`LinearLeaves` when its block says ``is_linear=1`` (leaf ``l``
    is node ``num_leaves - 1 + l``), else None."""
    from ..linear_leaves import LinearLeaves

    if block.get("is_linear", "0").strip() in ("0", ""):
        return None
    const = _numbers(block, "leaf_const", n_leaves, where)
    counts = _numbers(block, "num_features", n_leaves, where)
    if np.any(counts < 0) or np.any(counts != np.round(counts)):
        raise ModelError(f"{where}: num_features must be counts")
    total = int(counts.sum())
    offset = np.zeros(n_leaves + 1, np.int64)
    np.cumsum(counts.astype(np.int64), out=offset[1:])
    features = _numbers(block, "leaf_features", total, where) if total else np.zeros(0)
    coef = _numbers(block, "leaf_coeff", total, where) if total else np.zeros(0)
    if np.any(features != np.round(features)):
        raise ModelError(f"{where}: leaf_features must be feature indices")
    nodes = np.arange(n_leaves) + (n_leaves - 1 if n_leaves > 1 else 0)
    return LinearLeaves(tree_index, nodes, const, offset, features.astype(np.int64), coef)


def from_lightgbm_text(data: bytes, where: str, model_class):
    """The :class:`Model` of a LightGBM text model's bytes (module docstring)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ModelError(f"{where} is not UTF-8 text (byte {exc.start})") from None
    del data
    header, blocks = _blocks(text, where)
    try:
        n_features = int(header.get("max_feature_idx", "")) + 1
        per_round = int(header.get("num_tree_per_iteration", "1"))
    except ValueError:
        raise ModelError(f"{where}: max_feature_idx / num_tree_per_iteration are not "
                         f"integers") from None
    names = str(header.get("feature_names", "")).split()
    if len(names) != n_features:
        raise ModelError(f"{where}: {len(names)} feature_names for {n_features} features")
    objective = _objective(header, where)
    if per_round != objective.n_outputs:
        raise ModelError(f"{where}: {per_round} trees per iteration for an objective of "
                         f"{objective.n_outputs} outputs")
    trees = [_tree(b, f"{where}: tree {i} (line {b['_line']})", n_features, names)
             for i, b in enumerate(blocks)]
    linear = [_linear_leaves(b, f"{where}: tree {i} (line {b['_line']})", i, t.n_leaves)
              for i, (b, t) in enumerate(zip(blocks, trees))]
    if len(trees) % per_round:
        raise ModelError(f"{where}: {len(trees)} trees, not whole iterations of "
                         f"{per_round}")
    groups = np.tile(np.arange(per_round, dtype=np.int32), len(trees) // per_round)
    model = model_class(
        trees, tree_group=groups, tree_weight=np.ones(len(trees)),
        base_margin=np.zeros(per_round), n_outputs=per_round, objective=objective.name,
        objective_params=dict(objective.params), learner="gbtree",
        aggregation="mean" if header.get("average_output") else "sum",
        trees_per_round=per_round, feature_names=names,
        feature_types=["numeric"] * n_features, bin_mapper=None, params={},
        n_classes=per_round if objective.n_outputs > 1 else None,
        attributes={"imported_from": "lightgbm",
                    "lightgbm_version": str(header.get("version", ""))})
    if any(entry is not None for entry in linear):
        from ..linear_leaves import LinearLeavesPart

        model.parts[LinearLeavesPart.key] = LinearLeavesPart(
            [entry for entry in linear if entry is not None])
    model.validate()
    return model
