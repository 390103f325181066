"""train() against a brute-force boosting reference in plain numpy, for every objective,
and invariance of the model to block size, prefetch depth, backend, threads and spilling.

The reference enumerates every (feature, threshold, missing direction) on the rows of a
node with XGBoost's gain (lambda=1, min_child_weight=1) from gradients written here in
numpy; the data has integer features with at most 10 distinct values, so every value has
its own bin and codes equal values.
"""
import json

import numpy as np
import pytest

import oocboost
from oocboost.learners.boosting.training import train
from tests.learners.test_leaf_refresh import xgboost_quantile

LAMBDA, MCW, ETA, DEPTH = 1.0, 1.0, 0.5, 2


# ----------------------------------------------------------------------------- reference
def ref_gradients(objective, y, m):
    """(g, h) with shape (n, K) from the objective's formulas, written independently."""
    if objective == "reg:squarederror":
        return m - y[:, None], np.ones_like(m)
    if objective == "reg:absoluteerror":
        return np.sign(m - y[:, None]), np.ones_like(m)
    if objective == "reg:pseudohubererror":
        z = m - y[:, None]
        s = np.sqrt(1 + z * z)
        return z / s, 1 / ((1 + z * z) * s)
    if objective == "reg:quantileerror":  # alpha 0.5
        return np.where(m - y[:, None] >= 0, 0.5, -0.5), np.ones_like(m)
    if objective == "binary:logistic":
        p = 1 / (1 + np.exp(-m))
        return p - y[:, None], np.maximum(p * (1 - p), 1e-16)
    if objective == "count:poisson":
        return np.exp(m) - y[:, None], np.exp(m + 0.7)
    if objective == "multi:softprob":
        e = np.exp(m - m.max(axis=1, keepdims=True))
        p = e / e.sum(axis=1, keepdims=True)
        onehot = np.eye(m.shape[1])[y.astype(int)]
        return p - onehot, np.maximum(2 * p * (1 - p), 1e-16)
    raise AssertionError(objective)


def leaf_weight(G, H):
    return 0.0 if H < MCW or H <= 0 else -G / (H + LAMBDA)


def ref_tree(codes, g, h, missing_code, n_bins, residual=None, alpha=None):
    """Rows' leaf path and leaf value (times ETA) of a brute-force depth-DEPTH tree; with
    ``alpha``, each leaf is then the ``alpha``-quantile of its rows' ``residual``
    (XGBoost's leaf refresh of absolute and quantile error)."""
    out_path = np.empty(len(g), dtype=object)
    out_value = np.empty(len(g))

    def build(rows, depth, path):
        G, H = g[rows].sum(), h[rows].sum()
        best_gain, best = 1e-6, None
        if depth < DEPTH:
            for f in range(codes.shape[1]):
                c = codes[rows, f]
                miss = c == missing_code
                for default_left in ([False, True] if miss.any() else [False]):
                    for b in range(n_bins):
                        left = ((c <= b) & ~miss) | (miss & default_left)
                        if left.all() or not left.any():
                            continue
                        hl, hr = h[rows][left].sum(), h[rows][~left].sum()
                        if hl < MCW or hr < MCW:
                            continue
                        gain = ((g[rows][left].sum()) ** 2 / (hl + LAMBDA)
                                + (g[rows][~left].sum()) ** 2 / (hr + LAMBDA)
                                - G * G / (H + LAMBDA))
                        if gain > best_gain + 1e-9 * abs(best_gain):
                            best_gain, best = gain, left
        if best is None:
            out_path[rows] = path
            out_value[rows] = ETA * (leaf_weight(G, H) if alpha is None else
                                     xgboost_quantile(residual[rows], np.ones(len(rows)),
                                                      alpha))
            return
        build(rows[best], depth + 1, path + "L")
        build(rows[~best], depth + 1, path + "R")

    build(np.arange(len(g)), 0, "")
    return out_path, out_value


def assert_rounds_match(model, codes, missing_code, gradients, margin, rounds, n_bins,
                        rtol=1e-5, atol=1e-9):
    """A one-output model's first ``rounds`` trees against :func:`ref_tree` grown on
    ``gradients(margin) -> (g, h)`` (rounded to float32 as the kernels store them),
    ``margin`` (n,) advanced by each tree's leaves."""
    for r in range(rounds):
        g, h = gradients(margin)
        g, h = g.astype(np.float32).astype(float), h.astype(np.float32).astype(float)
        ref_path, ref_value = ref_tree(codes, g, h, missing_code, n_bins)
        got_path, got_value = model_tree_leaves(model.trees[r], codes, missing_code)
        assert list(got_path) == list(ref_path), f"round {r}: other splits"
        np.testing.assert_allclose(got_value, ref_value, rtol=rtol, atol=atol)
        margin += got_value


