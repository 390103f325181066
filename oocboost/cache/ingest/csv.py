"""CSV and gzip CSV files streamed with pyarrow's ``open_csv`` one block at a time.

Fast path
---------
Column types are decided once, from the header and the first block (``open_source``
probes it): integer, float and all-missing columns are numeric and read as float64; text
columns are categorical and read as strings. Every later read fixes these types with
``ConvertOptions.column_types`` so a later block cannot change them, and a float64 column
without missing values reaches NumPy without a copy.

Slow paths (errors only)
------------------------
pyarrow's messages name neither lines nor (for conversion errors) rows, so when a read
fails we find the place ourselves:

* text in a numeric column: the column is added to a set of numeric columns read as
  strings, and the pass restarts from the top of the file, skipping the records already
  yielded. Those strings are parsed with pyarrow.compute (``numeric_text.py``): in
  ``on_bad_rows="skip"`` mode a feature's stray value is read as missing and counted
  (a label's, weight's... drops its row), otherwise the first one is reported. Only
  the offending columns leave the fast path, and only after their first bad value.
* line numbers: :func:`scan_records` re-reads the raw bytes with NumPy, marks the newlines
  outside quotes (a running quote parity) as record ends, and gives each non-empty record
  its physical line number (header = line 1) and field count. Quoted fields holding
  newlines, CRLF endings and blank lines are counted as an editor shows them; the scan
  assumes an ASCII-compatible encoding and ``"`` quotes.
* invalid bytes for the encoding: an incremental decoder finds the byte offset and line.
"""
from __future__ import annotations

import codecs
import os
import re

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv

from ...errors import InputError, ParameterError
from .numeric_text import StrayValues, mostly_numbers, parse_numbers
from .source import (
    CATEGORICAL,
    DEFAULT_NA_VALUES,
    NUMERIC,
    Batch,
    Source,
    arrow_kind,
    file_fingerprint,
    resolve_columns,
    to_float64,
)
from .text_layout import (
    by_position,
    check_names,
    header_width_names,
    resolve_delimiter,
    warn_numeric_header,
)

_RAGGED_RE = re.compile(r"Expected (\d+) columns, got (\d+)")
# pyarrow names the row ("Row #N: ") when it reads on one thread (OMP_NUM_THREADS=1, as
# a Dask worker's environment sets it), not when it reads in parallel
_CONVERSION_RE = re.compile(r"In CSV column #(\d+): (?:Row #\d+: )?CSV conversion error "
                            r"to (\w+): invalid value '(.*)'", re.S)
_SCAN_CHUNK = 1 << 20
#: Largest CSV block the reader grows to for one long line (a block is parsed whole: about
#: twice its size in memory), unless a memory plan sets a smaller one
#: (``BuildPlan.max_csv_block_bytes``).
MAX_BLOCK_BYTES = 1 << 30


class _BlockTooSmall(Exception):
    """pyarrow met a line longer than its block: read again with a larger block."""


def _utf8(encoding):
    return codecs.lookup(encoding).name == "utf-8"


