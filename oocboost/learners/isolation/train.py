"""An isolation forest's model, from the estimator or from the command line
(``oocboost train CACHE --learner isolation-forest --rounds 100``).

Each group of trees costs one read of the blocks that hold their rows (``sample.py``);
the trees are then grown from those rows in memory, ``GROWER_TREES`` at a time, by the
shared grower with :class:`~.policy.IsolationPolicy`, to depth ``ceil(log2(max_samples))``
as scikit-learn's. A leaf's value is its path length ``depth + c(n_leaf)``; the model
averages them and its objective, ``anomaly:isolation``, turns the mean into the paper's
anomaly score. With ``contamination`` a float, one more pass scores the training rows
and the threshold is their ``contamination`` quantile (``offset``).
"""
import math
import time
import warnings
from dataclasses import dataclass

import numpy as np

from ...errors import MemoryLimitError, ParameterError
from ...utils.log import get_logger, say
from ..common.tree_features import tree_feature_sets
from ..common.validate import float_param, int_param, resolve_seed
from .params import ISOLATION_SPEC

logger = get_logger(__name__)

#: Trees one grower grows together from the gathered rows (its per-row state is a node
#: and a count per tree for the union of their rows).
GROWER_TREES = 16
#: At most this many trees' rows are gathered in one pass when the plan allows it.
MAX_TREES_PER_PASS = 1024
#: The contamination threshold is the exact quantile of the training scores up to this
#: many rows (8 bytes each), above it a quantile sketch's (rank error 1/4096).
EXACT_OFFSET_ROWS = 1 << 23
_RNG_SPLITS = 2


@dataclass
class IsolationConfig:
    """An isolation forest's settings, checked (:func:`resolve_isolation_config`)."""

    max_samples: int
    contamination: object           # "auto" or a float in (0, 0.5]
    tree_features: int | None       # features per tree, None: all
    bootstrap: bool
    seed: int
    n_jobs: object = None
    verbose: int = 0
    memory_limit: object = None
    prefetch: int | None = None
    trees_per_pass: int | None = None

    @property
    def max_depth(self) -> int:
        """scikit-learn's depth limit: ``ceil(log2(max_samples))``, at least 1."""
        return max(1, int(math.ceil(math.log2(max(self.max_samples, 2)))))


def resolve_isolation_config(params, n_rows: int, n_features: int, *,
                             memory_limit=None) -> IsolationConfig:
    """scikit-learn's ``IsolationForest`` parameters (:data:`params.ISOLATION_SPEC`) for
    a cache of ``n_rows`` x ``n_features``; a ``max_samples`` above the rows is lowered
    to them with a warning, as scikit-learn's. ``memory_limit``: peak RSS (bytes or a
    size such as ``"1GB"``)."""
    p = ISOLATION_SPEC.resolve(params)
    max_samples = p["max_samples"]
    if isinstance(max_samples, str):
        if max_samples != "auto":
            raise ParameterError(f"max_samples must be 'auto', an int or a float in (0, 1], "
                                 f"got {max_samples!r}")
        max_samples = min(256, n_rows)
    elif isinstance(max_samples, (int, np.integer)) and not isinstance(max_samples, bool):
        max_samples = int_param("max_samples", max_samples, 1)
        if max_samples > n_rows:
            warnings.warn(f"max_samples ({max_samples}) is greater than the total number of "
                          f"samples ({n_rows}); max_samples will be set to n_samples for "
                          f"estimation", UserWarning, stacklevel=3)
            max_samples = n_rows
    else:
        fraction = float_param("max_samples", max_samples, 0.0, 1.0, low_open=True)
        max_samples = max(1, int(fraction * n_rows))
    contamination = p["contamination"]
    if not (isinstance(contamination, str) and contamination == "auto"):
        if isinstance(contamination, str):
            raise ParameterError(f"contamination must be 'auto' or a float in (0, 0.5], got "
                                 f"{contamination!r}")
        contamination = float_param("contamination", contamination, 0.0, 0.5,
                                    low_open=True)
    k = p["max_features"]
    if isinstance(k, (int, np.integer)) and not isinstance(k, bool):
        k = int_param("max_features", k, 1)
        if k > n_features:
            raise ParameterError(f"max_features must be at most the {n_features} features, "
                                 f"got {k}")
    else:
        k = max(1, int(float_param("max_features", k, 0.0, 1.0, low_open=True) * n_features))
    return IsolationConfig(
        max_samples=int(max_samples), contamination=contamination,
        tree_features=None if k >= n_features else int(k), bootstrap=bool(p["bootstrap"]),
        seed=resolve_seed(p["random_state"]), n_jobs=p["n_jobs"], verbose=int(p["verbose"]),
        memory_limit=memory_limit, prefetch=p["prefetch"],
        trees_per_pass=p["trees_per_pass"])


