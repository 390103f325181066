"""Pass-1 summaries of each numeric column: weighted quantile sketches (category counts
are in :mod:`.categories`).

Quantile sketch
---------------
A *summary* of a weighted multiset D (total weight W) is a value-sorted list of entries
``(x_i, rmin_i, rmax_i, w_i)`` with, for the true ranks ``R-(x)`` (weight of elements
``< x``), ``R+(x)`` (weight of elements ``<= x``) and weight ``w(x)``::

    rmin_i <= R-(x_i),   R+(x_i) <= rmax_i,   w_i <= w(x_i)                 (validity)

and the first / last entries are the minimum / maximum with ``rmax_0 - w_0 = 0`` and
``rmin_last + w_last = W``. Write ``a_i = rmin_i + w_i`` (a lower bound of ``R+(x_i)``)
and ``b_i = rmax_i - w_i`` (an upper bound of ``R-(x_i)``). The *gap* of a summary is
``G = max_i (b_{i+1} - a_i)``; an exact summary (every distinct value) has ``G = 0``.

Query (rank r = q W): take ``i`` the first entry with ``a_i > r``. The true rank interval
``[R-(x_i), R+(x_i)]`` is at distance at most ``max(0, b_i - r) <= b_i - a_{i-1} <= G``
from r. So the answer's weighted rank is within ``[q - G/W, q + G/W] W``
(:attr:`QuantileSketch.rank_error_bound` is ``G/W`` of the combined summary: a certified
bound computed from the entries, never larger than the a priori bound below).

Combine (the merge of XGBoost's ``WQSummary::SetCombine``, Chen & Guestrin 2016,
appendix): ranks add, an entry of A absent from B borrows ``a`` of B's previous entry and
``b`` of B's next one. Validity is kept and ``G(A + B) <= G(A) + G(B)``.

Prune to ``m + 2`` entries: keep the first entry and, for each target ``t_k = k W / m``
(``k = 0..m``), the first entry with ``a > t_k``. Between kept neighbours ``i < j`` every
dropped entry lies between two targets, so ``G' <= G + W / m``.

Levels (a binary counter): each batch becomes an exact summary, is pruned, and is
carried up: level ``l`` holds at most one summary covering ``>= 2^l`` batches; two
summaries at level ``l`` are combined, pruned and moved to level ``l + 1``. By induction
a level-``l`` summary has ``G <= (l + 1) W_l / m``, and combining all levels for a query
gives ``G <= (L + 1) W / m`` with ``L = floor(log2(n_batches))``. The levels hold at most
``(L + 1) (m + 2)`` entries of 32 bytes, whatever the number of rows; a query caches their
combination (as many entries again) until the next update.

Sizing: ``m = max(ceil(DESIGN_LEVELS / eps), max_exact)`` with ``DESIGN_LEVELS = 14``, so
the a priori bound ``(L + 1) / m`` is at most ``eps`` for fewer than ``2^14 = 16384``
batches (and grows by ``1/m`` per doubling beyond). The default ``eps = 1/1024`` (a
quarter of a bin at 256 bins) gives ``m = 14336``: 459 kB per level. A summary is pruned
only when it has more than ``m + 2`` entries, so a feature with at most ``max_exact``
(indeed up to ``m + 2``) distinct values is never pruned and stays exact.

"""
import math
import numbers

import numpy as np

from ..errors import InputError, ParameterError
from ..kernels.quantile import clean_values, combine_summaries, prune_keep, summarize_sorted

#: Number of prune levels the default summary size is sized for (2^14 = 16384 batches).
DESIGN_LEVELS = 14
DEFAULT_EPS = 1.0 / 1024.0
DEFAULT_MAX_EXACT = 255

_SUMMARY_FIELDS = ("values", "rmin", "rmax", "w")


