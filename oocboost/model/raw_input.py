"""The rows a model reads from raw data: which of its features are columns of the data
(derived ordered-TS features are computed from them), opening a file, frame or array
for those columns, and each batch as the predictor's (n_rows, n_features) float64
matrix, categories as codes and ordered-TS features as their statistics."""
import numpy as np

from ..cache.binning import BinMapper
from ..common import X_DTYPE
from ..errors import ParameterError, SchemaError
from ..utils.log import get_logger

logger = get_logger(__name__)


#: Rows predicted at once from an in-memory matrix (bounds the float64 copy).
MATRIX_CHUNK_ROWS = 1 << 18


def _is_plain_matrix(model, data):
    """A 2-D numeric NumPy array with the model's column count and no categorical
    features (categories would need their string-to-code mapping)."""
    return (isinstance(data, np.ndarray) and data.ndim == 2
            and data.dtype.kind in "fiub" and data.shape[1] == model.n_features
            and not set(model.feature_types) & set(_TEXT_TYPES))


#: Feature types whose raw values are strings (categories).
_TEXT_TYPES = ("categorical", "ordered_ts")


def _mapper(model):
    return BinMapper.from_dict(model.bin_mapper) if model.bin_mapper else None


def input_names(model):
    """The model's features read from the data, in order: all but the derived ordered-TS
    features (per class, pairs of columns), which are computed from those columns."""
    features = (model.bin_mapper or {}).get("features") or []
    derived = {feat.get("name") for feat in features
               if "sources" in (feat.get("encoder") or {})}
    return [name for name in model.feature_names if name not in derived]


def raw_matrix(model, batch, mapper):
    """(n_rows, n_features) float64 of a batch's model features; categories as codes,
    ordered-TS features as their statistics (derived ones from their columns)."""
    X = np.empty((batch.n_rows, model.n_features), dtype=X_DTYPE)
    for f, name in enumerate(model.feature_names):
        if mapper is not None and "sources" in (mapper.encoders[f] or {}):
            X[:, f] = mapper.encode_from_columns(f, batch.categorical)
        elif name in batch.numeric:
            if model.feature_types[f] in _TEXT_TYPES:
                raise SchemaError(f"column {name!r} is numeric in the data but categorical "
                                  f"in the model")
            X[:, f] = batch.numeric[name]
        elif name in batch.categorical:
            if mapper is None or model.feature_types[f] not in _TEXT_TYPES:
                raise SchemaError(f"column {name!r} holds text but is numeric in the model")
            X[:, f] = mapper.encode_categories(f, batch.categorical[name])
        else:
            raise SchemaError(f"the data has no column {name!r} that the model needs")
    return X


def raw_matrices(model, data, read_options=None):
    """``data``'s rows as the raw-data predictor reads them, a block at a time:
    (n_rows, n_features) float64, categories as codes (:func:`raw_matrix`)."""
    if _is_plain_matrix(model, data):
        for start in range(0, data.shape[0], MATRIX_CHUNK_ROWS):
            yield np.asarray(data[start:start + MATRIX_CHUNK_ROWS], dtype=X_DTYPE)
        return
    mapper = _mapper(model)
    for batch in _open_for_model(model, data, read_options=read_options).batches():
        yield raw_matrix(model, batch, mapper)


def applies_base_margin(model):
    """Whether per-row base margins (offsets) apply to ``model``: gradient boosting's
    margins, which training started from them. Other learners' models ignore them."""
    return model.learner == "gbtree" and model.aggregation == "sum"


