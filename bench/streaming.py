"""Streaming trees: oocboost's Hoeffding trees learning a cache in one pass against river's
``HoeffdingTreeClassifier`` / ``ExtremelyFastDecisionTreeClassifier`` learning the same
rows one at a time, each in its own process (for its peak RSS)::

    python -m bench streaming --rows 1000000 --out bench_out [--efdt-rows 200000]
                              [--scale 1e6,4e6,16e6]

The stream: a hyperplane concept over 10 uniform features with 5% label noise, rows in
a fixed order (``_stream``). Per learner and library: prequential (test-then-train)
accuracy over the whole stream, rows/s of learning (oocboost: from its cache, built
beforehand and not timed, after a warm-up fit on 2,000 rows that loads numba's kernels,
timed apart as ``startup_seconds``; river: from NumPy rows turned into dicts, the
conversion not timed), and the process's peak RSS (``VmHWM``, see :func:`vm_hwm`).
river's EFDT learns about 2,500 rows/s, so both libraries' EFDT runs see the first
``--efdt-rows`` rows only. ``--scale`` then runs
oocboost alone over longer streams at a fixed ``memory_limit`` (512MB) to show its
memory stays flat.

``--partial-fit`` measures the calls a program feeding a stream makes instead::

    python -m bench streaming --partial-fit [--pf-rows 100000] [--batch-sizes 10,100,1000]

oocboost's ``HoeffdingTreeClassifier.partial_fit`` on NumPy batches of each size and
``predict`` on 1,000-row batches, against river's ``learn_one`` / ``predict_one`` on the
same rows as dicts (the conversion not timed), each after the stream's first 2,000 rows
(learned, not timed), majority-class and naive Bayes adaptive leaves, each library in a
process of its own.
"""
import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

N_FEATURES = 10

_OURS = """
import json, sys, time
import oocboost
from oocboost.cache.store import Cache
from bench.streaming import vm_hwm as peak_rss
cache, leaf, efdt, rows = sys.argv[1], sys.argv[2], sys.argv[3] == "1", int(sys.argv[4])
limit = None if sys.argv[5] == "none" else sys.argv[5]
# numba's start-up and kernel loading (about 0.5 s) on a few rows first, timed apart:
# at a million rows a second it would otherwise be a third of the figure
import numpy as np
t0 = time.perf_counter()
rng = np.random.default_rng(0)
oocboost.HoeffdingTreeClassifier(leaf_prediction=leaf, split_revision=efdt).fit(
    rng.random((2000, 10)), rng.integers(0, 2, 2000))
startup = time.perf_counter() - t0
clf = oocboost.HoeffdingTreeClassifier(leaf_prediction=leaf, split_revision=efdt,
                                       memory_limit=limit)
cache = Cache(cache)
t0 = time.perf_counter()
clf.fit(cache)
seconds = time.perf_counter() - t0
print(json.dumps({"seconds": seconds, "startup_seconds": startup, "rows": cache.n_rows,
                  "accuracy": clf.prequential_score_["accuracy"],
                  "leaves": clf.n_leaves_, "peak_rss_mib": peak_rss() / 2**20}))
"""

_RIVER = """
import json, sys, time
import numpy as np
from river import tree
from bench.streaming import vm_hwm as peak_rss
path, leaf, efdt, rows = sys.argv[1], sys.argv[2], sys.argv[3] == "1", int(sys.argv[4])
data = np.load(path)
X, y = data["X"][:rows], data["y"][:rows]
names = [f"x{j}" for j in range(X.shape[1])]
model = (tree.ExtremelyFastDecisionTreeClassifier if efdt
         else tree.HoeffdingTreeClassifier)(leaf_prediction=leaf)
seconds, correct = 0.0, 0
for lo in range(0, len(y), 10000):
    dicts = [dict(zip(names, row)) for row in X[lo:lo + 10000].tolist()]
    labels = y[lo:lo + 10000].tolist()
    t0 = time.perf_counter()
    for x, label in zip(dicts, labels):
        correct += model.predict_one(x) == label
        model.learn_one(x, label)
    seconds += time.perf_counter() - t0
print(json.dumps({"seconds": seconds, "rows": len(y), "accuracy": correct / len(y),
                  "leaves": model.n_leaves, "peak_rss_mib": peak_rss() / 2**20}))
"""


