"""What no export format can express is refused by each of them by name, before anything
is written (formats/common.py and each adapter)."""
import pytest

import oocboost
from oocboost.errors import ModelError

from .cases import data

FORMATS = [("m.txt", None, "LightGBM's text format"), ("m.json", "xgboost", "XGBoost's"),
           ("m.ubj", None, "XGBoost's"), ("m.onnx", None, "ONNX"), ("m.tl", None, "Treelite")]


@pytest.fixture(scope="module")
def adaboost_r2():
    X, signal = data(n=300)
    return oocboost.AdaBoostRegressor(n_estimators=3).fit(X, signal).get_booster()


@pytest.mark.parametrize("name,fmt,says", FORMATS, ids=[f[0] for f in FORMATS])
def test_adaboost_r2s_weighted_median_is_refused(name, fmt, says, adaboost_r2, tmp_path):
    (tmp_path / name).write_bytes(b"before")
    with pytest.raises(ModelError, match=rf"{says}.* cannot express AdaBoost.R2's weighted "
                                         r"median"):
        adaboost_r2.export(tmp_path / name, format=fmt)
    assert (tmp_path / name).read_bytes() == b"before"      # left as it was
