"""Arrow arrays as NumPy, read from their buffers.

Not ``Array.to_numpy`` or ``np.asarray(array)`` for arrays with nulls or of booleans,
nor a scalar made from a Python value (``pa.scalar``, ``fill_null(arr, True)``): their
first call imports pandas when it is installed, 0.3-0.5 s that a small build waited for
(a CSV with text and missing values went through three of them).
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa


def _bitmap(buffer: pa.Buffer | None, offset: int, n: int) -> np.ndarray | None:
    """``n`` bits of a bitmap from bit ``offset`` as bool, or None without a buffer
    (only the bytes of the slice: a slice shares its parent's whole bitmap)."""
    if buffer is None:
        return None
    first, skip = divmod(offset, 8)
    bits = np.frombuffer(buffer, np.uint8, (skip + n + 7) // 8, first)
    return np.unpackbits(bits, count=skip + n, bitorder="little")[skip:].astype(bool)


def valid_mask(arr: pa.Array) -> np.ndarray:
    """(n,) bool: True where ``arr`` holds a value (not null)."""
    if arr.null_count == 0:
        return np.ones(len(arr), bool)
    return _bitmap(arr.buffers()[0], arr.offset, len(arr))


def bool_values(arr: pa.Array) -> np.ndarray:
    """(n,) bool values of a boolean array (False where null)."""
    values = _bitmap(arr.buffers()[1], arr.offset, len(arr))
    return values & valid_mask(arr) if arr.null_count else values


def null_scalar(arrow_type: pa.DataType) -> pa.Scalar:
    """A null scalar of ``arrow_type`` (``pa.scalar(None, type)`` imports pandas)."""
    return pa.nulls(1, arrow_type)[0]


def float64_numpy(arr: pa.Array) -> np.ndarray:
    """A float64 pyarrow array as NumPy, nulls as NaN, read-only; zero-copy when it has
    no nulls."""
    if len(arr) == 0:
        out = np.empty(0)
        out.flags.writeable = False  # as every other result: one compiled variant
        return out
    out = np.frombuffer(arr.buffers()[1], np.float64, len(arr), 8 * arr.offset)
    if arr.null_count:
        out = np.where(valid_mask(arr), out, np.nan)
    # read-only, as to_numpy's: the kernels keep the one compiled variant they had
    # (a writable array is another signature, compiled again, with its own rounding)
    out.flags.writeable = False
    return out


def int_numpy(arr: pa.Array, null: int = 0, dtype: type = np.int64) -> np.ndarray:
    """An integer array's values as ``dtype`` (a new array), ``null`` where null."""
    if len(arr) == 0:
        return np.zeros(0, dtype)
    out = np.frombuffer(arr.buffers()[1], arr.type.to_pandas_dtype(), len(arr),
                        arr.type.bit_width // 8 * arr.offset).astype(dtype)
    if arr.null_count:
        out[~valid_mask(arr)] = null
    return out


def int64_array(values: np.ndarray) -> pa.Array:
    """An Arrow int64 array over a NumPy array's buffer (``pa.array`` of NumPy imports
    pandas)."""
    values = np.ascontiguousarray(values, np.int64)
    return pa.Array.from_buffers(pa.int64(), len(values), [None, pa.py_buffer(values)])


def float64_array(values: np.ndarray) -> pa.Array:
    """An Arrow float64 array over a NumPy array's buffer (as :func:`int64_array`)."""
    values = np.ascontiguousarray(values, np.float64)
    return pa.Array.from_buffers(pa.float64(), len(values), [None, pa.py_buffer(values)])


def string_array(values: list) -> pa.Array:
    """An Arrow string array of Python strings, built from its buffers (``pa.array`` of
    a list imports pandas)."""
    if not all(isinstance(v, str) for v in values):
        return pa.array(values, type=pa.string())    # None and the rest: pyarrow's rules
    data = [v.encode("utf-8") for v in values]
    offsets = np.zeros(len(data) + 1, np.int64)
    np.cumsum([len(d) for d in data], out=offsets[1:])
    if offsets[-1] >= 2 ** 31:
        return pa.array(values, type=pa.string())
    return pa.Array.from_buffers(pa.string(), len(data),
                                 [None, pa.py_buffer(offsets.astype(np.int32)),
                                  pa.py_buffer(b"".join(data))])