def vm_hwm():
    """This process's peak RSS in bytes since it started its program (``VmHWM``): unlike
    ``ru_maxrss``, which Linux carries over an exec from the forked parent's image, so a
    job started by a parent holding the stream would report at least the parent's RSS."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmHWM in /proc/self/status")


_OURS_PF = """
import json, sys, time
import numpy as np
import oocboost
path, leaf, batch = sys.argv[1], sys.argv[2], int(sys.argv[3])
data = np.load(path)
X, y = data["X"], data["y"]
clf = oocboost.HoeffdingTreeClassifier(leaf_prediction=leaf)
clf.partial_fit(X[:2000], y[:2000], classes=[0, 1])
t0 = time.perf_counter()
for lo in range(2000, len(y), batch):
    clf.partial_fit(X[lo:lo + batch], y[lo:lo + batch])
learn = time.perf_counter() - t0
clf.predict(X[:10])                    # the model of the grown tree, exported once
t0 = time.perf_counter()
for lo in range(2000, len(y), 1000):
    clf.predict(X[lo:lo + 1000])
predict = time.perf_counter() - t0
print(json.dumps({"learn_rows_per_s": (len(y) - 2000) / learn,
                  "predict_rows_per_s": (len(y) - 2000) / predict,
                  "leaves": clf.n_leaves_}))
"""

_RIVER_PF = """
import json, sys, time
import numpy as np
from river import tree
path, leaf = sys.argv[1], sys.argv[2]
data = np.load(path)
X, y = data["X"], data["y"]
names = [f"x{j}" for j in range(X.shape[1])]
dicts = [dict(zip(names, row)) for row in X.tolist()]
labels = y.tolist()
model = tree.HoeffdingTreeClassifier(leaf_prediction=leaf)
for x, label in zip(dicts[:2000], labels[:2000]):
    model.learn_one(x, label)
t0 = time.perf_counter()
for x, label in zip(dicts[2000:], labels[2000:]):
    model.learn_one(x, label)
learn = time.perf_counter() - t0
t0 = time.perf_counter()
for x in dicts[2000:]:
    model.predict_one(x)
predict = time.perf_counter() - t0
print(json.dumps({"learn_rows_per_s": (len(y) - 2000) / learn,
                  "predict_rows_per_s": (len(y) - 2000) / predict,
                  "leaves": model.n_leaves}))
