"""Serving benchmark: one boosted model predicted by every runtime it can be served in,
side by side: ``Model.predict`` and a fitted estimator's ``predict_proba``, the exported
model in onnxruntime (ONNX), as a TL2cgen-compiled library (Treelite), and in XGBoost
(``inplace_predict``) and LightGBM (their own exported files). Batch throughput in rows/s
on a float64 array, and single-row latency (p50 / p99 of one-row calls, as online
serving calls them), each runtime with the same threads.

    python -m bench serving [--rows 100000] [--rounds 100] [--depth 6] [--calls 10000]
                            [--threads 2] [--out DIR]

The model trains on the synthetic HIGGS-like data (``oocboost.datasets``), rounded to
float32 values (XGBoost rounds its input so); every runtime's predictions are checked
against ``Model.predict`` (1e-5) before it is timed.
"""
from __future__ import annotations

import argparse
import os
import pathlib
import tempfile
import time

import numpy as np


def _parse(argv):
    p = argparse.ArgumentParser(prog="python -m bench serving", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=int, default=100_000, help="rows predicted in a batch")
    p.add_argument("--train-rows", type=int, default=100_000)
    p.add_argument("--rounds", type=int, default=100)
    p.add_argument("--depth", type=int, default=6)
    p.add_argument("--calls", type=int, default=10_000, help="one-row calls timed")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--repeats", type=int, default=3, help="batch timings (best kept)")
    p.add_argument("--out", default=None, help="folder for the model files (temporary)")
    return p.parse_args(argv)


def _runtimes(est, folder, threads):
    """name -> (batch predict function of a float64 array, one-row function)."""
    import lightgbm
    import onnxruntime
    import tl2cgen
    import treelite
    import xgboost

    model = est.get_booster()
    out = {"oocboost Model.predict": (model.predict, model.predict),
           "oocboost estimator.predict_proba": (est.predict_proba, est.predict_proba)}
    model.export(folder / "model.onnx")
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    session = onnxruntime.InferenceSession(str(folder / "model.onnx"), options,
                                           providers=["CPUExecutionProvider"])

    def onnx_predict(X):
        return session.run(["prediction"], {"X": X})[0]

    out["onnxruntime (ONNX export)"] = (onnx_predict, onnx_predict)
    model.export(folder / "model.tl")
    library = folder / "model.so"
    tl2cgen.export_lib(treelite.Model.deserialize(str(folder / "model.tl")),
                       toolchain="gcc", libpath=str(library),
                       params={"parallel_comp": threads})
    predictor = tl2cgen.Predictor(str(library), nthread=threads)

    def tl2cgen_predict(X):
        return predictor.predict(tl2cgen.DMatrix(X)).reshape(X.shape[0])

    out["TL2cgen (Treelite export)"] = (tl2cgen_predict, tl2cgen_predict)
    model.export(folder / "xgb.ubj")
    booster = xgboost.Booster(model_file=str(folder / "xgb.ubj"))
    booster.set_param({"nthread": threads})

    def xgb_predict(X):
        return booster.inplace_predict(X)

    out["XGBoost inplace_predict (export)"] = (xgb_predict, xgb_predict)
    model.export(folder / "lgb.txt")
    lgb = lightgbm.Booster(model_file=str(folder / "lgb.txt"))

    def lgb_predict(X):
        return lgb.predict(X, num_threads=threads)

    out["LightGBM predict (export)"] = (lgb_predict, lgb_predict)
    return out


def _latencies(fn, rows, calls):
    """Seconds of each one-row call, over ``calls`` calls cycling through ``rows``."""
    times = np.empty(calls)
    for i in range(calls):
        x = rows[i % rows.shape[0]:i % rows.shape[0] + 1]
        t0 = time.perf_counter()
        fn(x)
        times[i] = time.perf_counter() - t0
    return times


def main(argv=None) -> int:
    args = _parse(argv)
    os.environ.setdefault("OMP_NUM_THREADS", str(args.threads))
    import oocboost
    from oocboost.datasets import generate_arrays

    data = generate_arrays(args.train_rows + args.rows, seed=0)
    # values a float32 holds: XGBoost rounds its input to float32 before comparing
    X = np.ascontiguousarray(data.X.astype(np.float32), dtype=np.float64)
    y = data.y
    train, test = slice(0, args.train_rows), slice(args.train_rows, None)
    est = oocboost.GradientBoostingClassifier(
        n_estimators=args.rounds, max_depth=args.depth, learning_rate=0.1,
        n_jobs=args.threads).fit(X[train], y[train])
    X_test = X[test]
    reference = est.get_booster().predict(X_test)
    folder = pathlib.Path(args.out or tempfile.mkdtemp(prefix="oocb-serving-"))
    folder.mkdir(parents=True, exist_ok=True)
    rows = []
    for name, (batch, one) in _runtimes(est, folder, args.threads).items():
        predicted = np.asarray(batch(X_test))
        if predicted.ndim == 2:                     # predict_proba: P(class 1)
            predicted = predicted[:, 1]
        gap = float(np.abs(predicted - reference).max())
        if gap > 1e-5:
            raise SystemExit(f"{name} predicts up to {gap:.2e} away from Model.predict")
        best = min(_timed(batch, X_test) for _ in range(args.repeats))
        one(X_test[:1])                              # first call's set-up not timed
        # the batch's worker threads (numba's, onnxruntime's, OpenMP's) spin a while
        # after it, on the cores the one-row calls run on: let them park first
        time.sleep(1.0)
        lat = _latencies(one, X_test, args.calls) * 1e6
        rows.append((name, X_test.shape[0] / best, np.percentile(lat, 50),
                     np.percentile(lat, 99), gap))
    print(f"\n{args.rounds} trees of depth {args.depth}, {args.rows:,} rows float64, "
          f"{args.threads} threads; one-row latency over {args.calls:,} calls\n")
    print("| runtime | rows/s (batch) | p50 us (1 row) | p99 us (1 row) | max diff |")
    print("|---|---|---|---|---|")
    for name, rate, p50, p99, gap in rows:
        print(f"| {name} | {rate:,.0f} | {p50:.1f} | {p99:.1f} | {gap:.1e} |")
    return 0


def _timed(fn, X):
    t0 = time.perf_counter()
    fn(X)
    return time.perf_counter() - t0
