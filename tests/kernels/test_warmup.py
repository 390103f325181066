"""Warm-up (kernels/warmup.py): the manifest still lists exactly the kernels each profile's
run calls, with signatures this numba reads; a helper process compiles into numba's
cache; the work is split by module and balanced; ``oocboost warmup`` fills the cache."""
import json
import os
import subprocess
import sys

import pytest

from oocboost.kernels import warmup

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Records the kernels a run calls from Python: numba routes a dispatcher's first call
# with new argument types through _compile_for_args (then compiles or loads from the
# cache); calls from inside another kernel do not pass there.
_CALLS = """
import json, sys, tempfile
from numba.core.dispatcher import Dispatcher
from tools.record_kernels import WORKLOADS
calls = set()
original = Dispatcher._compile_for_args
def recording(self, *args, **kws):
    module = self.py_func.__module__
    if module.startswith("oocboost.kernels."):
        types = tuple(self.typeof_pyval(a) for a in args)
        calls.add((f"{module}:{self.py_func.__qualname__}", str(types)))
    return original(self, *args, **kws)
Dispatcher._compile_for_args = recording
WORKLOADS[sys.argv[1]](tempfile.mkdtemp())
print(json.dumps(sorted(calls)))
"""


# Lists every function numba compiles (rather than loads from its cache) while a
# profile's workload runs.
_COMPILES = """
import json, sys, tempfile
from numba.core import event
from tools.record_kernels import WORKLOADS
compiled = []
class Compiles(event.Listener):
    def on_start(self, ev):
        pass
    def on_end(self, ev):
        f = ev.data["dispatcher"].py_func
        compiled.append(f"{f.__module__}:{f.__qualname__}")
event.register("numba:compile", Compiles())
WORKLOADS[sys.argv[1]](tempfile.mkdtemp())
print(json.dumps(compiled))
"""


def _run(code, *args, env=None):
    done = subprocess.run([sys.executable, "-c", code, *args], cwd=ROOT, check=True,
                          capture_output=True, text=True,
                          env={**os.environ, "OOCBOOST_WARMUP": "0", **(env or {})})
    return done.stdout.strip().splitlines()[-1]


def test_every_entry_names_a_kernel_and_a_signature_this_numba_reads():
    manifest = warmup.load_manifest()
    assert set(manifest) == set(warmup.PROFILES)
    for profile, entries in manifest.items():
        assert entries, profile
        for e in entries:
            assert hasattr(warmup.dispatcher(e["kernel"]), "compile"), e["kernel"]
            types = warmup.parse_signature(e["signature"])
            assert str(types) == e["signature"]
            assert e["seconds"] >= 0


@pytest.mark.parametrize("profile", [
    "boosting",
    pytest.param("forest", marks=pytest.mark.slow),
    pytest.param("adaboost", marks=pytest.mark.slow),
    pytest.param("isolation", marks=pytest.mark.slow),
])
def test_the_manifest_lists_exactly_what_the_run_calls(profile):
    called = {tuple(c) for c in json.loads(_run(_CALLS, profile))}
    listed = {(e["kernel"], e["signature"]) for e in warmup.load_manifest()[profile]}
    assert called == listed, ("run `python -m tools.record_kernels`: "
                              f"new {sorted(called - listed)}, gone {sorted(listed - called)}")


def test_a_helper_compiles_into_numbas_cache(tmp_path):
    entries = [e for e in warmup.load_manifest()["boosting"]
               if e["kernel"].endswith(":_sigmoid")]
    assert entries
    check = ("import sys; from oocboost.kernels import warmup; "
             "print(warmup.is_cold('boosting'), "
             "warmup._index_path(warmup.dispatcher(sys.argv[1])))")
    env = {"NUMBA_CACHE_DIR": str(tmp_path)}
    cold, index = _run(check, entries[0]["kernel"], env=env).split()
    assert cold == "True" and not os.path.exists(index)
    done = subprocess.run([sys.executable, "-m", "oocboost.kernels.warmup"], cwd=ROOT,
                          input=json.dumps(entries), text=True, check=True,
                          env={**os.environ, **env})
    assert done.returncode == 0
    assert os.path.exists(index) and index.startswith(str(tmp_path))


