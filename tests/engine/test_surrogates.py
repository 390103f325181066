"""Surrogate splits (``missing_values="surrogate"``) against a brute-force NumPy version of
rpart's rule (agreement over the node's rows with both values present, at least two rows
on each side of a threshold, kept when the adjusted agreement is positive, ordered by
agreement, five per node) and rpart's prediction (first surrogate present, else the
majority direction); the gain over the learned default direction when a correlated
feature is missing at prediction; forests, caches, block sizes and model files."""
import json

import numpy as np
import pytest

import oocboost
from oocboost.errors import ModelError, ParameterError
from oocboost.model.model import load_model


def _data(n=600, seed=0, train_missing=True):
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 40, n).astype(float)
    b = np.clip(a + rng.integers(-6, 7, n), 0, 45)             # strongly tied to a
    c = rng.integers(0, 30, n).astype(float)
    d = np.where(a > 20, rng.integers(0, 10, n), rng.integers(5, 15, n)).astype(float)
    e = rng.integers(0, 50, n).astype(float)                   # noise
    X = np.c_[a, b, c, d, e]
    y = ((a > 18) ^ (c > 20) ^ (rng.random(n) < 0.08)).astype(int)
    if train_missing:
        X[rng.random(n) < 0.1, 0] = np.nan
        X[rng.random(n) < 0.15, 1] = np.nan
        X[rng.random(n) < 0.05, 3] = np.nan
    return X, y


def _goes_left(tree, node, x):
    """Primary rule of a numeric split on a raw value (NaN: None)."""
    if np.isnan(x):
        return None
    return x <= tree.threshold[node]


def _rpart_surrogates(X, rows, f, side, max_surrogates=5):
    """rpart's surrogates of a node: ``side`` is +1 (left), -1 (right), 0 (primary
    missing) for ``rows``. Returns ``(majority_left, [(feature, agreement, adjusted,
    left set of the node's rows)])``."""
    tleft, tright = float((side == 1).sum()), float((side == -1).sum())
    total = tleft + tright
    majority = max(tleft, tright) / total
    found = []
    for k in range(X.shape[1]):
        if k == f:
            continue
        x = X[rows, k]
        ok = ~np.isnan(x) & (side != 0)
        xs, ys = x[ok], side[ok]
        values = np.unique(xs)
        agree = max((ys == 1).sum(), (ys == -1).sum())
        best = None
        for j in range(len(values) - 1):
            below = xs <= values[j]
            if below.sum() < 2 or (~below).sum() < 2:
                continue
            right_le = ((ys == -1) & below).sum() + ((ys == 1) & ~below).sum()
            left_le = ((ys == 1) & below).sum() + ((ys == -1) & ~below).sum()
            if right_le > agree:
                agree, best = right_le, (values[j], False)
            elif left_le > agree:
                agree, best = left_le, (values[j], True)
        if best is None:
            continue
        share = agree / total
        adj = (share - majority) / (1 - majority)
        if adj > 0:
            cut, left_le = best
            left = (x <= cut) == left_le
            found.append((k, share, adj, left & ~np.isnan(x)))
    found.sort(key=lambda s: -s[1])   # stable: ties keep the lower feature first
    return not tleft < tright, found[:max_surrogates]


def _walk_training(tree, learned_default, X):
    """Node of each training row at every depth, routed as training did (the learned
    default direction for a missing primary). Returns the rows of each node."""
    members = {0: np.arange(len(X))}
    order = [0]
    while order:
        n = order.pop(0)
        if tree.left[n] < 0:
            continue
        x = X[members[n], tree.feature[n]]
        go = np.where(np.isnan(x), learned_default[n], x <= tree.threshold[n])
        members[tree.left[n]] = members[n][go]
        members[tree.right[n]] = members[n][~go]
        order += [tree.left[n], tree.right[n]]
    return members


def _rpart_predict_leaf(tree, reference, x):
    node = 0
    while tree.left[node] >= 0:
        go = _goes_left(tree, node, x[tree.feature[node]])
        if go is None:
            majority, surrogates = reference[node]
            go = majority
            for k, _, _, _, rule in surrogates:
                if not np.isnan(x[k]):
                    go = rule(x[k])
                    break
        node = tree.left[node] if go else tree.right[node]
    return node


