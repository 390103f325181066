"""The linear-leaf kernels against naive NumPy twins: the sums a leaf's model is fitted
from, and the margins the models add (rows with a missing value, leaves without a
model, several threads)."""
import numpy as np
import pytest

from oocboost.kernels.linear_leaves import add_linear_leaves, linear_leaf_sums
from oocboost.utils.threads import thread_limit


def _layout(rng, n_rows=3000, n_nodes=9, n_columns=5):
    """Random rows on random leaves; node 0 and 3 have no model, node 5 one without
    features."""
    node_of_row = rng.integers(0, n_nodes, n_rows).astype(np.int32)
    values = rng.normal(size=(n_rows, n_columns))
    values[rng.random(values.shape) < 0.03] = np.nan
    slot_of_node = np.full(n_nodes, -1, np.int32)
    fitted = [1, 2, 4, 5, 6, 7, 8]
    slot_of_node[fitted] = np.arange(len(fitted), dtype=np.int32)
    columns = [rng.choice(n_columns, size=0 if node == 5 else rng.integers(1, 4),
                          replace=False) for node in fitted]
    offset = np.zeros(len(fitted) + 1, np.int64)
    np.cumsum([len(c) for c in columns], out=offset[1:])
    column = np.concatenate(columns).astype(np.int32)
    grad_hess = np.stack([rng.normal(size=n_rows), rng.uniform(0, 2, n_rows)],
                         1).astype(np.float32)
    grad_hess[::7, 1] = 0.0
    return node_of_row, values, slot_of_node, offset, column, grad_hess


def _row_vector(values, i, cols):
    x = values[i, cols]
    return None if np.isnan(x).any() else np.append(x, 1.0)


def naive_sums(node_of_row, values, slot_of_node, offset, column, grad_hess, width):
    n_slots = len(offset) - 1
    xthx = np.zeros((n_slots, width, width))
    xtg = np.zeros((n_slots, width))
    n_fit = np.zeros(n_slots, np.int64)
    for i, node in enumerate(node_of_row):
        s = slot_of_node[node]
        if s < 0:
            continue
        x = _row_vector(values, i, column[offset[s]:offset[s + 1]])
        if x is None:
            continue
        g, h = grad_hess[i].astype(np.float64)
        k = len(x)
        xthx[s, :k, :k] += np.triu(np.outer(x, x) * h)
        xtg[s, :k] += x * g
        n_fit[s] += h > 0
    return xthx, xtg, n_fit


def test_sums_equal_the_naive_twin():
    rng = np.random.default_rng(0)
    node_of_row, values, slot_of_node, offset, column, grad_hess = _layout(rng)
    width = int(np.diff(offset).max()) + 1
    xthx = np.zeros((len(offset) - 1, width, width))
    xtg = np.zeros((len(offset) - 1, width))
    n_fit = np.zeros(len(offset) - 1, np.int64)
    for rows in (slice(0, 1000), slice(1000, 3000)):  # block after block adds up
        linear_leaf_sums(node_of_row[rows], values[rows], slot_of_node, offset, column,
                         grad_hess[rows], xthx, xtg, n_fit)
    want = naive_sums(node_of_row, values, slot_of_node, offset, column, grad_hess, width)
    np.testing.assert_allclose(xthx, want[0], rtol=1e-12, atol=1e-9)
    np.testing.assert_allclose(xtg, want[1], rtol=1e-12, atol=1e-9)
    np.testing.assert_array_equal(n_fit, want[2])
    assert n_fit.min() > 0


@pytest.mark.parametrize("n_threads", [1, 2])
def test_margins_equal_the_naive_twin(n_threads):
    rng = np.random.default_rng(1)
    n_rows = 40_000  # several thread ranges
    node_of_row, values, slot_of_node, offset, column, _ = _layout(rng, n_rows=n_rows)
    coef = rng.normal(size=len(column))
    const = rng.normal(size=len(offset) - 1)
    node_value = rng.normal(size=len(slot_of_node))
    margins = rng.normal(size=(n_rows, 3))
    before = margins[:, 1].copy()
    want = before.copy()
    for i, node in enumerate(node_of_row):
        s = slot_of_node[node]
        if s < 0:
            continue
        cols = column[offset[s]:offset[s + 1]]
        if not np.isnan(values[i, cols]).any():
            want[i] += 0.5 * (const[s] + coef[offset[s]:offset[s + 1]] @ values[i, cols]
                              - node_value[node])
    with thread_limit(n_threads):
        add_linear_leaves(node_of_row, values, slot_of_node, offset, column, coef, const,
                          node_value, 0.5, margins[:, 1])  # a strided column
    np.testing.assert_allclose(margins[:, 1], want, rtol=1e-12, atol=1e-12)
    untouched = slot_of_node[node_of_row] < 0
    assert untouched.any()
    np.testing.assert_array_equal(margins[untouched, 1], before[untouched])
