"""First run after install against a warm run, per learner (issue 22, "first run")::

    python -m bench coldstart [--rows 200000] [--rounds 50] [--only demo,boosting,...]
                              [--out bench_out]

Each case runs as the commands a user types, in separate processes, three times over
one kernel cache: a new empty ``NUMBA_CACHE_DIR`` with the automatic warm-up off (every
kernel compiled in the run, as before the warm-up existed), a new empty one with the
automatic warm-up (``oocboost train`` / ``demo`` start their helper processes), and the
cache the second run left (warm). ``demo`` is README command 1's ``oocboost demo``; the
learners train from a cache built beforehand (untimed) and predict the training CSV:
``train`` then ``predict``, timed together. Also ``oocboost warmup --learner P`` alone
in a new cache. Wall seconds and peak RSS (the largest single process, the helpers
included, and the sum over the process tree); prints a Markdown table and writes
``OUT/results-coldstart.json``.
"""
import argparse
import json
import os
import shutil
import sys
import tempfile

from oocboost.utils.measure import measure_peak_rss

LEARNERS = {"boosting": "gbtree", "forest": "random-forest", "adaboost": "adaboost"}
MODES = ("cold, compiled in the run", "cold, automatic warm-up", "warm")


def _oocboost(*args):
    return [sys.executable, "-m", "oocboost.cli", *args]


def _measure(commands, cache_dir, warmup, cwd):
    env = {"NUMBA_CACHE_DIR": cache_dir, "OOCBOOST_WARMUP": "1" if warmup else "0"}
    seconds, own, tree = 0.0, 0, 0
    for argv in commands:
        r = measure_peak_rss(argv, imports=None, env=env, cwd=cwd, timeout=1800)
        seconds += r.seconds
        own = max(own, r.maxrss_bytes)
        tree = max(tree, r.peak_bytes)
    return {"seconds": seconds, "own_peak_mib": own / 2**20, "tree_peak_mib": tree / 2**20}


def _commands(case, work, args):
    if case == "demo":
        return [_oocboost("demo", "--workdir", os.path.join(work, "demo"), "--rows",
                          str(args.rows), "--rounds", str(args.rounds), "--quiet")]
    model = os.path.join(work, f"{case}.json")
    return [_oocboost("train", os.path.join(work, "train.oocb"), "-o", model, "--learner",
                      LEARNERS[case], "--rounds", str(args.rounds), "--max-depth", "6",
                      "--quiet"),
            _oocboost("predict", model, os.path.join(work, "train.csv"), "-o",
                      os.path.join(work, f"{case}.csv"), "--quiet")]


def run_case(case, work, args):
    rows = []
    fresh = [tempfile.mkdtemp(dir=work) for _ in range(2)]
    for mode, cache_dir, warmup in zip(MODES, [fresh[0], fresh[1], fresh[1]],
                                       [False, True, True]):
        r = _measure(_commands(case, work, args), cache_dir, warmup, work)
        rows.append({"case": case, "mode": mode, **r})
        print(f"[coldstart] {case}, {mode}: {r['seconds']:.1f} s", flush=True)
    if case != "demo":
        r = _measure([_oocboost("warmup", "--learner", case, "--quiet")],
                     tempfile.mkdtemp(dir=work), True, work)
        rows.append({"case": case, "mode": "oocboost warmup alone", **r})
    return rows


def _table(rows):
    warm = {r["case"]: r["seconds"] for r in rows if r["mode"] == "warm"}
    out = ["| case | run | wall s | x warm | peak RSS MiB (largest process / process tree) |",
           "|---|---|---|---|---|"]
    for r in rows:
        ratio = r["seconds"] / warm[r["case"]] if r["mode"] != "oocboost warmup alone" \
            else float("nan")
        out.append(f"| {r['case']} | {r['mode']} | {r['seconds']:.1f} | {ratio:.2f} | "
                   f"{r['own_peak_mib']:.0f} / {r['tree_peak_mib']:.0f} |")
    return "\n".join(out)


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m bench coldstart")
    p.add_argument("--rows", type=int, default=200_000)
    p.add_argument("--rounds", type=int, default=50)
    p.add_argument("--only", default="demo,boosting,forest,adaboost")
    p.add_argument("--out", default="bench_out")
    args = p.parse_args(argv)
    from oocboost import build_cache
    from oocboost.datasets import generate

    work = tempfile.mkdtemp(prefix="coldstart-")
    try:
        csv = os.path.join(work, "train.csv")
        generate(csv, args.rows, 28, n_categorical=2, missing_rate=0.02, seed=7)
        build_cache(csv, os.path.join(work, "train.oocb"), label="label", quiet=True)
        rows = []
        for case in args.only.split(","):
            rows += run_case(case, work, args)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "results-coldstart.json"), "w") as f:
        json.dump(rows, f, indent=1)
    print(_table(rows))
    return 0
