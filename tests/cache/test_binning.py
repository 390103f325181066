"""BinMapper and the binning kernels against plain-numpy references."""
import json
from types import SimpleNamespace

import numpy as np
import pyarrow as pa
import pytest

from oocboost.cache.binning import BinMapper, current_mapper_doc, midpoint_edges
from oocboost.cache.categories import CategoryCounter
from oocboost.cache.edges_text import decode_edges, encode_edges
from oocboost.cache.sketch import QuantileSketch
from oocboost.errors import InputError, ModelError, ParameterError, SchemaError
from oocboost.kernels import binning as kb
from oocboost.kernels.binning import (
    map_categories,
    map_categories_naive,
    map_float_codes,
    map_to_bins,
    map_to_bins_naive,
)

FMAX = np.finfo(np.float64).max


def reference_codes(values, edges, missing_code):
    codes = np.searchsorted(edges, values, side="left")
    return np.where(np.isnan(values), missing_code, codes)


def special_values(n, edges, seed):
    """Random values mixed with NaN, +-inf, the edges themselves and their neighbours."""
    rng = np.random.default_rng(seed)
    pool = np.concatenate([edges, np.nextafter(edges, np.inf), np.nextafter(edges, -np.inf),
                           [np.nan, np.inf, -np.inf, 0.0, -0.0, FMAX, -FMAX]])
    values = rng.normal(scale=3, size=n)
    pick = rng.random(n) < 0.4
    values[pick] = rng.choice(pool, size=int(pick.sum()))
    return values


def make_batch(numeric, categorical, start=0, stop=None):
    columns = list(numeric.values()) + list(categorical.values())
    n = len(columns[0])
    stop = n if stop is None else min(stop, n)
    return SimpleNamespace(
        n_rows=stop - start,
        numeric={k: v[start:stop] for k, v in numeric.items()},
        categorical={k: v[start:stop] for k, v in categorical.items()},
    )


def fit_from_columns(numeric, categorical, max_bin=256, max_categories=None, eps=None):
    sketches = {k: QuantileSketch(eps=eps).update(v) for k, v in numeric.items()}
    counters = {k: CategoryCounter().update(v) for k, v in categorical.items()}
    names = list(numeric) + list(categorical)
    types = ["numeric"] * len(numeric) + ["categorical"] * len(categorical)
    return BinMapper.fit(names, types, sketches, counters, max_bin=max_bin,
                         max_categories=max_categories)


# ---------------------------------------------------------------------------- kernels
@pytest.mark.parametrize("dtype,missing", [(np.uint8, 255), (np.uint16, 999)])
@pytest.mark.parametrize("n_rows", [0, 1, 7, 2000])
@pytest.mark.parametrize("n_edges", [0, 1, 5, 254])
def test_map_to_bins_equals_searchsorted_and_naive_twin(dtype, missing, n_rows, n_edges):
    rng = np.random.default_rng(n_rows + n_edges)
    edges = np.unique(rng.normal(scale=3, size=n_edges))
    values = special_values(n_rows, edges, seed=n_rows)
    fast = np.empty(n_rows, dtype=dtype)
    naive = np.empty(n_rows, dtype=dtype)
    map_to_bins(values, edges, missing, fast)
    map_to_bins_naive(values, edges, missing, naive)
    expected = reference_codes(values, edges, missing)
    np.testing.assert_array_equal(fast, expected)
    np.testing.assert_array_equal(naive, expected)


