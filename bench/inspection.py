"""Inspection benchmark: SHAP values and partial dependence of one boosted model, side by
side with the peers on the same trees.

    python -m bench inspection [--train-rows 200000] [--rounds 300] [--depth 6]
                               [--shap-rows 10000] [--interaction-rows 500]
                               [--pd-rows 50000] [--grid 20]
                               [--threads 2] [--out DIR]

* SHAP: ``Model.predict_contributions`` against XGBoost's ``pred_contribs`` and
  LightGBM's ``pred_contrib`` on the model exported to their formats, rows/s, with the
  largest difference from ours (XGBoost's Tree SHAP weighs by the exported covers, as
  ours: the same values; LightGBM's weighs by row counts, which boosting does not
  record, so the export writes 0 and LightGBM's values are NaN: its speed is still its
  speed); SHAP interaction values against XGBoost's ``pred_interactions``.
* Partial dependence, two-way, ``grid x grid`` points: ``oocboost.inspection.
  partial_dependence`` against scikit-learn's ``partial_dependence(method="brute")`` on
  the same fitted estimator and grid (equal averages checked), and ours over a cache of
  the same rows in a fresh process (its second: the first compiles what the array run
  did not), with its peak RSS (``VmHWM``: Linux keeps ``ru_maxrss`` across ``exec``, so a child
  of this process would report this one's) and the peak before the timed call (the
  imports and a 2 x 2 warm-up).

The model trains on the synthetic HIGGS-like data (``oocboost.datasets``).
"""
from __future__ import annotations

import argparse
import os
import pathlib
import subprocess
import sys
import tempfile
import time

import numpy as np


