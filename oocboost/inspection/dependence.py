"""Partial dependence (Friedman 2001) of any oocboost model, streamed over a cache.

For grid values ``v`` of one feature (or pairs for two), the model's prediction with that
feature set to ``v`` on every row, averaged over the rows (``kind="average"``) or kept
per row (``"individual"``, scikit-learn's ICE curves). This is scikit-learn's ``brute``
method; on a cache it runs block by block on the bin codes (the grid value's code replaces
the feature's), which reaches the same leaves as the raw values, so the result equals
scikit-learn's on the same rows and grid without the data ever being in memory.

Differences from ``sklearn.inspection.partial_dependence``: the default grid of a numeric
feature spans the ``percentiles`` by linear interpolation (``numpy.percentile``; scikit-
learn uses ``scipy.stats.mstats.mquantiles``), or, on a cache, by the bin edges (the
cache's quantile sketch); pass ``grid_values`` for scikit-learn's exact grid. The grid of a
categorical feature on a cache is its categories.
"""
import numpy as np

from ..common import category_code
from ..errors import ParameterError
from .permutation import Bunch

#: Rows predicted at once from an in-memory array (bounds the copies per grid value).
CHUNK_ROWS = 1 << 16


def partial_dependence(model, data, features, *, grid_resolution=100,
                       percentiles=(0.05, 0.95), kind="average", grid_values=None):
    """Partial dependence of the model's prediction on one or two features.

    Parameters
    ----------
    model : Model or a fitted oocboost estimator
    data : ndarray (n_rows, n_features) float, numeric DataFrame, Cache or cache path
        The rows to average over. A cache is streamed block by block.
    features : int, str, or a sequence of one or two of them
        Feature indices or names.
    grid_resolution : int
        Grid points per numeric feature (fewer when the data has fewer distinct values).
    percentiles : (float, float)
        The numeric grid's span, as fractions of the data.
    kind : {"average", "individual", "both"}
    grid_values : list of array-like or None
        One grid per feature; None: from the data as above.

    Returns
    -------
    Bunch
        scikit-learn's layout: ``grid_values`` (list of arrays), ``average``
        (n_outputs, *grid shape) and/or ``individual`` (n_outputs, n_rows, *grid shape).
        ``n_outputs`` is 1 for regression and binary classification (the positive class's
        probability, as scikit-learn), K for K-class probabilities.

    Examples
    --------
    >>> pd = partial_dependence(model, oocboost.Cache("valid.oocb"), ["age"])  # doctest: +SKIP
    >>> pd.grid_values[0], pd.average[0]                                     # doctest: +SKIP
    """
    from ..cache.store import Cache
    from ..model.predict import _is_cache_path

    model = getattr(model, "model_", model)
    if kind not in ("average", "individual", "both"):
        raise ParameterError(f"kind must be 'average', 'individual' or 'both', got {kind!r}")
    indices = _feature_indices(model, features)
    if _is_cache_path(data):
        cache = data if isinstance(data, Cache) else Cache(data)
        grids = (_cache_grids(cache, indices, grid_resolution, percentiles)
                 if grid_values is None else _given_grids(grid_values, indices))
        codes = [_codes_of(cache.bin_mapper, f, g) for f, g in zip(indices, grids)]
        pieces = _cache_pieces(model, cache, indices, codes)
    else:
        X = _as_matrix(data, model)
        grids = (_array_grids(X, indices, grid_resolution, percentiles)
                 if grid_values is None else _given_grids(grid_values, indices))
        pieces = _array_pieces(model, X, indices, grids)
    total, n_rows, kept = None, 0, []
    for piece in pieces:  # (n_outputs, rows, points): one block or chunk at a time
        total = piece.sum(axis=1) if total is None else total + piece.sum(axis=1)
        n_rows += piece.shape[1]
        if kind != "average":
            kept.append(piece)
    if n_rows == 0:
        raise ParameterError("data has no rows")
    shape = tuple(len(g) for g in grids)
    result = Bunch(grid_values=[np.asarray(g) for g in grids])
    if kind in ("average", "both"):
        result["average"] = (total / n_rows).reshape((total.shape[0],) + shape)
    if kind in ("individual", "both"):
        per_row = np.concatenate(kept, axis=1)
        result["individual"] = per_row.reshape(per_row.shape[:2] + shape)
    return result


def _feature_indices(model, features):
    if isinstance(features, (int, np.integer, str)):
        features = [features]
    features = list(features)
    if not 1 <= len(features) <= 2:
        raise ParameterError(f"features must name one or two features, got {features!r}")
    names = list(model.feature_names)
    out = []
    for f in features:
        if isinstance(f, str):
            if f not in names:
                raise ParameterError(f"feature {f!r} is not one of the model's {names[:10]}")
            out.append(names.index(f))
        elif isinstance(f, (int, np.integer)) and 0 <= f < len(names):
            out.append(int(f))
        else:
            raise ParameterError(f"feature {f!r} is not an index in [0, {len(names)}) or a "
                                 f"name")
    return out


