"""Several targets (a label of k columns): each target's gradients are its one-column
objective's, models and metrics equal XGBoost's multi-target models (one tree per
target), the labels survive every source and backend, the estimators take 2-D y as
scikit-learn and XGBoost do, and what cannot take several columns says so."""
import numpy as np
import pytest

import oocboost
from oocboost.model.objectives import get_objective


def _data(n=2000, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 8, size=(n, 4)).astype(float)
    Y = np.c_[X[:, 0] + rng.normal(size=n), X[:, 1] * X[:, 2] + rng.normal(size=n),
              -X[:, 3] + rng.normal(size=n)]
    return X, Y, rng.uniform(0.5, 2.0, n)


def test_each_target_gets_its_one_column_gradients():
    rng = np.random.default_rng(0)
    y = rng.random((50, 3)).round()
    m = rng.normal(size=(50, 3))
    w = rng.uniform(0.5, 2, 50)
    multi = get_objective("binary:logistic", {"n_targets": 3})
    one = get_objective("binary:logistic")
    g, h = np.empty((50, 3), np.float32), np.empty((50, 3), np.float32)
    multi.gradients(y, m, w, g, h)
    for j in range(3):
        gj, hj = np.empty((50, 1), np.float32), np.empty((50, 1), np.float32)
        one.gradients(y[:, j], m[:, j], w, gj, hj)
        np.testing.assert_array_equal(g[:, j], gj[:, 0])
        np.testing.assert_array_equal(h[:, j], hj[:, 0])
    np.testing.assert_allclose(multi.transform(m), 1 / (1 + np.exp(-m)), rtol=1e-12)


@pytest.mark.parametrize("objective", ["reg:squarederror", "binary:logistic",
                                       "reg:pseudohubererror"])
@pytest.mark.parametrize("block_rows", [256, 100_000])
def test_models_and_metrics_equal_xgboosts(tmp_path, objective, block_rows):
    xgb = pytest.importorskip("xgboost")
    X, Y, w = _data()
    if objective == "binary:logistic":
        Y = (Y > np.median(Y, axis=0)).astype(float)
    cache = oocboost.build_cache(X, tmp_path / "c", label=Y, weight=w, quiet=True,
                                 block_rows=block_rows)
    assert cache.n_label_columns == 3
    params = {"objective": objective, "max_depth": 3}
    if objective == "reg:pseudohubererror":  # intercepts differ by design (parameters 1.3)
        params["base_score"] = 0.5
    log, theirs_log = {}, {}
    ours = oocboost.train(params, cache, 5, evals=[(cache, "train")], evals_result=log,
                          verbose_eval=False)
    d = xgb.DMatrix(X, Y, weight=w)
    theirs = xgb.train({**params, "tree_method": "hist", "nthread": 1}, d, 5,
                       evals=[(d, "train")], evals_result=theirs_log, verbose_eval=False)
    assert ours.predict(X).shape == (len(X), 3) and ours.n_outputs == 3
    # pseudo-Huber's float32 arithmetic in XGBoost moves a few leaves by ~2e-5
    tol = 1e-4 if objective == "reg:pseudohubererror" else 1e-5
    np.testing.assert_allclose(ours.predict(X), theirs.predict(d), rtol=tol, atol=tol)
    metric = list(log["train"])[0]
    assert log["train"][metric][-1] == pytest.approx(theirs_log["train"][metric][-1],
                                                     rel=tol)


