"""Leaf refresh of reg:absoluteerror and reg:quantileerror: every leaf of every round is
the learning rate times the weighted quantile of its rows' residuals before that round,
by a NumPy twin (XGBoost's lower weighted quantile), whatever the block size; and the
fitted quantile covers its level."""
import numpy as np
import pyarrow as pa
import pytest

import oocboost
import oocboost.model.predict


def xgboost_quantile(values, weights, alpha):
    """XGBoost's leaf quantile, transcribed: ``WeightedQuantile`` (the first sorted
    value whose cumulative weight reaches ``alpha`` of the total; zero weights left out)
    for weighted rows, ``Quantile`` (the interpolated ``alpha (n + 1)``-th order
    statistic) when every weight is 1."""
    keep = weights > 0
    values, weights = np.sort(values[keep]), weights[keep][np.argsort(values[keep])]
    if not np.all(weights == 1):
        cdf = np.cumsum(weights)
        return values[min(int(np.searchsorted(cdf, alpha * cdf[-1])), len(cdf) - 1)]
    n = len(values)
    if alpha <= 1 / (n + 1):
        return values[0]
    if alpha >= n / (n + 1):
        return values[-1]
    x = alpha * (n + 1)
    k = int(np.floor(x)) - 1
    return values[k] + ((x - 1) - k) * (values[k + 1] - values[k])


