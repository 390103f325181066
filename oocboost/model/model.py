"""Tree ensembles as flat arrays, their safe versioned JSON format, and prediction.

A :class:`Tree` is a set of arrays indexed by node id (root 0, children ids greater than
their parent's, so a valid tree is acyclic and any traversal ends within ``n_nodes``
steps). A :class:`Model` is a list of trees plus how their outputs combine:

* ``tree_group[t]``: the output tree ``t`` adds to (its ``value`` has one column), or -1
  when its ``value`` has ``n_outputs`` columns and column ``k`` adds to output ``k`` (a
  multi-output forest tree);
* ``tree_weight[t]``: multiplies the tree's leaf values;
* ``aggregation``, over the trees ``T`` of the iteration range, with
  ``T_k = {t in T : tree_group[t] in (k, -1)}``::

      "sum":   margin[i, k] = base_margin[k] + sum_{t in T_k} w_t * v_t(x_i)[k]
      "mean":  margin[i, k] = base_margin[k] + (sum_{t in T_k} w_t * v_t(x_i)[k]) / W_k,
               W_k = sum_{t in T_k} w_t  (no division when W_k == 0)

  where ``v_t(x)[k]`` is column ``k`` of the reached leaf's value (column 0 for a tree of
  group ``k``). Boosting uses "sum" with weights 1 (the learning rate is in the leaf
  values); a random forest uses "mean" with weights 1 and base 0 (the average of its
  trees); AdaBoost can use "mean" with its estimator weights (scikit-learn's
  ``decision_function``) or "sum".

Sums are taken tree by tree in tree order, starting from ``base_margin`` for "sum" and
from 0 for "mean", so the naive loop in the tests reproduces them bit for bit.

The output transform (sigmoid, softmax, ...) is not applied here: ``Model.objective_name``
tells the caller which one to use.

The file format is JSON (never pickle)::

    {"format": "oocboost-model", "format_version": 1, "learner": ..., "objective": ...,
     "trees": [{"n_nodes": n, "n_outputs": k, "n_words": w, "left": [...], ...}], ...}

Loading validates everything before any array reaches a kernel; every problem raises
:class:`~oocboost.errors.ModelError` naming the file and what is wrong.
"""
import json
import math
import os
import tempfile
from contextlib import contextmanager

import numba
import numpy as np

from ..common import MAX_MAX_BIN, NODE_DTYPE, X_DTYPE
from ..errors import ModelError, ParameterError
from ..kernels import predict as _kp

FORMAT = "oocboost-model"
FORMAT_VERSION = 1
#: Model files larger than this are refused unless ``load_model(max_bytes=...)`` says so.
MAX_MODEL_BYTES = 2 << 30
#: Widest categorical bitset: one bit per code of the widest ``max_bin``.
MAX_BITSET_WORDS = (MAX_MAX_BIN + 31) // 32
#: Upper bound on the bitset words (``sum of n_nodes * n_words``) of a model read from a
#: file (1 GiB of uint32).
MAX_BITSET_CELLS = 1 << 28
#: Upper bound on ``n_outputs`` read from a file.
MAX_OUTPUTS = 1 << 20
AGGREGATIONS = ("sum", "mean")
IMPORTANCE_TYPES = ("weight", "gain", "total_gain", "cover", "total_cover")

_INT32_MIN, _INT32_MAX = np.iinfo(np.int32).min, np.iinfo(np.int32).max

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


