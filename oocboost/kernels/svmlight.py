"""svmlight/LibSVM text in numba: the scan (what a file's feature indices span, before
it is parsed: the features must be known before the first pass sketches them; only each
line's first and last index are read) and the parse (a block's lines into dense feature
columns, numbers read exactly where one IEEE operation can, the rest left to pyarrow's
cast). Used by ``cache/ingest/svmlight.py``; a malformed token is named by its line."""
import numpy as np
from numba import njit

#: Indices past this are not exact in a float64: the parse refuses them.
_INDEX_CAP = 2 ** 53


#: Byte classes of the token walk: one table load per byte instead of six comparisons.
_OTHER, _SPACE, _NEWLINE, _HASH, _COLON = 0, 1, 2, 3, 4
_CLASS = np.zeros(256, np.uint8)
_CLASS[[32, 9, 13]] = _SPACE
_CLASS[10] = _NEWLINE
_CLASS[35] = _HASH
_CLASS[58] = _COLON


@njit(cache=True, nogil=True, inline="always")
def _index_of(buf, start, colon):
    """The integer ``buf[start:colon]``, or -1 when it is not a non-negative integer
    below 2**53."""
    index = np.int64(0)
    for j in range(start, colon):
        d = np.int64(buf[j]) - 48
        if d < 0 or d > 9 or index > _INDEX_CAP:
            return np.int64(-1)
        index = index * 10 + d
    return index if index <= _INDEX_CAP else np.int64(-1)


@njit(cache=True, nogil=True, inline="always")
def _token_index(buf, start, end):
    """The index of the token ``buf[start:end]`` when it is ``integer:...``, else -1."""
    colon = start
    while colon < end and buf[colon] != 58:
        colon += 1
    if colon == start or colon == end:
        return np.int64(-1)
    return _index_of(buf, start, colon)


@njit(cache=True, nogil=True)
def svmlight_scan(buf):
    """Scan the bytes ``buf`` (uint8, whole lines) of an svmlight file.

    Indices increase along a valid line, so only each line's first and last tokens are
    read: the first index token (after the label and an optional ``qid:``) is the
    line's lowest index, its last token the highest. The rest of a line is only
    searched for its end. A file that breaks the rules is refused by the parse, which
    reads every token (an index past the scan's highest is named there).

    Returns
    -------
    low, high : int64
        The smallest and largest feature index of the lines' first and last index
        tokens (``low`` is ``2**63 - 1`` and ``high`` -1 when there is none); a token
        that is not ``integer:value`` gives none.
    n_lines : int64
        Data lines: lines with something besides whitespace before any ``#``.
    n_qid : int64
        Lines whose second token is ``qid:``.
    """
    low = np.int64(9223372036854775807)
    high = np.int64(-1)
    n_lines = np.int64(0)
    n_qid = np.int64(0)
    n = len(buf)
    i = 0
    while i < n:
        line_start = i
        while i < n and buf[i] != 10 and buf[i] != 35:     # to the newline or a '#'
            i += 1
        data_end = i
        while i < n and buf[i] != 10:                      # a comment's rest
            i += 1
        i += 1
        # the tokens of [line_start, data_end): label, [qid:Q], index:value ...
        j = line_start
        while j < data_end and _CLASS[buf[j]] == _SPACE:
            j += 1
        if j == data_end:
            continue
        n_lines += 1
        while j < data_end and _CLASS[buf[j]] != _SPACE:   # the label
            j += 1
        while j < data_end and _CLASS[buf[j]] == _SPACE:
            j += 1
        first_end = j
        while first_end < data_end and _CLASS[buf[first_end]] != _SPACE:
            first_end += 1
        if first_end - j >= 4 and buf[j] == 113 and buf[j + 1] == 105 \
                and buf[j + 2] == 100 and buf[j + 3] == 58:  # qid:
            n_qid += 1
            j = first_end
            while j < data_end and _CLASS[buf[j]] == _SPACE:
                j += 1
            first_end = j
            while first_end < data_end and _CLASS[buf[first_end]] != _SPACE:
                first_end += 1
        if j == data_end:
            continue
        index = _token_index(buf, j, first_end)
        if index >= 0:
            low = min(low, index)
            high = max(high, index)
        last_end = data_end
        while _CLASS[buf[last_end - 1]] == _SPACE:
            last_end -= 1
        last = last_end
        while last > j and _CLASS[buf[last - 1]] != _SPACE:
            last -= 1
        index = _token_index(buf, last, last_end)
        if index >= 0:
            low = min(low, index)
            high = max(high, index)
    return low, high, n_lines, n_qid


#: Error codes of :func:`svmlight_parse` (0: none).
MALFORMED = 1       # a token after the label that is not index:value (or qid:Q)
BAD_INDEX = 2       # an index that is not a non-negative integer (below 2**53)
QID_NOT_SECOND = 3  # a qid: token anywhere but right after the label
NOT_INCREASING = 4  # an index not above the one before it on its line
OUT_OF_RANGE = 5    # an index outside the features the scan found

