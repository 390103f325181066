"""Peak RSS of a subprocess, for tests, the bench and ``tools.peak_rss`` (never for
planning: training plans from :mod:`oocboost.utils.budget`).

:func:`current_rss` / :func:`peak_rss` describe this process. :func:`measure_peak_rss` runs a
command or an importable ``"module:function"`` in a fresh subprocess, polls the resident
set size (RSS) of its whole process tree with psutil and also reads the kernel's own
``ru_maxrss`` of the child (``os.wait4``, i.e. the figure ``RUSAGE_CHILDREN`` would give
for this child alone), and keeps the larger. It subtracts a *baseline*: the peak RSS of an
idle fresh interpreter that has done the same imports, measured the same way, so tests can
assert on what the work itself added.
"""
from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass

from ..errors import OocboostError, ParameterError
from .rss import maxrss_bytes

#: Modules an idle baseline interpreter imports (see :func:`measure_peak_rss`).
DEFAULT_IMPORTS = ("numpy", "pyarrow", "numba", "h5py", "oocboost")
#: Idle interpreters measured for a baseline; the smallest peak is kept.
BASELINE_RUNS = 3


class MeasurementError(OocboostError, RuntimeError):
    """A measured subprocess failed (non-zero exit or timeout); the message ends with its
    stderr."""

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
    # oocboost/utils/measure.py -> the folder that holds the oocboost package
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


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
            f"{' '.join(argv)[:200]} timed out after {timeout} s and was killed; stderr "
            f"tail:\n"
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
        maxrss = maxrss_bytes(info["maxrss"])
    else:  # the launcher itself died (killed by a signal or an OOM killer)
        returncode = popen.returncode
        maxrss = 0
    return returncode, seconds, polled, maxrss, stdout, stderr


def baseline_rss(imports=DEFAULT_IMPORTS, *, poll_interval=0.01, timeout=300.0):
    """Peak RSS in bytes of an idle fresh interpreter after ``imports`` (cached per process).

    The smallest of ``BASELINE_RUNS`` runs: noise only ever adds to an idle interpreter's
    peak (a full CI run once read 246 MiB for an interpreter that peaks at 127, most
    likely shared-library pages mapped around a fault while the page cache was hot), and
    an inflated baseline would hide that much of what a measured command added.
    """
    imports = tuple(imports)
    key = (sys.executable, imports)
    if key not in _BASELINE_CACHE:
        code = "\n".join(f"import {name}" for name in imports) or "pass"
        peaks = []
        for _ in range(BASELINE_RUNS):
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
                    f"the baseline interpreter failed to import {imports} (exit {rc}); "
                    "stderr tail:\n" + err[-2000:],
                    returncode=rc,
                    stderr=err,
                )
            peaks.append(max(polled, maxrss))
        _BASELINE_CACHE[key] = min(peaks)
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
    elif (
        isinstance(target, (list, tuple))
        and target
        and all(isinstance(a, str) for a in target)
    ):
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
