"""AdaBoost.M1 and AdaBoost.MH against brute-force NumPy references that grow the same
greedy trees (every threshold of every feature, first best kept), reweight the rows and
predict; and the weak learner given as ``estimator=DecisionTreeClassifier(...)``."""
import numpy as np
import pytest

import oocboost
from oocboost.errors import ParameterError

K = 3


def _data(n=150, seed=0):
    rng = np.random.default_rng(seed)
    # 25 distinct values a feature: one bin per value, so thresholds are the references'
    X = rng.integers(0, 25, size=(n, 3)).astype(float)
    score = X[:, 0] - X[:, 1] + 0.6 * X[:, 2] + rng.normal(scale=3.0, size=n)
    # a majority class: a stump can have an error under 1/2 (what M1 needs)
    y = np.digitize(score, np.quantile(score, [0.5, 0.8]))
    return X, y


def _gini_proxy(stats):
    """-(W gini) of a node from its class weights (K lanes)."""
    w = stats.sum()
    return -(w - (stats ** 2).sum() / w) if w > 0 else 0.0


def _mh_proxy(stats):
    """-2 Z of a node from its (W+ per class, W- per class) lanes."""
    return -2.0 * np.sum(np.sqrt(stats[:K] * stats[K:]))


def _grow(X, S, rows, depth, proxy, impurity):
    """Greedy tree on the rows ``rows`` with row statistics ``S``; returns a function
    mapping X to the leaf statistics of each row (and the list of leaves' statistics)."""
    node = S[rows].sum(axis=0)
    best, split = -np.inf, None
    if depth > 0 and impurity(node) > 1e-7:
        for f in range(X.shape[1]):
            for t in np.unique(X[rows, f])[:-1]:
                left = rows[X[rows, f] <= t]
                right = rows[X[rows, f] > t]
                p = proxy(S[left].sum(axis=0)) + proxy(S[right].sum(axis=0))
                if p > best + 1e-12 * abs(best if np.isfinite(best) else 0):
                    best, split = p, (f, t, left, right)
    if split is None:
        return lambda Z: np.tile(node, (len(Z), 1))
    f, t, left, right = split
    grow_l = _grow(X, S, left, depth - 1, proxy, impurity)
    grow_r = _grow(X, S, right, depth - 1, proxy, impurity)

    def route(Z):
        out = np.empty((len(Z), len(node)))
        go = Z[:, f] <= t
        out[go] = grow_l(Z[go])
        out[~go] = grow_r(Z[~go])
        return out
    return route


def _reference_m1(X, y, rounds, depth, lr=1.0):
    n = len(y)
    w = np.full(n, 1.0 / n)
    votes = np.zeros((n, K))
    weights, errors = [], []
    for _ in range(rounds):
        S = w[:, None] * np.eye(K)[y]
        route = _grow(X, S, np.arange(n), depth, _gini_proxy,
                      lambda s: 1 - (s ** 2).sum() / s.sum() ** 2)
        pred = np.argmax(route(X), axis=1)
        miss = pred != y
        err = w[miss].sum() / w.sum()
        if err >= 0.5:
            break
        alpha = lr * np.log((1 - err) / err)
        weights.append(alpha)
        errors.append(err)
        votes += alpha * np.eye(K)[pred]
        w = w * np.exp(alpha * miss)
        w /= w.sum()
    return np.array(weights), np.array(errors), votes / votes.sum(axis=1, keepdims=True)


def _reference_mh(X, y, rounds, depth, lr=1.0):
    n = len(y)
    Y = np.where(np.eye(K)[y] > 0, 1.0, -1.0)
    D = np.full((n, K), 1.0 / (n * K))
    eps = 1.0 / (n * K)
    H = np.zeros((n, K))
    errors = []
    for _ in range(rounds):
        S = np.hstack([D * (Y > 0), D * (Y < 0)])
        route = _grow(X, S, np.arange(n), depth, _mh_proxy,
                      lambda s: 2 * np.sum(np.sqrt(s[:K] * s[K:])) / s.sum())
        leaf = route(X)
        total = D.sum()
        c = 0.5 * lr * np.log((leaf[:, :K] + eps * total) / (leaf[:, K:] + eps * total))
        errors.append(D[np.sign(c) != Y].sum() / total)
        H += c
        D = D * np.exp(-Y * c)
        D /= D.sum()
    return np.array(errors), H


