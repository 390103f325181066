"""Tests of oocboost.memory: sizes, the planner's arithmetic, peak-RSS measurement."""
import re
import sys

import pytest

from oocboost.common import hist_width
from oocboost.errors import MemoryLimitError, ParameterError
from oocboost.utils.budget import BASELINE_SLACK_BYTES
from oocboost.cache.plan import CSV_READER_FIXED_BYTES, plan_build
from oocboost.utils.sizes import MiB, format_size, parse_size
from oocboost.utils.measure import MeasurementError, measure_peak_rss
from oocboost.utils.rss import current_rss, peak_rss
from oocboost.engine.plan import plan_train

GiB = 1024**3


# ----------------------------------------------------------------------------- sizes
@pytest.mark.parametrize(
    "text, expected",
    [
        (0, 0),
        (12345, 12345),
        ("12345", 12345),
        ("100B", 100),
        ("300k", 300 * 1024),
        ("300KiB", 300 * 1024),
        ("512M", 512 * MiB),
        ("512MB", 512 * MiB),
        ("512MiB", 512 * MiB),
        ("512 mib", 512 * MiB),
        ("2G", 2 * GiB),
        ("1.5GB", int(1.5 * GiB)),
        (" 1.5 GiB ", int(1.5 * GiB)),
        ("1T", 1024**4),
        (None, None),
    ],
)
def test_parse_size_table(text, expected):
    assert parse_size(text) == expected


@pytest.mark.parametrize("bad", ["", "abc", "-5M", "5X", "M", "1.2.3G", -1, True, [512], 3j, float("nan")])
def test_parse_size_rejects(bad):
    with pytest.raises(ParameterError, match="memory size|cannot read"):
        parse_size(bad)


def test_format_size():
    assert format_size(512 * MiB) == "512.0 MiB"
    assert format_size(812) == "812 B"
    assert format_size(1536) == "1.5 KiB"
    assert format_size(3 * GiB) == "3.0 GiB"
    assert parse_size(format_size(512 * MiB).replace(" ", "")) == 512 * MiB


def test_rss_of_this_process():
    now, peak = current_rss(), peak_rss()
    assert 10 * MiB < now < 64 * GiB
    assert peak >= now * 0.9  # ru_maxrss is a high-water mark (page granularity aside)


# ----------------------------------------------------------------------------- planner
TRAIN = dict(n_rows=1_000_000, n_features=28, max_bin=256, block_rows=65536, n_blocks=16,
             codes_itemsize=1, baseline_bytes=150 * MiB)


def _train_model_total(p):
    """Recompute the peak from the plan's own fields (the documented model)."""
    return (p.baseline_bytes + p.margin_bytes + (p.prefetch + 2) * p.block_bytes
            + p.block_scratch_bytes
            + p.hist_nodes * 2 * p.hist_columns * p.max_bin * hist_width(p.n_stats) * 8
            + p.state_bytes + p.resident_bytes)


