"""Exclusive feature bundling and sparse columns on a few hundred sparse columns: oocboost
with and without bundles (``enable_bundle``), and unbundled with and without sparse
columns (``enable_sparse``), LightGBM with and without its EFB, the same data and
parameters (eta 0.1, depth 6, 256 bins), each run in its own process::

    python -m bench.sparse --rows 1000000 --rounds 50 --out bench_out

The data: 8 dense normal columns, one-hot blocks of 100, 100 and 50 columns (one 1 per
block and row, skewed category frequencies) and 50 independent sparse count columns (2%
non-zero), a logistic label from the dense columns and the one-hot categories. It prints
per run the cache size and build (oocboost: its own process), the training time, the
histogram and split time (oocboost), the peak RSS (oocboost: of the training process up
to the end of training; LightGBM: with the data loaded in memory, which it trains from)
and the test AUC.
"""
import argparse
import json
import os
import subprocess
import sys

import numpy as np

BLOCKS = (100, 100, 50)
N_DENSE = 8
N_COUNTS = 50


def _batch(rng, n_rows, effects):
    columns = {f"x{j}": rng.normal(size=n_rows).astype(np.float32) for j in range(N_DENSE)}
    logit = columns["x0"] - 0.5 * columns["x1"] + 0.3 * columns["x2"] * columns["x3"]
    for b, width in enumerate(BLOCKS):
        p = 1.0 / np.arange(1, width + 1) ** 0.8
        hot = rng.choice(width, n_rows, p=p / p.sum())
        logit = logit + effects[b][hot]
        for k in range(width):
            columns[f"b{b}_{k}"] = (hot == k).astype(np.float32)
    for j in range(N_COUNTS):
        on = rng.random(n_rows) < 0.02
        columns[f"n{j}"] = np.where(on, rng.poisson(3.0, n_rows) + 1, 0).astype(np.float32)
    logit = logit + 0.2 * columns["n0"]
    y = (rng.random(n_rows) < 1 / (1 + np.exp(-logit))).astype(np.float32)
    return columns, y


def write_data(out, n_rows, n_test, seed=0):
    """``(train, test)`` Parquet paths, written in batches of 100,000 rows once."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    paths = {}
    effects = [
        np.random.default_rng(seed + 100 + b).normal(size=w) for b, w in enumerate(BLOCKS)
    ]
    for name, rows, s in (("train", n_rows, seed), ("test", n_test, seed + 1)):
        path = os.path.join(out, f"sparse-{n_rows}", f"{name}.parquet")
        paths[name] = path
        if os.path.exists(path):
            continue
        os.makedirs(os.path.dirname(path), exist_ok=True)
        rng = np.random.default_rng(s)
        writer = None
        for start in range(0, rows, 100_000):
            columns, y = _batch(rng, min(100_000, rows - start), effects)
            table = pa.table({**columns, "label": y})
            writer = writer or pq.ParquetWriter(path + ".tmp", table.schema)
            writer.write_table(table)
        writer.close()
        os.replace(path + ".tmp", path)
    return paths


_OOC_BUILD = """
import json, sys, time, shutil
import oocboost
from oocboost.utils.rss import peak_rss
train, cache_path, bundle, sparse = sys.argv[1:5]
shutil.rmtree(cache_path, ignore_errors=True)
t0 = time.perf_counter()
cache = oocboost.build_cache(train, cache_path, label="label", quiet=True,
                             enable_bundle=bundle == "1", enable_sparse=sparse == "1")
summary = cache.sparse_summary()
sparse = 0 if summary is None else int((summary["blocks"] > 0).sum())
print(json.dumps({"build_s": time.perf_counter() - t0,
                  "cache_mib": cache.nbytes_stored / 2**20, "columns": cache.n_columns,
                  "sparse_columns": sparse,
                  "features": cache.n_features, "build_peak_rss_mib": peak_rss() / 2**20}))
"""

_OOC = """
import json, sys, time
import pyarrow.parquet as pq
from sklearn.metrics import roc_auc_score
import oocboost
from oocboost.utils.rss import peak_rss
test, cache_path, rounds = sys.argv[1:4]
cache = oocboost.Cache(cache_path)
t0 = time.perf_counter()
model = oocboost.train({"objective": "binary:logistic", "eta": 0.1, "max_depth": 6,
                        "verbosity": 0}, cache, int(rounds))
