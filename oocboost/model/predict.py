"""Prediction over raw data, caches and files, streamed block by block.

- In memory: ``predict(model, X)`` for NumPy, pandas and pyarrow input.
- A cache: blocks are predicted from their bin codes (``bin_threshold``), so the cache must
  have been binned with the model's edges (the training cache, or one built with
  ``reference=``).
- A file (CSV, Parquet, Arrow): streamed through ``ingest`` in batches; only the model's
  features are read, in the model's order, extra columns ignored.
"""
import os

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv

from ..cache.groups import GroupRuns
from ..cache.ingest.memory import is_scipy_sparse, sparse_chunk_rows
from ..common import X_DTYPE
from ..errors import ModelError, ParameterError, SchemaError
from ..utils.files import atomic_output
from ..utils.log import get_logger
from .aggregate import (
    combines_trees,
    is_weighted_median,
    median_of_trees,
    round_weights,
    sum_view,
    weighted_median,
)
from .metrics import get_metric
from .objective_of import model_objective
from .raw_input import (
    _TEXT_TYPES,
    MATRIX_CHUNK_ROWS,
    _is_plain_matrix,
    _mapper,
    _open_for_model,
    applies_base_margin,
    raw_matrix,
)
from .serving import serving_predict
from .tree import binned_leaves

logger = get_logger(__name__)


def output_plan(model):
    """``(margin_model, transform)``: what to traverse and how to turn its margins into
    predictions. For most models the model itself and the objective's transform; for
    AdaBoost.R2 one output per tree and their weighted median."""
    if is_weighted_median(model):
        weights = round_weights(model)
        return (sum_view(model, per_tree=True),
                lambda margins: weighted_median(np.ascontiguousarray(margins), weights))
    if model.aggregation == "median":
        return sum_view(model, per_tree=True), median_of_trees
    return model, model_objective(model).transform


