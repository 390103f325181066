"""Where data lives besides a local file: a folder of files (a partitioned Parquet
dataset among them), and ``s3://``, ``gs://``, ``hdfs://`` and ``https://`` locations.

- A local folder, or a URI naming a folder (a prefix), is one input: its Parquet or Arrow
  files read as one ``pyarrow.dataset`` in path order, hive partition folders
  (``year=2024/month=1/``) giving columns (:class:`DatasetSource`); its CSV files read
  one after the other (:class:`ConcatenatedSource`), each with the CSV reader's checks.
  Names starting with ``_`` or ``.`` (``_SUCCESS``, ``.crc`` files) are not data.
- URIs open through pyarrow's filesystems (S3, Google Cloud Storage, HDFS), credentials
  and endpoints from their standard environment (``AWS_ACCESS_KEY_ID``,
  ``AWS_ENDPOINT_URL``, ``GOOGLE_APPLICATION_CREDENTIALS``...); ``http(s)://`` through
  fsspec's HTTP filesystem when it is installed (pyarrow has none).
- Everything read is untrusted: a location that does not exist, a folder with no data
  files or with files of two formats, a file whose format is not known, are errors
  naming the location.
"""
from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs

from ...errors import InputError, ParameterError
from .source import ArrowBatchSource, Batch, Source, slice_batches

#: Schemes read through a filesystem (``file://`` is a local path).
URI_SCHEMES = ("s3", "gs", "gcs", "hdfs", "viewfs", "http", "https", "file")
_URI = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.-]*)://")
#: Extensions of the files of a folder, by format.
_FORMATS = {".parquet": "parquet", ".pq": "parquet", ".arrow": "arrow", ".feather": "arrow",
            ".ipc": "arrow", ".csv": "csv", ".tsv": "csv", ".tab": "csv", ".txt": "csv",
            ".gz": "csv"}


def is_uri(data: Any) -> bool:
    """A string of the form ``scheme://...``."""
    return isinstance(data, str) and _URI.match(data) is not None


def open_location(uri: str) -> tuple[pafs.FileSystem, str]:
    """``(filesystem, path)`` of ``uri``; an InputError when it cannot be reached."""
    scheme = _URI.match(uri).group(1).lower()
    if scheme not in URI_SCHEMES:
        raise ParameterError(f"{uri}: unknown scheme {scheme!r}; expected a local path or "
                             f"one of {', '.join(s + '://' for s in URI_SCHEMES)}")
    if scheme in ("http", "https"):
        try:
            import fsspec
            from pyarrow.fs import FSSpecHandler, PyFileSystem

            return PyFileSystem(FSSpecHandler(fsspec.filesystem(scheme))), uri
        except ImportError as exc:
            raise InputError(f"{uri}: reading http(s) locations needs fsspec and aiohttp "
                             f"(pip install fsspec aiohttp): {exc}") from None
    try:
        return pafs.FileSystem.from_uri(uri)
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise InputError(f"{uri}: cannot open the location ({exc})") from None


def file_info(fs: pafs.FileSystem, path: str, where: str) -> pafs.FileInfo:
    """The location's FileInfo; an InputError naming ``where`` when it does not exist or
    cannot be asked about (credentials, network)."""
    try:
        info = fs.get_file_info(path)
    except (pa.ArrowException, OSError) as exc:
        raise InputError(f"{where}: cannot read the location ({exc}); check the "
                         f"credentials and the endpoint in the environment") from None
    if info.type == pafs.FileType.NotFound:
        raise InputError(f"{where}: not found")
    return info


def data_files(fs: pafs.FileSystem, path: str, where: str) -> list[pafs.FileInfo]:
    """The data files under folder ``path``, in path order (``_*`` and ``.*`` names,
    and whatever lies in folders so named, left out)."""
    try:
        infos = fs.get_file_info(pafs.FileSelector(path, recursive=True))
    except (pa.ArrowException, OSError) as exc:
        raise InputError(f"{where}: cannot list the folder ({exc})") from None
    base = path.rstrip("/")
    files = []
    for info in infos:
        if info.type != pafs.FileType.File:
            continue
        relative = info.path[len(base):].lstrip("/")
        if any(part.startswith(("_", ".")) for part in relative.split("/")):
            continue
        files.append(info)
    if not files:
        raise InputError(f"{where}: the folder holds no data files")
    return sorted(files, key=lambda f: f.path)


def folder_format(files: list[pafs.FileInfo], where: str) -> str:
    """``"parquet"``, ``"arrow"`` or ``"csv"``: the one format of a folder's files."""
    kinds = {}
    for info in files:
        ext = os.path.splitext(info.path)[1].lower()
        kind = _FORMATS.get(ext)
        if kind is None:
            raise InputError(f"{where}: {info.path} is not a data file this reader knows "
                             f"(.parquet, .arrow/.feather, .csv/.tsv, .csv.gz)")
        kinds.setdefault(kind, info.path)
    if len(kinds) > 1:
        shown = ", ".join(f"{k} ({p})" for k, p in kinds.items())
        raise InputError(f"{where}: the folder mixes formats: {shown}; one input holds "
                         f"files of one format")
    return next(iter(kinds))


