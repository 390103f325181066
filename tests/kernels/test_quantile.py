"""The quantile sketch's kernels against their NumPy formulations (the sketch's code
before the kernels), bit for bit: a cache's bin edges must not depend on which ran."""
import numpy as np
import pytest

from oocboost.cache.sketch import QuantileSketch
from oocboost.kernels.quantile import (
    clean_columns,
    clean_values,
    combine_summaries,
    prune_keep,
    summarize_sorted,
)


# ------------------------------------------------------------------ naive twins (NumPy)
def naive_clean(values):
    kept = values[~np.isnan(values)] + 0.0
    if kept.shape[0] == 0:
        return kept, np.inf, -np.inf
    return kept, kept.min(), kept.max()


def naive_summarize(v):
    starts = np.flatnonzero(np.concatenate(([True], v[1:] != v[:-1])))
    w = np.diff(np.append(starts, v.shape[0])).astype(np.float64)
    rmax = np.cumsum(w)
    return v[starts], rmax - w, rmax, w


def naive_ranks_at(s, query):
    sv, srmin, srmax, sw = s
    n = sv.shape[0]
    pos = np.searchsorted(sv, query, side="left")
    found = pos < n
    found[found] = sv[pos[found]] == query[found]
    prev_a = np.where(pos > 0, (srmin + sw)[np.maximum(pos - 1, 0)], 0.0)
    next_b = np.where(pos < n, (srmax - sw)[np.minimum(pos, n - 1)], srmin[-1] + sw[-1])
    idx = np.minimum(pos, n - 1)
    return (np.where(found, srmin[idx], prev_a), np.where(found, srmax[idx], next_b),
            np.where(found, sw[idx], 0.0))


def naive_combine(sa, sb):
    c = np.concatenate((sa[0], sb[0]))
    c.sort(kind="stable")
    values = c[np.concatenate(([True], c[1:] != c[:-1]))]
    rmin, rmax, w = (np.zeros(values.shape[0]) for _ in range(3))
    for s in (sa, sb):
        r0, r1, ws = naive_ranks_at(s, values)
        rmin += r0
        rmax += r1
        w += ws
    return values, rmin, rmax, w


def naive_prune_keep(s, m):
    a = s[1] + s[3]
    n = a.shape[0]
    targets = np.arange(m + 1, dtype=np.float64) * (a[-1] / m)
    picks = np.minimum(np.searchsorted(a, targets, side="right"), n - 1)
    keep = np.concatenate(([0], picks, [n - 1]))
    return keep[np.concatenate(([True], keep[1:] != keep[:-1]))]


# ---------------------------------------------------------------------------- data
def column(rng, n, kind):
    if kind == "float":
        return rng.normal(size=n)
    if kind == "ties":
        return rng.integers(0, 7, size=n).astype(np.float64)
    # NaN, -0.0, 0.0 and infinities among ties
    pool = np.array([np.nan, -0.0, 0.0, np.inf, -np.inf, 1.5, -2.25])
    return rng.choice(pool, size=n)


def weighted_summary(rng, n, kind):
    """An exact summary of weighted values (non-integer ranks)."""
    v = np.sort(column(rng, n, kind))
    v = v[~np.isnan(v)] + 0.0
    starts = np.flatnonzero(np.concatenate(([True], v[1:] != v[:-1]))) if v.size else []
    w = rng.uniform(0.1, 3.0, size=len(starts))
    rmax = np.cumsum(w)
    return v[starts], rmax - w, rmax, w


