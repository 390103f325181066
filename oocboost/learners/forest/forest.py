"""Decision trees, random forests, extra trees and bagging on the shared grower.

A forest learner only makes per-row CART statistics (``kernels/cart_stats.py``) and
hands them, with a :class:`~oocboost.engine.policies.CartPolicy`, to the same
:class:`~oocboost.engine.grower.TreeGrower` that boosting uses. Trees are grown in groups of
``trees_per_pass``: one read of the data per level serves every tree of the group::

    for each group of trees (global indices g .. g + T - 1):
        pass k  for each block: stats[t] = CART stats with weights
                                    sample_weight * class_weight * draw(seed, g + t, row)
                                rows move one level down, histograms of level k
    (oob_score) one more pass: every tree's value for the rows it did not see

Nothing per row is kept across passes but the node of each row in each tree of the
group (``int32``, in RAM or spilled per block, see ``rowstate.py``): bootstrap draws are
recomputed from a counter-based hash of (seed, tree, row) in every pass.

Randomness is per tree: feature subsets (``max_features``), extra-trees thresholds and
bagging's feature subsets come from ``numpy.random.default_rng([seed, tree, purpose])``
and row draws from (seed, tree, row), so a tree depends only on the seed and its index:
not on the block size, the prefetch depth, the thread count, ``trees_per_pass`` or on
being added later by ``warm_start``.

scikit-learn semantics (where they differ, the docstrings of ``tree_estimators.py`` say
so): splits and leaf values of a single tree equal scikit-learn's when the cache has a
bin per distinct value; ``max_samples`` (bootstrap of ``m`` rows) is drawn as
Poisson(m / n) copies per row; ``max_features`` subsets are drawn per node without
scikit-learn's "skip constant features and draw again" rule.
"""
import math
import numbers
import time
import warnings
from dataclasses import dataclass, field

import numpy as np

from ...common import HIST_DTYPE, INT_HIST_DTYPE, INT_HIST_MAX
from ...errors import InputError, MemoryLimitError, ParameterError
from ...engine.grower import GrowthParams, GrowerTelemetry, TreeGrower, sampled_columns
from ...kernels.histogram import ClassCounts
from ...kernels import cart_stats as kc
from ...kernels import split as ks
from ...engine.policies import CartPolicy, full_columns
from ...engine.rowstate import RowStateSpec, make_row_state, spill_dir_for
from ...engine.blocks import timed_blocks

#: Model ``learner`` names.
LEARNERS = ("random_forest", "extra_trees", "decision_tree", "bagging")
#: Most trees grown in the same passes when ``trees_per_pass`` is not given.
MAX_TREES_PER_PASS = 16
#: Integer labels with at most this many classes make the CLI choose classification.
MAX_AUTO_CLASSES = 32
CLASSIFICATION_CRITERIA = ("gini", "entropy", "log_loss")
REGRESSION_CRITERIA = ("squared_error",)
# Purposes of the per-tree random generators.
_RNG_FEATURES, _RNG_THRESHOLDS, _RNG_TREE_FEATURES = 1, 2, 3
#: Use integer statistics and int32 histograms where they are exact (:func:`integer_stats`);
#: False forces float64 (the tests compare the two).
INTEGER_STATS = True


# --------------------------------------------------------------------------------------
# configuration
# --------------------------------------------------------------------------------------
@dataclass
class ForestConfig:
    """Resolved, validated settings of a tree learner (see :func:`resolve_config`)."""

    learner: str
    task: str                      # "classification" or "regression"
    n_classes: int                 # K, 0 for regression
    criterion: str
    splitter: str = "best"
    max_depth: object = None
    min_samples_split: int = 2
    min_samples_leaf: int = 1
    min_weight_fraction_leaf: float = 0.0
    min_impurity_decrease: float = 0.0
    max_leaf_nodes: object = None
    features_per_node: object = None   # int or None (all)
    tree_features: object = None       # bagging: features per tree (int) or None
    bootstrap_features: bool = False
    sample_mode: int = kc.MODE_ALL
    sample_lam: float = 1.0
    class_weight: object = None        # None, ndarray (K,), or "balanced_subsample"
    ccp_alpha: float = 0.0
    seed: int = 0
    oob_score: bool = False
    n_jobs: object = None
    trees_per_pass: object = None
    leaves_per_pass: int = 1
    prefetch: object = None
    memory_limit: object = None
    verbose: int = 0
    keep_node_stats: bool = False
    extra: dict = field(default_factory=dict)

    @property
    def n_outputs(self):
        return self.n_classes if self.task == "classification" else 1


def resolve_seed(random_state):
    """An int seed from scikit-learn's ``random_state`` (None, int, RandomState,
    Generator). None draws a fresh seed (results then vary between fits)."""
    if random_state is None:
        return int(np.random.SeedSequence().entropy % (2 ** 63))
    if isinstance(random_state, np.random.RandomState):
        return int(random_state.randint(0, 2 ** 31 - 1))
    if isinstance(random_state, np.random.Generator):
        return int(random_state.integers(0, 2 ** 63 - 1))
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool) \
            and int(random_state) >= 0:
        return int(random_state)
    raise ParameterError(f"random_state must be None, a non-negative int, a "
                         f"numpy RandomState or Generator; got {random_state!r}")


def _int_param(name, value, minimum, allow_none=False):
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) \
            or int(value) < minimum:
        if isinstance(value, numbers.Real) and not isinstance(value, bool) \
                and float(value).is_integer() and value >= minimum:
            return int(value)
        extra = " or None" if allow_none else ""
        raise ParameterError(f"{name} must be an integer >= {minimum}{extra}, got {value!r}")
    return int(value)


def _float_param(name, value, low, high=None, low_open=False):
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ParameterError(f"{name} must be a number, got {value!r}")
    v = float(value)
    bad = (v <= low if low_open else v < low) or (high is not None and v > high) \
        or not math.isfinite(v)
    if bad:
        lo = f"> {low}" if low_open else f">= {low}"
        hi = f" and <= {high}" if high is not None else ""
        raise ParameterError(f"{name} must be {lo}{hi}, got {value!r}")
    return v


