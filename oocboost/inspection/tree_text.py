"""A fitted tree as text, as scikit-learn's ``export_text``."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import ParameterError


def export_text(decision_tree: Any, feature_names: list[str] | None = None, *,
                max_depth: int = 10, spacing: int = 3, decimals: int = 2,
                show_weights: bool = False, tree_index: int = 0,
                show_missing: bool = False) -> str:
    """A readable dump of a fitted tree in scikit-learn's ``export_text`` layout.

    Parameters
    ----------
    decision_tree : fitted estimator of this module, or oocboost Model
    feature_names : list of str or None
        Default: the model's feature names.
    max_depth : int
        Deeper nodes are shown as ``truncated branch``.
    spacing, decimals : int
    show_weights : bool
        Classification: the weighted class counts at each leaf.
    tree_index : int
        Tree of an ensemble to show.
    show_missing : bool
        Mark the side missing values go to with ``(missing)``.

    Returns
    -------
    str

    Examples
    --------
    >>> print(export_text(DecisionTreeClassifier(max_depth=1).fit(X, y)))  # doctest: +SKIP
    |--- petal_width <= 0.80
    |   |--- class: 0
    |--- petal_width >  0.80
    |   |--- class: 1
    """
    model = getattr(decision_tree, "model_", decision_tree)
    tree = model.trees[tree_index]
    names = list(feature_names) if feature_names is not None else list(model.feature_names)
    if len(names) != model.n_features:
        raise ParameterError(f"feature_names has {len(names)} names, the model "
                             f"{model.n_features} features")
    classes = getattr(decision_tree, "classes_", None)
    if classes is None and model.classes is not None:
        classes = np.asarray(model.classes)
    classification = model.objective == "multi:proba"
    cats = None
    if model.bin_mapper:
        from ..cache.binning import BinMapper

        mapper = BinMapper.from_dict(model.bin_mapper)
        # names by code (a wide feature's codes skip the missing code)
        cats = [mapper.category_names(f) if mapper.is_categorical[f] else None
                for f in range(mapper.n_features)]
    lines = []
    pad = " " * spacing

    def leaf_text(node, depth):
        indent = ("|" + pad) * depth + "|" + "-" * spacing
        v = tree.value[node]
        if classification:
            k = int(np.argmax(v))
            label = classes[k] if classes is not None else k
            text = f"{indent} class: {label}"
            if show_weights:
                # scikit-learn's format: [26.00, 14.00] (not numpy 2's scalar reprs)
                w = ", ".join(f"{x:.{decimals}f}" for x in v * tree.cover[node])
                text = f"{indent} weights: [{w}] class: {label}"
        else:
            text = f"{indent} value: [{np.round(v[0], decimals)}]"
        lines.append(text)

    def walk(node, depth):
        indent = ("|" + pad) * depth + "|" + "-" * spacing
        if tree.left[node] < 0:
            leaf_text(node, depth)
            return
        if depth >= max_depth:
            lines.append(f"{indent} truncated branch of depth "
                         f"{_subtree_depth(tree, node)}")
            return
        miss = miss_r = ""
        if show_missing:
            miss, miss_r = ((" (missing)", "") if tree.default_left[node]
                            else ("", " (missing)"))
        left_rule, right_rule = split_rules(tree, node, names, cats, decimals)
        lines.append(f"{indent} {left_rule}{miss}")
        walk(int(tree.left[node]), depth + 1)
        lines.append(f"{indent} {right_rule}{miss_r}")
        walk(int(tree.right[node]), depth + 1)

    walk(0, 0)
    return "\n".join(lines) + "\n"


def split_rules(tree, node, names, categories, decimals=2):
    """The rules of a split's left and right branch in raw units, e.g. ``("age <= 41.50",
    "age >  41.50")`` or ``("city in {oslo, rome}", "city not in {oslo, rome}")``.

    ``categories``: the bin mapper's category names per feature (None for none)."""
    f = int(tree.feature[node])
    if tree.is_categorical[node]:
        codes = [c for c in range(tree.cat_bitset.shape[1] * 32)
                 if (tree.cat_bitset[node, c >> 5] >> (c & 31)) & 1]
        names_f = categories[f] if categories and categories[f] else None
        shown = ", ".join(str(names_f[c]) if names_f and c < len(names_f) else str(c)
                          for c in codes)
        return f"{names[f]} in {{{shown}}}", f"{names[f]} not in {{{shown}}}"
    thr = f"{tree.threshold[node]:.{decimals}f}"
    return f"{names[f]} <= {thr}", f"{names[f]} >  {thr}"


def _subtree_depth(tree, node):
    depth, frontier = 0, [node]
    while True:
        children = [c for n in frontier if tree.left[n] >= 0
                    for c in (int(tree.left[n]), int(tree.right[n]))]
        if not children:
            return depth
        depth += 1
        frontier = children
