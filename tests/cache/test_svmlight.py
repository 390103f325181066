"""svmlight / LibSVM files: read value for value as scikit-learn's ``load_svmlight_file``
reads them (zero- and one-based, qid, comments, block boundaries), LightGBM's side files,
clear errors naming the line, and a cache, a model and predictions from one command each.
"""
import os

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import dump_svmlight_file, load_svmlight_file

import oocboost
from oocboost.cache.ingest.dispatch import open_source
from oocboost.errors import InputError, ParameterError

from ..cli_runner import run_cli


def _dense(source):
    columns, labels, groups, weights = [], [], [], []
    for batch in source.batches():
        columns.append(np.column_stack([batch.numeric[n] for n in source.feature_names]))
        labels.append(batch.label)
        groups.append(batch.group)
        weights.append(batch.weight)
    return np.vstack(columns), np.concatenate(labels), groups, weights


def _data(n_rows=300, n_features=20, seed=0, precise=False):
    """Values of 3 decimals (read by oocboost's own parser), or at full precision (16-17
    digits: most left to pyarrow's cast)."""
    X = sp.random(n_rows, n_features, density=0.2, random_state=seed, format="csr")
    X.data = X.data * 100 - 50.0 if precise else np.round(X.data * 100, 3) - 50.0
    y = np.random.default_rng(seed).integers(0, 3, n_rows).astype(float)
    return X, y


@pytest.mark.parametrize("zero_based,precise", [(True, False), (False, False),
                                                (False, True)])
@pytest.mark.parametrize("batch_bytes", [500, 4096, 1 << 20])
def test_values_labels_and_qids_equal_scikit_learns(tmp_path, zero_based, precise,
                                                     batch_bytes):
    X, y = _data(precise=precise)
    qid = np.repeat(np.arange(30), 10)
    path = tmp_path / "d.svm"
    dump_svmlight_file(X, y, str(path), zero_based=zero_based, query_id=qid,
                       comment="made by a test")
    Xs, ys, qs = load_svmlight_file(str(path), query_id=True)
    source = open_source(path, batch_bytes=batch_bytes)
    assert source.zero_based == zero_based and source.n_rows == 300
    dense, labels, groups, _ = _dense(source)
    np.testing.assert_array_equal(dense[:, :Xs.shape[1]], Xs.toarray())
    np.testing.assert_array_equal(labels, ys)
    np.testing.assert_array_equal(np.concatenate(groups), qs)


def test_long_lines_grow_the_block_or_are_refused_by_line(tmp_path):
    """A line longer than the read block is read whole (values equal scikit-learn's);
    one over half the largest block is refused naming its line."""
    X = sp.random(6, 30000, density=0.0005, random_state=1, format="csr")
    X = sp.vstack([X, sp.csr_matrix(np.arange(1.0, 30001.0)[None, :])]).tocsr()
    y = np.arange(7.0)
    path = tmp_path / "long.svm"
    dump_svmlight_file(X, y, str(path), zero_based=False)
    long_line = max(len(line) for line in path.read_bytes().split(b"\n"))
    assert long_line > 150_000
    dense, labels, _, _ = _dense(open_source(path, batch_bytes=4096))
    Xs, ys = load_svmlight_file(str(path))
    np.testing.assert_array_equal(dense, Xs.toarray())
    np.testing.assert_array_equal(labels, ys)
    with pytest.raises(InputError, match=r"long.svm: line 7 is over 65,536 bytes long; "
                                         r"the svmlight reader holds lines of at most "
                                         r"65,536 bytes here .*raise the memory limit"):
        _dense(open_source(path, batch_bytes=4096, max_block_bytes=1 << 17))


def test_absent_entries_are_zero_or_missing(tmp_path):
    path = tmp_path / "d.libsvm"
    path.write_text("1 1:0.5 3:2\n# a comment line\n\n0 2:-1e3   # trailing comment\n")
    dense, labels, _, _ = _dense(open_source(path))
    np.testing.assert_array_equal(dense, [[0.5, 0.0, 2.0], [0.0, -1000.0, 0.0]])
    np.testing.assert_array_equal(labels, [1.0, 0.0])
    dense, _, _, _ = _dense(open_source(path, absent_as_missing=True))
    np.testing.assert_array_equal(np.isnan(dense), [[False, True, False],
                                                    [True, False, True]])


