"""Tests of tools.gen_data (deterministic synthetic data) and tools.peak_rss (capped
runner)."""

import gzip
import json
import os
import subprocess
import sys

import numpy as np
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest

from tools.gen_data import generate, generate_arrays
from tools.gen_data import main as gen_main
from tools.peak_rss import cgroup_v2_dir

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MiB = 2**20


# ----------------------------------------------------------------------------- gen_data
def test_same_seed_same_bytes_whatever_the_chunk_size(tmp_path):
    kw = dict(n_features=10, n_categorical=2, missing_rate=0.05, seed=7)
    a = generate(tmp_path / "a.csv", 20_000, chunk_rows=100_000, **kw)
    b = generate(tmp_path / "b.csv", 20_000, chunk_rows=777, **kw)
    c = generate(tmp_path / "c.csv", 20_000, chunk_rows=8192, **kw)
    data = open(a, "rb").read()
    assert data == open(b, "rb").read() == open(c, "rb").read()
    assert data.count(b"\n") == 20_001
    d = generate(tmp_path / "d.csv", 20_000, chunk_rows=1000, **{**kw, "seed": 8})
    assert open(d, "rb").read() != data
    # gzip output is byte-identical too (mtime 0) and decompresses to the CSV
    g1 = generate(tmp_path / "a.csv.gz", 20_000, chunk_rows=999, **kw)
    g2 = generate(tmp_path / "b.csv.gz", 20_000, chunk_rows=50_000, **kw)
    assert open(g1, "rb").read() == open(g2, "rb").read()
    assert gzip.decompress(open(g1, "rb").read()) == data
    assert sorted(os.listdir(tmp_path)) == [
        "a.csv",
        "a.csv.gz",
        "b.csv",
        "b.csv.gz",
        "c.csv",
        "d.csv",
    ]


def test_files_hold_exactly_the_arrays(tmp_path):
    n, f = 5000, 12
    arr = generate_arrays(n, f, n_categorical=1, missing_rate=0.1, seed=3)
    path = generate(
        tmp_path / "x.csv", n, f, n_categorical=1, missing_rate=0.1, seed=3, chunk_rows=1234
    )
    t = pacsv.read_csv(path)
    assert t.column_names == ["label"] + arr.feature_names
    X = np.column_stack(
        [t[name].to_numpy(zero_copy_only=False) for name in arr.feature_names[:f]]
    )
    assert np.array_equal(X, arr.X, equal_nan=True)  # 5-decimal text round-trips exactly
    assert np.array_equal(t["label"].to_numpy(), arr.y)
    cat = [v if v is not None else "" for v in arr.categorical["cat0"]]
    assert t["cat0"].to_pylist() == cat
    ppath = generate(tmp_path / "x.parquet", n, f, n_categorical=1, missing_rate=0.1, seed=3)
    pt = pq.read_table(ppath)
    assert np.array_equal(pt["f0"].to_numpy(zero_copy_only=False), arr.X[:, 0], equal_nan=True)
    assert pt["cat0"].to_pylist() == list(arr.categorical["cat0"])


def test_shape_missing_rate_and_columns():
    n, f = 40_000, 28
    d = generate_arrays(n, f, n_categorical=2, missing_rate=0.02, seed=0)
    assert d.X.shape == (n, f) and d.X.dtype == np.float64 and d.y.shape == (n,)
    assert d.feature_names[:3] == ["f0", "f1", "f2"] and d.feature_names[-2:] == [
        "cat0",
        "cat1",
    ]
    miss = np.isnan(d.X).mean(axis=0)
    assert (miss > 0).sum() == 6  # six float columns have missing values
    assert np.all(np.abs(miss[miss > 0] - 0.02) < 0.004)
    lowcard = [j for j in range(f) if len(np.unique(d.X[:, j])) <= 8]
    assert lowcard == [6, 13, 20, 27]
    for name, values in d.categorical.items():
        present = values[values != None]  # noqa: E711 (object array)
        assert set(present) <= set("abcdefghijklmnopqrstuvwxyz")
        counts = np.unique(present, return_counts=True)[1]
        assert counts.max() > 5 * np.median(counts)  # skewed
        assert abs((values == None).mean() - 0.02) < 0.005  # noqa: E711
    assert set(np.unique(d.y)) == {0, 1} and 0.4 < d.y.mean() < 0.6