@pytest.mark.parametrize("backend", ["arrow", "hdf5"])
def test_label_columns_through_files_and_backends(tmp_path, backend):
    pd = pytest.importorskip("pandas")
    X, Y, _ = _data(1000)
    frame = pd.DataFrame(X, columns=list("abcd")).assign(y0=Y[:, 0], y1=Y[:, 1])
    frame.to_csv(tmp_path / "d.csv", index=False)
    frame.to_parquet(tmp_path / "d.parquet")
    want = Y[:, :2].astype(np.float32)
    for source in (tmp_path / "d.csv", tmp_path / "d.parquet", frame):
        cache = oocboost.build_cache(source, tmp_path / f"c-{backend}", label=["y0", "y1"],
                                     backend=backend, block_rows=300, quiet=True,
                                     overwrite=True)
        labels, _ = cache.read_labels()
        np.testing.assert_array_equal(labels, want)
        assert cache.feature_names == list("abcd")
        assert [b.label.shape for b in cache.iter_blocks()][-1] == (100, 2)


def test_estimators_take_a_2d_y_as_xgboost(tmp_path):
    xgb = pytest.importorskip("xgboost")
    X, Y, _ = _data()
    reg = oocboost.GradientBoostingRegressor(n_estimators=5, max_depth=3).fit(X, Y)
    theirs = xgb.XGBRegressor(n_estimators=5, max_depth=3, tree_method="hist").fit(X, Y)
    np.testing.assert_allclose(reg.predict(X), theirs.predict(X), rtol=1e-5, atol=1e-5)
    assert reg.score(X, Y) == pytest.approx(theirs.score(X, Y), rel=1e-6)
    L = (Y > np.median(Y, axis=0)).astype(int)
    clf = oocboost.GradientBoostingClassifier(n_estimators=5, max_depth=3).fit(X, L)
    their_clf = xgb.XGBClassifier(n_estimators=5, max_depth=3, tree_method="hist").fit(X, L)
    np.testing.assert_allclose(clf.predict_proba(X), their_clf.predict_proba(X), atol=1e-6)
    np.testing.assert_array_equal(clf.predict(X), their_clf.predict(X))
    assert clf.score(X, L) == pytest.approx(their_clf.score(X, L))
    with pytest.raises(oocboost.ParameterError, match="0 or 1"):
        oocboost.GradientBoostingClassifier(n_estimators=2).fit(X, L * 2)


def test_what_takes_one_label_column_says_so(tmp_path):
    X, Y, _ = _data(500)
    cache = oocboost.build_cache(X, tmp_path / "c", label=Y, quiet=True)
    with pytest.raises(oocboost.ParameterError, match="takes one label column"):
        oocboost.train({"objective": "reg:absoluteerror"}, cache, 1, verbose_eval=False)
    with pytest.raises(oocboost.ParameterError, match="multi_output_tree"):
        oocboost.train({"multi_strategy": "multi_output_tree"}, cache, 1,
                       verbose_eval=False)
    with pytest.raises(oocboost.ParameterError, match="takes one label column"):
        oocboost.RandomForestRegressor(n_estimators=2).fit(cache)


def test_save_load_predict_and_evaluate_a_file(tmp_path):
    pd = pytest.importorskip("pandas")
    from oocboost.model.predict import evaluate

    X, Y, _ = _data(800)
    frame = pd.DataFrame(X, columns=list("abcd")).assign(y0=Y[:, 0], y1=Y[:, 1])
    frame.to_csv(tmp_path / "d.csv", index=False)
    cache = oocboost.build_cache(tmp_path / "d.csv", tmp_path / "c", label=["y0", "y1"],
                                 quiet=True)
    model = oocboost.train({"max_depth": 3}, cache, 4, verbose_eval=False)
    model.save_model(tmp_path / "m.json")
    loaded = oocboost.load_model(tmp_path / "m.json")
    np.testing.assert_array_equal(loaded.predict(frame), model.predict(frame))
    on_file = evaluate(loaded, str(tmp_path / "d.csv"))
    on_cache = evaluate(loaded, cache)
    assert on_file["rmse"] == pytest.approx(on_cache["rmse"], rel=1e-6)
    flat = np.sqrt(np.mean((model.predict(X) - Y[:, :2].astype(np.float32)) ** 2))
    assert on_file["rmse"] == pytest.approx(flat, rel=1e-5)
