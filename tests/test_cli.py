"""``oocboost build-cache`` and ``oocboost info`` through the real command line."""
import gzip
import os
import pty
import re
import select
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from oocboost.cache.store import Cache
from oocboost.errors import CacheError

from .cli_runner import REPO
from .cli_runner import run_cli as cli


def build(src, out, *args):
    return cli("build-cache", src, "-o", out, *args)


def write(tmp_path, name, content):
    path = tmp_path / name
    if isinstance(content, str):
        content = content.encode()
    path.write_bytes(content)
    return path


def one_line_error(r, *needles, code=None):
    """Exit code != 0, a single stderr line holding every needle, no traceback."""
    assert r.returncode != 0, r.stdout
    if code is not None:
        assert r.returncode == code, r.stderr
    assert "Traceback" not in r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


def leftovers(folder):
    return [n for n in os.listdir(folder) if ".oocb-spool-" in n or ".oocb.tmp-" in n
            or ".oocb.old-" in n]


GOOD = "a,b,y\n1,2.5,0\n2,3.5,1\n3,4.5,0\n"


# ------------------------------------------------------------------ refused inputs
@pytest.mark.parametrize("name,content,args,needles", [
    ("empty.csv", "", (), ["empty.csv", "empty", "expected a header"]),
    ("header.csv", "a,b,y\n", (), ["header.csv", "no data rows"]),
    ("ragged.csv", "a,b,y\n1,2,0\n3,4\n5,6,1\n", (),
     ["ragged.csv", "line 3", "expected 3 fields", "got 2"]),
    ("nolabel.csv", "a,b\n1,2\n", (), ["nolabel.csv", "label column 'y' not found",
                                       "available columns"]),
    ("labelna.csv", "a,b,y\n1,2,0\n3,4,\n5,6,1\n", (),
     ["labelna.csv", "line 3", "label column 'y'", "expected a number"]),
    ("labeltext.csv", "a,b,y\n1,2,0\n3,4,yes\n", (),
     ["labeltext.csv", "label column 'y'", "expected numbers"]),
    ("dup.csv", "a,a,y\n1,2,0\n", (), ["dup.csv", "duplicate column names ['a']"]),
    ("latin.csv", b"a,b,y\n1,2,0\n3,caf\xe9,1\n", (),
     ["latin.csv", "line 3", "byte offset", "not valid utf8"]),
    ("cp.csv", b"a,b,y\n1,\x81x,0\n", ("--encoding", "cp1252"),
     ["cp.csv", "line 2", "not valid cp1252"]),
    ("weight.csv", GOOD, ("--weight", "zz"), ["weight.csv", "weight column 'zz' not found"]),
    ("drop.csv", GOOD, ("--drop", "a,zz"), ["drop.csv", "columns to drop ['zz'] not found"]),
    ("nocat.csv", "a,b,y\n1,x,0\n", ("--categorical", "none"),
     ["nocat.csv", "line 2", "'b'", "expected numbers"]),
])
def test_refused_with_one_line_error(tmp_path, name, content, args, needles):
    src = write(tmp_path, name, content)
    out = tmp_path / "c.oocb"
    extra = () if "--label" in args else ("--label", "y")
    r = build(src, out, *extra, *args)
    one_line_error(r, *needles, code=2)
    assert not os.path.exists(out)
    assert leftovers(tmp_path) == []


def test_unknown_label_column(tmp_path):
    src = write(tmp_path, "d.csv", GOOD)
    r = build(src, tmp_path / "c.oocb", "--label", "target")
    one_line_error(r, "d.csv", "label column 'target' not found", "['a', 'b', 'y']", code=2)


@pytest.fixture(scope="module")
def late_text_csv(tmp_path_factory):
    """A 2.5 MB CSV with text in numeric column b on two late lines, past the first
    lines the probe reads, within the reader's first 2 MiB block (which its opening
    read parses)."""
    path = tmp_path_factory.mktemp("late") / "late.csv"
    rng = np.random.default_rng(0)
    vals = rng.random(150_000)
    lines = ["a,b,y"]
    for i, v in enumerate(vals):
        b = "oops" if i in (100_000, 110_000) else f"{v:.6f}"
        lines.append(f"{i},{b},{i % 2}")
    path.write_text("\n".join(lines) + "\n")
    assert path.stat().st_size > 2 * 2**20
    return path


def test_text_in_numeric_column_read_on_one_thread(tmp_path, late_text_csv, monkeypatch):
    # pyarrow names the row in its message when it reads on one thread (OMP_NUM_THREADS=1,
    # as a Dask worker's environment has it): the error still names line and column
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    r = build(late_text_csv, tmp_path / "c.oocb", "--label", "y")
    one_line_error(r, "late.csv", "line 100002", "column 'b'", "expected a number", "'oops'",
                   code=2)


def test_text_in_numeric_column(tmp_path, late_text_csv):
    r = build(late_text_csv, tmp_path / "c.oocb", "--label", "y")
    one_line_error(r, "late.csv", "line 100002", "column 'b'", "expected a number", "'oops'",
                   code=2)
    assert not os.path.exists(tmp_path / "c.oocb")
    r = build(late_text_csv, tmp_path / "c.oocb", "--label", "y", "--on-bad-rows", "skip",
              "--quiet")
    assert r.returncode == 0, r.stderr
    assert r.stdout == "" and r.stderr == ""
    # the rows stay; their stray values are missing, counted per column
    cache = Cache(tmp_path / "c.oocb")
    assert cache.n_rows == 150_000
    assert cache.manifest["source"]["n_bad_rows"] == 0
    assert cache.manifest["source"]["n_bad_values"] == {"b": 2}
    assert cache.manifest["features"][1]["n_missing"] == 2
    assert cache.bin_mapper.feature_types == ["numeric", "numeric"]
    info = cli("info", tmp_path / "c.oocb")
    assert info.returncode == 0
    assert "bad rows skipped 0" in info.stdout
    assert "values that were not numbers, read as missing: b 2" in info.stdout


def test_skip_ragged_rows_counted_in_info(tmp_path):
    src = write(tmp_path, "r.csv", "a,b,y\n1,2,0\n3,4\n5,6,1\n7,8,9,10\n")
    r = build(src, tmp_path / "c.oocb", "--label", "y", "--on-bad-rows", "skip")
    assert r.returncode == 0, r.stderr
    assert "bad rows skipped 2" in r.stdout
    assert Cache(tmp_path / "c.oocb").n_rows == 2


