"""build_cache through the Python API: formats, block sizes, edges, labels, references,
fingerprints, atomicity of the spool, memory limits."""
import gzip
import os

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.feather as feather
import pyarrow.ipc as ipc
import pyarrow.parquet as pq
import pytest

import oocboost
from oocboost.cache.build import build_cache
from oocboost.cache.store import Cache
from oocboost.common import category_code
from oocboost.errors import (
    CacheError,
    InputError,
    MemoryLimitError,
    OutputError,
    ParameterError,
    SchemaError,
)

N = 1500


# ----------------------------------------------------------------------------- helpers
def all_codes(cache):
    return np.concatenate([cache.read_block(i).codes for i in range(cache.n_blocks)], axis=1)


def mapper_state(cache):
    m = cache.bin_mapper
    return ([e.tolist() for e in m.bin_edges], m.categories, m.has_other.tolist(),
            m.n_value_bins.tolist(), m.feature_names, m.feature_types)


def _numeric_frame(n=N, seed=0):
    rng = np.random.default_rng(seed)
    X = np.round(rng.normal(size=(n, 4)), 5)
    X[:, 1] = rng.integers(0, 7, n)                 # low cardinality: exact edges
    X[rng.random(n) < 0.05, 2] = np.nan             # missing values
    X[:, 3] = np.round(rng.lognormal(size=n), 5)
    X[5, 0], X[6, 0] = np.inf, -np.inf
    y = (X[:, 0] + rng.normal(size=n) > 0).astype(np.float64)
    return X, y


def _write_csv(path, columns, compress=False):
    names = list(columns)
    n = len(next(iter(columns.values())))

    def cell(v):
        if v is None:
            return ""
        if isinstance(v, str):
            return v
        if np.isnan(v):
            return ""
        return repr(float(v))

    lines = [",".join(names)]
    for i in range(n):
        lines.append(",".join(cell(columns[c][i]) for c in names))
    text = "\n".join(lines) + "\n"
    if compress:
        with gzip.open(path, "wt") as f:
            f.write(text)
    else:
        with open(path, "w") as f:
            f.write(text)
    return str(path)


# --------------------------------------------------------------------- input formats
FORMATS = ["csv", "csv.gz", "parquet", "arrow", "feather", "arrow-stream", "numpy",
           "pandas", "table", "batches", "generator"]


def _source(fmt, tmp_path, with_cat):
    X, y = _numeric_frame()
    cols = {f"f{j}": X[:, j] for j in range(X.shape[1])}
    if with_cat:
        rng = np.random.default_rng(3)
        cats = np.array(["red", "green", "blue", "x,y", "z"])[rng.integers(0, 5, N)]
        cat = [None if i % 17 == 0 else str(c) for i, c in enumerate(cats)]
        cols["c"] = cat
    cols["y"] = y
    table = pa.table({k: pa.array(v, type=pa.string() if k == "c" else pa.float64(),
                                  from_pandas=True) for k, v in cols.items()})
    kw = dict(label="y")
    if fmt == "csv":
        data = _write_csv(tmp_path / "d.csv", {k: (['"x,y"' if v == "x,y" else v for v in c]
                                                   if k == "c" else c)
                                               for k, c in cols.items()})
    elif fmt == "csv.gz":
        data = _write_csv(tmp_path / "d.csv.gz", {k: (['"x,y"' if v == "x,y" else v
                                                       for v in c] if k == "c" else c)
                                                  for k, c in cols.items()}, compress=True)
    elif fmt == "parquet":
        data = str(tmp_path / "d.parquet")
        pq.write_table(table, data, row_group_size=400)
    elif fmt == "arrow":
        data = str(tmp_path / "d.arrow")
        with ipc.new_file(data, table.schema) as w:
            for rb in table.to_batches(max_chunksize=333):
                w.write_batch(rb)
    elif fmt == "feather":
        data = str(tmp_path / "d.feather")
        feather.write_feather(table, data, chunksize=500)
    elif fmt == "arrow-stream":
        data = str(tmp_path / "d.arrows")
        with ipc.new_stream(data, table.schema) as w:
            w.write_table(table)
    elif fmt == "numpy":
        data, kw = X, dict(label=y)
    elif fmt == "pandas":
        df = pd.DataFrame({k: v for k, v in cols.items() if k != "y"})
        data, kw = df, dict(label=y)
    elif fmt == "table":
        data = table
    elif fmt == "batches":
        data = table.to_batches(max_chunksize=256)
    elif fmt == "generator":
        data = (rb for rb in table.to_batches(max_chunksize=300))
    return data, kw


