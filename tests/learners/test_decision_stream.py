"""Decision streams: the two-sample tests against SciPy, the greedy merge against a
brute-force replay, fewer leaves than a tree for the same accuracy, results independent
of block size and threads, and the graph (nodes with several parents) in model files."""
import json

import numpy as np
import pytest
from scipy import stats as sps

import oocboost
from oocboost.errors import ModelError, ParameterError
from oocboost.learners.decision_stream.merge import (
    chi2_sf,
    homogeneity_p,
    merge_nodes,
    welch_p,
)


@pytest.mark.parametrize("x, df", [(0.5, 1), (3.84, 1), (12.0, 3), (40.0, 9), (150.0, 4),
                                   (1e-3, 7), (7.0, 7)])
def test_chi2_sf_matches_scipy(x, df):
    assert chi2_sf(x, df) == pytest.approx(sps.chi2.sf(x, df), rel=1e-10, abs=1e-300)


def test_two_sample_tests_match_scipy():
    a, b = np.array([30.0, 12.0, 5.0]), np.array([18.0, 20.0, 9.0])
    expected = sps.chi2_contingency(np.vstack([a, b]), correction=False).pvalue
    assert homogeneity_p(a, b) == pytest.approx(expected, rel=1e-10)
    assert homogeneity_p(np.array([5.0, 0.0]), np.array([7.0, 0.0])) == 1.0
    rng = np.random.default_rng(0)
    ya, yb = rng.normal(0.0, 1.0, 300), rng.normal(0.2, 2.0, 200)

    def moments(y):
        return np.array([len(y), y.sum(), (y * y).sum(), len(y)])

    t = sps.ttest_ind(ya, yb, equal_var=False)
    z = abs(ya.mean() - yb.mean()) / np.sqrt(ya.var(ddof=1) / 300 + yb.var(ddof=1) / 200)
    assert welch_p(moments(ya), moments(yb)) == pytest.approx(2 * sps.norm.sf(z), rel=1e-9)
    assert abs(welch_p(moments(ya), moments(yb)) - t.pvalue) < 0.01   # normal ~ t here


def test_greedy_merge_matches_a_brute_force_replay():
    rng = np.random.default_rng(2)
    stats = rng.integers(1, 60, size=(8, 2)).astype(float)
    parent = np.repeat(np.arange(4), 2)
    group, sums = merge_nodes(stats, parent, homogeneity_p, 0.05)
    # replay: join the most alike pair of non-siblings while p > 0.05
    clusters = [([i], stats[i].copy(), {parent[i]}) for i in range(8)]
    while True:
        best, pair = 0.05, None
        for i in range(len(clusters)):
            for j in range(i + 1, len(clusters)):
                if clusters[i][2] & clusters[j][2]:
                    continue
                p = homogeneity_p(clusters[i][1], clusters[j][1])
                if p > best:
                    best, pair = p, (i, j)
        if pair is None:
            break
        i, j = pair
        a, b = clusters[i], clusters[j]
        clusters[i] = (a[0] + b[0], a[1] + b[1], a[2] | b[2])
        del clusters[j]
    expected = sorted(sorted(c[0]) for c in clusters)
    got = sorted(sorted(np.flatnonzero(group == g).tolist()) for g in range(group.max() + 1))
    assert got == expected
    for g in range(group.max() + 1):
        np.testing.assert_allclose(sums[g], stats[group == g].sum(axis=0))
    assert all(len({parent[i] for i in np.flatnonzero(group == g)}) == (group == g).sum()
               for g in range(group.max() + 1))


def _xor(n, seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 6))
    y = ((X[:, 0] > 0) ^ (X[:, 1] > 0.5)).astype(int)
    return X, y ^ (rng.random(n) < 0.1)


def test_merging_keeps_accuracy_with_far_fewer_leaves():
    X, y = _xor(20000, 0)
    Xt, yt = _xor(5000, 1)
    stream = oocboost.DecisionStreamClassifier(max_depth=8).fit(X, y)
    tree = oocboost.DecisionTreeClassifier(max_depth=8).fit(X, y)
    assert stream.n_leaves_ * 5 < tree.get_n_leaves()
    assert stream.score(Xt, yt) >= tree.score(Xt, yt) - 0.005
    t = stream.model_.trees[0]
    internal = t.left >= 0
    parents = np.bincount(np.concatenate([t.left[internal], t.right[internal]]))
    assert parents.max() >= 2          # branches merged: a node with several parents


