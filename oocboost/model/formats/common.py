"""What every export adapter needs of a model: the check that a format can express it
(refused by name otherwise), and its trees as one scalar-leaf tree per output, the tree
weights folded into the leaf values, in the order the peers keep them (round by round,
output by output).

A tree here is a :class:`ScalarTree`: the node arrays of
:class:`~oocboost.model.tree.Tree` with one value per node, under the tree's own node
ids (a format that numbers nodes as oocboost does then reports the same leaf indices);
a tree with a node shared by several parents (a decision stream's graph) is renumbered
in preorder (root 0, a node's left subtree before its right one), the shared nodes
copied under each parent.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...common import category_index
from ...errors import ModelError
from ..parts import ModelPart

#: Nodes of one exported tree at most (shared nodes are copied under each parent).
MAX_EXPORT_NODES = 1 << 24


@dataclass
class ScalarTree:
    """One tree with one value per node (root 0).

    ``left`` / ``right``: children ids (-1 at leaves); ``feature``, ``threshold``
    (``x <= threshold`` goes left), ``default_left`` (missing goes left),
    ``is_categorical``, ``cat_bitset`` (codes going left), ``value``, ``gain``,
    ``cover``, ``n_samples``: as :class:`~oocboost.model.tree.Tree`'s.
    """

    left: np.ndarray
    right: np.ndarray
    feature: np.ndarray
    threshold: np.ndarray
    default_left: np.ndarray
    is_categorical: np.ndarray
    cat_bitset: np.ndarray
    value: np.ndarray
    gain: np.ndarray
    cover: np.ndarray
    n_samples: np.ndarray

    #: Linear leaf models (``linear_leaves``) times the tree's scale: ``{leaf: (const,
    #: features, coefficients)}``, or None.
    linear: dict | None = None

    @property
    def n_nodes(self) -> int:
        return int(self.left.shape[0])


#: The model part a format that writes linear leaves (LightGBM's) accepts.
LINEAR_PART = "linear_leaves"


def check_exportable(model, fmt: str, linear_leaves: bool = False) -> None:
    """ModelError naming what ``fmt`` cannot express: a part that adds to predictions
    (MARS terms, naive Bayes leaves, linear leaves unless ``linear_leaves``), oblique
    or surrogate splits."""
    if model.aggregation == "median":
        raise ModelError(f"{fmt} cannot express a median of the trees (it sums or "
                         f"averages them)")
    for part in model.parts.values():
        if linear_leaves and part.key == LINEAR_PART:
            continue
        if type(part).add_margin is not ModelPart.add_margin:
            raise ModelError(f"{fmt} cannot express the model's {part.key!r} part (it adds "
                             f"to the trees' predictions); export a model of plain trees")
    for t, tree in enumerate(model.trees):
        if tree.oblique is not None:
            raise ModelError(f"{fmt} cannot express oblique splits (tree {t} tests a "
                             f"weighted sum of features "
                             f"{_names(model, tree.oblique.feature)})")
        if tree.surrogates is not None:
            node = int(np.flatnonzero(tree.left >= 0)[0]) if (tree.left >= 0).any() else 0
            raise ModelError(f"{fmt} cannot express surrogate splits (tree {t}: a missing "
                             f"{model.feature_names[max(int(tree.feature[node]), 0)]!r} "
                             f"follows another feature); train with surrogates off")


def _names(model, features) -> str:
    shown = [model.feature_names[int(j)] for j in np.unique(features)[:5]]
    return ", ".join(repr(n) for n in shown)


def scalar_tree(tree, column: int, scale: float) -> ScalarTree:
    """``tree`` with the values of output ``column`` times ``scale``: its own node ids
    (so leaf indices are oocboost's), or renumbered in preorder when a node has several
    parents (copied under each)."""
    internal = tree.left >= 0
    children = np.concatenate([tree.left[internal], tree.right[internal]])
    if children.size == 0 or np.bincount(children).max() <= 1:
        return ScalarTree(
            left=tree.left.astype(np.int64), right=tree.right.astype(np.int64),
            feature=tree.feature.astype(np.int64), threshold=tree.threshold.copy(),
            default_left=tree.default_left.copy(), is_categorical=tree.is_categorical.copy(),
            cat_bitset=tree.cat_bitset.copy(), value=tree.value[:, column] * scale,
            gain=tree.gain.copy(), cover=tree.cover.copy(), n_samples=tree.n_samples.copy())
    return preorder(tree, column, scale)


def preorder(tree, column: int, scale: float) -> ScalarTree:
    """``tree`` with the values of output ``column`` times ``scale``, nodes renumbered
    in preorder (shared nodes copied)."""
    order = []
    parent_slot = []          # (new parent id, side) of each kept node
    stack = [(0, -1, 0)]
    while stack:
        node, parent, side = stack.pop()
        order.append(node)
        parent_slot.append((parent, side))
        if len(order) > MAX_EXPORT_NODES:
            raise ModelError(f"a tree has over {MAX_EXPORT_NODES:,} nodes once its shared "
                             f"nodes are copied: too large to export")
        if tree.left[node] >= 0:
            me = len(order) - 1
            stack.append((int(tree.right[node]), me, 1))
            stack.append((int(tree.left[node]), me, 0))
    order = np.asarray(order, dtype=np.int64)
    n = order.shape[0]
    left = np.full(n, -1, dtype=np.int64)
    right = np.full(n, -1, dtype=np.int64)
    for new, (parent, side) in enumerate(parent_slot):
        if parent >= 0:
            (right if side else left)[parent] = new
    bitset = tree.cat_bitset[order] if tree.cat_bitset.shape[1] else \
        np.zeros((n, 0), dtype=np.uint32)
    return ScalarTree(
        left=left, right=right, feature=tree.feature[order].astype(np.int64),
        threshold=tree.threshold[order].copy(), default_left=tree.default_left[order].copy(),
        is_categorical=tree.is_categorical[order].copy(), cat_bitset=bitset,
        value=tree.value[order, column] * scale, gain=tree.gain[order].copy(),
        cover=tree.cover[order].copy(), n_samples=tree.n_samples[order].copy())


def _linear_models(entry, scale: float) -> dict:
    """``{leaf: (const, features, coefficients)}`` of a tree's ``LinearLeaves``."""
    return {int(leaf): (float(entry.const[k]) * scale,
                        entry.feature[entry.offset[k]:entry.offset[k + 1]].astype(np.int64),
                        entry.coef[entry.offset[k]:entry.offset[k + 1]] * scale)
            for k, leaf in enumerate(entry.node.tolist())}


def trees_by_round(model, fmt: str, linear_leaves: bool = False) -> list[list[ScalarTree]]:
    """The model's trees as rounds of ``n_outputs`` scalar trees (round ``r``, output
    ``k``: ``rounds[r][k]``), tree weights folded into the values so that the plain sum
    (aggregation "sum") or the plain mean over rounds (aggregation "mean") of the
    leaves reached is the model's margin without its base. A multi-output tree gives
    one tree per output. ModelError when the outputs have different numbers of trees
    under "mean" (a plain mean could not weigh them)."""
    check_exportable(model, fmt, linear_leaves)
    part = model.part(LINEAR_PART)
    linear = {} if part is None else {e.tree: e for e in part.entries}
    n_outputs = int(model.n_outputs)
    per_output: list[list[tuple[int, int, float]]] = [[] for _ in range(n_outputs)]
    for t, (group, weight) in enumerate(zip(model.tree_group, model.tree_weight)):
        if group < 0:
            for k in range(n_outputs):
                per_output[k].append((t, k, float(weight)))
        else:
            per_output[int(group)].append((t, 0, float(weight)))
    counts = {len(trees) for trees in per_output}
    if model.aggregation == "mean":
        if len(counts) > 1:
            raise ModelError(f"{fmt} averages the same number of trees per output; this "
                             f"model's outputs have {sorted(counts)} trees")
        for k, trees in enumerate(per_output):
            total = sum(w for _, _, w in trees)
            # the plain mean of w_t * v_t * n / W over n trees is sum(w_t * v_t) / W
            per_output[k] = [(t, c, w * len(trees) / total if total else 0.0)
                             for t, c, w in trees]
    rounds = []
    for r in range(max(counts, default=0)):
        one_round = []
        for trees in per_output:
            if r < len(trees):
                t, column, scale = trees[r]
                tree = scalar_tree(model.trees[t], column, scale)
                if t in linear:  # boosting's trees: never renumbered
                    tree.linear = _linear_models(linear[t], scale)
                one_round.append(tree)
            else:             # an output with fewer trees: a tree adding 0 (sum only)
                one_round.append(constant_tree(0.0))
        rounds.append(one_round)
    return rounds


def constant_tree(value: float) -> ScalarTree:
    """A tree of one leaf."""
    one = np.full(1, -1, dtype=np.int64)
    return ScalarTree(left=one, right=one.copy(), feature=one.copy(),
                      threshold=np.zeros(1), default_left=np.zeros(1, bool),
                      is_categorical=np.zeros(1, bool), cat_bitset=np.zeros((1, 0), np.uint32),
                      value=np.full(1, float(value)), gain=np.zeros(1), cover=np.zeros(1),
                      n_samples=np.zeros(1))


def exported_rounds(model, fmt: str, keep_mean: bool = False,
                    linear_leaves: bool = False) -> list[list[ScalarTree]]:
    """:func:`trees_by_round` with the model's base margin in the leaves, so that the
    leaves reached give the model's margin: their plain sum, or under ``keep_mean`` (a
    format that averages, for a model that does) their plain mean.

    Summed, an average is written as a sum (each value over the number of rounds) and
    the base goes into each output's first tree (a round of one-leaf trees when there is
    none); averaged, into every tree (the mean of ``v + b`` is the mean of ``v`` plus
    ``b``)."""
    rounds = trees_by_round(model, fmt, linear_leaves)
    mean = model.aggregation == "mean"
    if mean and not keep_mean and rounds:
        for one_round in rounds:
            for tree in one_round:
                tree.value = tree.value / len(rounds)
    base = np.asarray(model.base_margin, dtype=np.float64)
    if not np.any(base):
        return rounds
    if not rounds:
        return [[constant_tree(b) for b in base]]
    for one_round in rounds if mean and keep_mean else rounds[:1]:
        for k, tree in enumerate(one_round):
            tree.value = tree.value + base[k]
            if tree.linear is not None:
                tree.linear = {leaf: (const + base[k], f, c)
                               for leaf, (const, f, c) in tree.linear.items()}
    return rounds


def category_lists(model, fmt: str) -> dict[int, list[str]]:
    """Feature index -> its categories in the order exported models number them (the
    model's category list, then ``"other"`` when the feature has a code for unseen
    categories): a categorical value goes to a format as its position in that list.
    ModelError for target-statistic features (their encoding table is not exported)."""
    out = {}
    features = (model.bin_mapper or {}).get("features") or []
    for f, kind in enumerate(model.feature_types):
        if kind == "ordered_ts":
            raise ModelError(f"{fmt} cannot express feature {model.feature_names[f]!r}, "
                             f"encoded by ordered target statistics; build the cache with "
                             f"cat_encoding='native' to export")
        if kind == "categorical":
            feat = features[f] if f < len(features) else {}
            cats = [str(c) for c in feat.get("categories") or []]
            out[f] = cats + (["other"] if feat.get("has_other") else [])
    return out


def left_categories(bitset: np.ndarray, max_bin: int | None) -> np.ndarray:
    """Category positions (int64, ascending) that a node's bitset sends left: its set
    bits' codes without the missing code (missing values take the default side)."""
    bits = np.unpackbits(np.ascontiguousarray(bitset, dtype="<u4").view(np.uint8),
                         bitorder="little")
    codes = np.flatnonzero(bits).astype(np.int64)
    if max_bin is None:
        return codes
    codes = codes[codes != int(max_bin) - 1]
    return np.asarray(category_index(codes, max_bin), dtype=np.int64)


def on_edges(tree, edges: list[np.ndarray], names: list[str], index: int):
    """A copy of ``tree`` whose numeric splits' bin thresholds are the positions of their
    thresholds among ``edges`` (per feature): ``x <= edges[f][k]`` is ``code <= k``.
    ModelError naming the first threshold that is no edge."""
    import copy

    out = copy.copy(tree)
    numeric = np.flatnonzero((tree.left >= 0) & ~tree.is_categorical)
    bins = tree.bin_threshold.copy()
    for node in numeric:
        f, t = int(tree.feature[node]), float(tree.threshold[node])
        k = int(np.searchsorted(edges[f], t))
        if k >= edges[f].shape[0] or edges[f][k] != t:
            raise ModelError(f"tree {index}, node {int(node)}: the split {names[f]!r} <= "
                             f"{t!r} is not on the cache's bin edges: build the cache with "
                             f"split_points=model (--split-points MODEL)")
        bins[node] = k
    out.bin_threshold = bins
    return out
