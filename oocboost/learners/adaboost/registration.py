"""``--learner adaboost``: AdaBoost's families (SAMME, SAMME.R, gentle, LogitBoost, arc-x4,
M1, MH, R2) on the engine's CART trees (``adaboost.train_adaboost_from_params``)."""
from ..registry import LearnerSpec, TrainRequest, register
from .params import ADABOOST_SPEC


def train_from_request(request: TrainRequest):
    from .adaboost import train_adaboost_from_params

    return train_adaboost_from_params(request.params, request.cache,
                                      n_estimators=request.n_estimators,
                                      memory_limit=request.memory_limit,
                                      verbose=request.verbose)


register(LearnerSpec(
    name="adaboost", summary="AdaBoost (SAMME, SAMME.R, gentle, LogitBoost, arc-x4, M1, "
                             "MH, R2) of CART trees",
    train=train_from_request, warmup_profile="adaboost", params=ADABOOST_SPEC,
    estimators={name: f"oocboost.sklearn.adaboost:{name}" for name in (
        "AdaBoostClassifier", "AdaBoostRegressor")}))
