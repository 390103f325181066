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
``predict`` averages): divide by ``current_iteration()`` for oocboost's margin.

What is refused, by name: categorical splits (not yet translated: LightGBM wants integer
category values), objectives LightGBM has no transform for (``binary:hinge``, survival),
AdaBoost.R2's weighted median, and what no format here expresses (oblique and surrogate
splits, MARS terms: ``formats/common.py``). Feature names with whitespace, which the
format cannot hold, are written with ``_`` instead, as LightGBM's Python package does.
``multi:softmax`` models are written as ``multiclass``: LightGBM predicts the
probabilities, whose argmax is oocboost's prediction.
"""
from __future__ import annotations

import re
import warnings

import numpy as np

from ...errors import ModelError
from ..aggregate import is_weighted_median
from .common import ScalarTree, constant_tree, trees_by_round

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


def _tree_text(index: int, tree: ScalarTree, names: list[str]) -> str:
    """One ``Tree=`` block (nodes renumbered: LightGBM's internal nodes and leaves are
    counted apart; a child ``~l`` is leaf ``l``)."""
    internal = np.flatnonzero(tree.left >= 0)
    leaves = np.flatnonzero(tree.left < 0)
    if internal.size == 0:
        return (f"Tree={index}\nnum_leaves=1\nnum_cat=0\n"
                f"leaf_value={_float(tree.value[0])}\nleaf_weight={_float(tree.cover[0])}\n"
                f"leaf_count={int(tree.n_samples[0])}\nis_linear=0\nshrinkage=1\n\n\n")
    categorical = np.flatnonzero(tree.is_categorical[internal])
    if categorical.size:
        feature = names[int(tree.feature[internal[categorical[0]]])]
        raise ModelError(f"{_FORMAT}: categorical splits are not exported yet (feature "
                         f"{feature!r}); export a model of numeric features")
    new_id = np.empty(tree.n_nodes, dtype=np.int64)
    new_id[internal] = np.arange(internal.size)
    new_id[leaves] = ~np.arange(leaves.size)        # LightGBM's -(leaf + 1)
    decision = _MISSING_NAN + _DEFAULT_LEFT * tree.default_left[internal].astype(np.int64)

    def join(values, fmt=str):
        return " ".join(fmt(v) for v in values)

    fields = [
        ("num_leaves", leaves.size), ("num_cat", 0),
        ("split_feature", join(tree.feature[internal])),
        ("split_gain", join(tree.gain[internal], _float)),
        ("threshold", join(tree.threshold[internal], _float)),
        ("decision_type", join(decision)),
        ("left_child", join(new_id[tree.left[internal]])),
        ("right_child", join(new_id[tree.right[internal]])),
        ("leaf_value", join(tree.value[leaves], _float)),
        ("leaf_weight", join(tree.cover[leaves], _float)),
        ("leaf_count", join(tree.n_samples[leaves].astype(np.int64))),
        ("internal_value", join(tree.value[internal], _float)),
        ("internal_weight", join(tree.cover[internal], _float)),
        ("internal_count", join(tree.n_samples[internal].astype(np.int64))),
        ("is_linear", 0), ("shrinkage", 1),
    ]
    return f"Tree={index}\n" + "".join(f"{k}={v}\n" for k, v in fields) + "\n\n"


def _with_base(rounds, model) -> list[list[ScalarTree]]:
    """The base margin in the leaves: of each output's first tree (sum), or of every
    tree (mean: the mean of v + b is the mean of v plus b)."""
    base = np.asarray(model.base_margin, dtype=np.float64)
    if not np.any(base):
        return rounds
    if not rounds:
        return [[constant_tree(b) for b in base]]
    touched = rounds if model.aggregation == "mean" else rounds[:1]
    for one_round in touched:
        for k, tree in enumerate(one_round):
            tree.value = tree.value + base[k]
    return rounds


def to_lightgbm_text(model) -> str:
    """The model as LightGBM's text model (module docstring); ModelError naming what
    the format cannot express."""
    if is_weighted_median(model):
        raise ModelError(f"{_FORMAT} cannot express AdaBoost.R2's weighted median of the "
                         f"trees (it sums or averages them)")
    objective = _objective_line(model)
    names = _feature_names(model)
    rounds = _with_base(trees_by_round(model, _FORMAT), model)
    n_outputs = int(model.n_outputs)
    header = ["tree", "version=v4", f"num_class={n_outputs}",
              f"num_tree_per_iteration={n_outputs}", "label_index=0",
              f"max_feature_idx={len(names) - 1}"]
    if objective is not None:
        header.append(f"objective={objective}")
    if model.aggregation == "mean":
        header.append("average_output")
    header += [f"feature_names={' '.join(names)}",
               f"feature_infos={' '.join(['none'] * len(names))}"]
    trees = [_tree_text(i, tree, names)
             for i, tree in enumerate(t for one_round in rounds for t in one_round)]
    return ("\n".join(header) + "\n\n" + "".join(trees) + "end of trees\n\n"
            "pandas_categorical:null\n")
