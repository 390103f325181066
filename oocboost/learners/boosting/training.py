"""``train()``: the boosting loop around callbacks (XGBoost's ``xgboost.train`` shape).

Example
-------
>>> import oocboost
>>> cache = oocboost.build_cache("train.csv", "train.oocb", label="y")      # doctest: +SKIP
>>> valid = oocboost.build_cache("valid.csv", "valid.oocb", label="y",
...                              reference=cache)                            # doctest: +SKIP
>>> model = oocboost.train({"objective": "binary:logistic", "eta": 0.1}, cache, 100,
...                        evals=[(valid, "valid")],
...                        early_stopping_rounds=10)                   # doctest: +SKIP
"""
from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from ...cache.label_stats import LabelStats
from ...engine.plan import plan_train
from ...engine.quantized import quantized_hist_dtype
from ...engine.quantized import scratch_bytes as quantized_scratch_bytes
from ...engine.symmetric import symmetric_nodes_in_flight
from ...errors import MemoryLimitError, ModelError, ParameterError, SchemaError
from ...model.metrics import get_metric
from ...model.objectives import POISSON_MAX_DELTA_STEP, get_objective
from ...utils.log import get_logger, say
from ...utils.progress import ProgressBar
from ...utils.rss import current_rss, peak_rss
from ...utils.threads import thread_limit
from ..common.data import open_cache
from . import booster as boosting
from . import callback as cb
from .class_weight import with_class_weights
from .custom import CustomGradients, CustomMetric
from .dart import DartRound
from .linear_fit import linear_scratch_bytes
from .params import objective_params, resolve_params

if TYPE_CHECKING:
    from ...model.model import Model

logger = get_logger(__name__)


def check_same_bins(reference, other, other_name):
    """Refuse evaluation data binned with other edges than the training cache."""
    if reference.bin_mapper != other.bin_mapper:
        ref_names, names = list(reference.feature_names), list(other.feature_names)
        if ref_names != names:
            missing = [n for n in ref_names if n not in names]
            extra = [n for n in names if n not in ref_names]
            raise SchemaError(f"{other_name} has other columns than the training cache "
                              f"(missing: {missing}, extra: {extra})")
        raise SchemaError(f"{other_name} was binned with other bin edges than the training "
                          f"cache; rebuild it with --reference {reference.path}")


def _metric_names(params, objective):
    names = params["eval_metric"] or [objective.default_metric]
    return list(names)


def add_round_margins(model, eval_sets, round_trees):
    """Add the trees of ``round_trees`` (a round range) to each eval set's margins.

    The rounds are walked as a model of their own: the whole model's flattened trees
    (validated and rebuilt whenever a tree is added) would cost every round time in
    proportion to the trees so far (1,275 tree flattenings for 50 rounds)."""
    rounds = model.slice_rounds(*round_trees)
    for entry in eval_sets:
        cache, margins = entry[0], entry[2]
        for block in cache.iter_blocks(prefetch=1):
            rows = slice(block.row_start, block.row_start + block.n_rows)
            margins[rows] += rounds.predict_margin_binned(block.codes, cache.max_bin - 1,
                                                          include_base=False)


def score_metrics(objective, metrics, margins, labels, weights, group_ptr=None):
    """``{metric name: value}`` of one evaluation set's margins."""
    prediction = objective.eval_transform(margins)
    scores = {}
    for m in metrics:
        if getattr(m, "needs_groups", False):
            value = float(m(labels, prediction, weights, group_ptr=group_ptr))
        else:
            value = float(m(labels, prediction, weights))
        scores[m.name] = value  # a custom metric names itself when called
    return scores


def _evaluate(model, objective, eval_sets, metrics, round_trees):
    """Add the round's trees to each eval set's margins, then compute every metric."""
    add_round_margins(model, eval_sets, round_trees)
    grouped = any(getattr(m, "needs_groups", False) for m in metrics)
    return {name: score_metrics(objective, metrics, margins, labels, weights,
                                cache.group_ptr if grouped else None)
            for cache, name, margins, labels, weights in eval_sets}


