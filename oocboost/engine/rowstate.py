"""Per-row training state (margins, gradients, node positions), in RAM or spilled per block.

Boosting keeps, for every training row, its margins (8 bytes per output), its gradient,
hessian and count (12 bytes per output) and the node it sits in for each tree being grown
(1 byte per tree for depth-6 trees, up to 4): ``21 * n_outputs`` bytes a row. That is
O(rows), so when it does not fit the memory plan it lives in files in a spill folder,
mapped one block at a time as the cache blocks stream past: only about one block's state
is resident at a time and peak memory no longer grows with the number of rows.

Both stores have the same interface::

    views = state.load(block_index, fields)   # dict name -> ndarray of the block's rows
    ... modify views in place ...
    state.store(block_index, views, fields)  # views alias the state in both stores;
                                              # store copies only arrays put in their place
"""
import math
import mmap
import os
import shutil
import tempfile
import time

import numpy as np

#: The largest page-cache folio a fault may map at once (x86-64's PMD size, 2 MiB): the
#: granularity in which a block's state pages are unmapped (see
#: :meth:`SpilledRowState._unmap_block`). A multiple of the page size.
FOLIO_BYTES = max(mmap.PAGESIZE, 2 << 20)


class RowStateSpec:
    """Names, shapes and dtypes of the state arrays.

    Parameters
    ----------
    fields : dict[str, tuple[tuple, numpy dtype]]
        name -> (shape, dtype) where ``shape`` has exactly one ``None``: the rows axis.
        E.g. ``{"margin": ((None, 3), np.float64), "stats": ((1, None, 3), np.float32)}``.
    """

    def __init__(self, fields):
        self.fields = {}
        for name, (shape, dtype) in fields.items():
            if list(shape).count(None) != 1:
                raise ValueError(f"state field {name!r}: shape needs one None (rows axis)")
            self.fields[name] = (tuple(shape), np.dtype(dtype))
        # looked up at every block's load and store
        self._per_row = {name: math.prod(d for d in shape if d is not None)
                         for name, (shape, _) in self.fields.items()}

    def values_per_row(self, name):
        """Entries of field ``name`` per row (the product of its other axes)."""
        return self._per_row[name]

    def bytes_per_row(self):
        """Bytes of state per row (all fields)."""
        return sum(self.values_per_row(name) * dtype.itemsize
                   for name, (_, dtype) in self.fields.items())

    def block_view(self, name, flat, start, stop):
        """Rows ``start .. stop`` of field ``name`` stored block after block in ``flat``
        (its values, C order within a block), as a C-contiguous array of the field's
        shape."""
        shape, _ = self.fields[name]
        per_row = self.values_per_row(name)
        block_shape = tuple(stop - start if d is None else d for d in shape)
        return flat[start * per_row:stop * per_row].reshape(block_shape)


class InMemoryRowState:
    """All rows' state in RAM; ``load`` returns views of one block's rows.

    Each field is one flat array holding the blocks one after the other, each block's
    rows C-contiguous, as in the spilled store's files. (A whole ``(n_trees, n_rows)``
    array would give a block a strided view: the kernels were compiled a second time for
    those views, 170 s of compile time over the test suite, and a user paid it on every
    first run with several trees and blocks.)
    """

    in_memory = True
    #: Seconds spent reading and writing spilled state (none in RAM).
    io_seconds = 0.0

    def __init__(self, spec, block_row_starts, n_rows):
        self.spec = spec
        self.block_row_starts = np.asarray(block_row_starts, dtype=np.int64)
        self.n_rows = int(n_rows)
        self.arrays = {name: np.zeros(self.n_rows * spec.values_per_row(name), dtype=dtype)
                       for name, (_, dtype) in spec.fields.items()}

    def _bounds(self, block_index):
        start = int(self.block_row_starts[block_index])
        stop = (int(self.block_row_starts[block_index + 1])
                if block_index + 1 < len(self.block_row_starts) else self.n_rows)
        return start, stop

    def load(self, block_index, fields=None):
        """Views of block ``block_index``'s rows, for ``fields`` (default all)."""
        start, stop = self._bounds(block_index)
        return {name: self.spec.block_view(name, self.arrays[name], start, stop)
                for name in (fields or self.arrays)}

    def store(self, block_index, views, fields=None):
        """Views from ``load`` alias the arrays already; an array a caller put in their
        place is copied in."""
        for name in (fields or views):
            target = self.load(block_index, (name,))[name]
            if not np.may_share_memory(target, views[name]):
                target[...] = views[name]

    def full(self, name):
        """The whole array of every row (RAM store only), for fields with no axis of
        more than one entry before the rows axis, whose blocks lie in row order."""
        shape, _ = self.spec.fields[name]
        before = shape[:shape.index(None)]
        if int(np.prod(before, dtype=np.int64)) != 1:
            raise ValueError(f"state field {name!r} of shape {shape} is stored a block at "
                             f"a time; full() takes fields of one row-major array")
        return self.spec.block_view(name, self.arrays[name], 0, self.n_rows)

    def close(self):
        self.arrays = {}


