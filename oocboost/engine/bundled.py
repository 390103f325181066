"""Routes over bundled features (``cache/bundles.py``): the blocks' codes are the
stored columns, so a split's route reads its feature's stored column, and a split on a
bundled feature becomes the set of that column's codes that go left (the histograms'
side is ``engine/histograms.py``)."""
import numpy as np

from ..kernels.partition import ROUTE_CATEGORICAL, ROUTE_FLAGS


def route_stored_columns(bundles, nodes, t, n, c):
    """Set the routes of the nodes ``(t, n)`` just split by candidates ``c`` to read
    stored columns (codes of the bundle's other features mean its default bin)."""
    b, nd = bundles, nodes
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
