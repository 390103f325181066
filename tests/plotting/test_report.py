"""The HTML report: every section with its numbers, images embedded, written atomically;
and rendered by a real headless Chromium, every image decodes (marked ``browser``: .ci/run
installs Chromium and runs these after the main suite)."""
import base64
import json
import os
import re
import shutil
import subprocess
import tempfile

import numpy as np
import pytest

import oocboost
from oocboost.model.predict import evaluate
from oocboost.plotting import write_report


def test_the_page_holds_every_section_and_the_models_numbers(trained, tmp_path):
    out = write_report(trained["model"], trained["valid"], tmp_path / "r.html",
                       top_features=2, max_rows=300)
    page = open(out, encoding="utf-8").read()
    for heading in ("Model", "Validation", "Training log", "Learning curves", "Importance",
                    "Partial dependence", "SHAP values"):
        assert f"<h2>{heading}</h2>" in page
    scores = evaluate(trained["model"], trained["valid"], metrics=["logloss", "auc"])
    assert f"{scores['auc']:.5f}" in page and f"{scores['logloss']:.5f}" in page
    log = trained["model"].training_log
    assert f"{log['peak_rss_bytes'] / 2**20:.0f} MiB" in page
    assert f"{log['data_passes']}" in page
    images = re.findall(r'src="data:image/png;base64,([^"]+)"', page)
    assert len(images) == 2 + 1 + 2 + 1  # two curves, importance, two PDPs, SHAP
    assert all(base64.b64decode(i).startswith(b"\x89PNG") for i in images)
    assert "http" not in page.replace("https://", "")  # self-contained
    assert os.listdir(tmp_path) == ["r.html"]  # no temporary left


def test_a_cache_with_other_edges_is_refused_and_nothing_written(trained, tmp_path):
    other = oocboost.build_cache(np.random.default_rng(0).normal(size=(50, 5)),
                                 tmp_path / "o.oocb", label=np.zeros(50), quiet=True)
    with pytest.raises(oocboost.ParameterError, match="other edges"):
        write_report(trained["model"], other, tmp_path / "r.html")
    assert not (tmp_path / "r.html").exists()


CHECK_IMAGES = """<script>window.addEventListener("load", () => {
  const seen = [...document.images].map(i => [i.alt, i.complete && i.naturalWidth > 0,
                                              i.naturalWidth, i.naturalHeight]);
  const out = document.createElement("pre"); out.id = "image-check";
  out.textContent = JSON.stringify(seen); document.body.appendChild(out);
});</script>"""


def _chromium():
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    assert path, ("the report test renders the page in Chromium: install it "
                  "(Debian: apt-get install chromium); .ci/run does")
    return path


def _run_chromium(*args):
    with tempfile.TemporaryDirectory() as profile:
        return subprocess.run(
            [_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
             "--no-first-run", "--disable-background-networking",
             "--disable-component-update", "--disable-sync", f"--user-data-dir={profile}",
             *args], capture_output=True, text=True, timeout=120)


@pytest.mark.browser
def test_a_real_browser_renders_every_image(trained, tmp_path):
    page = write_report(trained["model"], trained["valid"], tmp_path / "report.html",
                        top_features=2, max_rows=300)
    # the page under test plus a script that reports what the browser decoded
    probe = tmp_path / "probe.html"
    probe.write_text(open(page, encoding="utf-8").read().replace(
        "</body>", CHECK_IMAGES + "</body>"), encoding="utf-8")
    r = _run_chromium("--virtual-time-budget=10000", "--dump-dom", probe.as_uri())
    found = re.search(r'<pre id="image-check">(.*?)</pre>', r.stdout, re.S)
    assert found, f"chromium printed no check: {r.stderr[-2000:]}"
    images = json.loads(found.group(1).replace("&quot;", '"'))
    assert len(images) == 6
    for alt, loaded, width, height in images:
        assert loaded and width > 100 and height > 100, alt
    shot = tmp_path / "shot.png"
    _run_chromium("--window-size=1000,2500", f"--screenshot={shot}", probe.as_uri())
    import matplotlib.image

    pixels = matplotlib.image.imread(shot)
    assert pixels.shape[:2] == (2500, 1000)
    assert (pixels[..., :3] < 0.5).mean() > 0.005  # text and lines, not a blank page
