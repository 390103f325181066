"""`oocboost plot` and `oocboost report` from the command line: every chart kind writes
a decodable image, bad requests name the option and leave nothing behind."""

import matplotlib.image
import pytest

from ..cli_runner import run_cli


def _cli(*args):
    return run_cli(*args, timeout=600)


@pytest.mark.parametrize("kind, extra", [
    ("importance", ["--importance-type", "gain", "--max-features", "3"]),
    ("importance", ["--importance-type", "shap", "--cache", "VALID"]),
    ("metric", ["--metric", "auc"]),
    ("tree", ["--tree-index", "2", "--max-depth", "2"]),
    ("pdp", ["--cache", "VALID", "--feature", "b"]),
    ("pdp", ["--cache", "VALID", "--feature", "a", "--feature", "b"]),
    ("contributions", ["--cache", "VALID", "--rows", "200"]),
], ids=["importance", "shap", "metric", "tree", "pdp", "pdp2", "contributions"])
def test_every_kind_writes_an_image(trained, tmp_path, kind, extra):
    extra = [str(trained["valid"].path) if a == "VALID" else a for a in extra]
    out = tmp_path / f"{kind}.png"
    r = _cli("plot", kind, trained["path"], "-o", out, *extra)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == f"wrote {out}"
    pixels = matplotlib.image.imread(out)
    assert pixels.shape[0] > 200 and pixels.shape[1] > 200
    assert (pixels[..., :3] < 0.5).mean() > 0.001  # something is drawn


@pytest.mark.parametrize("args, message", [
    (["pdp", "--feature", "b"], "pass --cache"),
    (["pdp", "--cache", "VALID"], "one or two --feature"),
    (["contributions"], "pass --cache"),
    (["metric", "--metric", "rmse"], "no metric 'rmse'"),
    (["tree", "--tree-index", "99"], "outside the model's 12 trees"),
])
def test_bad_requests_name_the_option_and_write_nothing(trained, tmp_path, args, message):
    args = [str(trained["valid"].path) if a == "VALID" else a for a in args]
    out = tmp_path / "x.png"
    r = _cli("plot", args[0], trained["path"], "-o", out, *args[1:])
    assert r.returncode != 0 and message in r.stderr, r.stderr
    assert "Traceback" not in r.stderr
    assert list(tmp_path.iterdir()) == []


def test_report_command(trained, tmp_path):
    out = tmp_path / "report.html"
    r = _cli("report", trained["path"], "--cache", trained["valid"].path, "-o", out,
             "--top-features", "1", "--rows", "100")
    assert r.returncode == 0, r.stderr
    page = out.read_text(encoding="utf-8")
    assert page.count("<img ") == 2 + 1 + 1 + 1
    r = _cli("report", trained["path"], "--cache", tmp_path / "nope.oocb", "-o",
             tmp_path / "r2.html")
    assert r.returncode != 0 and "nope.oocb" in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "r2.html").exists()
