"""QuantileSketch and CategoryCounter against exact references built with np.sort."""
import collections
import json

import numpy as np
import pyarrow as pa
import pytest

from oocboost.cache.categories import CategoryCounter
from oocboost.cache.sketch import (
    DESIGN_LEVELS,
    QuantileSketch,
    _combine,
    _exact_summary,
    _max_gap,
    _prune,
    _size,
    _total_weight,
)
from oocboost.errors import InputError, ParameterError

QS = np.linspace(0.0, 1.0, 257)
TOL = 1e-9  # relative slack for float sums taken in different orders


def make_batches(kind, n_batches, batch_rows, seed=0):
    """Deterministic (values, weights) batches of one distribution."""
    rng = np.random.default_rng(seed)
    batches = []
    for _ in range(n_batches):
        if kind == "uniform":
            x, w = rng.uniform(-5, 5, batch_rows), None
        elif kind == "ties":  # few very heavy values plus a continuous tail
            x = np.where(rng.random(batch_rows) < 0.7,
                         rng.integers(0, 5, batch_rows).astype(float),
                         rng.normal(size=batch_rows))
            w = None
        elif kind == "lognormal":
            x, w = rng.lognormal(0, 2, batch_rows), None
        elif kind == "weighted":
            x = rng.normal(size=batch_rows)
            w = rng.exponential(size=batch_rows) * (x > 0.5) + 0.01
        elif kind == "integers":
            x, w = rng.integers(0, 3000, batch_rows).astype(float), None
        else:
            raise ValueError(kind)
        x[rng.random(batch_rows) < 0.05] = np.nan
        batches.append((x, w))
    return batches


def concat(batches):
    x = np.concatenate([b[0] for b in batches])
    w = np.concatenate([np.ones(len(b[0])) if b[1] is None else b[1] for b in batches])
    keep = ~np.isnan(x)
    return x[keep], w[keep]


def true_ranks(x, w, v):
    """Exact weighted (R-, R+) of each value of v: weight below v and at or below v."""
    order = np.argsort(x, kind="stable")
    xs, cw = x[order], np.concatenate(([0.0], np.cumsum(w[order])))
    return cw[np.searchsorted(xs, v, "left")], cw[np.searchsorted(xs, v, "right")]


def observed_rank_error(sketch, x, w):
    v = sketch.quantiles(QS)
    lo, hi = true_ranks(x, w, v)
    r = QS * w.sum()
    return float(np.maximum(np.maximum(lo - r, r - hi), 0.0).max() / w.sum())


def feed(batches, eps, max_exact=255):
    sketch = QuantileSketch(eps=eps, max_exact=max_exact, buffer_values=0)
    for x, w in batches:
        sketch.update(x, w)
    return sketch


def assert_within_bound(sketch, x, w):
    assert sketch.total_weight == pytest.approx(w.sum(), rel=TOL)
    assert sketch.min == x.min() and sketch.max == x.max()
    bound = sketch.rank_error_bound
    assert observed_rank_error(sketch, x, w) <= bound + TOL
    assert bound <= sketch.a_priori_error_bound + TOL
    assert sketch.a_priori_error_bound <= sketch.eps  # fewer than 2**14 batches
    # answers are data values
    assert np.isin(sketch.quantiles(QS), x).all()


@pytest.mark.parametrize("kind", ["uniform", "ties", "lognormal", "weighted", "integers"])
@pytest.mark.parametrize("eps", [0.05, 0.01])
def test_rank_error_within_bound_500_batches(kind, eps):
    batches = make_batches(kind, 500, 100, seed=1)
    sketch = feed(batches, eps)
    x, w = concat(batches)
    assert not sketch.is_exact  # the bound is actually exercised
    assert_within_bound(sketch, x, w)


def test_summary_entries_stay_valid():
    """Each entry's (rmin, rmax, w) brackets the true ranks and weight of its value."""
    batches = make_batches("ties", 300, 64, seed=2)
    sketch = feed(batches, 0.05)
    x, w = concat(batches)
    values, rmin, rmax, wmin = sketch._summary()
    lo, hi = true_ranks(x, w, values)
    slack = TOL * w.sum()
    assert np.all(rmin <= lo + slack)
    assert np.all(hi <= rmax + slack)
    assert np.all(wmin <= hi - lo + slack)


