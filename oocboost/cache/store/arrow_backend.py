"""Arrow IPC backend: one IPC file per block under ``blocks/``.

Layout of a block file: an Arrow IPC *file* holding one record batch of length 1 whose
columns are ``large_binary`` values::

    codes   n_features * n_rows * itemsize bytes = the C-order (n_features, n_rows) array
    label   n_rows * 4 bytes float32            (only when the cache has labels)
    weight  n_rows * 4 bytes float32            (only when the cache has weights)

All little-endian. Two-byte codes are stored as *byte planes* (manifest ``codes_layout:
"byte_planes"``): every low byte, then every high byte. A cache has two-byte codes when
one categorical feature has more than 255 categories, and then every numeric feature's
high byte is zero: as planes those zeros form one run that LZ4 and zstd remove, where
interleaved they halved what LZ4 could find (the categorical bench's 1M rows x 8 features:
19.1 MiB interleaved). Reading puts the planes back together (one copy).

Each column is one IPC buffer, compressed on its own ("lz4" frame,
"zstd" or none). Why one blob rather than one uint8 column per feature: reading a blob
gives the (n_features, n_rows) array with zero copies after decompression
(``np.frombuffer(...).reshape``), where per-feature columns need an ``np.stack``; on
1.8 MB uint8 blocks the blob reads about 3x faster (10 GB/s vs 3 GB/s with lz4) and the
compressed sizes are the same. Shape and dtype are also in the schema metadata so a file
explains itself to ``pyarrow``.

The block's ``crc32`` in the manifest is ``zlib.crc32`` of the whole file, checked before
Arrow parses anything, so a corrupted or truncated file becomes a
:class:`~oocboost.errors.CacheError` rather than a crash inside the decompressor. A reader
checks each file once: it then remembers the file's identity (device, inode, size,
modification time in ns) and skips the checksum while a later read finds the same identity.
Training reads every block once per tree level, and ``zlib.crc32`` (2.3 GB/s here) cost
more than reading and decompressing the block together (12 ms vs 10.5 ms per 1M rows x 28).
A file replaced or rewritten since has another identity and is checked again.

Block files (of ``MMAP_MIN_BYTES`` or more) are memory-mapped read-only, their pages
faulted in with the mapping (``MAP_POPULATE``), instead of read into a new buffer: the arrays
of an uncompressed block
are then views of the page cache. Training re-reads every non-resident block once per
pass, and the copy of ``f.read()`` (150 us per MB, against 48 us to map) competed with the
kernels for the cores: 16M rows at a 512 MB limit re-read 28 GB per round of 6 passes.
The mapping lives as long as the block's arrays. As with any mapped file, truncating a
block file while a reader holds it mapped would end the process (SIGBUS); a cache's files
are never modified in place (a rebuild writes new files and renames, see
``cache/store/writer.py``),
and a file whose size differs from the manifest is refused before it is mapped.
"""
import mmap
import os
import zlib

import numpy as np
import pyarrow as pa

from ...errors import CacheError, ParameterError
from ...kernels.codes import PlaneCodes, SparseCodes
from .manifest import sparse_field
from .trust import check_regular, open_regular

COMPRESSIONS = ("lz4", "zstd", "none")
DEFAULT_COMPRESSION = "lz4"
#: An lz4 block file that is not at least this much smaller than the same block
#: uncompressed is written uncompressed. lz4 is the speed codec: training rereads streamed
#: blocks every pass, and from the page cache decompressing costs more than the bytes it
#: saves (1M x 28 codes: read 5.0 ms + lz4 5.5 ms for 13% fewer bytes, against 5.8 ms for
#: the raw block). 20 rounds on 16M rows at 512MB: 60.5 s -> 51.4 s. zstd, chosen for
#: size, is always applied.
LZ4_MIN_SAVINGS = 0.2
#: Codes of a block compressed first as a sample (the first rows of every column, about
#: this many bytes): when lz4 saves less than half of ``LZ4_MIN_SAVINGS`` on it, the block
#: is written uncompressed without compressing it whole. Binned continuous features are
#: near 8 bits of entropy a code, and compressing their blocks to throw the result away
#: was most of the block writes' time (1M x 28 HIGGS-like rows: 0.29-0.35 s of a 2.8 s
#: build).
LZ4_SAMPLE_BYTES = 1 << 17
BLOCKS_DIR = "blocks"