@pytest.fixture(scope="module")
def reference_builds(tmp_path_factory):
    out = {}
    for with_cat in (False, True):
        tmp = tmp_path_factory.mktemp(f"ref{with_cat}")
        data, kw = _source("table", tmp, with_cat)
        out[with_cat] = build_cache(data, tmp / "c.oocb", quiet=True, block_rows=256, **kw)
    return out


@pytest.mark.parametrize("with_cat", [False, True], ids=["numeric", "with-categorical"])
@pytest.mark.parametrize("fmt", FORMATS)
def test_same_data_same_cache_through_every_format(fmt, with_cat, tmp_path, reference_builds):
    if fmt == "numpy" and with_cat:
        fmt = "numpy-cat"  # a NumPy array holds no strings: check names/kinds instead
        X, y = _numeric_frame()
        cache = build_cache(X, tmp_path / "c.oocb", label=y, quiet=True, block_rows=256,
                            feature_names=["f0", "f1", "f2", "f3"])
        ref = reference_builds[False]
    else:
        data, kw = _source(fmt, tmp_path, with_cat)
        cache = build_cache(data, tmp_path / "c.oocb", quiet=True, block_rows=256, **kw)
        ref = reference_builds[with_cat]
    assert cache.n_rows == N
    assert mapper_state(cache) == mapper_state(ref)
    np.testing.assert_array_equal(all_codes(cache), all_codes(ref))
    np.testing.assert_array_equal(cache.read_labels()[0], ref.read_labels()[0])
    assert cache.manifest["label_stats"]["n_rows"] == N
    assert cache.manifest["label_stats"]["weighted_sum"] == ref.manifest["label_stats"][
        "weighted_sum"]


# --------------------------------------------------------------------- block_rows
def test_results_do_not_depend_on_block_rows(tmp_path):
    X, y = _numeric_frame(n=700)
    df = pd.DataFrame(X, columns=[f"f{j}" for j in range(4)])
    df["c"] = pd.Series(np.array(list("abcdefg"))[np.arange(700) % 7]).where(
        np.arange(700) % 11 != 0, None)
    df["y"] = y
    path = str(tmp_path / "d.csv")
    df.to_csv(path, index=False)
    caches = [build_cache(path, tmp_path / f"c{b}.oocb", label="y", block_rows=b, quiet=True)
              for b in (7, 64, 700, None)]
    assert [c.block_rows for c in caches[:3]] == [7, 64, 700]
    assert caches[0].n_blocks == 100
    ref_codes = all_codes(caches[-1])
    for c in caches:
        np.testing.assert_array_equal(all_codes(c), ref_codes)
        np.testing.assert_array_equal(c.read_labels()[0], y.astype(np.float32))
        assert mapper_state(c) == mapper_state(caches[-1])


