"""What a Hoeffding tree needs to go on learning after it is saved: per node its
statistics and counters, and the histograms of the nodes still collecting split
statistics. Kept in the model file (``"stream_state"``, one entry per tree, validated
field by field on load) so ``--init-model`` / ``partial_fit`` after ``load`` continue
exactly where learning stopped.

Size: the histograms dominate, ``n_active * n_hist_columns * max_bin * n_stats``
numbers (150 active leaves of 6 features, 256 bins, 3 statistics: 0.7M numbers, about
10 MB of JSON). Save without it (``save_model(path, state=False)``) for a file that only
predicts.

Layout (node ids are the tree's)::

    {"tree": t, "n_stats": s, "rows_seen": r, "weight_seen": w, "row_weight": v,
     "y_offset": y or null, "depth": [...n], "can_grow": [...n], "checked_at": [...n],
     "mc_correct": [...n], "nb_correct": [...n], "merit": [...n], "share": [...n],
     "dist": [...n*s],
     "active": [...m], "hist": [...m*cells*s], "hist_sums": [...m*s]}
"""
import numpy as np

from ..errors import ModelError
from .fields import read_array, read_int, read_typed
from .parts import TreeEntries, register_part
from .tree import coerce

_NODE = (("depth", np.int32), ("can_grow", np.bool_), ("checked_at", np.float64),
         ("mc_correct", np.float64), ("nb_correct", np.float64), ("merit", np.float64),
         ("share", np.float64))
_KEYS = {"tree", "n_stats", "rows_seen", "weight_seen", "row_weight", "y_offset", "dist",
         "active",
         "hist", "hist_sums", *(name for name, _ in _NODE)}
#: Histogram numbers of one tree read from a file, at most (2 GiB of float64).
MAX_STATE_VALUES = 1 << 28


class StreamState:
    """Learning state of one Hoeffding tree of a model (module docstring)."""

    def __init__(self, tree, n_stats, rows_seen, weight_seen, y_offset, nodes, dist, active,
                 hist, hist_sums, row_weight=1.0):
        self.tree = int(tree)
        self.n_stats = int(n_stats)
        self.rows_seen = int(rows_seen)
        self.weight_seen = float(weight_seen)
        self.row_weight = float(row_weight)
        self.y_offset = None if y_offset is None else float(y_offset)
        self.nodes = {name: coerce(f"stream_state {name}", nodes[name], dtype, 1)
                      for name, dtype in _NODE}
        self.dist = coerce("stream_state dist", dist, np.float64, 2)
        self.active = coerce("stream_state active", active, np.int32, 1)
        self.hist = coerce("stream_state hist", hist, np.float64, 3)
        self.hist_sums = coerce("stream_state hist_sums", hist_sums, np.float64, 2)

    def moved(self, tree):
        return StreamState(tree, self.n_stats, self.rows_seen, self.weight_seen,
                           self.y_offset, self.nodes, self.dist, self.active, self.hist,
                           self.hist_sums, self.row_weight)

    def validate(self, trees, n_cells, where="stream_state"):
        """Raise ModelError unless every array fits tree ``self.tree`` of ``trees``."""
        def fail(msg):
            raise ModelError(f"{where}: {msg}")

        if not 0 <= self.tree < len(trees):
            fail(f"tree {self.tree} is not in [0, {len(trees)})")
        tree = trees[self.tree]
        n, s, m = tree.n_nodes, self.n_stats, self.active.shape[0]
        if s < 2:
            fail(f"n_stats must be at least 2, got {s}")
        for name, a in self.nodes.items():
            if a.shape != (n,):
                fail(f"{name} must hold {n} values (one per node), got {a.shape[0]}")
        if self.dist.shape != (n, s) or self.hist.shape != (m, n_cells, s) \
                or self.hist_sums.shape != (m, s):
            fail(f"dist {self.dist.shape}, hist {self.hist.shape} and hist_sums "
                 f"{self.hist_sums.shape} must be ({n}, {s}), ({m}, {n_cells}, {s}) and "
                 f"({m}, {s})")
        for name, a in (("dist", self.dist), ("hist", self.hist),
                        ("hist_sums", self.hist_sums), *self.nodes.items()):
            if a.dtype.kind == "f" and not np.all(np.isfinite(a)):
                fail(f"{name} is not finite")
        if self.rows_seen < 0 or not np.isfinite(self.weight_seen) or self.weight_seen < 0:
            fail("rows_seen and weight_seen must be finite and >= 0")
        if not (np.isfinite(self.row_weight) and self.row_weight > 0):
            fail("row_weight must be finite and > 0")
        if np.any(self.nodes["share"] < 0):
            fail("share must be >= 0")
        if self.y_offset is not None and not np.isfinite(self.y_offset):
            fail("y_offset must be finite or null")
        depth = np.zeros(n, np.int64)
        internal = np.flatnonzero(tree.left >= 0)
        for node in internal:            # children ids exceed their parent's
            depth[tree.left[node]] = depth[tree.right[node]] = depth[node] + 1
        if np.any(self.nodes["depth"] != depth):
            fail("depth does not match the tree")
        if np.any((self.active < 0) | (self.active >= n)) or \
                len(np.unique(self.active)) != m:
            fail(f"active must list distinct node ids in [0, {n})")
        return self

    def to_json_dict(self):
        d = {"tree": self.tree, "n_stats": self.n_stats, "rows_seen": self.rows_seen,
             "weight_seen": self.weight_seen, "row_weight": self.row_weight,
             "y_offset": self.y_offset}
        d.update({name: a.tolist() for name, a in self.nodes.items()})
        d.update(dist=self.dist.ravel().tolist(), active=self.active.tolist(),
                 hist=self.hist.ravel().tolist(), hist_sums=self.hist_sums.ravel().tolist())
        return d

    @classmethod
    def from_json_dict(cls, d, n_nodes_of, n_cells, where):
        """Read one entry; ``n_nodes_of(t)`` gives tree ``t``'s node count."""
        if not isinstance(d, dict):
            raise ModelError(f"{where}: must be a JSON object")
        unknown = sorted(set(d) - _KEYS)
        if unknown:
            raise ModelError(f"{where}: unknown fields {unknown}")
        tree = read_int(d, "tree", where, 0, 1 << 31)
        n = n_nodes_of(tree)
        if n is None:
            raise ModelError(f"{where}: tree {tree} is not in the model")
        s = read_int(d, "n_stats", where, 2, 1 << 16)
        rows = read_int(d, "rows_seen", where, 0, 1 << 62)
        weight = d.get("weight_seen")
        offset = d.get("y_offset")
        row_weight = d.get("row_weight")
        for name, v, optional in (("weight_seen", weight, False), ("y_offset", offset, True),
                                  ("row_weight", row_weight, False)):
            if not (optional and v is None) and (
                    not isinstance(v, (int, float)) or isinstance(v, bool)):
                raise ModelError(f"{where}: {name!r} must be a number")
        from .fields import read_typed

        active = read_array(d, "active", np.int32,
                            len(read_typed(d, "active", (list,), where)), where)
        m = active.shape[0]
        if m * n_cells * s > MAX_STATE_VALUES:
            raise ModelError(f"{where}: {m} histograms of {n_cells} cells x {s} statistics "
                             f"exceed {MAX_STATE_VALUES} values")
        nodes = {name: read_array(d, name, dtype, n, where) for name, dtype in _NODE}
        return cls(tree, s, rows, weight, offset, nodes,
                   read_array(d, "dist", np.float64, n * s, where).reshape(n, s), active,
                   read_array(d, "hist", np.float64, m * n_cells * s, where).reshape(
                       m, n_cells, s),
                   read_array(d, "hist_sums", np.float64, m * s, where).reshape(m, s),
                   row_weight)


