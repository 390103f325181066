"""Distributed training on Dask (the ``dask`` extra: ``pip install oocboost[dask]``).

* :func:`build_cache` bins a Dask DataFrame into one shard per partition, every shard with
  the same edges (sketched where the partitions live, merged, then broadcast);
* :func:`train` grows boosting rounds on every worker's shard through the one engine:
  per data pass the histograms of the nodes in flight are summed over the workers
  (``collective.py``) and each worker then makes the same split decisions, so the model
  is the one a single machine grows on the concatenated data (same splits, leaf values
  to float rounding);
* :func:`train_forest` grows random forests, extra trees and decision trees the same
  way, tree for tree the single machine's forest;
* a run that loses a worker resumes from rank 0's last checkpoint on the workers that
  remain (``ranks.py``); every worker first checks that its memory limit holds its part.

See docs/distributed.md.
"""
from .estimators import (
    DaskGradientBoostingClassifier,
    DaskGradientBoostingRegressor,
    DaskRandomForestClassifier,
    DaskRandomForestRegressor,
)
from .forest import train_forest
from .ranks import WorkerLost
from .shards import build_cache
from .training import train

__all__ = ["DaskGradientBoostingClassifier", "DaskGradientBoostingRegressor",
           "DaskRandomForestClassifier", "DaskRandomForestRegressor", "WorkerLost",
           "build_cache", "train", "train_forest"]