def test_lightgbm_side_files(tmp_path):
    path = tmp_path / "rank.train"
    path.write_text("".join(f"{i % 3} 1:{i} 2:{i * 0.5}\n" for i in range(10)))
    (tmp_path / "rank.train.query").write_text("4\n6\n")
    (tmp_path / "rank.train.weight").write_text("".join(f"{w}\n" for w in range(1, 11)))
    source = open_source(path)
    _, _, groups, weights = _dense(source)
    np.testing.assert_array_equal(np.concatenate(groups), [0] * 4 + [1] * 6)
    np.testing.assert_array_equal(np.concatenate(weights), np.arange(1, 11))
    (tmp_path / "rank.train.query").write_text("4\n5\n")
    with pytest.raises(InputError, match=r"rank.train.query: group sizes must .* summing "
                                         r"to the data's rows \(10\); they sum to 9"):
        open_source(path)
    os.remove(tmp_path / "rank.train.query")


def test_lightgbm_init_side_file(tmp_path):
    path = tmp_path / "binary.train"
    path.write_text("".join(f"{i % 2} 1:{i} 2:{i * 0.5}\n" for i in range(10)))
    init = np.linspace(-1, 1, 10)
    (tmp_path / "binary.train.init").write_text("".join(f"{float(v)!r}\n" for v in init))
    source = open_source(path, batch_bytes=40)
    assert source.base_margin_name == "binary.train.init"
    got = np.concatenate([b.base_margin for b in source.batches()])
    np.testing.assert_array_equal(got, init)
    # several outputs: one tab-separated value per output, as LightGBM's multiclass .init
    (tmp_path / "binary.train.init").write_text(
        "".join(f"{float(v)!r}\t{float(-v)!r}\n" for v in init))
    got = np.vstack([b.base_margin for b in open_source(path).batches()])
    np.testing.assert_array_equal(got, np.column_stack([init, -init]))
    (tmp_path / "binary.train.init").write_text("0\n" * 9)
    with pytest.raises(InputError, match=r"binary.train.init: 9 initial scores, the data "
                                         r"has 10 rows"):
        open_source(path)
    (tmp_path / "binary.train.init").write_text("0\n" * 4 + "inf\n" + "0\n" * 5)
    with pytest.raises(InputError, match=r"binary.train.init: line 5: initial scores must "
                                         r"be finite"):
        open_source(path)
    with pytest.raises(ParameterError, match=r"its base margins binary.train.init; "
                                             r"--base-margin does not apply"):
        open_source(path, base_margin="f0")


@pytest.mark.parametrize("text,message", [
    ("1 1:0.5\n0 3:x\n", r"line 2: value 'x' is not a number"),
    ("1 1:0.5\nyes 3:1\n", r"line 2: label 'yes' is not a number"),
    ("1 2:0.5 1:1\n", r"line 1: feature indices must increase along a line"),
    ("1 2:0.5 2:1\n", r"line 1: feature indices must increase"),
    ("1 1:1 9:1\n0 2:0.5 7:1 3:1\n", r"line 2: feature indices must increase"),
    ("1 1:1 7:1\n0 2:0.5 9:1 8:1\n", r"line 2: feature index 9 is above the line's last "
                                      r"index .*indices must increase along a line"),
    ("1 1:0.5\n1 -3:1\n", r"line 2: feature index '-3' is not a non-negative integer"),
    ("1 qid:1 1:0.5\n1 1:1\n", r"line 2: every line needs one qid: token"),
    ("1 1:0.5\n0 3 :1\n", r"line 2: expected index:value tokens"),
    ("1 1:0.5\n0 3: 1\n", r"line 2: expected index:value tokens"),
    ("1 1:0.5\n0 3::1\n", r"line 2: expected index:value tokens"),
    ("1 1:0.5 # a: comment\n0 3:1:2\n", r"line 2: expected index:value tokens"),
    ("1 1:0.5\n0 3 4\n", r"line 2: expected index:value tokens"),
    ("1 1:0.5\n0 3:1\n1 2:1 :\n", r"line 3: expected index:value tokens"),
])
def test_bad_lines_are_named(tmp_path, text, message):
    path = tmp_path / "bad.svm"
    path.write_text(text)
    with pytest.raises(InputError, match=message):
        source = open_source(path)
        _dense(source)


