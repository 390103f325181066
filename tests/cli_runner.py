"""Run ``oocboost`` commands for tests, as a shell would see them: exit code, stdout, stderr.

:func:`run_cli` calls :func:`oocboost.cli.main` in the test's own process, the way the
console script does, with ``sys.stdout`` and ``sys.stderr`` read into strings, the
environment variables that change the CLI's output unset, warnings shown as a fresh
process shows them, and the ``oocboost`` logger and the working directory put back
afterwards. A new process per command cost ~2 s of start-up (imports, loading the
kernels from numba's cache) for a command that then ran in milliseconds: tests/test_cli.py
took 222 s that way and ~40 s in process. What only a real process shows (signals,
resource limits, the interpreter's exit, ``python -m``) is run by :func:`run_process`,
which :func:`run_cli` also uses when given ``subprocess.run`` keywords (``preexec_fn``).
"""
import contextlib
import io
import logging
import os
import subprocess
import sys
import traceback
import warnings

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
#: Environment switches of the CLI's output (a traceback, no progress) that the tests'
#: own environment may hold and a user's shell would not.
CLI_SWITCHES = ("OOCBOOST_DEBUG", "OOCBOOST_QUIET")


def run_process(*args, timeout=120, **kw) -> subprocess.CompletedProcess:
    """``python -m oocboost.cli ARGS`` in a new process (cwd: the repository)."""
    env = {k: v for k, v in os.environ.items() if k not in CLI_SWITCHES}
    return subprocess.run([sys.executable, "-m", "oocboost.cli", *map(str, args)],
                          capture_output=True, text=True, timeout=timeout, env=env, cwd=REPO,
                          **kw)


@contextlib.contextmanager
def _as_a_fresh_process():
    logger = logging.getLogger("oocboost")
    saved_logger = (logger.handlers[:], logger.level, logger.propagate)
    saved_env = {k: os.environ.pop(k) for k in CLI_SWITCHES if k in os.environ}
    cwd = os.getcwd()
    logger.handlers[:] = []
    os.chdir(REPO)
    try:
        # catch_warnings also resets each module's record of the warnings it has shown,
        # so a warning is shown once per command, as in a new process
        with warnings.catch_warnings():
            warnings.resetwarnings()
            warnings.simplefilter("default")
            yield
    finally:
        os.chdir(cwd)
        os.environ.update(saved_env)
        logger.handlers[:], level, logger.propagate = saved_logger
        logger.setLevel(level)


def run_cli(*args, timeout=120, **kw) -> subprocess.CompletedProcess:
    """``oocboost ARGS`` in this process (module docstring); with ``subprocess.run``
    keywords, in a new one (:func:`run_process`). An exception that escapes ``main``
    gives exit code 1 and its traceback on stderr, as the interpreter would."""
    if kw:
        return run_process(*args, timeout=timeout, **kw)
    from oocboost.cli import main

    argv = [str(a) for a in args]
    out, err = io.StringIO(), io.StringIO()
    saved_showwarning = warnings.showwarning
    with _as_a_fresh_process(), contextlib.redirect_stdout(out), \
            contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exc:  # argparse's usage errors, --help
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        except Exception:
            traceback.print_exc()
            code = 1
        finally:
            warnings.showwarning = saved_showwarning
    return subprocess.CompletedProcess(["oocboost", *argv], code or 0, out.getvalue(),
                                       err.getvalue())
