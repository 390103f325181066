"""oocboost: tree ensembles trained out of core, with a memory limit you set.

Build a binned, compressed cache once, then train from it block by block::

    import oocboost
    cache = oocboost.build_cache("train.csv", "train.oocb", label="y")
    model = oocboost.train({"objective": "binary:logistic"}, cache, 100)
    model.save_model("model.json")
    oocboost.load_model("model.json").predict(X)
"""
__version__ = "0.1.0"

from .errors import (CacheError, InputError, MemoryLimitError, ModelError,  # noqa: F401
                     OocboostError, ParameterError, SchemaError)


_TREE_ESTIMATORS = ("DecisionTreeClassifier", "DecisionTreeRegressor",
                    "RandomForestClassifier", "RandomForestRegressor", "ExtraTreesClassifier",
                    "ExtraTreesRegressor", "BaggingClassifier", "BaggingRegressor",
                    "export_text", "permutation_importance")


def __getattr__(name):
    # Lazy: importing oocboost stays cheap (no numba compilation, no pyarrow) until used.
    if name == "build_cache":
        from .cache.build import build_cache
        return build_cache
    if name == "Cache":
        from .cache.store import Cache
        return Cache
    if name == "train":
        from .learners.boosting.training import train
        return train
    if name in ("load_model", "Model"):
        from .model import model
        return getattr(model, name)
    if name in ("TrainingCallback", "EarlyStopping", "EvaluationMonitor",
                "TrainingCheckPoint", "LearningRateScheduler"):
        from .learners.boosting import callback
        return getattr(callback, name)
    if name in ("GradientBoostingClassifier", "GradientBoostingRegressor"):
        from .sklearn import boosting as estimators
        return getattr(estimators, name)
    if name in _TREE_ESTIMATORS:
        from .sklearn import trees as tree_estimators
        return getattr(tree_estimators, name)
    if name in ("AdaBoostClassifier", "AdaBoostRegressor"):
        from .sklearn import adaboost as adaboost_estimators
        return getattr(adaboost_estimators, name)
    raise AttributeError(f"module 'oocboost' has no attribute {name!r}")


__all__ = ["build_cache", "Cache", "train", "load_model", "Model", "TrainingCallback",
           "EarlyStopping", "EvaluationMonitor", "TrainingCheckPoint",
           "LearningRateScheduler", "GradientBoostingClassifier", "GradientBoostingRegressor",
           *_TREE_ESTIMATORS, "AdaBoostClassifier", "AdaBoostRegressor",
           "OocboostError", "InputError", "SchemaError", "CacheError", "ModelError",
           "ParameterError", "MemoryLimitError"]
