"""Numbers written as text (``cache/ingest/numeric_text.py``): one rule for a CSV column,
a pandas object column, an Arrow, Parquet or Polars string column. A column whose first
batch is mostly numbers is numeric; a stray value is an error naming the line or row, the
column and the value, wherever it is, or with ``on_bad_rows="skip"`` a missing value,
counted; a column mostly text over the whole pass is refused even so."""
import warnings

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import oocboost
from oocboost.cache.describe import describe_cache
from oocboost.cache.ingest.dispatch import open_source
from oocboost.cache.ingest.numeric_text import mostly_numbers, parse_numbers
from oocboost.errors import InputError

N_ROWS = 3000
STRAY = {5: "oops", 2500: "n/a?"}


def _values():
    values = np.round(np.random.default_rng(0).normal(size=N_ROWS), 4)
    text = values.astype(object)
    for row, stray in STRAY.items():
        text[row] = stray
    return values, text


def _sources(tmp_path):
    """The same column as each kind of source: (name, data, where the first stray is)."""
    values, text = _values()
    y = (values > 0).astype(float)
    frame = pd.DataFrame({"x": text, "y": y})
    strings = pa.table({"x": pa.array([str(v) for v in text]), "y": y})
    pq.write_table(strings, tmp_path / "d.parquet", row_group_size=1000)
    frame.to_csv(tmp_path / "d.csv", index=False)
    return [("pandas", frame, "row 6"), ("arrow", strings, "row 6"),
            ("polars", pl.from_arrow(strings), "row 6"),
            ("parquet", tmp_path / "d.parquet", "row 6"),
            ("csv", tmp_path / "d.csv", "line 7")]


def _column(source):
    return np.concatenate([b.numeric["x"] for b in source.batches()])


@pytest.mark.parametrize("batch_rows", [500, 65536])
def test_every_source_reads_the_same_numbers(tmp_path, batch_rows):
    values, _ = _values()
    for name, data, where in _sources(tmp_path):
        kw = {} if name == "csv" else {"batch_rows": batch_rows}
        with pytest.raises(InputError, match=rf"{where}, column 'x': expected a number, "
                                             rf"got 'oops' \(the column is numeric"):
            list(open_source(data, label="y", **kw).batches())
        source = open_source(data, label="y", on_bad_rows="skip", **kw)
        assert source.feature_kinds == ["numeric"], name
        got = _column(source)
        assert source.n_bad_values == {"x": 2} and source.n_bad_rows == 0, name
        expected = values.copy()
        expected[list(STRAY)] = np.nan
        np.testing.assert_array_equal(got, expected, err_msg=name)


def test_the_count_reaches_the_manifest_and_info(tmp_path):
    frame = _sources(tmp_path)[0][1]
    cache = oocboost.build_cache(frame, tmp_path / "c.oocb", label="y",
                                 on_bad_rows="skip", quiet=True)
    assert cache.manifest["source"]["n_bad_values"] == {"x": 2}
    assert cache.manifest["features"][0]["n_missing"] == 2
    assert "values that were not numbers, read as missing: x 2" in \
        describe_cache(tmp_path / "c.oocb")


def test_text_columns_stay_categorical_and_categories_are_kept(tmp_path):
    words = pd.DataFrame({"c": ["a", "b", "1", "c"] * 50, "y": [0.0, 1.0] * 100})
    assert open_source(words, label="y").feature_kinds == ["categorical"]
    # an explicit category dtype, or a named column, is never read as numbers
    numbers = pd.DataFrame({"c": pd.Series(["1", "2", "3"] * 50, dtype="category"),
                            "d": ["1.5", "2", "3"] * 50, "y": [0.0] * 150})
    assert open_source(numbers, label="y").feature_kinds == ["categorical", "numeric"]
    assert open_source(numbers, label="y", categorical=["c", "d"]).feature_kinds == \
        ["categorical", "categorical"]
    # an object column mixing numbers and words reads as the text they print as
    mixed = pd.DataFrame({"m": np.array([1.5, "x", "y", None] * 30, dtype=object),
                          "y": [0.0] * 120})
    source = open_source(mixed, label="y")
    assert source.feature_kinds == ["categorical"]
    values = pa.concat_arrays([b.categorical["m"] for b in source.batches()])
    assert values.to_pylist()[:4] == ["1.5", "x", "y", None]


