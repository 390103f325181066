"""svmlight / LibSVM files streamed in blocks: ``label [qid:Q] index:value ... [# ...]``.

The text is read a block of whole lines at a time and parsed by a numba kernel
(``kernels/svmlight.py``) in one walk over its bytes, straight into dense feature
columns ``f0 .. f{n-1}`` for the sketch and the binning; the numbers it cannot read
exactly itself (over 15 significant digits, ``nan``, large exponents) are cast by
pyarrow, correctly rounded as ``strtod``. No Python code runs per row and the file is
never loaded whole; a batch holds at most 4 times its text block as float64, and up to
``MAX_PARSE_AHEAD`` blocks are parsed at once on numba's threads, handed on in order.

As scikit-learn's ``load_svmlight_file``: indices are zero-based when some index is 0,
else one-based (``zero_based`` forces either), the number of features is the largest
index of the whole file (found by a first scan of each line's first and last index) or
``n_features``, and an absent entry is 0.0, LibSVM's meaning; ``absent_as_missing``
reads it as missing, as XGBoost does. ``qid:`` tokens are the rows' query groups.
LightGBM's side files next to the data are read as LightGBM reads them: ``FILE.query``
(rows per query group, in order), ``FILE.weight`` (one weight per row) and ``FILE.init``
(one initial score per row, or per row and class: the base margins).
"""
from __future__ import annotations

import os
import re
from collections import deque
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ...errors import InputError, ParameterError
from .side_files import group_ids, init_names, read_column, read_init
from .source import NUMERIC, Batch, Source, file_fingerprint

#: The text block a build prefers: 4 MiB built the 1M-row benchmark file in 2.2-2.4 s
#: against 3.1 s with 1 MiB blocks (the CSV reader's best): a quarter of the batches, so
#: a quarter of the sketch calls and thread hand-overs.
BLOCK_BYTES = 4 << 20
#: Blocks parsed at once at most (one a thread): with the one handed on, their text and
#: parsed values (up to 4x the text) stay within the build plan's parse allowance of 40
#: text blocks (``cache/plan.py``). On 2 cores the 1M-row benchmark file's parse took
#: 0.63-0.70 s instead of 1.09-1.26 s on one thread.
MAX_PARSE_AHEAD = 4
#: The largest text block (as the CSV reader's): lines of up to half of it.
MAX_BLOCK_BYTES = 1 << 30
#: File name endings read as svmlight (LightGBM's detection looks at the content too).
EXTENSIONS = (".svm", ".libsvm", ".svmlight")
#: A data line: a label, then optionally qid:Q, then index:value pairs.
_LINE = re.compile(rb"^\s*[+-]?[0-9.eE+-]+(\s+qid:\S+)?(\s+[0-9]+:\S+)+\s*(#.*)?$")


def looks_like_svmlight(path: str, sample: bytes) -> bool:
    """True for a ``.svm``/``.libsvm``/``.svmlight`` file, or when the first data lines
    of ``sample`` all have ``index:value`` tokens after a numeric label."""
    if path.lower().endswith(EXTENSIONS):
        return True
    lines = [line for line in sample.split(b"\n")[:-1][:20]
             if line.strip() and not line.lstrip().startswith(b"#")]
    return bool(lines) and all(_LINE.match(line) for line in lines)


