"""One measured benchmark job per process.

Usage (the runner does this; by hand for debugging)::

    python -m bench.jobs JOBNAME --json-args '{"train": "...", "test": "...", "rounds": 100}'

The job imports what it needs, records its RSS right after the imports (``baseline_rss``),
runs its phases and prints one line ``BENCH_RESULT {json}`` on stdout with ``status``
("ok", "unavailable" or "error"), ``times`` (seconds per phase), ``metrics`` (on the test
set), ``baseline_rss`` and ``extra``. The parent measures the peak RSS of the process from
outside (:func:`bench.run.run_job`).

Every library gets 2 threads: the environment variables below are set before any import
and every library's own thread parameter is passed explicitly.
"""
from __future__ import annotations

import os

THREADS = int(os.environ.get("BENCH_THREADS", "2"))
for _var in (
    "OMP_NUM_THREADS",
    "NUMBA_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
):
    os.environ[_var] = str(THREADS)

import argparse  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import traceback  # noqa: E402

import numpy as np  # noqa: E402

RESULT_PREFIX = "BENCH_RESULT "

# Shared hyperparameters of the boosting comparison (the common parameters).
BOOST = dict(eta=0.1, max_depth=6, max_bin=256, reg_lambda=1.0, min_child_weight=1.0)


class Unavailable(Exception):
    """The thing to measure does not exist (yet): reported as a row, not a crash."""


# ---------------------------------------------------------------------------- helpers

def rss():
    import psutil

    return psutil.Process().memory_info().rss


class Job:
    def __init__(self, args):
        self.args = args
        self.times = {}
        self.metrics = {}
        self.extra = {}
        self.baseline_rss = None

    def baseline(self):
        """Call right after the imports: the RSS every figure is compared against."""
        self.baseline_rss = rss()

    def timed(self, name, fn, *a, **kw):
        """Run one phase; its time goes to ``times[name]`` and the process's peak RSS
        so far (the kernel's high-water mark) to ``extra["peak_rss_after"][name]``, so
        a phase's peak (e.g. up to the end of training, before the test set is loaded)
        is known without a separate process."""
        import resource

        t0 = time.perf_counter()
        out = fn(*a, **kw)
        self.times[name] = self.times.get(name, 0.0) + (time.perf_counter() - t0)
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux
        self.extra.setdefault("peak_rss_after", {})[name] = peak
        return out


def load_csv(path):
    """CSV -> (X float32 C-contiguous (rows, features), y float32): pandas C parser,
    float32 dtype (the fastest loader on this machine, REFERENCE.md)."""
    import pandas as pd

    df = pd.read_csv(path, dtype=np.float32, engine="c")
    y = df.pop("label").to_numpy(dtype=np.float32)
    X = np.ascontiguousarray(df.to_numpy(dtype=np.float32))
    del df
    return X, y


def load_labels(path):
    import pandas as pd

    return pd.read_csv(path, usecols=["label"], dtype=np.float32)["label"].to_numpy()


def auc(y, p):
    """ROC AUC with ties handled by mid-ranks (numpy only: no sklearn import in the job)."""
    y = np.asarray(y) > 0.5
    p = np.asarray(p, dtype=np.float64)
    order = np.argsort(p, kind="mergesort")
    ps = p[order]
    ranks = np.empty(len(p), dtype=np.float64)
    # mid-ranks over ties
    boundaries = np.flatnonzero(np.diff(ps)) + 1
    starts = np.concatenate([[0], boundaries])
    ends = np.concatenate([boundaries, [len(p)]])
    mid = (starts + ends + 1) / 2.0
    ranks[order] = np.repeat(mid, ends - starts)
    n_pos = int(y.sum())
    n_neg = len(y) - n_pos
    if n_pos == 0 or n_neg == 0:
        return float("nan")
    return float((ranks[y].sum() - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg))


def logloss(y, p):
    p = np.clip(np.asarray(p, dtype=np.float64), 1e-15, 1 - 1e-15)
    y = np.asarray(y, dtype=np.float64)
    return float(-np.mean(y * np.log(p) + (1 - y) * np.log(1 - p)))


