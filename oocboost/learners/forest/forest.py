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
group (``int32``, in RAM or spilled per block, see ``engine/rowstate.py``): bootstrap draws are
recomputed from a counter-based hash of (seed, tree, row) in every pass.

Randomness is per tree: feature subsets (``max_features``), extra-trees thresholds and
bagging's feature subsets come from ``numpy.random.default_rng([seed, tree, purpose])``
and row draws from (seed, tree, row), so a tree depends only on the seed and its index:
not on the block size, the prefetch depth, the thread count, ``trees_per_pass`` or on
being added later by ``warm_start``.

scikit-learn semantics (where they differ, the docstrings of ``oocboost/sklearn/trees.py`` say
so): splits and leaf values of a single tree equal scikit-learn's when the cache has a
bin per distinct value; ``max_samples`` (bootstrap of ``m`` rows) is drawn as
Poisson(m / n) copies per row; ``max_features`` subsets are drawn per node without
scikit-learn's "skip constant features and draw again" rule.
"""
import time
import warnings

from ...engine.nodes import GrowerTelemetry
from ...errors import ParameterError
from ...utils.log import get_logger, say
from ..common.cart_config import cache_schema, resolve_config
from ..common.data import empty_model, label_summary, open_cache, task_and_classes
from ..common.validate import int_param
from .params import FOREST_SPEC
from .passes import (
    choose_trees_per_pass,
    counted_blocks,
    grow_trees,
    integer_stats,
    label_values,
    new_counters,
    oob_pass,
)

logger = get_logger(__name__)


def train_forest(cache, config, n_estimators, *, model=None, classes=None,
                 distributed=None):
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
    distributed : object or None
        This worker's hooks in a distributed run (``oocboost.dask``; see
        :func:`~.passes.grow_trees`); ``config`` must then have been resolved with every
        worker's rows and classes (:func:`train_forest_on_shard`).

    Returns
    -------
    model : Model
        With ``attributes`` ``oob_score`` (when asked), ``criterion``,
        ``trees_per_pass`` and ``training_log`` (telemetry).
    node_stats : list
        Per new tree ``{"impurity", "weighted_n"}`` (decision trees) or None.
    oob_decision : ndarray (n_rows, n_outputs) or None
    """
    _check_cache(cache, config)
    from ...engine.plan import plan_train
    from ...model.tree import Tree
    from ...utils.threads import thread_limit

    n_estimators = int_param("n_estimators", n_estimators, 1)
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
                                                 plan_train, distributed)
    if config.verbose >= 2:
        say(logger, plan.describe())
    node_stats = []
    oob_decision = None
    telemetry = GrowerTelemetry().as_dict()
    with thread_limit(config.n_jobs, cache.n_rows):
        if new_ids:
            if config.splitter == "oblique":
                from .oblique import grow_oblique_trees as grow
            else:
                grow = grow_trees
            extra = {} if distributed is None else {"distributed": distributed}
            result = grow(cache, config, new_ids, plan=plan, trees_per_pass=trees_per_pass,
                          counters=counters, **extra)
            for arrays in result.trees:
                model.add_tree(Tree(**arrays), group=-1 if config.n_outputs > 1 else 0)
            node_stats = result.node_stats
            telemetry = result.telemetry
            if config.quantile_samples_leaf is not None:
                _add_leaf_samples(cache, model, config, new_ids, plan, counters,
                                  distributed)
        if config.oob_score:
            score, oob_decision, n_without = oob_pass(
                cache, model, config, list(range(model.n_trees)), plan, counters,
                keep_arrays=plan.state_in_ram and distributed is None,
                distributed=distributed)
            if n_without:
                warnings.warn(f"{n_without} rows were drawn by every tree and have no "
                              f"out-of-bag prediction; the OOB score counts them as "
                              f"predicted 0 (as scikit-learn). Use more trees.",
                              UserWarning, stacklevel=3)
            model.attributes["oob_score"] = float(score)
    _set_attributes(model, config, trees_per_pass, classes)
    model.training_log = _training_log(cache, config, telemetry, counters, plan,
                                       trees_per_pass, len(new_ids), t_start, distributed)
    if config.verbose >= 1:
        log = model.training_log
        say(logger, f"{config.learner}: {len(new_ids)} trees in {log['seconds']:.2f}s, "
                    f"{log['data_passes']} data passes ({log['passes_per_tree']:.2f} per "
                    f"tree, {trees_per_pass} trees per pass); histogram "
                    f"{log['histogram_s']:.2f}s, split {log['split_s']:.2f}s, I/O wait "
                    f"{log['io_wait_s']:.2f}s")
    return model, node_stats, oob_decision