# --------------------------------------------------------------------- edges
def test_exact_midpoint_edges_for_few_distinct_values(tmp_path):
    rng = np.random.default_rng(0)
    values = np.array([-3.5, 0.0, 1.0, 2.25, 10.0])
    x = values[rng.integers(0, 5, 2000)]
    x300 = rng.permutation(np.repeat(np.arange(300.0), 3))[:900]  # 300 distinct values
    X = np.column_stack([x[:900], x300])
    cache = build_cache(X, tmp_path / "c.oocb", max_bin=512, quiet=True)
    m = cache.bin_mapper
    np.testing.assert_array_equal(m.bin_edges[0], (values[:-1] + values[1:]) / 2)
    # 300 distinct values <= max_bin - 1 = 511: every value gets its own bin.
    np.testing.assert_array_equal(m.bin_edges[1], np.arange(299.0) + 0.5)
    feats = cache.manifest["features"]
    assert feats[0]["exact_edges"] and feats[0]["rank_error_bound"] == 0.0
    codes = all_codes(cache)
    np.testing.assert_array_equal(codes[1], X[:, 1].astype(int))


def test_quantile_edges_within_rank_error_bound(tmp_path):
    rng = np.random.default_rng(1)
    n = 60_000
    X = np.column_stack([rng.normal(size=n), rng.lognormal(size=n),
                         np.round(rng.uniform(0, 100, n), 2)])
    max_bin = 64
    cache = build_cache(X, tmp_path / "c.oocb", max_bin=max_bin, block_rows=4096,
                        quiet=True)
    for f in range(X.shape[1]):
        feat = cache.manifest["features"][f]
        edges = cache.bin_mapper.bin_edges[f]
        # f2 has 10001 distinct values: too many for one bin each, so its edges are
        # quantiles too (exact or not depends on the sketch's memory budget).
        bound = feat["rank_error_bound"]
        assert bound < 0.01 and (bound == 0) == feat["exact_edges"]
        col = np.sort(X[:, f])
        qs = np.arange(1, max_bin - 1) / (max_bin - 1)
        assert len(edges) == len(qs)  # no duplicates for continuous data
        for q, e in zip(qs, edges):
            # the true rank interval of edge e must come within bound*n of q*n
            lo = np.searchsorted(col, e, side="left")
            hi = np.searchsorted(col, e, side="right")
            target = q * n
            dist = max(0.0, lo - target, target - hi)
            assert dist <= bound * n + 1, (f, q, e, dist, bound * n)
            # the same as values: between np.quantile at q -+ bound (one row of slack)
            lo_q, hi_q = max(q - bound - 1 / n, 0), min(q + bound + 1 / n, 1)
            assert np.quantile(col, lo_q, method="lower") <= e <= \
                np.quantile(col, hi_q, method="higher")


def test_infinities_go_to_the_outermost_bins(tmp_path):
    rng = np.random.default_rng(2)
    n = 5000
    few = rng.choice([1.0, 2.0, 3.0], n)
    many = rng.normal(size=n)
    for col in (few, many):
        col[::50] = np.inf
        col[1::50] = -np.inf
    X = np.column_stack([few, many])
    cache = build_cache(X, tmp_path / "c.oocb", quiet=True, block_rows=1000)
    codes = all_codes(cache)
    nvb = cache.bin_mapper.n_value_bins
    for f in range(2):
        assert np.all(codes[f][X[:, f] == np.inf] == nvb[f] - 1)
        assert np.all(codes[f][X[:, f] == -np.inf] == 0)
        finite = np.isfinite(X[:, f])
        assert codes[f][finite].max() <= nvb[f] - 1
        assert cache.manifest["features"][f]["n_inf"] == int((~finite).sum())


