"""Record the kernels each warm-up profile compiles: ``oocboost/kernels/warm_signatures.json``.

Usage::

    python -m tools.record_kernels            # rewrite the manifest (about 3 minutes)
    python -m tools.record_kernels isolation  # record these profiles, keep the others

Each profile's workload (:data:`WORKLOADS`) runs in a fresh process with an empty numba
cache; every kernel of ``oocboost.kernels`` that the workload calls from Python (not
from another kernel) is written with its numba signature and its compile time, which
:mod:`oocboost.kernels.warmup` uses to balance its helper processes. Run it after
changing a kernel's arguments or the types a learner passes; ``tests/kernels/
test_warmup.py`` fails until the manifest matches.

The workloads are small versions of the runs a new user starts with: the demo (boosting
with categorical and missing values, predicting a CSV, then a numeric model's one-row
calls as serving makes them), a random forest and AdaBoost through the CLI, each
predicting its cache.
"""
import json
import os
import subprocess
import sys
import tempfile
import time

MANIFEST = os.path.join(os.path.dirname(__file__), "..", "oocboost", "kernels",
                        "warm_signatures.json")


def _data(workdir):
    from oocboost import build_cache
    from oocboost.datasets import generate
    csv = os.path.join(workdir, "train.csv")
    generate(csv, 20_000, 28, n_categorical=2, missing_rate=0.02, seed=7)
    cache = os.path.join(workdir, "train.oocb")
    build_cache(csv, cache, label="label", overwrite=True, quiet=True)
    return csv, cache


def _cli_learner(workdir, learner):
    from oocboost.cli import main
    csv, cache = _data(workdir)
    model = os.path.join(workdir, "model.json")
    main(["train", cache, "-o", model, "--learner", learner, "--rounds", "4", "--quiet"])
    main(["predict", model, cache, "-o", os.path.join(workdir, "p.csv"), "--quiet"])
    main(["predict", model, csv, "-o", os.path.join(workdir, "q.csv"), "--quiet"])


def workload_boosting(workdir):
    import numpy as np

    from oocboost import GradientBoostingClassifier
    from oocboost.demo import run_demo
    run_demo(workdir, n_rows=20_000, rounds=3, quiet=True)
    # online serving: a numeric model's one-row calls (model/serving.py), both dtypes
    rng = np.random.default_rng(0)
    X = rng.normal(size=(2000, 4))
    model = GradientBoostingClassifier(n_estimators=2).fit(X, X[:, 0] > 0).get_booster()
    for dtype in (np.float64, np.float32):
        model.predict(X[:1].astype(dtype))


def workload_forest(workdir):
    _cli_learner(workdir, "random-forest")


def workload_adaboost(workdir):
    _cli_learner(workdir, "adaboost")


def workload_isolation(workdir):
    _cli_learner(workdir, "isolation-forest")


WORKLOADS = {"boosting": workload_boosting, "forest": workload_forest,
             "adaboost": workload_adaboost, "isolation": workload_isolation}


def top_level_calls(profile, workdir):
    """Run ``profile``'s workload here and return ``[(kernel, signature, seconds)]`` of
    the ``oocboost.kernels`` kernels it compiled from Python (compile time includes the
    inner functions compiled with it)."""
    from numba.core import event

    depth, starts, out = [0], {}, []

    class Listener(event.Listener):
        def on_start(self, ev):
            starts[id(ev.data["dispatcher"]), str(ev.data["args"])] = (
                time.perf_counter(), depth[0])
            depth[0] += 1

        def on_end(self, ev):
            depth[0] -= 1
            disp = ev.data["dispatcher"]
            t0, level = starts.pop((id(disp), str(ev.data["args"])), (None, None))
            module = disp.py_func.__module__
            if level == 0 and module.startswith("oocboost.kernels."):
                out.append((f"{module}:{disp.py_func.__qualname__}",
                            str(ev.data["args"]), time.perf_counter() - t0))

    event.register("numba:compile", Listener())
    WORKLOADS[profile](workdir)
    return out


def main(argv=None):
    wanted = list(sys.argv[1:] if argv is None else argv) or list(WORKLOADS)
    unknown = sorted(set(wanted) - set(WORKLOADS))
    if unknown:
        raise SystemExit(f"unknown profiles {unknown}; known: {list(WORKLOADS)}")
    profiles = {}
    if set(wanted) != set(WORKLOADS):
        with open(MANIFEST) as f:
            profiles = json.load(f)["profiles"]
    for profile in wanted:
        with tempfile.TemporaryDirectory() as tmp:
            env = dict(os.environ, NUMBA_CACHE_DIR=os.path.join(tmp, "numba"),
                       OOCBOOST_WARMUP="0")
            code = ("import json, sys; from tools.record_kernels import top_level_calls; "
                    f"print(json.dumps(top_level_calls({profile!r}, {tmp!r})))")
            done = subprocess.run([sys.executable, "-c", code], env=env, check=True,
                                  capture_output=True, text=True)
        calls = json.loads(done.stdout.strip().splitlines()[-1])
        profiles[profile] = [{"kernel": k, "signature": s, "seconds": round(t, 2)}
                             for k, s, t in calls]
        print(f"{profile}: {len(calls)} kernels, {sum(c[2] for c in calls):.1f} s",
              flush=True)
    import numba
    with open(MANIFEST + ".tmp", "w") as f:
        json.dump({"numba": numba.__version__,
                   "profiles": {p: profiles[p] for p in WORKLOADS if p in profiles}}, f,
                  indent=1)
        f.write("\n")
    os.replace(MANIFEST + ".tmp", MANIFEST)


if __name__ == "__main__":
    main()
