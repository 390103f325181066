"""ChainedCache (cache/chained.py): caches with the same bins read as one, their rows
numbered on from one to the next; training on the chain equals training on one cache of
the same rows in the same order, for both backends and any prefetch depth."""
import numpy as np
import pandas as pd
import pytest

import oocboost
from oocboost.cache.chained import ChainedCache
from oocboost.errors import CacheError, ParameterError
from oocboost.learners.forest.forest import train_forest_from_params


def _frame(n, seed):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({f"x{j}": rng.normal(size=n) for j in range(4)})
    df.loc[rng.random(n) < 0.1, "x1"] = np.nan
    df["c"] = rng.choice(["p", "q", "r"], size=n)
    df["y"] = ((df.x0 + (df.c == "q") + rng.normal(size=n) * 0.3) > 0.4).astype(float)
    return df


@pytest.fixture(params=["arrow", "hdf5"])
def caches(request, tmp_path):
    df = _frame(2500, 1)
    parts = [df.iloc[:700], df.iloc[700:1900], df.iloc[1900:]]
    first = oocboost.build_cache(parts[0], tmp_path / "p0.oocb", label="y", quiet=True,
                                 block_rows=256, backend=request.param)
    others = [oocboost.build_cache(p, tmp_path / f"p{k + 1}.oocb", label="y", quiet=True,
                                   block_rows=300, reference=first, backend=request.param)
              for k, p in enumerate(parts[1:])]
    whole = oocboost.build_cache(df, tmp_path / "whole.oocb", label="y", quiet=True,
                                 block_rows=512, reference=first, backend=request.param)
    return [first] + others, whole, df


@pytest.mark.parametrize("prefetch", [0, 2])
def test_blocks_continue_the_row_numbers(caches, prefetch):
    parts, whole, df = caches
    chain = ChainedCache(parts)
    assert chain.n_rows == whole.n_rows == len(df)
    assert chain.n_blocks == sum(p.n_blocks for p in parts)
    assert chain.block_rows == 300
    starts = [b.row_start for b in chain.iter_blocks(prefetch=prefetch)]
    assert starts == chain.block_row_starts.tolist()
    assert starts[0] == 0 and starts[-1] + chain.block_n_rows[-1] == len(df)
    codes = np.concatenate([b.codes for b in chain.iter_blocks(prefetch=prefetch)], axis=1)
    np.testing.assert_array_equal(codes, np.concatenate([b.codes for b in
                                                         whole.iter_blocks()], axis=1))
    labels, weights = chain.read_labels()
    np.testing.assert_array_equal(labels, df["y"].to_numpy(np.float32))
    assert weights is None
    # a block by its index in the chain
    assert [p.n_blocks for p in parts][0] == 3          # 700 rows in blocks of 256
    b = chain.read_block(4)                              # the second block of p1
    assert b.row_start == int(chain.block_row_starts[4]) == 700 + 300
    np.testing.assert_array_equal(b.label, df["y"].to_numpy(np.float32)[1000:1300])
    assert chain.manifest["label_stats"]["n_rows"] == len(df)
    assert "ChainedCache([p0.oocb, p1.oocb, p2.oocb]" in repr(chain)
    chain.close()


def test_training_on_the_chain_is_training_on_the_rows(caches):
    parts, whole, _ = caches
    chain = ChainedCache(parts)
    p = {"objective": "binary:logistic", "max_depth": 3, "subsample": 0.7, "n_threads": 1}
    np.testing.assert_allclose(oocboost.train(p, chain, 5).predict(whole),
                               oocboost.train(p, whole, 5).predict(whole), rtol=1e-10)
    q = {"max_depth": 4, "random_state": 2, "n_jobs": 1}
    a = train_forest_from_params("random-forest", q, chain, n_estimators=4)
    b = train_forest_from_params("random-forest", q, whole, n_estimators=4)
    for s, t in zip(a.trees, b.trees):
        np.testing.assert_array_equal(s.feature, t.feature)
        np.testing.assert_array_equal(s.bin_threshold, t.bin_threshold)
        np.testing.assert_array_equal(s.value, t.value)


def test_only_caches_with_the_same_bins_chain(caches, tmp_path):
    parts, _, df = caches
    other = oocboost.build_cache(_frame(500, 9), tmp_path / "other.oocb", label="y",
                                 quiet=True)
    assert ChainedCache(parts).nbytes_stored == sum(p.nbytes_stored for p in parts)
    with pytest.raises(CacheError, match="binned with other edges"):
        ChainedCache([parts[0], other])
    unlabelled = oocboost.build_cache(df.drop(columns=["y"]), tmp_path / "nolabel.oocb",
                                      reference=parts[0], quiet=True)
    with pytest.raises(CacheError, match="differ in their label columns"):
        ChainedCache([parts[0], unlabelled])
    with pytest.raises(ParameterError, match="at least one cache"):
        ChainedCache([])
