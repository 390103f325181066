"""Sparse columns in the store (``cache/sparse_columns.py``, ``kernels.codes.SparseCodes``,
the arrow backend's sparse fields, manifest format version 2): a block keeps a mostly-zero
numeric column by its other rows, reads back the codes a dense cache holds, says so in
``info``, grows by ``--append``, and refuses a forged block or manifest by name."""

import numpy as np
import pytest

import oocboost
from oocboost.cache.describe import describe_cache
from oocboost.cache.sparse_columns import implied_codes
from oocboost.cache.store import Cache, CacheWriter
from oocboost.cache.store.manifest import SPARSE_FORMAT_VERSION, encode_counts
from oocboost.errors import CacheError, ParameterError
from oocboost.kernels.codes import SparseCodes
from tests.cache.test_trust import _manifest, _write_manifest, replace_block


def sparse_table(n_rows, seed=0):
    """(X, y): x0 dense normal, x1 5% missing, s2..s7 mostly 0.0 (s7 all 0), c8 a
    column of small counts that is 0 half the time."""
    rng = np.random.default_rng(seed)
    X = np.zeros((n_rows, 9))
    X[:, 0] = rng.normal(size=n_rows)
    X[:, 1] = rng.normal(size=n_rows)
    X[rng.random(n_rows) < 0.05, 1] = np.nan
    for j, share in zip(range(2, 7), (0.02, 0.05, 0.1, 0.15, 0.3)):
        on = rng.random(n_rows) < share
        X[on, j] = rng.normal(size=on.sum()) + 1
    X[:, 8] = np.where(rng.random(n_rows) < 0.5, 0, rng.integers(1, 5, n_rows))
    y = (X[:, 0] + 2 * X[:, 2] - X[:, 4] + rng.normal(size=n_rows) > 0).astype(float)
    return X, y


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    X, y = sparse_table(5000)
    path = tmp_path_factory.mktemp("sparse")
    common = dict(label=y, block_rows=1024, quiet=True, enable_bundle=False)
    return (X, y, oocboost.build_cache(X, path / "s.oocb", **common),
            oocboost.build_cache(X, path / "d.oocb", enable_sparse=False, **common))


def _all_codes(cache):
    return np.concatenate([b.codes for b in cache.iter_blocks()], axis=1)


def test_mostly_zero_columns_are_stored_sparse_and_read_back_whole(built):
    X, _, sparse, dense = built
    assert sparse.manifest["format_version"] == SPARSE_FORMAT_VERSION
    assert dense.manifest["format_version"] == 1 and dense.sparse_summary() is None
    np.testing.assert_array_equal(_all_codes(sparse), _all_codes(dense))
    summary = sparse.sparse_summary()
    at_zero = (X == 0).mean(axis=0)
    # s2..s5 (>= 85% zeros) and s7 in every block; x0, x1, c8 never; s6 (70%) never
    assert np.flatnonzero(summary["blocks"]).tolist() == [2, 3, 4, 5, 7]
    assert (summary["blocks"][[2, 3, 4, 5, 7]] == sparse.n_blocks).all()
    assert at_zero[6] < 0.8
    # entries: the rows off the code of 0.0 (a value near 0 may share its bin)
    off = np.count_nonzero(_all_codes(dense) != sparse.sparse_implied[:, None], axis=1)
    np.testing.assert_array_equal(summary["entries_per_column"],
                                  off * (summary["blocks"] > 0))
    assert (off[2:6] <= np.count_nonzero(X[:, 2:6], axis=0)).all()
    assert summary["entries"] == sum(b["nnz"] for b in sparse.manifest["blocks"])
    block = sparse.read_block(2)
    assert isinstance(block.stored_codes, SparseCodes)
    assert block.stored_codes.nbytes < sparse.n_columns * block.n_rows
    assert sparse.nbytes_raw < dense.nbytes_raw


@pytest.mark.parametrize("threshold", [0.6, 0.95])
def test_the_threshold_decides_per_block(tmp_path, threshold):
    X, y = sparse_table(3000, seed=1)
    cache = oocboost.build_cache(X, tmp_path / "c", label=y, block_rows=500, quiet=True,
                                 enable_bundle=False, sparse_threshold=threshold)
    blocks = cache.sparse_summary()["blocks"]
    for j in range(9):
        shares = [(X[s:s + 500, j] == 0).mean() for s in range(0, 3000, 500)]
        assert blocks[j] == sum(share >= threshold for share in shares), j
    assert cache.manifest["build_params"]["sparse"]["sparse_threshold"] == threshold


