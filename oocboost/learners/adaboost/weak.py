"""The weak learner of an AdaBoost run: the structure of its trees (scikit-learn's
``estimator=DecisionTreeClassifier(max_depth=3, ...)``) and the split criterion its
algorithm grows them with."""
from dataclasses import dataclass

from ...engine.nodes import GrowthParams
from ...errors import ParameterError
from ..common.cart_config import resolve_config
from ..common.cart_policy import ForestCartPolicy

#: The split criterion each algorithm grows its trees with, and the ones an estimator
#: may choose instead (None: only the algorithm's own).
_CRITERIA = {
    "SAMME": ("gini", ("gini", "entropy", "log_loss")),
    "SAMME.R": ("gini", ("gini", "entropy", "log_loss")),
    "arc-x4": ("gini", ("gini", "entropy", "log_loss")),
    "M1": ("gini", ("gini", "entropy", "log_loss")),
    "MH": ("adaboost_mh", ("adaboost_mh",)),
    "gentle": ("squared_error", ("squared_error", "friedman_mse")),
    "logitboost": ("squared_error", ("squared_error", "friedman_mse")),
    "R2": ("squared_error", ("squared_error", "friedman_mse")),
}
#: Tree parameters a weak tree takes from the estimator.
TREE_PARAMS = ("criterion", "splitter", "max_depth", "min_samples_split", "min_samples_leaf",
               "min_weight_fraction_leaf", "max_features", "max_leaf_nodes",
               "min_impurity_decrease", "class_weight", "ccp_alpha")


@dataclass(frozen=True)
class WeakTree:
    """Resolved settings of the weak trees (see :func:`resolve_weak_tree`)."""

    criterion: str
    max_depth: object = 1
    splitter: str = "best"
    min_samples_split: int = 2
    min_samples_leaf: int = 1
    min_weight_fraction_leaf: float = 0.0
    min_impurity_decrease: float = 0.0
    max_leaf_nodes: object = None
    features_per_node: object = None

    def growth(self, hist_nodes):
        """The grower's structure settings (``hist_nodes`` from the memory plan)."""
        return GrowthParams(max_depth=self.max_depth, max_leaves=self.max_leaf_nodes,
                            grow_policy="lossguide" if self.max_leaf_nodes else "depthwise",
                            leaves_per_pass=1, features_per_node=self.features_per_node,
                            max_hist_slots=2 * int(hist_nodes))

    def policy(self, n_classes, mapper, missing_bin, rngs):
        """A CART policy for ``len(rngs)`` trees grown together, with this criterion and
        these stopping rules; each tree's root weight (the round's total) normalises its
        impurity decreases. ``rngs``: one generator per tree (random thresholds)."""
        return ForestCartPolicy(
            n_trees=len(rngs), criterion=self.criterion, n_classes=n_classes,
            n_value_bins=mapper.n_value_bins, is_categorical=mapper.is_categorical,
            missing_bin=missing_bin, min_samples_leaf=self.min_samples_leaf,
            min_impurity_decrease=self.min_impurity_decrease,
            min_samples_split=self.min_samples_split,
            min_weight_fraction_leaf=self.min_weight_fraction_leaf,
            threshold_rngs=list(rngs) if self.splitter == "random" else None)


def resolve_weak_tree(algorithm, tree_params, *, max_depth, n_rows, n_features):
    """The weak trees of ``algorithm``.

    Parameters
    ----------
    algorithm : str
        Canonical algorithm name.
    tree_params : dict or None
        The estimator's tree parameters (scikit-learn names, :data:`TREE_PARAMS`); None:
        trees of depth ``max_depth`` with scikit-learn's other defaults.
    max_depth : int or None
        The ensemble's own ``max_depth`` (used when ``tree_params`` is None).
    n_rows, n_features : int
        Of the training cache (fractions of rows or features resolve against them).
    """
    own, allowed = _CRITERIA[algorithm]
    if tree_params is None:
        return WeakTree(criterion=own, max_depth=max_depth)
    p = {k: v for k, v in tree_params.items() if k in TREE_PARAMS}
    criterion = p.pop("criterion", None)
    if criterion is not None and criterion not in allowed:
        raise ParameterError(f"estimator criterion={criterion!r} does not apply to "
                             f"algorithm={algorithm!r}, which grows its trees by "
                             f"{' or '.join(repr(c) for c in allowed)}; leave criterion "
                             f"unset (None)")
    if p.get("class_weight") is not None:
        raise ParameterError("estimator class_weight: AdaBoost's row weights are its "
                             "boosting weights; pass sample_weight to fit instead")
    if p.get("ccp_alpha", 0.0):
        raise ParameterError("estimator ccp_alpha: weak trees are not pruned after "
                             "growing; limit them with max_depth, min_samples_leaf or "
                             "max_leaf_nodes")
    task = "regression" if algorithm == "R2" else "classification"
    config = resolve_config("decision_tree", {**p, "random_state": 0}, task=task,
                            n_rows=n_rows, n_features=n_features, classes=[0, 1])
    return WeakTree(
        criterion=criterion if criterion not in (None, "log_loss", "friedman_mse")
        else {"log_loss": "entropy", "friedman_mse": "squared_error"}.get(criterion, own),
        max_depth=config.max_depth, splitter=config.splitter,
        min_samples_split=config.min_samples_split,
        min_samples_leaf=config.min_samples_leaf,
        min_weight_fraction_leaf=config.min_weight_fraction_leaf,
        min_impurity_decrease=config.min_impurity_decrease,
        max_leaf_nodes=config.max_leaf_nodes, features_per_node=config.features_per_node)
