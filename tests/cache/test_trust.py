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
