"""In-memory sources: NumPy arrays, pandas DataFrames, pyarrow tables and batch iterables.

Each is sliced into batches of ``batch_rows`` rows; only one batch at a time is ever
converted (copied), never the whole source.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from ...errors import InputError, ParameterError
from .numeric_text import StrayValues, mostly_numbers
from .source import (
    CATEGORICAL,
    MULTI_COLUMN_ROLES,
    NUMERIC,
    ArrowBatchSource,
    Batch,
    Source,
    check_no_missing,
    column_names,
    hash_arrow_array,
    hash_ndarray,
    new_hash,
    resolve_columns,
    slice_batches,
    to_float64,
    to_string_array,
)

_ARRAY_LABEL = "<label>"
_ARRAY_WEIGHT = "<weight>"
_ARRAY_NAMES = {"label": _ARRAY_LABEL, "weight": _ARRAY_WEIGHT, "group": "<group>",
                "base_margin": "<base_margin>"}


def _row_name(i):
    return f"row {i + 1}"


def _as_1d_float(source_name, role, values, n_rows):
    """An array-like label/weight/group -> float64 (n_rows,) with a clear error
    otherwise."""
    try:
        import pandas as pd
        if isinstance(values, (pd.Series, pd.Index)):
            values = values.to_numpy(dtype=np.float64, na_value=np.nan)
    except ImportError:  # without pandas there is no Series to convert
        pass
    if isinstance(values, (pa.Array, pa.ChunkedArray)):
        values = to_float64(values)
    a = np.asarray(values)
    if a.dtype.kind not in "biuf":
        raise InputError(f"{source_name}: {role} array has dtype {a.dtype}; expected numbers")
    a = a.astype(np.float64, copy=False)
    if role in MULTI_COLUMN_ROLES and a.ndim == 2 and a.shape[0] == n_rows \
            and a.shape[1] >= 1:
        # several targets, an interval's bounds or a margin per output: one column each
        if a.shape[1] == 1:
            a = a[:, 0]
        for j in range(a.shape[1] if a.ndim == 2 else 0):
            check_no_missing(source_name, role, f"{_ARRAY_NAMES[role]}[:, {j}]", a[:, j], 0,
                             _row_name)
        if a.ndim == 2:
            return np.ascontiguousarray(a)
    if a.ndim != 1 or a.shape[0] != n_rows:
        raise InputError(f"{source_name}: {role} array has shape {a.shape}; expected "
                         f"({n_rows},), one value per row"
                         + (f", or ({n_rows}, k) for k {role} columns"
                            if role in MULTI_COLUMN_ROLES else ""))
    check_no_missing(source_name, role, _ARRAY_NAMES[role], a, 0, _row_name)
    return a


def _split_roles(source_name, n_rows, **given):
    """``(arrays, names)``: the roles given as arrays (checked float64 copies) and every
    role's column name (``"<label>"`` and so on for an array, None when not given)."""
    arrays, names = {}, {}
    for role, value in given.items():
        if _is_array_like(value):
            arrays[role] = _as_1d_float(source_name, role, value, n_rows)
            names[role] = _ARRAY_NAMES[role]
            if role == "base_margin" and arrays[role].ndim == 2:   # one name per output
                names[role] = [f"{names[role]}[{k}]" for k in range(arrays[role].shape[1])]
        else:
            names[role] = value
    return arrays, names


def _column_roles(arrays, names):
    """The roles read from columns of the source: ``{role: column name or None}``."""
    return {role: None if role in arrays else name for role, name in names.items()}


def _is_number_dtype(dtype):
    import pandas as pd

    return pd.api.types.is_bool_dtype(dtype) or pd.api.types.is_numeric_dtype(dtype)


def _is_array_like(x):
    names = isinstance(x, (list, tuple)) and len(x) > 0 and all(isinstance(v, str)
                                                                 for v in x)
    return x is not None and not isinstance(x, str) and not names


