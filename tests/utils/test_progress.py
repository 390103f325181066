"""Tests of oocboost.utils.progress.ProgressBar."""
import io
import re

import pytest

from oocboost.errors import ParameterError
from oocboost.utils.progress import ProgressBar, format_duration, format_rate


class FakeTTY(io.StringIO):
    def isatty(self):
        return True


def test_disabled_writes_nothing():
    f = FakeTTY()
    with ProgressBar(total=100, enabled=False, file=f, min_interval=0) as bar:
        for _ in range(10):
            bar.update(10)
        bar.set_postfix("auc=0.82")
    assert f.getvalue() == ""
    assert bar.n == 100 and bar.closed


def test_auto_disabled_when_not_a_tty_or_quiet(monkeypatch):
    f = io.StringIO()  # not a terminal
    with ProgressBar(total=10, file=f, min_interval=0) as bar:
        bar.update(10)
    assert not bar.enabled and f.getvalue() == ""
    monkeypatch.setenv("OOCBOOST_QUIET", "1")
    assert not ProgressBar(total=10, file=FakeTTY()).enabled
    monkeypatch.delenv("OOCBOOST_QUIET")
    assert ProgressBar(total=10, file=FakeTTY()).enabled


def test_enabled_shows_progress_rate_eta_and_postfix():
    f = io.StringIO()
    bar = ProgressBar(
        total=1000, unit="rows", desc="pass 1", enabled=True, file=f, min_interval=0
    )
    bar._start -= 2.0  # pretend two seconds have passed: 250 rows in 2 s
    bar.update(250)
    line = f.getvalue().split("\r")[-1]
    assert line.startswith("pass 1")
    assert "250/1.00k rows" in line
    assert "25.0%" in line
    rate = float(re.search(r"([\d.]+) rows/s", line).group(1))
    assert 100 <= rate <= 126
    assert re.search(r"ETA 0:00:0[5-6]", line)  # 750 rows left at ~125 rows/s
    bar.set_postfix("auc=0.82")
    bar.close()
    out = f.getvalue()
    assert out.endswith("auc=0.82\n")
    bar.close()  # idempotent
    assert f.getvalue() == out


def test_bytes_and_rounds_units():
    f = io.StringIO()
    with ProgressBar(total=10 * 2**20, unit="bytes", enabled=True, file=f) as bar:
        bar._start -= 1.0
        bar.update(5 * 2**20)
    assert "5.0 MiB/10.0 MiB" in f.getvalue() and "MiB/s" in f.getvalue()
    f = io.StringIO()
    with ProgressBar(total=None, unit="rounds", enabled=True, file=f) as bar:
        bar.update(3)
    assert "3 rounds" in f.getvalue() and "it/s" in f.getvalue() and "ETA" not in f.getvalue()


def test_redraw_is_throttled():
    f = io.StringIO()
    bar = ProgressBar(total=10_000, enabled=True, file=f, min_interval=60.0)
    for _ in range(10_000):
        bar.update(1)
    assert f.getvalue().count("\r") == 1  # first update only
    bar.close()
    assert f.getvalue().count("\r") == 2 and "10.00k/10.00k" in f.getvalue()


def test_formatters_and_errors():
    assert format_duration(3725) == "1:02:05"
    assert format_rate(2.5e6, "rows") == "2.50M rows/s"
    assert format_rate(3 * 2**20, "bytes") == "3.0 MiB/s"
    assert format_rate(4, "rounds") == "4.0 it/s"
    with pytest.raises(ParameterError, match="unit"):
        ProgressBar(unit="parsecs")
    with pytest.raises(ParameterError, match="total"):
        ProgressBar(total=-1)
