"""Ingest: every source (CSV, gzip CSV, Parquet, Arrow IPC/Feather, NumPy, pandas, pyarrow)
becomes one stream of :class:`Batch` objects through :func:`open_source`."""
from .dispatch import open_source, sniff_format
from .source import CATEGORICAL, DEFAULT_NA_VALUES, NUMERIC, Batch, Source

__all__ = ["open_source", "Source", "Batch", "DEFAULT_NA_VALUES", "NUMERIC", "CATEGORICAL",
           "sniff_format"]
