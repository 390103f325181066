"""Sharded caches (cache/shards.py): merged sketches give the single-machine edges (exact
sketches) or edges within the merged sketch's stated rank error (lossy ones); shards are
binned with them; the shard set's manifest is checked field by field on load."""
import functools
import json
import os

import numpy as np
import pandas as pd
import pytest

import oocboost
from oocboost.cache.shards import (
    SHARDS_FILE,
    ShardSet,
    build_shard,
    edges_from_sketches,
    merge_sketches,
    sketch_part,
)
from oocboost.errors import CacheError


def _frame(n, seed=0):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({f"x{j}": rng.normal(size=n) for j in range(3)})
    df.loc[rng.random(n) < 0.05, "x1"] = np.nan
    df["c"] = rng.choice(["a", "b", "c", "d"], size=n)
    df["y"] = (df.x0 + (df.c == "b") > 0).astype(float)
    return df


def _parts(df, k):
    return [df.iloc[i * len(df) // k:(i + 1) * len(df) // k] for i in range(k)]


def _edges(parts, folder="."):
    return edges_from_sketches(functools.reduce(
        merge_sketches, [sketch_part(p, label="y") for p in parts]), folder)


@pytest.mark.parametrize("n_parts", [1, 3])
def test_exact_sketches_merge_to_the_single_machine_edges(tmp_path, n_parts):
    df = _frame(3000)
    single = oocboost.build_cache(df, tmp_path / "one.oocb", label="y", quiet=True)
    edges = _edges(_parts(df, n_parts), tmp_path)
    assert edges.bin_mapper == single.bin_mapper


def test_lossy_sketches_merge_within_their_rank_error():
    # 4 parts of 60,000 distinct values each: past the exact buffer, so each part's
    # sketch summarises; the merged edges' ranks in the whole data stay within the
    # merged sketch's bound of the target quantiles
    rng = np.random.default_rng(1)
    df = pd.DataFrame({"x": rng.standard_exponential(240_000), "y": np.zeros(240_000)})
    edges = _edges(_parts(df, 4))
    feature = edges.manifest["features"][0]
    bound = feature["rank_error_bound"]
    assert 0 < bound < 0.01
    values = np.sort(df.x.to_numpy())
    cuts = np.asarray(edges.bin_mapper.bin_edges[0])
    n_bins = edges.bin_mapper.n_value_bins[0]
    assert n_bins > 200
    ranks = np.searchsorted(values, cuts, side="left") / len(values)
    targets = np.arange(1, len(cuts) + 1) / n_bins
    assert np.abs(ranks - targets).max() <= bound + 2 / n_bins


def test_shards_bin_with_the_merged_edges_and_the_set_round_trips(tmp_path):
    df = _frame(2000)
    parts = _parts(df, 2)
    edges = _edges(parts, tmp_path)
    shards = [build_shard(p, tmp_path / f"s{i}.oocb", edges, label="y")
              for i, p in enumerate(parts)]
    made = ShardSet.create(tmp_path, shards, edges, workers=["w0", "w1"])
    loaded = ShardSet.load(tmp_path)
    assert loaded.n_rows == 2000 and loaded.paths == made.paths
    assert [s["worker"] for s in loaded.shards] == ["w0", "w1"]
    assert loaded.bin_mapper == edges.bin_mapper
    single = oocboost.build_cache(df, tmp_path / "one.oocb", label="y", quiet=True)
    codes = np.concatenate([np.concatenate([b.codes for b in s.iter_blocks()], axis=1)
                            for s in shards], axis=1)
    whole = np.concatenate([b.codes for b in single.iter_blocks()], axis=1)
    np.testing.assert_array_equal(codes, whole)
    stats = loaded.label_stats
    assert stats["n_rows"] == 2000 and stats["weighted_sum"] == df.y.sum()
    # evaluation data binned with the set's edges
    valid = oocboost.build_cache(_frame(500, seed=2), tmp_path / "v.oocb", label="y",
                                 reference=loaded.edges, quiet=True)
    assert valid.bin_mapper == loaded.bin_mapper


def test_parts_with_other_columns_are_refused():
    a = sketch_part(_frame(300), label="y")
    b = sketch_part(_frame(300).rename(columns={"x2": "z"}), label="y")
    with pytest.raises(CacheError, match="other columns or types"):
        merge_sketches(a, b)


def test_a_damaged_shard_set_is_refused_with_its_path(tmp_path):
    df = _frame(1000)
    edges = _edges([df], tmp_path)
    shard = build_shard(df, tmp_path / "s0.oocb", edges, label="y")
    ShardSet.create(tmp_path, [shard], edges)
    path = os.path.join(tmp_path, SHARDS_FILE)
    doc = json.load(open(path))

    def write(d):
        with open(path, "w") as f:
            json.dump(d, f)

    write({**doc, "extra": 1})
    with pytest.raises(CacheError, match="expected the fields"):
        ShardSet.load(tmp_path)
    write({**doc, "n_rows": 999})
    with pytest.raises(CacheError, match="not the sum"):
        ShardSet.load(tmp_path)
    write({**doc, "shards": [{**doc["shards"][0], "n_rows": 999}], "n_rows": 999})
    with pytest.raises(CacheError, match="changed since the set was written"):
        ShardSet.load(tmp_path)
    write({**doc, "version": 7})
    with pytest.raises(CacheError, match="version 7"):
        ShardSet.load(tmp_path)
    os.remove(path)
    with pytest.raises(
        CacheError, match="cannot read shard set .*shards.json: it does not exist"
    ):
        ShardSet.load(tmp_path)


def test_one_shard_per_file_of_a_folder_or_glob(tmp_path):
    from oocboost.cache.shards import build_shards, source_files
    from oocboost.cli import main
    from oocboost.errors import ParameterError

    df = _frame(3000)
    src = tmp_path / "src"
    src.mkdir()
    for k, part in enumerate(_parts(df, 3)):
        part.to_csv(src / f"part-{k}.csv", index=False)
    (src / "notes.txt").write_text("not data")
    assert [os.path.basename(f) for f in source_files(str(src))] == \
        ["part-0.csv", "part-1.csv", "part-2.csv"]
    shards = build_shards(str(src / "part-*.csv"), tmp_path / "set", label="y")
    single = oocboost.build_cache(src / "part-0.csv", tmp_path / "one.oocb", label="y",
                                  quiet=True)
    assert [s["n_rows"] for s in shards.shards] == [1000, 1000, 1000]
    assert [s["partitions"] for s in shards.shards] == [[0], [1], [2]]
    whole = oocboost.build_cache(df, tmp_path / "whole.oocb", label="y", quiet=True)
    assert shards.bin_mapper == whole.bin_mapper != single.bin_mapper
    assert main(["build-cache", str(src), "-o", str(tmp_path / "cli"), "--shards",
                 "--label", "y", "--quiet"]) == 0
    assert ShardSet.load(tmp_path / "cli").bin_mapper == whole.bin_mapper
    with pytest.raises(ParameterError, match="no CSV, Parquet or Arrow files"):
        source_files(str(tmp_path / "nothing-*.csv"))