def force_spilled_state(monkeypatch):
    """Make every boosting run that follows spill its per-row state to disk."""
    import oocboost.learners.boosting.training as training

    real_plan = training.plan_train

    def spilling_plan(*args, **kwargs):
        plan = real_plan(*args, **kwargs)
        plan.state_in_ram = False
        return plan

    monkeypatch.setattr(training, "plan_train", spilling_plan)


def model_tree_leaves(tree, codes, missing_code):
    paths, values = [], []
    for i in range(codes.shape[0]):
        node, path = 0, ""
        while tree.left[node] >= 0:
            c = codes[i, tree.feature[node]]
            go_left = tree.default_left[node] if c == missing_code else \
                c <= tree.bin_threshold[node]
            node = tree.left[node] if go_left else tree.right[node]
            path += "L" if go_left else "R"
        paths.append(path)
        values.append(tree.value[node, 0])
    return np.array(paths, dtype=object), np.array(values)


def make_data(objective, n_rows=400, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 10, size=(n_rows, 3)).astype(np.float64)
    X[rng.random(n_rows) < 0.08, 1] = np.nan
    X[rng.random(n_rows) < 0.05, 2] = np.nan
    signal = (X[:, 0] > 4) * 1.5 + np.nan_to_num(X[:, 1], nan=5.0) * 0.2 - 1.0
    noise = rng.normal(0, 0.7, n_rows)
    if objective == "binary:logistic":
        y = (signal + noise > 0).astype(float)
    elif objective == "multi:softprob":
        y = np.digitize(signal + noise, [-0.3, 0.8]).astype(float)
    elif objective == "count:poisson":
        y = rng.poisson(np.exp(0.5 * signal)).astype(float)
    else:
        y = signal + noise
    # the cache keeps labels as float32: the reference must see the same values
    return X, y.astype(np.float32).astype(np.float64)


OBJECTIVES = ["reg:squarederror", "reg:absoluteerror", "reg:pseudohubererror",
              "reg:quantileerror", "binary:logistic", "count:poisson", "multi:softprob"]


def all_codes(cache):
    return np.concatenate([b.codes for b in cache.iter_blocks(prefetch=0)], axis=1).T


@pytest.mark.parametrize("objective", OBJECTIVES)
def test_rounds_equal_brute_force_reference(objective, tmp_path):
    X, y = make_data(objective)
    cache = oocboost.build_cache(X, tmp_path / "c", label=y, block_rows=64, quiet=True)
    params = {"objective": objective, "eta": ETA, "max_depth": DEPTH, "reg_lambda": LAMBDA,
              "min_child_weight": MCW, "verbosity": 0}
    if objective == "multi:softprob":
        params["num_class"] = 3
    model = train(params, cache, 3)
    codes = all_codes(cache)
    missing = cache.max_bin - 1
    assert np.array_equal(codes[~np.isnan(X)], X[~np.isnan(X)])  # one bin per value
    k = model.n_outputs
    margin = np.tile(model.base_margin, (len(y), 1))
    alpha = {"reg:absoluteerror": 0.5, "reg:quantileerror": 0.5}.get(objective)
    for r in range(3):
        g, h = ref_gradients(objective, y, margin)
        for c in range(k):
            ref_path, ref_value = ref_tree(codes, g[:, c], h[:, c], missing, 10,
                                           y - margin[:, c], alpha)
            got_path, got_value = model_tree_leaves(model.trees[r * k + c], codes, missing)
            assert list(got_path) == list(ref_path), f"round {r} class {c}: other splits"
            np.testing.assert_allclose(got_value, ref_value, rtol=1e-5, atol=1e-9)
            margin[:, c] += got_value


# ----------------------------------------------------------------------------- invariance
def _model_doc(model):
    doc = model.to_json_dict()
    doc.pop("attributes", None)
    return json.dumps(doc["trees"] if "trees" in doc else doc, sort_keys=True)


@pytest.fixture(scope="module")
def binary_data():
    from oocboost.datasets import generate_arrays

    data = generate_arrays(3000, 6, seed=3)
    return data.X, data.y.astype(float)