class SpilledRowState:
    """State kept in files in a spill folder, mapped into memory one block at a time.

    One raw file per field holds every block's array at a fixed offset (blocks in row
    order, each C-contiguous), mapped once (``mmap``, shared). ``load`` returns views of a
    block's range of the mapping, so nothing is copied: the kernels read and write the page
    cache directly, and the kernel writes dirty pages back to the file in its own time.
    When the next block is loaded, the previous block's pages are unmapped from this
    process (``madvise(MADV_DONTNEED)``; the data stays in the page cache and the file), so
    resident memory holds about one block of state whatever the number of rows.

    Why a mapping: reading and writing the state with ``preadv``/``pwrite`` into buffers
    moved 13-21 bytes a row a pass through copies that, on 2 cores busy with histogram
    kernels and the cache's reader thread, cost 13.7 s of 45.6 s (20 boosting rounds,
    16M rows, 512MB). (Rewriting a ``.npy`` file per block, before that, cost 36 ns a row
    a pass at 16M rows, four times the histogram itself.)

    As with the RAM store, the views alias the state: what a learner writes into them is
    kept, ``store`` only completes the write when a caller replaced an array, and the views
    stay valid (re-read from the page cache if unmapped) until ``close``.

    Parameters
    ----------
    spec : RowStateSpec
    block_row_starts : ndarray (n_blocks,) int64
    n_rows : int
    directory : str or None
        Parent folder for the spill (the cache folder's parent by default of the caller);
        a private temporary folder is made inside and removed by ``close``.
    """

    in_memory = False

    def __init__(self, spec, block_row_starts, n_rows, directory=None):
        self.spec = spec
        self.block_row_starts = np.asarray(block_row_starts, dtype=np.int64)
        self.n_rows = int(n_rows)
        self.dir = tempfile.mkdtemp(prefix="oocboost-state-", dir=directory)
        #: Seconds spent in ``load`` and ``store`` (telemetry: ``training_log.state_io_s``).
        #: Page faults on the mapped state are paid by the kernels that touch the views.
        self.io_seconds = 0.0
        self._maps = {}
        self._row_bytes = {}
        self._loaded = None  # block whose pages were mapped last
        try:
            for name, (shape, dtype) in spec.fields.items():
                self._row_bytes[name] = spec.values_per_row(name) * dtype.itemsize
                size = self.n_rows * self._row_bytes[name]
                fd = os.open(self._path(name), os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
                try:
                    # a sparse file of zeros: a fresh block's state, as in RAM
                    os.ftruncate(fd, max(size, 1))
                    # mmap cannot map 0 bytes; a field of no rows gets a 1-byte mapping
                    self._maps[name] = mmap.mmap(fd, max(size, 1), mmap.MAP_SHARED,
                                                 mmap.PROT_READ | mmap.PROT_WRITE)
                finally:
                    os.close(fd)
        except BaseException:
            self.close()
            raise

    _bounds = InMemoryRowState._bounds

    def _path(self, name):
        return os.path.join(self.dir, f"{name}.bin")

    def _view(self, name, block_index):
        start, stop = self._bounds(block_index)
        shape, dtype = self.spec.fields[name]
        full = tuple(stop - start if d is None else d for d in shape)
        count = (stop - start) * self._row_bytes[name] // dtype.itemsize
        return np.frombuffer(self._maps[name], dtype=dtype, count=count,
                             offset=start * self._row_bytes[name]).reshape(full)

    def _unmap_block(self, block_index):
        """Drop ``block_index``'s pages from this process (kept in the page cache), and
        those of its neighbours within the same :data:`FOLIO_BYTES`-aligned range.

        Why the neighbours: the page cache holds a file in folios of up to 2 MiB, and a
        fault maps every page of the folio it hits. Unmapping a block's exact pages left
        the pages its neighbour shares a folio with mapped again by the neighbour's first
        fault, until the next pass: on 64M rows (489 blocks) 12-15 MiB of the one-byte
        node field stayed resident, the growth of the peak with the rows. Unmapping a
        page the loaded block will use only costs it a minor fault."""
        start, stop = self._bounds(block_index)
        for name, mm in self._maps.items():
            lo = start * self._row_bytes[name] // FOLIO_BYTES * FOLIO_BYTES
            hi = min(len(mm), -(-stop * self._row_bytes[name] // FOLIO_BYTES) * FOLIO_BYTES)
            if hi > lo:
                mm.madvise(mmap.MADV_DONTNEED, lo, hi - lo)

    def load(self, block_index, fields=None):
        """Views of block ``block_index``'s rows for ``fields`` (default all), in the
        mapped files; the previously loaded block's pages are unmapped first."""
        t0 = time.perf_counter()
        if self._loaded is not None and self._loaded != block_index:
            self._unmap_block(self._loaded)
        self._loaded = block_index
        out = {name: self._view(name, block_index) for name in (fields or self.spec.fields)}
        self.io_seconds += time.perf_counter() - t0
        return out

    def store(self, block_index, views, fields=None):
        """Keep ``fields`` of ``views`` (default all). Views from ``load`` are the state
        already; an array a caller put in their place is copied into the mapping."""
        t0 = time.perf_counter()
        for name in (fields or views):
            target = self._view(name, block_index)
            if not np.may_share_memory(target, views[name]):
                target[...] = views[name]
        self.io_seconds += time.perf_counter() - t0

    def close(self):
        maps, self._maps = self._maps, {}
        for mm in maps.values():
            try:
                mm.close()
            except BufferError:
                # A caller still holds a view: the mapping lives until that view goes.
                pass
        shutil.rmtree(self.dir, ignore_errors=True)


def spill_dir_for(cache):
    """Where spilled state goes: beside the cache (same disk, known free space), in the
    cache's parent folder; a private temporary folder is made inside."""
    return os.path.dirname(os.path.abspath(os.fspath(cache.path)))


def make_row_state(spec, block_row_starts, n_rows, in_memory, spill_dir=None):
    """The RAM store when ``in_memory`` (the memory plan decides), else the spilled one."""
    if in_memory:
        return InMemoryRowState(spec, block_row_starts, n_rows)
    return SpilledRowState(spec, block_row_starts, n_rows, spill_dir)
