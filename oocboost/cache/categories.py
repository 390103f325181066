"""Pass-1 summaries of each categorical column.

Category counter
----------------
Weighted Misra-Gries counts (mergeable, Agarwal et al. 2012) over at most ``capacity``
strings: when more are held, the ``(capacity + 1)``-th largest count is subtracted from all
and non-positive ones are dropped. Each reported count is within ``[c - undercount, c]``
of the true count ``c``, with ``undercount <= W / (capacity + 1)``; a category heavier
than ``undercount`` is never lost.
"""

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import InputError, ParameterError
from .ingest.arrow_numpy import float64_array, int64_array, int_numpy, valid_mask
from .sketch import check_weights

#: Category counter capacity when no ``max_categories`` is given, and its ceiling: four
#: strings held per category kept (``common.MAX_CATEGORIES``), so every count is exact
#: below 262,144 distinct strings and each merge re-encodes at most that many.
DEFAULT_CATEGORY_CAPACITY = 1 << 18
#: Capacity per kept category: rare categories heavier than W / (64 max_categories) survive.
CATEGORY_CAPACITY_FACTOR = 64


def as_category_array(values, what):
    """Categories as one flat pyarrow string array (null = missing).

    Parameters
    ----------
    values : pyarrow Array / ChunkedArray (string, dictionary or castable) or array_like
        Raw categories; None / NaN in object arrays become null.
    what : str
        Names the column or caller in the InputError raised for non-string values.

    Returns
    -------
    pyarrow.StringArray, shape (n,)
    """
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if not isinstance(values, pa.Array):
        try:
            values = pa.array(np.asarray(values, dtype=object), from_pandas=True)
        except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
            raise InputError(f"{what}: cannot read the values as categories: {exc}") from exc
    if pa.types.is_dictionary(values.type):
        values = values.dictionary_decode()
    if not pa.types.is_string(values.type):
        try:
            values = values.cast(pa.string())
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
            raise InputError(
                f"{what}: expected strings, got values of type {values.type}"
            ) from exc
    return values


