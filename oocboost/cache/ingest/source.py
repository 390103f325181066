"""One stream of record batches from any source: the `Source` and `Batch` types and the
helpers every reader shares (column roles, Arrow types, fingerprints).

Every reader (CSV, Parquet, Arrow IPC, NumPy, pandas, pyarrow) is a :class:`Source`. Its
:meth:`Source.batches` yields :class:`Batch` objects that hold float64 NumPy columns for
numeric features and pyarrow string arrays for categorical ones, so the layers downstream
(sketch, binning) never learn where the data came from.

:func:`~oocboost.cache.ingest.dispatch.open_source` picks the reader.
"""
from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from typing import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ...errors import InputError, ParameterError
from .arrow_numpy import float64_numpy
from .numeric_text import StrayValues, mostly_numbers

NUMERIC = "numeric"
CATEGORICAL = "categorical"

#: Strings read as missing in CSV files when ``na_values`` is None.
DEFAULT_NA_VALUES = ("", "NA", "N/A", "NaN", "nan", "null", "NULL", "None", "?")


@dataclass
class Batch:
    """A slice of consecutive rows of a source.

    Attributes
    ----------
    row_start : int
        Index of the first row among the rows kept so far (dropped bad rows do not count).
    n_rows : int
        Number of rows in the batch.
    numeric : dict[str, np.ndarray]
        Feature name -> float64 array of shape ``(n_rows,)``. NaN is missing; +-inf are kept.
        Arrays may be read-only views of the source's buffers: do not write into them.
    categorical : dict[str, pyarrow.Array]
        Feature name -> pyarrow ``string`` array of length ``n_rows``; null is missing.
    label : np.ndarray or None
        float64, shape ``(n_rows,)`` (``(n_rows, k)`` for a label of ``k`` columns:
        several targets, or an interval's bounds), never NaN.
    weight : np.ndarray or None
        float64, shape ``(n_rows,)``, never NaN.
    group : np.ndarray or None
        float64, shape ``(n_rows,)``, never NaN: the query group id of each row (ranking).
    base_margin : np.ndarray or None
        float64, shape ``(n_rows,)`` or ``(n_rows, k)``, finite: each row's offset
        (XGBoost's ``base_margin``, LightGBM's ``init_score``).
    """

    row_start: int
    n_rows: int
    numeric: dict = field(default_factory=dict)
    categorical: dict = field(default_factory=dict)
    label: np.ndarray | None = None
    weight: np.ndarray | None = None
    group: np.ndarray | None = None
    base_margin: np.ndarray | None = None


#: The columns a source reads besides the features, in the order they are listed.
ROLES = ("label", "weight", "group", "base_margin")
#: Roles that may name several columns (one per target / output).
MULTI_COLUMN_ROLES = ("label", "base_margin")


class Source:
    """A tabular source streamed as :class:`Batch` objects.

    Attributes
    ----------
    name : str
        Absolute path of a file, or ``"<numpy array>"``, ``"<pandas DataFrame>"``, ...
    feature_names : list[str]
        Feature columns in source order (label, weight and dropped columns excluded).
    feature_kinds : list[str]
        ``"numeric"`` or ``"categorical"`` for each feature.
    label_name, weight_name, group_name, base_margin_name : str, list of str or None
        Column names of the label, the sample weight, the query group id and the base
        margin (``"<label>"``, ``"<weight>"``, ``"<group>"``, ``"<base_margin>"`` for
        arrays; a label or base margin of several columns is a list).
    n_bad_rows : int
        Rows dropped in ``on_bad_rows="skip"`` mode; final after a full iteration.
    n_bad_values : dict[str, int]
        Per numeric column, values that were not numbers, read as missing in
        ``on_bad_rows="skip"`` mode (``numeric_text.py``); final after a full iteration.
    n_rows : int or None
        Number of rows kept, None until known (after a full iteration for text files).
    """

    name: str = "<source>"
    label_name: str | None = None
    weight_name: str | None = None
    group_name: str | None = None
    base_margin_name: str | list[str] | None = None
    #: Text columns read as categories by the ``categorical="auto"`` rule on their first
    #: batch (a build checks over the whole pass that they are not numbers after all).
    auto_text_columns: frozenset = frozenset()

    def __init__(self):
        self.feature_names: list[str] = []
        self.feature_kinds: list[str] = []
        self.n_bad_rows = 0
        self.n_bad_values: dict[str, int] = {}
        self.n_rows: int | None = None

    def batches(self) -> Iterator[Batch]:  # pragma: no cover - abstract
        """Stream the source from its first row; may be called more than once."""
        raise NotImplementedError

    def fingerprint(self) -> dict:  # pragma: no cover - abstract
        """JSON-able identity of the data, to tell whether a cache is stale."""
        raise NotImplementedError

    def roles(self):
        """``[(role, column name)]`` of the label, weight and group columns it has, one
        entry per column (a label of several columns has several)."""
        return [(role, name) for role in ROLES
                for name in column_names(getattr(self, f"{role}_name"))]

    def set_roles(self, batch, values, skip=()):
        """Set ``batch.label`` etc. from ``values`` (column name -> float64 array),
        stacking a label of several columns into ``(n_rows, k)``; roles in ``skip`` are
        left to the caller."""
        for role in ROLES:
            name = getattr(self, f"{role}_name")
            if name is None or role in skip:
                continue
            if isinstance(name, str):
                setattr(batch, role, values[name])
            else:
                setattr(batch, role, np.column_stack([values[n] for n in name]))

    def __repr__(self):
        return (f"{type(self).__name__}(name={self.name!r}, n_features="
                f"{len(self.feature_names)}, label={self.label_name!r})")


