"""Hoeffding trees: the split decision against a NumPy reference, concepts learned and
followed, results independent of block size and threads, the memory bound, the model
file, and agreement with river."""
import json

import numba
import numpy as np
import pytest

from oocboost import HoeffdingTreeClassifier, HoeffdingTreeRegressor, load_model
from oocboost.cache.build import build_cache
from oocboost.cache.store import Cache
from oocboost.errors import ModelError, ParameterError
from oocboost.learners.hoeffding.config import resolve_config
from oocboost.learners.hoeffding.decide import hoeffding_bound
from oocboost.learners.hoeffding.stream import learn_cache, new_learners


def _hyperplane(n, d=4, seed=0, noise=0.05):
    rng = np.random.default_rng(seed)
    X = rng.random((n, d))
    w = np.linspace(1.0, 0.2, d)
    y = (X @ w > w.sum() / 2).astype(np.float64)
    flip = rng.random(n) < noise
    y[flip] = 1 - y[flip]
    return X, y


def _cache(tmp_path, X, y, name="c", block_rows=1000, reference=None):
    path = str(tmp_path / name)
    build_cache(X, path, label=y, quiet=True, block_rows=block_rows,
                max_bin=32, overwrite=True, reference=reference)
    return Cache(path)


def _learn(cache, batch_rows=200, **params):
    cfg = resolve_config("classification", 2, **params)
    learners = new_learners(cfg, cache.bin_mapper, 1, block_rows=cache.block_rows,
                            code_bytes_per_row=cache.code_bytes_per_row)
    score = learn_cache(learners, cache, evaluate=True, batch_rows=batch_rows)
    return learners[0], score


def _entropy(c):
    w = c.sum()
    p = c[c > 0] / w
    return float(-(p * np.log2(p)).sum())


def test_first_split_equals_numpy_reference(tmp_path):
    """The root's first split: merits of every feature's best threshold by brute force
    over the binned rows, the Hoeffding bound of the rows seen, VFDT's rule."""
    X, y = _hyperplane(4000, seed=1)
    everything = _cache(tmp_path, X, y, name="all")
    codes = everything.bin_mapper.transform_numeric(X)
    # replay: attempts after 200, 400, ... rows; the first that passes the rule splits
    for n in range(200, 4001, 200):
        merits = []
        for f in range(X.shape[1]):
            best = (-np.inf, -1)
            for b in range(int(codes[f, :n].max())):
                left = codes[f, :n] <= b
                cl = np.bincount(y[:n][left].astype(int), minlength=2)
                cr = np.bincount(y[:n][~left].astype(int), minlength=2)
                if min(cl.sum(), cr.sum()) <= 0.01 * n:
                    continue
                parent = np.bincount(y[:n].astype(int), minlength=2)
                merit = _entropy(parent) - (cl.sum() * _entropy(cl)
                                            + cr.sum() * _entropy(cr)) / n
                if merit > best[0]:
                    best = (merit, b)
            merits.append((best[0], f, best[1]))
        merits.sort(key=lambda m: (-m[0], m[1]))
        eps = np.sqrt(np.log(1 / 1e-7) / (2 * n))
        assert eps == pytest.approx(hoeffding_bound(1.0, 1e-7, n))
        second = max(merits[1][0], 0.0)         # the null split (merit 0) competes
        if merits[0][0] - second > eps or eps < 0.05:
            break
    assert n < 4000
    # the same bins, learned up to the attempt before and up to the split
    before, _ = _learn(_cache(tmp_path, X[:n - 200], y[:n - 200], name="before",
                              block_rows=200, reference=everything), leaf_prediction="mc")
    assert before.tree.n_nodes == 1
    learner, _ = _learn(_cache(tmp_path, X[:n], y[:n], name="upto", block_rows=200,
                               reference=everything),
                        leaf_prediction="mc")
    tree = learner.tree
    _, f, b = merits[0]
    assert (tree.feature[0], tree.bin_threshold[0]) == (f, b)
    left = codes[f, :n] <= b
    np.testing.assert_allclose(tree.dist[1, :2], np.bincount(y[:n][left].astype(int),
                                                             minlength=2))


