"""kernels/svmlight.py against its naive twins: line-by-line, token-by-token readings in
plain Python of what the scan counts (indices before ':', data lines, qid tokens) and of
what the parse reads (rows, labels, qids, dense features, errors), numbers by ``float``."""
import re

import numpy as np
import pytest

from oocboost.kernels.svmlight import svmlight_scan


def naive_scan(text: bytes):
    """Per data line: the index of its first token after the label (and a qid:) and of
    its last token, when they are integer:value."""
    low, high, n_lines, n_qid = 2 ** 63 - 1, -1, 0, 0
    for line in text.split(b"\n"):
        tokens = line.split(b"#")[0].split()
        if not tokens:
            continue
        n_lines += 1
        rest = tokens[1:]
        if rest and rest[0].startswith(b"qid:"):
            n_qid += 1
            rest = rest[1:]
        for token in rest[:1] + rest[-1:]:
            head, sep, _ = token.partition(b":")
            if sep and head.isdigit() and int(head) <= 2 ** 53:
                low, high = min(low, int(head)), max(high, int(head))
    return low, high, n_lines, n_qid


CASES = [
    b"1 1:0.5 3:2\n0 2:1\n",
    b"# header: a comment\n\n1 qid:3 0:1 7:2 # tail: 9:9\n0 qid:3 4:1\n",
    b"1\n0\n   \n\t\n",
    b"1 12:1\r\n0 5:1\r\n",
    b"1 x:1 3:4\n0 -2:1 :5 6:\n",        # not integers: the parse names them
    b"1 qid:2\n0 qid:\n1 qid:3 4:1 # 9:9\n1 2:1 5:1 3:1\n",   # the middle is not read
    b"1 1:1\n0 3:1",                     # no newline at the end
    b"",
]


@pytest.mark.parametrize("text", CASES)
def test_scan_equals_the_naive_reading(text):
    got = tuple(int(v) for v in svmlight_scan(np.frombuffer(text, np.uint8)))
    assert got == naive_scan(text)


def random_block(rng):
    """An svmlight block of up to 30 lines: labels, qids on some lines, increasing
    indices, comments with colons, blank lines, spaces or tabs between tokens."""
    lines = []
    for _ in range(rng.integers(0, 30)):
        tokens = [f"{rng.normal():.4g}"]
        if rng.random() < 0.3:
            tokens.append(f"qid:{rng.integers(0, 5)}")
        for j in np.sort(rng.choice(1000, rng.integers(0, 6), replace=False)):
            tokens.append(f"{j}:{rng.normal():.3f}")
        if rng.random() < 0.2:
            tokens.append("# note: 99:1")
        sep = " " if rng.random() < 0.8 else "\t"
        lines.append(sep.join(tokens) if rng.random() < 0.9 else "  ")
    return ("\n".join(lines) + "\n").encode()


def test_random_files_equal_the_naive_reading():
    rng = np.random.default_rng(0)
    for _ in range(50):
        text = random_block(rng)
        got = tuple(int(v) for v in svmlight_scan(np.frombuffer(text, np.uint8)))
        assert got == naive_scan(text)


def naive_parse(text: bytes, n_features: int, shift: int, fill: float):
    """The parser's result read line by line in Python with ``float``: per row its
    line, label and qid (or None), the dense features x rows matrix; or the first error
    as (code, line)."""
    from oocboost.kernels import svmlight as k

    rows, cells = [], {}
    for line_no, line in enumerate(text.split(b"\n")[:-1] if text.endswith(b"\n")
                                   else text.split(b"\n")):
        tokens = line.split(b"#")[0].split()
        if not tokens:
            continue
        if b":" in tokens[0]:
            return rows, None, (k.MALFORMED, line_no)
        rows.append([line_no, float(tokens[0]), None])
        previous = -1
        for position, token in enumerate(tokens[1:], start=1):
            head, sep, tail = token.partition(b":")
            if token.count(b":") != 1 or not head or not tail:
                return rows, None, (k.MALFORMED, line_no)
            if head == b"qid":
                if position != 1:
                    return rows, None, (k.QID_NOT_SECOND, line_no)
                rows[-1][2] = float(tail)
            elif not head.isdigit() or int(head) > 2 ** 53:
                return rows, None, (k.BAD_INDEX, line_no)
            elif int(head) <= previous:
                return rows, None, (k.NOT_INCREASING, line_no)
            elif not 0 <= int(head) - shift < n_features:
                return rows, None, (k.OUT_OF_RANGE, line_no)
            else:
                previous = int(head)
                cells[int(head) - shift, len(rows) - 1] = float(tail)
    dense = np.full((n_features, len(rows)), fill)
    for (feature, row), value in cells.items():
        dense[feature, row] = value
    return [tuple(r) for r in rows], dense, (0, 0)


def kernel_parse(text: bytes, n_features: int, shift: int, fill: float):
    """svmlight_parse, with the tokens it leaves to pyarrow read by ``float`` (what the
    cast does: tests/cache/test_svmlight.py checks it against scikit-learn's reader)."""
    from oocboost.kernels.svmlight import SLOW_LABEL, SLOW_QID, svmlight_parse

    (stop, n_rows, n_lines, row_line, label, qid, has_qid, dense, n_slow, slow_row,
     slow_column, offsets, data, error) = svmlight_parse(
        np.frombuffer(text, np.uint8), 0, n_features, shift, fill, 2 ** 40)
    if not error[0]:
        # a last line without its newline counts as a line too
        assert stop == len(text)
        assert n_lines == text.count(b"\n") + (not text.endswith(b"\n") and len(text) > 0)
    for k in range(n_slow):
        value = float(bytes(data[offsets[k]:offsets[k + 1]]))
        row, column = slow_row[k], slow_column[k]
        if column == SLOW_LABEL:
            label[row] = value
        elif column == SLOW_QID:
            qid[row] = value
        else:
            dense[column, row] = value
    rows = [(int(row_line[r]), float(label[r]), float(qid[r]) if has_qid[r] else None)
            for r in range(n_rows)]
    if error[0]:
        return rows, None, (int(error[0]), int(error[1]))
    return rows, dense[:, :n_rows], (0, 0)


