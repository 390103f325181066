"""Tests of oocboost.utils.files: outputs never over an input, written whole, mode kept."""
import os
import stat
import subprocess
import sys
import textwrap

import pytest

from oocboost.errors import ParameterError
from oocboost.utils.files import atomic_output, check_output_path, write_text_atomic

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_output_is_contains_or_is_inside_an_input(tmp_path):
    data = tmp_path / "d" / "data.csv"
    data.parent.mkdir()
    data.write_text("a\n1\n")
    cache = tmp_path / "c.oocb"
    cache.mkdir()
    link = tmp_path / "link.csv"
    link.symlink_to(data)
    cases = [(data, [data], "is the input"),
             (link, [data], "is the input"),             # a link to it
             (data, [link], "is the input"),
             (cache / "m.json", [cache], "is inside the input"),
             (tmp_path / "d", [data], "contains the input"),
             (tmp_path, [str(tmp_path / "d" / "*.csv")], "contains the input"),  # a glob
             (tmp_path / "d" / ".." / "d" / "data.csv", [data], "is the input")]
    for output, inputs, why in cases:
        with pytest.raises(ParameterError, match=why) as info:
            check_output_path(output, inputs)
        assert str(output) in str(info.value)
    # Neighbours, new paths, URIs and non-path inputs are fine.
    check_output_path(tmp_path / "d" / "data.csv.out", [data, cache, None, "s3://b/k"])
    check_output_path(tmp_path / "new" / "x.json", [data, object()])
    check_output_path("s3://bucket/out", [data])


def _mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


def test_new_file_gets_umask_mode_and_replaced_file_keeps_its_mode(tmp_path):
    old = os.umask(0o027)
    try:
        new = tmp_path / "new.json"
        write_text_atomic(new, "{}")
        assert _mode(new) == 0o640
        kept = tmp_path / "kept.json"
        kept.write_text("old")
        os.chmod(kept, 0o604)
        write_text_atomic(kept, "new")
        assert kept.read_text() == "new" and _mode(kept) == 0o604
    finally:
        os.umask(old)
    assert sorted(os.listdir(tmp_path)) == ["kept.json", "new.json"]


def test_failure_inside_leaves_the_old_file_and_no_temporary(tmp_path):
    path = tmp_path / "out.csv"
    path.write_text("old")
    with pytest.raises(RuntimeError):
        with atomic_output(path) as tmp:
            with open(tmp, "w") as f:
                f.write("half")
            raise RuntimeError("boom")
    assert path.read_text() == "old" and os.listdir(tmp_path) == ["out.csv"]
    # An input's own read error is not reported as a write error.
    with pytest.raises(FileNotFoundError):
        with atomic_output(path):
            open(tmp_path / "missing.csv").read()
    assert path.read_text() == "old"


_FULL_DISK = textwrap.dedent(
    """
    import resource, sys
    sys.path.insert(0, {repo!r})
    from oocboost.errors import OutputError
    from oocboost.utils.files import write_text_atomic
    resource.setrlimit(resource.RLIMIT_FSIZE, (4096, resource.RLIM_INFINITY))
    try:
        write_text_atomic({path!r}, "x" * 100_000)
    except OutputError as exc:
        print(exc)
    """
)


def test_full_disk_is_one_error_naming_path_and_bytes(tmp_path):
    """``ulimit -f`` stands in for a full disk: the write fails with EFBIG (Python ignores
    SIGXFSZ), as it would with ENOSPC."""
    path = tmp_path / "model.json"
    path.write_text("old model")
    code = _FULL_DISK.format(repo=REPO, path=str(path))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    assert f"cannot write {path}: no space left" in r.stdout
    assert "100,000 bytes needed" in r.stdout
    assert path.read_text() == "old model" and os.listdir(tmp_path) == ["model.json"]
