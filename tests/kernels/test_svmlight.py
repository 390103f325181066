"""kernels/svmlight.py against its naive twin: a line-by-line, token-by-token reading in
plain Python of what the scan counts (indices before ':', data lines, qid tokens)."""
import numpy as np
import pytest

from oocboost.kernels.svmlight import svmlight_scan


def naive_scan(text: bytes):
    low, high, n_lines, n_qid = 2 ** 63 - 1, -1, 0, 0
    for line in text.split(b"\n"):
        data = line.split(b"#")[0]
        if not data.strip():
            continue
        n_lines += 1
        for token in data.split():
            if b":" not in token:
                continue
            head = token.split(b":")[0]
            if head == b"qid":
                n_qid += 1
            elif head.isdigit() and int(head) <= 2 ** 53:
                low, high = min(low, int(head)), max(high, int(head))
    return low, high, n_lines, n_qid


CASES = [
    b"1 1:0.5 3:2\n0 2:1\n",
    b"# header: a comment\n\n1 qid:3 0:1 7:2 # tail: 9:9\n0 qid:3 4:1\n",
    b"1\n0\n   \n\t\n",
    b"1 12:1\r\n0 5:1\r\n",
    b"1 x:1 3:4\n0 -2:1 :5 6:\n",        # not integers: the parse names them
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


def naive_tokens(text: bytes):
    """The tokenizer's result read line by line in Python: per row its line, label text
    and qid text (or None); per pair its row, index and value text; or the first error
    as (code, line)."""
    from oocboost.kernels.svmlight import BAD_INDEX, MALFORMED, QID_NOT_SECOND

    rows, pairs = [], []
    for line_no, line in enumerate(text.split(b"\n")[:-1] if text.endswith(b"\n")
                                   else text.split(b"\n")):
        tokens = line.split(b"#")[0].split()
        if not tokens:
            continue
        if b":" in tokens[0]:
            return rows, pairs, (MALFORMED, line_no)
        qid = None
        for k, token in enumerate(tokens[1:], start=1):
            head, sep, tail = token.partition(b":")
            if token.count(b":") != 1 or not head or not tail:
                return rows, pairs, (MALFORMED, line_no)
            if head == b"qid":
                if k != 1:
                    return rows, pairs, (QID_NOT_SECOND, line_no)
                qid = tail
            elif not head.isdigit() or int(head) > 2 ** 53:
                return rows, pairs, (BAD_INDEX, line_no)
            else:
                pairs.append((len(rows), int(head), tail))
        rows.append((line_no, tokens[0], qid))
    return rows, pairs, (0, 0)


def _kernel_tokens(text: bytes):
    from oocboost.kernels.svmlight import svmlight_tokens

    (n_rows, row_line, row_label, row_qid, n_pairs, pair_row, pair_index, pair_value,
     n_nums, offsets, data, error) = svmlight_tokens(np.frombuffer(text, np.uint8))
    nums = [bytes(data[offsets[k]:offsets[k + 1]]) for k in range(n_nums)]
    rows = [(int(row_line[r]), nums[row_label[r]],
             None if row_qid[r] < 0 else nums[row_qid[r]]) for r in range(n_rows)]
    pairs = [(int(pair_row[k]), int(pair_index[k]), nums[pair_value[k]])
             for k in range(n_pairs)]
    return rows, pairs, (int(error[0]), int(error[1]) if error[0] else 0)


@pytest.mark.parametrize("text", CASES[:4] + CASES[5:6] + [
    b"1 1:0.5\n0 3 :1\n", b"1 1:0.5\n0 3: 1\n", b"1 1:0.5\n0 3::1\n", b"1 3:1:2\n",
    b"1 1:0.5\n0 3 4\n", b"1 2:1 qid:3\n", b"1 x:1\n", b"1 -3:1\n", b"1:2 3:4\n",
    b"1 99999999999999999999:1\n"])
def test_tokens_equal_the_naive_reading(text):
    got, expected = _kernel_tokens(text), naive_tokens(text)
    assert got[2] == expected[2]
    if not expected[2][0]:
        assert got == expected


def test_random_blocks_tokenize_as_the_naive_reading():
    rng = np.random.default_rng(1)
    for _ in range(50):
        text = random_block(rng)
        assert _kernel_tokens(text) == naive_tokens(text)
