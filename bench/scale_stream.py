"""Hundreds of millions of rows at a fixed memory limit, from a stream::

    python -m bench scale-stream [--rows 64e6,256e6] [--limits 300MB,512MB] [--rounds 20]
                                 [--out bench_scale_stream] [--keep]

Each row count's cache is built by ``oocboost.build_cache`` from a re-iterable stream of
pyarrow RecordBatches (``oocboost.datasets.iter_chunks``: HIGGS-like rows, 28 features,
2% missing values as NaN, binary; made twice, once per build pass, and never
written as text: 256M rows of CSV would be 52 GB), in a process of its own at a 512MB
limit. Then each ``--limits`` value trains ``--rounds`` rounds of the boost suite's
parameters (eta 0.1, depth 6, 256 bins, lambda 1, 2 threads) from that cache in a fresh
process. For each: wall time, the process's peak RSS (``ru_maxrss``) and its RSS after
the imports, data passes, and the bytes of block files read per second of training.

The disk: the same block files read once in 8 MiB chunks after each was dropped from the
page cache (``posix_fadvise(DONTNEED)``), the machine's sequential read rate for them.
Training reads the files every pass; when they fit in RAM the kernel keeps them in its
page cache (outside the process's RSS, which the memory limit bounds), so passes after
the first read memory, not the disk: the table says which applies.

Prints a Markdown table and writes ``OUT/results-scale-stream.json``; caches are removed
at the end unless ``--keep``.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import time

from bench.ingest import run_child

N_FEATURES = 28
CHUNK_ROWS = 1_000_000

_BUILD = r"""
import json, os, resource, sys, time
import numpy as np, psutil, pyarrow as pa
import oocboost
from oocboost.datasets import iter_chunks

rows, path = int(sys.argv[1]), sys.argv[2]
n_features, chunk_rows = int(sys.argv[3]), int(sys.argv[4])
names = ["label"] + [f"f{j}" for j in range(n_features)]


class Stream:
    # re-iterable: each build pass draws the same rows again (no spool of the values)
    def __iter__(self):
        for X, y, _ in iter_chunks(rows, n_features, task="binary", seed=0,
                                   chunk_rows=chunk_rows):
            # NaN is a missing value to build_cache: no null bitmap needed
            columns = np.ascontiguousarray(X.T)
            yield pa.RecordBatch.from_arrays(
                [pa.array(y)] + [pa.array(columns[j]) for j in range(n_features)],
                names=names)


base = psutil.Process().memory_info().rss
t0 = time.perf_counter()
cache = oocboost.build_cache(Stream(), path, label="label", memory_limit="512MB",
                             quiet=True)
seconds = time.perf_counter() - t0
blocks = [os.path.join(dp, f) for dp, _, fs in os.walk(path) for f in fs]
print("SCALE " + json.dumps({
    "seconds": seconds, "rows": cache.n_rows,
    "peak_rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
    "rss_after_imports": base, "cache_bytes": sum(os.path.getsize(b) for b in blocks)}))
"""

_TRAIN = r"""
import json, resource, sys, time
import psutil
import oocboost

path, limit, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
cache = oocboost.Cache(path)
base = psutil.Process().memory_info().rss
params = {"objective": "binary:logistic", "eta": 0.1, "max_depth": 6, "max_bin": 256,
          "lambda": 1.0, "min_child_weight": 1.0, "nthread": 2, "memory_limit": limit}
t0 = time.perf_counter()
model = oocboost.train(params, cache, rounds)
seconds = time.perf_counter() - t0
log = model.training_log
print("SCALE " + json.dumps({
    "seconds": seconds, "peak_rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
    "rss_after_imports": base, "data_passes": log.get("data_passes"),
    "bytes_read": log.get("bytes_read"), "io_wait_s": log.get("io_wait_s"),
    "state_in_ram": log.get("state_in_ram")}))