def train(params: dict[str, Any] | None, dtrain: Any, num_boost_round: int = 10, *,
          evals: Any = (), early_stopping_rounds: int | None = None,
          callbacks: list | None = None, init_model: Any = None,
          verbose_eval: bool | int = True, evals_result: dict | None = None,
          memory_limit: int | str | None = None, obj: Callable | None = None,
          custom_metric: Callable | None = None) -> Model:
    """Train a gradient-boosted tree ensemble from a cache.

    Parameters
    ----------
    params : dict
        XGBoost-style parameters (see
        ``oocboost.learners.boosting.params.BOOSTER_DEFAULTS``; aliases such as ``eta``,
        ``lambda``, ``alpha`` accepted).
    dtrain : Cache or path
        The training cache (with a label column).
    num_boost_round : int
        Rounds (each adds one tree, or one per class for ``multi:*``).
    evals : sequence of (Cache or path, str)
        Evaluation sets, binned with the training cache's edges (``reference=``).
    early_stopping_rounds : int or None
        Stop when the last eval set's last metric has not improved for this many rounds.
    callbacks : list of TrainingCallback
    init_model : Model or path or None
        Continue boosting from this model (its trees stay; margins start from it).
    verbose_eval : bool or int
        Print the evaluation every round (or every ``verbose_eval`` rounds).
    evals_result : dict or None
        Filled with the evaluation log (``{data: {metric: [values]}}``).
    memory_limit : int or str or None
        Peak resident memory of this process, e.g. ``"1GB"``; overrides the parameter.
    obj : callable (predt, labels) -> (grad, hess) or None
        Your own gradients, per block (``learners/boosting/custom.py``); the named
        ``objective`` still gives the transform, label checks and default metric, and
        the intercept is ``base_score`` (default 0.5 through its link), as XGBoost.
    custom_metric : callable (predt, labels) -> (name, value) or None
        Evaluated on every evaluation set after each round, after the built-in metrics.

    Returns
    -------
    Model
        With ``best_iteration`` when early stopping ran, ``evals_result`` and the
        ``training_log`` (telemetry: time per phase, passes, bytes read, peak RSS).
    """
    return train_with(params, dtrain, num_boost_round, evals=evals,
                      early_stopping_rounds=early_stopping_rounds, callbacks=callbacks,
                      init_model=init_model, verbose_eval=verbose_eval,
                      evals_result=evals_result, memory_limit=memory_limit, obj=obj,
                      custom_metric=custom_metric)