class CsvSource(Source):
    """A CSV file (optionally gzip-compressed) with a header line.

    See :func:`oocboost.cache.ingest.open_source` for the parameters. ``n_rows`` is known after
    the first full iteration; ``n_bad_rows`` counts the rows dropped in skip mode.
    """

    OPTIONS = ("label", "weight", "group", "base_margin", "drop", "categorical",
               "delimiter", "na_values", "encoding", "on_bad_rows", "batch_bytes", "header",
               "names", "filesystem", "location", "max_block_bytes", "numeric_text")

    def __init__(self, path, *, compression=None, label=None, weight=None, drop=(),
                 categorical="auto", delimiter=None, na_values=None, encoding="utf-8",
                 on_bad_rows="error", batch_bytes=1 << 20, group=None, header=True,
                 names=None, base_margin=None, filesystem=None, location=None,
                 max_block_bytes=None, numeric_text=None):
        super().__init__()
        try:
            codecs.lookup(encoding)
        except (LookupError, TypeError):
            raise ParameterError(f"unknown encoding {encoding!r}") from None
        # a remote file (locations.py): read through ``filesystem``, named by its URI
        self._fs = filesystem
        self._path = os.path.abspath(path) if filesystem is None else path
        self.name = self._path if filesystem is None else (location or path)
        self._compression = compression
        self.header = bool(header)
        self._names = check_names(names)
        # Records before the first data row that scan_records sees: the header line.
        self._header_records = 1 if self.header else 0
        self._na = [str(v) for v in (DEFAULT_NA_VALUES if na_values is None else na_values)]
        self._encoding = "utf8" if _utf8(encoding) else encoding
        self._skip = on_bad_rows == "skip"
        self._batch_bytes = batch_bytes
        #: The largest block a long line may grow the reader to (None: MAX_BLOCK_BYTES).
        self.max_block_bytes = max_block_bytes
        # text columns read as numbers whatever the first block holds (numeric_text.py)
        self._numeric_text = set(numeric_text or ())
        # Numeric columns that showed a non-number: read as text, parsed by parse_numbers.
        self._string_numeric = set()
        self._stray = StrayValues(self, self._skip)
        #: Feature values that were not numbers, read as missing (skip mode), per column.
        self.n_bad_values = {}
        if self._size() == 0:
            raise InputError(f"{self.name}: the file is empty (0 bytes); expected a header "
                             f"line and data rows")
        self.delimiter = resolve_delimiter(delimiter, self.name, self._sample)
        self._delimiter = self.delimiter
        self._probe(label, weight, drop, categorical, group, base_margin)

    # ---------------------------------------------------------------- reading
    def _stream(self):
        if self._fs is None:
            return pa.input_stream(self._path, compression=self._compression)
        stream = self._fs.open_input_stream(self._path)
        if self._compression is None:
            return stream
        return pa.CompressedInputStream(stream, self._compression)

    def _size(self):
        if self._fs is None:
            return os.path.getsize(self._path)
        return self._fs.get_file_info(self._path).size

    def _open(self, *, column_types=None, include=None, counter=None, threads=True):
        def on_invalid(row):
            if counter is None:
                return "error"
            counter[0] += 1
            return "skip"

        read_options = pa_csv.ReadOptions(
            block_size=self._batch_bytes, encoding=self._encoding,
            column_names=self._names, use_threads=threads,
            # headerless: the columns are f0, f1, ... unless named
            autogenerate_column_names=not self.header and self._names is None,
            skip_rows=1 if self.header and self._names is not None else 0)
        parse_options = pa_csv.ParseOptions(delimiter=self._delimiter,
                                            newlines_in_values=True,
                                            invalid_row_handler=on_invalid)
        convert_options = pa_csv.ConvertOptions(column_types=column_types,
                                                include_columns=include,
                                                null_values=self._na,
                                                strings_can_be_null=True)
        # The system allocator: mimalloc (pyarrow's default) kept 15-20 MiB more resident
        # for the same parse, at the same speed, and builds run under a memory limit.
        return pa_csv.open_csv(self._stream(), read_options=read_options,
                               parse_options=parse_options, convert_options=convert_options,
                               memory_pool=pa.system_memory_pool())

    def _sample(self, n_bytes=1 << 16):
        """The first ``n_bytes`` of the (decompressed) file, as text."""
        with self._stream() as f:
            data = f.read(n_bytes)
        return data.decode(self._encoding if self._encoding != "utf8" else "utf-8",
                           errors="replace")

    def _probe(self, label, weight, drop, categorical, group=None, base_margin=None):
        if self._names is not None or not self.header:
            columns = self._names or header_width_names(self._sample(), self.delimiter)
            label, weight, group, base_margin = (
                by_position(v, columns) for v in (label, weight, group, base_margin))
            drop = by_position(list(drop or ()) if not isinstance(drop, str) else [drop],
                               columns)
            if isinstance(categorical, (list, tuple, set, frozenset)):
                categorical = by_position(list(categorical), columns)
        named = set(categorical) if isinstance(categorical, (list, tuple, set, frozenset)) \
            else set()
        counter = [0] if self._skip else None
        while True:
            try:
                schema, first = self._probe_read(named, counter)
                break
            except _BlockTooSmall:
                continue  # _grow_block made the block larger, or refused the line
        self._file_columns = list(schema.names)
        if self.header and self._names is None:
            warn_numeric_header(self.name, self._file_columns)
        self.feature_names = resolve_columns(self.name, self._file_columns, label=label,
                                             weight=weight, drop=drop,
                                             categorical=categorical, group=group,
                                             base_margin=base_margin)
        if first is None:
            raise InputError(f"{self.name}: the file has a header line but no data rows "
                             f"(line 2 onwards is empty)" if self.header else
                             f"{self.name}: the file has no data rows")
        if any(pa.types.is_binary(t) for t in schema.types):
            self._raise_encoding()
        kinds, auto_text = [], []
        for name in self.feature_names:
            t = schema.field(name).type
            is_number = (pa.types.is_integer(t) or pa.types.is_floating(t)
                         or pa.types.is_null(t))
            if name in named:
                kinds.append(CATEGORICAL)
            elif is_number:
                kinds.append(NUMERIC)
            elif pa.types.is_string(t) and (name in self._numeric_text
                                            or mostly_numbers(first.column(name))):
                # a numeric column with stray text: read as text and parsed, so the stray
                # value is the same error (line, column, value), or a skipped row,
                # whether it is in the first block or the last
                kinds.append(NUMERIC)
                self._string_numeric.add(name)
            else:
                # Booleans, dates and other inferred types stay text: categories.
                try:
                    kinds.append(arrow_kind(self.name, name, pa.string(), categorical))
                except InputError as e:
                    raise self._text_error(first, name, e) from None
                if pa.types.is_string(t) and categorical == "auto":
                    auto_text.append(name)
        self.feature_kinds = kinds
        self.auto_text_columns = frozenset(auto_text)
        self.label_name, self.weight_name, self.group_name = label, weight, group
        self.base_margin_name = base_margin
        for role, name in self.roles():
            t = schema.field(name).type
            if not (pa.types.is_integer(t) or pa.types.is_floating(t)
                    or pa.types.is_null(t)):
                sample = first.column(name).drop_null()
                example = f" (e.g. {sample[0].as_py()!r})" if len(sample) else ""
                raise InputError(f"{self.name}: {role} column {name!r} holds text{example}; "
                                 f"expected numbers")
        roles = [name for _, name in self.roles()]
        self._numeric_cols = [f for f, k in zip(self.feature_names, kinds) if k == NUMERIC]
        self._numeric_cols += roles
        self._include = self.feature_names + roles

    def _text_error(self, first, name, error):
        """``error`` (a text column that is not categorical) with the line of its first
        value that is not a number."""
        _, bad = parse_numbers(pc.cast(first.column(name), pa.string()))
        if not bad.any():
            return error
        k = int(np.argmax(bad))
        value = first.column(name)[k].as_py()
        return InputError(f"{self.name}: line {self._line_of_record(k)}, column {name!r}: "
                          f"got {value!r}; expected numbers (the column is not "
                          f"categorical: name it in categorical to read it as categories)")

    def _column_types(self, string_numeric):
        types = {}
        for name, kind in zip(self.feature_names, self.feature_kinds):
            types[name] = pa.string() if kind == CATEGORICAL else pa.float64()
        for _, name in self.roles():
            types[name] = pa.float64()
        for name in string_numeric:
            types[name] = pa.string()
        return types

    def batches(self):
        """Stream the file from the top as :class:`Batch` objects of one block each.

        Yields
        ------
        Batch
            Numeric columns float64 (possibly read-only, zero-copy), categorical columns
            pyarrow string arrays; empty blocks (all rows dropped) are not yielded.
        """
        string_numeric = set(self._string_numeric)
        self._stray.start_pass()
        done = 0        # pyarrow records (rows after dropping ragged ones) already yielded
        kept = 0        # rows yielded
        cast_bad = 0    # rows dropped because a numeric field was not a number
        while True:
            ragged = [0] if self._skip else None
            try:
                reader = self._reader(string_numeric, ragged)
            except _BlockTooSmall:
                continue  # a larger block now: the read starts again from the top
            seen, restart = 0, False
            # Closed on every way out, so that no read-ahead thread is left to the
            # interpreter's exit (a build that failed on an encoding error under load
            # once ended in SIGABRT, "terminate called without an active exception",
            # while an error's traceback still held the reader).
            try:
                while True:
                    try:
                        rb = reader.read_next_batch()
                    except StopIteration:
                        break
                    except (pa.ArrowException, UnicodeDecodeError) as e:
                        try:
                            column = self._translate(e)
                        except _BlockTooSmall:
                            restart = True  # from the top, with a larger block
                            break
                        if column in string_numeric:
                            raise InputError(
                                f"{self.name}: cannot parse column {column!r} after line "
                                f"~{self._line_of_record(seen)}: {e}") from None
                        string_numeric.add(column)
                        restart = True
                        break
                    n = rb.num_rows
                    if seen + n <= done:  # already yielded before a restart
                        seen += n
                        continue
                    if seen < done:
                        rb = rb.slice(done - seen)
                    record0 = max(seen, done)
                    seen += n
                    batch, n_bad = self._convert(rb, kept, record0, string_numeric)
                    done = seen
                    cast_bad += n_bad
                    kept += batch.n_rows
                    if batch.n_rows:
                        yield batch
            finally:
                reader.close()
            if not restart:
                break
        # Every pass starts at the top of the file, so the last pass saw every ragged row.
        self._string_numeric |= string_numeric
        self.n_bad_rows = (ragged[0] if ragged else 0) + cast_bad
        self.n_bad_values = self._stray.finish_pass()
        self.n_rows = kept

    def _probe_read(self, named, counter):
        """The schema and the first record batch (None when there are no rows)."""
        try:
            # no read-ahead thread: one left running by close() still aborted the process
            # at exit now and then (SIGABRT, "terminate called without an active
            # exception"), when the probe was all a run read (a cache found up to date)
            reader = self._open(column_types={c: pa.string() for c in named},
                                counter=counter, threads=False)
        except (pa.ArrowException, UnicodeDecodeError) as e:
            self._translate(e)
            raise AssertionError("unreachable")  # _translate raises for probe errors
        # Closed before any check can raise: a reader left to the interpreter's exit with
        # its read-ahead thread running aborts the process (SIGABRT, "terminate called
        # without an active exception") instead of exiting with the error's code.
        try:
            schema = reader.schema
            try:
                first = reader.read_next_batch()
            except StopIteration:
                first = None
        except (pa.ArrowException, UnicodeDecodeError) as e:
            self._translate(e)
            raise AssertionError("unreachable")  # _translate raises for probe errors
        finally:
            reader.close()
        return schema, first

    def _grow_block(self):
        """A block large enough for the longest line (twice it, in powers of two), or an
        InputError naming that line when it is over the largest block: the memory
        limit's (``max_block_bytes``), or :data:`MAX_BLOCK_BYTES`."""
        line, n_bytes = longest_line(self._stream)
        limit = min(self.max_block_bytes or MAX_BLOCK_BYTES, MAX_BLOCK_BYTES)
        if 2 * n_bytes > limit:
            why = ("a block of twice the line is parsed whole, about twice its size in "
                   "memory: raise the memory limit" if limit < MAX_BLOCK_BYTES else
                   "a block of twice the line is parsed whole")
            raise InputError(f"{self.name}: line {line} is {n_bytes:,} bytes long; the CSV "
                             f"reader holds lines of at most {limit // 2:,} bytes here "
                             f"({why})")
        size = self._batch_bytes
        while size < 2 * n_bytes:
            size *= 2
        self._batch_bytes = min(max(size, 2 * self._batch_bytes), limit)

    @property
    def batch_bytes(self) -> int:
        """Bytes of text per read block (a batch), as the build plan sets it."""
        return self._batch_bytes

    @batch_bytes.setter
    def batch_bytes(self, value: int) -> None:
        self._batch_bytes = int(value)

    def _reader(self, string_numeric, counter):
        """A reader from the top of the file. Opening it reads the first block: a
        numeric column with text there is added to ``string_numeric`` (read as text,
        its stray values then named or counted, as when a later block meets one) and
        the reader opened again."""
        while True:
            try:
                return self._open(column_types=self._column_types(string_numeric),
                                  include=self._include, counter=counter)
            except (pa.ArrowException, UnicodeDecodeError) as e:
                column = self._translate(e)   # raises for all but a number's conversion
                if column in string_numeric:
                    raise InputError(f"{self.name}: cannot parse column {column!r} in "
                                     f"its first block: {e}") from None
                string_numeric.add(column)

    def _convert(self, rb, row_start, record0, string_numeric):
        """Record batch -> (Batch, number of rows dropped for a label, weight... that is
        not a number; a feature's stray values are missing, ``StrayValues``)."""
        values = {}
        bad = None
        roles = {name for _, name in self.roles()}
        for name in self._numeric_cols:
            arr = rb.column(name)
            if name in string_numeric and name not in roles:
                values[name] = self._stray.parse(
                    name, arr, lambda i: f"line {self._line_of_record(record0 + i)}")
            elif name in string_numeric:
                v, b = parse_numbers(arr)
                if b.any():
                    if not self._skip:
                        i = int(np.argmax(b))
                        raise InputError(
                            f"{self.name}: line {self._line_of_record(record0 + i)}, column "
                            f"{name!r}: expected a number, got {arr[i].as_py()!r}")
                    bad = b if bad is None else (bad | b)
                values[name] = v
            else:
                values[name] = to_float64(arr)
        n_bad = 0
        positions = None  # record offset of each kept row, when some rows were dropped
        if bad is not None and bad.any():
            keep = ~bad
            n_bad = int(bad.sum())
            positions = np.flatnonzero(keep)
            rb = rb.filter(pa.array(keep))
            values = {k: v[keep] for k, v in values.items()}
        b = Batch(row_start=row_start, n_rows=rb.num_rows)
        for name, kind in zip(self.feature_names, self.feature_kinds):
            if kind == NUMERIC:
                b.numeric[name] = values[name]
            else:
                b.categorical[name] = rb.column(name)
        for role, name in self.roles():
            v = values[name]
            bad_value = ~np.isfinite(v) if role == "base_margin" else np.isnan(v)
            if bad_value.any():
                i = int(np.argmax(bad_value))
                what = "missing" if np.isnan(v[i]) else "infinite"
                i = int(positions[i]) if positions is not None else i
                raise InputError(f"{self.name}: line {self._line_of_record(record0 + i)}, "
                                 f"{role} column {name!r} is {what}; expected a "
                                 f"{'finite ' if role == 'base_margin' else ''}number in "
                                 f"every row")
        self.set_roles(b, values)
        return b, n_bad

    # ---------------------------------------------------------------- errors
    def _translate(self, e):
        """Turn a pyarrow read error into an InputError, or return the name of a numeric
        column that met a non-number (the caller then reads it as text)."""
        msg = str(e)
        if "straddling object" in msg:
            self._grow_block()
            raise _BlockTooSmall
        if isinstance(e, UnicodeDecodeError) or "UTF8" in msg or "UTF-8" in msg:
            self._raise_encoding()
        if "Empty CSV file" in msg:
            raise InputError(f"{self.name}: the file is empty; expected a header line and "
                             f"data rows") from None
        if _RAGGED_RE.search(msg):
            found = self._first_ragged()
            if found is not None:
                line, expected, got = found
                raise InputError(f"{self.name}: line {line}: expected {expected} fields (as "
                                 f"in the {'header' if self.header else 'first line'}), "
                                 f"got {got}") from None
            m = _RAGGED_RE.search(msg)
            raise InputError(f"{self.name}: a row has {m.group(2)} fields, expected "
                             f"{m.group(1)}") from None
        m = _CONVERSION_RE.search(msg)
        if m and hasattr(self, "_file_columns"):
            return self._file_columns[int(m.group(1))]
        raise InputError(f"{self.name}: cannot parse the CSV file: {msg}") from None

    def _raise_encoding(self):
        found = find_bad_bytes(self._stream, self._encoding)
        if found is None:
            raise InputError(f"{self.name}: bytes not valid in encoding "
                             f"{self._encoding!r}") from None
        offset, line, raw = found
        raise InputError(f"{self.name}: line {line} (byte offset {offset}): bytes {raw!r} "
                         f"are not valid {self._encoding}; pass the file's encoding, e.g. "
                         f"encoding='latin-1'") from None

    def _first_ragged(self):
        expected = None
        for lines, n_fields in scan_records(self._stream, self._delimiter):
            if expected is None and len(n_fields):
                expected = int(n_fields[0])
                skip = self._header_records
                lines, n_fields = lines[skip:], n_fields[skip:]
            wrong = np.flatnonzero(n_fields != expected)
            if len(wrong):
                return int(lines[wrong[0]]), expected, int(n_fields[wrong[0]])
        return None

    def _line_of_record(self, k):
        """Physical line of data record ``k`` (0-based among the records pyarrow yields:
        blank lines, and in skip mode ragged rows, are not records)."""
        expected = None
        for lines, n_fields in scan_records(self._stream, self._delimiter):
            if expected is None and len(n_fields):
                expected = int(n_fields[0])
                skip = self._header_records
                lines, n_fields = lines[skip:], n_fields[skip:]
            if self._skip:
                lines = lines[n_fields == expected]
            if k < len(lines):
                return int(lines[k])
            k -= len(lines)
        return "?"

    def fingerprint(self):
        if self._fs is None:
            return file_fingerprint(self._path)
        from .locations import location_fingerprint

        return location_fingerprint(self._fs, [self._fs.get_file_info(self._path)],
                                    self.name)


