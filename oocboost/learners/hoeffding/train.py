"""The command line's Hoeffding tree: ``oocboost train CACHE --learner hoeffding-tree``
(and ``online-bagging``), with river's parameter names given as ``--param key=value``."""
from ...errors import ParameterError
from ...utils.log import get_logger, say
from .config import resolve_config
from .export import hoeffding_model
from .state import restore_learners
from .stream import learn_cache, new_learners, poisson_draws

logger = get_logger(__name__)


def new_rows_start(init, cache):
    """First row of ``cache`` that the model ``init`` has not learned: the row an append
    started at when the model learned the cache as it was before (its fingerprint then
    is the model's ``data_fingerprint``), else 0 (every row is new)."""
    if init is None:
        return 0
    learned = init.attributes.get("data_fingerprint")
    for entry in cache.manifest.get("appends") or []:
        if learned is not None and entry.get("previous_fingerprint") == learned \
                and entry.get("row_start") == init.attributes.get("rows_seen"):
            return int(entry["row_start"])
    return 0


def merge_scores(score, attributes):
    """Add a saved model's prequential sums to this run's."""
    weight = float(attributes.get("prequential_weight") or 0.0)
    for k, v in (attributes.get("prequential") or {}).items():
        score.sums[k] = score.sums.get(k, 0.0) + v * weight
    score.weight += weight


def _init(init_model, cache):
    """The saved model to go on from (bins checked against the cache's), or None."""
    if init_model is None:
        return None
    from ...model.model import Model, load_model

    model = init_model if isinstance(init_model, Model) else load_model(init_model)
    if model.bin_mapper != cache.bin_mapper.to_dict():
        raise ParameterError(f"--init-model learned other bins than cache {cache.path}'s "
                             f"(append to its cache, or build this one with --reference)")
    return model



def train_hoeffding_from_params(name, params, cache, *, n_estimators=10, memory_limit=None,
                                verbose=False, init_model=None):
    """Learn ``cache`` in one streamed pass with a Hoeffding tree ("hoeffding-tree") or
    online bagging of them ("online-bagging", ``n_estimators`` trees).

    Parameters
    ----------
    name : {"hoeffding-tree", "online-bagging"}
    params : dict
        River's parameter names (:data:`params.HOEFFDING_SPEC`).
    cache : Cache or path
    n_estimators : int
        Trees of online bagging.
    memory_limit : int, str or None
    verbose : bool
        Print the prequential scores and the tree's size.
    init_model : Model, model file or None
        A saved Hoeffding model (with its learning state) to go on learning from: its
        trees, classes and, for online bagging, seed; ``params`` as given.

    Returns
    -------
    Model
        ``attributes["prequential"]`` holds the test-then-train scores.
    """
    from ...model.model import source_attributes
    from ..common.data import cache_classes, infer_task, open_cache
    from .params import HOEFFDING_SPEC

    cache = open_cache(cache)
    init = _init(init_model, cache)
    p = HOEFFDING_SPEC.resolve(params, defaults=False, owner=f"--learner {name}")
    task = infer_task(p, cache) if init is None else (
        "classification" if init.classes else "regression")
    p.pop("task", None)
    seed = int(p.pop("seed", init.attributes.get("seed", 0) if init else 0))
    prefetch = p.pop("prefetch", None)
    batch_kw = {"batch_rows": int(p.pop("batch_rows"))} if "batch_rows" in p else {}
    classes = cache_classes(cache) if task == "classification" else None
    if init is not None and init.classes:
        classes = list(init.classes)
    if task == "classification" and (classes is None or len(classes) < 2):
        raise ParameterError(f"cache {cache.path}: classification needs integer class "
                             f"labels 0..K-1 with K >= 2 (--param task=regression for a "
                             f"numeric target)")
    config = resolve_config(task, len(classes) if classes else 0,
                            memory_limit=memory_limit, **p)
    bagging = name == "online-bagging"
    if bagging and task != "classification":
        raise ParameterError("--learner online-bagging is a classifier")
    n_trees = n_estimators if bagging else 1
    if init is not None:
        learners = restore_learners(init, config, block_rows=cache.block_rows,
                                    code_bytes_per_row=cache.code_bytes_per_row,
                                    prefetch=prefetch, learner_name=name.replace("-", "_"))
        n_trees = len(learners)
    else:
        learners = new_learners(config, cache.bin_mapper, n_trees,
                                block_rows=cache.block_rows,
                                code_bytes_per_row=cache.code_bytes_per_row,
                                prefetch=prefetch)
    start = new_rows_start(init, cache)
    score = learn_cache(learners, cache, prefetch=prefetch, evaluate=True,
                        draws=poisson_draws(seed, n_trees) if bagging else None,
                        row_offset=learners[0].rows_seen - start if init is not None
                        else 0, start_row=start, **batch_kw)
    if init is not None:
        merge_scores(score, init.attributes)
    record = {**p, "task": task, **({"seed": seed, "n_estimators": n_trees} if bagging
                                     else {})}
    model = hoeffding_model(learners, cache.feature_names, classes=classes, params=record,
                            learner_name="online_bagging" if bagging else "hoeffding_tree",
                            attributes={**source_attributes(cache),
                                        "prequential": score.scores(),
                                        "prequential_weight": score.weight,
                                        "rows_seen": int(learners[0].rows_seen),
                                        "data_fingerprint": cache.manifest.get(
                                            "fingerprint"),
                                        **({"seed": seed} if bagging else {})})
    if verbose:
        tree = learners[0].tree
        say(logger, f"{name}: {learners[0].rows_seen} rows, prequential {score.scores()}, "
                    f"{tree.leaves().size} leaves ({tree.n_active} collecting statistics)")
    return model


