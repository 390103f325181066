"""Bin codes of mixed width: one byte a code, two only for the wide columns.

A cache whose codes are two bytes only because of a wide categorical feature (more than
255 categories at ``max_bin=256``, ``common.py``) would double the bytes of every numeric
column in memory if its blocks were plain ``uint16`` matrices. Its blocks hold instead a
:class:`PlaneCodes`: the low byte of every column, and the whole two-byte codes of the
wide columns only::

    low[column, row]       uint8,  (n_columns, n_rows)   every column's low byte
    wide[k, row]           uint16, (n_wide, n_rows)      codes of the wide columns
    wide_row[column]       int64,  (n_columns,)          row of ``wide``, or -1 (narrow)

(A wide column's low byte stays in ``low`` unread: one byte a row, against a copy of
``low`` without it for every block. Its high byte alone would have been one byte less,
but joining the two bytes at every read made the wide column's histogram 2x slower.)

Kernels take the three arrays (:func:`code_arrays`; ``wide`` and ``wide_row`` None for a
plain matrix) and read a code with :func:`read_code`, which numba resolves when it
compiles: with None it is the indexing it always was, so caches without a wide feature
run the same machine code as before. (The arrays are passed one by one, not as the
named tuple: taking an array out of a tuple in a hot loop made numba count a reference
to it per read, and a boosting run's histograms took 12x longer.)
"""
from typing import NamedTuple

import numpy as np
from numba import njit, prange, types
from numba.extending import overload

#: Codes past this are two bytes.
ONE_BYTE_MAX_CODE = 255


class PlaneCodes(NamedTuple):
    """Codes of ``low.shape[0]`` columns whose wide columns keep their two-byte codes
    in ``wide`` (module docstring). Behaves as a read-only ``(n_columns, n_rows)`` uint16
    matrix for the attributes Python code reads (``shape``, ``dtype``, ``nbytes``) and
    for every kernel that reads codes through :func:`read_code`.

    >>> c = PlaneCodes.from_array(np.array([[1, 2], [300, 7]], np.uint16), [False, True])
    >>> c.nbytes, c.to_array().tolist()
    (24, [[1, 2], [300, 7]])
    """

    low: np.ndarray
    wide: np.ndarray
    wide_row: np.ndarray
    n_rows: int

    @property
    def shape(self):
        return (self.low.shape[0], self.n_rows)

    @property
    def ndim(self):
        return 2

    @property
    def dtype(self):
        """The codes' logical dtype: two bytes where they need them."""
        return np.dtype(np.uint16)

    @property
    def nbytes(self):
        """Bytes held (a byte a code, two more for a wide column's)."""
        return self.low.nbytes + self.wide.nbytes + self.wide_row.nbytes

    @classmethod
    def from_planes(cls, low, high_plane, wide):
        """From the two byte planes of a ``(n_columns, n_rows)`` uint16 matrix (low
        bytes, high bytes): ``low`` is kept, the ``wide`` columns' codes are made whole."""
        wide = np.asarray(wide, dtype=bool)
        wide_row = np.full(wide.shape[0], -1, np.int64)
        wide_row[wide] = np.arange(int(wide.sum()))
        codes = low[wide].astype(np.uint16)
        codes |= high_plane[wide].astype(np.uint16) << 8
        for a in (low, codes):
            a.flags.writeable = False
        return cls(low, codes, wide_row, int(low.shape[1]))

    @classmethod
    def from_array(cls, codes, wide):
        """From a ``(n_columns, n_rows)`` uint16 matrix whose narrow columns (``wide``
        False) hold codes up to 255. Raises ValueError when one does not."""
        codes = np.asarray(codes)
        wide = np.asarray(wide, dtype=bool)
        if codes.ndim != 2 or wide.shape != (codes.shape[0],):
            raise ValueError(f"codes of shape {codes.shape} need one wide flag a row, "
                             f"got {wide.shape}")
        if codes.shape[1] and np.any(codes[~wide].max(axis=1, initial=0)
                                     > ONE_BYTE_MAX_CODE):
            raise ValueError("a column flagged narrow holds a code past 255")
        low = np.ascontiguousarray(codes & 0xFF, dtype=np.uint8)
        return cls.from_planes(low, (codes >> 8).astype(np.uint8), wide)

    def to_array(self):
        """The ``(n_columns, n_rows)`` uint16 matrix (a new array)."""
        out = self.low.astype(np.uint16)
        wide = self.wide_row >= 0
        out[wide] = self.wide[self.wide_row[wide]]
        return out


