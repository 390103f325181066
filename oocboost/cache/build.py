"""``build_cache``: source -> sketches -> bin edges -> binned, compressed column blocks.

Two passes over the data, the text parsed once::

    pass 1  source batches -> quantile sketches, category counts, missing counts,
                              label statistics; parsed columns spooled (Arrow IPC, float64)
    edges   BinMapper.fit(sketches, counts)
    pass 2  spool batches  -> numba binning -> blocks of block_rows rows -> CacheWriter

With ``reference=`` (validation and test data) the training cache's bin mapper is used
and there is a single pass (missing values are still counted for ``oocboost info``).

Files and one-shot streams are read once: pass 2 reads the spool (``.oocb-spool-<pid>-*``
next to the output, removed on success, error or Ctrl-C, and by the next build when a
killed one left it). In-memory data is sliced again instead. A stream's fingerprint is
known only once it has been read, so whether an existing cache can be reused is decided
after pass 1 for streams, before it for everything else. Everything is written under a
temporary name and renamed into
place when complete (see ``store/writer.py``).
"""
from __future__ import annotations

import dataclasses
import os
import time
import warnings
from typing import TYPE_CHECKING, Any

from ..common import DEFAULT_MAX_BIN, check_max_bin
from ..errors import (
    MemoryLimitError,
    OocboostError,
    OutputError,
    ParameterError,
    SchemaError,
)
from ..utils import interrupt
from ..utils.budget import process_baseline
from ..utils.files import SPACE_ERRNOS, check_output_path, describe_write_error
from ..utils.log import get_logger, say
from ..utils.progress import ProgressBar
from ..utils.sizes import format_size
from ..utils.workers import InOrderWorker
from .assembler import BlockAssembler
from .binning import BinMapper
from .bundles import BUNDLE_DEFAULTS, NonzeroSample, check_bundle_params, find_bundles
from .first_pass import FirstPass
from .groups import GroupRuns
from .ingest import open_source
from .ingest.source import column_names
from .ingest.svmlight import BLOCK_BYTES as SVMLIGHT_BLOCK_BYTES
from .plan import MIN_CSV_BLOCK_BYTES, plan_build, preferred_csv_block_bytes
from .reuse import existing_fingerprint, fingerprint_of, reusable
from .sparse_columns import SPARSE_DEFAULTS, check_sparse_params, implied_codes
from .split_points import as_split_points, with_split_points
from .split_points import fingerprint as split_fingerprint
from .spool import Spool
from .summary import feature_summary, label_stats_dict, warn_folded
from .target_stats import ORDERED_TS_OPTIONS, OrderedTargetStats, fit_with_target_stats

if TYPE_CHECKING:
    from .store import Cache

logger = get_logger(__name__)

#: Build parameters that change the cache's content (part of its fingerprint).
_CONTENT_PARAMS = ("label", "weight", "categorical", "drop", "max_bin", "max_categories",
                   "block_rows", "backend", "compression", "delimiter", "na_values",
                   "encoding", "on_bad_rows", "reference", "group", "cat_encoding",
                   "base_margin")


def _check_schema(source, ref):
    # the columns the reference read (its derived ordered-TS features are made from
    # them); ordered-TS features are read as strings
    mapper = ref.bin_mapper
    inputs = mapper.input_features()
    ref_names = [mapper.feature_names[f] for f in inputs]
    ref_types = ["categorical" if mapper.feature_types[f] == "ordered_ts" else
                 mapper.feature_types[f] for f in inputs]
    names = list(source.feature_names)
    missing = [n for n in ref_names if n not in names]
    extra = [n for n in names if n not in ref_names]
    retyped = [f"{n} ({ref_types[ref_names.index(n)]} in the reference, "
               f"{k} here)" for n, k in zip(names, source.feature_kinds)
               if n in ref_names and ref_types[ref_names.index(n)] != k]
    if missing or extra or retyped:
        parts = []
        if missing:
            parts.append(f"missing columns {missing}")
        if extra:
            parts.append(f"extra columns {extra}")
        if retyped:
            parts.append(f"columns of another type: {', '.join(retyped)}")
        raise SchemaError(f"{source.name} does not match the reference cache {ref.path}: "
                          + "; ".join(parts))
    if names != ref_names:
        raise SchemaError(f"{source.name}: columns are in another order than in the "
                          f"reference cache {ref.path} ({names} vs {ref_names})")


