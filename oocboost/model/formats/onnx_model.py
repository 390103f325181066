"""Export to ONNX: one ``TreeEnsemble`` node (the ``ai.onnx.ml`` domain, opset 5) and the
objective's link in standard operators, checked by onnxruntime (1.20 and later run the
node; ``pip install oocboost[export]``).

The graph takes one input, ``X``: double, ``(N, n_features)``, the model's features in
its order; a categorical feature as its category's position in the model's list
(:meth:`~oocboost.model.model.Model.export_input` encodes any data the model predicts
on; the list is in the file's metadata, ``categories``), NaN for missing. Its outputs:

===============  ==============  ===============================================
output           shape           what
===============  ==============  ===============================================
``margin``       (N, n_outputs)  ``Model.predict(X, output_margin=True)``
``prediction``   as ``predict``  ``Model.predict(X)``: (N,) for one output
``probabilities`` (N, n_classes)  classifiers only: ``predict_proba``'s columns
===============  ==============  ===============================================

What is kept: every tree with double thresholds and leaf values (``x <= threshold``, the
side a missing value takes), categorical splits as set membership, every objective's
link (sigmoid, softmax, exp, the argmax of ``multi:softmax``, the sign of
``binary:hinge``), forests' averages (leaf values over the number of trees) and the base
margin (in the leaves of each output's first tree). Predictions agree with oocboost's to
rounding (the sum runs in another order).

Refused by name: AdaBoost.R2's weighted median, target-statistic features, custom
objectives, and what no format here expresses (``formats/common.py``).
"""
from __future__ import annotations

import json

import numpy as np

from ...errors import ModelError
from ..aggregate import is_weighted_median
from .common import ScalarTree, category_lists, exported_rounds, left_categories

_FORMAT = "ONNX"
#: Opsets written: TreeEnsemble is ai.onnx.ml 5, which pairs with the main domain's 21
#: (ONNX 1.16); IR version 10 is what onnxruntime 1.20 reads.
ML_OPSET, MAIN_OPSET, IR_VERSION = 5, 21, 10
#: TreeEnsemble's node modes.
_BRANCH_LEQ, _BRANCH_MEMBER = 0, 6
#: Objective -> its link as an ONNX operator on the margin ("" for the identity).
LINKS = {
    "reg:squarederror": "", "reg:absoluteerror": "", "reg:pseudohubererror": "",
    "reg:quantileerror": "", "binary:logitraw": "", "multi:proba": "",
    "rank:pairwise": "", "rank:ndcg": "", "rank:map": "",
    "binary:logistic": "Sigmoid", "reg:logistic": "Sigmoid",
    "count:poisson": "Exp", "reg:gamma": "Exp", "reg:tweedie": "Exp",
    "survival:cox": "Exp", "survival:aft": "Exp",
    "multi:softprob": "Softmax", "multi:softmax": "ArgMax", "binary:hinge": "Greater",
}
#: A category position no data holds: the set of a node that sends none left.
_NO_CATEGORY = float(2 ** 53)


def _import_onnx():
    try:
        import onnx
    except ImportError:
        raise ModelError("exporting to ONNX needs the onnx package: pip install "
                         "'oocboost[export]'") from None
    return onnx


def _tree_arrays(rounds, categorical_features, max_bin):
    """TreeEnsemble's node and leaf attributes of every tree (internal nodes and leaves
    numbered apart, across trees; a one-leaf tree gets a node whose both sides lead to
    its leaf)."""
    cols = {k: [] for k in ("feature", "mode", "split", "true_id", "true_leaf", "false_id",
                            "false_leaf", "missing_true", "roots", "leaf_target",
                            "leaf_weight")}
    members: list[float] = []
    n_nodes = n_leaves = 0
    for one_round in rounds:
        for target, tree in enumerate(one_round):
            _append_tree(cols, members, tree, target, n_nodes, n_leaves,
                         categorical_features, max_bin)
            n_nodes = len(cols["feature"])
            n_leaves = len(cols["leaf_weight"])
    return cols, members


