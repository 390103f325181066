"""Distributed training on Dask (the ``dask`` extra: ``pip install oocboost[dask]``).

* :func:`build_cache` bins a Dask DataFrame into one shard per worker, every shard with
  the same edges (sketched where the partitions live, merged, then broadcast);
* :func:`train` grows boosting rounds on every worker's shard through the one engine:
  per data pass the histograms of the nodes in flight are summed over the workers
  (``collective.py``) and each worker then makes the same split decisions, so the model
  is the one a single machine grows on the concatenated data (same splits, leaf values
  to float rounding).

See docs/distributed.md.
"""
from .estimators import DaskGradientBoostingClassifier, DaskGradientBoostingRegressor
from .shards import build_cache
from .training import train

__all__ = ["DaskGradientBoostingClassifier", "DaskGradientBoostingRegressor", "build_cache",
           "train"]
