"""The naive Bayes kernel and the per-(node, feature) CART search against plain NumPy
twins."""
import numpy as np
import pytest

from oocboost.kernels.codes import PlaneCodes
from oocboost.kernels.naive_bayes import class_moments, naive_bayes_scores, nb_parameters
from oocboost.kernels.split_cart_features import find_feature_splits_cart


def _naive_moments(counts, count_row, bin_start, n_value_bins, missing_bin, is_cat,
                   cell_value, n_classes):
    out = np.zeros((len(count_row), len(bin_start), n_classes, 4))
    for t, r in enumerate(count_row):
        for f, s in enumerate(bin_start):
            if is_cat[f]:
                out[t, f, :, 0] = counts[r, s:s + max(n_value_bins[f], missing_bin + 1),
                                         :n_classes].sum(axis=0)
                continue
            for b in range(n_value_bins[f]):
                c = counts[r, s + b, :n_classes]
                out[t, f, :, 0] += c
                out[t, f, :, 1] += c * cell_value[s + b]
                out[t, f, :, 2] += c * cell_value[s + b] ** 2
            out[t, f, :, 3] = counts[r, s + missing_bin, :n_classes]
    return out


def _naive_scores(codes, node_of_row, table_of_node, counts, count_row, bin_start, is_cat,
                  missing_bin, cell_value, params, log_prior, out):
    for i in range(codes.shape[1]):
        t = table_of_node[node_of_row[i]]
        if t < 0:
            continue
        out[i] = log_prior[t]
        for f in range(codes.shape[0]):
            code = int(codes[f, i])
            p = params[t, f]
            if is_cat[f]:
                out[i] += np.log(counts[count_row[t], bin_start[f] + code, :2] + 1) + p[:, 2]
            elif code == missing_bin:
                out[i] += p[:, 3]
            else:
                out[i] += p[:, 2] - (cell_value[bin_start[f] + code] - p[:, 0]) ** 2 * p[:, 1]


@pytest.mark.parametrize("planes", [False, True])
def test_naive_bayes_kernels_equal_the_loops(planes):
    rng = np.random.default_rng(3)
    n_rows, max_bin, k = 300, 8, 2
    n_value_bins = np.array([5, 7, 12])           # the last feature spans two columns
    is_cat = np.array([False, False, True])
    starts = np.array([0, 1, 2, 4])
    codes = np.stack([rng.integers(0, b, n_rows) for b in n_value_bins]).astype(np.uint16)
    codes[0, ::17] = max_bin - 1                 # missing
    bin_start = starts[:-1] * max_bin
    counts = rng.integers(0, 5, size=(3, starts[-1] * max_bin, 4)).astype(np.float64)
    count_row = np.array([2, 0], np.int64)
    cell_value = rng.normal(size=starts[-1] * max_bin)
    moments = np.empty((2, 3, k, 4))
    class_moments(counts, count_row, bin_start, n_value_bins, max_bin - 1, is_cat,
                  cell_value, moments)
    np.testing.assert_allclose(moments, _naive_moments(counts, count_row, bin_start,
                                                       n_value_bins, max_bin - 1, is_cat,
                                                       cell_value, k), rtol=1e-12)
    params = rng.normal(size=(2, 3, k, 4))
    log_prior = rng.normal(size=(2, k))
    node_of_row = rng.integers(0, 4, n_rows).astype(np.int32)
    table_of_node = np.array([-1, 0, 1, -1], np.int32)
    args = (table_of_node, counts, count_row, bin_start, is_cat, max_bin - 1, cell_value,
            params, log_prior)
    want = np.full((n_rows, k), 7.0)
    _naive_scores(codes, node_of_row, *args, want)
    got = np.full((n_rows, k), 7.0)
    arg = PlaneCodes.from_array(codes, [False, False, True]) if planes else codes
    naive_bayes_scores(arg, node_of_row, *args, got)
    np.testing.assert_allclose(got, want, rtol=1e-12)


def _entropy(c):
    w = c.sum()
    p = c[c > 0] / w
    return float(-(p * np.log2(p)).sum()) if w > 0 else 0.0


