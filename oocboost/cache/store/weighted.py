"""A cache seen with every row's weight multiplied by a factor, without copying it: how a
cross-validation fold trains on the cache with its held-out rows weighted zero."""
import numpy as np

from ...errors import ParameterError
from ..label_stats import LabelStats
from .reader import Cache


class RowWeightedCache(Cache):
    """``cache`` with row ``i``'s weight multiplied by ``row_factor[i]`` (its own weight,
    or 1, times the factor). It shares the cache's reader and resident blocks; only the
    blocks it hands out carry the new weights, and its manifest's label statistics are
    those of the weighted rows (intercepts and classes come from them).

    Parameters
    ----------
    cache : Cache
    row_factor : array-like (n_rows,)
        Non-negative factors, e.g. ``(fold_of_row != k)`` for fold ``k``'s training rows.

    Examples
    --------
    >>> train_rows = RowWeightedCache(cache, fold_of_row != 2)         # doctest: +SKIP
    >>> oocboost.RandomForestClassifier().fit(train_rows)              # doctest: +SKIP
    """

    def __init__(self, cache, row_factor):
        factor = np.asarray(row_factor, dtype=np.float32)
        if factor.shape != (cache.n_rows,) or not np.all(factor >= 0):
            raise ParameterError(f"row_factor must hold {cache.n_rows} non-negative values "
                                 f"(one per row of {cache.path}), got shape {factor.shape}")
        self.__dict__.update(cache.__dict__)  # the reader and resident blocks are shared
        self._base = cache
        self._factor = factor
        self.has_weight = True
        labels, weights = cache.read_labels()
        weight = factor if weights is None else weights * factor
        self.manifest = dict(cache.manifest, has_weight=True)
        if labels is not None and labels.ndim == 2:
            self.manifest["label_stats"] = [
                LabelStats().update(np.where(np.isfinite(c), c, np.nan), weight).to_dict()
                for c in labels.T]
        elif labels is not None:
            self.manifest["label_stats"] = LabelStats().update(labels, weight).to_dict()

    def _weighted(self, block):
        factor = self._factor[block.row_start:block.row_start + block.n_rows]
        weight = factor if block.weight is None else block.weight * factor
        return block.with_weight(weight)

    def read_block(self, i, with_codes=True):
        return self._weighted(self._base.read_block(i, with_codes))

    def iter_blocks(self, *args, **kwargs):
        for block in self._base.iter_blocks(*args, **kwargs):
            yield self._weighted(block)

    def read_labels(self):
        labels, weights = self._base.read_labels()
        return labels, (self._factor.copy() if weights is None else weights * self._factor)

    def release_resident(self):
        self._base.release_resident()

    def __repr__(self):
        return f"RowWeightedCache({self._base!r})"
