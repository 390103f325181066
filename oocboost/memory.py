"""Memory: sizes, RSS measurement and the memory planner.

Sizes
-----
:func:`parse_size` reads ``512M``, ``512MB``, ``512MiB``, ``2G``, ``1.5GB``, ``300k``.
All units are **binary**: ``k``/``K``/``KB``/``KiB`` = 1024 bytes, ``M``/``MB``/``MiB`` =
1024**2, ``G`` = 1024**3, ``T`` = 1024**4. ``MB`` means MiB here, as in ``ulimit``, Java's
``-Xmx`` and most memory limits users type; a bare number is bytes.

Measurement
-----------
:func:`current_rss` / :func:`peak_rss` describe this process. :func:`measure_peak_rss` runs a
command or an importable ``"module:function"`` in a fresh subprocess, polls the resident
set size (RSS) of its whole process tree with psutil and also reads the kernel's own
``ru_maxrss`` of the child (``os.wait4``, i.e. the figure ``RUSAGE_CHILDREN`` would give
for this child alone), and keeps the larger. It subtracts a *baseline*: the peak RSS of an
idle fresh interpreter that has done the same imports, measured the same way, so tests can
assert on what the work itself added.

The planner's model
-------------------
Every figure is in bytes. ``limit`` is the user's ``memory_limit``.

Training (:func:`plan_train`)::

    peak = baseline                                   # RSS now: interpreter + libraries,
                                                      # + compiled kernels not loaded yet
         + (prefetch + 2) * block_bytes               # block buffers
         + block_scratch_bytes                        # statistics a learner derives per
                                                      # block (forests), 0 for boosting
         + n_hist_nodes * 2 * n_hist_columns * max_bin * hist_width(n_stats) * 8
                                                      # histograms; n_hist_columns is
                                                      # n_features, or max_features for
                                                      # forests' per-node histograms
         + state_bytes                                # per-row state (RAM or one block)
         + resident_bytes                             # decompressed blocks kept across passes
         + margin                                     # max(10% of limit, 32 MiB)

- ``block_bytes = 2 * block_rows * (n_features * codes_itemsize + 8)``: the decompressed
  codes plus float32 label and weight (8 bytes a row), and as much again as a bound on the
  compressed bytes read from disk. ``prefetch + 2`` blocks are alive: ``prefetch`` in the
  queue, the one being processed and the one being decompressed.
- Histograms: float64 sums; for each node in flight its parent is kept too, for the
  subtraction trick, hence the factor 2.
- Per-row state, ``bytes_per_row = 8 * n_outputs`` (float64 margins) ``+ 8 * n_outputs``
  (float32 gradient and hessian) ``+ 4 * n_trees_in_pass`` (int32 node of each row, per
  tree grown in the pass) ``+ 4`` (float32 sample weight). When ``n_rows * bytes_per_row``
  fits, the state stays in RAM (``state_in_ram``). Otherwise it is stored per block beside
  the cache and streamed with the blocks; the model then counts two blocks of state
  (``2 * block_rows * bytes_per_row``: the mapped pages of the block in use and of the
  one before it, dropped when the next block is loaded).
- ``resident_bytes``: whatever is left is offered to keep decompressed blocks in memory
  across passes (``block_rows * (n_features * codes_itemsize + 8)`` bytes each), which saves
  reading and decompressing the cache again at every tree level. It never exceeds the
  size of the whole decompressed data.

The planner starts from the minimum configuration (no prefetch, one node in flight, state
streamed, nothing resident) and grows it greedily in this order: prefetch depth (2 by
default, 1 or 0 when tight), nodes in flight (up to ``max_nodes_in_flight``), state in
RAM, resident blocks. Explicit values (``prefetch=``) are fixed, not grown.

Building a cache (:func:`plan_build`)::

    peak = baseline + max(pass1, pass2) + margin
    pass1 = parse + queued + n_columns * sketch_bytes_per_column + batch
    pass2 = parse + batch + 3 * block_rows * (n_columns * codes_itemsize + 8)
    parse = 64 MiB (CSV sources only) + 40 * csv_block_bytes
    batch = 4 * csv_block_bytes (CSV) or 65536 * (8 * n_columns + 16) (other sources)

- ``parse``: pyarrow's streaming CSV reader holds a fixed ~60 MiB of private memory from
  the moment it opens (readahead, allocator arenas), plus about 40 times its block size
  (measured with the system allocator: 65-72 MiB at 256 KiB blocks, 85-112 MiB at 1 MiB).
  1 MiB blocks are the fastest (REFERENCE.md); the plan halves them to 256 KiB when tight.
- ``queued`` (CSV sources only): ``8 * csv_block_bytes``. Pass 1 sketches on a thread of
  its own while pyarrow parses the next block; a parsed batch waits for the sketcher and
  another is being sketched, each up to 4x its text as float64.
- Sketches: ``sketch_bytes_per_column`` is the budget each column's quantile sketch or
  category counter may use (2 MiB by default, 64 KiB at least;
  ``QuantileSketch.for_budget`` sizes the sketch to it).
- Batch: pass 1 copies each parsed batch into the spool (a compact temporary that pass 2
  reads back) and pass 2 bins one batch at a time: a batch is a CSV block parsed (up to 4x
  its text as float64) or ``SOURCE_BATCH_ROWS`` rows of another source.
- Pass 2 copies the binned batches into the block being assembled, then serialises it
  (lz4, and raw when lz4 saves too little: ``BUILD_BLOCK_COPIES`` = 3 copies of a block).
  An earlier model counted ``prefetch + 2`` blocks of float64 rows here (about 9x too
  much: blocks were never queued, and the raw rows are per batch, not per block), which
  capped blocks at 32,768 rows at 512MB: training then paid the per-block overhead 8
  times as often.
- ``block_rows`` is the largest power of two between 4096 and 262144 rows such that
  training's block buffers at the same limit (``(2 + 2) * 2 * block_rows * (n_columns *
  codes_itemsize + 8)``, see ``plan_train``) take at most a quarter of what the limit
  leaves after the baseline and the margin (training also needs room for histograms,
  per-row state and resident blocks), and the build fits. An explicit ``block_rows`` is
  honoured and checked.

Refusal: when even the minimum configuration does not fit, :class:`MemoryLimitError`
says so and gives the smallest limit (a whole number of MiB) for which the same formulas
plan successfully.
"""
from __future__ import annotations

