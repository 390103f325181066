"""``--learner random-forest``, ``extra-trees``, ``decision-tree``: CART trees grown in
passes over the cache, scikit-learn's parameters (``forest.train_forest_from_params``)."""
from ..registry import LearnerSpec, TrainRequest, register
from .params import FOREST_SPEC


def train_from_request(request: TrainRequest):
    """Forests add ``n_estimators`` trees to ``init_model`` when given."""
    from .forest import train_forest_from_params

    return train_forest_from_params(request.learner, request.params, request.cache,
                                    n_estimators=request.n_estimators,
                                    memory_limit=request.memory_limit,
                                    verbose=request.verbose, init_model=request.init_model)


_SKLEARN = "oocboost.sklearn"
register(LearnerSpec(
    name="random-forest", summary="Breiman's random forest (bootstrap, features per node)",
    train=train_from_request, params=FOREST_SPEC, options=frozenset({"init_model"}),
    warmup_profile="forest",
    estimators={name: f"{_SKLEARN}.forests:{name}" for name in (
        "RandomForestClassifier", "RandomForestRegressor", "BaggingClassifier",
        "BaggingRegressor")}))
register(LearnerSpec(
    name="extra-trees", summary="extremely randomised trees (random thresholds)",
    train=train_from_request, params=FOREST_SPEC, options=frozenset({"init_model"}),
    warmup_profile="forest",
    estimators={name: f"{_SKLEARN}.forests:{name}" for name in (
        "ExtraTreesClassifier", "ExtraTreesRegressor")}))
register(LearnerSpec(
    name="decision-tree", summary="one CART tree (gini, entropy, squared error, ...)",
    train=train_from_request, params=FOREST_SPEC, warmup_profile="forest",
    estimators={name: f"{_SKLEARN}.trees:{name}" for name in (
        "DecisionTreeClassifier", "DecisionTreeRegressor")}))
