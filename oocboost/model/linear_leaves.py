"""Linear models in the leaves of boosted trees (LightGBM's ``linear_tree``): the
``"linear_leaves"`` part of a model file.

A leaf with a model predicts ``const + sum_j coef_j x_j`` over the numeric features its
branch splits on; a row missing one of them gets the leaf's ordinary value, as in
LightGBM. Raw rows go in as they are; cache codes as their bins' middles
(``Model.bin_representatives``, which is also what training read). The trees keep their
constant leaf values, so the part adds ``model - value`` after the trees
(``kernels/linear_leaves.py``). A tree's entry::

    {"tree": t, "n_leaves": m, "n_coef": F, "node": [...m], "const": [...m],
     "offset": [...m + 1], "feature": [...F], "coef": [...F]}

leaf ``node[k]``'s features are ``feature[offset[k]:offset[k + 1]]``.
"""
import numpy as np

from ..errors import ModelError
from ..kernels.linear_leaves import add_linear_leaves
from .fields import read_array, read_int, read_typed
from .parts import TreeEntries, register_part
from .tree import coerce

#: Features a leaf's model may use in a model read from a file (a branch of 64 splits).
MAX_LEAF_FEATURES = 64


class LinearLeaves:
    """The linear models of some leaves of one tree (module docstring).

    Parameters
    ----------
    tree : int
    node : array-like (m,) int32, leaf ids, ascending
    const : array-like (m,) float64
    offset : array-like (m + 1,) int64
    feature : array-like (F,) int32, distinct within a leaf
    coef : array-like (F,) float64
    """

    def __init__(self, tree, node, const, offset, feature, coef):
        self.tree = int(tree)
        self.node = coerce("linear_leaves node", node, np.int32, 1)
        self.const = coerce("linear_leaves const", const, np.float64, 1)
        self.offset = coerce("linear_leaves offset", offset, np.int64, 1)
        self.feature = coerce("linear_leaves feature", feature, np.int32, 1)
        self.coef = coerce("linear_leaves coef", coef, np.float64, 1)

    def moved(self, tree):
        """The same models for the tree now at index ``tree``."""
        return LinearLeaves(tree, self.node, self.const, self.offset, self.feature,
                            self.coef)

    def validate(self, left, numeric, where):
        """ModelError unless the arrays fit a tree whose ``left`` children are given and
        name only features whose ``numeric`` flag is set."""
        m, n_coef = len(self.node), len(self.feature)
        if len(self.const) != m or self.offset.shape != (m + 1,) or self.offset[0] != 0 \
                or self.offset[-1] != n_coef or np.any(np.diff(self.offset) < 0) \
                or np.any(np.diff(self.offset) > MAX_LEAF_FEATURES) \
                or len(self.coef) != n_coef:
            raise ModelError(f"{where}: offset must rise from 0 to the {n_coef} "
                             f"coefficients, at most {MAX_LEAF_FEATURES} a leaf, with a "
                             f"constant per leaf")
        bad = (self.node < 0) | (self.node >= len(left))
        if bad.any() or np.any(left[self.node] != -1) or np.any(np.diff(self.node) <= 0):
            raise ModelError(f"{where}: node ids must be ascending leaves of tree "
                             f"{self.tree}")
        if np.any((self.feature < 0) | (self.feature >= len(numeric))) \
                or not np.all(numeric[np.clip(self.feature, 0, len(numeric) - 1)]):
            raise ModelError(f"{where}: features must be numeric features of the model")
        for k in range(m):
            own = self.feature[self.offset[k]:self.offset[k + 1]]
            if len(np.unique(own)) != len(own):
                raise ModelError(f"{where}: leaf {int(self.node[k])} names a feature twice")
        if not (np.all(np.isfinite(self.const)) and np.all(np.isfinite(self.coef))):
            raise ModelError(f"{where}: constants and coefficients must be finite")

    def slots(self, n_nodes):
        """``slot_of_node`` (n_nodes,) int32 for ``kernels/linear_leaves.py``."""
        slot_of_node = np.full(n_nodes, -1, np.int32)
        slot_of_node[self.node] = np.arange(len(self.node), dtype=np.int32)
        return slot_of_node

    def to_json_dict(self):
        return {"tree": self.tree, "n_leaves": int(len(self.node)),
                "n_coef": int(len(self.feature)), "node": self.node.tolist(),
                "const": self.const.tolist(), "offset": self.offset.tolist(),
                "feature": self.feature.tolist(), "coef": self.coef.tolist()}

    @classmethod
    def from_json_dict(cls, d, where):
        if not isinstance(d, dict):
            raise ModelError(f"{where}: must be a JSON object")
        unknown = set(d) - {"tree", "n_leaves", "n_coef", "node", "const", "offset",
                            "feature", "coef"}
        if unknown:
            raise ModelError(f"{where}: unknown fields {sorted(unknown)}")
        tree = read_int(d, "tree", where, 0, 1 << 31)
        m = read_int(d, "n_leaves", where, 1, 1 << 31)
        n_coef = read_int(d, "n_coef", where, 0, MAX_LEAF_FEATURES * m)
        return cls(tree, read_array(d, "node", np.int32, m, where),
                   read_array(d, "const", np.float64, m, where),
                   read_array(d, "offset", np.int64, m + 1, where),
                   read_array(d, "feature", np.int32, n_coef, where),
                   read_array(d, "coef", np.float64, n_coef, where))


