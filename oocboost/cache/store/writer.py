"""Build a cache atomically: write into a temporary sibling folder, rename at commit.

::

    parent/
      data.cache                       <- `path`: appears only at commit, complete
      data.cache.oocb.tmp-<pid>-<rnd>  <- the build in progress (blocks, then manifest)

An exception or Ctrl-C aborts the build and deletes the temporary; a build killed with
SIGKILL leaves its temporary behind, and the next build into the same ``path`` deletes
those whose process is gone. Nothing but a committed build is ever at ``path``, and a
replace leaves the old cache or the new one there after a kill at any instant
(:mod:`oocboost.cache.store.replace`).
"""
import os
import secrets
import weakref
import zlib

import numpy as np

from ...errors import CacheError, OutputError, ParameterError
from ...kernels.codes import SparseCodes
from ...utils import interrupt
from ...utils.files import SPACE_ERRNOS, describe_write_error
from . import arrow_backend, hdf5_backend
from .manifest import (
    FORMAT,
    FORMAT_VERSION,
    GROUPS_FILE,
    RESERVED_KEYS,
    SPARSE_FORMAT_VERSION,
    encode_counts,
    new_cache_id,
    write_manifest,
)
from .margins import MarginWriter
from .replace import TMP_TAG, check_target, clean_stale, install, remove_tree

