"""Benchmark data with high-cardinality categories (``python -m bench categorical``).

``shop``: 10,000 categories of Zipf-like frequency (many rare ones, 2% missing);
``region``: 300 categories; ``x0 .. x5``: numeric. The label is a coin with probability
``sigmoid(shop effect + region effect + f(x))``, so a model has to learn per-category
effects, most of them from few rows. Written once per (rows, seed) under
``<out>/data/categorical-...`` as ``train.csv`` / ``test.csv``, in chunks (the generator's
memory does not grow with the rows).
"""
from __future__ import annotations

import json
import os

import numpy as np

N_SHOPS = 10_000
N_REGIONS = 300
N_NUMERIC = 6
CHUNK_ROWS = 200_000
DATA_VERSION = 1


def _effects(seed):
    rng = np.random.default_rng([seed, 1])
    weights = 1.0 / (np.arange(N_SHOPS) + 10.0) ** 0.8
    return dict(shop_p=weights / weights.sum(), shop=rng.normal(size=N_SHOPS),
                region=rng.normal(scale=0.7, size=N_REGIONS))


def _chunk(rng, n, effects):
    shop = rng.choice(N_SHOPS, n, p=effects["shop_p"])
    region = rng.integers(0, N_REGIONS, n)
    x = rng.normal(size=(n, N_NUMERIC))
    logit = (effects["shop"][shop] + effects["region"][region] + 0.5 * x[:, 0]
             - 0.4 * x[:, 1] + 0.3 * x[:, 2] * x[:, 3] + 0.3 * np.sin(2 * x[:, 4]))
    y = (rng.random(n) < 1.0 / (1.0 + np.exp(-logit))).astype(np.int8)
    shops = np.char.add("s", shop.astype(str)).astype(object)
    shops[rng.random(n) < 0.02] = None
    return y, shops, np.char.add("r", region.astype(str)), x


def _write(path, n_rows, seed, row_seed, effects):
    import pyarrow as pa
    import pyarrow.csv as pacsv

    rng = np.random.default_rng([seed, row_seed])
    tmp = path + ".tmp"
    writer = None
    for lo in range(0, n_rows, CHUNK_ROWS):
        y, shops, regions, x = _chunk(rng, min(CHUNK_ROWS, n_rows - lo), effects)
        columns = {"label": y, "shop": pa.array(shops, type=pa.string()), "region": regions}
        columns.update({f"x{j}": np.round(x[:, j], 5) for j in range(N_NUMERIC)})
        table = pa.table(columns)
        if writer is None:
            writer = pacsv.CSVWriter(tmp, table.schema)
        writer.write_table(table)
    writer.close()
    os.replace(tmp, path)


def prepare_categorical(out_dir, n_train, n_test, *, seed=0, log=print):
    """Make sure the categorical ``train.csv`` / ``test.csv`` exist; their info dict."""
    d = os.path.join(out_dir, "data", f"categorical-train{n_train}-test{n_test}-s{seed}"
                                      f"-v{DATA_VERSION}")
    train, test, meta_path = (os.path.join(d, n) for n in ("train.csv", "test.csv",
                                                           "meta.json"))
    if not os.path.exists(meta_path):
        os.makedirs(d, exist_ok=True)
        log(f"[data] generating {n_train + n_test:,} categorical rows into {d}")
        effects = _effects(seed)
        _write(train, n_train, seed, 2, effects)
        _write(test, n_test, seed, 3, effects)
        meta = dict(n_train=n_train, n_test=n_test, seed=seed, task="categorical",
                    n_shops=N_SHOPS, n_regions=N_REGIONS, data_version=DATA_VERSION,
                    train_bytes=os.path.getsize(train), test_bytes=os.path.getsize(test))
        with open(meta_path, "w") as fh:
            json.dump(meta, fh, indent=1)
    with open(meta_path) as fh:
        meta = json.load(fh)
    meta.update(dir=d, train=train, test=test)
    return meta
