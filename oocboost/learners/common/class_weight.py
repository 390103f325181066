"""Per-class weights from scikit-learn's ``class_weight`` forms and LightGBM's
``is_unbalance``, shared by the learners that take them (forests, trees, boosting).

``class_weight`` is ``None``, ``"balanced"`` (scikit-learn's ``n_rows / (K * rows of
class k)``, from unweighted row counts, so sample weights multiply it as in
scikit-learn), a dict ``{class: weight}`` (classes not named keep 1), or, on the command
line, the text ``"0:1,1:5"``. ``is_unbalance`` is LightGBM's binary weighting: the
rarer class's rows weigh ``rows of the other class / its rows``, the other's 1.
"""
import numpy as np

from ...errors import ParameterError
from .validate import float_param

#: The forms of ``class_weight`` every learner takes, for messages.
FORMS = "None, 'balanced' or a dict {class: weight}"


def _parse_text(text):
    """``"0:1,1:5"`` as ``{0: 1.0, 1: 5.0}`` (class keys as int when they read as one)."""
    out = {}
    for part in text.split(","):
        key, sep, value = part.partition(":")
        if not sep or not key.strip():
            return None
        key = key.strip()
        try:
            key = int(key)
        except ValueError:
            pass
        try:
            out[key] = float(value)
        except ValueError:
            return None
    return out


def class_weight_vector(class_weight, classes, counts, forms=FORMS):
    """Weights ``(K,)`` for ``classes`` (index ``k`` = class code ``k``) from a
    ``class_weight``, or None for none; ``counts``: unweighted rows per class (read only
    for ``"balanced"``; a class without rows gets 0). ``forms`` names what the caller
    takes in the error message."""
    K = len(classes)
    if class_weight is None:
        return None
    if isinstance(class_weight, str) and class_weight != "balanced":
        parsed = _parse_text(class_weight)
        if parsed is None:
            raise ParameterError(f"class_weight must be {forms}; got {class_weight!r}")
        class_weight = parsed
    if isinstance(class_weight, str):
        counts = np.asarray(counts, dtype=np.float64)
        with np.errstate(divide="ignore"):
            w = counts.sum() / (K * counts)
        return np.where(counts > 0, w, 0.0)
    if isinstance(class_weight, dict):
        w = np.ones(K)
        lookup = {(c.item() if hasattr(c, "item") else c): k for k, c in enumerate(classes)}
        for c, v in class_weight.items():
            key = c.item() if hasattr(c, "item") else c
            if key not in lookup:
                raise ParameterError(f"class_weight names class {c!r}, which is not among "
                                     f"the classes {list(lookup)}")
            w[lookup[key]] = float_param(f"class_weight[{c!r}]", v, 0.0)
        return w
    raise ParameterError(f"class_weight must be {forms}; got {class_weight!r}")


def unbalance_weights(counts):
    """LightGBM's ``is_unbalance`` weights ``(2,)`` from the rows of classes 0 and 1: the
    rarer class weighs the other's rows over its own, the other 1 (both 1 when a class
    has no rows, as LightGBM)."""
    n_neg, n_pos = (float(c) for c in counts)
    if n_neg == 0 or n_pos == 0:
        return np.ones(2)
    if n_pos > n_neg:
        return np.array([n_pos / n_neg, 1.0])
    return np.array([1.0, n_neg / n_pos])