def test_mostly_text_over_the_whole_pass_is_refused(tmp_path):
    """The first batch decides the kind; a column that then turns out to be mostly
    words is refused (in skip mode, where its words would otherwise become missing)."""
    column = [str(i) for i in range(600)] + ["word"] * 2400
    frame = pd.DataFrame({"x": column, "y": [0.0] * 3000})
    source = open_source(frame, label="y", on_bad_rows="skip", batch_rows=500)
    assert source.feature_kinds == ["numeric"]
    with pytest.raises(InputError, match=r"column 'x': 2,400 of its 3,000 values are not "
                                         r"numbers, though its first batch was numbers: "
                                         r"read it as categories"):
        list(source.batches())


def test_parse_numbers_is_pyarrows_csv_syntax():
    values, bad = parse_numbers(pa.array([" 1.5", "inf", "-Infinity", "x", None, "1e3",
                                          "1e", "NaN", ".5", "+2."]))
    np.testing.assert_array_equal(bad, [0, 0, 0, 1, 0, 0, 1, 0, 0, 0])
    np.testing.assert_array_equal(values, [1.5, np.inf, -np.inf, np.nan, np.nan, 1000.0,
                                           np.nan, np.nan, 0.5, 2.0])
    assert mostly_numbers(pa.array(["1"] * 9 + ["a"]))
    assert not mostly_numbers(pa.array(["1"] * 8 + ["a", "b"]))
    assert not mostly_numbers(pa.array([None, None], pa.string()))


def test_a_column_mostly_numbers_over_the_pass_is_read_as_numbers(tmp_path):
    """Words in the first block (1 MiB of a 11 MB file) made the column categorical; over
    the whole pass it is mostly numbers, so the build reads it again as numbers, and
    says so."""
    values = np.round(np.random.default_rng(3).normal(size=20000), 4)
    text = values.astype(object)
    text[:1000] = "word"                      # half the first block, 5% of the file
    frame = pd.DataFrame({"x": text, "pad": "p" * 500, "y": (values > 0).astype(float)})
    frame.to_csv(tmp_path / "d.csv", index=False)
    with pytest.warns(UserWarning, match=r"'x': read as categories from the first block, "
                                         r"but most values are numbers"):
        cache = oocboost.build_cache(tmp_path / "d.csv", tmp_path / "c.oocb", label="y",
                                     quiet=True, on_bad_rows="skip")
    assert cache.bin_mapper.feature_types == ["numeric", "categorical"]
    assert cache.manifest["source"]["n_bad_values"] == {"x": 1000}
    # a column that is text over the whole pass stays categorical, without a warning
    words = pd.DataFrame({"x": ["a", "b", "1"] * 3000, "y": [0.0, 1.0, 0.0] * 3000})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cache = oocboost.build_cache(words, tmp_path / "w.oocb", label="y", quiet=True)
    assert cache.bin_mapper.feature_types == ["categorical"]


@pytest.mark.parametrize("kind", ["pandas", "arrow", "csv"])
def test_numeric_text_option_reads_a_text_column_as_numbers(tmp_path, kind):
    """What the build's second first pass asks of every source."""
    text = np.array(["word"] * 60 + [str(v) for v in range(940)], dtype=object)
    frame = pd.DataFrame({"x": text, "y": np.zeros(1000)})
    data = {"pandas": frame, "arrow": pa.Table.from_pandas(frame),
            "csv": tmp_path / "d.csv"}[kind]
    frame.to_csv(tmp_path / "d.csv", index=False)
    assert open_source(data, label="y", batch_rows=40, batch_bytes=4096).feature_kinds \
        == ["categorical"]
    source = open_source(data, label="y", batch_rows=40, batch_bytes=4096,
                         on_bad_rows="skip", numeric_text=["x"])
    assert source.feature_kinds == ["numeric"]
    got = np.concatenate([b.numeric["x"] for b in source.batches()])
    assert np.isnan(got[:60]).all() and np.array_equal(got[60:], np.arange(940.0))
    assert source.n_bad_values == {"x": 60}
