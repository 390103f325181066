"""numba kernels over plain numpy arrays (docs/internals.md, "Layout").

Importing the package keeps numba from loading SciPy's BLAS, which none of the kernels
calls: numba's first compilation or cache load in a process imports
``numba.np.arraymath``, whose import-time probe for a BLAS (used by ``np.correlate`` and
``np.convolve`` in compiled code) imports ``scipy.linalg.cython_blas`` and with it
``scipy.linalg`` when SciPy is installed (scikit-learn brings it): 12.7 MiB of RSS and
0.1-0.3 s in every process that trains or predicts, Dask workers included. The probe
runs here, once, with that module hidden, so numba records "no BLAS" and those two
functions use its plain loops in this process. Linear algebra in other numba code
(``np.dot`` of matrices, ``np.linalg``) still imports SciPy when it is compiled, and
nothing changes when ``scipy.linalg`` or ``numba.np.arraymath`` is already loaded.
"""
import sys


def _import_numba_math_without_blas():
    if "numba.np.arraymath" in sys.modules or "scipy.linalg" in sys.modules:
        return
    blas = "scipy.linalg.cython_blas"
    sys.modules[blas] = None  # an import of it raises ImportError
    try:
        import numba.np.arraymath  # noqa: F401
    finally:
        if sys.modules.get(blas, 0) is None:
            del sys.modules[blas]


_import_numba_math_without_blas()