def _open_reference(reference):
    """A Cache, a path to one, or edges no cache holds yet (shards.EdgesReference), as
    the object to bin with; None for None."""
    from .store import Cache

    if reference is None:
        return None
    ref = reference if hasattr(reference, "bin_mapper") else Cache(reference)
    if not hasattr(ref.bin_mapper, "input_features"):   # a Model has a dict of edges
        raise ParameterError(f"reference must be the training cache or its path, got a "
                             f"{type(reference).__name__}; to bin on a model's split "
                             f"thresholds pass split_points=model")
    return ref


def build_cache(data: Any, output: str | os.PathLike, *, label: Any = None,
                weight: Any = None, categorical: Any = "auto", drop: Any = (),
                max_bin: int = DEFAULT_MAX_BIN, max_categories: int | None = None,
                block_rows: int | None = None, backend: str = "arrow",
                compression: str | None = None, memory_limit: int | str | None = None,
                delimiter: str | None = None, na_values: list[str] | None = None,
                encoding: str = "utf-8", on_bad_rows: str = "error", reference: Any = None,
                overwrite: bool = False, quiet: bool = False, verbose: bool = False,
                feature_names: list[str] | None = None, group: Any = None,
                cat_encoding: str = "native", ts_prior: float | None = None,
                ts_prior_weight: float = 1.0, ts_permutations: int = 4, ts_seed: int = 0,
                ts_per_class: bool = False, ts_combinations: int = 1,
                enable_bundle: bool = True, max_conflict_rate: float = 0.0,
                enable_sparse: bool = True, sparse_threshold: float = 0.8,
                header: bool = True, names: list[str] | None = None,
                input_format: str = "auto", zero_based: Any = "auto",
                absent_as_missing: bool = False, base_margin: Any = None,
                split_points: Any = None) -> Cache:
    """Build a binned, compressed, on-disk cache from a file or in-memory data.

    Parameters
    ----------
    data : path or array-like
        CSV (plain or gzip), svmlight, Parquet, Arrow IPC/Feather path; or a NumPy 2-D
        array, a SciPy sparse matrix (absent entries 0.0, densified a block at a time),
        pandas DataFrame, pyarrow Table/RecordBatch, or an iterable of RecordBatches.
    output : path
        The cache folder to create.
    label, weight : str or array or None
        Label and sample-weight column names (or arrays, for in-memory data).
    group : str or array or None
        Query group id column (or array) for learning to rank, as XGBoost's ``qid``: the
        rows of a group must be contiguous (a group id seen again after another group is
        refused, naming the row). The cache keeps the group boundaries.
    base_margin : str, list of str, array or None
        Each row's offset (XGBoost's ``base_margin``, LightGBM's ``init_score``): column
        name(s), one per model output, or an ``(n_rows,)`` / ``(n_rows, k)`` array for
        in-memory data; finite numbers. Boosting starts each row from it instead of
        the model's constant base, and predicting on the cache adds it. A text file's
        ``FILE.init`` (LightGBM's side file) is read when not given. Stored as 8 bytes
        per row and output beside the blocks.
    categorical : "auto", list of str or None
        "auto": string columns are categorical.
    drop : list of str
        Columns to leave out.
    max_bin : int
        Codes per feature, the reserved missing code included (default 256: one byte).
    max_categories : int or None
        Categories kept per column before folding the rest into "other" (default
        ``max_bin - 1``).
    cat_encoding : {"native", "ordered_ts"}
        "native": categorical columns keep their categories (split natively by the
        learners). "ordered_ts": each becomes one numeric feature, CatBoost's ordered
        target statistic (``cache/target_stats.py``), averaged over ``ts_permutations``
        random orders (counter-based, from ``ts_seed``) and smoothed toward ``ts_prior``
        (default the label mean) with weight ``ts_prior_weight``; needs the label.
    ts_per_class : bool
        Ordered TS of a class label (multiclass): one statistic per class, the ordered
        share of that class's rows (CatBoost's per-class counters; the prior is the
        class's share): the column's feature holds the first class's, features
        ``name[y=k]`` appended after the columns the others'.
    ts_combinations : {1, 2}
        2: also encode every pair of categorical columns as one category (CatBoost's
        feature combinations, of two columns): features ``a+b`` appended after the
        columns. Prediction computes the derived features from their columns.
    enable_bundle, max_conflict_rate : bool, float
        Exclusive feature bundling as LightGBM's (``cache/bundles.py``): numeric
        features without missing values that are rarely non-zero in the same row share
        a stored column, so the cache is smaller and histograms are built over fewer
        columns; ``max_conflict_rate`` is the share of (the first 100,000) rows in
        which a bundle's features may overlap. Not with ``reference``.
    enable_sparse, sparse_threshold : bool, float
        LightGBM's ``is_enable_sparse`` and ``sparse_threshold``: a block keeps a
        numeric column by its rows off the code of an absent entry (0.0, or missing
        with ``absent_as_missing``) when that code covers at least ``sparse_threshold``
        of the block's rows (``cache/sparse_columns.py``); training then walks only
        those rows. Arrow backend only.
    block_rows : int or None
        Rows per block; chosen by the memory plan when None.
    backend : {"arrow", "hdf5"}
    compression : str or None
        Arrow: "lz4" (default), "zstd", "none". HDF5: "lzf" (default), "gzip", "none".
    memory_limit : int or str or None
        Peak resident memory of the process, e.g. "512MB"; the build refuses up front when
        it cannot be met.
    reference : Cache or path or None
        Bin with this (training) cache's edges and categories; the schema must match.
    split_points : Model or dict or None
        Edges that include each threshold a model splits a numeric feature at (or a
        dict feature name -> thresholds), the other edges thinned to fit ``max_bin``:
        a model without edges of its own (imported from XGBoost or LightGBM) then
        predicts from the cache exactly and continues training on it (``init_model``).
        Not with ``reference`` (which brings its edges).
    delimiter, na_values, encoding, on_bad_rows, header, names
        How a CSV file is read (:func:`oocboost.cache.ingest.open_source`): ``header=False``
        for a file without a header line (columns ``f0, f1, ...``, or ``names``; roles may
        then be 0-based positions, as LightGBM's ``label_column=0``); the delimiter is
        sniffed when not given (a tab for ``.tsv``).
    input_format, zero_based, absent_as_missing
        "svmlight" reads an svmlight / LibSVM file (detected by default from its name or
        its first lines): the label is each line's first number, ``qid:`` tokens or
        LightGBM's ``FILE.query`` the query groups, ``FILE.weight`` the weights, features
        ``f0 ..`` by index (zero- or one-based as scikit-learn detects it, or as
        ``zero_based`` says; with ``reference``, as the reference's file was read and
        with its number of features); an absent entry is 0.0, or missing with
        ``absent_as_missing`` (XGBoost's reading).
    overwrite : bool
        Replace an existing cache built from other data or parameters.
    quiet, verbose : bool
        No progress bar / print the memory plan.

    Returns
    -------
    Cache

    Examples
    --------
    >>> cache = build_cache("train.csv", "train.oocb", label="y")       # doctest: +SKIP
    >>> valid = build_cache("valid.csv", "valid.oocb", label="y",
    ...                     reference=cache)                             # doctest: +SKIP
    """
    from .store import Cache
    from .store.replace import check_target

    check_max_bin(max_bin)
    split_points = as_split_points(split_points, reference)
    if backend not in ("arrow", "hdf5"):
        raise ParameterError(f"backend must be 'arrow' or 'hdf5', got {backend!r}")
    output = os.fspath(output)
    # (an append builds inside the Cache object it gives as reference: by design)
    check_output_path(output, [data, reference])
    ref = _open_reference(reference)
    if ref is not None:
        max_bin = ref.max_bin
    opening = (data, memory_limit, max_bin, block_rows, feature_names, dict(
        label=label, weight=weight, group=group, base_margin=base_margin, drop=drop,
        categorical=categorical, delimiter=delimiter, na_values=na_values, encoding=encoding,
        on_bad_rows=on_bad_rows, header=header, names=names,
        **_svmlight_reading(ref, input_format, zero_based, absent_as_missing)))
    source, plan = _open_planned(*opening, max_categories=max_categories)
    if verbose:
        say(logger, plan.describe())
    if ref is not None:
        _check_schema(source, ref)
    build_params = {
        "label": list(label) if isinstance(label, (list, tuple)) else
        label if isinstance(label, str) or label is None else "<array>",
        "weight": weight if isinstance(weight, str) or weight is None else "<array>",
        "categorical": categorical,
        "drop": list(drop or ()), "max_bin": int(max_bin), "max_categories": max_categories,
        "block_rows": int(plan.block_rows), "backend": backend, "compression": compression,
        # as read (sniffed, or a tab for .tsv): the same file gives the same fingerprint
        "delimiter": getattr(source, "delimiter", None) or ",",
        "na_values": na_values, "encoding": encoding,
        "on_bad_rows": on_bad_rows,
        "reference": None if ref is None else existing_fingerprint(ref.path),
    }
    if getattr(source, "zero_based", None) is not None:   # svmlight; absent otherwise
        build_params["svmlight"] = {"zero_based": source.zero_based,
                                    "absent_as_missing": source.absent_as_missing}
    if not header or names is not None:  # likewise absent by default
        build_params["header"] = bool(header)
        build_params["names"] = None if names is None else list(names)
    build_params.update(split_fingerprint(split_points))  # absent without split points
    if weight is not None:  # weighted sketches since 2026-11-28: such caches are rebuilt
        build_params["weighted_sketch"] = True
    if group is not None:  # absent otherwise: caches built before groups stay current
        build_params["group"] = group if isinstance(group, str) else "<array>"
    if source.base_margin_name is not None:  # likewise (also from a FILE.init)
        build_params["base_margin"] = column_names(source.base_margin_name)
    build_params.update(_layout_params(enable_bundle, max_conflict_rate,  # likewise
                                       enable_sparse, sparse_threshold))
    build_params.update(ORDERED_TS_OPTIONS.build_params(  # likewise
        cat_encoding, ts_prior, ts_prior_weight, ts_permutations, ts_seed, ts_per_class,
        ts_combinations))
    source_fp = source.fingerprint()
    # A one-shot stream is only known once read: its fingerprint is checked after that.
    deferred = source_fp.get("sha256", "") is None
    if not deferred:
        existing = reusable(output, fingerprint_of(source_fp, build_params), overwrite, quiet)
        if existing is not None:
            return existing
    # Refuse a file or a foreign folder before spending a pass on the data (a cache
    # there is for _reusable to judge, after the stream when it is deferred).
    if not (deferred and existing_fingerprint(output) is not None):
        check_target(os.path.abspath(output), overwrite)
    job = _BuildJob(source=source, plan=plan, output=output, ref=ref, max_bin=max_bin,
                    max_categories=max_categories, backend=backend, compression=compression,
                    overwrite=overwrite, quiet=quiet, build_params=build_params,
                    source_fp=source_fp, deferred=deferred, split_points=split_points,
                    reopen=None if deferred else _reopener(opening, max_categories))
    with interrupt.guard():
        built = _build(job)
    cache = built if isinstance(built, Cache) else Cache(output)
    if verbose and built is None:
        say(logger, f"built {output}: {cache.n_rows} rows, {cache.n_features} features, "
                    f"{cache.n_blocks} blocks, {format_size(cache.nbytes_stored)} on disk")
    return cache


