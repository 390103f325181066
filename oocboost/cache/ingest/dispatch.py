"""One entry for every source: :func:`open_source` picks the reader with one table of
``(predicate, constructor)`` pairs (``_DISPATCH``): a path by its content, NumPy,
pandas, pyarrow tables, iterables of record batches. The first predicate that accepts
``data`` wins and an unknown type ends in an error naming it."""
from __future__ import annotations

import os

import numpy as np
import pyarrow as pa

from ...errors import InputError, ParameterError
from .source import Source, check_options


def _is_path(data):
    return isinstance(data, (str, os.PathLike))


def _from_path(data, **kw):
    from .arrow import ArrowIpcSource
    from .csv import CsvSource
    from .locations import is_uri
    from .parquet import ParquetSource

    if is_uri(data):
        return _from_uri(data, **kw)
    path = os.path.abspath(os.fspath(data))
    if not os.path.exists(path):
        raise InputError(f"{path}: file not found")
    if os.path.isdir(path):
        return _from_folder(path, **kw)
    input_format = kw.get("input_format", "auto")
    if input_format not in ("auto", "csv", "svmlight"):
        raise ParameterError(f"input_format must be 'auto', 'csv' or 'svmlight', got "
                             f"{input_format!r}")
    kind = sniff_format(path)
    if input_format == "svmlight" or (input_format == "auto" and kind == "csv"
                                      and _svmlight_path(path)):
        from .svmlight import SvmlightSource

        return SvmlightSource(path, **_only(kw, SvmlightSource))
    if kind == "parquet":
        return ParquetSource(path, **_only(kw, ParquetSource))
    if kind in ("arrow-file", "arrow-stream"):
        return ArrowIpcSource(
            path, stream=(kind == "arrow-stream"), **_only(kw, ArrowIpcSource)
        )
    from .side_files import with_side_files

    # LightGBM reads FILE.weight and FILE.query next to a text file: so do we
    return with_side_files(CsvSource(path, compression="gzip" if kind == "csv-gzip" else None,
                                     **_only(kw, CsvSource)),
                           weight_given=kw.get("weight") is not None,
                           group_given=kw.get("group") is not None,
                           base_margin_given=kw.get("base_margin") is not None)


def _from_folder(path, **kw):
    """A folder as one input (``locations.py``)."""
    import pyarrow.fs as pafs

    from .locations import ConcatenatedSource, DatasetSource, data_files, folder_format

    files = data_files(pafs.LocalFileSystem(), path, path)
    kind = folder_format(files, path)
    if kind != "csv":
        return DatasetSource(path, pafs.LocalFileSystem(), files, kind, root=path,
                             **_only(kw, DatasetSource))
    _no_partition_folders(path, files)
    first = _from_path(files[0].path, **kw)
    # the first file decides the columns' kinds; the others are read with them
    named = [n for n, k in zip(first.feature_names, first.feature_kinds)
             if k == "categorical"]
    rest = [_from_path(f.path, **{**kw, "categorical": named or None}) for f in files[1:]]
    return ConcatenatedSource([first, *rest], path)


def _no_partition_folders(where, files):
    if any("=" in part for f in files for part in os.path.dirname(f.path).split("/")):
        raise InputError(f"{where}: hive partition folders (key=value) are read from "
                         f"Parquet and Arrow files; this folder's files are CSV")


def _from_uri(uri, **kw):
    """An ``s3://``, ``gs://``, ``hdfs://``, ``https://`` location: a file or a
    folder (``locations.py``)."""
    import pyarrow.fs as pafs

    from .csv import CsvSource
    from .locations import (
        ConcatenatedSource,
        DatasetSource,
        data_files,
        file_info,
        folder_format,
        open_location,
    )

    fs, path = open_location(uri)
    info = file_info(fs, path, uri)
    if info.type == pafs.FileType.Directory:
        files = data_files(fs, path, uri)
        kind = folder_format(files, uri)
    else:
        files = [info]
        kind = _remote_format(fs, path, uri)
        kind = {"arrow-file": "arrow", "arrow-stream": "arrow", "csv-gzip": "csv"}.get(kind,
                                                                                     kind)
    if kind != "csv":
        return DatasetSource(uri, fs, files, kind,
                             root=path if info.type == pafs.FileType.Directory else None,
                             **_only(kw, DatasetSource))
    if kw.get("input_format") == "svmlight":
        raise ParameterError(f"{uri}: svmlight files are read from local paths")
    _no_partition_folders(uri, files)
    sources = [CsvSource(f.path, filesystem=fs, location=_child_uri(uri, path, f.path),
                         compression="gzip" if f.path.endswith(".gz") else None,
                         **_only(kw, CsvSource)) for f in files]
    return sources[0] if len(sources) == 1 else ConcatenatedSource(sources, uri)


