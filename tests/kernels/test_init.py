"""oocboost.kernels keeps numba's BLAS probe from importing SciPy (kernels/__init__.py),
without taking linear algebra away from other numba code in the process."""
import json
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("scipy")


def run(code):
    """Run ``code`` in a fresh interpreter; returns the JSON it prints last."""
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                         text=True, timeout=300, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_training_kernels_run_without_loading_scipy_linalg():
    got = run("""
        import json, sys
        import numpy as np
        from oocboost.model.model import Model
        from oocboost.model.tree import Tree
        tree = Tree([1, -1, -1], [2, -1, -1], [0, -1, -1], [0.5, 0, 0],
                    np.array([[0.0], [1.0], [2.0]]))
        margin = Model([tree], n_features=1).predict_margin(np.array([[0.0], [1.0]]))
        import numba.np.arraymath as am
        loaded = "scipy.linalg" in sys.modules
        import scipy.linalg.cython_blas  # hidden only while numba probed it
        import numba

        @numba.njit
        def algebra(a, b):
            return np.dot(a, b), np.correlate(a[0], b[0]), np.linalg.inv(a)

        a = np.arange(9.0).reshape(3, 3) + np.eye(3) * 5
        b = np.ones((3, 3)) / 7
        d, c, inv = algebra(a, b)
        print(json.dumps({"margin": margin[:, 0].tolist(), "blas_probe": am._HAVE_BLAS,
                          "scipy_linalg_loaded": loaded,
                          "dot": bool(np.allclose(d, a @ b)),
                          "correlate": bool(np.allclose(c, np.correlate(a[0], b[0]))),
                          "inv": bool(np.allclose(inv, np.linalg.inv(a)))}))
    """)
    assert got["margin"] == [1.0, 2.0]
    assert got["scipy_linalg_loaded"] is False and got["blas_probe"] is False
    assert got["dot"] and got["correlate"] and got["inv"]


def test_nothing_changes_when_scipy_linalg_is_already_loaded():
    got = run("""
        import json
        import scipy.linalg
        import oocboost.kernels
        import numba.np.arraymath as am
        print(json.dumps({"blas_probe": am._HAVE_BLAS}))
    """)
    assert got["blas_probe"] is True
