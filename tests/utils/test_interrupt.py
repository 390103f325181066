"""Tests of oocboost.utils.interrupt: a SIGINT is recorded so a swallowed one is raised
again at the next check."""
import signal
import threading

import pytest

from oocboost.utils import interrupt


@pytest.fixture(autouse=True)
def default_sigint():
    """Python's own SIGINT handler for the test, whatever this process inherited: a test
    run started as a background job of a non-interactive shell ignores SIGINT (and the
    guard rightly leaves an ignored SIGINT alone)."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def test_guard_records_a_sigint_and_restores_the_handler():
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    with interrupt.guard():
        assert signal.getsignal(signal.SIGINT) is not signal.default_int_handler
        interrupt.check()  # nothing arrived: no raise
        with pytest.raises(KeyboardInterrupt):
            signal.raise_signal(signal.SIGINT)
        assert interrupt.interrupted()
        with pytest.raises(KeyboardInterrupt):
            interrupt.check()  # raised again, as often as asked
        with pytest.raises(KeyboardInterrupt):
            interrupt.check()
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    assert not interrupt.interrupted()
    interrupt.check()


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_swallowed_interrupt_is_raised_at_the_next_check():
    class Swallowed:
        def __del__(self):
            signal.raise_signal(signal.SIGINT)

    with interrupt.guard():
        Swallowed()  # the KeyboardInterrupt raised in __del__ is printed and dropped
        with pytest.raises(KeyboardInterrupt):
            interrupt.check()


def test_nested_guard_and_custom_handler_are_left_alone():
    seen = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: seen.append(signum))
    try:
        with interrupt.guard():
            signal.raise_signal(signal.SIGINT)
            interrupt.check()  # not ours to record
        assert seen == [signal.SIGINT]
    finally:
        signal.signal(signal.SIGINT, previous)
    with interrupt.guard():
        handler = signal.getsignal(signal.SIGINT)
        with interrupt.guard():
            assert signal.getsignal(signal.SIGINT) is handler
        assert signal.getsignal(signal.SIGINT) is handler  # the inner guard restored nothing


def test_guard_outside_the_main_thread_installs_nothing():
    result = []

    def run():
        with interrupt.guard():
            result.append(signal.getsignal(signal.SIGINT))

    t = threading.Thread(target=run)
    t.start()
    t.join()
    assert result == [signal.default_int_handler]


def test_guard_leaves_an_ignored_sigint_ignored():
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    with interrupt.guard():
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
        signal.raise_signal(signal.SIGINT)
        interrupt.check()  # ignored, as the parent asked
    assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
