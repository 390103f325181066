"""Forest estimators' ``fit(..., init_model=)`` (XGBoost's ``xgb_model=`` too): the trees
of a saved forest are kept and ``n_estimators`` more are grown, as one fit of them all."""
import numpy as np
import pytest

import oocboost


def _data(n=2000, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5))
    y = X[:, 0] + np.sin(X[:, 1]) + 0.3 * rng.normal(size=n)
    return X, y


@pytest.mark.parametrize("cls,kw", [
    (oocboost.RandomForestRegressor, {}),
    (oocboost.ExtraTreesClassifier, {}),
    (oocboost.BaggingRegressor, {}),
])
def test_continuing_equals_growing_every_tree_at_once(tmp_path, cls, kw):
    X, y = _data()
    if cls is oocboost.ExtraTreesClassifier:
        y = np.where(y > 0, "up", "down")
    first = cls(n_estimators=4, random_state=3, **kw).fit(X, y)
    first.save_model(tmp_path / "first.json")
    more = cls(n_estimators=5, **kw).fit(X, y, init_model=str(tmp_path / "first.json"))
    once = cls(n_estimators=9, random_state=3, **kw).fit(X, y)
    assert more.model_.n_trees == 9
    predict = "predict_proba" if hasattr(once, "predict_proba") else "predict"
    np.testing.assert_array_equal(getattr(more, predict)(X), getattr(once, predict)(X))
    # the caller's model is left as it was
    assert first.model_.n_trees == 4
    alias = cls(n_estimators=5, **kw).fit(X, y, xgb_model=first)
    np.testing.assert_array_equal(getattr(alias, predict)(X), getattr(once, predict)(X))


def test_new_rows_are_binned_with_the_models_edges_and_a_cache_must_match(tmp_path):
    X, y = _data()
    X_new, y_new = _data(seed=1)
    first = oocboost.RandomForestRegressor(n_estimators=3, random_state=0).fit(X, y)
    more = oocboost.RandomForestRegressor(n_estimators=2).fit(X_new, y_new, init_model=first)
    assert more.model_.bin_mapper == first.model_.bin_mapper
    np.testing.assert_array_equal(more.model_.trees[0].threshold,
                                  first.model_.trees[0].threshold)
    other = oocboost.build_cache(X_new, tmp_path / "other", label=y_new, quiet=True)
    with pytest.raises(oocboost.ParameterError, match="other bins"):
        oocboost.RandomForestRegressor(n_estimators=2).fit(other, init_model=first)


@pytest.mark.parametrize("make,init,message", [
    (lambda: oocboost.RandomForestRegressor(n_estimators=2),
     lambda X, y: oocboost.ExtraTreesRegressor(n_estimators=2).fit(X, y), "continues only"),
    (lambda: oocboost.DecisionTreeRegressor(),
     lambda X, y: oocboost.DecisionTreeRegressor().fit(X, y), "one tree"),
    (lambda: oocboost.RandomForestClassifier(n_estimators=2),
     lambda X, y: oocboost.RandomForestRegressor(n_estimators=2).fit(X, y), "regressor"),
])
def test_another_kind_of_model_is_refused(make, init, message):
    X, y = _data(n=300)
    with pytest.raises(oocboost.ParameterError, match=message):
        make().fit(X, (y > 0).astype(int), init_model=init(X, y))


def test_other_classes_are_refused():
    X, y = _data(n=300)
    first = oocboost.RandomForestClassifier(n_estimators=2).fit(X, np.where(y > 0, "a", "b"))
    with pytest.raises(oocboost.ParameterError, match="classes"):
        oocboost.RandomForestClassifier(n_estimators=2).fit(
            X, np.where(y > 0, "a", "c"), init_model=first)
