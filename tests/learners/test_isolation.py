"""Isolation forests: the rows each tree draws, the trees against their definition, path
lengths against a brute-force walk, and the scores against scikit-learn's."""
import numpy as np
import pytest
from scipy.stats import spearmanr
from sklearn.ensemble import IsolationForest as SkIsolationForest
from sklearn.metrics import roc_auc_score

import oocboost
from oocboost.kernels.isolation import average_path_length
from oocboost.learners.isolation.sample import drawn_rows
from oocboost.learners.isolation.train import (
    resolve_isolation_config,
    train_isolation_forest,
)
from tests.cli_runner import run_cli


def _ok(done):
    """A CLI run that exited 0 (its stderr shown otherwise)."""
    assert done.returncode == 0, done.stderr
    return done


def _data(n=4000, n_features=4, n_anomalies=40, seed=0, shift=(0.5, 3.0)):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, n_features))
    X[:n_anomalies] += rng.uniform(*shift, size=(n_anomalies, n_features)) \
        * rng.choice([-1, 1], size=(n_anomalies, n_features))
    y = np.zeros(n)
    y[:n_anomalies] = 1
    return X, y


def _walk(tree, X):
    """Leaf of each row, by plain comparisons of raw values (numeric features)."""
    leaves = np.empty(len(X), np.int64)
    depth = np.empty(len(X), np.int64)
    for i, x in enumerate(X):
        node, d = 0, 0
        while tree.left[node] >= 0:
            v = x[tree.feature[node]]
            go_left = tree.default_left[node] if np.isnan(v) else v <= tree.threshold[node]
            node = tree.left[node] if go_left else tree.right[node]
            d += 1
        leaves[i], depth[i] = node, d
    return leaves, depth


def _fit(cache, n_estimators=20, **params):
    params.setdefault("random_state", 0)
    config = resolve_isolation_config(params, cache.n_rows, cache.n_features)
    return train_isolation_forest(cache, config, n_estimators)


def test_each_tree_grows_on_its_drawn_rows_to_scikit_learns_depth(tmp_path):
    X, _ = _data(n=3000)
    cache = oocboost.build_cache(X, tmp_path / "c", quiet=True)
    model = _fit(cache, n_estimators=12, max_samples=100)
    assert model.learner == "isolation_forest" and model.objective == "anomaly:isolation"
    for t, tree in enumerate(model.trees):
        rows, _ = drawn_rows(0, t, 3000, 100, False)
        assert len(rows) == 100 and len(np.unique(rows)) == 100
        leaves, depth = _walk(tree, X[rows])
        # every drawn row reaches a leaf that counts it; the leaves count nothing else
        is_leaf = tree.left < 0
        np.testing.assert_array_equal(np.bincount(leaves, minlength=tree.n_nodes)[is_leaf],
                                      tree.n_samples[is_leaf])
        assert depth.max() <= 7  # ceil(log2(100))
        # a leaf's value is its path length: depth + c(rows in it)
        np.testing.assert_allclose(tree.value[leaves, 0],
                                   depth + average_path_length(tree.n_samples[leaves]))
        # a node is a leaf only at the depth limit, with one row, or with rows that share
        # every feature's bin
        for leaf in np.flatnonzero(is_leaf):
            in_leaf = X[rows][leaves == leaf]
            if len(in_leaf) > 1 and depth[leaves == leaf][0] < 7:
                codes = [np.searchsorted(e, in_leaf[:, f]) for f, e in
                         enumerate(cache.bin_mapper.bin_edges)]
                assert all(len(np.unique(c)) == 1 for c in codes)


def test_scores_are_the_mean_path_length_normalised(tmp_path):
    X, _ = _data(n=2000)
    cache = oocboost.build_cache(X, tmp_path / "c", quiet=True)
    model = _fit(cache, n_estimators=15, max_samples=64)
    h = np.mean([tree.value[_walk(tree, X)[0], 0] for tree in model.trees], axis=0)
    np.testing.assert_allclose(model.predict(X), 2.0 ** (-h / average_path_length(64)),
                               rtol=1e-12)
    np.testing.assert_allclose(model.predict(cache), model.predict(X), rtol=1e-12)


