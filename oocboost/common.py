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

Categorical features: codes ``0 .. n_categories - 1`` in decreasing frequency; when a
column has more categories than fit, the rarest are folded into one "other" code (the last
value code). Unseen categories at prediction time take the "other" code when there is one
and are treated as missing otherwise.
"""
import numpy as np

#: Per-row gradients, hessians and other per-row statistics. float32 halves the per-row
#: state and the bytes streamed; sums are taken in float64 (see HIST_DTYPE).
G_H_DTYPE = np.float32
#: Histogram sums. float64 because the sibling histogram is obtained by subtraction
#: (parent - child) and float32 sums cancel catastrophically.
HIST_DTYPE = np.float64
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
    """dtype of the bin codes for ``max_bin`` codes per feature: uint8 up to 256, else uint16."""
    check_max_bin(max_bin)
    return np.dtype(np.uint8) if max_bin <= 256 else np.dtype(np.uint16)


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