def _append_tree(cols, members, tree: ScalarTree, target, node0, leaf0,
                 categorical_features, max_bin):
    internal = np.flatnonzero(tree.left >= 0)
    leaves = np.flatnonzero(tree.left < 0)
    cols["roots"].append(node0)
    cols["leaf_target"].extend([target] * leaves.size)
    cols["leaf_weight"].extend(tree.value[leaves].tolist())
    if internal.size == 0:
        cols["feature"].append(0)
        cols["mode"].append(_BRANCH_LEQ)
        cols["split"].append(0.0)
        for side in ("true", "false"):
            cols[f"{side}_id"].append(leaf0)
            cols[f"{side}_leaf"].append(1)
        cols["missing_true"].append(1)
        return
    new_id = np.empty(tree.n_nodes, dtype=np.int64)
    new_id[internal] = node0 + np.arange(internal.size)
    new_id[leaves] = leaf0 + np.arange(leaves.size)
    is_leaf = tree.left < 0
    categorical = tree.is_categorical[internal]
    for j, node in enumerate(internal):
        feature = int(tree.feature[node])
        if categorical[j]:
            if feature not in categorical_features:
                raise ModelError(f"{_FORMAT}: a categorical split on numeric feature "
                                 f"{feature}")
            left = left_categories(tree.cat_bitset[node], max_bin)
            members.extend(left.astype(np.float64).tolist() if left.size
                           else [_NO_CATEGORY])
            members.append(np.nan)
    cols["feature"].extend(tree.feature[internal].tolist())
    cols["mode"].extend(np.where(categorical, _BRANCH_MEMBER, _BRANCH_LEQ).tolist())
    cols["split"].extend(np.where(categorical, np.nan, tree.threshold[internal]).tolist())
    for side, child in (("true", tree.left[internal]), ("false", tree.right[internal])):
        cols[f"{side}_id"].extend(new_id[child].tolist())
        cols[f"{side}_leaf"].extend(is_leaf[child].astype(np.int64).tolist())
    cols["missing_true"].extend(tree.default_left[internal].astype(np.int64).tolist())


def _ensemble_node(helper, numpy_helper, model, rounds):
    categories = category_lists(model, _FORMAT)
    cols, members = _tree_arrays(rounds, categories, model.max_bin)

    def tensor(name, values, dtype):
        return numpy_helper.from_array(np.asarray(values, dtype=dtype), name)

    attrs = dict(
        n_targets=int(model.n_outputs), aggregate_function=1, post_transform=0,
        tree_roots=cols["roots"], nodes_featureids=cols["feature"],
        nodes_modes=tensor("nodes_modes", cols["mode"], np.uint8),
        nodes_splits=tensor("nodes_splits", cols["split"], np.float64),
        nodes_truenodeids=cols["true_id"], nodes_trueleafs=cols["true_leaf"],
        nodes_falsenodeids=cols["false_id"], nodes_falseleafs=cols["false_leaf"],
        nodes_missing_value_tracks_true=cols["missing_true"],
        leaf_targetids=cols["leaf_target"],
        leaf_weights=tensor("leaf_weights", cols["leaf_weight"], np.float64))
    if members:
        attrs["membership_values"] = tensor("membership_values", members, np.float64)
    return helper.make_node("TreeEnsemble", ["X"], ["margin"], domain="ai.onnx.ml",
                            name="trees", **attrs), categories