def _parse(argv):
    p = argparse.ArgumentParser(prog="python -m bench inspection", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--train-rows", type=int, default=200_000)
    p.add_argument("--rounds", type=int, default=300)
    p.add_argument("--depth", type=int, default=6)
    p.add_argument("--shap-rows", type=int, default=10_000)
    p.add_argument("--interaction-rows", type=int, default=500)
    p.add_argument("--pd-rows", type=int, default=50_000)
    p.add_argument("--grid", type=int, default=20, help="grid points per feature")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--out", default=None, help="folder for the model files (temporary)")
    return p.parse_args(argv)


def _timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def _shap_rows(est, X, folder, threads):
    """(name, rows/s, max |diff| from ours) of each library's SHAP values of X."""
    import lightgbm
    import xgboost

    model = est.get_booster()
    model.predict_contributions(X[:100])                  # compile outside the timing
    ours, seconds = _timed(lambda: model.predict_contributions(X, n_threads=threads))
    rows = [("oocboost predict_contributions", len(X) / seconds, 0.0)]
    model.export(folder / "xgb.ubj")
    booster = xgboost.Booster(model_file=str(folder / "xgb.ubj"))
    booster.set_param({"nthread": threads})
    matrix = xgboost.DMatrix(X)
    theirs, seconds = _timed(lambda: booster.predict(matrix, pred_contribs=True))
    rows.append(("XGBoost pred_contribs (export)", len(X) / seconds,
                 float(np.abs(theirs - ours).max())))
    model.export(folder / "lgb.txt")
    lgb = lightgbm.Booster(model_file=str(folder / "lgb.txt"))
    theirs, seconds = _timed(lambda: lgb.predict(X, pred_contrib=True,
                                                 num_threads=threads))
    rows.append(("LightGBM pred_contrib (export)", len(X) / seconds,
                 float(np.abs(theirs - ours).max())))
    return rows


def _interaction_rows(est, X, folder, threads):
    """(name, rows/s, max |diff| from ours) of the SHAP interaction values of X
    (LightGBM has none)."""
    import xgboost

    model = est.get_booster()
    model.predict_contributions(X[:5], interactions=True)
    ours, seconds = _timed(lambda: model.predict_contributions(X, n_threads=threads,
                                                               interactions=True))
    rows = [("oocboost predict_contributions(interactions=True)", len(X) / seconds, 0.0)]
    booster = xgboost.Booster(model_file=str(folder / "xgb.ubj"))
    booster.set_param({"nthread": threads})
    theirs, seconds = _timed(lambda: booster.predict(xgboost.DMatrix(X),
                                                     pred_interactions=True))
    rows.append(("XGBoost pred_interactions (export)", len(X) / seconds,
                 float(np.abs(theirs - ours).max())))
    return rows


_CACHE_JOB = """
import sys, time
import numpy as np
import oocboost
from bench.streaming import vm_hwm
from oocboost.inspection import partial_dependence
model = oocboost.load_model(sys.argv[1])
cache = oocboost.Cache(sys.argv[2])
grid = np.load(sys.argv[3])
partial_dependence(model, cache, [0, 1], grid_values=[grid[0][:2], grid[1][:2]])
base = vm_hwm()
t0 = time.perf_counter()
result = partial_dependence(model, cache, [0, 1], grid_values=list(grid))
seconds = time.perf_counter() - t0
peak = vm_hwm()
np.save(sys.argv[4], result["average"])
print(seconds, base / 2**20, peak / 2**20)
"""


def _partial_dependence_rows(est, train_cache, X, y, grid, folder):
    from sklearn.inspection import partial_dependence as sk_partial_dependence

    import oocboost
    from oocboost.inspection import partial_dependence

    theirs, sk_seconds = _timed(lambda: sk_partial_dependence(
        est, X, [0, 1], grid_resolution=grid, method="brute", kind="average"))
    grids = theirs["grid_values"]
    ours, seconds = _timed(lambda: partial_dependence(est, X, [0, 1], grid_values=grids))
    gap = float(np.abs(ours["average"] - theirs["average"]).max())
    cache = oocboost.build_cache(X, folder / "pd.oocb", label=y, quiet=True,
                                 reference=train_cache)
    est.get_booster().save_model(folder / "model.json")
    np.save(folder / "grid.npy", np.array(grids))
    # twice: the first run compiles what the array run did not (kept in the kernel
    # cache), whose memory would be the second's peak
    for _ in range(2):
        job = subprocess.run([sys.executable, "-c", _CACHE_JOB, str(folder / "model.json"),
                              str(cache.path), str(folder / "grid.npy"),
                              str(folder / "average.npy")],
                             capture_output=True, text=True, check=True,
                             cwd=pathlib.Path(__file__).resolve().parent.parent)
    cache_seconds, base_mib, peak_mib = (float(v) for v in job.stdout.split())
    cache_gap = float(np.abs(np.load(folder / "average.npy") - theirs["average"]).max())
    return [("scikit-learn partial_dependence (brute)", sk_seconds, 0.0, ""),
            ("oocboost partial_dependence, array", seconds, gap, ""),
            ("oocboost partial_dependence, cache (fresh process)", cache_seconds, cache_gap,
             f"peak RSS {peak_mib:.0f} MiB ({base_mib:.0f} before the timed call)")]


def main(argv=None) -> int:
    args = _parse(argv)
    os.environ.setdefault("OMP_NUM_THREADS", str(args.threads))
    import oocboost
    from oocboost.datasets import generate_arrays

    n = args.train_rows + max(args.shap_rows, args.pd_rows)
    data = generate_arrays(n, seed=0)
    X = np.ascontiguousarray(data.X.astype(np.float32), dtype=np.float64)
    train, rest = slice(0, args.train_rows), slice(args.train_rows, None)
    folder = pathlib.Path(args.out or tempfile.mkdtemp(prefix="oocb-inspection-"))
    folder.mkdir(parents=True, exist_ok=True)
    # a training cache, so that the partial dependence's cache is binned on its edges
    train_cache = oocboost.build_cache(X[train], folder / "train.oocb", label=data.y[train],
                                       quiet=True)
    est = oocboost.GradientBoostingClassifier(
        n_estimators=args.rounds, max_depth=args.depth, learning_rate=0.1,
        n_jobs=args.threads).fit(train_cache)
    shap = _shap_rows(est, X[rest][:args.shap_rows], folder, args.threads)
    interactions = _interaction_rows(est, X[rest][:args.interaction_rows], folder,
                                     args.threads)
    pd_rows = _partial_dependence_rows(est, train_cache, X[rest][:args.pd_rows],
                                       data.y[rest][:args.pd_rows], args.grid, folder)
    print(f"\n{args.rounds} trees of depth {args.depth}, {args.threads} threads\n")
    print(f"SHAP values of {args.shap_rows:,} rows\n")
    print("| library | rows/s | max diff from oocboost |")
    print("|---|---|---|")
    for name, rate, gap in shap:
        print(f"| {name} | {rate:,.0f} | {gap:.1e} |")
    print(f"\nSHAP interaction values of {args.interaction_rows:,} rows\n")
    print("| library | rows/s | max diff from oocboost |")
    print("|---|---|---|")
    for name, rate, gap in interactions:
        print(f"| {name} | {rate:,.1f} | {gap:.1e} |")
    print(f"\nTwo-way partial dependence, {args.grid} x {args.grid} points, "
          f"{args.pd_rows:,} rows\n")
    print("| library | seconds | max diff from scikit-learn | memory |")
    print("|---|---|---|---|")
    for name, seconds, gap, memory in pd_rows:
        print(f"| {name} | {seconds:.2f} | {gap:.1e} | {memory} |")
    return 0