def test_output_path_holding_something_else(tmp_path):
    src = write(tmp_path, "d.csv", GOOD)
    afile = write(tmp_path, "afile", "precious")
    one_line_error(build(src, afile, "--label", "y"), str(afile), "it is a file", code=3)
    assert afile.read_text() == "precious"
    folder = tmp_path / "folder"
    folder.mkdir()
    (folder / "notes.txt").write_text("mine")
    one_line_error(build(src, folder, "--label", "y"), "not an oocboost cache", code=3)
    assert (folder / "notes.txt").read_text() == "mine"
    # --overwrite replaces only a cache: the attack that deleted a thesis.
    parent = tmp_path / "p"
    (parent / "src").mkdir(parents=True)
    (parent / "src" / "thesis.tex").write_text("x")
    for target, what in ((afile, "it is a file"), (folder, "not an oocboost cache"),
                         (parent, "it holds src/")):
        one_line_error(build(src, target, "--label", "y", "--overwrite"), str(target), what,
                       "replaces only an oocboost cache", code=3)
    assert afile.read_text() == "precious" and (folder / "notes.txt").read_text() == "mine"
    assert (parent / "src" / "thesis.tex").read_text() == "x"


def _file_size_limit(n_bytes):
    import resource

    return lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (n_bytes, resource.RLIM_INFINITY))


def test_full_disk_is_one_line_and_leaves_what_was_there(tmp_path):
    """``ulimit -f`` stands in for a full disk (EFBIG where a full one gives ENOSPC): build,
    train's save and predict's output end with exit 6 naming the path; the model already
    at the path and the folder are as they were, and no spool is left behind."""
    rows = "\n".join(f"{i % 7},{i % 3},{i % 2}" for i in range(20000))
    src = write(tmp_path, "d.csv", "a,b,y\n" + rows + "\n")
    cache, model = tmp_path / "c.oocb", tmp_path / "m.json"
    assert build(src, cache, "--label", "y", "--quiet").returncode == 0
    assert cli("train", cache, "-o", model, "--rounds", "1", "--quiet").returncode == 0
    before = model.read_bytes()
    small = _file_size_limit(4096)
    r = cli("build-cache", src, "-o", tmp_path / "c2.oocb", "--label", "y",
            preexec_fn=small)
    one_line_error(r, f"cannot write {tmp_path / 'c2.oocb'}: no space left", code=6)
    r = cli("train", cache, "-o", model, "--rounds", "30", "--quiet", preexec_fn=small)
    one_line_error(r, f"cannot write {model}: no space left", "bytes needed", code=6)
    r = cli("predict", model, src, "-o", tmp_path / "p.csv", preexec_fn=small)
    one_line_error(r, f"cannot write {tmp_path / 'p.csv'}: no space left", code=6)
    assert model.read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == ["c.oocb", "d.csv", "m.json"]


def test_model_file_mode_is_the_umasks_and_kept_on_overwrite(tmp_path):
    src = write(tmp_path, "d.csv", GOOD)
    cache, model = tmp_path / "c.oocb", tmp_path / "m.json"
    assert build(src, cache, "--label", "y", "--quiet").returncode == 0
    umask = lambda: os.umask(0o022)  # noqa: E731 (the child's umask, whatever ours is)
    r = cli("train", cache, "-o", model, "--rounds", "2", "--quiet", preexec_fn=umask)
    assert r.returncode == 0, r.stderr
    assert oct(os.stat(model).st_mode & 0o777) == oct(0o644)
    os.chmod(model, 0o640)
    r = cli("train", cache, "-o", model, "--rounds", "3", "--quiet", preexec_fn=umask)
    assert r.returncode == 0, r.stderr
    assert oct(os.stat(model).st_mode & 0o777) == oct(0o640)
    from oocboost.model.model import load_model

    assert load_model(model).n_trees == 3  # the new model, in the old file's mode


def test_output_equal_to_or_around_an_input_is_refused(tmp_path):
    src = write(tmp_path, "d.csv", GOOD)
    cache = tmp_path / "c.oocb"
    assert build(src, cache, "--label", "y", "--quiet").returncode == 0
    # is the input, is inside it, contains it: every command that writes refuses
    for out, why in ((src, "is the input"), (tmp_path, "contains the input")):
        for extra in ((), ("--overwrite",)):
            one_line_error(build(src, out, "--label", "y", *extra), str(out), why, code=2)
    assert src.read_text() == GOOD
    one_line_error(build(src, cache / "v.oocb", "--reference", cache),
                   "is inside the input", code=2)
    model = tmp_path / "m.json"
    r = cli("train", cache, "-o", model, "--rounds", "2", "--quiet")
    assert r.returncode == 0, r.stderr
    before = model.read_bytes()
    one_line_error(cli("train", cache, "-o", cache, "--rounds", "2"), "is the input",
                   code=2)
    one_line_error(cli("train", cache, "-o", cache / "manifest.json", "--rounds", "2"),
                   "is inside the input", code=2)
    one_line_error(cli("predict", model, src, "-o", model), "is the input", code=2)
    one_line_error(cli("predict", model, src, "-o", src), "is the input", code=2)
    link = tmp_path / "alias.csv"
    link.symlink_to(src)
    one_line_error(cli("predict", model, src, "-o", link), "is the input", code=2)
    one_line_error(cli("predict", model, cache, "-o", cache / "p.csv"),
                   "is inside the input", code=2)
    assert model.read_bytes() == before and src.read_text() == GOOD
    assert Cache(cache).n_rows == 3


def test_memory_limit_too_small(tmp_path):
    src = write(tmp_path, "d.csv", GOOD)
    r = build(src, tmp_path / "c.oocb", "--label", "y", "--memory-limit", "8MB")
    line = one_line_error(r, "memory limit", "smallest limit", code=5)
    smallest = int(re.search(r"smallest limit that works here is (\d+) MiB", line).group(1))
    assert smallest > 8
    assert not os.path.exists(tmp_path / "c.oocb")
    r = build(src, tmp_path / "c.oocb", "--label", "y", "--memory-limit", f"{smallest + 8}M",
              "--quiet")
    assert r.returncode == 0, r.stderr


