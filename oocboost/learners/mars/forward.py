"""MARS's forward pass: the pair of hinge terms on (parent term, feature, knot) that
lowers the residual sum of squares most, scored from one pass's per-bin sums.

With the current terms' Gram matrix ``G = B^T W B`` and ``B^T W y`` known, adding the
columns ``C = B_p h(x_v)`` lowers the RSS (summed over the targets) by
``u^T S^-1 u`` with ``S = C^T W C - X^T G^-1 X``, ``X = B^T W C`` and ``u = C^T W y - X^T
beta``. Every one of those sums is a weighted sum over bins of ``v`` of the histogram's
lanes (``kernels/mars.py``), with weights ``h(rep(c))`` or ``h(rep(c))^2`` that cumulative
sums over the bins give for every knot at once.
"""
import math

import numpy as np

#: A candidate column (or pair) whose part outside the current terms' span is below this
#: share of its norm is linearly dependent on them: a pair of two hinges on one feature
#: and parent spans the same line as an earlier pair there, so only one hinge of it is
#: added (py-earth does the same).
_DEPENDENT = 1e-9


def endspan(n_rows, n_features, alpha=0.05):
    """Friedman's (1991, eq. 45) rows kept between a knot and the end of a parent's
    support: ``3 - log2(alpha / n)``."""
    return max(1, int(math.ceil(3.0 - math.log2(alpha / max(n_features, 1)))))


def _knot_sums(h, rep, knots):
    """For each knot ``t`` (bin b): sums over bins c > b of ``(rep - t) h`` and
    ``(rep - t)^2 h``, and over bins c <= b of ``(t - rep) h`` and ``(t - rep)^2 h``,
    for histogram lanes ``h`` (n_bins, L). Returns four (n_knots, L) arrays."""
    r = rep[:, None]
    moments = [h, r * h, r * r * h]          # prefix sums of h, rep h, rep^2 h
    prefix = [np.cumsum(m, axis=0) for m in moments]
    total = [p[-1] for p in prefix]
    t = knots[:, None]
    below = [p[:len(knots)] for p in prefix]
    above = [tot[None] - b for tot, b in zip(total, below)]
    up1 = above[1] - t * above[0]
    up2 = above[2] - 2 * t * above[1] + t * t * above[0]
    down1 = t * below[0] - below[1]
    down2 = t * t * below[0] - 2 * t * below[1] + below[2]
    return up1, up2, down1, down2


def score_candidates(hist, rep, edges, p, G_inv, beta, n_terms, n_targets, min_rows):
    """The best knot of parent ``p`` (histogram index) on one feature.

    Parameters
    ----------
    hist : ndarray (n_bins, M + J + 1), the parent's per-bin sums on the feature
    rep : ndarray (n_bins,), the bins' representative values (NaN: missing)
    edges : ndarray (n_bins - 1,) knot candidates (raw bin edges)
    p : int, the parent term's index in the basis
    G_inv : (M, M), beta : (M, J)

    Returns
    -------
    (reduction, knot index, which) or None: ``which`` 0 both hinges, 1 only
    ``max(0, x - t)``, 2 only ``max(0, t - x)``.
    """
    n_value = len(edges) + 1
    h = hist[:n_value]
    rep = rep[:n_value]
    counts = h[:, -1]
    below_rows = np.cumsum(counts)[:len(edges)]
    above_rows = counts.sum() - below_rows
    ok = (below_rows >= min_rows) & (above_rows >= min_rows)
    if not ok.any():
        return None
    up1, up2, down1, down2 = _knot_sums(h, rep, edges)
    M, J = n_terms, n_targets
    # cross products with the current terms, C^T y, C^T C (the parent's own lane)
    best = None
    for which, (lin, sq) in enumerate(((up1, up2), (down1, down2))):
        cross = lin[:, :M]                    # (knots, M)
        cy = lin[:, M:M + J]                  # (knots, J)
        cc = sq[:, p]                         # (knots,)
        proj = np.einsum("km,mn,kn->k", cross, G_inv, cross)
        s = cc - proj
        u = cy - cross @ beta                 # (knots, J)
        with np.errstate(divide="ignore", invalid="ignore"):
            gain = np.where(s > _DEPENDENT * np.maximum(cc, 1e-300),
                            (u * u).sum(axis=1) / s, 0.0)
        lin_sq = (gain, cross, cy, cc, s, u)
        if which == 0:
            single_up = lin_sq
        else:
            single_down = lin_sq
    # both hinges together: a 2x2 system per knot (their product is 0: cc12 = 0)
    g_up, x_up, y_up, c_up, s_up, u_up = single_up
    g_dn, x_dn, y_dn, c_dn, s_dn, u_dn = single_down
    s12 = -np.einsum("km,mn,kn->k", x_up, G_inv, x_dn)
    det = s_up * s_dn - s12 * s12
    with np.errstate(divide="ignore", invalid="ignore"):
        both = np.where(det > _DEPENDENT * np.maximum(s_up * s_dn, 1e-300),
                        ((u_up * u_up).sum(1) * s_dn - 2 * s12 * (u_up * u_dn).sum(1)
                         + (u_dn * u_dn).sum(1) * s_up) / det, -np.inf)
    for which, gain in ((0, both), (1, g_up), (2, g_dn)):
        gain = np.where(ok, gain, -np.inf)
        k = int(np.argmax(gain))
        # a single hinge of a dependent pair: both reach the same span, so the gains tie
        # up to rounding; the first (x - t) is kept unless the other is clearly better
        if np.isfinite(gain[k]) and gain[k] > 0 and (best is None or gain[k] > best[0]
                                                      * (1 + 1e-9)):
            best = (float(gain[k]), k, which)
    return best