@pytest.mark.parametrize("m", [10, 97, 400])
@pytest.mark.parametrize("kind", ["uniform", "ties", "weighted"])
def test_one_prune_adds_at_most_w_over_m_and_combine_adds_gaps(m, kind):
    """The two steps of the proof: G(prune(S)) <= G(S) + W/m, G(A + B) <= G(A) + G(B)."""
    (xa, wa), (xb, wb) = make_batches(kind, 2, 3000, seed=m)
    a = _exact_summary(*concat([(xa, wa)]))
    b = _exact_summary(*concat([(xb, wb)]))
    assert _max_gap(a) <= TOL * _total_weight(a)  # exact up to float rounding
    pa_, dropped = _prune(a, m)
    pb_, _ = _prune(b, m)
    assert dropped and _size(pa_) <= m + 2
    total = _total_weight(a)
    assert _max_gap(pa_) <= total / m * (1 + TOL)
    assert _max_gap(pa_) >= 0.5 * total / m  # the bound is nearly reached: it is tight
    combined = _combine(pa_, pb_)
    assert _max_gap(combined) <= (_max_gap(pa_) + _max_gap(pb_)) * (1 + TOL)
    again, _ = _prune(combined, m)
    assert _max_gap(again) <= _max_gap(combined) + _total_weight(combined) / m * (1 + TOL)


@pytest.mark.parametrize("n_parts", [2, 3, 7])
@pytest.mark.parametrize("order", ["sequential", "reversed", "tree"])
def test_merge_orders_stay_within_bound(n_parts, order):
    batches = make_batches("lognormal", 500, 80, seed=3)
    parts = [feed(batches[i::n_parts], 0.02) for i in range(n_parts)]
    if order == "reversed":
        parts = parts[::-1]
    if order == "tree":
        while len(parts) > 1:
            parts = [parts[i].merge(parts[i + 1]) if i + 1 < len(parts) else parts[i]
                     for i in range(0, len(parts), 2)]
        merged = parts[0]
    else:
        merged = parts[0]
        for part in parts[1:]:
            merged.merge(part)
    x, w = concat(batches)
    assert merged.n_batches == 500
    assert_within_bound(merged, x, w)
    single = feed(batches, 0.02)
    # both answer within their bounds, so they agree within the sum of the bounds
    lo_m, hi_m = true_ranks(x, w, merged.quantiles(QS))
    lo_s, hi_s = true_ranks(x, w, single.quantiles(QS))
    gap = np.maximum(np.maximum(lo_m - hi_s, lo_s - hi_m), 0) / w.sum()
    assert gap.max() <= merged.rank_error_bound + single.rank_error_bound + TOL


def test_merge_leaves_other_unchanged_and_rejects_other_sizes():
    a = feed(make_batches("uniform", 20, 50, seed=4), 0.05)
    b = feed(make_batches("uniform", 20, 50, seed=5), 0.05)
    before = json.dumps(b.to_dict())
    a.merge(b)
    assert json.dumps(b.to_dict()) == before
    with pytest.raises(ParameterError, match="summary sizes"):
        a.merge(QuantileSketch(eps=0.01, buffer_values=0))


@pytest.mark.parametrize("n_batches", [1, 13, 200])
def test_exact_mode_keeps_distinct_values_and_weights(n_batches):
    rng = np.random.default_rng(6)
    batches = [(rng.integers(-20, 20, 31).astype(float) / 4,
                rng.integers(1, 5, 31).astype(float)) for _ in range(n_batches)]
    batches[0][0][:3] = [np.inf, -np.inf, np.nan]
    halves = [feed(batches[::2], 0.5), feed(batches[1::2], 0.5)]
    sketch = halves[0].merge(halves[1]) if n_batches > 1 else halves[0]
    x, w = concat(batches)
    ref_values, inverse = np.unique(x, return_inverse=True)
    ref_weights = np.bincount(inverse, weights=w)
    assert sketch.is_exact
    values, weights = sketch.distinct_values()
    np.testing.assert_array_equal(values, ref_values)
    np.testing.assert_array_equal(weights, ref_weights)  # integer weights: exact sums
    assert sketch.rank_error_bound == 0.0
    assert observed_rank_error(sketch, x, w) == 0.0


