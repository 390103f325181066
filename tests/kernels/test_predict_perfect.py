"""The perfect-tree walk (kernels/predict_perfect.py): its layout against a plain numpy
walk of the same arrays, its margins against the naive reference of
tests/model/test_predict.py and bit for bit against the lockstep walk, and which trees
and ensembles it takes."""
import numba
import numpy as np
import pytest

from oocboost.kernels import predict as kp
from oocboost.kernels import predict_perfect as pp
from oocboost.kernels.predict_walks import CHUNK_ROWS
from oocboost.model.model import Model
from oocboost.model.tree import Tree
from tests.model.test_predict import naive_margin, random_tree, random_X


def naive_perfect_margin(flat, X, tree_start, tree_end, out):
    """Numpy twin of the perfect walk: every row down the complete tree of each laid-out
    tree, reading its slot's value (NaN as the slot's missing value)."""
    p = flat.perfect
    for t in range(tree_start, tree_end):
        assert p.is_perfect[t]
        a = p.node_offset[t]
        for i in range(X.shape[0]):
            j = 0
            for _ in range(flat.tree_depth[t]):
                slot = p.feature[a + j] // CHUNK_ROWS
                x = float(X[i, p.slot_column[slot]])
                x = p.slot_missing[slot] if np.isnan(x) else x
                j = 2 * j + (1 if x <= p.threshold[a + j] else 2)
            leaf = j - ((1 << int(flat.tree_depth[t])) - 1)
            out[i, flat.tree_group[t]] += p.leaf_value[p.leaf_offset[t] + leaf]
    return out


def lockstep_margin(flat, X, tree_start, tree_end, out):
    """The same kernel with the perfect layout switched off."""
    pp.predict_raw(kp.read_only(X), tree_start, tree_end, False, flat.node_offset,
                   flat.tree_depth, flat.tree_group, flat.tree_n_cols, flat.value_offset,
                   flat.tree_has_cat, flat.left, flat.feature, flat.threshold,
                   flat.default_left, flat.is_categorical, flat.cat_offset, flat.cat_n_bits,
                   flat.cat_bitset, flat.value, *flat.perfect, out)
    return out


def special_X(rng, n_rows, n_features):
    """Normal values with NaN, +-inf and exact threshold values mixed in."""
    X = random_X(rng, n_rows, n_features, p_nan=0.15)
    X[rng.random(X.shape) < 0.03] = np.inf
    X[rng.random(X.shape) < 0.03] = -np.inf
    return X


@pytest.mark.parametrize("n_rows", [1, 15, 16, 17, CHUNK_ROWS, CHUNK_ROWS + 1, 700])
@pytest.mark.parametrize("seed", range(3))
def test_layout_walk_matches_naive_and_lockstep(seed, n_rows):
    rng = np.random.default_rng(seed)
    trees = [random_tree(rng, 6, int(rng.integers(0, 8))) for _ in range(12)]
    model = Model(trees, n_features=6, base_margin=[0.25])
    X = special_X(rng, n_rows, 6)
    # rows that sit exactly on thresholds
    thr = np.concatenate([t.threshold[t.left != -1] for t in trees])
    X[:min(n_rows, thr.size), 2] = thr[:min(n_rows, thr.size)]
    flat = model._flat_trees()
    assert flat.perfect.is_perfect.all()
    assert pp.use_perfect(flat.perfect, flat.tree_depth, 0, len(trees))
    got = model.predict_margin(X)
    np.testing.assert_array_equal(
        got, naive_perfect_margin(flat, X, 0, len(trees), model._start_margin(n_rows)))
    np.testing.assert_array_equal(
        got, lockstep_margin(flat, X, 0, len(trees), model._start_margin(n_rows)))
    np.testing.assert_allclose(got, naive_margin(model, X), rtol=1e-12, atol=1e-12)


def mixed_trees(rng, n_trees, period, plain_depth):
    """``(trees, tree_group)`` of a 3-output model of 5 features, tree ``t`` by its kind
    ``t % period``: 0 categorical (feature 1), 1 vector leaves (group -1), others numeric
    of depth ``plain_depth(kind)``."""
    trees, groups = [], []
    for t in range(n_trees):
        kind = t % period
        if kind == 0:
            trees.append(random_tree(rng, 5, 4, cat_features=(1,)))
        elif kind == 1:
            trees.append(random_tree(rng, 5, 3, n_outputs=3))
        else:
            trees.append(random_tree(rng, 5, plain_depth(kind)))
        groups.append(-1 if kind == 1 else t % 3)
    return trees, groups


