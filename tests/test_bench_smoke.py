"""The benchmark suite (bench/): report arithmetic on a fixed fixture (fast) and a smoke run
of the quick build and boost suites for the peers on a tiny data set (slow)."""
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from bench import report  # noqa: E402

MiB = 2 ** 20


def _run(lib, label, role, repeat, train_s, peak_mib, auc, group=100_000, status="ok"):
    return {"lib": lib, "label": label, "role": role, "group": group, "repeat": repeat,
            "status": status, "reason": "" if status == "ok" else "oocboost.X missing",
            "times": {"load_s": 0.5, "build_s": 1.0, "train_s": train_s, "predict_s": 0.1},
            "metrics": {"auc": auc, "logloss": 0.5, "accuracy": 0.75},
            "baseline_rss": 100 * MiB, "peak_rss": peak_mib * MiB,
            "extra": {"predict_rows_s": 1e6, "predict_rows": 1000}, "train_bytes": 10 ** 7}


def _fixture():
    runs = []
    # oocboost train s 2, 4, 3 ; XGBoost 1, 4, 1 -> per-repeat ratios 2, 1, 3
    # (the ratio of the medians would be 3 / 1 = 3: the pairing must matter)
    for rep, (a, b) in enumerate([(2.0, 1.0), (4.0, 4.0), (3.0, 1.0)]):
        runs.append(_run("ooc", "oocboost", "ours", rep, a, 200 + 10 * rep, 0.82))
        runs.append(_run("xgb_hist", "XGBoost hist, in memory", "peer", rep, b, 400, 0.83))
        runs.append(_run("lgb", "LightGBM", "peer", rep, 2.0, 300, 0.8))
    runs.append(_run("xgb_extmem", "XGBoost external memory", "peer", 0, 1.0, 300, 0.8,
                     status="error"))
    return {"suite": "boost", "command": "python -m bench boost --fixture",
            "config": {"quick": False, "repeats": 3, "n_train": 100_000, "n_test": 20_000,
                       "rounds": 100, "memory_limit": "1GB"},
            "machine": {"cpu_count": 2, "ram_bytes": 24 * 2 ** 30, "python": "3.11",
                        "versions": {"numpy": "2"}},
            "started": "t0", "finished": "t1", "runs": runs}


def test_summarize_and_fmt():
    assert report.summarize([3, 1, 2]) == (2.0, 1.0, 3.0, 3)
    assert report.summarize([4, 1, 2, 3]) == (2.5, 1.0, 4.0, 4)
    assert report.summarize([None]) is None
    assert report.fmt([2.0, 4.0, 3.0], 2) == "3.00 [2.00-4.00]"
    assert report.fmt([5.0], 1) == "5.0"
    assert report.fmt([], 1) == "-"


def test_paired_ratios_are_per_repeat():
    runs = _fixture()["runs"]
    r = report.paired_ratios(runs, "ooc", "xgb_hist", report.t("train_s"))
    assert sorted(r) == [1.0, 2.0, 3.0]
    # failed runs are not paired
    assert report.paired_ratios(runs, "ooc", "xgb_extmem", report.t("train_s")) == []
    d = report.paired_deltas(runs, "ooc", "xgb_hist", report.metric("auc"))
    assert all(abs(x + 0.01) < 1e-12 for x in d)


def test_report_renders_tables(tmp_path):
    with open(tmp_path / "results-boost.json", "w") as fh:
        json.dump(_fixture(), fh)
    text = report.write_report(str(tmp_path), str(tmp_path / "RESULTS.md"))
    assert (tmp_path / "RESULTS.md").read_text() == text
    assert "python -m bench boost --fixture" in text
    ooc_row = next(line for line in text.splitlines() if line.startswith("| oocboost |"))
    # train s median [min-max]; total = 0.5 + 1.0 + train; peak RSS 200, 210, 220 MiB
    assert "| 3.00 [2.00-4.00] |" in ooc_row
    assert "| 4.50 [3.50-5.50] |" in ooc_row
    assert "| 210 [200-220] |" in ooc_row
    # ratio row: train time per repeat 2, 1, 3 -> median 2 [1-3]; peak RSS 200/400 .. 220/400
    ratio_row = next(
        line
        for line in text.splitlines()
        if line.startswith("| XGBoost hist, in memory |") and "[1.00-3.00]" in line
    )
    assert "| 2.00 [1.00-3.00] |" in ratio_row
    assert "| 0.53 [0.50-0.55] |" in ratio_row
    assert "-0.0100" in ratio_row
    lgb_ratio = next(line for line in text.splitlines()
                     if line.startswith("| LightGBM |") and "|---" not in line and "[" in line
                     and "0.8000" not in line)
    assert "| 1.50 [1.00-2.00] |" in lgb_ratio
    assert "error: oocboost.X missing" in text


