"""Per-row state: the RAM and spilled stores behave the same; spills go beside the cache."""
import os

import numpy as np
import pytest

from oocboost.engine.rowstate import RowStateSpec, make_row_state, spill_dir_for

SPEC = RowStateSpec({"margin": ((None, 2), np.float64), "stats": ((3, None, 3), np.float32),
                     "node": ((3, None), np.int32)})


def test_bytes_per_row():
    assert SPEC.bytes_per_row() == 2 * 8 + 3 * 3 * 4 + 3 * 4


@pytest.mark.parametrize("in_memory", [True, False])
def test_every_blocks_views_are_c_contiguous(in_memory, tmp_path):
    # the kernels are compiled once for C-contiguous arrays; a strided view of a block
    # of a (n_trees, n_rows) array would compile each of them again
    state = make_row_state(SPEC, np.array([0, 4, 9]), 11, in_memory, spill_dir=str(tmp_path))
    try:
        for b in range(3):
            for name, view in state.load(b).items():
                assert view.flags.c_contiguous and view.flags.writeable, (name, b)
                assert view[:2].flags.c_contiguous, name    # a forest's first trees
    finally:
        state.close()


def test_full_is_the_rows_in_order_and_refuses_a_field_stored_by_block():
    state = make_row_state(SPEC, np.array([0, 4, 9]), 11, True)
    for b in range(3):
        views = state.load(b)
        views["margin"][:] = np.arange(views["margin"].size).reshape(-1, 2) + 100 * b
    margin = state.full("margin")
    assert margin.shape == (11, 2)
    np.testing.assert_array_equal(margin[4:9], state.load(1)["margin"])
    margin[10] = -1                                  # the whole array, not a copy
    assert (state.load(2)["margin"][1] == -1).all()
    with pytest.raises(ValueError, match="'node'.*stored a block at a time"):
        state.full("node")


@pytest.mark.parametrize("in_memory", [True, False])
def test_blocks_round_trip(in_memory, tmp_path):
    starts = np.array([0, 4, 9])
    state = make_row_state(SPEC, starts, 11, in_memory, spill_dir=str(tmp_path))
    try:
        for b, n in enumerate([4, 5, 2]):
            views = state.load(b)
            assert views["margin"].shape == (n, 2) and views["stats"].shape == (3, n, 3)
            views["margin"][:] = b + 1
            views["node"][:] = 10 * (b + 1)
            state.store(b, views)
        for b in range(3):
            views = state.load(b)
            assert np.all(views["margin"] == b + 1) and np.all(views["node"] == 10 * (b + 1))
            assert np.all(views["stats"] == 0)
        if not in_memory:
            assert os.path.dirname(state.dir) == str(tmp_path)
    finally:
        state.close()
    if not in_memory:
        assert not os.path.exists(state.dir)


def test_shape_needs_one_rows_axis():
    with pytest.raises(ValueError):
        RowStateSpec({"x": ((2, 3), np.float32)})


def test_spill_dir_is_the_cache_parent(tmp_path):
    class FakeCache:
        path = str(tmp_path / "train.oocb")

    assert spill_dir_for(FakeCache()) == str(tmp_path)


@pytest.mark.parametrize("in_memory", [True, False])
def test_storing_some_fields_keeps_the_others(in_memory, tmp_path):
    # Boosting's later passes load (stats, node) and write back only node.
    starts = np.array([0, 3, 7])
    state = make_row_state(SPEC, starts, 10, in_memory, spill_dir=str(tmp_path))
    try:
        for b in range(3):
            views = state.load(b)
            views["margin"][:] = b + 0.5
            views["stats"][:] = np.arange(views["stats"].size).reshape(views["stats"].shape)
            state.store(b, views)
        for b in range(3):
            views = state.load(b, ("stats", "node"))
            assert set(views) == {"stats", "node"}
            views["node"][:] = 7
            state.store(b, views, ("node",))
        for b, n in enumerate([3, 4, 3]):
            views = state.load(b)
            assert np.all(views["margin"] == b + 0.5) and np.all(views["node"] == 7)
            np.testing.assert_array_equal(views["stats"].ravel(), np.arange(3 * n * 3))
    finally:
        state.close()


