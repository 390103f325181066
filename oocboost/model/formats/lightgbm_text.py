"""Export to LightGBM's text model format, the file ``lightgbm.Booster(model_file=...)``
loads and ``Booster.save_model`` writes.

What is kept: every tree (numeric splits ``x <= threshold`` as LightGBM's, thresholds
and leaf values written with all 17 digits, so LightGBM's double arithmetic reaches the
same leaves), the side a missing value takes (missing type NaN), split gains, covers and
row counts (LightGBM's importances), the output transform (``binary`` is the sigmoid,
``multiclass`` the softmax, ``poisson``/``gamma``/``tweedie`` the exponential) and a
forest's average (``average_output``). LightGBM keeps no base score: the model's base
margin is added to the leaves of each output's first tree (under a mean, to every tree).
An averaged model's ``predict(raw_score=True)`` in LightGBM is the sum of its trees (its
``predict`` averages): divide by ``current_iteration()`` for oocboost's margin. Linear
leaves (``linear_tree=True``) are written as LightGBM's own (``is_linear=1``,
``leaf_const``, ``leaf_features``, ``leaf_coeff``), which LightGBM evaluates on raw
values as oocboost does.

Categorical splits are LightGBM's bitsets over a category's position in the model's list
(``Model.export_input``, or a DataFrame column of pandas' category type with those
categories: ``pandas_categorical`` lists them as LightGBM's own models do). LightGBM
sends a missing category right: a split whose missing values go left is written with
its children swapped and the complement of its set.

What is refused, by name: target-statistic features, objectives LightGBM has no
transform for (``binary:hinge``, survival), AdaBoost.R2's weighted median, and what no
format here expresses (oblique and surrogate splits, MARS terms: ``formats/common.py``).
Feature names with whitespace, which the format cannot hold, are written with ``_``
instead, as LightGBM's Python package does.
``multi:softmax`` models are written as ``multiclass``: LightGBM predicts the
probabilities, whose argmax is oocboost's prediction.
"""
from __future__ import annotations

import json
import re
import warnings

import numpy as np

from ...errors import ModelError
from ..aggregate import is_weighted_median
from .common import ScalarTree, category_lists, exported_rounds, left_categories

#: oocboost objective -> LightGBM's objective line ({K}: classes); None: no objective,
#: so LightGBM predicts the raw (here averaged probability) scores.
OBJECTIVES = {
    "binary:logistic": "binary sigmoid:1",
    "reg:logistic": "cross_entropy",
    "binary:logitraw": "regression",
    "reg:squarederror": "regression",
    "reg:absoluteerror": "regression_l1",
    "reg:pseudohubererror": "huber",
    "reg:quantileerror": "quantile",
    "count:poisson": "poisson",
    "reg:gamma": "gamma",
    "reg:tweedie": "tweedie",
    "rank:pairwise": "lambdarank",
    "rank:ndcg": "lambdarank",
    "rank:map": "lambdarank",
    "multi:softprob": "multiclass num_class:{K}",
    "multi:softmax": "multiclass num_class:{K}",
    "multi:proba": None,
}
#: LightGBM's decision_type bits: categorical (1), default left (2), missing type NaN.
_CATEGORICAL = 1
_DEFAULT_LEFT = 2
_MISSING_NAN = 2 << 2
_FORMAT = "LightGBM's text format"


def _float(x: float) -> str:
    """A double as LightGBM reads it back exactly (17 significant digits)."""
    return repr(float(x))


def _feature_names(model) -> list[str]:
    names = [re.sub(r"\s", "_", name) for name in model.feature_names]
    changed = [old for old, new in zip(model.feature_names, names) if old != new]
    if changed:
        warnings.warn(f"LightGBM's text format cannot hold whitespace in feature names: "
                      f"{', '.join(map(repr, changed[:5]))} written with '_'",
                      UserWarning, stacklevel=4)
    return names


def _objective_line(model) -> str | None:
    name = model.objective_name
    if name not in OBJECTIVES:
        raise ModelError(f"{_FORMAT} has no objective that predicts as {name!r} does; "
                         f"export models of {', '.join(sorted(OBJECTIVES))}")
    line = OBJECTIVES[name]
    return None if line is None else line.format(K=int(model.n_outputs))


def _left_set(tree: ScalarTree, node: int, categories: dict, max_bin, names) -> tuple:
    """(category positions LightGBM sends left, whether the children swap): LightGBM
    sends a missing value right at a categorical split, so a split whose missing values
    go left is written with its children swapped and the complement set (over the
    model's category positions)."""
    feature = int(tree.feature[node])
    if feature not in categories:
        raise ModelError(f"{_FORMAT}: a categorical split on numeric feature "
                         f"{names[feature]!r}")
    left = left_categories(tree.cat_bitset[node], max_bin)
    if not tree.default_left[node]:
        return left, False
    return np.setdiff1d(np.arange(len(categories[feature])), left), True