# ------------------------------------------------------------------ accepted inputs
def test_bom_crlf_quotes_inf_constant_missing_reported(tmp_path):
    content = (b'\xef\xbb\xbfa,s,const,empty,y\r\n'
               b'1,"x,1",5,,0\r\n'
               b'2,"multi\r\nline",5,,1\r\n'
               b'inf,"q""uote",5,,0\r\n'
               b'-inf,plain,5,,1\r\n'
               b'3,"x,1",5,,1\r\n')
    src = write(tmp_path, "bom.csv", content)
    out = tmp_path / "c.oocb"
    r = build(src, out, "--label", "y")
    assert r.returncode == 0, r.stderr
    cache = Cache(out)
    assert cache.feature_names == ["a", "s", "const", "empty"]   # no BOM in the name
    m = cache.bin_mapper
    assert sorted(m.categories[1]) == sorted(['x,1', 'multi\r\nline', 'q"uote', 'plain'])
    codes = cache.read_block(0).codes
    assert codes[0].tolist()[2:4] == [m.n_value_bins[0] - 1, 0]  # +inf top, -inf bottom
    assert codes[1][0] == codes[1][4] == m.categories[1].index("x,1")
    assert np.all(codes[2] == 0) and np.all(codes[3] == m.missing_bin)
    np.testing.assert_array_equal(cache.read_labels()[0], [0, 1, 0, 1, 1])
    info = cli("info", out)
    assert info.returncode == 0 and info.stderr == ""
    text = info.stdout
    assert re.search(r"rows 5, features 4", text)
    rows = {line.split()[0]: line for line in text.splitlines()[1:]
            if line.strip() and line.split()[0] in cache.feature_names}
    assert "2 infinite" in rows["a"]
    assert "categorical" in rows["s"] and "4 categories" in rows["s"]
    assert "constant" in rows["const"] and "0.0%" in rows["const"]
    assert "100.0%" in rows["empty"]
    assert text in r.stdout  # build-cache prints the same description


def test_high_cardinality_capped_and_info(tmp_path):
    rng = np.random.default_rng(0)
    ids = rng.integers(0, 2000, 5000)
    src = tmp_path / "hc.csv"
    with open(src, "w") as f:
        f.write("id,x,y\n")
        for i, v in enumerate(ids):
            f.write(f"id{v},{i % 13},{i % 2}\n")
    out = tmp_path / "c.oocb"
    r = build(src, out, "--label", "y", "--max-bin", "32", "--max-categories", "31",
              "--quiet")
    assert r.returncode == 0, r.stderr
    cache = Cache(out)
    assert len(cache.bin_mapper.categories[0]) == 30 and cache.bin_mapper.has_other[0]
    assert cache.bin_mapper.n_value_bins.tolist() == [31, 13]
    n_seen = len(set(ids.tolist()))
    info = cli("info", out).stdout
    id_line = next(line for line in info.splitlines() if line.strip().startswith("id "))
    assert "30 categories" in id_line and "31" in id_line
    assert f"rare folded into 'other' ({n_seen - 30} of {n_seen} seen)" in id_line
    assert "blocks 1 x 5000 rows" in info
    # without --max-categories every id keeps a code: two bytes, several histogram columns
    wide = tmp_path / "w.oocb"
    assert build(src, wide, "--label", "y", "--max-bin", "32", "--quiet").returncode == 0
    id_line = next(line for line in cli("info", wide).stdout.splitlines()
                   if line.strip().startswith("id "))
    columns = -(-(n_seen + 1) // 32)
    assert f"{n_seen} categories, two-byte codes, {columns} histogram columns" in id_line
    assert "size on disk" in info and "uncompressed" in info
    assert re.search(r"label 'y'", info)


def test_bundles_listed_by_info_and_no_bundle(tmp_path):
    rng = np.random.default_rng(1)
    hot = rng.integers(0, 4, 300)
    src = tmp_path / "oh.csv"
    with open(src, "w") as f:
        f.write("x,h0,h1,h2,h3,y\n")
        for i, h in enumerate(hot):
            f.write(f"{rng.normal():.4f}," + ",".join("1" if k == h else "0" for k in range(4))
                    + f",{i % 2}\n")
    out = tmp_path / "b.oocb"
    assert build(src, out, "--label", "y", "--quiet").returncode == 0
    assert Cache(out).n_columns == 2
    info = cli("info", out).stdout
    assert "5 features stored in 2 columns: 1 bundle of sparse features" in info
    assert "bundle 0: 4 features (h0 .. h3), 0 rows in conflict" in info
    h2 = next(line for line in info.splitlines() if line.strip().startswith("h2 "))
    assert h2.endswith("bundle 0")
    plain = tmp_path / "p.oocb"
    assert build(src, plain, "--label", "y", "--quiet", "--no-bundle").returncode == 0
    assert Cache(plain).bundles is None and "stored in" not in cli("info", plain).stdout
    r = build(src, tmp_path / "x.oocb", "--label", "y", "--max-conflict-rate", "1.5")
    one_line_error(r, "max_conflict_rate must be a number in [0, 1), got 1.5", code=2)


def test_gzip_csv_same_as_plain(tmp_path):
    text = "a,c,y\n" + "".join(f"{i * 0.5},{'abc'[i % 3]},{i % 2}\n" for i in range(300))
    plain = write(tmp_path, "d.csv", text)
    gz = tmp_path / "d.csv.gz"
    with gzip.open(gz, "wt") as f:
        f.write(text)
    for src, out in ((plain, "p.oocb"), (gz, "g.oocb")):
        r = build(src, tmp_path / out, "--label", "y", "--block-rows", "64", "--quiet")
        assert r.returncode == 0, r.stderr
    p, g = Cache(tmp_path / "p.oocb"), Cache(tmp_path / "g.oocb")
    for i in range(p.n_blocks):
        np.testing.assert_array_equal(p.read_block(i).codes, g.read_block(i).codes)
    assert p.manifest["bin_mapper"] == g.manifest["bin_mapper"]


# ------------------------------------------------------------------ reference
def test_reference_and_schema_mismatch(tmp_path):
    train = write(tmp_path, "train.csv", "a,c,y\n" + "".join(
        f"{i},{'xyz'[i % 3]},{i % 2}\n" for i in range(100)))
    valid = write(tmp_path, "valid.csv", "a,c,y\n-5,x,0\n50,z,1\n500,w,1\n")
    r = build(train, tmp_path / "t.oocb", "--label", "y", "--max-bin", "16", "--quiet")
    assert r.returncode == 0, r.stderr
    r = build(valid, tmp_path / "v.oocb", "--label", "y", "--reference", tmp_path / "t.oocb")
    assert r.returncode == 0, r.stderr
    assert "binned with the edges of" in r.stdout
    t, v = Cache(tmp_path / "t.oocb"), Cache(tmp_path / "v.oocb")
    assert v.manifest["bin_mapper"] == t.manifest["bin_mapper"]
    codes = v.read_block(0).codes
    assert codes[0].tolist() == [0, t.bin_mapper.bin_edges[0].searchsorted(50),
                                 t.bin_mapper.n_value_bins[0] - 1]
    assert codes[1].tolist()[:2] == [t.bin_mapper.categories[1].index("x"),
                                     t.bin_mapper.categories[1].index("z")]
    assert "None seen" not in r.stdout
    # a reference build counts missing values too: info shows the share
    assert re.search(r"\n  a +numeric +\d+ +0\.0%", r.stdout)
    for name, content, needles in [
        ("missing.csv", "a,y\n1,0\n", ["missing columns ['c']"]),
        ("extra.csv", "a,c,d,y\n1,x,2,0\n", ["extra columns ['d']"]),
        ("retyped.csv", "a,c,y\nq,1,0\n", ["a (numeric in the reference, categorical here)",
                                           "c (categorical in the reference, numeric here)"]),
    ]:
        src = write(tmp_path, name, content)
        r = build(src, tmp_path / "x.oocb", "--label", "y", "--reference", tmp_path / "t.oocb")
        one_line_error(r, name, "does not match the reference cache", *needles, code=2)
        assert not os.path.exists(tmp_path / "x.oocb")


# ------------------------------------------------------------------ fingerprints
def test_rebuild_same_fingerprint_reuses_other_needs_overwrite(tmp_path):
    src = write(tmp_path, "d.csv", GOOD)
    out = tmp_path / "c.oocb"
    r = build(src, out, "--label", "y", "--quiet")
    assert r.returncode == 0, r.stderr
    fp = Cache(out).manifest["fingerprint"]["sha256"]
    mtime = os.stat(out / "manifest.json").st_mtime_ns
    r = build(src, out, "--label", "y")
    assert r.returncode == 0, r.stderr
    assert "up to date" in r.stdout and "reusing" in r.stdout
    assert os.stat(out / "manifest.json").st_mtime_ns == mtime
    r = build(src, out, "--label", "y", "--max-bin", "64")
    one_line_error(r, str(out), "other data or parameters", "--overwrite", code=3)
    time.sleep(0.01)
    src.write_text(GOOD.replace("2.5", "9.5"))
    r = build(src, out, "--label", "y")
    one_line_error(r, "other data or parameters", "--overwrite", code=3)
    assert os.stat(out / "manifest.json").st_mtime_ns == mtime
    r = build(src, out, "--label", "y", "--overwrite", "--quiet")
    assert r.returncode == 0, r.stderr
    assert Cache(out).manifest["fingerprint"]["sha256"] != fp
    assert leftovers(tmp_path) == []


# ------------------------------------------------------------------ progress
def test_no_progress_output_when_piped(tmp_path):
    src = write(tmp_path, "d.csv", GOOD)
    r = build(src, tmp_path / "c.oocb", "--label", "y")
    assert r.returncode == 0 and r.stderr == ""
    assert "pass 1/2" not in r.stdout


def _run_on_pty(args):
    """Run the CLI with stderr on a pseudo-terminal; returns (rc, stdout, terminal text)."""
    master, slave = pty.openpty()
    env = dict(os.environ)
    env.pop("OOCBOOST_QUIET", None)
    p = subprocess.Popen([sys.executable, "-m", "oocboost.cli", *map(str, args)],
                         stdout=subprocess.PIPE, stderr=slave, cwd=REPO, env=env)
    os.close(slave)
    chunks = []
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 0.5)
        if ready:
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not data:
                break
            chunks.append(data)
        elif p.poll() is not None:
            break
    os.close(master)
    out = p.stdout.read().decode()
    p.stdout.close()
    return p.wait(timeout=60), out, b"".join(chunks).decode(errors="replace")


