"""The examples users copy: every ``bash`` and ``python`` block of the README's quick start,
of docs/guide/quickstart.md and of docs/guide/inspection.md runs, in order, in one folder,
on small data (the row, round and tree counts are scaled down; nothing else changes).
A docs example that names a metric the earlier examples did not record, a file they did
not write or an option that does not exist fails here."""
import json
import os
import pathlib
import re
import subprocess
import sys

import pytest

REPO = pathlib.Path(__file__).resolve().parent.parent
#: Sizes of the docs (laptop scale) -> sizes for the test (seconds).
SCALE = [
    (r"--rows 1000000", "--rows 12000"),
    (r"--rows 200000 --row-start 1000000", "--rows 4000 --row-start 12000"),
    (r"--rounds 300", "--rounds 15"),
    (r"\btrain, 300,", "train, 15,"),
    (r"n_estimators=\d+", "n_estimators=8"),
    (r"num_boost_round=500", "num_boost_round=8"),
    (r"max_rows=3000", "max_rows=500"),
    (r"--rows 3000", "--rows 500"),
    (r"grid_resolution=20", "grid_resolution=6"),
    (r"cv=5", "cv=3"),
    (r"nrows=2000", "nrows=300"),
    (r"nfold=5", "nfold=3"),
]
_BLOCK = re.compile(r"^```(bash|python)\n(.*?)^```", re.M | re.S)


def blocks(path, section=None):
    """``(language, code)`` of each fenced block of ``path`` (of one ``## section``)."""
    text = (REPO / path).read_text()
    if section is not None:
        start = text.index(f"## {section}\n")
        end = text.find("\n## ", start + 1)
        text = text[start:end if end > 0 else None]
    out = []
    for language, code in _BLOCK.findall(text):
        for pattern, small in SCALE:
            code = re.sub(pattern, small, code)
        out.append((language, code))
    return out


def bash_script(code):
    """The block's commands, with ``oocboost`` as this interpreter's module (what the
    console script runs) and ``pip`` lines left out (the test runs installed)."""
    lines = []
    for line in code.replace("\\\n", " ").splitlines():
        line = line.split("  #")[0].rstrip()
        if not line or line.startswith("pip "):
            continue
        lines.append(re.sub(r"^oocboost ", f'"{sys.executable}" -m oocboost ', line))
    return "set -euo pipefail\n" + "\n".join(lines)


#: Runs the blocks in order in a fresh interpreter (as a reader would: not inside the
#: test worker, whose loaded libraries would count against the examples' memory_limit),
#: Python blocks in one namespace, bash blocks through bash.
_DRIVER = """
import json, subprocess, sys
namespace = {}
for language, code, where in json.load(open(sys.argv[1])):
    if language == "bash":
        r = subprocess.run(["bash", "-c", code], capture_output=True, text=True)
        if r.returncode:
            sys.exit(f"{where} failed:\\n{code}\\n--- stderr:\\n{r.stderr[-3000:]}")
    else:
        exec(compile(code, where, "exec"), namespace)
"""


def run_document(docs, folder):
    steps = []
    for path, section in docs:
        for k, (language, code) in enumerate(blocks(path, section)):
            where = f"{path} block {k + 1} ({language})"
            steps.append([language, bash_script(code) if language == "bash" else code,
                          where])
    plan = folder / "docs-blocks.json"
    plan.write_text(json.dumps(steps))
    env = dict(os.environ, MPLBACKEND="Agg")
    env.pop("OOCBOOST_DEBUG", None)
    r = subprocess.run([sys.executable, "-c", _DRIVER, str(plan)], cwd=folder,
                       capture_output=True, text=True, timeout=900, env=env)
    assert r.returncode == 0, f"{r.stderr[-4000:]}"


def test_readme_quick_start(tmp_path):
    assert len(blocks("README.md", "Quick start")) == 2
    run_document([("README.md", "Quick start")], tmp_path)
    assert (tmp_path / "predictions.csv").exists() and (tmp_path / "model.json").exists()


@pytest.mark.slow
def test_readme_quick_start_then_inspection_guide(tmp_path):
    """The inspection guide on what the README's quick start made (CI runs the guide
    after docs/guide/quickstart.md, which makes the same files, and the quick start
    alone: this pairing is the slow suite's)."""
    run_document([("README.md", "Quick start"), ("docs/guide/inspection.md", None)],
                 tmp_path)
    assert (tmp_path / "predictions.csv").exists() and (tmp_path / "curves.png").exists()


@pytest.mark.slow
def test_quickstart_then_inspection_guide(tmp_path):
    """The inspection guide reads what the quick start made (model.json, valid.oocb,
    valid.csv): the quick start trained without 'auc' once, and the guide's
    ``plot metric --metric auc`` failed. Slow (67-90 s, the suite's longest test: a
    dozen CLI processes): CI runs the README's quick start, this pairing is the slow
    suite's, with the README's quick start paired with the guide."""
    docs = [("docs/guide/quickstart.md", None), ("docs/guide/inspection.md", None)]
    assert sum(len(blocks(p, s)) for p, s in docs) >= 15
    run_document(docs, tmp_path)
    for name in ("curves.png", "pdp2.png", "shap-summary.png", "report.html"):
        assert (tmp_path / name).stat().st_size > 0, name


@pytest.mark.parametrize("pattern, small", SCALE)
def test_every_scaling_applies_somewhere(pattern, small):
    docs = ["README.md", "docs/guide/quickstart.md", "docs/guide/inspection.md"]
    assert any(re.search(pattern, (REPO / p).read_text()) for p in docs), pattern