def longest_line(open_stream, chunk_size=_SCAN_CHUNK):
    """``(line, bytes)`` of the longest physical line of a file (1-based; newlines inside
    quotes end a physical line too: this bounds what a block must hold)."""
    best_line, best = 1, 0
    line, run = 1, 0
    with open_stream() as f:
        while True:
            chunk = f.read(chunk_size)
            if not chunk:
                break
            ends = np.flatnonzero(np.frombuffer(chunk, dtype=np.uint8) == 10)
            if len(ends) == 0:
                run += len(chunk)
                continue
            lengths = np.diff(np.concatenate(([-1], ends)))
            lengths[0] += run
            k = int(np.argmax(lengths))
            if lengths[k] > best:
                best, best_line = int(lengths[k]), line + k
            line += len(ends)
            run = len(chunk) - 1 - int(ends[-1])
    if run > best:
        best, best_line = run, line
    return best_line, best


def scan_records(open_stream, delimiter, chunk_size=_SCAN_CHUNK):
    """Physical line number and field count of every non-empty record of a CSV file.

    Parameters
    ----------
    open_stream : callable
        Returns a fresh binary input stream of the (decompressed) file.
    delimiter : str
        One ASCII character.

    Yields
    ------
    lines : np.ndarray int64 (n,)
        1-based line on which each record starts (the header is the first record).
    n_fields : np.ndarray int64 (n,)
        Number of fields of each record (delimiters outside quotes + 1).
    """
    quote, delim = ord('"'), ord(delimiter)
    leftover = b""
    line_base = 1
    with open_stream() as f:
        while True:
            chunk = f.read(chunk_size)
            eof = not chunk
            data = leftover + chunk
            buf = np.frombuffer(data, np.uint8)
            # A newline is a record end when an even number of quotes precede it in the
            # record (doubled quotes "" inside a field keep the parity right).
            inside = (np.cumsum(buf == quote) & 1).astype(bool)
            is_nl = buf == 10
            ends = np.flatnonzero(is_nl & ~inside)
            if eof and len(buf) and (len(ends) == 0 or ends[-1] != len(buf) - 1):
                ends = np.append(ends, len(buf))  # last record without a final newline
            if len(ends):
                starts = np.concatenate(([0], ends[:-1] + 1))
                length = ends - starts
                last = np.minimum(ends, len(buf)) - 1
                has_cr = (length > 0) & (buf[np.maximum(last, 0)] == 13) & (ends < len(buf))
                nonempty = (length - has_cr) > 0
                nl_before = np.concatenate(([0], np.cumsum(is_nl)))
                lines = line_base + nl_before[starts]
                dpos = np.flatnonzero((buf == delim) & ~inside)
                rec = np.searchsorted(ends, dpos)
                n_fields = np.bincount(rec, minlength=len(ends) + 1)[:len(ends)] + 1
                yield lines[nonempty].astype(np.int64), n_fields[nonempty].astype(np.int64)
                consumed = min(int(ends[-1]) + 1, len(buf))
                line_base += int(nl_before[consumed])
                leftover = data[consumed:]
            else:
                leftover = data
            if eof:
                return


def find_bad_bytes(open_stream, encoding, chunk_size=_SCAN_CHUNK):
    """First bytes of a file not valid in ``encoding``.

    Returns
    -------
    (byte_offset, line, bytes) or None
        0-based byte offset in the (decompressed) file, 1-based line, offending bytes.
    """
    decoder = codecs.getincrementaldecoder(encoding)("strict")
    offset, line = 0, 1
    with open_stream() as f:
        while True:
            chunk = f.read(chunk_size)
            held = decoder.getstate()[0]  # bytes of a split character from the last chunk
            held = held if isinstance(held, bytes) else b""
            try:
                decoder.decode(chunk, final=not chunk)
            except UnicodeDecodeError as e:
                # e.start indexes held + chunk; held bytes never contain a newline.
                data = held + chunk
                pos = max(e.start, 0)
                return (offset - len(held) + pos, line + data[:pos].count(b"\n"),
                        data[pos:pos + max(e.end - e.start, 1)])
            if not chunk:
                return None
            line += chunk.count(b"\n")
            offset += len(chunk)