train_s = time.perf_counter() - t0
train_peak = peak_rss() / 2**20
y = pq.read_table(test, columns=["label"]).column(0).to_numpy()
p = model.predict(test)
print(json.dumps({"train_s": train_s, "histogram_s": model.training_log["histogram_s"],
                  "split_s": model.training_log["split_s"],
                  "peak_rss_mib": train_peak, "auc": float(roc_auc_score(y, p))}))
"""

_LGB = """
import json, sys, time
import numpy as np, pyarrow.parquet as pq, lightgbm as lgb
from sklearn.metrics import roc_auc_score
from oocboost.utils.rss import peak_rss
train, test, bundle, rounds = sys.argv[1:5]
def load(path):
    t = pq.read_table(path)
    y = t.column("label").to_numpy()
    X = np.column_stack([t.column(n).to_numpy() for n in t.column_names if n != "label"])
    return X, y
from bench.jobs import _lgb_params
params = dict(_lgb_params(), enable_bundle=bundle == "1")
X, y = load(train)
t0 = time.perf_counter()
ds = lgb.Dataset(X, label=y, params=params).construct()
build_s = time.perf_counter() - t0
t0 = time.perf_counter()
model = lgb.train(params, ds, int(rounds))
train_s = time.perf_counter() - t0
Xt, yt = load(test)
print(json.dumps({"build_s": build_s, "train_s": train_s, "peak_rss_mib": peak_rss() / 2**20,
                  "auc": float(roc_auc_score(yt, model.predict(Xt)))}))
"""


def _run(code, *args):
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    r = subprocess.run([sys.executable, "-c", code, *map(str, args)], capture_output=True,
                       text=True, cwd=root)
    if r.returncode:
        raise RuntimeError(r.stderr[-2000:])
    return json.loads(r.stdout.strip().splitlines()[-1])


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m bench.sparse",
                                description=__doc__.split("\n")[0])
    p.add_argument("--rows", type=int, default=1_000_000)
    p.add_argument("--test-rows", type=int, default=200_000)
    p.add_argument("--rounds", type=int, default=50)
    p.add_argument("--repeats", type=int, default=1)
    p.add_argument("--out", default="bench_out")
    p.add_argument("--no-lightgbm", action="store_true")
    args = p.parse_args(argv)
    paths = write_data(args.out, args.rows, args.test_rows)
    cache = os.path.join(args.out, f"sparse-{args.rows}", "cache.oocb")
    runs = [("oocboost, bundled", 1, 1), ("oocboost, sparse columns", 0, 1),
            ("oocboost, dense columns", 0, 0)]
    if not args.no_lightgbm:
        runs += [("LightGBM, enable_bundle", 1, 1), ("LightGBM, no bundles", 0, 1)]
    for name, bundle, sparse in runs:
        lightgbm = name.startswith("LightGBM")
        if not lightgbm:
            built = _run(_OOC_BUILD, paths["train"], cache, bundle, sparse)
        for _ in range(args.repeats):
            if lightgbm:
                r = _run(_LGB, paths["train"], paths["test"], bundle, args.rounds)
                print(f"{name:>24}: Dataset {r['build_s']:.1f} s, train {r['train_s']:.2f} "
                      f"s, peak RSS {r['peak_rss_mib']:.0f} MiB (data loaded), AUC "
                      f"{r['auc']:.4f}", flush=True)
                continue
            r = _run(_OOC, paths["test"], cache, args.rounds)
            print(f"{name:>24}: build {built['build_s']:.1f} s ({built['features']} features "
                  f"in {built['columns']} columns, {built['sparse_columns']} of them sparse "
                  f"in some block, cache {built['cache_mib']:.1f} MiB, peak "
                  f"RSS {built['build_peak_rss_mib']:.0f} MiB), train {r['train_s']:.2f} s "
                  f"(histogram {r['histogram_s']:.2f} s, split {r['split_s']:.2f} s), peak "
                  f"RSS to end of training {r['peak_rss_mib']:.0f} MiB, AUC {r['auc']:.4f}",
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
