"""CatBoost-style ordered target statistics, computed while the cache is built.

``build_cache(..., cat_encoding="ordered_ts")`` replaces each categorical column by one
numeric feature: the mean label of the rows of its category that come *before* the row
in a fixed random order (Prokhorenkova et al. 2018), smoothed toward a prior::

    TS(i) = (sum of y_j over earlier rows j of i's category + a * prior)
            / (number of those rows + a)

averaged over ``n_permutations`` orders, so a row's value never uses its own label
(no target leakage) and the early rows' noise is averaged down, as CatBoost does.

The orders are drawn without shuffling anything: permutation ``p`` sorts the rows by a
*slice* ``floor(u * n_slices)``, ``u`` a counter-based uniform of (seed, p, row), then by
their position in the source (``kernels/target_stats.py``). Pass 1 of the build (which
reads every row anyway) sums the labels and counts per (category, slice); pass 2 (the
binning pass) walks the rows in order and gives each row the sums of the earlier slices
plus those of its slice seen so far. The tables take ``n_permutations x categories x
n_slices x 16`` bytes: ``n_slices`` starts at 64 and is halved (merging neighbouring
slices, which keeps every row's slice consistent) whenever they would pass the build's
sketch budget of the column.

The encoder kept in the bin mapper (and so in every model) is each category's statistic
over all its training rows, what prediction uses for new rows; unseen categories get the
prior, missing values stay missing. The feature is binned like a numeric one, with edges
at the quantiles of those per-category values (weighted by their rows).
"""
import copy

import numpy as np
import pyarrow.compute as pc

from ..errors import InputError, ParameterError
from ..kernels.target_stats import add_slice_stats, ordered_target_stats, slices_of_rows
from .categories import as_category_array
from .sketch import QuantileSketch

#: Slices of a permutation to start with (halved to fit the tables' budget).
MAX_SLICES = 64
#: CatBoost's default number of permutations.
DEFAULT_PERMUTATIONS = 4
#: Budget of one column's tables when the build has no sketch budget (bytes).
DEFAULT_TABLE_BYTES = 64 << 20


def check_ts_options(prior, prior_weight, n_permutations, seed=0):
    """Validate the ordered-TS options of ``build_cache``."""
    def number(name, value):
        try:
            value = float(value)
        except (TypeError, ValueError):
            raise ParameterError(f"{name} must be a number, got {value!r}") from None
        if not np.isfinite(value):
            raise ParameterError(f"{name} must be finite, got {value!r}")
        return value

    if prior is not None:
        number("ts_prior", prior)
    if number("ts_prior_weight", prior_weight) <= 0:
        raise ParameterError(f"ts_prior_weight must be positive, got {prior_weight!r}")
    for name, value, low, high in (("ts_permutations", n_permutations, 1, 64),
                                   ("ts_seed", seed, 0, 2 ** 63 - 1)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) \
                or not low <= value <= high:
            raise ParameterError(f"{name} must be an integer in [{low}, {high}], got "
                                 f"{value!r}")


class _Options:
    """``build_cache``'s ``cat_encoding`` and ``ts_*`` arguments, checked, as the dict the
    manifest's build parameters keep."""

    @staticmethod
    def check(encoding, prior, prior_weight, n_permutations, seed):
        if encoding != "ordered_ts":
            raise ParameterError(f"cat_encoding must be 'native' or 'ordered_ts', got "
                                 f"{encoding!r}")
        check_ts_options(prior, prior_weight, n_permutations, seed)
        return {"encoding": encoding, "prior": None if prior is None else float(prior),
                "prior_weight": float(prior_weight), "n_permutations": int(n_permutations),
                "seed": int(seed)}


ORDERED_TS_OPTIONS = _Options()


