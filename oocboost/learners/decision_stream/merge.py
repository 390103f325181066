"""Merging a decision stream's new nodes: two-sample tests on their label statistics,
and the greedy merge of the least distinguishable pair until every pair differs.

Classification: Pearson's chi-square test of homogeneity on the two nodes' class
weights (the two-proportion z-test for two classes). Regression: Welch's test on the
means, with the normal distribution (nodes of an out-of-core tree hold many rows).
Two nodes merge when the test's p-value exceeds ``significance``; children of the same
split never merge (their split is what tells them apart).
"""
import math

import numpy as np

#: Series or continued fraction of the regularised gamma function: terms and tolerance.
_GAMMA_ITERATIONS, _GAMMA_EPS = 500, 1e-15


def chi2_sf(x, df):
    """Upper tail ``P(X >= x)`` of a chi-square with ``df`` degrees of freedom (the
    regularised gamma ``Q(df/2, x/2)``, Numerical Recipes' series and continued
    fraction), so that no SciPy is needed at run time.

    >>> round(chi2_sf(3.841458820694124, 1), 6)
    0.05
    """
    if x <= 0 or df <= 0:
        return 1.0
    a, z = 0.5 * df, 0.5 * x
    log_front = a * math.log(z) - z - math.lgamma(a)
    if z < a + 1:        # the series of P, then Q = 1 - P
        term = total = 1.0 / a
        ap = a
        for _ in range(_GAMMA_ITERATIONS):
            ap += 1
            term *= z / ap
            total += term
            if abs(term) < abs(total) * _GAMMA_EPS:
                break
        return max(0.0, 1.0 - total * math.exp(log_front))
    tiny = 1e-300        # Lentz's continued fraction of Q
    b = z + 1 - a
    c = 1 / tiny
    d = 1 / b
    h = d
    for i in range(1, _GAMMA_ITERATIONS):
        an = -i * (i - a)
        b += 2
        d = an * d + b
        d = tiny if abs(d) < tiny else d
        c = b + an / c
        c = tiny if abs(c) < tiny else c
        d = 1 / d
        delta = d * c
        h *= delta
        if abs(delta - 1) < _GAMMA_EPS:
            break
    return min(1.0, math.exp(log_front) * h)


def homogeneity_p(a, b):
    """p-value of the chi-square test that class weights ``a`` and ``b`` (K,) come from
    one distribution (1 when they cannot be told apart at all)."""
    table = np.vstack([a, b]).astype(np.float64)
    table = table[:, table.sum(axis=0) > 0]
    rows, cols = table.sum(axis=1), table.sum(axis=0)
    n = rows.sum()
    if table.shape[1] < 2 or np.any(rows <= 0):
        return 1.0
    expected = np.outer(rows, cols) / n
    stat = float(((table - expected) ** 2 / expected).sum())
    return chi2_sf(stat, table.shape[1] - 1)


def welch_p(a, b):
    """p-value of Welch's test that two nodes' mean targets are equal, from their
    ``(w, w y, w y^2, count)`` statistics (normal approximation)."""
    def moments(s):
        w, n = s[0], s[3]
        mean = s[1] / w
        var = max(s[2] / w - mean * mean, 0.0) * n / max(n - 1, 1)
        return mean, var / max(n, 1)

    if a[0] <= 0 or b[0] <= 0:
        return 1.0
    (ma, va), (mb, vb) = moments(a), moments(b)
    se = math.sqrt(va + vb)
    if se == 0:
        return 1.0 if ma == mb else 0.0
    return math.erfc(abs(ma - mb) / se / math.sqrt(2.0))


def merge_nodes(stats, parent, test, significance):
    """Greedy merge of new nodes: repeatedly join the pair with the largest p-value
    while it exceeds ``significance``.

    Parameters
    ----------
    stats : ndarray (n, n_stats) float64
        Each node's label statistics (class weights then count, or the moments).
    parent : ndarray (n,) int
        The split each node comes from (siblings never merge).
    test : callable ``(stats_a, stats_b) -> p``
    significance : float

    Returns
    -------
    group : ndarray (n,) int64, the merged node of each, numbered 0.. in first-member order
    group_stats : ndarray (n_groups, n_stats)
    """
    n = len(stats)
    members = [[i] for i in range(n)]
    sums = [np.asarray(s, np.float64).copy() for s in stats]
    parents = [{int(p)} for p in parent]
    alive = np.ones(n, bool)
    p = np.full((n, n), -1.0)

    def pair_p(i, j):
        return -1.0 if parents[i] & parents[j] else test(sums[i], sums[j])

    for i in range(n):
        for j in range(i + 1, n):
            p[i, j] = pair_p(i, j)
    while n > 1:
        k = int(np.argmax(p))
        i, j = divmod(k, n)
        if p[i, j] <= significance:
            break
        members[i] += members[j]
        sums[i] = sums[i] + sums[j]
        parents[i] |= parents[j]
        alive[j] = False
        p[j, :] = -1.0
        p[:, j] = -1.0
        for other in np.flatnonzero(alive):
            if other != i:
                a, b = min(i, other), max(i, other)
                p[a, b] = pair_p(a, b)
    group = np.empty(n, np.int64)
    order = sorted((min(members[i]), i) for i in np.flatnonzero(alive))
    for g, (_, i) in enumerate(order):
        group[members[i]] = g
    return group, np.array([sums[i] for _, i in order])