@pytest.mark.parametrize("dtype,missing", [(np.uint8, 255), (np.uint16, 999)])
def test_grouped_binning_equals_searchsorted_and_binary_search(dtype, missing):
    # Edge counts around the group size (16) and up to the two-level limit (255), several
    # columns in one launch written to scattered rows of ``out``, as transform_batch does.
    counts = [0, 1, 15, 16, 17, 100, 254, kb.GROUPED_MAX_EDGES]
    rng = np.random.default_rng(11)
    cols = [np.unique(rng.normal(scale=3, size=n)) for n in counts]
    cols[-1] = np.arange(kb.GROUPED_MAX_EDGES, dtype=np.float64)  # exactly 255 edges
    n_edges = np.array([len(c) for c in cols], np.int64)
    edges = np.zeros((len(cols), max(n_edges.max(), 1)))
    for j, c in enumerate(cols):
        edges[j, : len(c)] = c
    values = np.stack([special_values(3000, c, seed=j) for j, c in enumerate(cols)])
    feature_index = np.arange(len(cols), dtype=np.int64)[::-1].copy()
    padded, pivots = kb.grouped_edges(edges, n_edges)
    grouped = np.zeros((len(cols), 3000), dtype=dtype)
    binary = np.zeros_like(grouped)
    kb.map_features_to_bins_grouped(values, padded, pivots, feature_index, missing, grouped)
    kb.map_features_to_bins(values, edges, n_edges, feature_index, missing, binary)
    for j, c in enumerate(cols):
        np.testing.assert_array_equal(grouped[feature_index[j]],
                                      reference_codes(values[j], c, missing))
    np.testing.assert_array_equal(grouped, binary)


@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_map_categories_equals_numpy_and_naive_twin(index_dtype):
    rng = np.random.default_rng(1)
    lookup = rng.integers(0, 200, 50).astype(np.uint8)
    indices = rng.integers(-1, 50, 3000).astype(index_dtype)
    fast = np.empty(3000, np.uint8)
    naive = np.empty(3000, np.uint8)
    map_categories(indices, lookup, 255, fast)
    map_categories_naive(indices, lookup, 255, naive)
    expected = np.where(indices < 0, 255, lookup[np.maximum(indices, 0)])
    np.testing.assert_array_equal(fast, expected)
    np.testing.assert_array_equal(naive, expected)


def test_map_float_codes():
    values = np.array([0.0, 2.0, 3.0, -1.0, 1.5, np.nan, np.inf, 1.0])
    out = np.empty(values.shape[0], np.uint16)
    map_float_codes(values, 3, 7, 999, out)
    np.testing.assert_array_equal(out, [0, 2, 7, 7, 7, 999, 7, 1])


# ------------------------------------------------------------------------ numeric fit
def test_exact_edges_are_sklearn_style_midpoints():
    rng = np.random.default_rng(2)
    distinct = np.sort(rng.choice(rng.normal(size=1000), 40, replace=False))
    x = rng.choice(distinct, 5000)
    x[::11] = np.nan
    mapper = fit_from_columns({"x": x}, {})
    expected = (distinct[:-1] + distinct[1:]) * 0.5  # sklearn's _find_binning_thresholds
    np.testing.assert_array_equal(mapper.bin_edges[0], expected)
    assert mapper.n_value_bins[0] == 40
    codes = mapper.transform_numeric(distinct[:, None])[0]
    np.testing.assert_array_equal(codes, np.arange(40))  # one bin per distinct value


def test_infinities_get_own_bins_and_edges_stay_finite():
    x = np.array([-np.inf, -1.0, 0.5, 2.0, np.inf, np.nan, 2.0])
    mapper = fit_from_columns({"x": x}, {})
    edges = mapper.bin_edges[0]
    assert np.isfinite(edges).all()
    np.testing.assert_array_equal(edges, [-FMAX, -0.25, 1.25, FMAX])
    codes = mapper.transform_numeric(x[:, None])[0]
    np.testing.assert_array_equal(codes, [0, 1, 2, 3, 4, 255, 3])


def test_midpoint_edges_of_adjacent_and_huge_values():
    a = 1.0
    b = np.nextafter(a, 2.0)
    edges = midpoint_edges(np.array([-FMAX, a, b, FMAX, np.inf]))
    # rounded midpoints that hit the upper value fall back to the lower one
    np.testing.assert_array_equal(edges, [(-FMAX * 0.5 + a * 0.5), a, FMAX * 0.5 + b * 0.5,
                                          FMAX])
    assert np.all(np.diff(edges) > 0)


