"""``fit(..., init_model=)`` (LightGBM's name; XGBoost's ``xgb_model=``) on the boosting
estimators: 5 rounds and then 3 more are the 8 rounds of one fit; the model may be an
estimator, a ``Model`` or a file; new rows are binned on the model's edges; a model of
other classes is refused."""
import numpy as np
import pytest

import oocboost
from oocboost.errors import ParameterError


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(11)
    X = rng.normal(size=(1500, 4))
    score = X[:, 0] - X[:, 1] * X[:, 2] + rng.normal(0, 0.5, 1500)
    return X, score, np.digitize(score, [-0.5, 0.7])


def _margins(est, X):
    return est.get_booster().predict(X, output_margin=True)


@pytest.mark.parametrize("kind", ["regressor", "binary", "multiclass"])
def test_continued_rounds_are_the_rounds_of_one_fit(data, kind, tmp_path):
    X, score, y3 = data
    if kind == "regressor":
        make, y = oocboost.GradientBoostingRegressor, score
    else:
        make = oocboost.GradientBoostingClassifier
        y = (score > 0).astype(int) if kind == "binary" else y3
    whole = make(n_estimators=8, max_depth=3).fit(X, y)
    first = make(n_estimators=5, max_depth=3).fit(X, y)
    more = make(n_estimators=3, max_depth=3).fit(X, y, init_model=first)
    assert more.get_booster().n_rounds == 8
    np.testing.assert_allclose(_margins(more, X), _margins(whole, X), rtol=1e-9,
                               atol=1e-12)
    first.save_model(tmp_path / "first.json")
    from_file = make(n_estimators=3, max_depth=3).fit(X, y,
                                                      xgb_model=tmp_path / "first.json")
    np.testing.assert_allclose(_margins(from_file, X), _margins(whole, X), rtol=1e-9,
                               atol=1e-12)
    booster = make(n_estimators=3, max_depth=3).fit(X, y,
                                                    init_model=first.get_booster())
    np.testing.assert_array_equal(_margins(booster, X), _margins(more, X))


def test_new_rows_are_binned_on_the_models_edges(data):
    """Rows from elsewhere (shifted, a quarter of them) would get other edges of their
    own; the continued model's first trees still predict as they did."""
    X, score, _ = data
    first = oocboost.GradientBoostingRegressor(n_estimators=4, max_depth=3).fit(X, score)
    shifted = X[:400] + 0.3
    more = oocboost.GradientBoostingRegressor(n_estimators=2, max_depth=3).fit(
        shifted, score[:400], init_model=first)
    old = first.get_booster()
    new = more.get_booster()
    assert new.bin_mapper == old.bin_mapper
    np.testing.assert_allclose(new.predict(X, output_margin=True, iteration_range=(0, 4)),
                               old.predict(X, output_margin=True), rtol=1e-12)


def test_a_cache_continues_too(data, tmp_path):
    X, score, _ = data
    cache = oocboost.build_cache(X, tmp_path / "c.oocb", label=score, quiet=True)
    first = oocboost.GradientBoostingRegressor(n_estimators=5, max_depth=3).fit(cache)
    more = oocboost.GradientBoostingRegressor(n_estimators=3, max_depth=3).fit(
        cache, init_model=first)
    whole = oocboost.GradientBoostingRegressor(n_estimators=8, max_depth=3).fit(cache)
    np.testing.assert_allclose(_margins(more, X), _margins(whole, X), rtol=1e-9,
                               atol=1e-12)


def test_refusals(data):
    X, score, y3 = data
    labels = np.array(["a", "b", "c"])[y3]
    first = oocboost.GradientBoostingClassifier(n_estimators=2).fit(X, labels)
    with pytest.raises(ParameterError, match="trained on the classes"):
        oocboost.GradientBoostingClassifier(n_estimators=2).fit(
            X, np.where(labels == "c", "d", labels), init_model=first)
    with pytest.raises(ParameterError, match="give one"):
        oocboost.GradientBoostingClassifier(n_estimators=2).fit(
            X, labels, init_model=first, xgb_model=first)
    with pytest.raises(ParameterError, match="init_model must be a Model"):
        oocboost.GradientBoostingRegressor(n_estimators=2).fit(X, score, init_model=3)