#: Where a slow token goes (``slow_column``): the row's label, its qid, else a feature.
SLOW_LABEL = -1
SLOW_QID = -2

#: 10**k for k = 0..22: exact in a float64, so one multiplication or division by one of
#: them rounds once, correctly (Clinger's fast path).
_POW10 = np.array([float(10 ** k) for k in range(23)])

@njit(cache=True, nogil=True, inline="always")
def fast_number(buf, start, end):
    """``(value, True)`` when ``buf[start:end]`` is a decimal number of at most 15
    significant digits whose power of ten is within 10**22 (``[+-]digits[.digits]
    [e[+-]digits]``): then one IEEE operation gives the correctly rounded value,
    strtod's. Else ``(0.0, False)``: the token is left to pyarrow's cast (long
    mantissas, large exponents, ``nan``, ``inf``, and what is not a number at all)."""
    value, fast, stop = _read_number(buf, start, end)
    if fast and stop == end:
        return value, True
    return 0.0, False


@njit(cache=True, nogil=True, inline="always")
def _read_number(buf, start, end):
    """:func:`fast_number` of the bytes from ``start`` up to the first one that cannot
    continue a number (or ``end``): ``(value, fast, that byte)``."""
    j = start
    negative = False
    if j < end and (buf[j] == 45 or buf[j] == 43):      # '-' or '+'
        negative = buf[j] == 45
        j += 1
    mantissa = np.int64(0)
    n_digits = n_significant = n_frac = 0
    seen_dot = False
    while j < end:
        d = np.int64(buf[j]) - 48
        if 0 <= d <= 9:
            if n_significant < 18:
                mantissa = mantissa * 10 + d
            n_digits += 1
            n_significant += mantissa != 0
            n_frac += seen_dot
        elif d == -2 and not seen_dot:                   # '.'
            seen_dot = True
        else:
            break
        j += 1
    if n_digits == 0 or n_significant > 15:
        return 0.0, False, j
    scale = -n_frac
    if j < end and (buf[j] == 101 or buf[j] == 69):      # 'e' or 'E'
        j += 1
        exp_negative = False
        if j < end and (buf[j] == 45 or buf[j] == 43):
            exp_negative = buf[j] == 45
            j += 1
        exponent = n_exp = 0
        while j < end and 48 <= buf[j] <= 57:
            if exponent < 100000:
                exponent = exponent * 10 + (np.int64(buf[j]) - 48)
            n_exp += 1
            j += 1
        if n_exp == 0:
            return 0.0, False, j
        scale += -exponent if exp_negative else exponent
    if mantissa == 0:
        value = 0.0
    elif scale < -22 or scale > 22:
        return 0.0, False, j
    elif scale >= 0:
        value = mantissa * _POW10[scale]
    else:
        value = mantissa / _POW10[-scale]
    return (-value if negative else value), True, j


@njit(cache=True, nogil=True, inline="always")
def _block_rows(buf, start, max_rows):
    """``(rows, end)``: the lines from ``start`` (up to ``max_rows``) and the end of the
    bytes they may span."""
    capacity = 1
    for i in range(start, len(buf)):
        if buf[i] == 10:
            capacity += 1
            if capacity > max_rows:
                return max_rows, i + 1
    return min(capacity, max_rows), len(buf)


@njit(cache=True, nogil=True, inline="always")
def _fast_pair(buf, i, previous, shift, n_features):
    """The common token, ``index:value`` at ``i`` with an index above ``previous`` and a
    value :func:`fast_number` reads, in one walk: ``(index, value, end)``; index -1 when
    the general path must read it (qid:, slow numbers, errors)."""
    n = len(buf)
    index = np.int64(0)
    j = i
    while j < n and j - i < 16 and 48 <= buf[j] <= 57:
        index = index * 10 + (np.int64(buf[j]) - 48)
        j += 1
    if j > i and j < n and buf[j] == 58 and index > previous \
            and 0 <= index - shift < n_features:
        value, fast, stop = _read_number(buf, j + 1, n)
        if fast and (stop == n or (_CLASS[buf[stop]] != _OTHER
                                   and _CLASS[buf[stop]] != _COLON)):
            return index, value, stop
    return np.int64(-1), 0.0, i


@njit(cache=True, nogil=True, inline="always")
def _token_end(buf, i):
    """``(end, last colon, colons)`` of the token at ``i``."""
    colon, n_colon = -1, 0
    while i < len(buf):
        kind = _CLASS[buf[i]]
        if kind == _OTHER:
            i += 1
        elif kind == _COLON:
            n_colon += 1
            colon = i
            i += 1
        else:
            break
    return i, colon, n_colon


