"""The AdaBoost family against scikit-learn and against reference runs in plain numpy.

References: scikit-learn's ``AdaBoostClassifier`` (SAMME) and ``AdaBoostRegressor``
(R2); for SAMME.R, Gentle, LogitBoost, arc-x4 and a bootstrap-free R2, the textbook
loops below with scikit-learn trees as weak learners. The data has fewer distinct values
per feature than bins, so our binned splits partition the rows exactly as scikit-learn's
midpoint thresholds do; the remaining differences are float32 per-row statistics (1e-7
relative) and ties between equally good splits.
"""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.datasets import load_iris, make_friedman1
from sklearn.ensemble import AdaBoostClassifier as SkAdaBoostClassifier
from sklearn.ensemble import AdaBoostRegressor as SkAdaBoostRegressor
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

import oocboost
from oocboost.errors import ParameterError
from oocboost.learners.adaboost.adaboost import train_adaboost
from oocboost.model.adaboost import predict_adaboost
from oocboost.sklearn.adaboost import AdaBoostClassifier, AdaBoostRegressor

EPS = np.finfo(np.float64).eps


# --------------------------------------------------------------------------- data


def binary_data(seed=0, n=300):
    rng = np.random.default_rng(seed)
    X = np.round(rng.normal(size=(n, 4)), 1)
    y = (X[:, 0] + X[:, 1] ** 2 + 0.5 * rng.normal(size=n) > 0.8).astype(int)
    return X, y


def iris_data():
    X, y = load_iris(return_X_y=True)
    return X, y


DATASETS = {"binary": binary_data, "iris": iris_data}


def softmax(z):
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


# --------------------------------------------------------------------------- reference runs


def reference_classifier(X, y, algorithm, n_estimators, learning_rate=1.0, max_depth=1):
    """Class probabilities of a textbook run with scikit-learn trees as weak learners."""
    n = len(y)
    K = int(y.max()) + 1
    onehot = np.eye(K)[y]
    if algorithm in ("SAMME.R", "arc-x4"):
        w = np.full(n, 1.0 / n)
        total = np.zeros((n, K))
        missed = np.zeros(n)
        m_done = 0
        for m in range(n_estimators):
            tree = DecisionTreeClassifier(max_depth=max_depth, random_state=0)
            tree.fit(X, y, sample_weight=w)
            proba = tree.predict_proba(X)
            pred = np.argmax(proba, axis=1)
            err = np.average(pred != y, weights=w)
            if algorithm == "SAMME.R":
                lp = np.log(np.clip(proba, EPS, None))
                total += lp - lp.mean(axis=1, keepdims=True)
                m_done += 1
                if err <= 0:
                    break
                code = np.where(onehot > 0, 1.0, -1.0 / (K - 1))
                w = w * np.exp(-learning_rate * (K - 1) / K * (code * lp).sum(axis=1))
            else:
                if err >= 1 - 1 / K:
                    break
                total += np.eye(K)[pred]
                m_done += 1
                if err <= 0:
                    break
                missed += pred != y
                w = 1.0 + missed ** 4
            w = w / w.sum()
        mean = total / m_done
        return softmax(mean) if algorithm == "SAMME.R" else mean
    T = 1 if K == 2 else K
    F = np.zeros((n, T))
    for m in range(n_estimators):
        if algorithm == "logitboost" and T > 1:
            P = softmax(F)
        steps = []
        for t in range(T):
            positive = (y == 1) if T == 1 else (y == t)
            if algorithm == "gentle":
                ys = np.where(positive, 1.0, -1.0)
                w = np.exp(-ys * F[:, t])
                z = ys
            else:
                p = 1 / (1 + np.exp(-2 * F[:, 0])) if T == 1 else P[:, t]
                pq = np.maximum(p * (1 - p), 1e-16)
                z = np.clip((positive - p) / pq, -4, 4)
                w = pq
            tree = DecisionTreeRegressor(max_depth=max_depth, random_state=0)
            tree.fit(X, z, sample_weight=w / w.sum())
            f = tree.predict(X)
            if algorithm == "gentle":
                steps.append(learning_rate * f)
            elif T == 1:
                steps.append(learning_rate * f / 2)
            else:
                steps.append(learning_rate * (K - 1) / K * f)
        F += np.column_stack(steps)
    if T == 1:
        return softmax(np.column_stack([-F[:, 0], F[:, 0]]))
    return softmax(F)