def _reopener(opening, max_categories):
    """The source opened again with text columns read as numbers (``numeric_text``)."""
    data, memory_limit, max_bin, block_rows, feature_names, options = opening

    def reopen(numbers):
        return _open_planned(data, memory_limit, max_bin, block_rows, feature_names,
                             {**options, "numeric_text": numbers},
                             max_categories=max_categories)[0]
    return reopen


def _svmlight_reading(ref, input_format, zero_based, absent_as_missing):
    """The svmlight reading options; with a reference cache built from an svmlight file,
    a validation file is read as the training file was, onto the same features."""
    options = dict(input_format=input_format, zero_based=zero_based,
                   absent_as_missing=absent_as_missing)
    read = ((getattr(ref, "manifest", None) or {}).get("source") or {}).get("svmlight")
    if read is not None:
        options.update(n_features=len(ref.feature_names),
                       zero_based=read["zero_based"] if zero_based == "auto" else zero_based)
    return options


def _open_planned(data, memory_limit, max_bin, block_rows, feature_names, source_options,
                  max_categories=None):
    """Open the source and plan the build: ``(source, BuildPlan)``."""
    # The column count is unknown until the source is open: a first plan with one column
    # only sizes the CSV read blocks; a limit too small even for that opens the source
    # with the smallest blocks and fails below with the real column count.
    # A text file's plan counts its reader (plan.CSV_READER_FIXED_BYTES and the blocks),
    # so its baseline is the process before the reader opened: measured after, it
    # counted the reader's first block and threads twice (a 30-column build refused
    # a limit 9 MiB under the 411 MiB it then asked for, the RSS having grown 37 MiB in
    # the open).
    baseline = process_baseline(None, "build")
    try:
        first_plan = plan_build(memory_limit, n_columns=max(len(feature_names or ()), 1),
                                max_bin=max_bin, block_rows=block_rows,
                                baseline_bytes=baseline)
        batch_bytes, long_block = first_plan.csv_block_bytes, first_plan.max_csv_block_bytes
    except MemoryLimitError:
        batch_bytes, long_block = MIN_CSV_BLOCK_BYTES, MIN_CSV_BLOCK_BYTES
    source = open_source(data, batch_bytes=batch_bytes, feature_names=feature_names,
                         max_block_bytes=long_block, **source_options)
    n_features = len(source.feature_names)
    if n_features == 0:
        raise SchemaError(f"{source.name}: no feature columns left (label, weight and "
                          f"dropped columns removed)")
    # categories past max_bin - 1 take two-byte codes: plan for them before pass 1 counts
    wide = ("categorical" in source.feature_kinds
            and (max_categories is None or max_categories > max_bin - 1))
    svmlight = _is_text(source) and not _is_csv(source)
    plan = plan_build(memory_limit, n_columns=n_features + 2, max_bin=max_bin,
                      baseline_bytes=baseline if _is_text(source) else None,
                      block_rows=block_rows, text_source=_is_text(source),
                      pyarrow_reader=not svmlight, codes_itemsize=2 if wide else None,
                      csv_block_bytes=SVMLIGHT_BLOCK_BYTES if svmlight else
                      preferred_csv_block_bytes(n_features))
    if svmlight:      # scanned with the first plan's blocks; parsed with this plan's
        source.batch_bytes = plan.csv_block_bytes
    for text in getattr(source, "text_sources", lambda: [source])():
        if hasattr(text, "max_block_bytes"):   # CSV: a long line met in pass 1 or 2
            text.max_block_bytes = plan.max_csv_block_bytes
            # the blocks of this plan (wide rows read in larger ones; the first plan
            # knew no columns), or larger when a long line already grew them
            grown = text.batch_bytes if text.batch_bytes > batch_bytes else 0
            text.batch_bytes = max(plan.csv_block_bytes, grown)
    return source, plan


