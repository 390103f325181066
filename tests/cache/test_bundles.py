"""Exclusive feature bundling at build time (cache/bundles.py): the non-zero sample, the
greedy bundling against a naive twin, bundled caches that decode to the unbundled
cache's codes, the conflict counts, and the manifest entry checked field by field."""
import json

import numpy as np
import pytest

import oocboost
from oocboost.cache.bundles import (
    FeatureBundles,
    NonzeroSample,
    check_bundle_params,
    find_bundles,
)
from oocboost.errors import CacheError, ParameterError
from tests.cache.test_store import _edit_manifest


def one_hot_table(rng, n_rows, blocks=(12, 7), n_dense=2, missing_in=None):
    """Dense normal columns, then one-hot blocks (one 1 per block and row): features of a
    block never overlap, features of different blocks always may."""
    columns = {f"x{j}": rng.normal(size=n_rows) for j in range(n_dense)}
    for b, width in enumerate(blocks):
        hot = rng.integers(0, width, n_rows)
        for k in range(width):
            columns[f"b{b}_{k}"] = (hot == k).astype(np.float64)
    if missing_in is not None:
        columns[missing_in][::97] = np.nan
    y = (columns["x0"] + columns[f"b0_{1}"] - columns[f"b{len(blocks) - 1}_0"] > 0.3)
    return columns, y.astype(np.float64)


def as_matrix(columns):
    return np.column_stack(list(columns.values())), list(columns)


def test_nonzero_sample_over_uneven_batches():
    rng = np.random.default_rng(0)
    values = rng.normal(size=(2, 1000)) * (rng.random((2, 1000)) < 0.3)
    values[1, 5] = np.nan
    sample = NonzeroSample(["a", "b"], n_rows=700)
    start = 0
    for size in (3, 5, 1, 250, 13, 600):
        sample.update({"a": values[0, start:start + size], "b": values[1, start:start + size]},
                      size)
        start += size
    assert sample.n_rows == 700
    bits = np.unpackbits(sample.bits, axis=1, bitorder="little")[:, :700].astype(bool)
    np.testing.assert_array_equal(bits, values[:, :700] != 0)
    assert not np.unpackbits(sample.bits, axis=1, bitorder="little")[:, 700:].any()
    np.testing.assert_array_equal(sample.counts(), (values[:, :700] != 0).sum(axis=1))


def naive_greedy(nonzero, order, need, max_code, allowed):
    """LightGBM's greedy bundling with Python sets: each feature, most non-zero rows
    first, joins the first bundle it fits (codes, conflicts) or starts one."""
    bundles = []       # [members, rows, conflicts, codes]
    for f in order:
        rows = set(np.flatnonzero(nonzero[f]).tolist())
        for b in bundles:
            overlap = len(rows & b[1])
            if b[2] + overlap <= allowed and b[3] + need[f] <= max_code:
                b[0].append(f)
                b[1] |= rows
                b[2] += overlap
                b[3] += need[f]
                break
        else:
            bundles.append([[f], rows, 0, need[f]])
    return sorted(sorted(b[0]) for b in bundles if len(b[0]) > 1)


@pytest.mark.parametrize("rate", [0.0, 0.02, 0.3])
@pytest.mark.parametrize("max_bin", [16, 256])
def test_find_bundles_equals_the_naive_greedy(tmp_path, rate, max_bin):
    rng = np.random.default_rng(int(rate * 100) + max_bin)
    n = 3000
    columns = {}
    # 20 features that are exclusive but for a few rows, 10 independent ones
    owner = rng.integers(-1, 20, n)
    for j in range(30):
        if j < 20:
            on = (owner == j) | (rng.random(n) < 0.0005)
        else:
            on = rng.random(n) < rng.choice([0.01, 0.05, 0.2, 0.9])
        columns[f"s{j}"] = np.where(on, rng.integers(1, 4, n), 0.0)
    columns["m"] = np.where(rng.random(n) < 0.02, 1.0, 0.0)
    columns["m"][7] = np.nan                        # missing: never bundled
    X, names = as_matrix(columns)
    cache = oocboost.build_cache(X, tmp_path / "c", feature_names=names, max_bin=max_bin,
                                 max_conflict_rate=rate, quiet=True)
    mapper = cache.bin_mapper
    nonzero = X.T[:30] != 0
    need = [int(mapper.n_value_bins[f]) - 1 for f in range(30)]
    order = sorted(range(30), key=lambda f: (-nonzero[f].sum(), f))
    want = naive_greedy(nonzero, order, need, max_bin - 2, int(rate * n))
    got = [] if cache.bundles is None else sorted(
        [f for f, _ in b] for b in cache.bundles.bundles)
    assert got == want
    assert want, "the data should bundle"
    # default bins are the bins of 0.0
    for b in cache.bundles.bundles:
        for f, d in b:
            assert d == int(np.searchsorted(mapper.bin_edges[f], 0.0, side="left"))