def accuracy(y, p):
    return float(np.mean((np.asarray(p) > 0.5) == (np.asarray(y) > 0.5)))


def binary_metrics(job, y, p):
    job.metrics.update(auc=auc(y, p), logloss=logloss(y, p), accuracy=accuracy(y, p))


def timed_predict(job, fn, X, repeats):
    """Run ``fn(X)`` ``repeats`` times; ``predict_s`` is the median, ``predict_rows_s``
    the matching throughput. Returns the last predictions."""
    ts = []
    out = None
    for _ in range(max(1, repeats)):
        t0 = time.perf_counter()
        out = fn(X)
        ts.append(time.perf_counter() - t0)
    job.times["predict_s"] = float(np.median(ts))
    job.extra["predict_rows"] = int(len(X))
    job.extra["predict_rows_s"] = len(X) / max(job.times["predict_s"], 1e-12)
    return out


def import_oocboost(*names):
    try:
        import oocboost
    except Exception as exc:  # noqa: BLE001
        raise Unavailable(f"oocboost is not importable: {type(exc).__name__}: {exc}") from exc
    out = []
    for name in names:
        try:
            out.append(getattr(oocboost, name))
        except Exception as exc:  # noqa: BLE001  (lazy attributes import submodules)
            raise Unavailable(
                f"oocboost.{name} not available yet: {type(exc).__name__}: {exc}"
            ) from exc
    return oocboost, out


def _jsonable_log(log):
    out = {}
    for k, v in dict(log or {}).items():
        if isinstance(v, (bool, int, float, str)) or v is None:
            out[k] = v
        elif isinstance(v, np.generic):
            out[k] = v.item()
        elif isinstance(v, (list, tuple)) and len(v) <= 64 and all(
                isinstance(x, (int, float, str, np.generic)) for x in v):
            out[k] = [x.item() if isinstance(x, np.generic) else x for x in v]
    return out


# ---------------------------------------------------------------------------- build / parse

def job_parse_pyarrow(job):
    """pyarrow ``read_csv`` (whole table, threads) then float32 NumPy (rows, features)."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

    job.baseline()
    table = job.timed("build_s", pacsv.read_csv, job.args["train"])

    def to_numpy():
        cols = [
            table.column(i).cast(pa.float32()).to_numpy() for i in range(1, table.num_columns)
        ]
        return np.column_stack(cols)

    X = job.timed("build_s", to_numpy)
    job.extra.update(rows=int(X.shape[0]), in_memory_bytes=int(X.nbytes))


def job_parse_pyarrow_stream(job):
    """pyarrow streaming ``open_csv`` with 1 MiB blocks, batches converted and dropped
    (the parse floor of a streaming ingest)."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

    job.baseline()

    def run():
        n = 0
        reader = pacsv.open_csv(
            job.args["train"], read_options=pacsv.ReadOptions(block_size=1 << 20)
        )
        for batch in reader:
            for i in range(1, batch.num_columns):
                batch.column(i).cast(pa.float32()).to_numpy(zero_copy_only=False)
            n += batch.num_rows
        return n

    n = job.timed("build_s", run)
    job.extra.update(rows=int(n))


def job_parse_pandas(job):
    """pandas C parser, float32 dtype, to a C-contiguous float32 array (what the in-memory
    peers below use to load the CSV)."""
    import pandas  # noqa: F401

    job.baseline()
    X, y = job.timed("build_s", load_csv, job.args["train"])
    job.extra.update(rows=int(X.shape[0]), in_memory_bytes=int(X.nbytes))


# ---------------------------------------------------------------------------- XGBoost

def _xgb_params(a):
    return {"objective": "binary:logistic", "eval_metric": "logloss", "tree_method": "hist",
            "eta": BOOST["eta"], "max_depth": BOOST["max_depth"], "max_bin": BOOST["max_bin"],
            "lambda": BOOST["reg_lambda"], "min_child_weight": BOOST["min_child_weight"],
            "nthread": THREADS, "verbosity": 0}