def test_constant_all_missing_and_high_cardinality_columns(tmp_path):
    n = 4000
    rng = np.random.default_rng(4)
    df = pd.DataFrame({
        "const": np.full(n, 7.0),
        "empty": np.full(n, np.nan),
        "ids": [f"id{v}" for v in rng.integers(0, 3000, n)],
        "x": rng.normal(size=n),
    })
    max_bin = 40
    cache = build_cache(df, tmp_path / "c.oocb", max_bin=max_bin,
                        max_categories=max_bin - 1, quiet=True)
    m = cache.bin_mapper
    feats = {f["name"]: f for f in cache.manifest["features"]}
    codes = all_codes(cache)
    assert m.n_value_bins[0] == 1 and np.all(codes[0] == 0)
    assert m.n_value_bins[1] == 1 and np.all(codes[1] == m.missing_bin)
    assert feats["empty"]["n_missing"] == n
    assert feats["ids"]["n_categories"] == max_bin - 2 and feats["ids"]["has_other"]
    assert m.n_value_bins[2] == max_bin - 1
    assert len(m.categories[2]) == max_bin - 2
    # the kept categories are the most frequent ones
    counts = df["ids"].value_counts()
    assert set(m.categories[2]) <= set(counts.index[counts >= counts.iloc[max_bin - 3]])
    other = codes[2] == max_bin - 2
    assert other.any() and not df["ids"][other].isin(m.categories[2]).any()
    # without max_categories every id keeps a code of its own, whatever max_bin
    wide = build_cache(df, tmp_path / "w.oocb", max_bin=max_bin, quiet=True)
    feats = {f["name"]: f for f in wide.manifest["features"]}
    assert feats["ids"]["n_categories"] == df["ids"].nunique()
    assert not feats["ids"]["has_other"] and wide.codes_dtype == np.uint16
    index = pd.Index(wide.bin_mapper.categories[2]).get_indexer(df["ids"])
    np.testing.assert_array_equal(all_codes(wide)[2], category_code(index, max_bin))


# --------------------------------------------------------------------- labels, weights
def test_weight_column_and_label_stats(tmp_path):
    rng = np.random.default_rng(5)
    n = 3000
    y = np.round(rng.normal(3, 2, n), 4)
    w = np.round(rng.uniform(0.1, 5, n), 3)
    df = pd.DataFrame({"a": rng.normal(size=n), "w": w, "y": y})
    path = str(tmp_path / "d.csv")
    df.to_csv(path, index=False)
    cache = build_cache(path, tmp_path / "c.oocb", label="y", weight="w", quiet=True,
                        block_rows=500)
    assert cache.has_weight and cache.feature_names == ["a"]
    label, weight = cache.read_labels()
    assert weight.dtype == np.float32 and label.dtype == np.float32
    np.testing.assert_array_equal(weight, w.astype(np.float32))
    np.testing.assert_array_equal(label, y.astype(np.float32))
    st = cache.manifest["label_stats"]
    assert st["n_rows"] == n and st["n_missing"] == 0
    assert st["min"] == y.min() and st["max"] == y.max()
    assert st["sum_weight"] == pytest.approx(w.sum(), rel=1e-12)
    assert st["weighted_sum"] / st["sum_weight"] == pytest.approx(np.average(y, weights=w),
                                                                  rel=1e-12)
    assert cache.manifest["weight_stats"]["n_rows"] == n


def test_numpy_with_label_and_weight_arrays(tmp_path):
    X, y = _numeric_frame(n=800)
    w = np.linspace(0.5, 2, 800)
    cache = build_cache(X, tmp_path / "c.oocb", label=y, weight=w, quiet=True,
                        block_rows=100)
    assert cache.feature_names == ["f0", "f1", "f2", "f3"]
    label, weight = cache.read_labels()
    np.testing.assert_array_equal(label, y.astype(np.float32))
    np.testing.assert_array_equal(weight, w.astype(np.float32))
    st = cache.manifest["label_stats"]
    assert st["weighted_sum"] / st["sum_weight"] == pytest.approx(np.average(y, weights=w))
    # label arrays are part of the fingerprint: new labels need overwrite
    with pytest.raises(CacheError, match="overwrite"):
        build_cache(X, tmp_path / "c.oocb", label=1 - y, weight=w, quiet=True,
                    block_rows=100)
    again = build_cache(X, tmp_path / "c.oocb", label=y, weight=w, quiet=True,
                        block_rows=100)
    assert again.manifest["fingerprint"] == cache.manifest["fingerprint"]
    with pytest.raises(InputError, match="label array has shape"):
        build_cache(X, tmp_path / "d.oocb", label=y[:-1], quiet=True)
    bad = y.copy()
    bad[10] = np.nan
    with pytest.raises(InputError, match="row 11"):
        build_cache(X, tmp_path / "d.oocb", label=bad, quiet=True)
    assert not os.path.exists(tmp_path / "d.oocb")


