"""Traversal of a model over raw values and over bin codes, and importances: the
arrays-in, arrays-out side of :class:`~oocboost.model.model.Model`."""
from __future__ import annotations

from contextlib import contextmanager
from typing import Any

import numba
import numpy as np

from ..common import NODE_DTYPE, X_DTYPE
from ..errors import ModelError, ParameterError
from ..kernels import predict as _kp

#: Bytes of the gathered columns of a CSR chunk (``predict_margin_csr``).
CSR_CHUNK_BYTES = 32 << 20

IMPORTANCE_TYPES = ("weight", "gain", "total_gain", "cover", "total_cover")


@contextmanager
def _num_threads(n_threads):
    """Run numba parallel kernels with ``n_threads`` threads, restoring the setting."""
    if n_threads is None:
        yield
        return
    if not isinstance(n_threads, (int, np.integer)) or isinstance(n_threads, bool) \
            or n_threads < 1:
        raise ParameterError(
            f"n_threads must be a positive integer or None, got {n_threads!r}"
        )
    old = numba.get_num_threads()
    numba.set_num_threads(min(int(n_threads), numba.config.NUMBA_NUM_THREADS))
    try:
        yield
    finally:
        numba.set_num_threads(old)


class ModelPrediction:
    """Prediction and importances of a :class:`~oocboost.model.model.Model` (a base
    class: it reads the model's trees, groups, weights and schema)."""

    def _flat_trees(self):
        """Flattened trees (validated and built once, rebuilt when trees or weights change)."""
        key = (self.tree_group.tobytes(), self.tree_weight.tobytes(), int(self.n_outputs),
               self.n_features)
        cached = self._flat_key
        # a tuple's equality tests its items' identity first, in C (a loop of ``is``
        # over a hundred trees was a quarter of a one-row prediction)
        if self._flat is not None and cached[0] == key and cached[1] == tuple(self.trees):
            return self._flat
        self.validate()
        self._flat = _kp.flatten_trees(self.trees, self.tree_group, self.tree_weight,
                                       int(self.n_outputs))
        self._flat_key = (key, tuple(self.trees))
        return self._flat

    #: Look shallow trees up in tables over bin codes ("bonsai", kernels/predict_table.py)
    #: when predicting from a cache; False forces the traversal.
    use_leaf_tables = True

    def _leaf_tables(self, flat, codes, missing_bin):
        """The lookup tables of ``flat`` (built once per model and bin count), or None
        when no tree is worth one, the codes are two-byte, or trees have surrogates or
        shared nodes."""
        if not self.use_leaf_tables or codes.dtype != np.uint8 or flat.surrogates is not None \
                or flat.right is not None or flat.oblique is not None:
            return None
        cached = getattr(self, "_tables_cache", None)
        if cached is not None and cached[0] is flat and cached[1] == missing_bin:
            return cached[2]
        from ..kernels.predict_table import build_leaf_tables

        tables = build_leaf_tables(flat, missing_bin + 1, missing_bin)
        tables = tables if tables.n_tabulated else None
        self._tables_cache = (flat, missing_bin, tables)
        return tables

    def _tree_range(self, iteration_range):
        """Half-open flat tree range of ``iteration_range`` = (start, end) rounds."""
        if iteration_range is None:
            return 0, len(self.trees)
        try:
            start, end = (int(v) for v in iteration_range)
        except (TypeError, ValueError):
            raise ParameterError(f"iteration_range must be (start, end), got "
                                 f"{iteration_range!r}") from None
        n_rounds = self.n_rounds
        if end == 0:
            end = n_rounds
        if not 0 <= start <= end <= n_rounds:
            raise ParameterError(f"iteration_range {tuple(iteration_range)} is outside the "
                                 f"model's {n_rounds} rounds (end 0 means all)")
        tpr = int(self.trees_per_round)
        return start * tpr, end * tpr

    def _check_X(self, X, keep_float32=False):
        """``X`` as a C-contiguous float64 array of the model's width; with
        ``keep_float32`` a float32 array stays float32 (the tree walks compare its values
        promoted to float64, exactly as on a float64 copy, and skip the copy)."""
        keep = keep_float32 and getattr(X, "dtype", None) == np.float32
        X = np.ascontiguousarray(X, dtype=np.float32 if keep else X_DTYPE)
        if X.ndim != 2 or X.shape[1] != self.n_features:
            raise ModelError(f"X has shape {X.shape}; the model expects (n_rows, "
                             f"{self.n_features}) with features {self.feature_names[:5]}...")
        return X

    def _start_margin(self, n_rows, include_base=True):
        if self.aggregation == "sum" and include_base:
            out = np.empty((n_rows, int(self.n_outputs)), dtype=np.float64)
            out[:] = self.base_margin
            return out
        return np.zeros((n_rows, int(self.n_outputs)), dtype=np.float64)

    def _finish_margin(self, out, t0, t1, include_base=True, divisor=None):
        """A mean (or median) model's summed margins ``out`` of trees ``t0 .. t1 - 1``
        divided by their weight per output, plus the base margin; ``divisor``:
        :meth:`_mean_divisor` of that range, when the caller keeps it."""
        if self.aggregation in ("mean", "median"):  # a median model's margin: the mean
            total, nz = self._mean_divisor(t0, t1) if divisor is None else divisor
            out[:, nz] /= total[nz]
            if include_base:
                out += self.base_margin
        return out

    def _mean_divisor(self, t0, t1):
        """``(total, nonzero)``: the trees' weight per output over ``t0 .. t1 - 1``."""
        g = self.tree_group[t0:t1]
        w = self.tree_weight[t0:t1]
        total = np.zeros(int(self.n_outputs), dtype=np.float64)
        np.add.at(total, g[g >= 0], w[g >= 0])
        total += w[g < 0].sum()
        return total, total != 0

    def predict(self, data: Any, output_margin: bool = False,
                iteration_range: tuple[int, int] | None = None, pred_leaf: bool = False,
                pred_contribs: bool = False, pred_interactions: bool = False,
                base_margin: Any = None, quantiles: Any = None) -> np.ndarray:
        """What the objective predicts, as ``xgboost.Booster.predict`` gives it.

        Parameters
        ----------
        data : ndarray, pandas or Polars DataFrame, pyarrow Table, Cache, cache folder,
            or a CSV / Parquet / Arrow file path
            Files and caches are streamed block by block; categorical columns are raw
            strings (DataFrames, files) or codes (caches).
        output_margin : bool
            Raw margins, before the link function.
        iteration_range : (int, int) or None
            Rounds ``[start, end)``; ``end == 0`` means up to the last round (XGBoost's
            ``(0, 0)``). None: all.
        pred_leaf : bool
            The leaf each row reaches in each tree (int32, (n_rows, n_trees)).
        pred_contribs : bool
            SHAP values of the margin (:meth:`predict_contributions`); over a cache from
            its bin codes, block by block.
        pred_interactions : bool
            SHAP interaction values (``predict_contributions(interactions=True)``),
            (n_rows, n_features + 1, n_features + 1) per output.
        base_margin : array-like (n_rows,) or (n_rows, n_outputs), optional
            Each row's offset, added in place of the model's constant base margin (and
            in the SHAP bias), as XGBoost's ``DMatrix(base_margin=)``; gradient boosting
            models only. Without it a cache's own base margins (``build_cache(...,
            base_margin=)``) are used.

        Returns
        -------
        ndarray
            Single-output objectives: (n_rows,) predictions or margins (probabilities for
            ``binary:logistic``, expected counts for ``count:poisson``); ``multi:softprob``
            and forests' class probabilities: (n_rows, K); ``multi:softmax``: class
            indices; AdaBoost.R2: the weighted median of the trees.

        Examples
        --------
        >>> model = oocboost.load_model("model.json")                    # doctest: +SKIP
        >>> model.predict("test.parquet")[:3]                           # doctest: +SKIP
        array([0.12, 0.87, 0.45])
        """
        from .predict import predict

        out = predict(self, data, output_margin=output_margin,
                      iteration_range=iteration_range, pred_leaf=pred_leaf,
                      pred_contribs=pred_contribs, pred_interactions=pred_interactions,
                      base_margin=base_margin, quantiles=quantiles)
        if output_margin and out.ndim == 2 and out.shape[1] == 1:
            return out[:, 0]
        return out

    def predict_margin(self, X: Any, iteration_range: tuple[int, int] | None = None,
                       n_threads: int | None = None, include_base: bool = True
                       ) -> np.ndarray:
        """Raw margins (before any link function) for raw feature values.

        Parameters
        ----------
        X : array-like (n_rows, n_features) float64 or float32
            Raw values; categorical features as float codes
            (``BinMapper.encode_categories``); NaN = missing. A float32 array is read as
            it is (no float64 copy) when the model is plain trees.
        iteration_range : (int, int) or None
            Boosting rounds ``[start, end)`` to use (a round is ``trees_per_round``
            trees); ``end == 0`` means up to the last round. None: all trees.
        n_threads : int or None
            numba threads; None keeps the current setting.
        include_base : bool
            False: leave ``base_margin`` out (the trees' contribution only, e.g. to add
            some rounds to margins kept by the caller).

        Returns
        -------
        ndarray (n_rows, n_outputs) float64
        """
        flat = self._flat_trees()
        parts = list(self.parts.values())
        X = self._check_X(X, keep_float32=not any(p.needs_float64 for p in parts)
                          and _kp.is_plain(flat))
        t0, t1 = self._tree_range(iteration_range)
        out = self._start_margin(X.shape[0], include_base)
        with _num_threads(n_threads):
            _kp.raw_margins(flat, X, t0, t1, out)
            for part in parts:
                part.add_margin(self, X, out, t0, t1)
        return self._finish_margin(out, t0, t1, include_base)

    def walks_csr(self) -> bool:
        """Whether :meth:`predict_margin_csr` takes this model: plain summed or averaged
        trees (no oblique split, surrogate or shared node) and no learner part reading
        the rows (naive Bayes leaves, MARS terms)."""
        return (not self.parts and self.aggregation in ("sum", "mean")
                and _kp.is_plain(self._flat_trees()))

    def predict_margin_csr(self, X: Any, iteration_range: tuple[int, int] | None = None,
                           include_base: bool = True) -> np.ndarray:
        """Raw margins of the rows of a SciPy CSR matrix, never made dense: a chunk of
        rows at a time, only the columns the trees split on are gathered
        (``kernels/predict_csr.py``, at most 32 MiB of them). Equal to
        :meth:`predict_margin` of ``X.toarray()``. Only for a model :meth:`walks_csr`
        accepts.

        Parameters
        ----------
        X : scipy.sparse.csr_matrix (n_rows, n_features), canonical (sorted indices, no
            duplicates; ``X.sum_duplicates()`` makes it so)
        iteration_range, include_base : see :meth:`predict_margin`

        Returns
        -------
        ndarray (n_rows, n_outputs) float64
        """
        from ..kernels.predict_csr import compact_trees, gather_columns

        if not self.walks_csr():
            raise ModelError("this model's trees or parts read dense rows: pass "
                             "X.toarray() a block of rows at a time")
        if X.ndim != 2 or X.shape[1] != self.n_features or not X.has_canonical_format:
            raise ModelError(f"X must be a canonical CSR matrix of (n_rows, "
                             f"{self.n_features}), got shape {X.shape}")
        flat = self._flat_trees()
        if self._csr_plan is None or self._csr_plan[0] is not flat:
            self._csr_plan = (flat, *compact_trees(flat, self.n_features))
        _, position, compact = self._csr_plan
        n_used = max(int(position.max(initial=-1)) + 1, 1)
        t0, t1 = self._tree_range(iteration_range)
        out = self._start_margin(X.shape[0], include_base)
        chunk = max(1, min(X.shape[0], CSR_CHUNK_BYTES // (8 * n_used)))
        for start in range(0, X.shape[0], chunk):
            rows = X[start:start + chunk]
            dense = np.zeros((rows.shape[0], n_used), X_DTYPE)
            gather_columns(rows.indptr, rows.indices, np.asarray(rows.data, X_DTYPE),
                           position, dense)
            _kp.raw_margins(compact, dense, t0, t1, out[start:start + rows.shape[0]])
        return self._finish_margin(out, t0, t1, include_base)

    def predict_margin_binned(self, codes: np.ndarray, missing_bin: int,
                              iteration_range: tuple[int, int] | None = None,
                              n_threads: int | None = None, include_base: bool = True
                              ) -> np.ndarray:
        """Raw margins for bin codes (one cache block at a time).

        Parameters
        ----------
        codes : ndarray (n_features, n_rows) uint8 or uint16
            Codes from the model's own bin mapper (numeric splits use ``bin_threshold``).
        missing_bin : int
            The missing code, ``max_bin - 1``.
        iteration_range, n_threads, include_base : see :meth:`predict_margin`

        Returns
        -------
        ndarray (n_rows, n_outputs) float64
        """
        codes = np.asarray(codes)
        if codes.dtype not in (np.uint8, np.uint16) or codes.ndim != 2 \
                or codes.shape[0] != self.n_features:
            raise ModelError(f"codes must be (n_features={self.n_features}, n_rows) uint8 or "
                             f"uint16, got {codes.shape} {codes.dtype}")
        codes = np.ascontiguousarray(codes)
        flat = self._flat_trees()
        t0, t1 = self._tree_range(iteration_range)
        out = self._start_margin(codes.shape[1], include_base)
        tables = self._leaf_tables(flat, codes, int(missing_bin))
        with _num_threads(n_threads):
            if flat.oblique is not None:
                from ..kernels.predict_oblique import binned_margins

                binned_margins(flat, codes, int(missing_bin), self.bin_representatives(),
                               t0, t1, out)
            elif tables is not None:
                from ..kernels.predict_table import binned_margins_tables

                binned_margins_tables(flat, tables, codes, int(missing_bin), t0, t1, out)
            else:
                _kp.binned_margins(flat, codes, int(missing_bin), t0, t1, out)
            for part in self.parts.values():
                part.add_margin_binned(self, codes, int(missing_bin), out, t0, t1)
        return self._finish_margin(out, t0, t1, include_base)

    def predict_leaf(self, X: Any, iteration_range: tuple[int, int] | None = None,
                     n_threads: int | None = None) -> np.ndarray:
        """Leaf node id reached in each tree.

        Parameters
        ----------
        X : array-like (n_rows, n_features) float64
        iteration_range, n_threads : see :meth:`predict_margin`

        Returns
        -------
        ndarray (n_rows, n_trees_in_range) int32
            Node ids within each tree.
        """
        X = self._check_X(X)
        flat = self._flat_trees()
        t0, t1 = self._tree_range(iteration_range)
        out = np.empty((X.shape[0], t1 - t0), dtype=NODE_DTYPE)
        with _num_threads(n_threads):
            _kp.raw_leaves(flat, X, t0, t1, out)
        return out

    def feature_importance(self, importance_type: str = "gain") -> np.ndarray:
        """Per-feature importance with XGBoost's definitions.

        ``weight``: number of splits on the feature; ``total_gain`` / ``total_cover``: sum
        of the split gains / covers; ``gain`` / ``cover``: those sums divided by
        ``weight`` (0 for unused features). Tree weights are ignored, as in XGBoost.

        Returns
        -------
        ndarray (n_features,) float64
        """
        if importance_type not in IMPORTANCE_TYPES:
            raise ParameterError(f"importance_type must be one of {IMPORTANCE_TYPES}, got "
                                 f"{importance_type!r}")
        n_features = self.n_features
        weight = np.zeros(n_features, dtype=np.float64)
        gain = np.zeros(n_features, dtype=np.float64)
        cover = np.zeros(n_features, dtype=np.float64)
        for tree in self.trees:
            split = tree.left != -1
            f = tree.feature[split]
            weight += np.bincount(f, minlength=n_features)[:n_features]
            gain += np.bincount(f, weights=tree.gain[split], minlength=n_features)[:n_features]
            cover += np.bincount(f, weights=tree.cover[split],
                                 minlength=n_features)[:n_features]
        if importance_type == "weight":
            return weight
        total = gain if "gain" in importance_type else cover
        if importance_type.startswith("total_"):
            return total
        out = np.zeros(n_features, dtype=np.float64)
        np.divide(total, weight, out=out, where=weight > 0)
        return out
