"""Open a cache, check it, and stream its blocks (prefetched, optionally kept resident)."""
from __future__ import annotations

import os
import zlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

from ...common import hist_column_starts
from ...errors import CacheError, InputError, ModelError, ParameterError
from ...kernels.codes import ONE_BYTE_MAX_CODE, PlaneCodes, SparseCodes, as_array
from ..prefetch import check_depth, prefetch
from .arrow_backend import ArrowBlockReader
from .hdf5_backend import Hdf5BlockReader
from .manifest import GROUPS_FILE, read_manifest, sparse_field
from .margins import MarginReader
from .replace import recover
from .trust import open_regular

if TYPE_CHECKING:
    from ..binning import BinMapper

_READERS = {"arrow": ArrowBlockReader, "hdf5": Hdf5BlockReader}


class Block:
    """One block of rows of a cache.

    Attributes
    ----------
    index : int
        Block number, 0-based.
    row_start : int
        Index of the block's first row in the cache.
    n_rows : int
    stored_codes : ndarray (n_columns, n_rows) uint8/uint16, C-contiguous, PlaneCodes, or None
        Bin codes as stored, column-major: one row per feature, or per stored column
        when the cache bundles sparse features (``cache/bundles.py``). Two-byte codes
        of a cache whose only wide columns are categorical come as a
        ``kernels.codes.PlaneCodes`` (one byte a code, two for the wide columns). The
        engine's histograms and partition read these. None when read with
        ``with_codes=False``.
    codes : ndarray (n_features, n_rows) uint8/uint16, C-contiguous, or None
        Bin codes, feature-major: ``stored_codes`` itself, or decoded from the bundles
        at each access.
    label, weight : ndarray (n_rows,) float32, or None
    bundles : FeatureBundles or None
    base_margin : ndarray (n_rows, k) float64, or None
        The rows' base margins (offsets) when the cache has them (``margins.py``).
    Arrays are read-only: a block may be kept resident and handed out again, so
    consumers must not modify it in place.
    """

    __slots__ = ("index", "row_start", "n_rows", "stored_codes", "label", "weight",
                 "bundles", "base_margin")

    def __init__(self, index, row_start, n_rows, codes, label, weight, bundles=None,
                 base_margin=None):
        self.index = index
        self.row_start = row_start
        self.n_rows = n_rows
        self.stored_codes = codes
        self.label = label
        self.weight = weight
        self.bundles = bundles
        self.base_margin = base_margin

    @property
    def codes(self):
        """Feature codes as one matrix (made whole from byte planes and decoded from
        bundled columns at each access)."""
        codes = as_array(self.stored_codes)
        if self.bundles is None or codes is None:
            return codes
        return self.bundles.decode(codes)

    @property
    def nbytes(self):
        """Bytes held by the block's arrays."""
        return sum(a.nbytes for a in (self.stored_codes, self.label, self.weight,
                                      self.base_margin) if a is not None)

    def without_codes(self):
        """The same block with ``codes=None`` (arrays shared)."""
        return Block(self.index, self.row_start, self.n_rows, None, self.label, self.weight,
                     base_margin=self.base_margin)

    def with_weight(self, weight):
        """The same block with other row weights (arrays shared)."""
        return Block(self.index, self.row_start, self.n_rows, self.stored_codes, self.label,
                     weight, self.bundles, self.base_margin)

    def __repr__(self):
        return f"Block(index={self.index}, row_start={self.row_start}, n_rows={self.n_rows})"


