"""Benchmark data: generated once, cached under ``<out>/data`` keyed by its parameters.

A train/test pair comes from one generated file of ``n_train + n_test`` rows (same seed,
so the same label function) split by lines: ``train.csv`` is the header and the first
``n_train`` rows, ``test.csv`` the header and the rest. The split is a streaming line
copy, exact and O(1) in memory.

Derived artefacts (made on demand, cached next to the CSVs):

- ``shards-<rows>/``: ``X-00000.npy`` (float32) and ``y-00000.npy`` shards of the training
  CSV, for XGBoost's external-memory iterator.
- ``codes-<rows>.npy``: uint8 codes, column-major (features, rows), of the first ``rows``
  training rows, quantile-binned with 255 bins plus a missing code 255: the input of the
  "limit" kernels.
"""
from __future__ import annotations

import json
import os
import shutil

import numpy as np

DATA_VERSION = 1


def dataset_dir(out_dir, n_train, n_test, n_features=28, seed=0, missing_rate=0.02,
                task="binary"):
    key = (f"{task}-train{n_train}-test{n_test}-f{n_features}-m{missing_rate:g}-s{seed}"
           f"-v{DATA_VERSION}")
    return os.path.join(out_dir, "data", key)


def _split_lines(src, train_path, test_path, n_train):
    """Copy the header and the first ``n_train`` rows to ``train_path``, the header and the
    remaining rows to ``test_path``."""
    with open(src, "rb") as fin:
        header = fin.readline()
        tmp_train, tmp_test = train_path + ".tmp", test_path + ".tmp"
        with open(tmp_train, "wb") as ftr:
            ftr.write(header)
            for i, line in enumerate(fin):
                ftr.write(line)
                if i + 1 >= n_train:
                    break
        with open(tmp_test, "wb") as fte:
            fte.write(header)
            shutil.copyfileobj(fin, fte, 1 << 20)
    os.replace(tmp_train, train_path)
    os.replace(tmp_test, test_path)


def prepare(out_dir, n_train, n_test, *, n_features=28, seed=0, missing_rate=0.02,
            task="binary", log=print):
    """Make sure ``train.csv`` and ``test.csv`` exist; return their folder's info dict."""
    d = dataset_dir(out_dir, n_train, n_test, n_features, seed, missing_rate, task)
    train_path = os.path.join(d, "train.csv")
    test_path = os.path.join(d, "test.csv")
    meta_path = os.path.join(d, "meta.json")
    if not (
        os.path.exists(train_path) and os.path.exists(test_path) and os.path.exists(meta_path)
    ):
        os.makedirs(d, exist_ok=True)
        from tools.gen_data import generate

        all_path = os.path.join(d, "all.csv")
        log(f"[data] generating {n_train + n_test:,} rows into {d}")
        generate(all_path, n_train + n_test, n_features, task=task, seed=seed,
                 missing_rate=missing_rate)
        _split_lines(all_path, train_path, test_path, n_train)
        os.unlink(all_path)
        meta = dict(n_train=n_train, n_test=n_test, n_features=n_features, seed=seed,
                    missing_rate=missing_rate, task=task, data_version=DATA_VERSION,
                    train_bytes=os.path.getsize(train_path),
                    test_bytes=os.path.getsize(test_path))
        with open(meta_path, "w") as fh:
            json.dump(meta, fh, indent=1)
    with open(meta_path) as fh:
        meta = json.load(fh)
    meta.update(dir=d, train=train_path, test=test_path)
    return meta


def _csv_batches(path, block_size=1 << 20):
    import pyarrow as pa
    import pyarrow.csv as pacsv

    reader = pacsv.open_csv(path, read_options=pacsv.ReadOptions(block_size=block_size))
    for batch in reader:
        cols = [batch.column(i).cast(pa.float32()).to_numpy(zero_copy_only=False)
                for i in range(batch.num_columns)]
        yield cols


