"""Kernels of the quantile sketch (``cache/sketch.py``): cleaning a column's values,
summarising a sorted batch, combining two summaries, choosing the entries a prune keeps.

A summary is four float64 arrays ``(values, rmin, rmax, w)``, value-sorted, values
distinct (the sketch module's docstring gives the invariants). Each kernel is one linear
pass where the NumPy formulation took several passes and temporaries: the combine was a
concatenation, a sort, two binary searches per value and a dozen masked selections;
together they were 5.5 s of a 4M-row build's pass 1, on the thread that must keep up
with the CSV parse. The results are the NumPy formulation's, bit for bit (the tests
compare them), so a cache's bin edges do not change. An output is trimmed (copied) only
when it came out shorter than its buffer: float columns rarely have NaN or repeated
values, so most calls return their buffers as they are.
"""
import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def clean_columns(columns, clean, n_clean, lo, hi, n_missing, n_inf):
    """:func:`clean_values` of every row of a 2-D array at once, with each row's NaN
    and infinite counts: pass 1 of a wide build calls it once a batch instead of a
    sketch update a column (22 us each, 35,000 of them in a 5,000-column build).

    Parameters
    ----------
    columns : ndarray (n_columns, n) float64                        # IN
    clean : ndarray (n_columns, n) float64, row ``j``'s first ``n_clean[j]`` values;
        may be ``columns`` itself (a value is written at or before where it is read) # OUT
    n_clean, n_missing, n_inf : ndarray (n_columns,) int64           # OUT
    lo, hi : ndarray (n_columns,) float64, ``inf, -inf`` when nothing is left         # OUT
    """
    for j in range(columns.shape[0]):
        k = 0
        low = np.inf
        high = -np.inf
        infinite = 0
        for i in range(columns.shape[1]):
            x = columns[j, i]
            if x != x:
                continue
            x = x + 0.0
            clean[j, k] = x
            k += 1
            if x < low:
                low = x
            if x > high:
                high = x
            if x == np.inf or x == -np.inf:
                infinite += 1
        n_clean[j] = k
        n_missing[j] = columns.shape[1] - k
        n_inf[j] = infinite
        lo[j] = low
        hi[j] = high


@njit(cache=True, nogil=True)
def clean_values(values):
    """The non-NaN values of ``values`` in order, ``-0.0`` made ``0.0``, and their
    minimum and maximum (``inf, -inf`` when none is left).

    Parameters
    ----------
    values : ndarray (n,) float64                                   # IN

    Returns
    -------
    (clean ndarray (k,) float64, minimum float, maximum float)
    """
    out = np.empty(values.shape[0], np.float64)
    k = 0
    lo = np.inf
    hi = -np.inf
    for i in range(values.shape[0]):
        x = values[i]
        if x != x:
            continue
        x = x + 0.0
        out[k] = x
        k += 1
        if x < lo:
            lo = x
        if x > hi:
            hi = x
    if k == out.shape[0]:
        return out, lo, hi
    return out[:k].copy(), lo, hi


@njit(cache=True, nogil=True)
def summarize_sorted(v):
    """Exact summary of sorted unit-weight values (no NaN): each distinct value, its
    count ``w``, ``rmax`` the running count through it and ``rmin = rmax - w``.

    Parameters
    ----------
    v : ndarray (n,) float64, ascending                            # IN

    Returns
    -------
    (values, rmin, rmax, w) ndarrays (k,) float64, ``k`` distinct values
    """
    n = v.shape[0]
    distinct = np.empty(n, np.float64)
    w = np.empty(n, np.float64)
    k = 0
    for i in range(n):
        if i == 0 or v[i] != v[i - 1]:
            distinct[k] = v[i]
            w[k] = 1.0
            k += 1
        else:
            w[k - 1] += 1.0
    rmin = np.empty(k, np.float64)
    rmax = np.empty(k, np.float64)
    total = 0.0
    for j in range(k):
        total += w[j]
        rmax[j] = total
        rmin[j] = total - w[j]
    if k == n:
        return distinct, rmin, rmax, w
    return distinct[:k].copy(), rmin, rmax, w[:k].copy()


