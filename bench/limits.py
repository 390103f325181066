"""``python -m bench limits``: what each memory limit buys, on one cache.

Trains the boost suite's model (``bench.jobs.ooc_params``: binary:logistic, depth 6, eta
0.1, 2 threads) for ``--rounds`` rounds on a cache built beforehand, once per
``memory_limit`` and repeat, each in a fresh process, and prints a Markdown table: the
plan's choices (per-row state in RAM or spilled, resident blocks, prefetch, nodes a
pass), the peak RSS above the RSS the process had after its imports (numpy, pyarrow,
numba, oocboost's training modules; numba's runtime and the kernels, loaded at the first
call, are inside the figure), and the training time. Medians over ``--repeats``.

::

    python -m oocboost.datasets --rows 4000000 -o train4m.csv
    oocboost build-cache train4m.csv -o c4m.oocb --label label --memory-limit 512MB
    python -m bench limits c4m.oocb --limits 512MB,420MB,380MB,345MB --repeats 3
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys

_CHILD = r"""
import json, resource, sys, time
import psutil
import oocboost
import oocboost.model.predict  # noqa: F401
from oocboost import Cache, train
after_imports = psutil.Process().memory_info().rss
cache_path, rounds, limit = sys.argv[1], int(sys.argv[2]), sys.argv[3]
params = json.loads(sys.argv[4])
t0 = time.perf_counter()
model = train(params, Cache(cache_path), rounds, memory_limit=limit)
seconds = time.perf_counter() - t0
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
plan = model.training_log.get("plan") or {}
print("LIMITS " + json.dumps({"seconds": seconds, "above": peak - after_imports,
                              "after_imports": after_imports, "plan": plan}))
"""


def _one(cache, rounds, limit):
    from bench.jobs import ooc_params  # the boost suite's parameters

    proc = subprocess.run([sys.executable, "-c", _CHILD, cache, str(rounds), limit,
                           json.dumps(ooc_params({}))], capture_output=True, text=True)
    if proc.returncode != 0:
        return {"error": proc.stderr.strip().splitlines()[-1] if proc.stderr else "failed"}
    line = [x for x in proc.stdout.splitlines() if x.startswith("LIMITS ")][-1]
    return json.loads(line[len("LIMITS "):])


def _plan_text(plan):
    if not plan:
        return "-"
    state = "in RAM" if plan.get("state_in_ram") else "spilled"
    return (
        f"state {state}; {plan.get('resident_blocks')} of {plan.get('n_blocks')} blocks "
        f"resident; prefetch {plan.get('prefetch')}; {plan.get('hist_nodes')} nodes a pass"
    )


def main(argv=None):
    p = argparse.ArgumentParser(
        prog="python -m bench limits", description=__doc__.split("\n")[0]
    )
    p.add_argument("cache", help="a cache built beforehand (oocboost build-cache)")
    p.add_argument("--limits", default="512MB,420MB,380MB,345MB",
                   help="comma-separated memory limits (512MB,420MB,380MB,345MB)")
    p.add_argument("--rounds", type=int, default=20, help="boosting rounds (20)")
    p.add_argument("--repeats", type=int, default=3, help="fresh processes per limit (3)")
    args = p.parse_args(argv)
    limits = [x.strip() for x in args.limits.split(",") if x.strip()]
    runs = {limit: [] for limit in limits}
    for _ in range(args.repeats):
        for limit in limits:  # limits interleaved: a drifting machine shifts them alike
            runs[limit].append(_one(args.cache, args.rounds, limit))
    print(f"`python -m bench limits {args.cache} --limits {args.limits} --rounds "
          f"{args.rounds} --repeats {args.repeats}` (medians [min-max])\n")
    print("| memory_limit | plan | peak above imports MiB | train s |")
    print("|---|---|---|---|")
    for limit in limits:
        ok = [r for r in runs[limit] if "error" not in r]
        if not ok:
            print(f"| {limit} | {runs[limit][0]['error'][:120]} | - | - |")
            continue
        above = [r["above"] / 2**20 for r in ok]
        secs = [r["seconds"] for r in ok]
        print(f"| {limit} | {_plan_text(ok[0]['plan'])} | {statistics.median(above):.0f} "
              f"[{min(above):.0f}-{max(above):.0f}] | {statistics.median(secs):.2f} "
              f"[{min(secs):.2f}-{max(secs):.2f}] |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