#: Block files smaller than this are read, not mapped (see :func:`_map_file`).
MMAP_MIN_BYTES = 256 * 1024
#: ``mmap.MAP_POPULATE`` where the platform has it (Linux), else no flag.
_POPULATE = getattr(mmap, "MAP_POPULATE", 0)


def _map_file(f, size):
    """The bytes of open file ``f`` (``size`` bytes, at least 1) as a read-only mapping,
    pages faulted in up front, or read into memory (small files, no POSIX ``mmap``, or a
    mapping refused)."""
    # Windows' mmap takes other arguments; small files gain little from a mapping, and
    # each mapping is one of the process's limited memory areas (vm.max_map_count,
    # 65530 by default), which resident blocks hold for the whole training
    if size < MMAP_MIN_BYTES or not hasattr(mmap, "MAP_SHARED"):
        return f.read()
    try:
        return mmap.mmap(f.fileno(), size, flags=mmap.MAP_SHARED | _POPULATE,
                         prot=mmap.PROT_READ)
    except OSError:             # e.g. out of memory areas: read the file instead
        return f.read()


def check_compression(compression):
    """Validate an Arrow compression name; returns the pyarrow codec name or None."""
    if compression not in COMPRESSIONS:
        raise ParameterError(
            f"compression {compression!r} is not available for the arrow backend; "
            f"expected one of {COMPRESSIONS}"
        )
    if compression == "none":
        return None
    if not pa.Codec.is_available(compression):
        raise ParameterError(
            f"this pyarrow build has no {compression!r} codec; use compression='none'"
        )
    return compression


#: ``codes_layout`` of an Arrow cache whose two-byte codes are stored as byte planes.
BYTE_PLANES = "byte_planes"


def to_byte_planes(codes):
    """The bytes of a uint16 array as two planes, (2, *codes.shape) uint8: low bytes,
    then high bytes (a little-endian uint16 is low byte first)."""
    pairs = codes.astype("<u2", copy=False).view(np.uint8).reshape(codes.shape + (2,))
    return np.ascontiguousarray(np.moveaxis(pairs, -1, 0))


def from_byte_planes(planes, shape):
    """The uint16 array of ``shape`` whose byte planes are ``planes`` (flat uint8)."""
    out = np.empty(shape, "<u2")
    pairs = out.view(np.uint8).reshape(tuple(shape) + (2,))
    planes = planes.reshape((2,) + tuple(shape))
    pairs[..., 0] = planes[0]
    pairs[..., 1] = planes[1]
    return out


#: Fields of a block file with sparse columns, after the codes, label and weight.
SPARSE_FIELDS = ("sparse_columns", "sparse_ptr", "sparse_rows", "sparse_values")


def sparse_codes_of(dense, columns, ptr, rows, values, implied, n_rows):
    """A block's ``SparseCodes`` from its stored fields, checked: sparse ``columns``
    ascending, below the stored columns' count and with an implied code; ``ptr`` from 0,
    non-decreasing, ending at the entries' count; each column's ``rows`` ascending and
    below ``n_rows``. Raises ValueError naming the fault."""
    n_columns = len(implied)
    columns = columns.astype(np.int64)
    if len(columns) and (columns[0] < 0 or columns[-1] >= n_columns
                         or np.any(np.diff(columns) <= 0)):
        raise ValueError(f"sparse columns not ascending in 0..{n_columns - 1}")
    if len(columns) and np.any(implied[columns] < 0):
        raise ValueError(f"sparse column {int(columns[np.argmax(implied[columns] < 0)])} "
                         f"has no implied code")
    if ptr[0] != 0 or np.any(np.diff(ptr) < 0) or ptr[-1] != len(rows):
        raise ValueError("sparse column pointers not ascending from 0 to the entries")
    if len(rows):
        if rows.min() < 0 or rows.max() >= n_rows:
            raise ValueError(f"a sparse entry's row is outside 0..{n_rows - 1}")
        step = np.diff(rows.astype(np.int64))
        starts = ptr[1:-1]
        step[starts[(starts > 0) & (starts < len(rows))] - 1] = 1   # a column's first entry
        if np.any(step <= 0):
            raise ValueError("a sparse column's rows are not ascending")
    is_sparse = np.zeros(n_columns, bool)
    is_sparse[columns] = True
    if dense.shape[0] != n_columns - len(columns):
        raise ValueError(f"{dense.shape[0]} dense and {len(columns)} sparse columns, "
                         f"expected {n_columns} in all")
    return SparseCodes(dense, np.flatnonzero(~is_sparse).astype(np.int64), columns,
                       implied[columns], ptr, rows, values, int(n_rows))