def test_progress_bars_on_a_terminal(tmp_path):
    src = write(tmp_path, "d.csv", "a,y\n" + "".join(f"{i},{i % 2}\n" for i in range(2000)))
    rc, out, term = _run_on_pty(["build-cache", src, "-o", tmp_path / "c.oocb", "--label",
                                 "y"])
    assert rc == 0, term
    assert "pass 1/2: sketch" in term and "pass 2/2: bin" in term
    assert "2.00k" in term and "rows/s" in term
    assert "Traceback" not in term
    rc, out, term = _run_on_pty(["build-cache", src, "-o", tmp_path / "q.oocb", "--label",
                                 "y", "--quiet"])
    assert rc == 0 and term == "" and out == ""
    # a reference build has a single bar
    rc, out, term = _run_on_pty(["build-cache", src, "-o", tmp_path / "v.oocb", "--label",
                                 "y", "--reference", tmp_path / "c.oocb"])
    assert rc == 0 and "bin (reference edges)" in term and "pass 1/2" not in term


# ------------------------------------------------------------------ atomicity
@pytest.fixture(scope="module")
def big_csv(tmp_path_factory):
    from oocboost.datasets import generate

    path = tmp_path_factory.mktemp("big") / "big.csv"
    generate(path, 150_000, 20, n_categorical=1, seed=0)
    return path


#: Runs the CLI with each spooled batch (pass 1) and each written block (pass 2) followed
#: by a 20 ms pause. Unslowed, pass 1 of the test CSV lasts about 0.2 s and the whole
#: build 1.3 s: a loaded machine could stall the test between seeing the phase and
#: sending the signal until the build had committed, and a signal then landing in the
#: interpreter's shutdown left a complete cache and exit code 0.
_SLOW_BUILD = """
import sys, time
import oocboost.cache.build, oocboost.cache.spool, oocboost.cache.store.writer
from oocboost import cli

def paced(method):
    def run(*args, **kwargs):
        result = method(*args, **kwargs)
        time.sleep(0.02)
        return result
    return run

oocboost.cache.spool.Spool.write = paced(oocboost.cache.spool.Spool.write)
oocboost.cache.store.writer.CacheWriter.write_block = paced(
    oocboost.cache.store.writer.CacheWriter.write_block)
sys.exit(cli.main(sys.argv[1:]))
"""


