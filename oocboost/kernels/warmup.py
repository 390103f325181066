"""Compile the numba kernels of a run ahead of it, on every core, into numba's cache.

A first run after install compiles every kernel it calls, one after another in one
process (numba compiles under a global lock): about 30 s of a 40 s first demo. The
kernels of a run are known in advance: ``warm_signatures.json`` lists, per profile
(``boosting``, ``forest``, ``adaboost``, ``isolation``), the kernels that run calls from
Python with their numba signatures and compile times, recorded by ``python -m
tools.record_kernels`` from small runs of each learner (a test checks the list still
matches what a run calls). :func:`warm_up` splits a profile's kernels over helper
processes, balanced by those times, and each helper compiles its share into the same
cache the run then loads from, so the compilation uses every core instead of one.

The kernels of one module go to the same helper: a module's kernels share their inner
functions, which each helper would otherwise compile again.

Example::

    from oocboost.kernels.warmup import warm_up
    warm_up(["boosting"], n_processes=2)      # blocks; returns seconds per helper
"""
import importlib
import json
import os
import re
import subprocess
import sys
import time

MANIFEST = os.path.join(os.path.dirname(__file__), "warm_signatures.json")
PROFILES = ("boosting", "forest", "adaboost", "isolation")
#: Environment switch: "0" turns the automatic warm-up of a cold first run off.
ENV_SWITCH = "OOCBOOST_WARMUP"


def load_manifest(path=MANIFEST):
    """``{profile: [entry, ...]}``; an entry is ``{"kernel": "module:function",
    "signature": numba's repr of the argument types, "seconds": compile time}``."""
    with open(path) as f:
        return json.load(f)["profiles"]


def _namespace():
    from numba import types

    class _Literal:
        def __getitem__(self, _kind):
            return types.literal

    ns = dict(vars(types))
    ns.update(bool=types.boolean, Literal=_Literal(), none=types.none)
    return ns


def parse_signature(text):
    """The tuple of numba types of a signature's repr, e.g. ``"(int64, Array(float64, 1,
    'C', False, aligned=True))"``. Raises ValueError when numba no longer spells a type
    that way (a different numba version than the one that recorded it)."""
    text = re.sub(r"UniTuple\((\w+) x (\d+)\)", r"UniTuple(\1, \2)", text)
    try:
        value = eval(text, {"__builtins__": {}}, _namespace())  # noqa: S307 (our file)
    except Exception as exc:
        raise ValueError(f"cannot read the numba signature {text!r}: {exc}") from None
    return value if isinstance(value, tuple) else (value,)


def dispatcher(kernel):
    """The numba dispatcher named ``"module:function"`` (a module of this package)."""
    module_name, function = kernel.split(":")
    if not module_name.startswith(__package__ + "."):
        raise ValueError(f"{kernel}: warm-up compiles only {__package__} kernels")
    return getattr(importlib.import_module(module_name), function)


def _index_path(disp):
    try:
        return disp._cache._cache_file._index_path  # numba's per-function cache index
    except AttributeError:
        return None


def is_cold(profile, manifest=None):
    """True when a kernel of ``profile`` has no entry in numba's cache yet (a first run
    after install, or a new ``NUMBA_CACHE_DIR``). False when it cannot tell (numba's
    cache layout changed): a run then compiles as it goes, as without warm-up."""
    manifest = load_manifest() if manifest is None else manifest
    for kernel in sorted({e["kernel"] for e in manifest.get(profile, [])}):
        path = _index_path(dispatcher(kernel))
        if path is None:
            return False
        if not os.path.exists(path):
            return True
    return False


