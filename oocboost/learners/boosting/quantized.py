"""Quantized-gradient training: LightGBM 4's ``use_quantized_grad``, out of core.

LightGBM computes every row's gradient before it builds the round's first histogram, so
it knows the largest gradient and hessian, which set the round's scales
(``kernels/quantize.py``). Out of core the gradients are made block by block, so a
quantized round has one pass more than a plain one:

1. the gradient pass: the last round applied to every row's margin, the gradients and
   hessians made (float32, in the per-row state as in every round) and their extremes
   taken; with Dask the extremes are agreed over the workers;
2. the histogram passes, as in any round, but the first one quantizes each block's
   statistics into the state's ``qstats`` (int8, 2 bytes a row and output) and every pass
   adds those into int32 histograms (``engine/quantized.py`` reads them through the
   scales);
3. with ``quant_train_renew_leaf``, one pass that sums each leaf's full-precision
   gradients and hessians and sets its value from them (LightGBM's leaf renewal).

The random numbers of stochastic rounding are a function of the seed, the round and
the global row, so the model does not depend on block size, prefetch, threads or the
number of workers.
"""
from __future__ import annotations

import numpy as np

from ...engine.passes import grow_passes
from ...engine.quantized import QuantizedGradientPolicy, quantized_hist_dtype
from ...errors import ParameterError
from ...kernels.quantize import gradient_extremes, quantize_gradients
from .row_sampling import sampling_kind

#: Largest ``num_grad_quant_bins``: a quantized hessian (0 .. bins) is one int8.
MAX_QUANT_BINS = 127


def check_quantized_params(p: dict) -> None:
    """Refuse what quantized training does not combine with, naming the parameter."""
    if not p["use_quantized_grad"]:
        return
    refused = [name for name, on in (
        ("grow_policy='symmetric'", p["grow_policy"] == "symmetric"),
        ("boosting_type='ordered'", p["boosting_type"] == "ordered"),
        ("linear_tree", bool(p["linear_tree"])),
        ("data_sample_strategy='goss' / sampling_method='gradient_based'",
         sampling_kind(p) is not None)) if on]
    if refused:
        raise ParameterError(f"use_quantized_grad=True is not offered with "
                             f"{', '.join(refused)}: train those in full precision "
                             f"(use_quantized_grad=False)")


def quantized_policy(p: dict, total_rows: float, **kwargs) -> QuantizedGradientPolicy:
    """The round's split policy; ``total_rows`` is every worker's rows (the sums'
    bound)."""
    return QuantizedGradientPolicy(
        hist_dtype=quantized_hist_dtype(total_rows, p["num_grad_quant_bins"]), **kwargs)


def scales_of(extremes: np.ndarray, num_grad_quant_bins: int) -> np.ndarray:
    """``(n_outputs, 2)`` gradient and hessian scales from the round's extremes (max
    ``|g|``, max ``h``): LightGBM's ``max|g| / (bins // 2)`` (integer halving, as LightGBM
    divides) and ``max h / bins``. An output whose statistics are all zero gets scale 1
    (every quantized value is then 0)."""
    bins = int(num_grad_quant_bins)
    scales = np.asarray(extremes, np.float64) / np.array([float(bins // 2), float(bins)])
    return np.where(scales > 0, scales, 1.0)


def gradient_pass(state, blocks, prepare_block) -> np.ndarray:
    """Pass 1 of a quantized round: ``prepare_block(block, views)`` applies the last round
    and makes the block's gradients; returns each output's scales (:func:`scales_of`),
    agreed over the workers of a distributed run."""
    extremes = np.zeros((state.n_outputs, 2), np.float64)
    for block in blocks():
        views = state.rows.load(block.index)
        prepare_block(block, views)
        gradient_extremes(views["stats"], extremes)
        state.rows.store(block.index, views)
    if state.distributed is not None:
        extremes = state.distributed.agree_max(extremes)
    return scales_of(extremes, state.params["num_grad_quant_bins"])


def histogram_passes(state, grower, blocks, scales, round_index) -> None:
    """The round's histogram passes over quantized statistics (module docstring)."""
    p = state.params
    grower.policy.set_scales(scales)
    inverse = np.ascontiguousarray(1.0 / scales)
    seed, stochastic = int(p["seed"]), bool(p["stochastic_rounding"])

    def block_statistics(block, views, first):
        if first:
            quantize_gradients(views["stats"], inverse, seed, round_index,
                               state.row_offset + block.row_start, stochastic,
                               views["qstats"])
        return views["qstats"], views["node"], None

    # the gradients pass made the statistics and node positions: the margins are not
    # read again this round
    grow_passes(grower, blocks, state.rows, block_statistics,
                first_fields=("stats", "qstats", "node"), first_written=("qstats", "node"),
                later_fields=("qstats", "node"), later_written=("node",))


def renew_leaves(state, grower, trees, values, learning_rate, blocks) -> None:
    """``quant_train_renew_leaf``: set every leaf of the round's ``trees`` (and
    ``values``, their leaf-value columns) from its rows' full-precision gradient and
    hessian sums, with the policy's regularisation and bounds, times the learning rate."""
    sizes = [len(tree["value"]) for tree in trees]
    sums = np.zeros((len(trees), max(sizes), 2), np.float64)
    for block in blocks():
        views = state.rows.load(block.index, ("stats", "node"))
        node = views["node"].copy()
        grower.move_to_leaves(block.stored_codes, node)
        stats = views["stats"]
        for c in range(len(trees)):
            for lane in range(2):
                sums[c, :, lane] += np.bincount(node[c], weights=stats[c, :, lane],
                                                minlength=sums.shape[1])[: sums.shape[1]]
    if state.distributed is not None:
        sums = state.distributed.sum_(sums)
    for c, tree in enumerate(trees):
        leaves = np.flatnonzero(tree["left"] < 0)
        leaf_values = grower.policy.leaf_values(
            sums[c, leaves], np.full(len(leaves), c, np.int64), leaves)[:, 0]
        tree["value"][leaves, 0] = learning_rate * leaf_values
        values[c][leaves] = learning_rate * leaf_values