class NumpySource(Source):
    """A 2-D NumPy array of numbers (bool, int or float; NaN is missing).

    Columns are features ``f0 .. f{n-1}`` unless ``feature_names`` is given. ``label`` and
    ``weight`` are 1-D arrays of length ``n_rows`` or names of columns among
    ``feature_names``. ``categorical`` may name columns to treat as categories (their values
    are turned into strings such as ``"3"`` or ``"2.5"``).
    """

    OPTIONS = ("label", "weight", "group", "base_margin", "drop", "categorical",
               "batch_rows",
               "feature_names")
    name = "<numpy array>"

    def __init__(self, X, *, label=None, weight=None, drop=(), categorical="auto",
                 batch_rows=65536, feature_names=None, group=None,
                 base_margin=None):
        super().__init__()
        if X.ndim != 2:
            raise InputError(f"{self.name}: expected a 2-D array, got shape {X.shape}")
        if X.dtype.kind not in "biuf":
            raise InputError(f"{self.name}: array has dtype {X.dtype}; expected a numeric "
                             f"dtype (object and string arrays are not supported: use a "
                             f"DataFrame or a pyarrow Table for text columns)")
        n_rows, n_cols = X.shape
        if feature_names is None:
            columns = [f"f{j}" for j in range(n_cols)]
        else:
            columns = [str(c) for c in feature_names]
            if len(columns) != n_cols:
                raise ParameterError(f"feature_names has {len(columns)} names but the array "
                                     f"has {n_cols} columns")
        self._X = X
        self._batch_rows = batch_rows
        self.n_rows = n_rows
        arrays, names = _split_roles(self.name, n_rows, label=label, weight=weight,
                                     group=group, base_margin=base_margin)
        features = resolve_columns(self.name, columns, drop=drop, categorical=categorical,
                                   **_column_roles(arrays, names))
        named = categorical if isinstance(categorical, (list, tuple, set, frozenset)) else ()
        self.feature_names = features
        self.feature_kinds = [CATEGORICAL if f in named else NUMERIC for f in features]
        self.label_name, self.weight_name = names["label"], names["weight"]
        self.group_name = names["group"]
        self.base_margin_name = names["base_margin"]
        self._index = {c: j for j, c in enumerate(columns)}
        self._arrays = arrays

    def _wanted(self):
        """Matrix columns read: the features, then the roles given by name."""
        wanted = [self._index[f] for f in self.feature_names]
        return wanted + [self._index[name] for role, name in self.roles()
                         if role not in self._arrays]

    def batches(self):
        X = self._X
        wanted = self._wanted()
        for start in range(0, X.shape[0], self._batch_rows):
            stop = min(start + self._batch_rows, X.shape[0])
            # One transposed copy per batch gives contiguous float64 columns.
            block = np.array(X[start:stop, wanted].T, dtype=np.float64, order="C")
            yield self._batch(block, start, stop)

    def _batch(self, block, start, stop):
        """The Batch of rows ``[start, stop)`` from their ``(columns, rows)`` block (the
        features, then the roles read from the matrix)."""
        b = Batch(row_start=start, n_rows=stop - start)
        for k, (f, kind) in enumerate(zip(self.feature_names, self.feature_kinds)):
            if kind == NUMERIC:
                b.numeric[f] = block[k]
            else:
                b.categorical[f] = pc_to_string(block[k])
        k = len(self.feature_names)
        values = {}
        for role, name in self.roles():
            if role not in self._arrays:
                values[name] = block[k]
                k += 1
                check_no_missing(self.name, role, name, values[name], start, _row_name)
        self.set_roles(b, values, skip=self._arrays)
        for role, array in self._arrays.items():
            setattr(b, role, array[start:stop])
        return b

    def fingerprint(self):
        h = new_hash()
        hash_ndarray(h, self._X)
        h.update(repr((self.feature_names, self.feature_kinds, self.roles())).encode())
        _hash_role_arrays(h, self._arrays)
        return {"kind": "memory", "sha256": h.hexdigest()}