def _count_or_fraction(name, value, n, minimum):
    """scikit-learn's int-or-float parameters: an int >= minimum, or a float in (0, 1]
    meaning ``ceil(value * n)``."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return _int_param(name, value, minimum)
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        v = _float_param(name, value, 0.0, 1.0, low_open=True)
        return max(minimum, int(math.ceil(v * n)))
    raise ParameterError(f"{name} must be an int >= {minimum} or a float in (0, 1], got "
                         f"{value!r}")


def resolve_max_features(max_features, n_features, name="max_features"):
    """scikit-learn's ``max_features`` as a count, or None for all features.

    ``"sqrt"``: ``max(1, int(sqrt(p)))``; ``"log2"``: ``max(1, int(log2(p)))``; int: as
    is (1..p); float in (0, 1]: ``max(1, int(f * p))``; None: p. Breiman's classic choice
    ``int(log2(p)) + 1`` is ``max_features=int(np.log2(p)) + 1``.
    """
    if max_features is None:
        return None
    if isinstance(max_features, str):
        if max_features == "sqrt":
            k = max(1, int(math.sqrt(n_features)))
        elif max_features == "log2":
            k = max(1, int(math.log2(n_features)))
        else:
            raise ParameterError(f"{name} must be 'sqrt', 'log2', an int, a float in "
                                 f"(0, 1] or None; got {max_features!r}")
    elif isinstance(max_features, numbers.Integral) and not isinstance(max_features, bool):
        k = int(max_features)
        if not 1 <= k <= n_features:
            raise ParameterError(f"{name}={k} must be between 1 and the number of "
                                 f"features ({n_features})")
    elif isinstance(max_features, numbers.Real) and not isinstance(max_features, bool):
        f = _float_param(name, max_features, 0.0, 1.0, low_open=True)
        k = max(1, int(f * n_features))
    else:
        raise ParameterError(f"{name} must be 'sqrt', 'log2', an int, a float in (0, 1] or "
                             f"None; got {max_features!r}")
    return None if k >= n_features else k


def _sampling(bootstrap, max_samples, n_rows, learner):
    """(mode, lam) of the per-row draws."""
    if not isinstance(bootstrap, (bool, np.bool_)):
        raise ParameterError(f"bootstrap must be True or False, got {bootstrap!r}")
    if max_samples is None:
        m = None
    elif isinstance(max_samples, numbers.Integral) and not isinstance(max_samples, bool):
        m = int(max_samples)
        if not 1 <= m <= max(n_rows, 1) and not (bootstrap and m >= 1):
            raise ParameterError(f"max_samples={m} must be between 1 and the number of rows "
                                 f"({n_rows})")
    elif isinstance(max_samples, numbers.Real) and not isinstance(max_samples, bool):
        f = _float_param("max_samples", max_samples, 0.0, 1.0, low_open=True)
        m = max(int(round(n_rows * f)), 1)
    else:
        raise ParameterError(f"max_samples must be None, an int or a float in (0, 1], got "
                             f"{max_samples!r}")
    if bootstrap:
        lam = 1.0 if m is None else m / max(n_rows, 1)
        return kc.MODE_POISSON, lam
    if m is None or m >= n_rows:
        return kc.MODE_ALL, 1.0
    if learner != "bagging":
        raise ParameterError("max_samples needs bootstrap=True (as in scikit-learn)")
    return kc.MODE_BERNOULLI, m / n_rows


def _class_weight(class_weight, classes, counts):
    """Per-class weights (K,) from scikit-learn's ``class_weight`` forms."""
    K = len(classes)
    if class_weight is None:
        return None
    if isinstance(class_weight, str):
        if class_weight == "balanced":
            counts = np.asarray(counts, dtype=np.float64)
            with np.errstate(divide="ignore"):
                w = counts.sum() / (K * counts)
            return np.where(counts > 0, w, 0.0)
        if class_weight == "balanced_subsample":
            return "balanced_subsample"
        raise ParameterError(f"class_weight must be None, 'balanced', 'balanced_subsample' "
                             f"or a dict {{class: weight}}; got {class_weight!r}")
    if isinstance(class_weight, dict):
        w = np.ones(K)
        lookup = {(c.item() if hasattr(c, "item") else c): k for k, c in enumerate(classes)}
        for c, v in class_weight.items():
            key = c.item() if hasattr(c, "item") else c
            if key not in lookup:
                raise ParameterError(f"class_weight names class {c!r}, which is not among "
                                     f"the classes {list(lookup)}")
            w[lookup[key]] = _float_param(f"class_weight[{c!r}]", v, 0.0)
        return w
    raise ParameterError(f"class_weight must be None, 'balanced', 'balanced_subsample' or a "
                         f"dict {{class: weight}}; got {class_weight!r}")


