"""model/formats/treelite_model.py: models exported to Treelite predict, in Treelite's GTIL
and compiled by TL2cgen, what they predict in oocboost (missing values, categorical
features, every link Treelite has), and what Treelite cannot express is refused by
name."""
import numpy as np
import pytest
import tl2cgen
import treelite

import oocboost

from .cases import CATEGORICAL_MAKERS, cases_but, categorical_model, data, label


def _treelite(model, tmp_path):
    path = tmp_path / "model.tl"
    assert model.export(path) == "treelite"
    return treelite.Model.deserialize(str(path))


def _flat(values, n_rows):
    return np.asarray(values).reshape(n_rows, -1)


@pytest.mark.parametrize("kind,make", cases_but())
def test_treelite_predicts_what_oocboost_predicts(kind, make, tmp_path):
    X, signal = data(n=1200)
    model = make().fit(X, label(kind, signal)).get_booster()
    predicted = treelite.gtil.predict(_treelite(model, tmp_path), X)
    # Treelite's softmax rounds through float32 (its probabilities differ by 1e-8)
    softmax = model.objective in ("multi:softprob", "multi:softmax")
    np.testing.assert_allclose(_flat(predicted, len(X)), _flat(model.predict(X), len(X)),
                               rtol=1e-6 if softmax else 1e-12, atol=1e-12)


def test_categorical_splits_go_by_category_position(tmp_path):
    frame, model = categorical_model(CATEGORICAL_MAKERS["boosting"])
    predicted = treelite.gtil.predict(_treelite(model, tmp_path), model.export_input(frame))
    np.testing.assert_allclose(predicted.ravel(), model.predict(frame), rtol=1e-12)


def test_tl2cgen_compiles_the_export_into_the_same_predictions(tmp_path):
    X, signal = data(n=1000)
    model = oocboost.GradientBoostingClassifier(n_estimators=6, max_depth=4).fit(
        X, signal > 0.5).get_booster()
    library = tmp_path / "model.so"
    tl2cgen.export_lib(_treelite(model, tmp_path), toolchain="gcc", libpath=str(library))
    predicted = tl2cgen.Predictor(str(library)).predict(tl2cgen.DMatrix(X))
    np.testing.assert_allclose(predicted.ravel(), model.predict(X), rtol=1e-12)
