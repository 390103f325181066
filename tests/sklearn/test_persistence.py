"""sklearn/persistence.py: ``est.save_model`` / ``Estimator.load_model`` give back an
estimator that predicts, and is described, as the fitted one (classes, features,
parameters), from a file every CLI command reads; a file of another estimator or with a
tampered record is refused by name."""
import json
import pickle

import numpy as np
import pandas as pd
import pytest

import oocboost
from oocboost.errors import ModelError

from ..cli_runner import run_cli


def _frame(n=600, seed=0):
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame(rng.normal(size=(n, 3)), columns=["age", "income", "score"])
    frame.loc[rng.random(n) < 0.1, "income"] = np.nan
    signal = frame["age"] + np.nan_to_num(frame["income"])
    return frame, signal.to_numpy()


CASES = [
    ("boosting-classifier", lambda: oocboost.GradientBoostingClassifier(
        n_estimators=5, max_depth=3, learning_rate=0.2), "classes"),
    ("boosting-regressor", lambda: oocboost.GradientBoostingRegressor(
        n_estimators=5, max_depth=3), "number"),
    ("forest-classifier", lambda: oocboost.RandomForestClassifier(
        n_estimators=3, max_depth=4, oob_score=True), "classes"),
    ("adaboost", lambda: oocboost.AdaBoostClassifier(n_estimators=3), "classes"),
    ("tree-regressor", lambda: oocboost.DecisionTreeRegressor(max_depth=4), "number"),
    ("hoeffding", lambda: oocboost.HoeffdingTreeClassifier(grace_period=50), "classes"),
]


def _label(kind, signal):
    if kind == "classes":
        return np.where(signal > 0.3, "yes", np.where(signal > -0.5, "maybe", "no"))
    return 2 * signal


@pytest.mark.parametrize("named", [True, False], ids=["frame", "array"])
@pytest.mark.parametrize("name,make,kind", CASES, ids=[c[0] for c in CASES])
def test_a_saved_estimator_loads_back_fitted(name, make, kind, named, tmp_path):
    frame, signal = _frame()
    X = frame if named else frame.to_numpy()
    est = make().fit(X, _label(kind, signal))
    path = tmp_path / "model.json"
    est.save_model(path)
    loaded = type(est).load_model(path)
    assert loaded is not est and loaded.get_params() == est.get_params()
    np.testing.assert_array_equal(loaded.predict(X), est.predict(X))
    assert loaded.n_features_in_ == 3
    assert hasattr(loaded, "feature_names_in_") == hasattr(est, "feature_names_in_")
    if named:
        assert list(loaded.feature_names_in_) == ["age", "income", "score"]
    if kind == "classes":
        np.testing.assert_array_equal(loaded.classes_, est.classes_)
        assert loaded.classes_.dtype == est.classes_.dtype
        np.testing.assert_allclose(loaded.predict_proba(X), est.predict_proba(X),
                                   rtol=1e-15)
    if hasattr(est, "oob_score_"):
        assert loaded.oob_score_ == est.oob_score_
    # the same file is a model file for the library and the command line
    assert oocboost.load_model(path).n_trees == est.get_booster().n_trees
    # and pickling keeps working, of the fitted and of the loaded estimator
    for fitted in (est, loaded):
        np.testing.assert_array_equal(pickle.loads(pickle.dumps(fitted)).predict(X),
                                      est.predict(X))


def test_the_instance_spelling_loads_in_place(tmp_path):
    frame, signal = _frame()
    est = oocboost.GradientBoostingClassifier(n_estimators=4, max_depth=2).fit(
        frame, signal > 0)
    est.save_model(tmp_path / "m.json")
    fresh = oocboost.GradientBoostingClassifier()
    assert fresh.load_model(tmp_path / "m.json") is fresh      # XGBoost's spelling
    assert fresh.n_estimators == 4 and fresh.classes_.dtype == bool
    np.testing.assert_array_equal(fresh.predict(frame), est.predict(frame))


def test_a_model_file_without_an_estimator_gives_what_the_model_knows(tmp_path):
    frame, signal = _frame()
    cache = oocboost.build_cache(frame.assign(label=(signal > 0).astype(int)),
                                 str(tmp_path / "c.oocb"), label="label", quiet=True)
    model = oocboost.train({"objective": "binary:logistic", "max_depth": 3}, cache, 4)
    model.classes, model.n_classes = [0, 1], 2
    model.save_model(tmp_path / "trained.json")
    est = oocboost.GradientBoostingClassifier.load_model(tmp_path / "trained.json")
    np.testing.assert_array_equal(est.classes_, [0, 1])
    assert list(est.feature_names_in_) == ["age", "income", "score"]
    np.testing.assert_allclose(est.predict_proba(frame)[:, 1], model.predict(frame))


def test_another_estimators_file_is_refused_by_name(tmp_path):
    frame, signal = _frame()
    oocboost.GradientBoostingRegressor(n_estimators=2).fit(frame, signal).save_model(
        tmp_path / "reg.json")
    with pytest.raises(ModelError, match=r"holds a GradientBoostingRegressor: load it with "
                                         r"oocboost.GradientBoostingRegressor.load_model"):
        oocboost.RandomForestRegressor.load_model(tmp_path / "reg.json")


def test_a_tampered_record_is_refused(tmp_path):
    frame, signal = _frame()
    est = oocboost.GradientBoostingClassifier(n_estimators=2).fit(frame, signal > 0)
    est.save_model(tmp_path / "m.json")
    doc = json.loads((tmp_path / "m.json").read_text())
    fitted = doc["attributes"]["estimator"]["fitted"]
    fitted["classes_"]["dtype"] = "<M8[ns]"
    (tmp_path / "bad.json").write_text(json.dumps(doc))
    with pytest.raises(ModelError, match=r"'classes_' has an invalid dtype '<M8\[ns\]'"):
        oocboost.GradientBoostingClassifier.load_model(tmp_path / "bad.json")
    fitted["classes_"] = {"ndarray": [False, True], "dtype": "|b1"}
    fitted["__class__"] = {"value": 1}
    (tmp_path / "bad.json").write_text(json.dumps(doc))
    with pytest.raises(ModelError, match=r"'__class__' is not a fitted attribute's name"):
        oocboost.GradientBoostingClassifier.load_model(tmp_path / "bad.json")


def test_the_cli_predicts_from_an_estimators_file(tmp_path):
    frame, signal = _frame(n=200)
    est = oocboost.GradientBoostingRegressor(n_estimators=3).fit(frame, signal)
    est.save_model(tmp_path / "m.json")
    frame.to_csv(tmp_path / "rows.csv", index=False)
    done = run_cli("predict", tmp_path / "m.json", tmp_path / "rows.csv", "-o",
                   tmp_path / "p.csv")
    assert done.returncode == 0, done.stderr
    predicted = pd.read_csv(tmp_path / "p.csv").iloc[:, -1].to_numpy()
    np.testing.assert_allclose(predicted, est.predict(frame), rtol=1e-6)
