"""The bin mapper: per-feature bin edges and category codes, fitted from pass-1 sketches.

See ``oocboost/common.py`` for the code convention (``max_bin`` counts the reserved missing
code ``max_bin - 1``; numeric ``code = searchsorted(edges, x, side="left")``; categorical
codes by decreasing frequency with an optional trailing "other" code).

Numeric edges
-------------
* Exact sketch with at most ``max_bin - 1`` distinct values: the midpoints between
  consecutive distinct values, ``(v[i] + v[i+1]) * 0.5`` as scikit-learn's
  HistGradientBoosting computes them, so every distinct value gets its own bin.
* Otherwise: the values at weighted rank fractions ``k / (max_bin - 1)``,
  ``k = 1 .. max_bin - 2``, deduplicated (at most ``max_bin - 1`` value bins). Their
  rank error is the sketch's ``rank_error_bound``.

Edges are finite: an infinite midpoint is clipped to the largest finite float (so -inf
keeps a bin of its own), and an edge at or above the maximum, which would only open an
empty top bin, is dropped.
"""
import numpy as np
import pyarrow.compute as pc

from ..common import (
    MAX_CATEGORIES,
    category_code,
    category_value_bins,
    check_max_bin,
    codes_dtype,
    missing_bin,
)
from ..errors import InputError, ModelError, ParameterError, SchemaError
from ..kernels.binning import (
    GROUPED_MAX_EDGES,
    grouped_edges,
    map_categories,
    map_features_to_bins,
    map_features_to_bins_grouped,
    map_float_codes,
)
from .categories import as_category_array, key_strings
from .edges_text import decode_edges, encode_edges
from .ingest.arrow_numpy import int_numpy, string_array, valid_mask

NUMERIC = "numeric"
CATEGORICAL = "categorical"
#: A categorical column encoded as its ordered target statistic (``target_stats.py``):
#: binned like a numeric feature, read as strings, encoded by the mapper's encoder.
ORDERED_TS = "ordered_ts"
FEATURE_TYPES = (NUMERIC, CATEGORICAL, ORDERED_TS)
_FORMAT = "oocboost.BinMapper"
#: 2: edges as base64 text (``edges_text.py``); 1 (lists of numbers) is still read
_VERSION = 2
_READ_VERSIONS = (1, 2)
_FLOAT_MAX = np.finfo(np.float64).max


def midpoint_edges(distinct):
    """Edges separating every pair of consecutive distinct values.

    Parameters
    ----------
    distinct : ndarray of float64, shape (n,)
        Strictly increasing values (+-inf allowed).

    Returns
    -------
    ndarray of float64, shape (<= n - 1,)
        Finite, strictly increasing edges ``e_i`` with ``v[i] <= e_i < v[i+1]``: the
        midpoint ``(v[i] + v[i+1]) * 0.5`` when it is finite and below ``v[i+1]``.
    """
    lo, hi = distinct[:-1], distinct[1:]
    with np.errstate(over="ignore", invalid="ignore"):
        mid = (lo + hi) * 0.5
        overflow = ~np.isfinite(mid)
        mid[overflow] = np.clip(lo[overflow] * 0.5 + hi[overflow] * 0.5, -_FLOAT_MAX,
                                _FLOAT_MAX)
    # Rounding can land the midpoint of adjacent floats on the upper value.
    mid = np.where(mid >= hi, lo, mid)
    return mid[np.isfinite(mid)]


def quantile_edges(sketch, max_bin):
    """Edges at evenly spaced weighted ranks of a sketch (at most ``max_bin - 2``).

    Parameters
    ----------
    sketch : QuantileSketch
    max_bin : int

    Returns
    -------
    ndarray of float64, shape (n_edges,)
        Finite, strictly increasing, all below ``sketch.max``.
    """
    n_bins = max_bin - 1
    edges = np.unique(sketch.quantiles(np.arange(1, n_bins) / n_bins))
    edges = np.where(edges == -np.inf, -_FLOAT_MAX, edges)
    edges = edges[np.isfinite(edges) & (edges < sketch.max)]
    return np.unique(edges)