@pytest.mark.parametrize("backend", ["arrow", "hdf5"])
@pytest.mark.parametrize("block_rows", [None, 333])
def test_bundled_cache_decodes_to_the_unbundled_codes(tmp_path, backend, block_rows):
    rng = np.random.default_rng(1)
    columns, y = one_hot_table(rng, 2000, missing_in="b0_3")
    X, names = as_matrix(columns)
    common = dict(label=y, feature_names=names, backend=backend, block_rows=block_rows,
                  quiet=True)
    bundled = oocboost.build_cache(X, tmp_path / "b", **common)
    plain = oocboost.build_cache(X, tmp_path / "p", enable_bundle=False, **common)
    assert plain.bundles is None and plain.n_columns == plain.n_features
    b = bundled.bundles
    members = [[names[f] for f, _ in bundle] for bundle in b.bundles]
    # each one-hot block is one bundle; the column with missing values is left out
    assert sorted(members) == [[f"b0_{k}" for k in range(12) if k != 3],
                               [f"b1_{k}" for k in range(7)]]
    assert bundled.n_columns == 2 + 1 + 2
    assert bundled.n_features == plain.n_features
    assert bundled.nbytes_raw < plain.nbytes_raw
    assert list(b.conflicts) == [0] * bundled.n_columns
    for i in range(plain.n_blocks):
        stored = bundled.read_block(i)
        assert stored.stored_codes.shape[0] == 5
        np.testing.assert_array_equal(stored.codes, plain.read_block(i).codes)
    with open(tmp_path / "b" / "manifest.json") as f:
        m = json.load(f)
    assert m["n_columns"] == 5 and m["bundles"]["conflicts"] == [0, 0]


def test_conflicts_past_the_sample_are_counted(tmp_path):
    rng = np.random.default_rng(2)
    n = 120_000                       # past the 100,000 sampled rows
    a = np.zeros(n)
    b = np.zeros(n)
    a[rng.random(n) < 0.3] = 1.0
    b[(a == 0) & (rng.random(n) < 0.3)] = 2.0
    late = np.arange(110_000, 110_050)
    a[late], b[late] = 1.0, 2.0       # overlap the sample did not see
    X = np.column_stack([a, b, rng.normal(size=n)])
    cache = oocboost.build_cache(X, tmp_path / "c", quiet=True)
    assert [[f for f, _ in bundle] for bundle in cache.bundles.bundles] == [[0, 1]]
    assert cache.bundles.conflicts.sum() == 50
    assert cache.manifest["bundles"]["conflicts"] == [50]
    codes = np.concatenate([cache.read_block(i).codes for i in range(cache.n_blocks)],
                           axis=1)
    # the later feature of the bundle keeps its bin in a conflicting row
    assert (codes[0, late] == 0).all() and (codes[1, late] == 1).all()
    assert (codes[0, :110_000] == (a[:110_000] > 0)).all()


def test_nothing_to_bundle_and_reference_builds(tmp_path):
    rng = np.random.default_rng(3)
    dense = rng.normal(size=(500, 4))
    assert oocboost.build_cache(dense, tmp_path / "d", quiet=True).bundles is None
    columns, y = one_hot_table(rng, 500)
    X, names = as_matrix(columns)
    train = oocboost.build_cache(X, tmp_path / "t", label=y, feature_names=names, quiet=True)
    assert train.bundles is not None
    valid = oocboost.build_cache(X[:100], tmp_path / "v", label=y[:100], feature_names=names,
                                 reference=train, quiet=True)
    assert valid.bundles is None
    np.testing.assert_array_equal(valid.read_block(0).codes,
                                  train.read_block(0).codes[:, :100])


def test_bundle_params_are_checked(tmp_path):
    assert check_bundle_params(True, 0) == (True, 0.0)
    for bad in ("yes", 1, None):
        with pytest.raises(ParameterError, match="enable_bundle"):
            check_bundle_params(bad, 0.0)
    for bad in (-0.1, 1.0, "0.1", True):
        with pytest.raises(ParameterError, match="max_conflict_rate"):
            check_bundle_params(True, bad)
    with pytest.raises(ParameterError, match="max_conflict_rate"):
        oocboost.build_cache(np.zeros((10, 2)), tmp_path / "c", max_conflict_rate=2)


def _bundled_cache(tmp_path):
    rng = np.random.default_rng(4)
    columns, y = one_hot_table(rng, 400, blocks=(5,), n_dense=1)
    X, names = as_matrix(columns)
    oocboost.build_cache(X, tmp_path / "c", label=y, feature_names=names, quiet=True)
    return tmp_path / "c"


def _set(*keys, value):
    def change(m):
        d = m
        for k in keys[:-1]:
            d = d[k]
        if value is _DELETE:
            del d[keys[-1]]
        else:
            d[keys[-1]] = value
    return change


_DELETE = object()


