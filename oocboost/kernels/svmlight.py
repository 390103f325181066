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
