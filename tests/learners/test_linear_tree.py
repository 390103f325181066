"""linear_tree (LightGBM's linear leaves) on the one boosting engine: equal to LightGBM's
margins where the bins hold the raw values exactly, each leaf's model the solution of
its round's normal equations (NumPy), whatever the block size; raw and cache prediction,
files, slices and continuation agree; what it does not combine with is refused."""
import numpy as np
import pyarrow as pa
import pytest

import oocboost
from oocboost.errors import ModelError, ParameterError
from oocboost.learners.boosting.linear_fit import branch_features, full_pivot_solve


def _grid_data(n=3000, seed=0, missing=0.0):
    """Values on a 0.1 grid (41 of them: every bin holds one value, its middle), a
    piecewise-linear label with its break off the grid's zero."""
    rng = np.random.default_rng(seed)
    X = np.round(rng.uniform(-2, 2, (n, 3)), 1)
    y = np.where(X[:, 0] > 0.35, 3 * X[:, 1] + X[:, 2], -2 * X[:, 1]) \
        + 0.2 * rng.normal(size=n)
    X[rng.random(X.shape) < missing] = np.nan
    return X, y


def _cache(tmp_path, X, y, block_rows=512, name="c.oocb"):
    table = pa.table({"a": X[:, 0], "b": X[:, 1], "c": X[:, 2], "y": y})
    return oocboost.build_cache(table, tmp_path / name, label="y", quiet=True,
                                block_rows=block_rows)


# (objective, LightGBM's, linear_lambda, share missing, smallest child: hessian for us,
# rows and hessian for LightGBM). LightGBM counts a leaf's non-missing *values* where we
# count its complete rows when deciding whether a leaf has enough data for its model:
# with missing values, the regression case keeps leaves large enough not to differ.
CASES = [
    ("reg:squarederror", "regression", 0.0, 0.0, (1e-3, 1, 1e-3)),
    ("reg:squarederror", "regression", 2.0, 0.05, (20.0, 20, 0.0)),
    ("binary:logistic", "binary", 0.0, 0.05, (1e-3, 1, 1e-3)),
    ("binary:logistic", "binary", 2.0, 0.05, (1e-3, 1, 1e-3)),
]


@pytest.mark.parametrize("objective, lgb_objective, linear_lambda, missing, child", CASES)
@pytest.mark.parametrize("block_rows", [256, 100_000])
def test_margins_equal_lightgbm(tmp_path, objective, lgb_objective, linear_lambda,
                                missing, child, block_rows):
    lgb = pytest.importorskip("lightgbm")
    X, y = _grid_data(missing=missing)
    binary = objective.startswith("binary")
    if binary:
        y = (y > 0).astype(float)
    params = {"objective": objective, "eta": 0.3, "max_depth": 3, "reg_lambda": 0.0,
              "min_child_weight": child[0], "linear_tree": True,
              "linear_lambda": linear_lambda, "base_score": 0.5 if binary else y.mean()}
    model = oocboost.train(params, _cache(tmp_path, X, y, block_rows), 12,
                           verbose_eval=False)
    booster = lgb.train({"objective": lgb_objective, "learning_rate": 0.3, "num_leaves": 8,
                         "max_depth": 3, "linear_tree": True, "linear_lambda": linear_lambda,
                         "lambda_l2": 0.0, "min_data_in_leaf": child[1],
                         "min_sum_hessian_in_leaf": child[2], "verbose": -1,
                         "boost_from_average": not binary}, lgb.Dataset(X, y), 12)
    ours = model.predict(X, output_margin=True)
    np.testing.assert_allclose(ours, booster.predict(X, raw_score=True), rtol=0, atol=1e-6)
    entries = model.part("linear_leaves").entries
    assert [e.tree for e in entries] == list(range(1, 12))  # the first tree is constant
    constant = oocboost.train({**params, "linear_tree": False},
                              _cache(tmp_path, X, y, block_rows, "d.oocb"), 12,
                              verbose_eval=False)
    assert np.abs(constant.predict(X, output_margin=True) - ours).max() > 0.1