def test_hyperplane_is_learned(tmp_path):
    X, y = _hyperplane(60000, seed=2, noise=0.0)
    clf = HoeffdingTreeClassifier().fit(X[:50000], y[:50000])
    assert (clf.predict(X[50000:]) == y[50000:]).mean() > 0.93
    assert clf.prequential_score_["accuracy"] > 0.9


def _drifting(n, seed=3):
    rng = np.random.default_rng(seed)
    X = rng.random((n, 3))
    y = np.where(np.arange(n) < n // 2, X[:, 0] > 0.5, X[:, 1] > 0.5).astype(float)
    return X, y


def test_split_revision_follows_an_abrupt_change(tmp_path):
    X, y = _drifting(40000)
    cache = _cache(tmp_path, X, y)
    codes = cache.bin_mapper.transform_numeric(X)
    tail = slice(36000, 40000)
    accuracy, root = {}, {}
    for revision in (False, True):
        learner, _ = _learn(cache, split_revision=revision, leaf_prediction="mc")
        pred = learner.predict_rows(codes[:, tail]).argmax(axis=1)
        accuracy[revision] = (pred == y[tail]).mean()
        root[revision] = learner.tree.feature[0]
        if revision:
            assert learner.counters["revisions"] > 0
    # VFDT keeps its first root and grows the new concept below it; EFDT replaces it
    assert root == {False: 0, True: 1}
    assert accuracy[True] > 0.95


@pytest.mark.parametrize("block_rows", [1000, 4000])
@pytest.mark.parametrize("threads", [1, 2])
def test_model_independent_of_blocks_and_threads(tmp_path, block_rows, threads):
    X, y = _hyperplane(12000, seed=4)
    cache = _cache(tmp_path, X, y, block_rows=block_rows)
    reference = _cache(tmp_path, X, y, name="ref", block_rows=12000)
    old = numba.get_num_threads()
    numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
    try:
        got, _ = _learn(cache, batch_rows=None, leaf_prediction="nba", split_revision=True)
    finally:
        numba.set_num_threads(old)
    want, _ = _learn(reference, batch_rows=None, leaf_prediction="nba", split_revision=True)
    n = want.tree.n_nodes
    assert got.tree.n_nodes == n
    for name in ("left", "feature", "bin_threshold", "dist", "mc_correct", "nb_correct"):
        np.testing.assert_array_equal(getattr(got.tree, name)[:n],
                                      getattr(want.tree, name)[:n], err_msg=name)


@pytest.mark.parametrize("leaf_prediction", ["mc", "nba"])
def test_max_leaves_bounds_the_histograms(tmp_path, leaf_prediction):
    X, y = _hyperplane(40000, seed=5)
    clf = HoeffdingTreeClassifier(max_leaves=4, grace_period=100,
                                  leaf_prediction=leaf_prediction).fit(X, y)
    learner = clf._learners[0]
    assert learner.tree.hist.shape[0] == 4
    assert clf.n_active_leaves_ <= 4
    if leaf_prediction == "mc":
        assert clf.n_leaves_ > 4              # leaves beyond the bound still predict
    else:
        # a split waits for histograms for both children: naive Bayes leaves keep theirs
        assert clf.n_leaves_ <= 4 and learner.counters["held_by_memory"] > 0


def test_memory_limit_too_small_is_refused():
    X, y = _hyperplane(2000, seed=6)
    with pytest.raises(Exception, match="smallest limit"):
        HoeffdingTreeClassifier(memory_limit="1MB").fit(X, y)


@pytest.mark.parametrize("leaf_prediction", ["mc", "nb", "nba"])
def test_saved_model_predicts_the_same(tmp_path, leaf_prediction):
    X, y = _hyperplane(20000, seed=7)
    clf = HoeffdingTreeClassifier(leaf_prediction=leaf_prediction).fit(X, y)
    path = tmp_path / "m.json"
    clf.save_model(path)
    model = load_model(path)
    np.testing.assert_allclose(model.predict(X[:3000]), clf.predict_proba(X[:3000]))
    assert (model.part("naive_bayes") is not None) == (leaf_prediction != "mc")
    # the in-training predictions are the exported model's
    codes = clf._mapper.transform_numeric(X[:3000])
    np.testing.assert_allclose(clf._learners[0].predict_rows(codes),
                               clf.predict_proba(X[:3000]), atol=1e-12)


def test_naive_bayes_fields_are_checked(tmp_path):
    X, y = _hyperplane(20000, seed=8)
    clf = HoeffdingTreeClassifier(leaf_prediction="nb").fit(X, y)
    doc = clf.model_.to_json_dict()
    leaf = doc["naive_bayes"][0]["node"][0]
    for mutate, message in (
            (lambda d: d["naive_bayes"][0].__setitem__("node", [0] * len(
                d["naive_bayes"][0]["node"])), "leaves|twice"),
            (lambda d: d["naive_bayes"][0]["counts"].__setitem__(0, -1.0), ">= 0"),
            (lambda d: d["naive_bayes"][0].__setitem__("extra", 1), "unknown"),
            (lambda d: d["naive_bayes"][0].__setitem__("n_cells", 3), "items")):
        bad = json.loads(json.dumps(doc))
        mutate(bad)
        path = tmp_path / "bad.json"
        path.write_text(json.dumps(bad))
        with pytest.raises(ModelError, match=message):
            load_model(path)
    assert leaf > 0


def test_partial_fit_equals_fit_on_the_same_bins(tmp_path):
    X, y = _hyperplane(8000, seed=9)
    cache = _cache(tmp_path, X, y, block_rows=8000)
    whole = HoeffdingTreeClassifier(leaf_prediction="mc", batch_rows=1000).fit(cache)
    chunks = HoeffdingTreeClassifier(leaf_prediction="mc", reference=cache, batch_rows=1000)
    for lo in range(0, 8000, 1000):
        chunks.partial_fit(X[lo:lo + 1000], y[lo:lo + 1000], classes=[0.0, 1.0])
    np.testing.assert_allclose(chunks.predict_proba(X), whole.predict_proba(X))
    assert chunks.prequential_score_ == pytest.approx(whole.prequential_score_)


def test_partial_fit_errors():
    X, y = _hyperplane(3000, seed=10)
    clf = HoeffdingTreeClassifier()
    with pytest.raises(ParameterError, match="classes must be passed"):
        clf.partial_fit(X, y)
    clf.partial_fit(X, y, classes=[0, 1])
    with pytest.raises(ParameterError, match="not among the classes"):
        clf.partial_fit(X[:5], np.array([0, 1, 2, 0, 1]))
    with pytest.raises(ParameterError, match="features"):
        clf.partial_fit(X[:5, :2], y[:5])
    with pytest.raises(ParameterError, match="grace_period"):
        HoeffdingTreeClassifier(grace_period=0).fit(X, y)
    with pytest.raises(ParameterError, match="leaf_prediction"):
        HoeffdingTreeClassifier(leaf_prediction="gaussian").fit(X, y)


def test_regressor_learns_a_step_and_a_slope():
    rng = np.random.default_rng(11)
    X = rng.random((60000, 3))
    target = np.where(X[:, 0] > 0.5, 2.0, -1.0) + X[:, 1]
    reg = HoeffdingTreeRegressor().fit(X[:50000], target[:50000] + rng.normal(0, 0.1, 50000))
    mse = np.mean((reg.predict(X[50000:]) - target[50000:]) ** 2)
    assert mse < 0.05                          # the step (variance 2.25) is learned
    assert reg.model_.trees[0].feature[0] == 0


def test_prequential_accuracy_close_to_rivers():
    """River's HoeffdingTreeClassifier on the same stream, majority-class leaves; our
    batches of 50 rows against its row-at-a-time learning."""
    river_tree = pytest.importorskip("river.tree")
    X, y = _hyperplane(20000, seed=12)
    clf = HoeffdingTreeClassifier(leaf_prediction="mc")
    for lo in range(0, 20000, 50):
        clf.partial_fit(X[lo:lo + 50], y[lo:lo + 50], classes=[0.0, 1.0])
    river = river_tree.HoeffdingTreeClassifier(leaf_prediction="mc")
    correct = 0
    for xi, yi in zip(X, y):
        x = {f"x{j}": v for j, v in enumerate(xi)}
        correct += river.predict_one(x) == yi
        river.learn_one(x, yi)
    assert abs(clf.prequential_score_["accuracy"] - correct / len(y)) < 0.015


def test_command_line_trains_on_a_cache(tmp_path, capsys):
    from oocboost.cli import main

    X, y = _hyperplane(6000, seed=13)
    cache = _cache(tmp_path, X, y)
    out = tmp_path / "h.json"
    assert main(["train", cache.path, "--learner", "hoeffding-tree", "--param",
                 "grace_period=100", "--param", "leaf_prediction=mc", "-o", str(out),
                 "--verbose"]) == 0
    assert "prequential" in capsys.readouterr().out
    model = load_model(out)
    clf = HoeffdingTreeClassifier(grace_period=100, leaf_prediction="mc").fit(cache)
    np.testing.assert_allclose(model.predict(X), clf.predict_proba(X))
    assert model.attributes["prequential"] == pytest.approx(clf.prequential_score_)
    bag = tmp_path / "b.json"
    assert main(["train", cache.path, "--learner", "online-bagging", "--rounds", "3",
                 "--param", "seed=4", "-o", str(bag), "--quiet"]) == 0
    assert load_model(bag).n_trees == 3 and load_model(bag).learner == "online_bagging"
    capsys.readouterr()
    assert main(["train", cache.path, "--learner", "hoeffding-tree", "--param", "eta=1",
                 "-o", str(out)]) != 0
    assert "unknown parameter 'eta' for --learner" in capsys.readouterr().err


def test_online_bagging_draws_poisson_copies(tmp_path):
    """Each tree learns each row as often as the forests' counter-based Poisson(1) draw
    of (seed, tree, row) says, whatever the chunking; same seed, same model."""
    from oocboost import OnlineBaggingClassifier
    from oocboost.kernels import cart_stats as kc

    X, y = _hyperplane(5000, seed=14)
    bag = OnlineBaggingClassifier(HoeffdingTreeClassifier(leaf_prediction="mc"),
                                  n_estimators=3, random_state=7).fit(X, y)
    draws = np.empty((3, 5000))
    kc.row_draws(7, np.arange(3, dtype=np.int64), 0, kc.MODE_POISSON, 1.0, draws)
    for t, learner in enumerate(bag._learners):
        assert learner.weight_seen == draws[t].sum()
        assert abs(draws[t].mean() - 1.0) < 0.05
    chunks = OnlineBaggingClassifier(HoeffdingTreeClassifier(leaf_prediction="mc"),
                                     n_estimators=3, random_state=7)
    chunks.partial_fit(X[:1000], y[:1000], classes=[0.0, 1.0])
    for lo in range(1000, 5000, 1000):
        chunks.partial_fit(X[lo:lo + 1000], y[lo:lo + 1000])
    assert chunks.model_.n_trees == 3
    again = OnlineBaggingClassifier(HoeffdingTreeClassifier(leaf_prediction="mc"),
                                    n_estimators=3, random_state=7).fit(X, y)
    np.testing.assert_array_equal(again.predict_proba(X), bag.predict_proba(X))
    assert bag.prequential_score_["accuracy"] > 0.7     # majority class: 0.5


@pytest.mark.parametrize("params", [{"leaf_prediction": "nba"},
                                    {"leaf_prediction": "mc", "split_revision": True}])
def test_saved_tree_goes_on_learning_as_if_never_stopped(tmp_path, params):
    X, y = _hyperplane(9000, seed=15)
    cache = _cache(tmp_path, X[:5000], y[:5000], block_rows=1000)
    whole = HoeffdingTreeClassifier(grace_period=100, **params).fit(cache)
    whole.partial_fit(X[5000:], y[5000:])
    first = HoeffdingTreeClassifier(grace_period=100, **params).fit(cache)
    first.save_model(tmp_path / "h.json")
    resumed = HoeffdingTreeClassifier(grace_period=100, **params)
    resumed.fit(X[5000:], y[5000:], init_model=tmp_path / "h.json")
    np.testing.assert_array_equal(resumed.predict_proba(X), whole.predict_proba(X))
    assert resumed.prequential_score_ == pytest.approx(whole.prequential_score_)
    assert resumed.model_.attributes["rows_seen"] == 9000
    first.save_model(tmp_path / "p.json", state=False)
    assert load_model(tmp_path / "p.json").part("stream_state") is None
    with pytest.raises(ParameterError, match="without its learning state"):
        HoeffdingTreeClassifier().fit(X[:10], y[:10], init_model=tmp_path / "p.json")


def test_command_line_continues_on_appended_rows(tmp_path):
    """train, append, train --init-model: only the appended rows are learned, and the
    tree is the one a single pass over the grown cache grows (online bagging: the same
    Poisson draws too)."""
    from oocboost.cache.append import append_to_cache
    from oocboost.cli import main

    X, y = _hyperplane(8000, seed=16)
    files = []
    for name, rows in (("first.csv", slice(0, 5000)), ("more.csv", slice(5000, 8000))):
        with open(tmp_path / name, "w") as f:
            f.write(",".join(f"f{j}" for j in range(4)) + ",label\n")
            np.savetxt(f, np.c_[X[rows], y[rows]], delimiter=",", fmt="%.17g")
        files.append(tmp_path / name)
    path = str(tmp_path / "c.oocb")
    build_cache(str(files[0]), path, label="label", quiet=True, block_rows=1000)
    more = files[1]
    for learner in ("hoeffding-tree", "online-bagging"):
        # fixed batches: an adaptive batch would span row 5000 in the one-pass run
        args = ["--learner", learner, "--rounds", "2", "--param", "seed=3", "--param",
                "batch_rows=500", "--quiet"]
        grown = tmp_path / f"grown-{learner}"
        import shutil

        shutil.copytree(path, grown)
        assert main(["train", str(grown), *args, "-o", str(tmp_path / "a.json")]) == 0
        append_to_cache(str(more), str(grown), quiet=True)
        assert main(["train", str(grown), *args, "--init-model", str(tmp_path / "a.json"),
                     "-o", str(tmp_path / "b.json")]) == 0
        assert main(["train", str(grown), *args, "-o", str(tmp_path / "c.json")]) == 0
        resumed, once = load_model(tmp_path / "b.json"), load_model(tmp_path / "c.json")
        assert resumed.attributes["rows_seen"] == 8000
        np.testing.assert_array_equal(resumed.predict(X), once.predict(X))
        assert resumed.attributes["prequential"] == pytest.approx(
            once.attributes["prequential"])


def test_command_line_learns_a_file_as_it_reads_it(tmp_path, capsys):
    """A CSV read in record batches, binned with a reference cache's edges, grows the
    tree its cache grows; without a reference the first batch sets the bins."""
    from oocboost.cli import main

    X, y = _hyperplane(7000, seed=17)
    csv = tmp_path / "s.csv"
    with open(csv, "w") as f:
        f.write("a,b,c,d,label\n")
        np.savetxt(f, np.c_[X, y], delimiter=",", fmt="%.17g")
    cache = str(tmp_path / "s.oocb")
    build_cache(str(csv), cache, label="label", quiet=True, block_rows=3000)
    for args in (["--reference", cache], []):
        out = tmp_path / "f.json"
        assert main(["train", str(csv), "--label", "label", "--learner", "hoeffding-tree",
                     "-o", str(out), "--quiet", *args]) == 0
        assert main(["train", cache, "--learner", "hoeffding-tree", "-o",
                     str(tmp_path / "c.json"), "--quiet"]) == 0
        from_file, from_cache = load_model(out), load_model(tmp_path / "c.json")
        assert from_file.attributes["rows_seen"] == 7000
        if args:
            np.testing.assert_array_equal(from_file.predict(X), from_cache.predict(X))
        else:
            assert from_file.attributes["prequential"]["accuracy"] > 0.8
    assert main(["train", str(csv), "--learner", "hoeffding-tree", "-o", str(out)]) == 2
    assert "needs --label" in capsys.readouterr().err


def test_partial_fit_takes_tables_with_categories():
    """Chunks as pandas DataFrames with a text column: the first chunk's categories and
    edges bin the later ones; model_ follows every chunk."""
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(18)
    n = 6000
    city = rng.choice(["oslo", "rome", "lima"], n)
    x = rng.random(n)
    y = ((city == "rome") ^ (x > 0.5)).astype(int)
    frame = pd.DataFrame({"city": city, "x": x})
    clf = HoeffdingTreeClassifier(grace_period=100, leaf_prediction="mc")
    leaves = []
    for lo in range(0, n, 1000):
        clf.partial_fit(frame.iloc[lo:lo + 1000], y[lo:lo + 1000], classes=[0, 1])
        leaves.append(clf.model_.trees[0].n_leaves)
    assert leaves[-1] > leaves[0]               # model_ is re-exported after each chunk
    assert (clf.predict(frame) == y).mean() > 0.9
    with pytest.raises(ParameterError, match="columns"):
        clf.partial_fit(frame[["x", "city"]], y)


def test_batches_cut_parts_as_asked_and_ask_no_size_past_the_rows():
    """learners/hoeffding/batches.batches: consecutive rows in order, each batch the size
    asked (the last shorter), empty parts skipped, and the size (which reads every leaf)
    asked once per batch only: never after the last rows."""
    from oocboost.learners.hoeffding.batches import batches

    sizes = [(0, 3), (3, 3), (6, 0), (6, 7), (13, 1), (14, 0), (14, 12)]   # 26 rows
    parts = [(np.arange(lo, lo + n, dtype=np.uint8)[None, :].repeat(2, axis=0),
              np.arange(lo, lo + n, dtype=np.float64), np.ones(n), lo) for lo, n in sizes]
    asked = []

    def size():
        asked.append(len(asked))
        return [4, 10, 1, 5, 100][len(asked) - 1]

    out = list(batches(iter(parts), size))
    assert [len(y) for _, y, _, _ in out] == [4, 10, 1, 5, 6]
    assert [row for _, _, _, row in out] == [0, 4, 14, 15, 20]
    np.testing.assert_array_equal(np.concatenate([y for _, y, _, _ in out]), np.arange(26))
    np.testing.assert_array_equal(np.concatenate([c[1] for c, _, _, _ in out], axis=0),
                                  np.arange(26))
    assert len(asked) == 5          # one a batch, none after the last
    assert list(batches(iter([parts[2]]), size)) == [] and len(asked) == 5


@pytest.mark.parametrize("params", [
    {"leaf_prediction": "nba"}, {"leaf_prediction": "mc", "grace_period": 50},
    {"task": "regression"}])
def test_small_batches_grow_the_tree_the_block_kernels_grow(monkeypatch, params):
    """Batches up to SERIAL_BATCH_ROWS go through the serial kernels: the same stream
    learned with every batch on the block kernels gives the same tree, bit for bit
    (weighted rows, a categorical feature, and one of more categories than max_bin)."""
    import pandas as pd

    from oocboost.learners.hoeffding import learn as hoeffding_learn

    params = dict(params)
    task = params.pop("task", "classification")
    rng = np.random.default_rng(21)
    n = 6000
    X, y = _hyperplane(n, d=3, seed=21)
    few, many = rng.integers(0, 5, n), rng.integers(0, 100, n)
    frame = pd.DataFrame({"x0": X[:, 0], "x1": X[:, 1], "x2": X[:, 2],
                          "few": [f"c{v}" for v in few], "many": [f"m{v}" for v in many]})
    if task == "regression":
        y = X[:, 0] * 3 + (few == 2) + (many % 7 == 0) + rng.normal(0, 0.1, n)
    w = rng.uniform(0.5, 2.0, n)
    models = []
    for serial_rows in (hoeffding_learn.SERIAL_BATCH_ROWS, 0):
        monkeypatch.setattr(hoeffding_learn, "SERIAL_BATCH_ROWS", serial_rows)
        est = (HoeffdingTreeRegressor(max_bin=64, **params) if task == "regression"
               else HoeffdingTreeClassifier(max_bin=64, **params))
        kw = {} if task == "regression" else {"classes": [0.0, 1.0]}
        est.partial_fit(frame[:2000], y[:2000], sample_weight=w[:2000], **kw)
        for lo in range(2000, n, 37):
            est.partial_fit(frame[lo:lo + 37], y[lo:lo + 37], sample_weight=w[lo:lo + 37])
        models.append(est)
    serial, block = (m._learners[0].tree for m in models)
    assert serial.n_value_bins.max() > 64            # a wide column (two-byte codes)
    assert serial.n_nodes == block.n_nodes > 3
    n_nodes = serial.n_nodes
    for name in ("left", "feature", "bin_threshold", "dist", "checked_at", "mc_correct",
                 "nb_correct", "slot"):
        np.testing.assert_array_equal(getattr(serial, name)[:n_nodes],
                                      getattr(block, name)[:n_nodes], err_msg=name)
    np.testing.assert_array_equal(serial.hist, block.hist)
    np.testing.assert_array_equal(serial.hist_sums, block.hist_sums)
    assert models[0].prequential_score_ == pytest.approx(models[1].prequential_score_,
                                                         rel=1e-12)
