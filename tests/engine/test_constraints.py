"""Interaction constraints: the allowed features of a node from its path (XGBoost's
rule, written as a brute-force twin), parsing of names, indices and JSON, and trained
models in which no path mixes features of different sets; same AUC as XGBoost."""
import itertools

import numpy as np
import pyarrow as pa
import pytest

import oocboost
from oocboost.engine.constraints import (
    InteractionConstraints,
    parse_interaction_constraints,
)


def allowed_by_hand(sets, path, n):
    """XGBoost's SplitImpl: the path's features, and every feature of a set that holds
    the whole path; everything at the root."""
    if not path:
        return set(range(n))
    out = set(path)
    for group in sets:
        if set(path) <= set(group):
            out |= set(group)
    return out


def test_allowed_features_equal_the_rule_for_every_path():
    sets = (frozenset({0, 1}), frozenset({1, 2, 3}), frozenset({4}))
    constraints = InteractionConstraints(sets, 6)
    for size in range(4):
        for path in itertools.combinations(range(6), size):
            mask = constraints.allowed(frozenset(path))
            assert set(np.flatnonzero(mask)) == allowed_by_hand(sets, path, 6), path


def test_parsing_names_indices_and_json():
    names = ["age", "income", "city", "x"]
    assert parse_interaction_constraints([["age", "income"], [2, 3]], names) == \
        (frozenset({0, 1}), frozenset({2, 3}))
    assert parse_interaction_constraints("[[0, 1], [2]]", names) == \
        (frozenset({0, 1}), frozenset({2}))
    assert parse_interaction_constraints(None, names) is None
    assert parse_interaction_constraints([], names) is None
    for bad, message in ((["age"], "list of lists"), ([["agee"]], "unknown feature"),
                         ([[7]], "index in 0..3"), ("[[0", "JSON")):
        with pytest.raises(oocboost.ParameterError, match=message):
            parse_interaction_constraints(bad, names)


def _paths(tree):
    """The features on the path to every leaf of a tree."""
    out, stack = [], [(0, frozenset())]
    while stack:
        node, path = stack.pop()
        if tree.left[node] < 0:
            out.append(path)
            continue
        below = path | {int(tree.feature[node])}
        stack += [(int(tree.left[node]), below), (int(tree.right[node]), below)]
    return out


@pytest.fixture(scope="module")
def interacting(tmp_path_factory):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(4000, 5))
    logit = X[:, 0] * X[:, 1] + X[:, 2] * X[:, 3] + X[:, 0] * X[:, 2] + 0.5 * X[:, 4]
    y = (logit + rng.logistic(size=4000) > 0).astype(float)
    names = [f"f{i}" for i in range(5)]
    table = pa.table({**{n: X[:, i] for i, n in enumerate(names)}, "y": y})
    cache = oocboost.build_cache(table, tmp_path_factory.mktemp("ic") / "c.oocb",
                                 label="y", quiet=True)
    return X, y, cache


@pytest.mark.parametrize("grow_policy", ["depthwise", "lossguide"])
def test_no_path_mixes_features_of_different_sets(interacting, grow_policy):
    X, y, cache = interacting
    sets = [["f0", "f1"], ["f2", "f3"]]
    params = {"objective": "binary:logistic", "max_depth": 5, "eta": 0.3,
              "interaction_constraints": sets, "grow_policy": grow_policy,
              "max_leaves": 16 if grow_policy == "lossguide" else 0}
    model = oocboost.train(params, cache, 15, verbose_eval=False)
    groups = [frozenset({0, 1}), frozenset({2, 3})]
    used = set()
    for tree in model.trees:
        for path in _paths(tree):
            used |= path
            assert len(path) <= 1 or any(path <= g for g in groups), path
    assert {0, 1, 2, 3} <= used  # the constraint limits, it does not forbid
    by_index = oocboost.train({**params, "interaction_constraints": [[0, 1], [2, 3]]},
                              cache, 15, verbose_eval=False)
    np.testing.assert_array_equal(by_index.predict(X), model.predict(X))
    free = oocboost.train({k: v for k, v in params.items()
                           if k != "interaction_constraints"}, cache, 15, verbose_eval=False)
    assert any(len(p) > 1 and not any(p <= g for g in groups)
               for tree in free.trees for p in _paths(tree)), "the data has such paths"


