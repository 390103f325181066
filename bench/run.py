"""Benchmark runner: ``python -m bench SUITE [SUITE...] [options]``.

Suites: ``build``, ``boost``, ``forest``, ``adaboost``, ``predict``, ``scale``, ``limit``,
``categorical`` (or ``all``). Every measured job is its own subprocess (``python -m
bench.jobs``), so every
figure has its own peak RSS, measured from outside as the larger of

- a psutil poll of the job's process tree every 10 ms (sum of RSS), and
- the kernel's ``ru_maxrss`` of that child, from ``os.wait4`` (per child, unlike
  ``getrusage(RUSAGE_CHILDREN)``, which is the maximum over every child reaped so far).

Outside the ``build`` suite, oocboost's cache is built by a job of its own
(``ooc_build_cache``) right before each training job, which opens it: the training row's
peak RSS is then that of training from the cache, and the build's time and peak are
reported beside it. Every job also records its high-water mark right after training
(``extra.peak_rss_after.train_s``), before the test rows are loaded.

Within one repeat every library of a suite runs once, one after the other (interleaved),
so that ratios to a peer are computed pair by pair inside the same repeat. Raw runs go to
``<out>/results-<suite>.json``; the report (:mod:`bench.report`) is then regenerated from
every ``results-*.json`` in ``<out>``.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import shutil
import subprocess
import sys
import time

import psutil

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SUITES = ("build", "boost", "forest", "adaboost", "predict", "scale", "limit", "categorical")
RESULT_PREFIX = "BENCH_RESULT "

# id -> (display label, job name, role)
LIBS = {
    "ooc": ("oocboost", "ooc_boost", "ours"),
    "xgb_hist": ("XGBoost hist, in memory", "xgb_hist", "peer"),
    "xgb_extmem": ("XGBoost external memory", "xgb_extmem", "peer"),
    "lgb": ("LightGBM", "lgb", "peer"),
    "skl_hgb": ("sklearn HistGradientBoosting", "skl_hgb", "peer"),
    "pa_read": ("pyarrow read_csv (parse only)", "parse_pyarrow", "peer"),
    "pa_stream": (
        "pyarrow open_csv 1 MiB stream (parse only)",
        "parse_pyarrow_stream",
        "peer",
    ),
    "pandas": ("pandas read_csv float32 (parse only)", "parse_pandas", "peer"),
    "ooc_rf": ("oocboost RandomForest", "ooc_rf", "ours"),
    "skl_rf": ("sklearn RandomForest", "skl_rf", "peer"),
    "lgb_rf": ("LightGBM rf", "lgb_rf", "peer"),
    "ooc_ada": ("oocboost AdaBoost", "ooc_ada", "ours"),
    "skl_ada": ("sklearn AdaBoost", "skl_ada", "peer"),
    "limit": ("reference: plain histogram pass and memory read", "limit", "info"),
    "ooc_goss": ("oocboost GOSS", "ooc_boost", "ours"),
    "lgb_goss": ("LightGBM GOSS", "lgb", "peer"),
    "ooc_quant": ("oocboost quantized gradients", "ooc_boost", "ours"),
    "lgb_quant": ("LightGBM quantized gradients", "lgb", "peer"),
    "ooc_cat": ("oocboost native categories", "ooc_cat", "ours"),
    "ooc_cat_ts": ("oocboost ordered target statistics", "ooc_cat_ts", "ours"),
    "lgb_cat": ("LightGBM categorical", "lgb_cat", "peer"),
    "cb_cat": ("CatBoost cat_features", "cb_cat", "peer"),
    "xgb_cat": ("XGBoost enable_categorical", "xgb_cat", "peer"),
}

SUITE_LIBS = {
    "build": ["ooc", "pa_read", "pa_stream", "pandas", "lgb", "xgb_hist", "xgb_extmem"],
    "boost": ["ooc", "ooc_goss", "ooc_quant", "xgb_hist", "xgb_extmem", "lgb", "lgb_goss",
              "lgb_quant", "skl_hgb", "limit"],
    "forest": ["ooc_rf", "skl_rf", "lgb_rf"],
    "adaboost": ["ooc_ada", "skl_ada"],
    "predict": ["ooc", "xgb_hist", "lgb", "skl_hgb"],
    "scale": ["ooc", "xgb_extmem", "xgb_hist", "lgb"],
    "limit": ["limit"],
    "categorical": ["ooc_cat", "ooc_cat_ts", "lgb_cat", "cb_cat", "xgb_cat"],
}


def config_for(args):
    quick = args.quick
    c = dict(
        quick=quick,
        n_train=args.rows or (100_000 if quick else 1_000_000),
        repeats=args.repeats or (1 if quick else 3),
        rounds=args.rounds or (20 if quick else 100),
        scale_rows=args.scale_rows or ([100_000, 400_000] if quick
                                       else [1_000_000, 4_000_000, 16_000_000, 64_000_000]),
        scale_rounds=args.scale_rounds or (20 if quick else 20),
        forest_trees=20 if quick else 100,
        forest_depth=12,
        ada_estimators=50 if quick else 200,
        ada_depth=1,
        memory_limit=args.memory_limit,
        scale_memory_limit=args.scale_memory_limit,
        predict_repeats=3,
        timeout=args.timeout or (900 if quick else 7200),
        seed=0,
    )
    c["n_test"] = args.test_rows or max(1000, c["n_train"] // 5)
    return c


# ---------------------------------------------------------------------------- machine

def _version(dist):
    from importlib import metadata

    try:
        return metadata.version(dist)
    except Exception:  # noqa: BLE001
        return None


def machine_facts():
    cpu = None
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    ooc_version = _version("oocboost")
    if ooc_version is None:
        try:
            with open(os.path.join(ROOT, "oocboost", "__init__.py")) as fh:
                for line in fh:
                    if line.startswith("__version__"):
                        ooc_version = line.split("=", 1)[1].strip().strip("\"'")
        except OSError:
            pass
    return {
        "cpu_count": os.cpu_count(),
        "cpu_affinity": len(os.sched_getaffinity(0))
        if hasattr(os, "sched_getaffinity")
        else None,
        "cpu_model": cpu,
        "ram_bytes": psutil.virtual_memory().total,
        "platform": platform.platform(),
        "python": platform.python_version(),
        "versions": {
            name: _version(dist)
            for name, dist in [
                ("numpy", "numpy"),
                ("numba", "numba"),
                ("pyarrow", "pyarrow"),
                ("pandas", "pandas"),
                ("xgboost", "xgboost"),
                ("lightgbm", "lightgbm"),
                ("scikit-learn", "scikit-learn"),
                ("psutil", "psutil"),
            ]
        }
        | {"oocboost": ooc_version},
        "threads_per_job": int(os.environ.get("BENCH_THREADS", "2")),
    }


# ---------------------------------------------------------------------------- one job

class TreeRss:
    """RSS of a process and its descendants, in bytes, cheap enough to poll every 10 ms.

    Reading a process's RSS costs tens of microseconds, but finding its descendants
    (``psutil.Process.children``) reads every process's ``/proc`` entry: 1.5 ms of CPU a
    poll, 13% of a core at 10 ms, which slowed a 2-thread oocboost predict call of the
    predict suite by 12% (48 -> 55 ms) on 2 cores. The descendants are therefore looked
    up every ``rescan_s`` seconds and their RSS read at every poll; a helper process that
    lives less than ``rescan_s`` may be missed (the job's own peak is in ``ru_maxrss``).
    """

    def __init__(self, proc, rescan_s=0.25):
        self.proc = proc
        self.rescan_s = rescan_s
        self.children = []
        self.scanned_at = -float("inf")

    def __call__(self):
        now = time.perf_counter()
        try:
            if now - self.scanned_at >= self.rescan_s:
                self.children = self.proc.children(recursive=True)
                self.scanned_at = now
            total = self.proc.memory_info().rss
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            return 0
        for child in self.children:
            try:
                total += child.memory_info().rss
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                pass
        return total


def _busy_cpu_s():
    ct = psutil.cpu_times()
    return sum(ct) - ct.idle - getattr(ct, "iowait", 0.0) - getattr(ct, "guest", 0.0) \
        - getattr(ct, "guest_nice", 0.0)


def run_job(job, job_args, *, log_dir, timeout=3600.0, poll=0.01, name=None):
    """Run ``python -m bench.jobs JOB`` in a fresh process; return its result dict with
    ``peak_rss`` (bytes), ``peak_rss_poll``, ``peak_rss_kernel``, ``outer_wall_s`` and
    ``returncode`` added."""
    os.makedirs(log_dir, exist_ok=True)
    stem = os.path.join(log_dir, name or job)
    env = dict(os.environ)
    env["PYTHONPATH"] = ROOT + (
        os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else ""
    )
    threads = env.get("BENCH_THREADS", "2")
    for var in (
        "OMP_NUM_THREADS",
        "NUMBA_NUM_THREADS",
        "OPENBLAS_NUM_THREADS",
        "MKL_NUM_THREADS",
    ):
        env[var] = threads
    cmd = [sys.executable, "-m", "bench.jobs", job, "--json-args", json.dumps(job_args)]
    peak_poll = 0
    busy0 = _busy_cpu_s()
    t0 = time.perf_counter()
    with open(stem + ".out", "wb") as fout, open(stem + ".err", "wb") as ferr:
        proc = subprocess.Popen(cmd, stdout=fout, stderr=ferr, env=env, cwd=ROOT)
        ps = psutil.Process(proc.pid)
        tree_rss = TreeRss(ps)
        status, ru, killed = None, None, False
        while True:
            pid, st, r = os.wait4(proc.pid, os.WNOHANG)
            if pid == proc.pid:
                status, ru = st, r
                break
            peak_poll = max(peak_poll, tree_rss())
            if time.perf_counter() - t0 > timeout and not killed:
                killed = True
                for child in ps.children(recursive=True):
                    child.kill()
                proc.kill()
            time.sleep(poll)
        proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - t0
    peak_kernel = ru.ru_maxrss * 1024  # KiB on Linux
    result = None
    with open(stem + ".out", encoding="utf-8", errors="replace") as fh:
        for line in fh:
            if line.startswith(RESULT_PREFIX):
                result = json.loads(line[len(RESULT_PREFIX):])
    if result is None:
        with open(stem + ".err", encoding="utf-8", errors="replace") as fh:
            tail = fh.read()[-2000:]
        result = {
            "job": job,
            "status": "error",
            "times": {},
            "metrics": {},
            "extra": {},
            "reason": (
                "timeout after %.0f s" % timeout
                if killed
                else f"exit code {proc.returncode}, no result line; stderr tail:\n{tail}"
            ),
        }
    result.update(peak_rss=max(peak_poll, peak_kernel), peak_rss_poll=peak_poll,
                  peak_rss_kernel=peak_kernel, outer_wall_s=wall, returncode=proc.returncode,
                  job_cpu_s=ru.ru_utime + ru.ru_stime,
                  # CPU the rest of the machine used while the job ran, in cores: the whole
                  # machine's busy CPU time minus the job's own, over the wall time
                  other_cpu_cores=max(0.0, (_busy_cpu_s() - busy0 - ru.ru_utime - ru.ru_stime)
                                      / max(wall, 1e-9)),
                  command=" ".join(shlex.quote(c) for c in cmd[1:]))
    return result


# ---------------------------------------------------------------------------- data

class _Data:
    """Data preparation through ``python -m bench.data`` (in a subprocess: see there)."""

    def __init__(self, log):
        self.log = log

    def _call(self, what, **kw):
        env = dict(os.environ)
        env["PYTHONPATH"] = ROOT + (
            os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else ""
        )
        proc = subprocess.run(
            [sys.executable, "-m", "bench.data", what, "--json-args", json.dumps(kw)],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
        )
        for line in proc.stderr.splitlines():
            if line.startswith("[data]"):
                self.log(line)
        if proc.returncode != 0:
            raise RuntimeError(f"data preparation ({what}) failed:\n{proc.stderr[-3000:]}")
        for line in proc.stdout.splitlines():
            if line.startswith("BENCH_DATA "):
                return json.loads(line[len("BENCH_DATA "):])
        raise RuntimeError(f"data preparation ({what}) printed no result")

    def prepare(self, out_dir, n_train, n_test, seed=0):
        return self._call(
            "prepare", out_dir=out_dir, n_train=n_train, n_test=n_test, seed=seed
        )

    def categorical(self, out_dir, n_train, n_test, seed=0):
        return self._call("categorical", out_dir=out_dir, n_train=n_train, n_test=n_test,
                          seed=seed)

    def shards(self, info):
        return self._call("shards", info=info)

    def codes(self, info, rows=1_000_000):
        return self._call("codes", info=info, rows=rows)


# ---------------------------------------------------------------------------- suites

#: LightGBM 4's names and defaults on both sides (4 bins, stochastic rounding, leaves
#: from the quantized sums).
QUANTIZED_PARAMS = {"use_quantized_grad": True}
#: The parameters of our variants whose kernels the warm-up compiles too (the measured
#: runs of every repeat are then warm).
WARM_VARIANTS = {"ooc_quant": QUANTIZED_PARAMS}


def _job_args(lib, suite, cfg, info, out_dir, rounds, memory_limit, bdata):
    a = dict(train=info["train"], test=info["test"], rounds=rounds,
             tmp_dir=os.path.join(out_dir, "tmp"), memory_limit=memory_limit)
    os.makedirs(a["tmp_dir"], exist_ok=True)
    if suite == "build":
        a["phase"] = "build"
    if suite == "predict":
        a["predict_repeats"] = cfg["predict_repeats"]
        a["predict_from_file"] = True
    if lib == "xgb_extmem":
        a["shards"] = bdata.shards(info)
    if lib in ("ooc_rf", "skl_rf", "lgb_rf"):
        a.update(n_estimators=cfg["forest_trees"], max_depth=cfg["forest_depth"])
    if lib in ("ooc_ada", "skl_ada"):
        a.update(n_estimators=cfg["ada_estimators"], max_depth=cfg["ada_depth"])
    if lib == "limit":
        a["codes"] = bdata.codes(info, rows=1_000_000)
        a["rows"] = 1_000_000
    if lib in ("ooc_goss", "lgb_goss"):
        a["params"] = {"data_sample_strategy": "goss"}
    if lib in ("ooc_quant", "lgb_quant"):
        a["params"] = dict(QUANTIZED_PARAMS)
    if lib == "ooc_cat_ts":
        a["build_options"] = {"cat_encoding": "ordered_ts"}
    return a


def _fmt_short(r):
    if r.get("status") != "ok":
        return f"{r.get('status')}: {str(r.get('reason', ''))[:200]}"
    t = r.get("times", {})
    parts = [f"{k}={v:.2f}" for k, v in t.items()]
    m = r.get("metrics", {})
    if "auc" in m:
        parts.append(f"auc={m['auc']:.4f}")
    parts.append(f"peak={r['peak_rss'] / 2**20:.0f}MiB")
    if r.get("baseline_rss"):
        parts.append(f"base={r['baseline_rss'] / 2**20:.0f}MiB")
    return " ".join(parts)


def _build_cache_job(a, log_dir, cfg, name):
    """Build oocboost's cache in a job of its own, so the training job's peak RSS is that
    of training from the cache (what the issue compares), not of the build before it.
    Sets ``a["cache_dir"]``; the caller deletes the cache."""
    a["cache_dir"] = os.path.join(a["tmp_dir"], f"ooc-cache-{name}")
    return run_job("ooc_build_cache", dict(train=a["train"], cache_dir=a["cache_dir"],
                                           memory_limit=a.get("memory_limit"),
                                           build_options=a.get("build_options", {})),
                   log_dir=log_dir, timeout=cfg["timeout"], name=name + "-build")


#: Share of the machine's RAM a peer's projected peak may take before it is skipped.
RAM_SHARE = 0.85


def _projected_beyond_ram(runs, lib, rows):
    """Why ``lib`` would not fit in RAM at ``rows``, or None. The projection scales the
    peak RSS of its largest successful run at fewer rows by the rows (an in-memory peer
    holds the data, so its peak grows in proportion); a peer never run yet is tried."""
    import psutil

    done = [r for r in runs if r.get("lib") == lib and r.get("status") == "ok"
            and r.get("peak_rss") and isinstance(r.get("group"), int) and r["group"] < rows]
    if not done:
        return None
    ref = max(done, key=lambda r: (r["group"], r["peak_rss"]))
    projected = ref["peak_rss"] * rows / ref["group"]
    ram = psutil.virtual_memory().total
    if projected <= RAM_SHARE * ram:
        return None
    return (
        f"projected peak {projected / 2**30:.1f} GiB ({ref['peak_rss'] / 2**30:.1f} GiB at "
        f"{ref['group']:,} rows, scaled by the rows) exceeds {RAM_SHARE:.0%} of this "
        f"machine's {ram / 2**30:.1f} GiB of RAM"
    )


def run_suite(suite, cfg, *, out_dir, libs_filter=None, skip=(), command="", log=print):
    libs = [l for l in SUITE_LIBS[suite] if (libs_filter is None or l in libs_filter)
            and l not in skip]
    bdata = _Data(log)
    os.makedirs(os.path.join(out_dir, "tmp"), exist_ok=True)
    groups = []  # (group key: rows, dataset info, rounds, memory limit)
    if suite == "scale":
        for rows in cfg["scale_rows"]:
            info = bdata.prepare(out_dir, rows, max(1000, min(cfg["n_test"], rows // 5)),
                                 seed=cfg["seed"])
            groups.append((rows, info, cfg["scale_rounds"], cfg["scale_memory_limit"]))
    else:
        prepare = bdata.categorical if suite == "categorical" else bdata.prepare
        info = prepare(out_dir, cfg["n_train"], cfg["n_test"], seed=cfg["seed"])
        groups.append((cfg["n_train"], info, cfg["rounds"], cfg["memory_limit"]))
    log_dir = os.path.join(out_dir, "logs", suite)
    res = {"suite": suite, "command": command, "config": cfg, "machine": machine_facts(),
           "started": time.strftime("%Y-%m-%d %H:%M:%S"), "runs": []}
    path = os.path.join(out_dir, f"results-{suite}.json")

    def save():
        tmp = path + ".tmp"
        with open(tmp, "w") as fh:
            json.dump(res, fh, indent=1, default=float)
        os.replace(tmp, path)

    if any(LIBS[l][2] == "ours" for l in libs):
        categorical = suite == "categorical"
        tiny = (bdata.categorical if categorical else bdata.prepare)(out_dir, 5000, 1000,
                                                                    seed=cfg["seed"])
        variants = [WARM_VARIANTS[lib] for lib in libs if lib in WARM_VARIANTS]
        r = run_job("ooc_warmup", dict(train=tiny["train"], test=tiny["test"],
                                       tmp_dir=os.path.join(out_dir, "tmp"),
                                       categorical=categorical, variants=variants),
                    log_dir=log_dir, timeout=cfg["timeout"], name="ooc_warmup")
        r.update(lib="ooc_warmup", label="oocboost cold start (numba compile, 5k rows)",
                 role="info", group=0, repeat=0, variants=len(variants))
        res["runs"].append(r)
        log(f"[{suite}] warm-up (cold start): {r['outer_wall_s']:.1f} s, {_fmt_short(r)}")
        save()

    for repeat in range(cfg["repeats"]):
        for rows, info, rounds, mem in groups:
            for lib in libs:
                label, job, role = LIBS[lib]
                too_big = (
                    _projected_beyond_ram(res["runs"], lib, rows) if role == "peer" else None
                )
                if too_big:
                    res["runs"].append(dict(job=job, status="skipped", reason=too_big, lib=lib,
                                            label=label, role=role, group=rows, repeat=repeat,
                                            times={}, metrics={}, extra={}))
                    log(
                        f"[{suite}] rows={rows:,} repeat={repeat} {label}: skipped ({too_big})"
                    )
                    save()
                    continue
                a = _job_args(lib, suite, cfg, info, out_dir, rounds, mem, bdata)
                name = f"{lib}-{rows}-r{repeat}"
                built = None
                if role == "ours" and suite != "build":
                    built = _build_cache_job(a, log_dir, cfg, name)
                try:
                    if built is not None and built.get("status") != "ok":
                        r = dict(built, job=job)
                    else:
                        r = run_job(job, a, log_dir=log_dir, timeout=cfg["timeout"], name=name)
                finally:
                    if built is not None:
                        shutil.rmtree(a["cache_dir"], ignore_errors=True)
                if built is not None and r.get("status") == "ok":
                    r["times"] = {"build_s": built["times"]["build_s"], **r["times"]}
                    r.setdefault("extra", {})["build_peak_rss"] = built["peak_rss"]
                r.update(lib=lib, label=label, role=role, group=rows, repeat=repeat,
                         rounds=rounds, memory_limit=mem, n_test=info["n_test"],
                         train_bytes=info["train_bytes"])
                res["runs"].append(r)
                log(f"[{suite}] rows={rows:,} repeat={repeat} {label}: {_fmt_short(r)}")
                save()
    res["finished"] = time.strftime("%Y-%m-%d %H:%M:%S")
    save()
    return path


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n\n")[0])
    p.add_argument("suites", nargs="+", choices=SUITES + ("all",))
    p.add_argument("--quick", action="store_true",
                   help="100k rows, 1 repeat, 20 rounds, scale 100k -> 400k (a few minutes)")
    p.add_argument("--repeats", type=int, default=None, help="runs per figure (3; quick 1)")
    p.add_argument("--rows", type=int, default=None, help="training rows (1M; quick 100k)")
    p.add_argument("--test-rows", type=int, default=None, help="test rows (rows / 5)")
    p.add_argument("--rounds", type=int, default=None, help="boosting rounds (100; quick 20)")
    p.add_argument("--scale-rows", type=lambda s: [int(float(x)) for x in s.split(",")],
                   default=None,
                   help="comma list for the scale suite (1e6,4e6,16e6,64e6; the 64M-row CSV "
                        "takes 13 GB of disk, 26 GB while it is written, and the in-memory "
                        "peers are skipped where they would not fit in RAM)")
    p.add_argument(
        "--scale-rounds", type=int, default=None, help="rounds in the scale suite (20)"
    )
    p.add_argument("--memory-limit", default="1GB", help="oocboost memory_limit (1GB)")
    p.add_argument("--scale-memory-limit", default="512MB",
                   help="fixed oocboost memory_limit of the scale suite (512MB)")
    p.add_argument("--libs", default=None,
                   help="comma list of library ids to run (default all): " + ",".join(LIBS))
    p.add_argument("--skip", default="", help="comma list of library ids to leave out")
    p.add_argument("--peers-only", action="store_true", help="leave out oocboost's jobs")
    p.add_argument("--timeout", type=float, default=None, help="seconds per job")
    p.add_argument("--out", default=os.path.join(ROOT, "bench", "out"))
    p.add_argument("--results", default=None,
                   help="the report's path (bench/RESULTS.md for runs in bench/out, else "
                        "OUT/RESULTS.md: a run elsewhere never overwrites the published one)")
    p.add_argument("--no-report", action="store_true")
    args = p.parse_args(argv)
    suites = list(SUITES) if "all" in args.suites else list(dict.fromkeys(args.suites))
    cfg = config_for(args)
    out_dir = os.path.abspath(args.out)
    os.makedirs(out_dir, exist_ok=True)
    libs_filter = set(args.libs.split(",")) if args.libs else None
    skip = set(filter(None, args.skip.split(",")))
    if args.peers_only:
        skip |= {k for k, v in LIBS.items() if v[2] == "ours"}
    command = "python -m bench " + " ".join(shlex.quote(a) for a in (argv if argv is not None
                                                                   else sys.argv[1:]))
    facts = machine_facts()
    print(
        f"[bench] {facts['cpu_count']} cores, {facts['ram_bytes'] / 2**30:.1f} GiB, "
        f"python {facts['python']}, "
        + ", ".join(f"{k} {v}" for k, v in facts["versions"].items()),
        flush=True,
    )
    t0 = time.perf_counter()
    for suite in suites:
        run_suite(suite, cfg, out_dir=out_dir, libs_filter=libs_filter, skip=skip,
                  command=command, log=lambda m: print(m, flush=True))
    print(
        f"[bench] done in {time.perf_counter() - t0:.0f} s; raw results in {out_dir}",
        flush=True,
    )
    from bench import guard

    ratios = guard.ratios_of_dir(out_dir)
    guard.write(ratios, os.path.join(out_dir, "ratios.json"))
    print(f"[bench] {len(ratios)} paired ratios in {out_dir}/ratios.json (python -m "
          f"bench.guard check {out_dir} compares them with bench/ratios-quick.json)",
          flush=True)
    if not args.no_report:
        from bench import report

        args.results = args.results or report.default_results_path(out_dir)
        report.write_report(out_dir, args.results)
        print(f"[bench] report: {args.results}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
