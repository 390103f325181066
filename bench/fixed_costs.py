"""Fixed costs of small runs (issue 46): each command as a user types it, in a fresh
process, on a small CSV, warm kernel cache::

    python -m bench fixedcosts [--rows 20000] [--features 28] [--repeat 5] [--out bench_out]

Times ``oocboost build-cache``, ``oocboost train --rounds 10`` and ``oocboost predict``
of the CSV, and the floor every such process pays before it reads a byte: ``python -c
"import numba, pyarrow.csv"``. Each is run ``--repeat`` times after one untimed run (which
fills the kernel cache); the table gives the best and median wall seconds and the peak
RSS of the best run (:func:`oocboost.utils.measure.measure_peak_rss`). Prints a Markdown
table and writes ``OUT/results-fixedcosts.json``.
"""
import argparse
import json
import os
import statistics
import sys
import tempfile

from oocboost.utils.measure import measure_peak_rss


def _commands(workdir, csv):
    cache = os.path.join(workdir, "c.oocb")
    model = os.path.join(workdir, "m.json")
    oocboost = [sys.executable, "-m", "oocboost.cli"]
    return {
        "floor: import numba, pyarrow.csv": [sys.executable, "-c",
                                             "import numba, pyarrow.csv"],
        "oocboost build-cache": [*oocboost, "build-cache", csv, "-o", cache, "--label",
                                 "label", "--overwrite", "--quiet"],
        "oocboost train --rounds 10": [*oocboost, "train", cache, "-o", model, "--rounds",
                                       "10", "--quiet"],
        "oocboost predict": [*oocboost, "predict", model, csv, "-o",
                             os.path.join(workdir, "p.csv"), "--quiet"],
    }


def run(rows, features, repeat, out):
    """Measure each command; returns ``{name: {"best_s", "median_s", "peak_mib"}}``."""
    from oocboost.datasets import generate

    results = {}
    with tempfile.TemporaryDirectory(prefix="oocb-fixed-") as workdir:
        csv = generate(os.path.join(workdir, "small.csv"), rows, features, seed=1)
        commands = _commands(workdir, csv)
        for argv in commands.values():  # fills the kernel cache, makes cache and model
            measure_peak_rss(argv, imports=None, timeout=1800)
        for name, argv in commands.items():
            reports = [measure_peak_rss(argv, imports=None, timeout=600)
                       for _ in range(repeat)]
            best = min(reports, key=lambda r: r.seconds)
            results[name] = {"best_s": round(best.seconds, 3),
                             "median_s": round(statistics.median(r.seconds
                                                                 for r in reports), 3),
                             "peak_mib": round(best.maxrss_bytes / 2**20, 1)}
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "results-fixedcosts.json"), "w") as f:
        json.dump({"rows": rows, "features": features, "repeat": repeat,
                   "results": results}, f, indent=1)
    return results


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m bench fixedcosts", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=20_000)
    ap.add_argument("--features", type=int, default=28)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--out", default="bench_out")
    args = ap.parse_args(argv)
    results = run(args.rows, args.features, args.repeat, args.out)
    print(f"{args.rows:,} rows x {args.features} features, fresh processes, warm kernel "
          f"cache, {args.repeat} runs each\n")
    print("| command | best wall s | median wall s | peak RSS (MiB) |")
    print("|---|---|---|---|")
    for name, r in results.items():
        print(f"| {name} | {r['best_s']:.2f} | {r['median_s']:.2f} | {r['peak_mib']:.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
