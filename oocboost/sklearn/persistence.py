"""An estimator in a model file: ``est.save_model(path)`` writes the model JSON that
``Model.save_model`` writes (every CLI command reads it), with the estimator in the
model's ``attributes`` (its class, its JSON-representable parameters and fitted
attributes); ``Estimator.load_model(path)`` rebuilds the fitted estimator, from such a
file or from any model file (``classes_``, ``n_features_in_`` and ``feature_names_in_``
then come from the model).

The file is untrusted: every value read back is checked (types, dtypes, names) before it
becomes an attribute, and a file saved by another estimator class is refused naming it.
"""
from __future__ import annotations

import copy
import json
import os

import numpy as np

from ..errors import ModelError

#: Key of the estimator in ``Model.attributes``.
ESTIMATOR_KEY = "estimator"
#: Array dtypes a fitted attribute may have in a file (kinds: bool, ints, floats,
#: strings, and objects of strings / numbers).
_ARRAY_KINDS = "biufUO"
#: Fitted attributes the model itself holds (rebuilt from it, never from the file).
_FROM_MODEL = ("model_",)


def _json_value(value):
    """``value`` as JSON, or None when it has no faithful JSON form (skipped)."""
    if isinstance(value, np.ndarray):
        if value.dtype.kind not in _ARRAY_KINDS or value.dtype.kind == "O" and not all(
                isinstance(v, (str, int, float, bool)) for v in value.ravel()):
            return None
        return {"ndarray": value.tolist(), "dtype": value.dtype.str}
    if isinstance(value, np.generic):
        value = value.item()
    if value is None or isinstance(value, (bool, int, float, str)):
        return {"value": value}
    if isinstance(value, (dict, list, tuple)):
        try:
            json.dumps(value, allow_nan=True)
        except (TypeError, ValueError):
            return None
        return {"value": value}
    return None


def _from_json(where, name, encoded):
    if not isinstance(encoded, dict) or len(encoded) not in (1, 2):
        raise ModelError(f"{where}: fitted attribute {name!r} is not an encoded value")
    if "ndarray" not in encoded:
        if set(encoded) != {"value"}:
            raise ModelError(f"{where}: fitted attribute {name!r} is not an encoded value")
        return encoded["value"]
    dtype = encoded.get("dtype")
    try:
        dtype = np.dtype(dtype) if isinstance(dtype, str) else None
    except TypeError:
        dtype = None
    if dtype is None or dtype.kind not in _ARRAY_KINDS:
        raise ModelError(f"{where}: fitted attribute {name!r} has an invalid dtype "
                         f"{encoded.get('dtype')!r}")
    if not isinstance(encoded["ndarray"], list):
        raise ModelError(f"{where}: fitted attribute {name!r} is not a list")
    try:
        return np.array(encoded["ndarray"], dtype=dtype)
    except (TypeError, ValueError, OverflowError) as exc:
        raise ModelError(f"{where}: fitted attribute {name!r} does not hold "
                         f"{dtype}: {exc}") from None


def estimator_record(estimator) -> dict:
    """What :func:`save_estimator` writes of ``estimator``: class, parameters and fitted
    attributes, each that has a JSON form."""
    params = {k: v["value"] for k, v in ((k, _json_value(v)) for k, v in
                                         estimator.get_params(deep=False).items())
              if v is not None and "value" in v}
    fitted = {}
    for name, value in vars(estimator).items():
        if name.endswith("_") and not name.startswith("_") and name not in _FROM_MODEL:
            encoded = _json_value(value)
            if encoded is not None:
                fitted[name] = encoded
    return {"class": type(estimator).__name__, "params": params, "fitted": fitted}


def save_estimator(estimator, path: str | os.PathLike, **save_options) -> None:
    """Write ``estimator.model_`` as a model file with the estimator in its attributes
    (atomically, as ``Model.save_model``)."""
    estimator._check_fitted()
    model = copy.copy(estimator.model_)
    model.attributes = {**(model.attributes or {}),
                        ESTIMATOR_KEY: estimator_record(estimator)}
    model.save_model(path, **save_options)


def load_estimator(cls, path: str | os.PathLike, memory_limit=None):
    """A fitted ``cls`` from a model file (module docstring)."""
    from ..model.model import load_model

    model = load_model(path, memory_limit=memory_limit)
    where = f"model file {os.fspath(path)}"
    record = (model.attributes or {}).get(ESTIMATOR_KEY)
    if record is None:
        record = {"class": cls.__name__, "params": {}, "fitted": {}}
    if not isinstance(record, dict) or not all(
            isinstance(record.get(k), t) for k, t in
            (("class", str), ("params", dict), ("fitted", dict))):
        raise ModelError(f"{where}: attribute {ESTIMATOR_KEY!r} is not an estimator "
                         f"record (class, params, fitted)")
    if record["class"] != cls.__name__:
        raise ModelError(f"{where} holds a {record['class']}: load it with "
                         f"oocboost.{record['class']}.load_model")
    valid = cls().get_params(deep=False) if _constructible(cls) else {}
    params = {k: v for k, v in record["params"].items() if k in valid}
    estimator = cls(**params)
    estimator._adopt_model(model)
    for name, encoded in record["fitted"].items():
        if not (isinstance(name, str) and name.endswith("_") and name.isidentifier()
                and not name.startswith("_") and name not in _FROM_MODEL):
            raise ModelError(f"{where}: {name!r} is not a fitted attribute's name")
        if isinstance(getattr(cls, name, None), property):
            continue                     # computed from the model
        setattr(estimator, name, _from_json(where, name, encoded))
    _model_attributes(estimator, model)
    return estimator


def _constructible(cls):
    try:
        cls()
    except TypeError:
        return False
    return True


def _model_attributes(estimator, model):
    """The fitted attributes every estimator has, from the model when the file has not
    got them (a model written by ``Model.save_model`` or the CLI)."""
    if getattr(estimator, "_estimator_type", None) == "classifier" and \
            not hasattr(estimator, "classes_"):
        if not model.classes:
            raise ModelError(f"the model has no classes: it is not a "
                             f"{type(estimator).__name__}'s (load it with "
                             f"oocboost.load_model)")
        estimator.classes_ = np.asarray(model.classes)
    if hasattr(estimator, "classes_") and not hasattr(estimator, "n_classes_") and \
            not isinstance(getattr(type(estimator), "n_classes_", None), property):
        estimator.n_classes_ = len(estimator.classes_)
    if not hasattr(estimator, "n_features_in_"):
        estimator.n_features_in_ = model.n_features
    default = [f"f{j}" for j in range(model.n_features)]
    if not hasattr(estimator, "feature_names_in_") and list(model.feature_names) != default:
        estimator.feature_names_in_ = np.asarray(model.feature_names, dtype=object)


class class_or_instance_method:
    """A method bound to the class when called on it and to the instance when called on
    one: ``Estimator.load_model(path)`` returns a new estimator, and
    ``est.load_model(path)`` (XGBoost's and LightGBM's spelling) loads into ``est``."""

    def __init__(self, function):
        self.function = function
        self.__doc__ = function.__doc__

    def __get__(self, instance, owner):
        import functools

        bound = functools.partial(self.function, owner, instance)
        functools.update_wrapper(bound, self.function)
        return bound