# --------------------------------------------------------------------------------------
# Helpers shared by the readers


def column_names(name):
    """A role's columns: none, one name, or a list of names (a label of several
    columns, e.g. several targets or the bounds of an interval)."""
    if name is None:
        return []
    return [name] if isinstance(name, str) else list(name)


def check_role_names(label, weight, group, base_margin=None):
    """A label or a base margin may name several columns (a list); weight and group
    name one."""
    for role, name in (("weight", weight), ("group", group)):
        if name is not None and not isinstance(name, str) and not hasattr(name, "shape") \
                and isinstance(name, (list, tuple)):
            raise ParameterError(f"{role} must name one column, got {name!r}")
    for role, names in (("label", label), ("base_margin", base_margin)):
        if not isinstance(names, (list, tuple)):
            continue
        if len(names) < 1 or not all(isinstance(n, str) for n in names):
            raise ParameterError(f"{role} must be a column name or a list of column names, "
                                 f"got {names!r}")
        if len(set(names)) != len(names):
            raise ParameterError(f"{role} lists a column twice: {names!r}")


def check_options(*, on_bad_rows, batch_bytes, batch_rows, categorical):
    if on_bad_rows not in ("error", "skip"):
        raise ParameterError(f"on_bad_rows must be 'error' or 'skip', got {on_bad_rows!r}")
    for pname, value in (("batch_bytes", batch_bytes), ("batch_rows", batch_rows)):
        if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < 1:
            raise ParameterError(f"{pname} must be a positive integer, got {value!r}")
    if not (categorical is None or categorical == "auto"
            or (isinstance(categorical, (list, tuple, set, frozenset))
                and all(isinstance(c, str) for c in categorical))):
        raise ParameterError(
            f"categorical must be 'auto', None or a list of column names, got {categorical!r}")


def resolve_columns(source_name, columns, *, label, weight, drop, categorical=None,
                    group=None, base_margin=None):
    """Check the column names of a source and split them into features, label, weight
    and group.

    Parameters
    ----------
    source_name : str
        Used in messages.
    columns : list[str]
        Every column of the source, in order.
    label, weight, group, base_margin : str or None (label and base_margin: or a list)
    drop : iterable of str
    categorical : 'auto', None or list of str

    Returns
    -------
    features : list[str]
        Columns that are neither label, weight, group nor dropped, in source order.
    """
    seen, dups = set(), []
    for c in columns:
        if c in seen and c not in dups:
            dups.append(c)
        seen.add(c)
    if dups:
        raise InputError(f"{source_name}: duplicate column names {dups}; every column "
                         f"name must be unique")
    available = f"available columns: {list(columns)}"
    if isinstance(drop, str):
        drop = [drop]
    drop = list(drop or ())
    check_role_names(label, weight, group, base_margin)
    given = [(r, n) for r, value in (("label", label), ("weight", weight), ("group", group),
                                     ("base_margin", base_margin))
             for n in column_names(value)]
    for role, name in given:
        if name not in seen:
            raise InputError(f"{source_name}: {role} column {name!r} not found; {available}")
    unknown = [d for d in drop if d not in seen]
    if unknown:
        raise InputError(f"{source_name}: columns to drop {unknown} not found; {available}")
    for k, (role, name) in enumerate(given):
        for other, other_name in given[k + 1:]:
            if name == other_name:
                raise ParameterError(f"{role} and {other} are the same column {name!r}")
    if isinstance(categorical, (list, tuple, set, frozenset)):
        unknown = [c for c in categorical if c not in seen]
        if unknown:
            raise InputError(f"{source_name}: categorical columns {unknown} not found; "
                             f"{available}")
        for role, name in given:
            if name in categorical:
                raise InputError(f"{source_name}: the {role} column {name!r} cannot be "
                                 f"categorical; it must be numeric")
    excluded = set(drop) | {name for _, name in given}
    return [c for c in columns if c not in excluded]