"""


def sequential_read(folder: str, chunk: int = 8 << 20) -> dict:
    """Bytes per second of reading ``folder``'s files once, each dropped from the page
    cache first; ``cold`` is False when the kernel would not drop them."""
    files = sorted(os.path.join(dp, f) for dp, _, fs in os.walk(folder) for f in fs)
    for path in files:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)
    total, t0 = 0, time.perf_counter()
    buf = bytearray(chunk)
    for path in files:
        with open(path, "rb", buffering=0) as fh:
            while True:
                n = fh.readinto(buf)
                if not n:
                    break
                total += n
    seconds = time.perf_counter() - t0
    return {"bytes": total, "seconds": seconds, "bytes_per_s": total / max(seconds, 1e-9)}


def _mib(n: float) -> str:
    return f"{n / 2**20:,.0f}"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench scale-stream",
                                description=__doc__.split("\n")[0])
    p.add_argument("--rows", type=lambda s: [int(float(x)) for x in s.split(",")],
                   default=[64_000_000, 256_000_000], help="comma list (64e6,256e6)")
    p.add_argument("--limits", default="300MB,512MB", help="comma list (300MB,512MB)")
    p.add_argument("--rounds", type=int, default=20, help="boosting rounds (20)")
    p.add_argument("--out", default="bench_scale_stream", help="folder of the caches")
    p.add_argument("--keep", action="store_true", help="keep the caches")
    args = p.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    limits = [s.strip() for s in args.limits.split(",") if s.strip()]
    results = []
    for rows in args.rows:
        path = os.path.join(args.out, f"stream{rows}.oocb")
        if os.path.exists(path):
            shutil.rmtree(path)
        build = run_child(_BUILD, "SCALE", str(rows), path, str(N_FEATURES),
                          str(CHUNK_ROWS))
        print(f"[scale-stream] {rows:,} rows built: {build}", flush=True)
        disk = sequential_read(path) if "error" not in build else {}
        print(f"[scale-stream] sequential read: {disk}", flush=True)
        for limit in limits:
            train = run_child(_TRAIN, "SCALE", path, limit, str(args.rounds))
            print(f"[scale-stream] {rows:,} rows at {limit}: {train}", flush=True)
            results.append({"rows": rows, "limit": limit, "rounds": args.rounds,
                            "build": build, "disk": disk, "train": train})
        if not args.keep:
            shutil.rmtree(path, ignore_errors=True)
    with open(os.path.join(args.out, "results-scale-stream.json"), "w") as fh:
        json.dump(results, fh, indent=1)
    print(table(results))
    return 0


def table(results: list[dict]) -> str:
    """The Markdown table of :func:`main`'s results, with each row count's training time
    against the smallest row count's at the same limit."""
    first = {}
    out = ["| rows | limit | build s | cache GB | train s | x smallest | peak RSS MiB | "
           "above imports MiB | passes | read GB/s (training) | disk GB/s (cold) |",
           "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        b, t, d = r["build"], r["train"], r["disk"]
        if "error" in t or "error" in b:
            out.append(f"| {r['rows']:,} | {r['limit']} | {b.get('error', '')} "
                       f"{t.get('error', '')} |||||||||")
            continue
        first.setdefault(r["limit"], (r["rows"], t["seconds"]))
        rows0, s0 = first[r["limit"]]
        read = (t["bytes_read"] or 0) / t["seconds"] / 1e9
        out.append(
            f"| {r['rows']:,} | {r['limit']} | {b['seconds']:.0f} | "
            f"{b['cache_bytes'] / 1e9:.2f} | {t['seconds']:.1f} | "
            f"{t['seconds'] / s0:.2f}x ({r['rows'] / rows0:.0f}x rows) | "
            f"{_mib(t['peak_rss'])} | {_mib(t['peak_rss'] - t['rss_after_imports'])} | "
            f"{t['data_passes']} | {read:.2f} | {d['bytes_per_s'] / 1e9:.2f} |")
    return "\n".join(out)


if __name__ == "__main__":
    raise SystemExit(main())
