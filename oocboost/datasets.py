"""Deterministic, streaming, HIGGS-like synthetic data.

Usage::

    python -m tools.gen_data --rows 1000000 --features 28 --task binary \\
        --missing-rate 0.02 --seed 0 --format csv -o higgs_like.csv

Columns: ``label`` first, then ``f0 .. f{F-1}`` (float features), then ``cat0 ..
cat{C-1}`` (strings ``"a" .. "z"`` with skewed frequencies).

- Float features: a mix of normal, skewed (log-normal) and uniform columns, rounded to 5
  decimals so that the text in a CSV parses back to exactly the same float64.
- Every seventh feature (``f6``, ``f13``, ...) is low-cardinality: integer values
  ``0 .. k-1`` with ``k`` between 2 and 8.
- The first ``min(6, F)`` other float columns have missing values (NaN, empty in CSV)
  at ``missing_rate``; categorical columns have missing values (null) at the same rate.
- The label comes from a fixed nonlinear function of the features, drawn once from the
  seed: a linear part, a few pairwise products and a few thresholds, plus per-category
  offsets, scaled so that its standard deviation is about 2.5. ``binary``:
  ``y ~ Bernoulli(sigmoid(f))`` (the true model's AUC is about 0.88; gradient boosting
  reaches about 0.8-0.85); ``multiclass``: ``y = argmax_k(f_k + Gumbel)``, i.e. a draw
  from ``softmax(f)``; ``regression``: ``y = f + N(0, 1)``; ``ranking``: relevance degrees
  ``y = clip(floor((f + N(0, 1)) / 1.25) + 2, 0, 4)`` and a ``qid`` column after the
  label: queries of :data:`QUERY_ROWS` consecutive rows (``qid = row // 20``). The label
  uses the values before missing values are injected.

Determinism: rows are generated in fixed units of 8192 rows, each from its own
``numpy.random.default_rng([seed, unit])``, so a row's values depend only on the seed and
its index: the same seed gives byte-identical CSV files whatever ``chunk_rows`` is, and
memory does not grow with ``n_rows``. Files are written to a temporary sibling and renamed
into place.
"""
from __future__ import annotations

import argparse
import gzip
import os
import sys
from typing import NamedTuple

import numpy as np

__all__ = ["generate", "generate_arrays", "iter_chunks", "query_ids", "GeneratedData",
           "main"]

#: Rows per generation unit (each with its own random stream). Fixed: changing it changes
#: the data.
UNIT_ROWS = 8192
LETTERS = [chr(ord("a") + i) for i in range(26)]
TASKS = ("binary", "multiclass", "regression", "ranking")
#: Rows of a query of the ``ranking`` task.
QUERY_ROWS = 20
FORMATS = ("csv", "csv.gz", "parquet")
N_MISSING_COLUMNS = 6
LOWCARD_EVERY = 7
DECIMALS = 5
TARGET_STD = 2.5


class GeneratedData(NamedTuple):
    """In-memory data: ``X`` float64 (n_rows, n_features), ``y`` (n_rows,), ``feature_names``
    (the float features, then the categorical ones), ``categorical``: dict name -> object
    array of str (None for missing), empty when there are no categorical columns."""

    X: np.ndarray
    y: np.ndarray
    feature_names: list
    categorical: dict


