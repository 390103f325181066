"""oocboost.inspection.feature_importance: XGBoost's split statistics by name, and the
mean |SHAP value| streamed over the data, equal to the contributions by hand."""
import numpy as np
import pytest

import oocboost
from oocboost.inspection import feature_importance


@pytest.fixture(scope="module")
def fitted():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(400, 3))
    y = (X[:, 0] + 0.5 * X[:, 1] > 0).astype(int) + (X[:, 1] > 1)
    return X, oocboost.GradientBoostingClassifier(n_estimators=5, max_depth=3).fit(X, y)


def test_split_statistics_are_the_models(fitted):
    X, est = fitted
    for kind in ("weight", "gain", "cover", "total_gain", "total_cover"):
        got = feature_importance(est, kind)
        assert list(got) == list(est.model_.feature_names)
        np.testing.assert_array_equal(list(got.values()), est.model_.feature_importance(kind))


def test_shap_is_the_mean_absolute_contribution(fitted, tmp_path):
    pd = pytest.importorskip("pandas")
    X, est = fitted
    phi = est.model_.predict_contributions(X)  # (rows, 3 classes, 3 features + bias)
    by_hand = np.abs(phi[:, :, :-1]).sum(axis=1).mean(axis=0)
    got = feature_importance(est, "shap", data=X)
    np.testing.assert_allclose(list(got.values()), by_hand, rtol=1e-12)
    assert max(got, key=got.get) == est.model_.feature_names[0]
    path = tmp_path / "x.csv"
    pd.DataFrame(X, columns=est.model_.feature_names).to_csv(path, index=False)
    np.testing.assert_allclose(list(feature_importance(est.model_, "shap",
                                                       data=str(path)).values()),
                               by_hand, rtol=1e-12)


def test_refusals(fitted):
    X, est = fitted
    with pytest.raises(oocboost.ParameterError, match="kind must be one of"):
        feature_importance(est, "split")
    with pytest.raises(oocboost.ParameterError, match="pass data"):
        feature_importance(est, "shap")
    with pytest.raises(oocboost.ParameterError, match="trees only"):
        feature_importance(est, "gain", data=X)
