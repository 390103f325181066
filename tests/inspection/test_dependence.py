"""oocboost.inspection.partial_dependence equals scikit-learn's brute method on the same
rows and grid, on arrays and streamed over a cache, and a categorical feature's
dependence equals the average by hand."""
import numpy as np
import pyarrow as pa
import pytest
from sklearn.inspection import partial_dependence as sk_partial_dependence

import oocboost
from oocboost.inspection import partial_dependence


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(700, 4))
    X[:, 3] = np.round(X[:, 3])  # few distinct values: the grid is them
    y = np.sin(X[:, 0]) + X[:, 1] * X[:, 3] + 0.1 * rng.normal(size=700)
    return X, y


def _estimators(X, y):
    y3 = np.digitize(y, np.quantile(y, [1 / 3, 2 / 3]))
    return [oocboost.GradientBoostingClassifier(n_estimators=10, max_depth=3).fit(X, y > 0),
            oocboost.GradientBoostingClassifier(n_estimators=6, max_depth=3).fit(X, y3),
            oocboost.RandomForestRegressor(n_estimators=4, max_depth=5,
                                           random_state=0).fit(X, y),
            oocboost.RandomForestClassifier(n_estimators=4, max_depth=5,
                                            random_state=0).fit(X, y > 0),
            oocboost.AdaBoostRegressor(n_estimators=5).fit(X, y)]


@pytest.mark.parametrize("features", [[0], [3], [0, 3]])
def test_equals_scikit_learn_on_arrays_and_on_a_cache(data, tmp_path, features):
    X, y = data
    cache = oocboost.build_cache(X, tmp_path / "c.oocb", label=y, block_rows=4096,
                                 quiet=True)
    for est in _estimators(X, y):
        theirs = sk_partial_dependence(est, X, features, grid_resolution=9, kind="both",
                                       method="brute")
        grid = theirs["grid_values"]
        ours = partial_dependence(est, X, features, grid_values=grid, kind="both")
        np.testing.assert_allclose(ours["average"], theirs["average"], rtol=1e-12)
        np.testing.assert_allclose(ours["individual"], theirs["individual"], rtol=1e-12)
        # the cache: bin codes instead of values, one block at a time
        streamed = partial_dependence(est.model_, cache, features, grid_values=grid)
        np.testing.assert_allclose(streamed["average"], theirs["average"], rtol=1e-12)
        assert "individual" not in streamed


def test_default_grids(data, tmp_path):
    X, y = data
    est = oocboost.GradientBoostingRegressor(n_estimators=5).fit(X, y)
    result = partial_dependence(est, X, 3)  # few distinct values: each once
    np.testing.assert_array_equal(result["grid_values"][0], np.unique(X[:, 3]))
    result = partial_dependence(est, X, 0, grid_resolution=11, percentiles=(0.1, 0.9))
    low, high = np.percentile(X[:, 0], [10, 90])
    np.testing.assert_allclose(result["grid_values"][0], np.linspace(low, high, 11))
    assert result["average"].shape == (1, 11)
    cache = oocboost.build_cache(X, tmp_path / "c.oocb", label=y, quiet=True)
    on_cache = partial_dependence(est, cache, 0, grid_resolution=11)
    grid = on_cache["grid_values"][0]
    assert len(grid) == 11 and np.all(np.diff(grid) > 0)
    # a grid between the 5% and 95% quantiles of the column, as read from its bins
    assert np.quantile(X[:, 0], 0.03) < grid[0] < np.quantile(X[:, 0], 0.08)
    assert np.quantile(X[:, 0], 0.92) < grid[-1] < np.quantile(X[:, 0], 0.97)


