"""survival:cox: gradients equal a brute-force partial likelihood twin (Breslow's ties,
every risk set summed directly), the model equals XGBoost's after several rounds, the
cox-nloglik metric is XGBoost's, and what it cannot do yet is refused with the reason."""
import numpy as np
import pytest

import oocboost
from oocboost.model.metrics import get_metric
from oocboost.model.objectives import get_objective


def _survival(n, seed=0, ties=False):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 6, size=(n, 3)).astype(float)
    t = rng.exponential(np.exp(-0.4 * X[:, 0] + 0.2 * X[:, 1]))
    if ties:
        t = np.ceil(t * 4) / 4  # many equal times
    censored = rng.random(n) < 0.3
    return X, np.where(censored, -t, t), rng.uniform(0.5, 2.0, n)


def brute_force_cox(y, m, w):
    """g and h of the negative Breslow partial log-likelihood, every sum direct. As in
    XGBoost's CoxRegression, a row counts the events before it in the stable order of
    the times, so within a group of equal times only the events sorted before it."""
    e = np.exp(m)
    t, event = np.abs(y), y > 0
    position = np.empty(len(y), np.int64)
    position[np.argsort(t, kind="stable")] = np.arange(len(y))
    g, h = np.zeros(len(y)), np.zeros(len(y))
    for i in range(len(y)):
        # events up to row i in time order, each with its risk set (times >= its time)
        r = s = 0.0
        for j in np.flatnonzero(event & (position <= position[i])):
            risk = e[t >= t[j]].sum()
            r += 1 / risk
            s += 1 / risk ** 2
        g[i] = w[i] * (e[i] * r - event[i])
        h[i] = w[i] * (e[i] * r - e[i] ** 2 * s)
    return g, h


@pytest.mark.parametrize("ties", [False, True])
@pytest.mark.parametrize("weighted", [False, True])
def test_gradients_equal_the_brute_force_partial_likelihood(ties, weighted):
    X, y, w = _survival(80, seed=1, ties=ties)
    w = w.astype(np.float32) if weighted else None
    m = np.random.default_rng(2).normal(size=(80, 1))
    obj = get_objective("survival:cox")
    g = np.empty((80, 1), np.float32)
    h = np.empty((80, 1), np.float32)
    label = y.astype(np.float32)
    obj.all_gradients(obj.label_order(label), label, m, w, g, h)
    ng, nh = brute_force_cox(label.astype(float), m[:, 0],
                             np.ones(80) if w is None else w.astype(float))
    np.testing.assert_allclose(g[:, 0], ng, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(h[:, 0], nh, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("block_rows", [256, 4096])
def test_the_model_and_its_metric_equal_xgboosts(tmp_path, block_rows):
    xgb = pytest.importorskip("xgboost")
    X, y, _ = _survival(2000)
    params = {"objective": "survival:cox", "max_depth": 2, "eta": 0.3}
    theirs = xgb.train({**params, "tree_method": "hist", "nthread": 1},
                       xgb.DMatrix(X, label=y), 5)
    cache = oocboost.build_cache(X, tmp_path / "c.oocb", label=y, quiet=True,
                                 block_rows=block_rows)
    log = {}
    ours = oocboost.train(params, cache, 5, evals=[(cache, "train")], evals_result=log,
                          verbose_eval=False)
    np.testing.assert_allclose(ours.predict(X), theirs.predict(xgb.DMatrix(X)), rtol=1e-5)
    their_metric = float(theirs.eval(xgb.DMatrix(X, label=y)).split(":")[1])
    assert log["train"]["cox-nloglik"][-1] == pytest.approx(their_metric, rel=1e-5)
    assert ours.predict(X, output_margin=True) == pytest.approx(np.log(ours.predict(X)))


def test_metric_by_hand():
    y = np.array([1.0, -2.0, 2.0, 3.0, -3.0])
    p = np.array([1.0, 2.0, 0.5, 1.5, 1.0])
    # events at t=1 (risk: all), t=2 (risk: t >= 2), t=3 (risk: t >= 3)
    expected = -(np.log(1.0 / p.sum()) + np.log(0.5 / p[1:].sum())
                 + np.log(1.5 / p[3:].sum())) / 3
    assert get_metric("cox-nloglik")(y, p) == pytest.approx(expected, rel=1e-12)


def test_refusals(tmp_path):
    X, y, _ = _survival(3000)
    cache = oocboost.build_cache(X, tmp_path / "c.oocb", label=y, quiet=True,
                                 block_rows=256)
    with pytest.raises(oocboost.ParameterError, match="oocboost.cv"):
        oocboost.cv({"objective": "survival:cox"}, cache, 2)
    with pytest.raises(oocboost.ParameterError, match="dart"):
        oocboost.train({"objective": "survival:cox", "booster": "dart"}, cache, 1,
                       verbose_eval=False)
    zero = oocboost.build_cache(X, tmp_path / "z.oocb", label=np.r_[0.0, y[1:]],
                                quiet=True)
    with pytest.raises(oocboost.InputError, match="row 0"):
        oocboost.train({"objective": "survival:cox"}, zero, 1, verbose_eval=False)
