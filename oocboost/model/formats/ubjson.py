"""A bounded decoder of UBJSON (Universal Binary JSON, https://ubjson.org), the binary
form of XGBoost's model (``Booster.save_model("m.ubj")``): big-endian numbers, strings
with a typed length, and the optimized containers XGBoost writes for its arrays
(``[$d#L<n>`` and the like), which come back as NumPy arrays.

The bytes are untrusted: every length is checked against what is left, nesting is
bounded (:data:`MAX_DEPTH`), and a fault is a :class:`~oocboost.errors.ModelError`
naming the file and the byte offset.
"""
from __future__ import annotations

import struct

import numpy as np

from ...errors import ModelError

#: Deepest nesting of arrays and objects accepted (XGBoost's models nest 6 levels).
MAX_DEPTH = 64
#: Number markers -> big-endian NumPy dtype.
_NUMBERS = {b"i": ">i1", b"U": ">u1", b"I": ">i2", b"l": ">i4", b"L": ">i8", b"d": ">f4",
            b"D": ">f8"}
_CONSTANTS = {b"Z": None, b"T": True, b"F": False}


class _Reader:
    def __init__(self, data: bytes, where: str):
        self.data, self.pos, self.where = data, 0, where

    def fail(self, message):
        raise ModelError(f"{self.where}: not valid UBJSON at byte {self.pos}: {message}")

    def take(self, n):
        if n < 0 or self.pos + n > len(self.data):
            self.fail(f"{n} bytes wanted, {len(self.data) - self.pos} left")
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def marker(self):
        m = self.take(1)
        while m == b"N":                                  # no-op
            m = self.take(1)
        return m

    def number(self, m):
        dtype = np.dtype(_NUMBERS[m])
        value = np.frombuffer(self.take(dtype.itemsize), dtype=dtype)[0]
        return float(value) if dtype.kind == "f" else int(value)

    def length(self):
        m = self.marker()
        if m not in _NUMBERS or m in (b"d", b"D"):
            self.fail(f"a length must be an integer, got marker {m!r}")
        n = self.number(m)
        if n < 0:
            self.fail(f"negative length {n}")
        return n

    def string(self):
        try:
            return self.take(self.length()).decode("utf-8")
        except UnicodeDecodeError:
            self.fail("a string is not UTF-8")

    def value(self, m, depth):
        if m in _NUMBERS:
            return self.number(m)
        if m in _CONSTANTS:
            return _CONSTANTS[m]
        if m == b"S":
            return self.string()
        if m == b"C":
            return self.take(1).decode("latin-1")
        if m == b"H":
            text = self.string()
            try:
                return float(text)
            except ValueError:
                self.fail(f"high-precision number {text!r}")
        if m in (b"[", b"{"):
            if depth >= MAX_DEPTH:
                self.fail(f"nested deeper than {MAX_DEPTH} levels")
            return self.container(m == b"{", depth + 1)
        self.fail(f"unknown marker {m!r}")

    def container(self, is_object, depth):
        kind = count = None
        m = self.data[self.pos:self.pos + 1]
        if m == b"$":
            self.pos += 1
            kind = self.marker()
            if self.marker() != b"#":
                self.fail("a typed container needs a count")
            count = self.length()
        elif m == b"#":
            self.pos += 1
            count = self.length()
        if kind in _NUMBERS and not is_object:
            dtype = np.dtype(_NUMBERS[kind])
            raw = self.take(count * dtype.itemsize)
            return np.frombuffer(raw, dtype=dtype).astype(dtype.newbyteorder("="))
        if count is not None and count > len(self.data) - self.pos:
            self.fail(f"a count of {count} items, more than the bytes left")
        out = {} if is_object else []
        i = 0
        while True:
            if count is None:
                m = self.marker() if kind is None else None
                if m in (b"}", b"]"):
                    return out
                if is_object:
                    self.pos -= 1
            elif i == count:
                return out
            i += 1
            if is_object:
                key = self.string()
                out[key] = self.value(kind or self.marker(), depth)
            else:
                out.append(self.value(kind or (m if count is None else self.marker()),
                                      depth))


def decode(data: bytes, where: str):
    """The document in ``data`` (one UBJSON value), or ModelError naming ``where``."""
    reader = _Reader(data, where)
    try:
        doc = reader.value(reader.marker(), 0)
    except (struct.error, ValueError, IndexError) as exc:
        reader.fail(str(exc))
    if reader.pos != len(data):
        reader.fail(f"{len(data) - reader.pos} bytes after the document")
    return doc


#: NumPy dtype kind+size -> UBJSON marker of a typed array.
_MARKERS = {np.dtype(v).newbyteorder("=").str: k for k, v in _NUMBERS.items()}


def encode(doc) -> bytes:
    """``doc`` (dicts, lists, strings, ints, floats, bools, None, and NumPy arrays, which
    become typed arrays of their dtype) as UBJSON, numbers big-endian, as XGBoost writes
    it: ints as int64, floats as float64, lengths as int64."""
    out: list[bytes] = []
    _encode(doc, out)
    return b"".join(out)


def _length(n: int) -> bytes:
    return b"L" + struct.pack(">q", n)


def _encode(value, out):
    if isinstance(value, dict):
        out.append(b"{")
        for key, item in value.items():
            raw = str(key).encode("utf-8")
            out += [_length(len(raw)), raw]
            _encode(item, out)
        out.append(b"}")
    elif isinstance(value, np.ndarray):
        native = value.dtype.newbyteorder("=").str
        if value.ndim != 1 or native not in _MARKERS:
            raise ValueError(f"no UBJSON typed array for {value.dtype} of shape "
                             f"{value.shape}")
        out += [b"[$", _MARKERS[native], b"#", _length(value.shape[0]),
                value.astype(value.dtype.newbyteorder(">")).tobytes()]
    elif isinstance(value, (list, tuple)):
        out.append(b"[")
        for item in value:
            _encode(item, out)
        out.append(b"]")
    elif isinstance(value, str):
        raw = value.encode("utf-8")
        out += [b"S", _length(len(raw)), raw]
    elif value is None or isinstance(value, bool):
        out.append({None: b"Z", True: b"T", False: b"F"}[value])
    elif isinstance(value, (int, np.integer)):
        out += [b"L", struct.pack(">q", int(value))]
    elif isinstance(value, (float, np.floating)):
        out += [b"D", struct.pack(">d", float(value))]
    else:
        raise ValueError(f"no UBJSON form for {type(value).__name__}")
