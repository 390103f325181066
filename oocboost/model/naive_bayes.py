"""Naive Bayes leaves: a tree's leaves that predict by naive Bayes over the class counts
they kept per bin (Hoeffding trees' ``leaf_prediction="nb"`` / ``"nba"``), and their
part of the model file.

For a row reaching leaf ``l`` with table ``t``::

    P(k | x) ~ prior[t, k] * prod_f P(code_f(x) | k)

with ``P(code | k)`` read from the class counts the leaf kept per bin (its histogram,
cells ``bin_start[f] + code``, ``kernels/naive_bayes.py``):

* numeric feature: as river's Gaussian naive Bayes, a normal density per class whose
  mean and sample variance are those of the class's rows (each at its bin's middle
  value), at the row's bin; left out for a class with under two rows at the leaf or a
  single value (river leaves it out too); where the leaf has seen missing values, a
  missing value by the class's share of them (Laplace) and a present one by the rest;
* categorical feature: the class's share of rows in the category, Laplace smoothing
  (count + 1 over total + number of codes) so an unseen category zeroes no class.

In the model file (``"naive_bayes"``, one entry per tree that has tables, validated
field by field on load)::

    {"tree": t, "n_tables": m, "n_cells": c, "node": [...m], "prior": [...m*K],
     "counts": [...m*c*K]}
"""
import numpy as np

from ..common import hist_column_starts
from ..errors import ModelError
from ..kernels.naive_bayes import naive_bayes_scores
from .fields import read_array, read_int, read_typed
from .parts import TreeEntries, register_part
from .tree import binned_leaves, coerce

#: Cells * classes * tables of one tree read from a file, at most (2 GiB of float64).
MAX_TABLE_VALUES = 1 << 28


def cell_layout(n_value_bins, max_bin):
    """``(bin_start, cell_feature, n_cells)`` of tables over features with
    ``n_value_bins`` bins (``max_bin`` codes a histogram column)."""
    starts = hist_column_starts(n_value_bins, max_bin)
    bin_start = starts[:-1] * int(max_bin)
    n_cells = int(starts[-1]) * int(max_bin)
    cell_feature = np.repeat(np.arange(len(n_value_bins)), np.diff(starts) * int(max_bin))
    return bin_start, cell_feature, n_cells


class LeafTables:
    """Naive Bayes tables of some leaves of one tree.

    Parameters
    ----------
    tree : int
        Index of the tree in the model.
    node : array-like (n_tables,) int32
        Leaf ids that predict by naive Bayes.
    prior : array-like (n_tables, K) float64
        Class weights of each leaf (its class distribution, any scale).
    counts : array-like (n_tables, n_cells, K) float64
        Class weights per histogram cell of each leaf.
    """

    def __init__(self, tree, node, prior, counts):
        self.tree = int(tree)
        self.node = coerce("naive_bayes node", node, np.int32, 1)
        self.prior = coerce("naive_bayes prior", prior, np.float64, 2)
        self.counts = coerce("naive_bayes counts", counts, np.float64, 3)

    def moved(self, tree):
        """The same tables for the tree now at index ``tree``."""
        return LeafTables(tree, self.node, self.prior, self.counts)

    def validate(self, n_trees, tree_nodes, n_classes, n_cells, where="naive_bayes"):
        """Raise ModelError unless every array fits the model's tree and classes."""
        m = self.node.shape[0]
        if not 0 <= self.tree < n_trees:
            raise ModelError(f"{where}: tree {self.tree} is not in [0, {n_trees})")
        if self.prior.shape != (m, n_classes) or self.counts.shape != (m, n_cells, n_classes):
            raise ModelError(f"{where}: prior {self.prior.shape} and counts "
                             f"{self.counts.shape} must be ({m}, {n_classes}) and "
                             f"({m}, {n_cells}, {n_classes})")
        left = tree_nodes
        bad = (self.node < 0) | (self.node >= left.shape[0])
        if bad.any() or np.any(left[self.node[~bad]] != -1):
            raise ModelError(f"{where}: node ids must be leaves of tree {self.tree}")
        if len(np.unique(self.node)) != m:
            raise ModelError(f"{where}: a leaf is listed twice")
        for name, a in (("prior", self.prior), ("counts", self.counts)):
            if not np.all(np.isfinite(a)) or np.any(a < 0):
                raise ModelError(f"{where}: {name} must be finite and >= 0")
        return self

    def probabilities(self, codes, node_of_row, n_nodes, mapper, out):
        """Write the posterior of rows whose leaf has a table into ``out`` (n_rows, K).
        The tables' parameters are made once per bin layout (a model's tables do not
        change; making them was most of a 10-row prediction)."""
        table_of_node = np.full(n_nodes, -1, np.int32)
        table_of_node[self.node] = np.arange(self.node.shape[0], dtype=np.int32)
        layout = Layout.of(mapper)
        count_row = np.arange(self.node.shape[0], dtype=np.int64)
        cached = getattr(self, "_parameters", None)
        if cached is None or cached[0] is not layout:
            cached = (layout, parameters_of(self.counts, count_row, self.prior, layout))
            self._parameters = cached
        return posterior(codes, node_of_row, table_of_node, self.counts, count_row,
                         self.prior, layout, out, parameters=cached[1])

    def to_json_dict(self):
        return {"tree": self.tree, "n_tables": int(self.node.shape[0]),
                "n_cells": int(self.counts.shape[1]), "node": self.node.tolist(),
                "prior": self.prior.ravel().tolist(), "counts": self.counts.ravel().tolist()}

    @classmethod
    def from_json_dict(cls, d, n_classes, where):
        if not isinstance(d, dict):
            raise ModelError(f"{where}: must be a JSON object")
        unknown = set(d) - {"tree", "n_tables", "n_cells", "node", "prior", "counts"}
        if unknown:
            raise ModelError(f"{where}: unknown fields {sorted(unknown)}")
        tree = read_int(d, "tree", where, 0, 1 << 31)
        m = read_int(d, "n_tables", where, 0, 1 << 31)
        c = read_int(d, "n_cells", where, 1, 1 << 31)
        if m * c * n_classes > MAX_TABLE_VALUES:
            raise ModelError(f"{where}: {m} tables of {c} cells x {n_classes} classes "
                             f"exceed {MAX_TABLE_VALUES} values")
        node = read_array(d, "node", np.int32, m, where)
        prior = read_array(d, "prior", np.float64, m * n_classes, where)
        counts = read_array(d, "counts", np.float64, m * c * n_classes, where)
        return cls(tree, node, prior.reshape(m, n_classes),
                   counts.reshape(m, c, n_classes))


