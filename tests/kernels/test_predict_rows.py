"""One row at a time (kernels/predict_rows.py): bit for bit the chunk kernels' lockstep
walk, on categorical, vector-leaf, deep and plain trees, every tree range, both input
dtypes and special values, and the naive NumPy walk of tests/model/test_predict.py."""
import numpy as np
import pytest

from oocboost.kernels.codes import read_only
from oocboost.kernels.predict_rows import predict_rows
from oocboost.model.model import Model
from tests.kernels.test_predict_perfect import lockstep_margin, mixed_trees, special_X
from tests.model.test_predict import naive_margin


def _rows_margin(flat, X, t0, t1, out):
    predict_rows(read_only(X), t0, t1, flat.node_offset, flat.tree_depth, flat.tree_group,
                 flat.tree_n_cols, flat.value_offset, flat.tree_has_cat, flat.left,
                 flat.feature, flat.threshold, flat.default_left, flat.is_categorical,
                 flat.cat_offset, flat.cat_n_bits, flat.cat_bitset, flat.value, out)
    return out


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("n_rows", [0, 1, 7, 40])
def test_rows_walked_alone_equal_the_lockstep_walk(dtype, n_rows):
    rng = np.random.default_rng(11)
    # kind 2 deeper than the early-exit depth
    trees, groups = mixed_trees(rng, 16, 4,
                                lambda kind: 12 if kind == 2 else int(rng.integers(0, 6)))
    model = Model(trees, n_features=5, tree_group=groups, base_margin=[0.1, -0.2, 0.3],
                  n_outputs=3, tree_weight=rng.random(16) + 0.5)
    X = special_X(rng, n_rows, 5)
    X[:, 1] = rng.integers(-2, 80, n_rows)
    X[rng.random(n_rows) < 0.2, 1] = np.nan
    X = X.astype(dtype)
    flat = model._flat_trees()
    assert flat.tree_has_cat.any() and not flat.tree_has_cat.all()
    for t0, t1 in [(0, 16), (3, 11), (5, 6), (4, 4)]:
        got = _rows_margin(flat, X, t0, t1, model._start_margin(n_rows))
        want = lockstep_margin(flat, X, t0, t1, model._start_margin(n_rows))
        np.testing.assert_array_equal(got, want)
    np.testing.assert_allclose(
        _rows_margin(flat, X, 0, 16, model._start_margin(n_rows)),
        naive_margin(model, X.astype(np.float64)), rtol=1e-12, atol=1e-12)