@pytest.mark.parametrize("max_bin", [3, 16, 256])
def test_quantile_edges_many_values(max_bin):
    rng = np.random.default_rng(3)
    x = rng.lognormal(size=20000)
    sketch = QuantileSketch(eps=0.01)
    for chunk in np.array_split(x, 50):
        sketch.update(chunk)
    mapper = BinMapper.fit(["x"], ["numeric"], {"x": sketch}, {}, max_bin=max_bin)
    edges = mapper.bin_edges[0]
    assert edges.shape[0] == max_bin - 2 and np.all(np.diff(edges) > 0)
    assert mapper.n_value_bins[0] == max_bin - 1
    # each edge sits at its target rank within the sketch's certified bound
    xs = np.sort(x)
    targets = np.arange(1, max_bin - 1) / (max_bin - 1)
    below = np.searchsorted(xs, edges, "left") / x.size
    at_or_below = np.searchsorted(xs, edges, "right") / x.size
    bound = sketch.rank_error_bound + 1e-12
    assert np.all(below <= targets + bound) and np.all(targets - bound <= at_or_below)


def test_heavy_ties_deduplicate_edges():
    rng = np.random.default_rng(4)
    x = np.where(rng.random(30000) < 0.9, 1.0, rng.normal(size=30000))
    mapper = fit_from_columns({"x": x}, {}, max_bin=64, eps=0.05)
    edges = mapper.bin_edges[0]
    assert np.all(np.diff(edges) > 0) and edges.shape[0] < 62
    codes = mapper.transform_numeric(x[:, None])[0]
    assert np.unique(codes[x == 1.0]).size == 1


@pytest.mark.parametrize("column", [np.full(10, np.nan), np.full(10, 3.5), np.array([])])
def test_constant_or_empty_feature_has_one_bin(column):
    mapper = fit_from_columns({"x": column}, {})
    assert mapper.n_value_bins[0] == 1 and mapper.bin_edges[0].shape == (0,)
    codes = mapper.transform_numeric(column[:, None])[0]
    np.testing.assert_array_equal(codes, np.where(np.isnan(column), 255, 0))


def test_binning_is_idempotent_on_edges():
    rng = np.random.default_rng(5)
    mapper = fit_from_columns({"x": rng.normal(size=5000)}, {}, max_bin=32)
    edges = mapper.bin_edges[0]
    at = mapper.transform_numeric(edges[:, None])[0]
    above = mapper.transform_numeric(np.nextafter(edges, np.inf)[:, None])[0]
    np.testing.assert_array_equal(at, np.arange(edges.size))  # x <= edges[b] -> bin b
    np.testing.assert_array_equal(above, np.arange(1, edges.size + 1))
    # binning values again through the edges of their own bin gives the same codes
    x = rng.normal(size=1000)
    codes = mapper.transform_numeric(x[:, None])[0]
    upper = np.append(edges, np.inf)[codes]
    np.testing.assert_array_equal(mapper.transform_numeric(upper[:, None])[0], codes)


def test_uint16_codes_with_max_bin_1000():
    rng = np.random.default_rng(6)
    many = rng.normal(size=20000)
    distinct = np.arange(900.0)
    few = rng.choice(distinct, 20000)
    few[:5] = np.nan
    mapper = fit_from_columns({"many": many, "few": few}, {}, max_bin=1000, eps=0.01)
    assert mapper.codes_dtype == np.uint16 and mapper.missing_bin == 999
    assert mapper.bin_edges[0].shape[0] == 998
    np.testing.assert_array_equal(mapper.bin_edges[1], distinct[:-1] + 0.5)
    codes = mapper.transform_batch(make_batch({"many": many, "few": few}, {}))
    assert codes.dtype == np.uint16 and codes.flags.c_contiguous
    np.testing.assert_array_equal(codes[0], reference_codes(many, mapper.bin_edges[0], 999))
    np.testing.assert_array_equal(codes[1], np.where(np.isnan(few), 999, few))