def resolve_config(learner, params, *, task, n_rows, n_features, classes=None,
                   class_counts=None):
    """Validate scikit-learn-style parameters into a :class:`ForestConfig`.

    Parameters
    ----------
    learner : {"random_forest", "extra_trees", "decision_tree", "bagging"}
    params : dict
        Estimator parameters (scikit-learn names; see ``tree_estimators.py``). Missing
        ones take the learner's scikit-learn default.
    task : {"classification", "regression"}
    n_rows, n_features : int
        Of the training cache.
    classes : sequence or None
        Class labels (classification), index k = code k in the cache.
    class_counts : ndarray (K,) or None
        Unweighted rows per class (for ``class_weight="balanced"``).
    """
    if learner not in LEARNERS:
        raise ParameterError(f"learner must be one of {LEARNERS}, got {learner!r}")
    p = dict(params)
    classification = task == "classification"
    ensemble = learner != "decision_tree"
    criterion = p.get("criterion", "gini" if classification else "squared_error")
    allowed = CLASSIFICATION_CRITERIA if classification else REGRESSION_CRITERIA
    if criterion not in allowed:
        raise ParameterError(f"criterion must be one of {allowed} for "
                             f"{task}, got {criterion!r}")
    splitter = p.get("splitter", "random" if learner == "extra_trees" else "best")
    if splitter not in ("best", "random"):
        raise ParameterError(f"splitter must be 'best' or 'random', got {splitter!r}")
    if learner in ("random_forest", "extra_trees"):
        default_mf = "sqrt" if classification else 1.0
    else:
        default_mf = None
    max_features = p.get("max_features", default_mf)
    if learner == "bagging":
        # Bagging's max_features is per estimator (a subset of columns per tree); the
        # tree template's own max_features (per node) is ``tree_max_features``.
        tree_features = resolve_max_features(p.get("max_features", 1.0), n_features)
        features_per_node = resolve_max_features(p.get("tree_max_features"), n_features,
                                                 "estimator.max_features")
        if tree_features is not None and features_per_node is not None:
            features_per_node = min(features_per_node, tree_features)
    else:
        tree_features = None
        features_per_node = resolve_max_features(max_features, n_features)
    bootstrap_features = bool(p.get("bootstrap_features", False))
    default_bootstrap = learner in ("random_forest", "bagging")
    bootstrap = p.get("bootstrap", default_bootstrap)
    if learner == "decision_tree":
        bootstrap = False
    max_samples = p.get("max_samples")
    if learner == "bagging" and max_samples is None:
        max_samples = 1.0
    mode, lam = _sampling(bootstrap, max_samples, n_rows, learner)
    oob_score = p.get("oob_score", False)
    if not isinstance(oob_score, (bool, np.bool_)):
        raise ParameterError(f"oob_score must be True or False, got {oob_score!r}")
    if oob_score and mode != kc.MODE_POISSON and mode != kc.MODE_BERNOULLI:
        raise ParameterError("oob_score=True needs bootstrap=True (out-of-bag rows are the "
                             "rows a tree did not draw)")
    min_samples_leaf = _count_or_fraction("min_samples_leaf", p.get("min_samples_leaf", 1),
                                          n_rows, 1)
    min_samples_split = _count_or_fraction("min_samples_split",
                                           p.get("min_samples_split", 2), n_rows, 2)
    max_depth = _int_param("max_depth", p.get("max_depth"), 1, allow_none=True)
    max_leaf_nodes = _int_param("max_leaf_nodes", p.get("max_leaf_nodes"), 2,
                                allow_none=True)
    leaves_per_pass = p.get("leaves_per_pass")
    leaves_per_pass = (1 if learner in ("decision_tree",) else 8) if leaves_per_pass is None \
        else _int_param("leaves_per_pass", leaves_per_pass, 1)
    n_jobs = p.get("n_jobs")
    if n_jobs is not None:
        n_jobs = _int_param("n_jobs", n_jobs, -(10 ** 6))
        if n_jobs == 0:
            raise ParameterError("n_jobs must be a positive int, -1 (all cores) or None")
        n_jobs = None if n_jobs < 0 else n_jobs
    cw = None
    if classification:
        cw = _class_weight(p.get("class_weight"), list(classes), class_counts)
    elif p.get("class_weight") is not None:
        raise ParameterError("class_weight is for classifiers only")
    return ForestConfig(
        learner=learner, task=task, n_classes=len(classes) if classification else 0,
        criterion=criterion, splitter=splitter, max_depth=max_depth,
        min_samples_split=max(min_samples_split, 2 * min_samples_leaf),
        min_samples_leaf=min_samples_leaf,
        min_weight_fraction_leaf=_float_param("min_weight_fraction_leaf",
                                              p.get("min_weight_fraction_leaf", 0.0), 0.0,
                                              0.5),
        min_impurity_decrease=_float_param("min_impurity_decrease",
                                           p.get("min_impurity_decrease", 0.0), 0.0),
        max_leaf_nodes=max_leaf_nodes, features_per_node=features_per_node,
        tree_features=tree_features, bootstrap_features=bootstrap_features,
        sample_mode=mode, sample_lam=lam, class_weight=cw,
        ccp_alpha=_float_param("ccp_alpha", p.get("ccp_alpha", 0.0), 0.0),
        seed=resolve_seed(p.get("random_state")), oob_score=bool(oob_score and ensemble),
        n_jobs=n_jobs,
        trees_per_pass=_int_param("trees_per_pass", p.get("trees_per_pass"), 1,
                                  allow_none=True),
        leaves_per_pass=leaves_per_pass,
        prefetch=_int_param("prefetch", p.get("prefetch"), 0, allow_none=True),
        memory_limit=p.get("memory_limit"), verbose=int(p.get("verbose", 0) or 0),
        keep_node_stats=learner == "decision_tree")


