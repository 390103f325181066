"""Parameter checks every learner shares: integers, numbers in a range, scikit-learn's
int-or-fraction counts, seeds. Each raises :class:`~oocboost.errors.ParameterError`
naming the parameter and what it takes."""
import math
import numbers

import numpy as np

from ...errors import ParameterError


def resolve_seed(random_state):
    """An int seed from scikit-learn's ``random_state`` (None, int, RandomState,
    Generator). None draws a fresh seed (results then vary between fits)."""
    if random_state is None:
        return int(np.random.SeedSequence().entropy % (2 ** 63))
    if isinstance(random_state, np.random.RandomState):
        return int(random_state.randint(0, 2 ** 31 - 1))
    if isinstance(random_state, np.random.Generator):
        return int(random_state.integers(0, 2 ** 63 - 1))
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool) \
            and int(random_state) >= 0:
        return int(random_state)
    raise ParameterError(f"random_state must be None, a non-negative int, a "
                         f"numpy RandomState or Generator; got {random_state!r}")


def int_param(name, value, minimum, allow_none=False):
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) \
            or int(value) < minimum:
        if isinstance(value, numbers.Real) and not isinstance(value, bool) \
                and float(value).is_integer() and value >= minimum:
            return int(value)
        extra = " or None" if allow_none else ""
        raise ParameterError(f"{name} must be an integer >= {minimum}{extra}, got {value!r}")
    return int(value)


def float_param(name, value, low, high=None, low_open=False):
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ParameterError(f"{name} must be a number, got {value!r}")
    v = float(value)
    bad = (v <= low if low_open else v < low) or (high is not None and v > high) \
        or not math.isfinite(v)
    if bad:
        lo = f"> {low}" if low_open else f">= {low}"
        hi = f" and <= {high}" if high is not None else ""
        raise ParameterError(f"{name} must be {lo}{hi}, got {value!r}")
    return v


def count_or_fraction(name, value, n, minimum):
    """scikit-learn's int-or-float parameters: an int >= minimum, or a float in (0, 1]
    meaning ``ceil(value * n)``."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return int_param(name, value, minimum)
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        v = float_param(name, value, 0.0, 1.0, low_open=True)
        return max(minimum, int(math.ceil(v * n)))
    raise ParameterError(f"{name} must be an int >= {minimum} or a float in (0, 1], got "
                         f"{value!r}")