# --------------------------------------------------------------------- reference
def test_reference_uses_training_edges(tmp_path):
    rng = np.random.default_rng(6)
    train = pd.DataFrame({"a": rng.normal(size=2000), "c": rng.choice(list("abc"), 2000),
                          "y": rng.integers(0, 2, 2000)})
    valid = pd.DataFrame({"a": rng.normal(5, 1, 300), "c": rng.choice(list("abcd"), 300),
                          "y": rng.integers(0, 2, 300)})
    tr = build_cache(train, tmp_path / "t.oocb", label="y", quiet=True, max_bin=32)
    for ref in (tr, str(tmp_path / "t.oocb")):
        out = tmp_path / f"v{type(ref).__name__}.oocb"
        va = build_cache(valid, out, label="y", reference=ref, quiet=True)
        assert va.max_bin == 32
        assert mapper_state(va) == mapper_state(tr)
        expected = tr.bin_mapper.transform_batch(_batch_of(valid))
        np.testing.assert_array_equal(all_codes(va), expected)
        feats = va.manifest["features"]
        assert feats[1]["n_missing"] == 0
    # unseen category "d": there is no "other" (3 categories only) -> missing code
    assert np.all(all_codes(va)[1][valid["c"].to_numpy() == "d"] == tr.bin_mapper.missing_bin)
    # a model is not a reference (it has a bin mapper too): said, with the way to its edges
    model = oocboost.train({"objective": "binary:logistic"}, tr, 2)
    with pytest.raises(ParameterError, match="training cache or its path, got a Model.*"
                                             "split_points=model"):
        build_cache(valid, tmp_path / "m.oocb", label="y", reference=model, quiet=True)
    assert not (tmp_path / "m.oocb").exists()


def _batch_of(df):
    from oocboost.cache.ingest import open_source
    return next(open_source(df, label="y").batches())


@pytest.mark.parametrize("change,names", [
    (lambda d: d.rename(columns={"a": "z"}), ["'a'", "'z'"]),
    (lambda d: d.drop(columns=["c"]), ["'c'"]),
    (lambda d: d.assign(extra=1.0), ["'extra'"]),
    # text that is not numbers (numbers written as text read as numbers: numeric_text.py)
    (lambda d: d.assign(a="v" + d["a"].astype(str)), ["a (numeric in the reference"]),
])
def test_reference_schema_mismatch_names_columns(tmp_path, change, names):
    df = pd.DataFrame({"a": [1.0, 2.0, 3.0], "c": ["x", "y", "x"], "y": [0, 1, 0]})
    tr = build_cache(df, tmp_path / "t.oocb", label="y", quiet=True)
    with pytest.raises(SchemaError) as e:
        build_cache(change(df), tmp_path / "v.oocb", label="y", reference=tr, quiet=True)
    for name in names:
        assert name in str(e.value)
    assert not os.path.exists(tmp_path / "v.oocb")