def median_range(model, iteration_range):
    """``(model, iteration_range)`` with a median model cut to its range first: its
    median is over the trees in the range only."""
    if model.aggregation != "median" or iteration_range is None:
        return model, iteration_range
    t0, t1 = model._tree_range(iteration_range)
    per_round = int(model.trees_per_round)
    return model.slice_rounds(t0 // per_round, t1 // per_round), None


def _is_cache_path(data):
    from ..cache.store import Cache

    return isinstance(data, Cache) or (
        isinstance(data, (str, os.PathLike)) and os.path.isdir(data)
        and os.path.exists(os.path.join(data, "manifest.json")))


def with_offsets(model, out, offsets, kind="margin"):
    """``out`` (a block's margins, or contributions whose last entry is the bias) with
    each row's base margin ``offsets`` ``(n_rows, n_outputs)`` in place of the model's
    constant one, as XGBoost's ``base_margin``; ``out`` itself when there are none or
    ``kind`` is ``"leaf"``."""
    if offsets is None or kind == "leaf":
        return out
    offsets = np.asarray(offsets, dtype=np.float64).reshape(len(offsets), -1)
    if offsets.shape[1] != int(model.n_outputs):
        raise ParameterError(f"base_margin has {offsets.shape[1]} column(s); the model has "
                             f"{int(model.n_outputs)} outputs: give (n_rows, n_outputs) "
                             f"offsets")
    shift = offsets - np.asarray(model.base_margin, dtype=np.float64)[None, :]
    out = np.array(out, dtype=np.float64)
    if kind == "margin":
        out += shift
    elif kind == "contribs":   # (n, n_outputs, n_features + 1): the bias is the last
        out[:, :, -1] += shift
    else:                      # interactions: the bias is the last diagonal entry
        out[:, :, -1, -1] += shift
    return out


def iter_margins(model, data, *, iteration_range=None, label=None, pred_leaf=False,
                 pred_contribs=False, pred_interactions=False, group=None,
                 read_options=None, base_margin=None):
    """Yield ``(margins, labels, weights)`` per block of ``data``; leaf indices instead of
    margins with ``pred_leaf``, SHAP values (:meth:`Model.predict_contributions`) with
    ``pred_contribs``, their interaction values with ``pred_interactions``.

    Parameters
    ----------
    data : Cache, cache path, file path, or in-memory table/array
    label : str or None
        Label column to read along (files only; caches bring their own).
    group : str or None
        Query group column of a file: each item then has a fourth entry, the group ids
        (caches keep their groups: ``Cache.group_ptr``).
    base_margin : array-like (n_rows,) or (n_rows, n_outputs), optional
        Each row's offset, in place of the model's constant base margin (XGBoost's
        ``base_margin``); without it, a cache's or file's own base margins are used.
    """
    kind = ("leaf" if pred_leaf else "contribs" if pred_contribs else
            "interactions" if pred_interactions else "margin")
    offsets = _Offsets(model, base_margin, _known_rows(data))
    for item in _iter_raw(model, data, iteration_range, label, pred_leaf, pred_contribs,
                          pred_interactions, group, read_options):
        out, given = item[0], item[-1]
        yield (with_offsets(model, out, offsets.next(len(out), given), kind),) + item[1:-1]
    offsets.finish()


class _Offsets:
    """The rows' base margins to add, block after block: the caller's array, sliced in
    order, or each block's own (a cache's, a file's column or ``.init``)."""

    def __init__(self, model, base_margin, n_rows=None):
        self.applies = applies_base_margin(model)
        if base_margin is not None and not self.applies:
            raise ParameterError(f"base_margin applies to gradient boosting models; this "
                                 f"model's learner is {model.learner!r}")
        self.values = None
        if base_margin is not None:
            values = np.asarray(base_margin, dtype=np.float64)
            if values.ndim not in (1, 2) or not np.all(np.isfinite(values)):
                raise ParameterError(f"base_margin must be a finite (n_rows,) or (n_rows, "
                                     f"n_outputs) array, got shape {values.shape}")
            self.values = values.reshape(len(values), -1)
            if n_rows is not None and len(values) != n_rows:
                raise ParameterError(f"base_margin has {len(values)} rows; the data has "
                                     f"{n_rows}")
        self.done = 0

    def next(self, n_rows, own):
        if self.values is None:
            return own if self.applies else None
        start, self.done = self.done, self.done + n_rows
        if self.done > len(self.values):
            raise ParameterError(f"base_margin has {len(self.values)} rows; the data has "
                                 f"more")
        return self.values[start:self.done]

    def finish(self):
        if self.values is not None and self.done != len(self.values):
            raise ParameterError(f"base_margin has {len(self.values)} rows; the data has "
                                 f"{self.done}")


def _known_rows(data):
    """Rows of in-memory data or a cache (None for a file: known once read)."""
    from ..cache.store import Cache

    if isinstance(data, Cache):
        return data.n_rows
    shape = getattr(data, "shape", None)
    if shape is not None and len(shape) == 2:
        return int(shape[0])
    return getattr(data, "num_rows", None)


def _iter_raw(model, data, iteration_range, label, pred_leaf, pred_contribs,
              pred_interactions, group, read_options):
    """:func:`iter_margins`' items before offsets, each with the block's own base
    margins (or None) as its last entry."""
    from ..cache.store import Cache

    if _is_cache_path(data):
        cache = data if isinstance(data, Cache) else Cache(data)
        if model.bin_mapper is None:
            # Without the training edges, bin codes are read through the cache's: exact
            # when every threshold is one of its edges (built with split_points=model)
            try:
                model = model.on_bin_edges(cache.manifest.get("bin_mapper") or {})
            except ModelError as exc:
                raise SchemaError(f"the model has no bin edges (bin_mapper null) and "
                                  f"cache {cache.path}'s do not hold its splits ({exc}); "
                                  f"predict from the raw file, or build the cache with "
                                  f"split_points=model") from None
        if cache.manifest.get("bin_mapper") != model.bin_mapper:
            raise SchemaError(f"cache {cache.path} was binned with other edges than the "
                              f"model's training data; predict from the raw file instead, "
                              f"or rebuild the cache with --reference")
        trees = _routable_trees(model, iteration_range) if pred_leaf else None
        for block in cache.iter_blocks(prefetch=1):
            if pred_leaf:
                leaves = binned_leaves(trees, block.codes, cache.max_bin - 1)
                yield (np.ascontiguousarray(leaves.T), block.label, block.weight,
                       block.base_margin)
                continue
            if pred_contribs or pred_interactions:
                for lo, hi in _contribution_pieces(model, block.codes.shape[1],
                                                   pred_interactions):
                    out = model.predict_contributions_binned(
                        block.codes[:, lo:hi], cache.max_bin - 1,
                        iteration_range=iteration_range, interactions=pred_interactions)
                    yield (_contribution_layout(model, out),) + _rows_of(
                        (block.label, block.weight, block.base_margin), lo, hi)
                continue
            yield (model.predict_margin_binned(block.codes, cache.max_bin - 1,
                                               iteration_range=iteration_range),
                   block.label, block.weight, block.base_margin)
        return
    if _is_plain_matrix(model, data):
        # A numeric matrix already is what the predictor reads: skip the record-batch
        # layer (it halved throughput), one chunk of rows at a time.
        step = MATRIX_CHUNK_ROWS
        if pred_contribs or pred_interactions:
            step = _contribution_pieces(model, step, pred_interactions)[0][1]
        for start in range(0, data.shape[0], step):
            X = data[start:start + step]
            # float32 rows go as they are (the model converts what it cannot read)
            X = X if X.dtype == np.float32 else np.asarray(X, dtype=X_DTYPE)
            yield (_raw_output(model, X, iteration_range, pred_leaf, pred_contribs,
                               pred_interactions), None, None, None)
        return
    if is_scipy_sparse(data):
        yield from _sparse_margins(model, data, iteration_range, pred_leaf, pred_contribs,
                                   pred_interactions)
        return
    mapper = _mapper(model)
    source = _open_for_model(model, data, label=label, group=group,
                             read_options=read_options)
    for batch in source.batches():
        X = raw_matrix(model, batch, mapper)
        along = (batch.label, batch.weight) + (() if group is None else (batch.group,)) \
            + (batch.base_margin,)
        pieces = ([(0, X.shape[0])] if not (pred_contribs or pred_interactions) else
                  _contribution_pieces(model, X.shape[0], pred_interactions))
        for lo, hi in pieces:
            yield (_raw_output(model, X[lo:hi], iteration_range, pred_leaf, pred_contribs,
                               pred_interactions),) + _rows_of(along, lo, hi)


#: Bytes of SHAP values (or interaction values) computed at once when they are streamed
#: (files, caches, large arrays): a 65,536-row block of interaction values of 28
#: features is 441 MB, of 100 features 5.3 GB.
CONTRIBUTION_PIECE_BYTES = 32 << 20


def _contribution_pieces(model, n_rows, interactions):
    """``(lo, hi)`` row ranges of ``0 .. n_rows`` whose SHAP values (interaction
    values) fit :data:`CONTRIBUTION_PIECE_BYTES`."""
    width = model.n_features + 1
    row_bytes = 8 * int(model.n_outputs) * width * (width if interactions else 1)
    step = max(1, CONTRIBUTION_PIECE_BYTES // row_bytes)
    return [(lo, min(lo + step, n_rows)) for lo in range(0, max(n_rows, 1), step)]


def _rows_of(arrays, lo, hi):
    """Rows ``lo .. hi - 1`` of each per-row array (None stays None)."""
    return tuple(None if a is None else a[lo:hi] for a in arrays)


def _routable_trees(model, iteration_range):
    """The trees of ``iteration_range``, when bin codes reach their leaves
    (``tree.binned_leaves``: axis-aligned splits, no surrogates, a tree each node of
    which has one parent); else ParameterError pointing to the raw data."""
    from ..kernels.predict import is_plain

    t0, t1 = model._tree_range(iteration_range)
    trees = model.trees[t0:t1]
    if not (trees and is_plain(model._flat_trees())):
        raise ParameterError("this model's leaf indices are computed from raw data (its "
                             "trees have oblique or surrogate splits, or shared nodes): "
                             "pass the source file instead of the cache")
    return trees


def _sparse_margins(model, X, iteration_range, pred_leaf, pred_contribs,
                    pred_interactions):
    """A SciPy sparse matrix's rows (absent entries 0.0): margins walked over its CSR
    rows as they are (``kernels/predict_csr.py``), or, for leaves, contributions and
    models that read dense rows, densified a block at a time."""
    if X.ndim != 2 or X.shape[1] != model.n_features:
        raise SchemaError(f"the sparse matrix has shape {X.shape}; the model expects "
                          f"(n_rows, {model.n_features})")
    if set(model.feature_types) & set(_TEXT_TYPES):
        raise SchemaError("the model has categorical features, whose values are strings: "
                          "a sparse matrix of numbers cannot hold them")
    X = X.tocsr()
    if not (pred_leaf or pred_contribs or pred_interactions) and model.walks_csr():
        if not X.has_canonical_format:    # sorted indices, duplicates summed
            X = X.copy()
            X.sum_duplicates()
        for start in range(0, X.shape[0], MATRIX_CHUNK_ROWS):
            yield (model.predict_margin_csr(X[start:start + MATRIX_CHUNK_ROWS],
                                            iteration_range=iteration_range),
                   None, None, None)
        return
    rows = sparse_chunk_rows(X.shape[1], MATRIX_CHUNK_ROWS)
    if pred_contribs or pred_interactions:
        rows = min(rows, _contribution_pieces(model, rows, pred_interactions)[0][1])
    for start in range(0, X.shape[0], rows):
        block = X[start:start + rows].toarray().astype(X_DTYPE, copy=False)
        yield (_raw_output(model, block, iteration_range, pred_leaf, pred_contribs,
                           pred_interactions), None, None, None)


def _raw_output(model, X, iteration_range, pred_leaf, pred_contribs, pred_interactions):
    if pred_leaf:
        return model.predict_leaf(X, iteration_range=iteration_range)
    if pred_contribs or pred_interactions:
        out = model.predict_contributions(X, iteration_range=iteration_range,
                                          interactions=pred_interactions)
        return _contribution_layout(model, out)
    return model.predict_margin(X, iteration_range=iteration_range)


def _contribution_layout(model, out):
    """(rows, n_outputs, n_features + 1[, n_features + 1]) whatever the outputs, for
    concatenation across blocks."""
    return out[:, None] if int(model.n_outputs) == 1 else out


def predict(model, data, *, output_margin=False, iteration_range=None, pred_leaf=False,
            pred_contribs=False, pred_interactions=False, base_margin=None, quantiles=None):
    """Predictions for in-memory data, a cache or a file, concatenated in memory.

    Returns
    -------
    ndarray
        (n_rows,) for single-output objectives, (n_rows, K) probabilities for
        ``multi:softprob``, margins when ``output_margin``, int32 leaves when ``pred_leaf``,
        SHAP values of the margin when ``pred_contribs`` ((n_rows, n_features + 1), or
        (n_rows, n_outputs, n_features + 1) for several outputs); ``pred_interactions``
        the interaction values, one more trailing axis of n_features + 1; with
        ``quantiles`` (levels in [0, 1]) a quantile regression forest's conditional
        quantiles of the label, (n_rows, n_levels) (``model/leaf_samples.py``).
    """
    if type(data) is np.ndarray and not (pred_leaf or pred_contribs or pred_interactions) \
            and base_margin is None and quantiles is None:
        # a few rows of numbers, as serving asks
        out = serving_predict(model, data, output_margin, iteration_range)
        if out is not None:
            return out
    if quantiles is not None:
        from .leaf_samples import check_quantiles, quantile_transform

        transform = quantile_transform(model, quantiles, iteration_range)
        parts = [transform(m) for m, _, _ in iter_margins(
            model, data, iteration_range=iteration_range, pred_leaf=True)]
        return np.concatenate(parts) if parts else \
            np.empty((0, check_quantiles(quantiles).size))
    contributions = pred_contribs or pred_interactions
    model, iteration_range = median_range(model, iteration_range)
    if pred_leaf or output_margin or contributions:
        margin_model, transform = model, None
    else:
        margin_model, transform = output_plan(model)
    if (base_margin is None and not (pred_leaf or contributions)
            and _is_plain_matrix(margin_model, data) and len(data) <= MATRIX_CHUNK_ROWS):
        # a few rows of numbers (online serving): straight to the predictor, without
        # the blocks' generators and offsets (half of a one-row call)
        X = data if data.dtype == np.float32 else np.asarray(data, dtype=X_DTYPE)
        out = margin_model.predict_margin(X, iteration_range=iteration_range)
        return out if transform is None else transform(out)
    parts = [m for m, _, _ in iter_margins(margin_model, data,
                                           iteration_range=iteration_range,
                                           pred_leaf=pred_leaf, pred_contribs=pred_contribs,
                                           pred_interactions=pred_interactions,
                                           base_margin=base_margin)]
    if not parts:
        out = np.empty((0, margin_model.n_outputs))
    elif len(parts) == 1:  # one in-memory matrix: no copy
        out = parts[0]
    else:
        out = np.concatenate(parts, axis=0)
    if contributions and out.shape[1] == 1:
        return out[:, 0]
    return out if transform is None else transform(out)


def _columns(model, values, output_margin, pred_leaf):
    if pred_leaf:
        return [f"leaf_{t}" for t in range(values.shape[1])]
    if values.ndim == 1:
        return ["margin_0" if output_margin else "prediction"]
    objective = model_objective(model)
    prefix = "margin" if output_margin else \
        ("prob" if objective.is_classification else "prediction")
    labels = (model.attributes or {}).get("label")
    if isinstance(labels, list) and len(labels) == values.shape[1]:
        return [f"{prefix}_{name}" for name in labels]  # one output per target column
    return [f"{prefix}_{k}" for k in range(values.shape[1])]


def _class_names(model):
    """The classes a classifier's probabilities are columns of (its ``classes``, else
    0..K-1), or None for a model that is not one classifier (regression, several
    targets, AdaBoost.R2)."""
    from .objectives.multi_target import MultiTarget

    objective = model_objective(model)
    if not objective.is_classification or isinstance(objective, MultiTarget) \
            or combines_trees(model):
        return None
    n_classes = int(model.n_classes or (2 if model.n_outputs == 1 else model.n_outputs))
    classes = list(model.classes) if model.classes is not None and \
        len(model.classes) == n_classes else list(range(n_classes))
    return classes


def _class_columns(classes, proba):
    """``prob_<class>`` columns and ``label`` (the most probable class) of ``(n, K)``
    probabilities."""
    proba = np.asarray(proba, dtype=np.float64).reshape(len(proba), -1)
    names = [f"prob_{c}" for c in classes] + ["label"]
    label = np.asarray(classes, dtype=object)[np.argmax(proba, axis=1)]
    label = label.astype(type(classes[0])) if isinstance(classes[0], (int, str)) else label
    return names, [proba[:, j] for j in range(proba.shape[1])] + [label]


def _contribution_columns(model, values):
    """Contributions (rows, n_outputs, n_features + 1) as named 2-D columns:
    ``contrib_<feature>`` and ``bias`` (``..._<output>`` for several outputs)."""
    names = [f"contrib_{n}" for n in model.feature_names] + ["bias"]
    n_out = values.shape[1]
    flat = values.reshape(len(values), -1)
    if n_out == 1:
        return names, flat
    return [f"{n}_{k}" for k in range(n_out) for n in names], flat


def predict_to_file(model, data, output, *, output_margin=False, pred_leaf=False,
                    iteration_range=None, pred_contribs=False, read_options=None,
                    base_margin=None, quantiles=None, progress=None):
    """Stream predictions of ``data`` into the CSV file ``output`` (written atomically).

    Memory: one batch of ``data`` (64K rows of a file, or one cache block) and its
    predictions at a time, whatever the size of ``data``. Base margins as in
    :func:`evaluate`.

    Columns, one schema for every learner: a classifier writes ``prob_<class>`` for every
    class (two for a binary one) and ``label`` (the most probable class); a regressor
    ``prediction``; ``output_margin`` ``margin_<k>`` (``margin_0`` for one output);
    ``pred_leaf`` ``leaf_<tree>``; ``pred_contribs`` the SHAP values,
    ``contrib_<feature>`` columns and ``bias``; ``quantiles`` (a quantile regression
    forest's levels) ``quantile_<level>``. A model of several targets keeps one column per
    target, named after its label column.

    ``progress``: a progress line of the rows written on stderr (None: when stderr is a
    terminal and ``OOCBOOST_QUIET`` is unset; ``utils.progress.ProgressBar``).

    Returns
    -------
    int
        Rows written.
    """
    from ..utils.progress import ProgressBar

    model, iteration_range = median_range(model, iteration_range)
    if quantiles is not None:
        from .leaf_samples import quantile_columns, quantile_transform

        margin_model, pred_leaf = model, True
        transform = quantile_transform(model, quantiles, iteration_range)
    elif pred_leaf or output_margin or pred_contribs:
        margin_model, transform = model, None
    else:
        margin_model, transform = output_plan(model)
    classes = _class_names(model) if transform is not None else None
    if classes is not None:
        transform = model_objective(model).transform_proba
    output = os.fspath(output)
    n_rows = 0
    writer = None
    with atomic_output(output) as tmp, ProgressBar(
            total=_known_rows(data), unit="rows", desc="predict", enabled=progress) as bar:
        try:
            for margins, _, _ in iter_margins(margin_model, data,
                                              iteration_range=iteration_range,
                                              pred_leaf=pred_leaf,
                                              pred_contribs=pred_contribs,
                                              read_options=read_options,
                                              base_margin=base_margin):
                values = margins if transform is None else transform(margins)
                if pred_contribs:
                    names, values = _contribution_columns(model, values)
                elif quantiles is not None:
                    names = quantile_columns(quantiles)
                elif classes is not None:
                    names, values = _class_columns(classes, values)
                else:
                    if values.ndim == 2 and values.shape[1] == 1 and not pred_leaf:
                        values = values[:, 0]
                    names = _columns(model, values, output_margin, pred_leaf)
                cols = values if isinstance(values, list) else [values] \
                    if values.ndim == 1 else [values[:, j] for j in range(values.shape[1])]
                table = pa.table({name: _arrow_column(col) for name, col in zip(names, cols)})
                if writer is None:
                    writer = pacsv.CSVWriter(tmp, table.schema)
                writer.write_table(table)
                n_rows += table.num_rows
                bar.update(table.num_rows)
            if writer is None:
                raise SchemaError(f"{data}: no rows to predict")
        finally:
            if writer is not None:
                writer.close()
    return n_rows


def default_iteration_range(model, iteration_range=None):
    """``iteration_range`` as given, else the rounds up to the best iteration of an
    early-stopped model (XGBoost's and LightGBM's default), else None (all rounds)."""
    if iteration_range is not None or getattr(model, "best_iteration", None) is None:
        return iteration_range
    return (0, int(model.best_iteration) + 1)


def evaluate(model, data, *, metrics=None, iteration_range=None, label=None, group=None,
             read_options=None, base_margin=None):
    """Metrics of ``model`` on labelled ``data`` (cache or file).

    Parameters
    ----------
    metrics : list of str or None
        Default: the objective's default metric.
    iteration_range : (int, int) or None
        Rounds ``[start, end)`` (``end`` 0: all). None: up to the best iteration when the
        model was early-stopped (as XGBoost's and LightGBM's predictions), else all.
    label : str or None
        Label column for files (default: the label the model was trained on).
    group : str or None
        Query group column for files, read by the ranking metrics (default: the one the
        model was trained with); a cache brings its own groups.
    base_margin : array-like or None
        Each row's offset (see :func:`iter_margins`); a cache's or file's own are used
        without it (``read_options["base_margin"]`` names a file's column).

    Returns
    -------
    dict[str, float]
    """
    objective = model_objective(model)
    names = list(metrics or [objective.default_metric])
    label = label or (model.attributes or {}).get("label")
    chosen = [get_metric(name, **objective.default_metric_params)
              if name == objective.default_metric else get_metric(name) for name in names]
    group_ptr, group = _groups_for(chosen, data, group or
                                   (model.attributes or {}).get("group"))
    model, iteration_range = median_range(model, default_iteration_range(model,
                                                                        iteration_range))
    margin_model, transform = output_plan(model)
    margins, labels, weights, runs = [], [], [], None
    if group is not None:
        runs = GroupRuns(str(data), group)
    n_rows = 0
    for m, y, w, *ids in iter_margins(margin_model, data, iteration_range=iteration_range,
                                      label=label, group=group, read_options=read_options,
                                      base_margin=base_margin):
        if y is None:
            raise ParameterError(f"{data} has no label column: cannot evaluate")
        if runs is not None:
            runs.update(ids[0], n_rows)
        n_rows += len(y)
        margins.append(m)
        labels.append(y)
        weights.append(w)
    if runs is not None:
        group_ptr = runs.group_ptr(n_rows)
    margin = np.concatenate(margins, axis=0)
    y = np.concatenate(labels)
    w = None if weights[0] is None else np.concatenate(weights)
    objective.check_labels(y, str(data))
    prediction = (transform(margin) if combines_trees(model)
                  else objective.eval_transform(margin))
    out = {}
    for metric in chosen:
        values = prediction
        if not metric.multiclass and values.ndim == 2 and values.shape[1] == 2 and \
                objective.name == "multi:proba":
            # two-class models that output both probabilities (forests, AdaBoost):
            # binary metrics take the positive class's
            values = values[:, 1]
        if getattr(metric, "needs_groups", False):
            out[metric.name] = float(metric(y, values, w, group_ptr=group_ptr))
        else:
            out[metric.name] = float(metric(y, values, w))
    return out


def _groups_for(metrics, data, group):
    """``(group_ptr of a cache, group column to read from a file)`` when a ranking
    metric needs query groups; refuses data without them."""
    from ..cache.store import Cache

    if not any(getattr(m, "needs_groups", False) for m in metrics):
        return None, None
    if _is_cache_path(data):
        cache = data if isinstance(data, Cache) else Cache(data)
        if cache.group_ptr is None:
            raise ParameterError(f"cache {cache.path} has no query groups, which the "
                                 f"ranking metrics need: build it with --group COLUMN")
        return cache.group_ptr, None
    if group is None:
        raise ParameterError(f"the ranking metrics need the query group of each row of "
                             f"{data}: pass group= (--group COLUMN)")
    return None, group


def _arrow_column(values):
    """A column of predictions as a pyarrow array: a numeric NumPy column wrapped as it is
    (its bytes become the array's data buffer; NaN stays NaN), anything else through
    ``pa.array``. ``pa.array`` of a NumPy array imports pandas when it is installed,
    0.2 s of every command that writes predictions."""
    if isinstance(values, np.ndarray) and values.ndim == 1 and values.dtype.kind in "iuf":
        values = np.ascontiguousarray(values)
        return pa.Array.from_buffers(pa.from_numpy_dtype(values.dtype), len(values),
                                     [None, pa.py_buffer(values)])
    return pa.array(values)
