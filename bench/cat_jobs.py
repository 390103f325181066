"""Jobs of ``python -m bench categorical`` (registered in :mod:`bench.jobs`): oocboost with
native categories and with ordered target statistics, LightGBM with its categorical
handling, CatBoost with ``cat_features`` and XGBoost with ``enable_categorical``, all
with the boosting suite's common parameters (eta 0.1, depth 6, 256 bins, 100 rounds).
"""
import numpy as np

from bench.jobs import (
    BOOST,
    THREADS,
    Unavailable,
    binary_metrics,
    import_oocboost,
    ooc_params,
)

CATEGORICAL = ("shop", "region")


def load_frame(path, categories=None):
    """The categorical CSV as a pandas frame (categories as ``category`` dtype, numbers
    float32) and the label; ``categories`` aligns a test frame's codes with training's."""
    import pandas as pd

    dtypes = {c: "category" for c in CATEGORICAL}
    frame = pd.read_csv(path, dtype=dtypes, engine="c")
    y = frame.pop("label").to_numpy(np.float32)
    for c in frame.columns:
        if c in CATEGORICAL:
            if categories is not None:
                frame[c] = pd.Categorical(frame[c], categories=categories[c])
        else:
            frame[c] = frame[c].astype(np.float32)
    return frame, y


def _categories(frame):
    return {c: frame[c].cat.categories for c in CATEGORICAL}


def _peer(job, fit, predict):
    a = job.args
    job.baseline()
    frame, y = job.timed("load_s", load_frame, a["train"])
    cats = _categories(frame)
    model = job.timed("train_s", fit, frame, y)
    del frame
    test, yt = load_frame(a["test"], cats)
    binary_metrics(job, yt, predict(model, test))


def job_lgb_cat(job):
    """LightGBM: pandas ``category`` columns, its native categorical splits."""
    import lightgbm as lgb

    from bench.jobs import _lgb_params

    a = job.args
    job.extra["library_version"] = lgb.__version__

    def fit(frame, y):
        return lgb.train(_lgb_params(), lgb.Dataset(frame, label=y), a["rounds"])

    _peer(job, fit, lambda m, X: m.predict(X, num_threads=THREADS))


def job_xgb_cat(job):
    """XGBoost ``hist`` with ``enable_categorical`` (its partition search)."""
    import xgboost as xgb

    from bench.jobs import _xgb_params

    a = job.args
    job.extra["library_version"] = xgb.__version__

    def fit(frame, y):
        dm = xgb.QuantileDMatrix(frame, label=y, enable_categorical=True,
                                 max_bin=BOOST["max_bin"])
        return xgb.train(_xgb_params(a), dm, a["rounds"])

    _peer(job, fit,
          lambda m, X: m.predict(xgb.DMatrix(X, enable_categorical=True)))


def job_cb_cat(job):
    """CatBoost with ``cat_features`` (its ordered target statistics and combinations)."""
    try:
        import catboost
    except ImportError as exc:
        raise Unavailable("catboost is not installed (pip install '.[bench]')") from exc
    a = job.args
    job.extra["library_version"] = catboost.__version__

    def fit(frame, y):
        # CatBoost takes categories as strings: missing ones as a category of their own
        _as_strings(frame)
        model = catboost.CatBoostClassifier(
            iterations=a["rounds"], learning_rate=BOOST["eta"], depth=BOOST["max_depth"],
            l2_leaf_reg=BOOST["reg_lambda"], border_count=BOOST["max_bin"] - 1,
            thread_count=THREADS, verbose=False, random_seed=0, allow_writing_files=False)
        return model.fit(frame, y, cat_features=list(CATEGORICAL))

    def predict(model, X):
        _as_strings(X)
        return model.predict_proba(X)[:, 1]

    _peer(job, fit, predict)


def _as_strings(frame):
    """CatBoost's categories: strings, a missing one as a category of its own."""
    for c in CATEGORICAL:
        frame[c] = frame[c].astype(object).where(frame[c].notna(), "<missing>").astype(str)


def _ooc_cat(job):
    """oocboost from a cache built by the runner's ``ooc_build_cache`` job (with the
    job's ``build_options``: its ``cat_encoding``), predicting the test CSV from the
    file."""
    oocboost, (train,) = import_oocboost("train")
    from oocboost.model.predict import predict

    a = job.args
    job.baseline()
    job.extra["library_version"] = getattr(oocboost, "__version__", "?")
    if not a.get("cache_dir"):
        raise Unavailable("the runner builds the cache (ooc_build_cache) first")
    cache = oocboost.Cache(a["cache_dir"])
    model = job.timed("train_s", train, ooc_params(a), cache, a["rounds"],
                      memory_limit=a.get("memory_limit"))
    job.extra["training_log"] = {k: v for k, v in model.training_log.items() if k != "plan"}
    import pyarrow.csv as pacsv

    yt = pacsv.read_csv(a["test"]).column("label").to_numpy().astype(np.float64)
    p = job.timed("predict_s", predict, model, a["test"])
    binary_metrics(job, yt, np.asarray(p).reshape(-1))


def job_ooc_cat(job):
    """oocboost, native categories (LightGBM's partition search, the default)."""
    _ooc_cat(job)


def job_ooc_cat_ts(job):
    """oocboost, ``cat_encoding="ordered_ts"`` (CatBoost's ordered target statistics)."""
    _ooc_cat(job)


def warm_categorical(job, oocboost):
    """The warm-up of the categorical suite: a tiny build with each encoding, 2 rounds
    and a prediction from the file, so the wide-category and ordered-TS kernels are
    compiled before the measured runs."""
    import os
    import shutil

    from oocboost.model.predict import predict

    a = job.args
    for encoding in ("native", "ordered_ts"):
        cache_dir = os.path.join(a["tmp_dir"], f"ooc-warm-{encoding}-{os.getpid()}")
        try:
            cache = job.timed("build_s", oocboost.build_cache, a["train"], cache_dir,
                              label="label", overwrite=True, quiet=True,
                              cat_encoding=encoding)
            model = job.timed("train_s", oocboost.train,
                              {"objective": "binary:logistic", "max_depth": 6,
                               "n_threads": THREADS, "verbosity": 0}, cache, 2)
            job.timed("predict_s", predict, model, a["test"])
        finally:
            shutil.rmtree(cache_dir, ignore_errors=True)


JOBS = {name[4:]: fn for name, fn in globals().items() if name.startswith("job_")}