def _training_log(cache, config, telemetry, counters, plan, trees_per_pass, n_new,
                  t_start, distributed):
    """What :func:`train_forest` measured, for ``model.training_log``."""
    from ...utils.rss import current_rss, peak_rss

    passes = telemetry["passes"] + counters["oob_passes"] + counters["label_passes"] \
        + counters["surrogate_passes"]
    return {
        "seconds": time.perf_counter() - t_start,
        "histogram_s": telemetry["histogram_s"], "partition_s": telemetry["partition_s"],
        "split_s": telemetry["split_s"], "stats_s": counters["stats_s"],
        "io_wait_s": counters["io_wait_s"], "bytes_read": int(counters["bytes_read"]),
        "data_passes": int(passes), "tree_passes": int(telemetry["passes"]),
        "record_nodes": int(telemetry["record_nodes"]),
        "integer_stats": integer_stats(cache, config,
                                       None if distributed is None else distributed.n_rows),
        "passes_per_tree": telemetry["passes"] / max(n_new, 1),
        "oob_passes": counters["oob_passes"], "trees_per_pass": int(trees_per_pass),
        "surrogate_passes": counters["surrogate_passes"],
        "peak_rss_bytes": int(max(current_rss(), peak_rss())),
        "state_in_ram": bool(plan.state_in_ram),
        "plan": plan.as_dict(),
    }


def _add_leaf_samples(cache, model, config, new_ids, plan, counters, distributed):
    """One more pass: the label samples of the new trees' leaves (quantile forests)."""
    from ...model.leaf_samples import QuantileLeaves
    from .leaf_samples import check_sample_memory, collect_leaf_samples

    if distributed is not None:
        raise ParameterError("quantile_samples_leaf is not available in distributed "
                             "training yet: train the quantile forest on one machine")
    check_sample_memory(model, new_ids, config.quantile_samples_leaf, cache.n_rows,
                        config.memory_limit)
    part = collect_leaf_samples(cache, model, config, new_ids,
                                lambda: counted_blocks(cache, plan, counters))
    counters["label_passes"] += 1
    old = model.part("leaf_samples")
    model.parts["leaf_samples"] = part if old is None else QuantileLeaves(
        old.entries + part.entries)


def _check_cache(cache, config):
    """Refuse a cache these settings cannot train on; ``absolute_error``'s label values."""
    cache.require_one_label("a tree or forest")
    if config.missing_values == "surrogate":
        from ...engine.surrogates import check_surrogate_cache

        check_surrogate_cache(cache)
    if config.splitter == "oblique":
        from .oblique import check_oblique

        check_oblique(config, cache)
    if config.criterion == "absolute_error" and config.label_values is None:
        config.label_values = label_values(cache)


def _set_attributes(model, config, trees_per_pass, classes):
    model.attributes.update({
        "criterion": config.criterion, "trees_per_pass": int(trees_per_pass),
        "n_classes": int(config.n_classes), "splitter": config.splitter,
        "bootstrap_mode": int(config.sample_mode), "bootstrap_lam": float(config.sample_lam),
        "seed": int(config.seed),
    })
    if config.learner == "bagging":
        # what estimators_features_ recomputes (tree_feature_sets)
        model.attributes.update({
            "tree_features": None if config.tree_features is None
            else int(config.tree_features),
            "bootstrap_features": bool(config.bootstrap_features)})
    if classes is not None:
        model.attributes["classes"] = [c.item() if hasattr(c, "item") else c
                                       for c in classes]


_CLI_NAMES = {"random-forest": "random_forest", "extra-trees": "extra_trees",
              "decision-tree": "decision_tree"}


