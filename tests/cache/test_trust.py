"""Tests of oocboost.cache.store.trust and the guarded manifest reader: a cache is
opened only when its files are regular files inside it, and a hostile manifest is a
clean CacheError, never a hang or a traceback from deep inside."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from oocboost.cache.store import Cache, CacheWriter
from oocboost.errors import CacheError

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _cache(path, backend="arrow", n_blocks=3):
    with CacheWriter(path, backend=backend, n_features=2, codes_dtype=np.uint8,
                     has_label=True, has_weight=False) as w:
        for i in range(n_blocks):
            w.write_block(np.full((2, 4), i, np.uint8), label=np.full(4, float(i)))
        w.commit()
    return str(path)


def _manifest(path):
    with open(os.path.join(path, "manifest.json")) as f:
        return json.load(f)


def _write_manifest(path, doc):
    with open(os.path.join(path, "manifest.json"), "w") as f:
        json.dump(doc, f)


def test_block_that_is_a_link_to_outside_is_refused(tmp_path):
    path = _cache(tmp_path / "c")
    outside = _cache(tmp_path / "other")
    block = os.path.join(path, "blocks", "block-000001.arrow")
    os.remove(block)
    os.symlink(os.path.join(outside, "blocks", "block-000001.arrow"), block)
    with pytest.raises(CacheError, match="block 1 file blocks/block-000001.arrow is a "
                                         "symbolic link"):
        Cache(path)


def test_blocks_folder_linked_outside_is_refused_also_for_append(tmp_path):
    """``--append`` onto such a cache wrote new blocks into the outside folder and
    deleted a file there."""
    from oocboost.cache.append import append_to_cache

    path = _cache(tmp_path / "c")
    outside = tmp_path / "outside"
    os.rename(os.path.join(path, "blocks"), outside)
    os.symlink(outside, os.path.join(path, "blocks"))
    before = sorted(os.listdir(outside))
    with pytest.raises(CacheError, match=r"blocks/ is a symbolic link"):
        Cache(path)
    csv = tmp_path / "more.csv"
    csv.write_text("f0,f1,label\n1,2,0\n")
    with pytest.raises(CacheError, match=r"blocks/ is a symbolic link"):
        append_to_cache(str(csv), path, quiet=True)
    assert sorted(os.listdir(outside)) == before


@pytest.mark.parametrize("backend", ["arrow", "hdf5"])
def test_fifo_and_device_are_refused_without_reading(tmp_path, backend):
    """A FIFO with ``nbytes: 0`` hung train and predict forever; a link to /dev/zero
    gave a MemoryError. Both are refused by what they are, before a read."""
    path = _cache(tmp_path / "c", backend=backend)
    doc = _manifest(path)
    if backend == "arrow":
        name, what = doc["blocks"][0]["file"], "block 0 file blocks/block-000000.arrow"
        doc["blocks"][0]["nbytes"] = 0
    else:
        name, what = doc["data_file"], "data file data.h5"
        doc["data_file_nbytes"] = 0
    _write_manifest(path, doc)
    target = os.path.join(path, name)
    os.remove(target)
    os.mkfifo(target)
    with pytest.raises(CacheError, match=f"{what}.* is a FIFO"):
        Cache(path)
    os.remove(target)
    os.symlink("/dev/zero", target)
    with pytest.raises(CacheError, match=f"{what}.* is a symbolic link"):
        Cache(path)


def test_manifest_that_is_a_fifo_is_refused_without_blocking(tmp_path):
    path = tmp_path / "c"
    path.mkdir()
    os.mkfifo(path / "manifest.json")
    # in a child with a timeout: a blocking open would hang the test run
    code = (f"import sys; sys.path.insert(0, {REPO!r})\n"
            f"from oocboost.cache.store import Cache\n"
            f"from oocboost.errors import CacheError\n"
            f"try:\n    Cache({str(path)!r})\nexcept CacheError as e:\n    print(e)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=60, check=False)
    assert "manifest.json is not a regular file" in r.stdout, r.stderr


def test_two_entries_naming_one_file_are_refused(tmp_path):
    path = _cache(tmp_path / "c")
    doc = _manifest(path)
    doc["blocks"][2]["file"] = doc["blocks"][1]["file"]
    doc["blocks"][2]["crc32"] = doc["blocks"][1]["crc32"]
    doc["blocks"][2]["nbytes"] = doc["blocks"][1]["nbytes"]
    _write_manifest(path, doc)
    with pytest.raises(CacheError, match="blocks 1 and 2 both name blocks/block-000001"):
        Cache(path)


@pytest.mark.parametrize("text, message", [
    ("[" * 200_000 + "]" * 200_000, "nested deeper than 64 levels"),
    ('{"format": "oocboost-cache", "x": NaN}', "not valid JSON.*NaN"),
    (b"\xff\xfe{}", "not UTF-8"),
])
def test_hostile_manifest_text_is_one_clean_error(tmp_path, text, message):
    path = _cache(tmp_path / "c")
    mode = "wb" if isinstance(text, bytes) else "w"
    with open(os.path.join(path, "manifest.json"), mode) as f:
        f.write(text)
    with pytest.raises(CacheError, match=message):
        Cache(path)


def _forge_block(cache, i, edit):
    """Rewrite block ``i`` of an arrow cache with ``edit(codes)`` and a manifest entry
    that matches it (size, checksum): what a crafted block looks like."""
    codes = np.array(cache.read_block(i).codes)
    edit(codes)
    replace_block(cache, i, codes)


def replace_block(cache, i, codes):
    """Write ``codes`` (a matrix or a SparseCodes) as block ``i`` of an arrow cache, its
    label and weight kept, with a manifest entry that matches the file."""
    from oocboost.cache.store.arrow_backend import ArrowBlockWriter

    block = cache.read_block(i)
    staging = os.path.join(os.path.dirname(cache.path), "staging")
    writer = ArrowBlockWriter(staging, cache.compression, cache.n_columns,
                              cache.codes_dtype, cache.has_label, cache.has_weight,
                              cache_id=cache.manifest["cache_id"])
    entry = writer.write_block(i, int(cache.block_row_starts[i]), codes, block.label,
                               block.weight)
    os.replace(os.path.join(staging, entry["file"]), os.path.join(cache.path, entry["file"]))
    doc = _manifest(cache.path)
    doc["blocks"][i].update(nbytes=entry["nbytes"], crc32=entry["crc32"])
    _write_manifest(cache.path, doc)


def test_codes_beyond_the_bins_are_refused_with_block_and_column(tmp_path):
    """Such a block trained to exit 0 with leaves of 3.2e6 on 0/1 labels, and two runs
    differed (the histogram kernels read out of bounds)."""
    import oocboost
    from oocboost.cache.build import build_cache

    rng = np.random.default_rng(0)
    X = np.column_stack([rng.integers(0, 10, 4000).astype(float), rng.normal(size=4000)])
    X[::7, 0] = np.nan
    y = (X[:, 1] > 0).astype(float)
    cache = build_cache(X, tmp_path / "c.oocb", label=y, block_rows=1000, quiet=True)
    limit = int(cache.bin_mapper.n_value_bins[0])
    missing = cache.bin_mapper.max_bin - 1
    # the missing code and the last value code are fine; one past it is not
    assert int(np.nanmax(np.where(cache.read_block(1).codes[0] == missing, 0,
                                  cache.read_block(1).codes[0]))) == limit - 1

    def bad(codes):
        codes[0, 123] = limit
    _forge_block(Cache(cache.path), 1, bad)
    forged = Cache(cache.path)
    assert forged.read_block(0).n_rows == 1000  # the other blocks still read
    with pytest.raises(CacheError, match=f"block 1, column 'f0': code {limit} at row 1123 "
                                         f"is beyond the column's {limit} bins"):
        forged.read_block(1)
    with pytest.raises(CacheError, match="block 1, column 'f0'"):
        oocboost.train({"objective": "binary:logistic", "verbosity": 0}, cache.path, 2)


def _copy_entry(src_path, src_index, dst_path, dst_index):
    """Copy a block file and its manifest entry (size, checksum) from one cache into
    another: a forged but self-consistent manifest."""
    import shutil

    src, dst = _manifest(src_path), _manifest(dst_path)
    entry = src["blocks"][src_index]
    shutil.copyfile(os.path.join(src_path, entry["file"]),
                    os.path.join(dst_path, dst["blocks"][dst_index]["file"]))
    dst["blocks"][dst_index].update(nbytes=entry["nbytes"], crc32=entry["crc32"],
                                    raw_nbytes=entry["raw_nbytes"])
    _write_manifest(dst_path, dst)


def test_blocks_are_bound_to_their_cache_and_index(tmp_path):
    """Forged but self-consistent manifests trained silently on the wrong rows: a block
    and its entry copied from another cache, or an entry pointing at another block."""
    path = _cache(tmp_path / "c")
    other = _cache(tmp_path / "other")   # same shape, other rows' values
    _copy_entry(other, 1, path, 1)
    with pytest.raises(CacheError, match=r"block 1 \(blocks/block-000001.arrow\) belongs "
                                         r"to another cache"):
        Cache(path).read_block(1)
    path2 = _cache(tmp_path / "c2")
    _copy_entry(path2, 2, path2, 1)       # block 1's entry now reads block 2's bytes
    cache = Cache(path2)
    assert cache.read_block(0).label[0] == 0.0
    with pytest.raises(CacheError, match=r"block 1 .* holds block 2 of this cache"):
        cache.read_block(1)


def test_hdf5_data_file_is_bound_to_its_cache(tmp_path):
    import shutil

    path = _cache(tmp_path / "c", backend="hdf5")
    other = _cache(tmp_path / "other", backend="hdf5")
    shutil.copyfile(os.path.join(other, "data.h5"), os.path.join(path, "data.h5"))
    doc = _manifest(path)
    doc["data_file_nbytes"] = os.path.getsize(os.path.join(path, "data.h5"))
    _write_manifest(path, doc)
    with pytest.raises(CacheError, match="data.h5 belongs to another cache"):
        Cache(path).read_block(0)


def test_cache_rebuilt_while_read_is_said_so(tmp_path):
    """Training while another process rebuilt the cache ended with a misleading
    'corrupted (checksum mismatch)'."""
    path = _cache(tmp_path / "c")
    reader = Cache(path)
    reader.read_block(0)
    with CacheWriter(path, overwrite=True, n_features=2, codes_dtype=np.uint8,
                     has_label=True, has_weight=False) as w:   # another process, same layout
        for i in range(3):
            w.write_block(np.full((2, 4), 9, np.uint8), label=np.full(4, 9.0))
        w.commit()
    with pytest.raises(CacheError, match=f"cache {path} was replaced while this run read "
                                         f"it \\(block 1: it was rebuilt"):
        reader.read_block(1)
    assert Cache(path).read_block(1).label[0] == 9.0