# --------------------------------------------------------------------------------------
# policy and grower: per-tree root weights and per-tree randomness
# --------------------------------------------------------------------------------------
class ForestCartPolicy(CartPolicy):
    """:class:`CartPolicy` for several trees of different root weights in one pass.

    The root weight ``W_root`` of each tree (bootstrap draws make it differ per tree)
    normalises its impurity decreases and sets ``min_weight_leaf =
    min_weight_fraction_leaf * W_root``. It is read from the roots' sums when the grower
    evaluates them (first pass), before any split search of that tree. Adds
    scikit-learn's ``min_samples_split`` rule to :meth:`accept_splits`. Extra-trees
    thresholds are drawn from per-tree generators.
    """

    def __init__(self, *, n_trees, min_samples_split=2, min_weight_fraction_leaf=0.0,
                 threshold_rngs=None, **kwargs):
        super().__init__(total_weight=1.0, splitter="best", rng=None, min_weight_leaf=0.0,
                         **kwargs)
        self.root_weight = np.full(n_trees, np.nan)
        self.min_samples_split = float(min_samples_split)
        self.min_weight_fraction_leaf = float(min_weight_fraction_leaf)
        self.threshold_rngs = threshold_rngs

    def find_splits(self, hist, sums, slots, feature_mask, trees=None, node_ids=None,
                    random_bin=None, column_feature=None, zero_after=False):
        slots = np.ascontiguousarray(slots, np.int32)
        trees = np.asarray(trees, dtype=np.int64)
        roots = np.asarray(node_ids) == 0
        if roots.any():
            # The roots are evaluated first, in the tree's first pass: every later split
            # search of that tree sees its root weight.
            self.root_weight[trees[roots]] = self.weights(np.asarray(sums)[roots])
        n_eval, n_columns = len(slots), hist.shape[1]
        if column_feature is None:
            column_feature = full_columns(n_eval, n_columns)
        if self.threshold_rngs is not None and n_eval:
            uniforms = np.empty((n_eval, n_columns))
            for t in np.unique(trees):
                sel = trees == t
                uniforms[sel] = self.threshold_rngs[t].random((int(sel.sum()), n_columns))
            random_bin = np.empty((n_eval, n_columns), np.int32)
            ks.draw_random_bins(hist, slots, column_feature, self.n_value_bins,
                                self.is_categorical, self.count_stat, uniforms, random_bin)
        # One search per tree, with that tree's own root weight: the gains are then
        # computed exactly as for a lone tree, whatever the other trees of the pass.
        out = None
        if n_eval == 0:
            return super().find_splits(hist, sums, slots, feature_mask, random_bin=random_bin,
                                       column_feature=column_feature, zero_after=zero_after)
        for t in np.unique(trees):
            sel = np.flatnonzero(trees == t)
            self.total_weight = float(self.root_weight[t])
            self.min_weight_leaf = self.min_weight_fraction_leaf * self.total_weight
            part = super().find_splits(hist, sums[sel], slots[sel], feature_mask[sel],
                                       random_bin=None if random_bin is None
                                       else random_bin[sel],
                                       column_feature=column_feature[sel],
                                       zero_after=zero_after)
            if out is None:
                out = {k: np.empty((n_eval,) + v.shape[1:], v.dtype) for k, v in part.items()
                       if k != "importance_gain"}
            for k in out:
                out[k][sel] = part[k]
        out["importance_gain"] = out["gain"]
        return out

    def accept_splits(self, result, sums, trees=None, node_ids=None):
        ok = super().accept_splits(result, sums)
        return ok & (np.asarray(sums)[:, self.count_stat] >= self.min_samples_split)


# --------------------------------------------------------------------------------------
# training
# --------------------------------------------------------------------------------------
@dataclass
class ForestResult:
    """Trees grown by :func:`grow_trees` and what was measured."""

    trees: list                    # dicts of tree arrays (``Tree(**d)``)
    node_stats: list               # per tree {"impurity", "weighted_n"} or None
    telemetry: dict


def _blocks(cache, plan, counters):
    def account(wait_s, nbytes):
        counters["io_wait_s"] += wait_s
        counters["bytes_read"] += nbytes

    return timed_blocks(cache, plan, account)


def label_summary(cache, task, n_classes=None):
    """Check the labels (one labels-only pass) and count rows per class.

    Returns
    -------
    ndarray (K,) int64 of rows per class (classification), or None.

    Raises
    ------
    InputError
        Missing or non-finite labels; class labels that are not integers in [0, K).
    """
    counts = np.zeros(n_classes or 0, np.int64)
    for block in cache.iter_blocks(prefetch=1, with_codes=False):
        y = block.label
        if not np.all(np.isfinite(y)):
            i = int(np.flatnonzero(~np.isfinite(y))[0]) + block.row_start
            raise InputError(f"cache {cache.path}: row {i} has a missing or infinite label")
        if block.weight is not None and np.any(block.weight < 0):
            i = int(np.flatnonzero(block.weight < 0)[0]) + block.row_start
            raise InputError(f"cache {cache.path}: row {i} has a negative sample weight")
        if task == "classification":
            bad = (y != np.floor(y)) | (y < 0) | (y >= n_classes)
            if bad.any():
                i = int(np.flatnonzero(bad)[0])
                raise InputError(f"cache {cache.path}: row {i + block.row_start} has label "
                                 f"{y[i]!r}; expected a class index in [0, {n_classes})")
            counts += np.bincount(y.astype(np.int64), minlength=n_classes)
    return counts if task == "classification" else None


def cache_classes(cache):
    """Class indices 0..K-1 of a cache whose labels are integer classes, else None."""
    from ...cache.label_stats import LabelStats

    stats = cache.manifest.get("label_stats")
    if not stats:
        return None
    cw = LabelStats.from_dict(stats).class_weights
    if not cw:
        return None
    keys = sorted(cw)
    if keys != list(range(len(keys))):
        return None
    return keys


