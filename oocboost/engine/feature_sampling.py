"""Which features a node may split on: the grower's feature sampler.

XGBoost's nested ``colsample_bytree`` / ``colsample_bylevel`` / ``colsample_bynode``
(weighted by ``feature_weights``), scikit-learn's ``max_features`` as ``features_per_node``,
a bagging tree's own feature subset, and interaction constraints (a node may use only
features that may interact with those on its path). With per-node column subsets
(``engine.nodes.sampled_columns``) a node's features are drawn when it is created, from a
key per tree, and its histogram holds those columns alone.

Each tree draws from its own generator when the learner gives one per tree (forests: a
tree then depends only on its seed), else from the one generator of the pass.
"""
from __future__ import annotations

import numpy as np

from ..kernels.sampling import node_feature_subsets
from .constraints import InteractionConstraints
from .nodes import GrowthParams, sample_count


class FeatureSampler:
    """The features of ``n_trees`` trees grown together.

    The draws happen in this order, which fixes the trees for a seed: each tree's
    ``colsample_bytree`` set when the sampler is made, then, with per-node columns, each
    tree's key; later draws happen as nodes are searched or created.
    """

    def __init__(self, params: GrowthParams, n_features: int, n_trees: int,
                 rng: np.random.Generator,
                 feature_rngs: list[np.random.Generator] | None = None,
                 tree_features: list[np.ndarray] | None = None,
                 per_node_columns: int = 0) -> None:
        self.params = params
        self.n_features = n_features
        self.rng = rng
        self.feature_rngs = feature_rngs
        if tree_features is not None:
            self.tree_features = [np.asarray(f, dtype=np.int64) for f in tree_features]
        else:
            self.tree_features = [self.draw(np.arange(n_features), params.colsample_bytree, t)
                                  for t in range(n_trees)]
        self._level_features: dict[tuple[int, int], np.ndarray] = {}
        self._interactions = (None if params.interaction_constraints is None else
                              InteractionConstraints(params.interaction_constraints,
                                                     n_features))
        self._paths: dict[tuple[int, int], frozenset] = {}  # features above a node
        self._tree_keys = ([int(self.tree_rng(t).integers(0, 2 ** 63))
                            for t in range(n_trees)] if per_node_columns else None)

    def tree_rng(self, tree: int) -> np.random.Generator:
        return self.rng if self.feature_rngs is None else self.feature_rngs[tree]

    def draw(self, features: np.ndarray, fraction: float, tree: int) -> np.ndarray:
        """A sorted sample of ``fraction`` of ``features`` (all when 1), by
        ``feature_weights`` when given (a zero weight is never drawn)."""
        if fraction >= 1.0:
            return features
        n = sample_count(len(features), fraction)
        weights = self.params.feature_weights
        if weights is None:
            return np.sort(self.tree_rng(tree).choice(features, size=n, replace=False))
        w = weights[features]
        n = min(n, int(np.count_nonzero(w)))
        return np.sort(self.tree_rng(tree).choice(features, size=n, replace=False,
                                                  p=w / w.sum()))

    def mask(self, trees: np.ndarray, node_ids: np.ndarray, depths: np.ndarray
             ) -> np.ndarray:
        """bool ``(len(trees), n_features)``: the features each node may split on."""
        p = self.params
        trees = np.asarray(trees)
        mask = np.zeros((len(trees), self.n_features), dtype=np.bool_)
        k = p.features_per_node
        for t in np.unique(trees):
            rows = np.flatnonzero(trees == t)
            allowed = np.asarray(self.tree_features[t])
            if p.colsample_bylevel < 1.0:
                for r in rows:
                    key = (int(t), int(depths[r]))
                    if key not in self._level_features:
                        self._level_features[key] = self.draw(allowed, p.colsample_bylevel,
                                                              t)
                    self._allow(mask, r, self._level_features[key], k, t)
                continue
            every = k >= len(allowed) if k is not None else p.colsample_bynode >= 1.0
            if every:  # every allowed feature: nothing to draw
                mask[rows[:, None], allowed[None, :]] = True
                continue
            if k is not None:
                # k features per node, drawn for all of the tree's nodes at once:
                # the k smallest of uniform keys are a uniform k-subset.
                keys = self.tree_rng(t).random((len(rows), len(allowed)))
                pick = np.argpartition(keys, k - 1, axis=1)[:, :k]
                mask[rows[:, None], allowed[pick]] = True
                continue
            for r in rows:
                self._allow(mask, r, allowed, None, t)
        if self._interactions is not None:
            for r, (t, node) in enumerate(zip(trees.tolist(), np.asarray(node_ids).tolist())):
                mask[r] &= self._interactions.allowed(self._paths.get((t, node),
                                                                      frozenset()))
        return mask

    def _allow(self, mask: np.ndarray, row: int, allowed: np.ndarray, k: int | None,
               tree: int) -> None:
        if k is not None and k < len(allowed):
            allowed = self.tree_rng(tree).choice(allowed, size=k, replace=False)
        elif k is None and self.params.colsample_bynode < 1.0:
            allowed = self.draw(allowed, self.params.colsample_bynode, tree)
        mask[row, allowed] = True

    def node_columns(self, tree: int, node_ids: np.ndarray, n_columns: int) -> np.ndarray:
        """int32 ``(len(node_ids), n_columns)``: the features of new nodes' histograms
        (per-node column subsets), from the tree's key and the node ids."""
        out = np.empty((len(node_ids), n_columns), np.int32)
        node_feature_subsets(self._tree_keys[tree], np.ascontiguousarray(node_ids),
                             np.asarray(self.tree_features[tree], np.int64), n_columns, out)
        return out

    def on_split(self, trees: np.ndarray, nodes: np.ndarray, features: np.ndarray,
                 left_ids: np.ndarray, right_ids: np.ndarray) -> None:
        """Children inherit their path's features (interaction constraints)."""
        if self._interactions is None:
            return
        for tree, node, f, lo, hi in zip(trees.tolist(), nodes.tolist(), features.tolist(),
                                         left_ids.tolist(), right_ids.tolist()):
            path = self._paths.get((tree, node), frozenset()) | {f}
            self._paths[(tree, lo)] = self._paths[(tree, hi)] = path