def _stream_run(spec, params, cache, memory_limit, what, own_keys, regression=False):
    """``(cache, tree parameters, the learner's own, classes, config)`` of a streaming
    learner's command-line run: a classifier (classes None for a regressor, when
    ``regression`` allows one, by ``task`` or the labels as for forests)."""
    from ..common.data import cache_classes, infer_task, open_cache

    cache = open_cache(cache)
    p = spec.resolve(params, owner=f"--learner {spec.learner}")
    own = {k: p.pop(k) for k in own_keys}
    task = infer_task(p, cache) if regression else "classification"
    p.pop("task", None)
    if task == "regression":
        return cache, p, own, None, resolve_config("regression", 0,
                                                   memory_limit=memory_limit, **p)
    classes = cache_classes(cache)
    if classes is None or len(classes) < 2:
        raise ParameterError(f"cache {cache.path}: {what} classifies; its labels must be "
                             f"class indices 0..K-1, K >= 2"
                             + (" (--param task=regression for a numeric target)"
                                if regression else ""))
    config = resolve_config("classification", len(classes), memory_limit=memory_limit, **p)
    return cache, p, own, classes, config


def train_adaptive_forest_from_params(params, cache, *, n_estimators=10, memory_limit=None,
                                      verbose=False):
    """Learn ``cache`` in one streamed pass with an adaptive random forest of
    ``n_estimators`` trees (river's ``ARFClassifier`` / ``ARFRegressor`` names, ``task``
    as for forests,
    :data:`params.ADAPTIVE_FOREST_SPEC`); ``attributes`` keep the prequential scores and
    the drifts and warnings per tree position."""
    from ...model.model import source_attributes
    from .adaptive import new_adaptive_forest
    from .params import ADAPTIVE_FOREST_SPEC

    cache, p, forest_p, classes, config = _stream_run(
        ADAPTIVE_FOREST_SPEC, params, cache, memory_limit, "an adaptive random forest",
        ("max_features", "lambda_value", "disable_weighted_vote", "drift_delta",
         "warning_delta", "seed", "prefetch", "batch_rows", "aggregation_method"),
        regression=True)
    regression = classes is None
    if forest_p["disable_weighted_vote"] is None:    # river's defaults differ by task
        forest_p["disable_weighted_vote"] = regression
    learners, forest = new_adaptive_forest(
        config, cache.bin_mapper, n_estimators, max_features=forest_p["max_features"],
        seed=forest_p["seed"], drift_delta=forest_p["drift_delta"],
        warning_delta=forest_p["warning_delta"],
        weighted_vote=not forest_p["disable_weighted_vote"],
        aggregation=forest_p["aggregation_method"], block_rows=cache.block_rows,
        code_bytes_per_row=cache.code_bytes_per_row, prefetch=forest_p["prefetch"])
    score = learn_cache(learners, cache, prefetch=forest_p["prefetch"], evaluate=True,
                        draws=poisson_draws(forest_p["seed"], n_estimators,
                                            forest_p["lambda_value"]),
                        batch_rows=forest_p["batch_rows"], ensemble=forest)
    record = {**p, **forest_p, "n_estimators": n_estimators}
    model = hoeffding_model(learners, cache.feature_names, classes=classes, params=record,
                            learner_name="adaptive_random_forest",
                            tree_weight=forest.vote_weights(),
                            aggregation=forest.model_aggregation(),
                            attributes={**source_attributes(cache),
                                        "prequential": score.scores(),
                                        "prequential_weight": score.weight,
                                        "rows_seen": int(forest.rows_seen),
                                        "drifts": forest.n_drifts.tolist(),
                                        "warnings": forest.n_warnings.tolist(),
                                        "seed": int(forest_p["seed"])})
    if verbose:
        say(logger, f"adaptive-random-forest: {forest.rows_seen} rows, prequential "
                    f"{score.scores()}, {int(forest.n_drifts.sum())} drifts, "
                    f"{int(forest.n_warnings.sum())} warnings")
    return model