@pytest.mark.parametrize("block_rows, n_jobs", [(97, 1), (20000, 2), (1500, 2)])
def test_the_stream_does_not_depend_on_blocks_or_threads(tmp_path, block_rows, n_jobs):
    X, y = _xor(6000, 3)
    ref = oocboost.DecisionStreamClassifier(max_depth=6, n_jobs=1).fit(X, y)
    cache = oocboost.build_cache(X, tmp_path / "c.oocb", label=y.astype(float),
                                 block_rows=block_rows, quiet=True)
    got = oocboost.DecisionStreamClassifier(max_depth=6, n_jobs=n_jobs).fit(cache)
    a, b = ref.model_.trees[0], got.model_.trees[0]
    for name in ("left", "right", "feature", "bin_threshold", "value"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))


def test_regressor_merges_leaves_of_equal_means(tmp_path):
    rng = np.random.default_rng(4)
    X = rng.normal(size=(8000, 4))
    y = np.where(X[:, 0] > 0, 2.0, 0.0) + np.where(X[:, 2] > 1, 1.0, 0.0) \
        + 0.3 * rng.normal(size=8000)
    stream = oocboost.DecisionStreamRegressor(max_depth=6).fit(X, y)
    tree = oocboost.DecisionTreeRegressor(max_depth=6).fit(X, y)
    assert stream.n_leaves_ * 3 < tree.get_n_leaves()
    Xt = rng.normal(size=(4000, 4))
    yt = np.where(Xt[:, 0] > 0, 2.0, 0.0) + np.where(Xt[:, 2] > 1, 1.0, 0.0) \
        + 0.3 * rng.normal(size=4000)
    assert stream.score(Xt, yt) >= tree.score(Xt, yt) - 0.005


def test_graph_in_a_model_file(tmp_path):
    X, y = _xor(4000, 5)
    X[::7, 1] = np.nan
    stream = oocboost.DecisionStreamClassifier(max_depth=6).fit(X, y)
    path = tmp_path / "s.json"
    stream.save_model(path)
    model = oocboost.load_model(path)
    np.testing.assert_array_equal(model.predict(X), stream.predict_proba(X))
    cache = oocboost.build_cache(X, tmp_path / "c.oocb", label=y.astype(float), quiet=True)
    np.testing.assert_allclose(model.predict(cache), model.predict(X), rtol=1e-12)
    leaves = model.predict_leaf(X)[:, 0]
    assert set(leaves.tolist()) <= set(np.flatnonzero(model.trees[0].left < 0).tolist())
    with pytest.raises(ModelError, match="Tree SHAP"):
        model.predict_contributions(X[:5])
    # a graph is refused in any other learner's file
    doc = json.loads(path.read_text())
    doc["learner"] = "decision_tree"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    with pytest.raises(ModelError, match="parents"):
        oocboost.load_model(bad)


@pytest.mark.parametrize("kwargs, pattern", [
    (dict(significance=0.0), "significance"),
    (dict(criterion="poisson"), "criterion"),
    (dict(max_depth=0), "max_depth"),
])
def test_bad_parameters_are_refused(kwargs, pattern):
    X, y = _xor(200, 6)
    with pytest.raises(ParameterError, match=pattern):
        oocboost.DecisionStreamClassifier(**kwargs).fit(X, y)


def test_command_line_grows_a_stream(tmp_path, capsys):
    from oocboost.cli import main

    X, y = _xor(3000, 7)
    cache = oocboost.build_cache(X, tmp_path / "c.oocb", label=y.astype(float), quiet=True)
    out = tmp_path / "s.json"
    assert main(["train", str(cache.path), "--learner", "decision-stream", "--param",
                 "max_depth=5", "--param", "significance=0.01", "-o", str(out),
                 "--quiet"]) == 0
    model = oocboost.load_model(out)
    assert model.learner == "decision_stream" and model.params["significance"] == 0.01
    ours = oocboost.DecisionStreamClassifier(max_depth=5, significance=0.01).fit(cache)
    np.testing.assert_array_equal(model.trees[0].feature, ours.model_.trees[0].feature)
    assert main(["train", str(cache.path), "--learner", "decision-stream", "--param",
                 "n_estimators=3", "-o", str(out), "--quiet"]) != 0
    err = capsys.readouterr().err
    assert ("unknown parameter 'n_estimators' for --learner decision-stream; known: "
            "criterion, max_depth") in err