def _coerce(name, a, dtype, ndim):
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

    Attributes are the arrays above, converted to the listed dtypes.
    """

    __slots__ = ("left", "right", "feature", "threshold", "bin_threshold", "default_left",
                 "is_categorical", "cat_bitset", "value", "gain", "cover", "n_samples")

    def __init__(self, left, right, feature, threshold, value, *, bin_threshold=None,
                 default_left=None, is_categorical=None, cat_bitset=None, gain=None,
                 cover=None, n_samples=None):
        self.left = _coerce("left", left, np.int32, 1)
        n_nodes = self.left.shape[0]
        given = {"right": right, "feature": feature, "threshold": threshold,
                 "bin_threshold": bin_threshold, "default_left": default_left,
                 "is_categorical": is_categorical, "gain": gain, "cover": cover,
                 "n_samples": n_samples}
        for name, dtype in _NODE_ARRAYS[1:]:
            a = given[name]
            setattr(self, name, np.zeros(n_nodes, dtype=dtype) if a is None
                    else _coerce(name, a, dtype, 1))
        value = np.asarray(value)
        if value.ndim == 1:
            value = value.reshape(-1, 1)
        self.value = _coerce("value", value, np.float64, 2)
        self.cat_bitset = (np.zeros((n_nodes, 0), dtype=np.uint32) if cat_bitset is None
                           else _coerce("cat_bitset", cat_bitset, np.uint32, 2))

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
        self._check_structure()
        return _kp.compute_tree_depth(self.left.astype(np.int64), self.right.astype(np.int64))

    def __repr__(self):
        return f"Tree(n_nodes={self.n_nodes}, n_leaves={self.n_leaves}, n_outputs={self.n_outputs})"

    # ------------------------------------------------------------------ validation
    def _fail(self, tree_index, msg, node=None):
        where = "tree" if tree_index is None else f"tree {tree_index}"
        if node is not None:
            where += f", node {int(node)}"
        raise ModelError(f"{where}: {msg}")

    def _check_structure(self, tree_index=None):
        """Shapes, dtypes and the parent/child invariants (everything traversal relies on)."""
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
        bad = np.flatnonzero(n_parents[1:] != 1)
        if bad.size:
            j = bad[0] + 1
            fail(tree_index, f"has {n_parents[j]} parents (every non-root node needs "
                 f"exactly one)", j)

    def validate(self, n_features, max_bin=None, *, tree_index=None):
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

        Returns
        -------
        self
        """
        fail = self._fail
        self._check_structure(tree_index)
        internal = self.left != -1
        feature = self.feature
        bad = np.flatnonzero(internal & ((feature < 0) | (feature >= n_features)))
        if bad.size:
            fail(tree_index, f"feature {feature[bad[0]]} is out of range "
                 f"[0, {n_features})", bad[0])
        for name in ("threshold", "gain", "cover", "n_samples"):
            bad = np.flatnonzero(~np.isfinite(getattr(self, name)))
            if bad.size:
                fail(tree_index, f"{name} {float(getattr(self, name)[bad[0]])!r} is not finite",
                     bad[0])
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
        max_words = (MAX_MAX_BIN if max_bin is None else int(max_bin)) + 31
        max_words //= 32
        if self.n_words > max_words:
            fail(tree_index, f"categorical bitsets have {self.n_words} words, more than the "
                 f"{max_words} that max_bin={max_bin} needs")
        bad = np.flatnonzero(categorical)
        if bad.size and self.n_words == 0:
            fail(tree_index, "categorical split but the bitsets have 0 words", bad[0])
        return self

    # ------------------------------------------------------------------ JSON
    def to_json_dict(self):
        """JSON-able dict; bitsets are stored only for categorical split nodes."""
        cat_rows = (self.left != -1) & self.is_categorical
        d = {"n_nodes": self.n_nodes, "n_outputs": self.n_outputs, "n_words": self.n_words}
        for name, _ in _NODE_ARRAYS:
            d[name] = getattr(self, name).tolist()
        d["cat_bitset"] = self.cat_bitset[cat_rows].ravel().tolist()
        d["value"] = self.value.ravel().tolist()
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
        n_nodes = _read_int(d, "n_nodes", where, 1, _INT32_MAX)
        n_outputs = _read_int(d, "n_outputs", where, 1, MAX_OUTPUTS)
        n_words = _read_int(d, "n_words", where, 0, MAX_BITSET_WORDS)
        if n_nodes * n_words > MAX_BITSET_CELLS:
            fail(f"n_nodes * n_words = {n_nodes * n_words} exceeds {MAX_BITSET_CELLS}")
        arrays = {}
        for name, dtype in _NODE_ARRAYS:
            arrays[name] = _read_array(d, name, dtype, n_nodes, where)
        value = _read_array(d, "value", np.float64, n_nodes * n_outputs, where)
        cat_rows = (arrays["left"] != -1) & arrays["is_categorical"]
        n_cat = int(np.count_nonzero(cat_rows))
        packed = _read_array(d, "cat_bitset", np.uint32, n_cat * n_words, where)
        cat_bitset = np.zeros((n_nodes, n_words), dtype=np.uint32)
        cat_bitset[cat_rows] = packed.reshape(n_cat, n_words)
        return cls(arrays.pop("left"), arrays.pop("right"), arrays.pop("feature"),
                   arrays.pop("threshold"), value.reshape(n_nodes, n_outputs),
                   cat_bitset=cat_bitset, **arrays)


# ---------------------------------------------------------------------- JSON readers


def _read_int(d, key, where, lo, hi, optional=False):
    if key not in d:
        if optional:
            return None
        raise ModelError(f"{where}: missing key {key!r}")
    v = d[key]
    if optional and v is None:
        return None
    if not isinstance(v, int) or isinstance(v, bool):
        raise ModelError(f"{where}: {key!r} must be an integer, got {type(v).__name__}")
    if not lo <= v <= hi:
        raise ModelError(f"{where}: {key!r} = {v} is outside [{lo}, {hi}]")
    return v


def _read_typed(d, key, types, where, optional=False):
    if key not in d:
        if optional:
            return None
        raise ModelError(f"{where}: missing key {key!r}")
    v = d[key]
    if optional and v is None:
        return None
    if not isinstance(v, types) or isinstance(v, bool) and bool not in types:
        names = "/".join(t.__name__ for t in types)
        raise ModelError(f"{where}: {key!r} must be {names}, got {type(v).__name__}")
    return v


