"""oocboost: tree ensembles trained out of core, with a memory limit you set.

Build a binned, compressed cache once, then train from it block by block::

    import oocboost
    cache = oocboost.build_cache("train.csv", "train.oocb", label="y")
    model = oocboost.train({"objective": "binary:logistic"}, cache, 100)
    model.save_model("model.json")
    oocboost.load_model("model.json").predict(X)
"""
__version__ = "0.1.0"

from .errors import (  # noqa: F401
    CacheError,
    InputError,
    MemoryLimitError,
    ModelError,
    OocboostError,
    ParameterError,
    SchemaError,
)

_TREES = ("DecisionTreeClassifier", "DecisionTreeRegressor")
_FORESTS = ("RandomForestClassifier", "RandomForestRegressor", "ExtraTreesClassifier",
            "ExtraTreesRegressor", "BaggingClassifier", "BaggingRegressor")
_TREE_ESTIMATORS = (*_TREES, *_FORESTS, "export_text", "permutation_importance")


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
    if name == "cv":
        from .learners.boosting.cv import cv
        return cv
    if name in ("StackingClassifier", "StackingRegressor"):
        from .sklearn import stacking
        return getattr(stacking, name)
    if name in ("load_model", "Model"):
        from .model import model
        return getattr(model, name)
    if name in ("TrainingCallback", "EarlyStopping", "EvaluationMonitor",
                "TrainingCheckPoint", "LearningRateScheduler"):
        from .learners.boosting import callback
        return getattr(callback, name)
    if name in ("GradientBoostingClassifier", "GradientBoostingRegressor"):
        from .sklearn import boosting
        return getattr(boosting, name)
    if name == "GradientBoostingRanker":
        from .sklearn.ranking import GradientBoostingRanker
        return GradientBoostingRanker
    if name in _TREES:
        from .sklearn import trees
        return getattr(trees, name)
    if name in _FORESTS:
        from .sklearn import forests
        return getattr(forests, name)
    if name == "export_text":
        from .inspection.tree_text import export_text
        return export_text
    if name == "permutation_importance":
        from .inspection.permutation import permutation_importance
        return permutation_importance
    if name in ("AdaBoostClassifier", "AdaBoostRegressor"):
        from .sklearn import adaboost
        return getattr(adaboost, name)
    if name in ("HoeffdingTreeClassifier", "HoeffdingTreeRegressor"):
        from .sklearn import hoeffding
        return getattr(hoeffding, name)
    if name in ("DecisionStreamClassifier", "DecisionStreamRegressor"):
        from .sklearn import decision_stream
        return getattr(decision_stream, name)
    if name in ("MARSRegressor", "MARSClassifier"):
        from .sklearn import mars
        return getattr(mars, name)
    if name == "OnlineBaggingClassifier":
        from .sklearn.online_bagging import OnlineBaggingClassifier
        return OnlineBaggingClassifier
    raise AttributeError(f"module 'oocboost' has no attribute {name!r}")


__all__ = ["build_cache", "Cache", "train", "cv", "load_model", "Model", "TrainingCallback",
           "EarlyStopping", "EvaluationMonitor", "TrainingCheckPoint",
           "LearningRateScheduler", "GradientBoostingClassifier", "GradientBoostingRegressor",
           "GradientBoostingRanker", *_TREE_ESTIMATORS, "AdaBoostClassifier", "AdaBoostRegressor",
           "HoeffdingTreeClassifier", "HoeffdingTreeRegressor", "OnlineBaggingClassifier",
           "DecisionStreamClassifier", "DecisionStreamRegressor", "MARSRegressor",
           "MARSClassifier",
           "StackingClassifier", "StackingRegressor",
           "OocboostError", "InputError", "SchemaError", "CacheError", "ModelError",
           "ParameterError", "MemoryLimitError"]