def reference_r2(X, y, n_estimators, loss, learning_rate=1.0, max_depth=3):
    """AdaBoost.R2 as scikit-learn, but each tree grown on the weights (no bootstrap)."""
    n = len(y)
    w = np.full(n, 1.0 / n)
    preds, weights = [], []
    for m in range(n_estimators):
        tree = DecisionTreeRegressor(max_depth=max_depth, random_state=0)
        tree.fit(X, y, sample_weight=w)
        pred = tree.predict(X)
        e = np.abs(pred - y)
        e = e / e.max() if e.max() != 0 else e
        if loss == "square":
            e = e ** 2
        elif loss == "exponential":
            e = 1 - np.exp(-e)
        err = (w * e).sum()
        if err <= 0 or err >= 0.5:
            break
        beta = err / (1 - err)
        preds.append(pred)
        weights.append(learning_rate * np.log(1 / beta))
        w = w * beta ** ((1 - e) * learning_rate)
        w /= w.sum()
    P = np.column_stack(preds)
    weights = np.array(weights)
    order = np.argsort(P, axis=1, kind="stable")
    cdf = np.cumsum(weights[order], axis=1)
    idx = (cdf >= 0.5 * cdf[:, -1:]).argmax(axis=1)
    return P[np.arange(n), order[np.arange(n), idx]]


# --------------------------------------------------------------------------- SAMME vs sklearn


@pytest.mark.parametrize("name", ["binary", "iris"])
@pytest.mark.parametrize("max_depth", [1, 2])
def test_samme_matches_scikit_learn(name, max_depth):
    X, y = DATASETS[name]()
    ours = AdaBoostClassifier(n_estimators=25, max_depth=max_depth).fit(X, y)
    ref = SkAdaBoostClassifier(DecisionTreeClassifier(max_depth=max_depth), n_estimators=25,
                               random_state=0).fit(X, y)
    # float32 per-row statistics: alpha agrees to ~1e-7 relative
    np.testing.assert_allclose(ours.estimator_weights_, ref.estimator_weights_, rtol=1e-5,
                               atol=1e-7)
    np.testing.assert_allclose(ours.estimator_errors_, ref.estimator_errors_, rtol=1e-5,
                               atol=1e-7)
    assert np.mean(ours.predict(X) == ref.predict(X)) >= 0.99
    np.testing.assert_allclose(ours.predict_proba(X), ref.predict_proba(X), atol=1e-5)
    np.testing.assert_allclose(ours.decision_function(X), ref.decision_function(X),
                               atol=1e-5)
    if name == "binary":  # iris: petal length and width give tied splits (ties aside)
        np.testing.assert_allclose(ours.feature_importances_, ref.feature_importances_,
                                   atol=1e-5)
    np.testing.assert_allclose(ours.feature_importances_.sum(), 1.0)
    for a, b in zip(ours.staged_predict_proba(X), ref.staged_predict_proba(X)):
        np.testing.assert_allclose(a, b, atol=1e-5)
    np.testing.assert_allclose(list(ours.staged_score(X, y)), list(ref.staged_score(X, y)),
                               atol=0.01)


def test_samme_stops_on_a_perfect_learner_as_scikit_learn():
    X = np.arange(40, dtype=float).reshape(-1, 1)
    y = (X[:, 0] >= 17).astype(int)
    ours = AdaBoostClassifier(n_estimators=10).fit(X, y)
    ref = SkAdaBoostClassifier(n_estimators=10, random_state=0).fit(X, y)
    assert ours.stop_reason_ == "perfect"
    assert ours.model_.n_rounds == 1
    np.testing.assert_array_equal(ours.estimator_weights_, ref.estimator_weights_)
    np.testing.assert_array_equal(ours.estimator_errors_, ref.estimator_errors_)
    np.testing.assert_array_equal(ours.predict(X), y)