def _same(got, expected):
    assert got[2] == expected[2]
    if not expected[2][0]:
        assert got[0] == expected[0]
        # bit for bit, the sign of zero included
        assert got[1].tobytes() == expected[1].tobytes()


@pytest.mark.parametrize("text", CASES[:4] + CASES[5:7] + [
    b"1 1:0.5\n0 3 :1\n", b"1 1:0.5\n0 3: 1\n", b"1 1:0.5\n0 3::1\n", b"1 3:1:2\n",
    b"1 1:0.5\n0 3 4\n", b"1 2:1 qid:3\n", b"1 x:1\n", b"1 -3:1\n", b"1:2 3:4\n",
    b"1 99999999999999999999:1\n", b"1 2:1 2:3\n", b"1 5:1 3:1\n", b"1 40:1\n",
    b"+1 1:-0 2:1e-30 3:nan 4:-inf 5:0.1234567890123456789 6:1.5E+3 7:.5 8:5.\n",
    b"-1 qid:7 0:1e22 1:1e23 2:9007199254740993 3:123456789012345e-22\n"])
@pytest.mark.parametrize("shift", [0, 1])
def test_parse_equals_the_naive_reading(text, shift):
    _same(kernel_parse(text, 40, shift, 0.0), naive_parse(text, 40, shift, 0.0))


def test_random_blocks_parse_as_the_naive_reading():
    rng = np.random.default_rng(1)
    for k in range(50):
        text = random_block(rng)
        fill = np.nan if k % 2 else 0.0
        _same(kernel_parse(text, 1000, 0, fill), naive_parse(text, 1000, 0, fill))


def _number_text(rng):
    """A decimal token of the shapes files hold: signs, leading zeros, up to 20 digits,
    a point anywhere or none, an exponent sometimes."""
    digits = "".join(rng.choice(list("0123456789"), rng.integers(1, 21)))
    if rng.random() < 0.7:
        cut = rng.integers(0, len(digits) + 1)
        digits = digits[:cut] + "." + digits[cut:]
        if digits == ".":
            digits = "0."
    sign = rng.choice(["", "-", "+"], p=[0.6, 0.3, 0.1])
    exponent = ""
    if rng.random() < 0.3:
        exponent = f"{rng.choice(['e', 'E'])}{rng.choice(['', '+', '-'])}" \
                   f"{rng.integers(0, 40)}"
    return f"{sign}{digits}{exponent}"


def test_fast_numbers_are_strtods():
    """What fast_number reads equals Python's float (correctly rounded, as strtod) bit
    for bit; what it leaves is only what it cannot read exactly."""
    from oocboost.kernels.svmlight import fast_number

    rng = np.random.default_rng(2)
    tokens = [_number_text(rng) for _ in range(20000)]
    tokens += ["0", "-0", "1e22", "1e23", "9007199254740992", "9007199254740993",
               "0.1", "0.30000000000000004", "123456789012345", "1234567890123456",
               "1e-22", "4.9e-324", "1.7976931348623157e308", "nan", "inf", "1e", "-",
               ".", "1..2", "1e+", "0x1", "1_0"]
    n_fast = 0
    for token in tokens:
        buf = np.frombuffer(token.encode(), np.uint8)
        value, fast = fast_number(buf, 0, len(buf))
        if fast:
            n_fast += 1
            assert np.float64(value).tobytes() == np.float64(float(token)).tobytes(), \
                token
        else:
            # left only when not a plain decimal of at most 15 significant digits
            plain = re.fullmatch(r"[+-]?(\d+\.?\d*|\.\d+)", token)
            digits = token.lstrip("+-").replace(".", "").lstrip("0")
            assert not plain or len(digits) > 15, token
    assert n_fast > len(tokens) // 3


@pytest.mark.parametrize("max_rows", [1, 2, 7])
def test_batches_of_max_rows_continue_where_the_last_stopped(max_rows):
    """Parsing a block max_rows rows at a time, each call starting at the last one's
    stop, reads the same rows and lines as one call."""
    from oocboost.kernels.svmlight import svmlight_parse

    rng = np.random.default_rng(3)
    for _ in range(20):
        text = random_block(rng)
        buf = np.frombuffer(text, np.uint8)
        rows, columns, start, lines = [], [], 0, 0
        while start < len(buf):
            (stop, n_rows, n_lines, row_line, label, _, _, dense, *_,
             error) = svmlight_parse(buf, start, 1000, 0, 0.0, max_rows)
            assert error[0] == 0 and n_rows <= max_rows and stop > start
            rows += [(lines + int(row_line[r]), float(label[r])) for r in range(n_rows)]
            columns.append(dense[:, :n_rows])
            lines += n_lines
            start = stop
        expected_rows, expected_dense, _ = naive_parse(text, 1000, 0, 0.0)
        assert rows == [(line, label) for line, label, _ in expected_rows]
        assert lines == text.count(b"\n")
        assert np.array_equal(np.hstack(columns), expected_dense)
