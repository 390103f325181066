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

#: Bytes of predictions at every grid point held at once (rows are taken in chunks that
#: fit): 32 MiB, whatever the grid and the data.
PIECE_BYTES = 32 << 20


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


def _chunk_rows(model, n_points):
    """Rows whose predictions at every grid point fit :data:`PIECE_BYTES` (counted
    three times: margins, responses and the piece)."""
    per_row = 3 * 8 * n_points * max(int(model.n_outputs), 2)
    return max(1, PIECE_BYTES // per_row)


def _array_pieces(model, X, indices, grids):
    """(n_outputs, rows, points) predictions, one chunk of rows at a time."""
    margin_model, respond = _response(model)
    walk = _grid_walk(margin_model, indices, grids, binned=False)
    points = _grid_points(grids)
    step = _chunk_rows(margin_model, len(points))
    for start in range(0, len(X), step):
        chunk = X[start:start + step]
        if walk is not None:
            yield walk(np.ascontiguousarray(chunk), respond)
            continue
        per_point = []
        for point in points:
            Xv = chunk.copy()
            for f, g, k in zip(indices, grids, point):
                Xv[:, f] = g[k]
            per_point.append(respond(margin_model.predict_margin(Xv)))
        yield np.stack(per_point, axis=2).transpose(1, 0, 2)


def _cache_pieces(model, cache, indices, codes):
    """(n_outputs, rows, points) predictions, one cache block (or chunk of one) at a
    time."""
    margin_model, respond = _response(model)
    walk = _grid_walk(margin_model, indices, codes, binned=True,
                      missing_bin=cache.max_bin - 1)
    points = _grid_points(codes)
    missing_bin = cache.max_bin - 1
    step = _chunk_rows(margin_model, len(points))
    for block in cache.iter_blocks(prefetch=1):
        for start in range(0, block.codes.shape[1], step):
            block_codes = np.ascontiguousarray(block.codes[:, start:start + step])
            if walk is not None:
                yield walk(block_codes, respond)
                continue
            per_point = []
            for point in points:
                point_codes = block_codes.copy()
                for f, c, k in zip(indices, codes, point):
                    point_codes[f] = c[k]
                per_point.append(respond(margin_model.predict_margin_binned(point_codes,
                                                                            missing_bin)))
            yield np.stack(per_point, axis=2).transpose(1, 0, 2)


def _grid_walk(model, indices, grids, *, binned, missing_bin=None):
    """A function ``rows -> (n_outputs, rows, points)`` predictions computed by one walk
    of each tree per row (``kernels/partial_dependence.py``), or None when the model's
    margins are not plain sums of tree leaves (learner parts, oblique or surrogate splits,
    shared nodes), a grid feature has categorical splits, a grid holds a missing value or
    both features are one: those go point by point."""
    from ..kernels import partial_dependence as _kpd
    from ..kernels.codes import read_only
    from ..kernels.predict import is_plain

    if model.parts or model.aggregation not in ("sum", "mean") \
            or len(set(indices)) != len(indices):
        return None
    flat = model._flat_trees()
    if not is_plain(flat):
        return None
    sorted_grids, positions = [], []
    for grid in grids:
        values = np.asarray(grid, dtype=np.float64)
        # a missing value (NaN, or the missing code on a cache) takes each split's
        # default side, which no cut of the sorted grid expresses
        if np.isnan(values).any() or (binned and (values == missing_bin).any()):
            return None
        order = np.argsort(values, kind="stable")
        sorted_grids.append(values[order])
        positions.append(np.argsort(order))       # where each given point went
    rule = flat.bin_threshold if binned else flat.threshold
    is_split = flat.left != np.arange(len(flat.left))
    cut = np.zeros((2, len(flat.left)), np.int64)
    for a, (f, values) in enumerate(zip(indices, sorted_grids)):
        if (flat.is_categorical[is_split & (flat.feature == f)] != 0).any():
            return None
        cut[a] = np.searchsorted(values, rule, side="right")
    grid_feature = np.array(list(indices) + [-1] * (2 - len(indices)), np.int64)
    shape = tuple(len(g) for g in grids) + (1,) * (2 - len(grids))
    t0, t1 = 0, model.n_trees

    def walk(rows, respond):
        n_rows = rows.shape[1] if binned else rows.shape[0]
        # started and finished as predict_margin does, so the sums are its own
        start = model._start_margin(1)
        grid_rows = np.empty((n_rows, start.shape[1]) + shape)
        grid_rows[:] = start.reshape((1, -1) + (1,) * len(shape))
        rows = read_only(rows)
        _kpd.grid_margins(flat, None if binned else rows, rows if binned else None,
                          missing_bin, t0, t1, grid_feature, cut, shape[1],
                          grid_rows.reshape(n_rows, start.shape[1], -1))
        # back to the given grid order, as (rows x points, outputs)
        grid_rows = grid_rows[:, :, positions[0]]
        if len(positions) == 2:
            grid_rows = grid_rows[:, :, :, positions[1]]
        margins = np.moveaxis(grid_rows, 1, -1).reshape(-1, start.shape[1])
        margins = model._finish_margin(margins, t0, t1)
        out = respond(margins)
        return out.reshape(n_rows, -1, out.shape[1]).transpose(2, 0, 1)
    return walk
