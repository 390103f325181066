"""The first rows of any data with their SHAP values, for the summary plot."""
import numpy as np

from ..model.contributions import codes_as_values
from ..model.predict import _is_cache_path
from ..model.raw_input import _mapper, _open_for_model, raw_matrix


def contributions_and_values(model, data, max_rows):
    """``(phi, values)`` of the first ``max_rows`` rows of ``data``: SHAP values
    (rows, n_outputs, n_features + 1) and the feature values the model reads (raw values,
    category codes; a cache's bin codes), NaN for missing."""
    from ..cache.store import Cache

    phis, values, n = [], [], 0
    if _is_cache_path(data):
        cache = data if isinstance(data, Cache) else Cache(data)
        missing_bin = cache.max_bin - 1
        for block in cache.iter_blocks(prefetch=1):
            codes = block.codes[:, :max_rows - n]
            phis.append(model.predict_contributions_binned(codes, missing_bin))
            values.append(codes_as_values(codes, missing_bin))
            n += codes.shape[1]
            if n >= max_rows:
                break
    elif isinstance(data, np.ndarray) and "categorical" not in model.feature_types:
        X = np.ascontiguousarray(data[:max_rows], dtype=np.float64)
        phis.append(model.predict_contributions(X))
        values.append(X)
    else:
        mapper = _mapper(model)
        for batch in _open_for_model(model, data).batches():
            X = raw_matrix(model, batch, mapper)[:max_rows - n]
            phis.append(model.predict_contributions(X))
            values.append(X)
            n += len(X)
            if n >= max_rows:
                break
    phi = np.concatenate(phis, axis=0)
    if phi.ndim == 2:  # one output
        phi = phi[:, None, :]
    return phi, np.concatenate(values, axis=0)
