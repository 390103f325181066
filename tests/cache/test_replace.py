"""Replacing a cache: after a kill between any two steps of the install, the path holds the
old cache or the new one, and the next build or open leaves exactly one cache there."""
import json
import os
import signal
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from oocboost.cache.store import Cache, CacheWriter
from oocboost.cache.store import replace as store_replace
from oocboost.errors import CacheError

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
#: The steps of a replace in each mode, in order (checked against a recorded run below).
STEPS = {"exchange": ["checked", "exchanged", "removed"],
         "two-renames": ["checked", "moved-aside", "renamed", "removed"]}

_CHILD = textwrap.dedent(
    """
    import json, os, signal, sys
    sys.path.insert(0, {repo!r})
    import numpy as np
    from oocboost.cache.store import CacheWriter
    from oocboost.cache.store import replace
    seen = []

    def crash_point(step):
        seen.append(step)
        if step == {kill_at!r}:
            os.kill(os.getpid(), signal.SIGKILL)

    replace._crash_point = crash_point
    if {mode!r} == "two-renames":
        replace._renameat2 = None
    with CacheWriter({path!r}, overwrite=True, n_features=1, codes_dtype=np.uint8,
                     has_label=False, has_weight=False) as w:
        w.write_block(np.full((1, {rows}), 2, np.uint8))
        w.commit()
    print(json.dumps(seen))
    """
)


def _write(path, n_rows, value, overwrite=False):
    with CacheWriter(path, overwrite=overwrite, n_features=1, codes_dtype=np.uint8,
                     has_label=False, has_weight=False) as w:
        w.write_block(np.full((1, n_rows), value, np.uint8))
        w.commit()


def _child(path, mode, kill_at, rows=5):
    code = _CHILD.format(repo=REPO, path=str(path), mode=mode, kill_at=kill_at, rows=rows)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)


def _temporaries(path):
    parent, name = os.path.split(str(path))
    return sorted(n for n in os.listdir(parent) if n.startswith(name + ".oocb."))


def test_exchange_is_available_here(tmp_path):
    """The atomic exchange is what Linux runs; the two-rename fallback is for the rest."""
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    (a / "x").write_text("a")
    (b / "x").write_text("b")
    assert store_replace.exchange(str(a), str(b))
    assert (a / "x").read_text() == "b" and (b / "x").read_text() == "a"


@pytest.mark.parametrize("mode", sorted(STEPS))
def test_replace_steps_are_the_ones_the_kill_test_covers(tmp_path, mode):
    path = tmp_path / "c"
    _write(path, 3, 1)
    r = _child(path, mode, kill_at=None)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == STEPS[mode]
    assert Cache(path).n_rows == 5 and _temporaries(path) == []


@pytest.mark.parametrize("mode,kill_at", [(m, s) for m in sorted(STEPS) for s in STEPS[m]])
def test_kill_between_steps_leaves_old_or_new(tmp_path, mode, kill_at):
    path = tmp_path / "c"
    _write(path, 3, 1)
    r = _child(path, mode, kill_at)
    assert r.returncode == -signal.SIGKILL, r.stderr
    new_in_place = STEPS[mode].index(kill_at) >= STEPS[mode].index(
        "exchanged" if mode == "exchange" else "renamed")
    # Opening puts a cache left aside back (two renames killed between them).
    cache = Cache(path)
    assert cache.n_rows == (5 if new_in_place else 3)
    assert cache.read_block(0).codes[0, 0] == (2 if new_in_place else 1)
    # The next build replaces it and leaves nothing else beside it.
    _write(path, 7, 4, overwrite=True)
    assert Cache(path).n_rows == 7 and _temporaries(path) == []


def test_kill_between_renames_recovered_by_next_build(tmp_path):
    """Without an open in between, the next build puts the old cache back before it
    judges the target: a build without overwrite then refuses, as over any cache."""
    path = tmp_path / "c"
    _write(path, 3, 1)
    r = _child(path, "two-renames", "moved-aside")
    assert r.returncode == -signal.SIGKILL
    assert not path.exists() and len(_temporaries(path)) == 2  # the .tmp and the .old
    with pytest.raises(CacheError, match="already exists"):
        _write(path, 7, 4)
    assert Cache(path).n_rows == 3
    assert [n for n in _temporaries(path) if ".oocb.old-" in n] == []


def test_old_cache_of_a_live_replace_is_left_alone(tmp_path):
    """An .old folder whose process still runs is mid-replace: nobody touches it."""
    path = tmp_path / "c"
    _write(path, 3, 1)
    aside = f"{path}.oocb.old-{os.getpid()}-00000000"
    os.rename(path, aside)
    assert store_replace.recover(str(path)) is False
    store_replace.clean_stale(str(path))
    assert os.path.isdir(aside) and not path.exists()