# ---------------------------------------------------------------------------- planning
def plan_passes(cache, config, n_new):
    """``(trees per pass, plan)``: as many trees' rows as the memory plan lets one pass
    gather (at most :data:`MAX_TREES_PER_PASS`), and the histograms of the grower."""
    from ...common import INT_HIST_DTYPE
    from ...engine.plan import plan_train
    from .sample import sample_bytes_per_row

    per_row = sample_bytes_per_row(cache.code_bytes_per_row)
    grower_trees = min(GROWER_TREES, max(n_new, 1))

    def plan_for(t):
        g = min(grower_trees, t)
        # the gathered rows of t trees, and a grower's copy of g trees' rows with a
        # node (4 bytes) and a count (1) per tree
        scratch = t * config.max_samples * per_row \
            + g * config.max_samples * (cache.code_bytes_per_row + 5 * g)
        return plan_train(
            config.memory_limit, n_rows=cache.n_rows, n_features=cache.n_features,
            max_bin=cache.max_bin, n_stats=2, block_rows=cache.block_rows,
            n_blocks=cache.n_blocks, codes_itemsize=np.dtype(cache.codes_dtype).itemsize,
            code_bytes_per_row=cache.code_bytes_per_row, n_trees_in_pass=g,
            max_nodes_in_flight=64 * g, prefetch=config.prefetch, state_bytes_per_row=0,
            block_scratch_bytes=scratch, n_hist_columns=cache.planned_hist_columns,
            hist_itemsize=np.dtype(INT_HIST_DTYPE).itemsize,
            block_scratch_detail=f"the rows of {t} trees")

    t = config.trees_per_pass or min(MAX_TREES_PER_PASS, max(n_new, 1))
    t = max(1, min(t, max(n_new, 1)))
    while True:
        try:
            return t, plan_for(t)
        except MemoryLimitError as err:
            if t == 1 or config.trees_per_pass is not None:
                raise MemoryLimitError(f"{err} (an isolation tree keeps its max_samples="
                                       f"{config.max_samples} rows in memory while it "
                                       f"grows: lower max_samples)") from err
            t //= 2


# ---------------------------------------------------------------------------- growing
def grow_group(cache, config, tree_ids, gathered, members, hist_nodes, bin_position,
               telemetry):
    """Grow the trees ``tree_ids`` (global indices) from their gathered rows.

    ``members``: per tree ``(positions, copies)`` in ``gathered``. Returns the trees'
    arrays (``Tree(**d)``), leaf values set to path lengths.
    """
    from ...engine.grower import TreeGrower
    from ...engine.nodes import GrowthParams
    from ...kernels.histogram import ClassCounts
    from ...kernels.isolation import average_path_length
    from .policy import IsolationPolicy
    from .sample import take_rows

    mapper = cache.bin_mapper
    rows = np.unique(np.concatenate([pos for pos, _ in members]))
    most = max(int(c.max(initial=0)) for _, c in members)
    counts = np.zeros((len(tree_ids), len(rows)), np.uint8 if most <= 255 else np.float32)
    for j, (positions, copies) in enumerate(members):
        counts[j, np.searchsorted(rows, positions)] = copies
    policy = IsolationPolicy(
        n_value_bins=mapper.n_value_bins, is_categorical=mapper.is_categorical,
        missing_bin=cache.max_bin - 1, bin_position=bin_position,
        rngs=[np.random.default_rng([config.seed, g, _RNG_SPLITS]) for g in tree_ids])
    grower = TreeGrower(
        len(tree_ids), cache.n_features, cache.max_bin, mapper.n_value_bins,
        mapper.is_categorical, mapper.bin_edges, policy,
        GrowthParams(max_depth=config.max_depth, grow_policy="depthwise",
                     max_hist_slots=2 * int(hist_nodes)),
        np.random.default_rng([config.seed, tree_ids[0]]),
        tree_features=None if config.tree_features is None else tree_feature_sets(
            config.seed, tree_ids, cache.n_features, config.tree_features, False),
        bundles=cache.bundles)
    grower.start()
    codes = take_rows(gathered.codes, rows)
    node = np.zeros(counts.shape, np.int32)
    stats = ClassCounts(np.zeros(len(rows), np.uint8), counts, 1)
    while grower.needs_pass():
        grower.accumulate(codes, stats, node, counts)
        grower.finish_pass()
    telemetry.add(grower.telemetry)
    trees = []
    for j in range(len(tree_ids)):
        arrays = grower.tree_arrays(j)
        depth = grower.nodes.depth[j, :len(arrays["left"])].astype(np.float64)
        arrays["value"] = (depth + average_path_length(arrays["n_samples"]))[:, None]
        trees.append(arrays)
    return trees