class Cache:
    """An on-disk cache of binned data, opened read-only.

    Parameters
    ----------
    path : str or os.PathLike
        Cache folder written by :class:`~oocboost.cache.store.CacheWriter`.

    Attributes
    ----------
    path : str
    backend : str
        "arrow" or "hdf5".
    manifest : dict
        The parsed ``manifest.json`` (treat as read-only).
    n_rows, n_features, n_blocks, block_rows : int
    n_columns : int
        Rows of the stored codes: ``n_features``, fewer when sparse features are bundled.
    bundles : FeatureBundles or None
        The bundled features (``cache/bundles.py``); blocks decode them in ``codes``.
    codes_dtype : numpy.dtype
        uint8 or uint16.
    has_label, has_weight : bool
    block_row_starts : ndarray (n_blocks,) int64
        First row of each block.
    block_n_rows : ndarray (n_blocks,) int64
        Rows of each block.
    feature_names : list of str or None
        From the manifest's ``features`` list when present.
    max_bin : int or None
        From the manifest's ``max_bin`` when present.

    Raises
    ------
    CacheError
        Missing or malformed manifest, unknown format or version, block files missing or
        of the wrong size; the message names the cache and the block.

    Notes
    -----
    ``resident_bytes`` in :meth:`iter_blocks` keeps decompressed blocks in this object
    across passes; :meth:`release_resident` frees them. An HDF5 cache keeps its file open
    until :meth:`close` (also a context manager).
    """

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = os.path.abspath(os.fspath(path))
        recover(self.path)  # a replace killed between its two renames (store/replace.py)
        m = read_manifest(self.path)
        _current_bin_mapper(m, self.path)
        self.manifest = m
        self.backend = m["backend"]
        self.compression = m["compression"]
        self.n_rows = m["n_rows"]
        self.n_features = m["n_features"]
        self.block_rows = m["block_rows"]
        self.codes_dtype = np.dtype(m["codes_dtype"])
        self.has_label = m["has_label"]
        self.has_weight = m["has_weight"]
        self.n_label_columns = m.get("label_columns", 1)
        blocks = m["blocks"]
        self.n_blocks = len(blocks)
        self.block_row_starts = np.array([b["row_start"] for b in blocks], dtype=np.int64)
        self.block_n_rows = np.array([b["n_rows"] for b in blocks], dtype=np.int64)
        features = m.get("features")
        if features is None:
            self.feature_names = None
        else:
            try:
                self.feature_names = [str(f["name"]) for f in features]
            except (TypeError, KeyError):
                raise CacheError(
                    f"cache {self.path}: manifest 'features' should be a list of {{name, ...}}"
                ) from None
            if len(self.feature_names) != self.n_features:
                raise CacheError(
                    f"cache {self.path}: manifest lists {len(self.feature_names)} features, "
                    f"expected n_features={self.n_features}"
                )
        self.max_bin = m.get("max_bin")
        if self.max_bin is not None:
            ok = isinstance(self.max_bin, int) and not isinstance(self.max_bin, bool)
            # uint16 with max_bin <= 256 when a wide categorical feature needs it
            # (checked against the bin mapper in bin_mapper)
            if not ok or (self.max_bin > 256 and self.codes_dtype != np.uint16):
                raise CacheError(
                    f"cache {self.path}: max_bin={self.max_bin!r} does not fit codes_dtype "
                    f"{self.codes_dtype}"
                )
        self._reader = _READERS[self.backend](self.path, m)
        self._reader.check_files()
        self._resident = {}
        self._resident_nbytes = 0
        self._bin_mapper = None
        self._wide_columns = False    # not looked at yet (see wide_columns)
        self.n_columns = m.get("n_columns", self.n_features)
        self.bundles = None
        if "bundles" in m:
            from ..bundles import FeatureBundles

            self.bundles = FeatureBundles.from_dict(m["bundles"], self.bin_mapper,
                                                    f"cache {self.path}")
            if self.bundles.n_columns != self.n_columns:
                raise CacheError(f"cache {self.path}: its bundles make "
                                 f"{self.bundles.n_columns} stored columns, the manifest "
                                 f"says n_columns={self.n_columns}")
        self._group_ptr = None
        self.has_group = m.get("groups") is not None
        self._margins = (None if "base_margin" not in m else
                         MarginReader(self.path, m["base_margin"], self.n_rows))
        self._code_limits = None
        self._codes_checked = set()   # blocks whose codes were range-checked
        #: Each stored column's implied code (int64; -1 never sparse) when some block
        #: stores sparse columns (``kernels.codes.SparseCodes``), else None.
        self.sparse_implied = sparse_field(m)
        if self.sparse_implied is not None:
            self._check_implied_codes()

    def _check_implied_codes(self):
        """A sparse column's implied code is one of its codes (its values or missing)."""
        limits = self.code_limits
        if limits is None:
            return
        implied = self.sparse_implied
        bad = (implied > limits) & (implied != self.bin_mapper.max_bin - 1)
        if bad.any():
            c = int(np.argmax(bad))
            raise CacheError(f"cache {self.path}: stored column {c}'s implied code "
                             f"{int(implied[c])} is beyond its {int(limits[c]) + 1} bins")

    @property
    def has_sparse_columns(self) -> bool:
        """Whether some block stores sparse columns (its blocks then come as
        ``SparseCodes``, the others with no sparse column)."""
        return self.sparse_implied is not None

    def sparse_summary(self) -> dict | None:
        """What the blocks store sparse, None without sparse columns: ``threshold`` (the
        build's), ``sparse_blocks`` (blocks with any), ``column_blocks`` and
        ``entries`` (summed over the blocks), and per stored column ``blocks`` and
        ``entries_per_column`` (int64 arrays)."""
        if self.sparse_implied is None:
            return None
        blocks = self.manifest["blocks"]
        return {"threshold": self.manifest["sparse"]["threshold"],
                "sparse_blocks": int(sum(b["n_sparse"] > 0 for b in blocks)),
                "column_blocks": int(sum(b["n_sparse"] for b in blocks)),
                "entries": int(sum(b["nnz"] for b in blocks)),
                "blocks": sparse_field(self.manifest, "blocks"),
                "entries_per_column": sparse_field(self.manifest, "entries")}

    # ---- sizes -----------------------------------------------------------------------
    @property
    def nbytes_stored(self) -> int:
        """Bytes on disk of the block data (compressed), int."""
        if self.backend == "hdf5":
            return int(self.manifest["data_file_nbytes"])
        return int(sum(b["nbytes"] for b in self.manifest["blocks"]))

    @property
    def nbytes_raw(self) -> int:
        """Bytes of the block data once decompressed (codes + label + weight), int."""
        return int(sum(b["raw_nbytes"] for b in self.manifest["blocks"]))

    @property
    def resident_nbytes(self) -> int:
        """Bytes of decompressed blocks currently kept in memory, int."""
        return self._resident_nbytes

    @property
    def bin_mapper(self) -> BinMapper:
        """The :class:`oocboost.cache.binning.BinMapper` saved with the cache."""
        if self._bin_mapper is None:
            d = self.manifest.get("bin_mapper")
            if d is None:
                raise CacheError(f"cache {self.path}: the manifest has no bin_mapper")
            from ..binning import (
                BinMapper,  # binning imports nothing from store; keep load light
            )

            mapper = BinMapper.from_dict(d)
            if mapper.codes_dtype != self.codes_dtype or (
                    self.max_bin is not None and mapper.max_bin != self.max_bin):
                raise CacheError(
                    f"cache {self.path}: the bin mapper's codes are {mapper.codes_dtype} "
                    f"of max_bin={mapper.max_bin}, but the manifest says "
                    f"{self.codes_dtype} of max_bin={self.max_bin}")
            self._bin_mapper = mapper
        return self._bin_mapper

    @property
    def wide_columns(self) -> np.ndarray | None:
        """Which stored columns keep two bytes a code in memory: a bool array when the
        codes are two bytes only for wide categorical features (``max_bin <= 256``;
        blocks then hold ``PlaneCodes``), else None (blocks hold plain matrices)."""
        if self._wide_columns is False:
            self._wide_columns = None
            if (self.codes_dtype == np.uint16 and self.sparse_implied is None
                    and self.max_bin is not None
                    and self.max_bin <= ONE_BYTE_MAX_CODE + 1
                    and "bin_mapper" in self.manifest):
                bins = self.bin_mapper.n_value_bins
                if self.bundles is not None:
                    bins = self.bundles.stored_value_bins(bins)
                self._wide_columns = np.asarray(bins) > ONE_BYTE_MAX_CODE + 1
        return self._wide_columns

    @property
    def code_bytes_per_row(self) -> int:
        """Bytes of codes one row takes in memory (int): a byte per stored column, and
        two more for each wide one (its whole code, :attr:`wide_columns`)."""
        wide = self.wide_columns
        if wide is not None:
            return int(self.n_columns + 2 * wide.sum())
        return int(self.n_columns * self.codes_dtype.itemsize)

    @property
    def n_hist_columns(self) -> int:
        """Histogram columns of one node (int): one per feature, more for a wide
        categorical feature (``common.hist_column_starts``)."""
        mapper = self.bin_mapper
        return int(hist_column_starts(mapper.n_value_bins, mapper.max_bin)[-1])

    @property
    def planned_hist_columns(self) -> int:
        """Histogram columns a node costs in training (int): :attr:`n_hist_columns`,
        plus the stored columns' when features are bundled (rows are added into those,
        then expanded)."""
        if self.bundles is None:
            return self.n_hist_columns
        mapper = self.bin_mapper
        stored = self.bundles.stored_value_bins(mapper.n_value_bins)
        return self.n_hist_columns + int(hist_column_starts(stored, mapper.max_bin)[-1])

    def require_one_label(self, who: str) -> None:
        """Raise :class:`ParameterError` unless the cache has one label column."""
        if self.n_label_columns != 1:
            raise ParameterError(
                f"{who} takes one label column, but cache {self.path} has "
                f"{self.n_label_columns}; several targets are learned by gradient boosting "
                f"(one tree per target), an interval by survival:aft")

    # ---- reading ---------------------------------------------------------------------
    def _check_index(self, i):
        if (
            isinstance(i, bool)
            or not isinstance(i, (int, np.integer))
            or not 0 <= i < self.n_blocks
        ):
            raise ParameterError(
                f"cache {self.path}: block index {i!r} out of range (it has {self.n_blocks} "
                f"blocks)"
            )
        return int(i)

    def _load(self, i, with_codes=True):
        cached = self._resident.get(i)
        if cached is not None:
            return cached if with_codes else cached.without_codes()
        wide = self.wide_columns if with_codes else None
        codes, label, weight = self._reader.read_block(i, with_codes, wide)
        if wide is not None and not isinstance(codes, PlaneCodes):
            try:
                codes = PlaneCodes.from_array(codes, wide)
            except ValueError as exc:
                raise CacheError(f"cache {self.path}: block {i} does not match its bin "
                                 f"mapper ({exc})") from None
        if with_codes and i not in self._codes_checked:
            self._check_codes(i, codes)
            self._codes_checked.add(i)
        start, n_rows = int(self.block_row_starts[i]), int(self.block_n_rows[i])
        margins = (None if self._margins is None else
                   self._margins.rows(start, start + n_rows, f" (block {i})"))
        return Block(i, start, n_rows, codes, label, weight,
                     self.bundles if with_codes else None, margins)

    @property
    def code_limits(self) -> np.ndarray | None:
        """Largest value code of each stored column (``n_value_bins - 1``; a bundle's
        column: its bundle's), int64 (n_columns,); None without a bin mapper."""
        if self._code_limits is None and "bin_mapper" in self.manifest:
            bins = np.asarray(self.bin_mapper.n_value_bins, np.int64)
            if self.bundles is not None:
                bins = self.bundles.stored_value_bins(bins)
            self._code_limits = bins - 1
        return self._code_limits

    def _check_codes(self, i, codes):
        """Refuse a block whose codes exceed their column's bins (a crafted or damaged
        block whose checksum was made to match): the histogram kernels index by code
        without bounds checks. Once per block and process."""
        limits = self.code_limits
        if limits is None:
            return
        if isinstance(codes, SparseCodes):
            self._check_rows(i, codes.dense, codes.dense_columns,
                             limits[codes.dense_columns])
            entry_column = np.repeat(codes.columns, np.diff(codes.ptr))
            over = np.unique(entry_column[codes.values > limits[entry_column]])
            # the columns over their limit, whole, to name the row (or pass as missing)
            self._check_rows(i, codes.take_columns(over), over, limits[over])
        elif isinstance(codes, PlaneCodes):
            wide = codes.wide_row >= 0
            # a wide column's low byte is any byte; its whole code is in ``wide``
            self._check_rows(i, codes.low, np.arange(wide.size),
                             np.where(wide, ONE_BYTE_MAX_CODE, limits))
            self._check_rows(i, codes.wide, np.flatnonzero(wide), limits[wide])
        else:
            self._check_rows(i, codes, np.arange(codes.shape[0]), limits)

    def _check_rows(self, i, rows, columns, limits):
        """``rows[k]``: the codes of stored column ``columns[k]``, whose largest value
        code is ``limits[k]``. One vectorised maximum per column; only the columns over
        their limit (usually those holding the missing code) are read again."""
        if rows.shape[0] == 0:
            return
        missing = self.bin_mapper.max_bin - 1
        for k in np.flatnonzero(rows.max(axis=1) > limits):
            values = rows[k]
            over = (values > limits[k]) & (values != missing)
            if not over.any():
                continue
            row, column = int(np.argmax(over)), int(columns[k])
            name = (repr(self.feature_names[column]) if self.bundles is None
                    and self.feature_names else f"stored column {column}")
            raise CacheError(
                f"cache {self.path}: block {i}, column {name}: code {int(values[row])} "
                f"at row {int(self.block_row_starts[i]) + row} is beyond the column's "
                f"{int(limits[k]) + 1} bins and is not the missing code {missing}; the "
                f"block was not written by this cache's build")

    def read_block(self, i: int, with_codes: bool = True) -> Block:
        """Read one block.

        Parameters
        ----------
        i : int
            Block index, ``0 <= i < n_blocks``.
        with_codes : bool, default True
            False skips decompressing the codes (labels and weights only).

        Returns
        -------
        Block

        Raises
        ------
        CacheError
            The block is unreadable, truncated or fails its checksum.
        """
        return self._load(self._check_index(i), bool(with_codes))

    def verify(self) -> int:
        """Read every block whole, as training would, checking each file (regular, its
        size), its checksum, that it belongs to this cache at its index, its rows'
        codes against the bins, and the query groups. Returns the rows checked (int);
        raises :class:`CacheError` at the first fault. Run it on a cache from elsewhere
        before training on it (``oocboost info --verify``)."""
        n_rows = 0
        for block in self.iter_blocks(prefetch=1):
            n_rows += block.n_rows
        if self.has_group:
            self.group_ptr  # noqa: B018 (read and checked against the manifest)
        if self._margins is not None:
            self._margins.check_crc()
        return n_rows

    def iter_blocks(self, prefetch: int = 2, with_codes: bool = True, resident_bytes: int = 0,
                    block_indices: Any = None) -> Iterator[Block]:
        """Stream blocks in order, reading ahead on a background thread.

        Parameters
        ----------
        prefetch : int, default 2
            Blocks read and decompressed ahead (0: synchronous). Memory for in-flight
            blocks is ``(prefetch + 1) x block``. Results do not depend on it.
        with_codes : bool, default True
            False reads labels and weights only.
        resident_bytes : int, default 0
            Budget (bytes) for keeping decompressed blocks in memory across passes:
            blocks are kept in order while they fit, never evicted by later blocks, so a
            second pass skips I/O and decompression for them. A positive budget smaller
            than what is resident drops the last resident blocks to fit; 0 keeps what is
            resident but adds nothing (see :meth:`release_resident`).
        block_indices : iterable of int, optional
            Blocks to read, in the order given; default all.

        Yields
        ------
        Block
        """
        depth = check_depth(prefetch)
        if (
            isinstance(resident_bytes, bool)
            or not isinstance(resident_bytes, (int, np.integer))
            or resident_bytes < 0
        ):
            raise ParameterError(
                f"resident_bytes must be an integer >= 0, got {resident_bytes!r}"
            )
        if block_indices is None:
            indices = range(self.n_blocks)
        else:
            indices = [self._check_index(i) for i in block_indices]
        resident_bytes = int(resident_bytes)
        if resident_bytes:
            self._trim_resident(resident_bytes)
        with_codes = bool(with_codes)
        return self._iter(indices, depth, with_codes, resident_bytes)

    def _iter(self, indices, depth, with_codes, budget):
        if with_codes and all(i in self._resident for i in indices):
            # Nothing to read: no reader thread to start and hand blocks over (one start
            # and a queue handover per block cost 0.2 s of 9 s over 600 boosting passes).
            yield from (self._resident[i] for i in indices)
            return
        blocks = prefetch(lambda i: self._load(i, with_codes), indices, depth)
        try:
            yield from self._keep_resident(blocks, with_codes, budget)
        finally:
            # Join the prefetch thread now, not whenever the generator is collected.
            blocks.close()

    def _keep_resident(self, blocks, with_codes, budget):
        for block in blocks:
            # Residency is decided here, in the consumer thread and in block order, so the
            # set of resident blocks does not depend on the prefetch depth.
            if (
                budget
                and with_codes
                and block.index not in self._resident
                and self._resident_nbytes + block.nbytes <= budget
            ):
                self._resident[block.index] = block
                self._resident_nbytes += block.nbytes
            yield block

    def _trim_resident(self, budget):
        for i in sorted(self._resident, reverse=True):
            if self._resident_nbytes <= budget:
                break
            self._resident_nbytes -= self._resident.pop(i).nbytes

    def release_resident(self) -> None:
        """Drop every resident block."""
        self._resident = {}
        self._resident_nbytes = 0

    @property
    def group_ptr(self) -> np.ndarray | None:
        """Query group boundaries ``(n_groups + 1,)`` int64 (group ``g`` is rows
        ``ptr[g]`` to ``ptr[g + 1]``), or None for a cache built without ``group``.
        Read and checked on first use."""
        if not self.has_group:
            return None
        if self._group_ptr is None:
            self._group_ptr = _read_groups(self.path, self.manifest["groups"], self.n_rows)
        return self._group_ptr

    @property
    def base_margin_columns(self) -> list[str] | None:
        """Source column names of the per-row base margins, or None without them."""
        return None if self._margins is None else list(self._margins.columns)

    def read_base_margin(self) -> np.ndarray | None:
        """Every row's base margin ``(n_rows, k)`` float64 (8k bytes a row), or None
        when the cache has none."""
        if self._margins is None:
            return None
        return self._margins.rows(0, self.n_rows)

    def read_labels(self) -> tuple[Any, Any]:
        """All labels and weights, reading only those columns.

        Returns
        -------
        label : ndarray (n_rows,) float32 (``(n_rows, k)`` with ``k`` label columns) or None
        weight : ndarray (n_rows,) float32 or None
        """
        shape = self.n_rows if self.n_label_columns == 1 else (self.n_rows,
                                                                self.n_label_columns)
        label = np.empty(shape, np.float32) if self.has_label else None
        weight = np.empty(self.n_rows, np.float32) if self.has_weight else None
        if label is None and weight is None:
            return None, None
        for b in self.iter_blocks(with_codes=False):
            sl = slice(b.row_start, b.row_start + b.n_rows)
            if label is not None:
                label[sl] = b.label
            if weight is not None:
                weight[sl] = b.weight
        return label, weight

    def close(self) -> None:
        """Release open files and resident blocks."""
        self.release_resident()
        self._reader.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __repr__(self):
        return (
            f"Cache({self.path!r}, backend={self.backend!r}, n_rows={self.n_rows}, "
            f"n_features={self.n_features}, n_blocks={self.n_blocks})"
        )


