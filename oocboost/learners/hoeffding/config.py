"""A Hoeffding tree's settings: river's parameter names and defaults, validated into a
:class:`HoeffdingConfig`."""
import math
from dataclasses import dataclass

from ...errors import ParameterError
from ..common.validate import int_param

SPLIT_CRITERIA = ("info_gain", "gini")
CLASSIFIER_LEAF_PREDICTIONS = ("mc", "nb", "nba")
REGRESSOR_LEAF_PREDICTIONS = ("mean",)


@dataclass
class HoeffdingConfig:
    """Resolved settings of one Hoeffding tree (see :func:`resolve_config`).

    Attributes follow river's ``HoeffdingTreeClassifier`` / ``HoeffdingTreeRegressor``
    and ``ExtremelyFastDecisionTreeClassifier``; ``split_revision`` turns the tree into
    the latter (Hoeffding Anytime Tree). ``max_leaves`` and ``memory_limit`` bound the
    histograms kept for split decisions (river's ``max_size``).
    """

    task: str                         # "classification" or "regression"
    n_classes: int                    # K, 0 for regression
    grace_period: float = 200.0
    max_depth: object = None          # int or None
    split_criterion: str = "info_gain"
    delta: float = 1e-7
    tau: float = 0.05
    leaf_prediction: str = "nba"
    nb_threshold: float = 0.0
    min_branch_fraction: float = 0.01
    max_share_to_split: float = 0.99
    min_samples_split: float = 5.0
    merit_preprune: bool = True
    split_revision: bool = False
    min_samples_reevaluate: float = 20.0
    max_leaves: object = None         # int or None
    memory_limit: object = None       # bytes or None

    @property
    def n_stats(self):
        """Statistics a row adds: K class weights and a count, or (w, w y, w y^2, count)."""
        return self.n_classes + 1 if self.task == "classification" else 4

    @property
    def criterion_code(self):
        from ...kernels.split import CRITERIA

        if self.task == "regression":
            return CRITERIA["squared_error"]
        return CRITERIA["entropy" if self.split_criterion == "info_gain" else "gini"]

    @property
    def merit_range(self):
        """``R`` of the Hoeffding bound: log2 K for information gain, 1 for gini, and 1
        for the regressor's ratio of merits (river's ranges)."""
        if self.task == "classification" and self.split_criterion == "info_gain":
            return math.log2(max(self.n_classes, 2))
        return 1.0


def _choice(name, value, choices):
    if value not in choices:
        raise ParameterError(f"{name} must be one of {', '.join(map(repr, choices))}, "
                             f"got {value!r}")
    return value


def resolve_config(task, n_classes, *, grace_period=200, max_depth=None,
                   split_criterion="info_gain", delta=1e-7, tau=0.05, leaf_prediction=None,
                   nb_threshold=0, min_branch_fraction=0.01, max_share_to_split=0.99,
                   min_samples_split=5, merit_preprune=True, split_revision=False,
                   min_samples_reevaluate=20, max_leaves=None, memory_limit=None):
    """Validate parameters into a :class:`HoeffdingConfig`; every bad value raises
    ParameterError naming the parameter and what it accepts.

    >>> resolve_config("classification", 2, delta=1e-5).merit_range
    1.0
    """
    from ...utils.budget import check_limit
    from .params import HOEFFDING_SPEC

    if task not in ("classification", "regression"):
        raise ParameterError(f"task must be 'classification' or 'regression', got {task!r}")
    classification = task == "classification"
    if classification:
        n_classes = int_param("n_classes", n_classes, 2)
        leaf_prediction = _choice("leaf_prediction", leaf_prediction or "nba",
                                  CLASSIFIER_LEAF_PREDICTIONS)
    else:
        n_classes = 0
        leaf_prediction = _choice("leaf_prediction", leaf_prediction or "mean",
                                  REGRESSOR_LEAF_PREDICTIONS)
    for name, value in (("merit_preprune", merit_preprune),
                        ("split_revision", split_revision)):
        if not isinstance(value, bool):    # 0 and 1 are not flags here, as in river
            raise ParameterError(f"parameter {name} must be True or False, got {value!r}")
    if split_revision and not classification:
        raise ParameterError("split_revision=True (Extremely Fast Decision Tree) is a "
                             "classifier's option")
    spec = HOEFFDING_SPEC
    return HoeffdingConfig(
        task=task, n_classes=n_classes,
        grace_period=spec["grace_period"].check(grace_period),
        max_depth=spec["max_depth"].check(max_depth),
        split_criterion=spec["split_criterion"].check(split_criterion),
        delta=spec["delta"].check(delta), tau=spec["tau"].check(tau),
        leaf_prediction=leaf_prediction,
        nb_threshold=spec["nb_threshold"].check(nb_threshold),
        min_branch_fraction=spec["min_branch_fraction"].check(min_branch_fraction),
        max_share_to_split=spec["max_share_to_split"].check(max_share_to_split),
        min_samples_split=spec["min_samples_split"].check(min_samples_split),
        merit_preprune=merit_preprune, split_revision=split_revision,
        min_samples_reevaluate=spec["min_samples_reevaluate"].check(min_samples_reevaluate),
        max_leaves=spec["max_leaves"].check(max_leaves),
        memory_limit=check_limit(memory_limit))
