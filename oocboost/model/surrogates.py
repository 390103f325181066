"""A tree's surrogate splits (``missing_values="surrogate"``): for each split node, the
splits on other features that best agree with it, in order, used by prediction when the
row's primary value is missing (``engine/surrogates.py`` finds them).

Arrays, surrogates of node ``n`` at ``offset[n] .. offset[n + 1] - 1``:

- ``feature`` int32, ``is_categorical`` bool;
- numeric: ``threshold`` (raw) and ``bin_threshold`` (binned), with ``left_le``: values
  ``<=`` the threshold go left (True) or right (False);
- categorical: ``cat_bitset`` (n, 2 n_words) uint32, the categories going left in the
  first ``n_words`` words and those going right in the last (a category in neither
  makes the surrogate unusable for that row, as a missing value does);
- ``agreement``, ``adjusted``: rpart's agreement and adjusted agreement, in (0, 1].
"""
import numpy as np

from ..errors import ModelError
from .fields import INT32_MAX, read_array, read_int

_ARRAYS = (("feature", np.int32), ("threshold", np.float64), ("bin_threshold", np.int32),
           ("left_le", np.bool_), ("is_categorical", np.bool_), ("agreement", np.float64),
           ("adjusted", np.float64))


class Surrogates:
    """The surrogate splits of one tree (see the module docstring)."""

    __slots__ = ("offset",) + tuple(name for name, _ in _ARRAYS) + ("cat_bitset",)

    def __init__(self, offset, feature, threshold, bin_threshold, left_le, is_categorical,
                 cat_bitset, agreement, adjusted):
        self.offset = np.ascontiguousarray(offset, np.int32)
        self.feature = np.ascontiguousarray(feature, np.int32)
        self.threshold = np.ascontiguousarray(threshold, np.float64)
        self.bin_threshold = np.ascontiguousarray(bin_threshold, np.int32)
        self.left_le = np.ascontiguousarray(left_le, np.bool_)
        self.is_categorical = np.ascontiguousarray(is_categorical, np.bool_)
        self.cat_bitset = np.ascontiguousarray(cat_bitset, np.uint32).reshape(
            len(self.feature), -1)
        self.agreement = np.ascontiguousarray(agreement, np.float64)
        self.adjusted = np.ascontiguousarray(adjusted, np.float64)

    @classmethod
    def from_table(cls, table):
        """From ``engine.surrogates.find_surrogates``' table of one tree."""
        return cls(**{k: table[k] for k in ("offset", "feature", "threshold",
                                            "bin_threshold", "left_le", "is_categorical",
                                            "cat_bitset", "agreement", "adjusted")})

    @property
    def n_surrogates(self):
        return int(self.feature.shape[0])

    @property
    def n_words(self):
        """Words of each of the two category sets."""
        return int(self.cat_bitset.shape[1] // 2)

    def of_node(self, node):
        """Indices of node ``node``'s surrogates, in order."""
        return np.arange(self.offset[node], self.offset[node + 1])

    # ------------------------------------------------------------------ validation
    def validate(self, tree, n_features, max_bin, fail):
        """Raise (through ``fail(msg, node)``) for any inconsistency with ``tree``."""
        n_nodes, n = tree.n_nodes, self.n_surrogates
        off = self.offset
        if off.shape != (n_nodes + 1,) or off[0] != 0 or off[-1] != n \
                or np.any(np.diff(off) < 0):
            fail(f"surrogates.offset must rise from 0 to {n} over {n_nodes + 1} entries",
                 None)
        for name, _ in _ARRAYS:
            if getattr(self, name).shape != (n,):
                fail(f"surrogates.{name} must have {n} entries", None)
        counts = np.diff(off)
        bad = np.flatnonzero((tree.left == -1) & (counts > 0))
        if bad.size:
            fail("a leaf has surrogates", bad[0])
        node_of = np.repeat(np.arange(n_nodes), counts)
        checks = (
            ((self.feature < 0) | (self.feature >= n_features), "feature out of range"),
            (self.feature == tree.feature[node_of], "a node's surrogate is on its own "
                                                    "split feature"),
            (~np.isfinite(self.threshold), "threshold is not finite"),
            (~self.is_categorical & ((self.bin_threshold < 0)
                                     | (self.bin_threshold > max_bin - 2)),
             f"bin threshold outside [0, {max_bin - 2}]"),
            (~((self.agreement > 0) & (self.agreement <= 1)), "agreement outside (0, 1]"),
            (~((self.adjusted > 0) & (self.adjusted <= 1)),
             "adjusted agreement outside (0, 1]"),
        )
        for bad_mask, msg in checks:
            bad = np.flatnonzero(bad_mask)
            if bad.size:
                fail(f"surrogate {int(bad[0])}: {msg}", node_of[bad[0]])
        if self.cat_bitset.shape[1] % 2 or self.n_words > (max_bin + 31) // 32:
            fail(f"surrogates.cat_bitset must hold two sets of at most "
                 f"{(max_bin + 31) // 32} words", None)

    # ------------------------------------------------------------------ JSON
    def to_json_dict(self):
        d = {"n_surrogates": self.n_surrogates, "n_words": self.n_words,
             "offset": self.offset.tolist()}
        for name, _ in _ARRAYS:
            d[name] = getattr(self, name).tolist()
        d["cat_bitset"] = self.cat_bitset[self.is_categorical].ravel().tolist()
        return d

    @classmethod
    def from_json_dict(cls, d, n_nodes, where):
        """Read :meth:`to_json_dict`'s output (unknown keys refused); validate next."""
        if not isinstance(d, dict):
            raise ModelError(f"{where}: surrogates must be a JSON object")
        known = {"n_surrogates", "n_words", "offset", "cat_bitset"} | {n for n, _ in _ARRAYS}
        extra = sorted(set(d) - known)
        if extra:
            raise ModelError(f"{where}: surrogates: unknown field {extra[0]!r}")
        where = f"{where}: surrogates"
        n = read_int(d, "n_surrogates", where, 0, INT32_MAX)
        n_words = read_int(d, "n_words", where, 0, 1 << 12)
        arrays = {name: read_array(d, name, dtype, n, where) for name, dtype in _ARRAYS}
        offset = read_array(d, "offset", np.int32, n_nodes + 1, where)
        n_cat = int(np.count_nonzero(arrays["is_categorical"]))
        packed = read_array(d, "cat_bitset", np.uint32, n_cat * 2 * n_words, where)
        bits = np.zeros((n, 2 * n_words), np.uint32)
        bits[arrays["is_categorical"]] = packed.reshape(n_cat, 2 * n_words)
        return cls(offset, cat_bitset=bits, **arrays)
