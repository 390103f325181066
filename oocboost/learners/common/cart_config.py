"""The configuration of a learner that grows CART trees (forests, AdaBoost's weak trees,
decision streams): scikit-learn-style parameters validated into a :class:`ForestConfig`
(criterion, splitter, feature and row sampling, class weights, stopping rules, seed)."""
import math
import numbers
from dataclasses import dataclass, field

import numpy as np

from ...errors import ParameterError
from ...kernels import cart_stats as kc
from . import cart_params as cart
from .class_weight import class_weight_vector
from .validate import count_or_fraction, float_param, int_param, resolve_seed

#: Model ``learner`` names.
LEARNERS = ("random_forest", "extra_trees", "decision_tree", "bagging")
#: Integer labels with at most this many classes make the CLI choose classification.
MAX_AUTO_CLASSES = 32
CLASSIFICATION_CRITERIA = ("gini", "entropy", "log_loss", "gain_ratio")
REGRESSION_CRITERIA = ("squared_error", "friedman_mse", "poisson", "absolute_error")


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
    label_values: object = None        # absolute_error: ascending label values (K,)
    missing_values: str = "learn"      # or "surrogate" (engine/surrogates.py)
    max_surrogates: int = 5
    quantile_samples_leaf: object = None   # int: labels a leaf keeps (quantile forests)
    monotonic_cst: object = None       # int8 (n_features,) of -1/0/+1, or None
    multiway: bool = False             # C4.5's multiway categorical splits
    extra: dict = field(default_factory=dict)

    @property
    def n_outputs(self):
        return self.n_classes if self.task == "classification" else 1


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
        f = float_param(name, max_features, 0.0, 1.0, low_open=True)
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
        f = float_param("max_samples", max_samples, 0.0, 1.0, low_open=True)
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
    """Per-class weights (K,), or ``"balanced_subsample"`` (drawn per tree)."""
    if isinstance(class_weight, str) and class_weight == "balanced_subsample":
        return class_weight
    return class_weight_vector(class_weight, classes, counts,
                               forms="None, 'balanced', 'balanced_subsample' or a dict "
                                     "{class: weight}")


