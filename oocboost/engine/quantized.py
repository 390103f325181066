"""The split policy of quantized-gradient training (``use_quantized_grad``).

The histograms hold integer sums of the rows' quantized gradients and hessians
(``kernels/quantize.py``); this policy is XGBoost's second-order gain of
:class:`~oocboost.engine.policies.GradientPolicy` read through each tree's scales: the
node sums and the split search see ``integer sum x scale``, so gains, leaf values,
covers and every threshold (``min_child_weight``, ``gamma``, ``max_delta_step``,
monotone bounds) are in the units of the real gradients, as in LightGBM 4's quantized
training.
"""
from __future__ import annotations

import numpy as np

from ..common import hist_width
from ..kernels.quantize import dequantize_histograms
from .policies import GradientPolicy

#: int32 sums hold a node's quantized statistics while ``rows x num_grad_quant_bins``
#: stays below this (each row adds at most ``bins`` to the hessian lane); past it the
#: sums are float64, which hold these integers exactly to 2^53.
INT32_SUM_LIMIT = 2 ** 31 - 1

#: Bytes of float64 sums the split search converts at once (whole slots, at least one,
#: at most ``MAX_CHUNK_SLOTS``): the memory plan counts this scratch.
SCRATCH_BYTES = 16 << 20
MAX_CHUNK_SLOTS = 16


def quantized_hist_dtype(n_rows: float, num_grad_quant_bins: int) -> np.dtype:
    """int32 sums when no node's sum can overflow them, else float64."""
    exact = float(n_rows) * int(num_grad_quant_bins) <= INT32_SUM_LIMIT
    return np.dtype(np.int32 if exact else np.float64)


def chunk_slots(n_columns: int, max_bin: int) -> int:
    """Slots the split search converts to float64 sums at a time."""
    slot_bytes = n_columns * max_bin * hist_width(2) * 8
    return int(max(1, min(MAX_CHUNK_SLOTS, SCRATCH_BYTES // max(slot_bytes, 1))))


def scratch_bytes(n_columns: int, max_bin: int) -> int:
    """Bytes of the split search's float64 scratch (:func:`chunk_slots` slots)."""
    return chunk_slots(n_columns, max_bin) * n_columns * max_bin * hist_width(2) * 8


class QuantizedGradientPolicy(GradientPolicy):
    """:class:`GradientPolicy` over histograms of quantized statistics.

    Extra parameters: ``hist_dtype`` (:func:`quantized_hist_dtype`). Before the round's
    first histogram pass the learner sets each tree's ``(g_scale, h_scale)`` with
    :meth:`set_scales`.
    """

    def __init__(self, *, hist_dtype: np.dtype, **kwargs) -> None:
        super().__init__(**kwargs)
        self.hist_dtype = np.dtype(hist_dtype)
        self.scales = None

    def set_scales(self, scales: np.ndarray) -> None:
        """``scales``: float64 ``(n_trees, 2)``, each tree's gradient and hessian scale."""
        self.scales = np.ascontiguousarray(scales, dtype=np.float64)

    def _tree_scales(self, trees, n):
        if self.scales is None:
            raise RuntimeError("QuantizedGradientPolicy.set_scales was not called")
        if trees is None:
            return np.broadcast_to(self.scales[0], (n, 2))
        return self.scales[np.asarray(trees, dtype=np.int64)]

    def histogram_sums(self, sums: np.ndarray, trees: np.ndarray | None = None
                       ) -> np.ndarray:
        """Node sums read from the histograms, in gradient units."""
        sums = np.asarray(sums, dtype=np.float64)
        return sums * self._tree_scales(trees, len(sums))

    def find_splits(self, hist: np.ndarray, sums: np.ndarray, slots: np.ndarray,
                    feature_mask: np.ndarray, trees: np.ndarray | None = None,
                    node_ids: np.ndarray | None = None) -> dict[str, np.ndarray]:
        """The gradient policy's search over the slots' sums times their trees' scales,
        converted a few slots at a time."""
        slots = np.ascontiguousarray(slots, dtype=np.int32)
        n_eval = len(slots)
        scales = np.ascontiguousarray(self._tree_scales(trees, n_eval))
        step = chunk_slots(hist.shape[1], hist.shape[2])
        scratch = np.empty((min(step, max(n_eval, 1)),) + hist.shape[1:], np.float64)
        parts = []
        mask = np.asarray(feature_mask)
        for lo in range(0, n_eval, step):
            hi = min(n_eval, lo + step)
            part = scratch[: hi - lo]
            dequantize_histograms(hist, slots[lo:hi], scales[lo:hi], part)
            parts.append(super().find_splits(
                part, sums[lo:hi], np.arange(hi - lo, dtype=np.int32),
                mask[lo:hi] if mask.ndim == 2 else mask,
                trees=None if trees is None else trees[lo:hi],
                node_ids=None if node_ids is None else node_ids[lo:hi]))
        if len(parts) == 1:
            return parts[0]
        return {key: np.concatenate([p[key] for p in parts]) for key in parts[0]}