def _softmax_stats(margin, y):
    """XGBoost's softmax gradient and hessian (ours), per class."""
    p = np.exp(margin - margin.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    onehot = np.eye(margin.shape[1])[y.astype(int)]
    return p - onehot, np.maximum(2 * p * (1 - p), 1e-16)


def test_each_leaf_model_solves_its_rounds_normal_equations(tmp_path):
    """Multiclass, one tree a class: every leaf's constant and coefficients are
    ``eta`` times the solution of ``(X^T H X + lambda I) b = -X^T g`` over its complete
    rows, from the margins before its round (NumPy, rows taken one leaf at a time)."""
    X, y = _grid_data(n=2000, seed=4, missing=0.03)
    label = np.digitize(y, [-1.0, 1.5]).astype(float)
    eta, lam = 0.5, 0.7
    model = oocboost.train({"objective": "multi:softprob", "num_class": 3, "eta": eta,
                            "max_depth": 2, "linear_tree": True, "linear_lambda": lam},
                           _cache(tmp_path, X, label, 300), 3, verbose_eval=False)
    leaves = model.predict_leaf(X)
    by_tree = {e.tree: e for e in model.part("linear_leaves").entries}
    checked = 0
    for t in range(3, 9):  # rounds 1 and 2
        r, c = divmod(t, 3)
        margin = model.predict(X, output_margin=True, iteration_range=(0, r))
        g, h = _softmax_stats(margin, label)
        tree, entry = model.trees[t], by_tree[t]
        features = branch_features(tree.left, tree.right, tree.feature, [True] * 3)
        for k, leaf in enumerate(entry.node.tolist()):
            cols = features[leaf]
            rows = (leaves[:, t] == leaf) & ~np.isnan(X[:, cols]).any(1)
            A = np.c_[X[rows][:, cols], np.ones(rows.sum())]
            system = A.T @ (A * h[rows, c, None]) + np.diag([lam] * len(cols) + [0.0])
            beta = np.linalg.solve(system, -A.T @ g[rows, c]) * eta
            own = entry.feature[entry.offset[k]:entry.offset[k + 1]].tolist()
            assert own == cols
            np.testing.assert_allclose(entry.coef[entry.offset[k]:entry.offset[k + 1]],
                                       beta[:-1], rtol=2e-5, atol=1e-7)
            assert entry.const[k] == pytest.approx(beta[-1], rel=2e-5, abs=1e-7)
            checked += 1
    assert checked >= 18


def test_a_singular_leaf_drops_its_dependent_features():
    """A feature constant in its leaf: Eigen's full-pivot LU (LightGBM's) gives it no
    coefficient, and the solution still fits."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=50)
    A = np.c_[x, np.full(50, 0.3), np.ones(50)]
    target = 2 * x + 1
    beta = full_pivot_solve(A.T @ A, A.T @ target)
    assert np.count_nonzero(beta) == 2
    np.testing.assert_allclose(A @ beta, target, atol=1e-9)


def test_cache_raw_files_slices_and_continuation_agree(tmp_path):
    X, y = _grid_data(n=1500, seed=2, missing=0.02)
    cache = _cache(tmp_path, X, y, 400)
    params = {"eta": 0.3, "max_depth": 3, "linear_tree": True, "linear_lambda": 0.5}
    model = oocboost.train(params, cache, 8, verbose_eval=False)
    raw = model.predict(X)
    np.testing.assert_allclose(model.predict(cache), raw, rtol=0, atol=1e-9)
    model.save_model(tmp_path / "m.json")
    loaded = oocboost.load_model(tmp_path / "m.json")
    np.testing.assert_array_equal(loaded.predict(X), raw)
    head = oocboost.train(params, cache, 3, verbose_eval=False)
    np.testing.assert_allclose(model.predict(X, iteration_range=(0, 3)), head.predict(X),
                               rtol=0, atol=1e-12)
    continued = oocboost.train(params, cache, 5, init_model=head, verbose_eval=False)
    np.testing.assert_allclose(continued.predict(X), raw, rtol=0, atol=1e-9)
    assert "linear leaf models" in continued.part("linear_leaves").describe()
    with pytest.raises(ModelError, match="linear"):
        model.predict(X, pred_contribs=True)
    with pytest.raises(ParameterError, match="linear leaves"):
        model.refit(cache)
    for name in ("m.onnx", "m.ubj", "m.tl"):  # LightGBM's has linear trees (its tests)
        with pytest.raises(ModelError, match="'linear_leaves' part"):
            model.export(tmp_path / name)


def test_cross_validation_fits_each_folds_leaves(tmp_path):
    """The folds grow in the same passes; each fold's model predicts its held-out rows
    with the margins the run scored them by."""
    X, y = _grid_data(n=1200, seed=5)
    cache = _cache(tmp_path, X, y, 300)
    fold_of_row = np.arange(len(y)) % 3
    _, oof, models = oocboost.cv({"eta": 0.3, "max_depth": 2, "linear_tree": True}, cache,
                                 4, folds=fold_of_row, as_pandas=False, return_oof=True,
                                 return_models=True)
    assert all(len(m.part("linear_leaves").entries) == 3 for m in models)
    for fold, model in enumerate(models):
        held = fold_of_row == fold
        np.testing.assert_allclose(model.predict(X[held]), oof[held], rtol=0, atol=1e-9)


@pytest.mark.parametrize("params, pattern", [
    ({"booster": "dart"}, "booster='dart'"),
    ({"grow_policy": "symmetric"}, "grow_policy='symmetric'"),
    ({"objective": "reg:absoluteerror"}, "reg:absoluteerror"),
    ({"linear_lambda": -1.0}, "linear_lambda"),
])
def test_what_linear_trees_do_not_combine_with_is_refused(tmp_path, params, pattern):
    X, y = _grid_data(n=200)
    with pytest.raises(ParameterError, match=pattern):
        oocboost.train({"linear_tree": True, **params}, _cache(tmp_path, X, y), 2,
                       verbose_eval=False)


def test_distributed_training_refuses_linear_trees():
    from oocboost.learners.boosting.training import check_distributed_params

    with pytest.raises(ParameterError, match="linear_tree"):
        check_distributed_params({"linear_tree": True})