def _is_stringlike(t):
    return (pa.types.is_string(t) or pa.types.is_large_string(t)
            or pa.types.is_string_view(t))


def _is_numeric_type(t):
    return (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t)
            or pa.types.is_null(t) or pa.types.is_decimal(t))


def arrow_kind(source_name, name, arrow_type, categorical):
    """Kind of a column from its Arrow type and the ``categorical`` option.

    Strings and dictionaries are categorical (an error when ``categorical`` is None or a
    list that does not name them); bool, integer, float, decimal and all-null columns are
    numeric unless named in a ``categorical`` list; any other type is an InputError.
    """
    named = isinstance(categorical, (list, tuple, set, frozenset)) and name in categorical
    if _is_stringlike(arrow_type) or pa.types.is_dictionary(arrow_type):
        if categorical == "auto" or named:
            return CATEGORICAL
        hint = ("pass categorical='auto'" if categorical is None
                else "add it to the categorical list")
        raise InputError(f"{source_name}: column {name!r} holds text ({arrow_type}) but is "
                         f"not categorical; expected numbers, or {hint}")
    if _is_numeric_type(arrow_type):
        return CATEGORICAL if named else NUMERIC
    raise InputError(f"{source_name}: column {name!r} has unsupported type {arrow_type}; "
                     f"expected numbers (bool/int/float) or strings")


def to_float64(arr):
    """pyarrow array (any numeric type, nulls allowed) -> float64 ndarray, null -> NaN.

    Zero-copy (read-only) when the array is already float64 without nulls.
    """
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks() if arr.num_chunks != 1 else arr.chunk(0)
    if not pa.types.is_float64(arr.type):
        arr = pc.cast(arr, pa.float64())
    return float64_numpy(arr)