def _tree_text(index: int, tree: ScalarTree, names: list[str], categories: dict,
               max_bin) -> str:
    """One ``Tree=`` block (nodes renumbered: LightGBM's internal nodes and leaves are
    counted apart; a child ``~l`` is leaf ``l``)."""
    internal = np.flatnonzero(tree.left >= 0)
    leaves = np.flatnonzero(tree.left < 0)
    if internal.size == 0:
        linear = "".join(f"{k}={v}\n" for k, v in _linear_fields(tree, leaves))
        return (f"Tree={index}\nnum_leaves=1\nnum_cat=0\n"
                f"leaf_value={_float(tree.value[0])}\nleaf_weight={_float(tree.cover[0])}\n"
                f"leaf_count={int(tree.n_samples[0])}\n{linear}shrinkage=1\n\n\n")
    new_id = np.empty(tree.n_nodes, dtype=np.int64)
    new_id[internal] = np.arange(internal.size)
    new_id[leaves] = ~np.arange(leaves.size)        # LightGBM's -(leaf + 1)
    left, right = new_id[tree.left[internal]], new_id[tree.right[internal]]
    threshold = tree.threshold[internal].copy()
    decision = _MISSING_NAN + _DEFAULT_LEFT * tree.default_left[internal].astype(np.int64)
    boundaries, words = [0], []
    for j in np.flatnonzero(tree.is_categorical[internal]):
        node = internal[j]
        positions, swap = _left_set(tree, node, categories, max_bin, names)
        if swap:
            left[j], right[j] = right[j], left[j]
        threshold[j] = len(boundaries) - 1            # the split's bitset
        decision[j] = _CATEGORICAL + _MISSING_NAN
        n_words = int(positions.max(initial=0)) // 32 + 1
        bits = np.zeros(n_words * 32, dtype=np.uint8)
        bits[positions] = 1
        words += np.packbits(bits, bitorder="little").view("<u4").tolist()
        boundaries.append(len(words))
    n_cat = len(boundaries) - 1

    def join(values, fmt=str):
        return " ".join(fmt(v) for v in values)

    fields = [
        ("num_leaves", leaves.size), ("num_cat", n_cat),
        ("split_feature", join(tree.feature[internal])),
        ("split_gain", join(tree.gain[internal], _float)),
        ("threshold", join(threshold, _float)),
        ("decision_type", join(decision)),
        ("left_child", join(left)), ("right_child", join(right)),
        ("leaf_value", join(tree.value[leaves], _float)),
        ("leaf_weight", join(tree.cover[leaves], _float)),
        ("leaf_count", join(tree.n_samples[leaves].astype(np.int64))),
        ("internal_value", join(tree.value[internal], _float)),
        ("internal_weight", join(tree.cover[internal], _float)),
        ("internal_count", join(tree.n_samples[internal].astype(np.int64))),
    ]
    if n_cat:
        fields += [("cat_boundaries", join(boundaries)), ("cat_threshold", join(words))]
    fields += _linear_fields(tree, leaves) + [("shrinkage", 1)]
    return f"Tree={index}\n" + "".join(f"{k}={v}\n" for k, v in fields) + "\n\n"


def _linear_fields(tree: ScalarTree, leaves: np.ndarray) -> list:
    """``is_linear`` and, for a tree with linear leaves, LightGBM's ``leaf_const``,
    ``num_features``, ``leaf_features`` and ``leaf_coeff`` (leaves in its order; a leaf
    without a model: its value as the constant, no features)."""
    if tree.linear is None:
        return [("is_linear", 0)]
    models = [tree.linear.get(int(leaf), (float(tree.value[leaf]), np.zeros(0, np.int64),
                                          np.zeros(0))) for leaf in leaves]
    return [("is_linear", 1),
            ("leaf_const", " ".join(_float(c) for c, _, _ in models)),
            ("num_features", " ".join(str(len(f)) for _, f, _ in models)),
            ("leaf_features", " ".join(str(int(j)) for _, f, _ in models for j in f)),
            ("leaf_coeff", " ".join(_float(x) for _, _, c in models for x in c))]


def to_lightgbm_text(model) -> str:
    """The model as LightGBM's text model (module docstring); ModelError naming what
    the format cannot express."""
    if is_weighted_median(model):
        raise ModelError(f"{_FORMAT} cannot express AdaBoost.R2's weighted median of the "
                         f"trees (it sums or averages them)")
    objective = _objective_line(model)
    names = _feature_names(model)
    categories = category_lists(model, _FORMAT)
    rounds = exported_rounds(model, _FORMAT, keep_mean=True, linear_leaves=True)
    n_outputs = int(model.n_outputs)
    header = ["tree", "version=v4", f"num_class={n_outputs}",
              f"num_tree_per_iteration={n_outputs}", "label_index=0",
              f"max_feature_idx={len(names) - 1}"]
    if objective is not None:
        header.append(f"objective={objective}")
    if model.aggregation == "mean":
        header.append("average_output")
    infos = [":".join(str(p) for p in range(len(categories[f]))) if f in categories
             else "none" for f in range(len(names))]
    header += [f"feature_names={' '.join(names)}", f"feature_infos={' '.join(infos)}"]
    flat = [t for one_round in rounds for t in one_round]
    if any(not t.n_samples.any() for t in flat if len(t.left) > 1):
        warnings.warn(f"the model keeps no row counts (a boosted model saved before "
                      f"oocboost counted them, or an imported XGBoost model, records only "
                      f"hessian sums, its covers), so the exported {_FORMAT} file has "
                      f"leaf_count and internal_count 0: LightGBM's pred_contrib weighs its "
                      f"Tree SHAP by those counts and gives NaN; oocboost's "
                      f"predict_contributions, or XGBoost's pred_contribs on the XGBoost "
                      f"export, weigh by the covers", stacklevel=3)
    trees = [_tree_text(i, tree, names, categories, model.max_bin)
             for i, tree in enumerate(flat)]
    # LightGBM's Python package maps a DataFrame's category columns (in order) onto
    # these lists' positions, as for a model it trained on such a frame
    pandas = [[c for c in cats if c != "other"] for cats in categories.values()]
    return ("\n".join(header) + "\n\n" + "".join(trees) + "end of trees\n\n"
            f"pandas_categorical:{json.dumps(pandas) if pandas else 'null'}\n")
