"""Tests of oocboost.cache.ingest: every source becomes the same stream of batches."""
import gzip
import os

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.feather as feather
import pyarrow.parquet as pq
import pytest

from oocboost.cache.ingest import open_source
from oocboost.cache.ingest.csv import scan_records
from oocboost.cache.ingest.numeric_text import parse_numbers
from oocboost.errors import InputError, ParameterError

# ----------------------------------------------------------------------------- helpers

def collect(source):
    """Concatenate all batches: (numeric dict, categorical dict of lists, label, weight)."""
    num, cat, labels, weights = {}, {}, [], []
    expected_start = 0
    for b in source.batches():
        assert b.row_start == expected_start
        expected_start += b.n_rows
        for k, v in b.numeric.items():
            assert v.dtype == np.float64 and v.shape == (b.n_rows,)
            num.setdefault(k, []).append(v)
        for k, v in b.categorical.items():
            assert v.type == pa.string() and len(v) == b.n_rows
            cat.setdefault(k, []).extend(v.to_pylist())
        if b.label is not None:
            labels.append(b.label)
        if b.weight is not None:
            weights.append(b.weight)
    num = {k: np.concatenate(v) for k, v in num.items()}
    label = np.concatenate(labels) if labels else None
    weight = np.concatenate(weights) if weights else None
    return num, cat, label, weight


def assert_same(a, b):
    num_a, cat_a, y_a, w_a = a
    num_b, cat_b, y_b, w_b = b
    assert num_a.keys() == num_b.keys()
    for k in num_a:
        np.testing.assert_array_equal(num_a[k], num_b[k])
    assert cat_a == cat_b
    np.testing.assert_array_equal(y_a, y_b)
    np.testing.assert_array_equal(w_a, w_b)


def write(tmp_path, name, text, mode="w"):
    path = tmp_path / name
    if mode == "w":
        path.write_text(text, newline="")
    else:
        path.write_bytes(text)
    return path


@pytest.fixture
def frame():
    rng = np.random.default_rng(0)
    n = 3000
    x0 = rng.standard_normal(n)
    x0[rng.random(n) < 0.1] = np.nan
    x1 = rng.integers(-5, 5, n).astype(np.float64)
    x1[:3] = [np.inf, -np.inf, 0.0]
    colour = rng.choice(["red", "green", "blue, dark", None], n)
    y = rng.integers(0, 2, n).astype(np.float64)
    w = rng.random(n) + 0.5
    return pd.DataFrame({"x0": x0, "x1": x1, "colour": colour, "y": y, "w": w})


def frame_csv(tmp_path, df, name="data.csv"):
    path = tmp_path / name
    df.to_csv(path, index=False, float_format="%.17g")
    return path


# ----------------------------------------------------------------------- accepted data

def test_csv_equals_pandas_read_csv(tmp_path, frame):
    path = frame_csv(tmp_path, frame)
    src = open_source(path, label="y", weight="w", batch_bytes=4096)
    assert src.feature_names == ["x0", "x1", "colour"]
    assert src.feature_kinds == ["numeric", "numeric", "categorical"]
    assert src.n_rows is None
    num, cat, y, w = collect(src)
    ref = pd.read_csv(path)
    np.testing.assert_array_equal(num["x0"], ref["x0"].to_numpy())
    np.testing.assert_array_equal(num["x1"], ref["x1"].to_numpy())
    assert np.isinf(num["x1"][:2]).all() and num["x1"][0] > 0 > num["x1"][1]
    assert cat["colour"] == [None if pd.isna(v) else v for v in ref["colour"]]
    np.testing.assert_array_equal(y, ref["y"].to_numpy())
    np.testing.assert_array_equal(w, ref["w"].to_numpy())
    assert src.n_rows == len(frame) and src.n_bad_rows == 0


def test_batches_identical_across_block_sizes(tmp_path, frame):
    path = frame_csv(tmp_path, frame)
    ref = collect(open_source(path, label="y", weight="w"))
    for batch_bytes in (1000, 7777, 1 << 16):
        src = open_source(path, label="y", weight="w", batch_bytes=batch_bytes)
        assert_same(collect(src), ref)
        assert_same(collect(src), ref)  # batches() restarts from the top
    table = pa.Table.from_pandas(frame, preserve_index=False)
    pq.write_table(table, tmp_path / "d.parquet", row_group_size=700)
    for batch_rows in (1, 333, 5000):
        for data in (tmp_path / "d.parquet", table, frame):
            src = open_source(data, label="y", weight="w", batch_rows=batch_rows)
            sizes = [b.n_rows for b in src.batches()]
            assert max(sizes) <= batch_rows
            assert_same(collect(src), ref)