def test_report_goss_and_categorical_sections(tmp_path):
    """The variants block pairs each library's GOSS and quantized runs with its full
    run, and our quantized runs with LightGBM's; the categorical suite gets a table and
    one ratio block per oocboost encoding."""
    boost = _fixture()
    for rep, (full, goss) in enumerate([(4.0, 3.0), (4.0, 2.0), (4.0, 4.0)]):
        boost["runs"][3 * rep]["times"]["train_s"] = full
        boost["runs"].append(_run("ooc_goss", "oocboost GOSS", "ours", rep, goss, 200, 0.821))
        boost["runs"].append(_run("ooc_quant", "oocboost quantized gradients", "ours", rep,
                                  full + 1.0, 200, 0.818))
        boost["runs"].append(_run("lgb_quant", "LightGBM quantized gradients", "peer", rep,
                                  2.5, 300, 0.819))
    cat = dict(_fixture(), suite="categorical", command="python -m bench categorical")
    cat["runs"] = [_run(lib, label, role, rep, train, 300, auc)
                   for rep in range(2)
                   for lib, label, role, train, auc in (
                       ("ooc_cat", "oocboost native categories", "ours", 5.0, 0.76),
                       ("ooc_cat_ts", "oocboost ordered target statistics", "ours", 4.0,
                        0.79),
                       ("lgb_cat", "LightGBM categorical", "peer", 4.5, 0.759),
                       ("cb_cat", "CatBoost cat_features", "peer", 13.0, 0.788))]
    for name, res in (("boost", boost), ("categorical", cat)):
        with open(tmp_path / f"results-{name}.json", "w") as fh:
            json.dump(res, fh)
    text = report.write_report(str(tmp_path), str(tmp_path / "RESULTS.md"))
    lines = text.splitlines()
    block = lines.index("| library | variant | train time variant / full | "
                        "AUC variant - full |")
    # GOSS / full per repeat: 3/4, 2/4, 4/4; AUC +0.001 each time
    assert lines[block + 2] == "| oocboost | GOSS | 0.75 [0.50-1.00] | 0.0010 |"
    # quantized / full: 5/4 each time, AUC -0.002; LightGBM's: 2.5/2, -0.8 + 0.819
    assert lines[block + 3] == "| oocboost | quantized | 1.25 | -0.0020 |"
    assert lines[block + 4] == "| LightGBM | quantized | 1.25 | 0.0190 |"
    assert ("oocboost quantized / LightGBM quantized, train time: 2.00; AUC difference "
            "-0.0010") in text
    assert "## categorical" in text and "oocboost ordered target statistics / peer" in text
    ts_vs_cb = [line for line in text.splitlines()
                if line.startswith("| CatBoost cat_features |") and "0.0020" in line]
    assert ts_vs_cb and "| 0.31 |" in ts_vs_cb[0]


def test_categorical_data_is_deterministic(tmp_path):
    from bench.cat_data import prepare_categorical

    a = prepare_categorical(str(tmp_path / "a"), 3000, 500, seed=1, log=lambda m: None)
    b = prepare_categorical(str(tmp_path / "b"), 3000, 500, seed=1, log=lambda m: None)
    with open(a["train"]) as fa, open(b["train"]) as fb:
        assert fa.read() == fb.read()
    header = open(a["test"]).readline().strip().split(",")
    assert header == ['"label"', '"shop"', '"region"'] + [f'"x{j}"' for j in range(6)]