def _blob(array):
    """A 1-row large_binary array viewing ``array``'s bytes (no copy)."""
    data = pa.py_buffer(array)
    offsets = pa.py_buffer(np.array([0, array.nbytes], dtype=np.int64))
    return pa.LargeBinaryArray.from_buffers(pa.large_binary(), 1, [None, offsets, data])


class ArrowBlockWriter:
    """Writes block files into a (temporary) cache folder.

    Parameters
    ----------
    folder : str
        The writer's temporary folder.
    compression : {"lz4", "zstd", "none"}
    n_features : int
    codes_dtype : numpy.dtype
        uint8 or uint16.
    has_label, has_weight : bool
    """

    def __init__(self, folder, compression, n_features, codes_dtype, has_label, has_weight,
                 n_label_columns=1, cache_id=None):
        codec = check_compression(compression)
        self.cache_id = cache_id
        self.folder = folder
        self.n_features = n_features
        self.codes_dtype = np.dtype(codes_dtype).newbyteorder("<")
        self.has_label = has_label
        self.has_weight = has_weight
        self._options = pa.ipc.IpcWriteOptions(compression=codec)
        self._raw_options = pa.ipc.IpcWriteOptions(compression=None)
        self._min_savings = LZ4_MIN_SAVINGS if codec == "lz4" else 0.0
        os.makedirs(os.path.join(folder, BLOCKS_DIR), exist_ok=True)

    def write_block(self, index, row_start, codes, label, weight):
        """Write block ``index`` (codes a matrix or a ``SparseCodes``); returns its
        manifest entry (dict)."""
        n_rows = codes.shape[1]
        sparse = codes if isinstance(codes, SparseCodes) else None
        dense = np.ascontiguousarray(codes if sparse is None else sparse.dense,
                                     dtype=self.codes_dtype)
        columns = [_blob(to_byte_planes(dense) if self.codes_dtype.itemsize == 2 else dense)]
        names = ["codes"]
        raw = dense.nbytes
        parts = [("label", label, "<f4", self.has_label),
                 ("weight", weight, "<f4", self.has_weight)]
        if sparse is not None:
            parts += [(name, getattr(sparse, field), dtype, True) for name, field, dtype in (
                ("sparse_columns", "columns", "<i4"), ("sparse_ptr", "ptr", "<i8"),
                ("sparse_rows", "rows", "<i4"), ("sparse_values", "values",
                                                 self.codes_dtype))]
        for name, arr, dtype, present in parts:
            if present:
                arr = np.ascontiguousarray(arr, dtype=dtype)
                columns.append(_blob(arr))
                names.append(name)
                raw += arr.nbytes
        batch = pa.record_batch(columns, names=names)
        batch = batch.replace_schema_metadata(
            {
                "oocboost.n_features": str(self.n_features),
                "oocboost.n_rows": str(n_rows),
                "oocboost.codes_dtype": self.codes_dtype.name,
                "oocboost.block_index": str(index),
                **({} if self.cache_id is None else {"oocboost.cache_id": self.cache_id}),
            }
        )
        others = [np.asarray(a) for a, present in ((label, self.has_label),
                                                   (weight, self.has_weight)) if present]
        if self._min_savings and sparse is None \
                and not self._sample_compresses(dense, others):
            data = self._serialize(batch, self._raw_options)
        else:
            data = self._serialize(batch, self._options)
            if self._min_savings and data.size - self._framing(batch) > \
                    (1.0 - self._min_savings) * raw:
                data = self._serialize(batch, self._raw_options)
        rel = f"{BLOCKS_DIR}/block-{index:06d}.arrow"
        with open(os.path.join(self.folder, rel), "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        return {
            "index": index,
            "row_start": row_start,
            "n_rows": n_rows,
            "file": rel,
            "nbytes": data.size,
            "raw_nbytes": raw,
            "crc32": zlib.crc32(data),
        }

    def _sample_compresses(self, dense, others):
        """Whether lz4 saves at least half of ``LZ4_MIN_SAVINGS`` on a sample of the
        block: the first rows of every column of ``dense`` (about
        :data:`LZ4_SAMPLE_BYTES`) and the same rows of the ``others`` (labels, weights),
        in the block's proportions. Small blocks are compressed whole."""
        if dense.nbytes <= 2 * LZ4_SAMPLE_BYTES or dense.ndim != 2:
            return True
        rows = max(1, LZ4_SAMPLE_BYTES // max(1, dense.shape[0] * dense.itemsize))
        parts = [np.ascontiguousarray(dense[:, :rows])] + [
            np.ascontiguousarray(a[:rows]) for a in others]
        raw = sum(p.nbytes for p in parts)
        packed = sum(len(pa.compress(p, codec="lz4", asbytes=True)) for p in parts)
        return packed <= (1.0 - 0.5 * self._min_savings) * raw

    def _framing(self, batch):
        """Bytes of an IPC file of ``batch``'s schema and metadata with empty values: the
        part of a block file that compression cannot shrink."""
        # one empty value per column; from buffers, as pa.array's first call imports
        # pandas when it is installed (0.3-0.5 s of a small build)
        one_empty = pa.Array.from_buffers(pa.large_binary(), 1, [
            None, pa.py_buffer(np.zeros(2, np.int64)), pa.py_buffer(b"")])
        empty = pa.record_batch([one_empty] * batch.num_columns, schema=batch.schema)
        return self._serialize(empty, self._raw_options).size

    @staticmethod
    def _serialize(batch, options):
        sink = pa.BufferOutputStream()
        with pa.ipc.new_file(sink, batch.schema, options=options) as w:
            w.write_batch(batch)
        return sink.getvalue()

    def finish(self):
        """Close the writer; returns extra top-level manifest fields: ``codes_layout``
        for two-byte codes."""
        return {"codes_layout": BYTE_PLANES} if self.codes_dtype.itemsize == 2 else {}

    def close(self):
        pass


def _current_cache_id(path):
    """The cache_id of the manifest now at ``path`` (None when there is none)."""
    from .manifest import load_manifest_json

    try:
        doc = load_manifest_json(path)
    except CacheError:
        return None
    return doc.get("cache_id") if isinstance(doc, dict) else None


class ArrowBlockReader:
    """Reads and checks the block files of an Arrow cache.

    Parameters
    ----------
    path : str
        Cache folder.
    manifest : dict
        Validated manifest.
    """

    def __init__(self, path, manifest):
        self.path = path
        self.blocks = manifest["blocks"]
        # rows of the stored codes (n_columns when features are bundled)
        self.n_features = manifest.get("n_columns", manifest["n_features"])
        self.codes_dtype = np.dtype(manifest["codes_dtype"]).newbyteorder("<")
        self.byte_planes = manifest.get("codes_layout") == BYTE_PLANES
        self.has_label = manifest["has_label"]
        self.n_label_columns = manifest.get("label_columns", 1)
        self.has_weight = manifest["has_weight"]
        self.cache_id = manifest.get("cache_id")  # None: built before blocks were bound
        self._names = ["codes"] + ["label"] * self.has_label + ["weight"] * self.has_weight
        self.implied = sparse_field(manifest)
        # a stored column no block stores sparse (-1: none), named in every block
        self.total_column = -1
        if self.implied is not None:
            dense_everywhere = np.flatnonzero(sparse_field(manifest, "blocks") == 0)
            self.total_column = int(dense_everywhere[0]) if len(dense_everywhere) else -1
        self._read_labels_options = pa.ipc.IpcReadOptions(
            included_fields=list(range(1, len(self._names))), use_threads=False
        )
        # One decompression thread per block is enough: the consumer thread is busy with
        # numba kernels, and Arrow's pool would compete for the same 2-8 cores.
        self._read_all_options = pa.ipc.IpcReadOptions(use_threads=False)
        # block index -> identity of the file whose checksum matched (see module docstring)
        self._verified = {}

    def check_files(self):
        """Every block file is a regular file inside the cache (no link, FIFO or device)
        of the size the manifest records, and no two entries share a file."""
        seen = {}
        for b in self.blocks:
            if b["file"] in seen:
                raise CacheError(f"cache {self.path}: blocks {seen[b['file']]} and "
                                 f"{b['index']} both name {b['file']}")
            seen[b["file"]] = b["index"]
            check_regular(self.path, b["file"], nbytes=b["nbytes"],
                          what=f"block {b['index']} file {b['file']}")

    def _fail(self, b, what):
        return CacheError(
            f"cache {self.path}: block {b['index']} ({b['file']}) is corrupted ({what})"
        )

    def read_block(self, i, with_codes=True, wide=None):
        """:meth:`_read_block`; a block that fails its checks because another process
        rebuilt the cache meanwhile is said to be that, not a corruption."""
        try:
            return self._read_block(i, with_codes, wide)
        except CacheError:
            now = _current_cache_id(self.path)
            if self.cache_id is not None and now != self.cache_id:
                raise CacheError(
                    f"cache {self.path} was replaced while this run read it (block {i}: "
                    f"it was rebuilt, cache_id {self.cache_id} -> {now or 'gone'}); run "
                    f"again on the new cache") from None
            raise

    def _read_block(self, i, with_codes=True, wide=None):
        """Read block ``i``; with ``wide`` (a bool per stored column) two-byte codes come
        as a ``PlaneCodes``: every column's low byte, the ``wide`` columns' whole codes.

        Returns
        -------
        codes : ndarray (n_features, n_rows) uint8/uint16 or PlaneCodes, read-only, or None
        label, weight : ndarray (n_rows,) float32, read-only, or None
        """
        b = self.blocks[i]
        n_rows = b["n_rows"]
        if not with_codes and len(self._names) == 1:
            return None, None, None
        f, st = open_regular(self.path, b["file"], what=f"block {b['index']} file {b['file']}")
        try:
            with f:
                if st.st_size != b["nbytes"]:
                    raise self._fail(b, f"file has {st.st_size} bytes, expected "
                                        f"{b['nbytes']}: truncated")
                data = _map_file(f, st.st_size)
        except OSError as exc:
            raise CacheError(
                f"cache {self.path}: cannot read block {b['index']} ({b['file']}): {exc}"
            ) from None
        if len(data) != b["nbytes"]:
            raise self._fail(
                b, f"file has {len(data)} bytes, expected {b['nbytes']}: truncated"
            )
        identity = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
        if self._verified.get(i) != identity:
            crc = zlib.crc32(data)
            if crc != b["crc32"]:
                raise self._fail(
                    b, f"checksum mismatch: crc32 {crc:#010x}, expected {b['crc32']:#010x}"
                )
            self._verified[i] = identity
        options = self._read_all_options if with_codes else self._read_labels_options
        try:
            reader = pa.ipc.open_file(pa.py_buffer(data), options=options)
            if reader.num_record_batches != 1:
                raise self._fail(b, f"{reader.num_record_batches} record batches, expected 1")
            batch = reader.get_batch(0)
        except pa.ArrowException as exc:
            # The checksum matched, so this is a file we did not write (or a bug); either
            # way the user needs the block's name, not pyarrow's stack.
            raise self._fail(b, f"unreadable Arrow IPC: {exc}") from None
        n_sparse = b.get("n_sparse", 0) if with_codes else 0
        names = ((self._names + list(SPARSE_FIELDS) * (n_sparse > 0)) if with_codes
                 else self._names[1:])
        if batch.schema.names != names or batch.num_rows != 1:
            raise self._fail(b, f"columns {batch.schema.names}, expected {names}")
        self._check_binding(b, batch.schema.metadata or {})
        n_dense = self.n_features - n_sparse
        out = {}
        for name, col in zip(names, batch.columns):
            if name == "codes" and self.byte_planes:
                planes = self._unblob(b, name, col, np.dtype(np.uint8),
                                      (2 * n_dense * n_rows,))
                if wide is not None:
                    planes = planes.reshape(2, self.n_features, n_rows)
                    # a copy of the low plane: a view would keep every high byte alive
                    out[name] = PlaneCodes.from_planes(planes[0].copy(), planes[1], wide)
                    continue
                out[name] = from_byte_planes(planes, (n_dense, n_rows))
                out[name].flags.writeable = False
                continue
            if name == "codes":
                dtype, shape = self.codes_dtype, (n_dense, n_rows)
            elif name == "label" and self.n_label_columns > 1:
                dtype, shape = np.dtype("<f4"), (n_rows, self.n_label_columns)
            elif name in SPARSE_FIELDS:
                dtype, shape = self._sparse_field(b, name, n_sparse, out)
            else:
                dtype, shape = np.dtype("<f4"), (n_rows,)
            out[name] = self._unblob(b, name, col, dtype, shape)
        codes = out.get("codes")
        if self.implied is not None and with_codes:
            codes = self._sparse_codes(b, codes, out, n_sparse)
        return codes, out.get("label"), out.get("weight")

    def _sparse_field(self, b, name, n_sparse, out):
        """``(dtype, shape)`` of a sparse field of block ``b`` (the entries' count is
        the pointers' last)."""
        if name == "sparse_columns":
            return np.dtype("<i4"), (n_sparse,)
        if name == "sparse_ptr":
            return np.dtype("<i8"), (n_sparse + 1,)
        nnz = int(out["sparse_ptr"][-1])
        if nnz != b["nnz"]:
            raise self._fail(b, f"{nnz} sparse entries, the manifest says {b['nnz']}")
        return (np.dtype("<i4") if name == "sparse_rows" else self.codes_dtype), (nnz,)

    def _sparse_codes(self, b, dense, out, n_sparse):
        """The block's ``SparseCodes`` (checked: columns, pointers and rows in range and
        ascending), with no sparse column when it stored none."""
        if n_sparse == 0:
            empty = np.zeros(0, np.int64)
            return SparseCodes(dense, np.arange(self.n_features, dtype=np.int64), empty,
                               empty, np.zeros(1, np.int64), np.zeros(0, np.int32),
                               np.zeros(0, dense.dtype), b["n_rows"], self.total_column)
        try:
            codes = sparse_codes_of(dense, out["sparse_columns"], out["sparse_ptr"],
                                    out["sparse_rows"], out["sparse_values"], self.implied,
                                    b["n_rows"])
        except ValueError as exc:
            raise self._fail(b, str(exc)) from None
        at = int(np.searchsorted(codes.columns, self.total_column))
        if self.total_column >= 0 and at < len(codes.columns) and \
                codes.columns[at] == self.total_column:
            raise self._fail(b, f"column {self.total_column} is sparse, the manifest says "
                                f"no block stores it sparse")
        return codes._replace(total_column=self.total_column)

    def _check_binding(self, b, metadata):
        """The block names this cache and its own index (a self-consistent manifest
        entry copied from another cache, or two entries sharing a file, fail here)."""
        if self.cache_id is None:
            return
        owner = metadata.get(b"oocboost.cache_id", b"").decode("ascii", "replace")
        index = metadata.get(b"oocboost.block_index", b"").decode("ascii", "replace")
        if owner != self.cache_id:
            raise CacheError(f"cache {self.path}: block {b['index']} ({b['file']}) belongs "
                             f"to another cache (cache_id {owner or 'none'}, this cache's "
                             f"{self.cache_id}): it was copied in, not built here")
        if index != str(b["index"]):
            raise CacheError(f"cache {self.path}: block {b['index']} ({b['file']}) holds "
                             f"block {index} of this cache: the manifest points at the "
                             f"wrong file")

    def _unblob(self, b, name, col, dtype, shape):
        if not isinstance(col, pa.LargeBinaryArray) or col.null_count:
            raise self._fail(b, f"column {name!r} is {col.type}, expected large_binary")
        _, offsets, values = col.buffers()
        start, stop = np.frombuffer(offsets, dtype="<i8", count=2, offset=col.offset * 8)
        count = int(np.prod(shape))
        if stop - start != count * dtype.itemsize:
            raise self._fail(
                b,
                f"column {name!r} holds {stop - start} bytes, expected "
                f"{count * dtype.itemsize}",
            )
        arr = np.frombuffer(values, dtype=dtype, count=count, offset=int(start)).reshape(shape)
        if not dtype.isnative:
            arr = arr.astype(dtype.newbyteorder("="))
        # Decompressed Arrow buffers are mutable; blocks may be resident and shared.
        arr.flags.writeable = False
        return arr

    def close(self):
        pass