def test_every_source_type_gives_same_arrays(tmp_path, frame):
    path = frame_csv(tmp_path, frame)
    ref = collect(open_source(path, label="y", weight="w"))
    table = pa.Table.from_pandas(frame, preserve_index=False)
    with gzip.open(tmp_path / "d.csv.gz", "wb") as f:
        f.write(path.read_bytes())
    (tmp_path / "gz_no_ext").write_bytes((tmp_path / "d.csv.gz").read_bytes())
    pq.write_table(table, tmp_path / "d.parquet")
    pq.write_table(table, tmp_path / "parquet_no_ext")
    feather.write_feather(table, tmp_path / "d.feather")
    with pa.ipc.new_stream(tmp_path / "d.arrows", table.schema) as w:
        w.write_table(table, max_chunksize=1000)
    sources = [tmp_path / "d.csv.gz", str(tmp_path / "gz_no_ext"), tmp_path / "d.parquet",
               tmp_path / "parquet_no_ext", tmp_path / "d.feather", tmp_path / "d.arrows",
               frame, table, table.to_batches()[0] if table.num_rows else None,
               table.to_batches(max_chunksize=512), iter(table.to_batches(max_chunksize=999))]
    for data in sources:
        src = open_source(data, label="y", weight="w", batch_rows=1024)
        assert src.feature_names == ["x0", "x1", "colour"], data
        assert src.feature_kinds == ["numeric", "numeric", "categorical"], data
        assert_same(collect(src), ref)
    # NumPy: numeric only, label as an array.
    X = frame[["x0", "x1"]].to_numpy()
    src = open_source(X, label=frame["y"].to_numpy(), weight=frame["w"].to_numpy(),
                      feature_names=["x0", "x1"], batch_rows=999)
    num, cat, y, w = collect(src)
    np.testing.assert_array_equal(num["x0"], ref[0]["x0"])
    np.testing.assert_array_equal(num["x1"], ref[0]["x1"])
    np.testing.assert_array_equal(y, ref[2])
    np.testing.assert_array_equal(w, ref[3])
    assert src.label_name == "<label>"


def test_numpy_defaults_and_int_dtype():
    X = np.arange(12, dtype=np.int32).reshape(4, 3)
    src = open_source(X, batch_rows=3)
    assert src.feature_names == ["f0", "f1", "f2"]
    num, _, y, _ = collect(src)
    np.testing.assert_array_equal(num["f1"], [1, 4, 7, 10])
    assert y is None
    src = open_source(X, label="c", feature_names=["a", "b", "c"], categorical=["b"])
    num, cat, y, _ = collect(src)
    np.testing.assert_array_equal(y, [2, 5, 8, 11])
    assert cat["b"] == ["1", "4", "7", "10"] and list(num) == ["a"]


def test_pandas_kinds_and_label_array():
    df = pd.DataFrame({"a": pd.array([1, None, 3], dtype="Int64"),
                       "b": pd.Categorical(["u", "v", None]),
                       "c": pd.array(["p", None, "q"], dtype="string"),
                       "d": [True, False, True]})
    src = open_source(df, label=np.array([0, 1, 0]))
    assert src.feature_kinds == ["numeric", "categorical", "categorical", "numeric"]
    num, cat, y, _ = collect(src)
    np.testing.assert_array_equal(num["a"], [1, np.nan, 3])
    np.testing.assert_array_equal(num["d"], [1, 0, 1])
    assert cat["b"] == ["u", "v", None] and cat["c"] == ["p", None, "q"]
    np.testing.assert_array_equal(y, [0, 1, 0])