def split_work(entries, n_parts):
    """Entries grouped by module, the groups dealt to ``n_parts`` parts by longest
    compile time first, each to the part with the least time so far; each part then in
    the entries' order, which is the order a run first calls them (the manifest records
    it so): the build's kernels come first, ready when a first run's build starts rather
    than compiled by it a second time. Returns a list of ``n_parts`` entry lists (some
    may be empty)."""
    position = {id(e): i for i, e in enumerate(entries)}
    groups = {}
    for e in entries:
        groups.setdefault(e["kernel"].split(":")[0], []).append(e)
    parts = [[] for _ in range(max(1, n_parts))]
    load = [0.0] * len(parts)
    for group in sorted(groups.values(), key=lambda g: -sum(e["seconds"] for e in g)):
        k = load.index(min(load))
        parts[k].extend(group)
        load[k] += sum(e["seconds"] for e in group)
    return [sorted(part, key=lambda e: position[id(e)]) for part in parts]


def compile_entries(entries):
    """Compile each entry's kernel for its signature (loaded from the cache when it is
    there). Returns ``(n_compiled, n_skipped)``; an entry numba cannot read or compile
    any more is skipped, and the run compiles that kernel itself."""
    n_done = n_skipped = 0
    for e in entries:
        try:
            dispatcher(e["kernel"]).compile(parse_signature(e["signature"]))
            n_done += 1
        except Exception:
            n_skipped += 1
    return n_done, n_skipped


def _entries(profiles, manifest):
    seen, out = set(), []
    for p in profiles:
        if p not in manifest:
            raise ValueError(f"unknown warm-up profile {p!r}: expected one of "
                             f"{', '.join(sorted(manifest))}")
        for e in manifest[p]:
            key = (e["kernel"], e["signature"])
            if key not in seen:
                seen.add(key)
                out.append(e)
    return out


def start(profiles, n_processes=None, manifest=None, cache_dir=None):
    """Start the helper processes compiling ``profiles``' kernels and return them
    (``subprocess.Popen`` objects; :func:`wait` them). ``n_processes`` defaults to the
    number of cores; ``cache_dir``: numba's cache folder to fill (``NUMBA_CACHE_DIR``),
    by default this process's."""
    manifest = load_manifest() if manifest is None else manifest
    entries = _entries(profiles, manifest)
    n_processes = n_processes or os.cpu_count() or 1
    env = None
    if cache_dir is not None:
        env = {**os.environ, "NUMBA_CACHE_DIR": os.path.abspath(cache_dir)}
    procs = []
    for part in split_work(entries, n_processes):
        if not part:
            continue
        proc = subprocess.Popen(
            [sys.executable, "-m", __name__], stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, text=True, env=env)
        proc.stdin.write(json.dumps(part))
        proc.stdin.close()
        procs.append(proc)
    return procs


def wait(procs):
    """Wait for :func:`start`'s helpers; returns their exit codes."""
    return [p.wait() for p in procs]


def warm_up(profiles=PROFILES, n_processes=None, cache_dir=None):
    """Compile ``profiles``' kernels on ``n_processes`` helper processes (default: one a
    core) into numba's cache (``cache_dir``, made if missing; default: this process's
    cache) and wait. Returns the wall time in seconds.

    A filled ``cache_dir`` serves every later process that sets ``NUMBA_CACHE_DIR`` to
    it, read-only too (a container image, a volume mounted into Dask workers), provided
    it runs the same oocboost, numba and CPU kind: numba checks each entry against the
    source file's time stamp and the CPU, and compiles again when one differs."""
    if cache_dir is not None:
        os.makedirs(cache_dir, exist_ok=True)
    t0 = time.perf_counter()
    codes = wait(start(list(profiles), n_processes, cache_dir=cache_dir))
    if any(codes):
        raise RuntimeError(f"a warm-up process failed (exit codes {codes})")
    return time.perf_counter() - t0


def auto_start(profile):
    """Helpers for ``profile`` when its kernels are not in numba's cache yet and
    ``OOCBOOST_WARMUP`` is not "0"; else an empty list. For the CLI's first run."""
    if os.environ.get(ENV_SWITCH, "1") == "0":
        return []
    try:
        if not is_cold(profile):
            return []
    except (OSError, ValueError, ImportError):
        return []
    return start([profile])


if __name__ == "__main__":
    compile_entries(json.loads(sys.stdin.read()))