class _Spec:
    """The fixed random function and column layout drawn from the seed."""

    def __init__(self, n_features, n_categorical, task, n_classes, missing_rate, seed):
        if task not in TASKS:
            raise ValueError(f"task must be one of {TASKS}, got {task!r}")
        if n_features < 1:
            raise ValueError(f"n_features must be >= 1, got {n_features}")
        if n_categorical < 0:
            raise ValueError(f"n_categorical must be >= 0, got {n_categorical}")
        if not 0.0 <= missing_rate < 1.0:
            raise ValueError(f"missing_rate must be in [0, 1), got {missing_rate}")
        if task == "multiclass" and n_classes < 2:
            raise ValueError(f"n_classes must be >= 2 for multiclass, got {n_classes}")
        self.n_features = n_features
        self.n_categorical = n_categorical
        self.task = task
        self.n_classes = n_classes if task == "multiclass" else 1
        self.missing_rate = float(missing_rate)
        self.seed = int(seed)
        rng = np.random.default_rng([self.seed, 0x5EED])
        F = n_features
        self.kind = np.array([j % 3 for j in range(F)])  # 0 normal, 1 log-normal, 2 uniform
        self.lowcard = np.array([j % LOWCARD_EVERY == LOWCARD_EVERY - 1 for j in range(F)])
        self.lowcard_k = rng.integers(2, 9, size=F)
        float_cols = [j for j in range(F) if not self.lowcard[j]]
        self.missing_cols = np.array(float_cols[:N_MISSING_COLUMNS], dtype=np.int64)
        self.feature_names = [f"f{j}" for j in range(F)] + [
            f"cat{c}" for c in range(n_categorical)
        ]
        # category frequencies: Zipf-like skew, a different permutation per column
        p = 1.0 / (np.arange(26) + 1.0) ** 1.1
        self.cat_p = [rng.permutation(p / p.sum()) for _ in range(n_categorical)]
        K = self.n_classes
        n_inf = min(F, 12)
        self.terms = []
        for _ in range(K):
            informative = rng.choice(F, size=n_inf, replace=False)
            lin = rng.normal(0, 1, size=n_inf)
            pairs = rng.choice(F, size=(4, 2), replace=True)
            pair_w = rng.normal(0, 1, size=4)
            thr_cols = rng.choice(F, size=4, replace=True)
            thr = rng.normal(0, 0.7, size=4)
            thr_w = rng.normal(0, 1.5, size=4)
            cat_off = [rng.normal(0, 0.8, size=26) for _ in range(n_categorical)]
            self.terms.append((informative, lin, pairs, pair_w, thr_cols, thr, thr_w, cat_off))
        self.scale = np.ones(K)
        self.center = np.zeros(K)
        # calibrate the scale on a fixed sample so that f has about TARGET_STD std
        z, codes = self._latent(np.random.default_rng([self.seed, 0xCA1B]), 4096)
        raw = self._raw_f(z, codes)
        std = raw.std(axis=0)
        self.center = raw.mean(axis=0)
        self.scale = np.where(std > 0, TARGET_STD / np.where(std > 0, std, 1.0), 1.0)

    def _latent(self, rng, n):
        """Standardised latent features z (n, F) and category codes (n, C)."""
        z = rng.standard_normal((n, self.n_features))
        codes = np.empty((n, self.n_categorical), dtype=np.int64)
        for c in range(self.n_categorical):
            codes[:, c] = rng.choice(26, size=n, p=self.cat_p[c])
        return z, codes

    def _raw_f(self, z, codes):
        out = np.zeros((z.shape[0], self.n_classes))
        for k, (inf, lin, pairs, pw, tc, thr, tw, cat_off) in enumerate(self.terms):
            f = z[:, inf] @ lin / np.sqrt(len(inf))
            for (a, b), w in zip(pairs, pw):
                f += w * z[:, a] * z[:, b]
            for col, t, w in zip(tc, thr, tw):
                f += w * (z[:, col] > t)
            for c in range(self.n_categorical):
                f += cat_off[c][codes[:, c]]
            out[:, k] = f
        return out

    def unit(self, index):
        """Rows ``index * UNIT_ROWS ..`` of one generation unit: (X, y, cats)."""
        rng = np.random.default_rng([self.seed, int(index)])
        n = UNIT_ROWS
        z, codes = self._latent(rng, n)
        f = (self._raw_f(z, codes) - self.center) * self.scale
        if self.task == "binary":
            y = (rng.random(n) < 1.0 / (1.0 + np.exp(-f[:, 0]))).astype(np.int64)
        elif self.task == "multiclass":
            y = np.argmax(f + rng.gumbel(size=f.shape), axis=1).astype(np.int64)
        elif self.task == "ranking":
            noisy = (f[:, 0] + rng.standard_normal(n)) / 1.25
            y = np.clip(np.floor(noisy) + 2, 0, 4).astype(np.int64)
        else:
            y = np.round(f[:, 0] + rng.standard_normal(n), DECIMALS)
        # observed features: transform the latent values
        X = np.empty_like(z)
        for j in range(self.n_features):
            if self.lowcard[j]:
                k = self.lowcard_k[j]
                # quantile-ish integer levels of a normal
                X[:, j] = np.clip(np.floor((z[:, j] + 2.0) * k / 4.0), 0, k - 1)
            elif self.kind[j] == 0:
                X[:, j] = z[:, j]
            elif self.kind[j] == 1:
                X[:, j] = np.exp(0.5 * z[:, j])
            else:
                X[:, j] = 1.0 / (1.0 + np.exp(-z[:, j]))  # uniform-like in (0, 1)
        X = np.round(X, DECIMALS)
        if self.missing_rate > 0:
            miss = rng.random((n, len(self.missing_cols))) < self.missing_rate
            for i, j in enumerate(self.missing_cols):
                X[miss[:, i], j] = np.nan
        cats = []
        for c in range(self.n_categorical):
            values = np.array(LETTERS, dtype=object)[codes[:, c]]
            if self.missing_rate > 0:
                values[rng.random(n) < self.missing_rate] = None
            cats.append(values)
        return X, y, cats