@pytest.mark.parametrize("change, match", [
    (_set("bundles", value=_DELETE), "n_columns and bundles come together"),
    (_set("n_columns", value=_DELETE), "n_columns and bundles come together"),
    (_set("n_columns", value=0), "n_columns=0"),
    (_set("n_columns", value=3), "make 2 stored columns"),
    (_set("bundles", "conflicts", value=[-1]), "non-negative"),
    (_set("bundles", "conflicts", value=[]), "one conflict count each"),
    (_set("bundles", "extra", value=1), "expected {bundles, conflicts}"),
    (_set("bundles", "bundles", 0, 0, "feature", value="nope"), "'nope' is not a numeric"),
    (_set("bundles", "bundles", 0, 1, "feature", value="b0_0"), "in two bundles"),
    (_set("bundles", "bundles", 0, 0, "default_bin", value=2), "default_bin 2"),
    (_set("bundles", "bundles", 0, 0, "default_bin", value=True), "default_bin True"),
    (_set("bundles", "bundles", 0, value=[{"feature": "b0_0", "default_bin": 0}]),
     "at least two"),
    (_set("bundles", "bundles", 0, 0, "stray", value=1), "expected {feature, default_bin}"),
])
def test_manifest_bundles_are_checked(tmp_path, change, match):
    path = _bundled_cache(tmp_path)
    assert oocboost.Cache(path).n_columns == 2
    _edit_manifest(path, change)
    with pytest.raises(CacheError, match=match):
        oocboost.Cache(path)


def test_a_bundle_past_the_codes_is_refused():
    from oocboost.cache.binning import BinMapper

    mapper = BinMapper(["a", "b"], ["numeric", "numeric"], 8, [[0.5, 1.5, 2.5], [0.5, 1.5]],
                       [None, None], [False, False])
    entry = {"bundles": [[{"feature": "a", "default_bin": 0},
                          {"feature": "b", "default_bin": 0}]], "conflicts": [0]}
    assert FeatureBundles.from_dict(entry, mapper, "here").n_columns == 1
    small = BinMapper(["a", "b"], ["numeric", "numeric"], 6, [[0.5, 1.5, 2.5], [0.5, 1.5]],
                      [None, None], [False, False])
    with pytest.raises(CacheError, match="needs 5 codes; max_bin=6 leaves 4"):
        FeatureBundles.from_dict(entry, small, "here")


def test_find_bundles_leaves_categorical_and_dense_features(tmp_path):
    import pandas as pd

    rng = np.random.default_rng(5)
    n = 1000
    frame = pd.DataFrame({"c": pd.Categorical(rng.choice(["u", "v"], n)),
                          "d": rng.normal(size=n),
                          "s1": (rng.random(n) < 0.05).astype(float),
                          "s2": np.zeros(n)})
    frame.loc[frame.s1 == 0, "s2"] = (rng.random(int((frame.s1 == 0).sum())) < 0.05) * 3.0
    cache = oocboost.build_cache(frame, tmp_path / "c", quiet=True)
    assert [[cache.feature_names[f] for f, _ in b] for b in cache.bundles.bundles] == \
        [["s1", "s2"]]
    assert find_bundles(cache.bin_mapper, NonzeroSample(["d"]), {}) is None


def test_the_sample_fits_a_sixteenth_of_the_column_budget():
    assert NonzeroSample.rows_for(None) == 100_000
    assert NonzeroSample.rows_for(2 << 20) == 100_000
    assert NonzeroSample.rows_for(65536) == 32768         # 4 KiB of bits
    sample = NonzeroSample(["a"], NonzeroSample.rows_for(65536))
    assert sample.bits.nbytes <= 65536 // 16
    sample.update({"a": np.ones(50_000)}, 50_000)
    assert sample.n_rows == 32768 and sample.counts()[0] == 32768


def test_bundling_leaves_the_edges_alone(tmp_path):
    """A bundled cache bins every feature as the unbundled one does: the sample's bits
    do not come out of the sketches' budget (when they did, the two caches' edges, and
    so their models, differed)."""
    from types import SimpleNamespace

    from oocboost.cache.first_pass import FirstPass

    source = SimpleNamespace(feature_names=["x", "y"], feature_kinds=["numeric"] * 2)
    for budget in (65536, 2 << 20):
        sample = NonzeroSample(["x", "y"], NonzeroSample.rows_for(budget))
        with_bits = FirstPass(source, 256, None, sketch_bytes=budget, nonzero=sample)
        without = FirstPass(source, 256, None, sketch_bytes=budget)
        for name in ("x", "y"):
            assert vars(with_bits.numeric[name]) == vars(without.numeric[name])
    rng = np.random.default_rng(8)
    columns, y = one_hot_table(rng, 3000, blocks=(6,), n_dense=3)
    X, names = as_matrix(columns)
    a = oocboost.build_cache(X, tmp_path / "a", feature_names=names, quiet=True)
    b = oocboost.build_cache(X, tmp_path / "b", feature_names=names, enable_bundle=False,
                             quiet=True)
    assert a.bundles is not None and b.bundles is None
    assert a.bin_mapper == b.bin_mapper