@pytest.mark.parametrize("block_rows,backend,prefetch,n_threads", [
    (7, "arrow", 0, 1), (64, "hdf5", 2, 2), (3000, "arrow", 1, 2), (501, "hdf5", 0, 1)])
def test_model_independent_of_blocks_backend_prefetch_threads(binary_data, tmp_path,
                                                              block_rows, backend, prefetch,
                                                              n_threads):
    X, y = binary_data
    params = {"objective": "binary:logistic", "eta": 0.3, "max_depth": 4, "subsample": 0.8,
              "colsample_bynode": 0.7, "seed": 5, "verbosity": 0}
    ref_cache = oocboost.build_cache(X, tmp_path / "ref", label=y, block_rows=256, quiet=True)
    ref = train(params, ref_cache, 5)
    cache = oocboost.build_cache(X, tmp_path / "c", label=y, block_rows=block_rows,
                                 backend=backend, quiet=True)
    got = train(dict(params, prefetch=prefetch, n_threads=n_threads), cache, 5)
    assert _model_doc(got) == _model_doc(ref)


def test_spilled_row_state_gives_the_same_model(binary_data, tmp_path, monkeypatch):
    X, y = binary_data
    cache = oocboost.build_cache(X, tmp_path / "c", label=y, block_rows=500, quiet=True)
    params = {"objective": "binary:logistic", "max_depth": 3, "verbosity": 0}
    in_ram = train(params, cache, 4)
    force_spilled_state(monkeypatch)
    spilled = train(params, cache, 4)
    assert spilled.training_log["state_in_ram"] is False
    assert _model_doc(spilled) == _model_doc(in_ram)
    # the spill's reads and writes are timed; in RAM there are none
    assert spilled.training_log["state_io_s"] > 0
    assert in_ram.training_log["state_io_s"] == 0


def test_passes_per_round_equal_depth(binary_data, tmp_path):
    X, y = binary_data
    cache = oocboost.build_cache(X, tmp_path / "c", label=y, quiet=True)
    model = train({"objective": "binary:logistic", "max_depth": 5, "verbosity": 0}, cache, 4)
    # the last level of each tree is applied in the next round's first pass
    assert model.training_log["passes_per_round"] == pytest.approx(5.0)
    assert set(model.training_log) >= {"histogram_s", "split_s", "partition_s", "io_wait_s",
                                       "bytes_read", "data_passes", "peak_rss_bytes"}


@pytest.mark.parametrize("learner", ["boosting", "forest", "adaboost"])
def test_a_second_run_on_the_same_cache_plans_without_its_resident_blocks(
        binary_data, tmp_path, monkeypatch, learner):
    """Blocks a run leaves resident in the Cache are in the process's RSS; the next run
    on the same Cache releases them before it plans, so its baseline does not count them
    (a 16M-row cache at 512MB was refused on the second call)."""
    import oocboost.engine.plan as memory
    import oocboost.learners.boosting.training as training

    X, y = binary_data
    cache = oocboost.build_cache(X, tmp_path / "c", label=y, block_rows=500, quiet=True)
    resident_when_planning = []
    real = memory.plan_train

    def spy(*args, **kwargs):
        resident_when_planning.append(cache._resident_nbytes)
        return real(*args, **kwargs)

    monkeypatch.setattr(training, "plan_train", spy)
    monkeypatch.setattr(memory, "plan_train", spy)  # forests, AdaBoost import it when called

    def run():
        if learner == "boosting":
            train({"objective": "binary:logistic", "max_depth": 3, "verbosity": 0}, cache, 2)
        elif learner == "forest":
            oocboost.RandomForestClassifier(n_estimators=2, max_depth=3).fit(cache)
        else:
            oocboost.AdaBoostClassifier(n_estimators=2).fit(cache)

    run()
    assert cache._resident_nbytes > 0       # the first run kept blocks resident
    resident_when_planning.clear()
    run()
    assert resident_when_planning and set(resident_when_planning) == {0}


