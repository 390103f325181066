"""The package's layout: one folder per layer, a layer imports only layers below it,
no import cycle, no module over 700 lines and no function body over 80.

The layers, lowest first (docs/internals.md, "Layout"). ``errors`` and ``common`` are the
foundation every layer may import; ``kernels`` may import only ``common``.
"""
import ast
import pathlib

import pytest

PACKAGE = pathlib.Path(__file__).resolve().parent.parent / "oocboost"

#: Layer of each top-level name under ``oocboost``; higher may import lower or equal.
LAYERS = {
    "errors": 0, "common": 1,
    "kernels": 2, "utils": 2,
    "cache": 3,
    "engine": 4,
    "model": 5,
    "learners": 6,
    "sklearn": 7, "dask": 7,
    "inspection": 8, "conformal": 8,
    "plotting": 9,
    "datasets": 10, "demo": 10, "cli": 10, "cli_parser": 10, "__init__": 11, "__main__": 11,
}
#: What kernels may import of ours: only dtype constants.
KERNEL_IMPORTS = {"common", "kernels"}
#: What the process-wide helpers may import of ours.
UTILS_IMPORTS = {"errors", "common", "utils"}
MAX_MODULE_LINES = 700
MAX_FUNCTION_LINES = 80


def _modules():
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE.parent).with_suffix("")
        parts = list(rel.parts)
        is_package = parts[-1] == "__init__"
        if is_package:
            parts = parts[:-1]
        yield ".".join(parts), is_package, path


MODULES = {name: (is_package, path) for name, is_package, path in _modules()}


def _resolve(module, is_package, node):
    """Absolute names (``oocboost.x.y``) that an ImportFrom node imports."""
    if node.level == 0:
        base = node.module or ""
    else:
        parts = module.split(".")
        if not is_package:
            parts = parts[:-1]
        parts = parts[: len(parts) - (node.level - 1)]
        base = ".".join(parts + ([node.module] if node.module else []))
    out = []
    for alias in node.names:
        candidate = f"{base}.{alias.name}"
        out.append(candidate if candidate in MODULES else base)
    return out


def imports_of(module):
    """Every oocboost module that ``module`` imports, at the top or inside functions."""
    is_package, path = MODULES[module]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            names = _resolve(module, is_package, node)
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        else:
            continue
        for name in names:
            while name and name not in MODULES:
                name = name.rpartition(".")[0]
            if name.startswith("oocboost") and name != "oocboost" and name != module:
                found.add(name)
    return found


def layer_of(module):
    parts = module.split(".")
    return "__init__" if len(parts) == 1 else parts[1]


def test_every_module_has_a_layer():
    assert {layer_of(m) for m in MODULES} <= set(LAYERS)


def test_layers_import_only_layers_below():
    wrong = []
    for module in MODULES:
        layer = layer_of(module)
        for imported in imports_of(module):
            other = layer_of(imported)
            if layer == "kernels" and other not in KERNEL_IMPORTS:
                wrong.append(f"{module} -> {imported} (kernels import only common)")
            elif layer == "utils" and other not in UTILS_IMPORTS:
                wrong.append(f"{module} -> {imported} (utils import only errors, common)")
            elif LAYERS[other] > LAYERS[layer]:
                wrong.append(f"{module} ({layer}) -> {imported} ({other})")
    assert wrong == []


#: Modules that are programs of their own and print: the command line, the demo, the data
#: generator's ``__main__``.
PRINTING_MODULES = {"oocboost.cli", "oocboost.cli_parser", "oocboost.demo",
                    "oocboost.datasets"}


def test_only_the_programs_print():
    """Library messages go through logging (``utils/log.py``); a ``print`` elsewhere is
    allowed only to a stream the caller handed in (``file=``)."""
    found = []
    for module, (_, path) in MODULES.items():
        if module in PRINTING_MODULES:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "print" \
                    and not any(k.arg == "file" for k in node.keywords):
                found.append(f"{module}:{node.lineno}")
    assert found == []


def learner_of(module):
    """The learner folder of ``oocboost.learners.<name>...`` (None elsewhere, and for the
    shared toolkit ``learners.common`` and the package itself)."""
    parts = module.split(".")
    if len(parts) < 3 or parts[1] != "learners" or parts[2] == "common":
        return None
    folder = ".".join(parts[:3])
    return parts[2] if MODULES.get(folder, (False,))[0] else None  # registry.py: shared


def test_no_learner_imports_another_learner():
    """A learner imports the engine, the cache, the model and ``learners.common``, never
    another learner (docs/internals.md, "Adding a learner"); ``learners.common`` imports
    no learner either."""
    wrong = []
    for module in MODULES:
        mine = learner_of(module)
        in_common = module.startswith("oocboost.learners.common")
        if mine is None and not in_common:
            continue
        for imported in imports_of(module):
            other = learner_of(imported)
            if other is not None and other != mine:
                wrong.append(f"{module} -> {imported}")
    assert wrong == []


def _cycle(graph):
    """One import cycle as a list of modules, or None."""
    state = {}
    stack = []

    def visit(node):
        state[node] = "open"
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == "open":
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        state[node] = "done"
        stack.pop()
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def test_no_import_cycle():
    # A package imports its submodules by name only where its __init__ re-exports them;
    # importing ``oocboost.x.y`` runs ``oocboost.x`` first, which is no cycle of ours.
    graph = {m: {i for i in imports_of(m) if not m.startswith(i + ".")} for m in MODULES}
    assert _cycle(graph) is None


def test_cycle_finder_finds_a_cycle():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set(), "c": {"a"}}) is None


def _body_lines(node):
    body = node.body
    first = body[0]
    is_doc = (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
              and isinstance(first.value.value, str))
    if is_doc and len(body) == 1:
        return 0
    start = body[1].lineno if is_doc else first.lineno
    return node.end_lineno - start + 1


@pytest.mark.parametrize("module", sorted(MODULES))
def test_module_and_function_sizes(module):
    path = MODULES[module][1]
    text = path.read_text()
    n_lines = len(text.splitlines())
    assert n_lines <= MAX_MODULE_LINES, f"{path}: {n_lines} lines"
    long = [f"{node.name} ({_body_lines(node)} lines)"
            for node in ast.walk(ast.parse(text))
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            and _body_lines(node) > MAX_FUNCTION_LINES]
    assert long == []


def test_import_parser_sees_relative_lazy_and_submodule_imports():
    # relative at the top (from .binning), lazy inside a function (from .store import
    # Cache in build_cache), a submodule imported by name (from ..utils import interrupt)
    assert {"oocboost.cache.binning", "oocboost.cache.store",
            "oocboost.utils.interrupt"} <= imports_of("oocboost.cache.build")
    # lazy imports inside the command line's functions
    assert {"oocboost.cache.build", "oocboost.learners.registry", "oocboost.model.model",
            "oocboost.kernels.warmup"} <= imports_of("oocboost.cli")


def test_public_names_resolve_to_modules_of_the_package():
    """``oocboost.__getattr__`` imports "module:attribute" targets (its own table and the
    learners' registrations), which the import parser does not see: each must name a
    module of the package that has the attribute."""
    import importlib

    import oocboost

    targets = oocboost._exports()
    assert len(targets) >= 30
    for name, target in targets.items():
        module, _, attribute = target.partition(":")
        assert module in MODULES, target
        assert getattr(importlib.import_module(module), attribute).__name__ == name
    assert (
        layer_of("oocboost.engine.grower") == "engine" and layer_of("oocboost") == "__init__"
    )
