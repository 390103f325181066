"""The bench regression guard: paired ratios from suite results, and a regression is a
ratio that grew by more than the tolerance. The run against the committed baseline
(``-m bench``) is a benchmark, not part of CI."""
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from bench import guard  # noqa: E402
from tests.test_bench_smoke import _fixture  # noqa: E402


def test_ratios_are_medians_of_paired_ratios():
    ratios = guard.collect_ratios([_fixture()])
    # oocboost 2, 4, 3 s against XGBoost 1, 4, 1 s: paired 2, 1, 3 -> median 2
    assert ratios["boost/ooc/xgb_hist/train time"] == pytest.approx(2.0)
    assert ratios["boost/ooc/lgb/train time"] == pytest.approx(1.5)
    assert not any("xgb_extmem" in k for k in ratios)  # its run failed: no pair


def test_a_ratio_growing_past_the_tolerance_is_a_regression():
    base = {"a": 0.80, "b": 0.50, "c": 1.0}
    now = {"a": 1.01, "b": 0.62, "c": 0.5, "d": 9.0}
    assert guard.compare(base, now) == [("a", 0.80, 1.01)]  # b: +24%, c better, d new


@pytest.mark.slow
@pytest.mark.bench
def test_a_quick_run_has_no_regression_against_the_committed_ratios(tmp_path):
    out = str(tmp_path / "out")
    # three repeats: the guard compares medians of paired ratios, as the baseline was made
    subprocess.run([sys.executable, "-m", "bench", "all", "--quick", "--repeats", "3",
                    "--out", out, "--no-report"], cwd=ROOT, check=True, timeout=3600)
    with open(os.path.join(out, "ratios.json")) as fh:
        current = json.load(fh)
    with open(guard.BASELINE) as fh:
        baseline = json.load(fh)
    assert set(current) & set(baseline)
    assert guard.compare(baseline, current) == []