def train_adaptive_tree_from_params(params, cache, *, memory_limit=None, verbose=False):
    """Learn ``cache`` in one streamed pass with a Hoeffding adaptive tree (river's
    ``HoeffdingAdaptiveTreeClassifier`` / ``Regressor`` names,
    :data:`params.ADAPTIVE_TREE_SPEC`; ``task`` as for forests);
    ``attributes`` keep the prequential scores and the alternate trees' counts."""
    from ...model.model import source_attributes
    from .adaptive_tree import BootstrapCopies, new_adaptive_tree
    from .params import ADAPTIVE_TREE_SPEC

    cache, p, tree_p, classes, config = _stream_run(
        ADAPTIVE_TREE_SPEC, params, cache, memory_limit, "a Hoeffding adaptive tree",
        ("bootstrap_sampling", "drift_window_threshold", "drift_delta",
         "switch_significance", "seed", "prefetch", "batch_rows"), regression=True)
    learners, tree = new_adaptive_tree(
        config, cache.bin_mapper, drift_delta=tree_p["drift_delta"],
        drift_window_threshold=tree_p["drift_window_threshold"],
        switch_significance=tree_p["switch_significance"], block_rows=cache.block_rows,
        code_bytes_per_row=cache.code_bytes_per_row, prefetch=tree_p["prefetch"])
    score = learn_cache(learners, cache, prefetch=tree_p["prefetch"], evaluate=True,
                        draws=BootstrapCopies(tree_p["seed"], tree_p["bootstrap_sampling"]),
                        batch_rows=tree_p["batch_rows"], ensemble=tree)
    counts = {"alternate_trees": tree.n_alternate_trees,
              "switched_alternate_trees": tree.n_switch_alternate_trees,
              "pruned_alternate_trees": tree.n_pruned_alternate_trees}
    model = hoeffding_model(learners, cache.feature_names, classes=classes,
                            params={**p, **tree_p},
                            learner_name="hoeffding_adaptive_tree",
                            attributes={**source_attributes(cache),
                                        "prequential": score.scores(),
                                        "prequential_weight": score.weight,
                                        "rows_seen": int(tree.rows_seen), **counts,
                                        "seed": int(tree_p["seed"])})
    if verbose:
        say(logger, f"hoeffding-adaptive-tree: {tree.rows_seen} rows, prequential "
                    f"{score.scores()}, {counts}")
    return model
