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


def test_random_files_equal_the_naive_reading():
    rng = np.random.default_rng(0)
    for _ in range(50):
        lines = []
        for _ in range(rng.integers(0, 30)):
            tokens = [str(rng.integers(0, 3))]
            if rng.random() < 0.3:
                tokens.append(f"qid:{rng.integers(0, 5)}")
            for j in np.sort(rng.choice(1000, rng.integers(0, 6), replace=False)):
                tokens.append(f"{j}:{rng.normal():.3f}")
            if rng.random() < 0.2:
                tokens.append("# note: 99:1")
            lines.append(" ".join(tokens) if rng.random() < 0.9 else "")
        text = ("\n".join(lines) + "\n").encode()
        got = tuple(int(v) for v in svmlight_scan(np.frombuffer(text, np.uint8)))
        assert got == naive_scan(text)
