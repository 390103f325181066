"""The AdaBoost family on the shared grower: weak trees grown from per-row sample weights.

Every weak learner is a tree grown by :class:`~oocboost.engine.grower.TreeGrower` from cache
blocks with a :class:`~oocboost.engine.policies.CartPolicy` (stumps by default, any depth). The
algorithms differ only in the per-row statistics they hand the grower and in how the
per-row state (sample weights, scores ``F``, miss counts) is updated after each tree:

==============  ===========  ==============================  ==========================
algorithm       criterion    per-row state                   update after tree ``m``
==============  ===========  ==============================  ==========================
``SAMME``       gini         weight                          ``w *= exp(alpha 1{miss})``
``SAMME.R``     gini         weight                          ``w *= exp(-(K-1)/K c.log p)``
``arc-x4``      gini         weight, times missed ``m``      ``w = s (1 + m^4)``
``gentle``      squared      scores ``F`` (T columns)        ``F += f``, ``w = s e^{-y*F}``
``logitboost``  squared      scores ``F`` (T columns)        ``F += f/2`` (or (K-1)/K f)
``R2``          squared      weight, abs. error              ``w *= beta^(1 - L)``
==============  ===========  ==============================  ==========================

Per-row state lives in RAM while it fits ``memory_limit`` and is otherwise spilled per
block beside the cache (``engine/rowstate.py``), exactly like boosting margins.

Passes over the data per round
------------------------------
A depth-``d`` tree is grown in ``d`` passes (root histogram, then one pass per level; a
stump is one pass: its children are terminal). The splits of the last level are applied
in the *next* round's first pass, fused with the weight update and the next root
histogram (as gradient boosting fuses its margin update)::

    round m, pass 0   for each block: apply tree m-1's last splits -> leaf of each row,
                      update the row's weight (or F) with tree m-1, make this round's
                      statistics, add the rows into the root histogram of tree m
    round m, pass k   rows move one level down, histograms of level k

This works because the update of tree ``m-1`` needs only numbers known when it ends:

- SAMME, SAMME.R and arc-x4: the weighted training error of a tree is a function of its
  leaves' class-weight sums, which the grower already has (``err = sum over leaves of
  W_leaf - max_k W_leaf,k``), so ``alpha`` and the stop rules are decided without a pass.
  SAMME normalises exactly (the new total is ``W (1 - err) + W err e^alpha``); SAMME.R
  and arc-x4 normalise lazily by the previous total (gini and leaf proportions are
  invariant to a constant factor on the weights).
- Gentle and LogitBoost: the weights are functions of ``F``; Gentle's are rescaled by the
  previous round's total (a per-tree offset ``c``: ``w = s exp(-y* F - c)``). Their
  ``estimator_errors_`` (weighted error of ``sign f``) are counted in that fused pass,
  so one extra pass at the very end counts the last tree's.
- AdaBoost.R2 normalises errors by their maximum over all rows, so it needs one
  error pass per round (``d + 1`` passes; ``exponential`` loss also one pass over the
  per-row state only, no cache read).

So: SAMME, SAMME.R, arc-x4: ``d`` passes per round; Gentle, LogitBoost: ``d`` per round
plus one at the end; R2: ``d + 1`` per round. ``model.training_log["data_passes"]`` counts
them.

Model encoding
--------------
The weak trees' leaf values hold their contribution to the margins, so
``Model.predict_margin`` (and ``oocboost predict``) give the ensemble's scores:

- SAMME: leaf ``(K,)`` vector ``code / (K-1)``, ``code = 1`` for the leaf's class and
  ``-1/(K-1)`` for the others, tree weight ``alpha``, aggregation ``"mean"``;
  SAMME.R: ``log p - mean_k log p_k`` (= ``h / (K-1)``), weight 1, ``"mean"``. The
  margin is scikit-learn's ``decision_function / (K-1)`` (K > 2; for two classes
  ``decision = margin[:, 1] - margin[:, 0]``), objective ``multi:softprob``: softmax of
  the margin is scikit-learn's ``predict_proba`` (``softmax(decision / (K-1))``, and
  ``softmax([-d, d] / 2)`` for two classes).
- arc-x4: one-hot leaf votes, weight 1, ``"mean"``, objective ``multi:proba``: the margin
  is the fraction of votes per class.
- Gentle, LogitBoost: ``"sum"``, objective ``multi:softprob``. Two classes: one tree per
  round with leaf vector ``(-f, f)`` (so softmax gives FHT's ``p = e^F / (e^F + e^-F)``);
  K classes: K trees per round, tree ``k`` adds to output ``k``.
- AdaBoost.R2: leaf means, weight ``log(1/beta)``, ``"mean"``, ``reg:squarederror``:
  ``Model.predict_margin`` is the weighted *mean* of the trees. AdaBoost.R2 predicts the
  weighted *median*, which is not a sum; the model says so in
  ``attributes["adaboost"]["prediction"] == "weighted_median"`` and ``oocboost.model.predict``
  (hence ``oocboost predict``/``evaluate``) and the estimator honour it.
"""
import math
import time

