"""The svmlight/LibSVM scan: what a file's feature indices span, in one pass over its
bytes, before it is parsed (``cache/ingest/svmlight.py``: the features must be known
before the first pass sketches them). Only the integers before each ``:`` are read, so
the scan costs a fraction of a parse; a malformed token is left to the parse, which
names its line."""
import numpy as np
from numba import njit

#: Indices past this are not exact in a float64: the parse refuses them.
_INDEX_CAP = 2 ** 53


@njit(cache=True, nogil=True)
def svmlight_scan(buf):
    """Scan the bytes ``buf`` (uint8, whole lines) of an svmlight file.

    Returns
    -------
    low, high : int64
        The smallest and largest feature index written (``low`` is ``2**63 - 1`` and
        ``high`` -1 when there is none); ``qid:`` tokens and tokens that are not
        integers are not indices.
    n_lines : int64
        Data lines: lines with something besides whitespace before any ``#``.
    n_qid : int64
        ``qid:`` tokens.
    """
    low = np.int64(9223372036854775807)
    high = np.int64(-1)
    n_lines = np.int64(0)
    n_qid = np.int64(0)
    in_comment = False
    has_data = False
    token_start = 0
    for i in range(len(buf)):
        c = buf[i]
        if c == 10:                              # newline
            if has_data:
                n_lines += 1
            has_data = False
            in_comment = False
            token_start = i + 1
        elif in_comment:
            continue
        elif c == 35:                            # '#': the rest of the line is a comment
            in_comment = True
        elif c == 32 or c == 9 or c == 13:       # whitespace ends a token
            token_start = i + 1
        elif c == 58:                            # ':' ends a token's index
            has_data = True
            k = i - token_start
            if k == 3 and buf[token_start] == 113 and buf[token_start + 1] == 105 \
                    and buf[token_start + 2] == 100:
                n_qid += 1
                continue
            value = np.int64(0)
            valid = k > 0
            for j in range(token_start, i):
                d = np.int64(buf[j]) - 48
                if d < 0 or d > 9 or value > _INDEX_CAP:
                    valid = False
                    break
                value = value * 10 + d
            if valid:
                low = min(low, value)
                high = max(high, value)
        else:
            has_data = True
    if has_data:
        n_lines += 1
    return low, high, n_lines, n_qid


#: Error codes of :func:`svmlight_tokens` (0: none).
MALFORMED = 1       # a token after the label that is not index:value (or qid:Q)
BAD_INDEX = 2       # an index that is not a non-negative integer (below 2**53)
QID_NOT_SECOND = 3  # a qid: token anywhere but right after the label


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
def _copy(buf, start, end, out, used):
    """Append ``buf[start:end]`` to ``out`` at ``used``; returns the new ``used``."""
    for j in range(start, end):
        out[used] = buf[j]
        used += 1
    return used


@njit(cache=True, nogil=True, inline="always")
def _is_space(c):
    return c == 32 or c == 9 or c == 13


@njit(cache=True, nogil=True)
def svmlight_tokens(buf):
    """Split the bytes ``buf`` (uint8, whole lines) of an svmlight block into its rows.

    Labels, qids and values are copied, one after the other, into a compact text of
    numbers (``num_data``, ``num_offsets``) that pyarrow casts to float64 (strtod's
    rounding); indices are parsed here (integers: exact).

    Returns
    -------
    n_rows, row_line (int64, 0-based line of each row), row_label (int64, the row's label
    among the numbers), row_qid (int64, its qid's, or -1), n_pairs, pair_row, pair_index,
    pair_value (the value's place among the numbers), n_nums, num_offsets (int32),
    num_data (uint8), error (code, line, first byte, end byte of the token; code 0: none;
    the rows up to the error are filled).
    """
    n = len(buf)
    max_rows, n_colons = 1, 0
    for c in buf:
        if c == 10:
            max_rows += 1
        elif c == 58:
            n_colons += 1
    row_line = np.empty(max_rows, np.int64)
    row_label = np.empty(max_rows, np.int64)
    row_qid = np.empty(max_rows, np.int64)
    pair_row = np.empty(n_colons, np.int64)
    pair_index = np.empty(n_colons, np.int64)
    pair_value = np.empty(n_colons, np.int64)
    num_offsets = np.empty(max_rows + n_colons + 1, np.int32)
    num_offsets[0] = 0
    num_data = np.empty(n, np.uint8)
    error = np.zeros(4, np.int64)
    n_rows = n_pairs = n_nums = used = line = i = failed = 0
    while i < n and failed == 0:
        token_no = 0                     # one line: tokens until its newline or a '#'
        while i < n and buf[i] != 10 and buf[i] != 35 and failed == 0:
            if _is_space(buf[i]):
                i += 1
                continue
            start, colon, n_colon = i, -1, 0
            while i < n and not _is_space(buf[i]) and buf[i] != 10 and buf[i] != 35:
                if buf[i] == 58:
                    n_colon += 1
                    colon = i
                i += 1
            code, stop = 0, i
            if token_no == 0:                             # the label
                if n_colon > 0:
                    code = MALFORMED
                else:
                    row_line[n_rows], row_qid[n_rows], row_label[n_rows] = line, -1, n_nums
                    n_rows += 1
                    used = _copy(buf, start, i, num_data, used)
            elif n_colon != 1 or colon == start or colon == i - 1:
                code = MALFORMED
            elif colon - start == 3 and buf[start] == 113 and buf[start + 1] == 105 \
                    and buf[start + 2] == 100:             # qid:Q
                if token_no != 1:
                    code = QID_NOT_SECOND
                else:
                    row_qid[n_rows - 1] = n_nums
                    used = _copy(buf, colon + 1, i, num_data, used)
            else:
                index = _index_of(buf, start, colon)
                if index < 0:
                    code, stop = BAD_INDEX, colon
                else:
                    pair_row[n_pairs], pair_index[n_pairs] = n_rows - 1, index
                    pair_value[n_pairs] = n_nums
                    n_pairs += 1
                    used = _copy(buf, colon + 1, i, num_data, used)
            if code:
                error[0], error[1], error[2], error[3] = code, line, start, stop
                failed = 1
            else:
                n_nums += 1
                num_offsets[n_nums] = used
            token_no += 1
        while i < n and buf[i] != 10:     # a comment's rest
            i += 1
        i += 1                            # past the newline
        line += 1
    return (n_rows, row_line, row_label, row_qid, n_pairs, pair_row, pair_index,
            pair_value, n_nums, num_offsets, num_data, error)
