"""C4.5's multiway categorical splits (``multiway=True``): every node of a tree equals a
brute-force NumPy C4.5 (gain ratio; a categorical feature splits into one child per
category, a numeric one at a threshold), compared as partitions of the training rows;
the tree is the same from arrays and from caches of any block size; missing values and
categories absent at a node follow the largest child."""
import numpy as np
import pandas as pd
import pytest

import oocboost
from oocboost.engine.multiway import chain_codes, chain_ids, chain_sums

CATEGORIES = np.array(list("abcdefg"))


def _entropy(y, w):
    p = np.array([w[y == k].sum() for k in np.unique(y)]) / w.sum()
    p = p[p > 0]
    return float(-(p * np.log2(p)).sum())


def _score(y, w, children, criterion):
    """C4.5's gain ratio (or ID3's -weighted entropy) of a partition into ``children``
    (boolean masks); None when fewer than two are non-empty."""
    children = [c for c in children if c.any()]
    if len(children) < 2:
        return None
    shares = np.array([w[c].sum() for c in children]) / w.sum()
    weighted = sum(s * _entropy(y[c], w[c]) for s, c in zip(shares, children))
    if criterion == "entropy":
        return -weighted * w.sum()
    return (_entropy(y, w) - weighted) / -(shares * np.log2(shares)).sum()


def _best_split(X, y, w, criterion):
    """The node's split: ("num", f, t) or ("cat", f, {category: mask}); binary numeric
    splits win ties, lower features win ties of their kind."""
    best_num = best_cat = None
    for f, column in enumerate(X.T):
        if X.dtype == object and isinstance(column[0], str):
            groups = {c: column == c for c in np.unique(column)}
            s = _score(y, w, list(groups.values()), criterion)
            if s is not None and (best_cat is None or s > best_cat[0] + 1e-12):
                best_cat = (s, f, groups)
            continue
        values = np.unique(column.astype(float))
        for t in values[:-1]:
            left = column.astype(float) <= t
            s = _score(y, w, [left, ~left], criterion)
            if s is not None and (best_num is None or s > best_num[0] + 1e-12):
                best_num = (s, f, t)
    if best_cat is not None and (best_num is None or best_cat[0] > best_num[0] + 1e-12):
        return ("cat",) + best_cat[1:]
    return None if best_num is None else ("num",) + best_num[1:]


def _rows_of_nodes(clf, X):
    return clf.decision_path(X).toarray().astype(bool).T


def _multiway_children(tree, node):
    """The children of the multiway split starting at ``node``: follow the chain down
    its right children while they split the same feature."""
    f, children = tree.feature[node], []
    while True:
        children.append(tree.left[node])
        right = tree.right[node]
        if tree.left[right] < 0 or tree.feature[right] != f \
                or not tree.is_categorical[right]:
            return children + [right]
        node = right


def _data(seed, n=1200):
    rng = np.random.default_rng(seed)
    c0 = rng.integers(0, 6, n)
    c1 = rng.integers(0, 3, n)
    x = rng.integers(0, 30, n).astype(float)
    logit = np.where(np.isin(c0, [1, 4]), 1.5, -1.0) + 0.08 * (x - 15) + (c1 == 2)
    y = (rng.random(n) < 1 / (1 + np.exp(-logit))).astype(int)
    X = pd.DataFrame({"c0": pd.Categorical(CATEGORIES[c0]), "x": x,
                      "c1": pd.Categorical(CATEGORIES[c1])})
    return X, y, rng.uniform(0.5, 2.0, n)


@pytest.mark.parametrize("criterion", ["gain_ratio", "entropy"])
@pytest.mark.parametrize("seed", range(3))
def test_every_node_equals_a_brute_force_c45(seed, criterion):
    X, y, w = _data(seed)
    clf = oocboost.DecisionTreeClassifier(multiway=True, criterion=criterion,
                                          max_depth=3).fit(X, y, sample_weight=w)
    tree = clf.model_.trees[0]
    rows = _rows_of_nodes(clf, X)
    raw = X.to_numpy(dtype=object)
    raw[:, 1] = raw[:, 1].astype(float)
    pending = [(0, np.ones(len(y), bool), 0)]
    multiway = checked = 0
    while pending:
        node, at, depth = pending.pop()
        np.testing.assert_array_equal(rows[node], at)
        split = _best_split(raw[at], y[at], w[at], criterion) if depth < 3 and \
            len(np.unique(y[at])) > 1 else None
        if split is None:
            assert tree.left[node] < 0
            continue
        kind, f, how = split
        assert tree.feature[node] == f
        checked += 1
        if kind == "num":
            left = at & (raw[:, f].astype(float) <= how)
            pending += [(tree.left[node], left, depth + 1),
                        (tree.right[node], at & ~left, depth + 1)]
            continue
        multiway += 1
        ours = [rows[child] for child in _multiway_children(tree, node)]
        want = [at & (raw[:, f] == c) for c in how]
        assert len(ours) == len(want)
        assert all(any(np.array_equal(o, m) for o in ours) for m in want)
        pending += [(child, rows[child], depth + 1)
                    for child in _multiway_children(tree, node)]
    assert multiway >= 1 and checked >= 3


