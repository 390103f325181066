"""Per-row base margins (XGBoost's ``base_margin``, LightGBM's ``init_score``) of a cache.

A cache built with ``base_margin=`` keeps, beside its blocks, one file of ``n_rows x
n_columns`` float64 values in row order (``base_margin.f64``, raw little-endian, no
header), its column names, count and CRC-32 in the manifest entry ``base_margin``. The
values are offsets added to a boosting model's margin in place of its constant base:
training starts every row from its own offset, and predicting on the cache adds it.

The file is read a block's rows at a time through a read-only memory map, so it costs
no RAM beyond the block being trained on. Like every file of a cache it is untrusted:
its size is checked on opening, each block's values are checked finite when read, and
``verify`` checks its CRC.
"""
from __future__ import annotations

import os
import zlib

import numpy as np

from ...errors import CacheError, ParameterError
from .trust import open_regular

#: The values file inside the cache folder.
BASE_MARGIN_FILE = "base_margin.f64"
_DTYPE = np.dtype("<f8")
#: Bytes read at a time by :meth:`MarginReader.crc32`.
_CRC_CHUNK_BYTES = 8 << 20


def check_margin_entry(entry: object, path: str) -> list[str]:
    """The manifest's ``base_margin`` entry ``{"columns", "crc32"}``, checked; returns
    its column names."""
    if not isinstance(entry, dict) or set(entry) != {"columns", "crc32"}:
        raise CacheError(f"cache {path}: manifest field 'base_margin' should be an object "
                         f"with columns and crc32, got {entry!r}")
    columns = entry["columns"]
    if not isinstance(columns, list) or not columns or \
            not all(isinstance(c, str) for c in columns):
        raise CacheError(f"cache {path}: base_margin columns {columns!r} should be a "
                         f"non-empty list of names")
    crc = entry["crc32"]
    if isinstance(crc, bool) or not isinstance(crc, int) or not 0 <= crc < 2 ** 32:
        raise CacheError(f"cache {path}: base_margin crc32={crc!r}, expected a 32-bit "
                         f"integer")
    return list(columns)


class MarginWriter:
    """Appends the base margins of each block written to ``folder/base_margin.f64``.

    Parameters
    ----------
    folder : str
        The cache's temporary folder (the file moves with it at commit).
    columns : list[str]
        Source column names of the margins, one per output.
    """

    def __init__(self, folder: str, columns: list[str]) -> None:
        self.columns = [str(c) for c in columns]
        self._file = open(os.path.join(folder, BASE_MARGIN_FILE), "wb")
        self._crc = 0

    def write(self, values: np.ndarray, n_rows: int, where: str) -> None:
        """Append ``values`` ``(n_rows,)`` or ``(n_rows, n_columns)`` (finite)."""
        k = len(self.columns)
        values = np.asarray(values, dtype=np.float64)
        if values.ndim == 1 and k == 1:
            values = values[:, None]
        if values.shape != (n_rows, k):
            raise ParameterError(f"{where}: base_margin has shape {values.shape}, expected "
                                 f"({n_rows}, {k})")
        if not np.all(np.isfinite(values)):
            raise ParameterError(f"{where}: base_margin has a value that is not finite")
        data = np.ascontiguousarray(values, dtype=_DTYPE).tobytes()
        self._file.write(data)
        self._crc = zlib.crc32(data, self._crc)

    def finish(self) -> dict:
        """Flush and close the file; returns the manifest entry."""
        self._file.flush()
        os.fsync(self._file.fileno())
        self._file.close()
        return {"columns": self.columns, "crc32": self._crc}

    def close(self) -> None:
        if not self._file.closed:
            self._file.close()


class MarginReader:
    """The base margins of an opened cache, read a block at a time (memory-mapped)."""

    def __init__(self, path: str, entry: object, n_rows: int) -> None:
        self.path = path
        self.columns = check_margin_entry(entry, path)
        self.crc = entry["crc32"]
        self.n_rows = int(n_rows)
        nbytes = self.n_rows * len(self.columns) * _DTYPE.itemsize
        handle, info = open_regular(path, BASE_MARGIN_FILE, what="the base margin file")
        with handle:
            if info.st_size != nbytes:
                raise CacheError(f"cache {path}: the base margin file has {info.st_size} "
                                 f"bytes, expected {nbytes} ({self.n_rows} rows x "
                                 f"{len(self.columns)} columns of 8 bytes): truncated or "
                                 f"replaced")
            # np.memmap keeps its own mapping: the file may close
            self._values = np.memmap(handle, dtype=_DTYPE, mode="r",
                                     shape=(self.n_rows, len(self.columns)))

    @property
    def n_columns(self) -> int:
        return len(self.columns)

    def rows(self, start: int, stop: int, where: str = "") -> np.ndarray:
        """Rows ``start .. stop`` as a float64 ``(stop - start, n_columns)`` copy,
        checked finite."""
        values = np.array(self._values[start:stop], dtype=np.float64)
        bad = np.flatnonzero(~np.isfinite(values).all(axis=1))
        if len(bad):
            raise CacheError(f"cache {self.path}: base margin of row {start + int(bad[0])}"
                             f"{where} is not finite; the file is damaged: rebuild the cache")
        return values

    def crc32(self) -> int:
        """CRC-32 of the whole file, read in chunks (for ``verify``)."""
        flat = self._values.reshape(-1)
        step = _CRC_CHUNK_BYTES // _DTYPE.itemsize
        crc = 0
        for start in range(0, len(flat), step):
            crc = zlib.crc32(np.ascontiguousarray(flat[start:start + step]).tobytes(), crc)
        return crc

    def check_crc(self) -> None:
        if self.crc32() != self.crc:
            raise CacheError(f"cache {self.path}: the base margin file fails its checksum "
                             f"(crc32 {self.crc32()} != {self.crc}); rebuild the cache")