@pytest.mark.parametrize("block_rows", [64, 600])
@pytest.mark.parametrize("max_surrogates", [5, 2])
def test_surrogates_equal_rparts_rule(tmp_path, block_rows, max_surrogates):
    X, y = _data()
    cache = oocboost.build_cache(X, tmp_path / "c.oocb", label=y.astype(float),
                                 block_rows=block_rows, quiet=True)
    kw = dict(max_depth=4, min_samples_leaf=5)
    ours = oocboost.DecisionTreeClassifier(missing_values="surrogate",
                                           max_surrogates=max_surrogates, **kw).fit(cache)
    learned = oocboost.DecisionTreeClassifier(**kw).fit(cache)
    tree, plain = ours.model_.trees[0], learned.model_.trees[0]
    np.testing.assert_array_equal(tree.feature, plain.feature)
    np.testing.assert_array_equal(tree.threshold, plain.threshold)
    members = _walk_training(tree, plain.default_left, X)
    reference = {}
    n_checked = 0
    for n in np.flatnonzero(tree.left >= 0):
        rows = members[n]
        x = X[rows, tree.feature[n]]
        side = np.where(np.isnan(x), 0, np.where(x <= tree.threshold[n], 1, -1))
        majority, expected = _rpart_surrogates(X, rows, tree.feature[n], side,
                                               max_surrogates)
        assert bool(tree.default_left[n]) == majority
        got = tree.surrogates.of_node(n)
        sur = tree.surrogates
        assert sur.feature[got].tolist() == [k for k, *_ in expected]
        np.testing.assert_allclose(sur.agreement[got], [s for _, s, _, _ in expected],
                                   rtol=1e-12)
        np.testing.assert_allclose(sur.adjusted[got], [a for _, _, a, _ in expected],
                                   rtol=1e-12)
        rules = []
        for j, (k, share, adj, left) in zip(got, expected):
            xv = X[rows, k]
            present = ~np.isnan(xv)

            def rule(v, j=j):
                return (v <= sur.threshold[j]) == bool(sur.left_le[j])

            np.testing.assert_array_equal(rule(xv[present]), left[present])
            rules.append((k, share, adj, left, rule))
            n_checked += 1
        reference[n] = (majority, rules)
    assert n_checked >= 5
    # rpart's prediction (usesurrogate=2) on rows with the main feature missing
    Xt, _ = _data(400, seed=1, train_missing=False)
    Xt[::2, 0] = np.nan
    Xt[::3, 1] = np.nan
    leaf = ours.model_.predict_leaf(Xt)[:, 0]
    expected = [_rpart_predict_leaf(tree, reference, row) for row in Xt]
    np.testing.assert_array_equal(leaf, expected)


def test_surrogates_beat_the_learned_direction_when_a_feature_goes_missing():
    rng = np.random.default_rng(3)
    n = 4000
    a = rng.normal(size=n)
    X = np.c_[a, a + 0.25 * rng.normal(size=n), rng.normal(size=n)]
    y = ((a > 0.3) ^ (rng.random(n) < 0.05)).astype(int)
    Xt = X.copy()
    Xt[:, 0] = np.nan
    kw = dict(max_depth=4, random_state=0)
    with_surrogates = oocboost.DecisionTreeClassifier(missing_values="surrogate", **kw)
    learned = oocboost.DecisionTreeClassifier(**kw)
    acc_s = with_surrogates.fit(X, y).score(Xt, y)
    acc_l = learned.fit(X, y).score(Xt, y)
    assert acc_s > acc_l + 0.2, (acc_s, acc_l)
    # nothing changes for rows without missing values
    np.testing.assert_array_equal(with_surrogates.predict_proba(X), learned.predict_proba(X))


@pytest.mark.parametrize("cls", [oocboost.RandomForestClassifier,
                                 oocboost.RandomForestRegressor])
def test_forests_take_surrogates(tmp_path, cls):
    X, y = _data(500, seed=4)
    target = y if cls is oocboost.RandomForestClassifier else X[:, 2] + y
    kw = dict(n_estimators=6, max_depth=5, random_state=0, trees_per_pass=3)
    ours = cls(missing_values="surrogate", **kw).fit(X, target)
    plain = cls(**kw).fit(X, target)
    complete = X[~np.isnan(X).any(axis=1)]
    np.testing.assert_array_equal(ours.predict(complete), plain.predict(complete))
    assert all(t.surrogates is not None and t.surrogates.n_surrogates > 0
               for t in ours.model_.trees)
    assert ours.model_.training_log["surrogate_passes"] == 2
    # the file holds them; raw and binned prediction agree
    path = tmp_path / "rf.json"
    ours.save_model(path)
    model = load_model(path)
    Xm = X.copy()
    Xm[::2, 0] = np.nan
    np.testing.assert_allclose(model.predict(Xm), ours.model_.predict(Xm), rtol=1e-12)
    assert not np.allclose(model.predict(Xm), plain.model_.predict(Xm))