def test_exact_up_to_max_exact_distinct_values_then_summarised():
    rng = np.random.default_rng(7)
    sketch = QuantileSketch(eps=0.5, max_exact=255, buffer_values=0)  # m = max(28, 255) = 255
    few = np.arange(255.0)
    for _ in range(50):
        sketch.update(rng.permutation(few)[:100])
    assert sketch.is_exact and sketch.distinct_values()[0].shape == (255,)
    for _ in range(50):
        sketch.update(rng.uniform(size=100))
    assert not sketch.is_exact
    with pytest.raises(ParameterError, match="exact"):
        sketch.distinct_values()


def test_default_size_and_memory_stays_bounded():
    assert QuantileSketch(buffer_values=0).m == int(np.ceil(DESIGN_LEVELS * 1024))
    rng = np.random.default_rng(8)
    sketch = QuantileSketch(eps=0.1, buffer_values=0)
    for i in range(2000):
        sketch.update(rng.normal(size=64))
        if i % 250 == 0:
            # one summary of <= m + 2 entries per level, levels <= log2(batches) + 1
            assert sketch.n_entries <= len(sketch._levels) * (sketch.m + 2)
    assert len(sketch._levels) == int(np.log2(2000)) + 1
    assert sketch.a_priori_error_bound == len(sketch._levels) / sketch.m


def test_weights_equal_repeated_rows_and_zero_weights_ignored():
    rng = np.random.default_rng(9)
    weighted, repeated, padded = (QuantileSketch(eps=0.05, buffer_values=0) for _ in range(3))
    for _ in range(100):
        x = rng.normal(size=40)
        reps = rng.integers(1, 4, 40)
        weighted.update(x, reps.astype(float))
        repeated.update(np.repeat(x, reps))
        padded.update(np.concatenate([x, rng.normal(size=5)]),
                      np.concatenate([reps, np.zeros(5)]))
    np.testing.assert_array_equal(weighted.quantiles(QS), repeated.quantiles(QS))
    np.testing.assert_array_equal(weighted.quantiles(QS), padded.quantiles(QS))
    assert weighted.rank_error_bound == repeated.rank_error_bound


def test_infinities_are_values_and_nan_is_ignored():
    sketch = QuantileSketch(buffer_values=0).update(
        np.array([np.nan, 1.0, -np.inf, np.inf, 2.0, np.nan])
    )
    assert sketch.total_weight == 4.0
    assert sketch.min == -np.inf and sketch.max == np.inf
    np.testing.assert_array_equal(sketch.quantiles([0.0, 0.3, 0.6, 1.0]),
                                  [-np.inf, 1.0, 2.0, np.inf])
    empty = QuantileSketch(buffer_values=0).update(np.array([np.nan]))
    assert empty.total_weight == 0.0 and np.isnan(empty.min)
    assert np.isnan(empty.quantiles([0.5])).all()


def test_bad_input_raises():
    with pytest.raises(InputError, match="row 1"):
        QuantileSketch(buffer_values=0).update(np.ones(3), np.array([1.0, -1.0, 1.0]))
    with pytest.raises(InputError, match="one weight per value"):
        QuantileSketch(buffer_values=0).update(np.ones(3), np.ones(2))
    with pytest.raises(ParameterError, match="eps"):
        QuantileSketch(eps=0, buffer_values=0)
    with pytest.raises(ParameterError, match=r"\[0, 1\]"):
        QuantileSketch(buffer_values=0).update(np.ones(3)).quantiles([1.5])


def test_json_round_trip_then_same_future():
    batches = make_batches("lognormal", 60, 50, seed=10)
    batches[0][0][:2] = [np.inf, -np.inf]
    sketch = feed(batches[:40], 0.05)
    text = json.dumps(sketch.to_dict(), allow_nan=False)
    restored = QuantileSketch.from_dict(json.loads(text))
    for x, w in batches[40:]:
        sketch.update(x, w)
        restored.update(x, w)
    np.testing.assert_array_equal(restored.quantiles(QS), sketch.quantiles(QS))
    assert restored.rank_error_bound == sketch.rank_error_bound
    assert (restored.min, restored.max) == (-np.inf, np.inf)
    with pytest.raises(ParameterError, match="malformed"):
        QuantileSketch.from_dict({"eps": 0.1})
    state = json.loads(text)
    state["levels"][-1]["rmin"].pop()
    with pytest.raises(ParameterError, match="not a sorted summary"):
        QuantileSketch.from_dict(state)