def _init_forest(init_model, learner, cache):
    """The forest to continue (loaded and checked), or None."""
    if init_model is None:
        return None
    from ...model.model import Model, load_model

    model = init_model if isinstance(init_model, Model) else load_model(init_model)
    if model.learner != learner or learner == "decision_tree":
        raise ParameterError(f"--init-model is a {model.learner!r} model; it can only be "
                             f"continued by the same forest learner (not {learner!r})")
    if model.bin_mapper != cache.bin_mapper.to_dict():
        raise ParameterError(f"--init-model was trained on other bins than cache "
                             f"{cache.path}'s (append to the first cache, or build this one "
                             f"with --reference)")
    return model


def learner_of(name):
    """The learner of a command-line name (``random-forest`` -> ``random_forest``)."""
    if name not in _CLI_NAMES:
        raise ParameterError(f"unknown forest learner {name!r}; expected one of "
                             f"{sorted(_CLI_NAMES)}")
    return _CLI_NAMES[name]


def cli_params(name, params, *, verbose=False, memory_limit=None):
    """The command line's ``params`` checked against :data:`params.FOREST_SPEC` (aliases
    such as ``seed`` and ``n_threads`` resolved), ``random_state`` 0 by default (the
    command line is reproducible), ``verbose`` set."""
    p = FOREST_SPEC.resolve(params, defaults=False, owner=f"--learner {name}")
    p.setdefault("random_state", 0)
    p["verbose"] = 2 if verbose else (p.get("verbose") or 0)
    if memory_limit is not None:
        p["memory_limit"] = memory_limit
    return p


def train_forest_from_params(name, params, cache, *, n_estimators, memory_limit=None,
                             verbose=False, init_model=None):
    """The command line's entry: ``oocboost train --learner random-forest --param k=v``.

    Parameters
    ----------
    name : {"random-forest", "extra-trees", "decision-tree"}
    params : dict
        Estimator parameters by scikit-learn name (:data:`params.FOREST_SPEC`); ``seed`` and
        ``n_threads`` are aliases of ``random_state`` and ``n_jobs``; ``task`` forces
        classification or regression (default: inferred, see :func:`infer_task`).
    cache : Cache or path
    n_estimators : int
        Trees (ignored for a decision tree); with ``init_model``, trees added to it.
    memory_limit : int, str or None
    verbose : bool
    init_model : Model, model file or None
        A forest of the same learner trained on this cache's bins: its trees are kept and
        ``n_estimators`` more are grown, with its parameters (``params`` override them)
        and its seed, as scikit-learn's ``warm_start``: tree ``t`` depends only on the
        seed and ``t``, so the result equals one run of all the trees on this cache when
        the cache is the one the first trees saw.

    Returns
    -------
    Model
    """
    learner = learner_of(name)
    cache = open_cache(cache)
    if not cache.has_label:
        raise ParameterError(f"training cache {cache.path} has no label column; rebuild it "
                             f"with --label")
    model = _init_forest(init_model, learner, cache)
    p = dict(params or {})
    if model is not None:
        p = {**{k: v for k, v in model.params.items() if k in FOREST_SPEC}, **p}
    p = cli_params(name, p, verbose=verbose, memory_limit=memory_limit)
    task, classes = task_and_classes(p, cache)
    counts = None
    if task == "classification":
        counts = label_summary(cache, task, len(classes))
    else:
        label_summary(cache, task, poisson=p.get("criterion") == "poisson")
    config = resolve_config(learner, p, task=task, n_rows=cache.n_rows,
                            n_features=cache.n_features, classes=classes,
                            class_counts=counts, schema=cache_schema(cache))
    if model is not None and int(model.n_outputs) != int(config.n_outputs):
        raise ParameterError(f"--init-model has {model.n_outputs} outputs; this cache's "
                             f"labels make {config.n_outputs}")
    total = 1 if learner == "decision_tree" else n_estimators + (model.n_trees if model
                                                                 else 0)
    model, _, _ = train_forest(cache, config, total, classes=classes, model=model)
    record_params(model, p, task)
    return model


def record_params(model, params, task):
    """Save the run's parameters (JSON-able) and task in ``model.params``."""
    model.params = {k: (v if isinstance(v, (int, float, str, bool, type(None))) else str(v))
                    for k, v in params.items()}
    model.params["task"] = task