# --------------------------------------------------------------------------------------
# Summaries: tuples (values, rmin, rmax, w) of float64 arrays, value-sorted, never mutated.
# --------------------------------------------------------------------------------------
def _exact_summary(values, weights):
    """Exact summary of a batch (values finite or +-inf, weights > 0 or None for ones).

    Sort-based: for float columns almost every value is distinct, and sorting plus a
    run-length pass was 3x faster than ``np.unique`` (hash-based in NumPy 2.4).
    """
    if weights is None:
        return summarize_sorted(np.sort(values))
    order = np.argsort(values, kind="stable")
    v, weights = values[order], weights[order]
    starts = np.flatnonzero(np.concatenate(([True], v[1:] != v[:-1])))
    w = np.add.reduceat(weights, starts)
    rmax = np.cumsum(w)
    return (v[starts], rmax - w, rmax, w)


def _size(s):
    return s[0].shape[0]


def _total_weight(s):
    return float(s[1][-1] + s[3][-1]) if _size(s) else 0.0


def _combine(sa, sb):
    """Combined summary of the union of two multisets; ``G <= G(sa) + G(sb)``
    (``kernels/quantile.combine_summaries``)."""
    if _size(sa) == 0:
        return sb
    if _size(sb) == 0:
        return sa
    return combine_summaries(*sa, *sb)


def _prune(s, m):
    """Keep at most ``m + 2`` entries; ``G`` grows by at most ``W / m``
    (``kernels/quantile.prune_keep``)."""
    if _size(s) <= m + 2:
        return s, False
    keep = prune_keep(s[1], s[3], m)
    return tuple(field[keep] for field in s), True


def _max_gap(s):
    """``G`` of a summary, with the virtual neighbours ``a_{-1} = 0`` and ``b_n = W``."""
    if _size(s) == 0:
        return 0.0
    a = s[1] + s[3]
    b = s[2] - s[3]
    gaps = np.concatenate(([b[0]], b[1:] - a[:-1], [_total_weight(s) - a[-1]]))
    return float(max(gaps.max(), 0.0))


def _query(s, ranks):
    """Entry values whose true rank interval is within ``G`` of each rank."""
    a = s[1] + s[3]
    b = s[2] - s[3]
    n = a.shape[0]
    nxt = np.minimum(np.searchsorted(a, ranks, side="right"), n - 1)
    prv = np.maximum(nxt - 1, 0)

    def uncertainty(i):
        return np.maximum(np.maximum(b[i] - ranks, ranks - a[i]), 0.0)

    # The proof needs only `nxt`; its left neighbour is often closer (ties go left).
    pick = np.where(uncertainty(prv) <= uncertainty(nxt), prv, nxt)
    return s[0][pick]


def _encode_floats(x):
    """JSON-safe list: +-inf become the strings "inf" / "-inf"."""
    out = x.tolist()
    for i in np.flatnonzero(~np.isfinite(x)):  # at most two distinct values are infinite
        out[i] = "inf" if x[i] > 0 else "-inf"
    return out


def _decode_floats(values):
    return np.array(values, dtype=np.float64)


def check_weights(weights, n, what):
    """Weights as float64 (n,), or InputError naming the first bad row."""
    weights = np.asarray(weights, dtype=np.float64).ravel()
    if weights.shape[0] != n:
        raise InputError(
            f"{what}: weights have {weights.shape[0]} entries but values have {n}; "
            "expected one weight per value"
        )
    bad = ~np.isfinite(weights) | (weights < 0)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InputError(
            f"{what}: weight at row {i} is {weights[i]!r}; expected a finite number >= 0"
        )
    return weights


def _clean_weighted(values, weights, what):
    """Drop NaN values and zero weights; check weights; normalise -0.0 to 0.0. Returns
    ``(values, weights, minimum, maximum)``; ``weights`` None when none were given."""
    values = np.ascontiguousarray(values, dtype=np.float64).ravel()
    if weights is None:
        clean, lo, hi = clean_values(values)
        return clean, None, lo, hi
    weights = check_weights(weights, values.shape[0], what)
    keep = ~np.isnan(values) & (weights > 0)
    values = values[keep] + 0.0
    if values.shape[0] == 0:
        return values, weights[keep], math.inf, -math.inf
    return values, weights[keep], float(values.min()), float(values.max())


#: Values buffered per sketch before they are summarised (16 bytes each with weights).
BUFFER_VALUES = 32768


