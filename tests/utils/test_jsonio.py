"""Tests of oocboost.utils.jsonio: the one guarded reader of JSON from disk."""
import json
import os

import numpy as np
import pytest

from oocboost.errors import ModelError
from oocboost.utils.jsonio import MAX_DEPTH, nesting_depth, parse, read_json


def _depth(obj):
    if isinstance(obj, list):
        return 1 + max((_depth(v) for v in obj), default=0)
    if isinstance(obj, dict):
        return 1 + max((_depth(v) for v in obj.values()), default=0)
    return 0


def _random_doc(rng, depth):
    kind = rng.integers(4) if depth < 6 else 3
    if kind == 0:
        return [_random_doc(rng, depth + 1) for _ in range(rng.integers(0, 3))]
    if kind == 1:
        return {f'k"[{i}\\': _random_doc(rng, depth + 1) for i in range(rng.integers(0, 3))}
    if kind == 2:
        return "".join(rng.choice(list('[]{}"\\ab'), size=rng.integers(0, 6)))
    return float(rng.normal())


@pytest.mark.parametrize("seed", range(20))
def test_nesting_depth_equals_the_parsed_objects_depth(seed):
    doc = _random_doc(np.random.default_rng(seed), 0)
    assert nesting_depth(json.dumps(doc).encode()) == _depth(doc)


def test_refusals_name_the_file(tmp_path):
    deep = tmp_path / "deep.json"
    deep.write_text("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1))
    with pytest.raises(ModelError, match=f"model file {deep} is not valid JSON for "
                                         f"oocboost: nested deeper than {MAX_DEPTH}"):
        read_json(deep, max_bytes=1 << 20, error=ModelError, what="model file")
    ok = "[" * MAX_DEPTH + "]" * MAX_DEPTH
    assert parse(ok.encode(), error=ModelError, where="x") == json.loads(ok)
    with pytest.raises(ModelError, match="larger than the 3 bytes accepted"):
        read_json(deep, max_bytes=3, error=ModelError, what="model file")
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    with pytest.raises(ModelError, match="is not a regular file"):
        read_json(fifo, max_bytes=1 << 20, error=ModelError, what="model file")
    with pytest.raises(ModelError, match="1e999"):
        parse(b"[1e999]", error=ModelError, where="x")


@pytest.mark.parametrize("number", [b"1e309", b"-2.5E+0400", b"9" * 400 + b".0",
                                    b"0.000001e315"])
def test_every_float_that_overflows_is_refused(number):
    with pytest.raises(ModelError, match="overflows float64"):
        parse(b'{"a": [1.5, ' + number + b"]}", error=ModelError, where="x")


def test_floats_below_the_overflow_screen_parse_exactly():
    values = [1e99, -1.7976931348623157e299, 5e-324, 0.1, 123456789.123456789]
    text = json.dumps({"v": values}).encode()
    assert parse(text, error=ModelError, where="x") == {"v": values}