def test_gain_ratio_is_not_fooled_by_many_values_as_information_gain_is():
    """An id-like categorical column (30 categories of 2 rows each) has the highest
    information gain of a multiway split; the gain ratio prefers the one informative
    binary feature, as C4.5 was made to."""
    rng = np.random.default_rng(3)
    n = 60
    informative = rng.integers(0, 2, n)
    y = np.where(rng.random(n) < 0.85, informative, 1 - informative)
    X = pd.DataFrame({"id": pd.Categorical([f"id{k}" for k in rng.permutation(n) // 2]),
                      "b": pd.Categorical(CATEGORIES[informative])})
    raw = X.to_numpy(dtype=object)
    w = np.ones(n)
    for criterion, winner in (("gain_ratio", 1), ("entropy", 0)):
        assert _best_split(raw, y, w, criterion)[1] == winner
        clf = oocboost.DecisionTreeClassifier(multiway=True, criterion=criterion,
                                              max_depth=1).fit(X, y)
        assert clf.model_.trees[0].feature[0] == winner


@pytest.mark.parametrize("block_rows", [97, 100_000])
def test_a_cache_of_any_block_size_grows_the_arrays_tree(tmp_path, block_rows):
    X, y, _ = _data(5, n=2000)
    frame = X.assign(label=y)
    cache = oocboost.build_cache(frame, tmp_path / "c.oocb", label="label",
                                 block_rows=block_rows)
    from_cache = oocboost.DecisionTreeClassifier(multiway=True, criterion="gain_ratio",
                                                 max_depth=4).fit(cache)
    from_arrays = oocboost.DecisionTreeClassifier(multiway=True, criterion="gain_ratio",
                                                  max_depth=4).fit(X, y)
    a, b = from_cache.model_.trees[0], from_arrays.model_.trees[0]
    for name in ("left", "right", "feature", "cat_bitset", "value"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    assert (a.is_categorical & (a.left >= 0)).sum() >= 3


def test_missing_and_unseen_categories_follow_the_largest_child():
    rng = np.random.default_rng(1)
    n = 900
    c = rng.choice(3, n, p=[0.2, 0.5, 0.3])
    y = (c == 0).astype(int) | ((c == 2) & (rng.random(n) < 0.5))
    column = CATEGORIES[c].astype(object)
    column[:40] = None
    X = pd.DataFrame({"c": pd.Categorical(column, categories=list("abcz"))})
    clf = oocboost.DecisionTreeClassifier(multiway=True, max_depth=1).fit(X, y)
    children = _multiway_children(clf.model_.trees[0], 0)
    assert len(children) == 3
    leaf_of = clf.apply(pd.DataFrame({"c": pd.Categorical(["a", "b", "c", None, "z"],
                                                          categories=list("abcz"))}))
    assert len(set(leaf_of[:3])) == 3
    assert leaf_of[3] == leaf_of[4] == leaf_of[1]          # "b" has half the rows
    assert leaf_of[1] == children[-1]


def test_chain_helpers():
    counts = np.array([0.0, 4.0, 9.0, 2.0])
    codes = chain_codes(counts)
    assert codes.tolist() == [1, 3, 2]
    chain, children = chain_ids(10, 0, 3)
    assert chain.tolist() == [0, 11] and children.tolist() == [10, 12, 13]
    sums = np.c_[counts, counts]
    np.testing.assert_array_equal(chain_sums(sums, codes), [[15, 15], [11, 11]])


@pytest.mark.parametrize("params", [dict(splitter="random"), dict(max_leaf_nodes=4),
                                    dict(missing_values="surrogate")])
def test_multiway_refuses_what_it_cannot_grow(params):
    X, y, _ = _data(0, n=100)
    with pytest.raises(oocboost.ParameterError, match="multiway=True needs"):
        oocboost.DecisionTreeClassifier(multiway=True, **params).fit(X, y)


def test_a_regression_tree_splits_multiway_into_the_categories_means():
    rng = np.random.default_rng(2)
    n = 600
    c = rng.integers(0, 4, n)
    y = np.array([1.0, 5.0, -2.0, 3.0])[c] + rng.normal(0, 0.1, n)
    X = pd.DataFrame({"c": pd.Categorical(CATEGORIES[c]), "x": rng.normal(size=n)})
    reg = oocboost.DecisionTreeRegressor(multiway=True, max_depth=1).fit(X, y)
    tree = reg.model_.trees[0]
    children = _multiway_children(tree, 0)
    assert len(children) == 4 and tree.feature[0] == 0
    leaf = reg.apply(X)
    for k in range(4):
        assert np.unique(leaf[c == k]).size == 1
        np.testing.assert_allclose(tree.value[leaf[c == k][0]].ravel(), y[c == k].mean())