# --------------------------------------------------------------------- fingerprints
def test_fingerprint_reuse_and_stale_detection(tmp_path, capsys):
    path = _write_csv(tmp_path / "d.csv", {"a": np.arange(50.0), "y": np.arange(50.0) % 2})
    out = tmp_path / "c.oocb"
    c1 = build_cache(path, out, label="y")
    fp = c1.manifest["fingerprint"]["sha256"]
    assert c1.manifest["source"]["fingerprint"]["kind"] == "file"
    assert c1.manifest["build_params"]["max_bin"] == 256
    manifest = out / "manifest.json"
    mtime = os.stat(manifest).st_mtime_ns
    capsys.readouterr()
    c2 = build_cache(path, out, label="y")
    assert "up to date" in capsys.readouterr().out
    assert os.stat(manifest).st_mtime_ns == mtime
    assert c2.manifest["fingerprint"]["sha256"] == fp
    # changed parameters
    with pytest.raises(CacheError, match="overwrite"):
        build_cache(path, out, label="y", max_bin=64, quiet=True)
    # changed source (same size, other content)
    with open(path, "r+") as f:
        text = f.read().replace("\n3.0,", "\n4.0,", 1)
        f.seek(0)
        f.write(text)
    with pytest.raises(CacheError, match="overwrite"):
        build_cache(path, out, label="y", quiet=True)
    assert os.stat(manifest).st_mtime_ns == mtime
    c3 = build_cache(path, out, label="y", quiet=True, overwrite=True)
    assert c3.manifest["fingerprint"]["sha256"] != fp


def test_generator_sources_fingerprint_their_content(tmp_path):
    t1 = pa.table({"a": np.arange(100.0), "y": np.arange(100.0) % 2})
    t2 = pa.table({"a": np.arange(100.0) * 2, "y": np.arange(100.0) % 2})
    out = tmp_path / "g.oocb"
    c1 = build_cache((rb for rb in t1.to_batches(30)), out, label="y", quiet=True)
    assert c1.manifest["source"]["fingerprint"]["sha256"] is not None
    assert c1.n_rows == 100
    # the same stream again: reused
    c2 = build_cache((rb for rb in t1.to_batches(30)), out, label="y", quiet=True)
    assert c2.manifest["fingerprint"] == c1.manifest["fingerprint"]
    # another stream: refused, never silently reused
    with pytest.raises(CacheError, match="overwrite"):
        build_cache((rb for rb in t2.to_batches(30)), out, label="y", quiet=True)
    c3 = build_cache((rb for rb in t2.to_batches(30)), out, label="y", quiet=True,
                     overwrite=True)
    np.testing.assert_array_equal(c3.bin_mapper.bin_edges[0], c1.bin_mapper.bin_edges[0] * 2)
    assert not [s for s in os.listdir(tmp_path) if "spool" in s or ".oocb." in s]


def test_output_that_is_something_else_is_refused_up_front(tmp_path):
    path = _write_csv(tmp_path / "d.csv", {"a": np.arange(20.0)})
    afile = tmp_path / "afile"
    afile.write_text("keep me")
    with pytest.raises(CacheError, match="it is a file"):
        build_cache(path, afile, quiet=True)
    assert afile.read_text() == "keep me"
    folder = tmp_path / "folder"
    folder.mkdir()
    (folder / "x.txt").write_text("mine")
    for overwrite in (False, True):
        with pytest.raises(CacheError, match="not an oocboost cache"):
            build_cache(path, folder, quiet=True, overwrite=overwrite)
        with pytest.raises(CacheError, match="it is a file"):
            build_cache(path, afile, quiet=True, overwrite=overwrite)
    assert (folder / "x.txt").read_text() == "mine" and afile.read_text() == "keep me"
    assert not [s for s in os.listdir(tmp_path) if "spool" in s or ".oocb." in s]


# --------------------------------------------------------------------- corrupted caches
def test_truncated_or_corrupted_block_names_the_block(tmp_path):
    X, y = _numeric_frame(n=600)
    cache = build_cache(X, tmp_path / "c.oocb", label=y, block_rows=100, quiet=True,
                        compression="none")
    files = sorted(os.listdir(tmp_path / "c.oocb" / "blocks"))
    assert len(files) == 6
    f3 = tmp_path / "c.oocb" / "blocks" / files[3]
    data = f3.read_bytes()
    f3.write_bytes(data[:-1] + bytes([data[-1] ^ 0xFF]))  # same size, flipped byte
    c = Cache(tmp_path / "c.oocb")
    with pytest.raises(CacheError, match="block 3"):
        c.read_block(3)
    with pytest.raises(CacheError, match="block 3"):
        list(c.iter_blocks())
    f3.write_bytes(data[:-10])  # truncated
    with pytest.raises(CacheError, match="block 3"):
        Cache(tmp_path / "c.oocb")
    del cache