import dataclasses
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass

from .common import binned_dtype, check_max_bin, hist_width
from .errors import MemoryLimitError, OocboostError, ParameterError

__all__ = [
    "parse_size",
    "format_size",
    "current_rss",
    "peak_rss",
    "RssReport",
    "MeasurementError",
    "measure_peak_rss",
    "baseline_rss",
    "BuildPlan",
    "TrainPlan",
    "plan_build",
    "plan_train",
    "DEFAULT_IMPORTS",
    "pending_kernel_bytes",
]

KiB = 1024
MiB = 1024**2
GiB = 1024**3

_UNITS = {"": 1, "k": KiB, "m": MiB, "g": GiB, "t": 1024**4}
_SIZE_RE = re.compile(r"^\s*([0-9]+(?:\.[0-9]*)?|\.[0-9]+)\s*([kmgt]?)(i?b)?\s*$", re.I)


# ----------------------------------------------------------------------------- sizes
def parse_size(value):
    """Parse a memory size into bytes.

    Parameters
    ----------
    value : int, str or None
        A non-negative number of bytes, or a string: a number (decimals allowed) followed
        by an optional unit ``k``, ``M``, ``G`` or ``T``, optionally followed by ``B`` or
        ``iB`` (case-insensitive). Units are binary: ``"512M"``, ``"512MB"`` and
        ``"512MiB"`` all mean 512 * 1024**2 bytes. A bare number or ``"B"`` is bytes.

    Returns
    -------
    int or None
        The size in bytes (rounded down to a whole byte), or None when ``value`` is None.

    Raises
    ------
    ParameterError
        For negative numbers, booleans, other types or strings that do not match.
    """
    if value is None:
        return None
    if isinstance(value, bool):
        raise ParameterError(f"a memory size must be a number of bytes or a string like '512M', got {value!r}")
    if isinstance(value, int) or (hasattr(value, "dtype") and getattr(value.dtype, "kind", "") in "iu"):
        n = int(value)
        if n < 0:
            raise ParameterError(f"a memory size cannot be negative, got {n}")
        return n
    if isinstance(value, float):
        if not math.isfinite(value) or value < 0:
            raise ParameterError(f"a memory size must be a finite non-negative number, got {value!r}")
        return int(value)
    if isinstance(value, str):
        m = _SIZE_RE.match(value)
        if m is None:
            raise ParameterError(
                f"cannot read {value!r} as a memory size: expected a number of bytes or a "
                "number with a binary unit such as '300k', '512M', '512MiB', '1.5GB', '2G'"
            )
        number = float(m.group(1))
        return int(number * _UNITS[m.group(2).lower()])
    raise ParameterError(
        f"a memory size must be an int (bytes) or a string like '512M', got {type(value).__name__}"
    )


def format_size(n_bytes):
    """Format a number of bytes with a binary unit, e.g. ``"512.0 MiB"`` or ``"812 B"``."""
    if n_bytes is None:
        return "no limit"
    n = float(n_bytes)
    sign = "-" if n < 0 else ""
    n = abs(n)
    if n < KiB:
        return f"{sign}{int(n)} B"
    for unit in ("KiB", "MiB", "GiB", "TiB"):
        n /= 1024.0
        if n < 1024.0 or unit == "TiB":
            return f"{sign}{n:.1f} {unit}"


# ----------------------------------------------------------------------------- this process
def current_rss():
    """Resident set size of this process now, in bytes (psutil)."""
    import psutil

    return int(psutil.Process().memory_info().rss)


def peak_rss():
    """Peak resident set size of this process so far, in bytes.

    ``getrusage(RUSAGE_SELF).ru_maxrss`` (kB on Linux, bytes on macOS); falls back to the
    current RSS where ``resource`` is missing.
    """
    try:
        import resource
    except ImportError:  # pragma: no cover - Windows
        return current_rss()
    maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(maxrss if sys.platform == "darwin" else maxrss * 1024)


def _maxrss_to_bytes(maxrss):
    return int(maxrss if sys.platform == "darwin" else maxrss * 1024)


# ----------------------------------------------------------------------------- measurement
#: Modules an idle baseline interpreter imports (see :func:`measure_peak_rss`).
DEFAULT_IMPORTS = ("numpy", "pyarrow", "numba", "h5py", "oocboost")


class MeasurementError(OocboostError, RuntimeError):
    """A measured subprocess failed (non-zero exit or timeout); the message ends with its stderr."""

    def __init__(self, message, returncode=None, stderr="", timed_out=False):
        super().__init__(message)
        self.returncode = returncode
        self.stderr = stderr
        self.timed_out = timed_out


@dataclass
class RssReport:
    """What :func:`measure_peak_rss` saw.

    Attributes
    ----------
    peak_bytes : int
        Peak RSS of the process tree in bytes: the larger of the psutil poll (sum over the
        tree) and the child's ``ru_maxrss``.
    baseline_bytes : int
        Peak RSS in bytes of an idle fresh interpreter that did the same imports (0 when
        ``imports`` was None).
    increase_bytes : int
        ``peak_bytes - baseline_bytes`` (may be slightly negative for idle work).
    returncode : int
        Exit code of the subprocess (negative: killed by that signal).
    seconds : float
        Wall time of the subprocess in seconds.
    result : object
        JSON-decoded return value of a ``"module:function"`` target, else None.
    polled_peak_bytes, maxrss_bytes : int
        The two measurements the peak is taken from.
    stdout, stderr : str
        Captured output (empty when not captured).
    """

    peak_bytes: int
    baseline_bytes: int
    increase_bytes: int
    returncode: int
    seconds: float
    result: object = None
    polled_peak_bytes: int = 0
    maxrss_bytes: int = 0
    stdout: str = ""
    stderr: str = ""

    def as_dict(self):
        return dataclasses.asdict(self)


