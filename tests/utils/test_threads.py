"""thread_limit: numba's thread count and one BLAS thread inside, both restored after."""
import numba
import numpy as np
import pytest
from threadpoolctl import threadpool_info, threadpool_limits

from oocboost.utils.threads import thread_limit


def blas_threads():
    return [lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"]


@pytest.fixture
def two_blas_threads():
    np.dot(np.ones(3), np.ones(3))  # numpy's BLAS is loaded
    assert blas_threads(), "numpy has no BLAS that threadpoolctl sees"
    with threadpool_limits(limits=2, user_api="blas"):
        yield


@pytest.mark.parametrize("n_threads", [None, 1])
def test_numba_threads_and_one_blas_thread_inside_restored_after(two_blas_threads,
                                                                 n_threads):
    before_numba = numba.get_num_threads()
    before_blas = blas_threads()
    with thread_limit(n_threads):
        assert blas_threads() == [1] * len(before_blas)
        assert numba.get_num_threads() == (before_numba if n_threads is None else 1)
    assert blas_threads() == before_blas
    assert numba.get_num_threads() == before_numba


def test_limits_are_restored_when_the_body_raises(two_blas_threads):
    before = (numba.get_num_threads(), blas_threads())
    with pytest.raises(RuntimeError, match="body"):
        with thread_limit(1):
            raise RuntimeError("body")
    assert (numba.get_num_threads(), blas_threads()) == before