def _is_csv(source):
    from .ingest.csv import CsvSource

    return isinstance(source, CsvSource)


def _is_text(source):
    """Text parsed block by block (CSV, svmlight): pass 1 sketches on a thread of its
    own while the next block is parsed."""
    from .ingest.svmlight import SvmlightSource

    return _is_csv(source) or isinstance(source, SvmlightSource)


def _layout_params(enable_bundle, max_conflict_rate, enable_sparse, sparse_threshold):
    """The ``bundle`` and ``sparse`` build parameters, each only when not the default
    (so that caches built before them stay current), checked."""
    out = {}
    bundle = check_bundle_params(enable_bundle, max_conflict_rate)
    if bundle != BUNDLE_DEFAULTS:
        out["bundle"] = {"enable_bundle": bundle[0], "max_conflict_rate": bundle[1]}
    sparse = check_sparse_params(enable_sparse, sparse_threshold)
    if sparse != SPARSE_DEFAULTS:
        out["sparse"] = {"enable_sparse": sparse[0], "sparse_threshold": sparse[1]}
    return out


@dataclasses.dataclass
class _BuildJob:
    """What :func:`build_cache` decided before reading the data."""

    source: object
    plan: object
    output: str
    ref: object
    max_bin: int
    max_categories: object
    backend: str
    compression: object
    overwrite: bool
    quiet: bool
    build_params: dict
    source_fp: dict
    deferred: bool
    #: The source opened again with the given text columns read as numbers (None: it
    #: cannot be read twice, a one-shot stream).
    reopen: object = None
    #: Feature name -> thresholds the edges must include (split_points.py), or None.
    split_points: object = None

    @property
    def target_stats(self):
        """The ordered-TS options (a dict) or None for native categories."""
        return self.build_params.get("cat_encoding")

    @property
    def sparse(self):
        """``(enable_sparse, sparse_threshold)``."""
        b = self.build_params.get("sparse")
        return SPARSE_DEFAULTS if b is None else (b["enable_sparse"], b["sparse_threshold"])

    @property
    def bundle(self):
        """``(enable_bundle, max_conflict_rate)``."""
        b = self.build_params.get("bundle")
        return BUNDLE_DEFAULTS if b is None else (b["enable_bundle"], b["max_conflict_rate"])