def _finish(job, train_fn, predict_fn, phase):
    """Common tail: train, then predict on the test CSV (loaded after training)."""
    a = job.args
    if phase == "build":
        return
    model = job.timed("train_s", train_fn)
    Xt, yt = load_csv(a["test"])
    p = timed_predict(job, lambda X: predict_fn(model, X), Xt, a.get("predict_repeats", 1))
    binary_metrics(job, yt, p)


def job_xgb_hist(job):
    """XGBoost ``hist`` in memory: pandas -> float32 -> ``QuantileDMatrix`` ->
    ``xgb.train``."""
    import pandas  # noqa: F401
    import xgboost as xgb

    a = job.args
    job.baseline()
    X, y = job.timed("load_s", load_csv, a["train"])
    dtrain = job.timed("build_s", xgb.QuantileDMatrix, X, label=y, max_bin=BOOST["max_bin"],
                       nthread=THREADS)
    del X, y
    job.extra["library_version"] = xgb.__version__
    _finish(job, lambda: xgb.train(_xgb_params(a), dtrain, a["rounds"]),
            lambda m, X: m.inplace_predict(X), a.get("phase", "all"))


def _npy_iter(xgb, shards, cache_prefix):
    class NpyShards(xgb.DataIter):
        def __init__(self):
            self._shards = shards
            self._i = 0
            super().__init__(cache_prefix=cache_prefix, release_data=True, on_host=False)

        def next(self, input_data):
            if self._i == len(self._shards):
                return False
            xp, yp = self._shards[self._i]
            input_data(data=np.load(xp), label=np.load(yp))
            self._i += 1
            return True

        def reset(self):
            self._i = 0

    return NpyShards()


def job_xgb_extmem(job):
    """XGBoost external memory: a ``DataIter`` over float32 ``.npy`` shards of the training
    CSV (written beforehand, not timed) into ``ExtMemQuantileDMatrix`` with a disk cache."""
    import tempfile

    import pandas  # noqa: F401
    import xgboost as xgb

    a = job.args
    job.baseline()
    shards = [tuple(s) for s in a["shards"]]
    tmp = tempfile.mkdtemp(prefix="xgb-extmem-", dir=a.get("tmp_dir"))
    try:
        it = _npy_iter(xgb, shards, os.path.join(tmp, "cache"))
        if hasattr(xgb, "ExtMemQuantileDMatrix"):
            dtrain = job.timed(
                "build_s",
                xgb.ExtMemQuantileDMatrix,
                it,
                max_bin=BOOST["max_bin"],
                nthread=THREADS,
            )
            job.extra["dmatrix"] = "ExtMemQuantileDMatrix"
        else:
            dtrain = job.timed("build_s", xgb.DMatrix, it, nthread=THREADS)
            job.extra["dmatrix"] = "DMatrix(cache_prefix)"
        job.extra["library_version"] = xgb.__version__
        job.extra["shards"] = len(shards)
        _finish(job, lambda: xgb.train(_xgb_params(a), dtrain, a["rounds"]),
                lambda m, X: m.inplace_predict(X), a.get("phase", "all"))
        job.extra["disk_cache_bytes"] = sum(
            os.path.getsize(os.path.join(tmp, f)) for f in os.listdir(tmp))
    finally:
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)


# ---------------------------------------------------------------------------- LightGBM

def _lgb_params():
    # depth-6 trees: max_depth=6 with num_leaves=64 lets a tree be a full depth-6 tree;
    # min_sum_hessian_in_leaf is XGBoost's min_child_weight; LightGBM's extra row minimum
    # (min_data_in_leaf, default 20) is relaxed to 1 since XGBoost has none.
    return {
        "objective": "binary",
        "learning_rate": BOOST["eta"],
        "max_depth": BOOST["max_depth"],
        "num_leaves": 2 ** BOOST["max_depth"],
        "max_bin": BOOST["max_bin"] - 1,
        "lambda_l2": BOOST["reg_lambda"],
        "min_sum_hessian_in_leaf": BOOST["min_child_weight"],
        "min_data_in_leaf": 1,
        "num_threads": THREADS,
        "verbose": -1,
        "seed": 0,
    }