def _link_nodes(helper, numpy_helper, model):
    """(nodes, initializers, outputs as (name, columns or None for (N,))) of the link."""
    name, n_outputs = model.objective_name, int(model.n_outputs)
    if name not in LINKS:
        raise ModelError(f"{_FORMAT}: the objective {name!r} has no link this export "
                         f"writes; export models of {', '.join(sorted(LINKS))}")
    link = LINKS[name]
    nodes, inits = [], []
    one_output = n_outputs == 1
    transformed = "prediction" if not one_output else "prediction_2d"
    if link in ("", "Sigmoid", "Exp"):
        nodes.append(helper.make_node(link or "Identity", ["margin"], [transformed]))
    elif link == "Softmax":
        nodes.append(helper.make_node("Softmax", ["margin"], ["prediction"], axis=1))
    elif link == "ArgMax":
        nodes += [helper.make_node("ArgMax", ["margin"], ["class_index"], axis=1,
                                   keepdims=0),
                  helper.make_node("Cast", ["class_index"], ["prediction"], to=11)]
        one_output = True
        transformed = "prediction"
    else:                                        # binary:hinge: 1.0 where the margin > 0
        inits.append(numpy_helper.from_array(np.zeros(1), "zero"))
        nodes += [helper.make_node("Greater", ["margin", "zero"], ["positive"]),
                  helper.make_node("Cast", ["positive"], [transformed], to=11)]
    if n_outputs == 1 and transformed == "prediction_2d":
        inits.append(numpy_helper.from_array(np.array([1], dtype=np.int64), "axis_1"))
        nodes.append(helper.make_node("Squeeze", ["prediction_2d", "axis_1"],
                                      ["prediction"]))
    outputs = [("margin", n_outputs), ("prediction", None if one_output else n_outputs)]
    if n_outputs == 1 and name in ("binary:logistic", "binary:logitraw", "binary:hinge"):
        p = "prediction_2d" if link else "p_class_1"
        if name == "binary:logitraw":
            nodes.append(helper.make_node("Sigmoid", ["margin"], [p]))
        inits.append(numpy_helper.from_array(np.ones(1), "one"))
        nodes += [helper.make_node("Sub", ["one", p], ["p_class_0"]),
                  helper.make_node("Concat", ["p_class_0", p], ["probabilities"], axis=1)]
        outputs.append(("probabilities", 2))
    elif name in ("multi:softprob", "multi:softmax", "multi:proba"):
        source = "margin" if name == "multi:proba" else "softmax"
        if source == "softmax":
            nodes.append(helper.make_node("Softmax", ["margin"], ["softmax"], axis=1))
        nodes.append(helper.make_node("Identity", [source], ["probabilities"]))
        outputs.append(("probabilities", n_outputs))
    return nodes, inits, outputs


def to_onnx_model(model):
    """The model as an ``onnx.ModelProto`` (module docstring), checked by
    ``onnx.checker``; ModelError naming what the format cannot express."""
    onnx = _import_onnx()
    from onnx import TensorProto, helper, numpy_helper

    if is_weighted_median(model):
        raise ModelError(f"{_FORMAT} cannot express AdaBoost.R2's weighted median of the "
                         f"trees (a TreeEnsemble sums or averages them)")
    rounds = exported_rounds(model, _FORMAT)
    ensemble, categories = _ensemble_node(helper, numpy_helper, model, rounds)
    link, inits, outputs = _link_nodes(helper, numpy_helper, model)
    graph = helper.make_graph(
        [ensemble] + link, "oocboost",
        [helper.make_tensor_value_info("X", TensorProto.DOUBLE, ["N", model.n_features])],
        [helper.make_tensor_value_info(name, TensorProto.DOUBLE,
                                       ["N"] if cols is None else ["N", cols])
         for name, cols in outputs],
        initializer=inits)
    proto = helper.make_model(graph, opset_imports=[
        helper.make_opsetid("", MAIN_OPSET), helper.make_opsetid("ai.onnx.ml", ML_OPSET)],
        producer_name="oocboost")
    proto.ir_version = IR_VERSION
    helper.set_model_props(proto, {
        "feature_names": json.dumps(list(model.feature_names)),
        "categories": json.dumps({model.feature_names[f]: c for f, c in categories.items()}),
        "objective": model.objective_name, "learner": str(model.learner)})
    onnx.checker.check_model(proto)
    return proto


def to_onnx_bytes(model) -> bytes:
    """:func:`to_onnx_model` serialized."""
    return to_onnx_model(model).SerializeToString()