def bin_values(edges):
    """A value standing for each bin of a numeric feature: the midpoint of its edges
    (the outer bins are as wide as their neighbours; a single bin stands for 0).

    >>> bin_values(np.array([1.0, 2.0])).tolist()
    [0.5, 1.5, 2.5]
    """
    edges = np.asarray(edges, np.float64)
    if edges.size == 0:
        return np.zeros(1)
    if edges.size == 1:
        return np.array([edges[0] - 0.5, edges[0] + 0.5])
    inner = (edges[:-1] + edges[1:]) * 0.5
    first = edges[0] - (edges[1] - edges[0]) * 0.5
    last = edges[-1] + (edges[-1] - edges[-2]) * 0.5
    return np.concatenate(([first], inner, [last]))


class Layout:
    """What naive Bayes needs of a bin mapper: cells, the value of each numeric bin, the
    least variance of each feature (a twelfth of its narrowest bin's squared width: the
    spread of a value within its bin). Built once per mapper (:meth:`of`)."""

    _last = (None, None)

    def __init__(self, mapper):
        self.n_value_bins = np.asarray(mapper.n_value_bins, np.int64)
        self.is_categorical = np.asarray(mapper.is_categorical, bool)
        self.missing_bin = int(mapper.max_bin) - 1
        self.bin_start, _, self.n_cells = cell_layout(self.n_value_bins, mapper.max_bin)
        self.cell_value = np.zeros(self.n_cells)
        self.min_var = np.ones(len(self.n_value_bins))
        self.n_codes = np.maximum(self.n_value_bins, self.missing_bin + 1).astype(np.float64)
        for f in np.flatnonzero(~self.is_categorical):
            values = bin_values(mapper.bin_edges[f])[:self.n_value_bins[f]]
            self.cell_value[self.bin_start[f]:self.bin_start[f] + len(values)] = values
            widths = np.diff(values)
            self.min_var[f] = (widths[widths > 0].min() ** 2 / 12.0
                               if np.any(widths > 0) else 1e-12)

    @classmethod
    def of(cls, mapper):
        if cls._last[0] is not mapper:
            cls._last = (mapper, cls(mapper))
        return cls._last[1]

    def parameters(self, moments, prior):
        """``(params, log_prior)`` of ``kernels.naive_bayes`` from class moments
        (``nb_parameters``)."""
        from ..kernels.naive_bayes import nb_parameters

        params = np.empty(moments.shape)
        log_prior = np.empty(prior.shape)
        nb_parameters(moments, np.ascontiguousarray(prior, np.float64),
                      self.is_categorical, self.min_var, self.n_codes, params, log_prior)
        return params, log_prior


def parameters_of(counts, count_row, prior, layout):
    """``(params, log_prior)`` of the tables ``count_row`` of ``counts`` (the layout of
    ``kernels/naive_bayes.py``)."""
    from ..kernels.naive_bayes import class_moments

    moments = np.empty((len(count_row), len(layout.n_value_bins), prior.shape[1], 4))
    class_moments(counts, count_row, layout.bin_start, layout.n_value_bins,
                  layout.missing_bin, layout.is_categorical, layout.cell_value, moments)
    return layout.parameters(moments, prior)


