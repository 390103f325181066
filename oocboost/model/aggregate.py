"""How an ensemble's tree outputs combine beyond the model's own sum or mean: a view of
the same trees summed (optionally one output per tree), the weight of each round, and
AdaBoost.R2's weighted median of the trees' predictions."""
import numpy as np

from ..kernels import adaboost_kernels as ak


def is_weighted_median(model):
    """AdaBoost.R2 predicts the weighted median of its trees, not a sum or mean."""
    info = (model.attributes or {}).get("adaboost") or {}
    return info.get("prediction") == "weighted_median"


def combines_trees(model):
    """The prediction is a median of the trees' (AdaBoost.R2's weighted one, or the
    "median" aggregation), which a sum of leaf values cannot give."""
    return model.aggregation == "median" or is_weighted_median(model)


def median_of_trees(predictions):
    """(n_rows,) NumPy's median of each row's tree predictions (n_rows, n_trees)."""
    return np.median(np.asarray(predictions), axis=1)


def sum_view(model, per_tree=False):
    """The same trees aggregated by "sum" (weighted leaf values), optionally with one
    output per tree (``per_tree``: margin column ``t`` is tree ``t``'s prediction)."""
    n = model.n_trees
    return type(model)(model.trees,
                 tree_group=np.arange(n, dtype=np.int32) if per_tree else model.tree_group,
                 tree_weight=np.ones(n) if per_tree else model.tree_weight,
                 n_outputs=n if per_tree else model.n_outputs, objective=model.objective,
                 objective_params=dict(model.objective_params), learner=model.learner,
                 aggregation="sum", trees_per_round=1 if per_tree else model.trees_per_round,
                 feature_names=list(model.feature_names),
                 feature_types=list(model.feature_types), bin_mapper=model.bin_mapper)


def round_weights(model):
    tpr = int(model.trees_per_round)
    return np.asarray(model.tree_weight[::tpr], dtype=np.float64)


def weighted_median(predictions, weights):
    out = np.empty(predictions.shape[0])
    ak.weighted_median(np.ascontiguousarray(predictions),
                       np.ascontiguousarray(weights, dtype=np.float64), out)
    return out
