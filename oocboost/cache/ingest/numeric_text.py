"""Numbers written as text: a column of a CSV file, a pandas object column, an Arrow or
Polars string column whose values are mostly numbers is a numeric column with stray text
in it, read by every source with one rule:

- in ``categorical="auto"``, a text column is numeric when at least
  :data:`MOSTLY_NUMBERS` of the non-missing values of its first batch are numbers;
- a value that is not a number is then an error naming the source, the line (or row),
  the column and the value, wherever it is (``on_bad_rows="error"``), or, with
  ``on_bad_rows="skip"``, a missing value, counted per column (``Source.n_bad_values``,
  shown by ``oocboost info``);
- a column whose stray values pass ``1 - MOSTLY_NUMBERS`` of its values over the whole
  pass was text after all: an error saying to name it in ``categorical``;
- and a column read as categories from its first batch whose values over the whole pass
  are mostly numbers (:class:`NumberShare`) is read again as numbers: the build runs its
  first pass again with the column in ``numeric_text`` (sources take that option).
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ...errors import InputError
from .arrow_numpy import bool_values, float64_numpy, int_numpy, null_scalar, valid_mask

#: Share of a text column's values that must be numbers for it to be a numeric column
#: with stray text rather than a categorical one.
MOSTLY_NUMBERS = 0.9
# The float syntax pyarrow's CSV reader accepts (after trimming spaces).
_NUMBER_RE = (r"^[+-]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
              r"|inf|infinity|nan)$")


def parse_numbers(arr: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """Parse a pyarrow string array as float64, tolerating bad values.

    Parameters
    ----------
    arr : pyarrow.Array of strings, length n (null = missing)

    Returns
    -------
    values : np.ndarray float64 (n,), read-only (as every numeric column the kernels
        take)
        Parsed values; NaN where missing or bad.
    bad : np.ndarray bool (n,)
        True where a non-null string is not a number.
    """
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if not pa.types.is_string(arr.type):
        arr = pc.cast(arr, pa.string())
    trimmed = pc.utf8_trim_whitespace(arr)
    ok = pc.match_substring_regex(trimmed, _NUMBER_RE, ignore_case=True)   # null: missing
    bad = valid_mask(ok) & ~bool_values(ok)
    # a null condition gives null, as a missing value should
    clean = pc.if_else(ok, trimmed, null_scalar(pa.string()))
    return float64_numpy(pc.cast(clean, pa.float64())), bad


def mostly_numbers(arr: pa.Array) -> bool:
    """True when at least :data:`MOSTLY_NUMBERS` of the non-missing values of a pyarrow
    string array are numbers (and there is at least one)."""
    values, bad = parse_numbers(arr)
    n_bad = int(np.count_nonzero(bad))
    present = int(np.count_nonzero(~np.isnan(values))) + n_bad
    return present > 0 and present - n_bad >= MOSTLY_NUMBERS * present


class StrayValues:
    """Parses the numeric columns a source reads as text, one pass at a time.

    Parameters
    ----------
    source : Source
        Its ``name`` (as it is when a message is written) is named in messages.
    skip : bool
        ``on_bad_rows="skip"``: a stray value becomes missing and is counted; otherwise
        the first one is an :class:`InputError`.
    """

    def __init__(self, source: object, skip: bool) -> None:
        self.source = source
        self.skip = bool(skip)
        self.start_pass()

    def start_pass(self) -> None:
        """Counts start again (each pass reads every row)."""
        self.counts: dict[str, int] = {}
        self._present: dict[str, int] = {}

    def parse(self, name: str, arr: pa.Array, where: Callable[[int], str]) -> np.ndarray:
        """Column ``name``'s values ``arr`` (text) as float64; ``where(i)`` names the line
        or row of value ``i`` of ``arr`` in the source, for the error."""
        values, bad = parse_numbers(arr)
        n_bad = int(np.count_nonzero(bad))
        if n_bad and not self.skip:
            i = int(np.argmax(bad))
            raise InputError(f"{self.source.name}: {where(i)}, column {name!r}: expected a "
                             f"number, got {pa_value(arr, i)!r} (the column is numeric: "
                             f"name it in categorical to read it as categories, or pass "
                             f"on_bad_rows='skip' (--on-bad-rows skip) to read such "
                             f"values as missing)")
        if n_bad:
            self.counts[name] = self.counts.get(name, 0) + n_bad
        present = int(np.count_nonzero(~np.isnan(values))) + n_bad
        self._present[name] = self._present.get(name, 0) + present
        return values

    def finish_pass(self) -> dict[str, int]:
        """After a whole pass: the stray values read as missing per column, or an
        InputError for a column that was mostly text after all."""
        for name, n_bad in self.counts.items():
            present = self._present.get(name, 0)
            if present - n_bad < MOSTLY_NUMBERS * present:
                raise InputError(f"{self.source.name}: column {name!r}: {n_bad:,} of its "
                                 f"{present:,} values are not numbers, though its first "
                                 f"batch was numbers: read it as categories (name it in "
                                 f"categorical)")
        return dict(self.counts)


class NumberShare:
    """How many of a text column's values are numbers, over a whole pass: a column read
    as categories from its first batch that is mostly numbers after all is read again
    as numbers (``cache/build.py``)."""

    def __init__(self) -> None:
        self.numbers = 0
        self.present = 0

    def update(self, arr: pa.Array) -> None:
        """Count one batch's values (its distinct strings parsed once each)."""
        encoded = pc.dictionary_encode(arr)
        indices = int_numpy(encoded.indices)
        counts = np.bincount(indices[valid_mask(encoded.indices)],
                             minlength=len(encoded.dictionary))
        _, bad = parse_numbers(encoded.dictionary)
        self.present += int(counts.sum())
        self.numbers += int(counts[~bad].sum())

    @property
    def mostly_numbers(self) -> bool:
        return self.present > 0 and self.numbers >= MOSTLY_NUMBERS * self.present


def pa_value(arr: pa.Array, i: int) -> object:
    """Value ``i`` of a pyarrow array as Python."""
    return arr[i].as_py()
