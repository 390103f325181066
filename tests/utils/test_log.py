"""Tests of oocboost.utils.log: library messages go through logging; what a user asked
to see reaches stdout unless the application took the ``oocboost`` logger over."""
import logging

import pytest

from oocboost.utils import log as ooc_log


@pytest.fixture
def fresh_logger(monkeypatch):
    """The ``oocboost`` logger as a new process has it, whatever earlier tests of this
    worker did to it (restored afterwards)."""
    logger = logging.getLogger("oocboost")
    saved = (list(logger.handlers), logger.level, logger.propagate, logger.disabled)
    monkeypatch.setattr(ooc_log, "_console", None)
    logger.handlers, logger.level, logger.propagate = [], logging.NOTSET, True
    logger.disabled = False
    yield logger
    logger.handlers, logger.level, logger.propagate, logger.disabled = saved


def test_say_reaches_stdout_once_without_a_handler(fresh_logger, capsys):
    ooc_log.say(ooc_log.get_logger("oocboost.cache.build"), "built x.oocb")
    ooc_log.say(ooc_log.get_logger("oocboost.cache.build"), "again")
    assert capsys.readouterr().out == "built x.oocb\nagain\n"
    assert len(fresh_logger.handlers) == 1 and not fresh_logger.propagate


def test_an_application_handler_gets_the_records_and_nothing_is_printed(fresh_logger,
                                                                         capsys):
    records = []

    class Keep(logging.Handler):
        def emit(self, record):
            records.append(record.getMessage())

    fresh_logger.addHandler(Keep())
    fresh_logger.setLevel(logging.INFO)
    ooc_log.say(ooc_log.get_logger("oocboost.learners.forest.forest"), "10 trees")
    assert records == ["10 trees"] and capsys.readouterr().out == ""


def test_a_verbose_library_call_is_seen_on_stdout(fresh_logger, capsys, tmp_path):
    import numpy as np

    from oocboost.cache.build import build_cache

    X = np.arange(200.0).reshape(100, 2)
    build_cache(X, tmp_path / "c.oocb", label=np.arange(100.0) % 2, quiet=True,
                verbose=True)
    out = capsys.readouterr().out
    assert f"built {tmp_path / 'c.oocb'}: 100 rows, 2 features" in out
