"""The learner registry: every ``--learner`` of the command line, every learner
``train_learner`` runs, the warm-up profile of each and the estimators ``oocboost``
exports come from one :class:`LearnerSpec` per learner.

A learner is one folder under ``learners/`` with a ``registration.py`` that calls
:func:`register` once. The registry finds those modules itself (:func:`discover`), so
adding a learner touches no shared file::

    # oocboost/learners/my_learner/registration.py
    from ..registry import LearnerSpec, register

    register(LearnerSpec(
        name="my-learner", summary="one line for `oocboost train --help`",
        train="oocboost.learners.my_learner.train:train_from_request"))

``train`` names (``"module:function"``, imported only when the learner runs, so ``oocboost
--help`` stays cheap) or is a function taking a :class:`TrainRequest` and returning a
:class:`~oocboost.model.model.Model`. Options a learner does not declare in ``options``
are refused before it runs, naming the learner.
"""
from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import pkgutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import ParameterError
from ..model.checks import allow_learner
from ..model.parts import ModelPart, register_part, unregister_part
from ..utils.params import ParamSpec

#: Options of a training request beyond params, rounds, memory limit and verbosity; a
#: learner lists those it takes in :attr:`LearnerSpec.options`.
OPTIONS = {
    "init_model": "--init-model",
    "valid": "--valid",
    "early_stopping_rounds": "--early-stopping",
    "checkpoint": "--checkpoint",
    "files": "a CSV/Parquet/Arrow file instead of a cache",
}


@dataclass(frozen=True)
class TrainRequest:
    """What a caller asks a learner to train (the command line's ``train`` options).

    Attributes
    ----------
    learner : str
        The learner's registered name (an alias is resolved before the learner sees it).
    params : Mapping[str, Any]
        Parameters by the learner's names (``--param key=value``).
    cache : Cache, path, or with ``"files"`` a data file's path
    n_estimators : int
        Boosting rounds or trees (``--rounds``); with ``init_model``, those added.
    memory_limit : int, str or None
        Peak memory of the process (bytes, or a size such as ``"1GB"``).
    """

    learner: str
    params: Mapping[str, Any]
    cache: Any
    n_estimators: int = 100
    memory_limit: int | str | None = None
    verbose: bool = False
    quiet: bool = False
    init_model: Any = None
    valid: tuple = ()
    early_stopping_rounds: int | None = None
    checkpoint: str | None = None
    checkpoint_interval: int = 10
    label: str | None = None
    reference: str | None = None
    num_class: int | None = None


@dataclass(frozen=True)
class LearnerSpec:
    """One learner as the rest of the package sees it.

    Attributes
    ----------
    name : str
        The ``--learner`` name (lower case, words joined by ``-``).
    summary : str
        One line for ``oocboost train --help``.
    train : str or callable
        ``"module:function"`` or the function itself: ``(TrainRequest) -> Model``.
    aliases : tuple of str
        Other names ``--learner`` accepts.
    options : frozenset of str
        Keys of :data:`OPTIONS` the learner takes.
    warmup_profile : str or None
        The profile of ``kernels/warm_signatures.json`` compiled before its first run.
    estimators : Mapping[str, str]
        Public names ``oocboost`` exports -> ``"module:attribute"``.
    model_learners : tuple of str
        The ``learner`` values its models carry (``model/checks.py`` accepts them once
        registered); the built-in ones are known to the model layer already.
    model_parts : tuple of ModelPart subclasses
        The parts its models carry beside the trees (``model/parts.py``): registered
        with the model layer, so their files load (the built-in ones are known to it
        already).
    params : ParamSpec or None
        Its parameters (``utils/params.py``): ``--param`` names and values are checked
        against it, aliases resolved, before the learner runs; the estimators' signatures
        and docs/parameters.md are tested against it.
    """

    name: str
    summary: str
    train: str | Callable[[TrainRequest], Any]
    aliases: tuple[str, ...] = ()
    options: frozenset[str] = frozenset()
    warmup_profile: str | None = None
    estimators: Mapping[str, str] = field(default_factory=dict)
    model_learners: tuple[str, ...] = ()
    model_parts: tuple[type[ModelPart], ...] = ()
    params: ParamSpec | None = None

    def __post_init__(self) -> None:
        unknown = sorted(set(self.options) - set(OPTIONS))
        if unknown:
            raise ParameterError(f"learner {self.name!r}: unknown options {unknown}; "
                                 f"known: {sorted(OPTIONS)}")
        if not self.name or self.name != self.name.lower() or " " in self.name:
            raise ParameterError(f"learner name {self.name!r}: lower case, no spaces")

    def train_function(self) -> Callable[[TrainRequest], Any]:
        """The function that trains this learner (imported on first use)."""
        return resolve(self.train)