def posterior(codes, node_of_row, table_of_node, counts, count_row, prior, layout, out,
              parameters=None):
    """Naive Bayes posteriors of the rows whose leaf has a table, written into ``out``.

    Parameters
    ----------
    codes : ndarray (n_features, n_rows) or PlaneCodes       # IN
    node_of_row : ndarray (n_rows,) int32                    # IN
    table_of_node : ndarray (n_nodes,) int32, -1: no table   # IN
    counts : ndarray (n, n_cells, lanes >= K) float64        # IN, read in place
    count_row : ndarray (n_tables,) int64, each table's row of ``counts``   # IN
    prior : ndarray (n_tables, K) float64, class weights     # IN
    layout : Layout
    out : ndarray (n_rows, K) float64                        # OUT
    parameters : ``(params, log_prior)`` of :func:`parameters_of`, or None to make them
    """
    n_tables, k = len(count_row), out.shape[1]
    if n_tables == 0:
        return out
    params, log_prior = (parameters if parameters is not None else
                         parameters_of(counts, count_row, prior, layout))
    scores = np.zeros((len(node_of_row), k))
    naive_bayes_scores(codes, np.ascontiguousarray(node_of_row, np.int32), table_of_node,
                       counts, count_row, layout.bin_start, layout.is_categorical,
                       layout.missing_bin, layout.cell_value, params, log_prior, scores)
    rows = table_of_node[node_of_row] >= 0
    s = scores[rows]
    s -= s.max(axis=1, keepdims=True)
    p = np.exp(s)
    out[rows] = p / p.sum(axis=1, keepdims=True)
    return out


def leaves_of(tree, codes, missing_bin):
    """(n_rows,) int32 leaf of each row of bin ``codes`` in ``tree`` (right child
    ``left + 1``, as every tree with naive Bayes leaves numbers them)."""
    return binned_leaves([tree], codes, missing_bin)[0]


def add_naive_bayes(model, part, codes, out, t0, t1):
    """Replace, in the summed outputs ``out`` of trees ``t0 .. t1 - 1``, the class
    distribution of every naive Bayes leaf a row reaches by the row's posterior (before
    the aggregation's division: each tree adds ``weight * (posterior - distribution)``).

    Parameters
    ----------
    model : Model
    part : NaiveBayesLeaves
    codes : ndarray (n_features, n_rows) uint8/uint16, the model's bins    # IN
    out : ndarray (n_rows, K) float64                                     # IN/OUT
    """
    mapper = model.mapper()
    for tables in part:
        if not t0 <= tables.tree < t1:
            continue
        tree = model.trees[tables.tree]
        node_of_row = leaves_of(tree, codes, mapper.missing_bin)
        majority = tree.value[node_of_row]
        posterior = majority.copy()
        tables.probabilities(codes, node_of_row, tree.n_nodes, mapper, posterior)
        out += model.tree_weight[tables.tree] * (posterior - majority)


@register_part
class NaiveBayesLeaves(TreeEntries):
    """The ``"naive_bayes"`` part: the :class:`LeafTables` of each tree that has them."""

    key = "naive_bayes"
    entry_type = LeafTables
    needs_float64 = True
    shap_refusal = ("a model with naive Bayes leaves (leaf_prediction='nb' or 'nba') has "
                    "no Tree SHAP values: train with leaf_prediction='mc' to explain it")

    def to_json(self):
        return [tables.to_json_dict() for tables in self.entries]

    @classmethod
    def from_json(cls, value, doc, where):
        entries = read_typed({"naive_bayes": value}, "naive_bayes", (list,), where)
        if not entries:
            return None
        n_classes = doc.get("n_classes")
        if not isinstance(n_classes, int) or isinstance(n_classes, bool) or n_classes < 2:
            raise ModelError(f"{where}: naive_bayes leaves need n_classes >= 2")
        return cls([LeafTables.from_json_dict(d, n_classes, f"{where}: naive_bayes[{i}]")
                    for i, d in enumerate(entries)])

    def validate(self, model, fail):
        if model.bin_mapper is None or not model.n_classes or model.aggregation != "mean":
            fail("naive_bayes leaves need a bin_mapper, n_classes and 'mean' aggregation")
        mapper = model.mapper()
        if mapper.n_features != model.n_features:
            fail(f"naive_bayes: the bin mapper has {mapper.n_features} features, the model "
                 f"{model.n_features}")
        _, _, n_cells = cell_layout(mapper.n_value_bins, mapper.max_bin)
        for i, tables in self.checked_entries(fail):
            tree = model.trees[tables.tree] if 0 <= tables.tree < len(model.trees) else None
            tables.validate(len(model.trees), tree.left if tree is not None
                            else np.zeros(0, np.int32), int(model.n_classes), n_cells,
                            where=f"naive_bayes[{i}]")
            if tree is not None and np.any(tree.right[tree.left >= 0]
                                           != tree.left[tree.left >= 0] + 1):
                fail(f"naive_bayes[{i}]: tree {tables.tree} must number each right child "
                     f"left + 1")

    def add_margin(self, model, X, out, t0, t1):
        add_naive_bayes(model, self, model.mapper().transform_numeric(X), out, t0, t1)

    def add_margin_binned(self, model, codes, missing_bin, out, t0, t1):
        add_naive_bayes(model, self, codes, out, t0, t1)
