"""One tree as flat arrays indexed by node id, checked structurally and against a
schema before any array reaches a kernel.

Root 0, children ids greater than their parent's, so a valid tree is acyclic and any
traversal ends within ``n_nodes`` steps.
"""
import numpy as np

from ..common import MAX_MAX_BIN
from ..errors import ModelError
from ..kernels import predict as _kp
from .fields import INT32_MAX, read_array, read_int

#: Widest categorical bitset: one bit per code of the widest ``max_bin``.
MAX_BITSET_WORDS = (MAX_MAX_BIN + 31) // 32
#: Upper bound on the bitset words (``sum of n_nodes * n_words``) of a model read from a
#: file (1 GiB of uint32).
MAX_BITSET_CELLS = 1 << 28
#: Upper bound on ``n_outputs`` read from a file.
MAX_OUTPUTS = 1 << 20

#: (name, dtype) of the per-node 1-D arrays, in file order.
_NODE_ARRAYS = (
    ("left", np.int32),
    ("right", np.int32),
    ("feature", np.int32),
    ("threshold", np.float64),
    ("bin_threshold", np.int32),
    ("default_left", np.bool_),
    ("is_categorical", np.bool_),
    ("gain", np.float64),
    ("cover", np.float64),
    ("n_samples", np.float64),
)


def coerce(name, a, dtype, ndim):
    """``a`` as a C-contiguous array of ``dtype`` if that loses nothing, else ModelError."""
    try:
        arr = np.asarray(a)
    except (ValueError, TypeError, OverflowError) as exc:
        raise ModelError(f"tree array {name!r} is not a numeric array: {exc}") from None
    dtype = np.dtype(dtype)
    kind = arr.dtype.kind
    if arr.ndim != ndim:
        raise ModelError(f"tree array {name!r} must have {ndim} dimension(s), "
                         f"got shape {arr.shape}")
    if arr.size == 0:
        return np.zeros(arr.shape, dtype=dtype)
    if dtype.kind == "f":
        ok = kind in "fiu"
    elif dtype.kind == "b":
        ok = kind == "b" or (kind in "iu" and bool(np.all((arr == 0) | (arr == 1))))
    else:  # integer targets
        info = np.iinfo(dtype)
        ok = kind in "iu" and int(arr.min()) >= info.min and int(arr.max()) <= info.max
    if not ok:
        raise ModelError(f"tree array {name!r} of dtype {arr.dtype} cannot be stored "
                         f"as {dtype} without loss")
    return np.ascontiguousarray(arr, dtype=dtype)