# -------------------------------------------------------------------- categorical fit
def test_categories_by_count_then_string():
    values = pa.array(list("bbbaaacdde") + [None, None, None, None])
    mapper = fit_from_columns({}, {"c": values})
    assert mapper.categories[0] == ["a", "b", "d", "c", "e"]
    assert not mapper.has_other[0] and mapper.n_value_bins[0] == 5
    codes = mapper.transform_batch(make_batch({}, {"c": values}))[0]
    np.testing.assert_array_equal(codes, [1, 1, 1, 0, 0, 0, 3, 2, 2, 4, 255, 255, 255, 255])


@pytest.mark.parametrize("max_bin,max_categories,n_kept", [(5, 4, 3), (256, 3, 2),
                                                           (256, 1, 0)])
def test_rare_categories_fold_into_other(max_bin, max_categories, n_kept):
    values = pa.array(list("aaaaaabbbbbccccdddeef") + [None])
    mapper = fit_from_columns({}, {"c": values}, max_bin=max_bin,
                              max_categories=max_categories)
    ranked = list("abcdef")
    assert mapper.has_other[0] and mapper.categories[0] == ranked[:n_kept]
    other = n_kept
    assert mapper.n_value_bins[0] == n_kept + 1
    batch = pa.array(["a", "b", "c", "f", "zzz", None])
    codes = mapper.transform_batch(make_batch({}, {"c": batch}))[0]
    expected = [ranked.index(v) if v in ranked[:n_kept] else other for v in "abcfz"]
    np.testing.assert_array_equal(codes, expected + [max_bin - 1])


@pytest.mark.parametrize("max_bin", [5, 256])
def test_categories_beyond_max_bin_are_kept_wide(max_bin):
    """Whatever max_bin is, every category keeps a code: category k is coded k below the
    missing code and k + 1 from it on, so the missing code stays max_bin - 1."""
    n_categories = max_bin + 40
    names = [f"k{i:04d}" for i in range(n_categories)]
    # category i appears n_categories - i times, so the ranking is the naming order
    values = pa.array([n for i, n in enumerate(names) for _ in range(n_categories - i)]
                      + [None])
    mapper = fit_from_columns({}, {"c": values}, max_bin=max_bin)
    assert mapper.categories[0] == names and not mapper.has_other[0]
    assert mapper.n_value_bins[0] == n_categories + 1
    assert mapper.codes_dtype == (np.uint16 if n_categories >= 256 else np.uint8)
    batch = pa.array(names + ["unseen", None])
    codes = mapper.transform_batch(make_batch({}, {"c": batch}))[0]
    index = np.arange(n_categories)
    expected = np.where(index >= max_bin - 1, index + 1, index)
    np.testing.assert_array_equal(codes, np.r_[expected, max_bin - 1, max_bin - 1])
    assert max_bin - 1 not in codes[:n_categories]
    np.testing.assert_array_equal(mapper.encode_categories(0, batch)[:n_categories],
                                  expected)
    floats = np.r_[expected, n_categories + 1, np.nan].astype(float)[:, None]
    np.testing.assert_array_equal(mapper.transform_numeric(floats)[0],
                                  np.r_[expected, max_bin - 1, max_bin - 1])
    names_by_code = mapper.category_names(0)
    assert names_by_code[max_bin - 1] is None
    assert [names_by_code[c] for c in expected] == names


def test_more_than_max_categories_fold_into_other():
    """Past MAX_CATEGORIES the rarest categories fold into "other", which the summary
    names (n_distinct_seen against n_categories)."""
    from oocboost.common import MAX_CATEGORIES

    n = MAX_CATEGORIES + 10
    values = pa.array([f"v{i:06d}" for i in range(n)] + ["v000000", "v000001"])
    mapper = fit_from_columns({}, {"c": values})
    assert mapper.has_other[0] and len(mapper.categories[0]) == MAX_CATEGORIES - 1
    assert mapper.n_value_bins[0] == MAX_CATEGORIES + 1
    assert mapper.categories[0][:2] == ["v000000", "v000001"]
    batch = pa.array(["v000000", f"v{n - 1:06d}"])
    codes = mapper.transform_batch(make_batch({}, {"c": batch}))[0]
    assert codes.tolist() == [0, MAX_CATEGORIES]


