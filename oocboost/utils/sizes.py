"""Sizes in bytes: parse what users type, format what we print.

:func:`parse_size` reads ``512M``, ``512MB``, ``512MiB``, ``2G``, ``1.5GB``, ``300k``.
All units are **binary**: ``k``/``K``/``KB``/``KiB`` = 1024 bytes, ``M``/``MB``/``MiB`` =
1024**2, ``G`` = 1024**3, ``T`` = 1024**4. ``MB`` means MiB here, as in ``ulimit``, Java's
``-Xmx`` and most memory limits users type; a bare number is bytes.
"""
import math
import re

from ..errors import ParameterError

KiB = 1024
MiB = 1024**2
GiB = 1024**3

_UNITS = {"": 1, "k": KiB, "m": MiB, "g": GiB, "t": 1024**4}
_SIZE_RE = re.compile(r"^\s*([0-9]+(?:\.[0-9]*)?|\.[0-9]+)\s*([kmgt]?)(i?b)?\s*$", re.I)


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
        raise ParameterError(
            f"a memory size must be a number of bytes or a string like '512M', got {value!r}"
        )
    if isinstance(value, int) or (
        hasattr(value, "dtype") and getattr(value.dtype, "kind", "") in "iu"
    ):
        n = int(value)
        if n < 0:
            raise ParameterError(f"a memory size cannot be negative, got {n}")
        return n
    if isinstance(value, float):
        if not math.isfinite(value) or value < 0:
            raise ParameterError(
                f"a memory size must be a finite non-negative number, got {value!r}"
            )
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
        f"a memory size must be an int (bytes) or a string like '512M', got "
        f"{type(value).__name__}"
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