def _build(job):
    """Both passes and the commit. Returns an up-to-date cache found once a stream's
    fingerprint is known, else None (the new cache is at ``job.output``)."""
    t0 = time.perf_counter()
    parent = os.path.dirname(os.path.abspath(job.output))
    os.makedirs(parent, exist_ok=True)
    source = job.source
    spool = None
    try:
        if job.ref is None:
            # Files and streams are read once: pass 2 reads the parsed spool. In-memory
            # data is simply sliced again.
            if job.source_fp.get("kind") != "memory":
                spool = Spool(parent)
            pass1 = _sketch_pass(job, spool)
            numbers = [n for n, share in pass1.number_share.items() if share.mostly_numbers]
            if numbers and job.reopen is not None:
                # read as categories from the first batch, mostly numbers over the pass:
                # numbers with stray text (numeric_text.py); pass 1 again, so read
                warnings.warn(f"{source.name}: {', '.join(map(repr, numbers))}: read as "
                              f"categories from the first block, but most values are "
                              f"numbers: reading them as numbers (a first pass again)",
                              UserWarning, stacklevel=4)
                source = job.source = job.reopen(numbers)
                if spool is not None:
                    spool.remove()
                    spool = Spool(parent)
                pass1 = _sketch_pass(job, spool)
            if job.deferred:
                job.source_fp = source.fingerprint()
                existing = reusable(job.output,
                                    fingerprint_of(job.source_fp, job.build_params),
                                    job.overwrite, job.quiet)
                if existing is not None:
                    return existing
            mapper = fit_with_target_stats(
                BinMapper, source.feature_names, source.feature_kinds, pass1,
                max_bin=job.max_bin, max_categories=job.max_categories)
            if job.split_points:
                mapper = with_split_points(mapper, job.split_points)
            bundles = None if pass1.nonzero is None else find_bundles(
                mapper, pass1.nonzero, pass1.n_missing, job.bundle[1])
            # The sketches are done once the edges exist: keep their summary figures
            # and free them before pass 2 (they were the largest part of pass 1).
            pass1.freeze()
            warn_folded(mapper, pass1, job.max_categories, source.name)
            second_pass = spool.batches if spool is not None else source.batches
            stats, n_rows_expected = pass1, pass1.n_rows
        else:
            mapper, second_pass, n_rows_expected = job.ref.bin_mapper, source.batches, None
            bundles = None
            # With a reference there is one pass: count missing values while binning.
            stats = FirstPass(source, job.max_bin, job.max_categories, sketches=False,
                           ranges=_reference_ranges(job.ref))
        return _bin_pass(job, mapper, bundles, second_pass, stats, n_rows_expected, t0,
                         time.perf_counter() - t0)
    except OSError as exc:
        # The spool (beside the output) or the blocks could not be written: a full disk
        # is the user's to fix, not a traceback.
        if exc.errno in SPACE_ERRNOS and not isinstance(exc, OocboostError):
            raise OutputError(describe_write_error(job.output, exc)) from exc
        raise
    finally:
        if spool is not None:
            spool.remove()