def _ranges(cache):
    """The smallest and largest value of each numeric feature, where the cache's build
    recorded them: ``{feature index: (min, max)}``."""
    index = {name: f for f, name in enumerate(cache.feature_names)}
    out = {}
    for feat in cache.manifest.get("features") or []:
        lo, hi = feat.get("min"), feat.get("max")
        if feat.get("name") in index and isinstance(lo, (int, float)) \
                and isinstance(hi, (int, float)) and math.isfinite(lo) and math.isfinite(hi):
            out[index[feat["name"]]] = (float(lo), float(hi))
    return out


# ---------------------------------------------------------------------------- training
def empty_isolation_model(cache, config):
    """An isolation forest without trees over ``cache``'s features."""
    from ...model.model import Model, source_attributes

    mapper = cache.bin_mapper
    attributes = source_attributes(cache)
    attributes.update({"seed": int(config.seed), "max_samples": int(config.max_samples),
                       "bootstrap": bool(config.bootstrap),
                       "tree_features": config.tree_features})
    return Model([], n_outputs=1, objective="anomaly:isolation",
                 objective_params={"max_samples": int(config.max_samples)},
                 learner="isolation_forest", aggregation="mean", trees_per_round=1,
                 feature_names=list(cache.feature_names),
                 feature_types=list(mapper.feature_types), bin_mapper=mapper.to_dict(),
                 attributes=attributes)


def train_isolation_forest(cache, config: IsolationConfig, n_estimators: int, *,
                           model=None):
    """Grow ``n_estimators`` isolation trees in all over ``cache`` (keeping ``model``'s,
    for ``warm_start``: tree ``t`` depends only on the seed and ``t``).

    Returns
    -------
    Model
        ``learner="isolation_forest"``, objective ``anomaly:isolation``; ``attributes``
        holds ``offset`` (scikit-learn's ``offset_``), ``seed``, ``max_samples`` and the
        ``training_log``.
    """
    from ...engine.blocks import timed_blocks
    from ...engine.nodes import GrowerTelemetry
    from ...model.tree import Tree
    from ...utils.rss import current_rss, peak_rss
    from ...utils.threads import thread_limit
    from .policy import bin_positions
    from .sample import drawn_rows, gather

    n_estimators = int_param("n_estimators", n_estimators, 1)
    if cache.n_rows < 1:
        raise ParameterError(f"cache {cache.path} has no rows to grow isolation trees on")
    model = empty_isolation_model(cache, config) if model is None else model
    if n_estimators < model.n_trees:
        raise ParameterError(f"n_estimators={n_estimators} must be at least the "
                             f"{model.n_trees} trees already grown (warm_start)")
    new_ids = list(range(model.n_trees, n_estimators))
    t_start = time.perf_counter()
    counters = {"io_wait_s": 0.0, "bytes_read": 0, "data_passes": 0}
    cache.release_resident()
    trees_per_pass, plan = plan_passes(cache, config, len(new_ids))
    if config.verbose >= 2:
        say(logger, plan.describe())

    def account(wait_s, nbytes):
        counters["io_wait_s"] += wait_s
        counters["bytes_read"] += nbytes

    def blocks(indices):
        counters["data_passes"] += 1
        return timed_blocks(cache, plan, account, block_indices=indices)

    bin_position = bin_positions(cache.bin_mapper, _ranges(cache))
    telemetry = GrowerTelemetry()
    with thread_limit(config.n_jobs, cache.n_rows):
        for g0 in range(0, len(new_ids), trees_per_pass):
            group = new_ids[g0:g0 + trees_per_pass]
            gathered = gather(cache, blocks, [
                drawn_rows(config.seed, g, cache.n_rows, config.max_samples,
                           config.bootstrap) for g in group])
            for s0 in range(0, len(group), GROWER_TREES):
                for arrays in grow_group(cache, config, group[s0:s0 + GROWER_TREES],
                                         gathered, gathered.members[s0:s0 + GROWER_TREES],
                                         plan.hist_nodes, bin_position, telemetry):
                    model.add_tree(Tree(**arrays), group=0)
            del gathered
        model.attributes["offset"] = contamination_offset(model, cache, config, blocks)
    model.attributes["contamination"] = config.contamination
    log = telemetry.as_dict()
    model.training_log = {
        "seconds": time.perf_counter() - t_start, "data_passes": counters["data_passes"],
        "trees_per_pass": int(trees_per_pass), "io_wait_s": counters["io_wait_s"],
        "bytes_read": int(counters["bytes_read"]), "histogram_s": log["histogram_s"],
        "split_s": log["split_s"], "grower_passes": log["passes"],
        "peak_rss_bytes": int(max(current_rss(), peak_rss())), "plan": plan.as_dict()}
    if config.verbose >= 1:
        say(logger, f"isolation forest: {len(new_ids)} trees of max_samples="
                    f"{config.max_samples} rows in {model.training_log['seconds']:.2f}s, "
                    f"{counters['data_passes']} data passes ({trees_per_pass} trees per "
                    f"pass)")
    return model


