"""Quantile regression forests (Meinshausen 2006): the labels each leaf keeps, the
quantiles against a brute-force NumPy twin, and their coverage on held-out rows."""
import json

import numpy as np
import pytest

import oocboost
from oocboost.kernels import cart_stats as kc
from tests.cli_runner import run_cli


def _ok(done):
    """A CLI run that exited 0 (its stderr shown otherwise)."""
    assert done.returncode == 0, done.stderr
    return done


def _data(n, seed):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-3, 3, size=(n, 4))
    y = 2 * np.sin(X[:, 0]) + rng.normal(size=n) * (0.3 + np.abs(X[:, 1]))
    return X, y


def _brute_force_quantiles(model, X, levels):
    """Meinshausen's weights, row by row: each tree's leaf spreads 1/T over its kept
    labels in proportion to their weights; the quantile is the smallest label whose
    cumulative weight reaches the level."""
    leaves = model.predict(X, pred_leaf=True)
    part = {e.tree: e for e in model.part("leaf_samples")}
    out = np.empty((len(X), len(levels)))
    for i in range(len(X)):
        values, weights = [], []
        for t in range(model.n_trees):
            e = part[t]
            k = int(np.flatnonzero(e.node == leaves[i, t])[0])
            w = e.weight[e.offset[k]:e.offset[k + 1]]
            values.append(e.value[e.offset[k]:e.offset[k + 1]])
            weights.append(w / w.sum() / model.n_trees)
        v, w = np.concatenate(values), np.concatenate(weights)
        order = np.argsort(v, kind="stable")
        cum = np.cumsum(w[order])
        for j, q in enumerate(levels):
            out[i, j] = v[order][min(np.searchsorted(cum, q - 1e-12), len(v) - 1)]
    return out


def test_quantiles_equal_meinshausens_weights_brute_force():
    X, y = _data(3000, 0)
    rf = oocboost.RandomForestRegressor(n_estimators=12, min_samples_leaf=8,
                                        quantile_samples_leaf=5, random_state=0).fit(X, y)
    Xt, _ = _data(200, 1)
    levels = [0.9, 0.05, 0.5, 0.0, 1.0]
    np.testing.assert_array_equal(rf.predict(Xt, quantiles=levels),
                                  _brute_force_quantiles(rf.model_, Xt, levels))
    np.testing.assert_array_equal(rf.predict(Xt, quantiles=0.5),
                                  rf.predict(Xt, quantiles=[0.5])[:, 0])


@pytest.mark.parametrize("bootstrap,weighted", [(True, False), (False, True)])
def test_each_leaf_keeps_its_rows_labels_with_their_weights(tmp_path, bootstrap, weighted):
    X, y = _data(2000, 2)
    weight = np.random.default_rng(3).uniform(0.5, 2.0, size=2000) if weighted else None
    rf = oocboost.RandomForestRegressor(n_estimators=4, max_depth=4, bootstrap=bootstrap,
                                        quantile_samples_leaf=10 ** 6, random_state=5)
    rf.fit(X, y, sample_weight=weight)
    model = rf.model_
    leaves = model.predict(X, pred_leaf=True)
    draws = np.ones((4, 2000), np.uint8)
    if bootstrap:
        kc.row_draws(model.attributes["seed"], np.arange(4, dtype=np.int64), 0,
                     kc.MODE_POISSON, 1.0, draws)
    for e in model.part("leaf_samples"):
        w = draws[e.tree] * (1.0 if weight is None else weight)
        for k, node in enumerate(e.node):
            rows = np.flatnonzero((leaves[:, e.tree] == node) & (w > 0))
            order = np.lexsort((y[rows],))
            np.testing.assert_allclose(e.value[e.offset[k]:e.offset[k + 1]],
                                       y[rows][order].astype(np.float32), rtol=0)
            np.testing.assert_allclose(np.sort(e.weight[e.offset[k]:e.offset[k + 1]]),
                                       np.sort(w[rows].astype(np.float32)), rtol=1e-6)


@pytest.mark.parametrize("block_rows,prefetch", [(300, 0), (1000, 2)])
def test_kept_samples_do_not_depend_on_blocks_or_prefetch(tmp_path, block_rows, prefetch):
    X, y = _data(3000, 4)
    kw = dict(n_estimators=5, max_depth=3, quantile_samples_leaf=7, random_state=1)
    whole = oocboost.RandomForestRegressor(**kw).fit(
        oocboost.build_cache(X, tmp_path / "a", label=y, quiet=True))
    blocks = oocboost.RandomForestRegressor(prefetch=prefetch, **kw).fit(
        oocboost.build_cache(X, tmp_path / "b", label=y, block_rows=block_rows, quiet=True))
    for a, b in zip(whole.model_.part("leaf_samples"), blocks.model_.part("leaf_samples")):
        assert np.all(np.diff(a.offset) == np.minimum(7, np.diff(a.offset)))
        for name in ("node", "offset", "value", "weight"):
            np.testing.assert_array_equal(getattr(a, name), getattr(b, name))