def test_no_better_than_chance_first_learner_raises():
    # XOR on two binary features: every stump has weighted error exactly 1/2
    # (scikit-learn's float64 sum lands at 0.49999999999999994 here and goes on with
    # alpha ~ 4e-16; our sums of leaf weights are exact)
    X = np.array([[0, 0], [0, 1], [1, 0], [1, 1]] * 5, dtype=float)
    y = (X[:, 0] != X[:, 1]).astype(int)
    with pytest.raises(ParameterError, match="no better than chance"):
        AdaBoostClassifier(n_estimators=5).fit(X, y)
    # depth-2 trees solve it at once: a perfect learner
    clf = AdaBoostClassifier(n_estimators=5, max_depth=2).fit(X, y)
    assert clf.stop_reason_ == "perfect" and clf.score(X, y) == 1.0


def test_exponential_loss_identity():
    """The weights SAMME grows tree m+1 with are the normalised exp(-y F_m), where
    ``F_m = 1/2 sum_j alpha_j h_j`` (h, y in {-1, +1}) is the ensemble after m rounds."""
    X, y = binary_data(3)
    clf = AdaBoostClassifier(n_estimators=12, max_depth=2).fit(X, y)
    model = clf.model_
    ys = 2.0 * y - 1.0
    decisions = list(clf.staged_decision_function(X))
    for m in range(1, model.n_rounds):
        W = clf.estimator_weights_[:m].sum()
        F = decisions[m - 1] * W / 4.0   # decision = 2 sum alpha h / W
        w = np.exp(-ys * F)
        w /= w.sum()
        leaves = model.predict_leaf(X, iteration_range=(m, m + 1))[:, 0]
        tree = model.trees[m]
        expected = np.bincount(leaves, weights=w, minlength=tree.n_nodes)
        is_leaf = tree.left == -1
        np.testing.assert_allclose(tree.cover[is_leaf], expected[is_leaf], rtol=2e-5,
                                   atol=1e-9)
        assert tree.cover[0] == pytest.approx(1.0, rel=1e-5)


@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), depth=st.integers(1, 2))
def test_training_error_bound(seed, depth):
    """Freund & Schapire: while every weighted error is below 1/2, the training error
    after m rounds is at most prod_j 2 sqrt(err_j (1 - err_j))."""
    rng = np.random.default_rng(seed)
    X = np.round(rng.normal(size=(120, 3)), 1)
    y = (X[:, 0] * X[:, 1] + 0.3 * rng.normal(size=120) > 0).astype(int)
    clf = AdaBoostClassifier(n_estimators=15, max_depth=depth).fit(X, y)
    errors = clf.estimator_errors_[:clf.model_.n_rounds]
    bound = 1.0
    for m, pred in enumerate(clf.staged_predict(X)):
        err = errors[m]
        if not 0 < err < 0.5:
            break
        bound *= 2 * np.sqrt(err * (1 - err))
        assert np.mean(pred != y) <= bound + 1e-12


# --------------------------------------------------------------------------- other variants


@pytest.mark.parametrize("algorithm", ["SAMME.R", "gentle", "logitboost", "arc-x4"])
@pytest.mark.parametrize("name", ["binary", "iris"])
def test_variant_matches_reference_and_beats_a_stump(algorithm, name):
    X, y = DATASETS[name]()
    n_estimators = 15
    clf = AdaBoostClassifier(n_estimators=n_estimators, algorithm=algorithm).fit(X, y)
    proba = clf.predict_proba(X)
    ref = reference_classifier(X, y, algorithm, n_estimators)
    # same trees up to float32 statistics and split ties: probabilities agree closely
    assert np.abs(proba - ref).max() < 1e-3
    assert np.mean(np.argmax(proba, 1) == np.argmax(ref, 1)) >= 0.99
    stump = DecisionTreeClassifier(max_depth=1).fit(X, y).score(X, y)
    assert clf.score(X, y) > stump
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    staged = list(clf.staged_predict_proba(X))
    assert len(staged) == clf.model_.n_rounds
    np.testing.assert_allclose(staged[-1], proba, atol=1e-12)
    assert np.all((clf.estimator_errors_ >= 0) & (clf.estimator_errors_ <= 1))