def same(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
        assert np.asarray(x).dtype == np.asarray(y).dtype


KINDS = ["float", "ties", "special"]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("n", [0, 1, 2, 17, 1000])
def test_clean_values_matches_numpy(kind, n):
    values = column(np.random.default_rng(n), n, kind)
    got = clean_values(values)
    want = naive_clean(values)
    same(got, want)
    # -0.0 became 0.0 (the sign bit is gone)
    assert not np.signbit(got[0][got[0] == 0.0]).any()


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("n", [1, 2, 33, 5000])
def test_summarize_sorted_matches_numpy(kind, n):
    v = column(np.random.default_rng(n), n, kind)
    v = np.sort(v[~np.isnan(v)] + 0.0)
    if v.size == 0:
        return
    same(summarize_sorted(v), naive_summarize(v))


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("kinds", [("float", "float"), ("ties", "ties"), ("float", "ties"),
                                   ("special", "float"), ("special", "special")])
@pytest.mark.parametrize("sizes", [(1, 1), (1, 300), (300, 1), (2000, 1500)])
def test_combine_matches_numpy(weighted, kinds, sizes):
    rng = np.random.default_rng(sum(sizes))
    parts = []
    for kind, n in zip(kinds, sizes):
        if weighted:
            s = weighted_summary(rng, n + 1, kind)
        else:
            v = column(rng, n + 1, kind)
            s = naive_summarize(np.sort(v[~np.isnan(v)] + 0.0))
        if s[0].size == 0:
            s = naive_summarize(np.array([0.5]))
        parts.append(s)
    same(combine_summaries(*parts[0], *parts[1]), naive_combine(*parts))
    # and combined again with itself (ranks no longer of one batch)
    c = naive_combine(*parts)
    same(combine_summaries(*c, *parts[0]), naive_combine(c, parts[0]))


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("m", [1, 2, 16, 255])
@pytest.mark.parametrize("n", [1, 3, 300, 4000])
def test_prune_keep_matches_numpy(weighted, m, n):
    rng = np.random.default_rng(n + m)
    if weighted:
        s = weighted_summary(rng, n, "float")
    else:
        s = naive_summarize(np.sort(rng.integers(0, n, size=2 * n).astype(np.float64)))
    same((prune_keep(s[1], s[3], m),), (naive_prune_keep(s, m),))


@pytest.mark.parametrize("weighted", [False, True])
def test_sketch_end_to_end_matches_numpy_twins(weighted):
    """A whole sketch (buffers, levels, prunes, the combined query) fed through the
    kernels equals one fed through the NumPy twins."""
    import oocboost.cache.sketch as sk

    rng = np.random.default_rng(5)
    batches = [rng.normal(size=3000) for _ in range(40)]
    batches[3][::7] = np.nan
    weights = [rng.uniform(0.5, 2.0, size=3000) if weighted else None for _ in batches]

    def feed():
        s = QuantileSketch(eps=0.05, buffer_values=4096)
        for b, w in zip(batches, weights):
            s.update(b, w)
        return s.quantiles(np.linspace(0, 1, 33)), s.rank_error_bound, s.n_entries

    got = feed()
    twin = {"combine_summaries": lambda *a: naive_combine(a[:4], a[4:]),
            "prune_keep": lambda rmin, w, m: naive_prune_keep((None, rmin, None, w), m),
            "summarize_sorted": naive_summarize}
    saved = {name: getattr(sk, name) for name in twin}
    try:
        for name, fn in twin.items():
            setattr(sk, name, fn)
        want = feed()
    finally:
        for name, fn in saved.items():
            setattr(sk, name, fn)
    np.testing.assert_array_equal(got[0], want[0])
    assert got[1:] == want[1:]


@pytest.mark.parametrize("in_place", [False, True])
def test_clean_columns_equals_clean_values_row_by_row(in_place):
    rng = np.random.default_rng(4)
    columns = rng.normal(size=(6, 50))
    columns[1, ::3] = np.nan
    columns[2] = np.nan
    columns[3, [4, 9]] = [np.inf, -np.inf]
    columns[4, 7] = -0.0
    want = [naive_clean(row) for row in columns]
    nan_counts = np.isnan(columns).sum(axis=1)
    inf_counts = np.isinf(columns).sum(axis=1)
    clean = columns if in_place else np.empty_like(columns)
    n_clean, n_missing, n_inf = (np.empty(6, np.int64) for _ in range(3))
    lo, hi = np.empty(6), np.empty(6)
    clean_columns(columns, clean, n_clean, lo, hi, n_missing, n_inf)
    for j, (kept, low, high) in enumerate(want):
        np.testing.assert_array_equal(clean[j, :n_clean[j]], kept)
        assert np.signbit(clean[j, :n_clean[j]]).sum() == np.signbit(kept).sum()
        assert (lo[j], hi[j]) == (low, high)
    np.testing.assert_array_equal(n_missing, nan_counts)
    np.testing.assert_array_equal(n_inf, inf_counts)