@pytest.mark.parametrize("depth", [2, 3])
def test_m1_equals_numpy_reference(depth):
    # (M1's stumps on three classes soon reach an error of 1/2, where alpha -> 0 is
    # ill-conditioned: deeper trees keep the errors, and the comparison, meaningful)
    X, y = _data()
    ours = oocboost.AdaBoostClassifier(algorithm="M1", n_estimators=6, max_depth=depth,
                                       learning_rate=0.8).fit(X, y)
    weights, errors, proba = _reference_m1(X, y, 6, depth, lr=0.8)
    n = len(weights)
    assert n >= 2
    # the statistics are float32: errors agree to 1e-6 relative, alphas as well as
    # log((1 - err) / err) carries that
    np.testing.assert_allclose(ours.estimator_errors_[:n], errors, rtol=1e-5)
    np.testing.assert_allclose(ours.estimator_weights_[:n], weights, rtol=1e-4, atol=1e-6)
    assert weights.min() > 0.05
    if n < 6:   # stopped at an error of 1/2, as the reference
        assert ours.stop_reason_ == "no better than chance"
        assert np.all(ours.estimator_weights_[n:] == 0)
    np.testing.assert_allclose(ours.predict_proba(X), proba, atol=1e-6)
    np.testing.assert_array_equal(ours.predict(X), np.argmax(proba, axis=1))


def test_m1_with_two_classes_is_samme():
    X, y = _data()
    y2 = (y == 2).astype(int)
    m1 = oocboost.AdaBoostClassifier(algorithm="M1", n_estimators=8).fit(X, y2)
    samme = oocboost.AdaBoostClassifier(algorithm="SAMME", n_estimators=8).fit(X, y2)
    np.testing.assert_allclose(m1.estimator_weights_, samme.estimator_weights_, rtol=1e-12)
    np.testing.assert_array_equal(m1.predict(X), samme.predict(X))


@pytest.mark.parametrize("depth", [1, 2])
def test_mh_equals_numpy_reference(depth):
    X, y = _data()
    ours = oocboost.AdaBoostClassifier(algorithm="MH", n_estimators=5, max_depth=depth,
                                       learning_rate=0.5).fit(X, y)
    errors, H = _reference_mh(X, y, 5, depth, lr=0.5)
    np.testing.assert_allclose(ours.estimator_errors_, errors, rtol=1e-5)
    np.testing.assert_allclose(ours.decision_function(X), H, rtol=1e-5, atol=1e-7)
    e = np.exp(H - H.max(axis=1, keepdims=True))
    np.testing.assert_allclose(ours.predict_proba(X), e / e.sum(axis=1, keepdims=True),
                               rtol=1e-5)
    np.testing.assert_array_equal(ours.predict(X), np.argmax(H, axis=1))


def test_mh_and_m1_from_a_cache_and_a_saved_model(tmp_path):
    X, y = _data(400, seed=1)
    cache = oocboost.build_cache(X, tmp_path / "c.oocb", label=y.astype(float),
                                 block_rows=64, quiet=True)
    for algorithm in ("MH", "M1"):
        arrays = oocboost.AdaBoostClassifier(algorithm=algorithm, n_estimators=10,
                                             max_depth=2).fit(X, y)
        cached = oocboost.AdaBoostClassifier(algorithm=algorithm, n_estimators=10,
                                             max_depth=2).fit(cache)
        np.testing.assert_allclose(cached.predict_proba(X), arrays.predict_proba(X),
                                   rtol=1e-9)
        path = tmp_path / f"{algorithm}.json"
        cached.save_model(path)
        model = oocboost.load_model(path)
        assert model.attributes["adaboost"]["algorithm"] == algorithm
        from oocboost.model.adaboost import predict_adaboost
        from oocboost.model.predict import predict

        np.testing.assert_array_equal(predict_adaboost(model, X), arrays.predict(X))
        # the file's objective turns the margins into the estimator's probabilities
        np.testing.assert_allclose(predict(model, X), arrays.predict_proba(X), rtol=1e-9)