def _child_uri(uri, root, path):
    """The URI of ``path``, a file under the location ``uri`` (at ``root``)."""
    return uri if path == root else uri.rstrip("/") + "/" + path[len(root):].lstrip("/")


def _remote_format(fs, path, uri):
    """A remote file's format (:func:`format_of` its first bytes and name)."""
    try:
        with fs.open_input_stream(path) as stream:
            head = stream.read(8)
    except (pa.ArrowException, OSError) as exc:
        raise InputError(f"{uri}: cannot read ({exc})") from None
    return format_of(head, path)


def _svmlight_path(path):
    from .svmlight import looks_like_svmlight

    with open(path, "rb") as f:
        sample = f.read(1 << 16)
    return looks_like_svmlight(path, sample)


def _csv_path(data):
    from .locations import is_uri

    if is_uri(data):   # a remote text file, or a folder of them: told by the reader
        return True
    path = os.path.abspath(os.fspath(data))
    if os.path.isdir(path):
        return True
    return os.path.isfile(path) and sniff_format(path) in ("csv", "csv-gzip")


def sniff_format(path):
    """'csv', 'csv-gzip', 'parquet', 'arrow-file' or 'arrow-stream' of a local file
    (:func:`format_of`)."""
    with open(path, "rb") as f:
        return format_of(f.read(8), path)


def format_of(head, path):
    """A file's format from its first bytes ``head``, then its name ``path``: 'csv',
    'csv-gzip', 'parquet', 'arrow-file' or 'arrow-stream'."""
    if head[:2] == b"\x1f\x8b":
        return "csv-gzip"
    if head[:4] == b"PAR1":
        return "parquet"
    if head[:6] == b"ARROW1":
        return "arrow-file"
    if head[:4] == b"\xff\xff\xff\xff":
        return "arrow-stream"
    lower = path.lower()
    if lower.endswith((".parquet", ".pq")):
        return "parquet"
    if lower.endswith((".arrow", ".feather", ".ipc", ".arrows")):
        return "arrow-stream"
    if lower.endswith(".gz"):
        return "csv-gzip"
    return "csv"


def _only(kw, cls):
    """Keyword arguments that ``cls`` accepts (file-format options are ignored elsewhere)."""
    accepted = getattr(cls, "OPTIONS")
    return {k: v for k, v in kw.items() if k in accepted}


def _is_numpy(data):
    return isinstance(data, np.ndarray)


def _is_pandas(data):
    try:
        import pandas as pd
    except ImportError:  # pandas is optional: a DataFrame cannot exist without it
        return False
    return isinstance(data, pd.DataFrame)


def _is_arrow_table(data):
    return isinstance(data, (pa.Table, pa.RecordBatch))


def _is_arrow_exportable(data):
    """Polars DataFrames and any other table that exports the Arrow C stream interface
    (``__arrow_c_stream__``, e.g. DuckDB relations); pandas is read by its own source."""
    return hasattr(data, "__arrow_c_stream__") and not isinstance(data, pa.ChunkedArray)


def _is_batch_iterable(data):
    return (not isinstance(data, (str, bytes, dict))) and hasattr(data, "__iter__")


def _from_numpy(data, **kw):
    from .memory import NumpySource
    return NumpySource(data, **_only(kw, NumpySource))


def _is_sparse(data):
    from .memory import is_scipy_sparse

    return is_scipy_sparse(data)


def _from_sparse(data, **kw):
    from .memory import ScipySparseSource
    return ScipySparseSource(data, **_only(kw, ScipySparseSource))


def _from_pandas(data, **kw):
    from .memory import PandasSource
    return PandasSource(data, **_only(kw, PandasSource))


def _from_arrow_table(data, **kw):
    from .memory import ArrowTableSource
    return ArrowTableSource(data, **_only(kw, ArrowTableSource))


