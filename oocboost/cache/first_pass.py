"""Pass 1 of a cache build (``build.py``): what one read of the source learns about it
before the bins are fitted."""
from __future__ import annotations

import numpy as np

from ..common import MAX_CATEGORIES
from ..kernels.quantile import clean_columns
from .categories import CategoryCounter
from .ingest.numeric_text import NumberShare
from .label_stats import LabelStats
from .sketch import DEFAULT_MAX_EXACT, QuantileSketch

#: Numeric columns from which pass 1 cleans a batch's columns in one kernel call.
WIDE_COLUMNS = 64


class FirstPass:
    """Accumulates everything pass 1 learns about the source: the numeric columns' quantile
    sketches, the categorical columns' counts, missing and infinite values, label and
    weight statistics, the bundling sample and the ordered target statistics."""

    def __init__(self, source, max_bin, max_categories, sketches=True,
                 sketch_bytes=None, target_stats=None, nonzero=None, ranges=None):
        # Keep every distinct value while there may be a bin for each (max_bin - 1 value
        # codes), so such features get exact midpoint edges whatever max_bin is.
        max_exact = max(DEFAULT_MAX_EXACT, max_bin - 1)

        def sketch():
            if sketch_bytes is None:
                return QuantileSketch(max_exact=max_exact)
            # (the bundling sample's bits, at most 1/16 of this budget, ride in the
            # plan's safety margin: taking them out of the sketch made a bundled
            # cache's edges differ from an unbundled one's)
            return QuantileSketch.for_budget(sketch_bytes, max_exact=max_exact)

        self.numeric = {name: sketch() for name, kind in
                        zip(source.feature_names, source.feature_kinds) if kind == "numeric"}
        cap = max_categories or MAX_CATEGORIES
        self.categorical = {name: CategoryCounter(max_categories=cap) for name, kind in
                            zip(source.feature_names, source.feature_kinds)
                            if kind == "categorical"}
        # text columns read as categories by the first batch alone: numbers after all?
        self.number_share = {name: NumberShare() for name in
                             getattr(source, "auto_text_columns", ())
                             if name in self.categorical}
        self.n_missing = {name: 0 for name in source.feature_names}
        self.n_inf = {name: 0 for name in self.numeric}
        self.label_stats = LabelStats()
        self.weight_stats = LabelStats()
        self.n_rows = 0
        self.sketches = sketches
        # cat_encoding="ordered_ts": the label sums of pass 1 (target_stats.py)
        self.target_stats = target_stats
        # the non-zero pattern of the first rows, to bundle sparse features (bundles.py)
        self.nonzero = nonzero
        # with a reference: its numeric features' sketched (min, max), and how many
        # values fall outside them (binned into the outer bins)
        self.ranges = ranges or {}
        self.n_out_of_range = {name: 0 for name in self.ranges}

    def freeze(self):
        """Record each sketch's summary figures, then drop the sketches."""
        self.summaries = {}
        for name, sketch in self.numeric.items():
            if sketch.total_weight > 0:
                self.summaries[name] = {
                    "min": float(sketch.min) if np.isfinite(sketch.min) else str(sketch.min),
                    "max": float(sketch.max) if np.isfinite(sketch.max) else str(sketch.max),
                    "exact_edges": bool(sketch.is_exact),
                    "rank_error_bound": float(sketch.rank_error_bound)}
        self.distinct_seen = {name: int(getattr(c, "n_distinct_lower_bound",
                                                len(c.counts())))
                              for name, c in self.categorical.items()}
        self.numeric = {}
        self.categorical = {}

    def update(self, batch):
        if batch.weight is None and len(batch.numeric) >= WIDE_COLUMNS:
            self._update_wide(batch)
        else:
            self._update_numeric(batch)
        self._update_rest(batch)

    def _update_wide(self, batch):
        """:meth:`_update_numeric` of many unweighted columns: one kernel cleans and
        counts them all; each sketch then keeps its row of the result."""
        names = list(batch.numeric)
        columns = np.empty((len(names), batch.n_rows))
        for j, name in enumerate(names):
            columns[j] = batch.numeric[name]
        # in place (a row's k-th clean value comes from its k-th value or later): the
        # one copy of the batch is the one the sketches keep, as a copy a column was
        clean = columns
        n_clean, n_missing, n_inf = (np.empty(len(names), np.int64) for _ in range(3))
        lo, hi = np.empty(len(names)), np.empty(len(names))
        clean_columns(columns, clean, n_clean, lo, hi, n_missing, n_inf)
        for j, name in enumerate(names):
            self.n_missing[name] += int(n_missing[j])
            self.n_inf[name] += int(n_inf[j])
            if name in self.ranges:
                low, high = self.ranges[name]
                values = clean[j, :n_clean[j]]
                self.n_out_of_range[name] += int(np.count_nonzero((values < low)
                                                                  | (values > high)))
            if self.sketches:
                self.numeric[name].update_clean(clean[j, :n_clean[j]], lo[j], hi[j])

    def _update_numeric(self, batch):
        for name, values in batch.numeric.items():
            missing = np.isnan(values)
            n_missing = int(np.count_nonzero(missing))
            self.n_missing[name] += n_missing
            self.n_inf[name] += int(np.count_nonzero(np.isinf(values)))
            if name in self.ranges:
                lo, hi = self.ranges[name]
                self.n_out_of_range[name] += int(np.count_nonzero((values < lo)
                                                                  | (values > hi)))
            if self.sketches:
                # weighted, as XGBoost's hist sketch: a row of weight 0 sets no edge and
                # no category, one of weight 2 counts as two rows
                self.numeric[name].update(values, batch.weight)

    def _update_rest(self, batch):
        for name, values in batch.categorical.items():
            self.n_missing[name] += values.null_count
            if self.sketches:
                self.categorical[name].update(values, batch.weight)
            if name in self.number_share:
                self.number_share[name].update(values)
        if self.target_stats is not None:
            self.target_stats.update(batch)
        if self.nonzero is not None:
            self.nonzero.update(batch.numeric, batch.n_rows)
        if batch.label is not None and batch.label.ndim == 2:
            # one set of statistics per label column (non-finite bounds not counted)
            if not isinstance(self.label_stats, list):
                self.label_stats = [LabelStats() for _ in range(batch.label.shape[1])]
            for stats, column in zip(self.label_stats, batch.label.T):
                stats.update(np.where(np.isfinite(column), column, np.nan), batch.weight)
        elif batch.label is not None:
            self.label_stats.update(batch.label, batch.weight)
        if batch.weight is not None:
            self.weight_stats.update(batch.weight)
        self.n_rows += batch.n_rows