class CategoryCounter:
    """Bounded, mergeable weighted counts of the string categories of one column.

    Parameters
    ----------
    max_categories : int, optional
        Categories the bin mapper will keep; sets the default capacity to
        ``CATEGORY_CAPACITY_FACTOR * max_categories``, at most (and without it)
        ``DEFAULT_CATEGORY_CAPACITY``.
    capacity : int, optional
        Most strings held at once (Misra-Gries counters, see module docstring).

    Notes
    -----
    Nulls are missing and not counted. Counts are weighted sums (row counts without
    weights). While :attr:`truncated` is False every count is exact.
    """

    def __init__(self, max_categories=None, capacity=None):
        if max_categories is not None and (
            not isinstance(max_categories, (int, np.integer)) or max_categories < 1
        ):
            raise ParameterError(
                f"max_categories must be a positive integer, got {max_categories!r}"
            )
        if capacity is None:
            capacity = (DEFAULT_CATEGORY_CAPACITY if max_categories is None
                        else min(CATEGORY_CAPACITY_FACTOR * int(max_categories),
                                 DEFAULT_CATEGORY_CAPACITY))
        if not isinstance(capacity, (int, np.integer)) or capacity < 1:
            raise ParameterError(f"capacity must be a positive integer, got {capacity!r}")
        self.max_categories = None if max_categories is None else int(max_categories)
        self.capacity = int(capacity)
        self._keys = pa.nulls(0, pa.string())   # pa.array([]) imports pandas
        self._counts = np.empty(0)
        #: Upper bound on how much any reported count is below the true count.
        self.undercount = 0.0
        #: At least this many distinct categories were seen.
        self.n_distinct_lower_bound = 0

    @property
    def truncated(self):
        """True once counts have been decremented to stay within ``capacity``."""
        return self.undercount > 0.0

    def update(self, values, weights=None):
        """Count one batch.

        Parameters
        ----------
        values : pyarrow.Array of strings or numpy object array, shape (n,)
            Categories; null / None is missing.
        weights : array_like of float64, shape (n,), optional
            Non-negative finite sample weights (default 1).
        """
        values = as_category_array(values, "CategoryCounter.update")
        encoded = pc.dictionary_encode(values)
        indices = int_numpy(encoded.indices)
        valid = valid_mask(encoded.indices)
        w = None
        if weights is not None:
            w = check_weights(weights, len(values), "CategoryCounter.update")[valid]
        counts = np.bincount(indices[valid], weights=w,
                             minlength=len(encoded.dictionary)).astype(np.float64)
        self._absorb(encoded.dictionary, counts, 0.0, 0)
        return self

    def merge(self, other):
        """Add ``other``'s counts (``other`` is unchanged); undercount bounds add."""
        if not isinstance(other, CategoryCounter):
            raise ParameterError(
                f"can only merge a CategoryCounter, got {type(other).__name__}"
            )
        self._absorb(
            other._keys, other._counts, other.undercount, other.n_distinct_lower_bound
        )
        return self

    def _absorb(self, keys, counts, undercount, n_distinct):
        keys = pa.concat_arrays([self._keys, keys.cast(pa.string())])
        counts = np.concatenate([self._counts, counts])
        encoded = pc.dictionary_encode(keys)
        summed = np.bincount(int_numpy(encoded.indices), weights=counts,
                             minlength=len(encoded.dictionary))
        positive = summed > 0
        keys = encoded.dictionary.take(int64_array(np.flatnonzero(positive)))
        summed = summed[positive]
        self.n_distinct_lower_bound = max(self.n_distinct_lower_bound, n_distinct, len(keys))
        self.undercount += undercount
        if summed.shape[0] > self.capacity:
            # Misra-Gries: subtract the (capacity+1)-th largest count from all.
            delta = np.partition(summed, summed.shape[0] - self.capacity - 1)[
                summed.shape[0] - self.capacity - 1]
            summed = summed - delta
            positive = summed > 0
            keys = keys.take(int64_array(np.flatnonzero(positive)))
            summed = summed[positive]
            self.undercount += float(delta)
        self._keys = keys
        self._counts = summed

    def counts(self):
        """Counts of the categories held: ``dict[str, float]`` (integral when unweighted)."""
        return dict(zip(self._keys.to_pylist(), self._counts.tolist()))

    def most_common(self):
        """``[(category, count), ...]`` by decreasing count, ties by category string."""
        table = pa.table({"key": self._keys, "count": float64_array(self._counts)})
        order = pc.sort_indices(
            table, sort_keys=[("count", "descending"), ("key", "ascending")]
        )
        table = table.take(order)
        return list(zip(table["key"].to_pylist(), table["count"].to_pylist()))

    def to_dict(self):
        """JSON-safe state."""
        return {
            "kind": "CategoryCounter", "max_categories": self.max_categories,
            "capacity": self.capacity, "keys": self._keys.to_pylist(),
            "counts": self._counts.tolist(), "undercount": self.undercount,
            "n_distinct_lower_bound": self.n_distinct_lower_bound,
        }

    @classmethod
    def from_dict(cls, state):
        """Inverse of :meth:`to_dict`."""
        try:
            counter = cls(max_categories=state["max_categories"], capacity=state["capacity"])
            counter._keys = pa.array(state["keys"], type=pa.string())
            counter._counts = np.asarray(state["counts"], dtype=np.float64)
            counter.undercount = float(state["undercount"])
            counter.n_distinct_lower_bound = int(state["n_distinct_lower_bound"])
        except (KeyError, TypeError, ValueError, pa.ArrowInvalid) as exc:
            raise ParameterError(f"malformed CategoryCounter state: {exc!r}") from exc
        if len(counter._keys) != counter._counts.shape[0]:
            raise ParameterError("malformed CategoryCounter state: keys and counts differ")
        return counter


#: Joins the two strings of a pair of categorical columns into one category (ordered
#: target statistics of pairs, ``target_stats.py``).
PAIR_SEPARATOR = "\x1f"


def key_strings(columns, key, what="column"):
    """The category strings of ``key`` (a tuple of one or two column names) in a batch's
    categorical ``columns``: the column's, or the pair's joined (missing when either
    is)."""
    arrays = [as_category_array(columns[name], f"{what} {name!r}") for name in key]
    if len(arrays) == 1:
        return arrays[0]
    return pc.binary_join_element_wise(*arrays, PAIR_SEPARATOR)