class Tree:
    """One decision tree as flat arrays indexed by node id.

    Parameters
    ----------
    left, right : array-like (n_nodes,) int32
        Children ids, -1 at leaves. Root is node 0 and children ids are greater than
        their parent's.
    feature : array-like (n_nodes,) int32
        Split feature, -1 at leaves.
    threshold : array-like (n_nodes,) float64
        Raw rule: ``x <= threshold`` goes left (numeric splits). Finite everywhere.
    value : array-like (n_nodes, n_outputs) or (n_nodes,) float64
        Node values; the leaves' are used for prediction.
    bin_threshold : array-like (n_nodes,) int32, optional
        Binned rule: ``code <= bin_threshold`` goes left; in ``[0, max_bin - 2]`` at
        numeric splits. Default 0.
    default_left : array-like (n_nodes,) bool, optional
        Missing values go left. Default False.
    is_categorical : array-like (n_nodes,) bool, optional
        The split is a category set. Default False.
    cat_bitset : array-like (n_nodes, n_words) uint32, optional
        Category codes in the set go left: code ``c`` is bit ``c % 32`` of word
        ``c // 32``. ``n_words`` may be 0 when no split is categorical. Default
        ``(n_nodes, 0)``.
    gain, cover, n_samples : array-like (n_nodes,) float64, optional
        Split gain (0 at leaves), sum of hessians or weights, number of training rows.
        Default 0.
    oblique : ObliqueSplits or None, optional
        Nodes that test a weighted sum of features (``model/oblique.py``).
    surrogates : Surrogates or None, optional
        Surrogate splits (``model/surrogates.py``): a row whose split value is missing
        follows the first surrogate it has a value for, else ``default_left``.

    Attributes are the arrays above, converted to the listed dtypes.
    """

    __slots__ = ("left", "right", "feature", "threshold", "bin_threshold", "default_left",
                 "is_categorical", "cat_bitset", "value", "gain", "cover", "n_samples",
                 "surrogates", "oblique")

    def __init__(self, left, right, feature, threshold, value, *, bin_threshold=None,
                 default_left=None, is_categorical=None, cat_bitset=None, gain=None,
                 cover=None, n_samples=None, surrogates=None, oblique=None):
        self.left = coerce("left", left, np.int32, 1)
        n_nodes = self.left.shape[0]
        given = {"right": right, "feature": feature, "threshold": threshold,
                 "bin_threshold": bin_threshold, "default_left": default_left,
                 "is_categorical": is_categorical, "gain": gain, "cover": cover,
                 "n_samples": n_samples}
        for name, dtype in _NODE_ARRAYS[1:]:
            a = given[name]
            setattr(self, name, np.zeros(n_nodes, dtype=dtype) if a is None
                    else coerce(name, a, dtype, 1))
        value = np.asarray(value)
        if value.ndim == 1:
            value = value.reshape(-1, 1)
        self.value = coerce("value", value, np.float64, 2)
        self.cat_bitset = (np.zeros((n_nodes, 0), dtype=np.uint32) if cat_bitset is None
                           else coerce("cat_bitset", cat_bitset, np.uint32, 2))
        self.surrogates = surrogates
        self.oblique = oblique

    # ------------------------------------------------------------------ shape
    @property
    def n_nodes(self):
        """Number of nodes (int)."""
        return int(self.left.shape[0])

    @property
    def n_leaves(self):
        """Number of leaves (int)."""
        return int(np.count_nonzero(self.left == -1))

    @property
    def n_outputs(self):
        """Columns of ``value`` (int)."""
        return int(self.value.shape[1])

    @property
    def n_words(self):
        """32-bit words per categorical bitset (int)."""
        return int(self.cat_bitset.shape[1])

    @property
    def depth(self):
        """Maximum leaf depth (int; a lone root leaf has depth 0)."""
        self._check_structure(shared_nodes=True)
        return _kp.compute_tree_depth(self.left.astype(np.int64), self.right.astype(np.int64))

    def __repr__(self):
        return (f"Tree(n_nodes={self.n_nodes}, n_leaves={self.n_leaves}, "
                f"n_outputs={self.n_outputs})")

    # ------------------------------------------------------------------ validation
    def _fail(self, tree_index, msg, node=None):
        where = "tree" if tree_index is None else f"tree {tree_index}"
        if node is not None:
            where += f", node {int(node)}"
        raise ModelError(f"{where}: {msg}")

    def _check_structure(self, tree_index=None, shared_nodes=False):
        """Shapes, dtypes and the parent/child invariants (everything traversal relies on).
        ``shared_nodes``: a node may have several parents (a decision stream's graph)."""
        fail = self._fail
        n = self.left.shape[0] if isinstance(self.left, np.ndarray) else 0
        if n < 1:
            fail(tree_index, "a tree needs at least one node")
        for name, dtype in _NODE_ARRAYS:
            a = getattr(self, name)
            if not isinstance(a, np.ndarray) or a.dtype != dtype or a.shape != (n,):
                fail(tree_index, f"{name} must be a ({n},) {np.dtype(dtype)} array, got "
                     f"{getattr(a, 'shape', type(a))} {getattr(a, 'dtype', '')}")
        for name, dtype in (("value", np.float64), ("cat_bitset", np.uint32)):
            a = getattr(self, name)
            if not isinstance(a, np.ndarray) or a.dtype != dtype or a.ndim != 2 \
                    or a.shape[0] != n:
                fail(tree_index, f"{name} must be a ({n}, k) {np.dtype(dtype)} array, got "
                     f"{getattr(a, 'shape', type(a))} {getattr(a, 'dtype', '')}")
        if self.value.shape[1] < 1:
            fail(tree_index, "value needs at least one column")
        left, right, feature = self.left, self.right, self.feature
        leaf_l, leaf_r = left == -1, right == -1
        bad = np.flatnonzero(leaf_l != leaf_r)
        if bad.size:
            fail(tree_index, f"one child is -1 and the other is not (left {left[bad[0]]}, "
                 f"right {right[bad[0]]})", bad[0])
        internal = ~leaf_l
        bad = np.flatnonzero(internal & (feature == -1))
        if bad.size:
            fail(tree_index, "internal node has feature -1", bad[0])
        bad = np.flatnonzero(leaf_l & (feature != -1))
        if bad.size:
            fail(tree_index, f"leaf has feature {feature[bad[0]]} (must be -1)", bad[0])
        ids = np.arange(n)
        for name, child in (("left", left), ("right", right)):
            bad = np.flatnonzero(internal & ((child < 1) | (child >= n)))
            if bad.size:
                fail(tree_index, f"{name} child {child[bad[0]]} is out of range [1, {n})",
                     bad[0])
            bad = np.flatnonzero(internal & (child <= ids))
            if bad.size:
                fail(tree_index, f"{name} child {child[bad[0]]} is not greater than the "
                     f"node id (self-loop or cycle)", bad[0])
        bad = np.flatnonzero(internal & (left == right))
        if bad.size:
            fail(tree_index, f"both children are node {left[bad[0]]}", bad[0])
        n_parents = np.bincount(np.concatenate((left[internal], right[internal])),
                                minlength=n)
        bad = np.flatnonzero((n_parents[1:] < 1) if shared_nodes else (n_parents[1:] != 1))
        if bad.size:
            j = bad[0] + 1
            fail(tree_index, f"has {n_parents[j]} parents (every non-root node needs "
                 f"{'one or more' if shared_nodes else 'exactly one'})", j)

    def validate(self, n_features, max_bin=None, *, tree_index=None, code_span=None,
                 shared_nodes=False, feature_types=None):
        """Raise ModelError naming the tree and node for any violated invariant.

        Parameters
        ----------
        n_features : int
            Features of the model; split features must be in ``[0, n_features)``.
        max_bin : int or None
            Codes per feature (missing code included); bin thresholds of numeric splits
            must be in ``[0, max_bin - 2]`` and bitsets at most ``ceil(max_bin / 32)``
            words. None: only the absolute limits (``MAX_MAX_BIN``) are checked.
        tree_index : int or None
            Named in error messages.
        code_span : int or None
            Codes of the widest categorical feature (its ``n_value_bins`` when it is
            wide, see ``common.category_value_bins``); bitsets may take
            ``ceil(max(max_bin, code_span) / 32)`` words.
        shared_nodes : bool
            Allow nodes with several parents (decision streams); still acyclic, as
            children ids exceed their parents'.
        feature_types : list of str or None
            The model's; oblique splits must combine numeric features.

        Returns
        -------
        self
        """
        fail = self._fail
        self._check_structure(tree_index, shared_nodes)
        internal = self.left != -1
        feature = self.feature
        bad = np.flatnonzero(internal & ((feature < 0) | (feature >= n_features)))
        if bad.size:
            fail(tree_index, f"feature {feature[bad[0]]} is out of range "
                 f"[0, {n_features})", bad[0])
        for name in ("threshold", "gain", "cover", "n_samples"):
            bad = np.flatnonzero(~np.isfinite(getattr(self, name)))
            if bad.size:
                fail(
                    tree_index,
                    f"{name} {float(getattr(self, name)[bad[0]])!r} is not finite",
                    bad[0],
                )
        bad = np.flatnonzero(~np.all(np.isfinite(self.value), axis=1))
        if bad.size:
            fail(tree_index, "value is not finite", bad[0])
        top_bin = (MAX_MAX_BIN if max_bin is None else int(max_bin)) - 2
        numeric = internal & ~self.is_categorical
        bt = self.bin_threshold
        bad = np.flatnonzero(numeric & ((bt < 0) | (bt > top_bin)))
        if bad.size:
            fail(tree_index, f"bin threshold {bt[bad[0]]} is outside [0, {top_bin}]", bad[0])
        categorical = internal & self.is_categorical
        span = MAX_MAX_BIN if max_bin is None else max(int(max_bin), int(code_span or 0))
        max_words = (span + 31) // 32
        if self.n_words > max_words:
            fail(tree_index, f"categorical bitsets have {self.n_words} words, more than the "
                 f"{max_words} that max_bin={max_bin} and categorical features of up to "
                 f"{span} codes need")
        bad = np.flatnonzero(categorical)
        if bad.size and self.n_words == 0:
            fail(tree_index, "categorical split but the bitsets have 0 words", bad[0])
        self._validate_parts(n_features, max_bin, tree_index, feature_types)
        return self

    def _validate_parts(self, n_features, max_bin, tree_index, feature_types):
        """The optional surrogate and oblique parts, against this tree."""
        def fail(msg, node):
            self._fail(tree_index, msg, node)

        if self.surrogates is not None:
            self.surrogates.validate(self, n_features, MAX_MAX_BIN if max_bin is None
                                     else int(max_bin), fail)
        if self.oblique is not None:
            self.oblique.validate(self, n_features, feature_types, fail)

    # ------------------------------------------------------------------ JSON
    def to_json_dict(self):
        """JSON-able dict; bitsets are stored only for categorical split nodes."""
        cat_rows = (self.left != -1) & self.is_categorical
        d = {"n_nodes": self.n_nodes, "n_outputs": self.n_outputs, "n_words": self.n_words}
        for name, _ in _NODE_ARRAYS:
            d[name] = getattr(self, name).tolist()
        d["cat_bitset"] = self.cat_bitset[cat_rows].ravel().tolist()
        d["value"] = self.value.ravel().tolist()
        if self.surrogates is not None:
            d["surrogates"] = self.surrogates.to_json_dict()
        if self.oblique is not None:
            d["oblique"] = self.oblique.to_json_dict()
        return d

    @classmethod
    def from_json_dict(cls, d, where="tree"):
        """Build a Tree from :meth:`to_json_dict` output, checking types and lengths.

        Non-categorical rows of ``cat_bitset`` are zero. Call :meth:`validate` next.
        """
        def fail(msg):
            raise ModelError(f"{where}: {msg}")

        if not isinstance(d, dict):
            fail(f"must be a JSON object, got {type(d).__name__}")
        n_nodes = read_int(d, "n_nodes", where, 1, INT32_MAX)
        n_outputs = read_int(d, "n_outputs", where, 1, MAX_OUTPUTS)
        n_words = read_int(d, "n_words", where, 0, MAX_BITSET_WORDS)
        if n_nodes * n_words > MAX_BITSET_CELLS:
            fail(f"n_nodes * n_words = {n_nodes * n_words} exceeds {MAX_BITSET_CELLS}")
        arrays = {}
        for name, dtype in _NODE_ARRAYS:
            arrays[name] = read_array(d, name, dtype, n_nodes, where)
        value = read_array(d, "value", np.float64, n_nodes * n_outputs, where)
        cat_rows = (arrays["left"] != -1) & arrays["is_categorical"]
        n_cat = int(np.count_nonzero(cat_rows))
        packed = read_array(d, "cat_bitset", np.uint32, n_cat * n_words, where)
        cat_bitset = np.zeros((n_nodes, n_words), dtype=np.uint32)
        cat_bitset[cat_rows] = packed.reshape(n_cat, n_words)
        surrogates = None
        if d.get("surrogates") is not None:
            from .surrogates import Surrogates

            surrogates = Surrogates.from_json_dict(d["surrogates"], n_nodes, where)
        oblique = None
        if d.get("oblique") is not None:
            from .oblique import ObliqueSplits

            oblique = ObliqueSplits.from_json_dict(d["oblique"], n_nodes, where)
        return cls(arrays.pop("left"), arrays.pop("right"), arrays.pop("feature"),
                   arrays.pop("threshold"), value.reshape(n_nodes, n_outputs),
                   cat_bitset=cat_bitset, surrogates=surrogates, oblique=oblique,
                   **arrays)