def _reference_ranges(ref):
    """(min, max) of each numeric feature the reference cache was sketched on."""
    out = {}
    for feat in ref.manifest.get("features") or []:
        lo, hi = feat.get("min"), feat.get("max")
        if feat.get("type") == "numeric" and isinstance(lo, (int, float)) \
                and isinstance(hi, (int, float)):
            out[feat["name"]] = (float(lo), float(hi))
    return out


def _sketch_pass(job, spool):
    """Pass 1: sketch every column (on a second thread for text) and fill the spool."""
    source = job.source
    ts = job.target_stats
    pass1 = FirstPass(source, job.max_bin, job.max_categories,
                   sketch_bytes=job.plan.sketch_bytes_per_column,
                   target_stats=None if ts is None else OrderedTargetStats(
                       [n for n, k in zip(source.feature_names, source.feature_kinds)
                        if k == "categorical"], table_bytes=job.plan.sketch_bytes_per_column,
                       max_categories=job.max_categories,
                       **{k: v for k, v in ts.items() if k != "encoding"}),
                   nonzero=NonzeroSample([n for n, k in zip(source.feature_names,
                                                            source.feature_kinds)
                                          if k == "numeric"],
                                         NonzeroSample.rows_for(
                                             job.plan.sketch_bytes_per_column))
                   if job.bundle[0] else None)
    with ProgressBar(unit="rows", desc="pass 1/2: sketch",
                     enabled=False if job.quiet else None) as bar, \
            InOrderWorker(_sketch_and_spool(pass1, spool), threaded=_is_text(source),
                          name="oocboost-pass1") as sketcher:
        for batch in source.batches():
            interrupt.check()
            sketcher.submit(batch)
            bar.update(batch.n_rows)
    if spool is not None:
        spool.close_writer()
    if pass1.n_rows == 0:
        raise SchemaError(f"{source.name}: no data rows")
    return pass1


