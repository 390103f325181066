"""Class weights for boosting classifiers: ``class_weight`` (scikit-learn's and
LightGBM's scikit-learn API's forms) and LightGBM's ``is_unbalance``.

A class weight multiplies the sample weight of every row of its class, wherever the
training rows' weights count: the gradients and hessians of each round, and the
intercept estimated from the labels (the weighted label mean). A model trained with
``class_weight=c`` is the model trained with sample weights ``w_i c[y_i]``, bit for bit.
The evaluation sets keep their own weights (LightGBM's scikit-learn API does the same
unless given ``eval_class_weight``).

Where LightGBM differs: its ``is_unbalance`` weights only the gradients and starts from
the unweighted label mean (``BoostFromScore``), so its first trees correct a different
intercept; the weights themselves are LightGBM's.
"""
from __future__ import annotations

import numpy as np

from ...cache.label_stats import LabelStats
from ...errors import ParameterError
from ..common.class_weight import class_weight_vector, unbalance_weights
from ..common.data import label_summary

#: Objectives whose labels are class indices (binary ones: 0 and 1).
CLASS_OBJECTIVES = ("binary:logistic", "binary:logitraw", "binary:hinge", "multi:softmax",
                    "multi:softprob")


class ClassWeighted:
    """``objective`` with each row's weight times its class's weight (module docstring);
    everything else is the objective's."""

    def __init__(self, objective, weights: np.ndarray):
        self._objective = objective
        self.class_weights = np.asarray(weights, dtype=np.float64)

    def __getattr__(self, name):
        return getattr(self._objective, name)

    def _row_weights(self, label, weight):
        # float32, as a cache stores sample weights: the products are then the weights a
        # cache built with w_i c[y_i] holds, and the kernels see the dtype they know
        w = self.class_weights[np.asarray(label).astype(np.int64)]
        if weight is not None:
            w = w * np.asarray(weight, dtype=np.float64)
        return w.astype(np.float32)

    def gradients(self, label, margin, weight, out_grad, out_hess):
        """The objective's gradients with the class-weighted row weights."""
        self._objective.gradients(label, margin, self._row_weights(label, weight),
                                  out_grad, out_hess)

    def all_gradients(self, order, label, margin, weight, out_grad, out_hess):
        """As :meth:`gradients`, for objectives that read every row at once."""
        self._objective.all_gradients(order, label, margin,
                                      self._row_weights(label, weight), out_grad, out_hess)

    def base_margin(self, label_stats):
        """The objective's intercept from label statistics whose class sums are weighted
        (the weighted mean the sample weights ``w_i c[y_i]`` would give)."""
        if isinstance(label_stats, list) or label_stats.class_weights is None:
            raise ParameterError("class weights need integer class labels")
        sums = {k: s * self.class_weights[k] for k, s in label_stats.class_weights.items()}
        weighted = LabelStats.from_dict(label_stats.to_dict())
        weighted.sum_weight = float(sum(sums.values()))
        weighted.weighted_sum = float(sum(k * s for k, s in sums.items()))
        weighted.class_weights = sums
        return self._objective.base_margin(weighted)


def with_class_weights(p: dict, objective, cache, label_stats=None):
    """``objective`` wrapped in :class:`ClassWeighted` when ``p`` weights the classes,
    else ``objective`` itself (arguments as :func:`class_weights_for`)."""
    weights = class_weights_for(p, objective, cache, label_stats)
    return objective if weights is None else ClassWeighted(objective, weights)


def class_weights_for(p: dict, objective, cache, label_stats=None) -> np.ndarray | None:
    """Per-class weights ``(K,)`` of parameters ``p`` (``class_weight``, ``is_unbalance``)
    for ``objective`` on ``cache``, or None when neither is set. ``label_stats``: every
    shard's statistics in a distributed run (the row counts of ``"balanced"`` and
    ``is_unbalance`` are the whole data's)."""
    class_weight, unbalance = p.get("class_weight"), bool(p.get("is_unbalance"))
    if class_weight is None and not unbalance:
        return None
    name = "is_unbalance" if unbalance else "class_weight"
    if objective.name not in CLASS_OBJECTIVES:
        raise ParameterError(f"{name} weights the classes of a classification objective "
                             f"({', '.join(CLASS_OBJECTIVES)}), not {objective.name}")
    if unbalance and class_weight is not None:
        raise ParameterError("is_unbalance and class_weight both weight the classes: give "
                             "one")
    if unbalance and not objective.name.startswith("binary:"):
        raise ParameterError(f"is_unbalance is for binary objectives (LightGBM's); "
                             f"{objective.name} takes class_weight='balanced'")
    if unbalance and p.get("scale_pos_weight", 1.0) != 1.0:
        raise ParameterError("is_unbalance and scale_pos_weight both weight the positive "
                             "rows: give one (as LightGBM)")
    n_classes = objective.n_outputs if objective.name.startswith("multi:") else 2
    counts = _class_counts(cache, n_classes, label_stats)
    if unbalance:
        return unbalance_weights(counts)
    return class_weight_vector(class_weight, list(range(n_classes)), counts)


def _class_counts(cache, n_classes, label_stats):
    """Unweighted rows per class: from the label statistics of the build (or of every
    shard), else (caches built before they were kept) one labels-only pass."""
    if label_stats is not None:
        stats = LabelStats.from_dict(label_stats)
    else:
        stats = LabelStats.from_dict(cache.manifest["label_stats"])
    if stats.class_counts is not None:
        counts = np.zeros(n_classes, np.int64)
        for k, c in stats.class_counts.items():
            if not 0 <= k < n_classes:
                raise ParameterError(f"training cache {cache.path}: label {k} is not a "
                                     f"class index in [0, {n_classes})")
            counts[k] = c
        return counts
    if label_stats is not None:
        raise ParameterError("class weights in a distributed run need caches built by "
                             "this version (their label statistics count rows per class): "
                             "rebuild them")
    return label_summary(cache, "classification", n_classes)
