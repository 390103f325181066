"""Bin edges that hold given split points: ``build_cache(..., split_points=model)`` makes
each numeric feature's edges include every threshold a model splits it at, so a model
that has no edges of its own (imported from XGBoost or LightGBM) predicts from the cache
exactly (a threshold on an edge is a bin threshold: ``x <= t`` is ``code <= k``), and
can be continued there (``init_model``). The other edges are the sketch's quantiles,
thinned evenly when the two together exceed ``max_bin``.
"""
from __future__ import annotations

import hashlib

import numpy as np

from ..errors import ParameterError
from .binning import NUMERIC, BinMapper


def as_split_points(split_points, reference=None) -> dict[str, np.ndarray] | None:
    """``split_points`` (None, a dict of feature name -> thresholds, or a model with a
    ``split_points()`` method) as a dict of sorted unique finite float64 arrays;
    ParameterError with a ``reference`` too (which brings its own edges)."""
    if split_points is None:
        return None
    if reference is not None:
        raise ParameterError("split_points and reference both set the bin edges: give "
                             "split_points to the training cache only")
    if hasattr(split_points, "split_points"):
        split_points = split_points.split_points()
    if not isinstance(split_points, dict):
        raise ParameterError(f"split_points must be a model or a dict of feature name -> "
                             f"thresholds, got {type(split_points).__name__}")
    out = {}
    for name, points in split_points.items():
        points = np.unique(np.asarray(points, dtype=np.float64).ravel())
        if not np.all(np.isfinite(points)):
            raise ParameterError(f"split_points of feature {name!r}: not all finite")
        out[str(name)] = points
    return out


def fingerprint(split_points: dict[str, np.ndarray] | None) -> dict:
    """The build parameter of the split points: ``{"split_points": digest}`` (a cache
    built with other points is rebuilt), ``{}`` without (caches built before stay
    current)."""
    if not split_points:
        return {}
    digest = hashlib.sha256()
    for name in sorted(split_points):
        digest.update(name.encode("utf-8") + b"\0" + split_points[name].tobytes())
    return {"split_points": digest.hexdigest()}


def with_split_points(mapper: BinMapper, split_points: dict[str, np.ndarray]) -> BinMapper:
    """``mapper`` whose numeric features' edges include ``split_points`` (module
    docstring); ParameterError naming a feature that is unknown, not numeric, or split
    at more points than ``max_bin`` leaves edges for."""
    limit = mapper.max_bin - 2              # value bins are edges + 1, below the missing bin
    edges = list(mapper.bin_edges)
    for name, points in split_points.items():
        if name not in mapper.feature_names:
            shown = ", ".join(mapper.feature_names[:5])
            raise ParameterError(f"split_points name feature {name!r}, which the data has "
                                 f"not got (its features: {shown}"
                                 f"{', ...' if mapper.n_features > 5 else ''})")
        f = mapper.feature_names.index(name)
        if mapper.feature_types[f] != NUMERIC:
            raise ParameterError(f"split_points of feature {name!r}: it is "
                                 f"{mapper.feature_types[f]}, split points are numeric")
        if points.size > limit:
            raise ParameterError(f"feature {name!r} is split at {points.size} points, more "
                                 f"than the {limit} edges max_bin={mapper.max_bin} allows: "
                                 f"build with max_bin >= {points.size + 2}")
        others = np.setdiff1d(edges[f], points)
        room = limit - points.size
        if others.size > room:
            others = others[np.unique(np.linspace(0, others.size - 1, room).round()
                                      .astype(np.int64))] if room else others[:0]
        edges[f] = np.union1d(points, others)
    return BinMapper(mapper.feature_names, mapper.feature_types, mapper.max_bin, edges,
                     mapper.categories, mapper.has_other, mapper.encoders)
