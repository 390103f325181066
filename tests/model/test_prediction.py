"""Model.predict: what the objective predicts, as xgboost.Booster.predict gives it, on
arrays, DataFrames, caches and files; checked against the link function applied to the
model's own margins by hand, and against XGBoost's output shapes."""
import numpy as np
import pytest

import oocboost


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(600, 5))
    X[rng.random(X.shape) < 0.05] = np.nan
    score = np.nan_to_num(X[:, 0]) - np.nan_to_num(X[:, 2])
    return X, score, rng


def _train(X, y, tmp_path, objective, rounds=12, **params):
    cache = oocboost.build_cache(X, tmp_path / f"{objective.replace(':', '_')}.oocb", label=y,
                                 block_rows=4096, quiet=True, overwrite=True)
    model = oocboost.train({"objective": objective, "max_depth": 3, "verbosity": 0, **params},
                           cache, rounds)
    return model, cache


def _sigmoid(m):
    return 1.0 / (1.0 + np.exp(-m))


def _softmax(m):
    e = np.exp(m - m.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def test_binary_logistic_on_every_kind_of_input(data, tmp_path):
    pd = pytest.importorskip("pandas")
    X, score, rng = data
    y = (score + 0.3 * rng.normal(size=len(X)) > 0).astype(float)
    model, cache = _train(X, y, tmp_path, "binary:logistic")
    margin = model.predict_margin(X)[:, 0]
    expected = _sigmoid(margin)
    np.testing.assert_allclose(model.predict(X), expected, rtol=1e-12)
    assert model.predict(X).shape == (len(X),)
    np.testing.assert_array_equal(model.predict(X, output_margin=True), margin)
    columns = [f"f{i}" for i in range(X.shape[1])]
    assert list(model.feature_names) == columns
    frame = pd.DataFrame(X, columns=columns)
    np.testing.assert_allclose(model.predict(frame), expected, rtol=1e-12)
    path = tmp_path / "x.csv"
    frame.to_csv(path, index=False)
    np.testing.assert_allclose(model.predict(str(path)), expected, rtol=1e-12)
    # a cache predicts from its codes: the same leaves as the raw values
    np.testing.assert_allclose(model.predict(cache), expected, rtol=1e-12)
    np.testing.assert_allclose(model.predict(cache.path), expected, rtol=1e-12)


def test_iteration_range_and_leaves(data, tmp_path):
    X, score, _ = data
    model, _ = _train(X, score, tmp_path, "reg:squarederror")
    first5 = model.predict(X, iteration_range=(0, 5))
    np.testing.assert_array_equal(
        first5, model.predict_margin(X, iteration_range=(0, 5))[:, 0]
    )
    np.testing.assert_array_equal(model.predict(X, iteration_range=(0, 0)), model.predict(X))
    assert not np.array_equal(first5, model.predict(X))
    leaves = model.predict(X, pred_leaf=True)
    np.testing.assert_array_equal(leaves, model.predict_leaf(X))
    assert leaves.shape == (len(X), 12)


def test_multiclass_poisson_and_softmax(data, tmp_path):
    X, score, rng = data
    y = np.digitize(score, [-0.5, 0.5]).astype(float)
    model, _ = _train(X, y, tmp_path, "multi:softprob", num_class=3)
    proba = model.predict(X)
    np.testing.assert_allclose(proba, _softmax(model.predict_margin(X)), rtol=1e-12)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    hard, _ = _train(X, y, tmp_path, "multi:softmax", num_class=3)
    np.testing.assert_array_equal(hard.predict(X),
                                  np.argmax(hard.predict_margin(X), axis=1))
    counts = rng.poisson(np.exp(0.5 * np.nan_to_num(X[:, 0]))).astype(float)
    poisson, _ = _train(X, counts, tmp_path, "count:poisson")
    np.testing.assert_allclose(poisson.predict(X), np.exp(poisson.predict_margin(X)[:, 0]),
                               rtol=1e-12)


def test_forest_and_adaboost_models_predict_as_their_estimators(data, tmp_path):
    X, score, rng = data
    y = (score > 0).astype(int)
    forest = oocboost.RandomForestClassifier(n_estimators=4, max_depth=4,
                                             random_state=0).fit(X, y)
    path = tmp_path / "forest.json"
    forest.save_model(path)
    np.testing.assert_allclose(oocboost.load_model(path).predict(X), forest.predict_proba(X),
                               rtol=1e-12)
    ada = oocboost.AdaBoostRegressor(n_estimators=6).fit(X, score)
    ada.save_model(tmp_path / "ada.json")
    np.testing.assert_array_equal(oocboost.load_model(tmp_path / "ada.json").predict(X),
                                  ada.predict(X))


def test_shapes_are_xgboosts(data, tmp_path):
    xgb = pytest.importorskip("xgboost")
    X, score, _ = data
    y2 = (score > 0).astype(float)
    y3 = np.digitize(score, [-0.5, 0.5]).astype(float)
    for objective, y, extra in [("binary:logistic", y2, {}),
                                ("multi:softprob", y3, {"num_class": 3}),
                                ("reg:squarederror", score, {})]:
        ours, _ = _train(X, y, tmp_path, objective, rounds=4, **extra)
        theirs = xgb.train({"objective": objective, "max_depth": 3, **extra},
                           xgb.DMatrix(X, label=y), 4)
        dm = xgb.DMatrix(X)
        assert ours.predict(X).shape == theirs.predict(dm).shape
        assert (ours.predict(X, output_margin=True).shape
                == theirs.predict(dm, output_margin=True).shape)
        assert (
            ours.predict(X, pred_leaf=True).shape == theirs.predict(dm, pred_leaf=True).shape
        )


@pytest.mark.parametrize("progress", [True, False])
def test_predictions_to_a_file_show_their_progress_when_asked(data, tmp_path, capsys,
                                                              progress):
    """predict_to_file draws the rows written on stderr (oocboost predict does on a
    terminal, not with --quiet), and nothing when told not to."""
    from oocboost.model.predict import predict_to_file

    X, score, _ = data
    model, cache = _train(X, score, tmp_path, "reg:squarederror", rounds=3)
    n = predict_to_file(model, cache, tmp_path / "p.csv", progress=progress)
    err = capsys.readouterr().err
    assert n == len(X)
    if progress:
        assert "predict" in err and "600/600" in err and "100.0%" in err
    else:
        assert err == ""