@pytest.mark.parametrize("n_threads", [1, 2])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_mixed_ensemble_groups_ranges_and_threads(n_threads, dtype):
    """Categorical, vector-leaf, deep and plain trees in one multi-output model: every
    iteration range gives the lockstep walk's margins bit for bit, whatever the threads."""
    rng = np.random.default_rng(7)
    trees, groups = mixed_trees(rng, 15, 5, lambda kind: 5)
    model = Model(trees, n_features=5, tree_group=groups, base_margin=[0.1, -0.2, 0.3],
                  n_outputs=3, tree_weight=rng.random(15) + 0.5)
    X = special_X(rng, 333, 5)
    X[:, 1] = rng.integers(-2, 80, 333)
    X = X.astype(dtype)
    flat = model._flat_trees()
    expected_perfect = [t % 5 != 1 and not np.any(tree.is_categorical & (tree.left != -1))
                        for t, tree in enumerate(trees)]
    assert 0 < sum(expected_perfect) < 15 - 3
    assert flat.perfect.is_perfect.astype(bool).tolist() == expected_perfect
    for t0, t1 in [(0, 15), (2, 9), (4, 5), (5, 6)]:
        old = numba.get_num_threads()
        numba.set_num_threads(n_threads)
        try:
            got = model._start_margin(333)
            kp.raw_margins(flat, X, t0, t1, got)
        finally:
            numba.set_num_threads(old)
        want = lockstep_margin(flat, X, t0, t1, model._start_margin(333))
        np.testing.assert_array_equal(got, want)
    np.testing.assert_allclose(model.predict_margin(X), naive_margin(model, X.astype(
        np.float64)), rtol=1e-12, atol=1e-12)


def chain_tree(depth, threshold=0.0, default_left=False):
    """A chain: ``depth`` splits on feature 0, each with a leaf on its right."""
    n = 2 * depth + 1
    left = np.full(n, -1, np.int32)
    right = np.full(n, -1, np.int32)
    for d in range(depth):
        left[2 * d], right[2 * d] = 2 * d + 1, 2 * d + 2
    internal = left != -1
    return Tree(left, right, np.where(internal, 0, -1), np.where(internal, threshold, 0.0),
                np.arange(n, dtype=float)[:, None], default_left=np.full(n, default_left))


def test_which_trees_take_the_layout():
    full = random_tree(np.random.default_rng(1), 3, 4)
    inf_right = chain_tree(2, threshold=np.inf)        # +inf, missing right: refused
    inf_left = chain_tree(2, threshold=np.inf, default_left=True)  # exact: kept
    deep = chain_tree(pp.MAX_DEPTH + 1)                # too deep
    thin = chain_tree(6)                               # 63 padded nodes <= 8 x 13
    # models refuse infinite thresholds (Model.validate); the flattening does not
    flat = kp.flatten_trees([full, inf_right, inf_left, deep, thin], np.zeros(5, np.int32),
                            np.ones(5), 1)
    assert flat.perfect.is_perfect.tolist() == [1, 0, 1, 0, 1]
    X = np.array([[np.inf, 0, 0], [np.nan, 0, 0], [-np.inf, 0, 0], [1e300, 0, 0]] * 40)
    assert pp.use_perfect(flat.perfect, flat.tree_depth, 0, 5)
    got = np.zeros((160, 1))
    kp.raw_margins(flat, X, 0, 5, got)
    np.testing.assert_array_equal(got, lockstep_margin(flat, X, 0, 5, np.zeros((160, 1))))
    thinner = chain_tree(10)                           # 1023 padded nodes > 8 x 21
    assert Model([thinner], n_features=1)._flat_trees().perfect.is_perfect.tolist() == [0]