def _sigint_as_on_a_terminal():
    """``preexec_fn`` of a CLI run a test interrupts: SIGINT at its default disposition, as
    a command typed at a terminal has it. A test run started as a background job of a
    non-interactive shell (``pytest &``) ignores SIGINT, and every process it starts
    inherits that: the builds then rightly ignored the test's Ctrl-C and completed."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _start_and_signal(big_csv, out, sig, phase="pass2"):
    """Start a build (paced, see _SLOW_BUILD), wait until it is in ``phase`` (pass1:
    spooling parsed rows; pass2: writing blocks), send ``sig``; returns the process."""
    env = dict(os.environ)
    env.pop("OOCBOOST_DEBUG", None)
    p = subprocess.Popen([sys.executable, "-c", _SLOW_BUILD, "build-cache", str(big_csv),
                          "-o", str(out), "--label", "label", "--block-rows", "2048"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         cwd=REPO, env=env,
                         preexec_fn=_sigint_as_on_a_terminal)
    parent = os.path.dirname(out)

    def started():
        names = os.listdir(parent)
        if phase == "pass1":
            spools = [os.path.join(parent, n, "spool.arrow") for n in names
                      if n.startswith(".oocb-spool-")]
            return any(os.path.exists(f) and os.path.getsize(f) > 0 for f in spools)
        tmps = [os.path.join(parent, n, "blocks") for n in names if ".oocb.tmp-" in n]
        return sum(len(os.listdir(t)) for t in tmps if os.path.isdir(t)) >= 2

    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and p.poll() is None:
        try:
            if started():
                break
        except OSError:  # a folder vanished between listdir and stat
            pass
        time.sleep(0.01)
    assert p.poll() is None, "the build ended before it could be interrupted"
    p.send_signal(sig)
    return p


def _assert_no_valid_cache(out):
    if os.path.exists(out):
        with pytest.raises(CacheError):
            Cache(out)


@pytest.mark.parametrize("phase", ["pass1", "pass2"])
def test_sigint_leaves_nothing(tmp_path, big_csv, phase):
    out = tmp_path / "c.oocb"
    t0 = time.monotonic()
    p = _start_and_signal(big_csv, out, signal.SIGINT, phase)
    t_signal = time.monotonic() - t0
    stdout, stderr = p.communicate(timeout=120)
    assert p.returncode == 130, (f"signal at {t_signal:.2f} s, exit at "
                                 f"{time.monotonic() - t0:.2f} s; stdout {stdout[-300:]!r}; "
                                 f"stderr {stderr[-600:]!r}")
    assert "interrupted" in stderr and "Traceback" not in stderr
    assert len(stderr.strip().splitlines()) == 1
    assert not os.path.exists(out)
    assert leftovers(tmp_path) == []


#: Runs the CLI with one SIGINT delivered where Python prints and drops the
#: KeyboardInterrupt (a ``__del__``), as happens when the signal lands in the ctypes
#: callback LLVM calls while numba compiles a kernel (first run, empty kernel cache):
#: without the recorded interrupt the build went on and committed with exit code 0.
_SWALLOWED_SIGINT = """
import signal, sys
import oocboost.cache.build, oocboost.cache.spool, oocboost.cache.store.writer
import oocboost.utils.workers
from oocboost import cli


class Swallowed:
    def __del__(self):
        signal.raise_signal(signal.SIGINT)


def once(owner, name):
    method = getattr(owner, name)
    fired = []

    def run(*args, **kwargs):
        result = method(*args, **kwargs)
        if not fired:
            fired.append(True)
            Swallowed()  # collected at once: the KeyboardInterrupt is raised in __del__
        return result
    setattr(owner, name, run)


where = sys.argv.pop(1)
if where == "pass1":  # the parsing thread hands a batch to the sketching thread
    once(oocboost.utils.workers.InOrderWorker, "submit")
elif where == "pass2":
    once(oocboost.cache.store.writer.CacheWriter, "write_block")
else:  # the manifest, built right before the commit
    once(oocboost.cache.build, "feature_summary")
sys.exit(cli.main(sys.argv[1:]))
"""


@pytest.mark.parametrize("where", ["pass1", "pass2", "commit"])
def test_swallowed_sigint_still_stops_the_build(tmp_path, where):
    src = write(tmp_path, "d.csv", "a,b,label\n" + "".join(
        f"{i},{i % 7},{i % 2}\n" for i in range(3000)))
    out = tmp_path / "c.oocb"
    env = dict(os.environ)
    env.pop("OOCBOOST_DEBUG", None)
    r = subprocess.run([sys.executable, "-c", _SWALLOWED_SIGINT, where, "build-cache",
                        str(src), "-o", str(out), "--label", "label", "--block-rows", "500",
                        "--quiet"], capture_output=True, text=True, timeout=120, cwd=REPO,
                       env=env, preexec_fn=_sigint_as_on_a_terminal)
    assert "Exception ignored" in r.stderr  # the interrupt was swallowed where it landed
    assert r.returncode == 130, r.stderr
    assert r.stderr.strip().splitlines()[-1].startswith("oocboost build-cache: interrupted")
    assert not os.path.exists(out)
    assert leftovers(tmp_path) == []


#: A SIGINT right after the cache was put in place (the folder's fsync follows).
_SIGINT_AFTER_COMMIT = """
import signal, sys
import oocboost.cache.store.writer as writer
from oocboost import cli

def fsync_then_sigint(folder):
    signal.raise_signal(signal.SIGINT)

writer._fsync_dir = fsync_then_sigint
sys.exit(cli.main(sys.argv[1:]))
"""


def test_sigint_after_the_commit_ends_with_the_cache_and_exit_0(tmp_path):
    """A build that got SIGINT after its commit exited 130 with the new cache in place."""
    src = write(tmp_path, "d.csv", "a,b,label\n" + "".join(
        f"{i},{i % 7},{i % 2}\n" for i in range(300)))
    out = tmp_path / "c.oocb"
    env = dict(os.environ)
    env.pop("OOCBOOST_DEBUG", None)
    r = subprocess.run([sys.executable, "-c", _SIGINT_AFTER_COMMIT, "build-cache", str(src),
                        "-o", str(out), "--label", "label", "--quiet"], capture_output=True,
                       text=True, timeout=120, cwd=REPO, env=env,
                       preexec_fn=_sigint_as_on_a_terminal)
    assert r.returncode == 0, r.stderr
    one_line = r.stderr.strip().splitlines()
    assert one_line == [f"oocboost build-cache: interrupted after the cache {out} was "
                        f"written: it is complete"]
    assert Cache(out).n_rows == 300 and leftovers(tmp_path) == []


#: Fifty failing builds in one process: after each, only the main thread runs, and the
#: process's OS threads stop growing (pyarrow's pools are made once).
_ERROR_PATH_LOOP = """
import contextlib, io, os, sys, threading
from oocboost import cli

def os_threads():
    return len(os.listdir("/proc/self/task"))

