"""Label statistics' per-class sums and row counts: the same whatever the blocks, merged
shard by shard, kept through the manifest's JSON; absent from older manifests."""
import json

import numpy as np
import pytest

from oocboost.cache.label_stats import MAX_TRACKED_CLASSES, LabelStats


@pytest.fixture(scope="module")
def labels():
    rng = np.random.default_rng(5)
    y = rng.choice([0.0, 1.0, 2.0, 7.0], size=1000, p=[0.5, 0.3, 0.15, 0.05])
    return y, rng.uniform(0.1, 3.0, 1000)


@pytest.mark.parametrize("block_rows", [1000, 333, 64])
def test_class_sums_and_counts_do_not_depend_on_the_blocks(labels, block_rows):
    y, w = labels
    stats = LabelStats()
    for s in range(0, len(y), block_rows):
        stats.update(y[s:s + block_rows], w[s:s + block_rows])
    keys = [0, 1, 2, 7]
    assert sorted(stats.class_counts) == keys
    assert [stats.class_counts[k] for k in keys] == \
        [int(np.sum(y == k)) for k in keys]          # unweighted, whatever the weights
    np.testing.assert_allclose([stats.class_weights[k] for k in keys],
                               [w[y == k].sum() for k in keys], rtol=1e-12)


def test_merge_and_json_keep_the_counts(labels):
    y, w = labels
    a, b = LabelStats().update(y[:400], w[:400]), LabelStats().update(y[400:], w[400:])
    merged = a.merge(b)
    whole = LabelStats().update(y, w)
    assert merged.class_counts == whole.class_counts
    back = LabelStats.from_dict(json.loads(json.dumps(merged.to_dict())))
    assert back.class_counts == whole.class_counts
    assert back.class_weights == pytest.approx(whole.class_weights)


def test_older_manifests_and_non_classes_have_no_counts(labels):
    y, w = labels
    d = LabelStats().update(y, w).to_dict()
    d.pop("class_counts")                       # a manifest written before they were kept
    old = LabelStats.from_dict(d)
    assert old.class_counts is None and old.class_weights is not None
    assert old.merge(LabelStats().update(y)).class_counts is None  # unknown stays unknown
    assert LabelStats().update(y + 0.5).class_counts is None     # not integer classes
    many = np.arange(MAX_TRACKED_CLASSES + 1, dtype=np.float64)
    assert LabelStats().update(many).class_counts is None
