"""Tests of oocboost.kernels.split: naive twins, brute force on raw rows, XGBoost,
scikit-learn.

Tolerances: kernel vs naive twin, gains to 1e-12 relative (the twin follows the same
summation order, so they are normally bit-equal) and every decision exactly; kernel vs
brute force over raw rows 1e-9 relative; vs xgboost 1e-5 relative (xgboost rounds gains
and weights to float32); vs scikit-learn 1e-9.
"""
import itertools
import json
import math

import numpy as np
import pytest

from oocboost.engine.policies import full_columns
from oocboost.kernels import split as S
from oocboost.kernels import split_cart as SC
from oocboost.kernels import split_gradient as SG

INF = float("inf")


# --------------------------------------------------------------------------------------
# data helpers
# --------------------------------------------------------------------------------------
def rows_to_hist(codes, stats, slot_of_row, n_slots, max_bin):
    """Naive histogram: hist[slot, f, code] += stats[row]; node sums straight from rows."""
    n_features = codes.shape[0]
    n_stats = stats.shape[1]
    hist = np.zeros((n_slots, n_features, max_bin, n_stats))
    for f in range(n_features):
        np.add.at(hist, (slot_of_row, f, codes[f]), stats)
    node_sums = np.zeros((n_slots, n_stats))
    np.add.at(node_sums, slot_of_row, stats)
    return hist, node_sums


def random_codes(rng, n_rows, n_features, max_bin, p_missing=None, nvb=None):
    """Codes with empty bins (values drawn from a subset of the value bins) and missing."""
    mb = max_bin - 1
    if nvb is None:
        nvb = rng.integers(1, max_bin, n_features).astype(np.int32)
    if p_missing is None:
        p_missing = rng.choice([0.0, 0.0, 0.2, 0.6], n_features)
    codes = np.empty((n_features, n_rows), np.int64)
    for f in range(n_features):
        support = rng.choice(nvb[f], size=max(1, rng.integers(1, nvb[f] + 1)), replace=False)
        codes[f] = rng.choice(support, n_rows)
        codes[f, rng.random(n_rows) < p_missing[f]] = mb
    return codes, np.asarray(nvb, np.int32)


def gradient_stats(rng, n_rows, integer=False):
    if integer:
        g = rng.integers(-3, 4, n_rows).astype(float)
        h = rng.integers(1, 3, n_rows).astype(float)
    else:
        g = rng.normal(size=n_rows)
        h = rng.uniform(0.05, 1.0, n_rows)
    return np.column_stack([g, h])


def cart_stats(rng, n_rows, criterion_code, n_classes, weighted=False):
    w = rng.uniform(0.2, 2.0, n_rows) if weighted else np.ones(n_rows)
    if criterion_code == S.CRITERION_SQUARED_ERROR:
        y = rng.normal(size=n_rows)
        return np.column_stack([w, w * y, w * y * y, np.ones(n_rows)]), y, w
    if criterion_code == S.CRITERION_POISSON:
        y = rng.poisson(1.5, n_rows).astype(float)
        ylogy = np.where(y > 0, y * np.log(np.where(y > 0, y, 1.0)), 0.0)
        return np.column_stack([w, w * y, w * ylogy, np.ones(n_rows)]), y, w
    if criterion_code == S.CRITERION_MH_Z:   # AdaBoost.MH: n_classes = 2K lanes
        K = n_classes // 2
        y = rng.integers(0, K, n_rows)
        dist = rng.uniform(0.1, 1.0, (n_rows, K)) * w[:, None]
        own = np.eye(K, dtype=bool)[y]
        return np.column_stack([np.where(own, dist, 0.0), np.where(own, 0.0, dist),
                                np.ones(n_rows)]), y, w
    y = rng.integers(0, n_classes, n_rows)
    st = np.zeros((n_rows, n_classes + 1))
    st[np.arange(n_rows), y] = w
    st[:, n_classes] = 1.0
    return st, y, w


def bits_to_set(bits):
    return {
        32 * i + j for i, word in enumerate(bits) for j in range(32) if (int(word) >> j) & 1
    }


def alloc_outputs(n_eval, n_stats, max_bin):
    return dict(gain=np.empty(n_eval), feature=np.empty(n_eval, np.int32),
                bin_idx=np.empty(n_eval, np.int32), default_left=np.empty(n_eval, bool),
                is_cat=np.empty(n_eval, bool),
                cat_bitset=np.empty((n_eval, S.n_bitset_words(max_bin)), np.uint32),
                left_sums=np.empty((n_eval, n_stats)), right_sums=np.empty((n_eval, n_stats)))


def run_gradient(hist, node_sums, slots, mask, nvb, isc, lam=1.0, alpha=0.0, mds=0.0,
                 mcw=1.0, onehot=4, mct=64):
    n_eval = len(slots)
    out = alloc_outputs(n_eval, 2, hist.shape[2])
    SG.find_splits_gradient(hist, node_sums, np.asarray(slots, np.int32), mask, nvb, isc,
                           hist.shape[2] - 1, lam, alpha, mds, mcw, onehot, mct,
                           np.zeros(0, np.int8), np.zeros(n_eval), np.zeros(n_eval),
                           *out.values())
    return out


def run_cart(hist, node_sums, slots, mask, nvb, isc, crit, n_classes, msl=1.0, mwl=0.0,
             total_weight=None, random_bin=None, column_feature=None, zero_after=False,
             values=None):
    n_eval = len(slots)
    if column_feature is None:
        column_feature = full_columns(n_eval, hist.shape[1])
    ns = hist.shape[3]
    out = alloc_outputs(n_eval, ns, hist.shape[2])
    out = {"improvement": out.pop("gain"), "impurity_decrease": np.empty(n_eval), **out}
    if total_weight is None:
        total_weight = float(node_sums[0, 0] if crit in (2, 3)
                             else node_sums[0, :n_classes].sum())
    rb = np.zeros((0, 0), np.int32) if random_bin is None else random_bin
    values = np.empty(0) if values is None else np.asarray(values, np.float64)
    SC.find_splits_cart(
        hist,
        node_sums,
        np.asarray(slots, np.int32),
        column_feature,
        mask,
        nvb,
        isc,
        hist.shape[2] - 1,
        crit,
        n_classes,
        msl,
        mwl,
        total_weight,
        rb,
        *out.values(),
        zero_after,
        values,
    )
    return out