def choose_trees_per_pass(cache, config, n_new, plan_train):
    """Trees per pass and the memory plan: as many as fit (at most 16 and ``n_new``).

    Each tree of a pass costs 4 bytes of node index per row (and 1 of stored draw with
    row sampling), its statistics for one block (``block_rows * n_stats * 8`` bytes) and
    its frontier's histograms (``hist_columns * max_bin * hist_width(n_stats) * 8`` bytes
    per node in flight); a candidate is accepted when the plan leaves room for at least
    two nodes per tree.
    """
    n_stats = _n_stats(config)
    integer = integer_stats(cache, config)
    common = dict(n_rows=cache.n_rows, n_features=cache.n_features, max_bin=cache.max_bin,
                  n_stats=n_stats, n_outputs=max(config.n_outputs, 1),
                  block_rows=cache.block_rows, n_blocks=cache.n_blocks,
                  codes_itemsize=np.dtype(cache.codes_dtype).itemsize,
                  prefetch=config.prefetch)

    # Every tree's feature set has the size of tree 0's, except with bootstrap_features
    # (duplicates drawn and dropped), where the plan assumes full histograms.
    columns = None if config.bootstrap_features else sampled_columns(
        _growth_params(config, 1), cache.n_features,
        _tree_feature_sets(config, [0], cache.n_features))
    n_columns = columns or cache.n_features

    def scratch_bytes(t):
        # integer statistics are made in the kernels from each row's class
        if integer:
            return cache.block_rows * _row_classes(np.zeros(1, np.float32),
                                                   config.n_classes).itemsize
        return t * cache.block_rows * n_stats * np.dtype(kc.STATS_DTYPE).itemsize

    def plan_for(t):
        # 64 nodes in flight per tree with full histograms; as many more as the smaller
        # per-node histograms of sampled features allow
        return plan_train(config.memory_limit, n_trees_in_pass=t,
                          max_nodes_in_flight=64 * t * max(1, cache.n_features // n_columns),
                          state_bytes_per_row=_row_state_spec(config, t).bytes_per_row(),
                          block_scratch_bytes=scratch_bytes(t), block_scratch_detail=(
                              "row classes" if integer else f"{t} trees x "
                              f"{cache.block_rows:,} rows x {n_stats} stats x "
                              f"{np.dtype(kc.STATS_DTYPE).itemsize} B"),
                          n_hist_columns=n_columns,
                          hist_itemsize=np.dtype(INT_HIST_DTYPE if integer
                                                 else HIST_DTYPE).itemsize, **common)

    if config.trees_per_pass is not None:
        t = max(1, min(config.trees_per_pass, n_new))
        return t, plan_for(t)
    t = max(1, min(MAX_TREES_PER_PASS, n_new))
    while True:
        try:
            plan = plan_for(t)
        except MemoryLimitError:
            # each tree's block statistics and node indices may be what does not fit
            if t == 1:
                raise
            t //= 2
            continue
        if t == 1 or config.memory_limit is None or plan.hist_nodes >= 2 * t:
            return t, plan
        t //= 2


def _growth_params(config, hist_nodes):
    return GrowthParams(
        max_depth=config.max_depth, max_leaves=config.max_leaf_nodes,
        grow_policy="lossguide" if config.max_leaf_nodes else "depthwise",
        leaves_per_pass=config.leaves_per_pass, features_per_node=config.features_per_node,
        max_hist_slots=2 * int(hist_nodes))


def _tree_feature_sets(config, tree_ids, n_features):
    if config.tree_features is None and not config.bootstrap_features:
        return None
    k = config.tree_features or n_features
    sets = []
    for g in tree_ids:
        rng = np.random.default_rng([config.seed, int(g), _RNG_TREE_FEATURES])
        if config.bootstrap_features:
            chosen = np.unique(rng.integers(0, n_features, size=k))
        else:
            chosen = np.sort(rng.choice(n_features, size=k, replace=False))
        sets.append(chosen)
    return sets


def _group_class_weights(cache, config, tree_ids, counters):
    """(T, K) class weights of a group (``balanced_subsample`` needs a labels pass)."""
    T, K = len(tree_ids), config.n_classes
    if config.task != "classification" or config.class_weight is None:
        return np.zeros((0, 0))
    if not isinstance(config.class_weight, str):
        return np.ascontiguousarray(np.tile(config.class_weight, (T, 1)))
    counts = np.zeros((T, K))
    streams = np.asarray(tree_ids, np.int64)
    for block in cache.iter_blocks(prefetch=1, with_codes=False):
        kc.sampled_class_counts(block.label, config.seed, streams, block.row_start,
                                config.sample_mode, config.sample_lam, counts)
    counters["label_passes"] += 1
    n_present = (counts > 0).sum(axis=1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        w = counts.sum(axis=1, keepdims=True) / (n_present * counts)
    return np.ascontiguousarray(np.where(counts > 0, w, 0.0))


def _block_stats(block, config, streams, class_weight, draws, scratch):
    """Per-row CART statistics of one block for the trees ``streams``, into a buffer kept
    in ``scratch`` (a dict) between blocks and passes.

    ``draws`` : ndarray (n_trees, n_rows), the stored bootstrap draws, or shape (0, 0)
    without row sampling.
    """
    n_stats = _n_stats(config)
    shape = (len(streams), block.n_rows, n_stats)
    buffer = scratch.get("stats")
    if buffer is None or buffer.shape[0] != shape[0] or buffer.shape[1] < shape[1]:
        buffer = scratch["stats"] = np.empty(shape, kc.STATS_DTYPE)
    out = buffer[:, : block.n_rows]
    weight = block.weight if block.weight is not None else np.empty(0, np.float32)
    kc.cart_stats(block.label, weight, class_weight, config.n_classes, config.seed, streams,
                  block.row_start, config.sample_mode, config.sample_lam, draws, out)
    return out


def integer_stats(cache, config):
    """True when a forest's statistics are integers whose sums fit in int32: they are then
    made inside the histogram kernels from each row's class and draw
    (``kernels.histogram.ClassCounts``, nothing per row is written) and summed into int32
    histograms (``common.INT_HIST_DTYPE``).

    That is classification without sample weights in the cache and without class
    weights: a row's statistics are then its draw (0, 1, or a Poisson count of at most
    ``kc.max_draw``) in its class's lane and 1 in the count lane. No sum can exceed
    ``n_rows * max_draw``; while that is at most ``INT_HIST_MAX`` every integer add is
    exact, and each sum is the same number the float64 path computes (float64 holds
    these integers exactly too), so the trees are bit for bit the same. A bin then
    takes 16 bytes instead of 32, and the per-pass statistics sweep is gone: 16
    depth-12 trees on 1M x 28 rows fit in 5.1 s instead of 6.4 (histogram 3.3 -> 2.6 s,
    statistics 0.8 -> 0.15 s).
    """
    return bool(INTEGER_STATS and config.task == "classification"
                and config.n_classes <= 65536
                and config.class_weight is None and not cache.has_weight
                and cache.n_rows * kc.max_draw(config.sample_mode, config.sample_lam)
                <= INT_HIST_MAX)


def _row_classes(label, n_classes):
    """Class index of each row as the smallest unsigned integers that hold them."""
    return label.astype(np.uint8 if n_classes <= 256 else np.uint16)


def _n_stats(config):
    return config.n_classes + 1 if config.task == "classification" else 4


def _row_state_spec(config, trees_per_pass):
    """Per-row state of a pass: each tree's node of the row and, with row sampling, the
    row's draw for each tree (made in the pass's first read, then reused)."""
    fields = {"node": ((trees_per_pass, None), np.int32)}
    if config.sample_mode != kc.MODE_ALL:
        fields["draw"] = ((trees_per_pass, None),
                          kc.draw_dtype(config.sample_mode, config.sample_lam))
    return RowStateSpec(fields)


def grow_trees(cache, config, tree_ids, *, plan, trees_per_pass, counters):
    """Grow the trees ``tree_ids`` (global indices), ``trees_per_pass`` at a time.

    Parameters
    ----------
    cache : Cache
    config : ForestConfig
    tree_ids : sequence of int
        Global tree indices: they seed each tree's draws.
    plan : TrainPlan
    trees_per_pass : int
    counters : dict
        Telemetry accumulated in place (``io_wait_s``, ``bytes_read``, ``stats_s``,
        ``label_passes``).

    Returns
    -------
    ForestResult
    """
    from ...engine.pruning import prune_tree

    mapper = cache.bin_mapper
    missing_bin = cache.max_bin - 1
    spec = _row_state_spec(config, trees_per_pass)
    rows = make_row_state(spec, cache.block_row_starts, cache.n_rows,
                          in_memory=plan.state_in_ram,
                          spill_dir=spill_dir_for(cache))
    growth = _growth_params(config, plan.hist_nodes)
    telemetry = GrowerTelemetry()
    trees, node_stats = [], []
    integer = integer_stats(cache, config)
    scratch = {}
    no_draws = np.zeros((0, 0), np.uint8)
    try:
        for g0 in range(0, len(tree_ids), trees_per_pass):
            group = [int(g) for g in tree_ids[g0:g0 + trees_per_pass]]
            T = len(group)
            streams = np.asarray(group, np.int64)
            class_weight = _group_class_weights(cache, config, group, counters)
            policy = ForestCartPolicy(
                n_trees=T, criterion=config.criterion, n_classes=config.n_classes,
                n_value_bins=mapper.n_value_bins, is_categorical=mapper.is_categorical,
                missing_bin=missing_bin, min_samples_leaf=config.min_samples_leaf,
                min_impurity_decrease=config.min_impurity_decrease,
                min_samples_split=config.min_samples_split,
                min_weight_fraction_leaf=config.min_weight_fraction_leaf,
                hist_dtype=INT_HIST_DTYPE if integer else HIST_DTYPE,
                threshold_rngs=([np.random.default_rng([config.seed, g, _RNG_THRESHOLDS])
                                 for g in group] if config.splitter == "random" else None))
            grower = TreeGrower(
                T, cache.n_features, cache.max_bin, mapper.n_value_bins,
                mapper.is_categorical, mapper.bin_edges, policy, growth,
                np.random.default_rng([config.seed, group[0]]),
                feature_rngs=[np.random.default_rng([config.seed, g, _RNG_FEATURES])
                              for g in group],
                tree_features=_tree_feature_sets(config, group, cache.n_features))
            grower.start()
            every_row = np.zeros((T, 0), np.uint8)
            first = True
            while grower.needs_pass():
                for block in _blocks(cache, plan, counters):
                    views = rows.load(block.index)
                    node = views["node"][:T]
                    t0 = time.perf_counter()
                    draws = views["draw"][:T] if "draw" in views else no_draws
                    if first:
                        node[:] = 0
                        if "draw" in views:
                            kc.row_draws(config.seed, streams, block.row_start,
                                         config.sample_mode, config.sample_lam, draws)
                    if integer:
                        # made from labels and draws inside the histogram kernels
                        stats = ClassCounts(_row_classes(block.label, config.n_classes),
                                            draws if draws.size else every_row,
                                            config.n_classes)
                    else:
                        stats = _block_stats(block, config, streams, class_weight, draws,
                                             scratch)
                    counters["stats_s"] += time.perf_counter() - t0
                    # rows outside the bootstrap (draw 0) have all-zero statistics;
                    # without draws, unweighted rows all count, weighted ones by their
                    # count statistic
                    grower.accumulate(block.codes, stats, node, row_counts=draws if draws.size
                                      else every_row if integer else None)
                    rows.store(block.index, views, None if first else ("node",))
                grower.finish_pass()
                first = False
            for t in range(T):
                arrays = grower.tree_arrays(t)
                n = len(arrays["left"])
                sums = grower.nodes.sums[t, :n]
                impurity = policy.impurity(sums)
                weighted_n = policy.weights(sums)
                if config.ccp_alpha > 0.0 or config.keep_node_stats:
                    arrays, _ = prune_tree(arrays, weighted_n, impurity, config.ccp_alpha,
                                           extra={"impurity": impurity,
                                                  "weighted_n": weighted_n})
                    impurity = arrays.pop("impurity")
                    weighted_n = arrays.pop("weighted_n")
                trees.append(arrays)
                node_stats.append({"impurity": impurity, "weighted_n": weighted_n}
                                  if config.keep_node_stats else None)
            telemetry.add(grower.telemetry)
    finally:
        rows.close()
    return ForestResult(trees=trees, node_stats=node_stats, telemetry=telemetry.as_dict())


def oob_pass(cache, model, config, tree_ids, plan, counters, keep_arrays=True):
    """Out-of-bag predictions and score, in one streaming pass.

    Each tree's value is added to the rows it did not draw (draw == 0, recomputed from the
    hash of (seed, tree, row)); a row's OOB prediction is the mean over those trees.
    As in scikit-learn, the score is over every row (a row no tree left out predicts
    class 0, or 0) and ignores sample weights: accuracy for classification, R^2 for
    regression.

    Parameters
    ----------
    model : Model
        Its trees ``tree_ids`` are used (tree ``j`` of the model is global tree
        ``tree_ids[j]``).
    keep_arrays : bool
        Return the per-row arrays (``n_rows x n_outputs`` float64 in RAM).

    Returns
    -------
    score : float
    decision : ndarray (n_rows, n_outputs) float64 or None
        Mean OOB prediction per row (class proportions for classifiers).
    n_without : int
        Rows that no tree left out.
    """
    K = model.n_outputs
    missing_bin = cache.max_bin - 1
    decision = np.zeros((cache.n_rows, K)) if keep_arrays else None
    hits = 0.0
    sse = sy = syy = 0.0
    n_without = 0
    for block in _blocks(cache, plan, counters):
        n = block.n_rows
        oob_sum = np.zeros((n, K))
        oob_count = np.zeros(n, np.int32)
        for j, g in enumerate(tree_ids):
            values = model.predict_margin_binned(block.codes, missing_bin,
                                                 iteration_range=(j, j + 1),
                                                 include_base=False)
            kc.add_oob_values(config.seed, int(g), block.row_start, config.sample_mode,
                              config.sample_lam, np.ascontiguousarray(values), oob_sum,
                              oob_count)
        n_without += int(np.count_nonzero(oob_count == 0))
        pred = oob_sum / np.maximum(oob_count, 1)[:, None]
        y = block.label.astype(np.float64)
        if config.task == "classification":
            hits += float(np.count_nonzero(np.argmax(pred, axis=1) == y))
        else:
            sse += float(np.sum((y - pred[:, 0]) ** 2))
            sy += float(y.sum())
            syy += float(np.sum(y * y))
        if decision is not None:
            decision[block.row_start:block.row_start + n] = pred
    counters["oob_passes"] += 1
    n_rows = cache.n_rows
    if config.task == "classification":
        score = hits / n_rows
    else:
        sst = syy - sy * sy / n_rows
        score = 1.0 - sse / sst if sst > 0 else (1.0 if sse == 0 else 0.0)
    return score, decision, n_without


def new_counters():
    return {"io_wait_s": 0.0, "bytes_read": 0, "stats_s": 0.0, "label_passes": 0,
            "oob_passes": 0}


def empty_model(cache, config, classes=None):
    """An empty forest Model over ``cache``'s features."""
    from ...model.model import Model, source_attributes

    mapper = cache.bin_mapper
    if config.task == "classification":
        objective, obj_params = "multi:proba", {"num_class": int(config.n_classes)}
    else:
        objective, obj_params = "reg:squarederror", {}
    return Model([], n_outputs=int(config.n_outputs), objective=objective,
                 objective_params=obj_params, learner=config.learner, aggregation="mean",
                 trees_per_round=1, feature_names=list(cache.feature_names),
                 feature_types=list(mapper.feature_types), bin_mapper=mapper.to_dict(),
                 n_classes=int(config.n_classes) if config.task == "classification" else None,
                 classes=None if classes is None else list(classes),
                 attributes=source_attributes(cache))


def train_forest(cache, config, n_estimators, *, model=None, classes=None):
    """Grow ``n_estimators`` trees in all (keeping ``model``'s trees, for warm start).

    Parameters
    ----------
    cache : Cache
    config : ForestConfig
    n_estimators : int
        Total trees wanted; ``model`` (if any) brings the first ones.
    model : Model or None
        Trees grown before (global indices ``0 .. model.n_trees - 1``).
    classes : list or None
        Class labels saved with the model.

    Returns
    -------
    model : Model
        With ``attributes`` ``oob_score`` (when asked), ``criterion``,
        ``trees_per_pass`` and ``training_log`` (telemetry).
    node_stats : list
        Per new tree ``{"impurity", "weighted_n"}`` (decision trees) or None.
    oob_decision : ndarray (n_rows, n_outputs) or None
    """
    from ...utils.rss import current_rss, peak_rss
    from ...engine.plan import plan_train
    from ...model.tree import Tree
    from ...utils.threads import thread_limit

    n_estimators = _int_param("n_estimators", n_estimators, 1)
    if model is None:
        model = empty_model(cache, config, classes)
    n_old = model.n_trees
    if n_estimators < n_old:
        raise ParameterError(f"n_estimators={n_estimators} must be at least the "
                             f"{n_old} trees already grown (warm_start)")
    new_ids = list(range(n_old, n_estimators))
    t_start = time.perf_counter()
    counters = new_counters()
    # Blocks an earlier run left resident are in this process's RSS, which the plan takes
    # as its baseline: this run budgets residency itself.
    cache.release_resident()
    trees_per_pass, plan = choose_trees_per_pass(cache, config, max(len(new_ids), 1),
                                                 plan_train)
    if config.verbose >= 2:
        print(plan.describe())
    node_stats = []
    oob_decision = None
    telemetry = GrowerTelemetry().as_dict()
    with thread_limit(config.n_jobs):
        if new_ids:
            result = grow_trees(cache, config, new_ids, plan=plan,
                                trees_per_pass=trees_per_pass, counters=counters)
            for arrays in result.trees:
                model.add_tree(Tree(**arrays), group=-1 if config.n_outputs > 1 else 0)
            node_stats = result.node_stats
            telemetry = result.telemetry
        if config.oob_score:
            score, oob_decision, n_without = oob_pass(
                cache, model, config, list(range(model.n_trees)), plan, counters,
                keep_arrays=plan.state_in_ram)
            if n_without:
                warnings.warn(f"{n_without} rows were drawn by every tree and have no "
                              f"out-of-bag prediction; the OOB score counts them as "
                              f"predicted 0 (as scikit-learn). Use more trees.",
                              UserWarning, stacklevel=3)
            model.attributes["oob_score"] = float(score)
    n_new = max(len(new_ids), 1)
    passes = telemetry["passes"] + counters["oob_passes"] + counters["label_passes"]
    model.attributes.update({
        "criterion": config.criterion, "trees_per_pass": int(trees_per_pass),
        "n_classes": int(config.n_classes), "splitter": config.splitter,
        "bootstrap_mode": int(config.sample_mode), "bootstrap_lam": float(config.sample_lam),
        "seed": int(config.seed),
    })
    if classes is not None:
        model.attributes["classes"] = [c.item() if hasattr(c, "item") else c
                                       for c in classes]
    model.training_log = {
        "seconds": time.perf_counter() - t_start,
        "histogram_s": telemetry["histogram_s"], "partition_s": telemetry["partition_s"],
        "split_s": telemetry["split_s"], "stats_s": counters["stats_s"],
        "io_wait_s": counters["io_wait_s"], "bytes_read": int(counters["bytes_read"]),
        "data_passes": int(passes), "tree_passes": int(telemetry["passes"]),
        "record_nodes": int(telemetry["record_nodes"]),
        "integer_stats": integer_stats(cache, config),
        "passes_per_tree": telemetry["passes"] / n_new,
        "oob_passes": counters["oob_passes"], "trees_per_pass": int(trees_per_pass),
        "peak_rss_bytes": int(max(current_rss(), peak_rss())),
        "state_in_ram": bool(plan.state_in_ram),
        "plan": plan.as_dict(),
    }
    if config.verbose >= 1:
        log = model.training_log
        print(f"{config.learner}: {len(new_ids)} trees in {log['seconds']:.2f}s, "
              f"{log['data_passes']} data passes ({log['passes_per_tree']:.2f} per tree, "
              f"{trees_per_pass} trees per pass); histogram {log['histogram_s']:.2f}s, "
              f"split {log['split_s']:.2f}s, I/O wait {log['io_wait_s']:.2f}s")
    return model, node_stats, oob_decision


# --------------------------------------------------------------------------------------
# command line
# --------------------------------------------------------------------------------------
_CLI_NAMES = {"random-forest": "random_forest", "extra-trees": "extra_trees",
              "decision-tree": "decision_tree"}
#: Parameters the command line accepts (scikit-learn names plus ours and aliases).
CLI_PARAMS = ("criterion", "splitter", "max_depth", "min_samples_split", "min_samples_leaf",
              "min_weight_fraction_leaf", "max_features", "max_leaf_nodes",
              "min_impurity_decrease", "bootstrap", "oob_score", "n_jobs", "random_state",
              "verbose", "class_weight", "ccp_alpha", "max_samples", "trees_per_pass",
              "leaves_per_pass", "prefetch", "task", "seed", "n_threads", "objective",
              "verbosity")


def infer_task(params, cache):
    """"classification" or "regression" for the command line.

    ``params["task"]`` wins; then the objective (``reg:*`` -> regression, ``binary:*`` /
    ``multi:*`` -> classification) and the criterion; otherwise classification when the
    cache's labels are integer classes ``0..K-1`` with ``K <= 32``.
    """
    task = params.get("task")
    if task is not None:
        if task not in ("classification", "regression"):
            raise ParameterError(f"task must be 'classification' or 'regression', got "
                                 f"{task!r}")
        return task
    objective = params.get("objective")
    if isinstance(objective, str):
        if objective.startswith("reg:"):
            return "regression"
        if objective.startswith(("binary:", "multi:")):
            return "classification"
    if params.get("criterion") == "squared_error":
        return "regression"
    if params.get("criterion") in CLASSIFICATION_CRITERIA:
        return "classification"
    classes = cache_classes(cache)
    if classes is not None and 2 <= len(classes) <= MAX_AUTO_CLASSES:
        return "classification"
    return "regression"


def train_forest_from_params(name, params, cache, *, n_estimators, memory_limit=None,
                             verbose=False):
    """The command line's entry: ``oocboost train --learner random-forest --param k=v``.

    Parameters
    ----------
    name : {"random-forest", "extra-trees", "decision-tree"}
    params : dict
        Estimator parameters by scikit-learn name (see :data:`CLI_PARAMS`); ``seed`` and
        ``n_threads`` are aliases of ``random_state`` and ``n_jobs``; ``task`` forces
        classification or regression (default: inferred, see :func:`infer_task`).
    cache : Cache or path
    n_estimators : int
        Trees (ignored for a decision tree).
    memory_limit : int, str or None
    verbose : bool

    Returns
    -------
    Model
    """
    from ..boosting.training import open_cache

    if name not in _CLI_NAMES:
        raise ParameterError(f"unknown forest learner {name!r}; expected one of "
                             f"{sorted(_CLI_NAMES)}")
    learner = _CLI_NAMES[name]
    cache = open_cache(cache)
    if not cache.has_label:
        raise ParameterError(f"training cache {cache.path} has no label column; rebuild it "
                             f"with --label")
    p = dict(params or {})
    unknown = sorted(set(p) - set(CLI_PARAMS))
    if unknown:
        raise ParameterError(f"unknown parameter(s) {unknown} for --learner {name}; known: "
                             f"{', '.join(CLI_PARAMS)}")
    for alias, target in (("seed", "random_state"), ("n_threads", "n_jobs")):
        if alias in p:
            if target in p:
                raise ParameterError(f"{alias} and {target} are aliases; give one")
            p[target] = p.pop(alias)
    p.setdefault("random_state", 0)
    verbosity = p.pop("verbosity", None)
    p["verbose"] = 2 if verbose else (p.get("verbose") or (verbosity or 0))
    if memory_limit is not None:
        p["memory_limit"] = memory_limit
    task = infer_task(p, cache)
    p.pop("task", None)
    p.pop("objective", None)
    classes = None
    counts = None
    if task == "classification":
        classes = cache_classes(cache)
        if classes is None or len(classes) < 2:
            raise ParameterError(f"cache {cache.path}: classification needs integer class "
                                 f"labels 0..K-1 with K >= 2 (use --param "
                                 f"task=regression for a numeric target)")
        counts = label_summary(cache, task, len(classes))
    else:
        label_summary(cache, task)
    config = resolve_config(learner, p, task=task, n_rows=cache.n_rows,
                            n_features=cache.n_features, classes=classes,
                            class_counts=counts)
    model, _, _ = train_forest(cache, config, 1 if learner == "decision_tree"
                               else n_estimators, classes=classes)
    model.params = {k: (v if isinstance(v, (int, float, str, bool, type(None))) else str(v))
                    for k, v in p.items()}
    model.params["task"] = task
    return model
