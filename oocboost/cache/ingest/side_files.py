"""LightGBM's side files next to a text data file: ``FILE.weight`` (one weight per row),
``FILE.query`` (rows per query group, in order) and ``FILE.init`` (initial scores: one
line per row, one tab-separated value per output), read when they exist as LightGBM
reads them. svmlight files use them directly
(``svmlight.py``); a CSV/TSV file through :class:`WithSideFiles`."""
from __future__ import annotations

import os
from collections.abc import Iterator

import numpy as np
import pyarrow as pa
from pyarrow import csv as pa_csv

from ...errors import InputError, ParameterError
from .source import Batch, Source, file_fingerprint


def read_column(path: str, what: str, n_expected: int | None = None) -> np.ndarray | None:
    """The numbers of a one-column side file (None when it does not exist)."""
    if not os.path.exists(path):
        return None
    try:
        table = pa_csv.read_csv(path, read_options=pa_csv.ReadOptions(
            autogenerate_column_names=True), parse_options=pa_csv.ParseOptions(
            delimiter=" "), convert_options=pa_csv.ConvertOptions(
            column_types={"f0": pa.float64()}))
    except pa.ArrowInvalid as exc:
        raise InputError(f"{path}: {what}: {exc}") from None
    values = table.column(0).to_numpy()
    if n_expected is not None and len(values) != n_expected:
        raise InputError(f"{path}: {len(values)} {what}, the data has {n_expected} rows")
    bad = np.flatnonzero(~np.isfinite(values))
    if len(bad):
        raise InputError(f"{path}: line {int(bad[0]) + 1}: {what} must be finite numbers")
    return values


def group_ids(path: str, n_rows: int | None) -> np.ndarray | None:
    """A group id per row from ``path``'s group sizes (None when it does not exist)."""
    sizes = read_column(path, "query group sizes")
    if sizes is None:
        return None
    if np.any(sizes < 1) or np.any(sizes != np.floor(sizes)) or \
            (n_rows is not None and sizes.sum() != n_rows):
        raise InputError(f"{path}: group sizes must be positive integers summing to the "
                         f"data's rows{'' if n_rows is None else f' ({n_rows})'}; they sum "
                         f"to {sizes.sum():g}")
    return np.repeat(np.arange(len(sizes), dtype=np.float64), sizes.astype(np.int64))


def read_init(path: str, n_expected: int | None = None) -> np.ndarray | None:
    """The initial scores of ``path`` (LightGBM's ``.init``: a line per row, a
    tab-separated value per output) as float64 ``(n_rows,)`` or ``(n_rows, k)``; None
    when the file does not exist."""
    if not os.path.exists(path):
        return None
    try:
        table = pa_csv.read_csv(path, read_options=pa_csv.ReadOptions(
            autogenerate_column_names=True), parse_options=pa_csv.ParseOptions(
            delimiter="\t"))
        values = np.column_stack([c.to_numpy(zero_copy_only=False).astype(np.float64)
                                  for c in table.columns])
    except (pa.ArrowInvalid, ValueError, TypeError) as exc:
        raise InputError(f"{path}: initial scores: {exc}; expected one line per row of "
                         f"tab-separated numbers") from None
    if n_expected is not None and len(values) != n_expected:
        raise InputError(f"{path}: {len(values)} initial scores, the data has {n_expected} "
                         f"rows")
    bad = np.flatnonzero(~np.isfinite(values).all(axis=1))
    if len(bad):
        raise InputError(f"{path}: line {int(bad[0]) + 1}: initial scores must be finite "
                         f"numbers")
    return values[:, 0] if values.shape[1] == 1 else values


class WithSideFiles(Source):
    """A text source whose weights, query groups and base margins come from
    ``FILE.weight``, ``FILE.query`` and ``FILE.init``: the rows are the file's lines, so
    every row must be kept (``on_bad_rows="error"``)."""

    def __init__(self, inner: Source, weights: np.ndarray | None,
                 groups: np.ndarray | None, inits: np.ndarray | None = None) -> None:
        super().__init__()
        if getattr(inner, "_skip", False):
            raise ParameterError(f"{inner.name}: its side files give one value per line; "
                                 f"on_bad_rows='skip' would drop lines: fix the bad rows or "
                                 f"move the side files aside")
        self._inner = inner
        self._weights, self._groups, self._inits = weights, groups, inits
        self.name = inner.name
        self.feature_names, self.feature_kinds = inner.feature_names, inner.feature_kinds
        self.label_name = inner.label_name
        self.auto_text_columns = inner.auto_text_columns
        base = os.path.basename(inner.name)
        self.weight_name = inner.weight_name if weights is None else f"{base}.weight"
        self.group_name = inner.group_name if groups is None else f"{base}.query"
        self.base_margin_name = (inner.base_margin_name if inits is None
                                 else init_names(base, inits))

    def text_sources(self) -> list[Source]:
        """The text readers behind this source (their long-line limit is set by the
        build's memory plan)."""
        return [self._inner]

    def __getattr__(self, name: str):
        # the reader's own attributes (delimiter, header, ...) read through
        if name.startswith("__") or name == "_inner":
            raise AttributeError(name)
        return getattr(self._inner, name)

    def batches(self) -> Iterator[Batch]:
        n = 0
        for batch in self._inner.batches():
            stop = batch.row_start + batch.n_rows
            for values, role, suffix in self._sides():
                if stop > len(values):
                    raise InputError(f"{self.name}: more rows than its .{suffix} file "
                                     f"gives ({len(values)})")
                setattr(batch, role, values[batch.row_start:stop])
            n = stop
            yield batch
        for values, _, suffix in self._sides():
            if values is not None and n != len(values):
                raise InputError(f"{self.name}.{suffix} gives {len(values)} rows; the data "
                                 f"has {n}")
        self.n_rows = n
        self.n_bad_rows = self._inner.n_bad_rows
        self.n_bad_values = self._inner.n_bad_values

    def _sides(self) -> list[tuple[np.ndarray, str, str]]:
        """``(values, role, file suffix)`` of each side file read."""
        return [(values, role, suffix) for values, role, suffix in (
            (self._weights, "weight", "weight"), (self._groups, "group", "query"),
            (self._inits, "base_margin", "init")) if values is not None]

    def fingerprint(self) -> dict:
        fp = dict(self._inner.fingerprint())
        for _, _, suffix in self._sides():
            fp[suffix] = file_fingerprint(f"{self.name}.{suffix}")
        return fp


def init_names(base: str, inits: np.ndarray) -> str | list[str]:
    """The base margin's column name(s) for the scores of ``base.init``."""
    if inits.ndim == 1:
        return f"{base}.init"
    return [f"{base}.init[{k}]" for k in range(inits.shape[1])]


def with_side_files(source: Source, *, weight_given: bool, group_given: bool,
                    base_margin_given: bool = False) -> Source:
    """``source`` with the side files that exist next to it for the roles not given."""
    weights = None if weight_given else read_column(source.name + ".weight", "weights")
    groups = None if group_given else group_ids(source.name + ".query", None)
    inits = None if base_margin_given else read_init(source.name + ".init")
    if weights is None and groups is None and inits is None:
        return source
    return WithSideFiles(source, weights, groups, inits)
