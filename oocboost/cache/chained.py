"""Several caches binned with the same edges, read as one cache: the shards of a
distributed run that one worker trains when a worker is gone
(``oocboost.dask``), or any caches to train on together without copying them."""
import os

import numpy as np

from ..errors import CacheError, ParameterError
from .shards import _merged_label_stats
from .store.reader import Cache


class _ChainReader:
    """Block ``i`` of the chain read by the reader of the cache that holds it."""

    def __init__(self, caches, first_block):
        self._caches = caches
        self._first_block = first_block    # (n_caches + 1,) global index of each first block

    def _locate(self, i):
        k = int(np.searchsorted(self._first_block, i, side="right")) - 1
        return self._caches[k], i - int(self._first_block[k])

    def read_block(self, i, with_codes, wide):
        cache, local = self._locate(i)
        return cache._reader.read_block(local, with_codes, wide)

    def check_files(self):
        for c in self._caches:
            c._reader.check_files()

    def close(self):
        for c in self._caches:
            c.close()


class ChainedCache(Cache):
    """The caches ``caches`` one after the other: their blocks in order, row numbers
    continuing from one cache to the next. Every cache must have the same bins
    (the same bin mapper: the shards of one set, or caches built with ``reference=``),
    the same label and weight columns, and no bundles, query groups or base margins
    (their backends may differ).

    Parameters
    ----------
    caches : sequence of Cache or path
        At least one. Opened caches are closed with the chain.

    Example
    -------
    >>> both = ChainedCache(["shards/shard-0.oocb", "shards/shard-1.oocb"])  # doctest: +SKIP
    >>> oocboost.train(params, both, 100)                                  # doctest: +SKIP
    """

    def __init__(self, caches):
        caches = [c if isinstance(c, Cache) else Cache(c) for c in caches]
        if not caches:
            raise ParameterError("a chained cache needs at least one cache")
        first = caches[0]
        for c in caches[1:]:
            _check_alike(first, c)
        for c in caches:
            if c.bundles is not None or c.has_group or c.base_margin_columns is not None:
                raise CacheError(f"cache {c.path}: a cache with bundled features, query "
                                 f"groups or base margins cannot be chained")
        n_blocks = np.array([c.n_blocks for c in caches], np.int64)
        first_block = np.concatenate([[0], np.cumsum(n_blocks)])
        first_row = np.concatenate([[0], np.cumsum([c.n_rows for c in caches])])
        self.__dict__.update(first.__dict__)
        self.caches = caches
        self.paths = [c.path for c in caches]
        self.n_rows = int(first_row[-1])
        self.n_blocks = int(first_block[-1])
        self.block_rows = max(c.block_rows for c in caches)
        self.block_row_starts = np.concatenate(
            [c.block_row_starts + r for c, r in zip(caches, first_row[:-1])])
        self.block_n_rows = np.concatenate([c.block_n_rows for c in caches])
        blocks = [dict(b, row_start=int(b["row_start"]) + int(r))
                  for c, r in zip(caches, first_row[:-1]) for b in c.manifest["blocks"]]
        self.manifest = dict(
            first.manifest,
            n_rows=self.n_rows,
            blocks=blocks,
            label_stats=_merged_label_stats(caches),
            block_rows=self.block_rows,
        )
        self.manifest.pop("fingerprint", None)   # of the first cache only
        self._reader = _ChainReader(caches, first_block)
        self._resident = {}
        self._resident_nbytes = 0

    @property
    def nbytes_stored(self):
        """Bytes on disk of every cache's block data (compressed), int."""
        return sum(c.nbytes_stored for c in self.caches)

    def __repr__(self):
        names = ", ".join(os.path.basename(p) for p in self.paths)
        return f"ChainedCache([{names}], n_rows={self.n_rows}, n_blocks={self.n_blocks})"


def _check_alike(a, b):
    """Raise CacheError naming what differs between two caches to chain."""
    checks = [("features", a.feature_names, b.feature_names),
              ("codes_dtype", str(a.codes_dtype), str(b.codes_dtype)),
              ("label columns", (a.has_label, a.n_label_columns),
               (b.has_label, b.n_label_columns)),
              ("weight column", a.has_weight, b.has_weight)]
    for what, x, y in checks:
        if x != y:
            raise CacheError(f"caches {a.path} and {b.path} differ in their {what} "
                             f"({x!r} vs {y!r}): they cannot be chained")
    if a.bin_mapper != b.bin_mapper:
        raise CacheError(f"caches {a.path} and {b.path} were binned with other edges: "
                         f"they cannot be chained (build one with reference= the other)")
