"""``python -m bench ingest``: reading the files people hold, beside the peers' readers.

Writes a headerless TSV (HIGGS's layout: the label in column 0, then 28 numbers) and the
same rows as an svmlight file (one-based indices, zeros left out as LibSVM writes them),
then times, each in a fresh process, side by side and interleaved over ``--repeats``:

- ``oocboost build-cache`` of each file (``--no-header --label 0`` for the TSV; the
  svmlight file as it is), the whole build: both passes, binning and writing;
- LightGBM's ``Dataset(file).construct()`` of each file (its loader and binning, in
  memory; ``label_column=0``, ``header=false``);
- scikit-learn's ``load_svmlight_file`` of the svmlight file (parsing only, into a CSR
  matrix: no binning).

Each run's wall time and peak RSS above the process's RSS after its imports; medians
[min-max]. The goal (issue "data in"): builds no slower than LightGBM's ``Dataset``.

::

    python -m bench ingest --rows 1000000 --repeats 3 --out /tmp/ingest
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

import numpy as np

_CHILD = r"""
import json, resource, sys, time, os
import psutil
kind, path, work = sys.argv[1], sys.argv[2], sys.argv[3]
if kind.startswith("oocboost"):
    import oocboost
    from oocboost.cache.build import build_cache
elif kind.startswith("lightgbm"):
    import lightgbm as lgb
else:
    from sklearn.datasets import load_svmlight_file
after_imports = psutil.Process().memory_info().rss
t0 = time.perf_counter()
if kind == "oocboost-tsv":
    build_cache(path, os.path.join(work, "tsv.oocb"), label=0, header=False,
                overwrite=True, quiet=True)
elif kind == "oocboost-svmlight":
    build_cache(path, os.path.join(work, "svm.oocb"), overwrite=True, quiet=True)
elif kind == "lightgbm-tsv":
    lgb.Dataset(path, params={"label_column": 0, "header": False, "verbose": -1,
                              "max_bin": 255}).construct()
elif kind == "lightgbm-svmlight":
    lgb.Dataset(path, params={"verbose": -1, "max_bin": 255}).construct()
else:
    load_svmlight_file(path)
seconds = time.perf_counter() - t0
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print("INGEST " + json.dumps({"seconds": seconds, "above": peak - after_imports}))
"""

JOBS = ("oocboost-tsv", "lightgbm-tsv", "oocboost-svmlight", "lightgbm-svmlight",
        "sklearn-svmlight")


def write_files(rows: int, out: str, seed: int = 0) -> tuple[str, str]:
    """``(tsv path, svmlight path)`` of ``rows`` HIGGS-like rows (28 features, about a
    tenth of the values zero), written in chunks; reused when they exist."""
    tsv, svm = os.path.join(out, f"higgs{rows}.tsv"), os.path.join(out, f"higgs{rows}.svm")
    if os.path.exists(tsv) and os.path.exists(svm):
        return tsv, svm
    from oocboost.datasets import generate_arrays

    os.makedirs(out, exist_ok=True)
    with open(tsv + ".tmp", "w") as ft, open(svm + ".tmp", "w") as fs:
        for start in range(0, rows, 100_000):
            n = min(100_000, rows - start)
            data = generate_arrays(n, 28, task="binary", seed=seed + start)
            X = np.round(np.nan_to_num(data.X), 3)
            X[np.abs(X) < 0.1] = 0.0
            y = data.y.astype(int)
            block = np.column_stack([y, X])
            np.savetxt(ft, block, delimiter="\t", fmt=["%d"] + ["%.3f"] * 28)
            lines = []
            for i in range(n):
                nz = np.flatnonzero(X[i])
                lines.append(f"{y[i]} " + " ".join(f"{j + 1}:{X[i, j]:.3f}" for j in nz))
            fs.write("\n".join(lines) + "\n")
    os.replace(tsv + ".tmp", tsv)
    os.replace(svm + ".tmp", svm)
    return tsv, svm


def run_child(script: str, marker: str, *args: str) -> dict:
    """Run ``script`` (its arguments ``args``) in a fresh interpreter; the JSON it printed
    after ``marker``, or ``{"error": its last line of stderr}``."""
    proc = subprocess.run([sys.executable, "-c", script, *args], capture_output=True,
                          text=True)
    if proc.returncode != 0:
        tail = proc.stderr.strip().splitlines()[-1] if proc.stderr else "failed"
        return {"error": tail}
    line = [x for x in proc.stdout.splitlines() if x.startswith(marker + " ")][-1]
    return json.loads(line[len(marker) + 1:])


def _one(kind: str, path: str, work: str) -> dict:
    return run_child(_CHILD, "INGEST", kind, path, work)


def _summary(values: list[float], fmt: str) -> str:
    return (f"{statistics.median(values):{fmt}} [{min(values):{fmt}}-"
            f"{max(values):{fmt}}]")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench ingest",
                                description=__doc__.split("\n")[0])
    p.add_argument("--rows", type=int, default=1_000_000, help="rows (1,000,000)")
    p.add_argument("--repeats", type=int, default=3, help="fresh processes per job (3)")
    p.add_argument("--out", default="bench_ingest", help="folder of the files and caches")
    args = p.parse_args(argv)
    tsv, svm = write_files(args.rows, args.out)
    runs = {job: [] for job in JOBS}
    for _ in range(args.repeats):
        for job in JOBS:   # interleaved: a drifting machine shifts them alike
            runs[job].append(_one(job, tsv if job.endswith("tsv") else svm, args.out))
    sizes = {"tsv": os.path.getsize(tsv), "svmlight": os.path.getsize(svm)}
    print(f"`python -m bench ingest --rows {args.rows} --repeats {args.repeats}` "
          f"(TSV {sizes['tsv'] / 2**20:.0f} MiB, svmlight {sizes['svmlight'] / 2**20:.0f} "
          f"MiB; medians [min-max])\n")
    print("| job | seconds | peak above imports MiB | x LightGBM's time |")
    print("|---|---|---|---|")
    for job in JOBS:
        peer = [r["seconds"] for r in runs[f"lightgbm-{job.split('-')[1]}"]
                if "error" not in r]
        print(table_row(job, runs[job], peer))
    return 0


def table_row(job: str, runs: list[dict], peer: list[float]) -> str:
    """A job's markdown row: seconds, peak above the imports (MiB) and the ratio of its
    median time to the median of ``peer``'s (the error of a job that failed)."""
    ok = [r for r in runs if "error" not in r]
    if not ok:
        return f"| {job} | {runs[0]['error'][:100]} | - | - |"
    secs = [r["seconds"] for r in ok]
    ratio = f"{statistics.median(secs) / statistics.median(peer):.2f}" if peer else "-"
    return (f"| {job} | {_summary(secs, '.2f')} | "
            f"{_summary([r['above'] / 2**20 for r in ok], '.0f')} | {ratio} |")


if __name__ == "__main__":
    sys.exit(main())
