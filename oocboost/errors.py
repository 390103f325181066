"""Exceptions users see. Each names the file, row, column or parameter at fault.

All derive from :class:`OocboostError`, which the command line turns into a one-line
message and a non-zero exit code instead of a traceback.
"""


class OocboostError(Exception):
    """Base class of every error oocboost raises on purpose."""

    exit_code = 1


class InputError(OocboostError, ValueError):
    """The source data is not what was expected (names file, line/row, column)."""

    exit_code = 2


class SchemaError(InputError):
    """Columns missing, extra or of another type than the reference cache."""


class CacheError(OocboostError):
    """A cache is missing, truncated, corrupted, stale or of an unknown format."""

    exit_code = 3


class ModelError(OocboostError, ValueError):
    """A model file is malformed, of an unknown version or does not fit the data."""

    exit_code = 4


class ParameterError(OocboostError, ValueError):
    """An unknown parameter or a value out of range."""

    exit_code = 2


class MemoryLimitError(OocboostError):
    """The memory limit cannot be met; the message gives the smallest limit that works."""

    exit_code = 5


class OutputError(OocboostError, OSError):
    """An output could not be written (disk full, quota, permission); names the path and,
    when known, the bytes needed. What was at the path before is left as it was."""

    exit_code = 6
