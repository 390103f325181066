"""``--learner mars``: Friedman's multivariate adaptive regression splines on the cache's
bins (``mars.train.train_mars_from_params``)."""
from ..registry import LearnerSpec, TrainRequest, register
from .params import MARS_SPEC


def train_from_request(request: TrainRequest):
    from .train import train_mars_from_params

    return train_mars_from_params(request.params, request.cache,
                                  memory_limit=request.memory_limit, verbose=request.verbose)


register(LearnerSpec(
    name="mars", summary="multivariate adaptive regression splines (Friedman 1991)",
    train=train_from_request, params=MARS_SPEC,
    estimators={name: f"oocboost.sklearn.mars:{name}" for name in (
        "MARSRegressor", "MARSClassifier")}))
