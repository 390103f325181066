"""Cross-validation: every fold grown in the same data passes (``oocboost.cv``) against
the folds trained one after another (the same code with one fold per group), on the same
cache, in one run; each side in its own process for its peak RSS::

    python -m bench.cv --rows 1000000 --nfold 5 --rounds 20 --out bench_out \
        [--memory-limit 768MB]

prints, per side, the wall time, the data passes, the peak RSS and the last mean test AUC
(they must agree: the folds are the same models either way).
"""
import argparse
import json
import os
import subprocess
import sys
import time

_JOB = """
import json, sys, time
import oocboost
from oocboost.learners.boosting import cv as cvm
from oocboost.utils.rss import peak_rss
cache, nfold, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
together = sys.argv[4] == "1"
limit = sys.argv[5] if sys.argv[5] != "none" else None
if not together:
    real = cvm._plan
    cvm._plan = lambda p, c, o, n: real(p, c, o, n) if n == 1 else (_ for _ in ()).throw(
        oocboost.MemoryLimitError("one fold per group"))
passes = []
real_grow = cvm.boosting.grow_round
def counting(state, r, lr):
    before = state.telemetry.passes
    trees = real_grow(state, r, lr)
    passes.append(state.telemetry.passes - before)
    return trees
cvm.boosting.grow_round = counting
t0 = time.perf_counter()
result = oocboost.cv({"objective": "binary:logistic", "max_depth": 6, "eval_metric": "auc",
                      "verbosity": 0}, cache, rounds, nfold=nfold, as_pandas=False,
                     memory_limit=limit)
print(json.dumps({"seconds": time.perf_counter() - t0, "data_passes": sum(passes),
                  "peak_rss_mib": peak_rss() / 2**20,
                  "test_auc": result["test-auc-mean"][-1]}))
"""


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m bench.cv", description=__doc__.split("\n")[0])
    p.add_argument("--rows", type=int, default=1_000_000)
    p.add_argument("--nfold", type=int, default=5)
    p.add_argument("--rounds", type=int, default=20)
    p.add_argument("--out", default="bench_out")
    p.add_argument("--memory-limit", default=None, help="e.g. 768MB (default: none)")
    args = p.parse_args(argv)
    import oocboost
    from bench.data import prepare

    info = prepare(args.out, args.rows, 1000)
    cache_path = os.path.join(args.out, f"cv-{args.rows}.oocb")
    if not os.path.exists(os.path.join(cache_path, "manifest.json")):
        oocboost.build_cache(info["train"], cache_path, label="label", quiet=True)
    results = {}
    for name, flag in (("together", "1"), ("one by one", "0")):
        t0 = time.perf_counter()
        r = subprocess.run([sys.executable, "-c", _JOB, cache_path, str(args.nfold),
                            str(args.rounds), flag, args.memory_limit or "none"],
                           capture_output=True, text=True,
                           check=True)
        results[name] = json.loads(r.stdout.strip().splitlines()[-1])
        results[name]["process_s"] = time.perf_counter() - t0
    for name, r in results.items():
        print(f"{name:>10}: {r['seconds']:.1f} s in cv ({r['process_s']:.1f} s process), "
              f"{r['data_passes']} data passes, peak RSS {r['peak_rss_mib']:.0f} MiB, "
              f"test AUC {r['test_auc']:.5f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