def is_scipy_sparse(data) -> bool:
    """A SciPy sparse matrix or array (CSR, CSC, COO, ...), without importing SciPy."""
    return type(data).__module__.startswith("scipy.sparse") and hasattr(data, "tocsr")


def sparse_chunk_rows(n_columns: int, cap: int = 65536) -> int:
    """Rows of a sparse matrix densified at once: about 32 MiB of float64 (absent
    entries are zeros, so a block is as large as a dense one)."""
    return max(256, min(cap, (32 << 20) // (8 * max(n_columns, 1))))


class ScipySparseSource(NumpySource):
    """A SciPy sparse matrix (CSR, CSC, COO, ...): features ``f0 .. f{n-1}`` (or
    ``feature_names``), absent entries 0.0 and stored NaNs missing, as the dense matrix
    ``X.toarray()`` reads; densified block by block (``sparse_chunk_rows``), never
    whole. Roles are 1-D arrays (or columns of the matrix, by name)."""

    name = "<scipy sparse matrix>"

    def __init__(self, X, *, label=None, weight=None, drop=(), categorical="auto",
                 batch_rows=65536, feature_names=None, group=None,
                 base_margin=None):
        if X.dtype.kind not in "biuf":
            raise InputError(f"{self.name}: dtype {X.dtype}; expected numbers")
        X = X.tocsr()
        X.sum_duplicates()   # a COO's repeated entries add up, as toarray() does
        super().__init__(_ShapeOnly(X), label=label, weight=weight, drop=drop,
                         categorical=categorical, feature_names=feature_names,
                         batch_rows=sparse_chunk_rows(X.shape[1], batch_rows), group=group,
                         base_margin=base_margin)
        self._X = X

    def batches(self):
        X = self._X
        wanted = self._wanted()
        for start in range(0, X.shape[0], self._batch_rows):
            stop = min(start + self._batch_rows, X.shape[0])
            block = np.array(X[start:stop][:, wanted].toarray().T, dtype=np.float64,
                             order="C")
            yield self._batch(block, start, stop)

    def fingerprint(self):
        h = new_hash()
        for part in (self._X.data, self._X.indices, self._X.indptr,
                     np.asarray(self._X.shape)):
            hash_ndarray(h, np.ascontiguousarray(part))
        h.update(repr((self.feature_names, self.feature_kinds, self.roles())).encode())
        _hash_role_arrays(h, self._arrays)
        return {"kind": "memory", "sha256": h.hexdigest()}


class _ShapeOnly:
    """What ``NumpySource.__init__`` reads of a matrix: its shape, ndim and dtype."""

    def __init__(self, X):
        self.shape, self.ndim, self.dtype = X.shape, 2, X.dtype


def _hash_role_arrays(h, arrays):
    for role in sorted(arrays):
        h.update(role.encode())
        hash_ndarray(h, arrays[role])


def pc_to_string(values):
    """float64 ndarray -> pyarrow string array, NaN -> null."""
    return to_string_array(pa.array(values, from_pandas=True))


class PandasSource(Source):
    """A pandas DataFrame; category, object and string columns are categorical.

    Numeric columns (bool, int, float and the nullable extension types) are numeric, with
    ``pd.NA`` read as NaN. Datetime, timedelta, period and other columns are an InputError.
    """

    OPTIONS = ("label", "weight", "group", "base_margin", "drop", "categorical",
               "batch_rows", "on_bad_rows", "numeric_text")
    name = "<pandas DataFrame>"

    def __init__(self, df, *, label=None, weight=None, drop=(), categorical="auto",
                 batch_rows=65536, group=None, base_margin=None, on_bad_rows="error",
                 numeric_text=None):
        import pandas as pd

        super().__init__()
        columns = list(df.columns)
        if not all(isinstance(c, str) for c in columns):
            # Column labels become names in the model: strings keep them unambiguous.
            columns = [str(c) for c in columns]
        n_rows = len(df)
        self._df = df
        self._batch_rows = batch_rows
        self.n_rows = n_rows
        arrays, names = _split_roles(self.name, n_rows, label=label, weight=weight,
                                     group=group, base_margin=base_margin)
        self.feature_names = resolve_columns(self.name, columns, drop=drop,
                                             categorical=categorical,
                                             **_column_roles(arrays, names))
        self._pos = {c: j for j, c in enumerate(columns)}
        named = categorical if isinstance(categorical, (list, tuple, set, frozenset)) else ()
        kinds, auto_text = [], []
        for f in self.feature_names:
            dtype = df.dtypes.iloc[self._pos[f]]
            if pd.api.types.is_bool_dtype(dtype) or pd.api.types.is_numeric_dtype(dtype):
                kinds.append(CATEGORICAL if f in named else NUMERIC)
            elif (isinstance(dtype, pd.CategoricalDtype) or pd.api.types.is_string_dtype(dtype)
                  or dtype == object):
                if f in named or (categorical == "auto"
                                  and isinstance(dtype, pd.CategoricalDtype)):
                    kinds.append(CATEGORICAL)
                elif categorical == "auto":
                    # numbers held as text (an object column with a stray string):
                    # numeric, as a CSV column (numeric_text.py)
                    first = self._text(f, self._column(f, 0, batch_rows))
                    numbers = f in (numeric_text or ()) or mostly_numbers(first)
                    kinds.append(NUMERIC if numbers else CATEGORICAL)
                    if not numbers:
                        auto_text.append(f)
                else:
                    raise InputError(f"{self.name}: column {f!r} has dtype {dtype} (text) but "
                                     f"is not categorical; expected numbers, or name it in "
                                     f"categorical")
            else:
                raise InputError(f"{self.name}: column {f!r} has unsupported dtype {dtype}; "
                                 f"expected numbers, strings or categories")
        self.feature_kinds = kinds
        self.auto_text_columns = frozenset(auto_text)
        self._string_numeric = {f for f, k in zip(self.feature_names, kinds)
                                if k == NUMERIC and not _is_number_dtype(df.dtypes.iloc[
                                    self._pos[f]])}
        self._stray = StrayValues(self, on_bad_rows == "skip")
        for role, value in _column_roles(arrays, names).items():
            for name in column_names(value):
                dtype = df.dtypes.iloc[self._pos[name]]
                if not (pd.api.types.is_numeric_dtype(dtype)
                        or pd.api.types.is_bool_dtype(dtype)):
                    raise InputError(f"{self.name}: {role} column {name!r} has dtype "
                                     f"{dtype}; expected numbers")
        self.label_name, self.weight_name = names["label"], names["weight"]
        self.group_name = names["group"]
        self.base_margin_name = names["base_margin"]
        self._arrays = arrays

    def _column(self, name, start, stop):
        return self._df.iloc[start:stop, self._pos[name]]

    def _text(self, name, series):
        """A text (object or string) column as a pyarrow array; an object column mixing
        numbers and strings is read as the strings they print as."""
        try:
            return pa.array(series, from_pandas=True)
        except (pa.ArrowException, TypeError, ValueError):
            pass
        try:
            return pa.array(series.astype("string"), from_pandas=True)
        except (pa.ArrowException, TypeError, ValueError) as e:
            raise InputError(f"{self.name}: column {name!r} cannot be read as text ({e}); "
                             f"expected strings") from None

    def _categorical(self, name, series):
        return to_string_array(self._text(name, series))

    def batches(self):
        n = len(self._df)
        self._stray.start_pass()
        for start in range(0, n, self._batch_rows):
            stop = min(start + self._batch_rows, n)
            b = Batch(row_start=start, n_rows=stop - start)
            for f, kind in zip(self.feature_names, self.feature_kinds):
                s = self._column(f, start, stop)
                if f in self._string_numeric:
                    b.numeric[f] = self._stray.parse(
                        f, self._text(f, s), lambda i, at=start: _row_name(at + i))
                elif kind == NUMERIC:
                    b.numeric[f] = s.to_numpy(dtype=np.float64, na_value=np.nan)
                else:
                    b.categorical[f] = self._categorical(f, s)
            values = {}
            for role, name in self.roles():
                if role not in self._arrays:
                    values[name] = self._column(name, start, stop).to_numpy(
                        dtype=np.float64, na_value=np.nan)
                    check_no_missing(self.name, role, name, values[name], start, _row_name)
            self.set_roles(b, values, skip=self._arrays)
            for role, array in self._arrays.items():
                setattr(b, role, array[start:stop])
            yield b
        self.n_bad_values = self._stray.finish_pass()

    def fingerprint(self):
        import pandas as pd

        h = new_hash()
        h.update(repr((self.feature_names, self.feature_kinds, self.roles(),
                       len(self._df))).encode())
        for name in self.feature_names + [n for r, n in self.roles()
                                          if r not in self._arrays]:
            s = self._df.iloc[:, self._pos[name]]
            h.update(name.encode())
            if isinstance(s.dtype, np.dtype) and s.dtype.kind in "biuf":
                hash_ndarray(h, s.to_numpy())
            elif isinstance(s.dtype, pd.CategoricalDtype):
                hash_ndarray(h, s.cat.codes.to_numpy())
                hash_arrow_array(h, pa.array(s.cat.categories.astype(str)))
            else:
                # Object and extension columns: one Arrow column at a time, never Python
                # objects for the whole frame.
                hash_arrow_array(h, self._text(name, s))
        _hash_role_arrays(h, self._arrays)
        return {"kind": "memory", "sha256": h.hexdigest()}


class ArrowTableSource(ArrowBatchSource):
    """A pyarrow Table or RecordBatch, sliced (zero-copy) into ``batch_rows`` rows."""

    OPTIONS = ("label", "weight", "group", "base_margin", "drop", "categorical",
               "batch_rows", "on_bad_rows", "numeric_text")
    name = "<pyarrow Table>"

    def __init__(self, table, *, label=None, weight=None, drop=(), categorical="auto",
                 batch_rows=65536, group=None, base_margin=None, on_bad_rows="error",
                 numeric_text=None):
        super().__init__()
        if isinstance(table, pa.RecordBatch):
            table = pa.Table.from_batches([table])
            self.name = "<pyarrow RecordBatch>"
        self._table = table
        self._batch_rows = batch_rows
        self.n_rows = table.num_rows
        arrays, names = _split_roles(self.name, table.num_rows, label=label, weight=weight,
                                     group=group, base_margin=base_margin)
        self._init_schema(table.schema, drop=drop, categorical=categorical,
                          first_batch=lambda: table.slice(0, batch_rows),
                          on_bad_rows=on_bad_rows, numeric_text=numeric_text,
                          **_column_roles(arrays, names))
        self.label_name, self.weight_name = names["label"], names["weight"]
        self.group_name = names["group"]
        self.base_margin_name = names["base_margin"]
        self._arrays = arrays
        self._columns = [c for c in self._columns if c not in _ARRAY_NAMES.values()]

    def _record_batches(self):
        t = self._table.select(self._columns)
        for start in range(0, t.num_rows, self._batch_rows):
            yield t.slice(start, self._batch_rows)

    def _convert(self, rb, row_start):
        saved = {role: getattr(self, f"{role}_name") for role in _ARRAY_NAMES}
        # Array labels are not columns of the table: convert columns, then attach slices.
        for role in self._arrays:
            setattr(self, f"{role}_name", None)
        try:
            b = super()._convert(rb, row_start)
        finally:
            for role, name in saved.items():
                setattr(self, f"{role}_name", name)
        for role, values in self._arrays.items():
            setattr(b, role, values[row_start:row_start + rb.num_rows])
        return b

    def fingerprint(self):
        h = new_hash()
        h.update(repr((self.feature_names, self.feature_kinds, self.roles(),
                       self._table.num_rows)).encode())
        for name in self._columns:
            h.update(name.encode())
            hash_arrow_array(h, self._table.column(name))
        _hash_role_arrays(h, self._arrays)
        return {"kind": "memory", "sha256": h.hexdigest()}


class BatchIterableSource(ArrowBatchSource):
    """An iterable of pyarrow RecordBatches sharing one schema.

    A list or tuple (or any iterable whose ``iter()`` returns a fresh iterator) can be
    streamed many times. A one-shot iterator or generator can be streamed only once; its
    fingerprint is computed while it streams, so ``fingerprint()`` before the end of that
    first pass returns ``{"kind": "stream", "sha256": None}`` (equal to nothing).
    """

    OPTIONS = ("label", "weight", "group", "base_margin", "drop", "categorical",
               "batch_rows", "on_bad_rows", "numeric_text")
    name = "<iterable of RecordBatches>"

    def __init__(self, iterable, *, label=None, weight=None, drop=(), categorical="auto",
                 batch_rows=65536, group=None, base_margin=None, on_bad_rows="error",
                 numeric_text=None):
        super().__init__()
        for role, value in (("label", label), ("weight", weight), ("group", group),
                            ("base_margin", base_margin)):
            if _is_array_like(value):
                raise ParameterError(f"for an iterable of batches, {role} must be a column "
                                     f"name")
        self._iterable = iterable
        self._one_shot = iter(iterable) is iterable
        self._batch_rows = batch_rows
        it = iter(iterable)
        try:
            first = next(it)
        except StopIteration:
            raise InputError(f"{self.name}: the iterable yields no record batch") from None
        self._check_batch(first, 0, None)
        self._schema = first.schema
        self._peeked = (first, it) if self._one_shot else None
        self._streamed = False
        self._hash = None
        self._init_schema(first.schema, label=label, weight=weight, drop=drop,
                          categorical=categorical, group=group, base_margin=base_margin,
                          first_batch=lambda: first, on_bad_rows=on_bad_rows,
                          numeric_text=numeric_text)

    def _check_batch(self, rb, index, schema):
        if isinstance(rb, pa.Table):
            return
        if not isinstance(rb, pa.RecordBatch):
            raise InputError(f"{self.name}: item {index + 1} is a {type(rb).__name__}; "
                             f"expected a pyarrow RecordBatch")
        if schema is not None and not rb.schema.equals(schema):
            raise InputError(f"{self.name}: record batch {index + 1} has schema "
                             f"{rb.schema.to_string(show_schema_metadata=False)!r}; expected "
                             f"the schema of the first batch "
                             f"{schema.to_string(show_schema_metadata=False)!r}")

    def _items(self):
        if self._one_shot:
            if self._streamed:
                raise InputError(f"{self.name}: a one-shot iterator can be streamed only "
                                 f"once; pass a list of batches to read them again")
            self._streamed = True
            first, it = self._peeked
            self._peeked = None
            yield first
            yield from it
        else:
            yield from self._iterable

    def _record_batches(self):
        h = new_hash() if self._one_shot else None
        for i, rb in enumerate(self._items()):
            self._check_batch(rb, i, self._schema)
            rb = rb.select(self._columns)
            if h is not None:
                for name in self._columns:
                    hash_arrow_array(h, rb.column(name))
            if isinstance(rb, pa.Table):
                for piece in rb.to_batches(max_chunksize=self._batch_rows):
                    yield from slice_batches(piece, self._batch_rows)
            else:
                yield from slice_batches(rb, self._batch_rows)
        if h is not None:
            self._hash = h.hexdigest()

    def fingerprint(self):
        if self._one_shot:
            if self._hash is None:
                return {"kind": "stream", "sha256": None}
            return {"kind": "memory", "sha256": self._hash}
        h = new_hash()
        h.update(repr((self.feature_names, self.feature_kinds, self.roles())).encode())
        for rb in self._iterable:
            for name in self._columns:
                hash_arrow_array(h, rb.column(name))
        return {"kind": "memory", "sha256": h.hexdigest()}