_RUNNER = r"""
import importlib, json, sys
payload = json.loads(sys.argv[1])
sys.path[:0] = [p for p in payload["sys_path"] if p not in sys.path]
for name in payload["imports"]:
    importlib.import_module(name)
if payload["target"]:
    module, _, func = payload["target"].partition(":")
    fn = getattr(importlib.import_module(module), func)
    result = fn(*payload["args"])
    def _default(o):
        if hasattr(o, "tolist"):
            return o.tolist()
        return repr(o)
    with open(payload["result_path"], "w") as fh:
        json.dump(result, fh, default=_default)
"""

_BASELINE_CACHE = {}


def _repo_root():
    return os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _child_env(env):
    env = dict(os.environ if env is None else env)
    root = _repo_root()
    old = env.get("PYTHONPATH", "")
    env["PYTHONPATH"] = root + (os.pathsep + old if old else "")
    return env


# The measured command runs under a tiny launcher interpreter (``python -I -S``, about
# 10 MiB) that spawns it and reports its ``ru_maxrss`` from ``os.wait4``. Measuring through
# the launcher matters: Linux carries the high-water RSS of the pre-exec address space into
# the child's ``ru_maxrss`` (``exec_mmap`` -> ``setmax_mm_hiwater_rss``), and right after a
# fork (or vfork) that address space is the *spawning* process's. Spawned from pytest (a few
# hundred MiB) the figure would say more about pytest than about the command. The launcher
# itself is left out of the polled sum.
_LAUNCHER = r"""
import json, os, signal, sys
result_path, argv = sys.argv[1], sys.argv[2:]
signal.signal(signal.SIGINT, signal.SIG_IGN)
try:
    pid = os.posix_spawnp(argv[0], argv, os.environ, setsigdef=(signal.SIGINT,))
except OSError as exc:
    with open(result_path, "w") as fh:
        json.dump({"error": str(exc), "errno": exc.errno}, fh)
    sys.exit(127)
_, status, usage = os.wait4(pid, 0)
with open(result_path, "w") as fh:
    json.dump({"returncode": os.waitstatus_to_exitcode(status), "maxrss": usage.ru_maxrss}, fh)
"""


def _tree_rss(launcher):
    """Sum of the RSS of the launcher's descendants, in bytes (the launcher excluded)."""
    import psutil

    total = 0
    try:
        procs = launcher.children(recursive=True)
    except psutil.Error:
        return 0
    for p in procs:
        try:
            total += p.memory_info().rss
        except psutil.Error:
            pass
    return total


def _kill_tree(pid):
    import psutil

    try:
        parent = psutil.Process(pid)
        procs = parent.children(recursive=True) + [parent]
    except psutil.Error:
        return
    for p in procs:
        try:
            p.kill()
        except psutil.Error:
            pass


def _run_polled(argv, *, poll_interval, timeout, env, cwd, capture, preexec_fn):
    """Run ``argv``; return (returncode, seconds, polled_peak, maxrss, stdout, stderr).

    ``preexec_fn`` runs in the launcher before it starts; caps it sets (rlimits, cgroup
    membership) are inherited by the command.
    """
    import psutil

    out_f = tempfile.TemporaryFile() if capture else None
    err_f = tempfile.TemporaryFile() if capture else None
    fd, result_path = tempfile.mkstemp(prefix="oocboost-launch-", suffix=".json")
    os.close(fd)
    timed_out = False
    try:
        t0 = time.perf_counter()
        popen = subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", _LAUNCHER, result_path, *argv],
            stdout=out_f,
            stderr=err_f,
            env=_child_env(env),
            cwd=cwd,
            preexec_fn=preexec_fn,
        )
        try:
            launcher = psutil.Process(popen.pid)
        except psutil.Error:  # already gone
            launcher = None
        polled = 0
        try:
            while popen.poll() is None:
                if launcher is not None:
                    polled = max(polled, _tree_rss(launcher))
                if timeout is not None and time.perf_counter() - t0 > timeout:
                    timed_out = True
                    _kill_tree(popen.pid)
                    popen.wait()
                    break
                time.sleep(poll_interval)
        except BaseException:  # e.g. KeyboardInterrupt: do not leave the command running
            _kill_tree(popen.pid)
            popen.wait()
            raise
        seconds = time.perf_counter() - t0
        with open(result_path) as fh:
            text = fh.read()
        info = json.loads(text) if text.strip() else {}
        stdout = stderr = ""
        if capture:
            out_f.seek(0)
            err_f.seek(0)
            stdout = out_f.read().decode("utf-8", "replace")
            stderr = err_f.read().decode("utf-8", "replace")
    finally:
        os.unlink(result_path)
        if out_f is not None:
            out_f.close()
            err_f.close()
    if timed_out:
        raise MeasurementError(
            f"{' '.join(argv)[:200]} timed out after {timeout} s and was killed; stderr tail:\n"
            + stderr[-2000:],
            returncode=None,
            stderr=stderr,
            timed_out=True,
        )
    if "error" in info:
        errno_ = info.get("errno") or 2
        raise OSError(errno_, os.strerror(errno_), argv[0])  # ENOENT -> FileNotFoundError
    if "returncode" in info:
        returncode = int(info["returncode"])
        maxrss = _maxrss_to_bytes(info["maxrss"])
    else:  # the launcher itself died (killed by a signal or an OOM killer)
        returncode = popen.returncode
        maxrss = 0
    return returncode, seconds, polled, maxrss, stdout, stderr


def baseline_rss(imports=DEFAULT_IMPORTS, *, poll_interval=0.01, timeout=300.0):
    """Peak RSS in bytes of an idle fresh interpreter after ``imports`` (cached per process)."""
    imports = tuple(imports)
    key = (sys.executable, imports)
    if key not in _BASELINE_CACHE:
        code = "\n".join(f"import {name}" for name in imports) or "pass"
        rc, _, polled, maxrss, _, err = _run_polled(
            [sys.executable, "-c", code],
            poll_interval=poll_interval,
            timeout=timeout,
            env=None,
            cwd=None,
            capture=True,
            preexec_fn=None,
        )
        if rc != 0:
            raise MeasurementError(
                f"the baseline interpreter failed to import {imports} (exit {rc}); stderr tail:\n"
                + err[-2000:],
                returncode=rc,
                stderr=err,
            )
        _BASELINE_CACHE[key] = max(polled, maxrss)
    return _BASELINE_CACHE[key]