"""


def _partial_fit(args, results):
    """The --partial-fit mode (module docstring)."""
    X, y = _stream(args.pf_rows)
    npz = os.path.join(args.out, f"stream-{args.pf_rows}.npz")
    np.savez(npz, X=X, y=y)
    sizes = [int(v) for v in args.batch_sizes.split(",")]
    print(f"{args.pf_rows - 2000:,} rows after the first 2,000; predict in 1,000-row "
          f"batches (river: one row at a time)")
    print("| leaves | library | calls of | learn rows/s | predict rows/s | leaves |")
    print("|---|---|---|---|---|---|")
    for leaf in ("mc", "nba"):
        runs = [("river", "1 row", _run(_RIVER_PF, npz, leaf))] if not args.skip_river \
            else []
        runs += [("oocboost", f"{b:,} rows", _run(_OURS_PF, npz, leaf, b)) for b in sizes]
        for lib, calls, r in runs:
            results["runs"].append({"mode": "partial_fit", "leaf_prediction": leaf,
                                    "lib": lib, "calls": calls, **r})
            print(f"| {leaf} | {lib} | {calls} | {r['learn_rows_per_s']:,.0f} | "
                  f"{r['predict_rows_per_s']:,.0f} | {r['leaves']} |")


def _stream(rows, seed=0):
    """The benchmark stream: (X float64 (rows, 10), y int64)."""
    X = np.random.default_rng(seed).random((rows, N_FEATURES))
    w = np.linspace(1.0, 0.1, N_FEATURES)
    y = (X @ w > w.sum() / 2).astype(np.int64)
    # a generator of its own, so a shorter stream is a prefix of a longer one
    flip = np.random.default_rng(seed + 1).random(rows) < 0.05
    y[flip] = 1 - y[flip]
    return X, y


def _cache(out, rows):
    import oocboost

    path = os.path.join(out, f"stream-{rows}.oocb")
    if not os.path.exists(os.path.join(path, "manifest.json")):
        X, y = _stream(rows)
        oocboost.build_cache(X, path, label=y.astype(np.float64), quiet=True)
    return path


def _run(code, *args):
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        p for p in (root, os.environ.get("PYTHONPATH")) if p))
    run = subprocess.run([sys.executable, "-c", code, *map(str, args)], capture_output=True,
                         text=True, env=env)
    if run.returncode:
        raise RuntimeError(run.stderr[-3000:])
    return json.loads(run.stdout.strip().splitlines()[-1])


def _line(lib, r):
    return (f"{lib:9s} accuracy {r['accuracy']:.4f}  {r['rows'] / r['seconds']:>11,.0f} rows/s"
            f"  peak RSS {r['peak_rss_mib']:6.0f} MiB  {r['leaves']} leaves")


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m bench streaming",
                                description=__doc__.split("\n")[0])
    p.add_argument("--rows", type=int, default=1_000_000)
    p.add_argument("--efdt-rows", type=int, default=200_000)
    p.add_argument("--scale", default=None, help="e.g. 1e6,4e6,16e6 (oocboost alone)")
    p.add_argument("--scale-memory-limit", default="512MB",
                   help="oocboost's memory_limit in the --scale runs ('none': the default "
                        "256 MiB of histograms)")
    p.add_argument("--out", default="bench_out")
    p.add_argument("--skip-river", action="store_true")
    p.add_argument("--partial-fit", action="store_true",
                   help="time partial_fit / predict calls instead (module docstring)")
    p.add_argument("--pf-rows", type=int, default=100_000)
    p.add_argument("--batch-sizes", default="10,100,1000")
    args = p.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    results = {"command": "python -m bench streaming " + " ".join(argv or sys.argv[1:]),
               "runs": []}
    if args.partial_fit:
        _partial_fit(args, results)
        with open(os.path.join(args.out, "results-streaming-partial-fit.json"), "w") as f:
            json.dump(results, f, indent=1)
        return 0
    X, y = _stream(args.rows)
    npz = os.path.join(args.out, f"stream-{args.rows}.npz")
    np.savez(npz, X=X, y=y)
    del X, y
    t0 = time.perf_counter()
    full = _cache(args.out, args.rows)
    print(f"oocboost build-cache of {args.rows:,} rows: {time.perf_counter() - t0:.1f} s")
    efdt_cache = _cache(args.out, args.efdt_rows) if args.efdt_rows < args.rows else full
    for leaf, efdt in (("mc", False), ("nba", False), ("mc", True), ("nba", True)):
        rows = args.efdt_rows if efdt else args.rows
        name = f"{'EFDT' if efdt else 'VFDT'} leaf_prediction={leaf}, {rows:,} rows"
        print(name)
        for lib, code, source in (("oocboost", _OURS, efdt_cache if efdt else full),
                                  ("river", _RIVER, npz)):
            if lib == "river" and args.skip_river:
                continue
            r = _run(code, source, leaf, int(efdt), rows, "none")
            results["runs"].append({"learner": name, "lib": lib, **r})
            print("  " + _line(lib, r))
    for rows in [int(float(v)) for v in (args.scale or "").split(",") if v]:
        r = _run(_OURS, _cache(args.out, rows), "nba", 0, rows, args.scale_memory_limit)
        results["runs"].append({"learner": f"scale VFDT nba, {rows:,} rows, memory_limit "
                                           f"{args.scale_memory_limit}",
                                "lib": "oocboost", **r})
        print(f"scale {rows:>12,} rows (memory_limit {args.scale_memory_limit}): "
              + _line("oocboost", r))
    with open(os.path.join(args.out, "results-streaming.json"), "w") as f:
        json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