@pytest.mark.parametrize("block_rows,prefetch,threads,trees_per_pass", [
    (500, 0, 1, 3), (1024, 2, 2, None), (4000, 1, 2, 7)])
def test_model_does_not_depend_on_blocks_prefetch_threads_or_trees_per_pass(
        tmp_path, block_rows, prefetch, threads, trees_per_pass):
    X, _ = _data(n=4000)
    reference = _fit(oocboost.build_cache(X, tmp_path / "a", quiet=True), n_estimators=10)
    cache = oocboost.build_cache(X, tmp_path / "b", block_rows=block_rows, quiet=True)
    model = _fit(cache, n_estimators=10, prefetch=prefetch, n_jobs=threads,
                 trees_per_pass=trees_per_pass)
    np.testing.assert_array_equal(model.predict(X), reference.predict(X))
    passes = model.training_log["data_passes"]
    assert passes == -(-10 // (trees_per_pass or 10))


def test_agrees_with_scikit_learn():
    """Detection AUC within 0.01 of scikit-learn's and scores ranked alike (scikit-learn
    against itself with another seed: rank correlation about 0.97 here)."""
    X, y = _data(n=10000, n_features=5, n_anomalies=100)
    ours = oocboost.IsolationForest(n_estimators=200, random_state=0).fit(X)
    theirs = SkIsolationForest(n_estimators=200, random_state=0).fit(X)
    ours_s, theirs_s = ours.score_samples(X), theirs.score_samples(X)
    assert abs(roc_auc_score(y, -ours_s) - roc_auc_score(y, -theirs_s)) < 0.01
    assert spearmanr(ours_s, theirs_s)[0] > 0.95
    assert abs(ours_s.mean() - theirs_s.mean()) < 0.01
    assert ours.max_samples_ == theirs.max_samples_ == 256 and ours.offset_ == -0.5


def test_contamination_offset_is_the_training_scores_quantile():
    X, _ = _data(n=3000)
    iso = oocboost.IsolationForest(n_estimators=30, contamination=0.05,
                                   random_state=1).fit(X)
    scores = iso.score_samples(X)
    assert iso.offset_ == pytest.approx(np.percentile(scores, 5.0), abs=1e-12)
    assert np.mean(iso.predict(X) == -1) == pytest.approx(0.05, abs=1e-3)
    np.testing.assert_allclose(iso.decision_function(X), scores - iso.offset_)
    np.testing.assert_array_equal(iso.fit_predict(X), iso.predict(X))


def test_estimator_on_a_cache_equals_on_arrays_and_warm_start_equals_one_fit(tmp_path):
    X, _ = _data(n=3000)
    cache = oocboost.build_cache(X, tmp_path / "c", label=np.arange(3000) % 2, quiet=True)
    a = oocboost.IsolationForest(n_estimators=20, random_state=3).fit(X)
    b = oocboost.IsolationForest(n_estimators=20, random_state=3).fit(cache)
    np.testing.assert_array_equal(a.score_samples(X), b.score_samples(X))
    warm = oocboost.IsolationForest(n_estimators=8, random_state=3, warm_start=True).fit(X)
    warm.set_params(n_estimators=20).fit(X)
    np.testing.assert_array_equal(warm.score_samples(X), a.score_samples(X))
    assert len(a.estimators_features_) == 20 and a.n_estimators_ == 20


def test_bootstrap_and_max_features():
    X, _ = _data(n=2000, n_features=6)
    iso = oocboost.IsolationForest(n_estimators=10, max_samples=50, bootstrap=True,
                                   max_features=0.5, random_state=0).fit(X)
    for t, (tree, features) in enumerate(zip(iso.model_.trees, iso.estimators_features_)):
        rows, copies = drawn_rows(iso.model_.attributes["seed"], t, 2000, 50, True)
        assert copies.sum() == 50 and tree.n_samples[0] == len(rows)
        assert len(features) == 3
        assert set(tree.feature[tree.left >= 0]) <= set(features)


def test_zero_weight_rows_are_left_out_of_the_trees_that_draw_them():
    X, _ = _data(n=1000)
    weight = np.ones(1000)
    weight[::3] = 0.0
    iso = oocboost.IsolationForest(n_estimators=6, max_samples=90, random_state=2).fit(
        X, sample_weight=weight)
    seed = iso.model_.attributes["seed"]
    for t, tree in enumerate(iso.model_.trees):
        rows, _ = drawn_rows(seed, t, 1000, 90, False)
        assert tree.n_samples[0] == np.count_nonzero(weight[rows])


def test_categorical_features_split_by_category_subsets(tmp_path):
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(0)
    n = 3000
    frame = pd.DataFrame({"x": rng.normal(size=n),
                          "c": rng.choice(["a", "b", "c", "d"], size=n)})
    frame.loc[:9, "c"] = "rare"
    iso = oocboost.IsolationForest(n_estimators=50, random_state=0).fit(frame)
    scores = iso.score_samples(frame)
    assert any(t.is_categorical.any() for t in iso.model_.trees)
    assert scores[:10].mean() < np.percentile(scores[10:], 25)


@pytest.mark.parametrize("params,message", [
    ({"max_samples": "all"}, "max_samples must be 'auto'"),
    ({"max_samples": 0}, "max_samples must be an integer >= 1"),
    ({"contamination": 0.7}, "contamination must be"),
    ({"contamination": "some"}, "contamination must be 'auto'"),
    ({"max_features": 9}, "max_features must be at most the 4 features"),
    ({"max_features": 0.0}, "max_features must be"),
])
def test_bad_parameters_name_themselves(params, message):
    X, _ = _data(n=300)
    with pytest.raises(oocboost.ParameterError, match=message):
        oocboost.IsolationForest(**params).fit(X)


def test_more_samples_than_rows_warns_as_scikit_learn():
    X, _ = _data(n=100)
    with pytest.warns(UserWarning, match="max_samples will be set to n_samples"):
        iso = oocboost.IsolationForest(n_estimators=3, max_samples=500).fit(X)
    assert iso.max_samples_ == 100


def test_command_line_trains_on_an_unlabelled_cache_and_continues(tmp_path):
    X, y = _data(n=2000)
    np.savetxt(tmp_path / "x.csv", X, delimiter=",", header="a,b,c,d", comments="")
    _ok(run_cli("build-cache", str(tmp_path / "x.csv"), "-o", str(tmp_path / "c.oocb"),
            check=True))
    _ok(run_cli("train", str(tmp_path / "c.oocb"), "--learner", "isolation-forest", "--rounds",
            "12", "-o", str(tmp_path / "all.json")))
    _ok(run_cli("train", str(tmp_path / "c.oocb"), "--learner", "isolation-forest", "--rounds",
            "5", "-o", str(tmp_path / "first.json")))
    _ok(run_cli("train", str(tmp_path / "c.oocb"), "--learner", "isolation-forest", "--rounds",
            "7", "--init-model", str(tmp_path / "first.json"), "-o",
            str(tmp_path / "more.json")))
    _ok(run_cli("predict", str(tmp_path / "all.json"), str(tmp_path / "x.csv"), "-o",
            str(tmp_path / "p.csv")))
    scores = np.loadtxt(tmp_path / "p.csv", skiprows=1)
    whole = oocboost.load_model(tmp_path / "all.json")
    np.testing.assert_allclose(scores, whole.predict(X), rtol=1e-12)
    np.testing.assert_array_equal(oocboost.load_model(tmp_path / "more.json").predict(X),
                                  whole.predict(X))
    assert roc_auc_score(y, scores) > 0.85
