"""Ctrl-C that is never lost.

Python runs a signal handler at the next bytecode boundary of the main thread, wherever
that is. When numba compiles a kernel (the first run after an install, with an empty
kernel cache), that can be inside a ctypes callback from LLVM
(``ExecutionEngine._raw_object_cache_notify``) or a ``__del__``: the ``KeyboardInterrupt``
raised there is printed as "Exception ignored" and dropped, and a build carried on to
commit a complete cache with exit code 0.

:func:`guard` therefore records every SIGINT before raising ``KeyboardInterrupt``, and
the loops that do long work call :func:`check` at each batch or block (and a build once
more before it commits): an interrupt that was swallowed is raised again there.

>>> with guard():               # doctest: +SKIP
...     for batch in batches:
...         check()
...         work(batch)
"""
import contextlib
import signal
import threading

_interrupted = threading.Event()
#: Outputs committed under the current guard ("cache PATH"), for the command line: a
#: SIGINT that lands after its output was written whole is no failure.
_committed = []


def _record_and_raise(signum, frame):
    _interrupted.set()
    raise KeyboardInterrupt


@contextlib.contextmanager
def guard():
    """Record SIGINT for :func:`check` while the block runs (main thread only).

    Installs the recording handler when SIGINT has Python's default handler and restores
    it afterwards; nested guards, other threads and custom handlers are left alone.
    """
    install = (threading.current_thread() is threading.main_thread()
               and signal.getsignal(signal.SIGINT) is signal.default_int_handler)
    if install:
        _interrupted.clear()
        _committed.clear()
        signal.signal(signal.SIGINT, _record_and_raise)
    try:
        yield
    finally:
        if install:
            signal.signal(signal.SIGINT, signal.default_int_handler)
            _interrupted.clear()


def record_committed(what):
    """Note that ``what`` (e.g. ``"cache /abs/path"``) is now written whole."""
    _committed.append(what)


def committed():
    """What :func:`record_committed` noted under the current guard, oldest first."""
    return list(_committed)


def interrupted():
    """True when a SIGINT arrived under :func:`guard` (whether or not it was raised)."""
    return _interrupted.is_set()


def check():
    """Raise ``KeyboardInterrupt`` when a SIGINT arrived under :func:`guard`.

    Cheap (one flag test): call it once per batch or block.
    """
    if _interrupted.is_set():
        raise KeyboardInterrupt
