"""Label samples kept in a regression forest's leaves, for quantile regression forests
(Meinshausen 2006): the ``"leaf_samples"`` part of a model file, and the quantiles it
predicts (``kernels/quantile_leaves.py``).

A tree's entry lists its leaves that kept labels, each leaf's labels ascending with their
weights (the row's sample weight times its bootstrap copies)::

    {"tree": t, "n_leaves": m, "n_samples": s, "node": [...m], "offset": [...m + 1],
     "value": [...s], "weight": [...s]}
"""
import numpy as np

from ..errors import ModelError, ParameterError
from .fields import read_array, read_int, read_typed
from .parts import TreeEntries, register_part
from .tree import coerce

#: Labels one tree may keep in a model read from a file (4 GiB of value and weight).
MAX_TREE_SAMPLES = 1 << 28


class LeafSamples:
    """The labels some leaves of one tree kept.

    Parameters
    ----------
    tree : int
    node : array-like (m,) int32, leaf ids, ascending
    offset : array-like (m + 1,) int64: leaf ``node[k]``'s labels are
        ``value[offset[k]:offset[k + 1]]``
    value : array-like (s,) float64, ascending within each leaf
    weight : array-like (s,) float64, > 0
    """

    def __init__(self, tree, node, offset, value, weight):
        self.tree = int(tree)
        self.node = coerce("leaf_samples node", node, np.int32, 1)
        self.offset = coerce("leaf_samples offset", offset, np.int64, 1)
        self.value = coerce("leaf_samples value", value, np.float64, 1)
        self.weight = coerce("leaf_samples weight", weight, np.float64, 1)

    def moved(self, tree):
        """The same samples for the tree now at index ``tree``."""
        return LeafSamples(tree, self.node, self.offset, self.value, self.weight)

    def validate(self, left, where):
        """ModelError unless the arrays fit a tree whose ``left`` children are given."""
        m, s = len(self.node), len(self.value)
        if self.offset.shape != (m + 1,) or self.offset[0] != 0 or self.offset[-1] != s \
                or np.any(np.diff(self.offset) < 1) or len(self.weight) != s:
            raise ModelError(f"{where}: offset must rise from 0 to the {s} samples, at "
                             f"least one a leaf, with a weight each")
        bad = (self.node < 0) | (self.node >= len(left))
        if bad.any() or np.any(left[self.node] != -1) or np.any(np.diff(self.node) <= 0):
            raise ModelError(f"{where}: node ids must be ascending leaves of tree "
                             f"{self.tree}")
        if not (np.all(np.isfinite(self.value)) and np.all(np.isfinite(self.weight))
                and np.all(self.weight > 0)):
            raise ModelError(f"{where}: values must be finite and weights finite and > 0")
        step = np.diff(self.value)
        starts = self.offset[1:-1] - 1
        if np.any(np.delete(step, starts) < 0):
            raise ModelError(f"{where}: each leaf's values must be ascending")

    def to_json_dict(self):
        return {"tree": self.tree, "n_leaves": int(len(self.node)),
                "n_samples": int(len(self.value)), "node": self.node.tolist(),
                "offset": self.offset.tolist(), "value": self.value.tolist(),
                "weight": self.weight.tolist()}

    @classmethod
    def from_json_dict(cls, d, where):
        if not isinstance(d, dict):
            raise ModelError(f"{where}: must be a JSON object")
        unknown = set(d) - {"tree", "n_leaves", "n_samples", "node", "offset", "value",
                            "weight"}
        if unknown:
            raise ModelError(f"{where}: unknown fields {sorted(unknown)}")
        tree = read_int(d, "tree", where, 0, 1 << 31)
        m = read_int(d, "n_leaves", where, 1, 1 << 31)
        s = read_int(d, "n_samples", where, 1, MAX_TREE_SAMPLES)
        return cls(tree, read_array(d, "node", np.int32, m, where),
                   read_array(d, "offset", np.int64, m + 1, where),
                   read_array(d, "value", np.float64, s, where),
                   read_array(d, "weight", np.float64, s, where))


