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
        ``index`` and ``value``, and each row's line number."""
        buf = np.frombuffer(text, np.uint8)
        ends = np.flatnonzero(buf == 10)
        starts = np.concatenate(([0], ends[:-1] + 1))
        offsets = np.empty(len(ends) + 1, np.int32)
        offsets[:-1], offsets[-1] = starts, ends[-1] if len(ends) else 0
        lines = pa.StringArray.from_buffers(len(ends), pa.py_buffer(offsets.tobytes()),
                                            pa.py_buffer(text))
        if b"#" in text:     # the regex only for blocks with comments (it costs 40%)
            lines = pc.replace_substring_regex(lines, pattern="#.*", replacement="")
        # trimmed first: a line's last whitespace would split off an empty token; the
        # format is ASCII, whose kernels are the faster ones
        lines = pc.ascii_trim_whitespace(lines)
        keep = pc.greater(pc.binary_length(lines), 0).to_numpy(zero_copy_only=False)
        tokens = pc.ascii_split_whitespace(lines)  # blank and comment-only lines: dropped
        counts = pc.list_value_length(tokens).to_numpy(zero_copy_only=False)
        line_of_row = first_line + np.flatnonzero(keep)
        tokens = tokens.filter(pa.array(keep))
        counts = counts[keep]
        flat = pc.list_flatten(tokens)
        row_start = np.concatenate(([0], np.cumsum(counts)[:-1])).astype(np.int64)
        label = self._numbers(flat.take(pa.array(row_start)), line_of_row, "label")
        rest = np.ones(len(flat), bool)
        rest[row_start] = False
        row_of_token = np.repeat(np.arange(len(counts)), counts)[rest]
        rest_tokens = flat.filter(pa.array(rest))
        is_qid = pc.starts_with(rest_tokens, "qid:").to_numpy(zero_copy_only=False)
        qid = None
        if is_qid.any():
            qid = self._qids(rest_tokens, is_qid, row_of_token, len(counts), line_of_row)
        pairs = pc.split_pattern(rest_tokens.filter(pa.array(~is_qid)), ":", max_splits=1)
        row = row_of_token[~is_qid]
        lengths = pc.list_value_length(pairs).to_numpy(zero_copy_only=False)
        if len(lengths) and (lengths != 2).any():
            r = row[np.flatnonzero(lengths != 2)[0]]
            raise InputError(f"{self.name}: line {line_of_row[r]}: expected index:value "
                             f"tokens after the label")
        parts = pc.list_flatten(pairs)
        index = self._integers(parts[0::2] if len(parts) else parts, row, line_of_row)
        value = self._numbers(parts[1::2] if len(parts) else parts, line_of_row[row],
                              "value")
        self._check_order(index, row, line_of_row)
        row_ptr = np.concatenate(([0], np.cumsum(np.bincount(row, minlength=len(counts)))))
        return dict(label=label, qid=qid, row_ptr=row_ptr, index=index, value=value,
                    row=row, line=line_of_row)

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

    def _qids(self, tokens, is_qid, row_of_token, n_rows, line_of_row):
        qid_rows = row_of_token[is_qid]
        if len(np.unique(qid_rows)) != len(qid_rows) or len(qid_rows) != n_rows:
            missing = np.setdiff1d(np.arange(n_rows), qid_rows)
            r = missing[0] if len(missing) else qid_rows[np.argmax(np.bincount(qid_rows))]
            raise InputError(f"{self.name}: line {line_of_row[r]}: every line needs one "
                             f"qid: token when any has one")
        text = pc.utf8_slice_codeunits(tokens.filter(pa.array(is_qid)), 4)
        qid = np.empty(n_rows)
        qid[qid_rows] = self._numbers(text, line_of_row[qid_rows], "qid")
        return qid

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
        """``(lowest index, highest index, rows, has qid)`` over the whole file."""
        low, high, n_rows, has_qid = None, -1, 0, False
        for first_line, text in self._blocks():
            block = self._parse(first_line, text)
            n_rows += len(block["label"])
            has_qid |= block["qid"] is not None
            if len(block["index"]):
                lo, hi = int(block["index"].min()), int(block["index"].max())
                low = lo if low is None else min(low, lo)
                high = max(high, hi)
        return (1 if low is None else low), high, n_rows, has_qid

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
