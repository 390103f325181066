"""A regression guard over the paired ratios of a bench run (oocboost / peer, same repeat).

Ratios, not seconds: a noisy or slower machine moves both sides of a pair, so a ratio
that grows by more than the tolerance (25% by default) means oocboost itself got slower
or hungrier relative to the peer::

    python -m bench all --quick --repeats 3          # writes bench/out/ratios.json too
    python -m bench.guard check bench/out            # exit 1 on a regression against
                                                     # the committed bench/ratios-quick.json
    python -m bench.guard write bench/out -o bench/ratios-quick.json   # new baseline

A ratio is the median over repeats of the paired ratios of one (suite, peer, measure);
measures are train time, total time (CSV to model), peak RSS and predict time, where
the suite records them and, for times, where both sides took at least 0.5 s.
"""
import argparse
import glob
import json
import os
import statistics
import sys

from bench import report

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BASELINE = os.path.join(ROOT, "bench", "ratios-quick.json")
#: A paired ratio may grow by this fraction before the guard calls it a regression.
TOLERANCE = 0.25
#: Times shorter than this (either side of a pair) are left out: a few milliseconds of
#: scheduling noise would move their ratio by more than the tolerance.
MIN_SECONDS = 0.5

MEASURES = {"train time": report.t("train_s"), "total time": report.total_s,
            "peak RSS": report.peak_mib, "predict time": report.t("predict_s")}


def _safe(getter, is_time):
    def get(run):
        try:
            value = getter(run)
        except (KeyError, TypeError):
            return None
        if is_time and value is not None and value < MIN_SECONDS:
            return None
        return value
    return get


def collect_ratios(results):
    """``{"suite/peer/measure": median paired ratio}`` of suite result dicts."""
    out = {}
    for res in results:
        runs = res.get("runs", [])
        ours = sorted({r["lib"] for r in runs if r.get("role") == "ours"})
        peers = sorted({r["lib"] for r in runs if r.get("role") == "peer"})
        for lib in ours:
            for peer in peers:
                for name, getter in MEASURES.items():
                    ratios = report.paired_ratios(runs, lib, peer,
                                                  _safe(getter, name.endswith("time")))
                    if ratios:
                        key = f"{res['suite']}/{lib}/{peer}/{name}"
                        out[key] = float(statistics.median(ratios))
    return out


def ratios_of_dir(out_dir):
    """:func:`collect_ratios` of the ``results-*.json`` files of a bench output folder."""
    results = []
    for path in sorted(glob.glob(os.path.join(out_dir, "results-*.json"))):
        with open(path) as fh:
            results.append(json.load(fh))
    return collect_ratios(results)


def compare(baseline, current, tolerance=TOLERANCE):
    """``[(key, old, new)]`` of the ratios present in both that grew by more than
    ``tolerance`` (a ratio below 1 means oocboost used less: larger is worse)."""
    return [(k, baseline[k], current[k]) for k in sorted(set(baseline) & set(current))
            if current[k] > baseline[k] * (1.0 + tolerance)]


def write(ratios, path):
    tmp = path + ".tmp"
    with open(tmp, "w") as fh:
        json.dump(ratios, fh, indent=1, sort_keys=True)
    os.replace(tmp, path)


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m bench.guard",
                                description=__doc__.split("\n")[0])
    p.add_argument("action", choices=("check", "write"))
    p.add_argument("out_dir", help="a bench output folder (results-*.json)")
    p.add_argument("-o", "--output", default=BASELINE, help="write: the ratios file")
    p.add_argument("--baseline", default=BASELINE, help="check: the committed ratios")
    p.add_argument("--tolerance", type=float, default=TOLERANCE)
    args = p.parse_args(argv)
    current = ratios_of_dir(args.out_dir)
    if not current:
        print(f"no paired ratios in {args.out_dir}: run python -m bench ... first")
        return 2
    if args.action == "write":
        write(current, args.output)
        print(f"wrote {len(current)} ratios to {args.output}")
        return 0
    with open(args.baseline) as fh:
        baseline = json.load(fh)
    worse = compare(baseline, current, args.tolerance)
    for key, old, new in worse:
        print(f"REGRESSION {key}: {old:.3f} -> {new:.3f} (+{100 * (new / old - 1):.0f}%)")
    shared = len(set(baseline) & set(current))
    print(f"{shared} ratios compared, {len(worse)} grew by more than "
          f"{100 * args.tolerance:.0f}%")
    return 1 if worse else 0


if __name__ == "__main__":
    sys.exit(main())