_SPECS: dict[str, LearnerSpec] = {}
_ALIASES: dict[str, str] = {}
_discovered = False


def resolve(target: str | Callable) -> Any:
    """``"package.module:attribute"`` imported, or ``target`` itself when not a string."""
    if not isinstance(target, str):
        return target
    module, _, attribute = target.partition(":")
    return getattr(importlib.import_module(module), attribute)


def register(spec: LearnerSpec, *, replace: bool = False) -> LearnerSpec:
    """Add ``spec`` to the registry. A name or alias already taken is refused unless
    ``replace`` (which first removes the learner of that name)."""
    if replace:
        unregister(spec.name)
    for name in (spec.name, *spec.aliases):
        owner = _ALIASES.get(name)
        if owner is not None:
            raise ParameterError(f"learner name {name!r} is taken by {owner!r}")
    for name in spec.model_learners:
        allow_learner(name)
    for part in spec.model_parts:
        register_part(part)
    _SPECS[spec.name] = spec
    for name in (spec.name, *spec.aliases):
        _ALIASES[name] = spec.name
    return spec


def unregister(name: str) -> None:
    """Remove a learner (tests register toy learners and take them out again)."""
    spec = _SPECS.pop(name, None)
    if spec is not None:
        for alias in (spec.name, *spec.aliases):
            _ALIASES.pop(alias, None)
        for part in spec.model_parts:
            unregister_part(part.key)


def discover() -> None:
    """Import every ``oocboost.learners.<folder>.registration`` once."""
    global _discovered
    if _discovered:
        return
    _discovered = True
    from .. import learners

    for info in sorted(pkgutil.iter_modules(learners.__path__), key=lambda i: i.name):
        if info.ispkg and importlib.util.find_spec(
                f"{learners.__name__}.{info.name}.registration") is not None:
            importlib.import_module(f"{learners.__name__}.{info.name}.registration")


def specs() -> list[LearnerSpec]:
    """Every registered learner, in registration order (the built-in ones by folder)."""
    discover()
    return list(_SPECS.values())


def names() -> list[str]:
    """Every name ``--learner`` accepts: names, then aliases."""
    discover()
    return list(_ALIASES)


def get(name: str) -> LearnerSpec:
    """The learner called ``name`` (or one of its aliases)."""
    discover()
    canonical = _ALIASES.get(name)
    if canonical is None:
        raise ParameterError(f"unknown learner {name!r}; expected one of "
                             f"{', '.join(s.name for s in _SPECS.values())}")
    return _SPECS[canonical]


def _given_options(request: TrainRequest) -> dict[str, bool]:
    return {"init_model": request.init_model is not None, "valid": bool(request.valid),
            "early_stopping_rounds": request.early_stopping_rounds is not None,
            "checkpoint": request.checkpoint is not None}


def check_options(spec: LearnerSpec, request: TrainRequest) -> None:
    """Refuse the options ``spec`` does not take, naming them and the learners that do."""
    for option, given in _given_options(request).items():
        if given and option not in spec.options:
            takers = [s.name for s in _SPECS.values() if option in s.options]
            raise ParameterError(f"--learner {spec.name} does not take {OPTIONS[option]}"
                                 f" (it is for {', '.join(takers) or 'no learner'})")


def train(request: TrainRequest) -> Any:
    """Train the requested learner (its options and parameters checked first, aliases
    resolved). Returns a Model."""
    spec = get(request.learner)
    request = dataclasses.replace(request, learner=spec.name)
    check_options(spec, request)
    if spec.params is not None:
        request = dataclasses.replace(
            request, params=spec.params.resolve(request.params, defaults=False,
                                                owner=f"--learner {spec.name}"))
    return spec.train_function()(request)