@njit(cache=True, nogil=True)
def combine_summaries(va, rmin_a, rmax_a, w_a, vb, rmin_b, rmax_b, w_b):
    """Summary of the union of two non-empty summaries A and B, one merge of their
    sorted values: ranks add, and a value absent from one side takes from that side
    ``rmin + w`` of its previous entry (0 before the first) as ``rmin`` and ``rmax - w``
    of its next entry (the side's total weight after the last) as ``rmax``, with weight
    0. A's part is added first, then B's.

    Parameters
    ----------
    va, rmin_a, rmax_a, w_a : ndarray (na,) float64                 # IN, summary A
    vb, rmin_b, rmax_b, w_b : ndarray (nb,) float64                 # IN, summary B

    Returns
    -------
    (values, rmin, rmax, w) ndarrays (k,) float64, ``k <= na + nb``
    """
    na = va.shape[0]
    nb = vb.shape[0]
    total_a = rmin_a[na - 1] + w_a[na - 1]
    total_b = rmin_b[nb - 1] + w_b[nb - 1]
    values = np.empty(na + nb, np.float64)
    rmin = np.empty(na + nb, np.float64)
    rmax = np.empty(na + nb, np.float64)
    w = np.empty(na + nb, np.float64)
    i = 0
    j = 0
    k = 0
    while i < na or j < nb:
        take_a = j >= nb or (i < na and va[i] <= vb[j])
        take_b = i >= na or (j < nb and vb[j] <= va[i])
        if take_a:
            x = va[i]
            lo_a, hi_a, wt_a = rmin_a[i], rmax_a[i], w_a[i]
        else:
            x = vb[j]
            lo_a = rmin_a[i - 1] + w_a[i - 1] if i > 0 else 0.0
            hi_a = rmax_a[i] - w_a[i] if i < na else total_a
            wt_a = 0.0
        if take_b:
            lo_b, hi_b, wt_b = rmin_b[j], rmax_b[j], w_b[j]
        else:
            lo_b = rmin_b[j - 1] + w_b[j - 1] if j > 0 else 0.0
            hi_b = rmax_b[j] - w_b[j] if j < nb else total_b
            wt_b = 0.0
        values[k] = x
        rmin[k] = lo_a + lo_b
        rmax[k] = hi_a + hi_b
        w[k] = wt_a + wt_b
        k += 1
        if take_a:
            i += 1
        if take_b:
            j += 1
    if k == na + nb:
        return values, rmin, rmax, w
    return values[:k].copy(), rmin[:k].copy(), rmax[:k].copy(), w[:k].copy()


@njit(cache=True, nogil=True)
def prune_keep(rmin, w, m):
    """Entries a prune to ``m + 2`` keeps, ascending: the first, the last, and for each
    target ``t = k * (a_last / m)`` (``k = 0 .. m``, ``a = rmin + w``) the first entry
    with ``a > t`` (the last when there is none), each once.

    Parameters
    ----------
    rmin, w : ndarray (n,) float64, ``n >= 1``, ``rmin + w`` non-decreasing   # IN
    m : int

    Returns
    -------
    ndarray (k,) int64, ``k <= m + 3``
    """
    n = rmin.shape[0]
    step = (rmin[n - 1] + w[n - 1]) / m
    keep = np.empty(m + 3, np.int64)
    keep[0] = 0
    n_keep = 1
    p = 0
    for k in range(m + 1):
        target = k * step
        while p < n and rmin[p] + w[p] <= target:
            p += 1
        pick = min(p, n - 1)
        if pick != keep[n_keep - 1]:
            keep[n_keep] = pick
            n_keep += 1
    if keep[n_keep - 1] != n - 1:
        keep[n_keep] = n - 1
        n_keep += 1
    return keep[:n_keep].copy()
