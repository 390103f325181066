"""One home for the dtypes and bin conventions shared by every layer.

Bin codes
---------
Every feature is binned into small integer codes. ``max_bin`` counts *all* codes of a
feature, the missing code included (as LightGBM's ``max_bin`` does): a feature has at most
``max_bin - 1`` value bins, coded ``0 .. n_value_bins - 1``, and the code
``missing_bin(max_bin) == max_bin - 1`` is reserved for missing values, for every feature.
So ``max_bin=256`` (the default) stores one byte per cell. XGBoost's ``max_bin=256`` has 256
value bins and keeps missing values out of the bins; ours has 255 value bins.

Numeric features: ``bin_edges`` holds ``n_value_bins - 1`` increasing upper bounds; a value
``x`` gets the code ``searchsorted(edges, x, side="left")``, so bin ``b`` holds
``edges[b-1] < x <= edges[b]``. A split "code <= b goes left" is the raw rule
``x <= edges[b]``, the same rule scikit-learn's trees use. ``-inf`` lands in bin 0 and
``+inf`` in the last value bin.

Categorical features: categories ``0 .. n_categories - 1`` in decreasing frequency; when a
column has more categories than ``max_categories`` (default and ceiling
``MAX_CATEGORIES``, whatever ``max_bin`` is), the rarest are folded into one "other"
category (the last). Unseen categories at prediction time take the "other" code when there
is one and are treated as missing otherwise.

A feature whose categories do not fit ``max_bin - 1`` value codes is *wide*: category ``k``
gets the code ``k`` below the missing code and ``k + 1`` from it on
(:func:`category_code`), so the missing code stays ``max_bin - 1`` for every feature and
every kernel that routes rows keeps testing one missing code. Its codes are two bytes, and
its ``n_value_bins`` counts the code positions ``0 .. n_categories`` (the missing code among
them, never a value).

Histogram columns: a feature takes ``ceil(n_value_bins / max_bin)`` consecutive columns of
``max_bin`` bins (one for every feature but a wide one), so a wide feature's bins run on
through its columns and narrow features keep their ``max_bin`` bins
(:func:`hist_column_starts`).
"""
import numpy as np

#: Per-row gradients, hessians and other per-row statistics. float32 halves the per-row
#: state and the bytes streamed; sums are taken in float64 (see HIST_DTYPE).
G_H_DTYPE = np.float32
#: Histogram sums. float64 because the sibling histogram is obtained by subtraction
#: (parent - child) and float32 sums cancel catastrophically.
HIST_DTYPE = np.float64
#: Histogram sums of integer statistics (a forest's class counts without sample or class
#: weights: bootstrap draws and row counts). Integer adds are exact, so these sums equal
#: the float64 ones bit for bit while a bin takes 16 bytes instead of 32, which keeps
#: twice as many node histograms in cache (``learners/forest.py`` decides when they apply).
INT_HIST_DTYPE = np.int32
#: Largest total an int32 histogram sum may reach.
INT_HIST_MAX = np.iinfo(np.int32).max
#: Statistics per histogram bin are stored in groups of this many float64 lanes, so the
#: histogram kernel updates a bin with one vector add (``kernels/simd.py``). Learners with
#: 2 statistics (boosting's gradient and hessian) take 2 lanes; 3-4 (binary CART, regression
#: CART)
#: get one padded group; wider ones (multiclass CART) are stored unpadded.
HIST_LANES = 4


def hist_width(n_stats):
    """float64 entries per (slot, feature, bin) for ``n_stats`` statistics.

    >>> hist_width(2), hist_width(3), hist_width(4), hist_width(6)
    (2, 4, 4, 6)
    """
    n_stats = int(n_stats)
    if n_stats <= 2:
        return 2
    return HIST_LANES if n_stats <= HIST_LANES else n_stats


def weighted_sum(weights, values):
    """``sum(weights * values)`` as a Python float, without BLAS.

    ``np.dot`` of long vectors runs on OpenBLAS's threads, which then keep spinning for a
    while on the cores the next numba kernels need: one ``np.dot`` a round (the AUC
    metric's) made a whole boosting run on 2 cores 2.2x slower (3.28 s against 1.46 s).
    ``np.sum`` of the product also sums pairwise, so it is as accurate or more.

    >>> weighted_sum(np.array([1.0, 2.0]), np.array([3.0, 4.0]))
    11.0
    """
    return float(np.sum(np.multiply(weights, values, dtype=np.float64)))


def aligned_zeros(shape, dtype=np.float64, alignment=64):
    """``np.zeros(shape, dtype)`` whose data starts on an ``alignment``-byte boundary.

    Large numpy allocations start 16 bytes into a page, so 32-byte histogram entries
    would straddle cache lines every other bin.
    """
    dtype = np.dtype(dtype)
    n_bytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    buffer = np.zeros(n_bytes + alignment, np.uint8)
    offset = (-buffer.ctypes.data) % alignment
    return buffer[offset: offset + n_bytes].view(dtype).reshape(shape)


