"""Every learner's parameters are declared once (its ``params.py`` ParamSpec): the
estimators' signatures and defaults, the command line's ``--param`` check and
docs/parameters.md's booster table are held to it."""
import inspect
import re
from pathlib import Path

import numpy as np
import pytest

import oocboost
from oocboost.learners import registry
from oocboost.sklearn.base import NOT_LEARNER_PARAMS

DOCS = Path(__file__).resolve().parents[2] / "docs" / "parameters.md"


def _estimators():
    for spec in registry.specs():
        for name, target in spec.estimators.items():
            yield pytest.param(spec, registry.resolve(target), id=name)


def test_every_learner_declares_its_parameters():
    assert all(spec.params is not None for spec in registry.specs())


@pytest.mark.parametrize("spec,estimator", list(_estimators()))
def test_estimator_signature_and_defaults_equal_the_spec(spec, estimator):
    """Each argument is a parameter of the learner's spec (by name or alias) with the
    spec's default, or one the estimator declares as its own default (with why), or
    one that is not a learner parameter (the data's, the run's)."""
    differ = getattr(estimator, "_DEFAULTS_DIFFER", {})
    checked = 0
    for name, arg in inspect.signature(estimator.__init__).parameters.items():
        if name == "self":
            continue
        try:
            canonical = spec.params.canonical(name)
        except oocboost.ParameterError:
            assert name in NOT_LEARNER_PARAMS, (
                f"{estimator.__name__}({name}=...) is neither a parameter of {spec.name}'s "
                f"spec nor in sklearn.base.NOT_LEARNER_PARAMS")
            continue
        declared = spec.params[canonical].default
        if name in differ:
            assert arg.default != declared, f"{estimator.__name__}.{name}: same default " \
                                            f"as the spec, drop it from _DEFAULTS_DIFFER"
            assert differ[name].strip(), "say why the default differs"
        else:
            assert arg.default == declared, (
                f"{estimator.__name__}({name}={arg.default!r}) but {spec.name}'s spec "
                f"says {declared!r}")
        checked += 1
    assert checked >= 2   # online bagging has the fewest: random_state, prefetch
    assert set(differ) <= set(inspect.signature(estimator.__init__).parameters)


def test_not_learner_params_say_why():
    assert all(reason.strip() for reason in NOT_LEARNER_PARAMS.values())


def _booster_table():
    text = DOCS.read_text()
    section = text[text.index("### 1.1 Booster parameters"):]
    section = section[:section.index("\n### ", 5)]
    rows = {}
    for line in section.splitlines():
        if not line.startswith("| `"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
        names = re.split(r",\s*(?![^()]*\))", cells[0])
        defaults = [d.strip() for d in cells[1].split(",")]
        for i, part in enumerate(names):
            m = re.match(r"`([^`]+)`\s*(?:\((.*)\))?$", part.strip())
            aliases = tuple(re.findall(r"`([^`]+)`", m.group(2) or ""))
            default = defaults[i] if len(defaults) == len(names) else cells[1]
            rows[m.group(1)] = (aliases, default)
    return rows


def _shown(value):
    if isinstance(value, str):
        return f"`{value}`"
    return repr(value)


def test_docs_booster_table_lists_every_parameter_with_its_aliases_and_default():
    from oocboost.learners.boosting.params import BOOSTER_SPEC

    rows = _booster_table()
    assert set(rows) == set(BOOSTER_SPEC.names()) | set(BOOSTER_SPEC.refused)
    for param in BOOSTER_SPEC:
        aliases, default = rows[param.name]
        assert set(aliases) == set(param.aliases), param.name
        if not param.default_doc:
            assert default.startswith(_shown(param.default)), (param.name, default)


def test_cli_param_names_and_values_are_checked_before_training(tmp_path):
    cache = oocboost.build_cache(np.arange(8.0).reshape(8, 1), tmp_path / "c",
                                 label=np.arange(8) % 2, quiet=True)
    for learner, params, message in [
        ("random-forest", {"max_dept": 3},
         r"unknown parameter 'max_dept' for --learner random-forest \(did you mean "
         r"max_depth"),
        ("random-forest", {"seed": 1, "random_state": 2},
         "'random_state' and 'seed' are aliases|'seed' and 'random_state' are aliases"),
        ("gbtree", {"n_estimators": 5}, "n_estimators is not a --learner gbtree parameter"),
        ("mars", {"max_degree": 0}, "parameter max_degree must be an integer >= 1, got 0"),
        ("hoeffding-tree", {"split_criterion": "hellinger"},
         "split_criterion must be one of 'info_gain', 'gini', got 'hellinger'"),
        ("adaboost", {"loss": "huber"}, "loss must be one of 'linear', 'square', "
                                        "'exponential', got 'huber'"),
        ("decision-stream", {"significance": 2}, r"significance must be a number in \(0, 1\]"),
    ]:
        request = registry.TrainRequest(learner=learner, params=params, cache=cache,
                                        n_estimators=2, quiet=True)
        with pytest.raises(oocboost.ParameterError, match=message):
            registry.train(request)


@pytest.mark.parametrize("learner,start,end", [
    ("random-forest", "## 2. Decision trees", "### 2.2 "),
    ("decision-stream", "### 2.3 Decision streams", "### 2.4 MARS"),
    ("mars", "### 2.4 MARS", "### 2.5 Isolation"),
    ("isolation-forest", "### 2.5 Isolation forest", "## 3. AdaBoost"),
    ("adaboost", "## 3. AdaBoost", "## 3b."),
])
def test_docs_name_every_parameter_of_each_learner(learner, start, end):
    text = DOCS.read_text()
    section = text[text.index(start):text.index(end, text.index(start) + len(start))]
    missing = [p.name for p in registry.get(learner).params if f"`{p.name}`" not in section]
    assert not missing, f"docs/parameters.md's {start!r} does not name {missing}"


def test_streaming_docs_name_every_parameter():
    text = (DOCS.parent / "streaming.md").read_text()
    spec = registry.get("hoeffding-tree").params
    assert not [p.name for p in spec if f"`{p.name}`" not in text]
