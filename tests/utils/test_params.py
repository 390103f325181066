"""Parameter specs: each kind's conversion and refusals, aliases, unknown names."""
import numpy as np
import pytest

from oocboost.errors import ParameterError
from oocboost.utils.params import Param, ParamSpec

SPEC = ParamSpec("toy", [
    Param("rate", "float", 0.3, "a rate", low=0.0, low_open=True, aliases=("eta",)),
    Param("depth", "int", 6, "a depth", low=0),
    Param("share", "float", 1.0, "a share", low=0.0, low_open=True, high=1.0),
    Param("flag", "int", 0, "a 0/1 flag", low=0, high=1),
    Param("policy", "choice", "a", "a policy", choices=("a", "b")),
    Param("switch", "bool", True, "a switch"),
    Param("threads", "int", None, "threads", low=1),
    Param("anything", "any", None, "checked elsewhere"),
], refused={"rounds": "pass it to train()"})


@pytest.mark.parametrize("name,value,expected", [
    ("rate", 0.5, 0.5), ("rate", "0.25", 0.25), ("rate", 1, 1.0),
    ("depth", 3, 3), ("depth", 3.0, 3), ("depth", "4", 4), ("depth", np.int64(2), 2),
    ("share", 1, 1.0), ("flag", True, 1), ("flag", 0, 0),
    ("policy", "b", "b"), ("switch", False, False), ("switch", 1, True),
    ("switch", np.bool_(False), False), ("threads", None, None), ("anything", [1], [1]),
])
def test_values_are_converted(name, value, expected):
    got = SPEC[name].check(value)
    assert got == expected and type(got) is type(expected)


@pytest.mark.parametrize("name,value,message", [
    ("rate", 0.0, "parameter rate must be a number > 0, got 0.0"),
    ("rate", "fast", "parameter rate must be a number > 0, got 'fast'"),
    ("rate", float("nan"), "must be a number > 0, got nan"),
    ("depth", 2.5, "parameter depth must be an integer >= 0, got 2.5"),
    ("depth", -1, "must be an integer >= 0, got -1"),
    ("depth", True, "must be an integer >= 0, got True"),
    ("depth", None, "must be an integer >= 0, got None"),
    ("share", 1.5, r"parameter share must be a number in \(0, 1\], got 1.5"),
    ("flag", 2, r"parameter flag must be an integer in \[0, 1\], got 2"),
    ("policy", "c", "parameter policy must be one of 'a', 'b', got 'c'"),
    ("policy", 1, "must be one of 'a', 'b', got 1"),
    ("switch", "yes", "parameter switch must be True or False, got 'yes'"),
    ("threads", 0, "parameter threads must be an integer >= 1 or None, got 0"),
])
def test_bad_values_name_the_parameter_and_what_it_takes(name, value, message):
    with pytest.raises(ParameterError, match=message):
        SPEC[name].check(value)


def test_resolve_defaults_aliases_and_unknown_names():
    assert SPEC.resolve({}) == SPEC.defaults()
    assert SPEC.resolve({"eta": "0.1"})["rate"] == 0.1
    assert SPEC.resolve({"depth": 2}, defaults=False) == {"depth": 2}
    with pytest.raises(ParameterError, match="'eta' and 'rate' are aliases; give one"):
        SPEC.resolve({"eta": 0.1, "rate": 0.2})
    with pytest.raises(ParameterError, match=r"unknown parameter 'dept' for toy \(did you "
                                             r"mean depth\?\)"):
        SPEC.resolve({"dept": 3})
    with pytest.raises(ParameterError, match="rounds is not a toy parameter: pass it to"):
        SPEC.resolve({"rounds": 3})


def test_a_name_declared_twice_is_refused():
    with pytest.raises(ValueError, match="declared twice"):
        ParamSpec("bad", [Param("a", "int", 1, "a"), Param("b", "int", 1, "b",
                                                           aliases=("a",))])
    with pytest.raises(ValueError, match="kind"):
        Param("a", "integer", 1, "a")