def test_report_scale_plots(tmp_path):
    pytest.importorskip("matplotlib")
    runs = []
    for rows, peak_ooc, peak_x in [(1000, 200, 300), (4000, 205, 600)]:
        runs.append(_run("ooc", "oocboost", "ours", 0, rows / 1000, peak_ooc, 0.8, group=rows))
        runs.append(_run("xgb_extmem", "XGBoost external memory", "peer", 0, rows / 2000,
                         peak_x, 0.8, group=rows))
    res = {"suite": "scale", "command": "python -m bench scale", "runs": runs,
           "config": {"scale_rounds": 20, "scale_memory_limit": "512MB", "repeats": 1},
           "machine": {}}
    with open(tmp_path / "results-scale.json", "w") as fh:
        json.dump(res, fh)
    text = report.write_report(str(tmp_path), str(tmp_path / "RESULTS.md"))
    assert "**4,000 training rows**" in text
    assert (tmp_path / "scale_rss.png").stat().st_size > 0
    assert (tmp_path / "scale_time.png").stat().st_size > 0
    assert "![Peak RSS vs training rows](scale_rss.png)" in text


def test_scale_growth_table_and_skipped_peer():
    runs = []
    for rows, train_s, above in [(1000, 1.0, 50), (4000, 3.0, 60), (16000, 14.0, 55)]:
        runs.append(_run("ooc", "oocboost", "ours", 0, train_s, 100 + above, 0.8, group=rows))
    runs.append(_run("lgb", "LightGBM", "peer", 0, 2.0, 400, 0.8, group=1000))
    runs.append(_run("lgb", "LightGBM", "peer", 0, 0.0, 0, 0.8, group=4000, status="skipped"))
    text = report.growth_table(runs, [1000, 4000, 16000])
    lines = text.splitlines()
    assert (
        "| library | figure | 1,000 rows (1x) | 4,000 rows (4x) | 16,000 rows (16x) |" in lines
    )
    assert "| oocboost | train time | 1.0x | 3.0x | 14.0x |" in lines
    # total time = load 0.5 + build 1.0 + train
    assert "| oocboost | total time | 1.0x | 1.8x | 6.2x |" in lines
    assert "| oocboost | peak above imports | 1.0x | 1.2x | 1.1x |" in lines
    assert "| LightGBM | train time | 1.0x | - | - |" in lines
    assert report.growth_table(runs, [1000]) == ""


def test_peer_projected_beyond_ram_is_skipped(monkeypatch):
    from bench import run

    class VM:
        total = 10 * 2 ** 30

    monkeypatch.setattr("psutil.virtual_memory", lambda: VM)
    runs = [_run("lgb", "LightGBM", "peer", 0, 1.0, 1024, 0.8, group=1000),
            _run("lgb", "LightGBM", "peer", 0, 1.0, 2048, 0.8, group=2000),
            _run("lgb", "LightGBM", "peer", 0, 1.0, 9000, 0.8, group=4000, status="error")]
    assert run._projected_beyond_ram(runs, "xgb_hist", 10 ** 6) is None  # never run: tried
    assert run._projected_beyond_ram(runs, "lgb", 8000) is None  # 2 GiB x 4 = 8 <= 8.5 GiB
    why = run._projected_beyond_ram(runs, "lgb", 10000)  # 2 GiB x 5 = 10 GiB > 8.5
    assert why.startswith("projected peak 10.0 GiB (2.0 GiB at 2,000 rows")
    assert "85% of this machine's 10.0 GiB" in why