@pytest.mark.parametrize("n_threads", [1, 2])
def test_blocks_parsed_ahead_keep_order_and_line_numbers(tmp_path, n_threads):
    """Blocks are parsed on numba's threads ahead of the one handed on: the rows come in
    the file's order, and a bad line in a late block is named by its line in the file,
    after the rows before it were read."""
    import numba

    good = "".join(f"{i % 2} 1:{i} 3:{i / 7:.3f}\n" for i in range(400))
    path = tmp_path / "late.svm"
    path.write_text(good + "1 2:0.5 1:1\n" + good)
    previous = numba.get_num_threads()
    numba.set_num_threads(min(n_threads, numba.config.NUMBA_NUM_THREADS))
    try:
        source = open_source(path, batch_bytes=256)
        rows = []
        with pytest.raises(InputError, match=r"line 401: feature indices must increase"):
            for batch in source.batches():
                rows.append(batch.numeric["f0"])
        # the blocks before the bad line's, in order (its own block's rows are not
        # handed on)
        read = np.concatenate(rows)
        assert 300 < len(read) <= 400
        np.testing.assert_array_equal(read, np.arange(len(read)))
        path.write_text(good * 3)
        dense, labels, _, _ = _dense(open_source(path, batch_bytes=256))
        np.testing.assert_array_equal(dense[:, 0], np.tile(np.arange(400.0), 3))
        np.testing.assert_array_equal(labels, np.tile(np.arange(400) % 2, 3))
    finally:
        numba.set_num_threads(previous)


def test_detected_by_content_and_label_options_refused(tmp_path):
    path = tmp_path / "agaricus.txt.train"
    path.write_text("1 3:1 10:1 11:1\n0 3:1 9:1 19:1\n")
    source = open_source(path)
    assert type(source).__name__ == "SvmlightSource"
    assert source.feature_names[-1] == "f18"   # one-based: index 19 is f18
    assert type(open_source(path, input_format="csv")).__name__ == "CsvSource"
    with pytest.raises(ParameterError, match="label is each line's first number"):
        open_source(path, label="y")


def test_build_train_and_predict_from_svmlight_files(tmp_path):
    """Training and validation files straight from svmlight, a validation file with
    fewer columns mapping onto the training features, and a model that predicts the
    files as it predicts the dense arrays scikit-learn loads."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(2000, 6))
    X[X < 0.3] = 0.0
    y = (X[:, 0] + X[:, 1] > 0.8).astype(int)
    dump_svmlight_file(X[:1500], y[:1500], str(tmp_path / "train.svm"), zero_based=False)
    dump_svmlight_file(X[1500:, :4], y[1500:], str(tmp_path / "test.svm"), zero_based=False)
    train = oocboost.build_cache(tmp_path / "train.svm", tmp_path / "tr.oocb", quiet=True)
    valid = oocboost.build_cache(tmp_path / "test.svm", tmp_path / "te.oocb",
                                 reference=train, quiet=True)
    assert valid.feature_names == train.feature_names == [f"f{j}" for j in range(6)]
    model = oocboost.train({"objective": "binary:logistic", "verbosity": 0}, train, 10)
    Xt, _ = load_svmlight_file(str(tmp_path / "test.svm"), n_features=6)
    expected = model.predict(Xt.toarray())
    out = tmp_path / "p.csv"
    model.save_model(tmp_path / "m.json")
    r = run_cli("predict", tmp_path / "m.json", tmp_path / "test.svm", "-o", out)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == f"wrote 500 predictions to {out}"
    got = np.loadtxt(out, delimiter=",", skiprows=1, usecols=1)
    np.testing.assert_allclose(got, expected, rtol=1e-12)


def test_csv_side_files_as_lightgbm_reads_them(tmp_path):
    """A headerless TSV with FILE.weight and FILE.query beside it (LightGBM's examples):
    weights and groups come from them, row for row; a count that differs is refused."""
    path = tmp_path / "binary.train"
    path.write_text("".join(f"{i % 2}\t{i}\t{i * 0.5}\n" for i in range(10)))
    (tmp_path / "binary.train.weight").write_text("".join(f"{w}\n" for w in range(1, 11)))
    (tmp_path / "binary.train.query").write_text("3\n7\n")
    cache = oocboost.build_cache(path, tmp_path / "c.oocb", header=False, label=0,
                                 block_rows=4, quiet=True)
    assert cache.has_weight and cache.manifest["weight"] == "binary.train.weight"
    _, weights = cache.read_labels()
    np.testing.assert_array_equal(weights, np.arange(1, 11))
    np.testing.assert_array_equal(cache.group_ptr, [0, 3, 10])
    (tmp_path / "binary.train.weight").write_text("1\n" * 9)
    with pytest.raises(InputError, match=r"binary.train: more rows than its .weight file "
                                         r"gives \(9\)|binary.train.weight gives 9 rows"):
        oocboost.build_cache(path, tmp_path / "d.oocb", header=False, label=0, quiet=True)