def job_lgb(job):
    """LightGBM: pandas -> float32 -> ``lgb.Dataset(...).construct()`` -> ``lgb.train``."""
    import lightgbm as lgb
    import pandas  # noqa: F401

    a = job.args
    job.baseline()
    X, y = job.timed("load_s", load_csv, a["train"])
    params = {**_lgb_params(), **a.get("params", {})}
    ds = job.timed("build_s", lambda: lgb.Dataset(
        X, label=y, params={"max_bin": params["max_bin"], "verbose": -1,
                            "num_threads": THREADS, "min_data_in_leaf": 1},
        free_raw_data=True).construct())
    X = y = None  # the raw arrays are the Dataset's now; free them before training
    job.extra["library_version"] = lgb.__version__
    _finish(job, lambda: lgb.train(params, ds, a["rounds"]),
            lambda m, X: m.predict(X, num_threads=THREADS), a.get("phase", "all"))


# ---------------------------------------------------------------------------- scikit-learn

def job_skl_hgb(job):
    """scikit-learn ``HistGradientBoostingClassifier`` (binning happens inside ``fit``)."""
    import pandas  # noqa: F401
    import sklearn
    from sklearn.ensemble import HistGradientBoostingClassifier

    a = job.args
    job.baseline()
    X, y = job.timed("load_s", load_csv, a["train"])
    clf = HistGradientBoostingClassifier(
        max_iter=a["rounds"], learning_rate=BOOST["eta"], max_depth=BOOST["max_depth"],
        max_leaf_nodes=2 ** BOOST["max_depth"], max_bins=BOOST["max_bin"] - 1,
        l2_regularization=BOOST["reg_lambda"], min_samples_leaf=1, early_stopping=False,
        random_state=0)
    job.extra["library_version"] = sklearn.__version__
    _finish(job, lambda: clf.fit(X, y), lambda m, X: m.predict_proba(X)[:, 1],
            a.get("phase", "all"))


def job_skl_rf(job):
    import pandas  # noqa: F401
    import sklearn
    from sklearn.ensemble import RandomForestClassifier

    a = job.args
    job.baseline()
    X, y = job.timed("load_s", load_csv, a["train"])
    clf = RandomForestClassifier(n_estimators=a["n_estimators"], max_depth=a["max_depth"],
                                 n_jobs=THREADS, random_state=0)
    job.extra["library_version"] = sklearn.__version__
    _finish(job, lambda: clf.fit(X, y), lambda m, X: m.predict_proba(X)[:, 1], "all")


def job_lgb_rf(job):
    import lightgbm as lgb
    import pandas  # noqa: F401

    a = job.args
    job.baseline()
    X, y = job.timed("load_s", load_csv, a["train"])
    n_features = X.shape[1]
    # sklearn draws sqrt(features) candidates per split: LightGBM's per-node sampling
    # (feature_fraction_bynode), not feature_fraction (per tree)
    params = {"objective": "binary", "boosting": "rf", "bagging_fraction": 0.632,
              "bagging_freq": 1, "feature_fraction": 1.0,
              "feature_fraction_bynode": math.sqrt(n_features) / n_features,
              "max_depth": a["max_depth"], "num_leaves": min(2 ** a["max_depth"], 131072),
              "min_data_in_leaf": 1, "min_sum_hessian_in_leaf": 1e-3, "max_bin": 255,
              "num_threads": THREADS, "verbose": -1, "seed": 0}
    ds = job.timed("build_s", lambda: lgb.Dataset(
        X, label=y, params={"max_bin": 255, "verbose": -1, "num_threads": THREADS,
                            "min_data_in_leaf": 1}, free_raw_data=True).construct())
    X = y = None  # the raw arrays are the Dataset's now; free them before training
    job.extra["library_version"] = lgb.__version__
    _finish(job, lambda: lgb.train(params, ds, a["n_estimators"]),
            lambda m, X: m.predict(X, num_threads=THREADS), "all")