def test_work_is_dealt_by_module_longest_first():
    entries = [{"kernel": f"oocboost.kernels.{m}:{f}", "signature": "()", "seconds": s}
               for m, f, s in [("a", "f", 5.0), ("a", "g", 4.0), ("b", "f", 6.0),
                               ("c", "f", 2.0), ("d", "f", 1.0)]]
    parts = warmup.split_work(entries, 2)
    modules = [{e["kernel"].split(":")[0][-1] for e in p} for p in parts]
    assert modules == [{"a"}, {"b", "c", "d"}]          # 9 s against 9 s
    # each part in the entries' order (a run's first-call order), not the dealing order
    assert [e["kernel"][-3:] for e in parts[1]] == ["b:f", "c:f", "d:f"]
    reordered = [entries[3], entries[2], entries[4], entries[0], entries[1]]
    assert [e["kernel"][-3:] for e in warmup.split_work(reordered, 2)[1]] == [
        "c:f", "b:f", "d:f"]
    assert [len(p) for p in warmup.split_work(entries, 1)] == [5]
    assert sum(len(p) for p in warmup.split_work(entries, 8)) == 5


def test_unknown_profile_and_unreadable_signature_are_named():
    with pytest.raises(ValueError, match="unknown warm-up profile 'gbm'"):
        warmup.start(["gbm"])
    with pytest.raises(ValueError, match="cannot read the numba signature"):
        warmup.parse_signature("(Array(float64, 1, 'Q'),")
    assert warmup.compile_entries([{"kernel": "oocboost.kernels.split:pick_best_pairs",
                                    "signature": "(nonsense,)", "seconds": 0}]) == (0, 1)


def test_automatic_warm_up_is_off_when_switched_off(monkeypatch):
    monkeypatch.setenv(warmup.ENV_SWITCH, "0")
    assert warmup.auto_start("boosting") == []


def test_cli_warmup_fills_the_cache():
    out = subprocess.run([sys.executable, "-m", "oocboost.cli", "warmup", "--learner",
                          "boosting", "--jobs", "2"], cwd=ROOT, capture_output=True,
                         text=True, check=True).stdout
    assert "compiling the kernels of boosting on 2 processes" in out and "done in" in out
    assert _run("from oocboost.kernels import warmup; print(warmup.is_cold('boosting'))") \
        == "False"


def test_a_cache_dir_filled_by_warmup_serves_another_process(tmp_path):
    """``oocboost warmup --cache-dir DIR`` compiles into DIR, and a second process with
    ``NUMBA_CACHE_DIR=DIR`` runs the learner's workload (build, train, predict) loading
    every kernel: nothing compiled, nothing written to DIR."""
    folder = tmp_path / "kernels"
    out = subprocess.run([sys.executable, "-m", "oocboost.cli", "warmup", "--learner",
                          "isolation", "--cache-dir", str(folder)], cwd=ROOT,
                         capture_output=True, text=True, check=True).stdout
    assert f"NUMBA_CACHE_DIR={folder}" in out
    files = {p: p.stat().st_mtime_ns for p in folder.rglob("*")}
    assert sum(p.suffix == ".nbi" for p in files) >= 10, sorted(files)
    compiled = json.loads(_run(_COMPILES, "isolation", env={"NUMBA_CACHE_DIR": str(folder)}))
    assert compiled == []
    assert {p: p.stat().st_mtime_ns for p in folder.rglob("*")} == files


def test_cache_dir_and_jobs_are_checked(tmp_path):
    from tests.cli_runner import run_cli

    a_file = tmp_path / "f"
    a_file.write_text("x")
    for args, needle in ((["--cache-dir", str(a_file)], f"--cache-dir {a_file} is a file"),
                         (["--jobs", "0"], "--jobs must be at least 1")):
        r = run_cli("warmup", *args)
        assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
        assert needle in r.stderr
