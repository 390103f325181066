"""The grower's side of exclusive feature bundling (``cache/bundles.py``): rows go into
histograms of the stored columns, which are expanded to per-feature histograms before the
split search, and routes read the stored columns."""
import time

import numpy as np

from ..kernels.bundles import expand_histograms
from ..kernels.hist_ops import zero_slots
from ..kernels.partition import ROUTE_CATEGORICAL, ROUTE_FLAGS


class BundledColumns:
    """A base class of :class:`~oocboost.engine.grower.TreeGrower`: it works on the
    grower's ``bundles``, ``hist``, ``stored_hist`` and ``nodes``."""

    def _target_histograms(self):
        """``(hist, column_of)`` that rows are added into: the stored columns' when
        features are bundled (expanded in :meth:`_expand_bundles`)."""
        if self.bundles is None:
            return self.hist, self.column_of
        starts = self._stored_starts
        return self.stored_hist, None if starts[-1] == len(starts) - 1 else starts

    def _expand_bundles(self):
        """Feature histograms of the nodes built this pass from their stored-column
        histograms, which are zeroed for the next pass."""
        slot_of_node = self.nodes.slot_of_node
        built = slot_of_node[slot_of_node >= 0].astype(np.int64)
        if not len(built):
            return
        t0 = time.perf_counter()
        b = self.bundles
        expand_histograms(self.stored_hist, self.hist, built, b.col_ptr, b.col_members,
                          b.default_bin, b.code_feature, b.code_bin, self._stored_starts,
                          self._feature_starts)
        zero_slots(self.stored_hist, built)
        self.telemetry.histogram_s += time.perf_counter() - t0

    def _route_stored_columns(self, t, n, c):
        """Routes of the nodes just split when features are bundled: they read stored
        columns, and a split on a bundled feature becomes the set of its column's codes
        that go left (``codes`` of other features of the bundle mean its default bin)."""
        b, nd = self.bundles, self.nodes
        features = c["feature"]
        nd.route[t, n, 1] = b.column_of_feature[features]
        nd.route_bitset[t, n] = 0
        nd.route_bitset[t, n, : c["bitset"].shape[1]] = c["bitset"]
        words = nd.route_words
        for k in np.flatnonzero(b.default_bin[features] >= 0).tolist():
            left = np.zeros(words * 32, bool)
            bins = b.feature_bin_of_code(features[k])
            left[: len(bins)] = bins <= c["bin"][k]
            # bit c of word c >> 5 (kernels/split.py's layout)
            nd.route_bitset[t[k], n[k]] = np.packbits(left, bitorder="little").view("<u4")
            nd.route[t[k], n[k], ROUTE_FLAGS] = ROUTE_CATEGORICAL