def test_unseen_categories_are_missing_without_other():
    mapper = fit_from_columns({}, {"c": pa.array(["x", "y", "y"])})
    codes = mapper.transform_batch(make_batch({}, {"c": pa.array(["y", "new", None, "x"])}))
    np.testing.assert_array_equal(codes[0], [0, 255, 255, 1])
    np.testing.assert_array_equal(
        mapper.encode_categories("c", np.array(["x", "new", None, np.nan], dtype=object)),
        [1, np.nan, np.nan, np.nan])


def test_truncated_counter_gets_other_code():
    counter = CategoryCounter(capacity=2).update(pa.array(list("aaaabbbcd")))
    mapper = BinMapper.fit(["c"], ["categorical"], {}, {"c": counter})
    assert counter.truncated and mapper.has_other[0]
    assert mapper.encode_categories(0, pa.array(["d"]))[0] == mapper.n_value_bins[0] - 1


def test_encode_categories_then_transform_numeric_equals_transform_batch():
    rng = np.random.default_rng(7)
    fit_values = pa.array(rng.choice(list("abcdefghij"), 500).tolist())
    x = rng.normal(size=300)
    x[::9] = np.nan
    new = rng.choice(list("abcdefghijklm") + [None], 300).tolist()
    mapper = fit_from_columns({"x": rng.normal(size=500)}, {"c": fit_values}, max_bin=8,
                              max_categories=7)
    assert mapper.has_other[1]
    codes = mapper.transform_batch(make_batch({"x": x}, {"c": pa.array(new)}))
    as_floats = mapper.encode_categories(1, np.array(new, dtype=object))
    np.testing.assert_array_equal(mapper.transform_numeric(np.column_stack([x, as_floats])),
                                  codes)


# ------------------------------------------------------------------ batches and JSON
@pytest.fixture(scope="module")
def mixed_data():
    rng = np.random.default_rng(8)
    n = 400
    a = special_values(n, np.array([0.0, 1.0]), seed=9)
    b = rng.integers(0, 5, n).astype(float)
    c = pa.array([None if r < 0.1 else f"k{int(r * 40)}" for r in rng.random(n)])
    numeric, categorical = {"a": a, "b": b}, {"c": c}
    return numeric, categorical, fit_from_columns(numeric, categorical, max_bin=16)


@pytest.mark.parametrize("batch_rows", [1, 7, None])
def test_transform_independent_of_batch_split(mixed_data, batch_rows):
    numeric, categorical, mapper = mixed_data
    whole = mapper.transform_batch(make_batch(numeric, categorical))
    n = whole.shape[1]
    step = n if batch_rows is None else batch_rows
    parts = [mapper.transform_batch(make_batch(numeric, categorical, i, i + step))
             for i in range(0, n, step)]
    np.testing.assert_array_equal(np.concatenate(parts, axis=1), whole)
    np.testing.assert_array_equal(whole[0], reference_codes(numeric["a"],
                                                            mapper.bin_edges[0], 15))


def test_json_round_trip(mixed_data):
    numeric, categorical, mapper = mixed_data
    text = json.dumps(mapper.to_dict(), allow_nan=False)
    restored = BinMapper.from_dict(json.loads(text))
    assert restored == mapper
    assert restored.is_categorical.tolist() == [False, False, True]
    np.testing.assert_array_equal(restored.n_value_bins, mapper.n_value_bins)
    batch = make_batch(numeric, categorical)
    np.testing.assert_array_equal(restored.transform_batch(batch),
                                  mapper.transform_batch(batch))
    changed = mapper.to_dict()
    edges = decode_edges(changed["features"][0]["edges"], "a")
    edges[1] += 1e-9
    changed["features"][0]["edges"] = encode_edges(edges)
    assert BinMapper.from_dict(changed) != mapper