# ------------------------------------------------------------------- CategoryCounter
def random_categories(n, n_categories, seed, null_rate=0.1):
    rng = np.random.default_rng(seed)
    # Zipf-like frequencies so that the order is meaningful
    p = 1.0 / np.arange(1, n_categories + 1)
    keys = rng.choice([f"c{i:03d}" for i in range(n_categories)], size=n, p=p / p.sum())
    return [None if r < null_rate else k for k, r in zip(keys, rng.random(n))]


@pytest.mark.parametrize("batch_rows", [1, 7, 500])
def test_counts_equal_counter(batch_rows):
    values = random_categories(500, 30, seed=11)
    counter = CategoryCounter()
    for i in range(0, len(values), batch_rows):
        counter.update(pa.array(values[i:i + batch_rows], type=pa.string()))
    expected = collections.Counter(v for v in values if v is not None)
    assert counter.counts() == dict(expected)
    assert not counter.truncated and counter.n_distinct_lower_bound == len(expected)


def test_weighted_counts_and_input_kinds():
    values = np.array(["b", None, "a", "b", "", np.nan, "a"], dtype=object)
    weights = np.array([1.0, 5.0, 0.5, 2.0, 3.0, 9.0, 0.0])
    counter = CategoryCounter().update(values, weights)
    assert counter.counts() == {"b": 3.0, "a": 0.5, "": 3.0}
    chunked = pa.chunked_array([["x", "y"], [None, "x"]]).dictionary_encode()
    assert CategoryCounter().update(chunked).counts() == {"x": 2, "y": 1}
    with pytest.raises(InputError, match="row 0"):
        CategoryCounter().update(pa.array(["a"]), np.array([-1.0]))


def test_most_common_orders_by_count_then_string():
    counter = CategoryCounter().update(pa.array(list("ccbbaadde")))
    assert counter.most_common() == [("a", 2), ("b", 2), ("c", 2), ("d", 2), ("e", 1)]


def test_merge_equals_one_stream():
    values = random_categories(900, 40, seed=12)
    one = CategoryCounter().update(pa.array(values))
    parts = [CategoryCounter().update(pa.array(values[i::3])) for i in range(3)]
    parts[0].merge(parts[1]).merge(parts[2])
    assert parts[0].counts() == one.counts()


@pytest.mark.parametrize("capacity", [8, 20])
@pytest.mark.parametrize("batch_rows", [50, 3000])
def test_bounded_capacity_keeps_heavy_hitters(capacity, batch_rows):
    values = random_categories(3000, 400, seed=13, null_rate=0.0)
    counter = CategoryCounter(capacity=capacity)
    for i in range(0, len(values), batch_rows):
        counter.update(pa.array(values[i:i + batch_rows]))
    true = collections.Counter(values)
    got = counter.counts()
    assert counter.truncated and len(got) <= capacity
    assert counter.undercount <= len(values) / (capacity + 1)
    assert capacity <= counter.n_distinct_lower_bound <= len(true)
    for key, count in got.items():
        assert true[key] - counter.undercount <= count <= true[key]
    for key, count in true.items():
        if count > counter.undercount:
            assert key in got


def test_counter_json_round_trip_and_default_capacity():
    counter = CategoryCounter(max_categories=4).update(pa.array(["a", "b", None, "b"]))
    assert counter.capacity == 4 * 64
    restored = CategoryCounter.from_dict(json.loads(json.dumps(counter.to_dict())))
    assert restored.counts() == counter.counts() and restored.capacity == counter.capacity
    with pytest.raises(ParameterError, match="malformed"):
        CategoryCounter.from_dict({"keys": []})


def test_buffering_gives_the_same_sketch_as_one_batch():
    rng = np.random.default_rng(9)
    values = rng.lognormal(size=100_000)
    buffered = QuantileSketch(buffer_values=40_000)
    for chunk in np.array_split(values, 37):
        buffered.update(chunk)
    qs = np.linspace(0, 1, 101)
    assert buffered.n_batches == 3  # 40k, 40k and the 20k flushed by the query
    exact = np.sort(values)
    got = buffered.quantiles(qs)
    ranks = np.searchsorted(exact, got, side="right") / len(values)
    assert np.all(np.abs(ranks - qs) <= buffered.rank_error_bound + 1 / len(values))