def test_csv_bom_crlf_quotes_inf_constant_all_missing(tmp_path):
    text = ('\ufeffa,b,c,d,e\r\n'
            '1,"x, ""y""",inf,5,\r\n'
            '2,"multi\r\nline",-inf,5,NA\r\n'
            '\r\n'
            '3,z,Infinity,5,?\r\n'
            '4,,-Infinity,5,\r\n')
    path = write(tmp_path, "odd.csv", text.encode("utf-8"), mode="b")
    src = open_source(path)
    assert src.feature_names == ["a", "b", "c", "d", "e"]
    assert src.feature_kinds == ["numeric", "categorical", "numeric", "numeric", "numeric"]
    num, cat, _, _ = collect(src)
    np.testing.assert_array_equal(num["c"], [np.inf, -np.inf, np.inf, -np.inf])
    np.testing.assert_array_equal(num["d"], [5, 5, 5, 5])
    assert np.isnan(num["e"]).all()
    assert cat["b"] == ['x, "y"', "multi\r\nline", "z", None]


def test_csv_high_cardinality_latin1_custom_na_and_categorical_list(tmp_path):
    n = 20000
    ids = [f"id{i}" for i in range(n)]
    text = "id,zip,v\n" + "".join(f"{ids[i]},{10000 + i % 7},{'-' if i % 5 == 0 else i}\n"
                                  for i in range(n))
    path = write(tmp_path, "hc.csv", text)
    src = open_source(path, categorical=["id", "zip"], na_values=["-"], batch_bytes=10000)
    assert src.feature_kinds == ["categorical", "categorical", "numeric"]
    num, cat, _, _ = collect(src)
    assert cat["id"] == ids and cat["zip"][:2] == ["10000", "10001"]
    assert np.isnan(num["v"][::5]).all() and num["v"][1] == 1
    path = write(tmp_path, "latin.csv", "name,v\ncaf\xe9,1\nna\xefve,2\n".encode("latin-1"),
                 mode="b")
    _, cat, _, _ = collect(open_source(path, encoding="latin-1"))
    assert cat["name"] == ["café", "naïve"]


def test_drop_and_weight(tmp_path):
    path = write(tmp_path, "d.csv", "a,junk,b,y,w\n1,q,2,0,1.5\n3,r,4,1,2.5\n")
    src = open_source(path, label="y", weight="w", drop=["junk"])
    assert src.feature_names == ["a", "b"] and src.weight_name == "w"
    num, cat, y, w = collect(src)
    assert cat == {} and list(num) == ["a", "b"]
    np.testing.assert_array_equal(w, [1.5, 2.5])


# --------------------------------------------------------------------------- CSV errors

def error_of(path, **kw):
    with pytest.raises(InputError) as info:
        src = open_source(path, **kw)
        collect(src)
    return str(info.value)


def test_missing_empty_and_header_only(tmp_path):
    msg = error_of(tmp_path / "nope.csv")
    assert "not found" in msg and "nope.csv" in msg
    assert "empty" in error_of(write(tmp_path, "e.csv", ""))
    with gzip.open(tmp_path / "e.csv.gz", "wb"):
        pass
    assert "empty" in error_of(tmp_path / "e.csv.gz")
    msg = error_of(write(tmp_path, "h.csv", "a,b,y\n"))
    assert "no data rows" in msg and "h.csv" in msg


@pytest.mark.parametrize("bad_row, got", [("1,2,3,4", 4), ("1,2", 2)])
def test_ragged_rows_name_line_and_counts(tmp_path, bad_row, got):
    # Line 3-4 is one record with a quoted newline; the blank line 5 is not a record.
    text = 'a,b,c\n1,2,x\n3,4,"two\nlines"\n\n' + "5,6,z\n" * 300 + bad_row + "\n7,8,w\n"
    path = write(tmp_path, "r.csv", text)
    for batch_bytes in (64, 1 << 20):
        msg = error_of(path, batch_bytes=batch_bytes)
        assert "line 306" in msg and "expected 3 fields" in msg and f"got {got}" in msg


def test_text_in_numeric_column_later_block(tmp_path):
    text = "a,b,y\n" + "1,2.5,0\n" * 2000 + '3,"x\ny",1\n' + "1,oops,1\n" + "1,2,0\n" * 10
    path = write(tmp_path, "t.csv", text)
    msg = error_of(path, label="y", batch_bytes=1000)
    assert (
        "line 2002" in msg and "'b'" in msg and "'x\\ny'" in msg and "expected a number" in msg
    )
    text = "a,b,y\n" + "1,2.5,0\n" * 2000 + "1,oops,1\n"
    msg = error_of(write(tmp_path, "t2.csv", text), label="y", batch_bytes=1000)
    assert "line 2002" in msg and "'oops'" in msg