class _ColumnTables:
    """Pass-1 sums and counts of one column per (permutation, category string, slice)."""

    def __init__(self, n_permutations, budget):
        self.ids = {}
        self.n_slices = MAX_SLICES
        self.budget = budget
        self.sums = np.zeros((n_permutations, 64, MAX_SLICES))
        self.counts = np.zeros_like(self.sums)

    def global_ids(self, dictionary):
        ids = np.empty(len(dictionary), np.int64)
        for k, key in enumerate(dictionary.to_pylist()):
            ids[k] = self.ids.setdefault(key, len(self.ids))
        n = len(self.ids)
        if n > self.sums.shape[1]:
            self._resize(max(n, 2 * self.sums.shape[1]))
        return ids

    def _resize(self, n_categories):
        while 2 * self.sums.shape[0] * n_categories * self.n_slices * 8 > self.budget \
                and self.n_slices > 1:
            self.sums = _halve(self.sums)
            self.counts = _halve(self.counts)
            self.n_slices //= 2
        shape = (self.sums.shape[0], n_categories, self.n_slices)
        for name in ("sums", "counts"):
            grown = np.zeros(shape)
            old = getattr(self, name)
            grown[:, :old.shape[1]] = old
            setattr(self, name, grown)


def _halve(table):
    """Merge neighbouring slices: slice ``s`` of ``n`` becomes ``s // 2`` of ``n / 2``."""
    return table[:, :, 0::2] + table[:, :, 1::2]


class OrderedTargetStats:
    """The ordered target statistics of the categorical columns of one build.

    Parameters
    ----------
    names : list of str, the categorical columns to encode
    prior : float or None
        The statistic's prior; None: the label mean.
    prior_weight : float, ``a`` in the module docstring (CatBoost's default 1)
    n_permutations : int
    seed : int
    table_bytes : int or None, budget of one column's pass-1 tables
    """

    def __init__(self, names, prior=None, prior_weight=1.0,
                 n_permutations=DEFAULT_PERMUTATIONS, seed=0, table_bytes=None):
        check_ts_options(prior, prior_weight, n_permutations)
        self.names = list(names)
        self.prior = None if prior is None else float(prior)
        self.prior_weight = float(prior_weight)
        self.n_permutations = int(n_permutations)
        self.seed = int(seed)
        budget = int(table_bytes or DEFAULT_TABLE_BYTES)
        self._pass1 = {name: _ColumnTables(self.n_permutations, budget) for name in names}
        self._label_sum = 0.0
        self._label_count = 0
        self._row = 0

    # ---------------------------------------------------------------- pass 1
    def _label(self, batch, where):
        if batch.label is None:
            raise ParameterError("cat_encoding='ordered_ts' needs the label")
        label = np.asarray(batch.label, dtype=np.float64)
        if label.ndim != 1:
            raise ParameterError("cat_encoding='ordered_ts' takes one label column")
        if not np.isfinite(label).all():
            bad = int(np.flatnonzero(~np.isfinite(label))[0])
            raise InputError(f"{where}: label of row {self._row + bad} is {label[bad]}; "
                             f"ordered target statistics need finite labels")
        return label

    def update(self, batch):
        """Pass 1: count one batch (in source order)."""
        label = self._label(batch, "pass 1")
        self._label_sum += float(label.sum())
        self._label_count += label.shape[0]
        for name in self.names:
            tables = self._pass1[name]
            values = as_category_array(batch.categorical[name], f"column {name!r}")
            encoded = pc.dictionary_encode(values)
            ids = tables.global_ids(encoded.dictionary)
            raw = pc.fill_null(encoded.indices, -1).to_numpy(zero_copy_only=False)
            index = np.where(raw >= 0, ids[np.maximum(raw, 0)], -1)
            add_slice_stats(index, label, self._slices(tables.n_slices, label.shape[0]),
                            tables.sums, tables.counts)
        self._row += label.shape[0]

    def _slices(self, n_slices, n_rows, row_start=None):
        out = np.empty((self.n_permutations, n_rows), np.int32)
        slices_of_rows(self.seed, self.n_permutations, n_slices,
                       self._row if row_start is None else row_start, out)
        return out

    # ---------------------------------------------------------------- between passes
    def finish(self, categories, has_other):
        """Fix the tables on the bin mapper's categories (folded ones pooled in "other").

        Parameters
        ----------
        categories : dict name -> list of str, has_other : dict name -> bool
        """
        if self._label_count == 0:
            raise ParameterError("cat_encoding='ordered_ts' needs labelled rows")
        if self.prior is None:
            self.prior = self._label_sum / self._label_count
        self._tables = {}
        self.encoders = {}
        for name in self.names:
            t = self._pass1.pop(name)
            kept = {key: k for k, key in enumerate(categories[name])}
            n_codes = len(kept) + 1                     # the last row pools the rest
            target = np.full(len(t.ids), n_codes - 1, np.int64)
            for key, gid in t.ids.items():
                target[gid] = kept.get(key, n_codes - 1)
            shape = (self.n_permutations, n_codes, t.n_slices)
            sums, counts = np.zeros(shape), np.zeros(shape)
            n = len(t.ids)
            np.add.at(sums, (slice(None), target), t.sums[:, :n])
            np.add.at(counts, (slice(None), target), t.counts[:, :n])
            total_sum, total_cnt = sums[0].sum(axis=1), counts[0].sum(axis=1)
            values = (total_sum + self.prior_weight * self.prior) / (total_cnt +
                                                                     self.prior_weight)
            self.encoders[name] = {
                "categories": list(categories[name]),
                "values": values[:len(kept)].tolist(),
                "other": float(values[-1]) if has_other[name] else self.prior,
                "unseen": self.prior,
                "counts": total_cnt[:len(kept)].tolist()}
            self._tables[name] = dict(
                index=kept, n_slices=t.n_slices,
                prefix_sum=np.cumsum(sums, axis=2) - sums,
                prefix_cnt=np.cumsum(counts, axis=2) - counts,
                running_sum=np.zeros(shape), running_cnt=np.zeros(shape),
                sketch=_value_sketch(values, total_cnt, self.prior, self.prior_weight))
        self._row = 0

    def with_statistics(self, batch, mapper):
        """A copy of pass 2's ``batch`` whose encoded columns hold their ordered
        statistics (as numeric columns, which the bin mapper then bins)."""
        out = copy.copy(batch)
        out.numeric = {**batch.numeric, **self.encode_batch(batch, mapper)}
        return out

    def sketch(self, name):
        """A :class:`QuantileSketch` of the column's statistics, for its bin edges."""
        return self._tables[name]["sketch"]

    # ---------------------------------------------------------------- pass 2
    def encode_batch(self, batch, mapper):
        """Pass 2: the ordered statistics of one batch (in source order), as a dict
        name -> float64 array (NaN for missing)."""
        label = self._label(batch, "pass 2")
        out = {}
        for name in self.names:
            t = self._tables[name]
            index = mapper.category_positions(name, batch.categorical[name],
                                              len(t["index"]))
            values = np.empty(label.shape[0])
            ordered_target_stats(index, label, self._slices(t["n_slices"], label.shape[0]),
                                 t["prefix_sum"], t["prefix_cnt"], t["running_sum"],
                                 t["running_cnt"], self.prior, self.prior_weight, values)
            out[name] = values
        self._row += label.shape[0]
        return out


