"""Prediction over CSR rows without densifying them (``kernels/predict_csr.py``): the
margins equal, bit for bit, those of the dense matrix, for boosting and forests, with
stored zeros and NaNs, duplicate entries and unsorted indices; leaves, contributions
and models that read dense rows take the densified path, with the same results."""
import numpy as np
import pytest
import scipy.sparse as sp

import oocboost
from oocboost.kernels.predict_csr import _csr_value


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(11)
    X = sp.random(3000, 40, density=0.1, random_state=11, format="csr")
    X.data = np.round(X.data * 8, 1)          # some stored values are 0.0
    X = X.toarray()
    X[:, 0] = rng.normal(size=3000)
    X[rng.random(3000) < 0.05, 1] = np.nan    # stored NaNs: missing
    y = (X[:, 0] + X[:, 2] - X[:, 3] + rng.normal(size=3000) * 0.3 > 0.2).astype(float)
    return X, y


def _csr(X):
    """X as CSR with NaN entries stored (scipy keeps them)."""
    return sp.csr_matrix(X)


MODELS = {
    "binary": (oocboost.GradientBoostingClassifier, {"n_estimators": 12, "max_depth": 5}),
    "multiclass": (oocboost.GradientBoostingClassifier, {"n_estimators": 6, "max_depth": 4}),
    "forest": (oocboost.RandomForestClassifier, {"n_estimators": 8, "max_depth": 8,
                                                 "random_state": 0}),
    "regression": (oocboost.GradientBoostingRegressor, {"n_estimators": 10,
                                                        "max_depth": 6}),
}


@pytest.mark.parametrize("name", list(MODELS))
def test_csr_margins_equal_the_dense_matrixs(data, name):
    X, y = data
    estimator, kwargs = MODELS[name]
    labels = y + (X[:, 4] > 0.5) if name == "multiclass" else (
        X[:, 0] * 2 + X[:, 2] if name == "regression" else y)
    model = estimator(**kwargs).fit(X, labels).model_
    assert model.walks_csr()
    Xs = _csr(X)
    want = model.predict(X, output_margin=True)
    np.testing.assert_array_equal(model.predict(Xs, output_margin=True), want)
    np.testing.assert_array_equal(model.predict(Xs), model.predict(X))
    got = model.predict_margin_csr(Xs[:7])
    np.testing.assert_array_equal(got, model.predict_margin(X[:7]))
    if name == "binary":
        rounds = (2, 9)
        np.testing.assert_array_equal(
            model.predict(Xs, output_margin=True, iteration_range=rounds),
            model.predict(X, output_margin=True, iteration_range=rounds))


def test_duplicates_and_unsorted_indices_read_as_toarray(data):
    X, y = data
    model = oocboost.GradientBoostingClassifier(n_estimators=5, max_depth=4).fit(X, y)
    model = model.model_
    rows = [0, 0, 1, 2, 2, 2]
    cols = [3, 0, 5, 2, 2, 0]          # unsorted, (2, 2) twice: summed
    vals = [1.5, -0.3, 2.0, 0.4, 0.7, 1.0]
    coo = sp.coo_matrix((vals, (rows, cols)), shape=(3, X.shape[1]))
    unsorted = sp.csr_matrix((np.array(vals), np.array(cols), np.array([0, 2, 3, 6])),
                             shape=(3, X.shape[1]))
    assert not unsorted.has_canonical_format
    dense = coo.toarray()
    for m in (coo, unsorted):
        np.testing.assert_array_equal(model.predict(m, output_margin=True),
                                      model.predict(dense, output_margin=True))
    assert not unsorted.has_canonical_format          # the caller's matrix is untouched


def test_leaves_and_contributions_take_the_dense_rows(data):
    X, y = data
    model = oocboost.GradientBoostingClassifier(n_estimators=4, max_depth=3).fit(X, y)
    model = model.model_
    Xs = _csr(X[:300])
    np.testing.assert_array_equal(model.predict(Xs, pred_leaf=True),
                                  model.predict(X[:300], pred_leaf=True))
    np.testing.assert_allclose(model.predict(Xs, pred_contribs=True),
                               model.predict(X[:300], pred_contribs=True), rtol=0, atol=0)


def test_the_value_lookup_is_the_rows_entry_or_zero():
    indices = np.array([1, 4, 9, 10, 30], np.int32)
    data = np.array([0.5, np.nan, 0.0, -2.0, 7.0])
    row = dict(zip(indices.tolist(), data.tolist()))
    for f in range(35):
        got = _csr_value(indices, data, 0, len(indices), f)
        want = row.get(f, 0.0)
        assert (got == want) or (np.isnan(got) and np.isnan(want)), f
    assert _csr_value(indices, data, 2, 4, 4) == 0.0       # only entries 2..3 are the row
    assert _csr_value(indices, data, 3, 3, 10) == 0.0      # an empty row
