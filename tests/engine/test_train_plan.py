"""Tests of oocboost.engine.plan: the training plan fits its own model, degrades as the
limit shrinks and refuses with a limit that works."""
import re

import pytest

from oocboost.cache.plan import plan_build
from oocboost.common import hist_width
from oocboost.engine.plan import plan_train
from oocboost.errors import MemoryLimitError, ParameterError
from oocboost.utils.budget import BASELINE_SLACK_BYTES
from oocboost.utils.sizes import MiB, parse_size

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


def test_train_plan_without_limit(monkeypatch):
    from oocboost.engine import plan as plan_module

    monkeypatch.setattr(plan_module, "available_bytes", lambda: 8 << 30)
    p = plan_train(None, **TRAIN)
    assert p.memory_limit is None and p.prefetch == 2 and p.hist_nodes == 64 and p.state_in_ram
    assert p.default_bound is None and p.margin_bytes == 0
    assert "none given, the memory available holds it" in p.describe()


@pytest.mark.parametrize("available_mib", [600, 400])
def test_without_limit_a_plan_too_big_for_the_memory_available_is_bounded(
        monkeypatch, available_mib):
    """No memory_limit and 100M rows: the generous plan (2 GB of per-row state in RAM)
    does not fit the memory available, so the run plans within the baseline plus 80% of
    it, as under that limit: the state spills and the estimated peak stays within."""
    from oocboost.engine import plan as plan_module

    monkeypatch.setattr(plan_module, "available_bytes", lambda: available_mib * MiB)
    big = dict(TRAIN, n_rows=100_000_000, n_blocks=1526)
    p = plan_train(None, **big)
    bound = 150 * MiB + int(0.8 * available_mib * MiB)
    assert p.default_bound == bound and p.memory_limit is None
    assert not p.state_in_ram
    assert p.estimated_peak_bytes == _train_model_total(p) <= bound
    same = plan_train(bound, **big)
    assert (same.prefetch, same.hist_nodes, same.resident_bytes) == (
        p.prefetch, p.hist_nodes, p.resident_bytes)
    assert f"planned within {bound / MiB:.1f} MiB" in p.describe().replace(",", "")


def test_without_limit_too_little_memory_trains_at_the_smallest_plan(monkeypatch, caplog):
    from oocboost.engine import plan as plan_module

    monkeypatch.setattr(plan_module, "available_bytes", lambda: 10 * MiB)
    with caplog.at_level("WARNING"):
        p = plan_train(None, **TRAIN)
    assert (p.prefetch, p.hist_nodes, p.state_in_ram, p.resident_bytes) == (0, 1, False, 0)
    assert "does not hold even the smallest training plan" in caplog.text
    assert "memory_limit" in caplog.text


@pytest.mark.parametrize("files,want", [
    ({}, None),                                            # no cgroup: the machine's
    ({"memory.max": "max\n", "memory.current": "5\n"}, None),
    ({"memory.max": "1073741824\n", "memory.current": "268435456\n"}, 768 * MiB),
    ({"memory/memory.limit_in_bytes": "536870912", "memory/memory.usage_in_bytes":
      "134217728"}, 384 * MiB),
    ({"memory/memory.limit_in_bytes": str(1 << 62), "memory/memory.usage_in_bytes": "7"},
     None),                                                # cgroup v1's "no limit"
    ({"memory.max": "garbage", "memory.current": "1"}, None),
    ({"memory.max": "100", "memory.current": "200"}, 0),   # over its limit already
])
def test_available_bytes_takes_the_cgroups_limit(tmp_path, files, want):
    import psutil

    from oocboost.utils.budget import available_bytes

    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    got = available_bytes(str(tmp_path))
    machine = psutil.virtual_memory().available
    if want is None:
        assert abs(got - machine) < 64 * MiB             # the machine's, a moment apart
    else:
        assert want < machine and got == want


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