def job_skl_ada(job):
    import pandas  # noqa: F401
    import sklearn
    from sklearn.ensemble import AdaBoostClassifier
    from sklearn.tree import DecisionTreeClassifier

    a = job.args
    job.baseline()
    X, y = job.timed("load_s", load_csv, a["train"])
    # AdaBoostClassifier rejects NaN (its trees would accept it): missing values become the
    # lowest float32, i.e. "missing goes with the smallest values"; same for the test rows.
    X = _nan_to_lowest(X)
    job.extra["note"] = "NaN replaced by the lowest float32 (AdaBoostClassifier rejects NaN)"
    clf = AdaBoostClassifier(estimator=DecisionTreeClassifier(max_depth=a["max_depth"]),
                             n_estimators=a["n_estimators"], random_state=0)
    job.extra["library_version"] = sklearn.__version__
    _finish(job, lambda: clf.fit(X, y), lambda m, X: m.predict_proba(_nan_to_lowest(X))[:, 1],
            "all")


def _nan_to_lowest(X):
    X[np.isnan(X)] = np.finfo(np.float32).min
    return X


# ---------------------------------------------------------------------------- oocboost

def _ooc_predict(model, X):
    from oocboost.model.predict import predict

    # the same float32 array the peers get: oocboost reads float32 rows without a copy
    return np.asarray(predict(model, X)).reshape(-1)


def ooc_params(a):
    """oocboost's booster parameters: the suite's common ones, plus the job's own."""
    return {"objective": "binary:logistic", "eta": BOOST["eta"],
            "max_depth": BOOST["max_depth"], "reg_lambda": BOOST["reg_lambda"],
            "min_child_weight": BOOST["min_child_weight"], "n_threads": THREADS,
            "verbosity": 0, **a.get("params", {})}


def _ooc_build(job, oocboost, build_cache):
    """The cache to train from: built here, or opened when the runner built it in a job
    of its own (``cache_dir``), so this process's peak RSS is training's alone."""
    a = job.args
    if a.get("cache_dir"):
        return oocboost.Cache(a["cache_dir"]), None
    cache_dir = os.path.join(a["tmp_dir"], f"ooc-cache-{os.getpid()}")
    cache = job.timed("build_s", build_cache, a["train"], cache_dir, label="label",
                      max_bin=BOOST["max_bin"], overwrite=True, quiet=True,
                      memory_limit=a.get("memory_limit"))
    job.extra["cache_bytes"] = sum(
        os.path.getsize(os.path.join(root, f)) for root, _, files in os.walk(cache_dir)
        for f in files)
    return cache, cache_dir


def job_ooc_boost(job):
    """oocboost: CSV -> ``build_cache`` -> ``train`` (from the cache) -> predict."""
    import shutil

    oocboost, (build_cache, train) = import_oocboost("build_cache", "train")
    try:
        import oocboost.model.predict  # noqa: F401
    except Exception as exc:  # noqa: BLE001
        raise Unavailable(f"oocboost.model.predict not importable: {exc}") from exc
    import pandas  # noqa: F401  (the test CSV is loaded like the peers do)

    a = job.args
    job.baseline()
    job.extra["library_version"] = getattr(oocboost, "__version__", "?")
    cache, cache_dir = _ooc_build(job, oocboost, build_cache)
    try:
        if a.get("phase", "all") == "build":
            return
        model = job.timed("train_s", train, ooc_params(a), cache, a["rounds"],
                          memory_limit=a.get("memory_limit"))
        log = _jsonable_log(getattr(model, "training_log", None))
        job.extra["training_log"] = log
        Xt, yt = load_csv(a["test"])
        p = timed_predict(
            job, lambda X: _ooc_predict(model, X), Xt, a.get("predict_repeats", 1)
        )
        binary_metrics(job, yt, p)
        if a.get("predict_from_file"):
            from oocboost.model.predict import predict

            t0 = time.perf_counter()
            predict(model, a["test"])
            job.times["predict_file_s"] = time.perf_counter() - t0
    finally:
        if cache_dir is not None:
            shutil.rmtree(cache_dir, ignore_errors=True)