def _read_groups(path, entry, n_rows):
    from ..groups import check_group_ptr

    f, _ = open_regular(path, GROUPS_FILE)
    try:
        with f:
            ptr = np.load(f, allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise CacheError(f"cache {path}: {GROUPS_FILE} cannot be read ({exc}); rebuild "
                         f"the cache") from None
    if ptr.dtype != np.int64 or ptr.shape != (entry["n_groups"] + 1,) or \
            zlib.crc32(ptr.tobytes()) != entry["crc32"]:
        raise CacheError(f"cache {path}: {GROUPS_FILE} does not match the manifest "
                         f"({entry['n_groups']} groups, crc32 {entry['crc32']}); rebuild "
                         f"the cache")
    try:
        return check_group_ptr(ptr, n_rows, f"cache {path}")
    except InputError as exc:
        raise CacheError(str(exc)) from None


def _current_bin_mapper(manifest, path):
    """An older cache's bin mapper description rewritten in the current version (edges
    as base64), so that it compares equal with a model's of the same bins."""
    doc = manifest.get("bin_mapper")
    if not isinstance(doc, dict) or doc.get("version") is None:
        return
    from ..binning import current_mapper_doc

    try:
        manifest["bin_mapper"] = current_mapper_doc(doc)
    except ModelError as exc:
        raise CacheError(f"cache {path}: bin_mapper: {exc}") from None