def test_interval_coverage_on_held_out_rows_is_nominal():
    X, y = _data(10000, 6)
    Xt, yt = _data(10000, 7)
    rf = oocboost.RandomForestRegressor(n_estimators=40, min_samples_leaf=10,
                                        quantile_samples_leaf=32, random_state=0).fit(X, y)
    low, high = rf.predict(Xt, quantiles=[0.05, 0.95]).T
    coverage = np.mean((yt >= low) & (yt <= high))
    assert abs(coverage - 0.90) <= 0.02, coverage
    assert abs(np.mean(yt < low) - 0.05) <= 0.015 and abs(np.mean(yt > high) - 0.05) <= 0.015
    # the interval widens where the noise does (|x1| large)
    wide = np.abs(Xt[:, 1]) > 2
    assert (high - low)[wide].mean() > 2 * (high - low)[np.abs(Xt[:, 1]) < 0.5].mean()


def test_from_a_cache_after_warm_start_and_a_saved_file(tmp_path):
    X, y = _data(2000, 8)
    cache = oocboost.build_cache(X, tmp_path / "c", label=y, quiet=True)
    rf = oocboost.ExtraTreesRegressor(n_estimators=3, max_depth=5, quantile_samples_leaf=4,
                                      warm_start=True, random_state=0).fit(cache)
    rf.set_params(n_estimators=6).fit(cache)
    once = oocboost.ExtraTreesRegressor(n_estimators=6, max_depth=5, quantile_samples_leaf=4,
                                        random_state=0).fit(cache)
    levels = [0.2, 0.8]
    np.testing.assert_array_equal(rf.predict(X, quantiles=levels),
                                  once.predict(X, quantiles=levels))
    np.testing.assert_array_equal(rf.predict(cache, quantiles=levels),
                                  rf.predict(X, quantiles=levels))
    rf.save_model(tmp_path / "m.json")
    loaded = oocboost.ExtraTreesRegressor.load_model(tmp_path / "m.json")
    np.testing.assert_array_equal(loaded.predict(X, quantiles=levels),
                                  rf.predict(X, quantiles=levels))
    doc = json.loads((tmp_path / "m.json").read_text())
    doc["leaf_samples"][0]["value"][:2] = [5.0, -5.0]
    (tmp_path / "bad.json").write_text(json.dumps(doc))
    with pytest.raises(oocboost.ModelError, match="ascending"):
        oocboost.load_model(tmp_path / "bad.json")


def test_a_pruned_decision_tree_keeps_samples_in_its_final_leaves():
    X, y = _data(2000, 9)
    tree = oocboost.DecisionTreeRegressor(ccp_alpha=0.01, quantile_samples_leaf=1000).fit(X, y)
    e = next(iter(tree.model_.part("leaf_samples")))
    assert len(e.node) == tree.model_.trees[0].n_leaves and len(e.value) == 2000
    median = tree.predict(X[:50], quantiles=0.5)
    leaves = tree.model_.predict(X[:50], pred_leaf=True)[:, 0]
    for i, leaf in enumerate(leaves):
        k = int(np.flatnonzero(e.node == leaf)[0])
        values = e.value[e.offset[k]:e.offset[k + 1]]
        assert median[i] == values[(len(values) - 1) // 2]


@pytest.mark.parametrize("make,message", [
    (lambda: oocboost.RandomForestClassifier(quantile_samples_leaf=5), "regression"),
    (lambda: oocboost.RandomForestRegressor(quantile_samples_leaf=5, splitter="oblique"),
     "axis-aligned"),
    (lambda: oocboost.RandomForestRegressor(quantile_samples_leaf=0),
     "quantile_samples_leaf"),
])
def test_refusals_name_the_parameter(make, message):
    X, y = _data(300, 10)
    with pytest.raises(oocboost.ParameterError, match=message):
        make().fit(X, (y > 0).astype(int))


def test_quantiles_without_samples_or_out_of_range_are_refused():
    X, y = _data(300, 11)
    rf = oocboost.RandomForestRegressor(n_estimators=2).fit(X, y)
    with pytest.raises(oocboost.ParameterError, match="fit the forest with "
                                                      "quantile_samples_leaf"):
        rf.predict(X, quantiles=[0.5])
    rf = oocboost.RandomForestRegressor(n_estimators=2, quantile_samples_leaf=3).fit(X, y)
    with pytest.raises(oocboost.ParameterError, match=r"numbers in \[0, 1\]"):
        rf.predict(X, quantiles=[0.5, 1.5])


def test_command_line_trains_a_quantile_forest_and_writes_its_quantiles(tmp_path):
    X, y = _data(1500, 12)
    cache = oocboost.build_cache(X, tmp_path / "c.oocb", label=y, quiet=True)
    _ok(run_cli("train", str(tmp_path / "c.oocb"), "--learner", "random-forest", "--rounds",
            "6", "--param", "task=regression", "--param", "quantile_samples_leaf=9",
            "--param", "min_samples_leaf=5", "-o", str(tmp_path / "m.json")))
    _ok(run_cli("predict", str(tmp_path / "m.json"), str(tmp_path / "c.oocb"), "--quantiles",
            "0.1,0.9", "-o", str(tmp_path / "q.csv")))
    header = (tmp_path / "q.csv").read_text().splitlines()[0]
    assert header == '"quantile_0.1","quantile_0.9"'
    written = np.loadtxt(tmp_path / "q.csv", delimiter=",", skiprows=1)
    model = oocboost.load_model(tmp_path / "m.json")
    np.testing.assert_array_equal(written, model.predict(cache, quantiles=[0.1, 0.9]))
    done = run_cli("predict", str(tmp_path / "m.json"), str(tmp_path / "c.oocb"),
                   "--quantiles", "0.1,x", "-o", str(tmp_path / "r.csv"))
    assert done.returncode != 0 and "--quantiles must be numbers" in done.stderr