def test_implied_codes_are_the_code_of_an_absent_entry(built):
    X, _, sparse, _ = built
    mapper = sparse.bin_mapper
    implied = implied_codes(mapper)
    zero_row = mapper.transform_numeric(np.zeros((1, X.shape[1])))[:, 0]
    np.testing.assert_array_equal(implied, zero_row)
    np.testing.assert_array_equal(implied_codes(mapper, absent_as_missing=True),
                                  np.full(X.shape[1], mapper.missing_bin))
    np.testing.assert_array_equal(sparse.sparse_implied, implied)


def test_categorical_and_hdf5_stay_dense(tmp_path):
    import pandas as pd
    X, y = sparse_table(2000)
    df = pd.DataFrame(X[:, :4], columns=["a", "b", "c", "d"])
    df["k"] = np.where(X[:, 2] == 0, "zero", "other")
    cache = oocboost.build_cache(df, tmp_path / "c", label=y, quiet=True)
    implied = cache.sparse_implied
    assert implied[list(cache.feature_names).index("k")] == -1
    assert cache.sparse_summary()["blocks"][list(cache.feature_names).index("c")] > 0
    h5 = oocboost.build_cache(X, tmp_path / "h", label=y, backend="hdf5", quiet=True)
    assert h5.sparse_summary() is None and h5.manifest["format_version"] == 1
    with pytest.raises(ParameterError, match="arrow backend only"):
        CacheWriter(tmp_path / "w", backend="hdf5", n_features=2, codes_dtype=np.uint8,
                    has_label=False, has_weight=False, sparse_implied=[0, 0])
    for bad in (0, 1.5, True, "0.8"):
        with pytest.raises(ParameterError, match="sparse_threshold"):
            oocboost.build_cache(X, tmp_path / "x", label=y, sparse_threshold=bad)


def test_bundled_columns_are_sparse_by_their_bundles_implied_code(tmp_path):
    rng = np.random.default_rng(2)
    n = 4000
    X = np.zeros((n, 12))
    X[:, 0] = rng.normal(size=n)
    hot = rng.integers(0, 60, n)            # one-hot of 60 values, 10 of them seen here
    for j in range(10):
        X[hot == j, 1 + j] = 1.0
    X[:, 11] = rng.normal(size=n)
    cache = oocboost.build_cache(X, tmp_path / "b", label=X[:, 0] > 0, quiet=True)
    assert cache.bundles is not None and cache.n_columns < 12
    column = int(cache.bundles.column_of_feature[1])
    assert cache.sparse_summary()["blocks"][column] == cache.n_blocks   # 83% all-zero
    plain = oocboost.build_cache(X, tmp_path / "p", label=X[:, 0] > 0, quiet=True,
                                 enable_sparse=False)
    np.testing.assert_array_equal(_all_codes(cache), _all_codes(plain))


def test_info_says_which_columns_are_sparse(built):
    _, _, sparse, dense = built
    text = describe_cache(sparse)
    assert "sparse columns (threshold 0.8): 5 of 9 stored columns sparse in some block" in text
    line = next(t for t in text.splitlines() if t.strip().startswith("f2 "))
    entries = int(sparse.sparse_summary()["entries_per_column"][2])
    assert f"sparse in {sparse.n_blocks}/{sparse.n_blocks} blocks, {entries:,} entries" in line
    assert "sparse columns" not in describe_cache(dense)


def test_append_keeps_the_layout_and_its_counts(tmp_path):
    X, y = sparse_table(3000, seed=3)
    first = oocboost.build_cache(X[:1700], tmp_path / "a", label=y[:1700], block_rows=512,
                                 quiet=True, enable_bundle=False)
    whole = oocboost.build_cache(X, tmp_path / "w", label=y, block_rows=512, quiet=True,
                                 enable_bundle=False, reference=first)
    from oocboost.cache.append import append_to_cache

    grown = append_to_cache(X[1700:], first.path, label=y[1700:], quiet=True)
    assert grown.n_rows == 3000
    np.testing.assert_array_equal(_all_codes(grown), _all_codes(whole))
    summary = grown.sparse_summary()
    np.testing.assert_array_equal(summary["blocks"], whole.sparse_summary()["blocks"])
    np.testing.assert_array_equal(summary["entries_per_column"],
                                  whole.sparse_summary()["entries_per_column"])


