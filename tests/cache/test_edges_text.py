"""Bin edges as base64 text in manifests and models (cache/edges_text.py), and the
version-1 descriptions (edges as lists of numbers) of older caches and models, which
still open, train and predict with the newer ones."""
import json
import os

import numpy as np
import pytest

import oocboost
from oocboost.cache.edges_text import decode_edges, encode_edges
from oocboost.errors import ModelError


def test_every_float64_comes_back_bit_for_bit():
    tiny = np.finfo(np.float64).smallest_subnormal
    edges = np.array([-np.finfo(np.float64).max, -1 / 3, -0.0, tiny, 1e-300, 0.1,
                      np.nextafter(0.1, 1), 2.5e300])
    text = encode_edges(edges)
    assert isinstance(text, str) and len(text) == 4 * -(-8 * len(edges) // 3)
    back = decode_edges(text, "f")
    assert back.dtype == np.float64 and back.flags.writeable
    np.testing.assert_array_equal(back.view(np.uint64), edges.view(np.uint64))
    assert encode_edges(np.empty(0)) == "" and decode_edges("", "f").shape == (0,)
    np.testing.assert_array_equal(decode_edges(edges.tolist(), "f"), edges)


@pytest.mark.parametrize("value, pattern", [
    ("%%%%", "'f0': edges are not base64"),
    ("AAAAAAAAAAAA", "9 bytes, not a whole number"),
    ({"a": 1}, "base64 text or a list"),
    (["1.5", "x"], "must be numbers"),
])
def test_malformed_edges_name_their_feature(value, pattern):
    with pytest.raises(ModelError, match=pattern):
        decode_edges(value, "'f0'")


def _as_version_1(doc):
    """A version-2 bin mapper description as an older oocboost wrote it."""
    return {**doc, "version": 1,
            "features": [{**f, "edges": decode_edges(f["edges"], "f").tolist()}
                         for f in doc["features"]]}


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(600, 4))
    y = (X[:, 0] + X[:, 1] * X[:, 2] > 0).astype(float)
    return X, y


def test_an_older_cache_and_an_older_model_work_with_newer_ones(data, tmp_path):
    X, y = data
    new_cache = oocboost.build_cache(X, tmp_path / "new.oocb", label=y, quiet=True)
    old_cache = oocboost.build_cache(X, tmp_path / "old.oocb", label=y, quiet=True)
    manifest_path = os.path.join(old_cache.path, "manifest.json")
    with open(manifest_path) as f:
        manifest = json.load(f)
    assert manifest["bin_mapper"]["version"] == 2
    manifest["bin_mapper"] = _as_version_1(manifest["bin_mapper"])
    with open(manifest_path, "w") as f:
        json.dump(manifest, f)
    old_cache = oocboost.Cache(old_cache.path)
    assert old_cache.bin_mapper == new_cache.bin_mapper
    assert old_cache.manifest["bin_mapper"] == new_cache.manifest["bin_mapper"]

    params = {"objective": "binary:logistic", "max_depth": 3}
    model = oocboost.train(params, old_cache, num_boost_round=5)
    assert model.bin_mapper["version"] == 2
    np.testing.assert_array_equal(model.predict(new_cache), model.predict(X))

    path = tmp_path / "model.json"
    model.save_model(path)
    with open(path) as f:
        doc = json.load(f)
    doc["bin_mapper"] = _as_version_1(doc["bin_mapper"])
    with open(path, "w") as f:
        json.dump(doc, f)
    older = oocboost.load_model(path)
    assert older.bin_mapper == new_cache.manifest["bin_mapper"]
    np.testing.assert_array_equal(older.predict(new_cache), model.predict(X))
    np.testing.assert_array_equal(older.predict(old_cache), model.predict(X))


def test_a_bad_older_description_is_named_on_open(data, tmp_path):
    X, y = data
    cache = oocboost.build_cache(X, tmp_path / "c.oocb", label=y, quiet=True)
    manifest_path = os.path.join(cache.path, "manifest.json")
    with open(manifest_path) as f:
        manifest = json.load(f)
    manifest["bin_mapper"] = _as_version_1(manifest["bin_mapper"])
    manifest["bin_mapper"]["features"][1]["edges"].reverse()
    with open(manifest_path, "w") as f:
        json.dump(manifest, f)
    with pytest.raises(oocboost.errors.CacheError,
                       match="c.oocb: bin_mapper: .*strictly increasing"):
        oocboost.Cache(cache.path)
