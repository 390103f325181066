"""Parquet files streamed with ``ParquetFile.iter_batches``."""
from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq

from ...errors import InputError
from .source import ArrowBatchSource, file_fingerprint


def _open(path):
    try:
        return pq.ParquetFile(path)
    except (pa.ArrowException, OSError) as e:
        raise InputError(f"{path}: cannot read as a Parquet file ({e})") from None


class ParquetSource(ArrowBatchSource):
    """A Parquet file read ``batch_rows`` rows at a time, only the needed columns.

    Batches are at most ``batch_rows`` rows (shorter at row-group ends).
    """

    def __init__(self, path, *, label=None, weight=None, drop=(), categorical="auto",
                 batch_rows=65536, group=None,
                 base_margin=None, on_bad_rows="error", numeric_text=None):
        super().__init__()
        self.name = path
        self._batch_rows = batch_rows
        pf = _open(path)
        self._init_schema(pf.schema_arrow, label=label, weight=weight, drop=drop,
                          categorical=categorical, group=group,
                          base_margin=base_margin,
                          first_batch=lambda: next(pf.iter_batches(batch_size=batch_rows),
                                                   None),
                          on_bad_rows=on_bad_rows, numeric_text=numeric_text)
        self.n_rows = int(pf.metadata.num_rows)

    def _record_batches(self):
        pf = _open(self.name)
        try:
            yield from pf.iter_batches(batch_size=self._batch_rows, columns=self._columns)
        except (pa.ArrowException, OSError) as e:
            raise InputError(
                f"{self.name}: Parquet file is corrupt or truncated ({e})"
            ) from None

    def fingerprint(self):
        return file_fingerprint(self.name)
