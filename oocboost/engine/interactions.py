"""Interaction constraints (XGBoost's ``interaction_constraints``): which features a node
may split on, given the features split on along its path from the root.

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
