"""model/formats/onnx_model.py: models exported to ONNX predict, in onnxruntime, what
they predict in oocboost (margins, predictions and class probabilities; missing values
and categorical features), and what ONNX cannot express is refused by name."""
import numpy as np
import onnxruntime as ort
import pytest

import oocboost
from oocboost.errors import ModelError

from ...cli_runner import run_cli
from .cases import cases_but, categorical_model, categorical_params, data, label


def _session(model, tmp_path):
    path = tmp_path / "model.onnx"
    assert model.export(path) == "onnx"
    return ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])


def _run(session, X):
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(None, {"X": X})))


@pytest.mark.parametrize("kind,make", cases_but())
def test_onnxruntime_predicts_what_oocboost_predicts(kind, make, tmp_path):
    X, signal = data(n=1200)
    est = make().fit(X, label(kind, signal))
    model = est.get_booster()
    out = _run(_session(model, tmp_path), X)
    np.testing.assert_allclose(out["prediction"], model.predict(X), rtol=1e-12,
                               atol=1e-12)
    margin = model.predict(X, output_margin=True).reshape(out["margin"].shape)
    np.testing.assert_allclose(out["margin"], margin, rtol=1e-12, atol=1e-12)
    if hasattr(est, "predict_proba"):
        np.testing.assert_allclose(out["probabilities"], est.predict_proba(X),
                                   rtol=1e-12, atol=1e-12)


def test_softmax_and_multi_target_outputs(tmp_path):
    X, signal = data(n=1000)
    cache = oocboost.build_cache(X, str(tmp_path / "c.oocb"),
                                 label=np.digitize(signal, [0.0, 1.0]), quiet=True)
    softmax = oocboost.train({"objective": "multi:softmax", "num_class": 3,
                              "max_depth": 3}, cache, 4)
    out = _run(_session(softmax, tmp_path), X)
    np.testing.assert_array_equal(out["prediction"], softmax.predict(X))
    assert out["prediction"].shape == (1000,) and out["probabilities"].shape == (1000, 3)
    labels = np.column_stack([signal > 0.5, signal > 1.5]).astype(int)
    multi = oocboost.GradientBoostingRegressor(
        n_estimators=4, max_depth=3, objective="binary:logistic").fit(X, labels)
    out = _run(_session(multi.get_booster(), tmp_path), X)
    assert out["prediction"].shape == (1000, 2)
    np.testing.assert_allclose(out["prediction"], multi.predict(X), rtol=1e-12)


@pytest.mark.parametrize("make", categorical_params())
def test_categorical_splits_are_set_membership(make, tmp_path):
    frame, model = categorical_model(make)
    session = _session(model, tmp_path)
    encoded = model.export_input(frame)
    assert set(np.unique(encoded[:, 3][~np.isnan(encoded[:, 3])])) <= {0, 1, 2, 3, 4}
    np.testing.assert_allclose(_run(session, encoded)["prediction"], model.predict(frame),
                               rtol=1e-12, atol=1e-12)
    meta = session.get_modelmeta().custom_metadata_map
    assert '"city": [' in meta["categories"] and meta["objective"] == "reg:squarederror"
    unseen = frame.head(3).assign(city=["rome", "rome", None])
    np.testing.assert_allclose(_run(session, model.export_input(unseen))["prediction"],
                               model.predict(unseen), rtol=1e-12)


def test_the_export_command_writes_onnx(tmp_path):

    X, signal = data(n=400)
    model = oocboost.GradientBoostingRegressor(n_estimators=3, max_depth=3).fit(
        X, signal).get_booster()
    model.save_model(tmp_path / "model.json")
    done = run_cli("export", tmp_path / "model.json", "-o", tmp_path / "m.onnx")
    assert done.returncode == 0, done.stderr
    assert "ONNX model" in done.stdout
    out = _run(ort.InferenceSession(str(tmp_path / "m.onnx")), X)
    np.testing.assert_allclose(out["prediction"], model.predict(X), rtol=1e-12)


@pytest.mark.parametrize("module,path", [("onnx", "m.onnx"), ("treelite", "m.tl")])
def test_a_missing_export_package_names_the_extra(module, path, tmp_path, monkeypatch):
    import sys

    X, signal = data(n=300)
    model = oocboost.GradientBoostingRegressor(n_estimators=2).fit(X, signal).get_booster()
    monkeypatch.setitem(sys.modules, module, None)          # as if not installed
    with pytest.raises(ModelError, match=rf"needs the {module} package: pip install "
                                         r"'oocboost\[export\]'"):
        model.export(tmp_path / path)
    assert not (tmp_path / path).exists()