def to_string_array(arr):
    """pyarrow array of strings, dictionary or numbers -> pyarrow ``string`` array."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks() if arr.num_chunks != 1 else arr.chunk(0)
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    if not pa.types.is_string(arr.type):
        arr = pc.cast(arr, pa.string())
    return arr


def check_no_missing(source_name, role, column, values, row_start, describe_row):
    """Raise an InputError naming the first NaN of a label, weight or group column (or
    the first value that is not finite, of a base margin)."""
    bad = ~np.isfinite(values) if role == "base_margin" else np.isnan(values)
    if bad.any():
        first = int(np.argmax(bad.reshape(len(values), -1).any(axis=1)))
        what = "missing" if np.isnan(values[first]).any() else "infinite"
        raise InputError(f"{source_name}: {role} column {column!r} is {what} at "
                         f"{describe_row(row_start + first)}; expected a "
                         f"{'finite ' if role == 'base_margin' else ''}number in every row")


def hash_arrow_array(h, arr):
    """Feed the buffers of a pyarrow array (or chunked array) to hashlib object ``h``."""
    chunks = arr.chunks if isinstance(arr, pa.ChunkedArray) else [arr]
    for chunk in chunks:
        h.update(f"{chunk.type}|{chunk.offset}|{len(chunk)}|".encode())
        for buf in chunk.buffers():
            # A sliced array shares whole buffers: hashing them is still deterministic
            # because offset and length are hashed too.
            h.update(b"-" if buf is None else memoryview(buf))
        if pa.types.is_dictionary(chunk.type):
            hash_arrow_array(h, chunk.dictionary)


def hash_ndarray(h, a, chunk_rows=1 << 16):
    """Feed a NumPy array to ``h`` without copying it whole (row chunks when strided)."""
    h.update(f"{a.dtype.str}|{a.shape}|".encode())
    if a.flags.c_contiguous:
        h.update(memoryview(a).cast("B"))
        return
    for start in range(0, a.shape[0], chunk_rows):
        h.update(np.ascontiguousarray(a[start:start + chunk_rows]).data)


def new_hash():
    return hashlib.sha256()


# --------------------------------------------------------------------------------------
# Dispatch


class ArrowBatchSource(Source):
    """Base of the sources whose data arrive as pyarrow record batches (Parquet, Arrow IPC,
    in-memory tables and batch iterables). Subclasses set ``name``, call
    :meth:`_init_schema` and implement :meth:`_record_batches`."""

    OPTIONS = ("label", "weight", "group", "base_margin", "drop", "categorical",
               "batch_rows", "on_bad_rows", "numeric_text")

    def _init_schema(self, schema, *, label, weight, drop, categorical, group=None,
                     base_margin=None, first_batch=None, on_bad_rows="error",
                     numeric_text=None):
        """``first_batch()``: the source's first record batch (or None), read only when
        a text column may be numbers (``numeric_text.py``)."""
        columns = list(schema.names)
        self.feature_names = resolve_columns(self.name, columns, label=label, weight=weight,
                                             drop=drop, categorical=categorical, group=group,
                                             base_margin=base_margin)
        self.feature_kinds = [arrow_kind(self.name, n, schema.field(n).type, categorical)
                              for n in self.feature_names]
        self._stray = StrayValues(self, on_bad_rows == "skip")
        auto_text = [n for n, k in zip(self.feature_names, self.feature_kinds)
                     if k == CATEGORICAL and categorical == "auto"
                     and _is_stringlike(schema.field(n).type)]
        forced = set(numeric_text or ()) & set(auto_text)
        self._string_numeric = forced | numbers_as_text(
            [n for n in auto_text if n not in forced], first_batch)
        self.feature_kinds = [NUMERIC if n in self._string_numeric else k
                              for n, k in zip(self.feature_names, self.feature_kinds)]
        self.auto_text_columns = frozenset(auto_text) - self._string_numeric
        self.label_name, self.weight_name, self.group_name = label, weight, group
        self.base_margin_name = base_margin
        for role, name in self.roles():
            if not _is_numeric_type(schema.field(name).type):
                raise InputError(f"{self.name}: {role} column {name!r} has type "
                                 f"{schema.field(name).type}; expected numbers")
        self._columns = self.feature_names + [name for _, name in self.roles()]

    def _record_batches(self):  # pragma: no cover - abstract
        raise NotImplementedError

    def _describe_row(self, i):
        return f"row {i + 1}"

    def batches(self):
        row_start = 0
        self._stray.start_pass()
        for rb in self._record_batches():
            yield self._convert(rb, row_start)
            row_start += rb.num_rows
        self.n_bad_values = self._stray.finish_pass()
        self.n_rows = row_start

    def _convert(self, rb, row_start):
        """pyarrow RecordBatch (or Table) holding ``self._columns`` -> Batch."""
        col = rb.column
        b = Batch(row_start=row_start, n_rows=rb.num_rows)
        for name, kind in zip(self.feature_names, self.feature_kinds):
            arr = col(name)
            if name in self._string_numeric:
                b.numeric[name] = self._stray.parse(
                    name, arr, lambda i: self._describe_row(row_start + i))
            elif kind == NUMERIC:
                b.numeric[name] = to_float64(arr)
            else:
                b.categorical[name] = to_string_array(arr)
        values = {}
        for role, name in self.roles():
            values[name] = to_float64(col(name))
            check_no_missing(self.name, role, name, values[name], row_start,
                             self._describe_row)
        self.set_roles(b, values)
        return b


def numbers_as_text(names, first_batch):
    """Of the text columns ``names``, those whose values in the first batch
    (``first_batch()``, read only when there are some) are mostly numbers."""
    if not names or first_batch is None:
        return set()
    first = first_batch()
    if first is None:
        return set()
    return {n for n in names if mostly_numbers(first.column(n))}


def slice_batches(rb, batch_rows):
    """Zero-copy slices of at most ``batch_rows`` rows of a RecordBatch."""
    n = rb.num_rows
    if n <= batch_rows:
        if n:
            yield rb
        return
    for start in range(0, n, batch_rows):
        yield rb.slice(start, batch_rows)


def file_fingerprint(path, *, n_samples=64, chunk=4096):
    """Identity of a file: absolute path, size, mtime and a hash of sampled chunks.

    Up to ``n_samples`` chunks of ``chunk`` bytes are read at offsets spread evenly over
    the file (the whole file when it is smaller than ``n_samples * chunk`` bytes), so the
    cost does not grow with the file size.
    """
    st = os.stat(path)
    h = hashlib.sha256()
    with open(path, "rb") as f:
        if st.st_size <= n_samples * chunk:
            h.update(f.read())
        else:
            for off in np.linspace(0, st.st_size - chunk, n_samples).astype(np.int64):
                f.seek(int(off))
                h.update(f.read(chunk))
    return {"kind": "file", "path": os.path.abspath(path), "size": int(st.st_size),
            "mtime_ns": int(st.st_mtime_ns), "sample_sha256": h.hexdigest()}


__all__ = ["Batch", "Source", "DEFAULT_NA_VALUES", "NUMERIC", "CATEGORICAL"]