def _read_array(d, key, dtype, length, where):
    """A JSON list as an array of ``dtype`` with exactly ``length`` items, or ModelError."""
    lst = _read_typed(d, key, (list,), where)
    if len(lst) != length:
        raise ModelError(f"{where}: {key!r} has {len(lst)} items, expected {length}")
    dtype = np.dtype(dtype)
    if length == 0:
        return np.zeros(0, dtype=dtype)
    try:
        arr = np.asarray(lst)
    except (ValueError, TypeError, OverflowError):
        arr = None
    kind = None if arr is None or arr.ndim != 1 else arr.dtype.kind
    if dtype.kind == "b":
        ok = kind == "b"
    elif dtype.kind == "f":
        ok = kind in ("f", "i")
    else:
        info = np.iinfo(dtype)
        ok = kind == "i" and int(arr.min()) >= info.min and int(arr.max()) <= info.max
    if not ok:
        raise ModelError(f"{where}: {key!r} must be a list of "
                         f"{'booleans' if dtype.kind == 'b' else dtype.name} values")
    arr = arr.astype(dtype)
    if dtype.kind == "f" and not np.all(np.isfinite(arr)):
        raise ModelError(f"{where}: {key!r} holds a non-finite number")
    return arr


def _jsonable(obj, path):
    """Free-form params/attributes as plain JSON: numpy scalars and arrays become Python
    numbers and lists, tuples lists, and non-finite floats ``null`` (JSON has no NaN)."""
    if obj is None or isinstance(obj, (bool, str)):
        return obj
    if isinstance(obj, (int, np.integer)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        v = float(obj)
        return v if math.isfinite(v) else None
    if isinstance(obj, np.bool_):
        return bool(obj)
    if isinstance(obj, np.ndarray):
        return _jsonable(obj.tolist(), path)
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v, f"{path}[{i}]") for i, v in enumerate(obj)]
    if isinstance(obj, dict):
        out = {}
        for k, v in obj.items():
            if not isinstance(k, str):
                raise ModelError(f"{path}: key {k!r} is not a string and cannot be saved "
                                 f"as JSON")
            out[k] = _jsonable(v, f"{path}[{k!r}]")
        return out
    raise ModelError(f"{path}: a {type(obj).__name__} cannot be saved as JSON")


def _finite_float(text):
    v = float(text)
    if not math.isfinite(v):
        raise ValueError(f"number {text} overflows float64")
    return v


def _reject_constant(name):
    raise ValueError(f"{name} is not valid JSON")


@contextmanager
def _num_threads(n_threads):
    """Run numba parallel kernels with ``n_threads`` threads, restoring the setting."""
    if n_threads is None:
        yield
        return
    if not isinstance(n_threads, (int, np.integer)) or isinstance(n_threads, bool) \
            or n_threads < 1:
        raise ParameterError(f"n_threads must be a positive integer or None, got {n_threads!r}")
    old = numba.get_num_threads()
    numba.set_num_threads(min(int(n_threads), numba.config.NUMBA_NUM_THREADS))
    try:
        yield
    finally:
        numba.set_num_threads(old)


# ---------------------------------------------------------------------- Model


def source_attributes(cache):
    """Attributes every model trained from ``cache`` records: the label column's name, so
    ``evaluate`` on a raw file knows which column holds the labels."""
    manifest = getattr(cache, "manifest", None) or {}
    return {"label": manifest.get("label")}