def measure_peak_rss(
    target,
    *args,
    poll_interval=0.01,
    imports=DEFAULT_IMPORTS,
    timeout=600.0,
    check=True,
    capture=True,
    env=None,
    cwd=None,
    preexec_fn=None,
):
    """Run a command or a Python function in a fresh subprocess and measure its peak RSS.

    Parameters
    ----------
    target : list of str or str
        A command (``["python", "-c", "..."]``; ``args`` are appended), or an importable
        ``"module:function"`` called as ``function(*args)`` in a fresh interpreter that
        first imports ``imports`` (so its baseline matches). ``args`` must be JSON-able; the
        return value comes back JSON-decoded in ``RssReport.result`` (numpy values via
        ``tolist()``, other objects as their ``repr``).
    *args
        Extra command arguments, or the function's arguments.
    poll_interval : float
        Seconds between two polls of the process tree's RSS.
    imports : sequence of str or None
        Modules the baseline interpreter imports. None: no baseline (``baseline_bytes=0``).
    timeout : float or None
        Seconds before the process tree is killed and :class:`MeasurementError` raised.
    check : bool
        Raise :class:`MeasurementError` (with the stderr tail) on a non-zero exit.
    capture : bool
        Capture stdout/stderr (else the child inherits this process's streams).
    env : dict or None
        Environment of the child (default: this one). The repository root is prepended to
        ``PYTHONPATH`` so the child can import ``oocboost`` and ``tools``.
    cwd : str or None
        Working directory of the child.
    preexec_fn : callable or None
        Run in the child before ``exec`` (``tools.peak_rss`` uses it to impose a cap).

    Returns
    -------
    RssReport
    """
    result_path = None
    if isinstance(target, str):
        if ":" not in target:
            raise ParameterError(
                f"target must be a command (list of str) or 'module:function', got {target!r}"
            )
        fd, result_path = tempfile.mkstemp(prefix="oocboost-rss-", suffix=".json")
        os.close(fd)
        payload = {
            "sys_path": [p for p in sys.path if isinstance(p, str) and p],
            "imports": list(imports or ()),
            "target": target,
            "args": list(args),
            "result_path": result_path,
        }
        try:
            argv = [sys.executable, "-c", _RUNNER, json.dumps(payload)]
        except TypeError as exc:
            os.unlink(result_path)
            raise ParameterError(f"arguments of {target} must be JSON-able: {exc}") from None
    elif isinstance(target, (list, tuple)) and target and all(isinstance(a, str) for a in target):
        argv = list(target) + [str(a) for a in args]
    else:
        raise ParameterError(
            f"target must be a non-empty list of str or 'module:function', got {target!r}"
        )
    try:
        baseline = 0 if imports is None else baseline_rss(imports, poll_interval=poll_interval)
        rc, seconds, polled, maxrss, stdout, stderr = _run_polled(
            argv,
            poll_interval=poll_interval,
            timeout=timeout,
            env=env,
            cwd=cwd,
            capture=capture,
            preexec_fn=preexec_fn,
        )
        if check and rc != 0:
            what = target if result_path else " ".join(argv)[:200]
            raise MeasurementError(
                f"{what} exited with code {rc}; stderr tail:\n{stderr[-2000:]}",
                returncode=rc,
                stderr=stderr,
            )
        result = None
        if result_path and rc == 0 and os.path.getsize(result_path) > 0:
            with open(result_path) as fh:
                result = json.load(fh)
    finally:
        if result_path and os.path.exists(result_path):
            os.unlink(result_path)
    peak = max(polled, maxrss)
    return RssReport(
        peak_bytes=peak,
        baseline_bytes=baseline,
        increase_bytes=peak - baseline,
        returncode=rc,
        seconds=seconds,
        result=result,
        polled_peak_bytes=polled,
        maxrss_bytes=maxrss,
        stdout=stdout,
        stderr=stderr,
    )


# ----------------------------------------------------------------------------- planner
MIN_BLOCK_ROWS = 4096
MAX_BLOCK_ROWS = 262144
DEFAULT_PREFETCH = 2
MIN_MARGIN_BYTES = 32 * MiB
MARGIN_FRACTION = 0.10
BLOCK_BUDGET_FRACTION = 0.25
#: pyarrow's streaming CSV reader: a fixed ~60 MiB of private memory from the moment it
#: opens (readahead, allocator arenas; measured 55-65 MiB with the system allocator,
#: 15-20 MiB more with mimalloc) plus about 40 times its block size.
CSV_READER_FIXED_BYTES = 64 * MiB
PARSE_FACTOR = 40
#: Pass 1 over a CSV sketches on a thread of its own: one parsed batch waits for it and
#: one is being sketched, each up to 4 times its CSV bytes as float64 (a value as short
#: as "1," is 2 bytes of text and 8 parsed).
SKETCH_QUEUE_FACTOR = 8
MIN_CSV_BLOCK_BYTES = 256 * KiB
DEFAULT_SKETCH_BYTES = 2 * MiB
MIN_SKETCH_BYTES = 64 * KiB
#: Rows per batch from a non-CSV source (Parquet, Arrow, in-memory arrays and frames:
#: the ``batch_rows`` default of ``oocboost.ingest``).
SOURCE_BATCH_ROWS = 65536
#: Copies of a block alive in pass 2: the block being assembled from binned batches, its
#: lz4 serialisation, and the raw one written instead when lz4 saves too little.
BUILD_BLOCK_COPIES = 3
#: Added to the smallest limit a refusal suggests (see ``_smallest_limit``).
BASELINE_SLACK_BYTES = 8 * MiB
#: Without a memory limit, pass-2 block buffers aim at this many bytes in all.
NO_LIMIT_BLOCK_BUFFER_BYTES = 512 * MiB
HIST_ITEMSIZE = 8
STREAMED_STATE_BLOCKS = 2