def test_estimator_shapes_the_weak_trees():
    X, y = _data(400, seed=2)
    depth3 = oocboost.AdaBoostClassifier(n_estimators=5, max_depth=3).fit(X, y)
    given = oocboost.AdaBoostClassifier(oocboost.DecisionTreeClassifier(max_depth=3),
                                        n_estimators=5).fit(X, y)
    np.testing.assert_array_equal(given.predict_proba(X), depth3.predict_proba(X))
    leafy = oocboost.AdaBoostClassifier(
        oocboost.DecisionTreeClassifier(max_depth=4, min_samples_leaf=40), algorithm="MH",
        n_estimators=5).fit(X, y)
    # min_samples_leaf counts rows: every leaf of every weak tree holds at least 40
    from oocboost.model.predict import predict

    leaf_of = predict(leafy.model_, X, pred_leaf=True)
    for t in range(leaf_of.shape[1]):
        counts = np.bincount(leaf_of[:, t])
        assert counts[counts > 0].min() >= 40
    entropy = oocboost.AdaBoostClassifier(
        oocboost.DecisionTreeClassifier(max_depth=2, criterion="entropy"),
        n_estimators=3).fit(X, y)
    assert entropy.model_.params["weak_tree"]["criterion"] == "entropy"
    reg = oocboost.AdaBoostRegressor(oocboost.DecisionTreeRegressor(max_depth=2),
                                     n_estimators=4, random_state=0).fit(X, X[:, 0])
    reg3 = oocboost.AdaBoostRegressor(max_depth=2, n_estimators=4, random_state=0).fit(
        X, X[:, 0])
    np.testing.assert_array_equal(reg.predict(X), reg3.predict(X))


@pytest.mark.parametrize("kwargs, pattern", [
    (dict(estimator=oocboost.DecisionTreeClassifier(class_weight="balanced")),
     "class_weight"),
    (dict(estimator=oocboost.DecisionTreeClassifier(ccp_alpha=0.01)), "ccp_alpha"),
    (dict(estimator=oocboost.DecisionTreeClassifier(criterion="gini"), algorithm="MH"),
     "criterion='gini' does not apply to algorithm='MH'"),
    (dict(estimator=oocboost.DecisionTreeClassifier(), max_depth=3), "max_depth=3 and an"),
    (dict(estimator=oocboost.DecisionTreeRegressor()), "DecisionTreeClassifier"),
    (dict(algorithm="M7"), "algorithm must be one of"),
])
def test_bad_weak_learners_are_refused(kwargs, pattern):
    X, y = _data(60)
    with pytest.raises(ParameterError, match=pattern):
        oocboost.AdaBoostClassifier(n_estimators=2, **kwargs).fit(X, y)


def test_mh_kernels_match_numpy_twins():
    from oocboost.kernels import adaboost_kernels as ak

    rng = np.random.default_rng(3)
    n, k = 57, 4
    y = rng.integers(0, k, n).astype(np.int32)
    dist = rng.uniform(0.0, 2.0, (n, k))
    dist[5] = 0.0
    out = np.empty((n, 2 * k + 1), np.float32)
    ak.mh_stats(y, dist, out)
    own = np.eye(k, dtype=bool)[y]
    twin = np.column_stack([np.where(own, dist, 0), np.where(own, 0, dist),
                            (dist.sum(axis=1) > 0).astype(float)]).astype(np.float32)
    np.testing.assert_array_equal(out, twin)
    node = rng.integers(0, 3, n).astype(np.int32)
    leaf_value = rng.normal(size=(3, k))
    got = dist.copy()
    ak.mh_reweight(node, leaf_value, y, 0.7, got)
    sign = np.where(own, 1.0, -1.0)
    np.testing.assert_allclose(got, 0.7 * dist * np.exp(-sign * leaf_value[node]),
                               rtol=1e-14)