def test_limits_table_one_row_per_limit(tmp_path, capsys):
    import numpy as np

    import oocboost
    from bench import limits

    X = np.random.default_rng(0).normal(size=(3000, 4))
    oocboost.build_cache(X, tmp_path / "c", label=(X[:, 0] > 0).astype(float), quiet=True)
    assert limits.main([str(tmp_path / "c"), "--limits", "1GB,1MB", "--rounds", "2",
                        "--repeats", "1"]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| 1")]
    assert rows[0].startswith("| 1GB | state in RAM; 1 of 1 blocks resident; prefetch 2;")
    above, seconds = (float(cell.split()[0]) for cell in rows[0].split("|")[3:5])
    # a cold kernel cache (CI) compiles in the child: no upper bound on its memory here
    assert above > 0 and seconds > 0
    assert rows[1].startswith("| 1MB | oocboost.errors.MemoryLimitError: memory limit 1.0 MiB")


@pytest.mark.slow
def test_quick_build_and_boost_suites_for_peers(tmp_path):
    out = tmp_path / "out"
    results = tmp_path / "RESULTS.md"
    cmd = [sys.executable, "-m", "bench", "build", "boost", "--quick", "--peers-only",
           "--rows", "20000", "--test-rows", "4000", "--repeats", "1",
           "--out", str(out), "--results", str(results)]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    build = json.loads((out / "results-build.json").read_text())
    assert build["machine"]["cpu_count"] == os.cpu_count()
    libs = {r["lib"]: r for r in build["runs"]}
    assert "ooc" not in libs
    for lib in ("pa_read", "pandas", "lgb", "xgb_hist", "xgb_extmem"):
        r = libs[lib]
        assert r["status"] == "ok", r
        assert 0 < r["times"]["build_s"] < 120
        assert 20 * MiB < r["baseline_rss"] <= r["peak_rss"] < 4 * 2 ** 30
    boost = json.loads((out / "results-boost.json").read_text())
    libs = {r["lib"]: r for r in boost["runs"]}
    for lib in ("xgb_hist", "xgb_extmem", "lgb", "skl_hgb"):
        r = libs[lib]
        assert r["status"] == "ok", r
        assert 0 < r["times"]["train_s"] < 300
        assert r["peak_rss"] >= r["baseline_rss"] > 20 * MiB
        assert 0.7 < r["metrics"]["auc"] < 0.95
        assert 0.2 < r["metrics"]["logloss"] < 0.7
        assert r["extra"]["predict_rows_s"] > 0
    assert libs["limit"]["status"] == "ok"
    assert libs["limit"]["extra"]["hist_pass_ms"] > 0
    text = results.read_text()
    assert "## build" in text and "## boost" in text
    assert "| XGBoost hist, in memory |" in text
    assert "--peers-only" in text


def test_sparse_bench_data_is_deterministic_and_exclusive(tmp_path):
    """bench.sparse's data: one 1 per one-hot block and row, the same file twice."""
    import pyarrow.parquet as pq

    from bench import sparse

    a = sparse.write_data(str(tmp_path / "a"), 3000, 500)
    b = sparse.write_data(str(tmp_path / "b"), 3000, 500)
    ta, tb = pq.read_table(a["train"]), pq.read_table(b["train"])
    assert ta.equals(tb) and ta.num_rows == 3000
    assert len(ta.column_names) == sum(sparse.BLOCKS) + sparse.N_DENSE + sparse.N_COUNTS + 1
    for block, width in enumerate(sparse.BLOCKS):
        hot = sum(ta.column(f"b{block}_{k}").to_numpy() for k in range(width))
        assert (hot == 1).all()


@pytest.mark.slow
def test_sparse_bench_runs(tmp_path):
    r = subprocess.run([sys.executable, "-m", "bench.sparse", "--rows", "20000",
                        "--test-rows", "2000", "--rounds", "2", "--out", str(tmp_path)],
                       capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert "308 features in 61 columns" in lines[0] and "308 in 308" not in lines[0]
    # bundled, unbundled with sparse columns, unbundled dense; LightGBM with and without
    assert "308 features in 308 columns, 300 of them sparse" in lines[1]
    assert "308 features in 308 columns, 0 of them sparse" in lines[2]
    assert len(lines) == 5 and all("AUC 0." in line for line in lines)


@pytest.mark.slow
def test_streaming_partial_fit_mode_runs(tmp_path):
    """python -m bench streaming --partial-fit: a row per leaf kind, library and batch
    size, with rates and the leaves grown, and the runs in the JSON."""
    r = subprocess.run([sys.executable, "-m", "bench", "streaming", "--partial-fit",
                        "--pf-rows", "6000", "--batch-sizes", "10,1000", "--out",
                        str(tmp_path)], capture_output=True, text=True, cwd=ROOT,
                       timeout=600)
    assert r.returncode == 0, r.stderr
    rows = [line.split(" | ") for line in r.stdout.splitlines() if line.startswith("| mc")
            or line.startswith("| nba")]
    assert [(row[1], row[2]) for row in rows] == [
        ("river", "1 row"), ("oocboost", "10 rows"), ("oocboost", "1,000 rows")] * 2
    assert all(float(row[3].replace(",", "")) > 0 for row in rows)
    with open(tmp_path / "results-streaming-partial-fit.json") as f:
        runs = json.load(f)["runs"]
    assert len(runs) == 6 and all(run["learn_rows_per_s"] > 0 for run in runs)


def test_tree_rss_counts_descendants_and_rescans_them_seldom():
    """The job poller's RSS is the process's plus its descendants', and it lists the
    descendants at most once per ``rescan_s`` (listing them reads every process's /proc
    entry; see bench.run.TreeRss)."""
    import time

    import psutil

    from bench.run import TreeRss

    # a child that allocates 64 MiB, then starts a grandchild that allocates 64 MiB more
    code = ("import subprocess, sys, time; a = bytearray(64 << 20); "
            "p = subprocess.Popen([sys.executable, '-c', "
            "'import time; b = bytearray(64 << 20); time.sleep(30)']); time.sleep(30)")
    proc = subprocess.Popen([sys.executable, "-c", code])
    try:
        tree_rss = TreeRss(psutil.Process(proc.pid), rescan_s=0.2)
        calls = []
        real_children = psutil.Process.children

        def spy(self, *args, **kwargs):
            calls.append(time.perf_counter())
            return real_children(self, *args, **kwargs)

        psutil.Process.children = spy
        try:
            deadline = time.perf_counter() + 20
            peak = 0
            while time.perf_counter() < deadline and (peak < 128 * MiB
                                                      or len(tree_rss.children) < 1):
                peak = max(peak, tree_rss())
                time.sleep(0.01)
            polls_before = len(calls)
            for _ in range(10):
                tree_rss()
        finally:
            psutil.Process.children = real_children
        assert peak >= 128 * MiB, peak / MiB
        assert len(tree_rss.children) == 1
        # ten polls within 0.2 s list the descendants at most once more
        assert len(calls) - polls_before <= 1
        # the spy's clock is read a little after TreeRss's own: allow 50 ms of slack, far
        # from the 10 ms poll that listed them every time
        gaps = [b - a for a, b in zip(calls, calls[1:])]
        assert all(g >= 0.15 for g in gaps), gaps
    finally:
        for child in psutil.Process(proc.pid).children(recursive=True):
            child.kill()
        proc.kill()
        proc.wait()


def test_a_run_kept_outside_bench_out_reports_beside_it(tmp_path):
    """A quick run with --out /tmp/... wrote its report over the published
    bench/RESULTS.md (and its plots) once; a report now goes to bench/RESULTS.md only for
    the runs of bench/out."""
    from bench.report import default_results_path

    bench_dir = os.path.join(ROOT, "bench")
    assert default_results_path(os.path.join(bench_dir, "out")) == os.path.join(
        bench_dir, "RESULTS.md")
    assert default_results_path(str(tmp_path)) == str(tmp_path / "RESULTS.md")


@pytest.mark.slow
def test_scale_stream_builds_from_a_stream_and_trains_at_each_limit(tmp_path, capsys):
    """bench scale-stream, small: a cache of the streamed rows, one training per limit,
    a disk read of its files, and the table's rows."""
    from bench.scale_stream import main

    assert main(["--rows", "30000,60000", "--limits", "300MB", "--rounds", "2",
                 "--out", str(tmp_path)]) == 0
    results = json.loads((tmp_path / "results-scale-stream.json").read_text())
    assert [(r["rows"], r["limit"]) for r in results] == [(30000, "300MB"), (60000, "300MB")]
    for r in results:
        assert r["build"]["rows"] == r["rows"] and r["build"]["cache_bytes"] > 0
        assert r["train"]["data_passes"] > 0 and r["train"]["peak_rss"] > 0
        assert r["disk"]["bytes"] == r["build"]["cache_bytes"]
    table = capsys.readouterr().out
    assert "| 60,000 | 300MB |" in table and "(2x rows)" in table
    assert not list(tmp_path.glob("*.oocb"))       # removed without --keep