def location_fingerprint(fs: pafs.FileSystem, files: list[pafs.FileInfo],
                         where: str) -> dict:
    """Identity of files on a filesystem: path, size and modification time of each."""
    h = hashlib.sha256()
    for info in files:
        mtime = info.mtime_ns if info.mtime_ns is not None else -1
        h.update(f"{info.path}|{info.size}|{mtime}\n".encode())
    return {"kind": "location", "where": where, "n_files": len(files),
            "sha256": h.hexdigest()}


class DatasetSource(ArrowBatchSource):
    """Parquet or Arrow files read as one ``pyarrow.dataset``: a folder (hive partition
    folders become columns: ``year=2024`` an integer column ``year``), a prefix of an
    object store, or one remote file. Rows come file after file in path order.
    """

    def __init__(self, where: str, fs: pafs.FileSystem, files: list[pafs.FileInfo],
                 file_format: str, *, root: str | None = None, label: Any = None,
                 weight: Any = None, drop: Any = (), categorical: Any = "auto",
                 batch_rows: int = 65536, group: Any = None, base_margin: Any = None,
                 on_bad_rows: str = "error", numeric_text: Any = None) -> None:
        super().__init__()
        self.name = where
        self._batch_rows = batch_rows
        self._files = files
        self._fs = fs
        # here, not at the top: pyarrow.dataset imports pandas (0.4-0.5 s), which a
        # local file's build must not wait for
        import pyarrow.dataset as ds

        fmt = "ipc" if file_format == "arrow" else "parquet"
        try:
            self._dataset = ds.dataset(
                [f.path for f in files], filesystem=fs, format=fmt,
                partitioning=None if root is None else ds.partitioning(flavor="hive"),
                partition_base_dir=root)
        except (pa.ArrowException, OSError) as exc:
            raise InputError(f"{where}: cannot read the files as one {file_format} dataset "
                             f"({exc})") from None
        self._init_schema(self._dataset.schema, label=label, weight=weight, drop=drop,
                          categorical=categorical, group=group, base_margin=base_margin,
                          first_batch=lambda: next(self._scan(None), None),
                          on_bad_rows=on_bad_rows, numeric_text=numeric_text)

    def _scan(self, columns: list[str] | None) -> Iterator[pa.RecordBatch]:
        try:
            for rb in self._dataset.to_batches(columns=columns,
                                               batch_size=self._batch_rows):
                yield from slice_batches(rb, self._batch_rows)
        except (pa.ArrowException, OSError) as exc:
            raise InputError(f"{self.name}: a file of the dataset cannot be read ({exc})"
                             ) from None

    def _record_batches(self) -> Iterator[pa.RecordBatch]:
        yield from self._scan(self._columns)

    def fingerprint(self) -> dict:
        return location_fingerprint(self._fs, self._files, self.name)


class ConcatenatedSource(Source):
    """Sources with the same columns read one after the other (a folder of CSV files),
    rows numbered on from one to the next; each keeps its own messages (file, line)."""

    def __init__(self, sources: list[Source], where: str) -> None:
        super().__init__()
        first = sources[0]
        for other in sources[1:]:
            if (other.feature_names, other.feature_kinds, other.roles()) != \
                    (first.feature_names, first.feature_kinds, first.roles()):
                raise InputError(f"{where}: {other.name} has other columns or column kinds "
                                 f"than {first.name}: {other.feature_names} "
                                 f"({other.feature_kinds}) against {first.feature_names} "
                                 f"({first.feature_kinds})")
        self._sources = sources
        self.name = where
        self.feature_names, self.feature_kinds = first.feature_names, first.feature_kinds
        for role in ("label", "weight", "group", "base_margin"):
            setattr(self, f"{role}_name", getattr(first, f"{role}_name"))
        self.auto_text_columns = first.auto_text_columns
        self.delimiter = getattr(first, "delimiter", None)
        self.header = getattr(first, "header", True)

    def text_sources(self) -> list[Source]:
        """The text readers behind this source (see ``WithSideFiles.text_sources``)."""
        return [text for source in self._sources
                for text in getattr(source, "text_sources", lambda s=source: [s])()]

    def batches(self) -> Iterator[Batch]:
        row_start, n_bad_rows, n_bad_values = 0, 0, {}
        for source in self._sources:
            for batch in source.batches():
                batch.row_start = row_start
                row_start += batch.n_rows
                yield batch
            n_bad_rows += source.n_bad_rows
            for name, count in source.n_bad_values.items():
                n_bad_values[name] = n_bad_values.get(name, 0) + count
        self.n_rows, self.n_bad_rows, self.n_bad_values = row_start, n_bad_rows, n_bad_values

    def fingerprint(self) -> dict:
        h = hashlib.sha256()
        for source in self._sources:
            h.update(repr(sorted(source.fingerprint().items())).encode())
        return {"kind": "files", "where": self.name, "n_files": len(self._sources),
                "sha256": h.hexdigest()}
