"""``--learner isolation-forest``: scikit-learn's ``IsolationForest``, trees grown from
the rows each one draws, gathered in one pass (``isolation.train``)."""
from ..registry import LearnerSpec, TrainRequest, register
from .params import ISOLATION_SPEC


def train_from_request(request: TrainRequest):
    """Isolation forests add ``n_estimators`` trees to ``init_model`` when given."""
    from .train import train_isolation_from_params

    return train_isolation_from_params(request.params, request.cache,
                                       n_estimators=request.n_estimators,
                                       memory_limit=request.memory_limit,
                                       verbose=request.verbose,
                                       init_model=request.init_model)


register(LearnerSpec(
    name="isolation-forest", summary="anomaly detection: Liu et al.'s isolation forest "
                                     "(no label needed)",
    train=train_from_request, params=ISOLATION_SPEC, options=frozenset({"init_model"}),
    warmup_profile="isolation",
    estimators={"IsolationForest": "oocboost.sklearn.isolation:IsolationForest"}))
