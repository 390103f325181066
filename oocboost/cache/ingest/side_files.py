"""LightGBM's side files next to a text data file: ``FILE.weight`` (one weight per row),
``FILE.query`` (rows per query group, in order) and ``FILE.init`` (initial scores), read
when they exist as LightGBM reads them. svmlight files use them directly
(``svmlight.py``); a CSV/TSV file through :class:`WithSideFiles`."""
from __future__ import annotations

import os
import warnings
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


def warn_init(path: str) -> None:
    if os.path.exists(path + ".init"):
        warnings.warn(f"{path}.init (initial scores) is not used: oocboost does not read "
                      f"base margins yet", stacklevel=3)


class WithSideFiles(Source):
    """A text source whose weights and query groups come from ``FILE.weight`` and
    ``FILE.query``: the rows are the file's lines, so every row must be kept
    (``on_bad_rows="error"``)."""

    def __init__(self, inner: Source, weights: np.ndarray | None,
                 groups: np.ndarray | None) -> None:
        super().__init__()
        if getattr(inner, "_skip", False):
            raise ParameterError(f"{inner.name}: its side files give one value per line; "
                                 f"on_bad_rows='skip' would drop lines: fix the bad rows or "
                                 f"move the side files aside")
        self._inner = inner
        self._weights, self._groups = weights, groups
        self.name = inner.name
        self.feature_names, self.feature_kinds = inner.feature_names, inner.feature_kinds
        self.label_name = inner.label_name
        base = os.path.basename(inner.name)
        self.weight_name = inner.weight_name if weights is None else f"{base}.weight"
        self.group_name = inner.group_name if groups is None else f"{base}.query"

    def __getattr__(self, name: str):
        # the reader's own attributes (delimiter, header, ...) read through
        if name.startswith("__") or name == "_inner":
            raise AttributeError(name)
        return getattr(self._inner, name)

    def batches(self) -> Iterator[Batch]:
        n = 0
        for batch in self._inner.batches():
            stop = batch.row_start + batch.n_rows
            for values, role in ((self._weights, "weight"), (self._groups, "group")):
                if values is None:
                    continue
                if stop > len(values):
                    suffix = "weight" if role == "weight" else "query"
                    raise InputError(f"{self.name}: more rows than its .{suffix} file "
                                     f"gives ({len(values)})")
                setattr(batch, role, values[batch.row_start:stop])
            n = stop
            yield batch
        for values, suffix in ((self._weights, "weight"), (self._groups, "query")):
            if values is not None and n != len(values):
                raise InputError(f"{self.name}.{suffix} gives {len(values)} rows; the data "
                                 f"has {n}")
        self.n_rows = n
        self.n_bad_rows = self._inner.n_bad_rows

    def fingerprint(self) -> dict:
        fp = dict(self._inner.fingerprint())
        for suffix, values in ((".weight", self._weights), (".query", self._groups)):
            if values is not None:
                fp[suffix.lstrip(".")] = file_fingerprint(self.name + suffix)
        return fp


def with_side_files(source: Source, *, weight_given: bool, group_given: bool) -> Source:
    """``source`` with the side files that exist next to it for the roles not given."""
    warn_init(source.name)
    weights = None if weight_given else read_column(source.name + ".weight", "weights")
    groups = None if group_given else group_ids(source.name + ".query", None)
    if weights is None and groups is None:
        return source
    return WithSideFiles(source, weights, groups)