def _offset_columns(model, read_options, columns, side_file=None):
    """The base margin column(s) a file's rows carry for ``model``: given in
    ``read_options``, else those the model was trained with when the file has them
    (``side_file``: the name of the offsets its ``FILE.init`` gives, which the reader
    attaches itself)."""
    from ..cache.ingest.text_layout import by_position

    given = read_options.pop("base_margin", None)
    if not applies_base_margin(model):
        if given is not None:
            raise ParameterError(f"base_margin applies to gradient boosting models; this "
                                 f"model's learner is {model.learner!r}")
        return None
    if given is not None:
        return by_position([given] if isinstance(given, str) else list(given), columns)
    trained = (model.attributes or {}).get("base_margin")
    if trained and all(c in columns for c in trained):
        return list(trained)
    if trained and side_file is None:
        logger.warning("the model was trained with per-row base margins (%s) that the data "
                       "does not have: its constant base margin is used instead",
                       ", ".join(trained))
    return None


def _open_for_model(model, data, label=None, group=None, read_options=None):
    """An ingest Source reading the model's features (and ``label``, ``group``, the base
    margin) from ``data``; ``read_options``: how a CSV file is read (``delimiter``,
    ``header``, ``names``: :func:`oocboost.cache.ingest.open_source`) and
    ``base_margin``, the offset column(s)."""
    from ..cache.ingest import open_source
    from ..cache.ingest.text_layout import by_position

    read_options = dict(read_options or {})
    offsets_given = read_options.get("base_margin")
    inputs = input_names(model)
    kinds = dict(zip(model.feature_names, model.feature_types))
    cats = [n for n in inputs if kinds[n] in _TEXT_TYPES]
    if isinstance(data, np.ndarray):
        # An array has no column names: its columns are the model's by position, so a
        # different count can only be a mistake (DataFrames and files match by name).
        if data.ndim != 2 or data.shape[1] != len(inputs):
            has = f"{data.shape[1]} columns" if data.ndim == 2 else f"shape {data.shape}"
            raise SchemaError(f"X has {has}; the model was trained on {len(inputs)} "
                              f"features ({', '.join(inputs[:3])}, ...)")
        if offsets_given is not None:
            raise ParameterError("for an array, base_margin is an array of offsets, not "
                                 "column names")
        return open_source(data, categorical=None, feature_names=inputs)
    probe = open_source(data, categorical="auto",
                        **{k: v for k, v in read_options.items() if k != "base_margin"})
    if getattr(probe, "n_features_in_file", None) is not None:
        # svmlight: features by index, the label its own; onto the model's features
        if probe.n_features_in_file > model.n_features:
            raise SchemaError(f"{probe.name} has feature index {probe.n_features_in_file - 1}"
                              f" ({'zero' if probe.zero_based else 'one'}-based); the model "
                              f"has {model.n_features} features")
        _offset_columns(model, read_options, [], probe.base_margin_name)
        source = open_source(data, **{**read_options, "n_features": model.n_features,
                                      "zero_based": probe.zero_based})
        return source if applies_base_margin(model) else _without_offsets(source)
    columns = list(probe.feature_names)
    offsets = _offset_columns(model, read_options, columns, probe.base_margin_name)
    # a headerless file's roles may be 0-based positions (as at build-cache)
    label, group = by_position(label, columns), by_position(group, columns)
    labels = [label] if isinstance(label, str) else list(label or ())
    wanted = set(inputs) | set(labels) | ({group} if group else set()) \
        | set(offsets or ())
    missing = [n for n in inputs if n not in columns]
    if missing:
        raise SchemaError(f"{probe.name} lacks the model's feature columns {missing}")
    for role, names in (("label", labels), ("query group", [group] if group else []),
                        ("base margin", offsets or [])):
        for name in names:
            if name not in columns:
                raise SchemaError(f"{probe.name} has no {role} column {name!r}")
    drop = [c for c in probe.feature_names if c not in wanted]
    source = open_source(data, label=label, group=group, drop=drop, categorical=cats or None,
                         base_margin=offsets, **read_options)
    return source if applies_base_margin(model) else _without_offsets(source)


def _without_offsets(source):
    """``source`` whose batches carry no base margin (a side file's, for a model that
    does not use them)."""
    source.base_margin_name = None
    return source
