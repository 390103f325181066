"""Tests of oocboost.cache.plan: the build plan's arithmetic, block rows and refusals."""
import re

import pytest

from oocboost.cache.plan import (
    BLOCK_ROW_PAD,
    CSV_READER_FIXED_BYTES,
    SMALLEST_BLOCK_ROWS,
    plan_build,
)
from oocboost.errors import MemoryLimitError
from oocboost.utils.budget import BASELINE_SLACK_BYTES
from oocboost.utils.sizes import MiB, parse_size

GiB = 1024**3


def _smallest_from_message(exc):
    m = re.search(r"the smallest limit that works here is (\d+) MiB", str(exc))
    assert m, str(exc)
    return int(m.group(1)) * MiB


def _build_model_total(p):
    # pyarrow's streaming CSV reader: a fixed part plus ~40x its block
    parse = CSV_READER_FIXED_BYTES + 40 * p.csv_block_bytes
    # two parsed batches for the sketching thread, up to 4x their CSV bytes each
    queued = 8 * p.csv_block_bytes
    batch = 4 * p.csv_block_bytes  # the one being spooled (pass 1) or binned (pass 2)
    pass1 = parse + queued + p.n_columns * p.sketch_bytes_per_column + batch
    # the block being assembled, its lz4 serialisation, and the raw one
    pass2 = parse + batch + 3 * p.block_rows * (p.n_columns * p.codes_itemsize + 8)
    return p.baseline_bytes + p.margin_bytes + max(pass1, pass2)


def test_build_block_rows_shrink_with_the_limit():
    rows = []
    for limit in ["8G", "2G", "1G", "512M", "400M", "330M", "300M"]:
        p = plan_build(limit, 28, baseline_bytes=150 * MiB)
        assert p.estimated_peak_bytes == _build_model_total(p) <= parse_size(limit)
        pow2 = p.block_rows - BLOCK_ROW_PAD  # a power of two, padded (plan.BLOCK_ROW_PAD)
        assert 4096 <= pow2 <= 262144 and pow2 & (pow2 - 1) == 0
        # training's block buffers at the same limit: a quarter of the budget at most
        train_buffers = 4 * 2 * p.block_rows * (28 * p.codes_itemsize + 8)
        assert p.block_rows == SMALLEST_BLOCK_ROWS or train_buffers <= 0.25 * (
            parse_size(limit) - p.baseline_bytes - p.margin_bytes)
        rows.append(p.block_rows)
    assert rows == sorted(rows, reverse=True)
    assert rows[0] == 262144 + BLOCK_ROW_PAD and rows[-1] <= 65536 + BLOCK_ROW_PAD
    assert "block_rows" in p.describe() and p.as_dict()["block_rows"] == p.block_rows


@pytest.mark.parametrize("max_bin", [256, 1024])
@pytest.mark.parametrize("limit", [None, "8G", "1G", "512M", "300M"])
def test_chosen_blocks_spread_a_rows_features_over_cache_sets(limit, max_bin):
    """Feature f's code of a row is f * block_rows * itemsize bytes into the block: the
    14 features a histogram thread updates per row must not all fall in one set of a
    32 KiB, 8-way L1 (64 sets of 64-byte lines), as they did with power-of-two blocks."""
    p = plan_build(limit, 28, max_bin=max_bin, baseline_bytes=150 * MiB)
    stride = p.block_rows * p.codes_itemsize
    sets = {(f * stride // 64) % 64 for f in range(14)}
    assert len(sets) == 14, (p.block_rows, p.codes_itemsize, sorted(sets))


def test_build_tight_limit_shrinks_buffers_and_refuses_below():
    p = plan_build("272M", 28, baseline_bytes=150 * MiB)
    assert p.block_rows <= 65536 + BLOCK_ROW_PAD
    assert p.csv_block_bytes < 1 << 20 or p.sketch_bytes_per_column < 1 << 20
    with pytest.raises(MemoryLimitError) as info:
        plan_build("160M", 28, baseline_bytes=150 * MiB)
    smallest = _smallest_from_message(info.value)
    ok = plan_build(smallest, 28, baseline_bytes=150 * MiB)
    assert ok.estimated_peak_bytes <= smallest and ok.block_rows <= 65536 + BLOCK_ROW_PAD
    tightest = plan_build(smallest - BASELINE_SLACK_BYTES, 28, baseline_bytes=150 * MiB)
    assert tightest.csv_block_bytes == 256 * 1024
    assert tightest.sketch_bytes_per_column == 64 * 1024
    with pytest.raises(MemoryLimitError):
        plan_build(smallest - BASELINE_SLACK_BYTES - MiB, 28, baseline_bytes=150 * MiB)


def test_build_shrinks_csv_blocks_before_sketches():
    """Smaller sketches cost bin accuracy, smaller CSV blocks only parsing speed."""
    p = plan_build("330M", 28, baseline_bytes=150 * MiB)
    assert p.csv_block_bytes < 1 << 20
    assert p.sketch_bytes_per_column == 2 * MiB


def test_build_explicit_block_rows_is_honoured_and_checked():
    p = plan_build("1G", 28, baseline_bytes=150 * MiB, block_rows=10_000)
    assert p.block_rows == 10_000
    with pytest.raises(MemoryLimitError) as info:
        plan_build("256M", 28, baseline_bytes=150 * MiB, block_rows=1_000_000)
    smallest = _smallest_from_message(info.value)
    assert (
        plan_build(smallest, 28, baseline_bytes=150 * MiB, block_rows=1_000_000).block_rows
        == 1_000_000
    )


def test_build_uint16_codes_and_no_limit():
    p8 = plan_build(None, 28, baseline_bytes=0)
    p16 = plan_build(None, 28, max_bin=1024, baseline_bytes=0)
    assert p8.codes_itemsize == 1 and p16.codes_itemsize == 2
    assert p8.csv_block_bytes == 1 << 20 and p8.block_rows == 262144 + BLOCK_ROW_PAD
    assert p16.block_bytes > p8.block_bytes * p16.block_rows / p8.block_rows


def test_plan_baseline_defaults_to_current_rss():
    p = plan_build("8G", 4)
    assert 10 * MiB < p.baseline_bytes < 8 * GiB


def test_build_plan_counts_the_csv_reader_only_for_text_sources():
    csv = plan_build("2G", 28, baseline_bytes=150 * MiB)
    parquet = plan_build("2G", 28, baseline_bytes=150 * MiB, text_source=False)
    assert csv.parse_bytes - parquet.parse_bytes == CSV_READER_FIXED_BYTES
