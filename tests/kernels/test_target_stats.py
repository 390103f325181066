"""kernels/target_stats.py against a naive twin: each permutation's order written out
(rows sorted by (slice, row)), each row's statistic from the rows before it."""
import numpy as np
import pytest

from oocboost.kernels.codes import read_only
from oocboost.kernels.sampling import uniform_per_row
from oocboost.kernels.target_stats import (
    add_slice_stats,
    ordered_target_stats,
    slices_of_rows,
)


def naive_slices(seed, n_permutations, n_slices, n_rows):
    out = np.empty((n_permutations, n_rows), np.int64)
    for p in range(n_permutations):
        u = np.empty(n_rows)
        uniform_per_row(seed, 1000003 + p, 0, u)
        out[p] = np.minimum((u * n_slices).astype(np.int64), n_slices - 1)
    return out


def naive_ordered_stats(index, label, slices, prior, a):
    """Mean over permutations of (sum of earlier rows' labels + a prior) / (count + a),
    "earlier" in the order (slice, row), same category only."""
    n_perm, n_rows = slices.shape
    out = np.full(n_rows, np.nan)
    values = np.zeros((n_perm, n_rows))
    for p in range(n_perm):
        order = sorted(range(n_rows), key=lambda i: (slices[p, i], i))
        sums, counts = {}, {}
        for i in order:
            c = index[i]
            if c < 0:
                continue
            values[p, i] = (sums.get(c, 0.0) + a * prior) / (counts.get(c, 0) + a)
            sums[c] = sums.get(c, 0.0) + label[i]
            counts[c] = counts.get(c, 0) + 1
    present = index >= 0
    out[present] = values[:, present].mean(axis=0)
    return out


@pytest.mark.parametrize("n_permutations,n_slices", [(1, 1), (4, 8), (3, 64)])
@pytest.mark.parametrize("chunk", [1, 97, 5000])
def test_ordered_statistics_equal_the_naive_twin(n_permutations, n_slices, chunk):
    rng = np.random.default_rng(n_slices + chunk)
    n_rows, n_cat = 600, 25
    index = rng.integers(-1, n_cat, n_rows)            # -1: missing
    label = rng.normal(size=n_rows)
    seed, prior, a = 7, 0.3, 1.5
    slices = np.empty((n_permutations, n_rows), np.int32)
    slices_of_rows(seed, n_permutations, n_slices, 0, slices)
    np.testing.assert_array_equal(slices, naive_slices(seed, n_permutations, n_slices,
                                                       n_rows))
    # two targets at once: the label and a class indicator (ts_per_class)
    labels = np.stack([label, (label > 0.5).astype(float)])
    priors = np.array([prior, 0.25])
    shape = (n_permutations, n_cat, n_slices)
    sums, counts = np.zeros((2,) + shape), np.zeros(shape)
    for lo in range(0, n_rows, chunk):     # pass 1, in chunks
        part = np.empty((n_permutations, min(chunk, n_rows - lo)), np.int32)
        slices_of_rows(seed, n_permutations, n_slices, lo, part)
        # labels read-only, as a cache block's: the specialization the engine calls
        block_labels = read_only(labels[:, lo:lo + chunk].copy())
        add_slice_stats(index[lo:lo + chunk], block_labels, part, sums, counts)
    prefix_sum = np.cumsum(sums, axis=3) - sums
    prefix_cnt = np.cumsum(counts, axis=2) - counts
    running_sum, running_cnt = np.zeros((2,) + shape), np.zeros(shape)
    got = np.empty((2, n_rows))
    for lo in range(0, n_rows, chunk):     # pass 2, the same chunks
        hi = min(lo + chunk, n_rows)
        out = np.empty((2, hi - lo))
        block_labels = read_only(labels[:, lo:hi].copy())
        ordered_target_stats(index[lo:hi], block_labels, slices[:, lo:hi].copy(),
                             prefix_sum, prefix_cnt, running_sum, running_cnt, priors, a,
                             out)
        got[:, lo:hi] = out
    for t in range(2):
        expected = naive_ordered_stats(index, labels[t], slices, priors[t], a)
        np.testing.assert_allclose(got[t], expected, rtol=1e-12, equal_nan=True)
    # after the pass every row has joined its cell: the running tables are the totals
    np.testing.assert_array_equal(running_sum, sums)
    np.testing.assert_array_equal(running_cnt, counts)
