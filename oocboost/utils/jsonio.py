"""The one reader of JSON that comes from disk: manifests, model files, shard lists.

Everything it reads is untrusted until checked, so it refuses before parsing: a path
that is not a regular file (a FIFO would block the read forever, a device would never
end), a file over the caller's size bound, bytes that are not UTF-8, nesting deeper than
:data:`MAX_DEPTH` (Python's parser would raise ``RecursionError`` from deep inside), and
``NaN``/``Infinity`` or numbers that overflow float64. Each refusal is the caller's error
class, naming the file.
"""
import json
import math
import os
import re
import stat

import numpy as np

#: Deepest nesting of arrays and objects accepted. Ours nest at most 6 levels (a model's
#: trees' arrays of arrays); the bound only keeps the parser out of deep recursion.
MAX_DEPTH = 64

#: A whole JSON string, written as runs of plain characters between escapes: the
#: alternation of one character or one escape a step took 0.80 s on the 14 MB manifest
#: of a 5,000-column cache (edges as base64 text), this 0.12 s.
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
#: Outside strings, what a float that overflows float64 needs: an exponent of 100 or
#: more, or (found by :func:`_may_overflow`) 200 digits in a row. Without either every
#: number is below 10^300 and the C parser reads the floats: a per-float check took 2 of
#: the 3 s that reading a 5,000-column cache's 23 MB manifest took.
_BIG_EXPONENT = re.compile(rb"[eE]\+?0*[1-9]\d\d")
_DIGITS_AS_ZERO = bytes.maketrans(b"123456789", b"000000000")


def _without_strings(data: bytes) -> bytes:
    """JSON bytes with every string emptied (``""``), so brackets and digits inside
    strings count for nothing."""
    return _STRING.sub(b'""', data)


def _may_overflow(bare: bytes) -> bool:
    """Whether JSON without strings (:func:`_without_strings`) may hold a float that
    overflows float64."""
    return bool(_BIG_EXPONENT.search(bare)) or b"0" * 200 in bare.translate(_DIGITS_AS_ZERO)


def _finite_float(text):
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"number {text} overflows float64")
    return value


def _reject_constant(name):
    raise ValueError(f"{name} is not valid JSON")


def nesting_depth(data: bytes) -> int:
    """Deepest nesting of ``[`` and ``{`` in JSON bytes, strings skipped. Linear in the
    bytes, no recursion."""
    return _depth(_without_strings(data))


#: Bytes :func:`_depth` looks at a time (its temporaries are a few times that).
_DEPTH_CHUNK_BYTES = 1 << 22


def _depth(bare: bytes) -> int:
    codes = np.frombuffer(bare, np.uint8)
    depth = deepest = 0
    for start in range(0, len(codes), _DEPTH_CHUNK_BYTES):
        chunk = codes[start:start + _DEPTH_CHUNK_BYTES]
        opens = (chunk == ord("[")) | (chunk == ord("{"))
        at = np.flatnonzero(opens | (chunk == ord("]")) | (chunk == ord("}")))
        if len(at):
            levels = depth + np.cumsum(np.where(opens[at], 1, -1))
            deepest = max(deepest, int(levels.max()))
            depth = int(levels[-1])
    return deepest


def read_bytes(path, *, max_bytes, error, what):
    """The bytes of the regular file ``path`` (at most ``max_bytes``), else ``error``.

    Opens without following a FIFO's writer (``O_NONBLOCK``) and checks the opened file
    is regular before reading a byte.
    """
    name = os.fspath(path)
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise error(f"cannot read {what} {name}: it does not exist") from None
    except OSError as exc:
        raise error(f"cannot read {what} {name}: {exc.strerror or exc}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise error(f"{what} {name} is not a regular file")
        if info.st_size > max_bytes:
            raise error(f"{what} {name} is larger than the {max_bytes:,} bytes accepted "
                        f"({info.st_size:,} bytes)")
        with os.fdopen(fd, "rb", closefd=False) as fh:
            data = fh.read(max_bytes + 1)
    except OSError as exc:
        raise error(f"cannot read {what} {name}: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    if len(data) > max_bytes:  # grew while read
        raise error(f"{what} {name} is larger than the {max_bytes:,} bytes accepted")
    return data


def parse(data: bytes, *, error, where, object_hook=None):
    """JSON bytes as Python objects, or ``error`` naming ``where`` and the fault.
    ``object_hook`` is ``json.loads``'s (each object as it is parsed)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise error(f"{where} is not UTF-8 text (byte {exc.start})") from None
    bare = _without_strings(data)
    del data
    if _depth(bare) > MAX_DEPTH:
        raise error(f"{where} is not valid JSON for oocboost: nested deeper than "
                    f"{MAX_DEPTH} levels")
    checked = {"parse_float": _finite_float} if _may_overflow(bare) else {}
    del bare
    try:
        return json.loads(text, parse_constant=_reject_constant, object_hook=object_hook,
                          **checked)
    except RecursionError:
        raise error(f"{where} is not valid JSON for oocboost: nested too deeply") from None
    except ValueError as exc:
        raise error(f"{where} is not valid JSON (truncated or corrupted?): {exc}") from None


def read_json(path, *, max_bytes, error, what, object_hook=None):
    """:func:`read_bytes` then :func:`parse`: the one way a JSON file is read. The bytes
    are handed over, not kept, so :func:`parse` frees them once decoded."""
    return parse(read_bytes(path, max_bytes=max_bytes, error=error, what=what),
                 error=error, where=f"{what} {os.fspath(path)}", object_hook=object_hook)