def _ooc_estimator_job(job, cls_name, kwargs):
    """A scikit-learn-style oocboost learner that may not exist yet."""
    import shutil

    oocboost, (build_cache, cls) = import_oocboost("build_cache", cls_name)
    import pandas  # noqa: F401

    a = job.args
    job.baseline()
    job.extra["library_version"] = getattr(oocboost, "__version__", "?")
    cache, cache_dir = _ooc_build(job, oocboost, build_cache)
    try:
        clf = cls(**kwargs)
        job.timed("train_s", clf.fit, cache)
        model = getattr(clf, "model_", None)
        job.extra["training_log"] = _jsonable_log(getattr(model, "training_log", None))
        Xt, yt = load_csv(a["test"])
        p = timed_predict(job, lambda X: np.asarray(clf.predict_proba(X))[:, 1], Xt, 1)
        binary_metrics(job, yt, p)
    finally:
        if cache_dir is not None:
            shutil.rmtree(cache_dir, ignore_errors=True)


def job_ooc_rf(job):
    a = job.args
    _ooc_estimator_job(job, "RandomForestClassifier", dict(
        n_estimators=a["n_estimators"], max_depth=a["max_depth"], n_jobs=THREADS,
        random_state=0, memory_limit=a.get("memory_limit")))


def job_ooc_ada(job):
    a = job.args
    _ooc_estimator_job(job, "AdaBoostClassifier", dict(
        n_estimators=a["n_estimators"], max_depth=a["max_depth"], random_state=0,
        memory_limit=a.get("memory_limit")))


def job_ooc_build_cache(job):
    """``build_cache`` into ``cache_dir``, kept for the training job that follows (the
    runner deletes it): the build's time and peak RSS, measured in a process of its own."""
    oocboost, (build_cache,) = import_oocboost("build_cache")
    a = job.args
    job.baseline()
    job.extra["library_version"] = getattr(oocboost, "__version__", "?")
    job.timed("build_s", build_cache, a["train"], a["cache_dir"], label="label",
              max_bin=BOOST["max_bin"], overwrite=True, quiet=True,
              memory_limit=a.get("memory_limit"), **a.get("build_options", {}))


def job_ooc_warmup(job):
    """Tiny build + 2 rounds: fills numba's on-disk cache so the measured runs are warm.
    Its wall time is the cold start (first run after install)."""
    import shutil

    oocboost, (build_cache, train) = import_oocboost("build_cache", "train")
    job.baseline()
    if job.args.get("categorical"):
        from bench.cat_jobs import warm_categorical

        return warm_categorical(job, oocboost)
    cache, cache_dir = _ooc_build(job, oocboost, build_cache)
    try:
        plain = {"objective": "binary:logistic", "max_depth": 6, "n_threads": THREADS,
                 "verbosity": 0}
        model = job.timed("train_s", train, plain, cache, 2)
        for params in job.args.get("variants", ()):   # kernels of their own, not timed
            train({**plain, **params}, cache, 2)
        Xt, _ = load_csv(job.args["test"])
        job.timed("predict_s", _ooc_predict, model, Xt[:1000])
    finally:
        if cache_dir is not None:
            shutil.rmtree(cache_dir, ignore_errors=True)


# ---------------------------------------------------------------------------- limit

