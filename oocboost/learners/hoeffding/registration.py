"""``--learner hoeffding-tree`` and ``online-bagging``: river's streaming trees, learned in
one pass over a cache or straight from a file's record batches."""
import os

from ...errors import ParameterError
from ..registry import LearnerSpec, TrainRequest, register
from .params import ADAPTIVE_FOREST_SPEC, ADAPTIVE_TREE_SPEC, HOEFFDING_SPEC


def train_from_request(request: TrainRequest):
    """A cache (going on from ``init_model`` when given), or a file read once."""
    cache = request.cache
    if isinstance(cache, (str, os.PathLike)) and not os.path.isdir(cache):
        from .files import learn_file

        if request.init_model is not None:
            raise ParameterError("--init-model takes a cache: build one from the file")
        params = dict(request.params)
        return learn_file(request.learner, params, cache, label=request.label,
                          reference=request.reference, num_class=request.num_class,
                          n_estimators=request.n_estimators,
                          memory_limit=request.memory_limit, verbose=request.verbose)
    from .train import train_hoeffding_from_params

    return train_hoeffding_from_params(request.learner, request.params, cache,
                                       n_estimators=request.n_estimators,
                                       memory_limit=request.memory_limit,
                                       verbose=request.verbose,
                                       init_model=request.init_model)


_OPTIONS = frozenset({"init_model", "files"})
register(LearnerSpec(
    name="hoeffding-tree", summary="a Hoeffding tree (river's names), one pass over a "
                                   "cache or a file",
    train=train_from_request, options=_OPTIONS, params=HOEFFDING_SPEC,
    estimators={name: f"oocboost.sklearn.hoeffding:{name}" for name in (
        "HoeffdingTreeClassifier", "HoeffdingTreeRegressor")}))
register(LearnerSpec(
    name="online-bagging", summary="Oza's online bagging of Hoeffding trees",
    train=train_from_request, options=_OPTIONS, params=HOEFFDING_SPEC,
    estimators={"OnlineBaggingClassifier":
                "oocboost.sklearn.online_bagging:OnlineBaggingClassifier"}))


def train_adaptive_forest(request: TrainRequest):
    """A cache, learned once (no ``--init-model``: the detectors are not saved)."""
    from .train import train_adaptive_forest_from_params

    return train_adaptive_forest_from_params(request.params, request.cache,
                                             n_estimators=request.n_estimators,
                                             memory_limit=request.memory_limit,
                                             verbose=request.verbose)


register(LearnerSpec(
    name="adaptive-random-forest", summary="river's adaptive random forest: online "
                                           "bagging with drift detection, one pass",
    train=train_adaptive_forest, options=frozenset(), params=ADAPTIVE_FOREST_SPEC,
    estimators={name: f"oocboost.sklearn.adaptive_forest:{name}" for name in (
        "AdaptiveRandomForestClassifier", "AdaptiveRandomForestRegressor")}))


def train_adaptive_tree(request: TrainRequest):
    """A cache, learned once (no ``--init-model``: the detectors are not saved)."""
    from .train import train_adaptive_tree_from_params

    return train_adaptive_tree_from_params(request.params, request.cache,
                                           memory_limit=request.memory_limit,
                                           verbose=request.verbose)


register(LearnerSpec(
    name="hoeffding-adaptive-tree", summary="river's Hoeffding adaptive tree: drift "
                                            "detection and alternate subtrees, one pass",
    train=train_adaptive_tree, options=frozenset(), params=ADAPTIVE_TREE_SPEC,
    estimators={name: f"oocboost.sklearn.adaptive_tree:{name}" for name in (
        "HoeffdingAdaptiveTreeClassifier", "HoeffdingAdaptiveTreeRegressor")}))