def test_label_errors(tmp_path):
    path = write(tmp_path, "l.csv", "a,y\n1,0\n2,\n3,1\n")
    msg = error_of(path, label="target")
    assert "'target'" in msg and "not found" in msg and "['a', 'y']" in msg
    msg = error_of(path, label="y")
    assert "line 3" in msg and "'y'" in msg and "missing" in msg
    msg = error_of(write(tmp_path, "l2.csv", "a,y\n1,yes\n"), label="y")
    assert "'y'" in msg and "text" in msg
    msg = error_of(path, weight="ww")
    assert "weight column 'ww' not found" in msg
    msg = error_of(path, drop=["zz"])
    assert "['zz']" in msg and "available columns" in msg


@pytest.fixture
def open_readers(monkeypatch):
    """Every pyarrow reader a CSV source opens, and whether it was closed."""
    from oocboost.cache.ingest.csv import CsvSource
    readers = []
    real_open = CsvSource._open

    class Spy:
        def __init__(self, reader):
            self.reader, self.closed = reader, False
            readers.append(self)

        def __getattr__(self, name):
            return getattr(self.reader, name)

        def close(self):
            self.closed = True
            self.reader.close()

    monkeypatch.setattr(CsvSource, "_open", lambda self, **kw: Spy(real_open(self, **kw)))
    return readers


@pytest.mark.parametrize("text, kw", [
    ("a,y\n1,0\n", {"label": "target"}),                # probe: unknown label
    ("a,y\n1,yes\n", {"label": "y"}),                   # probe: text label
    ("a,y\n", {}),                                      # probe: no data rows
    ("a,y\n" + "1,0\n" * 300 + "2,NA\n", {"label": "y", "batch_bytes": 256}),  # batches
])
def test_every_reader_is_closed_after_an_error(tmp_path, open_readers, text, kw):
    # A reader left open to the interpreter's exit with its read-ahead thread running
    # aborted the CLI (SIGABRT) instead of exiting with the error's code.
    error_of(write(tmp_path, "e.csv", text), **kw)
    assert open_readers and all(r.closed for r in open_readers)


def test_label_missing_in_later_block_names_line(tmp_path):
    text = "a,y\n" + "1,0\n" * 3000 + "2,NA\n"
    assert "line 3002" in error_of(write(tmp_path, "l.csv", text), label="y",
                                   batch_bytes=512)


def test_duplicate_columns(tmp_path):
    msg = error_of(write(tmp_path, "d.csv", "a,b,a,c,b\n1,2,3,4,5\n"))
    assert "duplicate" in msg and "['a', 'b']" in msg


def test_invalid_utf8_names_line_and_offset(tmp_path):
    data = b"a,name\n1,ok\n2,caf\xe9\n"
    msg = error_of(write(tmp_path, "u.csv", data, mode="b"))
    assert "line 3" in msg and "byte offset 17" in msg and "latin-1" in msg
    # In a later block, where the type is already fixed as text.
    data = b"a,name\n" + b"1,ok\n" * 500 + b"2,caf\xe9\n"
    msg = error_of(write(tmp_path, "u2.csv", data, mode="b"), batch_bytes=256)
    assert "line 502" in msg
    msg = error_of(write(tmp_path, "w.csv", b"a,name\n1,\x81x\n", mode="b"), encoding="cp1252")
    assert "line 2" in msg and "byte offset 9" in msg


def test_categorical_none_rejects_text(tmp_path):
    msg = error_of(write(tmp_path, "c.csv", "a,b\n1,x\n"), categorical=None)
    assert "'b'" in msg and "expected numbers" in msg


# ------------------------------------------------------------------------- skip mode

def test_skip_mode_counts_bad_rows_and_bad_values(tmp_path):
    """Skip mode drops ragged rows and rows whose label is not a number (counted in
    ``n_bad_rows``); a feature's stray text is a missing value (``n_bad_values``)."""
    good = "1,2.5,0\n"
    text = ("a,b,y\n" + good * 500 + "1,2,3,4\n" + good * 500 + "1,bad,1\n" + "9,9\n"
            + good * 500 + " 2 , 7 ,1\n" + "4,oops,0\n" + "5,6,yes\n")
    path = write(tmp_path, "s.csv", text)
    # Column types come from the first block: keep the bad values out of it.
    for batch_bytes in (700, 3000):
        src = open_source(path, label="y", on_bad_rows="skip", batch_bytes=batch_bytes)
        for _ in range(2):
            num, _, y, _ = collect(src)
            assert src.n_bad_rows == 3 and src.n_rows == 1503
            assert src.n_bad_values == {"b": 2}
            assert num["a"][-1] == 4 and np.isnan(num["b"][-1]) and y[-1] == 0
            assert num["b"][-2] == 7 and num["a"][-2] == 2 and y[-2] == 1
            assert np.isnan(num["b"][1000]) and num["a"][1000] == 1
            np.testing.assert_array_equal(np.delete(num["b"], [1000, 1502])[:-1], 2.5)