# --------------------------------------------------------------------------------------
# naive twins (plain Python, the module docstring's rules spelled out)
# --------------------------------------------------------------------------------------
def naive_gradient(hist, node_sums, slots, mask, nvb, isc, lam=1.0, alpha=0.0, mds=0.0,
                   mcw=1.0, onehot=4, mct=64):
    mb = hist.shape[2] - 1

    def nonempty(bin_sums):
        # a bin is empty when its gradient and hessian sums are exactly 0 (no count lane)
        return bin_sums[0] != 0 or bin_sums[1] != 0

    def thr(g):
        return g - alpha if g > alpha else (g + alpha if g < -alpha else 0.0)

    def weight(G, H):
        if H < mcw or H <= 0:
            return 0.0
        w = -thr(G) / (H + lam)
        if mds > 0:
            w = min(max(w, -mds), mds)
        return w

    def score(G, H):
        if H <= 0:
            return 0.0
        if mds <= 0:
            t = thr(G)
            return t * t / (H + lam)
        w = weight(G, H)
        return -(2.0 * G * w + (H + lam) * w * w)

    results = []
    for e, s in enumerate(slots):
        G, H = node_sums[s]
        ps = score(G, H)

        def gain_of(L):
            gl, hl = L
            gr, hr = G - gl, H - hl
            if hl <= 0 or hr <= 0 or hl < mcw or hr < mcw:
                return -INF
            v = (score(gl, hl) + score(gr, hr)) - ps
            return v if math.isfinite(v) else -INF

        best = None
        for f in range(hist.shape[1]):
            if not mask[e, f]:
                continue
            h = hist[s, f]
            nb = int(nvb[f])
            cands = []  # (left sums, bin, default_left, left set)
            if not isc[f]:
                L = [0.0, 0.0]
                for b in range(nb):
                    L = [L[k] + h[b, k] for k in range(2)]
                    if nonempty(h[b]):
                        cands.append((tuple(L), b, False, None))
                if nonempty(h[mb]):
                    R = [0.0, 0.0]
                    for i in range(nb - 1, 0, -1):
                        R = [R[k] + h[i, k] for k in range(2)]
                        if nonempty(h[i]):
                            cands.append(((G - R[0], H - R[1]), i - 1, True, None))
            elif nb < onehot:
                for c in range(nb):
                    left = frozenset(range(nb)) - {c}
                    cands.append(((G - h[c, 0], H - h[c, 1]), -1, True, left))
                    cands.append(((G - (h[c, 0] + h[mb, 0]), H - (h[c, 1] + h[mb, 1])), -1,
                                  False, left))
            else:
                keys = [weight(h[c, 0], h[c, 1]) if nonempty(h[c]) else 0.0
                        for c in range(nb)]
                order = sorted(range(nb), key=lambda c: keys[c])  # stable
                kmax = min(mct, nb) - 1
                R = [0.0, 0.0]
                for k in range(1, kmax + 1):
                    c = order[k - 1]
                    R = [R[i] + h[c, i] for i in range(2)]
                    if nonempty(h[c]):
                        cands.append(((G - R[0], H - R[1]), -1, True, frozenset(order[k:])))
                L = [0.0, 0.0]
                for k in range(1, kmax + 1):
                    c = order[nb - k]
                    L = [L[i] + h[c, i] for i in range(2)]
                    if nonempty(h[c]):
                        cands.append((tuple(L), -1, False, frozenset(order[nb - k:])))
            for L, b, dl, left in cands:
                v = gain_of(L)
                if v > -INF and (best is None or v > best["gain"]):
                    best = dict(gain=v, feature=f, bin=b, dl=dl, left=left, L=L)
        results.append(best)
    return results


def naive_median_error(weights, values):
    """(median, sum w |y - median|) of a distribution over ``values``, scikit-learn's
    weighted median walked row by row (the mid-point at an exact half)."""
    pairs = [(values[k], weights[k]) for k in range(len(values)) if weights[k] > 0]
    total = sum(w for _, w in pairs)
    below, prev, median = 0.0, None, pairs[-1][0]
    for v, w in pairs:
        if below + w > total / 2:
            median = (prev + v) / 2 if below == total / 2 and prev is not None else v
            break
        below += w
        prev = v
    return median, sum(w * abs(v - median) for v, w in pairs)


def naive_cart(hist, node_sums, slots, mask, nvb, isc, crit, K, msl=1.0, mwl=0.0,
               total_weight=None, random_bin=None, values=None):
    mb = hist.shape[2] - 1
    ns = hist.shape[3]
    cnt = ns - 1
    ln2 = math.log(2.0)

    def weight(v):
        if crit in (2, 3):
            return v[0]
        w = 0.0
        for k in range(K):
            w += v[k]
        return w

    def impurity(v):
        w = weight(v)
        if w <= 0:
            return 0.0
        if crit == 4:  # absolute error around the weighted median
            return naive_median_error(v[:K], values)[1] / w
        if crit == 3:  # Poisson: (sum w y log y - S log(S / W)) / W
            return (v[2] - v[1] * math.log(v[1] / w)) / w if v[1] > 0 else 0.0
        if crit == 2:
            m = v[1] / w
            return v[2] / w - m * m
        if crit == 5:
            return 2.0 * mh_z(v) / w
        if crit == 0:
            return 1.0 - sum(v[k] * v[k] for k in range(K)) / (w * w)
        ent = 0.0
        for k in range(K):
            if v[k] > 0:
                p = v[k] / w
                ent -= p * (math.log(p) / ln2)
        return ent

    def mh_z(v):
        half = K // 2
        return sum(math.sqrt(v[k] * v[half + k]) for k in range(half)
                   if v[k] > 0 and v[half + k] > 0)

    if total_weight is None:
        total_weight = weight(node_sums[0])
    results = []
    for e, s in enumerate(slots):
        P = node_sums[s]
        wP = weight(P)

        def proxy(L):
            nl = L[cnt]
            nr = P[cnt] - nl
            if nl <= 0 or nr <= 0 or nl < msl or nr < msl:
                return -INF
            wl = weight(L)
            wr = wP - wl
            if wl <= 0 or wr <= 0 or wl < mwl or wr < mwl:
                return -INF
            if crit == 4:
                R = [P[k] - L[k] for k in range(K)]
                ae_l = naive_median_error(L[:K], values)[1]
                ae_r = naive_median_error(R, values)[1]
                return -wr * (ae_r / wr) - wl * (ae_l / wl)
            if crit == 3:
                sr = P[1] - L[1]
                if L[1] <= np.finfo(float).eps or sr <= np.finfo(float).eps:
                    return -INF
                return L[1] * math.log(L[1] / wl) + sr * math.log(sr / wr)
            if crit == 2:
                sr = P[1] - L[1]
                return L[1] * L[1] / wl + sr * sr / wr
            R = [P[k] - L[k] for k in range(K)]
            if crit == 5:
                return -2.0 * (mh_z(L) + mh_z(R))
            if crit == 0:
                il = 1.0 - sum(L[k] * L[k] for k in range(K)) / (wl * wl)
                ir = 1.0 - sum(R[k] * R[k] for k in range(K)) / (wr * wr)
            else:
                il = -sum(
                    L[k] / wl * (math.log(L[k] / wl) / ln2) for k in range(K) if L[k] > 0
                )
                ir = -sum(
                    R[k] / wr * (math.log(R[k] / wr) / ln2) for k in range(K) if R[k] > 0
                )
            return -wr * ir - wl * il

        best = None
        for f in range(hist.shape[1]):
            if not mask[e, f]:
                continue
            h = hist[s, f]
            nb = int(nvb[f])
            has_missing = h[mb, cnt] > 0
            passes = [False, True] if has_missing else [False]
            cands = []  # (L, bin, default_left or None = by counts, left set)
            if not isc[f]:
                rb = -1 if random_bin is None else int(random_bin[e, f])
                n_nonmiss = sum(h[b, cnt] for b in range(nb))
                for ml in passes:
                    acc = np.zeros(ns)
                    for b in range(nb - 1):
                        acc = acc + h[b]
                        if rb >= 0:
                            if b != rb:
                                continue
                            if acc[cnt] <= 0:
                                break
                        elif h[b, cnt] <= 0:
                            continue
                        if n_nonmiss - acc[cnt] <= 0:
                            break
                        cands.append((acc + h[mb] if ml else acc.copy(), b,
                                      ml if has_missing else None, None))
                if has_missing and rb < 0:
                    acc = np.zeros(ns)
                    for b in range(nb):
                        acc = acc + h[b]
                    cands.append((acc, nb - 1, False, None))
            else:
                cats = [c for c in range(nb) if h[c, cnt] > 0]
                sorted_mode = crit >= 2 or K == 2
                seq = list(cats)
                if sorted_mode and len(cats) > 1:
                    def key(c):
                        if crit == 4:  # by mean label
                            w = sum(h[c, k] for k in range(K))
                            return sum(h[c, k] * values[k] for k in range(K)) / w if w > 0 \
                                else 0.0
                        w = h[c, 0] if crit >= 2 else h[c, 0] + h[c, 1]
                        return h[c, 1] / w if w > 0 else 0.0
                    seq = sorted(cats, key=key)
                for ml in passes:
                    acc = np.zeros(ns)
                    for j in range(len(seq) - 1 if sorted_mode else len(seq)):
                        if sorted_mode:
                            acc = acc + h[seq[j]]
                            v, left = acc, frozenset(seq[:j + 1])
                        else:
                            v, left = h[seq[j]].copy(), frozenset([seq[j]])
                        cands.append((v + h[mb] if ml else v.copy(), -1,
                                      ml if has_missing else None, left))
                if has_missing and cats:
                    acc = np.zeros(ns)
                    for c in cats:
                        acc = acc + h[c]
                    cands.append((acc, -1, False, frozenset(cats)))
            for L, b, dl, left in cands:
                v = proxy(L)
                if v > -INF and (best is None or v > best["proxy"]):
                    if dl is None:
                        dl = bool(L[cnt] > P[cnt] - L[cnt])
                    if left is not None and dl:
                        left = left | {c for c in range(nb) if h[c, cnt] <= 0}
                    R = P - L
                    dec = (wP / total_weight) * (impurity(P) - weight(R) / wP * impurity(R)
                                                 - weight(L) / wP * impurity(L))
                    best = dict(proxy=v, feature=f, bin=b, dl=dl, left=left, L=np.array(L),
                                dec=dec)
        results.append(best)
    return results


