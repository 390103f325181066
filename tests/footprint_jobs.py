"""Jobs measured by ``tests/test_memory_footprint.py`` (one per fresh subprocess).

Each job is called as ``"footprint_jobs:<name>"`` by
:func:`oocboost.utils.measure.measure_peak_rss`
in an interpreter that has already imported ``numpy, pyarrow, numba, h5py, oocboost`` (the
same imports as the idle baseline), so the measured increase is the job's own. Arguments
and return values are JSON-able.
"""
import os

#: Boosting parameters of the training footprint test: small depth-3 trees.
BOOSTING_PARAMS = {"objective": "binary:logistic", "eta": 0.3, "max_depth": 3,
                   "n_threads": 2, "verbosity": 0}


def record_batches(n_rows, n_features, seed=0, chunk_rows=65536):
    """Synthetic record batches, streamed: ``label`` then ``f0 ..`` (float32 integers 0..254).

    Integer-valued features keep the quantile sketches exact (255 distinct values), so a
    large cache builds quickly; each feature bins to one byte. The label depends on f0, f1.
    """
    import numpy as np
    import pyarrow as pa

    names = ["label"] + [f"f{j}" for j in range(n_features)]
    for start in range(0, n_rows, chunk_rows):
        n = min(chunk_rows, n_rows - start)
        rng = np.random.default_rng([seed, start])
        X = rng.integers(0, 255, size=(n_features, n), dtype=np.uint8)
        score = (X[0].astype(np.float32) - 127.0 + 0.5 * (X[1 % n_features] - 127.0)
                 + rng.normal(0.0, 40.0, n))
        y = (score > 0).astype(np.float32)
        arrays = [pa.array(y)] + [pa.array(X[j].astype(np.float32)) for j in range(n_features)]
        yield pa.RecordBatch.from_arrays(arrays, names=names)


def build_synthetic(cache_path, n_rows, n_features, block_rows, seed=0, reference=None):
    """Build a cache from :func:`record_batches` (an in-memory stream, nothing on disk);
    with ``reference`` (a cache path) on its bins, which skips the sketch pass."""
    import oocboost

    cache = oocboost.build_cache(record_batches(n_rows, n_features, seed), cache_path,
                                 label="label", block_rows=block_rows, quiet=True,
                                 overwrite=True, reference=reference)
    return {"n_rows": cache.n_rows, "n_blocks": cache.n_blocks, "nbytes_raw": cache.nbytes_raw}


def warm_kernels():
    """Load the compiled kernels of binning and of every learner (tiny cache), then return.

    Measured alone, its peak is the *warm baseline*: interpreter, libraries and numba's
    compiled code, which do not depend on the data.
    """
    import tempfile

    from oocboost.cache.store import Cache
    from oocboost.utils import threads

    # the measured jobs train on millions of rows, with every thread: the tiny cache
    # here is trained the same way, so the kernels loaded are theirs (a thread count
    # is a compile variant of the histogram kernels)
    cap, threads.MIN_ROWS_PER_THREAD = threads.MIN_ROWS_PER_THREAD, 1
    try:
        with tempfile.TemporaryDirectory(prefix="oocb-warm-") as tmp:
            path = os.path.join(tmp, "warm.oocb")
            build_synthetic(path, 5000, 4, 4096)
            for learner in TRAINERS:
                TRAINERS[learner](Cache(path), None, 1)
    finally:
        threads.MIN_ROWS_PER_THREAD = cap
    return _rss_summary()


def _resolve_limit(memory_limit, warm_baseline):
    """A limit given as ``"warm+<bytes>"``: that many bytes above the warm baseline
    measured in this very process, so another process's baseline never enters it."""
    if isinstance(memory_limit, str) and memory_limit.startswith("warm+"):
        return warm_baseline + int(memory_limit[len("warm+"):])
    return memory_limit


def _rss_summary():
    from oocboost.utils.rss import current_rss, peak_rss

    return {"rss_at_end": current_rss(), "self_peak_rss": peak_rss()}


def build_from_csv(csv_path, cache_path, memory_limit, warm=True, label="label"):
    """``build_cache`` from a CSV file (or another text file: ``label`` None for
    svmlight) with ``memory_limit``; returns the cache's sizes.

    ``warm``: load the compiled kernels first (see :func:`warm_kernels`).
    """
    import oocboost
    from oocboost.utils.rss import peak_rss

    if warm:
        warm_kernels()
    baseline = peak_rss()  # the warm baseline of this process (its peak so far)
    if memory_limit == "smallest":
        memory_limit = smallest_train_limit(cache_path) + 16 * 2**20
    memory_limit = _resolve_limit(memory_limit, baseline)
    cache = oocboost.build_cache(csv_path, cache_path, label=label,
                                 memory_limit=memory_limit, quiet=True, overwrite=True)
    out = {"n_rows": cache.n_rows, "n_features": cache.n_features,
           "block_rows": cache.block_rows, "n_blocks": cache.n_blocks,
           "nbytes_raw": cache.nbytes_raw, "nbytes_stored": cache.nbytes_stored,
           "csv_bytes": os.path.getsize(csv_path), "memory_limit": memory_limit,
           "warm_baseline": baseline}
    out.update(_rss_summary())
    return out