def _from_arrow_exportable(data, **kw):
    from .memory import ArrowTableSource
    source = ArrowTableSource(_arrow_table_of(data), **_only(kw, ArrowTableSource))
    source.name = f"<{type(data).__module__.split('.')[0]} {type(data).__name__}>"
    return source


def _arrow_table_of(data):
    """The table behind an Arrow-exporting object, with Polars' ``string_view`` columns
    (and dictionaries of them) as ``large_string``, which every pyarrow kernel reads."""
    table = data.to_arrow() if hasattr(data, "to_arrow") else pa.table(data)
    if isinstance(table, pa.RecordBatch):
        table = pa.Table.from_batches([table])
    fields = []
    for field in table.schema:
        t = field.type
        if pa.types.is_string_view(t):
            t = pa.large_string()
        elif pa.types.is_dictionary(t) and pa.types.is_string_view(t.value_type):
            t = pa.dictionary(t.index_type, pa.large_string())
        fields.append(field.with_type(t))
    schema = pa.schema(fields)
    return table if schema.equals(table.schema) else table.cast(schema)


def _from_batch_iterable(data, **kw):
    from .memory import BatchIterableSource
    return BatchIterableSource(data, **_only(kw, BatchIterableSource))


#: (predicate, constructor) pairs tried in order by :func:`open_source`.
_DISPATCH = [
    (_is_path, _from_path),
    (_is_numpy, _from_numpy),
    (_is_sparse, _from_sparse),
    (_is_pandas, _from_pandas),
    (_is_arrow_table, _from_arrow_table),
    (_is_arrow_exportable, _from_arrow_exportable),
    (_is_batch_iterable, _from_batch_iterable),
]


