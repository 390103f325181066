"""Checked reading of foreign model files' fields (XGBoost's JSON, LightGBM's text): each
value is tested for type, length and finiteness before use, and refused with a
:class:`~oocboost.errors.ModelError` naming where it is, as ``model/fields.py`` does for
oocboost's own files; and a foreign tree's arrays made into a validated
:class:`~oocboost.model.tree.Tree`.
"""
from __future__ import annotations

import json

import numpy as np

from ...errors import ModelError
from ...kernels import shap as _ks
from ..tree import Tree

#: Nodes of one imported tree at most (a bound before arrays are allocated).
MAX_IMPORT_NODES = 1 << 24


def field(d: dict, key: str, kind: type, where: str):
    """``d[key]``, which must be a ``kind``."""
    value = d.get(key) if isinstance(d, dict) else None
    if not isinstance(value, kind):
        raise ModelError(f"{where}: {key!r} must be a {kind.__name__}, got "
                         f"{type(value).__name__}")
    return value


def string_number(value, where: str, keep_text: bool = False):
    """A number written as a number or as text (``"5E-1"``); an int when it is integral
    text; ``keep_text``: a text that is no number is returned as it is."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        number = value
    elif isinstance(value, str):
        try:
            number = int(value) if value.lstrip("+-").isdigit() else float(value)
        except ValueError:
            if keep_text:
                return value
            raise ModelError(f"{where}: {value!r} is not a number") from None
    else:
        raise ModelError(f"{where}: expected a number, got {type(value).__name__}")
    if not np.isfinite(number):
        raise ModelError(f"{where}: {value!r} is not finite")
    return number


def number_list(value, where: str, length: int | None = None) -> np.ndarray:
    """float64 array of a JSON list of numbers, or of text holding one number or a
    bracketed list of them (``"[5E-1,1E0]"``); all finite, ``length`` of them if given."""
    if isinstance(value, str):
        text = value.strip()
        try:
            value = json.loads(text) if text.startswith("[") else [float(text)]
        except ValueError:
            raise ModelError(f"{where}: {value!r} is not a number or a list of them") \
                from None
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if not isinstance(value, list) or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) for v in value):
        raise ModelError(f"{where}: expected a list of numbers")
    array = np.asarray(value, dtype=np.float64)
    if length is not None and array.shape[0] != length:
        raise ModelError(f"{where}: {array.shape[0]} values, expected {length}")
    if not np.all(np.isfinite(array)):
        raise ModelError(f"{where}: a value is not finite")
    return array


def int_list(d: dict, key: str, length: int, where: str) -> np.ndarray:
    """int64 array of the list ``d[key]`` of ``length`` integers."""
    value = d.get(key) if isinstance(d, dict) else None
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if not isinstance(value, list) or not all(
            isinstance(v, int) and not isinstance(v, bool) for v in value):
        raise ModelError(f"{where}: {key!r} must be a list of integers")
    if len(value) != length:
        raise ModelError(f"{where}: {key!r} has {len(value)} values, expected {length}")
    array = np.asarray(value, dtype=np.int64) if value else np.zeros(0, np.int64)
    if array.size and (array.min() < -1 or array.max() > MAX_IMPORT_NODES):
        raise ModelError(f"{where}: {key!r} holds a value outside [-1, "
                         f"{MAX_IMPORT_NODES}]")
    return array


def tree_from_arrays(left, right, feature, threshold, leaf_value, default_left, gain,
                     cover, n_samples, n_features: int, where: str) -> Tree:
    """A validated one-output :class:`Tree` (children ids above their parent's, as
    oocboost's; ModelError naming ``where`` otherwise) whose internal nodes hold their
    children's cover-weighted mean value (leaf values as given)."""
    n = left.shape[0]
    if not 1 <= n <= MAX_IMPORT_NODES:
        raise ModelError(f"{where}: {n} nodes, expected 1 to {MAX_IMPORT_NODES}")
    tree = Tree(left, right, np.where(left >= 0, feature, -1), threshold,
                np.asarray(leaf_value, dtype=np.float64).reshape(n, 1),
                default_left=default_left, gain=gain,
                cover=np.maximum(cover, 0.0), n_samples=n_samples)
    try:
        tree.validate(n_features)
    except ModelError as exc:
        raise ModelError(f"{where}: {exc}") from None
    expected = np.empty_like(tree.value)
    _ks.expected_values(tree.left, tree.right, tree.cover, tree.value, expected)
    tree.value = expected
    return tree