def test_learning_rate_shrinks_gentle_contributions():
    X, y = binary_data(1)
    full = AdaBoostClassifier(n_estimators=1, algorithm="gentle").fit(X, y)
    half = AdaBoostClassifier(n_estimators=1, algorithm="gentle", learning_rate=0.5).fit(X, y)
    np.testing.assert_allclose(half.decision_function(X), 0.5 * full.decision_function(X))


# --------------------------------------------------------------------------- AdaBoost.R2


@pytest.mark.parametrize("loss", ["linear", "square", "exponential"])
def test_r2_matches_weighted_reference_and_is_close_to_scikit_learn(loss):
    X, y = make_friedman1(n_samples=200, random_state=0)
    X = np.round(X, 2)
    reg = AdaBoostRegressor(n_estimators=20, loss=loss).fit(X, y)
    ref = reference_r2(X, y, 20, loss)
    np.testing.assert_allclose(reg.predict(X), ref, rtol=1e-4, atol=1e-4)
    # scikit-learn draws a weighted bootstrap per tree, we use the weights: compare R^2
    sk = SkAdaBoostRegressor(n_estimators=20, loss=loss, random_state=0).fit(X, y)
    assert abs(reg.score(X, y) - sk.score(X, y)) < 0.05
    single = DecisionTreeRegressor(max_depth=3).fit(X, y).score(X, y)
    assert reg.score(X, y) > single
    staged = list(reg.staged_predict(X))
    np.testing.assert_array_equal(staged[-1], reg.predict(X))
    assert len(list(reg.staged_score(X, y))) == reg.model_.n_rounds


# --------------------------------------------------------------------------- out of core


def _cache(tmp_path, name, X, y, block_rows, w=None):
    return oocboost.build_cache(X, tmp_path / name, label=y, weight=w, block_rows=block_rows,
                                quiet=True)


@pytest.mark.parametrize("algorithm", ["SAMME", "SAMME.R", "logitboost", "arc-x4", "R2"])
def test_independent_of_block_size_prefetch_threads_and_state_store(tmp_path, algorithm):
    X, y = iris_data()
    if algorithm == "R2":
        y = X[:, 3] * 2 + X[:, 0]
        X = X[:, :3]
    runs = []
    caches = {b: _cache(tmp_path, f"c{b}", X, y, b) for b in (7, len(y))}
    for block_rows, prefetch, in_ram, n_threads in ((7, 0, False, 1), (len(y), 2, True, None),
                                                    (7, 2, True, 1)):
        model = train_adaboost(caches[block_rows], algorithm=algorithm, n_estimators=5,
                               max_depth=2, loss="exponential", prefetch=prefetch,
                               state_in_ram=in_ram, n_threads=n_threads)
        assert model.training_log["state_in_ram"] == in_ram
        runs.append(model)
    first = runs[0]
    for other in runs[1:]:
        a, b = first.attributes["adaboost"], other.attributes["adaboost"]
        np.testing.assert_allclose(a["estimator_weights"], b["estimator_weights"], rtol=1e-9)
        np.testing.assert_allclose(a["estimator_errors"], b["estimator_errors"], rtol=1e-9)
        np.testing.assert_allclose(first.predict_margin(X), other.predict_margin(X),
                                   rtol=1e-9, atol=1e-12)


def test_passes_per_round(tmp_path):
    X, y = iris_data()
    cache = _cache(tmp_path, "c", X, y, 50)
    stump = train_adaboost(cache, algorithm="SAMME", n_estimators=10)
    assert stump.training_log["data_passes"] == 10          # one pass per stump round
    deep = train_adaboost(cache, algorithm="SAMME", n_estimators=10, max_depth=3)
    assert deep.training_log["data_passes"] <= 30
    gentle = train_adaboost(cache, algorithm="gentle", n_estimators=10)
    assert gentle.training_log["data_passes"] == 11         # plus the last tree's errors
    r2 = train_adaboost(cache, algorithm="R2", n_estimators=5, max_depth=1)
    assert r2.training_log["data_passes"] == 2 * r2.n_rounds