def _data(n=1500, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    X[rng.random(X.shape) < 0.05] = np.nan
    y = np.nan_to_num(X[:, 0]) * 2 + rng.standard_t(3, size=n)
    return X, y, rng.uniform(0.2, 3.0, size=n)


@pytest.mark.parametrize("objective, alpha", [("reg:absoluteerror", 0.5),
                                              ("reg:quantileerror", 0.9),
                                              ("reg:quantileerror", 0.2)])
@pytest.mark.parametrize("block_rows", [128, 4096])
@pytest.mark.parametrize("weighted", [False, True])
def test_every_leaf_is_the_quantile_of_its_residuals(tmp_path, objective, alpha,
                                                    block_rows, weighted):
    X, y, w = _data()
    w = w if weighted else np.ones(len(y))
    table = pa.table({"a": X[:, 0], "b": X[:, 1], "c": X[:, 2], "y": y, "w": w})
    cache = oocboost.build_cache(table if weighted else table.drop(["w"]),
                                 tmp_path / "c.oocb", label="y", quiet=True,
                                 weight="w" if weighted else None, block_rows=block_rows)
    eta = 0.7
    model = oocboost.train({"objective": objective, "quantile_alpha": alpha, "eta": eta,
                            "max_depth": 3}, cache, 4, verbose_eval=False)
    leaves = model.predict_leaf(X)
    residual_y = y.astype(np.float32).astype(np.float64)  # the cache stores float32 labels
    weight = w.astype(np.float32).astype(np.float64)
    for r, tree in enumerate(model.trees):
        margin = model.predict(X, output_margin=True, iteration_range=(0, r)) if r else \
            np.full(len(y), model.base_margin[0])
        residual = residual_y - margin
        for leaf in np.unique(leaves[:, r]):
            rows = leaves[:, r] == leaf
            expected = eta * xgboost_quantile(residual[rows], weight[rows], alpha)
            assert tree.value[leaf, 0] == pytest.approx(expected, rel=1e-12, abs=1e-12)
    assert model.training_log["data_passes"] == 4 * (3 + 1)  # one refresh pass a round


def test_the_fitted_quantile_covers_its_level(tmp_path):
    X, y, _ = _data(n=6000, seed=3)
    for alpha in (0.1, 0.5, 0.9):
        est = oocboost.GradientBoostingRegressor(n_estimators=30, learning_rate=0.3,
                                                 max_depth=3, objective="reg:quantileerror",
                                                 quantile_alpha=alpha).fit(X, y)
        assert np.mean(y <= est.predict(X)) == pytest.approx(alpha, abs=0.02)


def test_cross_validation_refreshes_each_fold_from_its_own_rows(tmp_path):
    from oocboost.cache.store.weighted import RowWeightedCache
    from oocboost.learners.boosting.cv import make_folds

    X, y, _ = _data(n=900, seed=5)
    cache = oocboost.build_cache(X, tmp_path / "c.oocb", label=y, quiet=True,
                                 block_rows=256)
    params = {"objective": "reg:absoluteerror", "max_depth": 2}
    _, models = oocboost.cv(params, cache, 3, nfold=3, return_models=True,
                            as_pandas=False)
    folds = make_folds(cache.n_rows, 3)
    for fold, model in enumerate(models):
        alone = oocboost.train(params, RowWeightedCache(cache, folds != fold), 3,
                               verbose_eval=False)
        for ours, theirs in zip(model.trees, alone.trees):
            np.testing.assert_allclose(ours.value, theirs.value, rtol=1e-12)


def test_several_levels_in_one_model_each_refreshed_to_its_own(tmp_path):
    X, y, _ = _data(n=1200, seed=7)
    cache = oocboost.build_cache(X, tmp_path / "c.oocb", label=y, quiet=True,
                                 block_rows=300)
    levels = [0.1, 0.5, 0.9]
    model = oocboost.train({"objective": "reg:quantileerror", "quantile_alpha": levels,
                            "eta": 0.5, "max_depth": 2}, cache, 3, verbose_eval=False)
    assert model.n_outputs == 3 and model.trees_per_round == 3
    prediction = model.predict(X)
    assert prediction.shape == (1200, 3)
    leaves = model.predict_leaf(X)
    label = y.astype(np.float32).astype(np.float64)
    for r in range(3):
        margin = model.predict(X, output_margin=True, iteration_range=(0, r)) if r else \
            np.tile(model.base_margin, (len(y), 1))
        for k, alpha in enumerate(levels):
            tree_index = r * 3 + k
            for leaf in np.unique(leaves[:, tree_index]):
                rows = leaves[:, tree_index] == leaf
                expected = 0.5 * xgboost_quantile(label[rows] - margin[rows, k],
                                                  np.ones(rows.sum()), alpha)
                assert model.trees[tree_index].value[leaf, 0] == pytest.approx(expected)
    evaluated = oocboost.model.predict.evaluate(model, cache)
    pinball = np.mean([np.mean(np.where(label - prediction[:, k] >= 0,
                                        a * (label - prediction[:, k]),
                                        (a - 1) * (label - prediction[:, k])))
                       for k, a in enumerate(levels)])
    assert evaluated["quantile"] == pytest.approx(pinball, rel=1e-9)


def test_several_levels_agree_with_xgboost(tmp_path):
    xgb = pytest.importorskip("xgboost")
    rng = np.random.default_rng(4)
    X = rng.integers(0, 6, size=(3000, 2)).astype(float)
    y = X[:, 0] * 1.5 + rng.gamma(2.0, 1.0, 3000)
    params = {"objective": "reg:quantileerror", "quantile_alpha": [0.2, 0.5, 0.8],
              "max_depth": 2, "eta": 0.3}
    theirs = xgb.train({**params, "tree_method": "hist", "nthread": 1},
                       xgb.DMatrix(X, label=y), 6).predict(xgb.DMatrix(X))
    cache = oocboost.build_cache(X, tmp_path / "c.oocb", label=y, quiet=True)
    ours = oocboost.train(params, cache, 6, verbose_eval=False).predict(X)
    np.testing.assert_allclose(ours, theirs, rtol=3e-3, atol=1e-3)
    for k in range(3):  # six rounds are not converged: the same coverage as XGBoost's
        assert np.mean(y <= ours[:, k]) == pytest.approx(np.mean(y <= theirs[:, k]),
                                                         abs=0.01)