import numpy as np

from ...engine.rowstate import RowStateSpec
from ...errors import ParameterError
from ...kernels import adaboost_kernels as ak
from ...model.adaboost import REGRESSOR_ALGORITHM
from ...utils.log import get_logger, say
from .families import AdditiveLogistic, GiniBoost, R2Boost
from .mh import MHBoost
from .run import STOP_CHANCE, BoostRun
from .weak import TREE_PARAMS, resolve_weak_tree

logger = get_logger(__name__)

CLASSIFIER_ALGORITHMS = ("SAMME", "SAMME.R", "gentle", "logitboost", "arc-x4", "M1", "MH")
_ALIASES = {"samme": "SAMME", "discrete": "SAMME", "samme.r": "SAMME.R", "real": "SAMME.R",
            "m1": "M1", "adaboost.m1": "M1", "mh": "MH", "adaboost.mh": "MH",
            "gentle": "gentle", "logitboost": "logitboost", "logit": "logitboost",
            "arc-x4": "arc-x4", "arcx4": "arc-x4", "arc_x4": "arc-x4", "r2": "R2",
            "adaboost.r2": "R2"}
LOSSES = tuple(ak.LOSS_CODES)


def canonical_algorithm(name):
    """The canonical spelling of an algorithm name (case-insensitive), or ParameterError."""
    key = str(name).strip().lower() if isinstance(name, str) else None
    if key not in _ALIASES:
        raise ParameterError(f"algorithm must be one of {CLASSIFIER_ALGORITHMS + ('R2',)}, "
                             f"got {name!r}")
    return _ALIASES[key]


def check_boost_params(n_estimators, learning_rate, max_depth, loss="linear"):
    """Validate the shared parameters (the spec's checks, ``params.ADABOOST_SPEC``);
    raise ParameterError naming the culprit."""
    from .params import ADABOOST_SPEC as spec

    if not isinstance(n_estimators, (int, np.integer)) or isinstance(n_estimators, bool) \
            or n_estimators < 1:
        raise ParameterError(f"n_estimators must be a positive integer, got {n_estimators!r}")
    for name, value in (("learning_rate", learning_rate), ("max_depth", max_depth),
                        ("loss", loss)):
        spec[name].check(value)


# --------------------------------------------------------------------------- driver


def _n_classes_of(cache, n_classes):
    from ...cache.label_stats import LabelStats

    if n_classes is not None:
        return int(n_classes)
    stats = cache.manifest.get("label_stats") or {}
    classes = LabelStats.from_dict(stats).class_weights if stats else None
    if not classes:
        raise ParameterError(f"cache {cache.path}: labels are not integer classes; "
                             f"AdaBoost classification needs labels 0..K-1")
    return int(max(classes)) + 1