def test_sample_weights_equal_repeated_rows():
    X, y = binary_data(5, n=120)
    counts = np.random.default_rng(0).integers(1, 4, size=len(y))
    weighted = AdaBoostClassifier(n_estimators=10).fit(X, y, sample_weight=counts)
    repeated = AdaBoostClassifier(n_estimators=10).fit(np.repeat(X, counts, axis=0),
                                                        np.repeat(y, counts))
    np.testing.assert_allclose(weighted.estimator_weights_, repeated.estimator_weights_,
                               rtol=1e-5)
    np.testing.assert_allclose(weighted.predict_proba(X), repeated.predict_proba(X),
                               atol=1e-6)
    with pytest.raises(ParameterError, match="sample_weight"):
        AdaBoostClassifier().fit(X, y, sample_weight=-np.ones(len(y)))


def test_fit_on_cache_cli_and_model_file(tmp_path):
    from oocboost.cli import main
    from oocboost.model.predict import predict

    X, y = iris_data()
    cache = _cache(tmp_path, "c", X, y, 40)
    on_cache = AdaBoostClassifier(n_estimators=10, algorithm="SAMME.R").fit(cache)
    on_arrays = AdaBoostClassifier(n_estimators=10, algorithm="SAMME.R").fit(X, y)
    np.testing.assert_allclose(on_cache.predict_proba(X), on_arrays.predict_proba(X),
                               atol=1e-12)
    np.testing.assert_array_equal(on_cache.predict(cache), on_cache.predict(X))
    out = tmp_path / "m.json"
    assert main(["train", str(cache.path), "--learner", "adaboost", "--param",
                 "algorithm=SAMME.R", "--rounds", "10", "-o", str(out), "--quiet"]) == 0
    model = oocboost.load_model(out)
    assert model.learner == "adaboost"
    # the shared predictor gives the estimator's predict_proba
    np.testing.assert_allclose(predict(model, X), on_cache.predict_proba(X), atol=1e-12)
    np.testing.assert_array_equal(predict_adaboost(model, X), on_cache.predict(X))
    # R2: the model file keeps the trees and weights; predict_adaboost gives the median
    yr = X[:, 3] * 2 + X[:, 0]
    rcache = _cache(tmp_path, "r", X[:, :3], yr, 40)
    reg = AdaBoostRegressor(n_estimators=5).fit(rcache)
    path = tmp_path / "r.json"
    reg.save_model(path)
    loaded = oocboost.load_model(path)
    assert loaded.attributes["adaboost"]["prediction"] == "weighted_median"
    np.testing.assert_array_equal(predict_adaboost(loaded, X[:, :3]), reg.predict(X[:, :3]))
    np.testing.assert_array_equal(predict_adaboost(loaded, rcache), reg.predict(X[:, :3]))


def test_parameter_errors():
    X, y = binary_data()
    with pytest.raises(ParameterError, match="algorithm"):
        AdaBoostClassifier(algorithm="SAMME.X").fit(X, y)
    with pytest.raises(ParameterError, match="algorithm"):
        AdaBoostClassifier(algorithm="R2").fit(X, y)
    with pytest.raises(ParameterError, match="n_estimators"):
        AdaBoostClassifier(n_estimators=0).fit(X, y)
    with pytest.raises(ParameterError, match="learning_rate"):
        AdaBoostClassifier(learning_rate=-1).fit(X, y)
    with pytest.raises(ParameterError, match="loss"):
        AdaBoostRegressor(loss="huber").fit(X, y.astype(float))
    with pytest.raises(ParameterError, match="single class"):
        AdaBoostClassifier().fit(X, np.zeros(len(y)))
    with pytest.raises(ParameterError, match="not fitted"):
        AdaBoostClassifier().predict(X)