def open_source(data, *, label=None, weight=None, drop=(), categorical="auto",
                delimiter=None, na_values=None, encoding="utf-8", on_bad_rows="error",
                batch_bytes=1 << 20, batch_rows=65536, feature_names=None,
                group=None, header=True, names=None, input_format="auto",
                zero_based="auto", absent_as_missing=False, n_features=None,
                base_margin=None, max_block_bytes=None, numeric_text=None) -> Source:
    """Open any supported tabular source as a stream of :class:`Batch` objects.

    Parameters
    ----------
    data : str, os.PathLike, numpy.ndarray, pandas.DataFrame, pyarrow.Table,
           pyarrow.RecordBatch, polars.DataFrame (or any table with
           ``__arrow_c_stream__``) or iterable of pyarrow.RecordBatch
        A path to a CSV file (optionally gzip-compressed), a Parquet file, or an Arrow IPC
        file or stream (Feather v2); formats are recognised by magic bytes, then by
        extension. A 2-D NumPy array of numbers (features ``f0 .. f{n-1}`` unless
        ``feature_names`` is given), a DataFrame, an Arrow table or batch, or an iterable
        of record batches sharing one schema. A SciPy sparse matrix (CSR, CSC, COO):
        absent entries are 0.0, as ``toarray()`` reads them; densified in blocks.
    label, weight : str, array-like or None
        Column name of the label / sample weight. For in-memory data, a 1-D array of
        length ``n_rows`` is accepted too. Neither may hold missing values. A label may
        also be a list of column names, or an ``(n_rows, k)`` array: several targets
        (multi-output models) or the two bounds of an interval (``survival:aft``).
    group : str, array-like or None
        Column name (or, for in-memory data, a 1-D array) of the query group id of each
        row, for ranking: numbers, never missing.
    base_margin : str, list of str, array-like or None
        Column name(s) (or, for in-memory data, an ``(n_rows,)`` or ``(n_rows, k)``
        array) of each row's offset added to a boosting model's margin, XGBoost's
        ``base_margin`` and LightGBM's ``init_score``: finite numbers, one column per
        output. A text file's ``FILE.init`` side file is read when not given.
    drop : iterable of str
        Columns to ignore.
    categorical : 'auto', None or list of str
        'auto': text columns (and pandas category/object/string columns) are categorical.
        A list: exactly these columns are categorical (numeric-looking ones are read as
        text). None: no categorical features; a text column is an error.
    delimiter : str or None
        CSV field separator: one character, or ``"tab"`` / ``"\\t"``. None: a tab for
        ``.tsv`` / ``.tab`` files, else sniffed from the first lines (comma, tab,
        semicolon, pipe or space), else a comma.
    header : bool
        CSV: the first line names the columns. False: every line is data, and the columns
        are ``f0, f1, ...`` (or ``names``); ``label``, ``weight``, ``group``, ``drop`` and
        ``categorical`` may then give 0-based column positions (ints or digit strings),
        as LightGBM's ``label_column=0``.
    names : list of str or None
        CSV: the columns' names (with ``header=True`` they replace the header line's).
    na_values : sequence of str or None
        CSV strings read as missing. None means ``DEFAULT_NA_VALUES``: "", "NA", "N/A",
        "NaN", "nan", "null", "NULL", "None", "?".
    encoding : str
        CSV text encoding (any Python codec; ASCII-compatible ones give exact line numbers).
    on_bad_rows : {'error', 'skip'}
        What to do with CSV rows with the wrong number of fields or text in a numeric
        column: raise an InputError naming the line, or drop them and count them in
        ``Source.n_bad_rows``.
    batch_bytes : int
        CSV block size in bytes handed to pyarrow's streaming reader (1 MiB parses fastest).
    numeric_text : list of str or None
        Text columns to read as numbers with stray text whatever their first batch holds
        (``numeric_text.py``: the build passes the columns its first pass found mostly
        numbers).
    max_block_bytes : int or None
        CSV: the largest block the reader grows to for a long line (a memory plan's
        share); a longer line is refused naming it. None: 1 GiB.
    batch_rows : int
        Rows per batch for Parquet, Arrow and in-memory sources.
    feature_names : list of str or None
        Column names of a NumPy array.
    input_format : {"auto", "csv", "svmlight"}
        A text file's format: "auto" reads ``.svm`` / ``.libsvm`` / ``.svmlight`` files,
        and files whose first lines are ``label [qid:Q] index:value ...``, as svmlight
        (``ingest/svmlight.py``), other text as CSV.
    zero_based, absent_as_missing, n_features
        svmlight: indices from 0 or 1 ("auto": 0 when some index is 0, as scikit-learn);
        an absent entry read as missing instead of 0.0 (XGBoost's reading); features at
        least (a validation file maps to its training file's).

    Returns
    -------
    Source

    Raises
    ------
    InputError
        The data is missing, malformed or not as described.
    TypeError
        ``data`` is of an unsupported type.
    """
    check_options(on_bad_rows=on_bad_rows, batch_bytes=batch_bytes, batch_rows=batch_rows,
                  categorical=categorical)
    kw = dict(label=label, weight=weight, group=group, base_margin=base_margin, drop=drop,
              categorical=categorical,
              delimiter=delimiter, na_values=na_values, encoding=encoding,
              on_bad_rows=on_bad_rows, batch_bytes=int(batch_bytes),
              batch_rows=int(batch_rows), feature_names=feature_names, header=header,
              names=names, input_format=input_format, zero_based=zero_based,
              absent_as_missing=absent_as_missing, n_features=n_features,
              max_block_bytes=max_block_bytes, numeric_text=numeric_text)
    if feature_names is not None and not (_is_numpy(data) or _is_sparse(data)):
        raise ParameterError("feature_names is only used with NumPy arrays and SciPy "
                             "sparse matrices; other sources carry their own column names")
    column = (str, int, type(None))
    def names_only(value):
        return isinstance(value, column) or (
            isinstance(value, (list, tuple)) and all(isinstance(n, (str, int)) for n in value))

    if _is_path(data) and not (all(isinstance(x, column) for x in (weight, group))
                               and names_only(label) and names_only(base_margin)):
        raise ParameterError("for a file, label and base_margin (one name or a list), "
                             "weight and group must be column names (or positions)")
    if (not header or names is not None) and not (_is_path(data)
                                                   and _csv_path(data)):
        raise ParameterError("header and names apply to CSV files only")
    for predicate, constructor in _DISPATCH:
        if predicate(data):
            return constructor(data, **kw)
    raise TypeError(
        f"cannot read data of type {type(data).__module__}.{type(data).__qualname__}; "
        f"expected a file path, a 2-D numpy array, a pandas or Polars DataFrame, a "
        f"pyarrow Table or RecordBatch, or an iterable of pyarrow RecordBatches")