def train_adaboost(cache, *, algorithm="SAMME", n_estimators=50, learning_rate=1.0,
                   max_depth=1, loss="linear", n_classes=None, random_state=None,
                   memory_limit=None, prefetch=None, state_in_ram=None, n_threads=None,
                   verbose=False, weak_tree=None):
    """Train an AdaBoost ensemble from a cache.

    Parameters
    ----------
    cache : Cache or path
        Training cache with a label column (class indices ``0..K-1`` for classification,
        any real label for ``R2``) and optional sample weights.
    algorithm : {"SAMME", "SAMME.R", "gentle", "logitboost", "arc-x4", "M1", "MH", "R2"}
        ``R2`` is AdaBoost.R2 regression; the others classify. ``M1``: Freund and
        Schapire's AdaBoost.M1 (stops at an error of 1/2); ``MH``: Schapire and Singer's
        AdaBoost.MH with real-valued leaf predictions per class (``mh.py``).
    n_estimators : int
        Boosting rounds (upper bound: boosting stops early on a perfect or useless tree).
    learning_rate : float
        Shrinks each tree's weight (SAMME, R2) or contribution (SAMME.R weights update,
        gentle, logitboost).
    max_depth : int or None
        Depth of the weak trees (1: stumps) when ``weak_tree`` is None.
    loss : {"linear", "square", "exponential"}
        AdaBoost.R2's loss.
    n_classes : int or None
        K; None reads it from the cache's label statistics (largest class + 1).
    random_state : int or None
        Seed of the grower's random generator (ties are broken deterministically, so it
        does not change the result today).
    memory_limit : int or str or None
        Peak memory; decides whether the per-row state stays in RAM.
    prefetch : int or None
        Blocks read ahead (None: the memory plan's choice). Results do not depend on it.
    state_in_ram : bool or None
        Force the per-row state in RAM (True) or spilled beside the cache (False); None
        lets the memory plan decide.
    n_threads : int or None
    verbose : bool
        Print the memory plan and the telemetry.
    weak_tree : dict or None
        Tree parameters of the weak learner (scikit-learn's ``DecisionTreeClassifier`` /
        ``DecisionTreeRegressor`` names: ``max_depth``, ``min_samples_split``,
        ``min_samples_leaf``, ``min_weight_fraction_leaf``, ``max_features``,
        ``max_leaf_nodes``, ``min_impurity_decrease``, ``splitter``, ``criterion``);
        None: depth-``max_depth`` trees (see ``weak.py``).

    Returns
    -------
    Model
        ``learner="adaboost"``; ``attributes["adaboost"]`` holds ``algorithm``,
        ``estimator_weights`` and ``estimator_errors`` (length ``n_estimators``, zeros
        and ones after an early stop, as scikit-learn), ``stop_reason``, ``stop_round``,
        ``n_classes`` and ``prediction`` (``"margin"`` or ``"weighted_median"``).
    """
    from ...utils.threads import thread_limit
    from ..common.data import open_cache

    algorithm = canonical_algorithm(algorithm)
    check_boost_params(n_estimators, learning_rate, max_depth, loss)
    cache = open_cache(cache)
    cache.require_one_label("AdaBoost")
    if not cache.has_label:
        raise ParameterError(f"training cache {cache.path} has no label column; rebuild it "
                             f"with --label")
    regression = algorithm == REGRESSOR_ALGORITHM
    K = 0 if regression else _n_classes_of(cache, n_classes)
    if not regression and K < 2:
        raise ParameterError(f"classification needs at least two classes, got {K}")
    family = _family(algorithm)
    weak = resolve_weak_tree(algorithm, weak_tree, max_depth=max_depth, n_rows=cache.n_rows,
                             n_features=cache.n_features)
    spec = RowStateSpec(family.state_fields() if regression
                        else family.state_fields(K, algorithm))
    plan = _plan(cache, spec, algorithm, K, memory_limit, prefetch)
    if verbose:
        say(logger, plan.describe())
    seed = 0 if random_state is None else int(random_state)
    run = BoostRun(cache, spec, plan, weak=weak, seed=seed, prefetch=prefetch,
                   state_in_ram=state_in_ram)
    learner = (family(run, loss, learning_rate) if regression
               else family(run, algorithm, K, learning_rate))
    t_start = time.perf_counter()
    try:
        with thread_limit(n_threads, cache.n_rows):
            rounds, weights, errors, stop = _boost(learner, int(n_estimators), algorithm,
                                                   max_depth, K)
    finally:
        run.close()
    model = _adaboost_model(cache, algorithm, K, rounds, weights, errors, stop,
                            trees_per_round=learner.n_trees,
                            params={"algorithm": algorithm, "n_estimators": int(n_estimators),
                                    "learning_rate": float(learning_rate),
                                    "max_depth": None if max_depth is None else int(max_depth),
                                    "loss": loss, "random_state": random_state,
                                    "weak_tree": dict(vars(weak))})
    tel = run.telemetry
    model.training_log = {
        "seconds": time.perf_counter() - t_start, "histogram_s": tel.histogram_s,
        "partition_s": tel.partition_s, "split_s": tel.split_s, "update_s": run.update_s,
        "io_wait_s": run.io_wait_s, "bytes_read": run.bytes_read,
        "data_passes": run.passes, "state_only_passes": run.state_passes,
        "passes_per_round": run.passes / max(len(rounds), 1),
        "state_in_ram": bool(run.state_in_ram), "plan": plan.as_dict(),
    }
    if verbose:
        log = model.training_log
        say(logger, f"adaboost {algorithm}: {len(rounds)} rounds in {log['seconds']:.2f}s, "
                    f"{log['data_passes']} data passes ({log['passes_per_round']:.2f} per "
                    f"round), per-row state "
                    f"{'in RAM' if log['state_in_ram'] else 'spilled to disk'}"
                    + (f"; stopped after round {stop[1]}: {stop[0]}" if stop[0] else ""))
    return model


