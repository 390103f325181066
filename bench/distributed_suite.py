"""Distributed training on a Dask LocalCluster against lightgbm.dask and xgboost.dask::

    python -m bench dask [--rows 1000000] [--rounds 100] [--workers 1,2,4] [--out bench_out]
    python -m bench dask --learner forest [--trees 50]

The bench's HIGGS-like data (``bench/data.py``: 28 float features, 2% missing, binary),
loaded once with pandas and handed to each cluster as the same persisted Dask DataFrame
(two partitions a worker). For each worker count (processes, one thread each): oocboost
builds its shards (timed apart, ``build s``) and trains; LightGBM's
``DaskLGBMClassifier`` and XGBoost's ``xgboost.dask.train`` (``hist``, a
``DaskQuantileDMatrix``, whose construction its time includes) train from the same
partitions. Parameters: the boosting suite's (depth 6, eta 0.1, 256 bins, lambda 1;
LightGBM ``num_leaves=63``). AUC on the held-out rows. oocboost also reports the bytes
the busiest rank sent per data pass (boosting: rank 0's summed histograms to each other
rank; a forest of sampled features: each other rank's histograms to rank 0, which hands
each rank back the sums of the trees it searches) and the seconds the
slowest rank spent in the sums (waiting for the others included).
With ``--learner forest``: random forests of ``--trees`` trees, depth 10, ``sqrt``
features per node, bootstrap: ``oocboost.dask.train_forest`` (Poisson(1) draws per row)
against ``DaskLGBMClassifier(boosting_type="rf")`` and XGBoost's random forest mode
(``num_parallel_tree``, one round, ``colsample_bynode`` = sqrt(28)/28), both bagging
63.2% of the rows without replacement (neither draws with replacement).
Prints a Markdown table and writes ``OUT/results-dask[-forest].json``.
"""
import argparse
import json
import os
import time

import numpy as np


def _auc(y, p):
    from sklearn.metrics import roc_auc_score

    return float(roc_auc_score(y, p))


def _ooc_run(client, ddf, work, train):
    """Build the shards, then ``train(shards)`` -> (model, figures); the timings, passes,
    bytes a pass and seconds in the sums."""
    import oocboost.dask

    t0 = time.perf_counter()
    shards = oocboost.dask.build_cache(ddf, os.path.join(work, f"shards-{time.time_ns()}"),
                                       label="label", client=client)
    build_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    model, figures = train(shards)
    train_s = time.perf_counter() - t0
    passes = max(f["n_reductions"] for f in figures)
    return model, {"build_s": build_s, "train_s": train_s, "passes": passes,
                   "bytes_per_pass_rank": max(f["bytes_sent"] for f in figures)
                   / max(passes, 1),
                   "reduce_s": max(f["reduce_seconds"] for f in figures)}


def _ooc(client, ddf, test, args, work):
    import oocboost.dask

    params = {"objective": "binary:logistic", "eta": 0.1, "max_depth": 6, "reg_lambda": 1.0,
              "min_child_weight": 1.0}
    model, r = _ooc_run(client, ddf, work, lambda shards: oocboost.dask.train(
        client, params, shards, args.rounds, return_figures=True))
    X, y = test
    return {**r, "auc": _auc(y, model.predict(X))}


#: Forest settings shared by the three libraries (``--learner forest``).
FOREST_DEPTH, FOREST_NODE_FEATURES, FOREST_BAG = 10, 5 / 28, 0.632


def _ooc_forest(client, ddf, test, args, work):
    import oocboost.dask

    params = {"max_depth": FOREST_DEPTH, "max_features": "sqrt", "task": "classification"}
    model, r = _ooc_run(client, ddf, work, lambda shards: oocboost.dask.train_forest(
        client, params, shards, args.trees, return_figures=True))
    X, y = test
    return {**r, "auc": _auc(y, model.predict(X)[:, 1])}


def _lgb_forest(client, ddf, test, args, work):
    import lightgbm as lgb

    X, y = ddf.drop(columns="label"), ddf["label"]
    clf = lgb.DaskLGBMClassifier(boosting_type="rf", n_estimators=args.trees,
                                 max_depth=FOREST_DEPTH, num_leaves=2 ** FOREST_DEPTH,
                                 bagging_fraction=FOREST_BAG, bagging_freq=1,
                                 feature_fraction_bynode=FOREST_NODE_FEATURES, max_bin=255,
                                 min_child_samples=1, verbose=-1, client=client)
    t0 = time.perf_counter()
    clf.fit(X, y)
    train_s = time.perf_counter() - t0
    Xt, yt = test
    return {"train_s": train_s, "auc": _auc(yt, clf.to_local().predict_proba(Xt)[:, 1])}


def _xgb_forest(client, ddf, test, args, work):
    import xgboost as xgb
    import xgboost.dask  # noqa: F401

    X, y = ddf.drop(columns="label"), ddf["label"]
    params = {"objective": "binary:logistic", "eta": 1.0, "max_depth": FOREST_DEPTH,
              "num_parallel_tree": args.trees, "subsample": FOREST_BAG,
              "colsample_bynode": FOREST_NODE_FEATURES, "tree_method": "hist",
              "max_bin": 256, "nthread": 1}
    t0 = time.perf_counter()
    dtrain = xgb.dask.DaskQuantileDMatrix(client, X, y, max_bin=256)
    out = xgb.dask.train(client, params, dtrain, 1)
    train_s = time.perf_counter() - t0
    Xt, yt = test
    return {"train_s": train_s, "auc": _auc(yt, out["booster"].inplace_predict(Xt))}


