import json
import os
import signal
import subprocess
import sys
import textwrap
import threading

import h5py
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from oocboost.cache.store import Block, Cache, CacheWriter
from oocboost.errors import CacheError, ParameterError

BACKENDS = ["arrow", "hdf5"]
COMPRESSIONS = {"arrow": ["lz4", "zstd", "none"], "hdf5": ["lzf", "gzip", "none"]}
N_ROWS, N_FEATURES = 130, 5
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _data(dtype=np.uint8, n_rows=N_ROWS, seed=0):
    rng = np.random.default_rng(seed)
    hi = 255 if dtype == np.uint8 else 1000
    # Skewed codes so the compressors actually compress something.
    codes = np.minimum(rng.geometric(0.2, (N_FEATURES, n_rows)) - 1, hi).astype(dtype)
    label = rng.standard_normal(n_rows).astype(np.float32)
    weight = rng.random(n_rows).astype(np.float32)
    return codes, label, weight


def _build(
    path,
    backend,
    block_rows,
    dtype=np.uint8,
    compression=None,
    has_weight=True,
    fields=None,
    **kw,
):
    codes, label, weight = _data(dtype)
    with CacheWriter(
        path,
        backend=backend,
        compression=compression,
        n_features=N_FEATURES,
        codes_dtype=dtype,
        has_label=True,
        has_weight=has_weight,
        **kw,
    ) as w:
        for a in range(0, N_ROWS, block_rows):
            w.write_block(
                codes[:, a : a + block_rows],
                label[a : a + block_rows],
                weight[a : a + block_rows] if has_weight else None,
            )
        w.commit(fields or {})
    return codes, label, weight


def _siblings(path):
    parent, name = os.path.split(str(path))
    return sorted(s for s in os.listdir(parent) if s.startswith(name))