def test_categorical_surrogate_sends_each_category_to_its_majority_side(tmp_path):
    import pyarrow as pa

    rng = np.random.default_rng(7)
    n = 800
    a = rng.normal(size=n)
    # the city mostly tells the sign of a; "rome" is split evenly
    city = np.where(a > 0, rng.choice(["oslo", "lima", "rome"], n, p=[0.6, 0.3, 0.1]),
                    rng.choice(["kyiv", "rome", "lima"], n, p=[0.7, 0.1, 0.2]))
    y = ((a > 0) ^ (rng.random(n) < 0.05)).astype(float)
    table = pa.table({"a": a, "city": city, "label": y})
    cache = oocboost.build_cache(table, tmp_path / "c.oocb", label="label", quiet=True)
    tree = oocboost.DecisionTreeClassifier(missing_values="surrogate", max_depth=1)
    tree.fit(cache)
    t = tree.model_.trees[0]
    sur = t.surrogates
    j = sur.of_node(0)[0]
    assert sur.feature[j] == 1 and sur.is_categorical[j]
    left = a <= t.threshold[0]
    categories = tree.model_.bin_mapper["features"][1]["categories"]
    agree = 0
    for code, name in enumerate(categories):
        rows = city == name
        n_left, n_right = int((left & rows).sum()), int((~left & rows).sum())
        if n_left + n_right == 0:
            continue
        goes_left = bool(sur.cat_bitset[j, code // 32] >> (code % 32) & 1)
        goes_right = bool(sur.cat_bitset[j, sur.n_words + code // 32] >> (code % 32) & 1)
        assert goes_left != goes_right
        # ties go to the side with more rows overall
        majority_left = left.sum() > (~left).sum()
        assert goes_left == (n_left > n_right or (n_left == n_right and majority_left))
        agree += max(n_left, n_right)
    np.testing.assert_allclose(sur.agreement[j], agree / n, rtol=1e-12)
    # prediction with a missing: the city decides
    Xt = table.drop(["label"]).to_pandas()
    Xt["a"] = np.nan
    pred = tree.predict(Xt)
    assert (pred == y).mean() > 0.8


def test_binned_prediction_follows_the_surrogates(tmp_path):
    X, y = _data(500, seed=5)
    cache = oocboost.build_cache(X, tmp_path / "c.oocb", label=y.astype(float),
                                 quiet=True)
    tree = oocboost.DecisionTreeClassifier(missing_values="surrogate", max_depth=4)
    tree.fit(cache)
    np.testing.assert_allclose(tree.predict_proba(cache), tree.predict_proba(X),
                               rtol=1e-12)


def _hostile(doc, fn):
    doc = json.loads(json.dumps(doc))
    fn(doc["trees"][0]["surrogates"])
    return doc


@pytest.mark.parametrize("mutation, pattern", [
    (lambda s: s["offset"].__setitem__(1, 99), "offset must rise"),
    (lambda s: s["feature"].__setitem__(0, 77), "feature out of range"),
    (lambda s: s["agreement"].__setitem__(0, 1.5), "agreement outside"),
    (lambda s: s.__setitem__("colour", 1), "unknown field 'colour'"),
    (lambda s: s["threshold"].__setitem__(0, "x"), "threshold"),
])
def test_surrogates_in_a_model_file_are_checked(tmp_path, mutation, pattern):
    X, y = _data(300, seed=6)
    tree = oocboost.DecisionTreeClassifier(missing_values="surrogate", max_depth=3)
    tree.fit(X, y)
    doc = tree.model_.to_json_dict()
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(_hostile(doc, mutation)))
    with pytest.raises(ModelError, match=pattern):
        load_model(path)


def test_bad_missing_values_is_refused():
    X, y = _data(100)
    with pytest.raises(ParameterError, match="missing_values must be"):
        oocboost.DecisionTreeClassifier(missing_values="impute").fit(X, y)


def test_contributions_of_a_surrogate_model_refuse_missing_values():
    X, y = _data(300, seed=8, train_missing=False)
    tree = oocboost.DecisionTreeClassifier(missing_values="surrogate", max_depth=3)
    tree.fit(X, y)
    phi = tree.model_.predict_contributions(X)
    np.testing.assert_allclose(phi.sum(axis=-1), tree.model_.predict_margin(X), atol=1e-9)
    Xm = X.copy()
    Xm[0, 0] = np.nan
    with pytest.raises(ModelError, match="surrogate"):
        tree.model_.predict_contributions(Xm)


def test_surrogates_survive_a_save_and_load_bit_for_bit(tmp_path):
    X, y = _data(400, seed=9)
    tree = oocboost.DecisionTreeClassifier(missing_values="surrogate", max_depth=4)
    tree.fit(X, y)
    path = tmp_path / "t.json"
    tree.save_model(path)
    a, b = tree.model_.trees[0].surrogates, load_model(path).trees[0].surrogates
    for name in a.__slots__:
        x, z = getattr(a, name), getattr(b, name)
        assert x.dtype == z.dtype and x.shape == z.shape and x.tobytes() == z.tobytes(), name
