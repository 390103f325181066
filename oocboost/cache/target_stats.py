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

CatBoost's two extensions, each a set of *derived* features appended after the source's
columns (their encoders name their ``sources``; prediction computes them from those
columns):

* ``per_class`` (a multiclass label): one statistic per class ``k``, the ordered share of
  the rows of class ``k`` (label indicator ``y == k``, prior the class's share). The
  column's own feature holds the first class's; ``name[y=k]`` the others'.
* ``combinations=2``: every pair of categorical columns is also a category of its own,
  the two strings joined by ``categories.PAIR_SEPARATOR`` (missing when either is), encoded the
  same way: feature ``a+b`` (``a+b[y=k]`` per class).

Pass 1 keeps one table set per *key* (a column or a pair), with one sum table per target
(the label, or one per class) and one count table, so a class seen late only adds a sum
table of zeros.
"""
import copy
import itertools

import numpy as np
import pyarrow.compute as pc

from ..common import MAX_CATEGORIES
from ..errors import InputError, ParameterError
from ..kernels.target_stats import add_slice_stats, ordered_target_stats, slices_of_rows
from .categories import CategoryCounter, key_strings
from .ingest.arrow_numpy import int_numpy
from .sketch import QuantileSketch

#: Most classes ``per_class`` statistics take (a feature per class and column).
MAX_TS_CLASSES = 64

#: Slices of a permutation to start with (halved to fit the tables' budget).
MAX_SLICES = 64
#: CatBoost's default number of permutations.
DEFAULT_PERMUTATIONS = 4
#: Budget of one column's tables when the build has no sketch budget (bytes).
DEFAULT_TABLE_BYTES = 64 << 20


def check_ts_options(prior, prior_weight, n_permutations, seed=0, per_class=False,
                     combinations=1):
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
    if not isinstance(per_class, (bool, np.bool_)):
        raise ParameterError(f"ts_per_class must be True or False, got {per_class!r}")
    for name, value, low, high in (("ts_permutations", n_permutations, 1, 64),
                                   ("ts_seed", seed, 0, 2 ** 63 - 1),
                                   ("ts_combinations", combinations, 1, 2)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) \
                or not low <= value <= high:
            raise ParameterError(f"{name} must be an integer in [{low}, {high}], got "
                                 f"{value!r}")


class _Options:
    """``build_cache``'s ``cat_encoding`` and ``ts_*`` arguments, checked, as the dict the
    manifest's build parameters keep."""

    @staticmethod
    def check(encoding, prior, prior_weight, n_permutations, seed, per_class=False,
              combinations=1):
        if encoding != "ordered_ts":
            raise ParameterError(f"cat_encoding must be 'native' or 'ordered_ts', got "
                                 f"{encoding!r}")
        check_ts_options(prior, prior_weight, n_permutations, seed, per_class, combinations)
        if per_class and prior is not None:
            raise ParameterError("ts_prior is the label's prior; with ts_per_class each "
                                 "class's prior is its share of the rows: leave it None")
        options = {"encoding": encoding, "prior": None if prior is None else float(prior),
                   "prior_weight": float(prior_weight),
                   "n_permutations": int(n_permutations), "seed": int(seed)}
        # absent at their defaults: caches built before them keep their fingerprints
        if per_class:
            options["per_class"] = True
        if combinations != 1:
            options["combinations"] = int(combinations)
        return options


    def build_params(self, encoding, prior, prior_weight, n_permutations, seed,
                     per_class=False, combinations=1):
        """``{"cat_encoding": options}`` for a build's parameters, or ``{}`` for native
        categories (their options then refused)."""
        if encoding == "native":
            if per_class or combinations != 1:
                raise ParameterError("ts_per_class and ts_combinations go with "
                                     "cat_encoding='ordered_ts'")
            return {}
        return {"cat_encoding": self.check(encoding, prior, prior_weight, n_permutations,
                                           seed, per_class, combinations)}


ORDERED_TS_OPTIONS = _Options()


class _KeyTables:
    """Pass-1 sums (one table per target) and counts of one key (a column or a pair) per
    (permutation, category string, slice)."""

    def __init__(self, n_permutations, n_targets, budget):
        self.ids = {}
        self.n_slices = MAX_SLICES
        self.budget = budget
        self.counts = np.zeros((n_permutations, 64, MAX_SLICES))
        self.sums = np.zeros((n_targets,) + self.counts.shape)

    def global_ids(self, dictionary):
        ids = np.empty(len(dictionary), np.int64)
        for k, key in enumerate(dictionary.to_pylist()):
            ids[k] = self.ids.setdefault(key, len(self.ids))
        n = len(self.ids)
        if n > self.counts.shape[1]:
            self._resize(max(n, 2 * self.counts.shape[1]))
        return ids

    def add_target(self):
        """One more sum table (a class first seen now: no earlier row is of it), within
        the budget."""
        self.sums = np.concatenate([self.sums, np.zeros((1,) + self.counts.shape)])
        self._resize(self.counts.shape[1])

    def _resize(self, n_categories):
        n_tables = self.sums.shape[0] + 1
        while 2 * n_tables * self.counts.shape[0] * n_categories * self.n_slices * 8 \
                > self.budget and self.n_slices > 1:
            self.sums = _halve(self.sums)
            self.counts = _halve(self.counts)
            self.n_slices //= 2
        grown = np.zeros(self.counts.shape[:1] + (n_categories, self.n_slices))
        grown[:, :self.counts.shape[1]] = self.counts
        self.counts = grown
        grown = np.zeros(self.sums.shape[:2] + (n_categories, self.n_slices))
        grown[:, :, :self.sums.shape[2]] = self.sums
        self.sums = grown


def _halve(table):
    """Merge neighbouring slices: slice ``s`` of ``n`` becomes ``s // 2`` of ``n / 2``."""
    return table[..., 0::2] + table[..., 1::2]


def _class_name(value):
    return str(int(value)) if float(value).is_integer() else repr(float(value))


class OrderedTargetStats:
    """The ordered target statistics of the categorical columns of one build.

    Parameters
    ----------
    names : list of str, the categorical columns to encode
    prior : float or None
        The statistic's prior; None: the label mean (per class: the class's share).
    prior_weight : float, ``a`` in the module docstring (CatBoost's default 1)
    n_permutations : int
    seed : int
    table_bytes : int or None, budget of one key's pass-1 tables
    per_class : bool
        One statistic per class (module docstring) instead of the label's mean.
    combinations : {1, 2}
        2: every pair of ``names`` is also encoded.
    max_categories : int or None
        Categories a pair keeps (the rest pool into "other"), as a column's.
    """

    def __init__(self, names, prior=None, prior_weight=1.0,
                 n_permutations=DEFAULT_PERMUTATIONS, seed=0, table_bytes=None,
                 per_class=False, combinations=1, max_categories=None):
        check_ts_options(prior, prior_weight, n_permutations, seed, per_class, combinations)
        self.names = list(names)
        self.prior = None if prior is None else float(prior)
        self.prior_weight = float(prior_weight)
        self.n_permutations = int(n_permutations)
        self.seed = int(seed)
        self.per_class = bool(per_class)
        self.keys = [(name,) for name in self.names]
        if combinations == 2:
            self.keys += list(itertools.combinations(self.names, 2))
        self.classes = []          # per_class: label values in order of appearance
        self._class_rows = []      # and the rows of each
        budget = int(table_bytes or DEFAULT_TABLE_BYTES)
        self._pass1 = {key: _KeyTables(self.n_permutations, 0 if per_class else 1, budget)
                       for key in self.keys}
        cap = max_categories or MAX_CATEGORIES
        self._pair_counts = {key: CategoryCounter(max_categories=cap)
                             for key in self.keys if len(key) == 2}
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

    def _targets(self, label, learn):
        """(n_targets, n_rows): the label, or one indicator per class (``learn``: new
        classes join, else a class not seen in pass 1 is an error)."""
        if not self.per_class:
            return label[None, :]
        for value in np.unique(label).tolist():
            if value not in self.classes:
                if not learn:
                    raise InputError(f"pass 2: label value {value} was not in pass 1")
                if len(self.classes) == MAX_TS_CLASSES:
                    raise ParameterError(
                        f"ts_per_class takes at most {MAX_TS_CLASSES} classes (a feature "
                        f"per class and column); the label has more distinct values: is "
                        f"it a class label?")
                self.classes.append(value)
                self._class_rows.append(0)
                for tables in self._pass1.values():
                    tables.add_target()
        targets = (label[None, :] == np.asarray(self.classes)[:, None]).astype(np.float64)
        if learn:
            for k, n in enumerate(targets.sum(axis=1).tolist()):
                self._class_rows[k] += n
        return targets

    def update(self, batch):
        """Pass 1: count one batch (in source order)."""
        label = self._label(batch, "pass 1")
        self._label_sum += float(label.sum())
        self._label_count += label.shape[0]
        targets = self._targets(label, learn=True)
        for key in self.keys:
            tables = self._pass1[key]
            strings = key_strings(batch.categorical, key)
            if key in self._pair_counts:
                self._pair_counts[key].update(strings)
            encoded = pc.dictionary_encode(strings)
            ids = tables.global_ids(encoded.dictionary)
            raw = int_numpy(encoded.indices, null=-1)
            index = np.where(raw >= 0, ids[np.maximum(raw, 0)], -1)
            add_slice_stats(index, targets, self._slices(tables.n_slices, label.shape[0]),
                            tables.sums, tables.counts)
        self._row += label.shape[0]

    def _slices(self, n_slices, n_rows, row_start=None):
        out = np.empty((self.n_permutations, n_rows), np.int32)
        slices_of_rows(self.seed, self.n_permutations, n_slices,
                       self._row if row_start is None else row_start, out)
        return out

    # ---------------------------------------------------------------- between passes
    def feature_names(self, key):
        """The features of ``key``, one per target: a column's first is the column."""
        base = "+".join(key)
        if not self.per_class:
            return [base]
        return [base if len(key) == 1 and k == 0 else f"{base}[y={_class_name(c)}]"
                for k, c in enumerate(self.classes)]

    def derived_names(self):
        """The features appended after the source's columns, in order."""
        return [name for key in self.keys for name in self.feature_names(key)
                if name not in self.names]

    def finish(self, categories, has_other, max_categories=None):
        """Fix the tables on the categories kept (folded ones pooled in "other"): the
        bin mapper's for a column, the pair's most frequent for a pair.

        Parameters
        ----------
        categories : dict name -> list of str, has_other : dict name -> bool
        max_categories : int or None, the categories a pair keeps at most
        """
        from .binning import category_codes

        if self._label_count == 0:
            raise ParameterError("cat_encoding='ordered_ts' needs labelled rows")
        if self.per_class:
            order = np.argsort(self.classes, kind="stable")
            self.classes = [self.classes[k] for k in order]
            self._class_rows = [self._class_rows[k] for k in order]
            for tables in self._pass1.values():
                tables.sums = tables.sums[order]
        for key, counter in self._pair_counts.items():
            categories[key], has_other[key] = category_codes(counter, max_categories)
        self._pair_counts = {}
        # the label's mean (or the given prior), or each class's share of the rows
        self.priors = (np.array(self._class_rows) / self._label_count if self.per_class
                       else np.array([self.prior if self.prior is not None
                                      else self._label_sum / self._label_count]))
        self._tables, self.encoders, self._sketches = {}, {}, {}
        for key in self.keys:
            self._finish_key(key, categories[key[0] if len(key) == 1 else key],
                             has_other[key[0] if len(key) == 1 else key])
        self._row = 0

    def _finish_key(self, key, categories, has_other):
        t = self._pass1.pop(key)
        kept = {k: i for i, k in enumerate(categories)}
        n_codes = len(kept) + 1                     # the last row pools the rest
        target = np.full(len(t.ids), n_codes - 1, np.int64)
        for string, gid in t.ids.items():
            target[gid] = kept.get(string, n_codes - 1)
        n = len(t.ids)
        sums = np.zeros(t.sums.shape[:2] + (n_codes, t.n_slices))
        counts = np.zeros((self.n_permutations, n_codes, t.n_slices))
        np.add.at(sums, (slice(None), slice(None), target), t.sums[:, :, :n])
        np.add.at(counts, (slice(None), target), t.counts[:, :n])
        total_cnt = counts[0].sum(axis=1)
        priors = self.priors
        names = self.feature_names(key)
        for k, name in enumerate(names):
            values = (sums[k, 0].sum(axis=1) + self.prior_weight * priors[k]) / (
                total_cnt + self.prior_weight)
            encoder = {"categories": list(categories), "values": values[:len(kept)].tolist(),
                       "other": float(values[-1]) if has_other else float(priors[k]),
                       "unseen": float(priors[k]), "counts": total_cnt[:len(kept)].tolist()}
            if name not in self.names:
                encoder["sources"] = list(key)
            if self.per_class:
                encoder["target"] = float(self.classes[k])
            self.encoders[name] = encoder
            self._sketches[name] = _value_sketch(values, total_cnt, priors[k],
                                                 self.prior_weight)
        self._tables[key] = dict(
            index=kept, n_slices=t.n_slices, names=names, priors=np.asarray(priors, float),
            prefix_sum=np.cumsum(sums, axis=3) - sums,
            prefix_cnt=np.cumsum(counts, axis=2) - counts,
            running_sum=np.zeros(sums.shape), running_cnt=np.zeros(counts.shape))

    def with_statistics(self, batch, mapper):
        """A copy of pass 2's ``batch`` whose encoded columns (and derived features)
        hold their ordered statistics (as numeric columns, which the bin mapper then
        bins)."""
        out = copy.copy(batch)
        out.numeric = {**batch.numeric, **self.encode_batch(batch, mapper)}
        return out

    def sketch(self, name):
        """A :class:`QuantileSketch` of a feature's statistics, for its bin edges."""
        return self._sketches[name]

    # ---------------------------------------------------------------- pass 2
    def encode_batch(self, batch, mapper):
        """Pass 2: the ordered statistics of one batch (in source order), as a dict
        feature name -> float64 array (NaN for missing)."""
        label = self._label(batch, "pass 2")
        targets = self._targets(label, learn=False)
        out = {}
        for key in self.keys:
            t = self._tables[key]
            index = mapper.category_positions(t["names"][0],
                                              key_strings(batch.categorical, key),
                                              len(t["index"]))
            values = np.empty((len(t["names"]), label.shape[0]))
            ordered_target_stats(index, targets, self._slices(t["n_slices"], label.shape[0]),
                                 t["prefix_sum"], t["prefix_cnt"], t["running_sum"],
                                 t["running_cnt"], t["priors"], self.prior_weight, values)
            out.update(zip(t["names"], values))
        self._row += label.shape[0]
        return out


def fit_with_target_stats(mapper_class, names, kinds, pass1, *, max_bin, max_categories):
    """The bin mapper of a build after pass 1: with ``pass1.target_stats``, its
    categorical columns become ``ordered_ts`` features, binned at their statistics'
    quantiles, their encoders on the categories kept (``category_codes``), and the
    derived features (per class, pairs) follow the columns."""
    from .binning import ORDERED_TS, category_codes

    ts = pass1.target_stats
    if ts is None:
        return mapper_class.fit(names, kinds, pass1.numeric, pass1.categorical,
                                max_bin=max_bin, max_categories=max_categories)
    kept = {name: category_codes(pass1.categorical[name], max_categories)
            for name in ts.names}
    ts.finish({n: k[0] for n, k in kept.items()}, {n: k[1] for n, k in kept.items()},
              max_categories)
    derived = ts.derived_names()
    clash = sorted(set(derived) & set(names))
    if clash:
        raise ParameterError(f"the ordered-TS features {clash} would have the names of "
                             f"columns of the source: rename those columns")
    sketches = dict(pass1.numeric, **{name: ts.sketch(name) for name in ts.encoders})
    kinds = [ORDERED_TS if name in kept else kind for name, kind in zip(names, kinds)]
    return mapper_class.fit(list(names) + derived, kinds + [ORDERED_TS] * len(derived),
                            sketches, {}, max_bin=max_bin, max_categories=max_categories,
                            encoders=ts.encoders)


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