# ----------------------------------------------------------------------------- learners
def _train_boosting(cache, memory_limit, rounds):
    import oocboost

    model = oocboost.train(dict(BOOSTING_PARAMS), cache, rounds, memory_limit=memory_limit,
                           verbose_eval=False)
    log = model.training_log
    return {"n_trees": int(model.n_trees), "expected_trees": rounds,
            "state_in_ram": bool(log["state_in_ram"]), "plan": log["plan"],
            "data_passes": log["data_passes"]}


#: learner name -> job body ``(cache, memory_limit, rounds) -> dict``. Adding a learner to
#: the footprint tests = one entry here and its name in ``LEARNERS`` of the test module.
def _log(model):
    return model.attributes.get("training_log") or model.attributes.get("telemetry") or {}


def _train_forest(cache, memory_limit, rounds):
    import oocboost

    est = oocboost.RandomForestClassifier(n_estimators=rounds, max_depth=4,
                                          memory_limit=memory_limit, random_state=0,
                                          n_jobs=2).fit(cache)
    log = _log(est.model_)
    return {"n_trees": int(est.model_.n_trees), "expected_trees": rounds,
            "state_in_ram": bool(log.get("state_in_ram")), "plan": log.get("plan")}


def _train_tree(cache, memory_limit, rounds):
    import oocboost

    est = oocboost.DecisionTreeClassifier(max_depth=6, memory_limit=memory_limit,
                                          random_state=0).fit(cache)
    log = _log(est.model_)
    return {"n_trees": int(est.model_.n_trees), "expected_trees": 1,
            "state_in_ram": bool(log.get("state_in_ram")), "plan": log.get("plan")}


def _train_adaboost(cache, memory_limit, rounds):
    import oocboost

    est = oocboost.AdaBoostClassifier(n_estimators=rounds, max_depth=1,
                                      memory_limit=memory_limit, random_state=0).fit(cache)
    log = _log(est.model_)
    return {"n_trees": int(est.model_.n_trees), "expected_trees": rounds,
            "state_in_ram": bool(log.get("state_in_ram")), "plan": log.get("plan")}


def _train_hoeffding(cache, memory_limit, rounds):
    import oocboost

    est = oocboost.HoeffdingTreeClassifier(leaf_prediction="nba", grace_period=100,
                                           memory_limit=memory_limit).fit(cache)
    tree = est._learners[0].tree
    return {"n_trees": int(est.model_.n_trees), "expected_trees": 1,
            "n_leaves": est.n_leaves_, "histograms": int(tree.hist.shape[0]),
            "max_histograms": int(tree.max_slots)}


TRAINERS = {
    "boosting": _train_boosting,
    "hoeffding": _train_hoeffding,
    "forest": _train_forest,
    "tree": _train_tree,
    "adaboost": _train_adaboost,
}


def smallest_train_limit(cache_path):
    """The smallest ``memory_limit`` the training planner accepts for this cache, here and
    now."""
    import numpy as np

    from oocboost.cache.store import Cache
    from oocboost.engine.plan import plan_train
    from oocboost.errors import MemoryLimitError

    cache = Cache(cache_path)
    try:
        plan_train(1, n_rows=cache.n_rows, n_features=cache.n_features, max_bin=cache.max_bin,
                   block_rows=cache.block_rows, n_blocks=cache.n_blocks,
                   codes_itemsize=np.dtype(cache.codes_dtype).itemsize)
    except MemoryLimitError as exc:
        return int(exc.smallest_limit)
    raise AssertionError("a 1-byte memory limit was accepted")


def train_learner(learner, cache_path, memory_limit, rounds, warm=True):
    """Train ``learner`` on the cache at ``cache_path`` with ``memory_limit``.

    ``warm``: first load the compiled kernels (:func:`warm_kernels`), so that the peak
    compares with the warm baseline; ``False`` measures a cold process, where the memory
    plan has to allow for the kernels itself. ``memory_limit="smallest"``: 16 MiB above the
    smallest limit the planner accepts in this process (:func:`smallest_train_limit`);
    ``"warm+<bytes>"``: that much above this process's warm baseline. The limit used is
    returned as ``memory_limit``, the warm baseline as ``warm_baseline``.
    """
    from oocboost.cache.store import Cache
    from oocboost.utils.rss import peak_rss

    if warm:
        warm_kernels()
    baseline = peak_rss()  # the warm baseline of this process (its peak so far)
    if memory_limit == "smallest":
        memory_limit = smallest_train_limit(cache_path) + 16 * 2**20
    memory_limit = _resolve_limit(memory_limit, baseline)
    cache = Cache(cache_path)
    out = TRAINERS[learner](cache, memory_limit, rounds)
    out["memory_limit"] = memory_limit
    out["warm_baseline"] = baseline
    out.update({"n_rows": cache.n_rows, "n_features": cache.n_features,
                "nbytes_raw": cache.nbytes_raw})
    out.update(_rss_summary())
    return out