def _given_grids(grid_values, indices):
    grids = [np.asarray(g) for g in grid_values]
    if len(grids) != len(indices) or any(g.ndim != 1 or len(g) == 0 for g in grids):
        raise ParameterError(f"grid_values must be {len(indices)} non-empty 1-D arrays")
    return grids


def _as_matrix(data, model):
    X = np.asarray(data)
    if X.dtype.kind not in "fiub" or X.ndim != 2 or X.shape[1] != model.n_features:
        raise ParameterError(f"data must be a numeric (n_rows, {model.n_features}) array or "
                             f"DataFrame, or a cache (categorical features: build a cache)")
    return np.ascontiguousarray(X, dtype=np.float64)


def _array_grids(X, indices, grid_resolution, percentiles):
    grids = []
    for f in indices:
        column = X[:, f][np.isfinite(X[:, f])]
        distinct = np.unique(column)
        if len(distinct) < grid_resolution:
            grids.append(distinct)
        else:
            low, high = np.percentile(column, [100 * percentiles[0], 100 * percentiles[1]])
            grids.append(np.linspace(low, high, grid_resolution))
    return grids


def _cache_grids(cache, indices, grid_resolution, percentiles):
    mapper = cache.bin_mapper
    grids = []
    for f in indices:
        if mapper.is_categorical[f]:
            grids.append(np.asarray(mapper.categories[f], dtype=object))
            continue
        edges = np.asarray(mapper.bin_edges[f], dtype=np.float64)
        if len(edges) + 1 < grid_resolution:
            # every bin once: the edges and one value above the last
            grids.append(np.append(edges, edges[-1] + 1.0) if len(edges) else np.zeros(1))
            continue
        # the edges are the column's quantiles at (k + 1) / (len(edges) + 1)
        positions = np.arange(1, len(edges) + 1) / (len(edges) + 1)
        low, high = np.interp(percentiles, positions, edges)
        grids.append(np.linspace(low, high, grid_resolution))
    return grids


def _codes_of(mapper, f, grid):
    """Bin codes of grid values of feature ``f`` (categories by name or code)."""
    if mapper.is_categorical[f]:
        categories = list(mapper.categories[f])
        index = np.array([categories.index(v) if v in categories else int(v)
                          for v in grid], dtype=np.int64)
        return category_code(index, mapper.max_bin)
    values = np.asarray(grid, dtype=np.float64)
    codes = np.searchsorted(np.asarray(mapper.bin_edges[f]), values, side="left")
    return np.where(np.isnan(values), mapper.max_bin - 1, codes)


def _response(model):
    """``margins -> (n_rows, n_outputs)`` predictions as scikit-learn's partial
    dependence reads them (class probabilities; the positive class's for two)."""
    from ..model.predict import model_objective, output_plan

    margin_model, transform = output_plan(model)
    if model.objective == "multi:softmax":
        transform = model_objective(model).transform_proba

    def respond(margins):
        out = np.asarray(transform(margins), dtype=np.float64)
        out = out.reshape(len(out), -1)
        return out[:, 1:] if out.shape[1] == 2 else out
    return margin_model, respond


def _grid_points(grids):
    """Every combination of grid indices, first feature slowest (scikit-learn's order)."""
    return np.array(np.meshgrid(*[np.arange(len(g)) for g in grids],
                                indexing="ij")).reshape(len(grids), -1).T


def _array_pieces(model, X, indices, grids):
    """(n_outputs, rows, points) predictions, one chunk of rows at a time."""
    margin_model, respond = _response(model)
    points = _grid_points(grids)
    for start in range(0, len(X), CHUNK_ROWS):
        chunk = X[start:start + CHUNK_ROWS]
        per_point = []
        for point in points:
            Xv = chunk.copy()
            for f, g, k in zip(indices, grids, point):
                Xv[:, f] = g[k]
            per_point.append(respond(margin_model.predict_margin(Xv)))
        yield np.stack(per_point, axis=2).transpose(1, 0, 2)


def _cache_pieces(model, cache, indices, codes):
    """(n_outputs, rows, points) predictions, one cache block at a time."""
    margin_model, respond = _response(model)
    points = _grid_points(codes)
    missing_bin = cache.max_bin - 1
    for block in cache.iter_blocks(prefetch=1):
        per_point = []
        for point in points:
            block_codes = block.codes.copy()
            for f, c, k in zip(indices, codes, point):
                block_codes[f] = c[k]
            per_point.append(respond(margin_model.predict_margin_binned(block_codes,
                                                                        missing_bin)))
        yield np.stack(per_point, axis=2).transpose(1, 0, 2)
