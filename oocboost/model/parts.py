"""A learner's state beside the trees: a :class:`ModelPart`, one per JSON field of the
model file (``"mars"``, ``"naive_bayes"``, ``"stream_state"``).

The core :class:`~oocboost.model.model.Model` holds the trees, how they combine, the
objective, the bin mapper and the feature schema; it knows no learner. A part validates
itself against that core, reads and writes its own field, follows the trees when a model
is sliced or continued, and adds to the margin after the trees (``add_margin``). The
loader reads only fields of the core or of a registered part (``model/checks.py``), so a
learner whose models carry a part registers its class (``LearnerSpec.model_parts``)::

    class LeafBias(ModelPart):
        key = "leaf_bias"
        def __init__(self, bias): self.bias = np.asarray(bias, np.float64)
        def to_json(self): return self.bias.tolist()
        @classmethod
        def from_json(cls, value, doc, where): return cls(value)
        def validate(self, model, fail): ...
        def add_margin(self, model, X, out, t0, t1): out += self.bias
"""
from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, ClassVar

import numpy as np

from ..errors import ModelError

Fail = Callable[[str], None]


class ModelPart:
    """Base of a learner's part of a model (module docstring). Subclasses set ``key``
    and override what they need; the defaults describe a part that holds no per-tree
    entries and adds nothing to predictions."""

    #: The model file's field holding this part.
    key: ClassVar[str] = ""
    #: Raw rows reach ``add_margin`` as float64 (else they may stay float32).
    needs_float64: ClassVar[bool] = False
    #: Why Tree SHAP cannot explain a model with this part, or None when it can.
    shap_refusal: ClassVar[str | None] = None
    #: Left out of ``save_model(path, state=False)`` (learning state, not prediction).
    is_learning_state: ClassVar[bool] = False
    #: ``describe`` says what the part adds to the trees (the summary names both).
    beside_trees: ClassVar[bool] = False

    def to_json(self) -> Any:
        """The field's JSON value."""
        raise NotImplementedError

    @classmethod
    def from_json(cls, value: Any, doc: dict, where: str) -> ModelPart | None:
        """The part from its field's value (``doc`` is the whole, still unchecked model
        document); ModelError naming ``where`` when the value is not valid. None when
        the value holds nothing (an empty list)."""
        raise NotImplementedError

    def validate(self, model: Any, fail: Fail) -> None:
        """Call ``fail(message)`` when the part does not fit ``model``'s core."""

    def sliced(self, t0: int, t1: int) -> ModelPart | None:
        """The part of a model cut to trees ``[t0, t1)`` (tree ids start at 0 again)."""
        return self

    def shifted(self, n_trees: int) -> ModelPart:
        """The part with its trees after ``n_trees`` others (``Model.extend_from`` into
        a model without this part)."""
        return self

    def appended(self, other: ModelPart, n_trees: int) -> ModelPart:
        """This part followed by ``other``'s, whose trees come after this model's
        ``n_trees`` (``Model.extend_from``)."""
        raise ModelError(f"cannot continue a model with a {self.key!r} part by another")

    def add_margin(self, model: Any, X: np.ndarray, out: np.ndarray, t0: int,
                   t1: int) -> None:
        """``out`` (n_rows, n_outputs) += this part's margin for raw rows ``X``, with the
        trees ``[t0, t1)`` taking part."""

    def add_margin_binned(self, model: Any, codes: np.ndarray, missing_bin: int,
                          out: np.ndarray, t0: int, t1: int) -> None:
        """As :meth:`add_margin` for the codes ``(n_features, n_rows)`` of the model's
        own bins."""

    def describe(self) -> str | None:
        """A few words on its size for ``oocboost train``'s last line, or None."""
        return None


class TreeEntries(ModelPart):
    """A part made of one entry per tree (each with a ``tree`` index and ``moved(t)``):
    sliced and continued with the trees."""

    entry_type: ClassVar[type] = object

    def __init__(self, entries: list) -> None:
        self.entries = list(entries)

    def __iter__(self) -> Iterator[Any]:
        return iter(self.entries)

    def __len__(self) -> int:
        return len(self.entries)

    def sliced(self, t0: int, t1: int) -> ModelPart | None:
        kept = [e.moved(e.tree - t0) for e in self.entries if t0 <= e.tree < t1]
        return type(self)(kept) if kept else None

    def shifted(self, n_trees: int) -> ModelPart:
        return type(self)([e.moved(e.tree + n_trees) for e in self.entries])

    def appended(self, other: ModelPart, n_trees: int) -> ModelPart:
        return type(self)(self.entries + other.shifted(n_trees).entries)

    def checked_entries(self, fail: Fail) -> Iterator[tuple[int, Any]]:
        """``(i, entry)``, refusing an entry of another type and a tree listed twice."""
        seen = set()
        for i, entry in enumerate(self.entries):
            if not isinstance(entry, self.entry_type):
                fail(f"{self.key}[{i}] is a {type(entry).__name__}, not "
                     f"{self.entry_type.__name__}")
            if entry.tree in seen:
                fail(f"{self.key}[{i}]: tree {entry.tree} has two entries")
            seen.add(entry.tree)
            yield i, entry


_PARTS: dict[str, type[ModelPart]] = {}


def register_part(cls: type[ModelPart]) -> type[ModelPart]:
    """Let model files carry ``cls.key`` (the loader refuses unknown fields)."""
    if not cls.key:
        raise ValueError(f"{cls.__name__}: a model part needs a key")
    owner = _PARTS.get(cls.key)
    if owner is not None and owner is not cls:
        raise ValueError(f"model part key {cls.key!r} is taken by {owner.__name__}")
    _PARTS[cls.key] = cls
    return cls


def unregister_part(key: str) -> None:
    """Remove a part class (tests register toy parts and take them out again)."""
    _PARTS.pop(key, None)


def part_classes() -> dict[str, type[ModelPart]]:
    """key -> part class, the built-in ones first (``model/model.py`` imports their
    modules, which register them)."""
    return dict(_PARTS)


def read_parts(doc: dict, where: str) -> list[ModelPart]:
    """The parts a model document holds (fields of registered parts that are present
    and not null)."""
    parts = []
    for key, cls in part_classes().items():
        if doc.get(key) is not None:
            part = cls.from_json(doc[key], doc, where)
            if part is not None:
                parts.append(part)
    return parts

