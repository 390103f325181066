"""The best split of each node whose histogram is complete: the grower's split finder.

It masks the features a node may use (``FeatureSampler``), asks the learner's split
policy for each node's best split over its histogram, and keeps those the policy
accepts, as one batch of frontier candidates.
"""
from __future__ import annotations

import numpy as np

from .feature_sampling import FeatureSampler
from .policies import SplitPolicy


class SplitFinder:
    """Split search for one grower's nodes (module docstring).

    ``per_node_columns``: a node's histogram holds exactly its drawn features (columns
    ``slot_columns[slot]``); nothing reads it after the search, which zeroes it while it
    is in cache.
    """

    def __init__(self, policy: SplitPolicy, sampler: FeatureSampler,
                 per_node_columns: int) -> None:
        self.policy = policy
        self.sampler = sampler
        self.per_node_columns = per_node_columns

    def find(self, hist: np.ndarray, slot_columns: np.ndarray, trees: np.ndarray,
             node_ids: np.ndarray, slots: np.ndarray, sums: np.ndarray,
             depths: np.ndarray) -> tuple[dict[str, np.ndarray], np.ndarray]:
        """The accepted splits of the nodes ``(trees, node_ids)`` held in ``slots`` with
        statistics ``sums``: ``(candidates, accepted)``, ``candidates`` a dict of arrays
        (``tree``, ``node``, ``gain``, ``feature``, ``bin``, ``default_left``,
        ``is_categorical``, ``bitset``, ``left_sums``, ``right_sums``,
        ``importance_gain``; and ``multiway``, ``child_sums`` from a policy with
        multiway splits) over the accepted nodes, ``accepted`` their indices."""
        policy = self.policy
        if self.per_node_columns:
            res = policy.find_splits(
                hist, sums, slots, np.ones((len(slots), self.per_node_columns), bool),
                trees=trees, node_ids=node_ids, column_feature=slot_columns[slots],
                zero_after=True)
        else:
            mask = self.sampler.mask(trees, node_ids, depths)
            res = policy.find_splits(hist, sums, slots, mask, trees=trees,
                                     node_ids=node_ids)
        accepted = np.flatnonzero(np.asarray(policy.accept_splits(
            res, sums, trees=trees, node_ids=node_ids), dtype=bool))
        importance = res.get("importance_gain", res["gain"])
        candidates = dict(
            tree=trees[accepted].astype(np.int64), node=node_ids[accepted].astype(np.int64),
            gain=np.asarray(res["gain"], np.float64)[accepted],
            feature=np.asarray(res["feature"], np.int64)[accepted],
            bin=np.asarray(res["bin"], np.int64)[accepted],
            default_left=np.asarray(res["default_left"], bool)[accepted],
            is_categorical=np.asarray(res["is_categorical"], bool)[accepted],
            bitset=np.asarray(res["cat_bitset"], np.uint32)[accepted],
            left_sums=np.asarray(res["left_sums"], np.float64)[accepted],
            right_sums=np.asarray(res["right_sums"], np.float64)[accepted],
            importance_gain=np.asarray(importance, np.float64)[accepted])
        if "multiway" in res:
            # C4.5's multiway splits (engine/multiway.py lays them out)
            candidates["multiway"] = np.asarray(res["multiway"], bool)[accepted]
            candidates["child_sums"] = np.asarray(res["child_sums"], np.float64)[accepted]
        return candidates, accepted