@pytest.fixture(scope="module")
def caches(tmp_path_factory):
    """One cache per (backend, block_rows, dtype), shared by the round-trip tests."""
    root = tmp_path_factory.mktemp("caches")
    out = {}
    for backend in BACKENDS:
        for block_rows in (1, 7, 64, N_ROWS):
            for dtype in (np.uint8, np.uint16):
                path = root / f"{backend}-{block_rows}-{np.dtype(dtype).name}"
                out[backend, block_rows, np.dtype(dtype).name] = (
                    str(path),
                    _build(path, backend, block_rows, dtype),
                )
    return out


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("block_rows", [1, 7, 64, N_ROWS])
@pytest.mark.parametrize("depth", [0, 1, 3])
@pytest.mark.parametrize("resident", [0, 10**9])
def test_round_trip(caches, backend, block_rows, depth, resident):
    path, (codes, label, weight) = caches[backend, block_rows, "uint8"]
    with Cache(path) as c:
        assert (c.n_rows, c.n_features, c.block_rows, c.backend) == (
            N_ROWS,
            N_FEATURES,
            block_rows,
            backend,
        )
        assert c.n_blocks == -(-N_ROWS // block_rows)
        assert c.block_row_starts.dtype == np.int64
        np.testing.assert_array_equal(c.block_row_starts, np.arange(0, N_ROWS, block_rows))
        for _ in range(2):  # the second pass comes from resident memory when enabled
            blocks = list(c.iter_blocks(prefetch=depth, resident_bytes=resident))
            assert [b.index for b in blocks] == list(range(c.n_blocks))
            for b in blocks:
                assert isinstance(b, Block)
                assert b.codes.shape == (N_FEATURES, b.n_rows) and b.codes.dtype == np.uint8
                assert b.codes.flags.c_contiguous and not b.codes.flags.writeable
                assert b.label.dtype == np.float32 and b.weight.dtype == np.float32
                assert b.row_start == c.block_row_starts[b.index]
            np.testing.assert_array_equal(
                np.concatenate([b.codes for b in blocks], axis=1), codes
            )
            np.testing.assert_array_equal(np.concatenate([b.label for b in blocks]), label)
            np.testing.assert_array_equal(np.concatenate([b.weight for b in blocks]), weight)
        assert c.resident_nbytes == (c.nbytes_raw if resident else 0)
        y, w = c.read_labels()
        np.testing.assert_array_equal(y, label)
        np.testing.assert_array_equal(w, weight)
        lab_only = list(c.iter_blocks(prefetch=depth, with_codes=False))
        assert all(b.codes is None for b in lab_only)
        np.testing.assert_array_equal(np.concatenate([b.label for b in lab_only]), label)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("block_rows", [1, 7, 64])
def test_uint16_and_block_subsets(caches, backend, block_rows):
    path, (codes, label, _) = caches[backend, block_rows, "uint16"]
    c = Cache(path)
    assert c.codes_dtype == np.uint16
    order = [c.n_blocks - 1, 0, c.n_blocks // 2]
    for depth in (0, 2):
        got = list(c.iter_blocks(prefetch=depth, block_indices=order))
        assert [b.index for b in got] == order
        for b in got:
            assert b.codes.dtype == np.uint16
            np.testing.assert_array_equal(
                b.codes, codes[:, b.row_start : b.row_start + b.n_rows]
            )
            np.testing.assert_array_equal(b.label, label[b.row_start : b.row_start + b.n_rows])
    with pytest.raises(ParameterError, match="out of range"):
        c.read_block(c.n_blocks)
    with pytest.raises(ParameterError, match="out of range"):
        c.iter_blocks(block_indices=[0, -1])
    c.close()


@pytest.mark.parametrize("backend", ["arrow", "hdf5"])
def test_fully_resident_pass_reads_nothing(caches, backend, monkeypatch):
    """Once every block is resident, a pass hands them out without a reader thread."""
    import oocboost.cache.store.reader as reader

    path, (codes, _, _) = caches[backend, 7, "uint8"]
    c = Cache(path)
    first = list(c.iter_blocks(resident_bytes=10**9))
    assert c.resident_nbytes == c.nbytes_raw

    def no_reader(*args, **kwargs):
        raise AssertionError("a fully resident pass started the reader")

    monkeypatch.setattr(reader, "prefetch", no_reader)
    again = list(c.iter_blocks(prefetch=2, resident_bytes=10**9))
    assert [b.index for b in again] == list(range(c.n_blocks))
    assert all(a is b for a, b in zip(first, again))
    some = list(c.iter_blocks(block_indices=[2, 0]))
    assert [b.index for b in some] == [2, 0]
    np.testing.assert_array_equal(np.concatenate([b.codes for b in again], axis=1), codes)
    c.close()


def test_resident_budget_keeps_leading_blocks(caches):
    path, (codes, _, _) = caches["arrow", 7, "uint8"]
    c = Cache(path)
    per_block = 7 * N_FEATURES + 2 * 7 * 4
    list(c.iter_blocks(resident_bytes=3 * per_block + 1))
    assert sorted(c._resident) == [0, 1, 2] and c.resident_nbytes == 3 * per_block
    list(c.iter_blocks())  # budget 0: keeps what is resident, adds nothing
    assert sorted(c._resident) == [0, 1, 2]
    got = list(c.iter_blocks(resident_bytes=per_block))  # smaller budget trims from the end
    assert sorted(c._resident) == [0] and got[0] is c._resident[0]
    np.testing.assert_array_equal(np.concatenate([b.codes for b in got], axis=1), codes)
    c.release_resident()
    assert c.resident_nbytes == 0


@pytest.mark.parametrize("backend", BACKENDS)
def test_compressions_round_trip_and_sizes(tmp_path, backend):
    for comp in COMPRESSIONS[backend]:
        path = tmp_path / comp
        codes, label, weight = _build(path, backend, 32, compression=comp)
        c = Cache(path)
        assert c.manifest["compression"] == comp
        np.testing.assert_array_equal(
            np.concatenate([b.codes for b in c.iter_blocks()], axis=1), codes
        )
        assert c.nbytes_raw == codes.nbytes + label.nbytes + weight.nbytes
        assert c.nbytes_stored > 0
        c.close()
    with pytest.raises(ParameterError, match="compression"):
        CacheWriter(tmp_path / "bad", backend=backend, compression="snappy", n_features=2,
                    codes_dtype=np.uint8, has_label=False, has_weight=False)
    assert _siblings(tmp_path / "bad") == []


def test_manifest_fields_and_metadata(tmp_path):
    fields = {
        "features": [{"name": f"x{i}", "type": "numeric"} for i in range(N_FEATURES)],
        "max_bin": 256,
        "label_stats": {"mean": np.float64(0.5), "counts": np.array([1, 2])},
    }
    _build(tmp_path / "c", "arrow", 50, has_weight=False, fields=fields)
    c = Cache(tmp_path / "c")
    assert c.feature_names == [f"x{i}" for i in range(N_FEATURES)]
    assert c.max_bin == 256 and not c.has_weight and c.has_label
    assert c.manifest["label_stats"] == {"mean": 0.5, "counts": [1, 2]}
    with open(tmp_path / "c" / "manifest.json") as f:
        m = json.load(f)
    assert m["format"] == "oocboost-cache" and m["format_version"] == 1
    assert [b["n_rows"] for b in m["blocks"]] == [50, 50, 30]
    assert all(isinstance(b["crc32"], int) for b in m["blocks"])
    assert c.read_block(2).weight is None
    with pytest.raises(CacheError, match="no bin_mapper"):
        c.bin_mapper
    with pytest.raises(ParameterError, match="reserved"):
        with CacheWriter(
            tmp_path / "d",
            n_features=1,
            codes_dtype=np.uint8,
            has_label=False,
            has_weight=False,
        ) as w:
            w.write_block(np.zeros((1, 3), np.uint8))
            w.commit({"n_rows": 5})
    assert _siblings(tmp_path / "d") == []


def test_writer_validates_blocks(tmp_path):
    with CacheWriter(
        tmp_path / "c", n_features=3, codes_dtype=np.uint8, has_label=True, has_weight=False
    ) as w:
        with pytest.raises(ParameterError, match="expected uint8"):
            w.write_block(np.zeros((3, 4), np.uint16), np.zeros(4))
        with pytest.raises(ParameterError, match=r"expected uint8 \(3, n_rows\)"):
            w.write_block(np.zeros((2, 4), np.uint8), np.zeros(4))
        with pytest.raises(ParameterError, match="needs a label"):
            w.write_block(np.zeros((3, 4), np.uint8))
        with pytest.raises(ParameterError, match="has_weight=False"):
            w.write_block(np.zeros((3, 4), np.uint8), np.zeros(4), np.ones(4))
        with pytest.raises(ParameterError, match=r"label has shape \(5,\)"):
            w.write_block(np.zeros((3, 4), np.uint8), np.zeros(5))
        w.write_block(np.zeros((3, 4), np.uint8), np.zeros(4))
        w.write_block(np.zeros((3, 2), np.uint8), np.zeros(2))
        with pytest.raises(ParameterError, match="block_rows=4"):
            w.write_block(np.zeros((3, 2), np.uint8), np.zeros(2))
        w.commit()
    assert Cache(tmp_path / "c").n_rows == 6
    with pytest.raises(CacheError, match="empty cache"):
        with CacheWriter(
            tmp_path / "e",
            n_features=3,
            codes_dtype=np.uint8,
            has_label=False,
            has_weight=False,
        ) as w:
            w.commit()
    assert _siblings(tmp_path / "e") == []
    with pytest.raises(ParameterError, match="backend"):
        CacheWriter(
            tmp_path / "x",
            backend="parquet",
            n_features=1,
            codes_dtype=np.uint8,
            has_label=False,
            has_weight=False,
        )
    with pytest.raises(ParameterError, match="codes_dtype"):
        CacheWriter(
            tmp_path / "x",
            n_features=1,
            codes_dtype=np.int32,
            has_label=False,
            has_weight=False,
        )


@pytest.mark.parametrize("backend", BACKENDS)
def test_exception_mid_build_leaves_nothing(tmp_path, backend):
    path = tmp_path / "c"
    codes, label, _ = _data()
    with pytest.raises(RuntimeError, match="source broke"):
        with CacheWriter(path, backend=backend, n_features=N_FEATURES, codes_dtype=np.uint8,
                         has_label=True, has_weight=False) as w:
            w.write_block(codes[:, :10], label[:10])
            assert len(_siblings(path)) == 1  # the temporary exists while building
            raise RuntimeError("source broke")
    assert os.listdir(tmp_path) == []
    # Leaving the block without commit is an abort too.
    with CacheWriter(path, backend=backend, n_features=N_FEATURES, codes_dtype=np.uint8,
                     has_label=True, has_weight=False) as w:
        w.write_block(codes[:, :10], label[:10])
    assert os.listdir(tmp_path) == []
    with pytest.raises(CacheError, match="aborted"):
        w.write_block(codes[:, :10], label[:10])


_KILLED_BUILD = textwrap.dedent(
    """
    import sys, time
    import numpy as np
    sys.path.insert(0, {repo!r})
    from oocboost.cache.store import CacheWriter
    w = CacheWriter({path!r}, backend={backend!r}, n_features=3, codes_dtype=np.uint8,
                    has_label=False, has_weight=False)
    for _ in range(3):
        w.write_block(np.ones((3, 8), np.uint8))
    print("ready", flush=True)
    time.sleep(60)
    """
)


@pytest.mark.parametrize("backend", BACKENDS)
def test_sigkill_mid_build_leaves_no_valid_cache(tmp_path, backend):
    path = str(tmp_path / "c")
    proc = subprocess.Popen(
        [sys.executable, "-c", _KILLED_BUILD.format(repo=REPO, path=path, backend=backend)],
        stdout=subprocess.PIPE, text=True,
    )
    try:
        assert proc.stdout.readline().strip() == "ready"
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
        proc.stdout.close()
    assert not os.path.exists(path)
    stale = _siblings(path)
    assert len(stale) == 1 and ".oocb.tmp-" in stale[0]
    with pytest.raises(CacheError):
        Cache(path)
    with pytest.raises(CacheError):
        Cache(os.path.join(str(tmp_path), stale[0]))  # no manifest: never valid
    # The next build into the same path removes the dead build's temporary.
    _build(path, backend, 64)
    assert _siblings(path) == ["c"]
    assert Cache(path).n_rows == N_ROWS


def _flip(fpath, offset, n=4):
    with open(fpath, "r+b") as f:
        f.seek(offset)
        chunk = f.read(n)
        f.seek(offset)
        f.write(bytes(b ^ 0xFF for b in chunk))


def test_corrupted_arrow_block(tmp_path):
    path = tmp_path / "c"
    codes, _, _ = _build(path, "arrow", 40)
    c = Cache(path)
    entry = c.manifest["blocks"][1]
    _flip(path / entry["file"], entry["nbytes"] // 2)
    np.testing.assert_array_equal(c.read_block(0).codes, codes[:, :40])
    with pytest.raises(
        CacheError,
        match=r"block 1 \(blocks/block-000001.arrow\) is corrupted \(checksum mismatch",
    ):
        c.read_block(1)
    for depth in (0, 2):
        with pytest.raises(CacheError, match="block 1"):
            list(c.iter_blocks(prefetch=depth))
    with pytest.raises(CacheError, match="block 1"):
        c.read_labels()


@pytest.mark.parametrize("n_features, compressed", [(28, False), (2, True)])
def test_lz4_block_written_raw_unless_it_saves_enough(tmp_path, n_features, compressed):
    """Uniform codes do not compress; binary labels do. With 28 features lz4 saves about
    12% of a block, under LZ4_MIN_SAVINGS, so the block is written uncompressed; with 2
    features the labels are two thirds of the block and it stays compressed."""
    from oocboost.cache.store.arrow_backend import LZ4_MIN_SAVINGS

    rng = np.random.default_rng(3)
    # blocks large enough that the IPC framing (schema and metadata, ~1 KB) is small
    n_rows = 16384
    codes = rng.integers(0, 256, (n_features, n_rows), dtype=np.uint8)
    label = (rng.random(n_rows) < 0.5).astype(np.float32)
    path = tmp_path / "c"
    with CacheWriter(path, backend="arrow", compression="lz4", n_features=n_features,
                     codes_dtype=np.uint8, has_label=True, has_weight=False) as w:
        for a in range(0, n_rows, 4096):
            w.write_block(codes[:, a:a + 4096], label[a:a + 4096], None)
        w.commit({})
    c = Cache(path)
    for b in c.manifest["blocks"]:
        if compressed:
            assert b["nbytes"] < (1 - LZ4_MIN_SAVINGS) * b["raw_nbytes"]
        else:
            assert b["raw_nbytes"] <= b["nbytes"] < b["raw_nbytes"] + 4096  # IPC framing only
    got = list(c.iter_blocks(prefetch=0))
    np.testing.assert_array_equal(np.concatenate([b.codes for b in got], axis=1), codes)
    np.testing.assert_array_equal(np.concatenate([b.label for b in got]), label)


@pytest.mark.parametrize("n_features, compressed", [(28, False), (2, True), (1, True)])
def test_large_blocks_decide_lz4_on_a_sample(tmp_path, n_features, compressed):
    """Blocks over twice LZ4_SAMPLE_BYTES of codes are judged on a sample of their rows
    (codes and labels in the block's proportions): uniform codes of 28 features are
    written raw without compressing the block whole, a block whose binary labels (or
    runs of codes) dominate is compressed."""
    from oocboost.cache.store import arrow_backend as ab

    rng = np.random.default_rng(4)
    n_rows = 300_000
    codes = rng.integers(0, 256, (n_features, n_rows), dtype=np.uint8)
    if n_features == 1:
        codes[:] = np.repeat(rng.integers(0, 256, n_rows // 1000), 1000)    # runs
    label = (rng.random(n_rows) < 0.5).astype(np.float32)
    assert codes.nbytes > 2 * ab.LZ4_SAMPLE_BYTES
    path = tmp_path / "c"
    with CacheWriter(path, backend="arrow", compression="lz4", n_features=n_features,
                     codes_dtype=np.uint8, has_label=True, has_weight=False) as w:
        w.write_block(codes, label, None)
        w.commit({})
    c = Cache(path)
    (b,) = c.manifest["blocks"]
    if compressed:
        assert b["nbytes"] < (1 - ab.LZ4_MIN_SAVINGS) * b["raw_nbytes"]
    else:
        assert b["raw_nbytes"] <= b["nbytes"] < b["raw_nbytes"] + 4096
    (got,) = list(c.iter_blocks(prefetch=0))
    np.testing.assert_array_equal(got.codes, codes)
    np.testing.assert_array_equal(got.label, label)


@pytest.mark.parametrize("compression", [None, "zstd"])
def test_arrow_blocks_outlive_their_files(tmp_path, compression, monkeypatch):
    """Arrow blocks are memory-mapped: their arrays stay valid (the mapping lives with
    them) when the reader is closed and the cache folder is removed, for raw blocks
    (views of the mapping) and compressed ones."""
    import mmap
    import shutil

    from oocboost.cache.store import arrow_backend

    monkeypatch.setattr(arrow_backend, "MMAP_MIN_BYTES", 1)   # the test's blocks are small
    mapped = []
    real_mmap = mmap.mmap
    monkeypatch.setattr(arrow_backend.mmap, "mmap",
                        lambda *a, **k: mapped.append(1) or real_mmap(*a, **k))
    path = tmp_path / "c"
    codes, label, _ = _build(path, "arrow", 40, compression=compression)
    c = Cache(path)
    blocks = list(c.iter_blocks(prefetch=1))
    c.close()
    shutil.rmtree(path)
    np.testing.assert_array_equal(np.concatenate([b.codes for b in blocks], axis=1), codes)
    np.testing.assert_array_equal(np.concatenate([b.label for b in blocks]), label)
    assert not blocks[0].codes.flags.writeable
    assert len(mapped) == len(blocks)


def test_arrow_block_read_when_mapping_is_refused(tmp_path, monkeypatch):
    """A mapping the system refuses (e.g. out of memory areas) falls back to reading."""
    from oocboost.cache.store import arrow_backend

    def refuse(*args, **kwargs):
        raise OSError(12, "Cannot allocate memory")

    monkeypatch.setattr(arrow_backend, "MMAP_MIN_BYTES", 1)
    monkeypatch.setattr(arrow_backend.mmap, "mmap", refuse)
    codes, _, _ = _build(tmp_path / "c", "arrow", 40)
    got = np.concatenate([b.codes for b in Cache(tmp_path / "c").iter_blocks(prefetch=0)],
                         axis=1)
    np.testing.assert_array_equal(got, codes)


def test_arrow_block_checksum_once_per_file_identity(tmp_path, monkeypatch):
    """Each block file is hashed once per reader; a file rewritten or replaced since (other
    inode, size or modification time) is hashed and checked again."""
    from oocboost.cache.store import arrow_backend

    path = tmp_path / "c"
    codes, _, _ = _build(path, "arrow", 40)
    c = Cache(path)
    hashed = []
    real_crc32 = arrow_backend.zlib.crc32
    monkeypatch.setattr(
        arrow_backend.zlib, "crc32", lambda data: hashed.append(len(data)) or real_crc32(data)
    )
    n_blocks = len(c.manifest["blocks"])
    for _ in range(3):
        got = np.concatenate([b.codes for b in c.iter_blocks(prefetch=0)], axis=1)
        np.testing.assert_array_equal(got, codes)
    assert len(hashed) == n_blocks

    entry = c.manifest["blocks"][1]
    fpath = path / entry["file"]
    before = os.stat(fpath)
    _flip(fpath, entry["nbytes"] // 2)
    # the clock may not tick between the read and the rewrite; move it on explicitly
    os.utime(fpath, ns=(before.st_atime_ns, before.st_mtime_ns + 1_000_000))
    with pytest.raises(CacheError, match=r"block 1 .*\(checksum mismatch"):
        c.read_block(1)

    _flip(fpath, entry["nbytes"] // 2)  # repaired, then replaced by a corrupted copy
    data = bytearray(fpath.read_bytes())
    data[10] ^= 0xFF
    (tmp_path / "replacement").write_bytes(bytes(data))
    os.replace(tmp_path / "replacement", fpath)
    with pytest.raises(CacheError, match=r"block 1 .*\(checksum mismatch"):
        c.read_block(1)


def test_corrupted_hdf5_block(tmp_path):
    path = tmp_path / "c"
    codes, _, _ = _build(path, "hdf5", 40, compression="none")
    with h5py.File(path / "data.h5", "r") as f:
        info = f["codes"].id.get_chunk_info_by_coord((0, 40))
    _flip(path / "data.h5", info.byte_offset + 10)
    c = Cache(path)
    np.testing.assert_array_equal(c.read_block(0).codes, codes[:, :40])
    with pytest.raises(CacheError, match=r"block 1 \(data.h5, rows 40..79\) is corrupted"):
        c.read_block(1)
    with pytest.raises(CacheError, match="block 1"):
        list(c.iter_blocks(prefetch=2))
    c.close()


_H5PY_ONLY_FOR_HDF5 = """
import sys
import numpy as np
import oocboost
X = np.random.default_rng(0).normal(size=(300, 3))
cache = oocboost.build_cache(X, sys.argv[1] + "/arrow", label=(X[:, 0] > 0).astype(float),
                             quiet=True)
oocboost.train({"max_depth": 2}, oocboost.Cache(sys.argv[1] + "/arrow"), 2)
assert "h5py" not in sys.modules, "an Arrow cache imported h5py"
oocboost.build_cache(X, sys.argv[1] + "/hdf5", label=X[:, 0], backend="hdf5", quiet=True)
assert "h5py" in sys.modules
"""


def test_h5py_imported_only_for_hdf5_caches(tmp_path):
    # h5py costs 12 MiB of RSS and a tenth of a second: Arrow caches (the default) never load
    # it
    subprocess.run([sys.executable, "-c", _H5PY_ONLY_FOR_HDF5, str(tmp_path)], check=True,
                   env={**os.environ, "OOCBOOST_WARMUP": "0"})


@pytest.mark.parametrize("backend", BACKENDS)
def test_truncated_or_missing_files(tmp_path, backend):
    path = tmp_path / "c"
    _build(path, backend, 40)
    c = Cache(path)
    target = path / (c.manifest["blocks"][2]["file"] if backend == "arrow" else "data.h5")
    size = os.path.getsize(target)
    with open(target, "r+b") as f:
        f.truncate(size - 7)
    expected = (
        "block 2 file blocks/block-000002.arrow has"
        if backend == "arrow"
        else "data.h5 .all blocks. has"
    )
    with pytest.raises(CacheError, match=expected + ".*truncated"):
        Cache(path)
    if backend == "arrow":  # truncated after the cache was opened: caught at read time
        with pytest.raises(CacheError, match="block 2 .* is corrupted .*truncated"):
            c.read_block(2)
    os.remove(target)
    with pytest.raises(CacheError, match="missing"):
        Cache(path)


def _edit_manifest(path, change):
    with open(path / "manifest.json") as f:
        m = json.load(f)
    change(m)
    with open(path / "manifest.json", "w") as f:
        json.dump(m, f)


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda m: m.update(format="other"), "format 'other'"),
        (lambda m: m.update(format_version=3), "format_version 3 is not supported"),
        (lambda m: m.update(format_version=2), "format_version 2 needs the sparse field"),
        (lambda m: m.pop("n_rows"), "lacks the field 'n_rows'"),
        (lambda m: m.update(n_rows=200), "3 blocks listed, expected 4"),
        (lambda m: m.update(n_rows=131), "block 2 has n_rows=2, expected 3"),
        (lambda m: m["blocks"][1].update(row_start=3), "block 1 has row_start=3"),
        (lambda m: m["blocks"][0].update(file="../../etc/passwd"), "block 0 has file="),
        (lambda m: m.update(codes_dtype="int8"), "codes_dtype"),
        (lambda m: m.update(max_bin=1024), "max_bin=1024"),
    ],
)
def test_bad_manifest(tmp_path, change, message):
    path = tmp_path / "c"
    _build(path, "arrow", 64)
    _edit_manifest(path, change)
    with pytest.raises(CacheError, match=message):
        Cache(path)


def test_missing_or_garbled_manifest(tmp_path):
    with pytest.raises(CacheError, match="does not exist"):
        Cache(tmp_path / "nope")
    (tmp_path / "f").write_text("x")
    with pytest.raises(CacheError, match="is not a folder"):
        Cache(tmp_path / "f")
    path = tmp_path / "c"
    _build(path, "arrow", 64)
    (path / "manifest.json").write_text("{not json")
    with pytest.raises(CacheError, match="not valid JSON"):
        Cache(path)
    os.remove(path / "manifest.json")
    with pytest.raises(CacheError, match="has no manifest.json"):
        Cache(path)


@pytest.mark.parametrize("backend", BACKENDS)
def test_existing_paths_and_overwrite(tmp_path, backend):
    kw = dict(
        backend=backend, n_features=1, codes_dtype=np.uint8, has_label=False, has_weight=False
    )
    f = tmp_path / "file"
    f.write_text("precious")
    d = tmp_path / "dir"
    (d / "src").mkdir(parents=True)
    (d / "src" / "thesis.tex").write_text("precious")
    link = tmp_path / "link"
    link.symlink_to(d)
    # Overwrite or not, only a cache is ever replaced: a file, a link, a foreign folder
    # are refused, naming what is there.
    for overwrite in (False, True):
        for target, what in ((f, "a file"), (link, "a symbolic link"),
                             (d, r"a folder that is not an oocboost cache \(it holds src/\)")):
            with pytest.raises(CacheError, match=f"it is {what}"):
                CacheWriter(target, overwrite=overwrite, **kw)
    assert f.read_text() == "precious" and (d / "src" / "thesis.tex").read_text() == "precious"
    c = tmp_path / "cache"
    with CacheWriter(c, **kw) as w:
        w.write_block(np.full((1, 2), 7, np.uint8))
        w.commit()
    assert Cache(c).read_block(0).codes.tolist() == [[7, 7]]
    # An existing cache: refused without overwrite, replaced with it.
    with pytest.raises(CacheError, match="already exists"):
        CacheWriter(c, **kw)
    with CacheWriter(c, overwrite=True, **kw) as w:
        w.write_block(np.full((1, 3), 9, np.uint8))
        w.commit()
    assert Cache(c).read_block(0).codes.tolist() == [[9, 9, 9]]
    # A cache that also holds a file of the user's is not a cache's own to replace.
    (c / "notes.txt").write_text("mine")
    with pytest.raises(CacheError, match="also holds notes.txt"):
        CacheWriter(c, overwrite=True, **kw)
    assert (c / "notes.txt").read_text() == "mine"
    # An empty folder holds nothing to lose.
    e = tmp_path / "empty"
    e.mkdir()
    with CacheWriter(e, **kw) as w:
        w.write_block(np.zeros((1, 1), np.uint8))
        w.commit()
    assert Cache(e).n_rows == 1
    assert sorted(os.listdir(tmp_path)) == ["cache", "dir", "empty", "file", "link"]


def test_unfinished_cache_folder_may_be_overwritten(tmp_path):
    """A folder holding only the store's own names (a cache whose manifest was lost or
    damaged) is a cache's to replace."""
    kw = dict(n_features=1, codes_dtype=np.uint8, has_label=False, has_weight=False)
    c = tmp_path / "c"
    (c / "blocks").mkdir(parents=True)
    (c / "blocks" / "block-000000.arrow").write_bytes(b"x")
    (c / "manifest.json").write_text("{not json")
    with CacheWriter(c, overwrite=True, **kw) as w:
        w.write_block(np.full((1, 2), 3, np.uint8))
        w.commit()
    assert Cache(c).read_block(0).codes.tolist() == [[3, 3]]


def test_target_appearing_during_build_is_not_clobbered(tmp_path):
    path = tmp_path / "c"
    with pytest.raises(CacheError, match="it is a file"):
        with CacheWriter(
            path, n_features=1, codes_dtype=np.uint8, has_label=False, has_weight=False
        ) as w:
            w.write_block(np.zeros((1, 1), np.uint8))
            path.write_text("someone else's")
            w.commit()
    assert path.read_text() == "someone else's"
    assert os.listdir(tmp_path) == ["c"]


def test_hdf5_prefetch_thread_and_consumer_share_file(caches):
    path, (codes, _, _) = caches["hdf5", 7, "uint8"]
    c = Cache(path)
    baseline = threading.active_count()
    for b in c.iter_blocks(prefetch=3):
        # Reads from the consumer thread while the worker reads ahead.
        np.testing.assert_array_equal(c.read_block(b.index).codes, b.codes)
        if b.index == 10:
            break
    assert threading.active_count() == baseline
    c.close()


@settings(
    max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    backend=st.sampled_from(BACKENDS),
    n_rows=st.integers(1, 60),
    block_rows=st.integers(1, 70),
    depth=st.integers(0, 4),
    resident=st.integers(0, 2000),
)
def test_round_trip_property(tmp_path_factory, backend, n_rows, block_rows, depth, resident):
    path = tmp_path_factory.mktemp("prop") / "c"
    codes, label, _ = _data(n_rows=n_rows, seed=n_rows)
    with CacheWriter(path, backend=backend, n_features=N_FEATURES, codes_dtype=np.uint8,
                     has_label=True, has_weight=False) as w:
        for a in range(0, n_rows, block_rows):
            w.write_block(codes[:, a : a + block_rows], label[a : a + block_rows])
        w.commit()
    with Cache(path) as c:
        for _ in range(2):
            blocks = list(c.iter_blocks(prefetch=depth, resident_bytes=resident))
            np.testing.assert_array_equal(
                np.concatenate([b.codes for b in blocks], axis=1), codes
            )
            np.testing.assert_array_equal(np.concatenate([b.label for b in blocks]), label)
            assert c.resident_nbytes <= resident


@pytest.mark.parametrize("shape", [(1, 1), (3, 17), (5, 1000)])
def test_byte_planes_round_trip(shape):
    from oocboost.cache.store.arrow_backend import from_byte_planes, to_byte_planes

    rng = np.random.default_rng(shape[1])
    codes = rng.integers(0, 65536, shape).astype(np.uint16)
    planes = to_byte_planes(codes)
    assert planes.shape == (2,) + shape and planes.dtype == np.uint8
    np.testing.assert_array_equal(planes[0], codes & 0xFF)
    np.testing.assert_array_equal(planes[1], codes >> 8)
    np.testing.assert_array_equal(from_byte_planes(planes.ravel(), shape), codes)


def _narrow_and_wide(n_rows=8192):
    """Six one-byte-range rows and one two-byte row, uint16: the codes of a cache with one
    wide categorical feature."""
    rng = np.random.default_rng(7)
    codes = rng.integers(0, 256, (7, n_rows)).astype(np.uint16)
    codes[6] = rng.integers(0, 3000, n_rows)
    return codes


@pytest.mark.parametrize("compression", ["lz4", "zstd"])
def test_two_byte_codes_stored_as_byte_planes(tmp_path, compression, monkeypatch):
    """Numeric features' zero high bytes compress away as a plane; a cache written before
    byte planes (no codes_layout, interleaved bytes) still reads the same codes."""
    from oocboost.cache.store import arrow_backend

    codes = _narrow_and_wide()

    def write(path):
        with CacheWriter(path, backend="arrow", compression=compression, n_features=7,
                         codes_dtype=np.uint16, has_label=False, has_weight=False) as w:
            for a in range(0, codes.shape[1], 4096):
                w.write_block(codes[:, a:a + 4096])
            w.commit({})
        return Cache(path)

    planes = write(tmp_path / "planes")
    assert planes.manifest["codes_layout"] == "byte_planes"
    monkeypatch.setattr(arrow_backend, "to_byte_planes", lambda c: c)
    monkeypatch.setattr(arrow_backend.ArrowBlockWriter, "finish", lambda self: {})
    interleaved = write(tmp_path / "interleaved")
    assert "codes_layout" not in interleaved.manifest
    for cache in (planes, interleaved):
        got = np.concatenate([b.codes for b in cache.iter_blocks(prefetch=0)], axis=1)
        np.testing.assert_array_equal(got, codes)
        assert not got.flags.writeable or got.base is None
    # the high-byte plane of the six one-byte rows is 6/14 of the raw codes, all zero:
    # LZ4 removes it as a plane, not interleaved; zstd's entropy coder gets most of it
    # either way
    ratio = planes.nbytes_stored / interleaved.nbytes_stored
    assert ratio < (0.75 if compression == "lz4" else 1.0), ratio


@pytest.mark.parametrize("layout, dtype, backend", [
    ("shuffled", "uint16", "arrow"), ("byte_planes", "uint8", "arrow"),
    ("byte_planes", "uint16", "hdf5")])
def test_codes_layout_is_checked(tmp_path, layout, dtype, backend):
    path = tmp_path / "c"
    with CacheWriter(path, backend=backend, n_features=2, codes_dtype=np.dtype(dtype),
                     has_label=False, has_weight=False) as w:
        w.write_block(np.zeros((2, 10), dtype))
        w.commit({})
    _edit_manifest(path, lambda m: m.update(codes_layout=layout))
    with pytest.raises(CacheError, match="codes_layout"):
        Cache(path)
