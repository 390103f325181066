"""MARS kernels (Friedman 1991): the values of products of hinge functions, and the
per-bin sums a forward step scores its candidate terms from.

A term is a product of hinges ``max(0, s (x_f - t))`` (``s`` = +1 or -1); the intercept
has none. Terms are flat: term ``m``'s hinges are ``term_offset[m] .. term_offset[m+1]-1``
of ``hinge_feature``, ``hinge_knot`` (raw), ``hinge_sign``. A missing value makes its
hinge 0. Over bin codes, a feature's value is its bin's representative value
(``rep[f, code]``, NaN for the missing code).
"""
from numba import njit, prange


@njit(parallel=True, cache=True)
def basis_raw(X, term_offset, hinge_feature, hinge_knot, hinge_sign, out):
    """Term values of raw rows.

    Parameters
    ----------
    X : ndarray (n_rows, n_features) float64                     # IN
    term_offset : ndarray (n_terms + 1,) int64                     # IN
    hinge_feature : (n_hinges,) int64, hinge_knot : (n_hinges,) float64,
    hinge_sign : (n_hinges,) float64                               # IN
    out : ndarray (n_terms, n_rows) float64                        # OUT
    """
    n_terms = term_offset.shape[0] - 1
    for i in prange(X.shape[0]):
        for m in range(n_terms):
            v = 1.0
            for h in range(term_offset[m], term_offset[m + 1]):
                x = X[i, hinge_feature[h]]
                z = hinge_sign[h] * (x - hinge_knot[h])
                v = v * z if z > 0 else 0.0     # NaN fails z > 0: a missing value gives 0
            out[m, i] = v


@njit(parallel=True, cache=True)
def basis_binned(codes, rep, term_offset, hinge_feature, hinge_knot, hinge_sign, out):
    """:func:`basis_raw` of bin codes (n_features, n_rows) through ``rep``
    (n_features, n_codes) float64."""
    n_terms = term_offset.shape[0] - 1
    for i in prange(codes.shape[1]):
        for m in range(n_terms):
            v = 1.0
            for h in range(term_offset[m], term_offset[m + 1]):
                f = hinge_feature[h]
                x = rep[f, codes[f, i]]
                z = hinge_sign[h] * (x - hinge_knot[h])
                v = v * z if z > 0 else 0.0
            out[m, i] = v


@njit(parallel=True, cache=True)
def candidate_histograms(codes, basis, targets, weight, parents, features, hist):
    """Per (parent term, feature, bin): the sums a forward step needs.

    For every row ``i`` with ``b = w_i B_p(i) != 0`` for parent ``p``, bin ``c`` of
    feature ``v`` gets ``b B_k(i)`` for every term ``k`` (lanes ``0 .. M-1``), ``b
    y_j(i)`` for every target ``j`` (lanes ``M .. M+J-1``) and 1 (the last lane).

    Parameters
    ----------
    codes : ndarray (n_features, n_rows) uint8/uint16                 # IN
    basis : ndarray (M, n_rows) float64                                # IN
    targets : ndarray (J, n_rows) float64                              # IN
    weight : ndarray (n_rows,) float64                                 # IN
    parents : ndarray (P,) int64, the parent terms                     # IN
    features : ndarray (V,) int64, the candidate features              # IN
    hist : ndarray (P, V, n_codes, M + J + 1) float64                 # IN/OUT
    """
    n_terms = basis.shape[0]
    n_targets = targets.shape[0]
    for q in prange(features.shape[0]):
        f = features[q]
        for i in range(codes.shape[1]):
            c = codes[f, i]
            for p in range(parents.shape[0]):
                b = weight[i] * basis[parents[p], i]
                if b == 0.0:
                    continue
                for k in range(n_terms):
                    hist[p, q, c, k] += b * basis[k, i]
                for j in range(n_targets):
                    hist[p, q, c, n_terms + j] += b * targets[j, i]
                hist[p, q, c, n_terms + n_targets] += 1.0
