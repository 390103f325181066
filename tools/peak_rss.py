"""Run a command, report its peak RSS and wall time, optionally under a hard memory cap.

Usage::

    python -m tools.peak_rss [--cap SIZE] [--json] [--timeout S] -- CMD ARGS...

The peak is the larger of a psutil poll of the whole process tree every 10 ms (sum of the
RSS of the command and its descendants) and the kernel's ``ru_maxrss`` of the child (see
:func:`oocboost.utils.measure.measure_peak_rss`). The command's own output passes through; the
report goes to stderr as text, or as one JSON line with ``--json``. The exit code is the
command's (128 + signal number when it was killed by a signal).

``--cap SIZE`` (``512M``, ``2G``; binary units) imposes a hard limit, with the first method
that works:

1. ``cgroup-v2``: when a cgroup v2 hierarchy is mounted, its ``cgroup.controllers`` lists
   ``memory`` and this process's cgroup is writable, a child cgroup is created with
   ``memory.max = SIZE`` (and ``memory.swap.max = 0``), the command is moved into it before
   it starts, and the cgroup is removed afterwards. The kernel's OOM killer ends the
   command when its *resident* memory (plus page cache it dirties) exceeds the cap.
2. ``RLIMIT_AS``: ``setrlimit(RLIMIT_AS, SIZE)`` in the child. This caps *virtual* memory,
   which numba/LLVM, thread stacks and allocator arenas inflate well beyond the RSS (an
   idle interpreter with numpy, pyarrow and numba maps about 500 MiB), so a cap that is
   comfortable for the RSS can still fail. Allocations beyond the cap fail with
   ``MemoryError``. Prefer a cgroup v2 host for faithful caps.

The report always says which method was used.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import sys

from oocboost.errors import OocboostError
from oocboost.utils.measure import measure_peak_rss
from oocboost.utils.sizes import format_size, parse_size

__all__ = ["main", "run", "cgroup_v2_dir", "CAP_METHODS"]

CAP_METHODS = ("none", "cgroup-v2", "RLIMIT_AS")
RLIMIT_AS_NOTE = (
    "RLIMIT_AS caps virtual memory, which numba/LLVM and thread stacks inflate beyond the "
    "RSS; a cgroup v2 memory.max cap is more faithful when available"
)


def _cgroup2_mount():
    """Mount point of the cgroup v2 hierarchy, or None."""
    try:
        with open("/proc/self/mountinfo") as fh:
            for line in fh:
                left, _, right = line.partition(" - ")
                if right.split(" ")[0] == "cgroup2":
                    return left.split(" ")[4]
    except OSError:
        pass
    return None


def cgroup_v2_dir():
    """This process's cgroup v2 directory if it can host a memory-capped child, else None.

    Requires a cgroup v2 mount whose ``cgroup.controllers`` (for this cgroup) lists
    ``memory``, and a writable directory.
    """
    mount = _cgroup2_mount()
    if mount is None:
        return None
    rel = None
    try:
        with open("/proc/self/cgroup") as fh:
            for line in fh:
                hier, _, path = line.rstrip("\n").split(":", 2)
                if hier == "0":
                    rel = path
    except OSError:
        return None
    if rel is None:
        return None
    directory = os.path.join(mount, rel.lstrip("/"))
    try:
        with open(os.path.join(directory, "cgroup.controllers")) as fh:
            controllers = fh.read().split()
    except OSError:
        return None
    if "memory" not in controllers or not os.access(directory, os.W_OK):
        return None
    return directory


class _CgroupCap:
    """A child cgroup with memory.max; ``enter`` runs in the child before exec."""

    def __init__(self, parent, cap_bytes):
        self.path = os.path.join(parent, f"oocboost-peak-rss-{os.getpid()}")
        os.mkdir(self.path)
        try:
            if not os.path.exists(os.path.join(self.path, "memory.max")):
                # the memory controller must be enabled for the parent's children
                with open(os.path.join(parent, "cgroup.subtree_control"), "w") as fh:
                    fh.write("+memory")
            with open(os.path.join(self.path, "memory.max"), "w") as fh:
                fh.write(str(int(cap_bytes)))
            swap = os.path.join(self.path, "memory.swap.max")
            if os.path.exists(swap):
                with open(swap, "w") as fh:
                    fh.write("0")
        except OSError:
            self.remove()
            raise

    def enter(self):
        with open(os.path.join(self.path, "cgroup.procs"), "w") as fh:
            fh.write(str(os.getpid()))

    def read(self, name):
        try:
            with open(os.path.join(self.path, name)) as fh:
                return fh.read()
        except OSError:
            return None

    def oom_kills(self):
        text = self.read("memory.events") or ""
        for line in text.splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill":
                return int(value)
        return 0

    def remove(self):
        try:
            os.rmdir(self.path)
        except OSError:
            pass


def _rlimit_as(cap_bytes):
    import resource

    def enter():
        resource.setrlimit(resource.RLIMIT_AS, (cap_bytes, cap_bytes))

    return enter


def run(cmd, *, cap=None, timeout=None, poll_interval=0.01, capture=False, method="auto"):
    """Run ``cmd`` (list of str) and return a JSON-able report dict.

    Parameters
    ----------
    cmd : list of str
    cap : int, str or None
        Hard memory cap (bytes or a size string); None: no cap.
    timeout : float or None
        Seconds before the command is killed.
    poll_interval : float
        Seconds between RSS polls.
    capture : bool
        Capture the command's stdout/stderr into the report instead of passing them through.
    method : {"auto", "cgroup-v2", "RLIMIT_AS"}
        How to cap; ``auto`` picks cgroup v2 when usable, else RLIMIT_AS.

    Returns
    -------
    dict
        ``peak_bytes``, ``peak``, ``seconds``, ``returncode``, ``cap_bytes``,
        ``cap_method`` (one of ``CAP_METHODS``), ``note``, ``oom_killed`` (cgroup only),
        and ``stdout``/``stderr`` when captured.
    """
    cap_bytes = parse_size(cap)
    cgroup = None
    preexec = None
    note = ""
    cap_method = "none"
    if cap_bytes is not None:
        if method not in ("auto", "cgroup-v2", "RLIMIT_AS"):
            raise ValueError(f"method must be auto, cgroup-v2 or RLIMIT_AS, got {method!r}")
        if method in ("auto", "cgroup-v2"):
            parent = cgroup_v2_dir()
            if parent is not None:
                try:
                    cgroup = _CgroupCap(parent, cap_bytes)
                except OSError as exc:
                    note = f"cgroup v2 unusable ({exc}); "
            elif method == "cgroup-v2":
                raise OocboostError(
                    "cgroup v2 with the memory controller is not available here"
                )
            else:
                note = "no writable cgroup v2 with the memory controller; "
        if cgroup is not None:
            cap_method, preexec = "cgroup-v2", cgroup.enter
        else:
            cap_method, preexec = "RLIMIT_AS", _rlimit_as(cap_bytes)
            note += RLIMIT_AS_NOTE
    try:
        report = measure_peak_rss(
            list(cmd),
            poll_interval=poll_interval,
            imports=None,
            timeout=timeout,
            check=False,
            capture=capture,
            preexec_fn=preexec,
        )
        oom = cgroup.oom_kills() > 0 if cgroup is not None else None
        cgroup_peak = None
        if cgroup is not None:
            text = cgroup.read("memory.peak")
            cgroup_peak = int(text) if text and text.strip().isdigit() else None
    finally:
        if cgroup is not None:
            cgroup.remove()
    out = {
        "command": list(cmd),
        "peak_bytes": report.peak_bytes,
        "peak": format_size(report.peak_bytes),
        "polled_peak_bytes": report.polled_peak_bytes,
        "maxrss_bytes": report.maxrss_bytes,
        "seconds": round(report.seconds, 4),
        "returncode": report.returncode,
        "cap_bytes": cap_bytes,
        "cap_method": cap_method,
        "note": note,
    }
    if cgroup is not None:
        out["oom_killed"] = oom
        out["cgroup_peak_bytes"] = cgroup_peak
    if capture:
        out["stdout"] = report.stdout
        out["stderr"] = report.stderr
    return out


def _exit_code(returncode):
    return 128 - returncode if returncode < 0 else returncode


def _text(report):
    rc = report["returncode"]
    status = f"exit {rc}" if rc >= 0 else f"killed by {signal.Signals(-rc).name}"
    lines = [
        f"peak RSS {report['peak']} ({report['peak_bytes']} bytes), "
        f"wall {report['seconds']:.2f} s, {status}"
    ]
    if report["cap_bytes"] is not None:
        lines.append(f"cap {format_size(report['cap_bytes'])} via {report['cap_method']}")
        if report.get("oom_killed"):
            lines.append("the command was killed by the cgroup's OOM killer (over the cap)")
        if report["note"]:
            lines.append(f"note: {report['note']}")
    return "\n".join(f"[peak_rss] {line}" for line in lines)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    if "--" in argv:
        i = argv.index("--")
        own, cmd = argv[:i], argv[i + 1:]
    else:
        own, cmd = argv, []
    parser = argparse.ArgumentParser(
        prog="python -m tools.peak_rss",
        usage="python -m tools.peak_rss [--cap SIZE] [--json] [--timeout S] -- CMD ARGS...",
        description="Run CMD and report its peak RSS (process tree) and wall time.",
    )
    parser.add_argument("--cap", help="hard memory cap, e.g. 512M or 2G (binary units)")
    parser.add_argument(
        "--method",
        choices=("auto", "cgroup-v2", "RLIMIT_AS"),
        default="auto",
        help="how to impose --cap (auto: cgroup v2 when usable, else RLIMIT_AS)",
    )
    parser.add_argument(
        "--json", action="store_true", help="report as one JSON line on stderr"
    )
    parser.add_argument(
        "--timeout", type=float, default=None, help="kill the command after S seconds"
    )
    args = parser.parse_args(own)
    if not cmd:
        parser.error(
            "give the command after '--', e.g. python -m tools.peak_rss -- python -c pass"
        )
    try:
        report = run(cmd, cap=args.cap, timeout=args.timeout, method=args.method)
    except OSError as exc:
        print(f"[peak_rss] cannot run {cmd[0]!r}: {exc}", file=sys.stderr)
        return 127 if isinstance(exc, FileNotFoundError) else 126
    except OocboostError as exc:
        print(f"[peak_rss] {exc}", file=sys.stderr)
        return 124 if getattr(exc, "timed_out", False) else exc.exit_code
    print(json.dumps(report) if args.json else _text(report), file=sys.stderr)
    return _exit_code(report["returncode"])


if __name__ == "__main__":
    sys.exit(main())