def numeric_edges(sketch, max_bin):
    """Bin edges of one numeric feature (see module docstring)."""
    if sketch is None or sketch.total_weight <= 0:
        return np.empty(0)
    if sketch.is_exact:
        distinct, _ = sketch.distinct_values()
        if distinct.shape[0] <= max_bin - 1:
            return midpoint_edges(distinct)
    return quantile_edges(sketch, max_bin)


def category_codes(counter, max_categories=None):
    """Kept categories of one feature and whether an "other" category follows them.

    Parameters
    ----------
    counter : CategoryCounter or None
    max_categories : int, optional
        At most this many categories, "other" included (default and ceiling
        ``MAX_CATEGORIES``, whatever ``max_bin`` is).

    Returns
    -------
    categories : list of str
        Categories ``0 .. len - 1`` by decreasing count, ties by string.
    has_other : bool
        True when categories were folded (too many, or the counter dropped rare ones);
        the "other" category is then ``len(categories)``.
    """
    cap = MAX_CATEGORIES if max_categories is None else min(int(max_categories),
                                                           MAX_CATEGORIES)
    ranked = [] if counter is None else [key for key, _ in counter.most_common()]
    if len(ranked) > cap or (counter is not None and counter.truncated):
        return ranked[:cap - 1], True
    return ranked, False


def _check_encoder(encoder, name):
    """An ordered-TS encoder dict, checked field by field (see :class:`BinMapper`)."""
    fields = {"categories", "values", "other", "unseen", "counts"}
    optional = {"sources", "target"}
    if not isinstance(encoder, dict) or not fields <= set(encoder) <= fields | optional:
        raise ParameterError(f"feature {name!r}: an encoder needs exactly the fields "
                             f"{sorted(fields)} (and optionally {sorted(optional)})")
    extra = {}
    if "sources" in encoder:
        sources = encoder["sources"]
        if not (isinstance(sources, list) and 1 <= len(sources) <= 2
                and all(isinstance(c, str) for c in sources)
                and len(set(sources)) == len(sources)):
            raise ParameterError(f"feature {name!r}: encoder sources must be one or two "
                                 f"distinct column names")
        extra["sources"] = list(sources)
    if "target" in encoder:
        target = encoder["target"]
        if isinstance(target, bool) or not isinstance(target, (int, float)) \
                or not np.isfinite(target):
            raise ParameterError(f"feature {name!r}: encoder target must be a finite "
                                 f"number (a class)")
        extra["target"] = float(target)
    cats, values, counts = encoder["categories"], encoder["values"], encoder["counts"]
    if not (isinstance(cats, list) and all(isinstance(c, str) for c in cats)
            and len(set(cats)) == len(cats)):
        raise ParameterError(f"feature {name!r}: encoder categories must be unique strings")
    for what, seq in (("values", values), ("counts", counts)):
        if not isinstance(seq, list) or len(seq) != len(cats) or not np.isfinite(
                np.asarray(seq, dtype=np.float64)).all():
            raise ParameterError(f"feature {name!r}: encoder {what} must be "
                                 f"{len(cats)} finite numbers")
    for what in ("other", "unseen"):
        if isinstance(encoder[what], bool) or not isinstance(encoder[what], (int, float)) \
                or not np.isfinite(encoder[what]):
            raise ParameterError(f"feature {name!r}: encoder {what} must be a finite number")
    return {"categories": cats, "values": [float(v) for v in values],
            "other": float(encoder["other"]), "unseen": float(encoder["unseen"]),
            "counts": [float(c) for c in counts], **extra}