class SparseCodes(NamedTuple):
    """Codes of a block whose sparse columns keep only the rows off their implied code
    (the code of an absent entry: of 0.0, or the missing code), column by column as in
    CSC; its other columns are a plain matrix::

        dense[k, row]        uint8/uint16, (n_dense, n_rows)    codes of the dense columns
        dense_columns[k]     int64, (n_dense,)     their stored column numbers, ascending
        columns[k]           int64, (n_sparse,)    the sparse columns' numbers, ascending
        implied[k]           int64, (n_sparse,)    each sparse column's implied code
        ptr[k]               int64, (n_sparse + 1,)  column k's entries: ptr[k]..ptr[k+1]
        rows[e]              int32, (nnz,)         row in the block, ascending in a column
        values[e]            uint8/uint16, (nnz,)  the code at that row
        total_column         int                   a stored column dense in every block of
                                                   the cache, or -1 (its histogram sums a
                                                   node's rows: ``engine/histograms.py``)

    Behaves as a read-only ``(n_columns, n_rows)`` matrix for the attributes Python code
    reads (``shape``, ``dtype``, ``nbytes``); kernels that know the layout read the
    arrays (``kernels/sparse_histogram.py``), the others take :meth:`to_array`
    (:func:`code_arrays` makes it).

    >>> c = SparseCodes.from_array(np.array([[0, 0, 3, 0], [1, 2, 1, 2]], np.uint8),
    ...                            np.array([0, -1]), 0.5)
    >>> c.columns.tolist(), c.rows.tolist(), c.values.tolist(), c.to_array().tolist()
    ([0], [2], [3], [[0, 0, 3, 0], [1, 2, 1, 2]])
    """

    dense: np.ndarray
    dense_columns: np.ndarray
    columns: np.ndarray
    implied: np.ndarray
    ptr: np.ndarray
    rows: np.ndarray
    values: np.ndarray
    n_rows: int
    total_column: int = -1

    @property
    def shape(self):
        return (self.dense.shape[0] + self.columns.shape[0], self.n_rows)

    @property
    def ndim(self):
        return 2

    @property
    def dtype(self):
        return self.dense.dtype

    @property
    def nnz(self):
        """Entries held of the sparse columns."""
        return int(self.rows.shape[0])

    @property
    def nbytes(self):
        """Bytes held (the dense codes, and of each entry its row and code)."""
        return sum(a.nbytes for a in (self.dense, self.dense_columns, self.columns,
                                      self.implied, self.ptr, self.rows, self.values))

    @classmethod
    def from_array(cls, codes, implied, threshold):
        """The sparse form of a ``(n_columns, n_rows)`` matrix, or the matrix itself when
        no column is sparse: a column is when its ``implied`` code (-1: never) is at
        least ``threshold`` of its rows (LightGBM's ``sparse_threshold``)."""
        codes = np.asarray(codes)
        implied = np.asarray(implied, np.int64)
        n_rows = codes.shape[1]
        candidates = np.flatnonzero(implied >= 0)
        if not len(candidates) or not n_rows:
            return codes
        at_implied = np.count_nonzero(
            codes[candidates] == implied[candidates, None].astype(codes.dtype), axis=1)
        sparse = candidates[at_implied >= threshold * n_rows]
        if not len(sparse):
            return codes
        is_sparse = np.zeros(codes.shape[0], bool)
        is_sparse[sparse] = True
        off = codes[sparse] != implied[sparse, None].astype(codes.dtype)
        column_of_entry, rows = np.nonzero(off)   # row-major: by column, rows ascending
        ptr = np.zeros(len(sparse) + 1, np.int64)
        np.cumsum(np.bincount(column_of_entry, minlength=len(sparse)), out=ptr[1:])
        dense_columns = np.flatnonzero(~is_sparse).astype(np.int64)
        return cls(np.ascontiguousarray(codes[dense_columns]), dense_columns,
                   sparse.astype(np.int64), implied[sparse], ptr, rows.astype(np.int32),
                   codes[sparse][off], int(n_rows))

    def to_array(self):
        """The ``(n_columns, n_rows)`` matrix (a new array)."""
        out = np.empty(self.shape, self.dense.dtype)
        out[self.dense_columns] = self.dense
        out[self.columns] = self.implied[:, None].astype(self.dense.dtype)
        entry_column = np.repeat(self.columns, np.diff(self.ptr))
        out[entry_column, self.rows] = self.values
        return out

    def take_columns(self, columns):
        """``(len(columns), n_rows)`` matrix of the stored ``columns`` (a new array):
        what a kernel reading a few columns at any row needs, without the others."""
        columns = np.asarray(columns, np.int64)
        out = np.empty((len(columns), self.n_rows), self.dense.dtype)
        is_dense = np.isin(columns, self.dense_columns)
        dense_at = np.where(is_dense, np.searchsorted(self.dense_columns, columns), -1)
        sparse_at = np.where(is_dense, -1, np.searchsorted(self.columns, columns))
        _take_columns(read_only(self.dense), dense_at, read_only(self.ptr),
                      read_only(self.rows), read_only(self.values), read_only(self.implied),
                      sparse_at, out)
        return out


