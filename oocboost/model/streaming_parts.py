"""The parts of a model file beside its trees: naive Bayes leaves (``naive_bayes.py``)
and the learning state (``stream_state.py``) of Hoeffding trees, MARS terms
(``mars.py``): their validation against the model's trees and bin mapper, and their
reading from JSON."""
import numpy as np

from ..errors import ModelError
from .fields import read_typed


class StreamingParts:
    """Mixed into :class:`~oocboost.model.model.Model`."""

    def naive_bayes_mapper(self):
        """The BinMapper naive Bayes leaves bin raw values with (built once)."""
        from ..cache.binning import BinMapper

        key = id(self.bin_mapper)
        if getattr(self, "_nb_mapper_key", None) != key:
            self._nb_mapper = BinMapper.from_dict(self.bin_mapper)
            self._nb_mapper_key = key
        return self._nb_mapper

    def _validate_parts(self, fail):
        """The parts beside the trees, each against the model."""
        if self.naive_bayes:
            self._validate_naive_bayes(fail)
        if self.stream_state:
            self._validate_stream_state(fail)
        if self.mars is not None:
            self.mars.validate(self, fail)

    @staticmethod
    def _read_mars(doc, where):
        if doc.get("mars") is None:
            return None
        from .mars import MarsPart

        return MarsPart.from_json_dict(doc["mars"], where)

    def mars_representatives(self):
        """(n_features, max_bin) bin values MARS reads cache codes as (built once)."""
        from .mars import representatives

        mapper = self.naive_bayes_mapper()
        if getattr(self, "_mars_rep_key", None) != id(mapper):
            self._mars_rep = representatives(mapper, mapper.max_bin)
            self._mars_rep_key = id(mapper)
        return self._mars_rep

    @staticmethod
    def _read_naive_bayes(doc, where):
        from .naive_bayes import LeafTables

        entries = read_typed(doc, "naive_bayes", (list,), where, optional=True)
        if not entries:
            return None
        n_classes = doc.get("n_classes")
        if not isinstance(n_classes, int) or isinstance(n_classes, bool) or n_classes < 2:
            raise ModelError(f"{where}: naive_bayes leaves need n_classes >= 2")
        return [LeafTables.from_json_dict(d, n_classes, f"{where}: naive_bayes[{i}]")
                for i, d in enumerate(entries)]

    @classmethod
    def _read_stream_state(cls, doc, where, raw_trees):
        from ..cache.binning import BinMapper
        from .naive_bayes import cell_layout
        from .stream_state import StreamState

        entries = read_typed(doc, "stream_state", (list,), where, optional=True)
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

        def n_nodes_of(t):
            return raw_trees[t].get("n_nodes") if 0 <= t < len(raw_trees) else None
        return [StreamState.from_json_dict(d, n_nodes_of, n_cells,
                                           f"{where}: stream_state[{i}]")
                for i, d in enumerate(entries)]

    def _validate_naive_bayes(self, fail):
        from .naive_bayes import LeafTables, cell_layout

        if self.bin_mapper is None or not self.n_classes or self.aggregation != "mean":
            fail("naive_bayes leaves need a bin_mapper, n_classes and 'mean' aggregation")
        mapper = self.naive_bayes_mapper()
        if mapper.n_features != self.n_features:
            fail(f"naive_bayes: the bin mapper has {mapper.n_features} features, the model "
                 f"{self.n_features}")
        _, _, n_cells = cell_layout(mapper.n_value_bins, mapper.max_bin)
        for i, tables in _entries(self.naive_bayes, LeafTables, "naive_bayes", fail):
            tree = self.trees[tables.tree] if 0 <= tables.tree < len(self.trees) else None
            tables.validate(len(self.trees), tree.left if tree is not None
                            else np.zeros(0, np.int32), int(self.n_classes), n_cells,
                            where=f"naive_bayes[{i}]")
            if tree is not None and np.any(tree.right[tree.left >= 0]
                                           != tree.left[tree.left >= 0] + 1):
                fail(f"naive_bayes[{i}]: tree {tables.tree} must number each right child "
                     f"left + 1")

    def _validate_stream_state(self, fail):
        from .naive_bayes import cell_layout
        from .stream_state import StreamState

        if self.bin_mapper is None:
            fail("stream_state needs the bin_mapper its histograms are over")
        mapper = self.naive_bayes_mapper()
        _, _, n_cells = cell_layout(mapper.n_value_bins, mapper.max_bin)
        for i, state in _entries(self.stream_state, StreamState, "stream_state", fail):
            state.validate(self.trees, n_cells, where=f"stream_state[{i}]")


def _entries(entries, kind, name, fail):
    """``(i, entry)`` of a list of per-tree entries, refusing another type and a tree
    listed twice."""
    seen = set()
    for i, entry in enumerate(entries):
        if not isinstance(entry, kind):
            fail(f"{name}[{i}] is a {type(entry).__name__}, not {kind.__name__}")
        if entry.tree in seen:
            fail(f"{name}[{i}]: tree {entry.tree} has two entries")
        seen.add(entry.tree)
        yield i, entry