def assert_matches_twin(out, twin, node_sums, slots, score_key, twin_key):
    for e, t in enumerate(twin):
        if t is None:
            assert out["feature"][e] == -1, e
            assert out[score_key][e] == -INF
            continue
        assert out["feature"][e] == t["feature"], e
        np.testing.assert_allclose(out[score_key][e], t[twin_key], rtol=1e-12, atol=0)
        assert bool(out["default_left"][e]) == t["dl"], e
        assert bool(out["is_cat"][e]) == (t["left"] is not None)
        if t["left"] is None:
            assert out["bin_idx"][e] == t["bin"]
            assert not out["cat_bitset"][e].any()
        else:
            assert out["bin_idx"][e] == -1
            assert bits_to_set(out["cat_bitset"][e]) == set(t["left"])
        np.testing.assert_allclose(out["left_sums"][e], t["L"], rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(out["left_sums"][e] + out["right_sums"][e],
                                   node_sums[slots[e]], rtol=1e-12, atol=1e-12)


def partition_left(codes_f, mb, out, e):
    """Rows of one node going left under the reported split (bin / bitset / default)."""
    miss = codes_f == mb
    if out["is_cat"][e]:
        left_set = np.array(sorted(bits_to_set(out["cat_bitset"][e])), dtype=np.int64)
        go = np.isin(codes_f, left_set)
    else:
        go = codes_f <= out["bin_idx"][e]
    go[miss] = bool(out["default_left"][e])
    return go


# --------------------------------------------------------------------------------------
# boosting: twin
# --------------------------------------------------------------------------------------
GRAD_PARAMS = [
    dict(lam=1.0, alpha=0.0, mds=0.0, mcw=1.0),
    dict(lam=0.0, alpha=0.0, mds=0.0, mcw=0.0),
    dict(lam=2.0, alpha=0.7, mds=0.0, mcw=0.5),
    dict(lam=1.0, alpha=0.0, mds=0.3, mcw=1.0),
    dict(lam=0.5, alpha=0.4, mds=0.5, mcw=2.0),
]


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("params", GRAD_PARAMS)
def test_gradient_matches_twin(seed, params):
    rng = np.random.default_rng(seed)
    max_bin = int(rng.choice([3, 8, 40, 70]))
    n_features, n_slots, n_rows = 7, 4, int(rng.integers(5, 120))
    codes, nvb = random_codes(rng, n_rows, n_features, max_bin)
    isc = rng.random(n_features) < 0.4
    stats = gradient_stats(rng, n_rows, integer=seed % 2 == 1)
    slot_of_row = rng.integers(0, n_slots, n_rows)
    hist, node_sums = rows_to_hist(codes, stats, slot_of_row, n_slots, max_bin)
    slots = [3, 0, 2]
    mask = rng.random((3, n_features)) < 0.8
    onehot = int(rng.choice([0, 4, 6]))
    mct = int(rng.choice([2, 5, 64]))
    out = run_gradient(hist, node_sums, slots, mask, nvb, isc, onehot=onehot, mct=mct,
                       **params)
    twin = naive_gradient(hist, node_sums, slots, mask, nvb, isc, onehot=onehot, mct=mct,
                          **params)
    assert_matches_twin(out, twin, node_sums, slots, "gain", "gain")
    # the reported split is the partition whose sums are reported
    for e, s in enumerate(slots):
        f = out["feature"][e]
        if f < 0:
            continue
        rows = slot_of_row == s
        go = partition_left(codes[f, rows], max_bin - 1, out, e)
        np.testing.assert_allclose(stats[rows][go].sum(0), out["left_sums"][e], atol=1e-9)
        assert mask[e, f]


def _grad_brute_force_numeric(X, g, h, lam, alpha, mds, mcw):
    """Best gain over every threshold / missing direction, straight from raw rows."""
    def thr(v):
        return np.sign(v) * max(abs(v) - alpha, 0.0)

    def weight(G, H):
        if H < mcw or H <= 0:
            return 0.0
        w = -thr(G) / (H + lam)
        return float(np.clip(w, -mds, mds)) if mds > 0 else w

    def score(G, H):
        if H <= 0:
            return 0.0
        if mds <= 0:
            return thr(G) ** 2 / (H + lam)
        w = weight(G, H)
        return -(2 * G * w + (H + lam) * w * w)

    best = -INF
    ps = score(g.sum(), h.sum())
    for f in range(X.shape[1]):
        x = X[:, f]
        miss = np.isnan(x)
        for t in np.unique(x[~miss]):
            for ml in (False, True):
                left = (x <= t) | (miss & ml)
                if left.all() or not left.any():
                    continue
                hl, hr = h[left].sum(), h[~left].sum()
                if hl < mcw or hr < mcw or hl <= 0 or hr <= 0:
                    continue
                best = max(best, score(g[left].sum(), hl) + score(g[~left].sum(), hr) - ps)
        if miss.any() and not miss.all():  # only missing rows on one side
            left = ~miss
            hl, hr = h[left].sum(), h[~left].sum()
            if min(hl, hr) >= mcw and min(hl, hr) > 0:
                best = max(best, score(g[left].sum(), hl) + score(g[~left].sum(), hr) - ps)
    return best


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("params", GRAD_PARAMS)
def test_gradient_equals_brute_force_on_raw_rows(seed, params):
    rng = np.random.default_rng(100 + seed)
    n_rows, n_features, max_bin = 40, 3, 12
    X = rng.integers(0, 11, (n_rows, n_features)).astype(float)
    X[rng.random(X.shape) < 0.2] = np.nan
    codes = np.where(np.isnan(X), max_bin - 1, X).T.astype(np.int64)
    stats = gradient_stats(rng, n_rows)
    hist, node_sums = rows_to_hist(codes, stats, np.zeros(n_rows, np.int64), 1, max_bin)
    nvb = np.full(n_features, 11, np.int32)
    out = run_gradient(hist, node_sums, [0], np.ones((1, n_features), bool), nvb,
                       np.zeros(n_features, bool), **params)
    expected = _grad_brute_force_numeric(X, stats[:, 0], stats[:, 1], **params)
    if expected == -INF:
        assert out["feature"][0] == -1
    else:
        np.testing.assert_allclose(out["gain"][0], expected, rtol=1e-9)


def test_gradient_partition_is_optimal_without_regularisation():
    # with lambda = alpha = 0 sorting categories by G/H finds the best subset (Fisher 1958)
    rng = np.random.default_rng(7)
    for _ in range(10):
        n_cat, n_rows = 7, 60
        codes = rng.integers(0, n_cat, (1, n_rows))
        stats = gradient_stats(rng, n_rows)
        hist, node_sums = rows_to_hist(codes, stats, np.zeros(n_rows, np.int64), 1, 9)
        out = run_gradient(hist, node_sums, [0], np.ones((1, 1), bool),
                           np.array([n_cat], np.int32), np.ones(1, bool), lam=0.0, mcw=0.0)
        g, h = stats[:, 0], stats[:, 1]
        best = -INF
        for r in range(1, n_cat):
            for left in itertools.combinations(range(n_cat), r):
                m = np.isin(codes[0], left)
                if m.all() or not m.any():
                    continue
                best = max(best, g[m].sum() ** 2 / h[m].sum() + g[~m].sum() ** 2 / h[~m].sum()
                           - g.sum() ** 2 / h.sum())
        np.testing.assert_allclose(out["gain"][0], best, rtol=1e-9)


# --------------------------------------------------------------------------------------
# boosting: edge cases
# --------------------------------------------------------------------------------------
def _single_node(codes, stats, max_bin):
    return rows_to_hist(codes, stats, np.zeros(codes.shape[1], np.int64), 1, max_bin)


@pytest.mark.parametrize("categorical", [False, True])
def test_gradient_all_missing_gives_no_split(categorical):
    codes = np.full((3, 10), 7)
    stats = gradient_stats(np.random.default_rng(0), 10)
    hist, ns = _single_node(codes, stats, 8)
    out = run_gradient(hist, ns, [0], np.ones((1, 3), bool), np.full(3, 5, np.int32),
                       np.full(3, categorical), mcw=0.0, lam=0.0)
    assert out["feature"][0] == -1 and out["gain"][0] == -INF
    assert not out["cat_bitset"].any() and not out["left_sums"].any()


def test_gradient_constant_feature_one_value_bin():
    rng = np.random.default_rng(1)
    stats = gradient_stats(rng, 12)
    codes = np.zeros((1, 12), np.int64)
    hist, ns = _single_node(codes, stats, 4)
    out = run_gradient(hist, ns, [0], np.ones((1, 1), bool), np.array([1], np.int32),
                       np.zeros(1, bool), mcw=0.0)
    assert out["feature"][0] == -1
    # with missing rows the only split is "values left, missing right", reported at bin 0
    codes[0, :4] = 3
    hist, ns = _single_node(codes, stats, 4)
    out = run_gradient(hist, ns, [0], np.ones((1, 1), bool), np.array([1], np.int32),
                       np.zeros(1, bool), mcw=0.0)
    assert out["feature"][0] == 0 and out["bin_idx"][0] == 0 and not out["default_left"][0]
    np.testing.assert_allclose(out["right_sums"][0], stats[:4].sum(0))


def test_gradient_min_child_weight_blocks_every_split():
    rng = np.random.default_rng(2)
    codes, nvb = random_codes(rng, 50, 5, 16)
    stats = gradient_stats(rng, 50)
    hist, ns = _single_node(codes, stats, 16)
    isc = np.array([False, True, False, True, False])
    out = run_gradient(hist, ns, [0], np.ones((1, 5), bool), nvb, isc, mcw=ns[0, 1] / 2 + 1e-9,
                       onehot=3)
    assert out["feature"][0] == -1 and out["gain"][0] == -INF
    out = run_gradient(hist, ns, [0], np.zeros((1, 5), bool), nvb, isc, mcw=0.0)
    assert out["feature"][0] == -1  # every feature masked out


def test_gradient_ties():
    # within a feature: b=0 and b=2 give mirrored partitions with bit-equal gains
    stats = np.array([[1.0, 1, 1], [-1, 1, 1], [-1, 1, 1], [1, 1, 1]])
    codes = np.array([[0, 1, 2, 3]])
    hist, ns = _single_node(codes, stats, 6)
    out = run_gradient(hist, ns, [0], np.ones((1, 1), bool), np.array([4], np.int32),
                       np.zeros(1, bool), mcw=0.0)
    assert out["bin_idx"][0] == 0 and not out["default_left"][0]
    # across features: duplicated columns, the lowest index wins
    rng = np.random.default_rng(3)
    codes, nvb = random_codes(rng, 30, 1, 10)
    codes = np.repeat(codes, 3, axis=0)
    nvb = np.repeat(nvb, 3)
    stats = gradient_stats(rng, 30, integer=True)
    hist, ns = _single_node(codes, stats, 10)
    mask = np.array([[False, True, True]])
    out = run_gradient(hist, ns, [0], mask, nvb, np.zeros(3, bool), mcw=0.0)
    assert out["feature"][0] == 1
    # one-hot without missing rows: (c right, missing left) is found first
    codes = np.array([[0, 0, 1, 1, 2, 2]])
    stats = np.array([[1.0, 1, 1], [1, 1, 1], [-1, 1, 1], [-1, 1, 1], [0, 1, 1], [0, 1, 1]])
    hist, ns = _single_node(codes, stats, 4)
    out = run_gradient(hist, ns, [0], np.ones((1, 1), bool), np.array([3], np.int32),
                       np.ones(1, bool), mcw=0.0, lam=0.0)
    assert out["default_left"][0] and bits_to_set(out["cat_bitset"][0]) == {1, 2}


def test_leaf_values_gradient():
    rng = np.random.default_rng(4)
    sums = np.column_stack([rng.normal(size=20) * 5, rng.uniform(0, 4, 20), np.ones(20)])
    for lam, alpha, mds, mcw in [(1, 0, 0, 0), (0.5, 2, 0, 1), (1, 1, 0.3, 2)]:
        w = SG.leaf_values_gradient(sums, lam, alpha, mds, mcw, np.empty(20))
        for (G, H, _), wi in zip(sums, w):
            t = np.sign(G) * max(abs(G) - alpha, 0)
            exp = 0.0 if H < mcw or H <= 0 else -t / (H + lam)
            if mds > 0:
                exp = float(np.clip(exp, -mds, mds))
            assert wi == pytest.approx(exp, rel=1e-15, abs=0)


# --------------------------------------------------------------------------------------
# boosting: xgboost reference
# --------------------------------------------------------------------------------------
def _xgb_root(X, y, weight=None, **params):
    xgb = pytest.importorskip("xgboost")
    p = dict(tree_method="hist", max_depth=1, learning_rate=1.0, base_score=0.0,
             objective="reg:squarederror", nthread=1, max_bin=256)
    p.update(params)
    dm = xgb.DMatrix(X, label=y, weight=weight, enable_categorical=True, missing=np.nan)
    booster = xgb.train(p, dm, 1)
    t = json.loads(booster.save_raw("json"))["learner"]["gradient_booster"]["model"]["trees"][
        0
    ]
    return t


XGB_CASES = [
    dict(reg_lambda=1.0, min_child_weight=1.0),
    dict(reg_lambda=0.5, reg_alpha=2.0, min_child_weight=0.0),
    dict(reg_lambda=1.0, max_delta_step=0.5, min_child_weight=1.0),
    dict(reg_lambda=2.0, reg_alpha=1.0, max_delta_step=0.7, min_child_weight=3.0),
]


@pytest.mark.parametrize("case", range(len(XGB_CASES)))
@pytest.mark.parametrize("kind", ["numeric", "onehot", "partition"])
def test_gradient_matches_xgboost_stump(case, kind):
    pd = pytest.importorskip("pandas")
    params = XGB_CASES[case]
    rng = np.random.default_rng(10 * case + len(kind))
    n_rows, max_bin = 60, 16
    y = rng.normal(size=n_rows) * 3
    w = rng.uniform(0.5, 2.0, n_rows)
    if kind == "numeric":
        V = np.stack([rng.permutation(np.arange(n_rows) % 10) for _ in range(3)], 1)
        X = V.astype(float)
        X[rng.random(X.shape) < 0.15] = np.nan
        frame = X
        isc = np.zeros(3, bool)
        nvb = np.full(3, 10, np.int32)
    else:
        n_cat = 3 if kind == "onehot" else 7
        V = np.stack([rng.permutation(np.arange(n_rows) % n_cat) for _ in range(2)], 1)
        X = V.astype(float)
        X[rng.random(X.shape) < 0.15] = np.nan
        frame = pd.DataFrame({f"c{j}": pd.Categorical.from_codes(
            np.where(np.isnan(X[:, j]), -1, X[:, j]).astype(int), list(range(n_cat)))
            for j in range(2)})
        isc = np.ones(2, bool)
        nvb = np.full(2, n_cat, np.int32)
    t = _xgb_root(frame, y, weight=w, max_cat_to_onehot=4, **params)
    codes = np.where(np.isnan(X), max_bin - 1, X).T.astype(np.int64)
    stats = np.column_stack([-w * y, w, np.ones(n_rows)])
    hist, ns = _single_node(codes, stats, max_bin)
    out = run_gradient(hist, ns, [0], np.ones((1, len(nvb)), bool), nvb, isc,
                       lam=params["reg_lambda"], alpha=params.get("reg_alpha", 0.0),
                       mds=params.get("max_delta_step", 0.0), mcw=params["min_child_weight"],
                       onehot=4, mct=64)
    if t["left_children"][0] == -1:
        assert out["feature"][0] == -1 or out["gain"][0] <= 1e-6
        return
    f = t["split_indices"][0]
    assert out["feature"][0] == f
    np.testing.assert_allclose(out["gain"][0], t["loss_changes"][0], rtol=1e-5)
    x = X[:, f]
    miss = np.isnan(x)
    if kind == "numeric":
        xgb_left = x < t["split_conditions"][0]
    else:
        seg, size = t["categories_segments"][0], t["categories_sizes"][0]
        xgb_left = ~np.isin(x, t["categories"][seg:seg + size])  # xgboost: set -> right
    xgb_left[miss] = bool(t["default_left"][0])
    ours = partition_left(codes[f], max_bin - 1, out, 0)
    np.testing.assert_array_equal(ours, xgb_left)
    if miss.any():
        assert bool(out["default_left"][0]) == bool(t["default_left"][0])
    leaves = SG.leaf_values_gradient(np.vstack([out["left_sums"], out["right_sums"]]),
                                    params["reg_lambda"], params.get("reg_alpha", 0.0),
                                    params.get("max_delta_step", 0.0),
                                    params["min_child_weight"], np.empty(2))
    expected = [t["base_weights"][t["left_children"][0]],
                t["base_weights"][t["right_children"][0]]]
    np.testing.assert_allclose(leaves, expected, rtol=1e-5, atol=1e-6)


# --------------------------------------------------------------------------------------
# CART: twin
# --------------------------------------------------------------------------------------
CART_CASES = [(0, 2), (0, 4), (1, 2), (1, 3), (2, 0), (3, 0), (4, 3), (4, 6), (5, 4), (5, 6)]


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("crit,K", CART_CASES)
def test_cart_matches_twin(seed, crit, K):
    rng = np.random.default_rng(1000 + seed)
    max_bin = int(rng.choice([3, 8, 40]))
    n_features, n_slots, n_rows = 6, 3, int(rng.integers(4, 100))
    codes, nvb = random_codes(rng, n_rows, n_features, max_bin)
    isc = rng.random(n_features) < 0.4
    stats, _, _ = cart_stats(rng, n_rows, crit, K, weighted=seed % 2 == 0)
    slot_of_row = rng.integers(0, n_slots, n_rows)
    hist, node_sums = rows_to_hist(codes, stats, slot_of_row, n_slots, max_bin)
    slots = [2, 0, 1]
    mask = rng.random((3, n_features)) < 0.8
    msl = float(rng.choice([1, 2, 5]))
    mwl = float(rng.choice([0.0, 1.5]))
    tw = float(rng.uniform(50, 100))
    random_bin = None
    if seed >= 4:
        random_bin = np.full((3, n_features), -1, np.int32)
        SC.draw_random_bins(hist, np.array(slots, np.int32), full_columns(3, n_features),
                           nvb, isc, hist.shape[3] - 1, rng.random((3, n_features)),
                           random_bin)
    # absolute error: K lanes of label values (integers, so exact halves occur)
    values = np.sort(rng.choice(20, K, replace=False)).astype(float) if crit == 4 else None
    out = run_cart(hist, node_sums, slots, mask, nvb, isc, crit, K, msl, mwl, tw, random_bin,
                   values=values)
    twin = naive_cart(hist, node_sums, slots, mask, nvb, isc, crit, K, msl, mwl, tw,
                      random_bin, values)
    assert_matches_twin(out, twin, node_sums, slots, "improvement", "proxy")
    for e, (t, s) in enumerate(zip(twin, slots)):
        if t is None:
            assert out["impurity_decrease"][e] == -INF
            continue
        np.testing.assert_allclose(out["impurity_decrease"][e], t["dec"], rtol=1e-12,
                                   atol=1e-15)
        rows = slot_of_row == s
        go = partition_left(codes[t["feature"], rows], max_bin - 1, out, e)
        np.testing.assert_allclose(stats[rows][go].sum(0), out["left_sums"][e], atol=1e-9)


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("crit,K", [(0, 2), (2, 0)])
def test_cart_zero_after_gives_the_same_splits_and_zeroes_only_evaluated_slots(seed, crit, K):
    rng = np.random.default_rng(3000 + seed)
    n_features, n_slots, n_rows, max_bin = 5, 4, 80, 16
    codes, nvb = random_codes(rng, n_rows, n_features, max_bin)
    isc = rng.random(n_features) < 0.3
    stats, _, _ = cart_stats(rng, n_rows, crit, K)
    hist, node_sums = rows_to_hist(codes, stats, rng.integers(0, n_slots, n_rows), n_slots,
                                   max_bin)
    slots = [2, 0, 1]
    mask = rng.random((3, n_features)) < 0.7  # unsearched columns are zeroed too
    kept = hist.copy()
    want = run_cart(kept, node_sums, slots, mask, nvb, isc, crit, K)
    zeroed = hist.copy()
    got = run_cart(zeroed, node_sums, slots, mask, nvb, isc, crit, K, zero_after=True)
    for name in want:
        np.testing.assert_array_equal(got[name], want[name], err_msg=name)
    np.testing.assert_array_equal(kept, hist)
    assert not zeroed[slots].any()
    np.testing.assert_array_equal(zeroed[3], hist[3])
    assert hist[slots].any()


def test_draw_random_bins_stays_inside_the_node_range():
    rng = np.random.default_rng(5)
    codes, nvb = random_codes(rng, 40, 8, 20)
    stats, _, _ = cart_stats(rng, 40, 0, 2)
    hist, _ = _single_node(codes, stats, 20)
    isc = np.zeros(8, bool)
    isc[0] = True
    rb = np.empty((1, 8), np.int32)
    for u in (0.0, 0.5, 0.999999):
        SC.draw_random_bins(hist, np.zeros(1, np.int32), full_columns(1, 8), nvb, isc, 2,
                           np.full((1, 8), u), rb)
        assert rb[0, 0] == -1
        for f in range(1, 8):
            nonempty = np.flatnonzero(hist[0, f, :nvb[f], 2] > 0)
            if len(nonempty) < 2:
                assert rb[0, f] == nvb[f] - 1
            else:
                assert nonempty[0] <= rb[0, f] < nonempty[-1]


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("crit,K", CART_CASES)
def test_cart_on_sampled_columns_equals_full_histogram_with_mask(seed, crit, K):
    """A node holding only its sampled features' histograms (column q is feature
    column_feature[e, q]) gets the split the full histogram gives with only those
    features allowed, extra-trees thresholds included."""
    rng = np.random.default_rng(2000 + seed)
    max_bin = int(rng.choice([8, 40]))
    n_features, n_slots, n_rows, k = 7, 3, int(rng.integers(20, 120)), 3
    codes, nvb = random_codes(rng, n_rows, n_features, max_bin)
    isc = rng.random(n_features) < 0.3
    stats, _, _ = cart_stats(rng, n_rows, crit, K, weighted=seed % 2 == 0)
    slot_of_row = rng.integers(0, n_slots, n_rows)
    full, node_sums = rows_to_hist(codes, stats, slot_of_row, n_slots, max_bin)
    slots = np.array([2, 0, 1], np.int32)
    picked = np.sort(np.array([rng.choice(n_features, k, replace=False) for _ in range(3)]),
                     axis=1).astype(np.int32)
    # compact histograms: slot s holds the columns of the node evaluated from it
    compact = np.zeros((n_slots, k) + full.shape[2:])
    for e, s in enumerate(slots):
        compact[s] = full[s, picked[e]]
    mask_full = np.zeros((3, n_features), bool)
    mask_full[np.arange(3)[:, None], picked] = True
    rb_full = rb_compact = None
    if seed >= 2:
        u = rng.random((3, k))
        u_full = np.zeros((3, n_features))
        u_full[np.arange(3)[:, None], picked] = u
        rb_full = np.empty((3, n_features), np.int32)
        rb_compact = np.empty((3, k), np.int32)
        SC.draw_random_bins(full, slots, full_columns(3, n_features), nvb, isc,
                           full.shape[3] - 1, u_full, rb_full)
        SC.draw_random_bins(compact, slots, picked, nvb, isc, compact.shape[3] - 1, u,
                           rb_compact)
        np.testing.assert_array_equal(rb_full[np.arange(3)[:, None], picked], rb_compact)
    tw = float(rng.uniform(50, 100))
    values = np.arange(K, dtype=float) * 1.5 if crit == 4 else None
    want = run_cart(full, node_sums, slots, mask_full, nvb, isc, crit, K, total_weight=tw,
                    random_bin=rb_full, values=values)
    got = run_cart(compact, node_sums, slots, np.ones((3, k), bool), nvb, isc, crit, K,
                   total_weight=tw, random_bin=rb_compact, column_feature=picked,
                   values=values)
    for name in want:
        np.testing.assert_array_equal(got[name], want[name], err_msg=name)
    assert (got["feature"] >= 0).any()


def test_cart_edge_cases():
    # all missing, and a constant feature with one value bin
    stats, _, _ = cart_stats(np.random.default_rng(6), 10, 0, 2)
    codes = np.vstack([np.full(10, 5), np.zeros(10, np.int64)])
    hist, ns = _single_node(codes, stats, 6)
    out = run_cart(hist, ns, [0], np.ones((1, 2), bool), np.array([5, 1], np.int32),
                   np.zeros(2, bool), 0, 2)
    assert out["feature"][0] == -1 and out["improvement"][0] == -INF
    assert out["impurity_decrease"][0] == -INF
    # constant feature + missing: values left, missing right, reported at bin nvb-1 = 0
    codes[1, :3] = 5
    hist, ns = _single_node(codes, stats, 6)
    out = run_cart(hist, ns, [0], np.ones((1, 2), bool), np.array([5, 1], np.int32),
                   np.zeros(2, bool), 0, 2)
    assert out["feature"][0] == 1
    assert out["bin_idx"][0] == 0 and not out["default_left"][0]
    np.testing.assert_allclose(out["right_sums"][0], stats[:3].sum(0))
    # min_samples_leaf blocks every split
    rng = np.random.default_rng(7)
    codes, nvb = random_codes(rng, 30, 4, 10)
    stats, _, _ = cart_stats(rng, 30, 2, 0)
    hist, ns = _single_node(codes, stats, 10)
    out = run_cart(hist, ns, [0], np.ones((1, 4), bool), nvb, np.zeros(4, bool), 2, 0,
                   msl=16.0)
    assert out["feature"][0] == -1


def test_node_impurity_matches_formulas():
    v = np.array([[3.0, 1.0, 0.0, 4.0], [0.0, 0.0, 0.0, 0.0], [1.0, 1.0, 2.0, 4.0]])
    out = SC.node_impurity(v, 0, 3, np.empty(0), np.empty(3))
    np.testing.assert_allclose(out, [1 - (9 + 1) / 16, 0.0, 1 - 6 / 16])
    out = SC.node_impurity(v, 1, 3, np.empty(0), np.empty(3))
    np.testing.assert_allclose(out, [-(0.75 * np.log2(0.75) + 0.25 * np.log2(0.25)), 0.0, 1.5])
    r = np.array([[2.0, 4.0, 10.0, 2.0]])
    np.testing.assert_allclose(
        SC.node_impurity(r, 2, 0, np.empty(0), np.empty(1)), [10 / 2 - 4.0]
    )


def _subset_best_proxy(codes_f, stats, crit, K):
    cats = np.unique(codes_f)
    P = stats.sum(0)
    best = -INF
    for r in range(1, len(cats)):
        for left in itertools.combinations(cats, r):
            m = np.isin(codes_f, left)
            L, R = stats[m].sum(0), P - stats[m].sum(0)
            if crit == 2:
                v = L[1] ** 2 / L[0] + R[1] ** 2 / R[0]
            else:
                wl, wr = L[:K].sum(), R[:K].sum()
                v = -(wl - (L[:K] ** 2).sum() / wl) - (wr - (R[:K] ** 2).sum() / wr)
            best = max(best, v)
    return best


@pytest.mark.parametrize("crit,K", [(0, 2), (2, 0)])
def test_cart_categorical_sorted_prefix_is_optimal(crit, K):
    rng = np.random.default_rng(8)
    for _ in range(8):
        n_rows, n_cat = 50, 6
        codes = rng.integers(0, n_cat, (1, n_rows))
        stats, _, _ = cart_stats(rng, n_rows, crit, K, weighted=True)
        hist, ns = _single_node(codes, stats, 8)
        out = run_cart(hist, ns, [0], np.ones((1, 1), bool), np.array([n_cat], np.int32),
                       np.ones(1, bool), crit, K)
        np.testing.assert_allclose(out["improvement"][0],
                                   _subset_best_proxy(codes[0], stats, crit, K), rtol=1e-9)


# --------------------------------------------------------------------------------------
# CART: scikit-learn reference
# --------------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("criterion", ["gini", "entropy", "squared_error", "poisson"])
def test_cart_matches_sklearn_stump(seed, criterion):
    tree = pytest.importorskip("sklearn.tree")
    rng = np.random.default_rng(200 + seed)
    n_rows, n_features, max_bin = 50, 3, 12
    crit = S.CRITERIA[criterion]
    K = 3 if criterion in ("gini", "entropy") else 0
    X = rng.integers(0, 11, (n_rows, n_features)).astype(float)
    X[rng.random(X.shape) < (0.2 if seed % 2 else 0.0)] = np.nan
    stats, y, w = cart_stats(rng, n_rows, crit, K, weighted=seed >= 2)
    codes = np.where(np.isnan(X), max_bin - 1, X).T.astype(np.int64)
    hist, ns = _single_node(codes, stats, max_bin)
    out = run_cart(hist, ns, [0], np.ones((1, n_features), bool),
                   np.full(n_features, 11, np.int32), np.zeros(n_features, bool), crit, K,
                   msl=2.0)
    Est = tree.DecisionTreeRegressor if crit >= 2 else tree.DecisionTreeClassifier
    est = Est(max_depth=1, criterion=criterion, min_samples_leaf=2, random_state=0)
    est.fit(X, y, sample_weight=w)
    t = est.tree_
    assert t.node_count == 3
    f = t.feature[0]
    assert out["feature"][0] == f
    # same rows go left, missing included
    sk_left = est.apply(X) == t.children_left[0]
    np.testing.assert_array_equal(partition_left(codes[f], max_bin - 1, out, 0), sk_left)
    assert bool(out["default_left"][0]) == bool(t.missing_go_to_left[0])
    # threshold: bin b is the largest value on the left; sklearn uses the midpoint
    x = X[:, f]
    right_vals = x[(codes[f] > out["bin_idx"][0]) & ~np.isnan(x)]
    if len(right_vals):
        assert t.threshold[0] == pytest.approx((out["bin_idx"][0] + right_vals.min()) / 2)
    else:
        assert t.threshold[0] == INF
    imp = SC.node_impurity(np.vstack([ns, out["left_sums"], out["right_sums"]]), crit, K,
                          np.empty(0), np.empty(3))
    np.testing.assert_allclose(imp, t.impurity[[0, 1, 2]], rtol=1e-9, atol=1e-12)
    wn = t.weighted_n_node_samples
    expected = (wn[0] * t.impurity[0] - wn[1] * t.impurity[1] - wn[2] * t.impurity[2]) / wn[0]
    np.testing.assert_allclose(out["impurity_decrease"][0], expected, rtol=1e-9)


def naive_monotone_gradient(hist, node_sums, slots, mask, nvb, monotone, lower, upper,
                            lam=1.0, mcw=1.0):
    """Numeric features only: XGBoost's TreeEvaluator with monotone constraints, spelled
    out: weights clipped to the node's bounds, gain at those weights, and splits against
    a feature's direction invalid."""
    mb = hist.shape[2] - 1

    def weight(G, H, lo, hi):
        w = 0.0 if H < mcw or H <= 0 else -G / (H + lam)
        return min(max(w, lo), hi)

    def given(G, H, w):
        return 0.0 if H <= 0 else -(2 * G * w + (H + lam) * w * w)

    results = []
    for e, s in enumerate(slots):
        G, H = node_sums[s]
        lo, hi = lower[e], upper[e]
        parent = given(G, H, weight(G, H, lo, hi))
        best = None
        for f in range(hist.shape[1]):
            if not mask[e, f]:
                continue
            h = hist[s, f]
            cands = []
            L = [0.0, 0.0]
            for b in range(int(nvb[f])):
                L = [L[0] + h[b, 0], L[1] + h[b, 1]]
                if h[b, 0] != 0 or h[b, 1] != 0:
                    cands.append((tuple(L), b, False))
            if h[mb, 0] != 0 or h[mb, 1] != 0:
                R = [0.0, 0.0]
                for i in range(int(nvb[f]) - 1, 0, -1):
                    R = [R[0] + h[i, 0], R[1] + h[i, 1]]
                    if h[i, 0] != 0 or h[i, 1] != 0:
                        cands.append(((G - R[0], H - R[1]), i - 1, True))
            for (gl, hl), b, dl in cands:
                gr, hr = G - gl, H - hl
                if hl <= 0 or hr <= 0 or hl < mcw or hr < mcw:
                    continue
                wl, wr = weight(gl, hl, lo, hi), weight(gr, hr, lo, hi)
                if (monotone[f] > 0 and wl > wr) or (monotone[f] < 0 and wl < wr):
                    continue
                v = given(gl, hl, wl) + given(gr, hr, wr) - parent
                if best is None or v > best["gain"]:
                    best = dict(gain=v, feature=f, bin=b, dl=dl, left=None, L=(gl, hl))
        results.append(best)
    return results


@pytest.mark.parametrize("seed", range(8))
def test_gradient_with_monotone_constraints_matches_twin(seed):
    rng = np.random.default_rng(100 + seed)
    max_bin = int(rng.choice([4, 16, 64]))
    n_features, n_slots, n_rows = 6, 3, int(rng.integers(20, 200))
    codes, nvb = random_codes(rng, n_rows, n_features, max_bin)
    stats = gradient_stats(rng, n_rows)
    slot_of_row = rng.integers(0, n_slots, n_rows)
    hist, node_sums = rows_to_hist(codes, stats, slot_of_row, n_slots, max_bin)
    slots = [2, 0, 1]
    mask = rng.random((3, n_features)) < 0.9
    isc = np.zeros(n_features, bool)
    monotone = rng.integers(-1, 2, n_features).astype(np.int8)
    lower = np.array([-np.inf, -0.05, -np.inf])
    upper = np.array([np.inf, 0.3, 0.02])
    out = alloc_outputs(3, 2, max_bin)
    SG.find_splits_gradient(hist, node_sums, np.asarray(slots, np.int32), mask, nvb, isc,
                            max_bin - 1, 1.0, 0.0, 0.0, 1.0, 4, 64, monotone, lower, upper,
                            *out.values())
    twin = naive_monotone_gradient(hist, node_sums, slots, mask, nvb, monotone, lower,
                                   upper)
    assert_matches_twin(out, twin, node_sums, slots, "gain", "gain")


def _scan_with_general_gain(h, node_sum, nvb, missing_bin, parent, lam, mcw):
    """The numeric scan as written before its plain twin: _grad_gain per non-empty bin,
    forward then backward with strict improvement (plain Python around the kernel's
    own gain function)."""
    cons = np.zeros(4)
    g, hs = node_sum
    best, best_bin, best_dl, left = -np.inf, -1, False, None
    gl = hl = 0.0
    for b in range(nvb):
        gl += h[b, 0]
        hl += h[b, 1]
        if h[b, 0] == 0.0 and h[b, 1] == 0.0:
            continue
        gain = SG._grad_gain(gl, hl, g, hs, parent, cons, lam, 0.0, 0.0, mcw)
        if gain > best:
            best, best_bin, best_dl, left = gain, b, False, (gl, hl)
    if h[missing_bin, 0] != 0.0 or h[missing_bin, 1] != 0.0:
        gr = hr = 0.0
        for i in range(nvb - 1, 0, -1):
            gr += h[i, 0]
            hr += h[i, 1]
            if h[i, 0] == 0.0 and h[i, 1] == 0.0:
                continue
            gl, hl = g - gr, hs - hr
            gain = SG._grad_gain(gl, hl, g, hs, parent, cons, lam, 0.0, 0.0, mcw)
            if gain > best:
                best, best_bin, best_dl, left = gain, i - 1, True, (gl, hl)
    return best, best_bin, best_dl, left


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("lam, mcw", [(0.0, 0.0), (1.0, 1.0), (0.0, 3.0), (5.0, 0.0)])
def test_plain_numeric_scan_is_bit_equal_to_the_general_gain(seed, lam, mcw):
    """The default-regularisation scan (no constraint, alpha or max_delta_step) gives the
    same gain bits, bin, direction and left sums as the general gain function, with empty
    bins, ties (repeated bins), lambda 0 (an empty side divides by 0) and a missing bin."""
    rng = np.random.default_rng(seed)
    nvb, max_bin = 12, 16
    h = np.zeros((max_bin, 2))
    filled = rng.random(nvb) < 0.6
    h[:nvb, 0] = np.where(filled, rng.normal(0, 2, nvb).round(1), 0.0)
    h[:nvb, 1] = np.where(filled, rng.integers(1, 4, nvb), 0.0)
    h[nvb // 2] = h[1]  # a tie between two thresholds
    if seed % 2:
        h[max_bin - 1] = (rng.normal(), 2.0)  # missing values
    node_sum = h.sum(axis=0)
    parent = SG.node_score(node_sum[0], node_sum[1], lam, 0.0, 0.0, mcw)
    left = np.full(2, np.nan)
    got = SG._grad_numeric(h, node_sum, nvb, max_bin - 1, parent, np.zeros(4), lam, 0.0,
                           0.0, mcw, left)
    want = _scan_with_general_gain(h, node_sum, nvb, max_bin - 1, parent, lam, mcw)
    assert got[1:] == want[1:3]
    assert got[0] == want[0] or (got[0] == -np.inf and want[0] == -np.inf)
    if want[1] >= 0:
        assert (left[0], left[1]) == want[3]
    else:
        assert np.isnan(left).all()


def test_plain_numeric_scan_keeps_the_first_of_tied_splits():
    """A forward split (missing right) and a backward one (missing left) of equal gain:
    the forward one is kept, as the general scan keeps it."""
    h = np.zeros((8, 2))
    h[2], h[3], h[7] = (2.0, 2.0), (3.0, 2.0), (-2.0, 1.0)  # bin 7: missing values
    node_sum = h.sum(axis=0)
    parent = SG.node_score(node_sum[0], node_sum[1], 1.0, 0.0, 0.0, 0.0)
    left = np.zeros(2)
    got = SG._grad_numeric(h, node_sum, 4, 7, parent, np.zeros(4), 1.0, 0.0, 0.0, 0.0, left)
    want = _scan_with_general_gain(h, node_sum, 4, 7, parent, 1.0, 0.0)
    assert got == (5.5, 3, False) == want[:3]
    assert tuple(left) == want[3] == (5.0, 4.0)
