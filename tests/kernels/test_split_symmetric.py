"""The level gains of symmetric trees against a plain NumPy twin."""
import numpy as np
import pytest

from oocboost.kernels.split_symmetric import level_gains


def _score(g, h, lam, alpha):
    t = np.sign(g) * max(abs(g) - alpha, 0.0)
    return t * t / (h + lam) if h > 0 else 0.0


def _naive(hist, node_sums, slots, group, allowed, nvb, is_cat, missing_bin, lam, alpha,
           n_groups):
    n_features = len(nvb)
    out = np.full((n_groups, n_features, missing_bin + 1, 2), -np.inf)
    for g in range(n_groups):
        for f in range(n_features):
            if is_cat[f] or nvb[f] < 2 or not allowed[g, f]:
                continue
            for b in range(nvb[f] - 1):
                for d in range(2):
                    total = 0.0
                    for e in np.flatnonzero(group == g):
                        s = slots[e]
                        G, H = node_sums[s]
                        left = hist[s, f, :b + 1].sum(axis=0) + d * hist[s, f, missing_bin]
                        total += (_score(left[0], left[1], lam, alpha)
                                  + _score(G - left[0], H - left[1], lam, alpha)
                                  - _score(G, H, lam, alpha))
                    out[g, f, b, d] = total
    return out


@pytest.mark.parametrize("seed", range(4))
def test_level_gains_equal_the_naive_twin(seed):
    rng = np.random.default_rng(seed)
    n_slots, n_features, max_bin = 6, 4, 12
    hist = np.zeros((n_slots, n_features, max_bin, 2))
    hist[..., 0] = rng.normal(size=(n_slots, n_features, max_bin))
    hist[..., 1] = rng.uniform(0, 2, size=(n_slots, n_features, max_bin))
    hist[rng.random(hist.shape[:3]) < 0.3] = 0.0      # empty bins, empty children
    node_sums = hist[:, 0].sum(axis=1)
    for f in range(1, n_features):                     # every feature holds every row
        hist[:, f, -1] += node_sums - hist[:, f].sum(axis=1)
    nvb = np.array([11, 5, 1, 8], np.int32)
    is_cat = np.array([False, False, False, True])
    slots = np.array([5, 1, 2, 0], np.int32)
    group = np.array([0, 1, 0, 1], np.int64)
    allowed = np.array([[True, True, True, True], [False, True, True, True]])
    out = np.empty((2, n_features, max_bin, 2))
    starts = np.arange(n_features + 1, dtype=np.int64) * max_bin
    level_gains(hist.reshape(n_slots, n_features * max_bin, 2), starts, node_sums, slots,
                group, allowed, nvb, is_cat, max_bin - 1, 1.5, 0.2, 0.0, out)
    want = _naive(hist, node_sums, slots, group, allowed, nvb, is_cat, max_bin - 1, 1.5,
                  0.2, 2)
    np.testing.assert_allclose(out, want, rtol=1e-12, atol=1e-12)