def _margin(limit):
    return max(limit // 10, MIN_MARGIN_BYTES)


def _usable(limit, baseline):
    """Bytes the limit leaves after the baseline and the safety margin."""
    return limit - _margin(limit) - baseline


def _smallest_limit(need_above_baseline, baseline):
    """Smallest whole number of MiB whose usable part is at least ``need``."""
    need = need_above_baseline + baseline
    guess = max(need + MIN_MARGIN_BYTES, -(-need * 10 // 9))
    limit = -(-guess // MiB) * MiB
    while _usable(limit, baseline) < need_above_baseline:
        limit += MiB
    # The baseline is this process's RSS now, which grows by a few MiB as it goes on
    # (imports, numba's caches): a limit suggested now must still work when retried.
    return limit + BASELINE_SLACK_BYTES


def _check_int(name, value, low, high=None):
    if isinstance(value, bool) or not isinstance(value, int) and not (
        hasattr(value, "dtype") and getattr(value.dtype, "kind", "") in "iu"
    ):
        raise ParameterError(f"{name} must be an integer, got {value!r}")
    value = int(value)
    if value < low or (high is not None and value > high):
        rng = f">= {low}" if high is None else f"between {low} and {high}"
        raise ParameterError(f"{name} must be {rng}, got {value}")
    return value


def _check_limit(memory_limit):
    limit = parse_size(memory_limit)
    if limit is not None and limit <= 0:
        raise ParameterError(f"memory_limit must be positive (e.g. '512M'), got {memory_limit!r}")
    return limit


#: RSS that numba adds when this process loads its first compiled kernel (LLVM, the
#: codegen and the parallel runtime), and what each entry point's own kernels add on top
#: (measured with numba 0.68, Linux x86-64, kernels loaded from numba's on-disk cache: a
#: fresh process that trains a tiny model grows by about 89 MiB; one that has binned first
#: grows by about 9 MiB more when it trains). It stays resident for the rest of the process.
NUMBA_RUNTIME_BYTES = 80 * MiB
KERNEL_BYTES = {"train": 16 * MiB, "build": 16 * MiB}
#: Kernel modules each entry point always calls into: any compiled dispatcher there means
#: its kernels are loaded in this process.
_KERNEL_MODULES = {
    "train": ("oocboost.kernels.histogram",),
    "build": ("oocboost.kernels.binning",),
}


def _kernels_loaded(module_names):
    """True when a numba dispatcher of one of these (imported) modules has been compiled."""
    for name in module_names:
        module = sys.modules.get(name)
        for obj in vars(module).values() if module is not None else ():
            if hasattr(obj, "py_func") and getattr(obj, "signatures", None):
                return True
    return False


def pending_kernel_bytes(kind):
    """RSS in bytes that loading ``kind``'s compiled kernels will still add to this process.

    ``kind`` is ``"train"`` or ``"build"``. 0 once they are loaded; the numba runtime is
    counted until any of oocboost's kernels is loaded. Part of the measured baseline of
    :func:`plan_train` and :func:`plan_build` (the RSS *before* the work does not have the
    kernels yet, the peak during it does). Kernels loaded from numba's on-disk cache are
    assumed; compiling them (first run after a change) needs some 60 MiB more, for a while.
    """
    pending = 0
    kernel_modules = [m for m in sys.modules if m.startswith("oocboost.kernels.")]
    if not _kernels_loaded(kernel_modules):
        pending += NUMBA_RUNTIME_BYTES
    if not _kernels_loaded(_KERNEL_MODULES[kind]):
        pending += KERNEL_BYTES[kind]
    return pending


def release_arrow_memory():
    """Return the free memory pyarrow's allocator keeps cached to the OS.

    mimalloc and jemalloc keep freed blocks for reuse: after a CSV probe of a few 1 MiB
    blocks, about 50 MiB that no array uses any more stay resident. Measured as part of a
    baseline, that memory would be counted twice (once as baseline, once again when the
    same reader allocates it during the work).
    """
    pa = sys.modules.get("pyarrow")
    if pa is not None:
        try:
            pa.default_memory_pool().release_unused()
        except Exception:  # pragma: no cover - an old pyarrow or an exotic pool
            pass


def _baseline(baseline_bytes, kind):
    """``baseline_bytes``, or the current RSS plus the kernels ``kind`` has still to load.

    The current RSS is read after :func:`release_arrow_memory`.
    """
    if baseline_bytes is None:
        release_arrow_memory()
        return current_rss() + pending_kernel_bytes(kind)
    return _check_int("baseline_bytes", baseline_bytes, 0)


def _line(label, n_bytes, detail=""):
    detail = f"  ({detail})" if detail else ""
    return f"  {label:<34}{format_size(n_bytes):>12}{detail}"


@dataclass
class TrainPlan:
    """How training spends the memory limit (all sizes in bytes). See the module docstring."""

    memory_limit: int | None
    baseline_bytes: int
    margin_bytes: int
    n_rows: int
    n_features: int
    max_bin: int
    n_stats: int
    n_outputs: int
    n_trees_in_pass: int
    block_rows: int
    n_blocks: int
    codes_itemsize: int
    prefetch: int
    block_bytes: int
    block_buffer_bytes: int
    block_scratch_bytes: int
    hist_nodes: int
    hist_columns: int
    hist_bytes_per_node: int
    histogram_bytes: int
    state_bytes_per_row: int
    state_in_ram: bool
    state_bytes: int
    resident_bytes: int
    resident_blocks: int
    estimated_peak_bytes: int
    hist_itemsize: int = HIST_ITEMSIZE
    block_scratch_detail: str = ""

    def as_dict(self):
        """The plan as a JSON-able dict."""
        return dataclasses.asdict(self)

    def describe(self):
        """Multi-line text for verbose mode."""
        lim = format_size(self.memory_limit) if self.memory_limit else "no limit"
        state_how = (
            f"in RAM, {self.n_rows:,} rows x {self.state_bytes_per_row} B"
            if self.state_in_ram
            else f"streamed beside the cache, {STREAMED_STATE_BLOCKS} blocks resident"
        )
        lines = [
            f"memory plan for training (limit {lim}):",
            _line("baseline (interpreter, libraries, kernels)", self.baseline_bytes),
            _line(
                "block buffers",
                self.block_buffer_bytes,
                f"{self.prefetch + 2} x {format_size(self.block_bytes)}: prefetch {self.prefetch}, "
                f"block_rows {self.block_rows:,}",
            ),
            *([_line("per-block statistics", self.block_scratch_bytes,
                     self.block_scratch_detail)] if self.block_scratch_bytes else []),
            _line(
                "histograms",
                self.histogram_bytes,
                f"{self.hist_nodes} nodes in flight x 2 x {self.hist_columns} features x "
                f"{self.max_bin} bins x {hist_width(self.n_stats)} lanes x "
                f"{self.hist_itemsize} B",
            ),
            _line("per-row state", self.state_bytes, state_how),
            _line(
                "resident decompressed blocks",
                self.resident_bytes,
                f"about {self.resident_blocks} of {self.n_blocks} blocks",
            ),
            _line("safety margin", self.margin_bytes),
            _line("estimated peak", self.estimated_peak_bytes, f"limit {lim}"),
        ]
        return "\n".join(lines)


@dataclass
class BuildPlan:
    """How building a cache spends the memory limit (all sizes in bytes)."""

    memory_limit: int | None
    baseline_bytes: int
    margin_bytes: int
    n_columns: int
    max_bin: int
    codes_itemsize: int
    csv_block_bytes: int
    parse_bytes: int
    sketch_bytes_per_column: int
    sketch_bytes: int
    batch_bytes: int
    block_rows: int
    block_bytes: int
    block_buffer_bytes: int
    pass1_bytes: int
    pass2_bytes: int
    estimated_peak_bytes: int
    sketch_queue_bytes: int = 0

    def as_dict(self):
        """The plan as a JSON-able dict."""
        return dataclasses.asdict(self)

    def describe(self):
        """Multi-line text for verbose mode."""
        lim = format_size(self.memory_limit) if self.memory_limit else "no limit"
        lines = [
            f"memory plan for building the cache (limit {lim}):",
            _line("baseline (interpreter, libraries, kernels)", self.baseline_bytes),
            _line("CSV parsing", self.parse_bytes, f"{format_size(self.csv_block_bytes)} blocks"),
            _line(
                "pass 1: sketches",
                self.sketch_bytes,
                f"{self.n_columns} columns x {format_size(self.sketch_bytes_per_column)}",
            ),
            _line("parsed batch (spooled, binned)", self.batch_bytes, "one source batch as float64"),
            _line("pass 1: sketch queue", self.sketch_queue_bytes, "parsed batches for the sketching thread"),
            _line(
                "pass 2: block buffers",
                self.block_buffer_bytes,
                f"{BUILD_BLOCK_COPIES} x {format_size(self.block_bytes)}: block_rows "
                f"{self.block_rows:,}",
            ),
            _line("safety margin", self.margin_bytes),
            _line(
                "estimated peak",
                self.estimated_peak_bytes,
                f"pass 1 {format_size(self.pass1_bytes)}, pass 2 {format_size(self.pass2_bytes)} "
                "above the baseline",
            ),
        ]
        return "\n".join(lines)


# --- training -------------------------------------------------------------------------
def plan_train(
    memory_limit,
    *,
    n_rows,
    n_features,
    max_bin,
    n_stats=3,
    n_outputs=1,
    block_rows,
    n_blocks,
    codes_itemsize,
    baseline_bytes=None,
    max_nodes_in_flight=64,
    n_trees_in_pass=1,
    prefetch=None,
    state_bytes_per_row=None,
    block_scratch_bytes=0,
    n_hist_columns=None,
    hist_itemsize=HIST_ITEMSIZE,
    block_scratch_detail="",
):
    """Plan how training spends ``memory_limit``.

    Parameters
    ----------
    memory_limit : int, str or None
        Peak memory allowed for the whole process (bytes or a size string, see
        :func:`parse_size`). None: no limit, generous defaults (prefetch 2, all nodes in
        flight, state in RAM, up to half of the available RAM for resident blocks).
    n_rows, n_features, max_bin : int
        Rows and features of the cache; codes per feature (missing code included).
    n_stats : int
        Statistics per histogram bin (2 for boosting: gradient, hessian).
    n_outputs : int
        Margins per row (classes of a multiclass booster).
    block_rows, n_blocks : int
        Rows per cache block and number of blocks.
    codes_itemsize : int
        Bytes per code (1 for uint8, 2 for uint16).
    baseline_bytes : int or None
        RSS in bytes of the process before training, numba's compiled kernels included;
        None: :func:`current_rss` now plus :func:`pending_kernel_bytes` ``("train")``.
    max_nodes_in_flight : int
        Most nodes whose histograms are built in one pass.
    n_trees_in_pass : int
        Trees grown in the same pass (each keeps a node index per row).
    prefetch : int or None
        Prefetch depth in blocks; None lets the plan choose (2, or 1 or 0 when tight).
    state_bytes_per_row : int or None
        Per-row state the learner keeps across passes (``RowStateSpec.bytes_per_row``);
        None: boosting's (margins, gradient/hessian, node index).
    block_scratch_bytes : int
        Bytes the learner derives per block and holds while the block is trained on (a
        forest's per-row CART statistics for every tree of the pass).
    n_hist_columns : int or None
        Features per node histogram: ``n_features`` (None), or a forest's
        ``max_features`` when nodes hold only their sampled features.
    hist_itemsize : int
        Bytes per histogram sum: 8 for float64, 4 for the int32 sums of integer
        statistics (``common.INT_HIST_DTYPE``).
    block_scratch_detail : str
        What ``block_scratch_bytes`` holds, for :meth:`TrainPlan.describe`.

    Returns
    -------
    TrainPlan

    Raises
    ------
    MemoryLimitError
        When even the minimum configuration does not fit; the message gives the smallest
        limit that works.
    ParameterError
        For arguments out of range.
    """
    limit = _check_limit(memory_limit)
    n_rows = _check_int("n_rows", n_rows, 0)
    n_features = _check_int("n_features", n_features, 1)
    max_bin = check_max_bin(max_bin)
    n_stats = _check_int("n_stats", n_stats, 1)
    n_outputs = _check_int("n_outputs", n_outputs, 1)
    block_rows = _check_int("block_rows", block_rows, 1)
    n_blocks = _check_int("n_blocks", n_blocks, 0)
    codes_itemsize = _check_int("codes_itemsize", codes_itemsize, 1, 8)
    max_nodes = _check_int("max_nodes_in_flight", max_nodes_in_flight, 1)
    n_trees_in_pass = _check_int("n_trees_in_pass", n_trees_in_pass, 1)
    block_scratch = _check_int("block_scratch_bytes", block_scratch_bytes, 0)
    if prefetch is not None:
        prefetch = _check_int("prefetch", prefetch, 0)
    baseline = _baseline(baseline_bytes, "train")

    row_bytes = n_features * codes_itemsize + 8  # decompressed codes + label + weight
    block_bytes = 2 * block_rows * row_bytes
    n_columns = n_features if n_hist_columns is None else _check_int(
        "n_hist_columns", n_hist_columns, 1)
    hist_itemsize = _check_int("hist_itemsize", hist_itemsize, 1, 8)
    hist_per_node = 2 * n_columns * max_bin * hist_width(n_stats) * hist_itemsize
    # A learner that knows its per-row state passes its size (RowStateSpec.bytes_per_row);
    # the default is boosting's: margins 8, gradient/hessian 8 per output, and a
    # node index per tree grown in the pass.
    state_per_row = (int(state_bytes_per_row) if state_bytes_per_row is not None
                     else 16 * n_outputs + 4 * n_trees_in_pass)
    state_full = n_rows * state_per_row
    state_streamed = STREAMED_STATE_BLOCKS * min(block_rows, max(n_rows, 1)) * state_per_row
    total_decompressed = n_rows * row_bytes

    def need(pf, nodes, in_ram, resident):
        state = state_full if in_ram else state_streamed
        return ((pf + 2) * block_bytes + block_scratch + nodes * hist_per_node + state
                + resident)

    if limit is None:
        import psutil

        pf = DEFAULT_PREFETCH if prefetch is None else prefetch
        nodes = max_nodes
        in_ram = True
        resident = min(total_decompressed, psutil.virtual_memory().available // 2)
        margin = 0
    else:
        usable = _usable(limit, baseline)
        pf_min = 0 if prefetch is None else prefetch
        minimum = need(pf_min, 1, False, 0)
        if minimum > usable:
            smallest = _smallest_limit(minimum, baseline)
            err = MemoryLimitError(
                f"memory limit {format_size(limit)} is too small for training on {n_rows:,} rows "
                f"x {n_features} features (blocks of {block_rows:,} rows, {max_bin} bins): the "
                f"minimum configuration needs {format_size(baseline)} baseline (interpreter and "
                f"libraries) + {format_size(minimum)} (block buffers, one node's histograms, "
                f"per-row state streamed) + a safety margin of max(10%, 32 MiB); "
                f"the smallest limit that works here is {smallest // MiB} MiB "
                f"(memory_limit='{smallest // MiB}M'), or rebuild the cache with smaller blocks"
            )
            err.smallest_limit = smallest
            raise err
        if prefetch is None:
            pf = next(p for p in range(DEFAULT_PREFETCH, -1, -1) if need(p, 1, False, 0) <= usable)
        else:
            pf = prefetch
        left = usable - need(pf, 0, False, 0)  # with streamed state, no histograms
        nodes = int(max(1, min(max_nodes, left // hist_per_node)))
        left = usable - need(pf, nodes, False, 0)
        in_ram = state_full <= left + state_streamed
        left = usable - need(pf, nodes, in_ram, 0)
        resident = int(max(0, min(total_decompressed, left)))
        margin = _margin(limit)

    state_bytes = state_full if in_ram else state_streamed
    peak = baseline + margin + need(pf, nodes, in_ram, resident)
    resident_block_bytes = block_rows * row_bytes
    return TrainPlan(
        memory_limit=limit,
        baseline_bytes=baseline,
        margin_bytes=margin,
        n_rows=n_rows,
        n_features=n_features,
        max_bin=max_bin,
        n_stats=n_stats,
        n_outputs=n_outputs,
        n_trees_in_pass=n_trees_in_pass,
        block_rows=block_rows,
        n_blocks=n_blocks,
        codes_itemsize=codes_itemsize,
        prefetch=pf,
        block_bytes=block_bytes,
        block_buffer_bytes=(pf + 2) * block_bytes,
        block_scratch_bytes=block_scratch,
        hist_nodes=nodes,
        hist_columns=n_columns,
        hist_bytes_per_node=hist_per_node,
        histogram_bytes=nodes * hist_per_node,
        state_bytes_per_row=state_per_row,
        state_in_ram=bool(in_ram),
        state_bytes=state_bytes,
        resident_bytes=resident,
        resident_blocks=(
            n_blocks
            if resident >= total_decompressed
            else int(min(n_blocks, resident // resident_block_bytes))
        ),
        estimated_peak_bytes=peak,
        hist_itemsize=hist_itemsize,
        block_scratch_detail=str(block_scratch_detail),
    )


# --- building ---------------------------------------------------------------------------
def _source_batch_bytes(csv_block_bytes, raw_row, text_source):
    """One parsed source batch as float64: a CSV block is up to 4x its text parsed; other
    sources hand over ``SOURCE_BATCH_ROWS`` rows."""
    if text_source:
        return SKETCH_QUEUE_FACTOR // 2 * csv_block_bytes
    return SOURCE_BATCH_ROWS * raw_row


def _pow2_block_rows():
    r = MAX_BLOCK_ROWS
    while r >= MIN_BLOCK_ROWS:
        yield r
        r //= 2


def plan_build(
    memory_limit,
    n_columns,
    *,
    max_bin=256,
    baseline_bytes=None,
    block_rows=None,
    csv_block_bytes=1 << 20,
    text_source=True,
):
    """Plan how building a cache (pass 1: parse + sketch, pass 2: bin + write) spends the limit.

    Parameters
    ----------
    memory_limit : int, str or None
        Peak memory allowed (bytes or a size string, see :func:`parse_size`). None: no
        limit; training's block buffers then aim at 512 MiB in all.
    n_columns : int
        Feature columns of the source.
    max_bin : int
        Codes per feature (sets the codes' itemsize).
    baseline_bytes : int or None
        RSS in bytes of the process before the build, numba's compiled kernels included;
        None: :func:`current_rss` now plus :func:`pending_kernel_bytes` ``("build")``.
    block_rows : int or None
        Rows per cache block; None lets the plan choose a power of two between 4096 and
        262144 rows whose training block buffers (at the default prefetch) take at most
        a quarter of the budget. An explicit value is honoured (and checked against the
        limit).
    csv_block_bytes : int
        Preferred CSV read block in bytes (1 MiB is the fastest); halved down to 256 KiB
        (or the given value if smaller) when tight.

    Returns
    -------
    BuildPlan

    Raises
    ------
    MemoryLimitError
        When even the minimum configuration does not fit; the message gives the smallest
        limit that works.
    """
    limit = _check_limit(memory_limit)
    n_columns = _check_int("n_columns", n_columns, 1)
    max_bin = check_max_bin(max_bin)
    itemsize = binned_dtype(max_bin).itemsize
    if block_rows is not None:
        block_rows = _check_int("block_rows", block_rows, 1)
    csv_block_bytes = _check_int("csv_block_bytes", csv_block_bytes, 4 * KiB)
    baseline = _baseline(baseline_bytes, "build")

    raw_row = 8 * n_columns + 16
    block_row = n_columns * itemsize + 8  # codes + float32 label and weight
    # What training at the same limit holds per block row: (prefetch + 2) blocks, each
    # counted twice (plan_train's block_bytes).
    train_block_row = (DEFAULT_PREFETCH + 2) * 2 * block_row
    min_csv = min(MIN_CSV_BLOCK_BYTES, csv_block_bytes)

    reader_fixed = CSV_READER_FIXED_BYTES if text_source else 0

    def need(csv, sketch, rows):
        parse = reader_fixed + PARSE_FACTOR * csv
        # CSV: parsed batches waiting for (or in) the sketching thread
        queued = SKETCH_QUEUE_FACTOR * csv if text_source else 0
        batch = _source_batch_bytes(csv, raw_row, text_source)
        pass1 = parse + queued + n_columns * sketch + batch
        pass2 = parse + batch + BUILD_BLOCK_COPIES * rows * block_row
        return max(pass1, pass2), pass1, pass2

    if limit is None:
        csv, sketch = csv_block_bytes, DEFAULT_SKETCH_BYTES
        if block_rows is None:
            rows = next(
                (r for r in _pow2_block_rows() if r * train_block_row <= NO_LIMIT_BLOCK_BUFFER_BYTES),
                MIN_BLOCK_ROWS,
            )
        else:
            rows = block_rows
        margin = 0
    else:
        usable = _usable(limit, baseline)
        rows_min = MIN_BLOCK_ROWS if block_rows is None else block_rows
        minimum = need(min_csv, MIN_SKETCH_BYTES, rows_min)[0]
        if minimum > usable:
            smallest = _smallest_limit(minimum, baseline)
            err = MemoryLimitError(
                f"memory limit {format_size(limit)} is too small for building a cache of "
                f"{n_columns} columns: the minimum configuration ({rows_min:,}-row blocks, "
                f"{format_size(min_csv)} CSV blocks) needs "
                f"{format_size(baseline)} baseline (interpreter and libraries) + "
                f"{format_size(minimum)} + a safety margin of max(10%, 32 MiB); "
                f"the smallest limit that works here is {smallest // MiB} MiB "
                f"(memory_limit='{smallest // MiB}M')"
            )
            err.smallest_limit = smallest
            raise err
        # block_rows first, so that it only shrinks as the limit shrinks: training at the
        # same limit reads these blocks, and their buffers may take a quarter of the
        # budget there. Blocks never squeeze the sketches below full size (the bins'
        # accuracy) unless even the smallest blocks would. Then sketches, CSV blocks.
        if block_rows is None:
            budget = BLOCK_BUDGET_FRACTION * usable
            fitting = [r for r in _pow2_block_rows() if r * train_block_row <= budget]
            rows = next(
                (r for r in fitting if need(min_csv, DEFAULT_SKETCH_BYTES, r)[0] <= usable),
                next((r for r in fitting if need(min_csv, MIN_SKETCH_BYTES, r)[0] <= usable),
                     MIN_BLOCK_ROWS),
            )
        else:
            rows = block_rows
        # Sketches before CSV blocks: smaller sketches cost bin accuracy, smaller CSV
        # blocks only parsing speed.
        sketch = DEFAULT_SKETCH_BYTES
        while sketch > MIN_SKETCH_BYTES and need(min_csv, sketch, rows)[0] > usable:
            sketch = max(MIN_SKETCH_BYTES, sketch // 2)
        csv = csv_block_bytes
        while csv > min_csv and need(csv, sketch, rows)[0] > usable:
            csv = max(min_csv, csv // 2)
        margin = _margin(limit)

    total, pass1, pass2 = need(csv, sketch, rows)
    return BuildPlan(
        memory_limit=limit,
        baseline_bytes=baseline,
        margin_bytes=margin,
        n_columns=n_columns,
        max_bin=max_bin,
        codes_itemsize=itemsize,
        csv_block_bytes=csv,
        parse_bytes=reader_fixed + PARSE_FACTOR * csv,
        sketch_bytes_per_column=sketch,
        sketch_bytes=n_columns * sketch,
        batch_bytes=_source_batch_bytes(csv, raw_row, text_source),
        block_rows=rows,
        block_bytes=rows * block_row,
        block_buffer_bytes=BUILD_BLOCK_COPIES * rows * block_row,
        pass1_bytes=pass1,
        pass2_bytes=pass2,
        estimated_peak_bytes=baseline + margin + total,
        sketch_queue_bytes=SKETCH_QUEUE_FACTOR * csv if text_source else 0,
    )