def contamination_offset(model, cache, config, blocks) -> float:
    """scikit-learn's ``offset_``: -0.5 for ``contamination="auto"``, else the
    ``contamination`` quantile of the training rows' ``score_samples`` (linear
    interpolation as ``numpy.percentile``; from a quantile sketch past
    :data:`EXACT_OFFSET_ROWS` rows). One pass over the cache for a float."""
    if isinstance(config.contamination, str):
        return -0.5
    from ...cache.sketch import QuantileSketch
    from ...model.predict import model_objective

    objective = model_objective(model)
    exact = cache.n_rows <= EXACT_OFFSET_ROWS
    scores = np.empty(cache.n_rows) if exact else None
    sketch = None if exact else QuantileSketch(eps=1.0 / 4096)
    for block in blocks(None):
        margin = model.predict_margin_binned(block.codes, cache.max_bin - 1)
        score = -objective.transform(margin)
        if exact:
            scores[block.row_start:block.row_start + block.n_rows] = score
        else:
            sketch.update(score)
    if exact:
        return float(np.percentile(scores, 100.0 * config.contamination))
    return float(sketch.quantiles([config.contamination])[0])


def train_isolation_from_params(params, cache, *, n_estimators, memory_limit=None,
                                verbose=False, init_model=None):
    """The command line's entry: ``oocboost train CACHE --learner isolation-forest
    --rounds N --param max_samples=512``. The cache needs no label (one it has is not
    read). ``random_state`` is 0 unless given (the command line is reproducible);
    ``init_model``: an isolation forest of this cache's bins to add ``n_estimators``
    trees to, with its parameters and seed (``params`` override the others)."""
    from ...model.model import Model, load_model
    from ..common.data import open_cache

    cache = open_cache(cache)
    p = ISOLATION_SPEC.resolve(params, defaults=False, owner="--learner isolation-forest")
    model = None
    if init_model is not None:
        model = init_model if isinstance(init_model, Model) else load_model(init_model)
        if model.learner != "isolation_forest":
            raise ParameterError(f"--init-model is a {model.learner!r} model; an isolation "
                                 f"forest continues only an isolation forest")
        if model.bin_mapper != cache.bin_mapper.to_dict():
            raise ParameterError(f"--init-model was trained on other bins than cache "
                                 f"{cache.path}'s (build this one with --reference)")
        p = {**{k: v for k, v in model.params.items() if k in ISOLATION_SPEC}, **p,
             "random_state": int(model.attributes["seed"])}
    p.setdefault("random_state", 0)
    if verbose:
        p["verbose"] = 2
    config = resolve_isolation_config(p, cache.n_rows, cache.n_features,
                                      memory_limit=memory_limit)
    if model is not None and int(model.attributes["max_samples"]) != config.max_samples:
        raise ParameterError(f"--init-model grew its trees on max_samples="
                             f"{model.attributes['max_samples']} rows; this run would use "
                             f"{config.max_samples}")
    total = n_estimators + (model.n_trees if model is not None else 0)
    model = train_isolation_forest(cache, config, total, model=model)
    model.params = {k: (v if isinstance(v, (int, float, str, bool, type(None))) else str(v))
                    for k, v in p.items()}
    return model
