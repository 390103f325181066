"""Categorical split search: LightGBM's partition search against a naive twin and a
brute-force enumeration, and wide categorical features (codes past ``max_bin - 1``, their
histograms over several columns) in the boosting and CART searches.
"""
import itertools

import numpy as np
import pytest

from oocboost.common import category_code, hist_column_starts
from oocboost.engine.policies import full_columns
from oocboost.kernels import split as S
from oocboost.kernels import split_cart as SC
from oocboost.kernels import split_gradient as SG

INF = float("inf")


def lightgbm_params(onehot=4, threshold=32, smooth=10.0, cat_l2=10.0, min_group=100):
    return np.array([SG.CAT_SEARCH_LIGHTGBM, onehot, threshold, smooth, cat_l2, min_group],
                     dtype=np.float64)


def flat_hist(codes, stats, max_bin, n_value_bins):
    """Histogram of one node in the column layout: feature f's code c at column
    ``starts[f] + c // max_bin``, bin ``c % max_bin``; node sums from the rows."""
    starts = hist_column_starts(n_value_bins, max_bin)
    hist = np.zeros((1, int(starts[-1]), max_bin, stats.shape[1]))
    for f in range(codes.shape[0]):
        np.add.at(hist, (0, starts[f] + codes[f] // max_bin, codes[f] % max_bin), stats)
    return hist, stats.sum(axis=0)[None, :], starts


def run_gradient(hist, node_sums, nvb, isc, starts, cat_params, lam=0.0, mcw=0.0,
                 rows_per_hessian=1.0):
    n_words = S.n_bitset_words(max(hist.shape[2], int(nvb.max())))
    out = dict(gain=np.empty(1), feature=np.empty(1, np.int32), bin_idx=np.empty(1, np.int32),
               default_left=np.empty(1, bool), is_cat=np.empty(1, bool),
               cat_bitset=np.empty((1, n_words), np.uint32), left_sums=np.empty((1, 2)),
               right_sums=np.empty((1, 2)))
    SG.find_splits_gradient(hist, node_sums, np.zeros(1, np.int32),
                            np.ones((1, len(nvb)), bool), nvb, isc, hist.shape[2] - 1, lam,
                            0.0, 0.0, mcw, int(cat_params[1]), int(cat_params[2]),
                            np.zeros(0, np.int8), np.zeros(1), np.zeros(1), *out.values(),
                            column_of=starts, cat_params=cat_params,
                            rows_per_hessian=np.array([rows_per_hessian]))
    return out


def bits_to_set(bits):
    return {
        32 * i + j for i, word in enumerate(bits) for j in range(32) if (int(word) >> j) & 1
    }


def score(g, h, lam):
    return g * g / (h + lam) if h > 0 else 0.0


# --------------------------------------------------------------------------------------
# naive twin: LightGBM's search as the module docstring of kernels/split.py states it
# --------------------------------------------------------------------------------------
def naive_lightgbm(G, H, g_code, h_code, codes, mg, mh, lam, mcw, smooth, cat_l2,
                   min_group, threshold, rows_per_hessian):
    """Returns (gain, default_left, left set) for one categorical feature of one node
    whose sums are (G, H). ``g_code``/``h_code``: sums per value code; ``codes``: the
    value codes; (mg, mh): the missing code's sums."""
    n_node = round(H * rows_per_hessian)
    used = [c for c in codes if round(h_code[c] * rows_per_hessian) >= smooth
            and h_code[c] > 0]
    rare = [c for c in codes if c not in used]
    mg += sum(g_code[c] for c in rare)
    mh += sum(h_code[c] for c in rare)
    used.sort(key=lambda c: g_code[c] / (h_code[c] + smooth))   # stable
    max_cats = min(threshold, (len(used) + 1) // 2)
    parent = score(G, H, lam)
    best = (-INF, False, set())
    has_missing = mh > 0 or mg != 0
    for order in (used, used[::-1]):
        for miss_left in ((False, True) if has_missing else (False,)):
            gl, hl = (mg, mh) if miss_left else (0.0, 0.0)
            n_left = round(hl * rows_per_hessian)
            group = 0
            for i, c in enumerate(order[:max_cats]):
                gl += g_code[c]
                hl += h_code[c]
                n_c = round(h_code[c] * rows_per_hessian)
                n_left += n_c
                group += n_c
                if n_node - n_left < min_group:
                    break
                if group < min_group:
                    continue
                group = 0
                hr = H - hl
                if hl <= 0 or hr <= 0 or hl < mcw or hr < mcw:
                    continue
                gain = score(gl, hl, lam + cat_l2) + score(G - gl, hr, lam + cat_l2) - parent
                if gain > best[0]:
                    left = set(order[: i + 1]) | (set(rare) if miss_left else set())
                    best = (gain, miss_left, left)
    return best


def random_feature(rng, n_rows, n_codes, max_bin, p_missing=0.15, skew=1.5):
    """Codes of one categorical feature with skewed category frequencies (some rare,
    some absent) and missing values; never the missing code as a value."""
    weights = rng.random(n_codes) ** skew
    weights[rng.random(n_codes) < 0.1] = 0.0
    index = rng.choice(n_codes, n_rows, p=weights / weights.sum())
    codes = category_code(index, max_bin) if n_codes > max_bin - 1 else index
    codes = np.where(rng.random(n_rows) < p_missing, max_bin - 1, codes)
    return codes.astype(np.int64)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("n_codes,max_bin", [(12, 16), (40, 16), (300, 256)])
def test_lightgbm_search_equals_naive_twin(seed, n_codes, max_bin):
    rng = np.random.default_rng(seed)
    n_rows = 3000
    codes = random_feature(rng, n_rows, n_codes, max_bin)[None, :]
    stats = np.column_stack([rng.normal(size=n_rows) + (codes[0] % 5 - 2),
                             rng.uniform(0.2, 1.0, n_rows)])
    nvb = np.array([n_codes if n_codes <= max_bin - 1 else n_codes + 1], np.int32)
    hist, sums, starts = flat_hist(codes, stats, max_bin, nvb)
    smooth, cat_l2, min_group, threshold = (10.0, 10.0, 50, 32) if seed % 2 else \
        (3.0, 1.0, 10, 8)
    rows_per_hessian = n_rows / sums[0, 1]
    out = run_gradient(hist, sums, nvb, np.ones(1, bool), starts,
                       lightgbm_params(4, threshold, smooth, cat_l2, min_group), lam=1.0,
                       mcw=1.0, rows_per_hessian=rows_per_hessian)
    flat = hist[0].reshape(-1, 2)
    value_codes = [c for c in range(nvb[0]) if c != max_bin - 1]
    gain, dl, left = naive_lightgbm(
        sums[0, 0],
        sums[0, 1],
        flat[:, 0],
        flat[:, 1],
        value_codes,
        flat[max_bin - 1, 0],
        flat[max_bin - 1, 1],
        1.0,
        1.0,
        smooth,
        cat_l2,
        min_group,
        threshold,
        rows_per_hessian,
    )
    assert gain > -INF
    np.testing.assert_allclose(out["gain"][0], gain, rtol=1e-12)
    assert bool(out["default_left"][0]) == dl
    got = bits_to_set(out["cat_bitset"][0])
    # empty categories follow the missing values too; they hold no rows
    empty = {c for c in value_codes if flat[c, 1] == 0}
    assert got - empty == left - empty
    assert max_bin - 1 not in got
    in_left = np.isin(codes[0], sorted(got)) | ((codes[0] == max_bin - 1) & dl)
    np.testing.assert_allclose(out["left_sums"][0], stats[in_left].sum(axis=0), rtol=1e-9)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("threshold", [1, 3, 32])
def test_lightgbm_search_breaks_ties_as_a_stable_sort(seed, threshold):
    """Many categories with equal sort keys (equal counts and gradient sums): the
    categories scanned from each end, and so the set sent left, are those of a stable
    sort, as LightGBM's (the search keeps the ends instead of sorting everything)."""
    rng = np.random.default_rng(seed)
    n_codes, max_bin = 300, 256
    per_code = rng.integers(1, 4, n_codes) * 10        # 10, 20 or 30 rows a category
    codes = np.repeat(category_code(np.arange(n_codes), max_bin), per_code)[None, :]
    grad = np.repeat(rng.integers(-1, 2, n_codes).astype(float), per_code)
    stats = np.column_stack([grad, np.ones(codes.shape[1])])
    nvb = np.array([n_codes + 1], np.int32)
    hist, sums, starts = flat_hist(codes, stats, max_bin, nvb)
    out = run_gradient(hist, sums, nvb, np.ones(1, bool), starts,
                       lightgbm_params(4, threshold, 10.0, 1.0, 10), lam=1.0)
    flat = hist[0].reshape(-1, 2)
    value_codes = [c for c in range(nvb[0]) if c != max_bin - 1]
    gain, dl, left = naive_lightgbm(sums[0, 0], sums[0, 1], flat[:, 0], flat[:, 1],
                                    value_codes, flat[max_bin - 1, 0], flat[max_bin - 1, 1],
                                    1.0, 0.0, 10.0, 1.0, 10, threshold, 1.0)
    assert gain > -INF
    np.testing.assert_allclose(out["gain"][0], gain, rtol=1e-12)
    assert bits_to_set(out["cat_bitset"][0]) == left


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("n_codes,max_bin", [(7, 16), (9, 6)])
def test_lightgbm_search_is_optimal_without_smoothing(seed, n_codes, max_bin):
    """With lambda = cat_smooth = cat_l2 = 0 and no group minimum, sorting by G/H finds
    the best of all 2^k subsets with missing on either side (Fisher 1958): a brute force
    over the raw rows. (9, 6) makes the feature wide: codes 0..4 and 6..9, missing 5."""
    rng = np.random.default_rng(seed)
    n_rows = 80
    codes = random_feature(rng, n_rows, n_codes, max_bin, p_missing=0.2, skew=1.0)[None, :]
    stats = np.column_stack([rng.normal(size=n_rows), rng.uniform(0.05, 1.0, n_rows)])
    nvb = np.array([n_codes if n_codes <= max_bin - 1 else n_codes + 1], np.int32)
    hist, sums, starts = flat_hist(codes, stats, max_bin, nvb)
    out = run_gradient(hist, sums, nvb, np.ones(1, bool), starts,
                       lightgbm_params(1, 1000, 0.0, 0.0, 0))
    g, h = stats[:, 0], stats[:, 1]
    missing = codes[0] == max_bin - 1
    present = sorted(set(codes[0][~missing].tolist()))
    best = -INF
    for r in range(0, len(present) + 1):
        for left in itertools.combinations(present, r):
            for miss_left in (False, True):
                m = np.isin(codes[0], left) | (missing & miss_left)
                if m.all() or not m.any():
                    continue
                best = max(best, score(g[m].sum(), h[m].sum(), 0)
                           + score(g[~m].sum(), h[~m].sum(), 0) - score(g.sum(), h.sum(), 0))
    np.testing.assert_allclose(out["gain"][0], best, rtol=1e-9)


def test_lightgbm_group_minimum_and_onehot():
    """min_data_per_group: a candidate needs that many rows added since the last one
    and on the right; up to max_cat_to_onehot categories search one-vs-rest."""
    max_bin = 16
    codes = np.repeat(np.arange(6), [50, 50, 50, 50, 50, 50])[None, :]
    rng = np.random.default_rng(3)
    stats = np.column_stack([codes[0] * 1.0 + rng.normal(size=300) * 0.1, np.ones(300)])
    nvb = np.array([6], np.int32)
    hist, sums, starts = flat_hist(codes, stats, max_bin, nvb)
    free = run_gradient(hist, sums, nvb, np.ones(1, bool), starts,
                        lightgbm_params(4, 32, 0.0, 0.0, 0))
    assert bits_to_set(free["cat_bitset"][0]) in ({0, 1, 2}, {3, 4, 5})
    # groups of 120 rows: only prefixes of 3 categories (150 rows) qualify, the
    # right side must keep 120 rows
    grouped = run_gradient(hist, sums, nvb, np.ones(1, bool), starts,
                           lightgbm_params(4, 32, 0.0, 0.0, 120))
    assert bits_to_set(grouped["cat_bitset"][0]) in ({0, 1, 2}, {3, 4, 5})
    none = run_gradient(hist, sums, nvb, np.ones(1, bool), starts,
                        lightgbm_params(4, 32, 0.0, 0.0, 160))
    assert none["feature"][0] == -1
    onehot = run_gradient(hist, sums, nvb, np.ones(1, bool), starts,
                          lightgbm_params(6, 32, 0.0, 0.0, 0))
    assert len(bits_to_set(onehot["cat_bitset"][0])) == 5    # one category goes right


# --------------------------------------------------------------------------------------
# wide features in the boosting and CART searches
# --------------------------------------------------------------------------------------
@pytest.mark.parametrize("search", ["xgboost", "lightgbm"])
def test_wide_feature_between_narrow_ones_finds_its_split(search):
    """A feature of 600 categories between two numeric features: the search reads its
    bins across three columns, never takes the missing code for a category, and finds
    the partition that separates its two groups of categories."""
    rng = np.random.default_rng(11)
    max_bin, n_rows, n_codes = 256, 6000, 600
    index = rng.integers(0, n_codes, n_rows)
    wide = category_code(index, max_bin)
    wide[rng.random(n_rows) < 0.05] = max_bin - 1
    codes = np.stack([rng.integers(0, 30, n_rows), wide, rng.integers(0, 30, n_rows)])
    high = (index % 7) < 3
    stats = np.column_stack([np.where(high, -2.0, 1.0) + rng.normal(size=n_rows) * 0.1,
                             np.ones(n_rows)])
    nvb = np.array([30, n_codes + 1, 30], np.int32)
    hist, sums, starts = flat_hist(codes, stats, max_bin, nvb)
    assert starts.tolist() == [0, 1, 4, 5]
    params = (lightgbm_params(4, 1000, 1.0, 0.0, 0) if search == "lightgbm" else
              np.array([SG.CAT_SEARCH_XGBOOST, 4, 1000, 0, 0, 0], np.float64))
    out = run_gradient(hist, sums, nvb, np.array([False, True, False]), starts, params,
                       lam=1.0)
    assert out["feature"][0] == 1 and out["is_cat"][0]
    left = bits_to_set(out["cat_bitset"][0])
    assert max_bin - 1 not in left and max(left) <= n_codes
    goes_left = np.isin(codes[1], sorted(left))
    present = ~(codes[1] == max_bin - 1)
    # the split puts every "high" category on one side
    assert len(set(high[goes_left & present])) == 1
    assert len(set(high[~goes_left & present])) == 1


@pytest.mark.parametrize("crit,n_classes", [(S.CRITERION_GINI, 2),
                                            (S.CRITERION_SQUARED_ERROR, 0)])
def test_cart_wide_feature_equals_brute_force(crit, n_classes):
    """CART's sorted partition over a wide feature (codes 0..4, 6..9 with max_bin 6) is
    the best subset split by brute force over the raw rows."""
    rng = np.random.default_rng(5)
    max_bin, n_rows, n_codes = 6, 120, 9
    codes = random_feature(rng, n_rows, n_codes, max_bin, p_missing=0.0, skew=1.0)[None, :]
    if crit == S.CRITERION_GINI:
        y = (rng.random(n_rows) < 0.2 + 0.06 * (codes[0] % 10)).astype(int)
        stats = np.column_stack([1 - y, y, np.ones(n_rows)]).astype(float)
    else:
        y = codes[0] % 4 + rng.normal(size=n_rows)
        stats = np.column_stack([np.ones(n_rows), y, y * y, np.ones(n_rows)])
    nvb = np.array([n_codes + 1], np.int32)
    hist, sums, starts = flat_hist(codes, stats, max_bin, nvb)
    n_stats = stats.shape[1]
    out = dict(improvement=np.empty(1), impurity_decrease=np.empty(1),
               feature=np.empty(1, np.int32), bin_idx=np.empty(1, np.int32),
               default_left=np.empty(1, bool), is_cat=np.empty(1, bool),
               cat_bitset=np.empty((1, 1), np.uint32), left_sums=np.empty((1, n_stats)),
               right_sums=np.empty((1, n_stats)))
    SC.find_splits_cart(hist, sums, np.zeros(1, np.int32), full_columns(1, 1),
                        np.ones((1, 1), bool), nvb, np.ones(1, bool), max_bin - 1, crit,
                        n_classes, 1.0, 0.0, float(n_rows), np.zeros((0, 0), np.int32),
                        *out.values(), False, np.empty(0), column_of=starts)

    def impurity(m):
        if crit == S.CRITERION_GINI:
            p = y[m].mean()
            return 1 - p * p - (1 - p) ** 2
        return y[m].var()

    present = sorted(set(codes[0].tolist()))
    best = -INF
    for r in range(1, len(present)):
        for left in itertools.combinations(present, r):
            m = np.isin(codes[0], left)
            dec = impurity(np.ones(n_rows, bool)) - (m.sum() * impurity(m)
                                                     + (~m).sum() * impurity(~m)) / n_rows
            best = max(best, dec)
    np.testing.assert_allclose(out["impurity_decrease"][0], best, rtol=1e-9)
    assert max_bin - 1 not in bits_to_set(out["cat_bitset"][0])
