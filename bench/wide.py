"""``python -m bench wide``: building from a wide dense CSV, beside LightGBM's loaders.

Writes a CSV of ``--columns`` standard-normal float columns (6 significant digits) and a
0/1 label, ``--rows`` rows (issue "sparse and wide": 5,000 x 2,000, about 100 MB), then
times, each in a fresh process, interleaved over ``--repeats``:

- ``oocboost-build``: ``build_cache(csv, label="label")``, the whole build (both passes,
  bundling, binning, writing, and opening the cache it returns);
- ``lightgbm-file``: LightGBM's ``Dataset(csv).construct()`` (its own parser and binning;
  ``header=true``, ``label_column=name:label``);
- ``lightgbm-pandas``: ``pandas.read_csv`` then ``Dataset(frame).construct()``.

Each run's seconds after the imports and its peak RSS above the RSS after them; medians
[min-max]. The goal (issue "sparse and wide"): the build no slower than LightGBM's
``Dataset`` on the same CSV.

::

    python -m bench wide --columns 5000 --rows 2000 --repeats 3 --out /tmp/wide
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

from bench.ingest import run_child, table_row

_CHILD = r"""
import json, resource, sys, time, os
import psutil
kind, path, work = sys.argv[1], sys.argv[2], sys.argv[3]
if kind.startswith("oocboost"):
    from oocboost.cache.build import build_cache
else:
    import lightgbm as lgb
    import pandas as pd
after_imports = psutil.Process().memory_info().rss
t0 = time.perf_counter()
if kind == "oocboost-build":
    build_cache(path, os.path.join(work, "wide.oocb"), label="label", overwrite=True,
                quiet=True)
elif kind == "lightgbm-file":
    lgb.Dataset(path, params={"header": True, "label_column": "name:label",
                              "verbose": -1, "max_bin": 255}).construct()
else:
    frame = pd.read_csv(path)
    label = frame.pop("label")
    lgb.Dataset(frame, label, params={"verbose": -1, "max_bin": 255}).construct()
seconds = time.perf_counter() - t0
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print("WIDE " + json.dumps({"seconds": seconds, "above": peak - after_imports}))
"""

JOBS = ("oocboost-build", "lightgbm-file", "lightgbm-pandas")


def write_csv(n_columns: int, n_rows: int, out: str, seed: int = 0) -> str:
    """The CSV's path (reused when it exists): ``f0 .. f{n-1}`` standard normal, and a
    label from the first two."""
    path = os.path.join(out, f"wide{n_columns}x{n_rows}.csv")
    if os.path.exists(path):
        return path
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(seed)
    with open(path + ".tmp", "w") as f:
        f.write(",".join([f"f{j}" for j in range(n_columns)] + ["label"]) + "\n")
        for start in range(0, n_rows, 500):
            X = rng.normal(size=(min(500, n_rows - start), n_columns))
            y = (X[:, 0] + X[:, 1] > 0).astype(int)
            np.savetxt(f, np.column_stack([X, y]), delimiter=",",
                       fmt=["%.6g"] * n_columns + ["%d"])
    os.replace(path + ".tmp", path)
    return path


def _one(kind: str, path: str, work: str) -> dict:
    return run_child(_CHILD, "WIDE", kind, path, work)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench wide",
                                description=__doc__.split("\n")[0])
    p.add_argument("--columns", type=int, default=5000, help="feature columns (5,000)")
    p.add_argument("--rows", type=int, default=2000, help="rows (2,000)")
    p.add_argument("--repeats", type=int, default=3, help="fresh processes per job (3)")
    p.add_argument("--out", default="bench_wide", help="folder of the CSV and the cache")
    args = p.parse_args(argv)
    path = write_csv(args.columns, args.rows, args.out)
    runs = {job: [] for job in JOBS}
    for _ in range(args.repeats):
        for job in JOBS:   # interleaved: a drifting machine shifts them alike
            runs[job].append(_one(job, path, args.out))
    print(f"`python -m bench wide --columns {args.columns} --rows {args.rows} --repeats "
          f"{args.repeats}` (CSV {os.path.getsize(path) / 2**20:.0f} MiB; medians "
          f"[min-max])\n")
    print("| job | seconds | peak above imports MiB | x LightGBM's file Dataset |")
    print("|---|---|---|---|")
    peer = [r["seconds"] for r in runs["lightgbm-file"] if "error" not in r]
    for job in JOBS:
        print(table_row(job, runs[job], peer))
    return 0


if __name__ == "__main__":
    sys.exit(main())