@register_part
class QuantileLeaves(TreeEntries):
    """The ``"leaf_samples"`` part: the :class:`LeafSamples` of every tree."""

    key = "leaf_samples"
    entry_type = LeafSamples

    def to_json(self):
        return [entry.to_json_dict() for entry in self.entries]

    @classmethod
    def from_json(cls, value, doc, where):
        entries = read_typed({"leaf_samples": value}, "leaf_samples", (list,), where)
        if not entries:
            return None
        return cls([LeafSamples.from_json_dict(d, f"{where}: leaf_samples[{i}]")
                    for i, d in enumerate(entries)])

    def validate(self, model, fail):
        if model.n_outputs != 1 or model.aggregation != "mean":
            fail("leaf_samples: a forest of one output averaging its trees keeps label "
                 "samples")
        for i, entry in self.checked_entries(fail):
            if not 0 <= entry.tree < model.n_trees:
                fail(f"leaf_samples[{i}]: tree {entry.tree} is not in [0, "
                     f"{model.n_trees})")
            try:
                entry.validate(model.trees[entry.tree].left, f"leaf_samples[{i}]")
            except ModelError as exc:
                fail(str(exc))

    def flat(self, model, t0, t1):
        """``(node_offset, sample_start, sample_end, value, weight)`` of trees
        ``[t0, t1)`` for ``kernels.quantile_leaves.leaf_quantiles``; ModelError when a
        tree has no samples."""
        by_tree = {e.tree: e for e in self.entries}
        missing = [t for t in range(t0, t1) if t not in by_tree]
        if missing:
            raise ModelError(f"trees {missing[:5]} kept no label samples (they were added "
                             f"by a fit without quantile_samples_leaf)")
        sizes = np.array([model.trees[t].n_nodes for t in range(t0, t1)], np.int64)
        node_offset = np.zeros(len(sizes) + 1, np.int64)
        np.cumsum(sizes, out=node_offset[1:])
        start = np.zeros(node_offset[-1], np.int64)
        end = np.zeros(node_offset[-1], np.int64)
        values, weights, base = [], [], 0
        for k, t in enumerate(range(t0, t1)):
            e = by_tree[t]
            g = node_offset[k] + e.node
            start[g] = base + e.offset[:-1]
            end[g] = base + e.offset[1:]
            values.append(e.value)
            weights.append(e.weight)
            base += len(e.value)
        return (node_offset, start, end, np.concatenate(values), np.concatenate(weights))


def check_quantiles(quantiles):
    """The quantile levels as a float64 array in [0, 1]; ParameterError otherwise."""
    q = np.atleast_1d(np.asarray(quantiles, dtype=np.float64))
    if q.ndim != 1 or q.size == 0 or not np.all((q >= 0.0) & (q <= 1.0)):
        raise ParameterError(f"quantiles must be numbers in [0, 1] (one or a list), got "
                             f"{quantiles!r}")
    return q


def quantile_transform(model, quantiles, iteration_range=None):
    """A function of the leaves ``(n_rows, n_trees)`` of the trees ``iteration_range``
    to the rows' ``quantiles`` ``(n_rows, n_levels)`` (``kernels.quantile_leaves``);
    ParameterError for a model whose leaves kept no labels, or levels outside [0, 1]."""
    from ..kernels.quantile_leaves import leaf_quantiles

    q = check_quantiles(quantiles)
    part = model.part("leaf_samples")
    if part is None:
        raise ParameterError("this model kept no label samples in its leaves: fit the "
                             "forest with quantile_samples_leaf (e.g. 64) to predict "
                             "quantiles")
    t0, t1 = model._tree_range(iteration_range)
    flat = part.flat(model, t0, t1)

    def transform(leaves):
        out = np.empty((leaves.shape[0], q.size))
        leaf_quantiles(np.ascontiguousarray(leaves, dtype=np.int32), *flat, q, out)
        return out

    return transform


def quantile_columns(quantiles):
    """Column names of the levels: ``quantile_0.05``, ``quantile_0.5``, ..."""
    return [f"quantile_{q:g}" for q in check_quantiles(quantiles)]
