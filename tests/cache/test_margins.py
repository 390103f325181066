"""Per-row base margins in a cache (``cache/store/margins.py``): built from every kind of
source, read back a block at a time exactly as given, and untrusted on disk (size,
values, checksum, links)."""
import json
import os

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from oocboost.cache.build import build_cache
from oocboost.cache.store import Cache
from oocboost.cache.store.margins import BASE_MARGIN_FILE
from oocboost.errors import CacheError, InputError, ParameterError


def _data(n_rows=1000, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_rows, 3))
    y = (X[:, 0] > 0).astype(float)
    margin = rng.normal(size=n_rows)
    return X, y, margin


def _all_margins(cache):
    return np.vstack([b.base_margin for b in cache.iter_blocks(prefetch=1)])


@pytest.mark.parametrize("block_rows", [128, 333, 1000])
@pytest.mark.parametrize("backend", ["arrow", "hdf5"])
def test_array_margins_read_back_exactly(tmp_path, block_rows, backend):
    X, y, margin = _data()
    cache = build_cache(X, tmp_path / "c.oocb", label=y, base_margin=margin,
                        block_rows=block_rows, backend=backend, quiet=True)
    assert cache.base_margin_columns == ["<base_margin>"]
    np.testing.assert_array_equal(_all_margins(cache)[:, 0], margin)
    np.testing.assert_array_equal(cache.read_base_margin()[:, 0], margin)
    assert cache.verify() == len(y)
    # blocks read without codes carry them too (labels-only passes)
    block = cache.read_block(cache.n_blocks - 1, with_codes=False)
    np.testing.assert_array_equal(block.base_margin[:, 0],
                                  margin[block.row_start:block.row_start + block.n_rows])


def test_several_outputs_and_every_source_kind(tmp_path):
    X, y, margin = _data(600)
    two = np.column_stack([margin, -2 * margin])
    frame = pd.DataFrame(X, columns=["a", "b", "c"]).assign(y=y, m0=two[:, 0], m1=two[:, 1])
    frame.to_csv(tmp_path / "d.csv", index=False)
    pq.write_table(pa.Table.from_pandas(frame), tmp_path / "d.parquet")
    sources = {
        "array": (X, dict(label=y, base_margin=two)),
        "pandas": (frame, dict(label="y", base_margin=["m0", "m1"])),
        "arrow": (pa.Table.from_pandas(frame), dict(label="y", base_margin=["m0", "m1"])),
        "csv": (tmp_path / "d.csv", dict(label="y", base_margin=["m0", "m1"])),
        "parquet": (tmp_path / "d.parquet", dict(label="y", base_margin=["m0", "m1"])),
    }
    for name, (data, kw) in sources.items():
        cache = build_cache(data, tmp_path / f"{name}.oocb", block_rows=250, quiet=True, **kw)
        np.testing.assert_allclose(_all_margins(cache), two, rtol=0, atol=1e-15,
                                   err_msg=name)
        assert cache.feature_names == ["f0", "f1", "f2"] if name == "array" else \
            cache.feature_names == ["a", "b", "c"], name   # never a feature


def test_headerless_csv_takes_a_position(tmp_path):
    X, y, margin = _data(50)
    lines = [f"{y[i]},{float(margin[i])!r},{X[i, 0]!r}\n" for i in range(50)]
    (tmp_path / "d.tsv").write_text("".join(lines).replace(",", "\t"))
    cache = build_cache(tmp_path / "d.tsv", tmp_path / "c.oocb", label=0, base_margin=1,
                        header=False, quiet=True)
    assert cache.base_margin_columns == ["f1"] and cache.feature_names == ["f2"]
    np.testing.assert_array_equal(_all_margins(cache)[:, 0], margin)


def test_init_side_file_of_a_csv(tmp_path):
    X, y, margin = _data(40)
    pd.DataFrame({"x": X[:, 0], "y": y}).to_csv(tmp_path / "d.csv", index=False)
    (tmp_path / "d.csv.init").write_text("".join(f"{float(v)!r}\n" for v in margin))
    cache = build_cache(tmp_path / "d.csv", tmp_path / "c.oocb", label="y", quiet=True)
    assert cache.base_margin_columns == ["d.csv.init"]
    np.testing.assert_array_equal(_all_margins(cache)[:, 0], margin)
    # a column given by name wins over the side file
    pd.DataFrame({"x": X[:, 0], "y": y, "m": 2 * margin}).to_csv(tmp_path / "d.csv",
                                                                 index=False)
    cache = build_cache(tmp_path / "d.csv", tmp_path / "c2.oocb", label="y",
                        base_margin="m", quiet=True)
    np.testing.assert_array_equal(_all_margins(cache)[:, 0], 2 * margin)