_BACKENDS = {
    "arrow": (arrow_backend.ArrowBlockWriter, arrow_backend.DEFAULT_COMPRESSION),
    "hdf5": (hdf5_backend.Hdf5BlockWriter, hdf5_backend.DEFAULT_COMPRESSION),
}
class CacheWriter:
    """Write blocks of bin codes into a new cache folder.

    Parameters
    ----------
    path : str or os.PathLike
        Cache folder to create. Parent folders are created.
    backend : {"arrow", "hdf5"}, default "arrow"
    compression : str or None
        Arrow: "lz4" (default), "zstd", "none"; HDF5: "lzf" (default), "gzip", "none".
    n_features : int
        Features of the cache; rows of every ``codes`` block unless ``n_columns``.
    n_columns : int, optional
        Rows of every ``codes`` block when sparse features are bundled into fewer stored
        columns (``cache/bundles.py``); recorded as the manifest's ``n_columns``.
    codes_dtype : numpy dtype
        uint8 or uint16 (see :func:`oocboost.common.binned_dtype`).
    has_label, has_weight : bool
        Whether every block carries a label / weight array.
    base_margin_columns : list of str, optional
        Source names of per-row base margin columns (one per output); every block then
        carries a ``base_margin`` array (``store/margins.py``).
    sparse_implied : array_like of int, optional
        Each stored column's implied code (the code of an absent entry; -1: never
        sparse). A block then stores a column whose implied code is at least
        ``sparse_threshold`` of its rows by its other rows alone (``kernels.codes
        .SparseCodes``; arrow backend only). None: every column dense.
    sparse_threshold : float, default 0.8
        LightGBM's ``sparse_threshold``: the share of implied codes from which a column
        of a block is stored sparse.
    overwrite : bool, default False
        Replace the cache at ``path`` at commit. Without it an existing cache is refused
        with :class:`CacheError`; a file, a link or a folder that is not a cache is
        refused either way.

    Notes
    -----
    Every block but the last has the row count of the first block (``block_rows``); the
    last may be shorter. Use as a context manager: leaving the ``with`` block by an
    exception, or without calling :meth:`commit`, aborts the build.
    """

    def __init__(
        self,
        path,
        *,
        backend="arrow",
        compression=None,
        n_features,
        codes_dtype,
        has_label,
        has_weight,
        overwrite=False,
        n_label_columns=1,
        n_columns=None,
        base_margin_columns=None,
        sparse_implied=None,
        sparse_threshold=0.8,
    ):
        if backend not in _BACKENDS:
            raise ParameterError(f"backend must be one of {tuple(_BACKENDS)}, got {backend!r}")
        writer_cls, default_compression = _BACKENDS[backend]
        compression = default_compression if compression is None else compression
        if (
            isinstance(n_features, bool)
            or not isinstance(n_features, (int, np.integer))
            or n_features < 1
        ):
            raise ParameterError(f"n_features must be a positive integer, got {n_features!r}")
        codes_dtype = np.dtype(codes_dtype)
        if codes_dtype not in (np.dtype(np.uint8), np.dtype(np.uint16)):
            raise ParameterError(f"codes_dtype must be uint8 or uint16, got {codes_dtype}")
        self.path = os.path.abspath(os.fspath(path))
        self.backend = backend
        self.compression = compression
        self.n_features = int(n_features)
        if n_columns is not None and (isinstance(n_columns, bool) or not isinstance(
                n_columns, (int, np.integer)) or not 1 <= n_columns <= n_features):
            raise ParameterError(f"n_columns must be an integer from 1 to n_features="
                                 f"{n_features}, got {n_columns!r}")
        self.n_columns = None if n_columns is None else int(n_columns)
        self._code_rows = self.n_features if n_columns is None else self.n_columns
        self.codes_dtype = codes_dtype
        self.has_label = bool(has_label)
        self.has_weight = bool(has_weight)
        if (
            isinstance(n_label_columns, bool)
            or not isinstance(n_label_columns, (int, np.integer))
            or n_label_columns < 1
        ):
            raise ParameterError(f"n_label_columns must be a positive integer, got "
                                 f"{n_label_columns!r}")
        self.n_label_columns = int(n_label_columns)
        self.overwrite = bool(overwrite)
        self._sparse = self._check_sparse(backend, sparse_implied, sparse_threshold)
        # per stored column: blocks that stored it sparse, and its entries in them
        self._sparse_blocks = np.zeros(self._code_rows, np.int64)
        self._sparse_entries = np.zeros(self._code_rows, np.int64)
        self.sparse_threshold = float(sparse_threshold)
        # Fail before spending time on the build; checked again at commit.
        parent = os.path.dirname(self.path)
        os.makedirs(parent, exist_ok=True)
        clean_stale(self.path)
        check_target(self.path, self.overwrite)
        self._tmp = f"{self.path}{TMP_TAG}{os.getpid()}-{secrets.token_hex(4)}"
        os.mkdir(self._tmp)
        # Removes the temporary if the writer is dropped or the interpreter exits first.
        self._finalizer = weakref.finalize(self, remove_tree, self._tmp)
        self._blocks = []
        self._n_rows = 0
        self._block_rows = None
        self._groups = None
        self._margins = None
        self._state = "open"
        # Every block carries it (and its index): a block copied in from another cache,
        # or an entry pointing at another block, is refused when read.
        self.cache_id = new_cache_id()
        try:
            self._backend = writer_cls(
                self._tmp, compression, self._code_rows, codes_dtype, self.has_label,
                self.has_weight, self.n_label_columns, cache_id=self.cache_id
            )
            if base_margin_columns is not None:
                self._margins = MarginWriter(self._tmp, list(base_margin_columns))
        except BaseException:
            self.abort()
            raise

    @property
    def n_rows(self):
        """Rows written so far."""
        return self._n_rows

    def _check_sparse(self, backend, implied, threshold):
        """The implied codes as int64 (n_columns,), or None; ParameterError for another
        backend than arrow, a wrong length, a code past the dtype or a threshold outside
        [0, 1]."""
        if isinstance(threshold, bool) or not isinstance(
                threshold, (int, float, np.integer, np.floating)) or not 0 <= threshold <= 1:
            raise ParameterError(f"sparse_threshold must be a number in [0, 1], got "
                                 f"{threshold!r}")
        if implied is None:
            return None
        if backend != "arrow":
            raise ParameterError(f"sparse columns are stored by the arrow backend only, "
                                 f"not {backend!r}")
        implied = np.asarray(implied, np.int64)
        max_code = np.iinfo(self.codes_dtype).max
        if implied.shape != (self._code_rows,) or np.any((implied < -1)
                                                          | (implied > max_code)):
            raise ParameterError(f"sparse_implied must hold {self._code_rows} codes from "
                                 f"-1 to {max_code}")
        return implied

    def _check_open(self):
        if self._state != "open":
            raise CacheError(f"cache writer for {self.path} is {self._state}; no more writes")

    def _as_vector(self, name, arr, n_rows, present):
        if not present:
            if arr is not None:
                raise ParameterError(
                    f"cache {self.path}: {name} given but the writer has has_{name}=False"
                )
            return None
        if arr is None:
            raise ParameterError(
                f"cache {self.path}: block {len(self._blocks)} needs a {name} array"
            )
        arr = np.ascontiguousarray(arr, dtype=np.float32)
        k = self.n_label_columns if name == "label" else 1
        want = (n_rows,) if k == 1 else (n_rows, k)
        if arr.shape != want:
            raise ParameterError(
                f"cache {self.path}: block {len(self._blocks)} {name} has shape {arr.shape}, "
                f"expected {want}"
            )
        return arr

    def write_block(self, codes, label=None, weight=None, base_margin=None):
        """Append one block.

        Parameters
        ----------
        codes : ndarray (n_features, n_rows) uint8/uint16
            Bin codes, feature-major; must have the writer's ``codes_dtype``.
        label, weight : ndarray (n_rows,), optional
            Converted to float32. Required exactly when ``has_label`` / ``has_weight``.
        base_margin : ndarray (n_rows,) or (n_rows, k) float64, optional
            Required exactly when the writer has ``base_margin_columns`` (k of them).
        """
        self._check_open()
        index = len(self._blocks)
        codes = np.asarray(codes)
        if (
            codes.dtype != self.codes_dtype
            or codes.ndim != 2
            or codes.shape[0] != self._code_rows
        ):
            raise ParameterError(
                f"cache {self.path}: block {index} codes are {codes.dtype} {codes.shape}, "
                f"expected {self.codes_dtype} ({self._code_rows}, n_rows)"
            )
        n_rows = codes.shape[1]
        if n_rows < 1:
            raise ParameterError(f"cache {self.path}: block {index} has no rows")
        if self._blocks and (
            self._blocks[-1]["n_rows"] != self._block_rows or n_rows > self._block_rows
        ):
            raise ParameterError(
                f"cache {self.path}: block {index} has {n_rows} rows; every block but the "
                f"last "
                f"must have block_rows={self._block_rows} rows and the last at most that"
            )
        label = self._as_vector("label", label, n_rows, self.has_label)
        weight = self._as_vector("weight", weight, n_rows, self.has_weight)
        if (base_margin is None) != (self._margins is None):
            raise ParameterError(f"cache {self.path}: block {index} "
                                 + ("needs a base_margin array" if base_margin is None else
                                    "has base_margin but the writer has no "
                                    "base_margin_columns"))
        codes = np.ascontiguousarray(codes)
        if self._sparse is not None:
            codes = SparseCodes.from_array(codes, self._sparse, self.sparse_threshold)
        try:
            if self._margins is not None:
                self._margins.write(base_margin, n_rows, f"cache {self.path}: block {index}")
            entry = self._backend.write_block(index, self._n_rows, codes, label, weight)
            if isinstance(codes, SparseCodes):
                entry.update(n_sparse=len(codes.columns), nnz=codes.nnz)
                self._sparse_blocks[codes.columns] += 1
                self._sparse_entries[codes.columns] += np.diff(codes.ptr)
        except OSError as exc:
            if exc.errno in SPACE_ERRNOS:
                raise OutputError(describe_write_error(self.path, exc, codes.nbytes)) from exc
            raise CacheError(
                f"cache {self.path}: writing block {index} failed: {exc}"
            ) from exc
        except (RuntimeError, ValueError) as exc:
            raise CacheError(
                f"cache {self.path}: writing block {index} failed: {exc}"
            ) from exc
        self._blocks.append(entry)
        self._n_rows += n_rows
        if self._block_rows is None:
            self._block_rows = n_rows

    def write_groups(self, group_ptr, column):
        """Store the query group boundaries (``(n_groups + 1,)`` int64 from 0 to the
        rows written, strictly increasing) of the group id ``column``."""
        from ..groups import check_group_ptr

        self._check_open()
        ptr = check_group_ptr(np.asarray(group_ptr, dtype=np.int64), self._n_rows,
                              f"cache {self.path}")
        target = os.path.join(self._tmp, GROUPS_FILE)
        np.save(target, ptr, allow_pickle=False)
        self._groups = {"column": str(column), "n_groups": int(ptr.size - 1),
                        "crc32": zlib.crc32(ptr.tobytes())}

    def commit(self, manifest_fields=None):
        """Write the manifest and move the finished cache to ``path``.

        Parameters
        ----------
        manifest_fields : dict, optional
            Extra JSON-serialisable fields (schema, bin mapper, label statistics, build
            parameters, source fingerprint...). May not use the store's own keys.

        Returns
        -------
        path : str
            The absolute cache path.
        """
        self._check_open()
        fields = dict(manifest_fields or {})
        clash = sorted(RESERVED_KEYS.intersection(fields))
        if clash:
            raise ParameterError(
                f"cache {self.path}: manifest fields {clash} are reserved for the store"
            )
        if not self._blocks:
            self.abort()
            raise CacheError(
                f"cache {self.path}: no rows were written; an empty cache cannot be committed"
            )
        try:
            extra = self._backend.finish()
            if self._margins is not None:
                extra = {**extra, "base_margin": self._margins.finish()}
            sparse = any("n_sparse" in b for b in self._blocks)
            if sparse:
                for b in self._blocks:
                    b.setdefault("n_sparse", 0)
                    b.setdefault("nnz", 0)
                extra = {**extra, "sparse": {
                    "threshold": self.sparse_threshold,
                    "implied": encode_counts(self._sparse),
                    "blocks": encode_counts(self._sparse_blocks),
                    "entries": encode_counts(self._sparse_entries)}}
            manifest = {
                "format": FORMAT,
                "format_version": SPARSE_FORMAT_VERSION if sparse else FORMAT_VERSION,
                "cache_id": self.cache_id,
                "backend": self.backend,
                "compression": self.compression,
                "n_rows": self._n_rows,
                "n_features": self.n_features,
                **({} if self.n_columns is None else {"n_columns": self.n_columns}),
                "block_rows": self._block_rows,
                "codes_dtype": self.codes_dtype.name,
                "has_label": self.has_label,
                "has_weight": self.has_weight,
                **({} if self._groups is None else {"groups": self._groups}),
                **({} if self.n_label_columns == 1 else
                   {"label_columns": self.n_label_columns}),
                **extra,
                **fields,
                "blocks": self._blocks,
            }
            write_manifest(self._tmp, manifest)
            install(self._tmp, self.path, self.overwrite)
        except BaseException as exc:
            self.abort()
            if isinstance(exc, (OSError, TypeError, ValueError)) and not isinstance(
                exc, ParameterError
            ):
                raise CacheError(f"cache {self.path}: commit failed: {exc}") from exc
            raise
        self._state = "committed"
        self._finalizer.detach()
        interrupt.record_committed(f"cache {self.path}")
        _fsync_dir(os.path.dirname(self.path))
        return self.path

    def abort(self):
        """Discard the build: close files and delete the temporary folder. Idempotent."""
        if self._state != "open":
            return
        self._state = "aborted"
        backend = getattr(self, "_backend", None)
        if backend is not None:
            backend.close()
        if getattr(self, "_margins", None) is not None:
            self._margins.close()
        self._finalizer()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if self._state == "open":
            self.abort()
        return False


def _fsync_dir(folder):
    # Makes the rename durable on POSIX; not all platforms can open a folder.
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
