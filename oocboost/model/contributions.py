"""SHAP values of a model's margin (exact path-dependent Tree SHAP, ``kernels/shap.py``),
and their interaction values, over raw values or over a cache's bin codes."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import ModelError
from ..kernels import predict as _kp
from ..kernels import shap as _ks
from ..kernels import shap_table as _kt
from .prediction import _num_threads

#: Most float64 values of one tree's leaf weight tables (``kernels/shap_table.py``):
#: 32 MiB. A depth-6 tree holds at most 64 x 2**6 x 6 = 24,576; deeper trees whose
#: tables would exceed this keep the row-by-row recursion.
TABLE_MAX_VALUES = 1 << 22


def codes_as_values(codes, missing_bin):
    """A cache block's codes (n_features, n_rows) as the float matrix the SHAP kernels
    read, with the binned rule ``code <= bin_threshold``: the codes themselves, NaN for
    the missing code (categorical codes are the raw category codes already)."""
    X = np.ascontiguousarray(np.asarray(codes).T, dtype=np.float64)
    X[X == missing_bin] = np.nan
    return X


class ModelContributions:
    """Contributions of a :class:`~oocboost.model.model.Model` (a base class, like
    :class:`~oocboost.model.prediction.ModelPrediction`)."""

    def predict_contributions(self, X: Any, iteration_range: tuple[int, int] | None = None,
                              n_threads: int | None = None, interactions: bool = False
                              ) -> np.ndarray:
        """SHAP values of the margin: exact path-dependent Tree SHAP (Lundberg et al.).

        Each row's values plus its bias (the last column) sum to its margin
        (:meth:`predict_margin`), as XGBoost's ``pred_contribs``.

        Parameters
        ----------
        X : array-like (n_rows, n_features) float64
            Raw values as :meth:`predict_margin` takes them; NaN = missing. For files,
            DataFrames and caches use :meth:`predict` with ``pred_contribs=True``.
        iteration_range : (int, int) or None
            As :meth:`predict_margin`.
        n_threads : int or None
        interactions : bool
            SHAP interaction values instead (XGBoost's ``pred_interactions``): a
            (n_features + 1) x (n_features + 1) matrix per row and output whose row ``i``
            sums to feature ``i``'s SHAP value, the bias at ``[-1, -1]``. They cost about
            ``2 * features used per tree`` times the plain values.

        Returns
        -------
        ndarray float64
            (n_rows, n_features + 1) for one output, (n_rows, n_outputs, n_features + 1)
            for several (XGBoost's layout); with ``interactions`` one more trailing axis
            of n_features + 1.

        Raises
        ------
        ModelError
            For AdaBoost.R2, whose weighted median of the trees is not additive.

        Examples
        --------
        >>> phi = model.predict_contributions(X)                         # doctest: +SKIP
        >>> np.allclose(phi.sum(axis=1), model.predict(X, output_margin=True))
        True
        """
        return self._contributions(self._check_X(X), iteration_range, n_threads,
                                   interactions, binned=False)

    def predict_contributions_binned(self, codes: np.ndarray, missing_bin: int,
                                     iteration_range: tuple[int, int] | None = None,
                                     n_threads: int | None = None,
                                     interactions: bool = False) -> np.ndarray:
        """:meth:`predict_contributions` of a cache block's bin codes
        ((n_features, n_rows) from the model's own bin mapper), with the binned rule
        that :meth:`predict_margin_binned` uses."""
        X = codes_as_values(codes, missing_bin)
        if X.shape[1] != self.n_features:
            raise ModelError(f"codes have {X.shape[1]} features; the model has "
                             f"{self.n_features}")
        return self._contributions(X, iteration_range, n_threads, interactions,
                                   binned=True)

    def _contributions(self, X, iteration_range, n_threads, interactions, binned):
        info = (self.attributes or {}).get("adaboost") or {}
        if info.get("prediction") == "weighted_median":
            raise ModelError("an AdaBoost.R2 model predicts the weighted median of its "
                             "trees, which has no additive contributions")
        if self.aggregation == "median":
            raise ModelError("this model predicts the median of its trees, which has no "
                             "additive contributions")
        for part in self.parts.values():
            if part.shap_refusal:
                raise ModelError(part.shap_refusal)
        self.validate()
        t0, t1 = self._tree_range(iteration_range)
        if self.learner == "decision_stream":
            raise ModelError("a decision stream's nodes are shared by several parents: "
                             "Tree SHAP's path weights (cover of a child over its "
                             "parent's) are not defined on such a graph")
        if any(t.oblique is not None for t in self.trees[t0:t1]):
            raise ModelError("Tree SHAP splits on one feature a node; a model with "
                             "oblique splits (several features a node) has no Tree SHAP "
                             "values: use oocboost.permutation_importance")
        if any(t.surrogates is not None for t in self.trees[t0:t1]):
            if np.isnan(X).any():
                raise ModelError("Tree SHAP follows each split's default direction, and a "
                                 "model with surrogate splits sends a missing value "
                                 "through its surrogates: its contributions are defined "
                                 "for rows without missing values only")
        n_out, n_features = int(self.n_outputs), self.n_features
        shape = (X.shape[0], n_out, n_features + 1) + ((n_features + 1,) if interactions
                                                       else ())
        out = np.zeros(shape)
        totals = self._mean_totals(t0, t1)
        with _num_threads(n_threads):
            for t in range(t0, t1):
                self._add_tree_contributions(X, t, totals, out, binned)
        # both aggregations add the base margin after the trees
        if interactions:
            out[:, :, n_features, n_features] += self.base_margin
        else:
            out[:, :, n_features] += self.base_margin
        return out[:, 0] if n_out == 1 else out

    def _mean_totals(self, t0, t1):
        """Per output, the weight total a "mean" model divides by (1 for "sum")."""
        totals = np.ones(int(self.n_outputs))
        if self.aggregation == "mean":
            g, w = self.tree_group[t0:t1], self.tree_weight[t0:t1]
            totals = np.zeros(int(self.n_outputs))
            np.add.at(totals, g[g >= 0], w[g >= 0])
            totals += w[g < 0].sum()
            totals[totals == 0] = 1.0  # nothing to divide, as _finish_margin
        return totals

    def _add_tree_contributions(self, X, t, totals, out, binned):
        tree, group = self.trees[t], int(self.tree_group[t])
        out_cols = (np.array([group], np.int64) if group >= 0
                    else np.arange(self.n_outputs, dtype=np.int64))
        scale = self.tree_weight[t] / totals[out_cols]
        threshold = (tree.bin_threshold.astype(np.float64) if binned else tree.threshold)
        # (the model is validated: Tree.depth would check the structure again)
        depth = _kp.compute_tree_depth(tree.left.astype(np.int64),
                                       tree.right.astype(np.int64))
        n_features = self.n_features
        if not _table_contributions(X, tree, depth, threshold, out_cols, scale, out):
            args = (X, tree.left, tree.right, tree.feature, threshold, tree.default_left,
                    tree.is_categorical, tree.cat_bitset, tree.value, tree.cover, depth,
                    out_cols, scale)
            if out.ndim == 4:
                used = np.unique(tree.feature[tree.left >= 0]).astype(np.int64)
                _ks.tree_shap_interactions(*args, used, out)
            else:
                _ks.tree_shap(*args, out)
        expected = np.empty_like(tree.value)
        _ks.expected_values(tree.left, tree.right, tree.cover, tree.value, expected)
        if out.ndim == 4:
            out[:, out_cols, n_features, n_features] += expected[0] * scale
        else:
            out[:, out_cols, n_features] += expected[0] * scale


def _table_contributions(X, tree, depth, threshold, out_cols, scale, out) -> bool:
    """Add one tree's SHAP values (interaction values when ``out`` has 4 axes) from its
    leaf tables when they pay: building the values' tables costs about ``2 * sum(2**s *
    s**2)`` steps (``s`` unique features on a leaf's path) against ``n_rows * sum(s**2)``
    for the recursion, the interactions' ``2 * sum(2**s * s**3)`` against ``n_rows *
    (1 + 2 * features used) * sum(s**2)``; all must fit :data:`TABLE_MAX_VALUES`.
    Returns whether it did."""
    if depth == 0 or depth > 62:
        return False
    interactions = out.ndim == 4
    leaf_node, node_slot, slot_feature, slot_zero, n_slots = _kt.leaf_paths(
        tree.left, tree.right, tree.feature, tree.cover, depth)
    if n_slots.max() > 30:
        return False
    patterns = np.left_shift(1, n_slots)
    sizes = patterns * n_slots
    n_cols = len(out_cols)
    recursion = X.shape[0] * (n_slots ** 2).sum()
    if interactions:
        used = np.unique(tree.feature[tree.left >= 0]).size
        pair_sizes = sizes * n_slots
        fits = (sizes.sum() + pair_sizes.sum()) * n_cols <= TABLE_MAX_VALUES
        pays = 2 * (pair_sizes * n_slots).sum() <= recursion * (1 + 2 * used)
    else:
        fits = sizes.sum() * n_cols <= TABLE_MAX_VALUES
        pays = 2 * (sizes * n_slots).sum() <= recursion
    if not (fits and pays):
        return False
    values = np.ascontiguousarray(tree.value[leaf_node] * scale)
    offsets, table = _leaf_tables(_kt.leaf_weight_tables, sizes, slot_zero, n_slots,
                                  values)
    args = (X, tree.left, tree.right, tree.feature, threshold, tree.default_left,
            tree.is_categorical, tree.cat_bitset)
    paths = (node_slot, leaf_node, slot_feature, n_slots)
    if interactions:
        pair_offsets, pair_table = _leaf_tables(_kt.leaf_interaction_tables, pair_sizes,
                                                slot_zero, n_slots, values)
        _kt.table_shap_interactions(*args, paths, offsets, table, pair_offsets,
                                    pair_table, out_cols, out)
    else:
        _kt.table_shap(*args, *paths, offsets, table, out_cols, out)
    return True


def _leaf_tables(fill, sizes, slot_zero, n_slots, values):
    """``(offsets, table)``: the leaves' tables laid end to end, filled by ``fill``."""
    offsets = np.zeros(len(sizes) + 1, np.int64)
    np.cumsum(sizes, out=offsets[1:])
    table = np.empty((int(offsets[-1]), values.shape[1]))
    fill(slot_zero, n_slots, offsets, values, table)
    return offsets, table
