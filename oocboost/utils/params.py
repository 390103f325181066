"""Parameters declared once: a learner lists each of its parameters as a :class:`Param`
(name, kind, default, range or choices, aliases, one doc line) in a :class:`ParamSpec`.

From the spec come the defaults, the alias table, the check of every value and the
"unknown parameter" message with the nearest names; ``tests/learners/test_param_specs.py``
checks the estimators' signatures and docs/parameters.md's tables against it. A learner's
own rules between parameters (``max_depth=0`` needs ``lossguide``) stay in the learner,
after :meth:`ParamSpec.resolve`.

Example::

    SPEC = ParamSpec("gbtree", [
        Param("learning_rate", "float", 0.3, "multiplies every leaf value",
              low=0.0, low_open=True, aliases=("eta",)),
        Param("grow_policy", "choice", "depthwise", "how trees grow",
              choices=("depthwise", "lossguide")),
    ])
    SPEC.resolve({"eta": 0.1})   # {"learning_rate": 0.1, "grow_policy": "depthwise"}
"""
from __future__ import annotations

import difflib
import math
import numbers
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import ParameterError

#: What a parameter holds. ``int`` and ``float`` accept numbers and numeric strings (the
#: command line's ``--param k=v``); ``any`` is checked by the learner.
KINDS = ("int", "float", "bool", "choice", "str", "any")


@dataclass(frozen=True)
class Param:
    """One parameter of a learner.

    Attributes
    ----------
    name : str
        The name the learner uses (XGBoost's for boosting, scikit-learn's for trees).
    kind : {"int", "float", "bool", "choice", "str", "any"}
    default : Any
        The value when not given; None when the learner derives it (``default_doc`` says
        from what).
    doc : str
        One line for the docs.
    low, high : float or None
        Inclusive bounds unless ``low_open`` / ``high_open``.
    choices : tuple
        The values a ``choice`` takes.
    nullable : bool
        None is a value (besides a None default, which always is).
    aliases : tuple of str
        Other names accepted (XGBoost's, LightGBM's, scikit-learn's).
    default_doc : str
        How a derived default is chosen, e.g. ``"gini (classification)"``.
    """

    name: str
    kind: str
    default: Any
    doc: str
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    choices: tuple = ()
    nullable: bool = False
    aliases: tuple[str, ...] = ()
    default_doc: str = ""

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"parameter {self.name}: kind {self.kind!r} not in {KINDS}")
        if self.kind == "choice" and not self.choices:
            raise ValueError(f"parameter {self.name}: a choice needs choices")

    def expected(self) -> str:
        """What the parameter takes, as the error messages say it."""
        if self.kind == "choice":
            text = "one of " + ", ".join(repr(c) for c in self.choices)
        elif self.kind in ("int", "float"):
            noun = "an integer" if self.kind == "int" else "a number"
            bounds = []
            if self.low is not None:
                bounds.append(f"{'>' if self.low_open else '>='} {_num(self.low)}")
            if self.high is not None:
                bounds.append(f"{'<' if self.high_open else '<='} {_num(self.high)}")
            text = noun + (" " + " and ".join(bounds) if bounds else "")
            if self.low is not None and self.high is not None:
                lo, hi = "(" if self.low_open else "[", ")" if self.high_open else "]"
                text = f"{noun} in {lo}{_num(self.low)}, {_num(self.high)}{hi}"
        elif self.kind == "bool":
            text = "True or False"
        elif self.kind == "str":
            text = "a string"
        else:
            text = "a value"
        if self.nullable or (self.default is None and self.kind != "any"):
            text += " or None"
        return text

    def check(self, value: Any) -> Any:
        """``value`` converted to the parameter's kind, or ``ParameterError`` naming the
        parameter, the value and what it takes."""
        if value is None and (self.nullable or self.default is None):
            return None
        if self.kind == "any":
            return value
        checked = _convert(self, value)
        if checked is _BAD:
            raise ParameterError(f"parameter {self.name} must be {self.expected()}, got "
                                 f"{value!r}")
        return checked


_BAD = object()


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else str(x)


