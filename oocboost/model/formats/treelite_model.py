"""Export to Treelite: the model built with Treelite's own model builder and written as
its checkpoint (``treelite.Model.deserialize(path)``), which Treelite's GTIL predicts and
TL2cgen compiles to C for serving (``pip install oocboost[export]``).

What is kept: every tree with float64 thresholds (``x <= threshold``) and leaf values,
the side a missing value takes, categorical splits (the category positions going left,
:meth:`~oocboost.model.model.Model.export_input`), split gains, covers and row counts,
the objective's link (Treelite's ``sigmoid``, ``softmax``, ``exponential``, ``hinge``
post-processors), the outputs (classes of a multiclass model, targets of a multi-target
one), forests' averages (leaf values over the number of trees) and the base margin (in
the leaves of each output's first tree). ``multi:softmax`` models give the
probabilities, whose argmax oocboost predicts.

Refused by name: AdaBoost.R2's weighted median, target-statistic features, objectives
Treelite has no post-processor for, and what no format here expresses
(``formats/common.py``).
"""
from __future__ import annotations

from ...errors import ModelError
from ..aggregate import is_weighted_median
from .common import ScalarTree, category_lists, exported_rounds, left_categories

_FORMAT = "Treelite"
#: Objective -> Treelite's post-processor.
POSTPROCESSORS = {
    "reg:squarederror": "identity", "reg:absoluteerror": "identity",
    "reg:pseudohubererror": "identity", "reg:quantileerror": "identity",
    "binary:logitraw": "identity", "rank:pairwise": "identity", "rank:ndcg": "identity",
    "rank:map": "identity", "multi:proba": "identity",
    "binary:logistic": "sigmoid", "reg:logistic": "sigmoid", "binary:hinge": "hinge",
    "count:poisson": "exponential", "reg:gamma": "exponential",
    "reg:tweedie": "exponential", "survival:cox": "exponential",
    "survival:aft": "exponential",
    "multi:softprob": "softmax", "multi:softmax": "softmax",
}
_CLASSES = ("multi:softprob", "multi:softmax", "multi:proba")


def _import_treelite():
    try:
        import treelite
    except ImportError:
        raise ModelError("exporting to Treelite needs the treelite package: pip install "
                         "'oocboost[export]'") from None
    return treelite


def _task(model):
    """(task type, num_target, num_class list, post-processor) of Treelite's metadata."""
    name, n_outputs = model.objective_name, int(model.n_outputs)
    if name not in POSTPROCESSORS:
        raise ModelError(f"{_FORMAT} has no post-processor that predicts as {name!r} "
                         f"does; export models of {', '.join(sorted(POSTPROCESSORS))}")
    post = POSTPROCESSORS[name]
    if name in _CLASSES:
        return "kMultiClf", 1, [n_outputs], post
    if post in ("sigmoid", "hinge"):
        return "kBinaryClf", n_outputs, [1] * n_outputs, post
    return "kRegressor", n_outputs, [1] * n_outputs, post


def _add_tree(builder, tree: ScalarTree, categories: dict, max_bin, names):
    builder.start_tree()
    for node in range(tree.n_nodes):
        builder.start_node(node)
        if tree.left[node] < 0:
            builder.leaf(float(tree.value[node]))
        else:
            feature = int(tree.feature[node])
            children = dict(default_left=bool(tree.default_left[node]),
                            left_child_key=int(tree.left[node]),
                            right_child_key=int(tree.right[node]))
            if tree.is_categorical[node]:
                if feature not in categories:
                    raise ModelError(f"{_FORMAT}: a categorical split on numeric feature "
                                     f"{names[feature]!r}")
                builder.categorical_test(
                    feature, category_list=[int(c) for c in left_categories(
                        tree.cat_bitset[node], max_bin)],
                    category_list_right_child=False, **children)
            else:
                builder.numerical_test(feature, float(tree.threshold[node]), opname="<=",
                                       **children)
            builder.gain(float(tree.gain[node]))
        builder.sum_hess(float(tree.cover[node]))
        builder.data_count(int(tree.n_samples[node]))
        builder.end_node()
    builder.end_tree()


def to_treelite_model(model):
    """The model as a ``treelite.Model`` (module docstring); ModelError naming what the
    format cannot express."""
    _import_treelite()
    from treelite import model_builder as mb

    if is_weighted_median(model):
        raise ModelError(f"{_FORMAT} cannot express AdaBoost.R2's weighted median of the "
                         f"trees (it sums or averages them)")
    task, n_targets, n_classes, post = _task(model)
    categories = category_lists(model, _FORMAT)
    rounds = exported_rounds(model, _FORMAT)
    trees = [(k, tree) for one_round in rounds for k, tree in enumerate(one_round)]
    classes = task == "kMultiClf"
    builder = mb.ModelBuilder(
        threshold_type="float64", leaf_output_type="float64",
        metadata=mb.Metadata(num_feature=int(model.n_features), task_type=task,
                             average_tree_output=False, num_target=n_targets,
                             num_class=n_classes, leaf_vector_shape=(1, 1)),
        tree_annotation=mb.TreeAnnotation(
            num_tree=len(trees), target_id=[0 if classes else k for k, _ in trees],
            class_id=[k if classes else 0 for k, _ in trees]),
        postprocessor=mb.PostProcessorFunc(name=post),
        base_scores=[0.0] * (n_targets * max(n_classes)))
    for _, tree in trees:
        _add_tree(builder, tree, categories, model.max_bin, model.feature_names)
    return builder.commit()


def to_treelite_bytes(model) -> bytes:
    """:func:`to_treelite_model` serialized (Treelite's checkpoint)."""
    return bytes(to_treelite_model(model).serialize_bytes())
