"""``--learner decision-stream``: decision streams (trees whose similar leaves merge),
``decision_stream.train.train_stream_from_params``."""
from ..registry import LearnerSpec, TrainRequest, register
from .params import STREAM_SPEC


def train_from_request(request: TrainRequest):
    from .train import train_stream_from_params

    return train_stream_from_params(request.params, request.cache,
                                    memory_limit=request.memory_limit,
                                    verbose=request.verbose)


register(LearnerSpec(
    name="decision-stream", summary="a decision stream: a tree whose statistically "
                                    "similar leaves merge",
    train=train_from_request, params=STREAM_SPEC,
    estimators={name: f"oocboost.sklearn.decision_stream:{name}" for name in (
        "DecisionStreamClassifier", "DecisionStreamRegressor")}))