def test_slots_share_a_column_when_missing_values_go_one_way():
    rng = np.random.default_rng(3)
    trees = [random_tree(rng, 4, 5) for _ in range(6)]
    for t in trees:
        t.default_left[t.feature == 0] = True   # column 0: one way only
    flat = Model(trees, n_features=4)._flat_trees()
    slots = list(zip(flat.perfect.slot_column.tolist(), flat.perfect.slot_missing.tolist()))
    assert slots.count((0, -np.inf)) == 1 and (0, np.inf) not in slots
    assert len(slots) == len(set(slots))


def test_the_ensemble_keeps_the_lockstep_walk_when_copies_cost_more():
    rng = np.random.default_rng(4)
    one_column = Model([chain_tree(2)], n_features=1)._flat_trees()  # 1 slot, 2 steps
    assert pp.use_perfect(one_column.perfect, one_column.tree_depth, 0, 1)
    assert not pp.use_perfect(one_column.perfect, one_column.tree_depth, 0, 0)
    assert not pp.use_perfect(None, one_column.tree_depth, 0, 1)
    # depth 2 over three columns: 3 slots to copy for 2 steps a row
    three = Tree([1, 3, 5, -1, -1, -1, -1], [2, 4, 6, -1, -1, -1, -1],
                 [0, 1, 2, -1, -1, -1, -1], [0.0, 0.5, -0.5, 0, 0, 0, 0],
                 np.arange(7.0)[:, None], default_left=np.zeros(7, bool))
    flat = Model([three], n_features=3)._flat_trees()
    assert flat.perfect.is_perfect.tolist() == [1]
    assert not pp.use_perfect(flat.perfect, flat.tree_depth, 0, 1)
    # many slots: more than MAX_SLOTS columns read
    trees = [random_tree(rng, 4 * pp.MAX_SLOTS, 6) for _ in range(80)]
    model = Model(trees, n_features=4 * pp.MAX_SLOTS)
    flat = model._flat_trees()
    assert flat.perfect.slot_column.shape[0] > pp.MAX_SLOTS
    assert not pp.use_perfect(flat.perfect, flat.tree_depth, 0, 80)
    X = random_X(rng, 50, 4 * pp.MAX_SLOTS)
    np.testing.assert_allclose(model.predict_margin(X), naive_margin(model, X),
                               rtol=1e-12, atol=1e-12)


def _oblivious_tree(rng, depth, n_features):
    """A complete tree whose every level splits on one (feature, threshold, side)."""
    n_internal = (1 << depth) - 1
    n = 2 * n_internal + 1
    left = np.full(n, -1, np.int32)
    right = np.full(n, -1, np.int32)
    feature = np.full(n, -1, np.int32)
    threshold = np.zeros(n)
    default_left = np.zeros(n, bool)
    for level in range(depth):
        f, t, d = int(rng.integers(n_features)), float(rng.normal()), bool(rng.random() < 0.5)
        for j in range((1 << level) - 1, (1 << (level + 1)) - 1):
            left[j], right[j] = 2 * j + 1, 2 * j + 2
            feature[j], threshold[j], default_left[j] = f, t, d
    value = np.where(left < 0, rng.normal(size=n), 0.0)[:, None]
    return Tree(left, right, feature, threshold, value, default_left=default_left)


@pytest.mark.parametrize("n_rows", [1, 17, CHUNK_ROWS + 1, 700])
def test_oblivious_trees_walk_one_split_a_level_with_the_same_margins(n_rows):
    rng = np.random.default_rng(7)
    trees = [_oblivious_tree(rng, int(rng.integers(1, 8)), 6) for _ in range(10)]
    trees.append(random_tree(rng, 6, 4))   # a plain tree beside them keeps its walk
    model = Model(trees, n_features=6, base_margin=[0.5])
    X = special_X(rng, n_rows, 6)
    thr = np.concatenate([t.threshold[t.left != -1] for t in trees])
    X[:min(n_rows, thr.size), 3] = thr[:min(n_rows, thr.size)]
    flat = model._flat_trees()
    assert flat.perfect.is_oblivious[:10].all() and not flat.perfect.is_oblivious[10]
    got = model.predict_margin(X)
    np.testing.assert_array_equal(
        got, naive_perfect_margin(flat, X, 0, len(trees), model._start_margin(n_rows)))
    np.testing.assert_allclose(got, naive_margin(model, X), rtol=1e-12, atol=1e-12)