class BinMapper:
    """Maps raw feature values to bin codes.

    Parameters
    ----------
    feature_names : sequence of str, length n_features
    feature_types : sequence of {"numeric", "categorical"}, length n_features
    max_bin : int
        Codes per feature including the missing code ``max_bin - 1``.
    bin_edges : sequence of array_like of float64
        Numeric features: finite strictly increasing edges (``n_value_bins - 1``);
        categorical features: empty.
    categories : sequence of (list of str or None)
        Categorical features: strings of categories ``0..len-1`` (codes by
        ``common.category_code``); numeric features: None.
    has_other : sequence of bool
        Categorical features whose last category is "other".
    encoders : sequence of (dict or None), optional
        ``ordered_ts`` features: ``{"categories": [str], "values": [float], "other":
        float, "unseen": float, "counts": [float]}``, each category's statistic over
        its training rows (``other``: for strings not listed); None for the others.

    Attributes
    ----------
    n_value_bins : ndarray of int32, shape (n_features,)
        Value codes of each feature (at least 1); of a wide categorical feature, its
        code positions, the missing code among them (``common.category_value_bins``).
    is_categorical : ndarray of bool, shape (n_features,)
    missing_bin : int
        ``max_bin - 1``.
    codes_dtype : numpy.dtype
        uint8 when ``max_bin <= 256`` and no categorical feature is wider, else uint16.
    """

    def __init__(self, feature_names, feature_types, max_bin, bin_edges, categories,
                 has_other, encoders=None):
        self.max_bin = check_max_bin(max_bin)
        self.missing_bin = missing_bin(self.max_bin)
        self.feature_names = [str(name) for name in feature_names]
        self.feature_types = [str(kind) for kind in feature_types]
        n = len(self.feature_names)
        if len(set(self.feature_names)) != n:
            raise ParameterError(f"feature names must be unique, got {self.feature_names}")
        for given, what in ((self.feature_types, "feature_types"), (bin_edges, "bin_edges"),
                            (categories, "categories"), (has_other, "has_other")):
            if len(given) != n:
                raise ParameterError(f"{what} has {len(given)} entries, expected {n}")
        self.is_categorical = np.array([kind == CATEGORICAL for kind in self.feature_types],
                                       dtype=bool)
        self.bin_edges = [np.asarray(e, dtype=np.float64).ravel() for e in bin_edges]
        self.categories = [None if c is None else [str(s) for s in c] for c in categories]
        self.has_other = np.asarray(has_other, dtype=bool).reshape(n)
        self.encoders = [None] * n if encoders is None else [
            None if e is None else _check_encoder(e, self.feature_names[f])
            for f, e in enumerate(encoders)]
        if len(self.encoders) != n:
            raise ParameterError(f"encoders has {len(self.encoders)} entries, expected {n}")
        self._check_sources()
        self.n_value_bins = np.array(
            [self._value_bins(f) for f in range(n)], dtype=np.int32).reshape(n)
        self.codes_dtype = codes_dtype(self.max_bin, self.n_value_bins)
        self._category_arrays = None
        self._index = {name: f for f, name in enumerate(self.feature_names)}

    def _check_sources(self):
        """A derived feature's sources are ordered-TS features read from the data."""
        inputs = {self.feature_names[f]: f for f in self.input_features()}
        for f, enc in enumerate(self.encoders):
            for source in (enc or {}).get("sources", ()):
                if source not in inputs or self.feature_types[inputs[source]] != ORDERED_TS:
                    raise ParameterError(
                        f"feature {self.feature_names[f]!r}: its source {source!r} is not "
                        f"an ordered-TS feature read from the data")

    def input_features(self):
        """Positions of the features read from the data, in order: every feature but
        the derived ordered-TS ones (per class, pairs: ``cache/target_stats.py``), which
        are computed from them."""
        return [f for f, enc in enumerate(self.encoders)
                if enc is None or "sources" not in enc]

    def sources_of(self, f):
        """The columns feature ``f`` is computed from: its own name, or a derived
        feature's sources."""
        enc = self.encoders[f]
        return (enc or {}).get("sources", [self.feature_names[f]])

    def _category_set(self, f):
        """Feature ``f``'s categories (or its encoder's) as an Arrow string array, for
        ``pc.index_in``, made on first use from the strings' bytes (``pa.array`` of
        Python strings imports pandas: 0.3 s and 40 MiB)."""
        if self._category_arrays is None:
            self._category_arrays = [
                string_array(e["categories"]) if e is not None
                else None if c is None else string_array(c)
                for c, e in zip(self.categories, self.encoders)]
        return self._category_arrays[f]

    def _value_bins(self, f):
        name, kind = self.feature_names[f], self.feature_types[f]
        if kind not in FEATURE_TYPES:
            raise ParameterError(
                f"feature {name!r}: type must be one of {FEATURE_TYPES}, got {kind!r}")
        edges = self.bin_edges[f]
        if (kind == ORDERED_TS) != (self.encoders[f] is not None):
            raise ParameterError(f"feature {name!r}: an encoder goes with type "
                                 f"{ORDERED_TS!r} and only with it")
        if kind in (NUMERIC, ORDERED_TS):
            if self.categories[f] is not None or self.has_other[f]:
                raise ParameterError(f"numeric feature {name!r} cannot have categories")
            if not (np.isfinite(edges).all() and np.all(np.diff(edges) > 0)):
                raise ParameterError(
                    f"feature {name!r}: bin edges must be finite and strictly increasing")
            n_bins = edges.shape[0] + 1
        else:
            if self.categories[f] is None or edges.shape[0]:
                raise ParameterError(
                    f"categorical feature {name!r} needs a category list and no edges")
            if len(set(self.categories[f])) != len(self.categories[f]):
                raise ParameterError(f"feature {name!r}: categories must be unique")
            n_categories = len(self.categories[f]) + int(self.has_other[f])
            if n_categories > MAX_CATEGORIES:
                raise ParameterError(
                    f"feature {name!r} has {n_categories} categories; at most "
                    f"{MAX_CATEGORIES} are kept (fold the rarest with max_categories)")
            return category_value_bins(n_categories, self.max_bin)
        if n_bins > self.max_bin - 1:
            raise ParameterError(
                f"feature {name!r} has {n_bins} value bins; max_bin={self.max_bin} allows "
                f"at most {self.max_bin - 1}")
        return n_bins

    def category_names(self, f):
        """Category of each code of categorical feature ``f``: a list of
        ``n_value_bins[f]`` strings, None at the missing code inside a wide feature."""
        cats = list(self.categories[f]) + (["other"] if self.has_other[f] else [])
        if int(self.n_value_bins[f]) > self.missing_bin:
            cats.insert(self.missing_bin, None)
        return cats

    # ------------------------------------------------------------------------------ fit
    @classmethod
    def fit(cls, feature_names, feature_types, sketches, counters, max_bin=256,
            max_categories=None, encoders=None):
        """Bin mapper from pass-1 summaries.

        Parameters
        ----------
        feature_names : sequence of str
        feature_types : sequence of {"numeric", "categorical"}
        sketches : dict of str -> QuantileSketch
            One per numeric feature.
        counters : dict of str -> CategoryCounter
            One per categorical feature.
        max_bin : int, default 256
        max_categories : int, optional
            Most categories of a categorical feature, "other" included (default and
            ceiling ``MAX_CATEGORIES``).
        encoders : dict of str -> dict, optional
            The encoder of each ``ordered_ts`` feature (its sketch, in ``sketches``, holds
            its statistics).

        Returns
        -------
        BinMapper
        """
        encoders = encoders or {}
        max_bin = check_max_bin(max_bin)
        if max_categories is not None and (
                not isinstance(max_categories, (int, np.integer)) or max_categories < 1):
            raise ParameterError(
                f"max_categories must be a positive integer, got {max_categories!r}")
        edges, categories, has_other = [], [], []
        for name, kind in zip(feature_names, feature_types):
            if kind in (NUMERIC, ORDERED_TS):
                if name not in sketches:
                    raise ParameterError(f"no quantile sketch for numeric feature {name!r}")
                edges.append(numeric_edges(sketches[name], max_bin))
                categories.append(None)
                has_other.append(False)
            elif kind == CATEGORICAL:
                if name not in counters:
                    raise ParameterError(
                        f"no category counter for categorical feature {name!r}")
                kept, other = category_codes(counters[name], max_categories)
                edges.append(np.empty(0))
                categories.append(kept)
                has_other.append(other)
            else:
                raise ParameterError(
                    f"feature {name!r}: type must be one of {FEATURE_TYPES}, got {kind!r}")
        return cls(feature_names, feature_types, max_bin, edges, categories, has_other,
                   [encoders.get(name) for name in feature_names])

    # ------------------------------------------------------------------------ transform
    @property
    def n_features(self):
        return len(self.feature_names)

    def _unknown_code(self, f):
        """Code of unseen categories: "other" when there is one, else missing."""
        return int(self.n_value_bins[f]) - 1 if self.has_other[f] else self.missing_bin

    def _category_lookup(self, f, dictionary):
        """Code of each dictionary string of feature ``f`` (uint8/uint16 array)."""
        position = pc.index_in(dictionary, value_set=self._category_set(f))
        known = valid_mask(position)
        position = int_numpy(position)                  # 0 where unknown
        return np.where(known, category_code(position, self.max_bin),
                        self._unknown_code(f)).astype(self.codes_dtype)

    def transform_batch(self, batch):
        """Bin codes of one record batch.

        Parameters
        ----------
        batch : ingest Batch
            Has ``n_rows``, ``numeric`` (name -> float64 array, NaN missing) and
            ``categorical`` (name -> pyarrow string array, null missing).

        Returns
        -------
        ndarray of uint8 or uint16, shape (n_features, n_rows), C-contiguous
        """
        n_rows = int(batch.n_rows)
        out = np.empty((self.n_features, n_rows), dtype=self.codes_dtype)
        numeric_index, edges, n_edges, grouped = self._packed_edges()
        values = np.empty((len(numeric_index), n_rows), dtype=np.float64)
        for j, f in enumerate(numeric_index):
            values[j] = self._column(batch.numeric, batch.categorical, f, n_rows)
        if len(numeric_index) and grouped is not None:
            map_features_to_bins_grouped(values, grouped[0], grouped[1], numeric_index,
                                         self.missing_bin, out)
        elif len(numeric_index):
            map_features_to_bins(values, edges, n_edges, numeric_index, self.missing_bin,
                                 out)
        for f in np.flatnonzero(self.is_categorical):
            self._bin_categorical(f, self._column(batch.categorical, batch.numeric, f,
                                                  n_rows), out[f])
        return out

    def codes_of_value(self, value: float) -> np.ndarray:
        """The code ``value`` (NaN: missing) takes in each feature binned by edges,
        int64 (n_features,); -1 for the categorical features."""
        index, edges, n_edges, _ = self._packed_edges()
        out = np.full(self.n_features, -1, np.int64)
        if np.isnan(value):
            out[index] = self.missing_bin
        else:
            # map_to_bins's code: the edges below the value (padding past n_edges ignored)
            real = np.arange(edges.shape[1]) < n_edges[:, None]
            out[index] = np.count_nonzero((edges < value) & real, axis=1)
        return out

    def _packed_edges(self):
        """(numeric feature indices, edges padded to one 2-D array, edge counts, the
        grouped layout or None when a column has more than 255 edges), cached."""
        packed = getattr(self, "_packed", None)
        if packed is None:
            index = np.flatnonzero(~self.is_categorical).astype(np.int64)
            n_edges = np.array([len(self.bin_edges[f]) for f in index], dtype=np.int64)
            edges = np.zeros((len(index), max(int(n_edges.max(initial=0)), 1)))
            for j, f in enumerate(index):
                edges[j, : n_edges[j]] = self.bin_edges[f]
            # max_bin <= 256 (uint8 codes) always fits the two-level search
            grouped = (grouped_edges(edges, n_edges)
                       if int(n_edges.max(initial=0)) <= GROUPED_MAX_EDGES else None)
            packed = self._packed = (index, edges, n_edges, grouped)
        return packed

    def _column(self, columns, other_columns, f, n_rows):
        name, kind = self.feature_names[f], self.feature_types[f]
        if kind == ORDERED_TS and name not in columns and (
                name in other_columns or "sources" in self.encoders[f]):
            # raw strings: each category's statistic over the training rows
            return self.encode_from_columns(f, other_columns)
        if name not in columns:
            found = " (it came as the other type)" if name in other_columns else ""
            raise SchemaError(f"column {name!r}: expected a {kind} column{found}")
        column = columns[name]
        if len(column) != n_rows:
            raise InputError(
                f"column {name!r} has {len(column)} rows, expected the batch's {n_rows}")
        return column

    def _bin_categorical(self, f, values, out):
        values = as_category_array(values, f"column {self.feature_names[f]!r}")
        encoded = pc.dictionary_encode(values)
        lookup = self._category_lookup(f, encoded.dictionary)
        indices = int_numpy(encoded.indices, null=-1,
                            dtype=encoded.indices.type.to_pandas_dtype())
        indices.flags.writeable = False     # as to_numpy gave it: the kernel's one variant
        map_categories(indices, lookup, self.missing_bin, out)

    def transform_numeric(self, X):
        """Bin codes of an in-memory matrix whose categorical columns hold codes.

        Parameters
        ----------
        X : array_like of float64, shape (n_rows, n_features)
            Raw numeric values; categorical columns hold category codes as floats, as
            :meth:`encode_categories` gives them (codes outside ``0 .. n_value_bins -
            1`` count as unseen; the missing code is missing). NaN is missing.

        Returns
        -------
        ndarray of uint8 or uint16, shape (n_features, n_rows), C-contiguous
        """
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2 or X.shape[1] != self.n_features:
            raise InputError(
                f"expected a 2-D array with {self.n_features} columns, got shape {X.shape}")
        out = np.empty((self.n_features, X.shape[0]), dtype=self.codes_dtype)
        # the numeric columns in one launch, as transform_batch bins them (a kernel call
        # a column was most of binning a 10-row chunk)
        numeric_index, edges, n_edges, grouped = self._packed_edges()
        if len(numeric_index):
            values = np.ascontiguousarray(X[:, numeric_index].T)
            if grouped is not None:
                map_features_to_bins_grouped(values, grouped[0], grouped[1], numeric_index,
                                             self.missing_bin, out)
            else:
                map_features_to_bins(values, edges, n_edges, numeric_index,
                                     self.missing_bin, out)
        for f in np.flatnonzero(self.is_categorical):
            n_codes = int(self.n_value_bins[f]) if self.categories[f] else 0
            map_float_codes(np.ascontiguousarray(X[:, f]), n_codes, self._unknown_code(f),
                            self.missing_bin, out[f])
        return out

    def encode_categories(self, feature_index, values):
        """Category codes of raw strings, as floats (for the raw-data predictor).

        Parameters
        ----------
        feature_index : int or str
            A categorical feature, by position or name.
        values : pyarrow string array or numpy object array, shape (n,)
            Categories; null / None / NaN is missing.

        Returns
        -------
        ndarray of float64, shape (n,)
            Codes; unseen categories get the "other" code when the feature has one; NaN
            for missing values and for unseen ones otherwise.
        """
        f = self._feature_index(feature_index)
        if self.encoders[f] is not None:
            return self._encode_targets(f, values)
        if not self.is_categorical[f]:
            raise ParameterError(f"feature {self.feature_names[f]!r} is not categorical")
        values = as_category_array(values, f"column {self.feature_names[f]!r}")
        position = pc.index_in(values, value_set=self._category_set(f))
        codes = np.where(valid_mask(position), int_numpy(position), np.nan)
        codes = np.where(codes >= self.missing_bin, codes + 1, codes)  # category_code
        unseen = np.isnan(codes) & valid_mask(values)
        if self.has_other[f]:
            codes[unseen] = float(self.n_value_bins[f] - 1)
        return codes

    def encode_from_columns(self, feature_index, columns):
        """The statistic of ordered-TS feature ``feature_index`` for each row of raw
        categorical ``columns`` (name -> strings): of its column, or, for a derived
        feature, of the pair of its sources (float64, NaN missing)."""
        f = self._feature_index(feature_index)
        sources = self.sources_of(f)
        absent = [c for c in sources if c not in columns]
        if absent:
            raise SchemaError(f"feature {self.feature_names[f]!r} is computed from the "
                              f"categorical column(s) {absent}, which the data lacks")
        return self._encode_targets(f, key_strings(columns, sources))

    def _encode_targets(self, f, values):
        """Ordered-TS feature ``f``: the statistic of each raw string (NaN missing)."""
        enc = self.encoders[f]
        values = as_category_array(values, f"column {self.feature_names[f]!r}")
        position = pc.index_in(values, value_set=self._category_set(f))
        known = valid_mask(position)
        index = int_numpy(position)                     # 0 where unknown
        table = np.asarray(enc["values"], dtype=np.float64)
        out = np.where(known, table[index] if len(table) else np.nan, enc["other"])
        out[~valid_mask(values)] = np.nan
        return out

    def category_positions(self, feature, values, n_kept):
        """Position of each raw string in the encoder's (or category) list of
        ``feature``: ``n_kept`` for strings not listed, -1 for missing (int64)."""
        f = self._feature_index(feature)
        values = as_category_array(values, f"column {self.feature_names[f]!r}")
        position = pc.index_in(values, value_set=self._category_set(f))
        out = int_numpy(position, null=n_kept)
        out[~valid_mask(values)] = -1
        return out

    def _feature_index(self, feature):
        if isinstance(feature, str):
            if feature not in self._index:
                raise ParameterError(f"unknown feature {feature!r}")
            return self._index[feature]
        f = int(feature)
        if not 0 <= f < self.n_features:
            raise ParameterError(
                f"feature index {feature} out of range for {self.n_features} features")
        return f

    # ----------------------------------------------------------------------------- JSON
    def to_dict(self):
        """JSON-safe description (edges as base64 of their float64 bytes: exact)."""
        return {
            "format": _FORMAT, "version": _VERSION, "max_bin": self.max_bin,
            "features": [
                {"name": name, "type": kind, "edges": encode_edges(self.bin_edges[f]),
                 "categories": self.categories[f], "has_other": bool(self.has_other[f]),
                 **({} if self.encoders[f] is None else {"encoder": self.encoders[f]})}
                for f, (name, kind) in enumerate(zip(self.feature_names, self.feature_types))
            ],
        }

    @classmethod
    def from_dict(cls, state):
        """Inverse of :meth:`to_dict`; raises ModelError on anything malformed."""
        try:
            if state.get("format") != _FORMAT or state.get("version") not in _READ_VERSIONS:
                raise ModelError(
                    f"expected a {_FORMAT} description of version "
                    f"{' or '.join(map(str, _READ_VERSIONS))}, got format "
                    f"{state.get('format')!r} version {state.get('version')!r}")
            features = state["features"]
            return cls(
                [feat["name"] for feat in features], [feat["type"] for feat in features],
                state["max_bin"],
                [decode_edges(feat["edges"], f"feature {feat['name']!r}")
                 for feat in features],
                [feat["categories"] for feat in features],
                [feat["has_other"] for feat in features],
                [feat.get("encoder") for feat in features],
            )
        except ModelError:
            raise
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ModelError(f"malformed bin mapper description: {exc}") from exc

    def __eq__(self, other):
        if not isinstance(other, BinMapper):
            return NotImplemented
        return (
            self.max_bin == other.max_bin
            and self.feature_names == other.feature_names
            and self.feature_types == other.feature_types
            and self.categories == other.categories
            and np.array_equal(self.has_other, other.has_other)
            and self.encoders == other.encoders
            and all(np.array_equal(a, b) for a, b in zip(self.bin_edges, other.bin_edges))
        )

    __hash__ = None

    def __repr__(self):
        return (f"BinMapper(n_features={self.n_features}, max_bin={self.max_bin}, "
                f"n_categorical={int(self.is_categorical.sum())})")


def current_mapper_doc(doc):
    """``doc`` (a bin mapper description) in the current version: as it is when it is
    already, else decoded and written again, so that descriptions of the same bins
    compare equal whatever version their file has (ModelError when it is malformed)."""
    if not isinstance(doc, dict) or doc.get("version") == _VERSION:
        return doc
    return BinMapper.from_dict(doc).to_dict()
