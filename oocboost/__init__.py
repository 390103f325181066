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
    OutputError,
    ParameterError,
    SchemaError,
)

#: Public names that are not a learner's estimators -> "module:attribute".
_EXPORTS = {
    "build_cache": "oocboost.cache.build:build_cache",
    "Cache": "oocboost.cache.store:Cache",
    "train": "oocboost.learners.boosting.training:train",
    "cv": "oocboost.learners.boosting.cv:cv",
    "load_model": "oocboost.model.model:load_model",
    "Model": "oocboost.model.model:Model",
    **{name: f"oocboost.learners.boosting.callback:{name}" for name in (
        "TrainingCallback", "EarlyStopping", "EvaluationMonitor", "TrainingCheckPoint",
        "LearningRateScheduler")},
    "export_text": "oocboost.inspection.tree_text:export_text",
    "permutation_importance": "oocboost.inspection.permutation:permutation_importance",
    "StackingClassifier": "oocboost.sklearn.stacking:StackingClassifier",
    "StackingRegressor": "oocboost.sklearn.stacking:StackingRegressor",
}


def _exports():
    """Every lazily exported name: the table above and each registered learner's
    estimators (``learners/registry.py``)."""
    from .learners import registry

    table = dict(_EXPORTS)
    for spec in registry.specs():
        table.update(spec.estimators)
    return table


_ERRORS = ["OocboostError", "InputError", "SchemaError", "CacheError", "ModelError",
           "ParameterError", "MemoryLimitError", "OutputError"]


def __getattr__(name):
    # Lazy: importing oocboost stays cheap (no numba, no pyarrow, no learner) until a name
    # is used. ``__all__`` too is computed on first use (``from oocboost import *``): it
    # lists the learners' estimators, which needs every learner's registration, and a
    # module-level ``__all__`` made ``import oocboost`` cost 0.64 s instead of 0.02 s.
    if name == "__all__":
        return [*_exports(), *_ERRORS]
    target = _exports().get(name)
    if target is None:
        raise AttributeError(f"module 'oocboost' has no attribute {name!r}")
    from .learners.registry import resolve

    return resolve(target)


def __dir__():
    return sorted({*globals(), *_exports(), "__all__"})