def _sketch_and_spool(pass1, spool):
    """Pass 1's work on a batch, off the parsing thread: sketch it, then spool it. (The
    spool's writes in the parsing thread were 0.7-1.1 s of a 4M-row CSV's pass 1 that the
    parse waited for.)"""
    if spool is None:
        return pass1.update

    def work(batch):
        pass1.update(batch)
        spool.write(batch)
    return work


def _bin_pass(job, mapper, bundles, second_pass, stats, n_rows_expected, t0, t_pass1):
    """Pass 2: bin every batch into blocks, then commit the manifest. Returns an
    up-to-date cache found once a stream's fingerprint is known, else None."""
    from .store import CacheWriter

    source = job.source
    n_features = mapper.n_features   # the source's columns and derived features
    n_columns = n_features if bundles is None else bundles.n_columns
    has_label = source.label_name is not None
    has_weight = source.weight_name is not None
    n_label_columns = _n_label_columns(source)
    margin_columns = column_names(source.base_margin_name) or None
    counts = stats if job.ref is not None else None
    n_rows = 0
    with CacheWriter(job.output, backend=job.backend, compression=job.compression,
                     n_features=n_features, codes_dtype=mapper.codes_dtype,
                     has_label=has_label, has_weight=has_weight,
                     overwrite=job.overwrite, n_label_columns=n_label_columns,
                     n_columns=None if bundles is None else n_columns,
                     base_margin_columns=margin_columns,
                     **_sparse_layout(job, mapper, bundles)) as writer:
        assembler = BlockAssembler(writer, n_columns, job.plan.block_rows,
                                   mapper.codes_dtype, has_label, has_weight,
                                   n_label_columns, len(margin_columns or ()))
        runs = None if source.group_name is None else GroupRuns(source.name,
                                                                 source.group_name)
        desc = "pass 2/2: bin" if job.ref is None else "bin (reference edges)"
        with ProgressBar(total=n_rows_expected, unit="rows", desc=desc,
                         enabled=False if job.quiet else None) as bar:
            ts = getattr(stats, "target_stats", None) if job.ref is None else None
            for batch in second_pass():
                interrupt.check()
                codes = mapper.transform_batch(batch if ts is None
                                               else ts.with_statistics(batch, mapper))
                if counts is not None:
                    counts.update(batch)
                assembler.add(codes if bundles is None else bundles.encode(codes),
                              batch.label, batch.weight, batch.base_margin)
                if runs is not None:
                    runs.update(batch.group, n_rows)
                n_rows += batch.n_rows
                bar.update(batch.n_rows)
            assembler.flush()
        if runs is not None:
            writer.write_groups(runs.group_ptr(n_rows), source.group_name)
        if n_rows == 0:
            raise SchemaError(f"{source.name}: no data rows")
        if job.deferred and job.ref is not None:
            job.source_fp = source.fingerprint()
            existing = reusable(job.output, fingerprint_of(job.source_fp, job.build_params),
                                 job.overwrite, job.quiet)
            if existing is not None:
                return existing  # leaving the with block discards this build
        manifest = {
            "features": feature_summary(mapper, stats),
            "max_bin": int(job.max_bin),
            "bin_mapper": mapper.to_dict(),
            "label": source.label_name, "weight": source.weight_name,
            "label_stats": label_stats_dict(stats.label_stats) if has_label else None,
            "weight_stats": stats.weight_stats.to_dict() if has_weight else None,
            "source": {"name": source.name, "fingerprint": job.source_fp,
                       "n_bad_rows": int(getattr(source, "n_bad_rows", 0) or 0),
                       **({} if not getattr(source, "n_bad_values", None) else
                          {"n_bad_values": {str(k): int(v) for k, v in
                                            source.n_bad_values.items()}}),
                       **({} if getattr(source, "delimiter", None) is None else
                          {"delimiter": source.delimiter, "header": source.header}),
                       **({} if getattr(source, "zero_based", None) is None else
                          {"svmlight": {"zero_based": source.zero_based,
                                        "absent_as_missing": source.absent_as_missing,
                                        "n_features_in_file":
                                            source.n_features_in_file}})},
            "build_params": job.build_params,
            "fingerprint": {"sha256": fingerprint_of(job.source_fp, job.build_params)},
            "reference": None if job.ref is None else os.path.abspath(job.ref.path),
            "build_seconds": {"pass1": t_pass1, "total": time.perf_counter() - t0},
            **({} if bundles is None else
               {"bundles": bundles.to_dict(mapper.feature_names)}),
        }
        # The last chance to honour a Ctrl-C that a numba compile swallowed.
        interrupt.check()
        writer.commit(manifest)
    return None


def _sparse_layout(job, mapper, bundles):
    """The writer's ``sparse_implied`` (None when sparse columns are off or the backend
    cannot store them: HDF5) and ``sparse_threshold``."""
    enable_sparse, threshold = job.sparse
    implied = None
    if enable_sparse and job.backend == "arrow":
        absent_as_missing = bool(getattr(job.source, "absent_as_missing", False))
        implied = implied_codes(mapper, bundles, absent_as_missing)
    return {"sparse_implied": implied, "sparse_threshold": threshold}


def _n_label_columns(source):
    """Columns of the label: a list of names, or an in-memory (n, k) array."""
    name = source.label_name
    if name is None:
        return 1
    if not isinstance(name, str):
        return len(name)
    array = getattr(source, "_arrays", {}).get("label")
    return 1 if array is None or array.ndim == 1 else array.shape[1]