def _convert(param: Param, value: Any) -> Any:
    """The converted value, or ``_BAD``."""
    kind = param.kind
    if kind == "choice":
        # 1 is not True here: a choice of strings or flags takes exactly its values
        return value if any(value == c and isinstance(value, bool) == isinstance(c, bool)
                            for c in param.choices) else _BAD
    if kind == "str":
        return value if isinstance(value, str) else _BAD
    if kind == "bool":
        if isinstance(value, (bool, np.bool_)):
            return bool(value)
        if isinstance(value, numbers.Integral) and value in (0, 1):
            return bool(value)
        return _BAD
    number = _as_number(value, flag_ok=param.kind == "int" and param.low == 0
                        and param.high == 1)
    if number is _BAD or not math.isfinite(number):
        return _BAD
    if kind == "int":
        if not float(number).is_integer():
            return _BAD
        number = int(number)
    else:
        number = float(number)
    low, high = param.low, param.high
    if low is not None and (number <= low if param.low_open else number < low):
        return _BAD
    if high is not None and (number >= high if param.high_open else number > high):
        return _BAD
    return number


def _as_number(value: Any, *, flag_ok: bool) -> Any:
    """A real number from a number or a numeric string; a bool only for 0/1 flags."""
    if isinstance(value, (bool, np.bool_)):
        return int(value) if flag_ok else _BAD
    if isinstance(value, numbers.Real):
        return value
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return _BAD
    return _BAD


class ParamSpec:
    """Every parameter of one learner, in the order the docs list them.

    Parameters
    ----------
    learner : str
        Named in the messages (``unknown parameter 'x' for gbtree``).
    params : iterable of Param
    refused : mapping of str to str
        Names that are not parameters, with what to do instead (``n_estimators``:
        "pass it to train() as num_boost_round").
    """

    def __init__(self, learner: str, params: Iterable[Param], *,
                 refused: Mapping[str, str] | None = None) -> None:
        self.learner = learner
        self.params: dict[str, Param] = {}
        self.aliases: dict[str, str] = {}
        self.refused = dict(refused or {})
        for p in params:
            for name in (p.name, *p.aliases):
                if name in self.params or name in self.aliases:
                    raise ValueError(f"{learner}: parameter name {name!r} declared twice")
            self.params[p.name] = p
            for alias in p.aliases:
                self.aliases[alias] = p.name

    def __iter__(self) -> Iterator[Param]:
        return iter(self.params.values())

    def __contains__(self, name: object) -> bool:
        return name in self.params

    def __getitem__(self, name: str) -> Param:
        return self.params[name]

    def describe(self) -> str:
        """One line per parameter: name (aliases), default, what it takes, its doc line
        (``oocboost train --list-params LEARNER``)."""
        lines = []
        for p in self.params.values():
            name = p.name + (f" ({', '.join(p.aliases)})" if p.aliases else "")
            default = p.default_doc or repr(p.default)
            takes = "" if p.kind == "any" else f" ({p.expected()})"
            lines.append(f"{name:34} {default:24} {p.doc}{takes}")
        for name, instead in self.refused.items():
            lines.append(f"{name:34} {'refused':24} {instead}")
        return "\n".join(lines)

    def names(self) -> list[str]:
        """The parameters' names, in declaration order."""
        return list(self.params)

    def defaults(self) -> dict[str, Any]:
        """name -> default."""
        return {p.name: p.default for p in self.params.values()}

    def canonical(self, key: str, *, owner: str | None = None) -> str:
        """The parameter ``key`` names (itself or through an alias); ``ParameterError``
        with the nearest known names when none. ``owner`` names the learner in the
        message instead of the spec's name (``--learner random-forest``)."""
        owner = owner or self.learner
        if key in self.refused:
            raise ParameterError(f"{key} is not a {owner} parameter: {self.refused[key]}")
        if key in self.params:
            return key
        if key in self.aliases:
            return self.aliases[key]
        close = difflib.get_close_matches(str(key), [*self.params, *self.aliases])
        hint = (f" (did you mean {', '.join(close)}?)" if close
                else f"; known: {', '.join(self.params)}")
        raise ParameterError(f"unknown parameter {key!r} for {owner}{hint}")

    def resolve(self, given: Mapping[str, Any] | None, *, defaults: bool = True,
                owner: str | None = None) -> dict[str, Any]:
        """``given`` by canonical name, each value checked; with ``defaults`` every
        parameter, the missing ones at their default. Two names of one parameter are
        refused."""
        out = self.defaults() if defaults else {}
        seen: dict[str, str] = {}
        for key, value in (given or {}).items():
            name = self.canonical(key, owner=owner)
            if name in seen and seen[name] != key:
                raise ParameterError(f"parameters {seen[name]!r} and {key!r} are aliases; "
                                     f"give one")
            seen[name] = key
            out[name] = self.params[name].check(value)
        return out