@pytest.mark.parametrize("limit", ["4G", "1G", "512M", "300M", "260M", "230M"])
def test_train_plan_fits_its_own_model(limit):
    p = plan_train(limit, **TRAIN)
    assert p.estimated_peak_bytes == _train_model_total(p)
    assert p.estimated_peak_bytes <= parse_size(limit)
    assert p.margin_bytes == max(parse_size(limit) // 10, 32 * MiB)
    assert p.block_bytes == 2 * 65536 * (28 + 8)
    assert p.state_bytes_per_row == 8 + 4 + 4 + 4   # margin, gradient, hessian, node
    assert 0 <= p.prefetch <= 2 and 1 <= p.hist_nodes <= 64
    d = p.as_dict()
    assert d["state_in_ram"] == p.state_in_ram and d["resident_bytes"] == p.resident_bytes
    text = p.describe()
    assert "histograms" in text and "per-row state" in text and "estimated peak" in text


def test_train_plan_generous_limit_keeps_everything():
    p = plan_train("4G", **TRAIN)
    assert p.prefetch == 2 and p.hist_nodes == 64 and p.state_in_ram
    total = 1_000_000 * (28 + 8)
    assert p.resident_bytes == total  # the whole decompressed data fits
    assert p.resident_blocks == 16


def test_train_plan_without_limit():
    p = plan_train(None, **TRAIN)
    assert p.memory_limit is None and p.prefetch == 2 and p.hist_nodes == 64 and p.state_in_ram
    assert "no limit" in p.describe()


def test_int32_histograms_halve_the_bytes_per_node():
    """A forest's int32 sums (integer statistics) take half the bytes per histogram, so
    the same limit holds twice the nodes in flight; the description names the size."""
    kw = {**TRAIN, "max_nodes_in_flight": 10_000, "baseline_bytes": 100 * MiB}
    wide, narrow = plan_train("400M", **kw), plan_train("400M", hist_itemsize=4, **kw)
    assert narrow.hist_bytes_per_node * 2 == wide.hist_bytes_per_node
    assert narrow.hist_nodes >= 2 * wide.hist_nodes - 1
    assert "lanes x 4 B" in narrow.describe() and "lanes x 8 B" in wide.describe()


def test_train_plan_degrades_as_limit_shrinks():
    big, small = plan_train("1G", **TRAIN), plan_train("205M", **TRAIN)
    assert big.prefetch == 2 and big.state_in_ram
    assert small.prefetch < 2 or small.hist_nodes < 64 or not small.state_in_ram
    assert small.resident_bytes < big.resident_bytes


def test_state_in_ram_flips_when_rows_grow():
    kw = dict(TRAIN)
    flags = []
    for n_rows in (100_000, 1_000_000, 30_000_000, 100_000_000):
        kw.update(n_rows=n_rows, n_blocks=-(-n_rows // 65536))
        p = plan_train("512M", **kw)
        flags.append(p.state_in_ram)
        assert p.estimated_peak_bytes <= 512 * MiB
        if not p.state_in_ram:  # streamed: two blocks of state, independent of n_rows
            assert p.state_bytes == 2 * 65536 * p.state_bytes_per_row
    assert flags == [True, True, False, False]


def _smallest_from_message(exc):
    m = re.search(r"the smallest limit that works here is (\d+) MiB", str(exc))
    assert m, str(exc)
    return int(m.group(1)) * MiB


def test_train_refusal_gives_a_limit_that_works():
    with pytest.raises(MemoryLimitError) as info:
        plan_train("180M", **TRAIN)
    smallest = _smallest_from_message(info.value)
    assert "180.0 MiB is too small" in str(info.value)
    assert smallest == info.value.smallest_limit
    p = plan_train(smallest, **TRAIN)  # works ...
    assert p.estimated_peak_bytes <= smallest
    # ... and is the smallest whole MiB that does, plus the slack for baseline growth
    plan_train(smallest - BASELINE_SLACK_BYTES, **TRAIN)
    with pytest.raises(MemoryLimitError):
        plan_train(smallest - BASELINE_SLACK_BYTES - MiB, **TRAIN)


def test_train_refusal_with_explicit_prefetch():
    p = plan_train("512M", prefetch=1, **TRAIN)
    assert p.prefetch == 1
    with pytest.raises(MemoryLimitError) as info:
        plan_train("200M", prefetch=8, **TRAIN)
    smallest = _smallest_from_message(info.value)
    assert plan_train(smallest, prefetch=8, **TRAIN).prefetch == 8


@pytest.mark.parametrize(
    "kw, match",
    [
        (dict(n_features=0), "n_features"),
        (dict(max_bin=1), "max_bin"),
        (dict(block_rows=0), "block_rows"),
        (dict(prefetch=-1), "prefetch"),
        (dict(n_outputs=1.5), "n_outputs"),
        (dict(hist_itemsize=0), "hist_itemsize"),
    ],
)
def test_train_plan_parameter_errors(kw, match):
    with pytest.raises(ParameterError, match=match):
        plan_train("1G", **{**TRAIN, **kw})


def test_plan_memory_limit_must_be_positive():
    with pytest.raises(ParameterError, match="positive"):
        plan_train(0, **TRAIN)
    with pytest.raises(ParameterError):
        plan_build("lots", 28)


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
        assert 4096 <= p.block_rows <= 262144 and p.block_rows & (p.block_rows - 1) == 0
        # training's block buffers at the same limit: a quarter of the budget at most
        train_buffers = 4 * 2 * p.block_rows * (28 * p.codes_itemsize + 8)
        assert p.block_rows == 4096 or train_buffers <= 0.25 * (
            parse_size(limit) - p.baseline_bytes - p.margin_bytes)
        rows.append(p.block_rows)
    assert rows == sorted(rows, reverse=True)
    assert rows[0] == 262144 and rows[-1] <= 65536
    assert "block_rows" in p.describe() and p.as_dict()["block_rows"] == p.block_rows


def test_build_tight_limit_shrinks_buffers_and_refuses_below():
    p = plan_build("272M", 28, baseline_bytes=150 * MiB)
    assert p.block_rows <= 65536
    assert p.csv_block_bytes < 1 << 20 or p.sketch_bytes_per_column < 1 << 20
    with pytest.raises(MemoryLimitError) as info:
        plan_build("160M", 28, baseline_bytes=150 * MiB)
    smallest = _smallest_from_message(info.value)
    ok = plan_build(smallest, 28, baseline_bytes=150 * MiB)
    assert ok.estimated_peak_bytes <= smallest and ok.block_rows <= 65536
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
    assert plan_build(smallest, 28, baseline_bytes=150 * MiB, block_rows=1_000_000).block_rows == 1_000_000


def test_build_uint16_codes_and_no_limit():
    p8 = plan_build(None, 28, baseline_bytes=0)
    p16 = plan_build(None, 28, max_bin=1024, baseline_bytes=0)
    assert p8.codes_itemsize == 1 and p16.codes_itemsize == 2
    assert p8.csv_block_bytes == 1 << 20 and p8.block_rows == 262144
    assert p16.block_bytes > p8.block_bytes * p16.block_rows / p8.block_rows


def test_plan_baseline_defaults_to_current_rss():
    p = plan_build("8G", 4)
    assert 10 * MiB < p.baseline_bytes < 8 * GiB


# ----------------------------------------------------------------------------- measurement
def allocate(n_mib):
    """Run in a child by measure_peak_rss: allocate and touch ``n_mib`` MiB."""
    import numpy as np

    a = np.ones(n_mib * MiB // 8)
    return {"sum": float(a.sum()), "n": a.size}


ALLOC_200 = (
    "import numpy as np, pyarrow, numba, h5py, oocboost\n"
    "a = np.ones(200 * 1024 * 1024 // 8)\n"
)
IDLE = "import numpy, pyarrow, numba, h5py, oocboost\n"


def test_measure_command_allocating_200_mib():
    r = measure_peak_rss([sys.executable, "-c", ALLOC_200])
    assert r.returncode == 0 and r.seconds > 0
    assert 80 * MiB < r.baseline_bytes < 1024 * MiB
    assert 190 * MiB <= r.increase_bytes <= 260 * MiB, format_size(r.increase_bytes)
    assert r.peak_bytes == max(r.polled_peak_bytes, r.maxrss_bytes)


def test_measure_command_allocating_nothing():
    r = measure_peak_rss([sys.executable, "-c", IDLE])
    assert abs(r.increase_bytes) <= 30 * MiB, format_size(r.increase_bytes)


def test_measure_callable_returns_result_and_is_independent_of_this_process():
    import numpy as np

    ballast = np.ones(300 * MiB // 8)  # this process grows; the child's figure must not
    r = measure_peak_rss(f"{__name__}:allocate", 200)
    assert r.result == {"sum": float(200 * MiB // 8), "n": 200 * MiB // 8}
    assert 190 * MiB <= r.increase_bytes <= 260 * MiB, format_size(r.increase_bytes)
    del ballast


def test_measure_failure_raises_with_stderr_tail():
    with pytest.raises(MeasurementError, match="(?s)exited with code 3.*boom"):
        measure_peak_rss([sys.executable, "-c", "import sys; sys.stderr.write('boom'); sys.exit(3)"],
                         imports=None)
    r = measure_peak_rss([sys.executable, "-c", "import sys; sys.exit(3)"], imports=None, check=False)
    assert r.returncode == 3 and r.baseline_bytes == 0


def test_measure_timeout_kills():
    with pytest.raises(MeasurementError, match="timed out") as info:
        measure_peak_rss([sys.executable, "-c", "import time; time.sleep(30)"], imports=None, timeout=0.5)
    assert info.value.timed_out


def test_measure_rejects_bad_targets():
    with pytest.raises(ParameterError):
        measure_peak_rss("not a target")
    with pytest.raises(ParameterError):
        measure_peak_rss([])


def test_build_plan_counts_the_csv_reader_only_for_text_sources():
    csv = plan_build("2G", 28, baseline_bytes=150 * MiB)
    parquet = plan_build("2G", 28, baseline_bytes=150 * MiB, text_source=False)
    assert csv.parse_bytes - parquet.parse_bytes == CSV_READER_FIXED_BYTES
