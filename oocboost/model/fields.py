"""Reading a model file field by field: every field is checked (type, range, length)
or refused with a :class:`~oocboost.errors.ModelError` that names where it is.
"""
import math

import numpy as np

from ..errors import ModelError

INT32_MAX = int(np.iinfo(np.int32).max)


def read_int(d, key, where, lo, hi, optional=False):
    if key not in d:
        if optional:
            return None
        raise ModelError(f"{where}: missing key {key!r}")
    v = d[key]
    if optional and v is None:
        return None
    if not isinstance(v, int) or isinstance(v, bool):
        raise ModelError(f"{where}: {key!r} must be an integer, got {type(v).__name__}")
    if not lo <= v <= hi:
        raise ModelError(f"{where}: {key!r} = {v} is outside [{lo}, {hi}]")
    return v


def read_typed(d, key, types, where, optional=False):
    if key not in d:
        if optional:
            return None
        raise ModelError(f"{where}: missing key {key!r}")
    v = d[key]
    if optional and v is None:
        return None
    if not isinstance(v, types) or isinstance(v, bool) and bool not in types:
        names = "/".join(t.__name__ for t in types)
        raise ModelError(f"{where}: {key!r} must be {names}, got {type(v).__name__}")
    return v


def compact_lists(d):
    """``json.loads``'s ``object_hook`` for model files: a tree's flat lists of numbers
    (or of booleans) become arrays as soon as the tree is parsed, so the loader holds one
    tree's Python objects at a time (32 bytes a number) instead of every tree's. Lists of
    mixed or other types stay lists, for :func:`read_array` to refuse as before."""
    if "left" not in d or "right" not in d:
        return d
    for key, value in d.items():
        if isinstance(value, list) and value:
            types = set(map(type, value))
            try:
                if types == {int}:
                    d[key] = np.array(value, dtype=np.int64)
                elif types <= {int, float}:
                    d[key] = np.array(value, dtype=np.float64)
                elif types == {bool}:
                    d[key] = np.array(value, dtype=np.bool_)
            except OverflowError:
                pass  # beyond int64: left to read_array's message
    return d


def read_array(d, key, dtype, length, where):
    """A JSON list (or the array :func:`compact_lists` made of it) as an array of
    ``dtype`` with exactly ``length`` items, or ModelError."""
    lst = read_typed(d, key, (list, np.ndarray), where)
    if len(lst) != length:
        raise ModelError(f"{where}: {key!r} has {len(lst)} items, expected {length}")
    dtype = np.dtype(dtype)
    if length == 0:
        return np.zeros(0, dtype=dtype)
    try:
        arr = np.asarray(lst)
    except (ValueError, TypeError, OverflowError):
        arr = None
    kind = None if arr is None or arr.ndim != 1 else arr.dtype.kind
    if dtype.kind == "b":
        ok = kind == "b"
    elif isinstance(lst, list) and bool in set(map(type, lst)):
        ok = False  # numpy reads [0, true] as [0, 1]: a boolean is no number here
    elif dtype.kind == "f":
        ok = kind in ("f", "i")
    else:
        info = np.iinfo(dtype)
        ok = kind == "i" and int(arr.min()) >= info.min and int(arr.max()) <= info.max
    if not ok:
        raise ModelError(f"{where}: {key!r} must be a list of "
                         f"{'booleans' if dtype.kind == 'b' else dtype.name} values")
    arr = arr.astype(dtype)
    if dtype.kind == "f" and not np.all(np.isfinite(arr)):
        raise ModelError(f"{where}: {key!r} holds a non-finite number")
    return arr


def jsonable(obj, path):
    """Free-form params/attributes as plain JSON: numpy scalars and arrays become Python
    numbers and lists, tuples lists, and non-finite floats ``null`` (JSON has no NaN)."""
    if obj is None or isinstance(obj, (bool, str)):
        return obj
    if isinstance(obj, (int, np.integer)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        v = float(obj)
        return v if math.isfinite(v) else None
    if isinstance(obj, np.bool_):
        return bool(obj)
    if isinstance(obj, np.ndarray):
        return jsonable(obj.tolist(), path)
    if isinstance(obj, (list, tuple)):
        return [jsonable(v, f"{path}[{i}]") for i, v in enumerate(obj)]
    if isinstance(obj, dict):
        out = {}
        for k, v in obj.items():
            if not isinstance(k, str):
                raise ModelError(f"{path}: key {k!r} is not a string and cannot be saved "
                                 f"as JSON")
            out[k] = jsonable(v, f"{path}[{k!r}]")
        return out
    raise ModelError(f"{path}: a {type(obj).__name__} cannot be saved as JSON")
