"""svmlight / LibSVM files streamed in blocks: ``label [qid:Q] index:value ... [# ...]``.

The text is read a block of whole lines at a time and parsed by Arrow's compute kernels
(split on whitespace, on ``:``, cast to numbers: correctly rounded, as ``strtod``), so no
Python code runs per row and the file is never loaded whole. Each block becomes dense
feature columns ``f0 .. f{n-1}`` for the sketch and the binning.

As scikit-learn's ``load_svmlight_file``: indices are zero-based when some index is 0,
else one-based (``zero_based`` forces either), the number of features is the largest
index of the whole file (found by a first scan) or ``n_features``, and an absent entry
is 0.0, LibSVM's meaning; ``absent_as_missing`` reads it as missing, as XGBoost does.
``qid:`` tokens are the rows' query groups. LightGBM's side files next to the data are
read as LightGBM reads them: ``FILE.query`` (rows per query group, in order) and
``FILE.weight`` (one weight per row); ``FILE.init`` (initial scores) is not used yet,
which a warning says.
"""
from __future__ import annotations

import os
import re
from collections.abc import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ...errors import InputError, ParameterError
from .side_files import group_ids, init_names, read_column, read_init
from .source import NUMERIC, Batch, Source, file_fingerprint

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


def _strip_comments(buf: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """``buf`` with each ``#`` and the rest of its line blanked (spaces); ``ends``: the
    positions of its newlines, the last byte among them."""
    hashes = np.flatnonzero(buf == 35)
    delta = np.zeros(len(buf) + 1, np.int64)
    np.add.at(delta, hashes, 1)
    np.add.at(delta, ends[np.searchsorted(ends, hashes)], -1)
    out = buf.copy()
    out[np.cumsum(delta[:-1]) > 0] = 32
    return out


def _check_colons(buf: np.ndarray, colon: np.ndarray, ends: np.ndarray, first_line: int,
                  name: str) -> None:
    """A colon must join two tokens (``index:value``, ``qid:Q``): none at a token's edge,
    none twice in a token."""
    at = np.flatnonzero(colon)
    if not len(at):
        return
    space = (buf == 32) | (buf == 9) | (buf == 10) | (buf == 13)
    before = np.where(at > 0, at - 1, at)
    after = np.minimum(at + 1, len(buf) - 1)
    edge = space[before] | space[after] | (at == 0) | colon[after] | (at + 1 >= len(buf))
    if edge.any():
        line = first_line + int(np.searchsorted(ends, at[np.argmax(edge)]))
        raise InputError(f"{name}: line {line}: expected index:value tokens after the "
                         f"label")


def _qid_positions(buf: np.ndarray) -> np.ndarray:
    """Where ``qid:`` starts in ``buf``."""
    if len(buf) < 4:
        return np.empty(0, np.int64)
    return np.flatnonzero((buf[:-3] == 113) & (buf[1:-2] == 105) & (buf[2:-1] == 100)
                          & (buf[3:] == 58))


def _check_qids(buf, colon, qid_at, starts, ends, keep, qids, line_of_row, name):
    """A line has a qid: token right after its label or none; the block's lines all have
    one or none."""
    if not len(qid_at):
        return
    if (qids > 1).any() or not (qids > 0).all():
        r = int(np.flatnonzero((qids > 1) | (qids == 0))[0])
        raise InputError(f"{name}: line {line_of_row[r]}: every line needs one qid: "
                         f"token when any has one")
    # no index:value before the qid on its line
    before = np.cumsum(colon)
    line = np.searchsorted(ends, qid_at)
    first = np.where(starts[line] > 0, before[np.maximum(starts[line] - 1, 0)], 0)
    late = np.flatnonzero(before[qid_at] - first > 0)
    if len(late):
        r = int(np.searchsorted(np.flatnonzero(keep), line[late[0]]))
        raise InputError(f"{name}: line {line_of_row[r]}: qid: must follow the label")


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
        Text read per block (whole lines; a longer line grows the block).
    """

    OPTIONS = ("batch_bytes", "zero_based", "n_features", "absent_as_missing", "label",
               "weight", "group", "base_margin")

    def __init__(self, path: str, *, zero_based: object = "auto",
                 n_features: int | None = None, absent_as_missing: bool = False,
                 batch_bytes: int = 1 << 20, label: object = None, weight: object = None,
                 group: object = None, base_margin: object = None) -> None:
        super().__init__()
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
        self._batch_bytes = int(batch_bytes)
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
    def _blocks(self) -> Iterator[tuple[int, bytes]]:
        """``(first line number, text)`` of whole lines, about ``batch_bytes`` each."""
        line_no = 1
        carry = b""
        with open(self.name, "rb") as f:
            while True:
                chunk = f.read(self._batch_bytes)
                if not chunk:
                    break
                data = carry + chunk
                cut = data.rfind(b"\n")
                if cut < 0:           # a line longer than the block: read on
                    carry = data
                    continue
                text, carry = data[:cut + 1], data[cut + 1:]
                yield line_no, text
                line_no += text.count(b"\n")
        if carry.strip():
            yield line_no, carry + b"\n"

    def _parse(self, first_line: int, text: bytes) -> dict:
        """One block's rows: labels, qids (or None), CSR ``row_ptr``, 0-based-in-file
        ``index`` and ``value``, and each row's line number.

        ``qid:`` becomes four spaces and every other ``:`` one, so that a line's tokens
        are its label, its qid when it has one, then index and value by turns, and all
        of a block's tokens are parsed as numbers by one cast (splitting every token on
        its colon cost the most). The byte offsets do not move, and the colons and qids
        are counted per line first, so a token that is not ``index:value`` is still
        refused naming its line."""
        buf = np.frombuffer(text, np.uint8)
        ends = np.flatnonzero(buf == 10)
        if b"#" in text:     # comments only where there are some
            buf = _strip_comments(buf, ends)
            text = buf.tobytes()
        colon = buf == 58
        _check_colons(buf, colon, ends, first_line, self.name)
        has_qids = b"qid:" in text
        qid_at = _qid_positions(buf) if has_qids else np.empty(0, np.int64)
        colon[qid_at + 3] = False
        starts = np.concatenate(([0], ends[:-1] + 1))
        colons = (np.add.reduceat(colon.view(np.uint8), starts, dtype=np.int64)
                  if len(ends) else np.empty(0, np.int64))
        qids = np.bincount(np.searchsorted(ends, qid_at), minlength=len(ends))
        offsets = np.empty(len(ends) + 1, np.int32)
        offsets[:-1], offsets[-1] = starts, ends[-1] if len(ends) else 0
        spaced = (text.replace(b"qid:", b"    ") if has_qids else text).replace(b":", b" ")
        lines = pa.StringArray.from_buffers(len(ends), pa.py_buffer(offsets.tobytes()),
                                            pa.py_buffer(spaced))
        # trimmed first (a line's edge whitespace, its newline among it, would split off
        # empty tokens); ASCII kernels: the format is ASCII, and they are the faster ones
        lines = pc.ascii_trim_whitespace(lines)
        tokens = pc.ascii_split_whitespace(lines)
        counts = pc.list_value_length(tokens).to_numpy(zero_copy_only=False)
        # blank and comment-only lines: dropped
        keep = pc.greater(pc.binary_length(lines), 0).to_numpy(zero_copy_only=False)
        line_of_row = first_line + np.flatnonzero(keep)
        if not keep.all():
            tokens = tokens.filter(pa.array(keep))
            counts, colons, qids = counts[keep], colons[keep], qids[keep]
        _check_qids(buf, colon, qid_at, starts, ends, keep, qids, line_of_row, self.name)
        bad = np.flatnonzero(counts != 1 + qids + 2 * colons)
        if len(bad):
            raise InputError(f"{self.name}: line {line_of_row[bad[0]]}: expected "
                             f"index:value tokens after the label")
        flat = pc.list_flatten(tokens)
        row_start = np.concatenate(([0], np.cumsum(counts)[:-1])).astype(np.int64)
        n_pairs = colons
        row = np.repeat(np.arange(len(counts)), n_pairs)
        at = np.repeat(row_start + 1 + qids - 2 * np.concatenate(([0], np.cumsum(
            n_pairs)[:-1])), n_pairs) + 2 * np.arange(len(row))
        try:
            numbers = pc.cast(flat, pa.float64()).to_numpy(zero_copy_only=False)
        except pa.ArrowInvalid:
            self._diagnose(flat, row_start, qids, at, row, line_of_row)
            raise
        label = numbers[row_start]
        qid = numbers[row_start + 1] if qids.any() else None
        index = self._indices(numbers[at], flat, at, row, line_of_row)
        value = numbers[at + 1]
        self._check_order(index, row, line_of_row)
        row_ptr = np.concatenate(([0], np.cumsum(n_pairs)))
        return dict(label=label, qid=qid, row_ptr=row_ptr, index=index, value=value,
                    row=row, line=line_of_row)

    def _diagnose(self, flat, row_start, qids, at, row, line_of_row):
        """Raise the InputError naming the first token of each kind that is not a
        number (the cast of all of them failed)."""
        self._numbers(flat.take(pa.array(row_start)), line_of_row, "label")
        if qids.any():
            self._numbers(flat.take(pa.array(row_start[qids > 0] + 1)),
                          line_of_row[qids > 0], "qid")
        self._integers(flat.take(pa.array(at)), row, line_of_row)
        self._numbers(flat.take(pa.array(at + 1)), line_of_row[row], "value")

    def _indices(self, numbers, flat, at, row, line_of_row):
        """Feature indices (parsed as float64 with everything) as int64, each checked to
        be a non-negative integer as written."""
        bad = ~((numbers >= 0) & (numbers == np.floor(numbers)) & (numbers < 2.0 ** 53))
        if bad.any():
            k = int(np.argmax(bad))
            raise InputError(f"{self.name}: line {line_of_row[row[k]]}: feature index "
                             f"{flat[int(at[k])].as_py()!r} is not a non-negative integer")
        return numbers.astype(np.int64)

    def _numbers(self, strings, line_of_each, what):
        try:
            return pc.cast(strings, pa.float64()).to_numpy(zero_copy_only=False)
        except pa.ArrowInvalid:
            pass
        # the error path only: find the first token that is not a number
        for i, s in enumerate(strings.to_pylist()):
            try:
                float(s)
            except (TypeError, ValueError):
                raise InputError(f"{self.name}: line {line_of_each[i]}: {what} {s!r} is "
                                 f"not a number") from None
        raise InputError(f"{self.name}: a {what} is not a number")

    def _integers(self, strings, row, line_of_row):
        try:
            index = pc.cast(strings, pa.int64()).to_numpy(zero_copy_only=False)
        except pa.ArrowInvalid:
            index = None
        if index is None or (len(index) and index.min() < 0):
            for i, s in enumerate(strings.to_pylist()):
                if not s.isdigit():
                    raise InputError(f"{self.name}: line {line_of_row[row[i]]}: feature "
                                     f"index {s!r} is not a non-negative integer")
        return index

    def _check_order(self, index, row, line_of_row):
        """Indices increase along a line (svmlight's rule, as scikit-learn checks)."""
        if len(index) < 2:
            return
        same_row = row[1:] == row[:-1]
        bad = np.flatnonzero(same_row & (index[1:] <= index[:-1]))
        if len(bad):
            r = row[bad[0] + 1]
            raise InputError(f"{self.name}: line {line_of_row[r]}: feature indices must "
                             f"increase along a line (index {index[bad[0] + 1]} after "
                             f"{index[bad[0]]})")

    def _scan(self):
        """``(lowest index, highest index, rows, has qid)`` over the whole file, read
        by the numba scan (``kernels/svmlight.py``): the indices only, not a parse; a
        malformed line is named when the rows are read."""
        from ...kernels.svmlight import svmlight_scan

        low, high, n_rows, n_qid = None, -1, 0, 0
        for _, text in self._blocks():
            lo, hi, lines, qids = svmlight_scan(np.frombuffer(text, np.uint8))
            n_rows += int(lines)
            n_qid += int(qids)
            if hi >= 0:
                low = int(lo) if low is None else min(low, int(lo))
                high = max(high, int(hi))
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
    def batches(self) -> Iterator[Batch]:
        row_start = 0
        n = len(self.feature_names)
        shift = 0 if self.zero_based else 1
        fill = np.nan if self.absent_as_missing else 0.0
        for first_line, text in self._blocks():
            block = self._parse(first_line, text)
            n_rows = len(block["label"])
            if n_rows == 0:
                continue
            if not np.all(np.isfinite(block["label"])):
                r = int(np.flatnonzero(~np.isfinite(block["label"]))[0])
                raise InputError(f"{self.name}: line {block['line'][r]}: the label is not a "
                                 f"finite number")
            dense = np.full((n, n_rows), fill)
            dense[block["index"] - shift, block["row"]] = block["value"]
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
