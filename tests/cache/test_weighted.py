"""RowWeightedCache: the cache's blocks with each row's weight times a factor, label
statistics of the weighted rows, and a learner trained on it equals the learner trained
on a cache that stores those weights."""
import numpy as np
import pyarrow as pa
import pytest

import oocboost
from oocboost.cache.label_stats import LabelStats
from oocboost.cache.store.weighted import RowWeightedCache


@pytest.fixture()
def table():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(1000, 3))
    y = (X[:, 0] + rng.normal(size=1000) > 0).astype(float)
    return {"a": X[:, 0], "b": X[:, 1], "c": X[:, 2], "y": y,
            "w": rng.uniform(0.5, 2.0, size=1000)}


@pytest.mark.parametrize("with_weights", [False, True])
def test_blocks_labels_and_stats_carry_the_factor(table, tmp_path, with_weights):
    data = pa.table(table) if with_weights else pa.table(table).drop(["w"])
    cache = oocboost.build_cache(data, tmp_path / "c.oocb", label="y",
                                 weight="w" if with_weights else None, quiet=True,
                                 block_rows=300)
    factor = (np.arange(1000) % 3 != 0).astype(float)
    view = RowWeightedCache(cache, factor)
    base_weight = table["w"] if with_weights else np.ones(1000)
    expected = (base_weight.astype(np.float32) * factor.astype(np.float32))
    got = np.concatenate([b.weight for b in view.iter_blocks(prefetch=1)])
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(view.read_labels()[1], expected)
    np.testing.assert_array_equal(view.read_block(1).weight, expected[300:600])
    stats = LabelStats.from_dict(view.manifest["label_stats"])
    assert stats.sum_weight == pytest.approx(expected.sum(), rel=1e-6)
    assert view.has_weight and isinstance(view, oocboost.Cache)
    assert cache.has_weight == with_weights  # the cache itself is unchanged


def test_a_forest_on_the_view_equals_the_forest_on_stored_weights(table, tmp_path):
    cache = oocboost.build_cache(pa.table(table).drop(["w"]), tmp_path / "c.oocb",
                                 label="y", quiet=True)
    factor = (np.arange(1000) % 4 != 1).astype(float)
    stored = oocboost.build_cache(pa.table({**table, "w": factor}), tmp_path / "w.oocb",
                                  label="y", weight="w", reference=cache, quiet=True)
    params = dict(n_estimators=3, max_depth=4, random_state=0)
    ours = oocboost.RandomForestClassifier(**params).fit(RowWeightedCache(cache, factor))
    twin = oocboost.RandomForestClassifier(**params).fit(stored)
    np.testing.assert_array_equal(ours.predict_proba(cache), twin.predict_proba(cache))


def test_bad_factors_are_refused(table, tmp_path):
    cache = oocboost.build_cache(pa.table(table).drop(["w"]), tmp_path / "c.oocb",
                                 label="y", quiet=True)
    with pytest.raises(oocboost.ParameterError, match="1000 non-negative"):
        RowWeightedCache(cache, np.ones(10))
    with pytest.raises(oocboost.ParameterError, match="non-negative"):
        RowWeightedCache(cache, -np.ones(1000))