class SvmlightSource(Source):
    """An svmlight / LibSVM file (module docstring).

    Parameters
    ----------
    path : str
    zero_based : "auto", True or False
    n_features : int or None
        Features at least (a validation file maps to its training file's columns).
    absent_as_missing : bool
    batch_bytes : int
        Text read per block (whole lines; a longer line grows the block); the build
        sets it from its plan (:data:`BLOCK_BYTES` when memory allows) once the file is
        scanned.
    max_block_bytes : int or None
        The largest block (the memory limit's share, ``BuildPlan.max_csv_block_bytes``):
        a line over half of it is refused naming it; None: :data:`MAX_BLOCK_BYTES`.
    """

    OPTIONS = ("batch_bytes", "zero_based", "n_features", "absent_as_missing", "label",
               "weight", "group", "base_margin", "max_block_bytes")

    def __init__(self, path: str, *, zero_based: object = "auto",
                 n_features: int | None = None, absent_as_missing: bool = False,
                 batch_bytes: int = 1 << 20, label: object = None, weight: object = None,
                 group: object = None, base_margin: object = None,
                 max_block_bytes: int | None = None) -> None:
        super().__init__()
        self.max_block_bytes = max_block_bytes
        self.name = os.path.abspath(path)
        base = os.path.basename(path)
        for role, given in (("label", label), ("weight", weight), ("group", group),
                            ("base_margin", base_margin)):
            if given is not None:
                raise ParameterError(
                    f"{self.name}: an svmlight file's label is each line's first number, "
                    f"its groups the qid: tokens or {base}.query, its weights "
                    f"{base}.weight, its base margins {base}.init; "
                    f"--{role.replace('_', '-')} does not apply")
        if zero_based not in ("auto", True, False):
            raise ParameterError(f"zero_based must be 'auto', True or False, got "
                                 f"{zero_based!r}")
        self.batch_bytes = int(batch_bytes)
        self.absent_as_missing = bool(absent_as_missing)
        if os.path.getsize(self.name) == 0:
            raise InputError(f"{self.name}: the file is empty (0 bytes)")
        low, high, n_rows, has_qid = self._scan()
        if n_rows == 0:
            raise InputError(f"{self.name}: the file has no data lines")
        self.zero_based = (low == 0) if zero_based == "auto" else bool(zero_based)
        if not self.zero_based and low == 0:
            raise InputError(f"{self.name}: index 0 in a file read as one-based "
                             f"(zero_based=False)")
        width = high + 1 if self.zero_based else high
        if n_features is not None and int(n_features) < width:
            raise InputError(f"{self.name}: index {high} is past the {n_features} features "
                             f"given (the reference's)")
        self.n_features_in_file = width
        n = max(width, int(n_features or 0), 1)
        self.feature_names = [f"f{j}" for j in range(n)]
        self.feature_kinds = [NUMERIC] * n
        self.n_rows = n_rows
        self.label_name = "label"
        self._weights = self._side_weights(n_rows)
        self._groups = self._side_groups(n_rows, has_qid)
        self.weight_name = None if self._weights is None else "weight"
        self.group_name = "qid" if (has_qid or self._groups is not None) else None
        self._inits = read_init(self.name + ".init", n_rows)
        self.base_margin_name = None if self._inits is None else init_names(base, self._inits)

    # ---------------------------------------------------------------- reading
    @property
    def batch_rows(self) -> int:
        """Rows per batch at most: a batch's dense float64 columns (and label, qid)
        take at most 4 times its text block, the build plan's count of a parsed text
        batch (``cache/plan.py``)."""
        return max(1, 4 * self.batch_bytes // (8 * len(self.feature_names) + 32))

    def _blocks(self) -> Iterator[memoryview]:
        """Whole lines, about ``batch_bytes`` at a time (a longer line: the block that
        ends it, up to half of ``max_block_bytes``), each a view of a buffer of its own
        (blocks are parsed on several threads at once). The file is read into each
        buffer after the last block's unfinished line: a block's bytes are copied once,
        not sliced and joined (two more copies of the file a pass)."""
        limit = min(self.max_block_bytes or MAX_BLOCK_BYTES, MAX_BLOCK_BYTES)
        tail = b""                      # an unfinished line, carried into the next block
        offset = 0                      # bytes of the file before it
        size = self.batch_bytes
        with open(self.name, "rb") as f:
            while True:
                # past a long line's start, read as much again as it has (linear, not
                # quadratic, in the line's length)
                buf = bytearray(len(tail) + max(size, len(tail)))
                buf[:len(tail)] = tail
                got = f.readinto(memoryview(buf)[len(tail):])
                if not got:
                    break
                end = len(tail) + got
                cut = buf.rfind(b"\n", len(tail), end)
                if cut < 0:             # no line ends in it: read on, into a larger one
                    tail = bytes(buf[:end])
                    if 2 * len(tail) > limit:
                        self._line_too_long(offset, limit)
                    continue
                tail = bytes(buf[cut + 1:end])
                offset += cut + 1
                yield memoryview(buf)[:cut + 1]
        if tail.strip():
            yield memoryview(tail + b"\n")

    def _line_too_long(self, offset: int, limit: int) -> None:
        """Refuse the line that starts at byte ``offset``, naming it (its number is
        counted on this error path only)."""
        line = 1
        with open(self.name, "rb") as f:
            while offset > 0:
                chunk = f.read(min(offset, 1 << 24))
                line += chunk.count(b"\n")
                offset -= len(chunk)
        why = ("raise the memory limit" if limit < MAX_BLOCK_BYTES else
               "the largest block")
        raise InputError(f"{self.name}: line {line} is over {limit // 2:,} bytes long; the "
                         f"svmlight reader holds lines of at most {limit // 2:,} bytes here "
                         f"(a block of twice the line is parsed whole: {why})")

    def _parse_call(self, text, start: int) -> tuple:
        """The numba parser's result for ``text`` from byte ``start``: at most
        ``self.batch_rows`` rows (a block's first call runs on a parsing thread)."""
        from ...kernels.svmlight import svmlight_parse

        return svmlight_parse(np.frombuffer(text, np.uint8), start,
                              len(self.feature_names), 0 if self.zero_based else 1,
                              np.nan if self.absent_as_missing else 0.0, self.batch_rows)

    def _parse(self, first_line: int, text: bytes, raw: tuple) -> dict:
        """One parser result as a batch: ``label``, ``qid`` (or None), ``dense`` feature
        columns (features x rows), each row's ``line`` number and the lines passed
        (``n_lines``); ``first_line`` is the line of the call's first byte.

        The numba parser (``kernels/svmlight.py``) reads the lines in one walk; the
        few numbers it does not read exactly itself are cast by pyarrow (strtod's
        rounding, as scikit-learn's reader). A malformed token is refused naming its
        line."""
        (stop, n_rows, n_lines, row_line, label, qid, has_qid, dense, n_slow, slow_row,
         slow_column, slow_offsets, slow_data, error) = raw
        if error[0]:
            self._parse_error(error, first_line, text)
        line_of_row = first_line + row_line[:n_rows]
        if n_slow:
            self._cast_slow(n_slow, slow_row[:n_slow], slow_column[:n_slow],
                            slow_offsets, slow_data, line_of_row, label, qid, dense)
        has_qid = has_qid[:n_rows]
        if has_qid.any():
            if not has_qid.all():
                r = int(np.flatnonzero(~has_qid)[0])
                raise InputError(f"{self.name}: line {line_of_row[r]}: every line needs "
                                 f"one qid: token when any has one")
            qid = qid[:n_rows]
        else:
            qid = None
        return dict(label=label[:n_rows], qid=qid, dense=dense[:, :n_rows],
                    line=line_of_row, n_lines=int(n_lines))

    def _cast_slow(self, n_slow, rows, columns, offsets, data, line_of_row, label, qid,
                   dense):
        """Cast the tokens the parser left (``kernels/svmlight.py``) and put them in
        place; a token that is not a number is refused naming its line."""
        from ...kernels.svmlight import SLOW_LABEL, SLOW_QID

        strings = pa.LargeStringArray.from_buffers(
            n_slow, pa.py_buffer(offsets[:n_slow + 1]),
            pa.py_buffer(data[:int(offsets[n_slow])]))
        try:
            values = pc.cast(strings, pa.float64()).to_numpy(zero_copy_only=False)
        except pa.ArrowInvalid:
            # the error path only: name the first token that is not a number
            for k, s in enumerate(strings.to_pylist()):
                try:
                    float(s)
                except (TypeError, ValueError):
                    what = {SLOW_LABEL: "label", SLOW_QID: "qid"}.get(int(columns[k]),
                                                                     "value")
                    raise InputError(f"{self.name}: line {line_of_row[rows[k]]}: {what} "
                                     f"{s!r} is not a number") from None
            raise
        is_label, is_qid = columns == SLOW_LABEL, columns == SLOW_QID
        label[rows[is_label]] = values[is_label]
        qid[rows[is_qid]] = values[is_qid]
        feature = columns >= 0
        dense[columns[feature], rows[feature]] = values[feature]

    def _parse_error(self, error, first_line, text):
        from ...kernels import svmlight as kernel

        code, line, start, end, previous = (int(v) for v in error)
        where = f"{self.name}: line {first_line + line}"
        token = bytes(text[start:end]).decode("ascii", "replace")
        if code == kernel.BAD_INDEX:
            raise InputError(f"{where}: feature index {token!r} is not a non-negative "
                             f"integer")
        if code == kernel.QID_NOT_SECOND:
            raise InputError(f"{where}: qid: must follow the label")
        if code == kernel.NOT_INCREASING:
            raise InputError(f"{where}: feature indices must increase along a line "
                             f"(index {token} after {previous})")
        if code == kernel.OUT_OF_RANGE:
            # the scan read each line's first and last index: a larger one between
            # them breaks the increasing order (or the file changed since)
            raise InputError(f"{where}: feature index {token} is above the line's last "
                             f"index or past the {len(self.feature_names)} features the "
                             f"first read of the file found: indices must increase along "
                             f"a line (and the file must not change while it is read)")
        raise InputError(f"{where}: expected index:value tokens after the label")

    def _scan(self):
        """``(lowest index, highest index, rows, has qid)`` over the whole file, read
        by the numba scan (``kernels/svmlight.py``): the indices only, not a parse; a
        malformed line is named when the rows are read. The blocks are scanned on
        numba's threads while the next ones are read (the scan is a third of the
        build's reading)."""
        import numba

        from ...kernels.svmlight import svmlight_scan

        low, high, n_rows, n_qid = None, -1, 0, 0

        def add(result):
            nonlocal low, high, n_rows, n_qid
            lo, hi, lines, qids = result
            n_rows += int(lines)
            n_qid += int(qids)
            if hi >= 0:
                low = int(lo) if low is None else min(low, int(lo))
                high = max(high, int(hi))

        n_threads = max(1, numba.get_num_threads())
        with ThreadPoolExecutor(n_threads, thread_name_prefix="oocboost-scan") as pool:
            pending = deque()
            for text in self._blocks():
                pending.append(pool.submit(svmlight_scan, np.frombuffer(text, np.uint8)))
                if len(pending) > 2 * n_threads:      # a few blocks in memory at most
                    add(pending.popleft().result())
            for future in pending:
                add(future.result())
        return (1 if low is None else low), high, n_rows, n_qid > 0

    # ---------------------------------------------------------------- side files
    def _side_weights(self, n_rows):
        return read_column(self.name + ".weight", "weights", n_rows)

    def _side_groups(self, n_rows, has_qid):
        if has_qid and os.path.exists(self.name + ".query"):
            raise InputError(f"{self.name}: both qid: tokens and {self.name}.query give the "
                             f"query groups; keep one")
        return group_ids(self.name + ".query", n_rows)

    # ---------------------------------------------------------------- batches
    def _parsed(self) -> Iterator[dict]:
        """Each text block parsed, ``batch_rows`` rows at most at a time. The blocks' first
        batches are parsed on numba's threads, as many ahead as there are threads (up to
        :data:`MAX_PARSE_AHEAD`), while the batches of the earliest are handed on in
        order (the parse is most of pass 1: on one thread it left the second core to
        the sketch alone)."""
        import numba

        n_threads = max(1, min(numba.get_num_threads(), MAX_PARSE_AHEAD))
        first_line = 1
        with ThreadPoolExecutor(n_threads, thread_name_prefix="oocboost-parse") as pool:
            pending = deque()
            try:
                for text in self._blocks():
                    pending.append((text, pool.submit(self._parse_call, text, 0)))
                    if len(pending) > n_threads:
                        first_line = yield from self._batches_of(first_line,
                                                                 *pending.popleft())
                while pending:
                    first_line = yield from self._batches_of(first_line,
                                                             *pending.popleft())
            finally:
                for _, future in pending:      # an error or a closed generator
                    future.cancel()

    def _batches_of(self, first_line, text, future):
        """The batches of one block: its first, parsed ahead, then the rest one at a time
        (a block of wide sparse lines parses into many batches: holding them all at once
        would take many times the text). Returns the line after the block."""
        raw = future.result()
        while True:
            block = self._parse(first_line, text, raw)
            first_line += block["n_lines"]
            if len(block["label"]):
                yield block
            stop = int(raw[0])
            if stop >= len(text):
                return first_line
            raw = self._parse_call(text, stop)

    def batches(self) -> Iterator[Batch]:
        row_start = 0
        for block in self._parsed():
            n_rows = len(block["label"])
            if not np.all(np.isfinite(block["label"])):
                r = int(np.flatnonzero(~np.isfinite(block["label"]))[0])
                raise InputError(f"{self.name}: line {block['line'][r]}: the label is not a "
                                 f"finite number")
            dense = block["dense"]
            batch = Batch(row_start=row_start, n_rows=n_rows,
                          numeric={name: dense[j] for j, name in
                                   enumerate(self.feature_names)},
                          label=block["label"])
            stop = row_start + n_rows
            if self._weights is not None:
                batch.weight = self._weights[row_start:stop]
            if self._inits is not None:
                batch.base_margin = self._inits[row_start:stop]
            if self._groups is not None:
                batch.group = self._groups[row_start:stop]
            elif self.group_name is not None:
                if block["qid"] is None:
                    raise InputError(f"{self.name}: line {block['line'][0]}: every line "
                                     f"needs one qid: token when any has one")
                batch.group = block["qid"]
            yield batch
            row_start = stop

    def fingerprint(self) -> dict:
        fp = file_fingerprint(self.name)
        for suffix in (".query", ".weight", ".init"):
            if os.path.exists(self.name + suffix):
                fp[suffix.lstrip(".")] = file_fingerprint(self.name + suffix)
        fp["svmlight"] = {"zero_based": self.zero_based, "n_features": len(self.feature_names),
                          "absent_as_missing": self.absent_as_missing}
        return fp
