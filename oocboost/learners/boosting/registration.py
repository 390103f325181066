"""``--learner gbtree``: gradient boosting in the XGBoost style (``training.train``)."""
from ..registry import LearnerSpec, TrainRequest, register
from .params import BOOSTER_SPEC


def train_from_request(request: TrainRequest):
    """The command line's boosting run: evaluation caches named ``valid`` (``valid_K``
    when several), early stopping on the last one, checkpoints, verbosity from
    ``--verbose`` / ``--quiet`` unless ``verbosity`` is given."""
    from .callback import TrainingCheckPoint
    from .training import train

    params = dict(request.params)
    if request.verbose:
        params.setdefault("verbosity", 2)
    elif request.quiet:
        params.setdefault("verbosity", 0)
    evals = [(path, f"valid_{i}" if len(request.valid) > 1 else "valid")
             for i, path in enumerate(request.valid)]
    callbacks = []
    if request.checkpoint:
        callbacks.append(TrainingCheckPoint(request.checkpoint, request.checkpoint_interval))
    return train(params, request.cache, request.n_estimators, evals=evals,
                 early_stopping_rounds=request.early_stopping_rounds, callbacks=callbacks,
                 init_model=request.init_model, verbose_eval=not request.quiet,
                 memory_limit=request.memory_limit)


register(LearnerSpec(
    name="gbtree", aliases=("gbdt",),
    summary="gradient boosting, XGBoost's parameters and objectives (default)",
    train=train_from_request,
    options=frozenset({"init_model", "valid", "early_stopping_rounds", "checkpoint"}),
    warmup_profile="boosting", params=BOOSTER_SPEC,
    estimators={
        "GradientBoostingClassifier": "oocboost.sklearn.boosting:GradientBoostingClassifier",
        "GradientBoostingRegressor": "oocboost.sklearn.boosting:GradientBoostingRegressor",
        "GradientBoostingRanker": "oocboost.sklearn.ranking:GradientBoostingRanker",
    }))
