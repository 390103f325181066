"""Symmetric (oblivious) trees, ``grow_policy="symmetric"``: one split a level, complete
trees, the first round against a brute-force NumPy grower."""
import numpy as np
import pytest

import oocboost


def _data(n=3000, seed=0, missing=0.0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5))
    y = (X[:, 0] + X[:, 1] * X[:, 2] + 0.5 * rng.normal(size=n) > 0).astype(float)
    X[rng.random(X.shape) < missing] = np.nan
    return X, y


def _levels(tree):
    """The split of each level, and the depth of each node."""
    depth = np.zeros(tree.n_nodes, int)
    for i in range(tree.n_nodes):
        if tree.left[i] >= 0:
            depth[tree.left[i]] = depth[tree.right[i]] = depth[i] + 1
    levels = []
    for d in range(depth.max()):
        nodes = np.flatnonzero((depth == d) & (tree.left >= 0))
        levels.append(({(int(tree.feature[i]), int(tree.bin_threshold[i]),
                         bool(tree.default_left[i])) for i in nodes}, len(nodes)))
    return levels, depth


@pytest.mark.parametrize("objective,extra", [("binary:logistic", {}),
                                             ("multi:softprob", {"num_class": 3})])
def test_every_tree_is_complete_with_one_split_a_level(tmp_path, objective, extra):
    X, y = _data(missing=0.05)
    if objective.startswith("multi"):
        y = np.digitize(X[:, 0], [-0.5, 0.5]).astype(float)
    cache = oocboost.build_cache(X, tmp_path / "c", label=y, quiet=True)
    model = oocboost.train({"objective": objective, "max_depth": 4,
                            "grow_policy": "symmetric", **extra}, cache, 6)
    depths = []
    for tree in model.trees:
        levels, _ = _levels(tree)
        # a level splits whole or not at all (a tree stops where no split gains)
        assert [n for _, n in levels] == [2 ** d for d in range(len(levels))]
        assert tree.n_leaves == 2 ** len(levels)
        assert all(len(split) == 1 for split, _ in levels)
        depths.append(len(levels))
    assert max(depths) == 4


def _brute_force_first_tree(codes, y, depth, lam, eta, n_value_bins, missing_bin):
    """One round of binary:logistic from the base margin, grown as the module says."""
    p = np.full(len(y), y.mean())
    g, h = p - y, p * (1 - p)

    def score(G, H):
        return G * G / (H + lam) if H > 0 else 0.0

    node = np.zeros(len(y), int)
    splits = []
    for level in range(depth):
        best, best_key = -np.inf, None
        for f in range(codes.shape[0]):
            for b in range(n_value_bins[f] - 1):
                for d in range(2):
                    goes_left = (codes[f] <= b) | ((codes[f] == missing_bin) & bool(d))
                    goes_left &= codes[f] != missing_bin if not d else True
                    total = 0.0
                    for n in range(2 ** level):
                        rows = node == n
                        G, H = g[rows].sum(), h[rows].sum()
                        GL, HL = g[rows & goes_left].sum(), h[rows & goes_left].sum()
                        total += score(GL, HL) + score(G - GL, H - HL) - score(G, H)
                    if total > best + 1e-12:
                        best, best_key = total, (f, b, d)
        f, b, d = best_key
        goes_left = (codes[f] <= b) & (codes[f] != missing_bin) | ((codes[f] == missing_bin)
                                                                  & bool(d))
        splits.append(best_key)
        node = 2 * node + (~goes_left)
    leaves = np.array([-g[node == n].sum() / (h[node == n].sum() + lam) * eta
                       if h[node == n].sum() > 0 else 0.0 for n in range(2 ** depth)])
    return splits, leaves, node


def test_first_round_equals_a_brute_force_symmetric_grower(tmp_path):
    X, y = _data(n=1500, seed=1, missing=0.03)
    X = np.round(X, 1)   # a bin per value
    cache = oocboost.build_cache(X, tmp_path / "c", label=y, quiet=True)
    codes = np.concatenate([b.codes for b in cache.iter_blocks()], axis=1)
    mapper = cache.bin_mapper
    model = oocboost.train({"objective": "binary:logistic", "max_depth": 3, "eta": 0.3,
                            "reg_lambda": 2.0, "grow_policy": "symmetric",
                            "base_score": float(y.mean())}, cache, 1)
    splits, leaves, node = _brute_force_first_tree(codes, y, 3, 2.0, 0.3,
                                                   mapper.n_value_bins, cache.max_bin - 1)
    tree = model.trees[0]
    levels, _ = _levels(tree)
    assert [next(iter(s)) for s, _ in levels] == [(f, b, bool(d)) for f, b, d in splits]
    leaf_of_row = model.predict(cache, pred_leaf=True)[:, 0]
    for n in range(8):
        rows = node == n
        if rows.any():
            assert np.allclose(tree.value[leaf_of_row[rows], 0], leaves[n], rtol=1e-6)


@pytest.mark.parametrize("params,message", [
    ({"max_leaves": 8}, "max_leaves"),
    ({"colsample_bynode": 0.5}, "colsample_bynode"),
    ({"monotone_constraints": "(1,0,0,0,0)"}, "monotone_constraints"),
    ({"max_depth": 17}, "max_depth in"),
])
def test_refusals_name_the_parameter(tmp_path, params, message):
    X, y = _data(n=300)
    cache = oocboost.build_cache(X, tmp_path / "c", label=y, quiet=True)
    with pytest.raises(oocboost.ParameterError, match=message):
        oocboost.train({"objective": "binary:logistic", "grow_policy": "symmetric",
                        **params}, cache, 2)


def test_categorical_features_are_refused_with_the_way_out(tmp_path):
    pd = pytest.importorskip("pandas")
    X, y = _data(n=300)
    frame = pd.DataFrame({"x": X[:, 0], "city": np.where(X[:, 1] > 0, "a", "b"), "y": y})
    cache = oocboost.build_cache(frame, tmp_path / "c", label="y", quiet=True)
    with pytest.raises(oocboost.ParameterError, match="cat_encoding='ordered_ts'"):
        oocboost.train({"objective": "binary:logistic", "grow_policy": "symmetric"}, cache, 2)
    encoded = oocboost.build_cache(frame, tmp_path / "ts", label="y", quiet=True,
                                   cat_encoding="ordered_ts")
    model = oocboost.train({"objective": "binary:logistic", "grow_policy": "symmetric",
                            "max_depth": 3}, encoded, 3)
    assert model.trees[0].n_leaves == 8


def test_the_estimator_takes_it_and_a_too_small_limit_is_refused(tmp_path):
    X, y = _data(n=2000)
    clf = oocboost.GradientBoostingClassifier(n_estimators=5, max_depth=3,
                                              grow_policy="symmetric").fit(X, y)
    assert all(t.n_leaves == 8 for t in clf.model_.trees)
    cache = oocboost.build_cache(X, tmp_path / "c", label=y, quiet=True)
    with pytest.raises(oocboost.MemoryLimitError):
        oocboost.train({"objective": "binary:logistic", "grow_policy": "symmetric",
                        "max_depth": 16, "memory_limit": "400MB"}, cache, 2)