@njit(cache=True, nogil=True, inline="always")
def _classify(buf, token, end, colon, n_colon, token_no, previous, shift, n_features):
    """What the token ``buf[token:end]`` is: ``(error code, error end, column)``; the
    column is SLOW_LABEL for the label, SLOW_QID for ``qid:Q``, else the feature's."""
    if token_no == 0:
        return (MALFORMED if n_colon > 0 else 0), end, np.int64(SLOW_LABEL)
    if n_colon != 1 or colon == token or colon == end - 1:
        return MALFORMED, end, np.int64(-3)
    if colon - token == 3 and buf[token] == 113 and buf[token + 1] == 105 \
            and buf[token + 2] == 100:                     # qid:Q
        return (QID_NOT_SECOND if token_no != 1 else 0), end, np.int64(SLOW_QID)
    index = _index_of(buf, token, colon)
    if index < 0:
        return BAD_INDEX, colon, np.int64(-3)
    if index <= previous:
        return NOT_INCREASING, colon, np.int64(-3)
    if index - shift < 0 or index - shift >= n_features:
        return OUT_OF_RANGE, colon, np.int64(-3)
    return 0, end, index - shift


@njit(cache=True, nogil=True)
def svmlight_parse(buf, start, n_features, shift, fill, max_rows):
    """Parse the bytes ``buf[start:]`` (uint8, whole lines) of an svmlight block into
    dense feature columns, in one walk over its bytes, up to ``max_rows`` rows.

    A feature's column is ``index - shift`` (``shift`` 1 for one-based files); absent
    entries are ``fill``. Labels, qids and values are read by :func:`fast_number`;
    the tokens it leaves (rare in files written with up to 15 digits) are copied into a
    compact text (``slow_data``, ``slow_offsets``) that the caller casts with pyarrow
    (strtod's rounding, as scikit-learn's reader) and puts in place.

    Returns
    -------
    stop : int, where the next call starts (``len(buf)`` when done)
    n_rows, n_lines : int, rows read and lines passed (a line without data is no row)
    row_line : int64, the 0-based line of each row, counted from ``start``
    label, qid : float64 per row (a slow token's place holds nothing yet)
    has_qid : bool per row
    dense : float64 (n_features, capacity), the first ``n_rows`` columns used
    n_slow, slow_row, slow_column (a feature, SLOW_LABEL or SLOW_QID), slow_offsets
    (int64), slow_data (uint8)
    error : int64 (code, line, first byte, end byte of the token, index before it on
    its line); code 0: none. The rows up to the error are filled.
    """
    n = len(buf)
    capacity, end = _block_rows(buf, start, max_rows)
    dense = np.full((n_features, capacity), fill)
    label = np.empty(capacity)
    qid = np.empty(capacity)
    has_qid = np.zeros(capacity, np.bool_)
    row_line = np.empty(capacity, np.int64)
    max_tokens = (end - start) // 2 + 2       # a token and its separator: two bytes
    slow_row = np.empty(max_tokens, np.int64)
    slow_column = np.empty(max_tokens, np.int64)
    slow_offsets = np.empty(max_tokens + 1, np.int64)    # not zeros: 4x the text
    slow_offsets[0] = 0
    slow_data = np.empty(end - start, np.uint8)
    error = np.zeros(5, np.int64)
    n_rows = n_slow = line = 0
    i = start
    while i < n and n_rows < capacity:
        token_no = 0                     # one line: tokens until its newline or a '#'
        previous = np.int64(-1)
        while i < n:
            kind = _CLASS[buf[i]]
            if kind == _SPACE:
                i += 1
                continue
            if kind == _NEWLINE or kind == _HASH:
                break
            if token_no > 0:
                index, value, stop = _fast_pair(buf, i, previous, shift, n_features)
                if index >= 0:
                    dense[index - shift, n_rows - 1] = value
                    previous = index
                    token_no += 1
                    i = stop
                    continue
            token = i
            i, colon, n_colon = _token_end(buf, i)
            code, stop, column = _classify(buf, token, i, colon, n_colon, token_no,
                                           previous, shift, n_features)
            if code:
                error[0], error[1], error[2], error[3], error[4] = (
                    code, line, token, stop, previous)
                return (i, n_rows, line, row_line, label, qid, has_qid, dense, n_slow,
                        slow_row, slow_column, slow_offsets, slow_data, error)
            first, fast = colon + 1, True
            if token_no == 0:
                row_line[n_rows] = line
                n_rows += 1
                first = token
                label[n_rows - 1], fast = fast_number(buf, token, i)
            elif column == SLOW_QID:
                has_qid[n_rows - 1] = True
                qid[n_rows - 1], fast = fast_number(buf, first, i)
            else:
                previous = column + shift
                dense[column, n_rows - 1], fast = fast_number(buf, first, i)
            if not fast:                 # kept for pyarrow's cast
                used = slow_offsets[n_slow]
                for j in range(first, i):
                    slow_data[used] = buf[j]
                    used += 1
                slow_row[n_slow], slow_column[n_slow] = n_rows - 1, column
                n_slow += 1
                slow_offsets[n_slow] = used
            token_no += 1
        while i < n and buf[i] != 10:     # a comment's rest
            i += 1
        i += 1                            # past the newline
        line += 1
    return (min(i, n), n_rows, line, row_line, label, qid, has_qid, dense, n_slow,
            slow_row, slow_column, slow_offsets, slow_data, error)