def test_version_1_descriptions_still_read(mixed_data):
    """Edges as lists of numbers (version 1, caches and models written before base64
    edges) give the same mapper, and are rewritten as the current description."""
    mapper = mixed_data[2]
    current = mapper.to_dict()
    old = json.loads(json.dumps({
        **current, "version": 1,
        "features": [{**feat, "edges": mapper.bin_edges[f].tolist()}
                     for f, feat in enumerate(current["features"])]}))
    assert BinMapper.from_dict(old) == mapper
    assert current_mapper_doc(old) == current
    assert current_mapper_doc(current) is current
    assert isinstance(current["features"][0]["edges"], str)
    np.testing.assert_array_equal(decode_edges(current["features"][0]["edges"], "a"),
                                  mapper.bin_edges[0])


@pytest.mark.parametrize("mutate,match", [
    (lambda d: d.update(format="other"), "expected"),
    (lambda d: d.update(version=3), "version 1 or 2"),
    (lambda d: d["features"][0].pop("edges"), "malformed"),
    (lambda d: d["features"][0].update(edges=encode_edges(np.array([2.0, 1.0]))),
     "strictly increasing"),
    (lambda d: d["features"][0].update(edges=[2.0, 1.0]), "strictly increasing"),
    (lambda d: d["features"][0].update(edges="not base64!"), "'a': edges are not base64"),
    (lambda d: d["features"][0].update(edges="AAAA"), "3 bytes, not a whole number"),
    (lambda d: d["features"][0].update(edges=encode_edges(np.array([0.0, np.nan]))),
     "finite"),
    (lambda d: d["features"][0].update(edges=["x"]), "edges must be numbers"),
    (lambda d: d["features"][0].update(edges=3), "base64 text or a list"),
    (lambda d: d.update(max_bin=3), "value bins"),
])
def test_from_dict_rejects_malformed(mixed_data, mutate, match):
    state = json.loads(json.dumps(mixed_data[2].to_dict()))
    mutate(state)
    with pytest.raises(ModelError, match=match):
        BinMapper.from_dict(state)


def test_user_errors(mixed_data):
    numeric, categorical, mapper = mixed_data
    with pytest.raises(SchemaError, match="'c'"):
        mapper.transform_batch(make_batch(numeric, {}))
    short = make_batch(numeric, categorical)
    short.numeric["a"] = short.numeric["a"][:-1]
    with pytest.raises(InputError, match="'a' has 399 rows"):
        mapper.transform_batch(short)
    with pytest.raises(InputError, match="3 columns"):
        mapper.transform_numeric(np.zeros((4, 2)))
    with pytest.raises(ParameterError, match="not categorical"):
        mapper.encode_categories("a", np.array(["x"], dtype=object))
    with pytest.raises(ParameterError, match="type must be"):
        BinMapper.fit(["x"], ["text"], {}, {})
    with pytest.raises(ParameterError, match="no quantile sketch"):
        BinMapper.fit(["x"], ["numeric"], {}, {})
    with pytest.raises(ParameterError, match="max_bin"):
        BinMapper.fit([], [], {}, {}, max_bin=2)


def test_opening_a_categorical_cache_does_not_import_pandas(tmp_path):
    """The mapper's Arrow category arrays are made when raw strings are encoded, not when
    a cache is opened: building them imports pandas (0.3 s, 40 MiB in every training
    process)."""
    import subprocess
    import sys

    import oocboost

    rng = np.random.default_rng(0)
    table = pa.table({"c": pa.array([f"k{i}" for i in rng.integers(0, 400, 3000)]),
                      "x": rng.normal(size=3000), "y": rng.normal(size=3000)})
    path = tmp_path / "c.oocb"
    oocboost.build_cache(table, path, label="y", quiet=True)
    # what training reads of a cache (training itself would compile its kernels in a
    # fresh process: 20 s of a cold test run)
    script = (f"import sys, oocboost; c = oocboost.Cache({str(path)!r}); "
              f"[b.stored_codes for b in c.iter_blocks()]; "
              f"print('pandas' in sys.modules, c.bin_mapper.n_value_bins[0])")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["False", "401"]
    # and the strings are still encoded when asked
    mapper = oocboost.Cache(path).bin_mapper
    np.testing.assert_array_equal(mapper.encode_categories(0, pa.array(["k0", "zz", None])),
                                  [mapper.categories[0].index("k0"), np.nan, np.nan])
