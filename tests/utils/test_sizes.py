"""Tests of oocboost.utils.sizes and utils.rss: sizes users type and this process's RSS."""
import pytest

from oocboost.errors import ParameterError
from oocboost.utils.rss import current_rss, peak_rss
from oocboost.utils.sizes import MiB, format_size, parse_size

GiB = 1024**3


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


@pytest.mark.parametrize(
    "bad", ["", "abc", "-5M", "5X", "M", "1.2.3G", -1, True, [512], 3j, float("nan")]
)
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