def _family(algorithm):
    """The class that grows ``algorithm``'s rounds."""
    if algorithm == REGRESSOR_ALGORITHM:
        return R2Boost
    if algorithm == "MH":
        return MHBoost
    return GiniBoost if algorithm in ("SAMME", "SAMME.R", "arc-x4", "M1") else AdditiveLogistic


def _plan(cache, spec, algorithm, K, memory_limit, prefetch):
    """The memory plan of an AdaBoost run with per-row state ``spec``."""
    from ...engine.plan import plan_train

    regression = algorithm == REGRESSOR_ALGORITHM
    n_trees_in_pass = 1 if regression or algorithm not in ("gentle", "logitboost") or K == 2 \
        else K
    n_stats = 4 if regression or algorithm in ("gentle", "logitboost") \
        else 2 * K + 1 if algorithm == "MH" else K + 1
    # the planner's per-row formula is 16 * n_outputs + 4 * trees + 4 bytes: pick the
    # n_outputs that covers this algorithm's state
    plan_outputs = max(1, math.ceil((spec.bytes_per_row() - 4 * n_trees_in_pass - 4) / 16))
    # Blocks an earlier run left resident are in this process's RSS, which the plan takes
    # as its baseline: this run budgets residency itself.
    cache.release_resident()
    return plan_train(memory_limit, n_rows=cache.n_rows, n_features=cache.n_features,
                      n_hist_columns=cache.planned_hist_columns,
                      max_bin=cache.max_bin, n_stats=n_stats, n_outputs=plan_outputs,
                      block_rows=cache.block_rows, n_blocks=cache.n_blocks,
                      codes_itemsize=np.dtype(cache.codes_dtype).itemsize,
                      code_bytes_per_row=cache.code_bytes_per_row,
                      n_trees_in_pass=n_trees_in_pass, prefetch=prefetch,
                      state_bytes_per_row=spec.bytes_per_row())


def _boost(learner, n_estimators, algorithm, max_depth, K):
    """The rounds until ``n_estimators`` or an early stop. Returns ``(rounds, weights,
    errors, (stop_reason, stop_round))`` as scikit-learn reports them."""
    weights = np.zeros(n_estimators)
    errors = np.ones(n_estimators)
    rounds = []
    stop_reason, stop_round = None, None
    for m in range(n_estimators):
        res = learner.grow_round(m)
        prev_err = getattr(res, "previous_error", None)
        if prev_err is not None:
            errors[m - 1] = prev_err
        if res.keep:
            rounds.append(res.trees)
            weights[m] = res.weight
            errors[m] = res.error
            if res.stop == STOP_CHANCE:
                errors[m] = 1.0
        if res.stop is not None:
            if res.stop == STOP_CHANCE and not rounds:
                raise ParameterError(
                    f"the first weak learner ({algorithm}, max_depth="
                    f"{learner.run.weak.max_depth}) "
                    f"is no better than chance (weighted error {res.error:.4g} >= "
                    f"{0.5 if algorithm == 'M1' else 1 - 1 / max(K, 2):.4g}): the ensemble "
                    f"cannot be fit; try "
                    f"deeper trees (max_depth)")
            stop_reason, stop_round = res.stop, m
            break
    last_err = learner.finish()
    if last_err is not None:
        errors[len(rounds) - 1] = last_err
    return rounds, weights, errors, (stop_reason, stop_round)


