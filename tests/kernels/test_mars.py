"""The MARS kernels against NumPy twins: term values (raw with missing values, and over
bin codes through representative values) and the candidates' per-bin sums."""
import numpy as np
import pytest

from oocboost.kernels import mars as km
from oocboost.kernels.codes import read_only


def _terms():
    # intercept; h(x0 - 0.2); h(0.5 - x1) * h(x0 - 0.2); h(x2 + 1)
    offset = np.array([0, 0, 1, 3, 4], np.int64)
    feature = np.array([0, 1, 0, 2], np.int64)
    knot = np.array([0.2, 0.5, 0.2, -1.0])
    sign = np.array([1.0, -1.0, 1.0, 1.0])
    return offset, feature, knot, sign


def _twin(X, offset, feature, knot, sign):
    out = np.ones((len(offset) - 1, len(X)))
    for m in range(len(offset) - 1):
        for h in range(offset[m], offset[m + 1]):
            z = sign[h] * (X[:, feature[h]] - knot[h])
            out[m] *= np.where(np.isnan(z) | (z <= 0), 0.0, z)
    return out


@pytest.mark.parametrize("n_threads", [1, 2])
def test_basis_matches_twin(n_threads):
    import numba

    numba.set_num_threads(n_threads)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 3))
    X[rng.random(X.shape) < 0.1] = np.nan
    out = np.empty((4, 300))
    km.basis_raw(X, *_terms(), out)
    np.testing.assert_allclose(out, _twin(X, *_terms()), rtol=1e-15)
    codes = rng.integers(0, 8, size=(3, 300)).astype(np.uint8)
    rep = rng.normal(size=(3, 8))
    rep[:, 7] = np.nan                       # the missing code
    km.basis_binned(codes, rep, *_terms(), out)
    Xr = np.column_stack([rep[f, codes[f]] for f in range(3)])
    np.testing.assert_allclose(out, _twin(Xr, *_terms()), rtol=1e-15)


def test_candidate_histograms_match_twin():
    rng = np.random.default_rng(1)
    n, M, J = 200, 3, 2
    # read-only, as a cache block's codes: the kernel specialization the engine calls
    codes = read_only(rng.integers(0, 6, size=(2, n)).astype(np.uint8))
    basis = rng.normal(size=(M, n))
    basis[1, rng.random(n) < 0.3] = 0.0
    targets = rng.normal(size=(J, n))
    w = rng.uniform(0.5, 2.0, n)
    parents = np.array([0, 1], np.int64)
    features = np.array([1, 0], np.int64)
    hist = np.zeros((2, 2, 6, M + J + 1))
    km.candidate_histograms(codes, basis, targets, w, parents, features, hist)
    twin = np.zeros_like(hist)
    for p, m in enumerate(parents):
        for q, f in enumerate(features):
            for i in range(n):
                b = w[i] * basis[m, i]
                if b == 0:
                    continue
                c = codes[f, i]
                twin[p, q, c, :M] += b * basis[:, i]
                twin[p, q, c, M:M + J] += b * targets[:, i]
                twin[p, q, c, -1] += 1
    np.testing.assert_allclose(hist, twin, rtol=1e-12)
