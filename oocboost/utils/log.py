"""Library messages go through :mod:`logging`, under the ``oocboost`` logger.

The package adds no handler of its own at import (a library must not decide where its
messages go). What a user asked to see (``verbose=True``, ``verbose_eval``, the command
line's output) is logged at INFO; :func:`console` then makes sure it reaches the
terminal: when the ``oocboost`` logger has no handler, it adds one that writes the bare
message to the current ``sys.stdout``, as a ``print`` would (and stops those records
from also reaching the root logger's handlers, which would show them twice). An
application that wants the records elsewhere adds its own handler to the ``oocboost``
logger: :func:`console` then leaves it alone.

>>> log = get_logger(__name__)          # doctest: +SKIP
>>> console(); log.info("built x.oocb")  # doctest: +SKIP
"""
from __future__ import annotations

import logging
import sys

ROOT = "oocboost"


class _CurrentStdout(logging.StreamHandler):
    """Writes to whatever ``sys.stdout`` is at each record (pytest's capture, a
    redirected stdout), not the stream of the moment the handler was made."""

    def __init__(self):
        super().__init__(sys.stdout)

    @property
    def stream(self):
        return sys.stdout

    @stream.setter
    def stream(self, value):  # StreamHandler.__init__ sets it; we always read sys.stdout
        pass


_console = None


def get_logger(name: str) -> logging.Logger:
    """The logger of module ``name`` (``oocboost.<...>``)."""
    return logging.getLogger(name)


def _package_logger(logger=None):
    """The ``oocboost`` logger that ``logger``'s records pass through: found up its own
    parent chain (the one its records follow), else by name."""
    node = logger
    while node is not None and node.name != ROOT:
        node = node.parent
    return node if node is not None else logging.getLogger(ROOT)


def console(logger: logging.Logger | None = None) -> None:
    """Make INFO messages of ``oocboost`` (of ``logger``'s chain) visible on stdout,
    unless the application gave the ``oocboost`` logger a handler of its own.
    Idempotent."""
    global _console
    logger = _package_logger(logger)
    if logger.handlers:
        return  # ours already, or the application's
    _console = _CurrentStdout()
    _console.setFormatter(logging.Formatter("%(message)s"))
    logger.addHandler(_console)
    logger.setLevel(logging.INFO)
    logger.propagate = False


def say(logger: logging.Logger, message: str) -> None:
    """Log ``message`` at INFO where the user asked to see it (a verbose flag), through
    :func:`console`."""
    console(logger)
    logger.info(message)
