"""The command line's Hoeffding tree: ``oocboost train CACHE --learner hoeffding-tree``
(and ``online-bagging``), with river's parameter names given as ``--param key=value``."""
from ...errors import ParameterError
from .config import resolve_config
from .export import hoeffding_model
from .stream import learn_cache, new_learners, poisson_draws

#: Parameters ``--param`` accepts (river's names; ``n_estimators`` and ``seed`` for online
#: bagging, ``task`` to force classification or regression).
CLI_PARAMS = ("grace_period", "max_depth", "split_criterion", "delta", "tau",
              "leaf_prediction", "nb_threshold", "min_branch_fraction", "max_share_to_split",
              "min_samples_split", "merit_preprune", "split_revision",
              "min_samples_reevaluate", "max_leaves", "task", "seed", "prefetch",
              "batch_rows")


def train_hoeffding_from_params(name, params, cache, *, n_estimators=10, memory_limit=None,
                                verbose=False):
    """Learn ``cache`` in one streamed pass with a Hoeffding tree ("hoeffding-tree") or
    online bagging of them ("online-bagging", ``n_estimators`` trees).

    Parameters
    ----------
    name : {"hoeffding-tree", "online-bagging"}
    params : dict
        River's parameter names (:data:`CLI_PARAMS`).
    cache : Cache or path
    n_estimators : int
        Trees of online bagging.
    memory_limit : int, str or None
    verbose : bool
        Print the prequential scores and the tree's size.

    Returns
    -------
    Model
        ``attributes["prequential"]`` holds the test-then-train scores.
    """
    from ...model.model import source_attributes
    from ..boosting.training import open_cache
    from ..forest.forest import infer_task
    from ..forest.passes import cache_classes

    cache = open_cache(cache)
    p = dict(params or {})
    unknown = sorted(set(p) - set(CLI_PARAMS))
    if unknown:
        raise ParameterError(f"unknown parameter(s) {unknown} for --learner {name}; known: "
                             f"{', '.join(CLI_PARAMS)}")
    task = infer_task(p, cache)
    p.pop("task", None)
    seed = int(p.pop("seed", 0))
    prefetch = p.pop("prefetch", None)
    batch_kw = {"batch_rows": int(p.pop("batch_rows"))} if "batch_rows" in p else {}
    classes = cache_classes(cache) if task == "classification" else None
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
    learners = new_learners(config, cache.bin_mapper, n_trees, block_rows=cache.block_rows,
                            code_bytes_per_row=cache.code_bytes_per_row, prefetch=prefetch)
    score = learn_cache(learners, cache, prefetch=prefetch, evaluate=True,
                        draws=poisson_draws(seed, n_trees) if bagging else None, **batch_kw)
    record = {**p, "task": task, **({"seed": seed, "n_estimators": n_trees} if bagging
                                     else {})}
    model = hoeffding_model(learners, cache.feature_names, classes=classes, params=record,
                            learner_name="online_bagging" if bagging else "hoeffding_tree",
                            attributes={**source_attributes(cache),
                                        "prequential": score.scores(),
                                        "rows_seen": int(learners[0].rows_seen)})
    if verbose:
        tree = learners[0].tree
        print(f"{name}: {learners[0].rows_seen} rows, prequential {score.scores()}, "
              f"{tree.leaves().size} leaves ({tree.n_active} collecting statistics)")
    return model
