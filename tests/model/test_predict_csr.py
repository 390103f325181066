"""Prediction over CSR rows without densifying them (``kernels/predict_csr.py``): the
margins equal, bit for bit, those of the dense matrix, for boosting and forests, with
stored zeros and NaNs, duplicate entries and unsorted indices; leaves, contributions
and models that read dense rows take the densified path, with the same results."""
import numpy as np
import pytest
import scipy.sparse as sp

import oocboost
from oocboost.kernels.predict_csr import compact_trees, gather_columns, used_columns


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


def test_gathered_columns_are_the_rows_entries_of_the_used_columns():
    """gather_columns against its naive twin: the dense rows, the used columns taken."""
    X = sp.random(50, 30, density=0.2, random_state=3, format="csr")
    X.data[::7] = np.nan
    position = np.full(30, -1, np.int64)
    used = np.array([2, 5, 6, 17, 29])
    position[used] = np.arange(len(used))
    out = np.zeros((50, len(used)))
    gather_columns(X.indptr, X.indices, X.data, position, out)
    np.testing.assert_array_equal(out, X.toarray()[:, used])


def test_the_compact_trees_read_only_the_columns_split_on(data):
    X, y = data
    model = oocboost.GradientBoostingClassifier(n_estimators=3, max_depth=2).fit(X, y)
    flat = model.model_._flat_trees()
    used = used_columns(flat)
    splits = {int(f) for t in model.model_.trees for f, left in zip(t.feature, t.left)
              if left >= 0}
    assert used.tolist() == sorted(splits)
    position, compact = compact_trees(flat, X.shape[1])
    assert position[used].tolist() == list(range(len(used)))
    from oocboost.kernels.predict import raw_margins
    out = np.empty((len(X), 1))
    out[:] = model.model_.base_margin          # the margins start there, as the model's
    raw_margins(compact, np.ascontiguousarray(X[:, used]), 0, flat.n_trees, out)
    np.testing.assert_array_equal(out, model.model_.predict_margin(X))