def train_with(params, dtrain, num_boost_round=10, *, evals=(), early_stopping_rounds=None,
               callbacks=None, init_model=None, verbose_eval=True, evals_result=None,
               memory_limit=None, obj=None, custom_metric=None, distributed=None):
    """:func:`train`, and on one worker of a distributed run (``oocboost.dask``) with
    ``distributed``: an object with ``n_rows`` and ``label_stats`` of all the shards,
    ``reduce_histograms(hist, slots)`` (sums a pass's histograms over the workers),
    ``agree_min(n)`` (the smallest ``n`` of any worker: the nodes in flight) and
    ``evaluate(model, objective, eval_sets, metrics, round_trees)`` (the metrics of the
    evaluation shards of every worker, the same on each)."""
    from ...model.model import Model, load_model

    p, cache, objective, metrics = start_run(params, dtrain, num_boost_round, memory_limit)
    if distributed is not None:
        _check_distributed(objective, p, obj)
    if obj is not None:
        objective = CustomGradients(objective, obj)
        if p["base_score"] is None:
            p["base_score"] = 0.5  # XGBoost's with a custom objective: no estimate
    if custom_metric is not None:
        metrics = metrics + [CustomMetric(custom_metric)]
    objective = with_class_weights(p, objective, cache,
                                   None if distributed is None else distributed.label_stats)
    if init_model is not None and not isinstance(init_model, Model):
        init_model = load_model(init_model)
    if init_model is not None and init_model.n_trees:
        init_model = _on_cache_edges(init_model, cache)
    base = _base_margin(objective, p, cache, init_model,
                        None if distributed is None else distributed.label_stats)
    # Blocks an earlier run left resident are in this process's RSS, which the plan takes
    # as its baseline: this run budgets residency itself.
    cache.release_resident()
    plan = _plan(p, cache, objective)
    if distributed is not None:
        # every worker must build the same nodes in the same passes
        plan = dataclasses.replace(plan, hist_nodes=distributed.agree_min(plan.hist_nodes))
    if p["verbosity"] >= 2:
        say(logger, plan.describe())
    callbacks = list(callbacks or [])
    if verbose_eval and evals:
        period = verbose_eval if not isinstance(verbose_eval, bool) else 1
        callbacks.append(cb.EvaluationMonitor(period=period))
    if early_stopping_rounds is not None:
        callbacks.append(cb.EarlyStopping(early_stopping_rounds))
    eval_sets = _eval_sets(evals, cache, objective, base)
    _check_groups_for_metrics(metrics, eval_sets)
    model = Model.empty_boosted(objective, base, cache, p,
                                trees_per_round=objective.n_outputs)
    if obj is not None:
        model.attributes["custom_objective"] = getattr(obj, "__name__", "custom")
    if init_model is not None:
        model.extend_from(init_model)
        _add_model_margins(init_model, eval_sets)
    log = {} if evals_result is None else evals_result
    log.clear()
    t_start = time.perf_counter()
    with thread_limit(p["n_threads"], cache.n_rows):
        state = boosting.BoostingState(cache, objective, p, plan, base,
                                       distributed=distributed)
        try:
            uncounted = [i for i, t in enumerate(model.trees)
                         if t.n_nodes > 1 and not t.n_samples.any()]
            counted = boosting.initial_margins(state, init_model,
                                               [model.trees[i] for i in uncounted])
            for i, tree in zip(uncounted, counted):
                model.trees[i] = tree
            evaluate = _evaluate if distributed is None else distributed.evaluate
            model, rss_peak = _boost(model, state, cb.CallbackContainer(callbacks), log,
                                     int(num_boost_round), p, objective, eval_sets, metrics,
                                     evaluate)
        finally:
            state.close()
    n_trees_new = max(model.n_rounds - (init_model.n_rounds if init_model else 0), 1)
    model.evals_result = {k: {m: list(v) for m, v in d.items()} for k, d in log.items()}
    model.training_log = _training_log(state, plan, time.perf_counter() - t_start,
                                       n_trees_new, rss_peak)
    if p["verbosity"] >= 2:
        say(logger, format_training_log(model.training_log))
    return model


