"""Symmetric (oblivious) trees against CatBoost, the library that defines them::

    PYTHONPATH=. python bench/symmetric_vs_catboost.py [N_TRAIN] [ROUNDS] [--out DIR]

The boost suite's generator (``tools/gen_data.py``: 28 features, 2% missing), N_TRAIN
training rows (default 200,000) and 50,000 test rows; depth 6, learning rate 0.1, L2 3,
254 borders, no bagging or random strength, 2 threads. oocboost trains from a cache built
beforehand (not timed); CatBoost from the NumPy array. Prints test AUC, training seconds
and prediction rows/s (the 50,000 test rows repeated to 1M, best of two), and writes
``DIR/results-symmetric.json``. Needs ``catboost`` (the bench extra).
"""
import argparse
import json
import os
import tempfile
import time

import numpy as np


def _data(n_train, n_test, folder):
    import pyarrow.csv as pacsv

    from tools.gen_data import generate

    path = os.path.join(folder, f"symmetric_{n_train}.csv")
    if not os.path.exists(path):
        generate(path, n_train + n_test, 28, seed=0, missing_rate=0.02)
    table = pacsv.read_csv(path)
    y = table.column("label").to_numpy().astype(np.float64)
    X = np.column_stack([table.column(name).to_numpy(zero_copy_only=False)
                         for name in table.column_names if name != "label"])
    X = X.astype(np.float64)
    return X[:n_train], y[:n_train], X[n_train:], y[n_train:]


def _best_rate(predict, X, repeats=2):
    best = np.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        predict(X)
        best = min(best, time.perf_counter() - t0)
    return len(X) / best


def main(argv=None):
    p = argparse.ArgumentParser(prog="bench/symmetric_vs_catboost.py")
    p.add_argument("n_train", nargs="?", type=int, default=200_000)
    p.add_argument("rounds", nargs="?", type=int, default=100)
    p.add_argument("--out", default="bench_out")
    args = p.parse_args(argv)
    from catboost import CatBoostClassifier
    from sklearn.metrics import roc_auc_score

    import oocboost

    os.makedirs(args.out, exist_ok=True)
    Xtr, ytr, Xte, yte = _data(args.n_train, 50_000, args.out)
    big = np.tile(Xte, (20, 1))
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        cache = oocboost.build_cache(Xtr, os.path.join(tmp, "c"), label=ytr, quiet=True)
        params = {"objective": "binary:logistic", "max_depth": 6, "eta": 0.1,
                  "reg_lambda": 3.0, "grow_policy": "symmetric", "n_threads": 2}
        oocboost.train(params, cache, 2)        # kernels loaded (or compiled) first
        t0 = time.perf_counter()
        model = oocboost.train(params, cache, args.rounds)
        results["oocboost"] = {"train_s": time.perf_counter() - t0,
                               "auc": roc_auc_score(yte, model.predict(Xte)),
                               "predict_rows_s": _best_rate(model.predict, big)}
    cb = CatBoostClassifier(iterations=args.rounds, depth=6, learning_rate=0.1,
                            l2_leaf_reg=3.0, border_count=254, thread_count=2, verbose=0,
                            random_strength=0, bootstrap_type="No",
                            allow_writing_files=False)
    t0 = time.perf_counter()
    cb.fit(Xtr, ytr)
    results["catboost"] = {"train_s": time.perf_counter() - t0,
                           "auc": roc_auc_score(yte, cb.predict_proba(Xte)[:, 1]),
                           "predict_rows_s": _best_rate(cb.predict_proba, big)}
    for lib, r in results.items():
        print(f"{lib:9s} AUC {r['auc']:.4f}  train {r['train_s']:.2f} s  predict "
              f"{r['predict_rows_s']:,.0f} rows/s")
    with open(os.path.join(args.out, "results-symmetric.json"), "w") as f:
        json.dump({"n_train": args.n_train, "rounds": args.rounds, "results": results}, f,
                  indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