class Model:
    """A tree ensemble: trees, how they combine, the feature schema and training metadata.

    Parameters
    ----------
    trees : sequence of Tree
    tree_group : array-like (n_trees,) int32, optional
        Output each tree adds to, or -1 for all outputs. Default 0 for every tree.
    tree_weight : array-like (n_trees,) float64, optional
        Default 1.
    base_margin : array-like (n_outputs,) float64, optional
        Default 0.
    n_outputs : int
        Margin columns (1, or K for multiclass).
    objective : str
        Objective name (``Model.objective_name``); the caller maps margins to predictions.
    objective_params : dict, optional
    learner : str
        "gbtree", "random_forest", "extra_trees", "decision_tree", "adaboost", ...
    aggregation : {"sum", "mean"}
        See the module docstring.
    trees_per_round : int
        Trees added per boosting round (``iteration_range`` counts rounds).
    feature_names : list of str, optional
        Default ``f0 .. f{n_features-1}`` (then ``n_features`` is required).
    feature_types : list of str, optional
        "numeric" or "categorical" per feature. Default all "numeric".
    bin_mapper : dict or None
        ``BinMapper.to_dict()``, kept opaque; its ``max_bin`` (if any) bounds the bin
        thresholds.
    params : dict, optional
        Training parameters.
    best_iteration : int or None
        Best boosting round (0-based) found by early stopping.
    n_classes : int or None
    classes : list or None
        Class labels (JSON scalars).
    attributes : dict, optional
        Free JSON-able metadata (evals_result, estimator weights, OOB score, ...).
    n_features : int, optional
        Only when ``feature_names`` is None.
    """

    def __init__(self, trees=(), *, tree_group=None, tree_weight=None, base_margin=None,
                 n_outputs=1, objective="", objective_params=None, learner="gbtree",
                 aggregation="sum", trees_per_round=1, feature_names=None,
                 feature_types=None, bin_mapper=None, params=None, best_iteration=None,
                 n_classes=None, classes=None, attributes=None, n_features=None):
        self.trees = list(trees)
        n_trees = len(self.trees)
        self.n_outputs = n_outputs
        self.tree_group = (np.zeros(n_trees, dtype=np.int32) if tree_group is None
                           else _coerce("tree_group", tree_group, np.int32, 1))
        self.tree_weight = (np.ones(n_trees, dtype=np.float64) if tree_weight is None
                            else _coerce("tree_weight", tree_weight, np.float64, 1))
        self.base_margin = (np.zeros(int(n_outputs), dtype=np.float64) if base_margin is None
                            else _coerce("base_margin", np.atleast_1d(base_margin),
                                         np.float64, 1))
        self.objective = objective
        self.objective_params = {} if objective_params is None else objective_params
        self.learner = learner
        self.aggregation = aggregation
        self.trees_per_round = trees_per_round
        if feature_names is None:
            if n_features is None:
                raise ModelError("give feature_names or n_features")
            feature_names = [f"f{j}" for j in range(int(n_features))]
        self.feature_names = list(feature_names)
        self.feature_types = (["numeric"] * len(self.feature_names) if feature_types is None
                              else list(feature_types))
        self.bin_mapper = bin_mapper
        self.params = {} if params is None else params
        self.best_iteration = best_iteration
        self.n_classes = n_classes
        self.classes = classes
        self.attributes = {} if attributes is None else attributes
        self._flat = None
        self._flat_key = None

    # ------------------------------------------------------------------ properties
    @property
    def n_trees(self):
        return len(self.trees)

    @property
    def n_rounds(self):
        """Boosting rounds: ``n_trees // trees_per_round``."""
        return len(self.trees) // int(self.trees_per_round)

    @property
    def n_features(self):
        return len(self.feature_names)

    @property
    def objective_name(self):
        return self.objective

    @property
    def max_bin(self):
        """``bin_mapper["max_bin"]`` when the bin mapper dict has an integer one, else None."""
        if isinstance(self.bin_mapper, dict):
            mb = self.bin_mapper.get("max_bin")
            if isinstance(mb, (int, np.integer)) and not isinstance(mb, bool):
                return int(mb)
        return None

    def __repr__(self):
        return (f"Model(learner={self.learner!r}, objective={self.objective!r}, "
                f"n_trees={self.n_trees}, n_outputs={self.n_outputs}, "
                f"n_features={self.n_features})")

    def add_tree(self, tree, group=0, weight=1.0):
        """Append one tree adding to output ``group`` (-1: all outputs) with ``weight``."""
        self.trees.append(tree)
        self.tree_group = np.append(self.tree_group, np.int32(group)).astype(np.int32)
        self.tree_weight = np.append(self.tree_weight, float(weight))
        return self

    # ------------------------------------------------------------------ building
    @classmethod
    def empty_boosted(cls, objective, base_margin, cache, params, trees_per_round=1):
        """An empty "gbtree" model over ``cache``'s features, for boosting to fill.

        Parameters
        ----------
        objective : Objective
            Its ``name``, ``params`` and ``n_outputs`` are recorded.
        base_margin : array-like (n_outputs,) float64
        cache : Cache
            Gives ``feature_names`` and the ``bin_mapper`` (saved as its ``to_dict()``).
        params : dict
            Training parameters; entries that are not JSON-able are left out.
        trees_per_round : int
        """
        mapper = cache.bin_mapper
        kept = {}
        for k, v in dict(params).items():
            try:
                kept[str(k)] = _jsonable(v, k)
            except ModelError:
                pass
        n_classes = getattr(objective, "params", {}).get("num_class")
        return cls([], n_outputs=int(objective.n_outputs), base_margin=base_margin,
                   objective=objective.name,
                   objective_params=_jsonable(dict(getattr(objective, "params", {})),
                                              "objective_params"),
                   learner="gbtree", aggregation="sum", trees_per_round=trees_per_round,
                   feature_names=list(cache.feature_names),
                   feature_types=list(mapper.feature_types), bin_mapper=mapper.to_dict(),
                   params=kept, n_classes=None if n_classes is None else int(n_classes),
                   attributes=source_attributes(cache))

    def add_round(self, trees, weights=None):
        """Append one round of ``trees_per_round`` trees.

        Parameters
        ----------
        trees : list of Tree or of dicts of Tree arrays (``Tree(**d)``)
            Tree ``c`` adds to output ``c``; a tree whose value has ``n_outputs > 1``
            columns adds to all outputs (group -1).
        weights : list of float, optional
            Default 1.
        """
        trees = [t if isinstance(t, Tree) else Tree(**t) for t in trees]
        if len(trees) != int(self.trees_per_round):
            raise ModelError(f"a round has {self.trees_per_round} trees, got {len(trees)}")
        n_outputs = int(self.n_outputs)
        for c, tree in enumerate(trees):
            group = -1 if (n_outputs > 1 and tree.n_outputs == n_outputs) else c % n_outputs
            self.add_tree(tree, group, 1.0 if weights is None else weights[c])
        return self

    def extend_from(self, other):
        """Append ``other``'s trees (same outputs and round size), e.g. an ``init_model``."""
        if int(other.n_outputs) != int(self.n_outputs) or \
                int(other.trees_per_round) != int(self.trees_per_round):
            raise ModelError(f"cannot continue a model with {other.n_outputs} outputs and "
                             f"{other.trees_per_round} trees per round into one with "
                             f"{self.n_outputs} and {self.trees_per_round}")
        if list(other.feature_names) != list(self.feature_names):
            raise ModelError("cannot continue a model trained on other features")
        self.trees.extend(other.trees)
        self.tree_group = np.concatenate((self.tree_group, other.tree_group)).astype(np.int32)
        self.tree_weight = np.concatenate((self.tree_weight, other.tree_weight))
        return self

    def slice_rounds(self, start, end):
        """A new Model with rounds ``[start, end)`` (trees shared, metadata copied)."""
        t0, t1 = self._tree_range((start, end))
        if end == 0:
            end = self.n_rounds
        bi = self.best_iteration
        return Model(
            self.trees[t0:t1], tree_group=self.tree_group[t0:t1].copy(),
            tree_weight=self.tree_weight[t0:t1].copy(), base_margin=self.base_margin.copy(),
            n_outputs=self.n_outputs, objective=self.objective,
            objective_params=dict(self.objective_params), learner=self.learner,
            aggregation=self.aggregation, trees_per_round=self.trees_per_round,
            feature_names=list(self.feature_names), feature_types=list(self.feature_types),
            bin_mapper=self.bin_mapper, params=dict(self.params),
            best_iteration=bi - start if bi is not None and start <= bi < end else None,
            n_classes=self.n_classes,
            classes=None if self.classes is None else list(self.classes),
            attributes=dict(self.attributes))

    # Training metadata kept in ``attributes`` so that it is saved with the model.
    best_score = property(lambda self: self.attributes.get("best_score"),
                          lambda self, v: self.attributes.__setitem__("best_score", v),
                          doc="Best evaluation score of early stopping (saved in attributes).")
    evals_result = property(lambda self: self.attributes.get("evals_result"),
                            lambda self, v: self.attributes.__setitem__("evals_result", v),
                            doc="Evaluation log {data: {metric: [floats]}} (saved in "
                                "attributes).")
    training_log = property(lambda self: self.attributes.get("training_log"),
                            lambda self, v: self.attributes.__setitem__("training_log", v),
                            doc="Training telemetry dict (saved in attributes).")

    def invalidate_cache(self):
        """Drop the flattened trees; needed only after editing a tree's arrays in place."""
        self._flat = None
        self._flat_key = None

    # ------------------------------------------------------------------ validation
    def validate(self):
        """Check every field and every tree; raise ModelError naming what is wrong.

        Returns
        -------
        self
        """
        def fail(msg):
            raise ModelError(msg)

        for key in ("n_outputs", "trees_per_round"):
            v = getattr(self, key)
            if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < 1:
                fail(f"{key} must be a positive integer, got {v!r}")
        if self.n_outputs > MAX_OUTPUTS:
            fail(f"n_outputs = {self.n_outputs} exceeds {MAX_OUTPUTS}")
        if self.aggregation not in AGGREGATIONS:
            fail(f"aggregation must be one of {AGGREGATIONS}, got {self.aggregation!r}")
        for key in ("objective", "learner"):
            if not isinstance(getattr(self, key), str):
                fail(f"{key} must be a string, got {getattr(self, key)!r}")
        for key in ("objective_params", "params", "attributes"):
            if not isinstance(getattr(self, key), dict):
                fail(f"{key} must be a dict, got {type(getattr(self, key)).__name__}")
        if self.bin_mapper is not None and not isinstance(self.bin_mapper, dict):
            fail(f"bin_mapper must be a dict (BinMapper.to_dict()) or None, got "
                 f"{type(self.bin_mapper).__name__}")
        n_trees = len(self.trees)
        if n_trees % int(self.trees_per_round):
            fail(f"{n_trees} trees is not a whole number of rounds of "
                 f"{self.trees_per_round} trees")
        for key, dtype in (("tree_group", np.int32), ("tree_weight", np.float64)):
            a = getattr(self, key)
            if not isinstance(a, np.ndarray) or a.dtype != dtype or a.shape != (n_trees,):
                fail(f"{key} must be a ({n_trees},) {np.dtype(dtype)} array, got "
                     f"{getattr(a, 'shape', type(a))}")
        if not isinstance(self.base_margin, np.ndarray) or self.base_margin.dtype != X_DTYPE \
                or self.base_margin.shape != (self.n_outputs,):
            fail(f"base_margin must be a ({self.n_outputs},) float64 array")
        if not np.all(np.isfinite(self.base_margin)):
            fail("base_margin is not finite")
        bad = np.flatnonzero(~np.isfinite(self.tree_weight))
        if bad.size:
            fail(f"tree {bad[0]}: weight {float(self.tree_weight[bad[0]])!r} is not finite")
        bad = np.flatnonzero((self.tree_group < -1) | (self.tree_group >= self.n_outputs))
        if bad.size:
            fail(f"tree {bad[0]}: group {self.tree_group[bad[0]]} is outside "
                 f"[-1, {self.n_outputs})")
        names, types = self.feature_names, self.feature_types
        if not all(isinstance(s, str) for s in names):
            fail("feature_names must be strings")
        if len(set(names)) != len(names):
            fail("feature_names has duplicates")
        if len(types) != len(names) or not all(isinstance(s, str) for s in types):
            fail(f"feature_types must be {len(names)} strings")
        bi = self.best_iteration
        if bi is not None and (not isinstance(bi, (int, np.integer)) or isinstance(bi, bool)
                               or not 0 <= bi < max(self.n_rounds, 1)):
            fail(f"best_iteration {bi!r} is not a round in [0, {self.n_rounds})")
        nc = self.n_classes
        if nc is not None and (not isinstance(nc, (int, np.integer)) or isinstance(nc, bool)
                               or nc < 0):
            fail(f"n_classes must be a non-negative integer or None, got {nc!r}")
        if self.classes is not None:
            if not isinstance(self.classes, list) or not all(
                    isinstance(c, (str, int, float, bool)) for c in self.classes):
                fail("classes must be a list of strings or numbers")
            if nc is not None and len(self.classes) != nc:
                fail(f"{len(self.classes)} classes listed but n_classes = {nc}")
        max_bin = self.max_bin
        for t, tree in enumerate(self.trees):
            if not isinstance(tree, Tree):
                fail(f"tree {t} is a {type(tree).__name__}, not a Tree")
            tree.validate(self.n_features, max_bin, tree_index=t)
            want = 1 if self.tree_group[t] >= 0 else self.n_outputs
            if tree.n_outputs != want:
                fail(f"tree {t}: value has {tree.n_outputs} columns, expected {want} "
                     f"(group {self.tree_group[t]})")
        return self

    # ------------------------------------------------------------------ JSON
    def to_json_dict(self):
        """The model as a JSON-able dict (``format``, ``format_version``, fields, trees)."""
        return {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "learner": self.learner,
            "objective": self.objective,
            "objective_params": _jsonable(self.objective_params, "objective_params"),
            "aggregation": self.aggregation,
            "n_outputs": int(self.n_outputs),
            "trees_per_round": int(self.trees_per_round),
            "base_margin": self.base_margin.tolist(),
            "tree_group": self.tree_group.tolist(),
            "tree_weight": self.tree_weight.tolist(),
            "best_iteration": None if self.best_iteration is None else int(self.best_iteration),
            "n_classes": None if self.n_classes is None else int(self.n_classes),
            "classes": _jsonable(self.classes, "classes"),
            "feature_names": list(self.feature_names),
            "feature_types": list(self.feature_types),
            "bin_mapper": _jsonable(self.bin_mapper, "bin_mapper"),
            "params": _jsonable(self.params, "params"),
            "attributes": _jsonable(self.attributes, "attributes"),
            "trees": [tree.to_json_dict() for tree in self.trees],
        }

    @classmethod
    def from_json_dict(cls, doc, source="<dict>"):
        """Build and validate a Model from :meth:`to_json_dict` output.

        Parameters
        ----------
        doc : dict
        source : str
            Named in error messages (the file path for :func:`load_model`).

        Raises
        ------
        ModelError
            Unknown format, newer version, missing keys, wrong types or lengths, or any
            invalid tree.
        """
        where = f"model {source}"
        try:
            return cls._from_json_dict(doc, where)
        except ModelError as exc:
            msg = str(exc)
            raise ModelError(msg if msg.startswith(where) else f"{where}: {msg}") from None

    @classmethod
    def _from_json_dict(cls, doc, where):
        if not isinstance(doc, dict):
            raise ModelError(f"{where}: not an oocboost model (top level is a "
                             f"{type(doc).__name__}, expected an object)")
        if doc.get("format") != FORMAT:
            raise ModelError(f"{where}: not an oocboost model (format {doc.get('format')!r}, "
                             f"expected {FORMAT!r})")
        version = doc.get("format_version")
        if not isinstance(version, int) or isinstance(version, bool) or version < 1:
            raise ModelError(f"{where}: invalid format_version {version!r}")
        if version > FORMAT_VERSION:
            raise ModelError(f"{where}: written by a newer oocboost (format version "
                             f"{version}); this oocboost reads format version "
                             f"{FORMAT_VERSION}: upgrade oocboost to load it")
        n_outputs = _read_int(doc, "n_outputs", where, 1, MAX_OUTPUTS)
        trees_per_round = _read_int(doc, "trees_per_round", where, 1, _INT32_MAX)
        raw_trees = _read_typed(doc, "trees", (list,), where)
        n_trees = len(raw_trees)
        tree_group = _read_array(doc, "tree_group", np.int32, n_trees, where)
        tree_weight = _read_array(doc, "tree_weight", np.float64, n_trees, where)
        base_margin = _read_array(doc, "base_margin", np.float64, n_outputs, where)
        feature_names = _read_typed(doc, "feature_names", (list,), where)
        feature_types = _read_typed(doc, "feature_types", (list,), where)
        # Bitsets are allocated (n_nodes, n_words) per tree but stored only for categorical
        # nodes: bound the total before allocating so a small file cannot claim gigabytes.
        cells = 0
        for d in raw_trees:
            if isinstance(d, dict) and all(
                    isinstance(d.get(k), int) and d.get(k) >= 0 for k in ("n_nodes", "n_words")):
                cells += d["n_nodes"] * d["n_words"]
        if cells > MAX_BITSET_CELLS:
            raise ModelError(f"{where}: categorical bitsets would take {cells} words, more "
                             f"than the limit of {MAX_BITSET_CELLS}")
        trees = [Tree.from_json_dict(d, f"tree {t}") for t, d in enumerate(raw_trees)]
        model = cls(
            trees, tree_group=tree_group, tree_weight=tree_weight, base_margin=base_margin,
            n_outputs=n_outputs,
            objective=_read_typed(doc, "objective", (str,), where),
            objective_params=_read_typed(doc, "objective_params", (dict,), where),
            learner=_read_typed(doc, "learner", (str,), where),
            aggregation=_read_typed(doc, "aggregation", (str,), where),
            trees_per_round=trees_per_round,
            feature_names=feature_names, feature_types=feature_types,
            bin_mapper=_read_typed(doc, "bin_mapper", (dict,), where, optional=True),
            params=_read_typed(doc, "params", (dict,), where),
            best_iteration=_read_int(doc, "best_iteration", where, 0, _INT32_MAX,
                                     optional=True),
            n_classes=_read_int(doc, "n_classes", where, 0, _INT32_MAX, optional=True),
            classes=_read_typed(doc, "classes", (list,), where, optional=True),
            attributes=_read_typed(doc, "attributes", (dict,), where),
        )
        model.validate()
        return model

    def save_model(self, path):
        """Validate and write the model as JSON, atomically.

        The text goes to a temporary file in the destination's folder, is flushed to disk
        and renamed over ``path``, so a crash never leaves a half-written model. In the
        free-form dicts (params, attributes, ...) non-finite floats are written as null.

        Parameters
        ----------
        path : str or os.PathLike
        """
        self.validate()
        text = json.dumps(self.to_json_dict(), allow_nan=False, separators=(",", ":"))
        path = os.fspath(path)
        folder = os.path.dirname(os.path.abspath(path))
        fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp",
                                   dir=folder)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(text)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, path)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise

    # ------------------------------------------------------------------ prediction
    def _flat_trees(self):
        """Flattened trees (validated and built once, rebuilt when trees or weights change)."""
        key = (self.tree_group.tobytes(), self.tree_weight.tobytes(), int(self.n_outputs),
               self.n_features)
        cached = self._flat_key
        if (self._flat is not None and cached[0] == key and len(cached[1]) == len(self.trees)
                and all(a is b for a, b in zip(cached[1], self.trees))):
            return self._flat
        self.validate()
        self._flat = _kp.flatten_trees(self.trees, self.tree_group, self.tree_weight,
                                       int(self.n_outputs))
        self._flat_key = (key, list(self.trees))
        return self._flat

    def _tree_range(self, iteration_range):
        """Half-open flat tree range of ``iteration_range`` = (start, end) rounds."""
        if iteration_range is None:
            return 0, len(self.trees)
        try:
            start, end = (int(v) for v in iteration_range)
        except (TypeError, ValueError):
            raise ParameterError(f"iteration_range must be (start, end), got "
                                 f"{iteration_range!r}") from None
        n_rounds = self.n_rounds
        if end == 0:
            end = n_rounds
        if not 0 <= start <= end <= n_rounds:
            raise ParameterError(f"iteration_range {tuple(iteration_range)} is outside the "
                                 f"model's {n_rounds} rounds (end 0 means all)")
        tpr = int(self.trees_per_round)
        return start * tpr, end * tpr

    def _check_X(self, X):
        X = np.ascontiguousarray(X, dtype=X_DTYPE)
        if X.ndim != 2 or X.shape[1] != self.n_features:
            raise ModelError(f"X has shape {X.shape}; the model expects (n_rows, "
                             f"{self.n_features}) with features {self.feature_names[:5]}...")
        return X

    def _start_margin(self, n_rows, include_base=True):
        if self.aggregation == "sum" and include_base:
            return np.tile(self.base_margin, (n_rows, 1))
        return np.zeros((n_rows, int(self.n_outputs)), dtype=np.float64)

    def _finish_margin(self, out, t0, t1, include_base=True):
        if self.aggregation == "mean":
            g = self.tree_group[t0:t1]
            w = self.tree_weight[t0:t1]
            total = np.zeros(int(self.n_outputs), dtype=np.float64)
            np.add.at(total, g[g >= 0], w[g >= 0])
            total += w[g < 0].sum()
            nz = total != 0
            out[:, nz] /= total[nz]
            if include_base:
                out += self.base_margin
        return out

    def predict_margin(self, X, iteration_range=None, n_threads=None, include_base=True):
        """Raw margins (before any link function) for raw feature values.

        Parameters
        ----------
        X : array-like (n_rows, n_features) float64
            Raw values; categorical features as float codes
            (``BinMapper.encode_categories``); NaN = missing.
        iteration_range : (int, int) or None
            Boosting rounds ``[start, end)`` to use (a round is ``trees_per_round``
            trees); ``end == 0`` means up to the last round. None: all trees.
        n_threads : int or None
            numba threads; None keeps the current setting.
        include_base : bool
            False: leave ``base_margin`` out (the trees' contribution only, e.g. to add
            some rounds to margins kept by the caller).

        Returns
        -------
        ndarray (n_rows, n_outputs) float64
        """
        X = self._check_X(X)
        flat = self._flat_trees()
        t0, t1 = self._tree_range(iteration_range)
        out = self._start_margin(X.shape[0], include_base)
        with _num_threads(n_threads):
            _kp.raw_margins(flat, X, t0, t1, out)
        return self._finish_margin(out, t0, t1, include_base)

    def predict_margin_binned(self, codes, missing_bin, iteration_range=None, n_threads=None,
                              include_base=True):
        """Raw margins for bin codes (one cache block at a time).

        Parameters
        ----------
        codes : ndarray (n_features, n_rows) uint8 or uint16
            Codes from the model's own bin mapper (numeric splits use ``bin_threshold``).
        missing_bin : int
            The missing code, ``max_bin - 1``.
        iteration_range, n_threads, include_base : see :meth:`predict_margin`

        Returns
        -------
        ndarray (n_rows, n_outputs) float64
        """
        codes = np.asarray(codes)
        if codes.dtype not in (np.uint8, np.uint16) or codes.ndim != 2 \
                or codes.shape[0] != self.n_features:
            raise ModelError(f"codes must be (n_features={self.n_features}, n_rows) uint8 or "
                             f"uint16, got {codes.shape} {codes.dtype}")
        codes = np.ascontiguousarray(codes)
        flat = self._flat_trees()
        t0, t1 = self._tree_range(iteration_range)
        out = self._start_margin(codes.shape[1], include_base)
        with _num_threads(n_threads):
            _kp.binned_margins(flat, codes, int(missing_bin), t0, t1, out)
        return self._finish_margin(out, t0, t1, include_base)

    def predict_leaf(self, X, iteration_range=None, n_threads=None):
        """Leaf node id reached in each tree.

        Parameters
        ----------
        X : array-like (n_rows, n_features) float64
        iteration_range, n_threads : see :meth:`predict_margin`

        Returns
        -------
        ndarray (n_rows, n_trees_in_range) int32
            Node ids within each tree.
        """
        X = self._check_X(X)
        flat = self._flat_trees()
        t0, t1 = self._tree_range(iteration_range)
        out = np.empty((X.shape[0], t1 - t0), dtype=NODE_DTYPE)
        with _num_threads(n_threads):
            _kp.raw_leaves(flat, X, t0, t1, out)
        return out

    def feature_importance(self, importance_type="gain"):
        """Per-feature importance with XGBoost's definitions.

        ``weight``: number of splits on the feature; ``total_gain`` / ``total_cover``: sum
        of the split gains / covers; ``gain`` / ``cover``: those sums divided by
        ``weight`` (0 for unused features). Tree weights are ignored, as in XGBoost.

        Returns
        -------
        ndarray (n_features,) float64
        """
        if importance_type not in IMPORTANCE_TYPES:
            raise ParameterError(f"importance_type must be one of {IMPORTANCE_TYPES}, got "
                                 f"{importance_type!r}")
        n_features = self.n_features
        weight = np.zeros(n_features, dtype=np.float64)
        gain = np.zeros(n_features, dtype=np.float64)
        cover = np.zeros(n_features, dtype=np.float64)
        for tree in self.trees:
            split = tree.left != -1
            f = tree.feature[split]
            weight += np.bincount(f, minlength=n_features)[:n_features]
            gain += np.bincount(f, weights=tree.gain[split], minlength=n_features)[:n_features]
            cover += np.bincount(f, weights=tree.cover[split],
                                 minlength=n_features)[:n_features]
        if importance_type == "weight":
            return weight
        total = gain if "gain" in importance_type else cover
        if importance_type.startswith("total_"):
            return total
        out = np.zeros(n_features, dtype=np.float64)
        np.divide(total, weight, out=out, where=weight > 0)
        return out