codes, counts = [], []
for i in range(50):
    src = sys.argv[1 + i % 2]
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        codes.append(cli.main(["build-cache", src, "-o", sys.argv[3], "--label", "y",
                               "--quiet"]))
    assert "error:" in err.getvalue(), err.getvalue()
    assert threading.active_count() == 1, threading.enumerate()
    counts.append(os_threads())
assert set(codes) == {2}, codes
# pyarrow's pools start their threads on demand (more under load): a leak would keep
# growing over the 50 runs, a pool stops at its size within the first half
assert counts[-1] <= max(counts[:25]), counts
print("ok", counts[0])
"""


def test_failing_build_leaves_no_thread_running_50_times(tmp_path):
    """A string label ended 2 of 26 runs in 'terminate called without an active
    exception' (exit 134): a native thread still ran at the interpreter's exit."""
    early = write(tmp_path, "early.csv", "a,b,y\n" + "".join(
        f"{i},{i % 7},{'yes' if i % 3 else 'no'}\n" for i in range(3000)))
    late = write(tmp_path, "late.csv", "a,b,y\n" + "".join(
        f"{i},{i % 7},{'cat' if i == 40000 else i % 2}\n" for i in range(60000)))
    env = dict(os.environ)
    env.pop("OOCBOOST_DEBUG", None)
    r = subprocess.run([sys.executable, "-c", _ERROR_PATH_LOOP, str(early), str(late),
                        str(tmp_path / "c.oocb")], capture_output=True, text=True,
                       timeout=300, cwd=REPO, env=env)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.startswith("ok") and "terminate called" not in r.stderr
    assert leftovers(tmp_path) == []


def test_sigkill_then_next_build_cleans_up(tmp_path, big_csv):
    out = tmp_path / "c.oocb"
    p = _start_and_signal(big_csv, out, signal.SIGKILL)
    p.communicate(timeout=60)
    assert p.returncode == -signal.SIGKILL
    _assert_no_valid_cache(out)
    stale = leftovers(tmp_path)
    assert any(".oocb.tmp-" in n for n in stale) and any(".oocb-spool-" in n for n in stale)
    small = write(tmp_path, "small.csv", "a,label\n1,0\n2,1\n")
    r = build(small, out, "--label", "label", "--quiet")
    assert r.returncode == 0, r.stderr
    assert Cache(out).n_rows == 2
    assert leftovers(tmp_path) == []


def test_corrupted_cache_names_the_block(tmp_path):
    src = write(tmp_path, "d.csv", "a,y\n" + "".join(f"{i},{i % 2}\n" for i in range(500)))
    out = tmp_path / "c.oocb"
    r = build(src, out, "--label", "y", "--block-rows", "100", "--compression", "none",
              "--quiet")
    assert r.returncode == 0, r.stderr
    block = out / "blocks" / "block-000002.arrow"
    data = block.read_bytes()
    block.write_bytes(data[: len(data) // 2])
    one_line_error(cli("info", out), "block 2", "truncated", code=3)
    block.write_bytes(data[:-1] + bytes([data[-1] ^ 1]))
    cache = Cache(out)
    with pytest.raises(CacheError, match="block 2"):
        cache.read_block(2)
    os.remove(out / "manifest.json")
    one_line_error(cli("info", out), "manifest.json", code=3)


def test_info_verify_reads_every_block(tmp_path):
    rows = "\n".join(f"{i % 7},{i % 3},{i % 2}" for i in range(5000))
    src = write(tmp_path, "d.csv", "a,b,y\n" + rows + "\n")
    cache = tmp_path / "c.oocb"
    assert build(src, cache, "--label", "y", "--block-rows", "1000", "--quiet").returncode == 0
    r = cli("info", cache, "--verify")
    assert r.returncode == 0 and "verified: every block read whole (5000 rows)" in r.stdout
    block = cache / "blocks" / "block-000003.arrow"
    data = bytearray(block.read_bytes())
    data[len(data) // 2] ^= 0xFF                   # same size: only a full read sees it
    block.write_bytes(bytes(data))
    assert cli("info", cache).returncode == 0
    one_line_error(cli("info", cache, "--verify"), "block 3", "checksum mismatch", code=3)


def test_version_and_python_dash_m():
    r = cli("--version")
    assert r.returncode == 0 and re.fullmatch(r"oocboost \d+\.\d+\.\d+\S*\n", r.stdout)
    env = dict(os.environ)
    env.pop("OOCBOOST_DEBUG", None)
    r = subprocess.run([sys.executable, "-m", "oocboost", "--help"], capture_output=True,
                       text=True, timeout=60, cwd=REPO, env=env)
    assert r.returncode == 0 and "build-cache" in r.stdout and "train" in r.stdout


def test_every_option_has_a_line_of_help_and_shows_its_default():
    import argparse

    from oocboost.cli import build_parser

    sub = next(a for a in build_parser()._actions
               if isinstance(a, argparse._SubParsersAction))
    for name, parser in sub.choices.items():
        text = " ".join(parser.format_help().split())
        for action in parser._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            assert action.help, (name, action.dest)
            if action.option_strings and action.default not in (None, False):
                assert "default" in action.help or \
                    f"(default: {action.default})" in text, (name, action.dest)
    assert "(default: 100)" in " ".join(sub.choices["train"].format_help().split())


def test_a_commands_parser_is_the_full_parsers_for_it():
    """The parser built for one command lists the learners and export formats only where
    they are options; the command's own options and help are the full parser's."""
    import argparse

    from oocboost.cli import build_parser

    def subparsers(parser):
        return next(a for a in parser._actions
                    if isinstance(a, argparse._SubParsersAction)).choices

    full = subparsers(build_parser())
    for name in full:
        assert subparsers(build_parser(name))[name].format_help() == \
            full[name].format_help(), name


_IMPORTS_OF_A_BUILD = """
import sys
from oocboost.cli import main
assert main(["build-cache", sys.argv[1], "-o", sys.argv[2], "--label", "y", "--quiet",
             "--on-bad-rows", "skip"]) == 0
print(sorted(m for m in ("pandas", "oocboost.learners.registry", "oocboost.model.formats")
             if m in sys.modules))