def fit_with_target_stats(mapper_class, names, kinds, pass1, *, max_bin, max_categories):
    """The bin mapper of a build after pass 1: with ``pass1.target_stats``, its
    categorical columns become ``ordered_ts`` features, binned at their statistics'
    quantiles, their encoders on the categories kept (``category_codes``)."""
    from .binning import ORDERED_TS, category_codes

    ts = pass1.target_stats
    if ts is None:
        return mapper_class.fit(names, kinds, pass1.numeric, pass1.categorical,
                                max_bin=max_bin, max_categories=max_categories)
    kept = {name: category_codes(pass1.categorical[name], max_categories)
            for name in ts.names}
    ts.finish({n: k[0] for n, k in kept.items()}, {n: k[1] for n, k in kept.items()})
    sketches = dict(pass1.numeric, **{name: ts.sketch(name) for name in ts.names})
    kinds = [ORDERED_TS if name in kept else kind for name, kind in zip(names, kinds)]
    return mapper_class.fit(names, kinds, sketches, {}, max_bin=max_bin,
                            max_categories=max_categories, encoders=ts.encoders)


def _value_sketch(values, counts, prior, prior_weight):
    """The statistics rows are given: each category's full-data value weighted by its
    rows, and the prior weighted by the early rows that sit near it."""
    sketch = QuantileSketch()
    present = counts > 0
    if present.any():
        sketch.update(values[present], counts[present])
    sketch.update(np.array([prior]), np.array([max(float(present.sum()), 1.0)
                                               * prior_weight]))
    return sketch