def _adaboost_model(cache, algorithm, K, rounds, weights, errors, stop, *, trees_per_round,
                    params):
    """The model of an AdaBoost run, with its ``attributes["adaboost"]``."""
    from ...model.model import Model, source_attributes

    regression = algorithm == REGRESSOR_ALGORITHM
    if regression:
        objective, objective_params, aggregation = "reg:squarederror", {}, "mean"
    elif algorithm in ("gentle", "logitboost", "MH"):
        objective, objective_params, aggregation = "multi:softprob", {"num_class": K}, "sum"
    elif algorithm in ("arc-x4", "M1"):
        objective, objective_params, aggregation = "multi:proba", {"num_class": K}, "mean"
    else:
        objective, objective_params, aggregation = "multi:softprob", {"num_class": K}, "mean"
    mapper = cache.bin_mapper
    model = Model([], n_outputs=1 if regression else K, objective=objective,
                  objective_params=objective_params, learner="adaboost",
                  aggregation=aggregation, trees_per_round=trees_per_round,
                  feature_names=list(cache.feature_names),
                  feature_types=list(mapper.feature_types), bin_mapper=mapper.to_dict(),
                  params=params, n_classes=None if regression else K,
                  attributes=source_attributes(cache))
    for m, trees in enumerate(rounds):
        model.add_round(trees, [float(weights[m])] * len(trees))
    model.attributes["adaboost"] = {
        "algorithm": algorithm, "n_classes": K, "learning_rate": params["learning_rate"],
        "estimator_weights": weights.tolist(), "estimator_errors": errors.tolist(),
        "stop_reason": stop[0], "stop_round": stop[1],
        "prediction": "weighted_median" if regression else "margin",
    }
    return model


def train_adaboost_from_params(params, cache, *, n_estimators=50, memory_limit=None,
                               verbose=False):
    """The command line's entry: ``oocboost train CACHE --learner adaboost --param
    algorithm=SAMME --rounds 200 -o m.json``.

    Parameters
    ----------
    params : dict
        Estimator arguments: ``algorithm`` (default "SAMME"; "R2" for regression, also
        chosen by ``objective="reg:..."``), ``learning_rate`` (1.0), ``max_depth`` (1 for
        classifiers, 3 for R2, as scikit-learn), ``loss`` ("linear"), ``n_classes``,
        ``random_state`` / ``seed``, ``n_threads``, ``prefetch``, and the weak trees'
        ``min_samples_leaf``, ``min_samples_split``, ``max_leaf_nodes``, ``max_features``,
        ``min_impurity_decrease``, ``min_weight_fraction_leaf``, ``splitter``,
        ``criterion`` (scikit-learn's tree names).
    cache : Cache or path
    n_estimators : int
    memory_limit : int or str or None
    verbose : bool

    Returns
    -------
    Model
    """
    from .params import ADABOOST_SPEC

    params = ADABOOST_SPEC.resolve(params, defaults=False, owner="--learner adaboost")
    objective = params.get("objective")
    default_algorithm = "R2" if isinstance(objective, str) and objective.startswith("reg:") \
        else "SAMME"
    algorithm = canonical_algorithm(params.get("algorithm", default_algorithm))
    max_depth = params.get("max_depth", 3 if algorithm == REGRESSOR_ALGORITHM else 1)
    seed = params.get("random_state")
    tree = {k: params[k] for k in TREE_PARAMS if k in params and k != "max_depth"}
    return train_adaboost(cache, algorithm=algorithm, n_estimators=n_estimators,
                          learning_rate=params.get("learning_rate", 1.0),
                          max_depth=max_depth, loss=params.get("loss", "linear"),
                          n_classes=params.get("n_classes"), random_state=seed,
                          memory_limit=memory_limit, prefetch=params.get("prefetch"),
                          n_threads=params.get("n_threads"), verbose=verbose,
                          weak_tree={**tree, "max_depth": max_depth} if tree else None)