def _sibling_numbered(tree):
    """``(arrays, old_of_new)``: the tree's per-node arrays renumbered so that each
    split's right child is ``left + 1`` (``old_of_new`` None when they already are)."""
    names = ("left", "right", "feature", "bin_threshold", "default_left", "is_categorical")
    arrays = {name: getattr(tree, name) for name in names}
    arrays["cat_bitset"] = tree.cat_bitset
    split = tree.left >= 0
    if np.array_equal(tree.right[split], tree.left[split] + 1):
        return arrays, None
    new_of_old = _kp.sibling_order(tree.left.astype(np.int64), tree.right.astype(np.int64))
    old_of_new = np.argsort(new_of_old)
    out = {name: np.asarray(a)[old_of_new] for name, a in arrays.items()}
    inner = out["left"] >= 0
    out["left"] = np.where(inner, new_of_old[np.maximum(out["left"], 0)], -1).astype(np.int32)
    out["right"] = np.where(inner, out["left"] + 1, -1).astype(np.int32)
    return out, old_of_new


def binned_leaves(trees, codes, missing_bin):
    """(n_trees, n_rows) int32: the leaf each row of bin ``codes`` (n_features, n_rows,
    the trees' own bins) reaches in each tree, as the tree numbers its nodes. Oblique and
    surrogate splits are not followed."""
    from ..kernels.partition import pack_routes, route_to_leaves

    numbered = [_sibling_numbered(t) for t in trees]
    capacity = max(t.n_nodes for t in trees)
    n_words = max(max(t.n_words for t in trees), 1)

    def padded(name, fill, dtype):
        out = np.full((len(trees), capacity), fill, dtype)
        for i, (arrays, _) in enumerate(numbered):
            out[i, :len(arrays[name])] = arrays[name]
        return out

    route = pack_routes(padded("left", -1, np.int32), padded("right", -1, np.int32),
                        padded("feature", 0, np.int32), padded("bin_threshold", 0, np.int32),
                        padded("default_left", False, bool),
                        padded("is_categorical", False, bool))
    bits = np.zeros((len(trees), capacity, n_words), np.uint32)
    for i, (arrays, _) in enumerate(numbered):
        words = arrays["cat_bitset"]
        if words.size:
            bits[i, :words.shape[0], :words.shape[1]] = words
    node_of_row = np.zeros((len(trees), codes.shape[1]), np.int32)
    route_to_leaves(codes, node_of_row, np.ascontiguousarray(route), bits, int(missing_bin))
    for i, (_, old_of_new) in enumerate(numbered):
        if old_of_new is not None:
            node_of_row[i] = old_of_new[node_of_row[i]]
    return node_of_row
