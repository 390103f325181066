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


@pytest.mark.parametrize("n_threads", [None, 2])
def test_training_on_few_rows_takes_one_thread_per_min_rows(monkeypatch, n_threads):
    """With ``n_rows``, a thread per ``MIN_ROWS_PER_THREAD`` rows at most (the suite sets
    the constant to 1: the real one here), never more than asked or than now."""
    from oocboost.utils import threads

    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.fail("this test needs numba to offer 2 threads")
    monkeypatch.setattr(threads, "MIN_ROWS_PER_THREAD", 16_384)
    before = numba.get_num_threads()
    numba.set_num_threads(2)
    try:
        for n_rows, want in ((3_000, 1), (16_384, 1), (32_768, 2), (10_000_000, 2)):
            with thread_limit(n_threads, n_rows=n_rows):
                assert numba.get_num_threads() == want, n_rows
            assert numba.get_num_threads() == 2
        with thread_limit(1, n_rows=10_000_000):
            assert numba.get_num_threads() == 1
    finally:
        numba.set_num_threads(before)


def test_a_fit_on_few_rows_runs_its_kernels_on_one_thread(monkeypatch):
    """The learners pass their rows: a 3,000-row fit asked for 2 threads trains on one
    (on a machine whose cores are busy, two made it 5-10x slower)."""
    import oocboost
    from oocboost.utils import threads

    monkeypatch.setattr(threads, "MIN_ROWS_PER_THREAD", 16_384)
    seen = []
    real = threads.thread_limit

    def spy(n_threads, n_rows=None):
        seen.append((n_threads, n_rows))
        return real(n_threads, n_rows)

    X = np.random.default_rng(0).normal(size=(3000, 4))
    y = (X[:, 0] > 0).astype(int)
    # boosting imports it with the module, the forest when it trains
    for module in ("oocboost.learners.boosting.training", "oocboost.utils.threads"):
        monkeypatch.setattr(f"{module}.thread_limit", spy)
    oocboost.GradientBoostingClassifier(n_estimators=2, n_jobs=2).fit(X, y)
    oocboost.RandomForestClassifier(n_estimators=2, n_jobs=2).fit(X, y)
    assert seen == [(2, 3000), (2, 3000)]