@register_part
class StreamStates(TreeEntries):
    """The ``"stream_state"`` part: the :class:`StreamState` of each Hoeffding tree."""

    key = "stream_state"
    entry_type = StreamState
    is_learning_state = True

    def to_json(self):
        return [state.to_json_dict() for state in self.entries]

    @classmethod
    def from_json(cls, value, doc, where):
        from ..cache.binning import BinMapper
        from .naive_bayes import cell_layout

        entries = read_typed({"stream_state": value}, "stream_state", (list,), where)
        if not entries:
            return None
        mapper_doc = read_typed(doc, "bin_mapper", (dict,), where, optional=True)
        if mapper_doc is None:
            raise ModelError(f"{where}: stream_state needs a bin_mapper")
        try:
            mapper = BinMapper.from_dict(mapper_doc)
        except ModelError as exc:
            raise ModelError(f"{where}: bin_mapper: {exc}") from None
        _, _, n_cells = cell_layout(mapper.n_value_bins, mapper.max_bin)
        raw_trees = doc.get("trees") if isinstance(doc.get("trees"), list) else []

        def n_nodes_of(t):
            tree = raw_trees[t] if 0 <= t < len(raw_trees) else None
            return tree.get("n_nodes") if isinstance(tree, dict) else None
        return cls([StreamState.from_json_dict(d, n_nodes_of, n_cells,
                                               f"{where}: stream_state[{i}]")
                    for i, d in enumerate(entries)])

    def validate(self, model, fail):
        from .naive_bayes import cell_layout

        if model.bin_mapper is None:
            fail("stream_state needs the bin_mapper its histograms are over")
        mapper = model.mapper()
        _, _, n_cells = cell_layout(mapper.n_value_bins, mapper.max_bin)
        for i, state in self.checked_entries(fail):
            state.validate(model.trees, n_cells, where=f"stream_state[{i}]")
