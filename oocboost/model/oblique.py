"""A tree's oblique splits (``splitter="oblique"``): at such a node a row goes left when
``sum_j weight_j x_{feature_j} <= threshold`` (the node's ``threshold``, raw units),
and a row missing any of those values takes the node's ``default_left``. Node ``n``'s
terms are ``offset[n] .. offset[n + 1] - 1`` of ``feature`` and ``weight`` (none at
axis-aligned nodes and leaves); its ``feature`` is the first of them.
"""
import numpy as np

from ..errors import ModelError
from .fields import INT32_MAX, read_array, read_int

#: Features one oblique split may combine in a model file.
MAX_TERMS = 16


class ObliqueSplits:
    """The oblique nodes of one tree (see the module docstring)."""

    __slots__ = ("offset", "feature", "weight")

    def __init__(self, offset, feature, weight):
        self.offset = np.ascontiguousarray(offset, np.int32)
        self.feature = np.ascontiguousarray(feature, np.int32)
        self.weight = np.ascontiguousarray(weight, np.float64)

    @classmethod
    def from_nodes(cls, is_oblique, features, weights):
        """From per-node (n_nodes, k) features (-1 padded) and weights; None when no
        node is oblique."""
        if not np.any(is_oblique):
            return None
        used = (features >= 0) & np.asarray(is_oblique)[:, None]
        offset = np.zeros(len(features) + 1, np.int32)
        np.cumsum(used.sum(axis=1), out=offset[1:])
        return cls(offset, features[used], weights[used])

    def terms(self, node):
        return self.feature[self.offset[node]:self.offset[node + 1]], \
            self.weight[self.offset[node]:self.offset[node + 1]]

    def validate(self, tree, n_features, feature_types, fail):
        n_nodes, n = tree.n_nodes, len(self.feature)
        off = self.offset
        if off.shape != (n_nodes + 1,) or off[0] != 0 or off[-1] != n \
                or np.any(np.diff(off) < 0) or self.weight.shape != (n,):
            fail(f"oblique: offset must rise from 0 to {n} over {n_nodes + 1} entries, "
                 f"with one weight per feature", None)
        counts = np.diff(off)
        for node in np.flatnonzero(counts):
            feats, weights = self.terms(node)
            if tree.left[node] < 0 or tree.is_categorical[node]:
                fail("oblique: only numeric split nodes combine features", node)
            if len(feats) > MAX_TERMS or len(set(feats.tolist())) != len(feats):
                fail(f"oblique: at most {MAX_TERMS} distinct features a node", node)
            if feats[0] != tree.feature[node]:
                fail("oblique: the node's feature must be its first term's", node)
            if np.any((feats < 0) | (feats >= n_features)) or any(
                    feature_types is not None and feature_types[f] != "numeric"
                    for f in feats):
                fail("oblique: features must be numeric features of the model", node)
            if not np.all(np.isfinite(weights)):
                fail("oblique: weights must be finite", node)

    def to_json_dict(self):
        return {"n_terms": int(len(self.feature)), "offset": self.offset.tolist(),
                "feature": self.feature.tolist(), "weight": self.weight.tolist()}

    @classmethod
    def from_json_dict(cls, d, n_nodes, where):
        if not isinstance(d, dict) or set(d) != {"n_terms", "offset", "feature", "weight"}:
            raise ModelError(f"{where}: oblique must be an object with exactly n_terms, "
                             f"offset, feature and weight")
        n = read_int(d, "n_terms", f"{where}: oblique", 0, INT32_MAX)
        return cls(read_array(d, "offset", np.int32, n_nodes + 1, f"{where}: oblique"),
                   read_array(d, "feature", np.int32, n, f"{where}: oblique"),
                   read_array(d, "weight", np.float64, n, f"{where}: oblique"))
