"""Prediction kernels against naive pure-Python traversals, hand-built answers and XGBoost."""
import json

import numpy as np
import pytest

from oocboost.errors import ModelError, ParameterError
from oocboost.kernels import predict as kp
from oocboost.kernels import predict_perfect
from oocboost.model.model import Model
from oocboost.model.tree import Tree

# --------------------------------------------------------------------- naive twins


def naive_goes_left_raw(tree, node, x):
    if np.isnan(x):
        return bool(tree.default_left[node])
    if tree.is_categorical[node]:
        n_bits = 32 * tree.cat_bitset.shape[1]
        if not (0 <= x < n_bits):
            return False
        c = int(x)
        return bool((int(tree.cat_bitset[node, c // 32]) >> (c % 32)) & 1)
    return bool(x <= tree.threshold[node])


def naive_goes_left_binned(tree, node, code, missing_bin):
    if code == missing_bin:
        return bool(tree.default_left[node])
    if tree.is_categorical[node]:
        if code >= 32 * tree.cat_bitset.shape[1]:
            return False
        return bool((int(tree.cat_bitset[node, code // 32]) >> (code % 32)) & 1)
    return bool(code <= tree.bin_threshold[node])


def naive_leaf(tree, goes_left):
    node = 0
    while tree.left[node] != -1:
        node = int(tree.left[node] if goes_left(node) else tree.right[node])
    return node


def naive_margin(model, X=None, codes=None, missing_bin=None, iteration_range=None):
    t0, t1 = model._tree_range(iteration_range)
    n_rows = X.shape[0] if X is not None else codes.shape[1]
    K = model.n_outputs
    out = np.zeros((n_rows, K))
    for i in range(n_rows):
        m = list(model.base_margin) if model.aggregation == "sum" else [0.0] * K
        for t in range(t0, t1):
            tree = model.trees[t]
            if X is not None:
                leaf = naive_leaf(tree, lambda nd: naive_goes_left_raw(
                    tree, nd, X[i, tree.feature[nd]]))
            else:
                leaf = naive_leaf(tree, lambda nd: naive_goes_left_binned(
                    tree, nd, int(codes[tree.feature[nd], i]), missing_bin))
            g, w = model.tree_group[t], model.tree_weight[t]
            if g >= 0:
                m[g] += w * tree.value[leaf, 0]
            else:
                for k in range(K):
                    m[k] += w * tree.value[leaf, k]
        if model.aggregation == "mean":
            for k in range(K):
                W = sum(model.tree_weight[t] for t in range(t0, t1)
                        if model.tree_group[t] in (k, -1))
                m[k] = (m[k] / W if W != 0 else m[k]) + model.base_margin[k]
        out[i] = m
    return out


def naive_leaves(model, X, iteration_range=None):
    t0, t1 = model._tree_range(iteration_range)
    out = np.zeros((X.shape[0], t1 - t0), dtype=np.int32)
    for i in range(X.shape[0]):
        for t in range(t0, t1):
            tree = model.trees[t]
            out[i, t - t0] = naive_leaf(tree, lambda nd: naive_goes_left_raw(
                tree, nd, X[i, tree.feature[nd]]))
    return out


# --------------------------------------------------------------------- random trees


def random_tree(rng, n_features, max_depth, n_outputs=1, edges=None, cat_features=(),
                n_cat_codes=40, preorder=False):
    """A random valid tree. Numeric thresholds are bin edges when ``edges`` is given.
    ``preorder`` numbers nodes depth first (siblings not adjacent) instead of breadth first."""
    n_words = (n_cat_codes + 31) // 32 if cat_features else 0
    nodes = []  # dicts in creation order, with 'children' as indexes into nodes

    def make(depth):
        nd = {"depth": depth, "children": None}
        nodes.append(nd)
        idx = len(nodes) - 1
        if depth < max_depth and (depth == 0 or rng.random() < 0.8):
            f = int(rng.integers(n_features))
            nd["feature"] = f
            nd["default_left"] = bool(rng.random() < 0.5)
            if f in cat_features:
                nd["cat"] = True
                bits = rng.random(n_cat_codes) < 0.5
                words = np.zeros(n_words, dtype=np.uint32)
                for c in np.flatnonzero(bits):
                    words[c // 32] |= np.uint32(1 << (c % 32))
                nd["bitset"] = words
                nd["thr"], nd["bthr"] = 0.0, 0
            else:
                nd["cat"] = False
                if edges is not None:
                    b = int(rng.integers(len(edges[f])))
                    nd["thr"], nd["bthr"] = float(edges[f][b]), b
                else:
                    nd["thr"], nd["bthr"] = float(rng.normal()), 0
            nd["gain"] = float(rng.random())
            if preorder:
                nd["children"] = (make(depth + 1), make(depth + 1))
            else:
                nd["children"] = "pending"
        return idx

    if preorder:
        make(0)
    else:
        queue = [make(0)]
        while queue:
            idx = queue.pop(0)
            if nodes[idx]["children"] == "pending":
                a = make(nodes[idx]["depth"] + 1)
                b = make(nodes[idx]["depth"] + 1)
                nodes[idx]["children"] = (a, b)
                queue += [a, b]
    n = len(nodes)
    left = np.full(n, -1, np.int32)
    right = np.full(n, -1, np.int32)
    feature = np.full(n, -1, np.int32)
    threshold = np.zeros(n)
    bthr = np.zeros(n, np.int32)
    dl = np.zeros(n, bool)
    cat = np.zeros(n, bool)
    bitset = np.zeros((n, n_words), np.uint32)
    gain = np.zeros(n)
    for i, nd in enumerate(nodes):
        if nd["children"] is not None:
            left[i], right[i] = nd["children"]
            feature[i] = nd["feature"]
            threshold[i], bthr[i] = nd["thr"], nd["bthr"]
            dl[i], cat[i] = nd["default_left"], nd["cat"]
            gain[i] = nd["gain"]
            if nd["cat"]:
                bitset[i] = nd["bitset"]
    value = rng.normal(size=(n, n_outputs))
    return Tree(left, right, feature, threshold, value, bin_threshold=bthr, default_left=dl,
                is_categorical=cat, cat_bitset=bitset, gain=gain,
                cover=rng.random(n) + 1, n_samples=rng.integers(1, 100, n).astype(float))


def random_X(rng, n_rows, n_features, cat_features=(), n_cat_codes=40, p_nan=0.1):
    X = rng.normal(size=(n_rows, n_features))
    for f in cat_features:
        # codes beyond the bitset width and negative ones are "not in the set"
        X[:, f] = rng.integers(-2, n_cat_codes + 40, n_rows)
    X[rng.random(X.shape) < p_nan] = np.nan
    return X


# --------------------------------------------------------------------- hand-built


def stump(feature, threshold, default_left, left_value, right_value, **kw):
    return Tree(
        [1, -1, -1],
        [2, -1, -1],
        [feature, -1, -1],
        [threshold, 0.0, 0.0],
        [0.0, left_value, right_value],
        default_left=[default_left, False, False],
        **kw,
    )


def test_numeric_stump_and_missing_both_directions():
    X = np.array([[0.5], [1.0], [1.5], [np.nan], [-np.inf], [np.inf]])
    for dl, miss in ((True, 10.0), (False, 20.0)):
        model = Model([stump(0, 1.0, dl, 10.0, 20.0)], n_features=1, base_margin=[0.5])
        got = model.predict_margin(X)
        np.testing.assert_array_equal(got[:, 0], [10.5, 10.5, 20.5, miss + 0.5, 10.5, 20.5])
        assert got.shape == (6, 1) and got.dtype == np.float64


def test_categorical_bitset_hand_built():
    # set {1, 3, 33}: two words; codes beyond 64 bits, negative codes -> right
    bits = np.zeros((3, 2), np.uint32)
    bits[0, 0] = (1 << 1) | (1 << 3)
    bits[0, 1] = 1 << 1
    for dl in (True, False):
        tree = Tree([1, -1, -1], [2, -1, -1], [0, -1, -1], [0.0, 0, 0], [0, 1.0, 2.0],
                    default_left=[dl, False, False], is_categorical=[True, False, False],
                    cat_bitset=bits)
        model = Model([tree], n_features=1, feature_types=["categorical"])
        X = np.array([[1], [3], [33], [3.7], [0], [2], [32], [64], [100], [-1], [-0.5],
                      [np.inf], [1e300], [np.nan]], dtype=float)
        want = [1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 2, 1 if dl else 2]
        np.testing.assert_array_equal(model.predict_margin(X)[:, 0], want)
        # -0.5 truncates to 0 in int(); it is not in the set either way
        codes = np.array([[1, 3, 33, 0, 2, 32, 63, 200, 255]], dtype=np.uint8)
        want_b = [1, 1, 1, 2, 2, 2, 2, 2, 1 if dl else 2]
        np.testing.assert_array_equal(
            model.predict_margin_binned(codes, missing_bin=255)[:, 0], want_b)


def test_binned_numeric_stump_missing_code():
    tree = Tree([1, -1, -1], [2, -1, -1], [0, -1, -1], [1.0, 0, 0], [0, 1.0, 2.0],
                bin_threshold=[4, 0, 0], default_left=[True, False, False])
    model = Model([tree], n_features=1)
    codes = np.array([[0, 4, 5, 254, 255]], dtype=np.uint8)
    np.testing.assert_array_equal(model.predict_margin_binned(codes, 255)[:, 0],
                                  [1, 1, 2, 2, 1])
    codes16 = np.array([[0, 4, 5, 1000, 1023]], dtype=np.uint16)
    np.testing.assert_array_equal(model.predict_margin_binned(codes16, 1023)[:, 0],
                                  [1, 1, 2, 2, 1])


def test_multi_output_groups_and_vector_leaves():
    # output 0 <- tree a (group 0), output 2 <- tree b (group 2), all outputs <- tree c (-1)
    a = stump(0, 0.0, False, 1.0, 2.0)
    b = stump(1, 0.0, True, 10.0, 20.0)
    c = Tree([1, -1, -1], [2, -1, -1], [0, -1, -1], [5.0, 0, 0],
             [[0, 0, 0], [100, 200, 300], [400, 500, 600]])
    model = Model([a, b, c], tree_group=[0, 2, -1], tree_weight=[1.0, 0.5, 2.0],
                  base_margin=[0.25, 0.5, 0.75], n_outputs=3, n_features=2,
                  trees_per_round=3)
    X = np.array([[-1.0, -1.0], [1.0, 1.0], [10.0, np.nan]])
    want = np.array([[0.25 + 1 + 200, 0.5 + 400, 0.75 + 5 + 600],
                     [0.25 + 2 + 200, 0.5 + 400, 0.75 + 10 + 600],
                     [0.25 + 2 + 800, 0.5 + 1000, 0.75 + 5 + 1200]])
    np.testing.assert_array_equal(model.predict_margin(X), want)
    np.testing.assert_array_equal(model.predict_margin(X), naive_margin(model, X))


def test_mean_aggregation_averages_forest():
    trees = [stump(0, 0.0, False, float(v), float(-v)) for v in (1, 2, 6)]
    model = Model(trees, n_features=1, aggregation="mean", learner="random_forest",
                  base_margin=[1.0])
    X = np.array([[-1.0], [1.0]])
    np.testing.assert_allclose(model.predict_margin(X)[:, 0], [1 + 3.0, 1 - 3.0])
    weighted = Model(trees, tree_weight=[1.0, 1.0, 2.0], n_features=1, aggregation="mean")
    np.testing.assert_allclose(weighted.predict_margin(X)[:, 0], [15 / 4, -15 / 4])
    # K outputs with per-output groups: each output averages its own trees
    model3 = Model(trees, tree_group=[0, 1, 1], n_outputs=2, n_features=1,
                   aggregation="mean")
    np.testing.assert_allclose(model3.predict_margin(X), [[1, 4], [-1, -4]])
    np.testing.assert_array_equal(model3.predict_margin(X), naive_margin(model3, X))


def test_single_leaf_tree_and_empty_inputs():
    leaf = Tree([-1], [-1], [-1], [0.0], [3.0])
    model = Model([leaf, leaf], n_features=2)
    np.testing.assert_array_equal(model.predict_margin(np.zeros((5, 2)))[:, 0], 6.0)
    assert model.predict_margin(np.zeros((0, 2))).shape == (0, 1)
    assert model.predict_leaf(np.zeros((0, 2))).shape == (0, 2)
    empty = Model([], n_features=2, base_margin=[0.5])
    np.testing.assert_array_equal(empty.predict_margin(np.ones((3, 2)))[:, 0], 0.5)


# --------------------------------------------------------------------- random vs naive


@pytest.mark.parametrize("seed", range(4))
def test_random_ensembles_match_naive_raw_and_leaf(seed):
    rng = np.random.default_rng(seed)
    n_features, n_rows = 6, 203
    cat = (1, 4)
    trees = [random_tree(rng, n_features, int(rng.integers(0, 7)), cat_features=cat,
                         preorder=bool(t % 2)) for t in range(12)]
    model = Model(trees, n_features=n_features, tree_weight=rng.random(12) + 0.5,
                  base_margin=[0.3], trees_per_round=3)
    X = random_X(rng, n_rows, n_features, cat)
    np.testing.assert_array_equal(model.predict_margin(X), naive_margin(model, X))
    np.testing.assert_array_equal(model.predict_leaf(X), naive_leaves(model, X))
    for rng_ in [(1, 3), (0, 1), (2, 0), (4, 4)]:
        np.testing.assert_array_equal(model.predict_margin(X, iteration_range=rng_),
                                      naive_margin(model, X, iteration_range=rng_))
        np.testing.assert_array_equal(model.predict_leaf(X, iteration_range=rng_),
                                      naive_leaves(model, X, iteration_range=rng_))


def test_multi_output_random_forest_matches_naive():
    rng = np.random.default_rng(7)
    trees = [random_tree(rng, 5, 5, n_outputs=3, cat_features=(0,)) for _ in range(6)]
    model = Model(trees, tree_group=[-1] * 6, n_outputs=3, n_features=5,
                  aggregation="mean", base_margin=[0.0, 1.0, -1.0])
    X = random_X(rng, 150, 5, (0,))
    np.testing.assert_array_equal(model.predict_margin(X), naive_margin(model, X))


def test_deep_chain_uses_early_exit_and_matches_naive():
    # A right-leaning chain of depth 40 (deeper than EARLY_EXIT_DEPTH): x <= j goes left
    depth = 40
    assert depth > kp.EARLY_EXIT_DEPTH
    n = 2 * depth + 1
    left = np.full(n, -1)
    right = np.full(n, -1)
    feature = np.full(n, -1)
    threshold = np.zeros(n)
    value = np.zeros(n)
    for j in range(depth):
        node = 2 * j
        left[node], right[node], feature[node], threshold[node] = node + 1, node + 2, 0, j
        value[node + 1] = j
    value[n - 1] = 1000.0
    tree = Tree(left, right, feature, threshold, value, bin_threshold=threshold.astype(int))
    assert tree.depth == depth
    model = Model([tree], n_features=1)
    X = np.concatenate([np.arange(-1, depth + 1, 0.5), [np.nan]])[:, None]
    got = model.predict_margin(X)
    np.testing.assert_array_equal(got, naive_margin(model, X))
    assert got[-2, 0] == 1000.0 and got[0, 0] == 0.0
    # binned: integer values are their own codes; 255 is missing (goes right)
    ints = np.arange(0, depth + 2, dtype=float)
    codes = np.append(ints, 255).astype(np.uint8)[None, :]
    got_b = model.predict_margin_binned(codes, 255)
    np.testing.assert_array_equal(got_b[:-1], model.predict_margin(ints[:, None]))
    np.testing.assert_array_equal(got_b, naive_margin(model, codes=codes, missing_bin=255))


def bin_codes(X, edges, cat_features, max_bin):
    missing = max_bin - 1
    codes = np.empty(X.shape[::-1], dtype=np.uint8 if max_bin <= 256 else np.uint16)
    for f in range(X.shape[1]):
        x = X[:, f]
        if f in cat_features:
            c = np.where(np.isnan(x), missing, np.clip(x, 0, missing - 1))
        else:
            c = np.searchsorted(edges[f], x, side="left")
            c[np.isnan(x)] = missing
        codes[f] = c
    return codes


@pytest.mark.parametrize("max_bin", [16, 256, 1000])
def test_raw_and_binned_agree_when_thresholds_are_bin_edges(max_bin):
    rng = np.random.default_rng(max_bin)
    n_features, n_rows = 5, 301
    cat = (2,)
    n_codes = min(40, max_bin - 1)
    edges = [np.sort(rng.choice(np.linspace(-2, 2, 4 * max_bin), max_bin - 2, replace=False))
             for _ in range(n_features)]
    trees = [random_tree(rng, n_features, 6, edges=edges, cat_features=cat,
                         n_cat_codes=n_codes) for _ in range(8)]
    model = Model(trees, n_features=n_features, bin_mapper={"max_bin": max_bin})
    X = rng.normal(size=(n_rows, n_features))
    X[:, 2] = rng.integers(0, n_codes, n_rows)
    X[rng.random(X.shape) < 0.1] = np.nan
    # hit the edges exactly too: x == edge goes left in both rules
    X[:20, 0] = edges[0][rng.integers(0, max_bin - 2, 20)]
    codes = bin_codes(X, edges, cat, max_bin)
    raw = model.predict_margin(X)
    binned = model.predict_margin_binned(codes, max_bin - 1)
    np.testing.assert_array_equal(raw, binned)
    np.testing.assert_array_equal(binned, naive_margin(model, codes=codes,
                                                       missing_bin=max_bin - 1))


def test_chunking_and_thread_count_do_not_change_results():
    rng = np.random.default_rng(3)
    trees = [random_tree(rng, 4, 6) for _ in range(10)]
    model = Model(trees, n_features=4)
    X = random_X(rng, 1000, 4)
    full = model.predict_margin(X, n_threads=2)
    np.testing.assert_array_equal(full, model.predict_margin(X, n_threads=1))
    c = kp.CHUNK_ROWS
    for n in (1, c - 1, c, c + 1, 2 * c + 1):
        np.testing.assert_array_equal(model.predict_margin(X[:n]), full[:n])
    # row blocks of odd sizes reproduce one pass (prediction streamed over cache blocks)
    parts = [model.predict_margin(X[s:s + 77]) for s in range(0, 1000, 77)]
    np.testing.assert_array_equal(np.concatenate(parts), full)


@pytest.mark.parametrize("cat_features", [(), (1,)])
def test_float32_rows_are_read_as_they_are_and_match_float64(cat_features):
    """A float32 array is walked without a float64 copy; its values promoted to float64
    meet the (float64) thresholds exactly as the copy's would, also where a threshold lies
    between two float32 values."""
    rng = np.random.default_rng(11)
    trees = [random_tree(rng, 4, 6, cat_features=cat_features) for _ in range(9)]
    model = Model(trees, n_features=4, base_margin=[0.1])
    X32 = random_X(rng, 700, 4, cat_features).astype(np.float32)
    # values on both sides of thresholds that float32 cannot hold
    thr = np.array([t.threshold[n] for t in trees for n in np.flatnonzero(t.left != -1)])
    n = min(thr.size, X32.shape[0])
    X32[:n, 0] = np.nextafter(thr[:n].astype(np.float32), np.float32(np.inf))
    X64 = X32.astype(np.float64)
    seen = []
    real = predict_perfect.predict_raw

    def spy(X, *args):
        seen.append(X.dtype)
        return real(X, *args)

    predict_perfect.predict_raw = spy
    try:
        got = model.predict_margin(X32)
    finally:
        predict_perfect.predict_raw = real
    assert seen == [np.float32]
    np.testing.assert_array_equal(got, naive_margin(model, X64))
    np.testing.assert_array_equal(got, model.predict_margin(X64))


def test_flatten_puts_siblings_side_by_side():
    rng = np.random.default_rng(5)
    tree = random_tree(rng, 3, 5, preorder=True)
    flat = kp.flatten_trees([tree], np.zeros(1, np.int32), np.ones(1), 1)
    n = tree.n_nodes
    leaf = tree.left[flat.node_id] == -1
    assert sorted(flat.node_id.tolist()) == list(range(n))
    # leaves loop on themselves; an internal node's children are left and left + 1
    np.testing.assert_array_equal(flat.left[leaf], np.flatnonzero(leaf))
    internal = np.flatnonzero(~leaf)
    np.testing.assert_array_equal(flat.node_id[flat.left[internal]],
                                  tree.left[flat.node_id[internal]])
    np.testing.assert_array_equal(flat.node_id[flat.left[internal] + 1],
                                  tree.right[flat.node_id[internal]])
    assert flat.tree_depth[0] == tree.depth


def test_iteration_range_counts_rounds_and_rejects_bad_ranges():
    trees = [stump(0, 0.0, False, 10.0 ** t, 0.0) for t in range(6)]
    model = Model(trees, n_features=1, trees_per_round=2)
    X = np.array([[-1.0]])
    assert model.predict_margin(X, iteration_range=(0, 1))[0, 0] == 11.0
    assert model.predict_margin(X, iteration_range=(1, 3))[0, 0] == 111100.0
    assert model.predict_margin(X, iteration_range=(0, 0))[0, 0] == 111111.0
    assert model.predict_leaf(X, iteration_range=(2, 3)).shape == (1, 2)
    for bad in [(0, 4), (2, 1), (-1, 2), "ab", (1,)]:
        with pytest.raises(ParameterError, match="iteration_range"):
            model.predict_margin(X, iteration_range=bad)


def test_bad_inputs_are_refused():
    model = Model([stump(1, 0.0, False, 1.0, 2.0)], n_features=2)
    with pytest.raises(ModelError, match="expects"):
        model.predict_margin(np.zeros((3, 3)))
    with pytest.raises(ModelError, match="codes"):
        model.predict_margin_binned(np.zeros((2, 3), np.int32), 255)
    with pytest.raises(ModelError, match="codes"):
        model.predict_margin_binned(np.zeros((3, 3), np.uint8), 255)
    with pytest.raises(ParameterError, match="n_threads"):
        model.predict_margin(np.zeros((3, 2)), n_threads=0)
    # an invalid tree is caught before any kernel runs
    model.trees[0].right[0] = 7
    model.invalidate_cache()
    with pytest.raises(ModelError, match="node 0"):
        model.predict_margin(np.zeros((3, 2)))


def test_cache_rebuilt_when_trees_added():
    model = Model([stump(0, 0.0, False, 1.0, 2.0)], n_features=1)
    X = np.array([[-1.0]])
    assert model.predict_margin(X)[0, 0] == 1.0
    model.add_tree(stump(0, 0.0, False, 5.0, 2.0), group=0, weight=2.0)
    assert model.predict_margin(X)[0, 0] == 11.0
    model.tree_weight[1] = 1.0  # in-place weight change is seen (weights are in the key)
    assert model.predict_margin(X)[0, 0] == 6.0


# --------------------------------------------------------------------- XGBoost reference


def model_from_xgboost(booster, n_features):
    """Convert an XGBoost JSON dump: its rule ``x < t`` (float32) is ``x <= prev32(t)``."""
    d = json.loads(booster.save_raw("json"))
    gb = d["learner"]["gradient_booster"]["model"]
    trees = []
    for t in gb["trees"]:
        left = np.array(t["left_children"], np.int32)
        leaf = left == -1
        cond = np.array(t["split_conditions"], np.float32)
        trees.append(Tree(
            left, t["right_children"],
            np.where(leaf, -1, t["split_indices"]),
            np.where(leaf, 0.0, np.nextafter(cond, np.float32(-np.inf)).astype(np.float64)),
            np.where(leaf, cond.astype(np.float64), 0.0),
            default_left=np.array(t["default_left"], bool),
            gain=np.where(leaf, 0.0, t["loss_changes"]), cover=t["sum_hessian"]))
    base = float(d["learner"]["learner_model_param"]["base_score"].strip("[]"))
    return Model(trees, n_features=n_features, base_margin=[base])


def test_matches_xgboost_inplace_predict():
    import xgboost as xgb
    rng = np.random.default_rng(0)
    n, nf = 3000, 8
    # float32-representable values so both libraries compare the same numbers
    X = rng.normal(size=(n, nf)).astype(np.float32).astype(np.float64)
    X[rng.random(X.shape) < 0.1] = np.nan
    y = np.nansum(X[:, :3], axis=1) + 0.1 * rng.normal(size=n)
    booster = xgb.train({"max_depth": 5, "tree_method": "hist", "nthread": 1,
                         "base_score": 0.5, "eta": 0.3}, xgb.DMatrix(X, y), 20)
    model = model_from_xgboost(booster, nf)
    want = booster.inplace_predict(X, predict_type="margin")
    got = model.predict_margin(X)[:, 0]
    # XGBoost sums leaf values in float32
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-5)
    np.testing.assert_array_equal(model.predict_leaf(X),
                                  booster.predict(xgb.DMatrix(X), pred_leaf=True))
    score = booster.get_score(importance_type="total_gain")
    imp = model.feature_importance("total_gain")
    for j in range(nf):
        assert imp[j] == pytest.approx(score.get(f"f{j}", 0.0), rel=1e-5)


def test_numeric_matrix_fast_path_equals_the_batch_path(tmp_path, monkeypatch):
    """predict() on a float array skips ingest; results equal the record-batch path."""
    import oocboost
    import oocboost.model.predict as op
    from oocboost.datasets import generate_arrays

    data = generate_arrays(3000, 5, seed=2)
    cache = oocboost.build_cache(data.X, tmp_path / "c", label=data.y.astype(float),
                                 quiet=True)
    model = oocboost.train({"objective": "binary:logistic", "verbosity": 0}, cache, 5)
    monkeypatch.setattr(op, "MATRIX_CHUNK_ROWS", 700)
    X32 = data.X.astype(np.float32)
    fast = op.predict(model, X32)
    leaves = op.predict(model, data.X, pred_leaf=True)
    monkeypatch.setattr(op, "_is_plain_matrix", lambda model, data: False)
    slow = op.predict(model, X32)
    np.testing.assert_array_equal(fast, slow)
    np.testing.assert_array_equal(leaves, op.predict(model, data.X, pred_leaf=True))


@pytest.mark.parametrize("plain_matrix_path", [True, False])
def test_array_of_another_width_is_refused_naming_both_counts(tmp_path, monkeypatch,
                                                              plain_matrix_path):
    """An array's columns are the model's by position: one column more or less was
    predicted as garbage (off by up to 0.997); a DataFrame matches by name."""
    import pandas as pd

    import oocboost
    import oocboost.model.predict as op
    from oocboost.datasets import generate_arrays
    from oocboost.errors import SchemaError

    data = generate_arrays(2000, 4, seed=3)
    cache = oocboost.build_cache(data.X, tmp_path / "c", label=data.y.astype(float),
                                 quiet=True)
    model = oocboost.train({"objective": "binary:logistic", "verbosity": 0}, cache, 3)
    if not plain_matrix_path:
        monkeypatch.setattr(op, "_is_plain_matrix", lambda model, data: False)
    for X, has in ((np.hstack([data.X[:, :1], data.X]), "X has 5 columns"),
                   (data.X[:, 1:], "X has 3 columns"), (data.X[0], r"X has shape \(4,\)")):
        for call in (model.predict, lambda X: model.predict(X, pred_leaf=True),
                     lambda X: model.predict(X, pred_contribs=True)):
            with pytest.raises(SchemaError, match=f"{has}; the model was trained on 4 "
                                                  f"features"):
                call(X)
    frame = pd.DataFrame(data.X, columns=model.feature_names)
    frame.insert(0, "extra", 1.0)
    np.testing.assert_array_equal(model.predict(frame), model.predict(data.X))


def test_model_without_bin_edges_reads_only_a_cache_whose_edges_hold_its_splits(tmp_path):
    """995 of 20,000 predictions were off by up to 0.317 when a model without edges
    read another cache's codes as its bins: now its thresholds must be edges of the
    cache (there the codes decide as the raw values do), else the cache is refused."""
    import oocboost
    from oocboost.datasets import generate_arrays
    from oocboost.errors import SchemaError

    data = generate_arrays(2000, 4, seed=4)
    cache = oocboost.build_cache(data.X, tmp_path / "c", label=data.y.astype(float),
                                 quiet=True)
    model = oocboost.train({"objective": "binary:logistic", "verbosity": 0}, cache, 3)
    raw = model.predict(data.X)
    model.bin_mapper = None
    path = tmp_path / "m.json"
    model.save_model(path)
    loaded = oocboost.load_model(path)
    np.testing.assert_array_equal(loaded.predict(cache), raw)   # its splits are edges
    coarse = oocboost.build_cache(data.X, tmp_path / "coarse", label=data.y.astype(float),
                                  max_bin=16, quiet=True)
    with pytest.raises(SchemaError, match="no bin edges .* do not hold its splits"):
        loaded.predict(coarse)
    np.testing.assert_array_equal(loaded.predict(data.X), raw)


def test_a_few_rows_predict_as_the_batch_does(tmp_path):
    """The small-matrix path (online serving: a row at a time, straight to the
    predictor, walked row by row under ``PERFECT_MIN_ROWS``) gives every kind of model
    the values of the block path (a DataFrame, read as record batches)."""
    import pandas as pd

    import oocboost

    rng = np.random.default_rng(11)
    X = rng.normal(size=(600, 5))
    y3 = (X[:, 0] > 0).astype(float) + (X[:, 1] > 0.5)
    cache = oocboost.build_cache(X, tmp_path / "c", label=y3, quiet=True)
    binary = oocboost.build_cache(X, tmp_path / "b", label=(y3 > 0).astype(float),
                                  quiet=True)
    models = [
        oocboost.train({"objective": "binary:logistic", "verbosity": 0}, binary, 20),
        oocboost.train({"objective": "multi:softprob", "num_class": 3, "verbosity": 0},
                       cache, 10),
        oocboost.train({"objective": "reg:squarederror", "booster": "dart",
                        "rate_drop": 0.3, "verbosity": 0}, cache, 10),
        oocboost.RandomForestClassifier(n_estimators=10, random_state=0).fit(
            binary).model_,
        oocboost.AdaBoostRegressor(n_estimators=10, random_state=0).fit(cache).model_,
    ]
    rows = np.r_[X[:300], np.full((1, 5), np.nan)]
    for model in models:
        batch = model.predict(pd.DataFrame(rows, columns=model.feature_names))
        assert len(batch) == len(rows) > kp.PERFECT_MIN_ROWS
        for i in (0, 17, len(rows) - 1):
            np.testing.assert_array_equal(model.predict(rows[i:i + 1])[0], batch[i])
            np.testing.assert_array_equal(
                model.predict(rows[i:i + 1], output_margin=True)[0],
                model.predict(rows, output_margin=True)[i])
        np.testing.assert_array_equal(model.predict(rows.astype(np.float32)[:3]),
                                      model.predict(rows.astype(np.float32))[:3])
