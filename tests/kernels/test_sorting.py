"""kernels/sorting.py: the kernels' stable argsort against NumPy's, and the kernels that
switched to it (the forests' per-node feature draws) against naive twins."""
import numpy as np
import pytest
from numba import njit
from numpy import uint64

from oocboost.kernels.sampling import (
    _GOLDEN,
    _splitmix64,
    _uniform_keyed,
    node_feature_subsets,
)
from oocboost.kernels.sorting import stable_argsort


@pytest.mark.parametrize("n", [0, 1, 2, 15, 16, 17, 33, 100, 1000])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_stable_argsort_matches_numpy_with_ties_and_nan(n, dtype):
    rng = np.random.default_rng(n)
    keys = rng.integers(0, max(1, n // 4), n).astype(dtype)  # many ties
    keys[rng.random(n) < 0.1] = np.nan
    keys[rng.random(n) < 0.05] = -np.inf
    np.testing.assert_array_equal(stable_argsort(keys), np.argsort(keys, kind="stable"))
    distinct = rng.normal(size=n).astype(dtype)
    np.testing.assert_array_equal(
        stable_argsort(distinct), np.argsort(distinct, kind="stable")
    )


def test_stable_argsort_example_and_negative_zero():
    np.testing.assert_array_equal(stable_argsort(np.array([2.0, np.nan, 1.0, 2.0])),
                                  [2, 0, 3, 1])
    # -0.0 == 0.0: a tie, kept in row order as NumPy does
    np.testing.assert_array_equal(stable_argsort(np.array([0.0, -0.0, 0.0, -1.0])),
                                  [3, 0, 1, 2])


@njit
def _draws(tree_key, node, n):
    node_key = _splitmix64(uint64(tree_key) ^ (uint64(node) * _GOLDEN))
    return np.array([_uniform_keyed(node_key, j) for j in range(n)])


def _naive_subsets(tree_key, nodes, allowed, k):
    # the draws are the kernel's; the pick of the k smallest and the order are NumPy's
    out = np.empty((len(nodes), k), np.int32)
    for e, node in enumerate(nodes):
        u = _draws(tree_key, node, len(allowed))
        out[e] = np.sort(allowed[np.argsort(u, kind="stable")[:k]])
    return out


@pytest.mark.parametrize("n_allowed,k", [(1, 1), (5, 2), (28, 5), (40, 40), (300, 17)])
def test_node_feature_subsets_match_naive(n_allowed, k):
    allowed = np.sort(np.random.default_rng(k).choice(1000, n_allowed, replace=False))
    allowed = allowed.astype(np.int64)
    nodes = np.array([0, 1, 2, 7, 12345, 2**40], np.int64)
    out = np.empty((len(nodes), k), np.int32)
    node_feature_subsets(987654321, nodes, allowed, k, out)
    np.testing.assert_array_equal(out, _naive_subsets(987654321, nodes, allowed, k))
    assert all(len(set(row)) == k and set(row) <= set(allowed) for row in out)


def _jitted_functions():
    import ast
    import pathlib

    import oocboost.kernels as kernels

    for path in sorted(pathlib.Path(kernels.__file__).parent.glob("*.py")):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and any(
                    "njit" in ast.unparse(d) or "jit(" in ast.unparse(d)
                    for d in node.decorator_list):
                yield path.name, node


def _costly_constructs(fn):
    import ast

    for node in ast.walk(fn):
        if isinstance(node, ast.Call):
            name = ast.unparse(node.func)
            if name in ("np.argsort", "np.sort") or name.endswith(".sort"):
                yield f"line {node.lineno}: {name}()"
        targets = node.targets if isinstance(node, ast.Assign) else []
        for target in targets:
            index = target.slice if isinstance(target, ast.Subscript) else None
            parts = index.elts if isinstance(index, ast.Tuple) else [index]
            if any(isinstance(p, ast.Slice) for p in parts) and not isinstance(
                    node.value, (ast.Constant, ast.UnaryOp)):
                yield f"line {node.lineno}: {ast.unparse(target)} = {ast.unparse(node.value)}"


def test_kernels_avoid_constructs_that_compile_slowly():
    # numba's sorts and the shape-mismatch message of `a[:] = b` cost 2-3 s of compile
    # each in every process (docs/internals.md): use stable_argsort and copy_into
    import ast

    functions = list(_jitted_functions())
    assert len(functions) > 100  # the scan sees the kernels
    probe = ast.parse("def f(a, b, c):\n    a[:] = b\n    a[1:, 0] = b[0]\n    a[:] = 0\n"
                      "    a[:] = -1.0\n    c = np.argsort(b)\n    b.sort()\n").body[0]
    assert [w.split(":")[0] for w in _costly_constructs(probe)] == ["line 2", "line 3",
                                                                   "line 6", "line 7"]
    found = [f"{name}:{fn.name} {what}" for name, fn in functions
             for what in _costly_constructs(fn)]
    assert not found, "\n".join(found)
