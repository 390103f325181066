"""``boosting_type="ordered"`` (learners/boosting/ordered.py): the kernel against its
naive twin, two rounds of stumps against a NumPy reference of ordered boosting (the
second tree's split from the gradients at the ordered margins, its leaves from the
gradients at the model's), and the fit against CatBoost's ordered boosting."""
import numpy as np
import pytest

import oocboost
from oocboost.errors import ParameterError
from oocboost.kernels.ordered_boosting import add_ordered_values


def naive_ordered_values(node, grad, hess, reg_lambda, scale):
    """Each row's -scale * G / (H + lambda) over the earlier rows of its leaf."""
    out = np.zeros(len(node))
    for i in range(len(node)):
        before = (node[:i] == node[i])
        g, h = grad[:i][before].sum(), hess[:i][before].sum()
        if h + reg_lambda > 0:
            out[i] = -scale * g / (h + reg_lambda)
    return out


@pytest.mark.parametrize("chunk", [1, 37, 1000])
def test_ordered_values_equal_the_naive_twin_block_after_block(chunk):
    rng = np.random.default_rng(chunk)
    n = 500
    node = rng.integers(0, 6, n).astype(np.int32)
    grad = rng.normal(size=n).astype(np.float32)
    hess = rng.uniform(0.1, 1.0, n).astype(np.float32)
    run_grad, run_hess = np.zeros(6), np.zeros(6)
    out = np.full(n, 0.25)
    for lo in range(0, n, chunk):
        hi = min(n, lo + chunk)
        add_ordered_values(node[lo:hi], grad[lo:hi], hess[lo:hi], run_grad, run_hess,
                           1.5, 0.3, out[lo:hi])
    want = 0.25 + naive_ordered_values(node, grad.astype(float), hess.astype(float), 1.5,
                                       0.3)
    np.testing.assert_allclose(out, want, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(run_grad, np.bincount(node, grad.astype(float), 6))


def _sigmoid(m):
    return 1.0 / (1.0 + np.exp(-m))


def _stats(margin, y):
    p = _sigmoid(margin)
    return (p - y).astype(np.float32).astype(float), \
        (p * (1 - p)).astype(np.float32).astype(float)


def _best_stump(X, g, h, reg_lambda):
    """XGBoost's best split of one node: (feature, threshold) of the largest gain."""
    best = (-np.inf, None, None)
    G, H = g.sum(), h.sum()
    for f in range(X.shape[1]):
        for t in np.unique(X[:, f])[:-1]:
            left = X[:, f] <= t
            gl, hl = g[left].sum(), h[left].sum()
            gain = gl ** 2 / (hl + reg_lambda) + (G - gl) ** 2 / (H - hl + reg_lambda) \
                - G ** 2 / (H + reg_lambda)
            if gain > best[0] + 1e-9:
                best = (gain, f, t)
    return best[1], best[2]


def _newton(g, h, reg_lambda, eta):
    return -eta * g.sum() / (h.sum() + reg_lambda)


@pytest.mark.parametrize("block_rows", [50, 1000])
def test_two_rounds_of_stumps_equal_a_numpy_reference(tmp_path, block_rows):
    rng = np.random.default_rng(3)
    n, lam, eta = 600, 1.0, 0.5
    X = np.c_[rng.integers(0, 9, n), rng.integers(0, 5, n), rng.integers(0, 7, n)]
    X = X.astype(float)
    y = (rng.random(n) < _sigmoid(X[:, 0] - 4 + 0.8 * (X[:, 1] == 2))).astype(float)
    cache = oocboost.build_cache(X, tmp_path / "c", label=y, block_rows=block_rows,
                                 quiet=True)
    model = oocboost.train({"objective": "binary:logistic", "max_depth": 1, "eta": eta,
                            "reg_lambda": lam, "min_child_weight": 0,
                            "boosting_type": "ordered", "verbosity": 0}, cache, 2)
    base = float(np.asarray(model.base_margin)[0])
    trees = model.trees
    # round 1: every margin is the base, so ordered and plain gradients agree
    g, h = _stats(np.full(n, base), y)
    f1, t1 = _best_stump(X, g, h, lam)
    assert trees[0].feature[0] == f1
    left1 = X[:, f1] <= t1
    values1 = {True: _newton(g[left1], h[left1], lam, eta),
               False: _newton(g[~left1], h[~left1], lam, eta)}
    np.testing.assert_allclose(trees[0].value[trees[0].left[0]], values1[True], rtol=1e-5)
    # the ordered margins: the earlier rows of each row's leaf only
    ordered = base + naive_ordered_values(left1.astype(int), g, h, lam, eta)
    model_margin = base + np.where(left1, values1[True], values1[False])
    # round 2: split from the gradients at the ordered margins ...
    go, ho = _stats(ordered, y)
    f2, t2 = _best_stump(X, go, ho, lam)
    assert trees[1].feature[0] == f2
    left2 = X[:, f2] <= t2
    assert np.array_equal(left2, X[:, f2] <= trees[1].threshold[0])
    # ... its leaves from the gradients at the model's margins (CatBoost's averaging fold)
    gm, hm = _stats(model_margin, y)
    for side, rows in ((trees[1].left[0], left2), (trees[1].right[0], ~left2)):
        np.testing.assert_allclose(trees[1].value[side],
                                   _newton(gm[rows], hm[rows], lam, eta), rtol=1e-5)


def test_ordered_boosting_fits_as_catboosts_does(tmp_path):
    """Small noisy data, CatBoost's symmetric trees, its ordered boosting with the rows'
    own order (``has_time``): test log loss within 0.01 of CatBoost's; with depth-wise
    trees ordered boosting overfits less than plain."""
    catboost = pytest.importorskip("catboost")
    from sklearn.metrics import log_loss

    rng = np.random.default_rng(0)

    def draw(n):
        X = rng.normal(size=(n, 20))
        logit = X[:, 0] - 0.5 * X[:, 1] + 0.3 * X[:, 2] * X[:, 3]
        return X, (rng.random(n) < _sigmoid(logit)).astype(float)

    X, y = draw(3000)
    Xt, yt = draw(20000)
    cache = oocboost.build_cache(X, tmp_path / "c", label=y, quiet=True)
    loss = {}
    for kind, policy in (("plain", "depthwise"), ("ordered", "depthwise"),
                         ("ordered", "symmetric")):
        model = oocboost.train({"objective": "binary:logistic", "max_depth": 6,
                                "eta": 0.1, "boosting_type": kind,
                                "grow_policy": policy, "verbosity": 0}, cache, 300)
        loss[kind, policy] = log_loss(yt, model.predict(Xt))
    theirs = catboost.CatBoostClassifier(iterations=300, depth=6, learning_rate=0.1,
                                         boosting_type="Ordered", has_time=True, verbose=0,
                                         thread_count=2, random_seed=0,
                                         allow_writing_files=False).fit(X, y)
    loss["catboost"] = log_loss(yt, theirs.predict_proba(Xt)[:, 1])
    assert loss["ordered", "symmetric"] <= loss["catboost"] + 0.01, loss
    assert loss["ordered", "depthwise"] < loss["plain", "depthwise"] - 0.01, loss


@pytest.mark.parametrize("params,message", [
    ({"boosting_type": "dart"}, "booster='dart' here"),
    ({"boosting_type": "fast"}, "'plain' or 'ordered'"),
    ({"boosting_type": "ordered", "booster": "dart"}, "not offered with booster='dart'"),
    ({"boosting_type": "ordered", "linear_tree": True}, "linear_tree=True"),
])
def test_boosting_type_is_checked(tmp_path, params, message):
    X = np.random.default_rng(0).normal(size=(100, 3))
    cache = oocboost.build_cache(X, tmp_path / "c", label=(X[:, 0] > 0).astype(float),
                                 quiet=True)
    with pytest.raises(ParameterError, match=message):
        oocboost.train({"objective": "binary:logistic", **params}, cache, 2)


def test_catboost_and_lightgbm_spellings(tmp_path):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(300, 3))
    y = (rng.random(300) < _sigmoid(X[:, 0] + X[:, 1])).astype(float)
    cache = oocboost.build_cache(X, tmp_path / "c", label=y, quiet=True)
    plain = oocboost.train({"objective": "binary:logistic", "verbosity": 0}, cache, 3)
    for name in ("Plain", "gbdt"):
        same = oocboost.train({"objective": "binary:logistic", "boosting_type": name,
                               "verbosity": 0}, cache, 3)
        np.testing.assert_array_equal(same.predict(cache), plain.predict(cache))
    ordered = oocboost.train({"objective": "binary:logistic", "boosting_type": "Ordered",
                              "verbosity": 0}, cache, 3)
    assert not np.array_equal(ordered.predict(cache), plain.predict(cache))