@pytest.mark.parametrize("seed", range(3))
def test_spilled_passes_match_ram_whatever_the_access_order(seed, tmp_path):
    """Passes in block order, passes that change fields, out-of-order loads, views used
    after later loads (their pages unmapped in between), and arrays replaced before
    ``store``: the spilled store (mapped files) returns what the RAM store returns."""
    from oocboost.engine.rowstate import InMemoryRowState, SpilledRowState

    rng = np.random.default_rng(seed)
    starts = np.array([0, 5, 6, 13, 20])
    ram = InMemoryRowState(SPEC, starts, 26)
    spilled = SpilledRowState(SPEC, starts, 26, str(tmp_path))
    field_choices = [None, ("stats", "node"), ("node",), ("margin", "node")]
    try:
        for step in range(12):
            fields = field_choices[rng.integers(len(field_choices))]
            order = (range(len(starts)) if step % 3 else rng.permutation(len(starts)))
            held = []
            for b in order:
                a, c = ram.load(b, fields), spilled.load(b, fields)
                assert set(a) == set(c)
                for name in a:
                    np.testing.assert_array_equal(a[name], c[name], err_msg=f"{step} {b}")
                    a[name] += step + b + 1
                    c[name] += step + b + 1
                if rng.random() < 0.3:  # a fresh array in place of the view
                    name = sorted(c)[0]
                    a[name] = a[name] * 2
                    c[name] = c[name] * 2
                ram.store(b, a, None)
                spilled.store(b, c, None)
                held.append((b, a, c))
            for b, a, c in held:  # views stay valid after later loads
                for name in a:
                    np.testing.assert_array_equal(a[name], c[name], err_msg=f"held {step} {b}")
    finally:
        spilled.close()
        ram.close()
    assert not os.path.exists(spilled.dir)


def _pages_mapped(buffer):
    """Pages of ``buffer`` (an mmap) present in this process's page tables (Linux's
    /proc/self/pagemap, bit 63; readable without privileges)."""
    import ctypes

    addr = ctypes.addressof(ctypes.c_char.from_buffer(buffer))
    n_pages = len(buffer) // os.sysconf("SC_PAGE_SIZE")
    with open("/proc/self/pagemap", "rb") as f:
        f.seek(addr // os.sysconf("SC_PAGE_SIZE") * 8)
        entries = np.frombuffer(f.read(n_pages * 8), dtype=np.uint64)
    return np.flatnonzero(entries >> np.uint64(63))


@pytest.mark.skipif(not os.path.exists("/proc/self/pagemap"), reason="Linux page tables")
def test_spilled_passes_leave_about_one_block_mapped(tmp_path):
    """After passes that read and write a one-byte field block by block, only the pages
    around the last block stay mapped in the process: the page cache's large folios,
    mapped whole by a block's first fault, used to keep a neighbouring block's pages
    mapped until the next pass (a quarter of a 64M-row node file; the fix unmaps in
    FOLIO_BYTES units)."""
    from oocboost.engine.rowstate import FOLIO_BYTES, SpilledRowState

    block_rows, n_blocks = 131_136, 64       # training's block size at 512MB: 8 MiB
    spec = RowStateSpec({"node": ((None,), np.uint8), "stats": ((None,), np.float32)})
    state = SpilledRowState(spec, np.arange(n_blocks) * block_rows, n_blocks * block_rows,
                            str(tmp_path))
    try:
        for first in (True, False, False):
            for b in range(n_blocks):
                views = state.load(b)
                if first:
                    views["node"][:] = 1
                    views["stats"][:] = 2.0
                else:
                    views["node"][:] += views["stats"] > 0
                state.store(b, views)
        page = os.sysconf("SC_PAGE_SIZE")
        last_block_start = (n_blocks - 1) * block_rows
        for name, row_bytes in (("node", 1), ("stats", 4)):
            pages = _pages_mapped(state._maps[name])
            # the last block's rows, from its folio-aligned start
            lowest = last_block_start * row_bytes // FOLIO_BYTES * FOLIO_BYTES // page
            assert pages.size and pages.min() >= lowest, (name, pages.size, pages.min())
        np.testing.assert_array_equal(state.load(3)["node"], 3)
    finally:
        state.close()