def test_hdf5_backend_same_codes(tmp_path):
    X, y = _numeric_frame(n=500)
    a = build_cache(X, tmp_path / "a.oocb", label=y, block_rows=64, quiet=True)
    h = build_cache(X, tmp_path / "h.oocb", label=y, block_rows=64, quiet=True,
                    backend="hdf5")
    np.testing.assert_array_equal(all_codes(a), all_codes(h))
    h.close()


# --------------------------------------------------------------------- memory limit
def test_memory_limit_too_small_fails_up_front(tmp_path):
    path = _write_csv(tmp_path / "d.csv", {f"c{j}": np.arange(30.0) for j in range(40)})
    with pytest.raises(MemoryLimitError) as e:
        build_cache(path, tmp_path / "c.oocb", memory_limit="16MB", quiet=True)
    msg = str(e.value)
    smallest = e.value.smallest_limit
    assert f"{smallest // 2**20} MiB" in msg
    assert "40 columns" in msg or "42 columns" in msg
    assert not os.path.exists(tmp_path / "c.oocb")
    assert not [s for s in os.listdir(tmp_path) if "spool" in s or ".oocb." in s]
    cache = build_cache(path, tmp_path / "c.oocb", memory_limit=smallest + 2**20, quiet=True)
    assert cache.n_rows == 30


def test_more_categories_than_a_feature_keeps_are_folded_with_a_warning(tmp_path):
    """Past 65,535 categories the rarest are folded into "other", and the build says so,
    naming the column; with max_categories set it folds silently (as asked)."""
    from oocboost.common import MAX_CATEGORIES

    n = MAX_CATEGORIES + 20
    ids = [f"u{i:06d}" for i in range(n)] + ["u000000"] * 3
    table = pa.table({"id": ids, "y": np.arange(len(ids)) % 2})
    with pytest.warns(UserWarning, match=r"column 'id' has at least 65,555 categories"):
        cache = build_cache(table, tmp_path / "c.oocb", label="y", quiet=True)
    mapper = cache.bin_mapper
    assert mapper.has_other[0] and len(mapper.categories[0]) == MAX_CATEGORIES - 1
    assert cache.manifest["features"][0]["n_distinct_seen"] == n
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        build_cache(table, tmp_path / "d.oocb", label="y", quiet=True, max_categories=500)


def test_spool_write_failure_on_the_sketching_thread_stops_the_build(tmp_path, monkeypatch):
    """The spool is written on the sketching thread: a full disk there stops the build
    with the error, leaving neither a cache nor a spool."""
    import errno

    from oocboost.cache.spool import Spool

    path = tmp_path / "d.csv"
    # about 4 MB: several 1 MiB CSV blocks, so several batches
    path.write_text("a,b,label\n" + "".join(f"{i},{i % 5},{i % 2}\n" for i in range(300000)))
    writes = []

    def full_disk(self, batch):
        writes.append(batch.n_rows)
        if len(writes) == 2:
            raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(Spool, "write", full_disk)
    with pytest.raises(OutputError, match="c.oocb: no space left"):
        build_cache(path, tmp_path / "c.oocb", label="label", quiet=True)
    assert len(writes) == 2  # the batches after the failure were not spooled
    assert not os.path.exists(tmp_path / "c.oocb")
    assert not [s for s in os.listdir(tmp_path) if "spool" in s or ".oocb." in s]