def resolve_config(learner, params, *, task, n_rows, n_features, classes=None,
                   class_counts=None, schema=None):
    """Validate scikit-learn-style parameters into a :class:`ForestConfig`.

    Parameters
    ----------
    learner : {"random_forest", "extra_trees", "decision_tree", "bagging"}
    params : dict
        Estimator parameters (scikit-learn names; see ``oocboost/sklearn/trees.py``). Missing
        ones take the learner's scikit-learn default.
    task : {"classification", "regression"}
    n_rows, n_features : int
        Of the training cache.
    classes : sequence or None
        Class labels (classification), index k = code k in the cache.
    class_counts : ndarray (K,) or None
        Unweighted rows per class (for ``class_weight="balanced"``).
    schema : (feature_names, is_categorical) or None
        Of the training cache, for ``monotonic_cst`` given by feature name and to refuse
        a constrained categorical feature (None: ``f0, f1, ...``, all numeric).
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
    splitter = cart.SPLITTER.check(splitter)
    tree_features, features_per_node = _feature_sampling(learner, p, n_features,
                                                         classification)
    bootstrap_features = bool(p.get("bootstrap_features", False))
    mode, lam, oob_score = _row_sampling(learner, p, n_rows)
    min_samples_leaf = count_or_fraction("min_samples_leaf", p.get("min_samples_leaf", 1),
                                          n_rows, 1)
    min_samples_split = count_or_fraction("min_samples_split",
                                           p.get("min_samples_split", 2), n_rows, 2)
    max_depth = cart.MAX_DEPTH.check(p.get("max_depth"))
    max_leaf_nodes = cart.MAX_LEAF_NODES.check(p.get("max_leaf_nodes"))
    leaves_per_pass = cart.LEAVES_PER_PASS.check(p.get("leaves_per_pass"))
    if leaves_per_pass is None:
        leaves_per_pass = 1 if learner == "decision_tree" else 8
    n_jobs = _n_jobs(p.get("n_jobs"))
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
        min_weight_fraction_leaf=cart.MIN_WEIGHT_FRACTION_LEAF.check(
            p.get("min_weight_fraction_leaf", 0.0)),
        min_impurity_decrease=cart.MIN_IMPURITY_DECREASE.check(
            p.get("min_impurity_decrease", 0.0)),
        max_leaf_nodes=max_leaf_nodes, features_per_node=features_per_node,
        tree_features=tree_features, bootstrap_features=bootstrap_features,
        sample_mode=mode, sample_lam=lam, class_weight=cw,
        ccp_alpha=cart.CCP_ALPHA.check(p.get("ccp_alpha", 0.0)),
        seed=resolve_seed(p.get("random_state")), oob_score=bool(oob_score and ensemble),
        n_jobs=n_jobs,
        trees_per_pass=cart.TREES_PER_PASS.check(p.get("trees_per_pass")),
        leaves_per_pass=leaves_per_pass, prefetch=cart.PREFETCH.check(p.get("prefetch")),
        memory_limit=p.get("memory_limit"), verbose=int(p.get("verbose", 0) or 0),
        keep_node_stats=learner == "decision_tree",
        missing_values=cart.MISSING_VALUES.check(p.get("missing_values", "learn")),
        max_surrogates=cart.MAX_SURROGATES.check(p.get("max_surrogates", 5)),
        quantile_samples_leaf=_quantile_samples(p, classification, splitter),
        monotonic_cst=_monotonic_cst(p, classes if classification else None, criterion,
                                     splitter, n_features, schema),
        multiway=_multiway(p, splitter, max_leaf_nodes))


def _multiway(p, splitter, max_leaf_nodes):
    """``multiway`` checked: best splits (a chain of binary nodes per multiway split,
    ``engine/multiway.py``) grown level by level, without surrogates."""
    if not cart.MULTIWAY.check(p.get("multiway", False)):
        return False
    for bad, why in ((splitter != "best", f"splitter={splitter!r}"),
                     (max_leaf_nodes is not None, "max_leaf_nodes (best-first growth "
                                                  "counts binary leaves)"),
                     (p.get("missing_values") == "surrogate",
                      "missing_values='surrogate'")):
        if bad:
            raise ParameterError(f"multiway=True needs splitter='best', depth-wise growth "
                                 f"and learned missing directions; got {why}")
    return True


def _quantile_samples(p, classification, splitter):
    """``quantile_samples_leaf`` checked: regression trees of axis-aligned splits whose
    rows reach their leaves by their bins (no surrogates)."""
    m = cart.QUANTILE_SAMPLES_LEAF.check(p.get("quantile_samples_leaf"))
    if m is None:
        return None
    if classification:
        raise ParameterError("quantile_samples_leaf is for regression forests: a "
                             "classifier predicts class probabilities")
    if splitter == "oblique" or p.get("missing_values") == "surrogate":
        raise ParameterError("quantile_samples_leaf needs axis-aligned splits without "
                             "surrogates (splitter='best' or 'random', missing_values="
                             "'learn')")
    return m


def cache_schema(cache):
    """``(feature_names, is_categorical)`` of a cache, for :func:`resolve_config`."""
    return list(cache.feature_names), list(cache.bin_mapper.is_categorical)


def _monotonic_cst(p, classes, criterion, splitter, n_features, schema):
    """scikit-learn's ``monotonic_cst`` (one -1/0/+1 per feature, or a dict by feature
    name) as int8 (n_features,), None when absent or all 0; refused where scikit-learn
    refuses it (several classes) and where our splits cannot honour it."""
    from ...engine.constraints import parse_monotone_constraints

    value = p.get("monotonic_cst")
    if value is None:
        return None
    if classes is not None and len(classes) > 2:
        raise ParameterError("monotonic_cst is not supported for multiclass classification "
                             "(scikit-learn's trees refuse it too); it constrains the "
                             "probability of class 1 of a binary classifier")
    if criterion == "absolute_error" or splitter == "oblique":
        raise ParameterError("monotonic_cst needs axis-aligned splits and a mean leaf "
                             "value: not with splitter='oblique' or "
                             "criterion='absolute_error'")
    names, is_categorical = schema or ([f"f{j}" for j in range(n_features)],
                                       [False] * n_features)
    if not isinstance(value, (dict, str)) and np.shape(value) != (n_features,):
        raise ParameterError(f"monotonic_cst has shape {np.shape(value)} but the input "
                             f"data has {n_features} features")
    return parse_monotone_constraints(value, names, is_categorical, name="monotonic_cst")


def _feature_sampling(learner, p, n_features, classification):
    """``(tree_features, features_per_node)``: columns drawn per tree (bagging's
    ``max_features``) and per node (None: all)."""
    if learner in ("random_forest", "extra_trees"):
        default_mf = "sqrt" if classification else 1.0
    else:
        default_mf = None
    if learner != "bagging":
        return None, resolve_max_features(p.get("max_features", default_mf), n_features)
    # Bagging's max_features is per estimator (a subset of columns per tree); the tree
    # template's own max_features (per node) is ``tree_max_features``.
    tree_features = resolve_max_features(p.get("max_features", 1.0), n_features)
    features_per_node = resolve_max_features(p.get("tree_max_features"), n_features,
                                             "estimator.max_features")
    if tree_features is not None and features_per_node is not None:
        features_per_node = min(features_per_node, tree_features)
    return tree_features, features_per_node


def _row_sampling(learner, p, n_rows):
    """``(sample_mode, sample_lam, oob_score)`` from bootstrap, max_samples, oob_score."""
    bootstrap = p.get("bootstrap", learner in ("random_forest", "bagging"))
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
    return mode, lam, oob_score


def _n_jobs(n_jobs):
    """scikit-learn's ``n_jobs`` as a thread count, None for all cores."""
    if n_jobs is None:
        return None
    n_jobs = int_param("n_jobs", n_jobs, -(10 ** 6))
    if n_jobs == 0:
        raise ParameterError("n_jobs must be a positive int, -1 (all cores) or None")
    return None if n_jobs < 0 else n_jobs