def _plan(p, cache, objective):
    """The memory plan of a run (raises MemoryLimitError when the limit cannot hold it).
    Symmetric trees need every node of a level in the same pass: their plan must hold
    those histograms (``engine.symmetric.symmetric_nodes_in_flight``)."""
    symmetric = p["grow_policy"] == "symmetric"
    needed = symmetric_nodes_in_flight(p["max_depth"], objective.n_outputs) if symmetric \
        else 64
    scratch = linear_scratch_bytes(p, sum(t == "numeric"
                                          for t in cache.bin_mapper.feature_types),
                                   objective.n_outputs, cache.block_rows)
    detail = "linear leaves' feature values"
    hist_itemsize = 8
    if p["use_quantized_grad"]:
        # int32 sums, and the float64 sums the split search reads a few slots at a time
        hist_itemsize = quantized_hist_dtype(cache.n_rows, p["num_grad_quant_bins"]).itemsize
        scratch = quantized_scratch_bytes(cache.planned_hist_columns or cache.n_features,
                                          cache.max_bin)
        detail = "split search's float64 sums of quantized histograms"
    plan = plan_train(p["memory_limit"], n_rows=cache.n_rows, n_features=cache.n_features,
                      n_hist_columns=cache.planned_hist_columns,
                      max_bin=cache.max_bin, n_stats=2, n_outputs=objective.n_outputs,
                      block_rows=cache.block_rows, n_blocks=cache.n_blocks,
                      codes_itemsize=np.dtype(cache.codes_dtype).itemsize,
                      code_bytes_per_row=cache.code_bytes_per_row,
                      n_trees_in_pass=objective.n_outputs, prefetch=p["prefetch"],
                      max_nodes_in_flight=max(64, (needed + 1) // 2),
                      state_bytes_per_row=boosting.state_spec(objective.n_outputs,
                                                              p).bytes_per_row(),
                      block_scratch_bytes=scratch, block_scratch_detail=detail,
                      hist_itemsize=hist_itemsize)
    if symmetric:
        check_symmetric_cache(cache)
        if 2 * plan.hist_nodes < needed:
            raise MemoryLimitError(
                f"grow_policy='symmetric' at max_depth={p['max_depth']} builds {needed} "
                f"node histograms in one pass ({plan.hist_bytes_per_node // 2:,} bytes "
                f"each); memory_limit={p['memory_limit']} holds {2 * plan.hist_nodes}: "
                f"raise the limit or lower max_depth")
    return plan


def check_symmetric_cache(cache):
    """Symmetric trees split numeric features only: a categorical one is refused, with
    the way to use it (its ordered target statistic, a numeric feature)."""
    names = [n for n, cat in zip(cache.feature_names, cache.bin_mapper.is_categorical)
             if cat]
    if names:
        raise ParameterError(f"grow_policy='symmetric' splits numeric features; cache "
                             f"{cache.path} has categorical ones ({', '.join(names[:5])}): "
                             f"build it with cat_encoding='ordered_ts' (CatBoost's own "
                             f"encoding for its symmetric trees)")


def check_plan(params, dtrain, num_boost_round=1, memory_limit=None):
    """Plan a run without running it: raises MemoryLimitError (naming what does not
    fit) when ``memory_limit`` cannot hold it, here. A distributed run asks each worker
    first, so that one which cannot meet its limit refuses before any training."""
    p, cache, objective, _ = start_run(params, dtrain, num_boost_round, memory_limit)
    cache.release_resident()
    _plan(p, cache, objective)


def check_distributed_params(params):
    """Refuse parameters a distributed run cannot honour (before it starts)."""
    p = resolve_params(dict(params or {}))
    _check_distributed(get_objective(p["objective"], objective_params(p)), p, None)


def _check_distributed(objective, p, obj):
    """Refuse, by name, what a distributed run cannot grow as one machine would."""
    why = None
    if getattr(objective, "needs_all_rows", False) or getattr(objective, "needs_groups",
                                                               False):
        why = f"objective {objective.name} needs every row or whole query groups at once"
    elif objective.leaf_refresh_quantile is not None:
        why = (f"objective {objective.name} resets each leaf to a quantile of its rows' "
               f"residuals, which are spread over the workers")
    elif p["booster"] != "gbtree":
        why = f"booster={p['booster']!r} (only 'gbtree')"
    elif p["sampling_method"] != "uniform" or p["data_sample_strategy"] != "bagging":
        why = "gradient-based sampling draws rows from each worker's own gradients"
    elif obj is not None:
        why = "a custom objective (obj=) cannot be sent to the workers"
    elif p["linear_tree"]:
        why = ("linear_tree=True (each leaf's model is fitted from sums over every row; "
               "LightGBM's linear trees need its serial tree learner too)")
    elif p["boosting_type"] == "ordered":
        why = ("boosting_type='ordered' (the rows' order spans the shards, and the "
               "leaves' values are summed over every row in a pass of their own)")
    if why is not None:
        raise ParameterError(f"not offered in distributed training yet: {why}")


def start_run(params, dtrain, num_boost_round, memory_limit, min_rounds=0):
    """``(resolved params, cache, objective, metrics)`` of a boosting run, checked."""
    user_params = dict(params or {})
    p = resolve_params(user_params)
    if memory_limit is not None:
        p["memory_limit"] = memory_limit
    if int(num_boost_round) < min_rounds:
        raise ParameterError(f"num_boost_round must be >= {min_rounds}, got "
                             f"{num_boost_round}")
    cache = open_cache(dtrain)
    objective, metrics = _objective_and_metrics(p, user_params, cache)
    check_base_margin_width(cache, objective, "training cache")
    check_class_target_stats(cache, objective)
    return p, cache, objective, metrics


def check_class_target_stats(cache, objective):
    """Multiclass boosting needs ordered target statistics per class: a cache whose
    categorical columns are encoded by the mean class index is refused, with the fix."""
    options = (cache.manifest.get("build_params") or {}).get("cat_encoding") or {}
    if objective.n_outputs > 1 and objective.name.startswith("multi:") and options \
            and not options.get("per_class"):
        raise ParameterError(f"cache {cache.path} encodes its categorical columns by "
                             f"their mean label (cat_encoding='ordered_ts'), which orders "
                             f"nothing for {objective.name}: build it with "
                             f"ts_per_class=True (--ts-per-class), one statistic per class")


def check_base_margin_width(cache, objective, what):
    """A cache's per-row base margins must give one column per model output."""
    columns = cache.base_margin_columns
    if columns is not None and len(columns) != objective.n_outputs:
        raise ParameterError(f"{what} {cache.path} has {len(columns)} base margin "
                             f"column(s) ({', '.join(columns)}); objective {objective.name} "
                             f"has {objective.n_outputs} outputs: give one column per output "
                             f"(XGBoost's base_margin of shape (n_rows, n_outputs))")


def _objective_and_metrics(p, user_params, cache):
    """The objective of resolved parameters ``p`` and the metrics to evaluate."""
    if not cache.has_label:
        raise ParameterError(f"training cache {cache.path} has no label column; rebuild it "
                             f"with --label")
    if p["max_bin"] is not None and int(p["max_bin"]) != cache.max_bin:
        raise ParameterError(f"max_bin={p['max_bin']} differs from the cache's max_bin="
                             f"{cache.max_bin}: max_bin is fixed when the cache is built")
    obj_params = objective_params(p)
    if "max_delta_step" in obj_params and "max_delta_step" not in user_params:
        obj_params.pop("max_delta_step")
        if p["objective"] == "count:poisson":
            # XGBoost (3.2) gives count:poisson's trees its 0.7 as their leaf clip too
            p["max_delta_step"] = POISSON_MAX_DELTA_STEP
    objective = _objective_for_labels(p, obj_params, cache)
    metrics = [get_metric(name, **objective.default_metric_params)
               if name == objective.default_metric else get_metric(name)
               for name in _metric_names(p, objective)]
    return objective, metrics


def _objective_for_labels(p, obj_params, cache):
    """The objective, fitted to the cache's label columns: one per target for several
    targets (``n_targets``), or the two bounds an interval objective reads."""
    if p["multi_strategy"] != "one_output_per_tree":
        raise ParameterError(f"multi_strategy={p['multi_strategy']!r} is not offered: "
                             f"targets are learned one tree each "
                             f"('one_output_per_tree', XGBoost's default)")
    objective = get_objective(p["objective"], obj_params)
    k = cache.n_label_columns
    wanted = getattr(objective, "label_columns", 1)
    if k == wanted:
        return objective
    if wanted == 1:
        return get_objective(p["objective"], {**obj_params, "n_targets": k})
    raise ParameterError(f"{objective.name} reads {wanted} label columns, but training "
                         f"cache {cache.path} has {k}: build it with label=[...] naming "
                         f"{wanted} columns")


def _on_cache_edges(init_model, cache):
    """``init_model`` with bin thresholds on ``cache``'s edges: its margins on the cache
    come from them. A model without edges (imported) gets them when its thresholds are
    edges of the cache (built with ``split_points=``); ParameterError otherwise."""
    edges = cache.manifest.get("bin_mapper")
    if init_model.bin_mapper is None:
        try:
            return init_model.on_bin_edges(edges or {})
        except ModelError as exc:
            raise ParameterError(f"init_model has no bin edges of its own and cache "
                                 f"{cache.path}'s do not hold its splits ({exc}); build "
                                 f"the cache with split_points=init_model "
                                 f"(--split-points MODEL)") from None
    if edges != init_model.bin_mapper:
        raise ParameterError(f"init_model's splits are not on cache {cache.path}'s bin "
                             f"edges (it was trained on a cache binned otherwise): build "
                             f"the cache with reference= the model's training cache")
    return init_model


def _base_margin(objective, p, cache, init_model, label_stats=None):
    """Starting margins (n_outputs,): the init model's, a user ``base_score``'s, or the
    objective's estimate from the cache's label statistics (or ``label_stats``, a
    manifest's ``label_stats`` entry: every shard's, merged)."""
    if init_model is not None:
        if init_model.objective != objective.name:
            raise ParameterError(f"init_model was trained with objective "
                                 f"{init_model.objective}, not {objective.name}")
        return np.asarray(init_model.base_margin, dtype=np.float64)
    if p["base_score"] is not None:
        return np.full(objective.n_outputs, objective.base_score_to_margin(p["base_score"]))
    stats = cache.manifest["label_stats"] if label_stats is None else label_stats
    stats = [LabelStats.from_dict(s) for s in stats] if isinstance(stats, list) else \
        LabelStats.from_dict(stats)
    return np.asarray(objective.base_margin(stats), dtype=np.float64)


def _eval_sets(evals, cache, objective, base):
    """``[cache, name, margins, labels, weights]`` per evaluation set, checked."""
    eval_sets = []
    for item in evals or ():
        if not (isinstance(item, (tuple, list)) and len(item) == 2):
            raise ParameterError("evals must be a list of (cache, name) pairs")
        data, name = item
        ecache = open_cache(data, f"evaluation set {name!r}")
        check_same_bins(cache, ecache, f"evaluation set {name!r} ({ecache.path})")
        if not ecache.has_label:
            raise ParameterError(f"evaluation set {name!r} ({ecache.path}) has no label")
        labels, weights = ecache.read_labels()
        objective.check_labels(labels, f"evaluation set {name!r} ({ecache.path})")
        check_base_margin_width(ecache, objective, f"evaluation set {name!r}")
        # a row's own base margin replaces the model's constant one (XGBoost's rule)
        margins = ecache.read_base_margin()
        if margins is None:
            margins = np.tile(base, (ecache.n_rows, 1))
        eval_sets.append([ecache, name, margins, labels, weights])
    return eval_sets


def _check_groups_for_metrics(metrics, eval_sets):
    """A ranking metric needs each evaluation set's query groups."""
    for m in metrics:
        if getattr(m, "needs_groups", False):
            for ecache, name, *_ in eval_sets:
                if ecache.group_ptr is None:
                    raise ParameterError(
                        f"metric {m.name} is computed per query group but evaluation set "
                        f"{name!r} ({ecache.path}) has none: build it with group=COLUMN "
                        f"(--group COLUMN)")


def _add_model_margins(model, eval_sets):
    """Add ``model``'s trees (no intercept) to the evaluation margins: the model that
    training continues from, or DART's change of the dropped trees' weights."""
    for entry in eval_sets:
        ecache, margins = entry[0], entry[2]
        for block in ecache.iter_blocks(prefetch=1):
            rows = slice(block.row_start, block.row_start + block.n_rows)
            margins[rows] += model.predict_margin_binned(block.codes, ecache.max_bin - 1,
                                                         include_base=False)


def _boost(model, state, container, log, num_boost_round, p, objective, eval_sets,
           metrics, evaluate=_evaluate):
    """The rounds, with the callbacks around each. Returns ``(model, rss_peak_bytes)``."""
    rss_peak = current_rss()
    model = container.before_training(model)
    first_round = model.n_rounds
    with ProgressBar(total=num_boost_round, unit="rounds", desc="train",
                     enabled=None if p["verbosity"] >= 1 else False) as bar:
        for i in range(num_boost_round):
            epoch = first_round + i
            if container.before_iteration(model, epoch, log):
                break
            lr = getattr(model, "learning_rate_override", None) or p["learning_rate"]
            change = _grow(model, state, epoch, lr, p)
            if eval_sets:
                if change is not None:
                    _add_model_margins(change, eval_sets)
                res = evaluate(model, objective, eval_sets, metrics, (epoch, epoch + 1))
                for data_name, values in res.items():
                    for metric_name, v in values.items():
                        log.setdefault(data_name, {}).setdefault(metric_name, []).append(v)
                last = next(iter(res.values()))
                bar.set_postfix(" ".join(f"{k}={v:.5f}" for k, v in last.items()))
            bar.update(1)
            rss_peak = max(rss_peak, current_rss())
            if container.after_iteration(model, epoch, log):
                break
    boosting.count_last_round(state)
    return container.after_training(model), rss_peak


def _grow(model, state, epoch, lr, p):
    """Grow and append one round; with DART, drop and rescale (``dart.py``) and return
    the model of the dropped trees' margin change (None otherwise)."""
    if p["booster"] != "dart":
        model.add_round(boosting.grow_round(state, epoch, lr))
        boosting.count_rows(state, model.trees[-state.n_outputs:])
        if state.prev_linear is not None:
            state.prev_linear.add_to_model(model, model.n_trees - state.n_outputs)
        return None
    drop = DartRound(model, p, epoch)
    state.dart_drop = drop.drop_model
    trees = boosting.grow_round(state, epoch, lr)
    w_new, change = drop.commit(model, p, trees, lr)
    boosting.count_rows(state, model.trees[-state.n_outputs:])
    state.prev_values = [v * w_new for v in state.prev_values]
    state.dart_change = change
    state.dart_drop = None
    return change


def _training_log(state, plan, seconds, n_trees_new, rss_peak):
    """The run's telemetry: time per phase, passes, bytes read, peak RSS, the plan."""
    tel = state.telemetry
    return {
        "seconds": seconds,
        "histogram_s": tel.histogram_s, "partition_s": tel.partition_s,
        "split_s": tel.split_s, "gradient_s": state.gradient_s,
        "io_wait_s": state.io_wait_s, "bytes_read": state.bytes_read,
        # reading and writing spilled per-row state (0 when it stays in RAM)
        "state_io_s": state.rows.io_seconds,
        # passes over the cache; a gradient-based sample kept in memory is read by the
        # sampled rounds' later passes instead (row_sampling.py)
        "data_passes": tel.passes - state.sample_passes,
        "passes_per_round": (tel.passes - state.sample_passes) / n_trees_new,
        "sample_passes": state.sample_passes,
        "sample_rows_per_round": state.sample_rows / max(n_trees_new, 1),
        # The process's high-water mark (getrusage), which memory_limit bounds; sampling
        # between rounds missed peaks inside a pass.
        "peak_rss_bytes": int(max(rss_peak, peak_rss())),
        "state_in_ram": bool(plan.state_in_ram),
        "plan": plan.as_dict(),
    }


def format_training_log(log):
    """Human-readable telemetry lines (verbose mode)."""
    return (f"time {log['seconds']:.2f}s: histogram {log['histogram_s']:.2f}s, partition "
            f"{log['partition_s']:.2f}s, split {log['split_s']:.2f}s, gradients "
            f"{log['gradient_s']:.2f}s, I/O wait {log['io_wait_s']:.2f}s, spilled state I/O "
            f"{log.get('state_io_s', 0.0):.2f}s; "
            f"{log['data_passes']} data passes ({log['passes_per_round']:.1f} per round)"
            + (f" and {log['sample_passes']} passes over the in-memory sample "
               f"({log['sample_rows_per_round']:,.0f} rows a round)"
               if log.get("sample_passes") else "")
            + f", {log['bytes_read'] / 2**20:.0f} MiB of codes read; peak RSS "
            f"{log['peak_rss_bytes'] / 2**20:.0f} MiB; per-row state "
            f"{'in RAM' if log['state_in_ram'] else 'spilled to disk'}")