def prepare_shards(info, shard_rows=250_000, log=print):
    """Write the training CSV as float32 ``.npy`` shards; return the sorted shard paths."""
    d = os.path.join(info["dir"], f"shards-{shard_rows}")
    done = os.path.join(d, "done.json")
    if not os.path.exists(done):
        log(f"[data] writing .npy shards of {shard_rows:,} rows into {d}")
        if os.path.exists(d):
            shutil.rmtree(d)
        os.makedirs(d)
        buf_x, buf_y, n_buf, k = [], [], 0, 0

        def flush():
            nonlocal buf_x, buf_y, n_buf, k
            if n_buf:
                X = np.concatenate(buf_x, axis=0)
                y = np.concatenate(buf_y)
                np.save(os.path.join(d, f"X-{k:05d}.npy"), np.ascontiguousarray(X))
                np.save(os.path.join(d, f"y-{k:05d}.npy"), y)
                k += 1
            buf_x, buf_y, n_buf = [], [], 0

        for cols in _csv_batches(info["train"]):
            y = cols[0]
            X = np.column_stack(cols[1:]).astype(np.float32, copy=False)
            start = 0
            while start < len(y):
                take = min(shard_rows - n_buf, len(y) - start)
                buf_x.append(X[start:start + take])
                buf_y.append(y[start:start + take])
                n_buf += take
                start += take
                if n_buf == shard_rows:
                    flush()
        flush()
        with open(done, "w") as fh:
            json.dump({"shards": k, "shard_rows": shard_rows}, fh)
    xs = sorted(f for f in os.listdir(d) if f.startswith("X-"))
    return [(os.path.join(d, f), os.path.join(d, "y-" + f[2:])) for f in xs]


def prepare_codes(info, rows=1_000_000, n_bins=255, log=print):
    """uint8 codes (features, rows), column-major, of the first ``rows`` training rows.

    Quantile edges from a 200k-row sample, 255 bins, missing -> 255: the same kind of
    codes a 256-bin cache holds.
    """
    rows = min(rows, info["n_train"])
    path = os.path.join(info["dir"], f"codes-{rows}.npy")
    if not os.path.exists(path):
        log(f"[data] binning {rows:,} rows into uint8 codes ({path})")
        parts, n = [], 0
        for cols in _csv_batches(info["train"]):
            X = np.column_stack(cols[1:])
            parts.append(X[: rows - n])
            n += len(parts[-1])
            if n >= rows:
                break
        X = np.concatenate(parts, axis=0)
        codes = np.empty((X.shape[1], X.shape[0]), dtype=np.uint8)
        qs = np.linspace(0, 1, n_bins + 1)[1:-1]
        for j in range(X.shape[1]):
            col = X[:, j]
            sample = col[:200_000]
            sample = sample[~np.isnan(sample)]
            edges = np.unique(np.quantile(sample, qs)) if len(sample) else np.empty(0)
            c = np.searchsorted(edges, col, side="right").astype(np.uint8)
            c[np.isnan(col)] = 255
            codes[j] = c
        np.save(path + ".tmp.npy", codes)
        os.replace(path + ".tmp.npy", path)
    return path


def main(argv=None):
    """``python -m bench.data WHAT --json-args '{...}'``: the runner prepares data in a
    subprocess so that its own RSS stays small (a child's ``ru_maxrss`` starts from the
    parent's RSS at fork, so a fat parent would inflate every job's kernel peak)."""
    import argparse
    import sys

    p = argparse.ArgumentParser(prog="python -m bench.data")
    p.add_argument("what", choices=["prepare", "shards", "codes", "categorical"])
    p.add_argument("--json-args", default="{}")
    ns = p.parse_args(argv)
    a = json.loads(ns.json_args)

    def log(msg):
        print(msg, file=sys.stderr, flush=True)

    if ns.what == "prepare":
        out = prepare(a["out_dir"], a["n_train"], a["n_test"], seed=a.get("seed", 0), log=log)
    elif ns.what == "categorical":
        from bench.cat_data import prepare_categorical

        out = prepare_categorical(a["out_dir"], a["n_train"], a["n_test"],
                                  seed=a.get("seed", 0), log=log)
    elif ns.what == "shards":
        out = prepare_shards(a["info"], a.get("shard_rows", 250_000), log=log)
    else:
        out = prepare_codes(a["info"], a.get("rows", 1_000_000), log=log)
    print("BENCH_DATA " + json.dumps(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