def test_skip_mode_label_missing_line_counts_skipped_rows(tmp_path):
    text = "a,y\n1,0\n1,2,3\n1,0\n\n2,\n"
    msg = error_of(write(tmp_path, "s.csv", text), label="y", on_bad_rows="skip")
    assert "line 6" in msg


# ---------------------------------------------------------------- other format errors

def test_unsupported_types_and_objects(tmp_path):
    table = pa.table({"t": pa.array([1, 2], pa.timestamp("s")), "x": [1.0, 2.0]})
    pq.write_table(table, tmp_path / "t.parquet")
    msg = error_of(tmp_path / "t.parquet")
    assert "'t'" in msg and "timestamp" in msg
    msg = error_of(np.array([["a", 1]], dtype=object))
    assert "object" in msg
    with pytest.raises(TypeError, match="dict"):
        open_source({"a": [1, 2]})
    with pytest.raises(TypeError, match="int"):
        open_source(5)
    msg = error_of(write(tmp_path, "bad.parquet", b"PAR1garbage", mode="b"))
    assert "bad.parquet" in msg and "Parquet" in msg
    with pytest.raises(ParameterError):
        open_source(tmp_path / "bad.parquet", on_bad_rows="ignore")


def test_one_shot_iterator_and_schema_mismatch():
    t = pa.table({"a": [1.0, 2.0]})
    src = open_source(iter(t.to_batches()))
    assert src.fingerprint()["sha256"] is None
    num, _, _, _ = collect(src)
    np.testing.assert_array_equal(num["a"], [1, 2])
    assert src.fingerprint()["kind"] == "memory"
    with pytest.raises(InputError, match="only once"):
        collect(src)
    other = pa.record_batch({"a": pa.array(["x"])})
    with pytest.raises(InputError, match="batch 2"):
        collect(open_source([t.to_batches()[0], other]))


# --------------------------------------------------------------------- fingerprints

def test_file_fingerprint_changes_with_one_byte(tmp_path):
    path = write(tmp_path, "f.csv", "a,b\n1,2\n3,4\n")
    fp = open_source(path).fingerprint()
    assert fp["kind"] == "file" and fp["path"] == os.path.abspath(path) and fp["size"] == 12
    st = os.stat(path)
    path.write_text("a,b\n1,2\n3,5\n")
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))  # same size and mtime
    fp2 = open_source(path).fingerprint()
    assert fp2["mtime_ns"] == fp["mtime_ns"] and fp2["sample_sha256"] != fp["sample_sha256"]
    # A large file is sampled, not read whole: 64 chunks, the first at offset 0.
    big = tmp_path / "big.csv"
    big.write_bytes(b"a\n" + b"1\n" * 400_000)
    fp3 = open_source(big).fingerprint()
    data = bytearray(big.read_bytes())
    data[3] = ord("7")
    big.write_bytes(bytes(data))
    assert open_source(big).fingerprint()["sample_sha256"] != fp3["sample_sha256"]


def test_memory_fingerprint(frame):
    X = np.arange(20.0).reshape(10, 2)
    fp = open_source(X).fingerprint()
    assert fp == open_source(X.copy()).fingerprint() and fp["kind"] == "memory"
    X2 = X.copy()
    X2[7, 1] = 99
    assert open_source(X2).fingerprint() != fp
    assert open_source(np.asfortranarray(X)).fingerprint() != open_source(X2).fingerprint()
    f1 = open_source(frame, label="y").fingerprint()
    changed = frame.copy()
    changed.loc[5, "colour"] = "purple"
    assert open_source(changed, label="y").fingerprint() != f1
    t = pa.Table.from_pandas(frame, preserve_index=False)
    assert open_source(t).fingerprint() == open_source(t).fingerprint()


