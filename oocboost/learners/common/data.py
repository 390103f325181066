"""What every learner does with its training cache before it grows anything: open it,
read its classes and task, check its labels, and make the empty model its trees go into."""
import os

import numpy as np

from ...errors import InputError, ParameterError
from .cart_config import CLASSIFICATION_CRITERIA, MAX_AUTO_CLASSES, REGRESSION_CRITERIA


def open_cache(data, what="training data"):
    """A ``Cache`` from a ``Cache`` or a path to one."""
    from ...cache.store import Cache

    if isinstance(data, Cache):
        return data
    if isinstance(data, (str, os.PathLike)):
        return Cache(data)
    raise ParameterError(f"{what} must be an oocboost Cache or the path of one (build it with "
                         f"oocboost.build_cache), got {type(data).__name__}")


def cli_input(cache, params, spec, name):
    """The opened training cache (with a label) and the command line's ``params``
    checked against the learner's :class:`~oocboost.utils.params.ParamSpec` ``spec``
    (aliases resolved; an unknown name is a ParameterError naming ``--learner name``)."""
    cache = open_cache(cache)
    if not cache.has_label:
        raise ParameterError(f"training cache {cache.path} has no label column; rebuild it "
                             f"with --label")
    return cache, spec.resolve(params, defaults=False, owner=f"--learner {name}")


def task_and_classes(params, cache):
    """The command line's task (:func:`infer_task`; ``task`` and ``objective`` are
    popped from ``params``) and, for classification, the cache's classes ``0..K-1``."""
    task = infer_task(params, cache)
    params.pop("task", None)
    params.pop("objective", None)
    if task != "classification":
        return task, None
    classes = cache_classes(cache)
    if classes is None or len(classes) < 2:
        raise ParameterError(f"cache {cache.path}: classification needs integer class "
                             f"labels 0..K-1 with K >= 2 (use --param task=regression for "
                             f"a numeric target)")
    return task, classes


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
    if params.get("criterion") in REGRESSION_CRITERIA:
        return "regression"
    if params.get("criterion") in CLASSIFICATION_CRITERIA:
        return "classification"
    classes = cache_classes(cache)
    if classes is not None and 2 <= len(classes) <= MAX_AUTO_CLASSES:
        return "classification"
    return "regression"


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


def require_classes(cache):
    """The classes ``0..K-1`` of a cache's labels as an int64 array; raise naming the
    cache when its labels are not integer classes from 0."""
    stats = cache.manifest.get("label_stats") or {}
    from ...cache.label_stats import LabelStats

    classes = LabelStats.from_dict(stats).class_weights if stats else None
    if not classes:
        raise ParameterError(f"cache {cache.path}: labels are not integer classes")
    classes = np.array(sorted(classes))
    if not np.array_equal(classes, np.arange(len(classes))):
        raise ParameterError(f"cache {cache.path}: class labels must be 0..K-1, got "
                             f"{classes.tolist()}")
    return classes


def label_summary(cache, task, n_classes=None, poisson=False, check_sum=True):
    """Check the labels (one labels-only pass) and count rows per class.

    ``check_sum`` False leaves Poisson's positive-sum check to the caller (a worker's
    shard of a distributed run may sum to 0 when the whole data does not).

    Returns
    -------
    ndarray (K,) int64 of rows per class (classification), or None.

    Raises
    ------
    InputError
        Missing or non-finite labels; class labels that are not integers in [0, K);
        with ``poisson``, negative targets or targets summing to 0 (scikit-learn's).
    """
    counts = np.zeros(n_classes or 0, np.int64)
    total = 0.0
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
        elif poisson:
            if (y < 0).any():
                i = int(np.flatnonzero(y < 0)[0])
                raise InputError(f"cache {cache.path}: row {i + block.row_start} has target "
                                 f"{y[i]!r}; criterion='poisson' needs targets >= 0")
            total += float(np.sum(y, dtype=np.float64))
    if poisson and check_sum and not total > 0:
        raise InputError(f"cache {cache.path}: the targets sum to {total!r}; "
                         f"criterion='poisson' needs a positive sum")
    return counts if task == "classification" else None


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