def iter_chunks(n_rows, n_features=28, *, task="binary", n_classes=3, n_categorical=0,
                missing_rate=0.02, seed=0, chunk_rows=100_000, row_start=0):
    """Yield ``(X, y, cats)`` chunks of at most ``chunk_rows`` rows, in order.

    ``X`` float64 (rows, n_features), ``y`` int64 (classes) or float64 (regression),
    ``cats`` a list of object arrays of str/None. Memory is O(chunk_rows + 8192), not
    O(n_rows). ``row_start`` skips that many rows of the same stream: rows
    ``row_start .. row_start + n_rows - 1`` come from the same distribution and label
    function, so a validation set is ``row_start=n_train``.
    """
    if row_start < 0:
        raise ValueError(f"row_start must be >= 0, got {row_start}")
    if n_rows < 0:
        raise ValueError(f"n_rows must be >= 0, got {n_rows}")
    if chunk_rows < 1:
        raise ValueError(f"chunk_rows must be >= 1, got {chunk_rows}")
    spec = _Spec(n_features, n_categorical, task, n_classes, missing_rate, seed)
    cached = (None, None)
    start = row_start
    end = row_start + n_rows
    while start < end:
        stop = min(end, start + chunk_rows)
        parts = []
        u = start // UNIT_ROWS
        while u * UNIT_ROWS < stop:
            if cached[0] != u:
                cached = (u, spec.unit(u))
            X, y, cats = cached[1]
            lo = max(start - u * UNIT_ROWS, 0)
            hi = min(stop - u * UNIT_ROWS, UNIT_ROWS)
            parts.append((X[lo:hi], y[lo:hi], [c[lo:hi] for c in cats]))
            u += 1
        yield (
            np.concatenate([p[0] for p in parts]),
            np.concatenate([p[1] for p in parts]),
            [np.concatenate([p[2][c] for p in parts]) for c in range(n_categorical)],
        )
        start = stop


def generate_arrays(n_rows, n_features=28, *, task="binary", n_classes=3, n_categorical=0,
                    missing_rate=0.02, seed=0, row_start=0):
    """Generate the same rows :func:`generate` writes, in memory (for small tests).

    Returns
    -------
    GeneratedData
        ``(X, y, feature_names, categorical)``; ``X`` float64 (n_rows, n_features) with NaN
        for missing values, ``y`` int64 class labels or float64 targets, ``feature_names``
        the float features then the categorical ones, ``categorical`` dict name -> object
        array (None for missing).
    """
    chunks = list(
        iter_chunks(
            n_rows,
            n_features,
            task=task,
            n_classes=n_classes,
            n_categorical=n_categorical,
            missing_rate=missing_rate,
            seed=seed,
            chunk_rows=max(n_rows, 1),
            row_start=row_start,
        )
    )
    if chunks:
        X, y, cats = chunks[0]
    else:
        X = np.empty((0, n_features))
        y = np.empty(0, dtype=np.float64 if task == "regression" else np.int64)
        cats = [np.empty(0, dtype=object) for _ in range(n_categorical)]
    names = [f"f{j}" for j in range(n_features)] + [f"cat{c}" for c in range(n_categorical)]
    categorical = {f"cat{c}": cats[c] for c in range(n_categorical)}
    return GeneratedData(X, y, names, categorical)


def query_ids(row_start, n_rows):
    """The ``qid`` of rows ``row_start ..`` of the ``ranking`` task, int64."""
    return np.arange(row_start, row_start + n_rows, dtype=np.int64) // QUERY_ROWS


def _record_batch(X, y, cats, names, n_features, first_row=None):
    import pyarrow as pa

    arrays = [pa.array(y)]
    if first_row is not None:  # the ranking task's query ids
        arrays.append(pa.array(query_ids(first_row, len(y))))
        names = ["qid"] + list(names)
    for j in range(n_features):
        arrays.append(pa.array(X[:, j], from_pandas=True))  # NaN -> null
    for c in cats:
        arrays.append(pa.array(c, type=pa.string()))
    return pa.RecordBatch.from_arrays(arrays, names=["label"] + list(names))


def _infer_format(path):
    p = str(path).lower()
    if p.endswith(".csv.gz"):
        return "csv.gz"
    if p.endswith(".parquet") or p.endswith(".pq"):
        return "parquet"
    return "csv"


