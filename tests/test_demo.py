"""``oocboost demo`` (README command 1) on small data: every step says what it does."""
import re

from oocboost import cli


def test_demo_names_both_files_it_builds_and_reports_auc(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("OOCBOOST_WARMUP", "0")   # the suite's kernels are compiled already
    code = cli.main(["demo", "--workdir", str(tmp_path / "demo"), "--rows", "4000",
                     "--rounds", "5"])
    out = capsys.readouterr().out
    assert code == 0
    assert "[2/5] oocboost build-cache train.csv (2 passes: sketch, then bin) and valid.csv" \
        in out
    auc = float(re.search(r"validation AUC (\d\.\d+)", out).group(1))
    assert 0.6 < auc <= 1.0
    assert {p.name for p in (tmp_path / "demo").iterdir()} >= {
        "train.csv", "valid.csv", "train.oocb", "valid.oocb", "model.json"}
