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

#: Deepest nesting of arrays and objects accepted. Ours nest at most 6 levels (a model's
#: trees' arrays of arrays); the bound only keeps the parser out of deep recursion.
MAX_DEPTH = 64

#: A whole JSON string (skipped) or one bracket.
_TOKENS = re.compile(rb'"(?:[^"\\]|\\.)*"|[\[\]{}]', re.DOTALL)


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
    depth = deepest = 0
    for match in _TOKENS.finditer(data):
        char = match.group()
        if char in (b"[", b"{"):
            depth += 1
            deepest = max(deepest, depth)
        elif char in (b"]", b"}"):
            depth -= 1
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
    if nesting_depth(data) > MAX_DEPTH:
        raise error(f"{where} is not valid JSON for oocboost: nested deeper than "
                    f"{MAX_DEPTH} levels")
    del data
    try:
        return json.loads(text, parse_constant=_reject_constant,
                          parse_float=_finite_float, object_hook=object_hook)
    except RecursionError:
        raise error(f"{where} is not valid JSON for oocboost: nested too deeply") from None
    except ValueError as exc:
        raise error(f"{where} is not valid JSON (truncated or corrupted?): {exc}") from None


def read_json(path, *, max_bytes, error, what, object_hook=None):
    """:func:`read_bytes` then :func:`parse`: the one way a JSON file is read. The bytes
    are handed over, not kept, so :func:`parse` frees them once decoded."""
    return parse(read_bytes(path, max_bytes=max_bytes, error=error, what=what),
                 error=error, where=f"{what} {os.fspath(path)}", object_hook=object_hook)