def job_limit(job):
    """A reference histogram pass over the same uint8 codes (column-major (features,
    rows)), one task per feature with scalar updates, float32 gradient and hessian per
    row, float64 sums; and a pure memory read (a sum over the code bytes, read as 64-bit
    words). A yardstick to compare runs by, not a floor (oocboost's kernel is faster)."""
    import numba

    numba.set_num_threads(THREADS)
    from numba import njit, prange

    @njit(parallel=True, cache=True, boundscheck=False, nogil=True)
    def hist_feature_parallel(codes, g, h, out):
        n_f, n = codes.shape
        for f in prange(n_f):
            col = codes[f]
            hist = out[f]
            for b in range(hist.shape[0]):
                hist[b, 0] = 0.0
                hist[b, 1] = 0.0
            for i in range(n):
                c = col[i]
                hist[c, 0] += g[i]
                hist[c, 1] += h[i]

    @njit(parallel=True, cache=True, boundscheck=False, nogil=True)
    def read_all(flat, n_chunks):
        n = flat.shape[0]
        step = (n + n_chunks - 1) // n_chunks
        partial = np.zeros(n_chunks, dtype=np.uint64)
        for k in prange(n_chunks):
            s = np.uint64(0)
            for i in range(k * step, min(n, (k + 1) * step)):
                s += flat[i]  # wrapping sum of 64-bit words: every byte is read once
            partial[k] = s
        return partial.sum()

    job.baseline()
    codes = np.load(job.args["codes"])
    want = int(job.args.get("rows", 1_000_000))
    if codes.shape[1] < want:  # small data sets (quick mode): tile the codes up to `rows`
        reps_needed = -(-want // codes.shape[1])
        codes = np.ascontiguousarray(np.tile(codes, (1, reps_needed))[:, :want])
    n_f, n = codes.shape
    rng = np.random.default_rng(0)
    g = rng.standard_normal(n).astype(np.float32)
    h = rng.random(n).astype(np.float32)
    out = np.zeros((n_f, 256, 2), dtype=np.float64)
    flat = codes.reshape(-1)
    words = flat[: len(flat) - len(flat) % 8].view(np.uint64)  # read 8 code bytes per load
    # compile + warm
    hist_feature_parallel(codes, g, h, out)
    read_all(words, 64)
    reps = job.args.get("kernel_repeats", 20)

    def best(fn, *args):
        ts = []
        for _ in range(reps):
            t0 = time.perf_counter()
            fn(*args)
            ts.append(time.perf_counter() - t0)
        return float(np.median(ts)), float(np.min(ts))

    hist_med, hist_min = best(hist_feature_parallel, codes, g, h, out)
    read_med, read_min = best(read_all, words, 64)
    hist_bytes = codes.nbytes + 8 * n  # codes + g + h (per pass)
    job.times["hist_pass_s"] = hist_med
    job.times["read_pass_s"] = read_med
    job.extra.update(
        rows=int(n), features=int(n_f), threads=numba.get_num_threads(),
        hist_pass_ms=hist_med * 1e3, hist_pass_min_ms=hist_min * 1e3,
        hist_gb_s=hist_bytes / hist_med / 1e9, hist_ns_per_cell=hist_med / (n * n_f) * 1e9,
        read_pass_ms=read_med * 1e3, read_pass_min_ms=read_min * 1e3,
        read_gb_s=words.nbytes / read_med / 1e9)


# ---------------------------------------------------------------------------- main

JOBS = {name[4:]: fn for name, fn in globals().items() if name.startswith("job_")}


def main(argv=None):
    # the categorical suite's jobs import this module's helpers (as bench.jobs, which
    # is not __main__: its Unavailable is another class)
    from bench import cat_jobs

    jobs = {**JOBS, **cat_jobs.JOBS}
    unavailable = (Unavailable, cat_jobs.Unavailable)
    parser = argparse.ArgumentParser(prog="python -m bench.jobs")
    parser.add_argument("job", choices=sorted(jobs))
    parser.add_argument("--json-args", default="{}")
    ns = parser.parse_args(argv)
    job = Job(json.loads(ns.json_args))
    t0 = time.perf_counter()
    result = {"job": ns.job}
    try:
        jobs[ns.job](job)
        result["status"] = "ok"
    except unavailable as exc:
        result["status"] = "unavailable"
        result["reason"] = str(exc)
    except Exception as exc:  # noqa: BLE001
        result["status"] = "error"
        result["reason"] = f"{type(exc).__name__}: {exc}"
        traceback.print_exc()
    result.update(wall_s=time.perf_counter() - t0, times=job.times, metrics=job.metrics,
                  baseline_rss=job.baseline_rss, extra=job.extra, self_rss_end=rss())
    sys.stdout.write(RESULT_PREFIX + json.dumps(result, default=float) + "\n")
    sys.stdout.flush()
    return 0 if result["status"] in ("ok", "unavailable") else 1


if __name__ == "__main__":
    sys.exit(main())