def test_feature_splits_are_each_features_best():
    """Each (node, feature) pair's proxy is the best over thresholds and missing sides,
    as a brute-force scan of the left sets computes it."""
    rng = np.random.default_rng(5)
    max_bin, k, n_features = 6, 2, 3
    hist = np.zeros((2, n_features, max_bin, 4))
    hist[..., :k] = rng.integers(0, 9, size=(2, n_features, max_bin, k))
    hist[..., k] = hist[..., :k].sum(axis=-1)
    hist[:, 1, max_bin - 1] = 0                  # feature 1 has no missing values
    node_sums = hist[:, 0].sum(axis=1)[:, :k + 1]
    n_value_bins = np.full(n_features, max_bin - 1, np.int32)
    slots = np.array([1, 0], np.int32)
    proxy = np.empty((2, n_features))
    bins = np.empty((2, n_features), np.int32)
    dl = np.empty((2, n_features), bool)
    bits = np.empty((2, n_features, 1), np.uint32)
    left = np.zeros((2, n_features, k + 1))
    find_feature_splits_cart(hist, node_sums, slots, n_value_bins, np.zeros(n_features, bool),
                             max_bin - 1, 1, k, np.zeros(2), proxy, bins, dl, bits, left)
    for e, s in enumerate(slots):
        for f in range(n_features):
            h = hist[s, f, :, :k]
            total = node_sums[s, :k]
            best = -np.inf
            for b in range(max_bin - 2):
                for miss_left in (False, True):
                    lft = h[:b + 1].sum(axis=0) + (h[max_bin - 1] if miss_left else 0)
                    rgt = total - lft
                    if lft.sum() <= 0 or rgt.sum() <= 0:
                        continue
                    best = max(best, -lft.sum() * _entropy(lft) - rgt.sum() * _entropy(rgt))
            lft = h[:max_bin - 1].sum(axis=0)        # every value left, missing right
            if h[max_bin - 1].sum() > 0 and (total - lft).sum() > 0 and lft.sum() > 0:
                rgt = total - lft
                best = max(best, -lft.sum() * _entropy(lft) - rgt.sum() * _entropy(rgt))
            assert proxy[e, f] == pytest.approx(best, rel=1e-12), (e, f)


def _naive_parameters(moments, prior, is_cat, min_var, n_codes):
    """NumPy twin of ``nb_parameters`` (the vectorised form it replaced)."""
    n, sv, svv, miss = (moments[..., j] for j in range(4))
    safe = np.where(n > 0, n, 1.0)
    mean = sv / safe
    unbiased = (svv / safe - mean * mean) * n / np.where(n > 1, n - 1.0, 1.0)
    cat = is_cat[None, :, None]
    gauss = (n > 1) & (unbiased > 0) & ~cat
    var = np.maximum(unbiased, min_var[None, :, None])
    log_total = np.log(n + miss + 2.0)
    has_missing = miss.sum(axis=-1, keepdims=True) > 0
    present = np.where(has_missing, np.log(n + 1.0) - log_total, 0.0)
    params = np.empty(moments.shape)
    params[..., 0] = np.where(gauss, mean, 0.0)
    params[..., 1] = np.where(gauss, 0.5 / var, 0.0)
    params[..., 2] = np.where(cat, -np.log(n + n_codes[None, :, None]),
                              present - np.where(gauss, 0.5 * np.log(2.0 * np.pi * var), 0.0))
    params[..., 3] = np.where(cat, 0.0, np.log(miss + 1.0) - log_total)
    total = prior.sum(axis=1, keepdims=True)
    prior = np.where(total > 0, prior, 1.0)
    with np.errstate(divide="ignore"):
        log_prior = np.log(prior / prior.sum(axis=1, keepdims=True))
    return params, log_prior


@pytest.mark.parametrize("seed", range(3))
def test_parameters_kernel_equals_the_numpy_form(seed):
    """Classes of no weight, of one row, of one value (no variance), a variance under
    the floor, categorical features, missing values in some tables only, tables of no
    weight and a class of no weight: every parameter as the NumPy form's."""
    rng = np.random.default_rng(seed)
    n_tables, n_features, n_classes = 6, 7, 3
    n = rng.choice([0.0, 1.0, 2.0, 5.5, 40.0], size=(n_tables, n_features, n_classes))
    mean = rng.normal(size=n.shape)
    spread = rng.choice([0.0, 1e-9, 1.0], size=n.shape)
    moments = np.stack([n, n * mean, n * (mean * mean + spread),
                        np.where(rng.random(n.shape) < 0.3, rng.random(n.shape) * 4, 0.0)],
                       axis=-1)
    prior = rng.choice([0.0, 1.0, 7.5], size=(n_tables, n_classes))
    prior[0] = 0.0
    is_cat = np.array([False, True, False, False, True, False, False])
    min_var = rng.random(n_features) * 1e-3
    n_codes = rng.choice([3.0, 256.0], size=n_features)
    params = np.empty(moments.shape)
    log_prior = np.empty(prior.shape)
    nb_parameters(moments, prior, is_cat, min_var, n_codes, params, log_prior)
    want_params, want_log_prior = _naive_parameters(moments, prior, is_cat, min_var, n_codes)
    np.testing.assert_allclose(params, want_params, rtol=1e-14, atol=0)
    np.testing.assert_array_equal(log_prior, want_log_prior)
    assert np.isneginf(log_prior).any() and (params[..., 1] == 0).any()