@pytest.mark.parametrize("bad,what", [(np.nan, "missing"), (np.inf, "infinite")])
def test_a_value_that_is_not_finite_is_named(tmp_path, bad, what):
    X, y, margin = _data(30)
    margin[17] = bad
    with pytest.raises(InputError, match=rf"base_margin .* is {what} at row 18"):
        build_cache(X, tmp_path / "a.oocb", label=y, base_margin=margin, quiet=True)
    frame = pd.DataFrame({"x": X[:, 0], "y": y, "m": margin})
    frame.to_csv(tmp_path / "d.csv", index=False, na_rep="NA")
    with pytest.raises(InputError, match=rf"line 19, base_margin column 'm' is {what}"):
        build_cache(tmp_path / "d.csv", tmp_path / "b.oocb", label="y", base_margin="m",
                    quiet=True)


def test_wrong_shapes_and_names_are_refused(tmp_path):
    X, y, margin = _data(30)
    with pytest.raises(InputError, match=r"base_margin array has shape \(29,\)"):
        build_cache(X, tmp_path / "a.oocb", label=y, base_margin=margin[:29], quiet=True)
    frame = pd.DataFrame({"x": X[:, 0], "y": y})
    with pytest.raises(InputError, match=r"base_margin column 'm' not found"):
        build_cache(frame, tmp_path / "a.oocb", label="y", base_margin="m", quiet=True)
    with pytest.raises(ParameterError, match="label and base_margin are the same column"):
        build_cache(frame, tmp_path / "a.oocb", label="y", base_margin="y", quiet=True)


def _built(tmp_path):
    X, y, margin = _data(500)
    build_cache(X, tmp_path / "c.oocb", label=y, base_margin=margin, block_rows=100,
                quiet=True)
    return tmp_path / "c.oocb", margin


def test_truncated_file_is_refused_on_opening(tmp_path):
    path, _ = _built(tmp_path)
    with open(path / BASE_MARGIN_FILE, "r+b") as f:
        f.truncate(8 * 499)
    with pytest.raises(CacheError, match=r"base margin file has 3992 bytes, expected 4000"):
        Cache(path)


def test_damaged_values_fail_the_block_and_the_checksum(tmp_path):
    path, _ = _built(tmp_path)
    with open(path / BASE_MARGIN_FILE, "r+b") as f:
        f.seek(8 * 250)
        f.write(np.array([np.nan]).tobytes())
    cache = Cache(path)
    cache.read_block(0)   # other blocks are fine
    with pytest.raises(CacheError, match=r"base margin of row 250 \(block 2\) is not finite"):
        cache.read_block(2)
    with open(path / BASE_MARGIN_FILE, "r+b") as f:
        f.seek(8 * 250)
        f.write(np.array([0.125]).tobytes())
    with pytest.raises(CacheError, match="base margin file fails its checksum"):
        Cache(path).verify()


def test_a_link_or_a_bad_entry_is_refused(tmp_path):
    path, _ = _built(tmp_path)
    outside = tmp_path / "outside.f64"
    os.replace(path / BASE_MARGIN_FILE, outside)
    os.symlink(outside, path / BASE_MARGIN_FILE)
    with pytest.raises(CacheError, match="base margin file is a symbolic link"):
        Cache(path)
    os.remove(path / BASE_MARGIN_FILE)
    os.replace(outside, path / BASE_MARGIN_FILE)
    manifest = json.loads((path / "manifest.json").read_text())
    manifest["base_margin"]["columns"] = []
    (path / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(CacheError, match="base_margin columns .* non-empty list"):
        Cache(path)


def test_append_and_chaining_refuse_margins(tmp_path):
    from oocboost.cache.append import append_to_cache
    from oocboost.cache.chained import ChainedCache

    path, _ = _built(tmp_path)
    X, y, _ = _data(50, seed=1)
    with pytest.raises(ParameterError, match="has base margins; --append does not extend"):
        append_to_cache(X, path, label=y, quiet=True)
    with pytest.raises(CacheError, match="base margins cannot be chained"):
        ChainedCache([path, path])


def test_overwrite_replaces_a_cache_with_margins(tmp_path):
    path, margin = _built(tmp_path)
    X, y, _ = _data(500)
    cache = build_cache(X, path, label=y, base_margin=2 * margin, block_rows=100,
                        overwrite=True, quiet=True)
    np.testing.assert_array_equal(_all_margins(cache)[:, 0], 2 * margin)
    # a damaged manifest: the folder holds only a cache's own names, still replaceable
    (path / "manifest.json").write_text("{")
    cache = build_cache(X, path, label=y, block_rows=100, overwrite=True, quiet=True)
    assert cache.base_margin_columns is None
    assert not (path / BASE_MARGIN_FILE).exists()