@register_part
class LinearLeavesPart(TreeEntries):
    """The ``"linear_leaves"`` part: the :class:`LinearLeaves` of the trees that have
    them (a boosted model's first tree has constant leaves, as LightGBM's)."""

    key = "linear_leaves"
    entry_type = LinearLeaves
    needs_float64 = True
    beside_trees = True
    shap_refusal = ("Tree SHAP explains constant leaves; this model has linear models in "
                    "its leaves (linear_tree)")

    def to_json(self):
        return [entry.to_json_dict() for entry in self.entries]

    @classmethod
    def from_json(cls, value, doc, where):
        entries = read_typed({"linear_leaves": value}, "linear_leaves", (list,), where)
        if not entries:
            return None
        return cls([LinearLeaves.from_json_dict(d, f"{where}: linear_leaves[{i}]")
                    for i, d in enumerate(entries)])

    def validate(self, model, fail):
        numeric = np.array([t == "numeric" for t in model.feature_types], bool)
        for i, entry in self.checked_entries(fail):
            if not 0 <= entry.tree < model.n_trees:
                fail(f"linear_leaves[{i}]: tree {entry.tree} is not in [0, "
                     f"{model.n_trees})")
            tree = model.trees[entry.tree]
            if tree.value.shape[1] != 1 or int(model.tree_group[entry.tree]) < 0:
                fail(f"linear_leaves[{i}]: tree {entry.tree} has several outputs; linear "
                     f"leaves need one")
            try:
                entry.validate(tree.left, numeric, f"linear_leaves[{i}]")
            except ModelError as exc:
                fail(str(exc))

    def _in_range(self, t0, t1):
        return [e for e in self.entries if t0 <= e.tree < t1]

    def _add(self, model, entries, leaves, values, column_of_feature, out, t0):
        for e in entries:
            tree = model.trees[e.tree]
            add_linear_leaves(np.ascontiguousarray(leaves[e.tree - t0]), values,
                              e.slots(tree.n_nodes), e.offset,
                              column_of_feature[e.feature], e.coef, e.const,
                              np.ascontiguousarray(tree.value[:, 0], np.float64),
                              float(model.tree_weight[e.tree]),
                              out[:, int(model.tree_group[e.tree])])

    def add_margin(self, model, X, out, t0, t1):
        """``out += model(x) - value`` over the leaves that raw rows ``X`` reach."""
        from ..kernels.predict import raw_leaves

        entries = self._in_range(t0, t1)
        if not entries or X.shape[0] == 0:
            return
        X = np.ascontiguousarray(X, np.float64)
        leaves = np.empty((X.shape[0], t1 - t0), np.int32)
        raw_leaves(model._flat_trees(), X, t0, t1, leaves)
        identity = np.arange(X.shape[1], dtype=np.int32)
        self._add(model, entries, np.ascontiguousarray(leaves.T), X, identity, out, t0)

    def add_margin_binned(self, model, codes, missing_bin, out, t0, t1):
        """As :meth:`add_margin` for cache codes, read as their bins' middles."""
        from .tree import binned_leaves

        entries = self._in_range(t0, t1)
        if not entries or codes.shape[1] == 0:
            return
        values, column_of_feature = bin_values_of(model, codes, entries)
        leaves = np.zeros((t1 - t0, codes.shape[1]), np.int32)
        trees = sorted({e.tree for e in entries})
        leaves[np.array(trees) - t0] = binned_leaves([model.trees[t] for t in trees],
                                                     codes, missing_bin)
        self._add(model, entries, leaves, values, column_of_feature, out, t0)

    def describe(self):
        n_models = sum(len(e.node) for e in self.entries)
        return f"{n_models} linear leaf models"


def bin_values_of(model, codes, entries):
    """``(values, column_of_feature)``: the features the ``entries`` use, as their bins'
    middles ``(n_rows, n_used)`` float64 (NaN for the missing code), and the column of
    each feature in it (-1 where unused)."""
    used = np.unique(np.concatenate([e.feature for e in entries] + [np.zeros(0, np.int32)]))
    column_of_feature = np.full(model.n_features, -1, np.int32)
    column_of_feature[used] = np.arange(len(used), dtype=np.int32)
    return (leaf_feature_values(model.bin_representatives(), codes, used.tolist()),
            column_of_feature)


def leaf_feature_values(representatives, codes, used):
    """(n_rows, len(used)) float64: the codes ``(n_features, n_rows)`` of features
    ``used`` as their bins' values ``representatives[f, code]`` (NaN for the missing
    code), what leaf models read of a cache (training reads the same)."""
    values = np.empty((codes.shape[1], len(used)))
    for j, f in enumerate(used):
        values[:, j] = representatives[f][codes[f]]
    return values
