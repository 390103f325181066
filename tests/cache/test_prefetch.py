import gc
import threading
import time

import pytest

from oocboost.cache.prefetch import prefetch
from oocboost.errors import CacheError, ParameterError

DEPTHS = [0, 1, 2, 3, 5]


def _jittery_square(i):
    # Uneven load times shuffle when the worker finishes; order must not change.
    time.sleep(0.002 * ((i * 7) % 3))
    return i * i


@pytest.mark.parametrize("depth", DEPTHS)
def test_results_in_order_and_independent_of_depth(depth):
    assert list(prefetch(_jittery_square, range(20), depth)) == [i * i for i in range(20)]


@pytest.mark.parametrize("depth", DEPTHS)
def test_empty_and_generator_items(depth):
    assert list(prefetch(_jittery_square, [], depth)) == []
    assert list(prefetch(_jittery_square, (i for i in range(4)), depth)) == [0, 1, 4, 9]


@pytest.mark.parametrize("depth", [1, 2, 4])
def test_worker_runs_at_most_depth_ahead(depth):
    state = {"loaded": 0, "consumed": 0, "max_ahead": 0}
    lock = threading.Lock()

    def load(i):
        with lock:
            state["loaded"] += 1
            state["max_ahead"] = max(state["max_ahead"], state["loaded"] - state["consumed"])
        return i

    out = []
    for v in prefetch(load, range(30), depth):
        time.sleep(0.002)  # slow consumer: the worker fills every slot it may
        with lock:
            state["consumed"] += 1
        out.append(v)
    assert out == list(range(30))
    # depth ahead, plus one while the consumer takes the item it was just handed.
    assert depth <= state["max_ahead"] <= depth + 1


class _Boom(Exception):
    pass


class _Uncopyable(Exception):
    def __init__(self, a, b):
        super().__init__(f"{a}-{b}")


@pytest.mark.parametrize("depth", DEPTHS)
def test_worker_error_reaches_consumer_after_earlier_items(depth):
    def load(i):
        if i == 5:
            raise CacheError(f"cache X: block {i} is corrupted")
        return i

    got = []
    baseline = threading.active_count()
    with pytest.raises(CacheError, match="block 5 is corrupted") as info:
        for v in prefetch(load, range(10), depth):
            got.append(v)
    assert got == [0, 1, 2, 3, 4]
    if depth > 0:
        # Raised again in the consumer; the original (with the worker's traceback) is the
        # cause.
        assert isinstance(info.value.__cause__, CacheError)
        assert info.value.__cause__ is not info.value
    assert threading.active_count() == baseline


@pytest.mark.parametrize("depth", [1, 3])
def test_uncopyable_error_raised_as_is(depth):
    def load(i):
        raise _Uncopyable(1, 2)

    with pytest.raises(_Uncopyable, match="1-2"):
        list(prefetch(load, range(3), depth))


@pytest.mark.parametrize("depth", [1, 3])
def test_error_while_iterating_items_is_forwarded(depth):
    def items():
        yield 1
        raise _Boom("items broke")

    with pytest.raises(_Boom, match="items broke"):
        list(prefetch(lambda i: i, items(), depth))


@pytest.mark.parametrize("depth", [1, 2, 4])
def test_early_break_shuts_worker_down(depth):
    baseline = threading.active_count()
    loaded = []

    def load(i):
        loaded.append(i)
        return i

    for v in prefetch(load, range(1000), depth):
        if v == 3:
            break
    gc.collect()  # the abandoned generator is closed when collected (CPython: at once)
    assert threading.active_count() == baseline
    assert len(loaded) <= 4 + depth + 1  # stopped long before the end


@pytest.mark.parametrize("depth", [1, 3])
def test_consumer_exception_and_close_shut_worker_down(depth):
    baseline = threading.active_count()
    with pytest.raises(_Boom):
        for v in prefetch(_jittery_square, range(100), depth):
            if v == 4:
                raise _Boom()
    assert threading.active_count() == baseline

    gen = prefetch(_jittery_square, range(100), depth)
    assert next(gen) == 0
    assert threading.active_count() == baseline + 1
    gen.close()
    assert threading.active_count() == baseline


def test_no_thread_before_first_next_and_none_at_depth_zero():
    baseline = threading.active_count()
    gen = prefetch(_jittery_square, range(5), 2)
    assert threading.active_count() == baseline
    del gen
    seen = []
    for v in prefetch(lambda i: (seen.append(threading.active_count()), i)[1], range(3), 0):
        pass
    assert seen == [baseline] * 3


@pytest.mark.parametrize("bad", [-1, 1.5, True, "2", None])
def test_bad_depth(bad):
    with pytest.raises(ParameterError, match="prefetch depth"):
        prefetch(_jittery_square, range(3), bad)
