"""build-cache --append: appended blocks equal a build of the same rows with the
cache's edges, a killed append leaves the old cache whole, out-of-range values are
counted, and training continues on the grown cache."""
import numpy as np
import pytest

import oocboost
from oocboost.cache import append as append_module
from oocboost.cache.append import append_to_cache
from oocboost.cache.build import build_cache
from oocboost.cache.store import Cache
from oocboost.errors import ParameterError


def _csv(path, X, y):
    with open(path, "w") as f:
        f.write("a,b,c,y\n")
        np.savetxt(f, np.c_[X, y], delimiter=",", fmt=["%.6f"] * 3 + ["%d"])
    return str(path)


@pytest.fixture()
def parts(tmp_path):
    rng = np.random.default_rng(0)
    X = rng.random((3000, 3))
    X[2500:, 0] += 1.0                          # beyond the first part's range
    y = (X[:, 0] + X[:, 1] > 1).astype(int)
    return (_csv(tmp_path / "one.csv", X[:2000], y[:2000]),
            _csv(tmp_path / "two.csv", X[2000:], y[2000:]),
            _csv(tmp_path / "all.csv", X, y))


def _all_codes(cache):
    codes = np.concatenate([b.codes for b in cache.iter_blocks()], axis=1)
    labels = np.concatenate([b.label for b in cache.iter_blocks()])
    return codes, labels


@pytest.mark.parametrize("block_rows", [700, 2000])
def test_appended_blocks_equal_a_build_with_the_same_edges(tmp_path, parts, block_rows):
    one, two, everything = parts
    first = build_cache(one, str(tmp_path / "c.oocb"), label="y", quiet=True,
                        block_rows=block_rows)
    first = Cache(str(tmp_path / "c.oocb"))
    build_cache(everything, str(tmp_path / "w.oocb"), label="y", quiet=True,
                       reference=first)
    grown = append_to_cache(two, first.path, quiet=True)
    assert grown.n_rows == 3000 and grown.block_rows == block_rows
    got_codes, got_labels = _all_codes(grown)
    want_codes, want_labels = _all_codes(Cache(str(tmp_path / "w.oocb")))
    np.testing.assert_array_equal(got_codes, want_codes)
    np.testing.assert_array_equal(got_labels, want_labels)
    features = {f["name"]: f for f in grown.manifest["features"]}
    new_a = np.loadtxt(two, delimiter=",", skiprows=1)[:, 0]
    lo, hi = first.manifest["features"][0]["min"], first.manifest["features"][0]["max"]
    assert features["a"]["n_out_of_range"] == np.count_nonzero((new_a < lo) | (new_a > hi))
    assert features["a"]["n_out_of_range"] >= 500
    assert grown.manifest["label_stats"]["n_rows"] == 3000
    assert grown.manifest["fingerprint"] != first.manifest["fingerprint"]


def test_killed_append_leaves_the_cache_valid(tmp_path, parts, monkeypatch):
    one, two, _ = parts
    build_cache(one, str(tmp_path / "c.oocb"), label="y", quiet=True, block_rows=500)

    def killed(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr("oocboost.cache.store.manifest.write_manifest", killed)
    with pytest.raises(KeyboardInterrupt):
        append_to_cache(two, str(tmp_path / "c.oocb"), quiet=True)
    monkeypatch.undo()
    cache = Cache(str(tmp_path / "c.oocb"))
    assert cache.n_rows == 2000 and cache.n_blocks == 4
    codes, _ = _all_codes(cache)
    assert codes.shape == (3, 2000)
    grown = append_to_cache(two, str(tmp_path / "c.oocb"), quiet=True)  # then it works
    assert grown.n_rows == 3000


def test_append_refusals(tmp_path, parts):
    one, two, _ = parts
    build_cache(one, str(tmp_path / "h.oocb"), label="y", quiet=True, backend="hdf5")
    with pytest.raises(ParameterError, match="Arrow caches"):
        append_to_cache(two, str(tmp_path / "h.oocb"), quiet=True)
    build_cache(one, str(tmp_path / "c.oocb"), label="y", quiet=True)
    with pytest.raises(ParameterError, match="keeps the cache's max_bin"):
        append_to_cache(two, str(tmp_path / "c.oocb"), quiet=True, max_bin=64)
    assert append_module.STORE_FIELDS


def test_forest_continues_on_the_grown_cache(tmp_path, parts):
    """Trees added after an append are those a forest of all the trees grows on the
    grown cache (tree t depends on the seed and t only); the first trees saw the old
    rows only, so the whole forest is not the one-run forest (docs/streaming.md)."""
    one, two, _ = parts
    path = str(tmp_path / "c.oocb")
    build_cache(one, path, label="y", quiet=True)
    from oocboost.learners import train_learner

    first = train_learner("random-forest", {"max_depth": 4}, path, n_estimators=3)
    append_to_cache(two, path, quiet=True)
    more = train_learner("random-forest", {}, path, n_estimators=2, init_model=first)
    once = train_learner("random-forest", {"max_depth": 4}, path, n_estimators=5)
    assert more.n_trees == 5
    for t in (3, 4):
        for name in ("left", "feature", "bin_threshold", "value"):
            np.testing.assert_array_equal(getattr(more.trees[t], name),
                                          getattr(once.trees[t], name))


def test_hoeffding_continues_on_appended_rows(tmp_path, parts):
    """A Hoeffding tree that learns the cache, then the appended rows, is the tree that
    learns the grown cache in one pass (batches aligned with the blocks)."""
    one, two, _ = parts
    path = str(tmp_path / "c.oocb")
    build_cache(one, path, label="y", quiet=True, block_rows=1000)
    clf = oocboost.HoeffdingTreeClassifier(grace_period=50, leaf_prediction="mc",
                                           batch_rows=500)
    clf.partial_fit(Cache(path), classes=[0, 1])
    extra = str(tmp_path / "extra.oocb")
    build_cache(two, extra, label="y", quiet=True, reference=Cache(path))
    clf.partial_fit(Cache(extra))
    append_to_cache(two, path, quiet=True)
    once = oocboost.HoeffdingTreeClassifier(grace_period=50, leaf_prediction="mc",
                                            batch_rows=500)
    once.fit(Cache(path))
    X = np.random.default_rng(1).random((500, 3))
    np.testing.assert_array_equal(clf.predict_proba(X), once.predict_proba(X))
