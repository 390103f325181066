"""The features each tree of an ensemble grows on (bagging's and the isolation forest's
per-estimator subsets): a pure function of the seed and the tree's index."""
import numpy as np

#: Purpose of the per-tree generator that draws a tree's features.
RNG_TREE_FEATURES = 3


def tree_feature_sets(seed: int, tree_ids, n_features: int, tree_features: int | None,
                      bootstrap_features: bool) -> list[np.ndarray]:
    """The sorted columns each bagged tree grows on (Ho's random subspaces when
    ``bootstrap_features`` is False): ``tree_features`` columns (None: all) drawn from
    ``default_rng([seed, tree, purpose])``, with replacement (duplicates merged) when
    ``bootstrap_features``. A tree's set depends only on the seed and its index."""
    k = tree_features or n_features
    sets = []
    for g in tree_ids:
        rng = np.random.default_rng([seed, int(g), RNG_TREE_FEATURES])
        if bootstrap_features:
            chosen = np.unique(rng.integers(0, n_features, size=k))
        else:
            chosen = np.sort(rng.choice(n_features, size=k, replace=False))
        sets.append(chosen)
    return sets