"""

_IMPORTS_OF_A_PREDICTION = """
import sys
from oocboost.cli import main
assert main(["predict", sys.argv[1], sys.argv[2], "-o", sys.argv[3], "--quiet"]) == 0
print(sorted(m for m in ("pandas", "oocboost.learners.registry") if m in sys.modules))
"""


def test_build_and_predict_import_neither_the_learners_nor_pandas(tmp_path):
    """Fixed costs of a small build: listing the learners for the parser imported every
    learner and numba's linear algebra (0.45 s), a null filled by pyarrow pandas (0.2 s),
    the model module the export adapters (0.1 s); with text, missing values and a stray
    string in a numeric column, Arrow arrays made from Python lists and NumPy arrays,
    scalars from Python values and Array.to_numpy imported pandas too (0.35 s)."""
    src = write(tmp_path, "d.csv", "a,b,c,y\n1,,u,0\n2,3.5,v,1\n,4.5,,0\n3,oops,u,1\n"
                + "".join(f"{i},{i / 2},{'uvw'[i % 3]},{i % 2}\n" for i in range(40)))
    r = subprocess.run([sys.executable, "-c", _IMPORTS_OF_A_BUILD, str(src),
                        str(tmp_path / "c.oocb")], capture_output=True, text=True,
                       timeout=120, cwd=REPO)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"
    model = tmp_path / "m.json"
    assert cli("train", tmp_path / "c.oocb", "-o", model, "--rounds", "2",
               "--quiet").returncode == 0
    # predictions written as CSV without pandas: pa.array of a NumPy column imported it
    clean = write(tmp_path, "clean.csv", src.read_text().replace("oops", "5"))
    r = subprocess.run([sys.executable, "-c", _IMPORTS_OF_A_PREDICTION, str(model),
                        str(clean), str(tmp_path / "p.csv")], capture_output=True,
                       text=True, timeout=120, cwd=REPO)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"


def _labelled_csv(tmp_path, name="d.csv", n=3000, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 3))
    y = (x[:, 0] + 0.5 * rng.normal(size=n) > 0).astype(int)
    rows = "\n".join(f"{a:.5f},{b:.5f},{c:.5f},{t}" for (a, b, c), t in zip(x, y))
    return write(tmp_path, name, "a,b,c,y\n" + rows + "\n")


def test_outputs_into_a_folder_that_does_not_exist(tmp_path):
    """train lost the model it had just trained at the save step; predict, plot and
    report ended in a traceback."""
    src = _labelled_csv(tmp_path)
    cache = tmp_path / "c.oocb"
    assert build(src, cache, "--label", "y", "--quiet").returncode == 0
    model = tmp_path / "new" / "deeper" / "m.json"
    r = cli("train", cache, "-o", model, "--rounds", "3", "--quiet")
    assert r.returncode == 0, r.stderr
    assert model.exists()
    r = cli("predict", model, src, "-o", tmp_path / "out" / "p.csv", "--quiet")
    assert r.returncode == 0 and (tmp_path / "out" / "p.csv").exists(), r.stderr
    r = cli("plot", "importance", model, "-o", tmp_path / "figs" / "imp.png", "--quiet")
    assert r.returncode == 0 and (tmp_path / "figs" / "imp.png").exists(), r.stderr


def test_evaluate_uses_the_best_iteration_and_says_so(tmp_path):
    src = _labelled_csv(tmp_path, "train.csv", seed=1)
    valid_src = _labelled_csv(tmp_path, "valid.csv", n=1000, seed=2)
    train, valid = tmp_path / "t.oocb", tmp_path / "v.oocb"
    assert build(src, train, "--label", "y", "--quiet").returncode == 0
    assert build(valid_src, valid, "--label", "y", "--reference", train,
                 "--quiet").returncode == 0
    model = tmp_path / "m.json"
    r = cli("train", train, "-o", model, "--rounds", "300", "--learning-rate", "0.5",
            "--valid", valid, "--early-stopping", "5", "--eval-metric", "logloss",
            "--quiet")
    assert r.returncode == 0, r.stderr
    from oocboost.model.model import load_model
    from oocboost.model.predict import evaluate

    m = load_model(model)
    assert m.best_iteration is not None and m.n_rounds > m.best_iteration + 1
    r = cli("evaluate", model, valid, "--metric", "logloss")
    assert r.returncode == 0, r.stderr
    first, value = r.stdout.splitlines()[0], float(r.stdout.splitlines()[1].split()[1])
    assert first == (f"# rounds 0..{m.best_iteration} of {m.n_rounds}: the best iteration "
                     f"{m.best_iteration} (--iteration-range 0:0 for every round)")
    best = evaluate(m, str(valid), metrics=["logloss"],
                    iteration_range=(0, m.best_iteration + 1))["logloss"]
    every = evaluate(m, str(valid), metrics=["logloss"], iteration_range=(0, 0))["logloss"]
    assert value == pytest.approx(best, abs=1e-6) and best != every
    r = cli("evaluate", model, valid, "--metric", "logloss", "--iteration-range", "0:0")
    assert float(r.stdout.splitlines()[1].split()[1]) == pytest.approx(every, abs=1e-6)


def test_train_prints_a_forests_out_of_bag_score(tmp_path):
    src = _labelled_csv(tmp_path)
    cache = tmp_path / "c.oocb"
    assert build(src, cache, "--label", "y", "--quiet").returncode == 0
    r = cli("train", cache, "-o", tmp_path / "f.json", "--learner", "random-forest",
            "--rounds", "10", "--param", "oob_score=true")
    assert r.returncode == 0, r.stderr
    from oocboost.model.model import load_model

    oob = load_model(tmp_path / "f.json").attributes["oob_score"]
    assert f"out-of-bag score {oob:.6f}" in r.stdout


def test_info_of_a_reference_cache_says_values_outside_its_range(tmp_path):
    train = write(tmp_path, "t.csv", "a,y\n" + "".join(f"{i % 10},{i % 2}\n"
                                                       for i in range(200)))
    valid = write(tmp_path, "v.csv", "a,y\n" + "".join(f"{i},{i % 2}\n" for i in range(20)))
    assert build(train, tmp_path / "t.oocb", "--label", "y", "--quiet").returncode == 0
    assert build(valid, tmp_path / "v.oocb", "--label", "y", "--reference",
                 tmp_path / "t.oocb", "--quiet").returncode == 0
    r = cli("info", tmp_path / "v.oocb")
    assert ("10 values outside the reference's range (binned into the first or last bin)"
            in r.stdout), r.stdout
    assert "appended" not in r.stdout


def test_lightgbm_binary_train_layout_from_its_original_form(tmp_path):
    """LightGBM's binary.train (HIGGS's layout: tab-separated, no header, label in
    column 0) was read as one categorical column; now one option reads it, and predict
    and evaluate take the same reading options."""
    rng = np.random.default_rng(3)
    x = rng.normal(size=(2000, 4))
    y = (x[:, 0] - x[:, 1] > 0).astype(int)
    text = "".join("\t".join([str(t)] + [f"{v:.4f}" for v in r]) + "\n" for t, r in zip(y, x))
    src = write(tmp_path, "binary.train", text)
    cache = tmp_path / "b.oocb"
    r = build(src, cache, "--no-header", "--label", "0", "--quiet")
    assert r.returncode == 0, r.stderr
    assert Cache(cache).feature_names == ["f1", "f2", "f3", "f4"]
    assert "delimiter '\\t', no header line" in cli("info", cache).stdout
    model = tmp_path / "m.json"
    assert cli("train", cache, "-o", model, "--objective", "binary:logistic", "--rounds", "20",
               "--quiet").returncode == 0
    r = cli("evaluate", model, src, "--no-header", "--metric", "auc")
    assert r.returncode == 0 and float(r.stdout.split()[-1]) > 0.95, r.stderr
    r = cli("predict", model, src, "--no-header", "-o", tmp_path / "p.csv", "--quiet")
    assert r.returncode == 0, r.stderr
    assert len((tmp_path / "p.csv").read_text().splitlines()) == 2001   # every row
    r = build(src, tmp_path / "w.oocb", "--label", "0")                 # header forgotten
    warning, error = r.stderr.strip().splitlines()
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert warning.startswith("oocboost build-cache: warning: ") and "--no-header" in warning
    assert "label column '0' not found" in error


def test_one_prediction_output_schema_for_every_learner(tmp_path):
    """The prediction CSV's header differed by learner: 'prediction' (P(class 1), not
    labelled as such) for binary boosting, 'prob_0,prob_1' for a binary forest, a class
    index for softmax. Now: prob_<class> for every class and label; prediction for a
    regressor; margin_<k> with --output-margin."""
    import pyarrow.csv as pacsv

    rng = np.random.default_rng(5)
    x = rng.normal(size=(1500, 3))
    y3 = np.digitize(x[:, 0], [-0.5, 0.5])
    rows = "\n".join(f"{a:.4f},{b:.4f},{c:.4f},{int(a > 0)},{k},{a + b:.4f}"
                     for (a, b, c), k in zip(x, y3))
    src = write(tmp_path, "d.csv", "a,b,c,y2,y3,r\n" + rows + "\n")

    def run(label, drop, *train_args):
        cache = tmp_path / f"{label}.oocb"
        assert build(src, cache, "--label", label, "--drop", drop, "--quiet").returncode == 0
        model = tmp_path / f"{label}-{train_args[1]}.json"
        r = cli("train", cache, "-o", model, "--rounds", "5", "--quiet", *train_args)
        assert r.returncode == 0, r.stderr
        out = tmp_path / "p.csv"
        assert cli("predict", model, src, "-o", out, "--quiet").returncode == 0
        table = pacsv.read_csv(out)
        margin = tmp_path / "m.csv"
        assert cli("predict", model, src, "-o", margin, "--output-margin",
                   "--quiet").returncode == 0
        return table, pacsv.read_csv(margin).column_names

    table, margin = run("y2", "y3,r", "--learner", "gbtree", "--objective", "binary:logistic")
    assert table.column_names == ["prob_0", "prob_1", "label"] and margin == ["margin_0"]
    p = table.to_pandas()
    np.testing.assert_allclose(p["prob_0"] + p["prob_1"], 1.0)
    assert (p["label"] == (p["prob_1"] > 0.5).astype(int)).all()
    table, margin = run("y3", "y2,r", "--learner", "gbtree", "--objective", "multi:softmax",
                        "--num-class", "3")
    assert table.column_names == ["prob_0", "prob_1", "prob_2", "label"]
    assert margin == ["margin_0", "margin_1", "margin_2"]
    table, _ = run("y2", "y3,r", "--learner", "random-forest", "--param",
                   "task=classification")
    assert table.column_names == ["prob_0", "prob_1", "label"]
    table, margin = run("r", "y2,y3", "--learner", "gbtree", "--objective", "reg:squarederror")
    assert table.column_names == ["prediction"] and margin == ["margin_0"]


def test_predict_and_evaluate_read_text_as_build_cache_does(tmp_path):
    """--na-values and --encoding are reading options of every command that reads a
    text file: a Latin-1 file whose missing values are written "MISSING" predicts as
    its cache was built; without them predict stops at the first such value."""
    rng = np.random.default_rng(3)
    x = rng.normal(size=(400, 2))
    town = np.array(["Orléans", "Besançon", "Nîmes"])[rng.integers(0, 3, 400)]
    y = ((x[:, 0] > 0) ^ (town == "Nîmes")).astype(int)
    lines = [f"{a:.4f},{'MISSING' if i % 9 == 0 else f'{b:.4f}'},{t},{c}"
             for i, (a, b, t, c) in enumerate(zip(x[:, 0], x[:, 1], town, y))]
    text = "a,b,town,y\n" + "\n".join(lines) + "\n"
    src = write(tmp_path, "d.csv", text.encode("latin-1"))
    reading = ("--na-values", "MISSING", "--encoding", "latin-1")
    assert build(src, tmp_path / "c.oocb", "--label", "y", *reading, "--quiet").returncode == 0
    model = tmp_path / "m.json"
    assert cli("train", tmp_path / "c.oocb", "-o", model, "--rounds", "5",
               "--quiet").returncode == 0
    r = cli("predict", model, src, "-o", tmp_path / "p.csv", *reading, "--quiet")
    assert r.returncode == 0, r.stderr
    r = cli("predict", model, tmp_path / "c.oocb", "-o", tmp_path / "q.csv", "--quiet")
    assert r.returncode == 0, r.stderr
    from_file = np.loadtxt(tmp_path / "p.csv", skiprows=1)
    np.testing.assert_allclose(from_file, np.loadtxt(tmp_path / "q.csv", skiprows=1),
                               rtol=1e-12)
    assert len(from_file) == 400
    r = cli("evaluate", model, src, "--label", "y", *reading)
    assert r.returncode == 0, r.stderr
    refused = cli("predict", model, src, "-o", tmp_path / "r.csv", "--quiet")
    assert refused.returncode != 0
    assert "line 2" in refused.stderr and "not valid utf8" in refused.stderr
    refused = cli("predict", model, src, "-o", tmp_path / "r.csv", "--encoding", "latin-1",
                  "--quiet")
    assert refused.returncode != 0
    assert "line 2" in refused.stderr and "'b'" in refused.stderr
    assert "MISSING" in refused.stderr