def test_same_auc_as_xgboost_with_the_same_constraints(tmp_path):
    xgb = pytest.importorskip("xgboost")
    from oocboost.model.metrics import get_metric

    rng = np.random.default_rng(0)
    X = rng.normal(size=(20000, 5))
    logit = X[:, 0] * X[:, 1] + X[:, 2] * X[:, 3] + X[:, 0] * X[:, 2] + 0.5 * X[:, 4]
    y = (logit + rng.logistic(size=20000) > 0).astype(float)
    train, test = slice(0, 16000), slice(16000, None)
    cache = oocboost.build_cache(X[train], tmp_path / "c.oocb", label=y[train], quiet=True)
    params = {"objective": "binary:logistic", "max_depth": 4, "eta": 0.3}
    sets = [[0, 1], [2, 3, 4]]
    theirs = xgb.train({**params, "tree_method": "hist", "interaction_constraints": str(sets)},
                       xgb.DMatrix(X[train], label=y[train]), 30).predict(xgb.DMatrix(X[test]))
    ours = oocboost.train({**params, "interaction_constraints": sets}, cache, 30,
                          verbose_eval=False).predict(X[test])
    auc = get_metric("auc")
    assert auc(y[test], ours, None) == pytest.approx(auc(y[test], theirs, None), abs=0.003)


def test_feature_weights_steer_the_column_samples(interacting):
    X, y, cache = interacting
    params = {"objective": "binary:logistic", "max_depth": 3, "colsample_bytree": 0.6,
              "seed": 3}
    model = oocboost.train({**params, "feature_weights": [1, 1, 0, 1, 0]}, cache, 20,
                           verbose_eval=False)
    used = {int(f) for tree in model.trees for f in tree.feature[tree.left >= 0]}
    assert used and not used & {2, 4}, "a zero weight is never drawn"
    by_name = oocboost.train({**params, "feature_weights": {"f2": 0, "f4": 0}}, cache, 20,
                             verbose_eval=False)
    np.testing.assert_array_equal(by_name.predict(X), model.predict(X))
    for bad, message in (([1, 2], "one weight per feature"), ({"zz": 1}, "not a feature"),
                         ([0, 0, 0, 0, 0], "not all 0"), ([1, -1, 1, 1, 1], "non-negative")):
        with pytest.raises(oocboost.ParameterError, match=message):
            oocboost.train({**params, "feature_weights": bad}, cache, 1, verbose_eval=False)


def test_max_cat_threshold_bounds_the_partition(tmp_path):
    rng = np.random.default_rng(2)
    cats = np.array(list("abcdefghij"))[rng.integers(0, 10, 3000)]
    effect = {c: v for c, v in zip("abcdefghij", rng.normal(size=10))}
    y = (np.array([effect[c] for c in cats]) + rng.normal(size=3000) > 0).astype(float)
    cache = oocboost.build_cache(pa.table({"c": cats, "y": y}), tmp_path / "c.oocb",
                                 label="y", quiet=True)
    for threshold in (1, 3):
        model = oocboost.train({"objective": "binary:logistic", "max_depth": 2,
                                "max_cat_threshold": threshold}, cache, 4,
                               verbose_eval=False)
        for tree in model.trees:
            for node in np.flatnonzero(tree.is_categorical & (tree.left >= 0)):
                left = sum(bin(int(w)).count("1") for w in tree.cat_bitset[node])
                assert min(left, 10 - left) <= threshold