def scratch_view(buffer, shape, dtype):
    """``(buffer, view)``: a C-contiguous ``shape`` view of the flat ``buffer``, which
    is replaced by a larger one (contents not kept) when too small, or made when None.

    For per-block scratch reused from block to block: a ``[:, :n_rows]`` slice of the
    largest block's array would be strided for a shorter block, and numba compiles each
    kernel once more for a strided argument.
    """
    size = int(np.prod(shape, dtype=np.int64))
    if buffer is None or buffer.shape[0] < size:
        buffer = np.empty(size, dtype)
    return buffer, buffer[:size].reshape(shape)


#: Labels and sample weights as stored in the cache.
Y_DTYPE = np.float32
#: Raw feature values at prediction time and raw split thresholds.
X_DTYPE = np.float64
#: Node indices (node_of_row, children).
NODE_DTYPE = np.int32

DEFAULT_MAX_BIN = 256
MIN_MAX_BIN = 3  # one missing code and at least two value bins
MAX_MAX_BIN = 65536


def binned_dtype(max_bin):
    """dtype of the bin codes for ``max_bin`` codes per feature: uint8 up to 256, else
    uint16."""
    check_max_bin(max_bin)
    return np.dtype(np.uint8) if max_bin <= 256 else np.dtype(np.uint16)


#: Most categories a categorical feature keeps (codes are at most two bytes).
MAX_CATEGORIES = 65535


def category_code(index, max_bin):
    """Code of category ``index`` (int or int array): the index itself below the missing
    code ``max_bin - 1``, one more from it on (see the module docstring).

    >>> category_code(254, 256), category_code(255, 256), category_code(300, 256)
    (254, 256, 301)
    """
    missing = int(max_bin) - 1
    return index + (np.asarray(index) >= missing).astype(np.int64) \
        if isinstance(index, np.ndarray) else int(index) + int(int(index) >= missing)


def category_index(code, max_bin):
    """Inverse of :func:`category_code` for value codes (never the missing code).

    >>> category_index(254, 256), category_index(256, 256)
    (254, 255)
    """
    missing = int(max_bin) - 1
    return code - (np.asarray(code) > missing).astype(np.int64) \
        if isinstance(code, np.ndarray) else int(code) - int(int(code) > missing)


def category_value_bins(n_categories, max_bin):
    """``n_value_bins`` of a categorical feature with ``n_categories`` categories: the
    categories themselves when they fit below the missing code, else the code positions
    ``0 .. n_categories`` (wide).

    >>> category_value_bins(255, 256), category_value_bins(256, 256)
    (255, 257)
    """
    n_categories = max(int(n_categories), 1)
    return n_categories if n_categories <= int(max_bin) - 1 else n_categories + 1


def hist_column_starts(n_value_bins, max_bin):
    """First histogram column of each feature, and the column count at the end.

    Parameters
    ----------
    n_value_bins : array_like of int, shape (n_features,)
    max_bin : int

    Returns
    -------
    ndarray of int64, shape (n_features + 1,)
        Feature ``f`` owns columns ``starts[f] .. starts[f + 1] - 1``; with no wide
        feature this is ``arange(n_features + 1)``.

    >>> hist_column_starts([10, 300, 4], 256).tolist()
    [0, 1, 3, 4]
    """
    n_value_bins = np.asarray(n_value_bins, dtype=np.int64).reshape(-1)
    n_columns = np.maximum(1, -(-n_value_bins // int(max_bin)))
    starts = np.zeros(n_value_bins.shape[0] + 1, dtype=np.int64)
    np.cumsum(n_columns, out=starts[1:])
    return starts


def codes_dtype(max_bin, n_value_bins=()):
    """dtype of a cache's codes: :func:`binned_dtype` of ``max_bin``, or uint16 when a
    wide categorical feature has codes past 255."""
    widest = int(np.max(np.asarray(n_value_bins, dtype=np.int64), initial=0))
    return binned_dtype(max_bin) if widest <= 256 else np.dtype(np.uint16)


def missing_bin(max_bin):
    """The reserved missing code: ``max_bin - 1``."""
    return int(max_bin) - 1


def check_max_bin(max_bin):
    from .errors import ParameterError

    if not isinstance(max_bin, (int, np.integer)) or isinstance(max_bin, bool):
        raise ParameterError(f"max_bin must be an integer, got {max_bin!r}")
    if not MIN_MAX_BIN <= max_bin <= MAX_MAX_BIN:
        raise ParameterError(
            f"max_bin must be between {MIN_MAX_BIN} and {MAX_MAX_BIN} (it counts the "
            f"reserved missing code), got {max_bin}"
        )
    return int(max_bin)