def test_categorical_feature_on_a_cache_equals_the_average_by_hand(tmp_path):
    rng = np.random.default_rng(2)
    n = 500
    city = rng.choice(["oslo", "paris", "rome"], size=n)
    x = rng.normal(size=n)
    y = x + (city == "rome") * 2.0 - (city == "oslo")
    table = pa.table({"x": x, "city": city, "label": y})
    cache = oocboost.build_cache(table, tmp_path / "c.oocb", label="label", quiet=True,
                                 block_rows=4096)
    model = oocboost.train({"objective": "reg:squarederror", "max_depth": 3}, cache, 8)
    result = partial_dependence(model, cache, "city")
    categories = list(result["grid_values"][0])
    assert sorted(categories) == ["oslo", "paris", "rome"]
    by_hand = [model.predict(pa.table({"x": x, "city": [c] * n})).mean()
               for c in categories]
    np.testing.assert_allclose(result["average"][0], by_hand, rtol=1e-12)


def test_refusals(data):
    X, y = data
    est = oocboost.GradientBoostingRegressor(n_estimators=2).fit(X, y)
    with pytest.raises(oocboost.ParameterError, match="not one of the model's"):
        partial_dependence(est, X, "nope")
    with pytest.raises(oocboost.ParameterError, match="one or two features"):
        partial_dependence(est, X, [0, 1, 2])
    with pytest.raises(oocboost.ParameterError, match="kind must be"):
        partial_dependence(est, X, 0, kind="mean")
    with pytest.raises(oocboost.ParameterError, match="numeric"):
        partial_dependence(est, X[:, :2], 0)


@pytest.mark.parametrize("walk", ["one walk per row", "point by point"])
def test_any_chunking_and_either_way_give_the_same_dependence(data, tmp_path, walk,
                                                              monkeypatch):
    """Predictions are made a chunk of rows at a time (PIECE_BYTES), by one walk of each
    tree per row when the model is plain trees, else point by point: the results do not
    depend on either."""
    from oocboost.inspection import dependence

    X, y = data
    cache = oocboost.build_cache(X, tmp_path / "c.oocb", label=y, block_rows=300,
                                 quiet=True)
    est = oocboost.GradientBoostingClassifier(n_estimators=8, max_depth=3).fit(X, y > 0)
    whole = partial_dependence(est, X, [0, 3], grid_resolution=6, kind="both")
    on_cache = partial_dependence(est.model_, cache, [0, 3], grid_resolution=6)
    if walk == "point by point":
        monkeypatch.setattr(dependence, "_grid_walk", lambda *a, **k: None)
    monkeypatch.setattr(dependence, "PIECE_BYTES", 7 * 3 * 8 * 36 * 2)   # 7 rows a chunk
    chunked = partial_dependence(est, X, [0, 3], grid_resolution=6, kind="both")
    np.testing.assert_array_equal(chunked["individual"], whole["individual"])
    # (the average sums the chunks' sums: rounding differs with the chunks)
    np.testing.assert_allclose(chunked["average"], whole["average"], rtol=1e-13)
    np.testing.assert_allclose(
        partial_dependence(est.model_, cache, [0, 3], grid_resolution=6)["average"],
        on_cache["average"], rtol=1e-13)


def test_a_missing_grid_value_takes_the_default_side(data, tmp_path, monkeypatch):
    """A grid point of NaN (the missing code on a cache) is predicted as missing values
    are, each split's default side: the same dependence either way."""
    from oocboost.inspection import dependence

    X, y = data
    X = X.copy()
    X[::7, 0] = np.nan                       # missing values in training: learned sides
    cache = oocboost.build_cache(X, tmp_path / "c.oocb", label=y, quiet=True)
    model = oocboost.GradientBoostingRegressor(n_estimators=6, max_depth=3).fit(
        cache).model_
    grid = [np.array([np.nan, -0.5, 0.5])]
    results = [partial_dependence(model, source, [0], grid_values=grid, kind="average")
               for source in (X, cache)]
    monkeypatch.setattr(dependence, "_grid_walk", lambda *a, **k: None)
    for source, fast in zip((X, cache), results):
        slow = partial_dependence(model, source, [0], grid_values=grid, kind="average")
        np.testing.assert_array_equal(fast["average"], slow["average"])
    by_hand = X.copy()
    by_hand[:, 0] = np.nan
    np.testing.assert_allclose(results[0]["average"][0, 0], model.predict(by_hand).mean(),
                               rtol=1e-12)