# ----------------------------------------------------------------------------- training API
def test_early_stopping_and_evals_result(binary_data, tmp_path):
    X, y = binary_data
    train_c = oocboost.build_cache(X[:2000], tmp_path / "t", label=y[:2000], quiet=True)
    valid_c = oocboost.build_cache(X[2000:], tmp_path / "v", label=y[2000:], quiet=True,
                                   reference=train_c)
    log = {}
    model = train({"objective": "binary:logistic", "eta": 1.0, "max_depth": 6,
                   "eval_metric": ["auc", "logloss"], "verbosity": 0}, train_c, 200,
                  evals=[(valid_c, "valid")], early_stopping_rounds=5, evals_result=log,
                  verbose_eval=False)
    losses = log["valid"]["logloss"]
    assert model.best_iteration == int(np.argmin(losses))
    assert len(losses) == model.best_iteration + 6 < 200
    assert model.evals_result["valid"]["auc"] == log["valid"]["auc"]
    # the logged metric equals an independent evaluation of the model so far
    from oocboost.model.predict import evaluate

    again = evaluate(model, valid_c, metrics=["logloss"],
                     iteration_range=(0, len(losses)))
    assert again["logloss"] == pytest.approx(losses[-1], rel=1e-9)


def test_evaluation_walks_each_round_once(binary_data, tmp_path, monkeypatch):
    """Each round's trees are flattened once for the evaluation sets, not the whole model
    again (quadratic in the rounds), and the margins are the whole model's."""
    from oocboost.kernels import predict as kp

    X, y = binary_data
    train_c = oocboost.build_cache(X[:2000], tmp_path / "t", label=y[:2000], quiet=True)
    valid_c = oocboost.build_cache(X[2000:], tmp_path / "v", label=y[2000:], quiet=True,
                                   reference=train_c)
    flattened = []
    real = kp.flatten_trees

    def spy(trees, *args, **kwargs):
        flattened.append(len(trees))
        return real(trees, *args, **kwargs)

    monkeypatch.setattr(kp, "flatten_trees", spy)
    log = {}
    model = train({"objective": "multi:softprob", "num_class": 3, "max_depth": 3,
                   "eval_metric": ["mlogloss"], "verbosity": 0}, train_c, 12,
                  evals=[(valid_c, "valid")], evals_result=log, verbose_eval=False)
    assert flattened == [3] * 12  # one round of 3 trees (one per class) at a time
    monkeypatch.setattr(kp, "flatten_trees", real)
    from oocboost.model.predict import evaluate

    again = evaluate(model, valid_c, metrics=["mlogloss"])
    assert again["mlogloss"] == pytest.approx(log["valid"]["mlogloss"][-1], rel=1e-12)


def test_checkpoint_and_resume_equal_one_run(binary_data, tmp_path):
    X, y = binary_data
    cache = oocboost.build_cache(X, tmp_path / "c", label=y, quiet=True)
    params = {"objective": "binary:logistic", "max_depth": 3, "verbosity": 0}
    full = train(params, cache, 6)
    ckpt = tmp_path / "ckpt.json"
    train(params, cache, 3, callbacks=[oocboost.TrainingCheckPoint(ckpt, interval=1)])
    resumed = train(params, cache, 3, init_model=str(ckpt))
    assert resumed.n_rounds == 6
    np.testing.assert_allclose(resumed.predict_margin(X), full.predict_margin(X), rtol=1e-9,
                               atol=1e-9)


def test_eval_cache_with_other_edges_is_refused(binary_data, tmp_path):
    X, y = binary_data
    a = oocboost.build_cache(X[:1000], tmp_path / "a", label=y[:1000], quiet=True)
    b = oocboost.build_cache(X[1000:], tmp_path / "b", label=y[1000:], quiet=True)
    with pytest.raises(oocboost.SchemaError, match="--reference"):
        train({"objective": "binary:logistic", "verbosity": 0}, a, 2, evals=[(b, "b")])


@pytest.mark.parametrize("params,message", [
    ({"objective": "binary:logistc"}, "unknown objective"),
    ({"max_dept": 3}, "did you mean max_depth"),
    ({"eta": -1}, "learning_rate must be"),
    ({"subsample": 0}, r"parameter subsample must be a number in \(0, 1\], got 0"),
    ({"max_depth": True}, "parameter max_depth must be an integer >= 0, got True"),
    ({"grow_policy": "leafwise"}, "grow_policy must be one of 'depthwise', 'lossguide'"),
    ({"eta": 0.1, "learning_rate": 0.2}, "'eta' and 'learning_rate' are aliases"),
    ({"max_bin": 64}, "fixed when the cache is built"),
])
def test_bad_parameters_are_clear(binary_data, tmp_path, params, message):
    X, y = binary_data
    cache = oocboost.build_cache(X[:200], tmp_path / "c", label=y[:200], quiet=True)
    with pytest.raises(oocboost.OocboostError, match=message):
        train(dict(params, verbosity=0), cache, 1)


