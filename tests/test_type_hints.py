"""Type hints on the public API and on the engine's and the learners' interfaces: every
public function and method of these modules, and every function ``oocboost`` exports,
annotates each parameter and its return value (``__init__`` its parameters).

ruff's annotation rules check the same on the modules written typed from the start
(``.ci/run``); this test covers the public surface of the older ones too."""
import importlib
import inspect

import pytest

import oocboost

INTERFACE_MODULES = [
    "oocboost.engine.passes", "oocboost.engine.policies", "oocboost.engine.grower",
    "oocboost.engine.partitioner", "oocboost.engine.histograms",
    "oocboost.engine.feature_sampling", "oocboost.engine.split_finder",
    "oocboost.engine.nodes", "oocboost.learners.registry", "oocboost.utils.params",
    "oocboost.model.parts",
]


def _missing(function, name):
    signature = inspect.signature(function)
    out = [f"{name}({p})" for p, arg in signature.parameters.items()
           if p not in ("self", "cls") and arg.kind not in (arg.VAR_POSITIONAL,
                                                             arg.VAR_KEYWORD)
           and arg.annotation is inspect.Parameter.empty]
    if signature.return_annotation is inspect.Signature.empty \
            and not name.endswith("__init__"):
        out.append(f"{name} -> ?")
    return out


def _methods(cls):
    for name, attr in vars(cls).items():
        if name.startswith("_") and name != "__init__":
            continue
        if isinstance(attr, (staticmethod, classmethod)):
            attr = attr.__func__
        if isinstance(attr, property):
            attr = attr.fget
        if inspect.isfunction(attr):
            yield name, attr


def _public(module_name):
    module = importlib.import_module(module_name)
    for name, obj in vars(module).items():
        if name.startswith("_") or getattr(obj, "__module__", None) != module_name:
            continue
        if inspect.isfunction(obj):
            yield f"{module_name}.{name}", obj
        elif inspect.isclass(obj):
            for method, function in _methods(obj):
                yield f"{module_name}.{name}.{method}", function


@pytest.mark.parametrize("module_name", INTERFACE_MODULES)
def test_engine_and_learner_interfaces_are_annotated(module_name):
    missing = [m for name, f in _public(module_name) for m in _missing(f, name)]
    assert not missing, missing
    assert any(True for _ in _public(module_name))


def test_public_api_is_annotated():
    from oocboost.cache.store import Cache
    from oocboost.model.model import Model

    missing = []
    for name in oocboost.__all__:
        obj = getattr(oocboost, name)
        if inspect.isfunction(obj):
            missing += _missing(obj, name)
    for cls in (Model, *Model.__mro__[1:3], Cache):
        for method, function in _methods(cls):
            missing += _missing(function, f"{cls.__name__}.{method}")
    assert not missing, missing
    assert inspect.signature(oocboost.train).return_annotation == "Model"
