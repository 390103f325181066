"""SciPy sparse matrices as input (CSR, CSC, COO): the cache, every estimator's fit and
predict, and Model.predict give what the dense matrix ``X.toarray()`` gives, densified a
block at a time."""
import numpy as np
import pytest
import scipy.sparse as sp

import oocboost
from oocboost.cache.ingest.memory import sparse_chunk_rows


def _data(n_rows=1200, n_features=8, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_rows, n_features))
    X[rng.random(X.shape) < 0.6] = 0.0
    X[5, 2] = np.nan                    # a stored NaN is missing, as in the dense matrix
    y = (np.nan_to_num(X[:, 0]) + X[:, 1] > 0).astype(int)
    return X, y


@pytest.mark.parametrize("kind", ["csr", "csc", "coo"])
def test_cache_from_a_sparse_matrix_equals_the_dense_one(tmp_path, kind):
    X, y = _data()
    sparse = sp.csr_matrix(X).asformat(kind)
    a = oocboost.build_cache(sparse, tmp_path / "s", label=y, block_rows=500, quiet=True)
    b = oocboost.build_cache(X, tmp_path / "d", label=y, block_rows=500, quiet=True)
    assert a.bin_mapper.to_dict() == b.bin_mapper.to_dict()
    for ba, bb in zip(a.iter_blocks(prefetch=0), b.iter_blocks(prefetch=0)):
        np.testing.assert_array_equal(ba.codes, bb.codes)
        np.testing.assert_array_equal(ba.label, bb.label)


@pytest.mark.parametrize("estimator", [
    oocboost.GradientBoostingClassifier(n_estimators=5),
    oocboost.RandomForestClassifier(n_estimators=3, random_state=0),
    oocboost.AdaBoostClassifier(n_estimators=3, random_state=0),
], ids=lambda e: type(e).__name__)
def test_estimators_fit_and_predict_sparse_as_dense(estimator):
    from sklearn.base import clone

    X, y = _data()
    dense = clone(estimator).fit(X, y)
    sparse = clone(estimator).fit(sp.csr_matrix(X), y)
    np.testing.assert_array_equal(sparse.predict_proba(sp.csc_matrix(X)),
                                  dense.predict_proba(X))
    np.testing.assert_array_equal(sparse.predict(sp.csr_matrix(X)), dense.predict(X))
    with pytest.raises(oocboost.ParameterError, match="X has 7 features"):
        sparse.predict(sp.csr_matrix(X[:, :7]))


def test_model_predicts_a_sparse_matrix_in_blocks(monkeypatch):
    import oocboost.model.predict as predict_module

    X, y = _data(n_rows=3000)
    model = oocboost.GradientBoostingRegressor(n_estimators=5).fit(X, y).model_
    monkeypatch.setattr(predict_module, "sparse_chunk_rows", lambda n, cap: 700)
    np.testing.assert_array_equal(model.predict(sp.csr_matrix(X)), model.predict(X))
    assert sparse_chunk_rows(10 ** 6) == 256 and sparse_chunk_rows(8) == 65536