def load_model(path, *, max_bytes=MAX_MODEL_BYTES):
    """Read and validate a model saved by :meth:`Model.save_model`.

    Parameters
    ----------
    path : str or os.PathLike
    max_bytes : int
        Files larger than this are refused (a guard against hostile files).

    Returns
    -------
    Model

    Raises
    ------
    ModelError
        Unreadable, too large, not UTF-8, not JSON, truncated, of another format or a
        newer version, or failing any check of :meth:`Model.from_json_dict`.
    """
    name = os.fspath(path)
    try:
        with open(name, "rb") as fh:
            data = fh.read(max_bytes + 1)
    except OSError as exc:
        raise ModelError(f"cannot read model file {name!r}: {exc.strerror or exc}") from None
    if len(data) > max_bytes:
        raise ModelError(f"model file {name!r} is larger than {max_bytes} bytes "
                         f"(pass max_bytes= to load it anyway)")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ModelError(f"model file {name!r} is not UTF-8 text (byte {exc.start})") from None
    try:
        doc = json.loads(text, parse_constant=_reject_constant, parse_float=_finite_float)
    except RecursionError:
        raise ModelError(f"model file {name!r} is not a model: JSON nested too deeply") from None
    except ValueError as exc:
        raise ModelError(f"model file {name!r} is not valid JSON (truncated or corrupted?): "
                         f"{exc}") from None
    return Model.from_json_dict(doc, source=repr(name))
