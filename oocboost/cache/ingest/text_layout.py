"""How a delimited text file is laid out: its delimiter (given, by extension, or
sniffed), its column names (a header, given names, or ``f0, f1, ...``), columns given by
position, and the warning for a header made only of numbers."""
import re
import warnings

from ...errors import ParameterError

#: Delimiters looked for when none is given (the first lines are sniffed).
SNIFFED_DELIMITERS = ",\t;| "
#: Spellings of a tab a user types (``--delimiter '\t'`` in a shell passes backslash-t).
_TAB_NAMES = ("\t", "\\t", "tab", "TAB")


def resolve_delimiter(delimiter, path, sample):
    """The one-character delimiter of a CSV file.

    ``delimiter`` as given (``"\\t"``, ``"tab"`` and a tab all mean a tab); None: a tab
    for ``.tsv``/``.tab`` files, else sniffed from the first lines (``sample()`` gives
    them) among :data:`SNIFFED_DELIMITERS`, else a comma.
    """
    if delimiter is None:
        name = path.lower().removesuffix(".gz")
        if name.endswith((".tsv", ".tab")):
            return "\t"
        return sniff_delimiter(sample())
    if delimiter in _TAB_NAMES:
        return "\t"
    if not isinstance(delimiter, str) or len(delimiter) != 1 or delimiter in '"\r\n':
        raise ParameterError(f"delimiter must be one character other than a quote or a "
                             f"newline (or 'tab'), got {delimiter!r}")
    return delimiter


def sniff_delimiter(text):
    """The delimiter the first lines of ``text`` agree on: the candidate (of
    :data:`SNIFFED_DELIMITERS`) found the same non-zero number of times, outside quotes,
    on every one of the first (up to 20) complete lines; a comma when none is."""
    lines = [ln for ln in text.split("\n")[:-1][:20] if ln.strip()]
    if not lines:
        return ","
    unquoted = [re.sub(r'"[^"]*"', "", ln.rstrip("\r")) for ln in lines]
    for candidate in SNIFFED_DELIMITERS:
        counts = {ln.count(candidate) for ln in unquoted}
        if len(counts) == 1 and counts.pop() > 0:
            return candidate
    return ","


def check_names(names):
    """Column names given for a CSV file (a list of unique strings), or None."""
    if names is None:
        return None
    if isinstance(names, str) or not all(isinstance(n, str) and n for n in names):
        raise ParameterError(f"names must be a list of non-empty column names, got "
                             f"{names!r}")
    names = list(names)
    if len(set(names)) != len(names):
        raise ParameterError(f"names has duplicates: {names}")
    return names


def header_width_names(text, delimiter):
    """``f0 .. f{k-1}`` for the fields of the first line of ``text`` (pyarrow's names
    of a headerless file's columns)."""
    first = next((ln for ln in text.split("\n") if ln.strip()), "")
    first = re.sub(r'"[^"]*"', "", first.rstrip("\r"))
    return [f"f{i}" for i in range(first.count(delimiter) + 1)]


def by_position(value, columns):
    """A column given by 0-based position (an int, or digits that are not a column's
    name) as its name; lists element by element; anything else as given."""
    if isinstance(value, list):
        return [by_position(v, columns) for v in value]
    position = None
    if isinstance(value, int) and not isinstance(value, bool):
        position = value
    elif isinstance(value, str) and value.isdigit() and value not in columns:
        position = int(value)
    if position is None:
        return value
    if not 0 <= position < len(columns):
        raise ParameterError(f"column position {position} is out of range: the file has "
                             f"{len(columns)} columns (0 to {len(columns) - 1})")
    return columns[position]


_NUMBER = re.compile(r"^\s*[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?\s*$")


def warn_numeric_header(path, columns):
    """Warn when every name of a header is a number: the file probably has no header,
    and its first row would otherwise be silently lost as names."""
    if columns and all(_NUMBER.match(c) for c in columns):
        warnings.warn(f"{path}: every field of the first line is a number "
                      f"({', '.join(columns[:3])}, ...); if the file has no header line, "
                      f"pass header=False (--no-header): it is read as column names now",
                      UserWarning, stacklevel=4)