def generate(path, n_rows, n_features=28, *, task="binary", n_classes=3, n_categorical=0,
             missing_rate=0.02, seed=0, format=None, chunk_rows=100_000, row_start=0):
    """Write ``n_rows`` rows to ``path`` (CSV, gzip-compressed CSV or Parquet), streaming.

    Parameters
    ----------
    path : str or os.PathLike
        Output file; written to a temporary sibling first and renamed into place.
    n_rows, n_features : int
        Rows and float feature columns.
    task : {"binary", "multiclass", "regression"}
    n_classes : int
        Classes for ``multiclass``.
    n_categorical : int
        String columns ``cat0 ..`` appended after the float features.
    missing_rate : float
        Fraction of missing values in the first six float columns and in categorical columns.
    seed : int
    format : {"csv", "csv.gz", "parquet"} or None
        None: from the file name (``.csv.gz``, ``.parquet``, else CSV).
    chunk_rows : int
        Rows converted and written at once (memory is proportional to it, in rows);
        the output is identical for any value (CSV; Parquet row groups follow it).

    Returns
    -------
    str
        The path written.
    """
    import pyarrow as pa
    import pyarrow.csv as pacsv

    fmt = format or _infer_format(path)
    if fmt not in FORMATS:
        raise ValueError(f"format must be one of {FORMATS}, got {fmt!r}")
    path = os.fspath(path)
    names = [f"f{j}" for j in range(n_features)] + [f"cat{c}" for c in range(n_categorical)]
    tmp = f"{path}.tmp-{os.getpid()}"
    chunks = iter_chunks(n_rows, n_features, task=task, n_classes=n_classes,
                         n_categorical=n_categorical, missing_rate=missing_rate, seed=seed,
                         chunk_rows=chunk_rows, row_start=row_start)
    first_row = [row_start]

    def to_batch(X, y, cats):
        qid_from = first_row[0] if task == "ranking" else None
        first_row[0] += len(y)
        return _record_batch(X, y, cats, names, n_features, qid_from)
    try:
        if fmt == "parquet":
            import pyarrow.parquet as pq

            writer = None
            try:
                for X, y, cats in chunks:
                    batch = to_batch(X, y, cats)
                    if writer is None:
                        writer = pq.ParquetWriter(tmp, batch.schema, compression="snappy")
                    writer.write_table(pa.Table.from_batches([batch]))
                if writer is None:  # zero rows: still write a file with the schema
                    empty = generate_arrays(
                        0, n_features, task=task, n_categorical=n_categorical
                    )
                    batch = _record_batch(empty.X, empty.y, list(empty.categorical.values()),
                                          names, n_features,
                                          0 if task == "ranking" else None)
                    writer = pq.ParquetWriter(tmp, batch.schema, compression="snappy")
                    writer.write_table(pa.Table.from_batches([batch]))
            finally:
                if writer is not None:
                    writer.close()
        else:
            header = ",".join(["label"] + (["qid"] if task == "ranking" else [])
                              + names) + "\n"
            options = pacsv.WriteOptions(include_header=False, quoting_style="needed")
            if fmt == "csv":
                # straight into the file: a bytes copy of each chunk through Python's
                # buffered writer was a quarter of the time
                with pa.OSFile(tmp, "wb") as out:
                    out.write(header.encode())
                    for X, y, cats in chunks:
                        pacsv.write_csv(to_batch(X, y, cats), out, options)
            else:
                raw = open(tmp, "wb")
                try:
                    out = gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0)
                    out.write(header.encode())
                    for X, y, cats in chunks:
                        sink = pa.BufferOutputStream()
                        pacsv.write_csv(to_batch(X, y, cats), sink, options)
                        out.write(sink.getvalue().to_pybytes())
                    out.close()
                finally:
                    raw.close()
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m oocboost.datasets", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--rows", type=int, required=True, help="number of rows")
    parser.add_argument("--features", type=int, default=28, help="float feature columns (28)")
    parser.add_argument("--task", choices=TASKS, default="binary")
    parser.add_argument("--n-classes", type=int, default=3, help="classes for multiclass (3)")
    parser.add_argument("--categorical", type=int, default=0, help="string columns (0)")
    parser.add_argument("--missing-rate", type=float, default=0.02)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--format", choices=FORMATS, default=None, help="default: from the file name"
    )
    parser.add_argument("--chunk-rows", type=int, default=100_000, help="rows written at once")
    parser.add_argument("--row-start", type=int, default=0,
                        help="first row of the stream (a validation set: the train rows)")
    parser.add_argument("-o", "--output", required=True, help="output path")
    args = parser.parse_args(argv)
    try:
        generate(
            args.output,
            args.rows,
            args.features,
            task=args.task,
            n_classes=args.n_classes,
            n_categorical=args.categorical,
            missing_rate=args.missing_rate,
            seed=args.seed,
            format=args.format,
            chunk_rows=args.chunk_rows,
            row_start=args.row_start,
        )
    except ValueError as exc:
        parser.error(str(exc))
    print(args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
