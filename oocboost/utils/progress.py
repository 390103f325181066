"""A small progress bar for long passes (no tqdm dependency).

::

    with ProgressBar(total=n_bytes, unit="bytes", desc="pass 1") as bar:
        for batch in batches:
            ...
            bar.update(batch.n_bytes)
    # pass 1  45.2/120.0 MiB  37.7%  88.4 MiB/s  ETA 0:00:01

Redraws are throttled to one every ``min_interval`` seconds; a disabled bar writes
nothing at all. By default the bar is enabled only when ``file`` is a terminal and the
environment variable ``OOCBOOST_QUIET`` is not set.
"""
from __future__ import annotations

import os
import sys
import time

from ..errors import ParameterError

__all__ = ["ProgressBar", "format_count", "format_rate", "format_duration"]

_UNITS = ("rows", "bytes", "rounds")


def format_count(n, unit):
    """``n`` in human form: bytes with binary units, other counts with k/M/G suffixes."""
    if unit == "bytes":
        from .sizes import format_size

        return format_size(n)
    n = float(n)
    for suffix, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(n) >= scale:
            return f"{n / scale:.2f}{suffix}"
    return f"{n:.0f}"


def format_rate(per_second, unit):
    """Rate in human units: ``MiB/s`` for bytes, ``rows/s`` for rows, ``it/s`` for rounds."""
    if unit == "bytes":
        from .sizes import format_size

        return f"{format_size(per_second)}/s"
    label = "rows/s" if unit == "rows" else "it/s"
    n = float(per_second)
    for suffix, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if n >= scale:
            return f"{n / scale:.2f}{suffix} {label}"
    return f"{n:.1f} {label}" if n < 100 else f"{n:.0f} {label}"


def format_duration(seconds):
    """``H:MM:SS`` for a number of seconds."""
    seconds = int(round(max(0.0, seconds)))
    h, rem = divmod(seconds, 3600)
    m, s = divmod(rem, 60)
    return f"{h}:{m:02d}:{s:02d}"


class ProgressBar:
    """A throttled, single-line progress bar.

    Parameters
    ----------
    total : int or float or None
        Units expected in all (rows, bytes or rounds); None when unknown (no percentage
        nor ETA is shown).
    unit : {"rows", "bytes", "rounds"}
        What ``update`` counts; sets the human units of counts and rates.
    desc : str
        Text shown before the bar.
    enabled : bool or None
        None: enabled when ``file`` is a terminal and ``OOCBOOST_QUIET`` is unset.
        False: writes nothing. True: always draws (one ``\\r``-refreshed line).
    file : text stream
        Where to draw (``sys.stderr`` by default).
    min_interval : float
        Seconds between two redraws; ``close()`` always draws the final state.
    """

    def __init__(
        self, total=None, unit="rows", desc="", enabled=None, file=None, min_interval=0.2
    ):
        if unit not in _UNITS:
            raise ParameterError(f"unit must be one of {_UNITS}, got {unit!r}")
        if total is not None and total < 0:
            raise ParameterError(f"total must be non-negative or None, got {total!r}")
        self.file = sys.stderr if file is None else file
        if enabled is None:
            isatty = getattr(self.file, "isatty", None)
            try:
                tty = bool(isatty()) if isatty is not None else False
            except (ValueError, OSError):
                tty = False
            enabled = tty and not os.environ.get("OOCBOOST_QUIET")
        self.enabled = bool(enabled)
        self.total = total
        self.unit = unit
        self.desc = desc
        self.min_interval = float(min_interval)
        self.n = 0
        self.postfix = ""
        self.closed = False
        self._start = time.monotonic()
        self._last_draw = None
        self._last_len = 0

    # -- public API -------------------------------------------------------------------
    def update(self, n=1):
        """Add ``n`` units done; redraw when ``min_interval`` has passed since the last one."""
        self.n += n
        if self.enabled and not self.closed:
            now = time.monotonic()
            if self._last_draw is None or now - self._last_draw >= self.min_interval:
                self._draw(now)

    def set_postfix(self, text):
        """Text shown after the rate and ETA, e.g. ``"auc=0.82"`` (drawn with the next
        redraw)."""
        self.postfix = str(text)

    def close(self):
        """Draw the final state and end the line (nothing when disabled). Idempotent."""
        if self.closed:
            return
        if self.enabled:
            self._draw(time.monotonic())
            self.file.write("\n")
            self.file.flush()
        self.closed = True

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    # -- drawing ----------------------------------------------------------------------
    def format_line(self, now=None):
        """The line as it would be drawn now."""
        now = time.monotonic() if now is None else now
        elapsed = max(now - self._start, 1e-9)
        rate = self.n / elapsed
        parts = [self.desc] if self.desc else []
        label = "" if self.unit == "bytes" else f" {self.unit}"
        done = format_count(self.n, self.unit)
        if self.total is not None:
            parts.append(f"{done}/{format_count(self.total, self.unit)}{label}")
            frac = self.n / self.total if self.total else 1.0
            parts.append(f"{100.0 * frac:5.1f}%")
        else:
            parts.append(f"{done}{label}")
        parts.append(format_rate(rate, self.unit))
        if self.total is not None:
            remaining = max(self.total - self.n, 0)
            eta = format_duration(remaining / rate) if rate > 0 else "?"
            parts.append(f"ETA {eta}")
        parts.append(f"elapsed {format_duration(elapsed)}")
        if self.postfix:
            parts.append(self.postfix)
        return "  ".join(parts)

    def _draw(self, now):
        line = self.format_line(now)
        pad = " " * max(0, self._last_len - len(line))
        self.file.write("\r" + line + pad)
        self.file.flush()
        self._last_len = len(line)
        self._last_draw = now