def test_labels_out_of_range_name_the_row(tmp_path):
    X = np.arange(40, dtype=float).reshape(20, 2)
    y = np.zeros(20)
    y[13] = 3.0
    cache = oocboost.build_cache(X, tmp_path / "c", label=y, quiet=True)
    with pytest.raises(oocboost.InputError, match="row 13"):
        train({"objective": "binary:logistic", "verbosity": 0}, cache, 1)


# ----------------------------------------------------------------------------- row counts
def _counts_by_leaf(model, X):
    """Each tree's rows per node from the leaves ``predict(pred_leaf=True)`` gives: a
    leaf's rows, a split node's the sum of its children's."""
    leaves = np.asarray(model.predict(X, pred_leaf=True)).reshape(len(X), -1)
    out = []
    for j, tree in enumerate(model.trees):
        counts = np.bincount(leaves[:, j], minlength=tree.n_nodes).astype(float)
        for node in range(tree.n_nodes - 1, -1, -1):
            if tree.left[node] >= 0:
                counts[node] = counts[tree.left[node]] + counts[tree.right[node]]
        out.append(counts)
    return out


@pytest.mark.parametrize("params", [
    {"objective": "binary:logistic"},
    {"objective": "binary:logistic", "subsample": 0.6, "sampling_method": "gradient_based"},
    {"objective": "multi:softprob", "num_class": 3, "booster": "dart", "rate_drop": 0.3},
    {"objective": "reg:squarederror", "subsample": 0.5, "grow_policy": "lossguide",
     "max_leaves": 6},
])
def test_every_tree_counts_the_training_rows_through_its_nodes(binary_data, tmp_path,
                                                                params):
    """n_samples (LightGBM's leaf_count and internal_count) of every round, the last
    one's too, equals the rows predict(pred_leaf=True) puts at each leaf; a subsample's
    tree counts every training row."""
    X, y = binary_data
    if params["objective"].startswith("multi"):
        y = np.digitize(X[:, 0], np.nanquantile(X[:, 0], [0.33, 0.66])).astype(float)
    cache = oocboost.build_cache(X, tmp_path / "c", label=y, block_rows=700, quiet=True)
    model = train({"max_depth": 3, "seed": 2, "verbosity": 0, **params}, cache, 4)
    want = _counts_by_leaf(model, X)
    for tree, counts in zip(model.trees, want):
        np.testing.assert_array_equal(tree.n_samples, counts)
        assert tree.n_samples[0] == len(X)


def test_cross_validation_folds_count_the_rows_they_train_on(binary_data, tmp_path):
    X, y = binary_data
    cache = oocboost.build_cache(X, tmp_path / "c", label=y, block_rows=700, quiet=True)
    _, models = oocboost.cv({"objective": "binary:logistic", "max_depth": 3,
                             "verbosity": 0}, cache, 3, nfold=3, seed=1, return_models=True)
    n_rows = [m.trees[0].n_samples[0] for m in models]
    assert sum(n_rows) == 2 * len(X)              # each row trains 2 of the 3 folds
    for m in models:
        assert all(t.n_samples[0] == m.trees[0].n_samples[0] for t in m.trees)
        leaves = [t.n_samples[t.left < 0].sum() for t in m.trees]
        assert leaves == [m.trees[0].n_samples[0]] * m.n_trees


def test_continued_trees_without_counts_are_counted_on_the_rows_they_continue_on(
        binary_data, tmp_path):
    """An init_model without row counts (a checkpoint's last round, a model of an older
    oocboost or from XGBoost) has its trees counted in the run's first pass; the model
    passed in is not changed."""
    import copy

    X, y = binary_data
    cache = oocboost.build_cache(X, tmp_path / "c", label=y, block_rows=700, quiet=True)
    params = {"objective": "binary:logistic", "max_depth": 3, "verbosity": 0}
    first = train(params, cache, 3)
    uncounted = copy.deepcopy(first)
    for tree in uncounted.trees:
        tree.n_samples = np.zeros(tree.n_nodes)
    continued = train(params, cache, 2, init_model=uncounted)
    assert all(not t.n_samples.any() for t in uncounted.trees)
    for tree, counts in zip(continued.trees, _counts_by_leaf(continued, X)):
        np.testing.assert_array_equal(tree.n_samples, counts)
    for got, want in zip(continued.trees[:3], first.trees):
        np.testing.assert_array_equal(got.n_samples, want.n_samples)