class QuantileSketch:
    """Mergeable weighted quantile sketch of one numeric feature (see module docstring).

    Parameters
    ----------
    eps : float, optional
        Target rank error for up to ``2**DESIGN_LEVELS`` (16384) batches; default 1/1024.
        The summary size is ``m = max(ceil(DESIGN_LEVELS / eps), max_exact)``.
    max_exact : int, default 255
        The sketch keeps every distinct value and its exact total weight at least while
        there are at most this many distinct values (in fact while no summary exceeds
        ``m + 2`` entries).
    buffer_values : int, default 32768
        Values buffered before they are summarised as one batch (0: every ``update`` is
        a batch). Memory: 16 bytes per buffered value.

    Notes
    -----
    NaN values and zero weights are ignored (the caller counts missing values); +-inf are
    ordinary values. The levels hold at most ``(floor(log2(n_batches)) + 1) * (m + 2)``
    entries of 32 bytes (:attr:`n_entries`); a query caches their combination.
    """

    def __init__(self, eps=None, max_exact=DEFAULT_MAX_EXACT, buffer_values=BUFFER_VALUES):
        eps = DEFAULT_EPS if eps is None else eps
        if not (isinstance(eps, numbers.Real) and 0.0 < eps < 1.0):
            raise ParameterError(f"QuantileSketch eps must be in (0, 1), got {eps!r}")
        if not isinstance(max_exact, (int, np.integer)) or max_exact < 1:
            raise ParameterError(
                f"QuantileSketch max_exact must be a positive integer, got {max_exact!r}"
            )
        self.eps = float(eps)
        self.max_exact = int(max_exact)
        #: Prune target count: summaries keep at most ``m + 2`` entries.
        self.m = max(int(math.ceil(DESIGN_LEVELS / self.eps)), self.max_exact)
        self._levels = []  # level l: summary tuple or None
        self._n_batches = 0
        self._lossy = False  # a prune has dropped entries
        self._min = math.inf
        self._max = -math.inf
        self._combined = None  # cache of all levels combined
        # Values are buffered and summarised BUFFER_VALUES at a time: CSV batches are
        # small (~5000 rows per 1 MiB block) and a summary per batch made the sketch the
        # slowest part of a build (12 s of a 1M-row build); fewer, larger summaries also
        # mean fewer levels, so the bound is no worse.
        self.buffer_values = int(buffer_values)
        self._buffer = []
        self._buffered = 0

    @classmethod
    def for_budget(cls, n_bytes, max_exact=DEFAULT_MAX_EXACT):
        """The most precise sketch whose memory never exceeds ``n_bytes``.

        A quarter of the budget (at most 32768 values, at least 1024) buffers input; the
        rest holds the level summaries, at most ``DESIGN_LEVELS + 1`` of ``m + 2``
        entries of 32 bytes, so ``m = rest / (32 (DESIGN_LEVELS + 1)) - 2`` and the
        guaranteed bound is ``eps = DESIGN_LEVELS / m`` for up to 16384 buffers (it is
        ``(floor(log2(n_buffers)) + 1) / m`` in fact: 6/m for a million rows).

        Parameters
        ----------
        n_bytes : int
            Memory budget of the sketch (bytes).
        max_exact : int
            Distinct values kept exactly (raises the memory if above the budget's ``m``).

        Examples
        --------
        >>> QuantileSketch.for_budget(2 * 2**20).m
        3274
        """
        n_bytes = int(n_bytes)
        buffer_values = int(min(BUFFER_VALUES, max(1024, n_bytes // 4 // 16)))
        rest = max(n_bytes - 16 * buffer_values, 0)
        m = max(int(rest // (32 * (DESIGN_LEVELS + 1))) - 2, 16)
        eps = min(DESIGN_LEVELS / m, 0.5)
        return cls(eps=eps, max_exact=max_exact, buffer_values=buffer_values)

    # ----------------------------------------------------------------------------- feed
    def update(self, values, weights=None):
        """Add one batch.

        Parameters
        ----------
        values : array_like of float64, shape (n,)
            Raw values; NaN ignored, +-inf kept.
        weights : array_like of float64, shape (n,), optional
            Non-negative finite sample weights (default 1); zero-weight values are ignored.
        """
        values, weights, lo, hi = _clean_weighted(values, weights, "QuantileSketch.update")
        return self._buffer_batch(values, weights, lo, hi)

    def update_clean(self, values, lo, hi):
        """Add one batch of unweighted values already cleaned (no NaN, no -0.0: as
        ``kernels.quantile.clean_columns`` gives them) with their minimum and maximum.
        ``values`` is kept until the next summary, not copied."""
        return self._buffer_batch(values, None, lo, hi)

    def _buffer_batch(self, values, weights, lo, hi):
        if values.shape[0] == 0:
            return self
        self._min = min(self._min, float(lo))
        self._max = max(self._max, float(hi))
        self._buffer.append((values, weights))
        self._buffered += values.shape[0]
        if self._buffered >= self.buffer_values:
            self._flush()
        return self

    def _flush(self):
        """Summarise the buffered values as one batch."""
        if not self._buffer:
            return
        values = np.concatenate([v for v, _ in self._buffer])
        if all(w is None for _, w in self._buffer):
            weights = None
        else:
            weights = np.concatenate([np.ones(v.shape[0]) if w is None else w
                                      for v, w in self._buffer])
        self._buffer = []
        self._buffered = 0
        self._n_batches += 1
        self._combined = None
        self._carry(_exact_summary(values, weights), 0)

    def merge(self, other):
        """Add everything ``other`` has seen (``other`` is unchanged).

        Each of ``other``'s level summaries is carried in at its own level, so the merged
        sketch has the same bound ``(floor(log2(n_batches)) + 1) / m`` as one sketch fed
        all the batches of both. Both must have the same summary size ``m``.
        """
        self._flush()
        if not isinstance(other, QuantileSketch):
            raise ParameterError(
                f"can only merge a QuantileSketch, got {type(other).__name__}"
            )
        other._flush()
        if other.m != self.m:
            raise ParameterError(
                f"cannot merge QuantileSketches of different summary sizes ({self.m} and "
                f"{other.m}): build them with the same eps and max_exact"
            )
        self._min = min(self._min, other._min)
        self._max = max(self._max, other._max)
        self._n_batches += other._n_batches
        self._lossy |= other._lossy
        for level, summary in enumerate(other._levels):
            if summary is not None:
                self._carry(summary, level)
        return self

    def _carry(self, summary, level):
        summary = self._pruned(summary)
        while level < len(self._levels) and self._levels[level] is not None:
            summary = self._pruned(_combine(self._levels[level], summary))
            self._levels[level] = None
            level += 1
        if level == len(self._levels):
            self._levels.append(None)
        self._levels[level] = summary
        self._combined = None

    def _pruned(self, summary):
        summary, dropped = _prune(summary, self.m)
        self._lossy |= dropped
        return summary

    def _summary(self):
        if self._combined is None:
            empty = tuple(np.empty(0) for _ in _SUMMARY_FIELDS)
            combined = empty
            for summary in self._levels:
                if summary is not None:
                    combined = _combine(combined, summary)
            self._combined = combined
        return self._combined

    # ---------------------------------------------------------------------------- query
    @property
    def total_weight(self):
        """Sum of the weights of the non-missing values seen (float)."""
        self._flush()
        self._flush()
        return sum(_total_weight(s) for s in self._levels if s is not None)

    @property
    def min(self):
        """Smallest value seen (NaN when empty)."""
        return self._min if self._min <= self._max else math.nan

    @property
    def max(self):
        """Largest value seen (NaN when empty)."""
        return self._max if self._min <= self._max else math.nan

    @property
    def n_batches(self):
        """Number of non-empty batches summarised (after merges, of all sketches)."""
        self._flush()
        return self._n_batches

    @property
    def is_exact(self):
        """True while the sketch knows every distinct value and its exact total weight."""
        self._flush()
        return not self._lossy

    @property
    def n_entries(self):
        """Entries held in all levels (memory is 32 bytes per entry)."""
        self._flush()
        return sum(_size(s) for s in self._levels if s is not None)

    @property
    def rank_error_bound(self):
        """Certified bound on the rank error of :meth:`quantiles`, as a fraction of W.

        For any ``q`` the returned value ``v`` has a true weighted rank in
        ``[q - bound, q + bound] * total_weight`` (0 when exact or empty). Never above
        :attr:`a_priori_error_bound`.
        """
        self._flush()
        total = self.total_weight
        if not self._lossy or total <= 0:
            return 0.0
        return _max_gap(self._summary()) / total

    @property
    def a_priori_error_bound(self):
        """``(floor(log2(n_batches)) + 1) / m``: the data-independent bound (0 if exact)."""
        self._flush()
        if not self._lossy:
            return 0.0
        return (len(self._levels)) / self.m

    def distinct_values(self):
        """Every distinct value and its total weight (exact sketches only).

        Returns
        -------
        values : ndarray of float64, shape (n_distinct,)
            Sorted distinct values.
        weights : ndarray of float64, shape (n_distinct,)
            Total weight of each value.
        """
        self._flush()
        if self._lossy:
            raise ParameterError(
                "distinct_values() needs an exact sketch; this one has summarised more "
                f"than m + 2 = {self.m + 2} distinct values"
            )
        s = self._summary()
        return s[0].copy(), s[3].copy()

    def quantiles(self, qs):
        """Values at weighted rank fractions ``qs``.

        Parameters
        ----------
        qs : array_like of float, shape (n_q,)
            Rank fractions in [0, 1].

        Returns
        -------
        ndarray of float64, shape (n_q,)
            Values seen in the data, each with true rank within
            ``[q - rank_error_bound, q + rank_error_bound] * total_weight``; NaN when empty.
        """
        self._flush()
        qs = np.asarray(qs, dtype=np.float64)
        if not np.all((qs >= 0.0) & (qs <= 1.0)):
            raise ParameterError(f"quantile fractions must lie in [0, 1], got {qs!r}")
        s = self._summary()
        if _size(s) == 0:
            return np.full(qs.shape, np.nan)
        return _query(s, qs * _total_weight(s))

    # ----------------------------------------------------------------------------- JSON
    def to_dict(self):
        """JSON-safe state (floats finite; +-inf values encoded as "inf"/"-inf")."""
        self._flush()
        levels = []
        for s in self._levels:
            if s is None:
                levels.append(None)
            else:
                levels.append(
                    {"values": _encode_floats(s[0]), "rmin": s[1].tolist(),
                     "rmax": s[2].tolist(), "w": s[3].tolist()}
                )
        return {
            "kind": "QuantileSketch", "eps": self.eps, "max_exact": self.max_exact,
            "m": self.m, "n_batches": self._n_batches, "lossy": self._lossy,
            "buffer_values": self.buffer_values,
            "min": _encode_floats(np.array([self._min]))[0],
            "max": _encode_floats(np.array([self._max]))[0], "levels": levels,
        }

    @classmethod
    def from_dict(cls, state):
        """Inverse of :meth:`to_dict`."""
        try:
            sketch = cls(eps=state["eps"], max_exact=state["max_exact"],
                         buffer_values=state.get("buffer_values", BUFFER_VALUES))
            sketch.m = int(state["m"])
            sketch._n_batches = int(state["n_batches"])
            sketch._lossy = bool(state["lossy"])
            sketch._min = float(state["min"])
            sketch._max = float(state["max"])
            sketch._levels = [
                None if s is None else
                (_decode_floats(s["values"]),) + tuple(
                    np.asarray(s[k], dtype=np.float64) for k in _SUMMARY_FIELDS[1:])
                for s in state["levels"]
            ]
        except (KeyError, TypeError, ValueError) as exc:
            raise ParameterError(f"malformed QuantileSketch state: {exc!r}") from exc
        for level, s in enumerate(sketch._levels):
            if s is not None and not (
                    len({field.shape for field in s}) == 1 and np.all(np.diff(s[0]) > 0)):
                raise ParameterError(
                    f"malformed QuantileSketch state: level {level} is not a sorted summary")
        return sketch
