"""Linear leaves (``linear_tree=True``) against LightGBM, the library that defines them::

    PYTHONPATH=. python bench/linear_tree_vs_lightgbm.py [N_TRAIN] [ROUNDS] [--seeds 3]
                                                         [--out DIR]

Piecewise-linear data (8 uniform features on [-2, 2], 0.1 label noise), two shapes: a
label continuous in x (hinges, folds at 0.41, 0.53 and |x2 - x3|) and one that jumps at
x0 = 0.37 (two linear regimes). Breaks sit off 0 on purpose: LightGBM's bins always have
an edge at 0, which would favour it on a break at 0. N_TRAIN training rows (default
200,000), 100,000 test rows scored against the noiseless label; for each seed and shape
both libraries grow 31-leaf trees best-first (oocboost ``grow_policy="lossguide"``,
``max_leaves=31``, ``min_child_weight=20``; LightGBM's defaults ``num_leaves=31``,
``min_data_in_leaf=20``), learning rate 0.1, no L2, 2 threads, with and without linear
leaves. oocboost trains from a cache built beforehand (build timed apart); LightGBM from
the NumPy array (its ``Dataset`` construction inside its time). Prints RMSE and seconds
and writes ``DIR/results-linear-tree.json``; the ratio is the mean over seeds of our
RMSE over LightGBM's.
"""
import argparse
import json
import os
import tempfile
import time

import numpy as np


def continuous(X):
    return (2 * np.abs(X[:, 0] - 0.41) + 3 * np.maximum(X[:, 1], 0.53)
            - np.abs(X[:, 2] - X[:, 3]) + 0.5 * X[:, 4])


def jump(X):
    return np.where(X[:, 0] > 0.37, 3 * X[:, 1] + X[:, 2], -2 * X[:, 1] + 0.5 * X[:, 3])


SHAPES = {"continuous": continuous, "jump": jump}


def _rmse(prediction, truth):
    return float(np.sqrt(np.mean((prediction - truth) ** 2)))


def _one(shape, seed, n_train, rounds, tmp):
    import lightgbm as lgb

    import oocboost

    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, (n_train, 8))
    y = SHAPES[shape](X) + 0.1 * rng.normal(size=n_train)
    Xt = rng.uniform(-2, 2, (100_000, 8))
    truth = SHAPES[shape](Xt)
    t0 = time.perf_counter()
    cache = oocboost.build_cache(X, os.path.join(tmp, f"{shape}{seed}"), label=y,
                                 quiet=True)
    out = {"build_s": time.perf_counter() - t0}
    for linear in (False, True):
        params = {"max_depth": 5, "eta": 0.1, "reg_lambda": 0.0, "min_child_weight": 20.0,
                  "linear_tree": linear, "n_threads": 2, "verbosity": 0}
        t0 = time.perf_counter()
        model = oocboost.train(params, cache, rounds, verbose_eval=False)
        ours = {"train_s": time.perf_counter() - t0, "rmse": _rmse(model.predict(Xt), truth)}
        t0 = time.perf_counter()
        booster = lgb.train({"objective": "regression", "learning_rate": 0.1,
                             "num_leaves": 32, "max_depth": 5, "linear_tree": linear,
                             "num_threads": 2,
                             "verbose": -1}, lgb.Dataset(X, y), rounds)
        theirs = {"train_s": time.perf_counter() - t0,
                  "rmse": _rmse(booster.predict(Xt), truth)}
        out["linear" if linear else "constant"] = {"oocboost": ours, "lightgbm": theirs}
    return out


def main(argv=None):
    p = argparse.ArgumentParser(prog="bench/linear_tree_vs_lightgbm.py")
    p.add_argument("n_train", nargs="?", type=int, default=200_000)
    p.add_argument("rounds", nargs="?", type=int, default=100)
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--out", default="bench_out")
    args = p.parse_args(argv)
    import oocboost

    os.makedirs(args.out, exist_ok=True)
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        warm = oocboost.build_cache(np.random.default_rng(9).normal(size=(2000, 8)),
                                    os.path.join(tmp, "warm"),
                                    label=np.arange(2000.0), quiet=True)
        oocboost.train({"linear_tree": True, "verbosity": 0}, warm, 3)  # kernels loaded
        for shape in SHAPES:
            runs = [_one(shape, seed, args.n_train, args.rounds, tmp)
                    for seed in range(args.seeds)]
            results[shape] = runs
            for kind in ("constant", "linear"):
                ratio = np.mean([r[kind]["oocboost"]["rmse"] / r[kind]["lightgbm"]["rmse"]
                                 for r in runs])
                line = "  ".join(
                    f"{lib} RMSE {np.mean([r[kind][lib]['rmse'] for r in runs]):.4f} "
                    f"train {np.mean([r[kind][lib]['train_s'] for r in runs]):.2f} s"
                    for lib in ("oocboost", "lightgbm"))
                print(f"{shape:10s} {kind:8s} {line}  RMSE ratio {ratio:.3f}")
    with open(os.path.join(args.out, "results-linear-tree.json"), "w") as f:
        json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