# ---- trust: forged blocks and manifests -------------------------------------------------
def _forge_sparse_block(cache, i, edit):
    """Rewrite block ``i`` with ``edit(fields)`` applied to its sparse fields (a dict of
    writable arrays) and a manifest entry that matches the file (size, checksum)."""
    codes = cache.read_block(i).stored_codes
    fields = {k: np.array(getattr(codes, k)) for k in SparseCodes._fields
              if k not in ("n_rows", "total_column")}
    edit(fields)
    replace_block(cache, i, SparseCodes(**fields, n_rows=codes.n_rows))


def _swap_rows(f):
    f["rows"][[0, 1]] = f["rows"][[1, 0]]


def _row_past_the_block(f):
    f["rows"][f["ptr"][1] - 1] = 5000


def _code_past_the_bins(f):
    f["values"][3] = 200


def _dense_column_made_sparse(f):
    f["columns"][0] = 0          # x0, which the manifest says no block stores sparse


def _column_listed_twice(f):
    f["columns"][1] = f["columns"][0]


@pytest.mark.parametrize("edit, message", [
    (_swap_rows, "block 1 .* is corrupted \\(a sparse column's rows are not ascending\\)"),
    (_row_past_the_block, "block 1 .*a sparse entry's row is outside 0..1023"),
    (_code_past_the_bins, "block 1, column 'f2': code 200 at row 1"),
    (_column_listed_twice, "block 1 .*sparse columns not ascending in 0..8"),
    (_dense_column_made_sparse, "block 1 .*column 0 is sparse, the manifest says no block "
                                "stores it sparse"),
])
def test_a_forged_sparse_block_is_refused_by_name(tmp_path, edit, message):
    X, y = sparse_table(3000)
    cache = oocboost.build_cache(X, tmp_path / "c", label=y, block_rows=1024, quiet=True,
                                 enable_bundle=False)
    _forge_sparse_block(cache, 1, edit)
    forged = Cache(cache.path)
    forged.read_block(0)
    with pytest.raises(CacheError, match=message):
        forged.read_block(1)


@pytest.mark.parametrize("edit, message", [
    (lambda d: d["sparse"].update(threshold=2), "sparse threshold 2 is not in"),
    (lambda d: d["sparse"].update(implied="###"), "sparse implied '###' is not base64"),
    (lambda d: d["sparse"].update(implied=encode_counts([0])),
     "sparse implied holds 1 values, expected one a stored column"),
    (lambda d: d["blocks"][0].update(nnz=d["blocks"][0]["nnz"] + 1), "do not add up"),
    (lambda d: d["blocks"][0].pop("n_sparse"), "block 0 has n_sparse=None"),
    (lambda d: d.pop("sparse"), "format_version 2 needs the sparse field"),
    (lambda d: d.update(format_version=1), "format_version 1 has no sparse columns"),
    (lambda d: d.update(format_version=3), "format_version 3 is not supported"),
])
def test_a_forged_sparse_manifest_is_refused_by_name(tmp_path, edit, message):
    X, y = sparse_table(2000)
    cache = oocboost.build_cache(X, tmp_path / "c", label=y, block_rows=1024, quiet=True,
                                 enable_bundle=False)
    doc = _manifest(cache.path)
    edit(doc)
    _write_manifest(cache.path, doc)
    with pytest.raises(CacheError, match=message):
        Cache(cache.path)


@pytest.mark.parametrize("absent_as_missing", [False, True])
def test_svmlight_absent_entries_are_the_implied_code(tmp_path, absent_as_missing):
    """An svmlight file's absent entries are 0.0 (LibSVM) or missing (XGBoost's reading):
    either way they are the implied code, and the sparse cache reads back the dense
    one's codes."""
    import scipy.sparse as sp
    from sklearn.datasets import dump_svmlight_file

    rng = np.random.default_rng(5)
    X = sp.random(3000, 12, density=0.06, random_state=5, format="csr")
    X.data = np.round(X.data * 10, 1) + 0.1
    path = str(tmp_path / "data.svm")
    dump_svmlight_file(X, rng.integers(0, 2, 3000), path, zero_based=True)
    common = dict(block_rows=1000, quiet=True, absent_as_missing=absent_as_missing,
                  enable_bundle=False)
    sparse = oocboost.build_cache(path, tmp_path / "s", **common)
    dense = oocboost.build_cache(path, tmp_path / "d", enable_sparse=False, **common)
    mapper = sparse.bin_mapper
    want = mapper.missing_bin if absent_as_missing else implied_codes(mapper)[0]
    assert (sparse.sparse_implied == want).all()
    assert (sparse.sparse_summary()["blocks"] == sparse.n_blocks).all()
    np.testing.assert_array_equal(_all_codes(sparse), _all_codes(dense))
