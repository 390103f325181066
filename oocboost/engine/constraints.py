"""Feature constraints of boosting, parsed against the cache's features: interaction
constraints (XGBoost's ``interaction_constraints``: which features a node may split on,
given the features split on along its path from the root) and monotone constraints
(``monotone_constraints``, enforced by the split search and leaf bounds of
``GradientPolicy``).

With sets ``S_1 .. S_k`` of feature indices and ``P`` the path's features, a node may use
``P`` itself and every feature of each set that contains all of ``P``; the root may use
every feature. A feature in no set can still split the root, and then only itself below
it. So every path's features lie within one set (or are a single feature).
"""
import json

import numpy as np

from ..errors import ParameterError


def parse_interaction_constraints(value, feature_names):
    """``value`` (lists of feature indices or names, or XGBoost's JSON string of them)
    as a tuple of frozensets of indices; None for no constraint.

    Examples
    --------
    >>> parse_interaction_constraints([["age", "income"], [2, 3]], ["age", "income", "a", "b"])
    (frozenset({0, 1}), frozenset({2, 3}))
    """
    if value is None or (isinstance(value, (list, tuple)) and not value) or value == "":
        return None
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            raise ParameterError(f"interaction_constraints: not a JSON list of lists: "
                                 f"{value!r}") from None
    if not isinstance(value, (list, tuple)) or not all(
            isinstance(s, (list, tuple, set, frozenset)) for s in value):
        raise ParameterError(f"interaction_constraints must be a list of lists of feature "
                             f"names or indices, got {value!r}")
    index = {name: i for i, name in enumerate(feature_names or [])}
    n = len(feature_names or [])
    sets = []
    for group in value:
        members = set()
        for f in group:
            if isinstance(f, str):
                if f not in index:
                    raise ParameterError(f"interaction_constraints: unknown feature {f!r}; "
                                         f"the cache has {list(index)[:8]}...")
                members.add(index[f])
            elif isinstance(f, (int, np.integer)) and not isinstance(f, bool) and 0 <= f < n:
                members.add(int(f))
            else:
                raise ParameterError(f"interaction_constraints: {f!r} is neither a feature "
                                     f"name nor an index in 0..{n - 1}")
        sets.append(frozenset(members))
    return tuple(sets)


class InteractionConstraints:
    """The allowed-feature mask of each node, from the features on its path."""

    def __init__(self, sets, n_features):
        self.sets = sets
        self.n_features = n_features
        self._allowed = {}  # path features -> bool mask (n_features,)

    def allowed(self, path):
        """Boolean mask (n_features,) of the features a node with ``path`` may use."""
        mask = self._allowed.get(path)
        if mask is None:
            if not path:
                mask = np.ones(self.n_features, bool)
            else:
                mask = np.zeros(self.n_features, bool)
                mask[list(path)] = True
                for group in self.sets:
                    if path <= group:
                        mask[list(group)] = True
            self._allowed[path] = mask
        return mask


def parse_monotone_constraints(value, feature_names, is_categorical,
                               name="monotone_constraints"):
    """``value`` (a sequence of -1/0/+1 per feature, shorter ones padded with 0, XGBoost's
    string ``"(1,0,-1)"``, or a dict by feature name or index) as an int8 array
    (n_features,); None when every entry is 0 or ``value`` is None. ``name``: the
    parameter the messages name.

    Examples
    --------
    >>> parse_monotone_constraints({"age": 1}, ["age", "income"], [False, False])
    array([1, 0], dtype=int8)
    """
    if value is None or (isinstance(value, (str, list, tuple, dict)) and not value):
        return None
    names = list(feature_names or [])
    n = len(names)
    out = np.zeros(n, np.int8)
    if isinstance(value, str):
        text = value.strip().strip("()[]")
        try:
            value = [int(v) for v in text.split(",") if v.strip()]
        except ValueError:
            raise ParameterError(f"{name}: expected e.g. '(1,0,-1)', got "
                                 f"{value!r}") from None
    items = value.items() if isinstance(value, dict) else enumerate(value)
    index = {feature: i for i, feature in enumerate(names)}
    for key, direction in items:
        i = index.get(key) if isinstance(key, str) else key
        if i is None or isinstance(i, bool) or not isinstance(i, (int, np.integer)) \
                or not 0 <= i < n:
            raise ParameterError(f"{name}: {key!r} is not a feature of the "
                                 f"cache ({n} features: {names[:8]}...)")
        if direction not in (-1, 0, 1) or isinstance(direction, bool):
            raise ParameterError(f"{name}: the direction of {names[i]!r} must "
                                 f"be -1, 0 or 1, got {direction!r}")
        if direction and is_categorical[i]:
            raise ParameterError(f"{name}: {names[i]!r} is categorical; a "
                                 f"monotone direction needs an ordered (numeric) feature")
        out[i] = direction
    return out if out.any() else None


def parse_feature_weights(value, feature_names):
    """``value`` (a sequence of one non-negative weight per feature, or a dict by feature
    name or index, the others 1) as a float64 array; None when not given."""
    if value is None:
        return None
    names = list(feature_names or [])
    n = len(names)
    out = np.ones(n)
    if isinstance(value, dict):
        index = {name: i for i, name in enumerate(names)}
        for key, w in value.items():
            i = index.get(key) if isinstance(key, str) else key
            if i is None or not isinstance(i, (int, np.integer)) or not 0 <= i < n:
                raise ParameterError(f"feature_weights: {key!r} is not a feature of the "
                                     f"cache ({n} features)")
            out[i] = w
    else:
        values = np.asarray(value, dtype=np.float64)
        if values.shape != (n,):
            raise ParameterError(f"feature_weights must hold one weight per feature "
                                 f"({n}), got shape {values.shape}")
        out[:] = values
    if not np.all(np.isfinite(out)) or (out < 0).any() or not out.any():
        raise ParameterError("feature_weights must be finite, non-negative and not all 0")
    return out