def _lgb(client, ddf, test, args, work):
    import lightgbm as lgb

    X, y = ddf.drop(columns="label"), ddf["label"]
    clf = lgb.DaskLGBMClassifier(n_estimators=args.rounds, learning_rate=0.1, max_depth=6,
                                 num_leaves=63, max_bin=255, reg_lambda=1.0,
                                 min_child_samples=1, verbose=-1, client=client)
    t0 = time.perf_counter()
    clf.fit(X, y)
    train_s = time.perf_counter() - t0
    Xt, yt = test
    return {"train_s": train_s, "auc": _auc(yt, clf.to_local().predict_proba(Xt)[:, 1])}


def _xgb(client, ddf, test, args, work):
    import xgboost as xgb
    import xgboost.dask  # noqa: F401  (a submodule: not imported with xgboost)

    X, y = ddf.drop(columns="label"), ddf["label"]
    params = {"objective": "binary:logistic", "eta": 0.1, "max_depth": 6, "lambda": 1.0,
              "tree_method": "hist", "max_bin": 256, "nthread": 1}
    t0 = time.perf_counter()
    dtrain = xgb.dask.DaskQuantileDMatrix(client, X, y, max_bin=256)
    out = xgb.dask.train(client, params, dtrain, args.rounds)
    train_s = time.perf_counter() - t0
    Xt, yt = test
    return {"train_s": train_s, "auc": _auc(yt, out["booster"].inplace_predict(Xt))}


LIBS = {"oocboost": _ooc, "LightGBM (lightgbm.dask)": _lgb,
        "XGBoost (xgboost.dask)": _xgb}
FOREST_LIBS = {"oocboost": _ooc_forest, "LightGBM (lightgbm.dask)": _lgb_forest,
               "XGBoost (xgboost.dask)": _xgb_forest}


def _run_cluster(n_workers, df, test, args, work):
    import dask.dataframe as dd
    from distributed import Client, LocalCluster

    rows = []
    with LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True,
                      dashboard_address=":0") as cluster, Client(cluster) as client:
        ddf = client.persist(dd.from_pandas(df, npartitions=2 * n_workers))
        for lib, run in (FOREST_LIBS if args.learner == "forest" else LIBS).items():
            if args.only and lib.split()[0].lower() not in args.only:
                continue
            r = run(client, ddf, test, args, work)
            rows.append({"workers": n_workers, "lib": lib, **r})
            print(f"[dask] {n_workers} workers, {lib}: {r}", flush=True)
    return rows


def _table(rows):
    out = ["| workers | library | build s | train s | AUC | passes | bytes a pass (busiest "
           "rank) | sum s (slowest rank) |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        build = f"{r['build_s']:.1f}" if "build_s" in r else "-"
        passes = str(r.get("passes", "-"))
        per = f"{r['bytes_per_pass_rank'] / 1e6:.2f} MB" if "bytes_per_pass_rank" in r else "-"
        reduce_s = f"{r['reduce_s']:.2f}" if "reduce_s" in r else "-"
        out.append(f"| {r['workers']} | {r['lib']} | {build} | {r['train_s']:.1f} | "
                   f"{r['auc']:.4f} | {passes} | {per} | {reduce_s} |")
    return "\n".join(out)


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m bench dask")
    p.add_argument("--rows", type=int, default=1_000_000)
    p.add_argument("--test-rows", type=int, default=200_000)
    p.add_argument("--rounds", type=int, default=100)
    p.add_argument("--workers", default="1,2,4")
    p.add_argument("--learner", choices=("boosting", "forest"), default="boosting")
    p.add_argument("--trees", type=int, default=50, help="trees of --learner forest")
    p.add_argument("--only", default="", help="comma list of oocboost, lightgbm, xgboost")
    p.add_argument("--out", default="bench_out")
    args = p.parse_args(argv)
    args.only = [s.strip().lower() for s in args.only.split(",") if s.strip()]
    import pandas as pd

    from bench.data import prepare

    info = prepare(args.out, args.rows, args.test_rows)
    df = pd.read_csv(info["train"], dtype=np.float32, engine="c")
    test_df = pd.read_csv(info["test"], dtype=np.float32, engine="c")
    test = (test_df.drop(columns="label").to_numpy(), test_df["label"].to_numpy())
    work = os.path.join(args.out, "dask-work")
    os.makedirs(work, exist_ok=True)
    rows = []
    for n in (int(w) for w in args.workers.split(",")):
        rows += _run_cluster(n, df, test, args, work)
    suffix = "-forest" if args.learner == "forest" else ""
    with open(os.path.join(args.out, f"results-dask{suffix}.json"), "w") as f:
        json.dump(rows, f, indent=1)
    print(_table(rows))
    return 0
