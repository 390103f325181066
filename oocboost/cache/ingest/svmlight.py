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
        ``index`` and ``value``, and each row's line number.

        The numba tokenizer (``kernels/svmlight.py``) splits the lines, parses the
        indices and copies the labels, qids and values into one compact text of
        numbers, which pyarrow casts to float64 at once (strtod's rounding, as
        scikit-learn's reader); a malformed token is refused naming its line."""
        from ...kernels.svmlight import svmlight_tokens

        (n_rows, row_line, row_label, row_qid, n_pairs, pair_row, pair_index, pair_value,
         n_nums, num_offsets, num_data, error) = svmlight_tokens(
            np.frombuffer(text, np.uint8))
        if error[0]:
            self._tokenizer_error(error, first_line, text)
        line_of_row = first_line + row_line[:n_rows]
        numbers = pa.StringArray.from_buffers(
            int(n_nums), pa.py_buffer(num_offsets[:n_nums + 1]),
            pa.py_buffer(num_data[:int(num_offsets[n_nums])]))
        try:
            values = pc.cast(numbers, pa.float64()).to_numpy(zero_copy_only=False)
        except pa.ArrowInvalid:
            self._diagnose(numbers, row_label[:n_rows], row_qid[:n_rows],
                           pair_value[:n_pairs], pair_row[:n_pairs], line_of_row)
            raise
        qid_at = row_qid[:n_rows]
        qid = None
        if (qid_at >= 0).any():
            if not (qid_at >= 0).all():
                r = int(np.flatnonzero(qid_at < 0)[0])
                raise InputError(f"{self.name}: line {line_of_row[r]}: every line needs "
                                 f"one qid: token when any has one")
            qid = values[qid_at]
        row = pair_row[:n_pairs]
        index = pair_index[:n_pairs]
        self._check_order(index, row, line_of_row)
        row_ptr = np.concatenate(([0], np.cumsum(np.bincount(row, minlength=n_rows))))
        return dict(label=values[row_label[:n_rows]], qid=qid, row_ptr=row_ptr,
                    index=index, value=values[pair_value[:n_pairs]], row=row,
                    line=line_of_row)

    def _tokenizer_error(self, error, first_line, text):
        from ...kernels.svmlight import BAD_INDEX, QID_NOT_SECOND

        code, line, start, end = (int(v) for v in error)
        where = f"{self.name}: line {first_line + line}"
        token = text[start:end].decode("ascii", "replace")
        if code == BAD_INDEX:
            raise InputError(f"{where}: feature index {token!r} is not a non-negative "
                             f"integer")
        if code == QID_NOT_SECOND:
            raise InputError(f"{where}: qid: must follow the label")
        raise InputError(f"{where}: expected index:value tokens after the label")

    def _diagnose(self, numbers, row_label, row_qid, pair_value, pair_row, line_of_row):
        """Raise the InputError naming the first label, qid or value that is not a
        number (the cast of all of them failed)."""
        self._numbers(numbers.take(pa.array(row_label)), line_of_row, "label")
        with_qid = row_qid >= 0
        if with_qid.any():
            self._numbers(numbers.take(pa.array(row_qid[with_qid])),
                          line_of_row[with_qid], "qid")
        self._numbers(numbers.take(pa.array(pair_value)), line_of_row[pair_row], "value")

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