def test_label_is_learnable():
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.metrics import roc_auc_score
    from threadpoolctl import threadpool_limits

    d = generate_arrays(20_000, 28, seed=1)
    model = HistGradientBoostingClassifier(max_iter=40, max_depth=5, random_state=0)
    with threadpool_limits(1):  # OpenMP spin-waits badly on a busy 2-core machine
        model.fit(d.X[:14_000], d.y[:14_000])
    auc = roc_auc_score(d.y[14_000:], model.predict_proba(d.X[14_000:])[:, 1])
    assert 0.75 < auc < 0.95


def test_multiclass_and_regression():
    m = generate_arrays(6000, 8, task="multiclass", n_classes=4, seed=2)
    assert set(np.unique(m.y)) == {0, 1, 2, 3}
    r = generate_arrays(6000, 8, task="regression", seed=2)
    assert r.y.dtype == np.float64 and 1.5 < r.y.std() < 4.5
    e = generate_arrays(0, 5, seed=2)
    assert e.X.shape == (0, 5) and e.y.shape == (0,)


def test_cli_and_bad_arguments(tmp_path, capsys):
    out = tmp_path / "cli.csv"
    assert gen_main(["--rows", "100", "--features", "4", "--seed", "5", "-o", str(out)]) == 0
    assert open(out).read().count("\n") == 101
    with pytest.raises(SystemExit):
        gen_main(["--rows", "10", "--missing-rate", "1.5", "-o", str(tmp_path / "bad.csv")])
    assert "missing_rate" in capsys.readouterr().err
    assert not (tmp_path / "bad.csv").exists()
    assert [p for p in os.listdir(tmp_path) if ".tmp-" in p] == []


# ----------------------------------------------------------------------------- peak_rss
def _peak_rss(*args):
    return subprocess.run([sys.executable, "-m", "tools.peak_rss", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)


def _report(proc):
    return json.loads(proc.stderr.strip().splitlines()[-1])


def test_peak_rss_reports_and_passes_exit_code_through():
    code = (
        "import numpy as np; a = np.ones(100 * 2**20 // 8); print('done'); raise SystemExit(7)"
    )
    proc = _peak_rss("--json", "--", sys.executable, "-c", code)
    assert proc.returncode == 7
    assert proc.stdout.strip() == "done"  # the command's output passes through
    rep = _report(proc)
    assert rep["returncode"] == 7 and rep["cap_method"] == "none"
    assert 100 * MiB < rep["peak_bytes"] < 400 * MiB and rep["seconds"] > 0
    text = _peak_rss("--", sys.executable, "-c", "pass")
    assert text.returncode == 0
    assert "peak RSS" in text.stderr and "MiB" in text.stderr and "exit 0" in text.stderr


def test_peak_rss_cap_stops_a_command_over_the_cap():
    expected = "cgroup-v2" if cgroup_v2_dir() else "RLIMIT_AS"
    big = "import numpy as np; a = np.ones(600 * 2**20 // 8); a[:] = 2"
    proc = _peak_rss("--cap", "400M", "--json", "--", sys.executable, "-c", big)
    rep = _report(proc)
    assert proc.returncode != 0 and rep["returncode"] != 0
    assert rep["cap_method"] == expected and rep["cap_bytes"] == 400 * MiB
    if expected == "RLIMIT_AS":
        assert "MemoryError" in proc.stderr and "virtual memory" in rep["note"]
    else:
        assert rep["oom_killed"]
    # the same cap lets a small command run, and the text report names the method
    ok = _peak_rss(
        "--cap", "400M", "--", sys.executable, "-c", "import numpy as np; a = np.ones(10)"
    )
    assert ok.returncode == 0 and f"via {expected}" in ok.stderr


def test_peak_rss_usage_errors():
    assert _peak_rss("--json").returncode == 2  # no command
    missing = _peak_rss("--", "no-such-command-xyz")
    assert missing.returncode == 127 and "no-such-command-xyz" in missing.stderr
    slow = _peak_rss(
        "--timeout", "0.5", "--", sys.executable, "-c", "import time; time.sleep(30)"
    )
    assert slow.returncode == 124 and "timed out" in slow.stderr


def test_row_start_continues_the_same_stream():
    whole = generate_arrays(20_000, 5, n_categorical=1, seed=4)
    tail = generate_arrays(7_000, 5, n_categorical=1, seed=4, row_start=13_000)
    np.testing.assert_array_equal(tail.X, whole.X[13_000:])
    np.testing.assert_array_equal(tail.y, whole.y[13_000:])
    assert list(tail.categorical["cat0"]) == list(whole.categorical["cat0"][13_000:])