@njit(parallel=True, cache=True, nogil=True)
def _take_columns(dense, dense_at, ptr, rows, values, implied, sparse_at, out):
    """Row ``j`` of ``out``: dense row ``dense_at[j]``, or sparse column
    ``sparse_at[j]``'s implied code with its entries written over it."""
    for j in prange(out.shape[0]):
        d = dense_at[j]
        if d >= 0:
            for i in range(out.shape[1]):
                out[j, i] = dense[d, i]
            continue
        k = sparse_at[j]
        code = implied[k]
        for i in range(out.shape[1]):
            out[j, i] = code
        for e in range(ptr[k], ptr[k + 1]):
            out[j, rows[e]] = values[e]


def as_array(codes):
    """``codes`` as a plain matrix: itself, or a :class:`PlaneCodes` or
    :class:`SparseCodes` made whole (for the kernels and callers that only take
    arrays)."""
    return codes.to_array() if isinstance(codes, (PlaneCodes, SparseCodes)) else codes


def read_only(array):
    """``array`` as a read-only view (no copy) for a kernel that only reads it.

    numba compiles a kernel once per argument type, and an array's type includes whether
    it is writable: a cache block's codes are read-only, codes made in memory are not,
    and each kernel was compiled twice for them (on the test suite, 190 s of the 850 s
    of compile time went to the writable twins). Views of one kind mean one compile.
    """
    if not array.flags.writeable:
        return array
    view = array.view()
    view.flags.writeable = False
    return view


def code_arrays(codes):
    """``(low, wide, wide_row)`` for the kernels: a :class:`PlaneCodes`' arrays, or
    ``(codes, None, None)`` for a plain matrix (numba then compiles :func:`read_code`
    to plain indexing; so do codes without a wide column, whose low bytes are all).
    ``low`` and ``wide`` are read-only views (:func:`read_only`)."""
    if isinstance(codes, SparseCodes):
        # the kernels that walk only a sparse column's entries take its arrays themselves
        return read_only(codes.to_array()), None, None
    if isinstance(codes, PlaneCodes):
        if codes.wide.shape[0] == 0:
            return read_only(codes.low), None, None
        return read_only(codes.low), read_only(codes.wide), codes.wide_row
    return read_only(codes), None, None


def read_code(low, wide, wide_row, f, i):
    """Code of column ``f``, row ``i`` (int64) of :func:`code_arrays`' arrays. Only
    callable from numba-compiled code."""
    raise NotImplementedError("read_code is compiled by numba (kernels/codes.py)")


@overload(read_code)
def _read_code(low, wide, wide_row, f, i):
    # compiled as a function of its own, which LLVM inlines: inlined by numba, its
    # branch tripped numba's IR checks and the histograms ran 6x slower
    if isinstance(wide, types.NoneType):
        return lambda low, wide, wide_row, f, i: np.int64(low[f, i])

    def mixed(low, wide, wide_row, f, i):
        k = wide_row[f]
        if k < 0:
            return np.int64(low[f, i])
        return np.int64(wide[k, i])
    return mixed