# ------------------------------------------------------------------------ internals

def test_parse_numbers_and_scan_records(tmp_path):
    values, bad = parse_numbers(pa.array([" 1.5", "inf", "-Infinity", "x", None, "1e3", "1e"]))
    np.testing.assert_array_equal(bad, [False, False, False, True, False, False, True])
    np.testing.assert_array_equal(values[:3], [1.5, np.inf, -np.inf])
    assert np.isnan(values[4]) and values[5] == 1000
    path = write(tmp_path, "s.csv", 'a,b\r\n1,"x\r\n,y"\r\n\r\n2,3,4')
    chunks = list(scan_records(lambda: pa.input_stream(str(path)), ",", chunk_size=4))
    lines = np.concatenate([c[0] for c in chunks])
    fields = np.concatenate([c[1] for c in chunks])
    np.testing.assert_array_equal(lines, [1, 2, 5])
    np.testing.assert_array_equal(fields, [2, 2, 3])


# ---------------------------------------------------------------- headerless text, delimiters
def _lightgbm_layout(tmp_path, name="binary.train", n=500, seed=0):
    """A file in the layout of LightGBM's examples/binary_classification/binary.train
    (and HIGGS): tab-separated, no header, the label in column 0."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    y = (X[:, 0] > 0).astype(int)
    text = "".join("\t".join([str(t)] + [f"{v:.4f}" for v in row]) + "\n"
                   for t, row in zip(y, X))
    return write(tmp_path, name, text), X, y


def _read_all(source):
    batches = list(source.batches())
    X = np.column_stack([np.concatenate([b.numeric[n] for b in batches])
                         for n in source.feature_names])
    y = np.concatenate([b.label for b in batches]) if batches[0].label is not None else None
    return X, y


@pytest.mark.parametrize("label", [0, "0", "f0"])
def test_headerless_tsv_with_the_label_by_position(tmp_path, label):
    path, X, y = _lightgbm_layout(tmp_path)
    source = open_source(path, header=False, label=label)
    assert source.delimiter == "\t"                          # sniffed
    assert source.feature_names == ["f1", "f2", "f3", "f4"] and source.label_name == "f0"
    got_X, got_y = _read_all(source)
    np.testing.assert_allclose(got_X, np.round(X, 4))
    np.testing.assert_array_equal(got_y, y)                  # every row, the first too


def test_names_positions_for_every_role_and_line_numbers_without_header(tmp_path):
    ragged = write(tmp_path, "r.csv", "1,a,2.5,0\n2,b,3.5,1\n3,a\n")
    with pytest.raises(InputError, match=r"line 3: expected 4 fields \(as in the first "
                                         r"line\), got 2"):
        list(open_source(ragged, header=False, names=["id", "s", "c", "y"], label=3,
                         drop=[0]).batches())
    path = write(tmp_path, "d.csv", "1,a,2.5,0\n2,b,3.5,1\n3,a,4.5,0\n")
    named = open_source(path, header=False, names=["id", "s", "c", "y"], label=3, drop=[0])
    assert named.feature_names == ["s", "c"] and named.label_name == "y"
    source = open_source(path, header=False, label="3", drop=["0"], categorical=["1"])
    assert source.feature_names == ["f1", "f2"] and source.feature_kinds == ["categorical",
                                                                           "numeric"]
    assert sum(b.n_rows for b in source.batches()) == 3
    with pytest.raises(ParameterError, match="column position 9 is out of range: the file "
                                             "has 4 columns"):
        open_source(path, header=False, label=9)
    with pytest.raises(ParameterError, match="header and names apply to CSV files only"):
        open_source(np.zeros((3, 2)), header=False)


@pytest.mark.parametrize("given, text, expected", [
    (None, "a;b;y\n1;2;0\n", ";"),
    (None, "a|b|y\n1|2|0\n", "|"),
    (None, 'a,b,y\n"x;y",2,0\n', ","),
    ("\\t", "a\tb\ty\n1\t2\t0\n", "\t"),
    ("tab", "a\tb\ty\n1\t2\t0\n", "\t"),
    ("\t", "a\tb\ty\n1\t2\t0\n", "\t"),
])
def test_delimiter_spellings_and_sniffing(tmp_path, given, text, expected):
    source = open_source(write(tmp_path, "d.txt", text), delimiter=given, label="y")
    assert source.delimiter == expected and source.feature_names == ["a", "b"]


def test_tsv_extension_means_tab(tmp_path):
    source = open_source(write(tmp_path, "d.tsv", "a b\tc\n1 2\t0\n"), label="c")
    assert source.delimiter == "\t" and source.feature_names == ["a b"]


def test_a_first_line_of_numbers_warns_naming_the_option(tmp_path):
    """A headerless numeric file silently used its first row as the header (1,999 rows,
    a feature named "1.0000"); LightGBM and pandas do the same without a word."""
    path = write(tmp_path, "d.csv", "".join(f"{i}.0000,{i % 2}\n" for i in range(2000)))
    with pytest.warns(UserWarning, match=r"every field of the first line is a number "
                                         r"\(0.0000, 0, \.\.\.\); if the file has no header "
                                         r"line, pass header=False \(--no-header\)"):
        open_source(path)
    source = open_source(path, header=False, label=1)
    X, _ = _read_all(source)
    assert len(X) == 2000 and X[0, 0] == 0.0


def _long_line_csv(tmp_path, n_long=3_000_000):
    text = ("a,t,y\n" + "".join(f"{i},x{i % 3},{i % 2}\n" for i in range(100))
            + f"100,{'z' * n_long},0\n" + "".join(f"{i},x{i % 3},{i % 2}\n"
                                                  for i in range(101, 200)))
    return write(tmp_path, "long.csv", text)


def test_a_line_longer_than_a_block_is_read(tmp_path):
    """pyarrow failed with 'straddling object straddles two block boundaries' and no line
    number, whatever the memory limit; the reader now grows its block and reads again."""
    source = open_source(_long_line_csv(tmp_path), label="y", batch_bytes=1 << 20)
    rows = sum(b.n_rows for b in source.batches())
    assert rows == 200 and source.feature_names == ["a", "t"]


def test_the_memory_limit_sets_the_longest_line(tmp_path):
    """A long line grows the reader's block as far as the memory limit's plan allows,
    and one longer than that is refused naming the line, its length and the limit."""
    from oocboost.cache.plan import plan_build

    path = _long_line_csv(tmp_path)
    small = plan_build("220MB", n_columns=3, baseline_bytes=100 << 20)
    large = plan_build("2GB", n_columns=3, baseline_bytes=100 << 20)
    assert small.max_csv_block_bytes < 6_000_014 <= large.max_csv_block_bytes
    assert plan_build(None, n_columns=3, baseline_bytes=0).max_csv_block_bytes == 1 << 30
    with pytest.raises(InputError, match=r"long.csv: line 102 is 3,000,007 bytes long; the "
                                         r"CSV reader holds lines of at most [\d,]+ bytes "
                                         r"here \(.*raise the memory limit\)"):
        list(open_source(path, label="y", batch_bytes=1 << 20,
                         max_block_bytes=small.max_csv_block_bytes).batches())
    source = open_source(path, label="y", max_block_bytes=large.max_csv_block_bytes)
    assert sum(b.n_rows for b in source.batches()) == 200


def test_a_line_over_the_largest_block_is_refused_naming_it(tmp_path, monkeypatch):
    import oocboost.cache.ingest.csv as csv_mod

    monkeypatch.setattr(csv_mod, "MAX_BLOCK_BYTES", 4 << 20)
    with pytest.raises(InputError, match=r"long.csv: line 102 is 3,000,007 bytes long; "
                                         r"the CSV reader holds lines of at most "
                                         r"2,097,152 bytes"):
        list(open_source(_long_line_csv(tmp_path), label="y",
                         batch_bytes=1 << 20).batches())


@pytest.mark.parametrize("chunk", [1, 3, 7, 64, 1 << 20])
def test_longest_line_equals_the_naive_split(tmp_path, chunk):
    from oocboost.cache.ingest.csv import longest_line

    rng = np.random.default_rng(chunk)
    lines = ["x" * int(n) for n in rng.integers(0, 40, 30)]
    text = "\n".join(lines) + ("\n" if chunk % 2 else "")   # with and without a last newline
    path = write(tmp_path, "t.txt", text)
    import pyarrow as pa

    got = longest_line(lambda: pa.input_stream(str(path)), chunk_size=chunk)
    pieces = text.split("\n")
    lengths = [len(p) + 1 for p in pieces[:-1]] + ([len(pieces[-1])] if pieces[-1] else [])
    k = int(np.argmax(lengths))
    assert got == (k + 1, lengths[k])


@pytest.mark.parametrize("position", [5, 15000])
def test_stray_text_in_a_numeric_column_is_the_same_error_wherever_it_is(tmp_path, position):
    """One "oops" within the first block made the column categorical with 20,000
    categories (AUC 1.00 -> 0.80), silently; at row 15,000 it was a clean error."""
    rng = np.random.default_rng(0)
    values = [f"{v:.4f}" for v in rng.normal(size=20000)]
    values[position] = "oops"
    path = write(tmp_path, "d.csv", "a,y\n" + "".join(f"{v},{i % 2}\n"
                                                      for i, v in enumerate(values)))
    with pytest.raises(InputError, match=f"line {position + 2}, column 'a': expected a "
                                         f"number, got 'oops'"):
        list(open_source(path, label="y").batches())
    source = open_source(path, label="y", on_bad_rows="skip")
    assert source.feature_kinds == ["numeric"]
    a = np.concatenate([b.numeric["a"] for b in source.batches()])
    assert len(a) == 20000 and source.n_bad_rows == 0 and source.n_bad_values == {"a": 1}
    assert np.isnan(a[position]) and np.count_nonzero(np.isnan(a)) == 1
    # a column that is mostly text stays categorical
    mixed = write(tmp_path, "m.csv", "a,y\n" + "".join(f"{'k' if i % 3 else i},{i % 2}\n"
                                                       for i in range(300)))
    assert open_source(mixed, label="y").feature_kinds == ["categorical"]


@pytest.mark.parametrize("dtype", ["float64", "int32"])
def test_nulls_become_nan_in_any_slice_of_an_arrow_column(dtype):
    """``to_float64`` fills nulls from the validity bitmap itself (no pandas): every slice
    of a column, at every bit offset, gives its values and NaN where it is null."""
    import pyarrow as pa

    from oocboost.cache.ingest.source import to_float64

    rng = np.random.default_rng(0)
    values = rng.integers(-50, 50, 300).astype(dtype)
    null = rng.random(300) < 0.3
    column = pa.array(values, mask=null)
    for offset in range(0, 20):
        for n in (0, 1, 7, 8, 9, 100, 300):
            got = to_float64(column.slice(offset, n))
            n_kept = min(n, 300 - offset)
            want = np.where(null[offset:offset + n_kept], np.nan,
                            values[offset:offset + n_kept].astype(np.float64))
            np.testing.assert_array_equal(got, want)
            assert not got.flags.writeable


def test_arrow_arrays_read_from_their_buffers_equal_pyarrows_conversions():
    """``ingest/arrow_numpy.py`` (no pandas) against pyarrow's own conversions, on every
    slice offset of integer, boolean and string columns with nulls."""
    import pyarrow as pa

    from oocboost.cache.ingest import arrow_numpy as an

    rng = np.random.default_rng(1)
    null = rng.random(200) < 0.3
    ints = pa.array(rng.integers(-9, 9, 200).astype(np.int32), mask=null)
    bools = pa.array(rng.random(200) < 0.5, mask=null)
    for offset in range(0, 17):
        for n in (0, 1, 8, 9, 150):
            i, b = ints.slice(offset, n), bools.slice(offset, n)
            want_valid = ~null[offset:offset + min(n, 200 - offset)]
            np.testing.assert_array_equal(an.valid_mask(i), want_valid)
            np.testing.assert_array_equal(an.valid_mask(b), want_valid)
            want_ints = np.array([v if v is not None else -3 for v in i.to_pylist()])
            got = an.int_numpy(i, null=-3, dtype=np.int32)
            assert got.dtype == np.int32
            np.testing.assert_array_equal(got, want_ints.reshape(-1))
            np.testing.assert_array_equal(
                an.bool_values(b), np.array([bool(v) for v in b.to_pylist()], bool))
    strings = ["", "a", "é€", "x" * 40]
    assert an.string_array(strings).equals(pa.array(strings, type=pa.string()))
    assert an.string_array(["a", None]).to_pylist() == ["a", None]
    assert an.null_scalar(pa.string()).is_valid is False
    np.testing.assert_array_equal(an.int64_array(np.arange(5)).to_pylist(), np.arange(5))
    assert an.float64_array(np.array([0.5, 2.0])).to_pylist() == [0.5, 2.0]
