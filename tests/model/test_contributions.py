"""Model.predict_contributions: exact path-dependent Tree SHAP, against its naive twin
(Shapley values by brute force over every feature subset, with the subset's value taken
as the tree's prediction when the features outside it follow both branches weighted by
cover), and local accuracy (rows sum to the margin) for every learner."""
import itertools
import math

import numpy as np
import pyarrow as pa
import pytest

import oocboost
from oocboost.errors import ModelError

from ..cli_runner import run_cli


def _subset_value(tree, x, subset, node=0):
    """E[tree(x) | x_S]: features in S follow x, the others both branches by cover."""
    if tree.left[node] < 0:
        return tree.value[node].astype(np.float64)
    f = tree.feature[node]
    left, right = tree.left[node], tree.right[node]
    if f in subset:
        v = x[f]
        if np.isnan(v):
            go_left = tree.default_left[node]
        elif tree.is_categorical[node]:
            code = int(v)
            words = tree.cat_bitset.shape[1]
            go_left = 0 <= code < 32 * words and bool(
                (tree.cat_bitset[node, code // 32] >> (code % 32)) & 1)
        else:
            go_left = v <= tree.threshold[node]
        return _subset_value(tree, x, subset, left if go_left else right)
    w = tree.cover[node]
    return (tree.cover[left] / w * _subset_value(tree, x, subset, left)
            + tree.cover[right] / w * _subset_value(tree, x, subset, right))


def _brute_force_shap(tree, x, n_features):
    """Shapley values of one tree for one row: (n_features + 1, n_cols), bias last."""
    n_cols = tree.value.shape[1]
    phi = np.zeros((n_features + 1, n_cols))
    others = list(range(n_features))
    for i in range(n_features):
        rest = [j for j in others if j != i]
        for size in range(len(rest) + 1):
            weight = (math.factorial(size) * math.factorial(n_features - size - 1)
                      / math.factorial(n_features))
            for subset in itertools.combinations(rest, size):
                s = set(subset)
                phi[i] += weight * (_subset_value(tree, x, s | {i})
                                    - _subset_value(tree, x, s))
    phi[n_features] = _subset_value(tree, x, set())
    return phi


def _brute_force_model(model, X):
    out = np.zeros((len(X), model.n_outputs, model.n_features + 1))
    totals = model._mean_totals(0, model.n_trees)
    for t, tree in enumerate(model.trees):
        group = int(model.tree_group[t])
        cols = [group] if group >= 0 else list(range(model.n_outputs))
        for r, x in enumerate(X):
            phi = _brute_force_shap(tree, x, model.n_features)
            for c, k in enumerate(cols):
                out[r, k] += phi[:, c] * model.tree_weight[t] / totals[k]
    out[:, :, -1] += model.base_margin
    return out


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(8)
    X = rng.normal(size=(400, 4))
    X[rng.random(X.shape) < 0.1] = np.nan
    X[:, 3] = rng.integers(0, 3, size=400)  # a categorical feature as codes
    y = np.nan_to_num(X[:, 0]) * (X[:, 3] == 1) + np.nan_to_num(X[:, 1]) ** 2
    return X, y


def _models(X, y, tmp_path):
    table = pa.table({"a": X[:, 0], "b": X[:, 1], "c": X[:, 2],
                      "d": pa.array(np.array(["x", "y", "z"])[X[:, 3].astype(int)]),
                      "y": y, "cls": np.digitize(y, [0.3, 1.2]).astype(float)})
    reg = oocboost.build_cache(table.drop(["cls"]), tmp_path / "reg.oocb", label="y",
                               quiet=True)
    cls = oocboost.build_cache(table.drop(["y"]), tmp_path / "cls.oocb", label="cls",
                               quiet=True)
    return [oocboost.train({"objective": "reg:squarederror", "max_depth": 3}, reg, 4),
            oocboost.train({"objective": "multi:softprob", "num_class": 3, "max_depth": 2},
                           cls, 2),
            oocboost.RandomForestClassifier(n_estimators=3, max_depth=3,
                                            random_state=0).fit(cls).model_,
            oocboost.AdaBoostClassifier(n_estimators=3, max_depth=2).fit(cls).model_]


@pytest.mark.parametrize("path", ["tables", "recursion"])
def test_equals_brute_force_shapley_values(data, tmp_path, path, monkeypatch):
    """Both ways of computing the values: the leaf weight tables, which 400 rows pay
    for, and the row-by-row recursion, which a table budget of 0 forces."""
    from oocboost.kernels import shap_table
    from oocboost.model import contributions

    X, y = data
    calls = []
    monkeypatch.setattr(shap_table, "table_shap",
                        lambda *a, f=shap_table.table_shap: calls.append(1) or f(*a))
    if path == "recursion":
        monkeypatch.setattr(contributions, "TABLE_MAX_VALUES", 0)
    for model in _models(X, y, tmp_path):
        calls.clear()
        ours = model.predict_contributions(X)[:12]
        assert bool(calls) == (path == "tables")
        expected = _brute_force_model(model, X[:12])
        if model.n_outputs == 1:
            expected = expected[:, 0, :]
        np.testing.assert_allclose(ours, expected, rtol=1e-9, atol=1e-12)


def test_rows_sum_to_the_margin_for_every_learner(data, tmp_path):
    X, y = data
    for model in _models(X, y, tmp_path):
        phi = model.predict_contributions(X)
        margin = model.predict_margin(X)
        total = phi.sum(axis=-1)
        np.testing.assert_allclose(total.reshape(margin.shape), margin, rtol=1e-9,
                                   atol=1e-9)
        first = model.predict_contributions(X, iteration_range=(0, 1))
        np.testing.assert_allclose(first.sum(axis=-1).reshape(margin.shape),
                                   model.predict_margin(X, iteration_range=(0, 1)),
                                   rtol=1e-9, atol=1e-9)


def test_a_feature_the_trees_never_use_gets_nothing(data, tmp_path):
    X, y = data
    model = _models(X, y, tmp_path)[0]
    used = {int(f) for tree in model.trees for f in tree.feature if f >= 0}
    phi = model.predict_contributions(X)
    for f in set(range(4)) - used:
        np.testing.assert_array_equal(phi[:, f], 0.0)


def test_adaboost_r2_is_refused(data):
    X, y = data
    model = oocboost.AdaBoostRegressor(n_estimators=2).fit(np.nan_to_num(X), y).model_
    with pytest.raises(ModelError, match="weighted median"):
        model.predict_contributions(np.nan_to_num(X))


def test_dataframes_files_and_estimators(tmp_path):
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(4)
    frame = pd.DataFrame({"x": rng.normal(size=300),
                          "city": rng.choice(["oslo", "rome", "lima"], size=300)})
    y = frame["x"].to_numpy() + (frame["city"] == "rome").to_numpy()
    est = oocboost.GradientBoostingRegressor(n_estimators=5, max_depth=3).fit(frame, y)
    phi = est.predict_contributions(frame)
    assert phi.shape == (300, 3)
    np.testing.assert_allclose(phi.sum(axis=1), est.predict(frame), rtol=1e-9, atol=1e-12)
    path = tmp_path / "x.csv"
    frame.to_csv(path, index=False)
    np.testing.assert_array_equal(est.model_.predict(str(path), pred_contribs=True), phi)
    cache = oocboost.build_cache(frame.assign(y=y), tmp_path / "c.oocb", label="y",
                                 quiet=True)
    # the leaves a cache's bin codes reach are the raw rows' leaves
    np.testing.assert_array_equal(est.model_.predict(cache, pred_leaf=True),
                                  est.model_.predict(frame, pred_leaf=True))
    clf = oocboost.GradientBoostingClassifier(n_estimators=3).fit(frame, y > 0.5)
    margin = clf.model_.predict(frame, output_margin=True)
    np.testing.assert_allclose(clf.predict_contributions(frame).sum(axis=1), margin,
                               rtol=1e-9, atol=1e-12)


def _brute_force_interactions(tree, x, n_features):
    """Shapley interaction index of one tree for one row, (F + 1, F + 1, n_cols): half of
    the index off the diagonal on both sides, the diagonal what is left of the plain
    value, the bias at [-1, -1] (XGBoost's and shap's layout)."""
    n_cols = tree.value.shape[1]
    out = np.zeros((n_features + 1, n_features + 1, n_cols))
    for i, j in itertools.combinations(range(n_features), 2):
        rest = [k for k in range(n_features) if k not in (i, j)]
        total = np.zeros(n_cols)
        for size in range(len(rest) + 1):
            weight = (math.factorial(size) * math.factorial(n_features - size - 2)
                      / (2 * math.factorial(n_features - 1)))
            for subset in itertools.combinations(rest, size):
                s = set(subset)
                total += weight * (_subset_value(tree, x, s | {i, j})
                                   - _subset_value(tree, x, s | {i})
                                   - _subset_value(tree, x, s | {j})
                                   + _subset_value(tree, x, s))
        out[i, j] = out[j, i] = total
    phi = _brute_force_shap(tree, x, n_features)
    for i in range(n_features):
        out[i, i] = phi[i] - out[i, :n_features].sum(axis=0) + out[i, i]
    out[n_features, n_features] = phi[n_features]
    return out


@pytest.mark.parametrize("path", ["tables", "recursion"])
def test_interactions_equal_the_brute_force_shapley_interaction_index(data, tmp_path, path,
                                                                      monkeypatch):
    """Both ways: the leaf tables (which 400 rows pay for) and the recursion (forced by
    a table budget of 0)."""
    from oocboost.kernels import shap_table
    from oocboost.model import contributions

    X, y = data
    rows = np.ascontiguousarray(X[:6])
    calls = []
    monkeypatch.setattr(shap_table, "table_shap_interactions",
                        lambda *a, f=shap_table.table_shap_interactions:
                        calls.append(1) or f(*a))
    if path == "recursion":
        monkeypatch.setattr(contributions, "TABLE_MAX_VALUES", 0)
    for model in _models(X, y, tmp_path):
        calls.clear()
        ours = model.predict_contributions(X, interactions=True)[:6]
        assert bool(calls) == (path == "tables")
        expected = np.zeros((len(rows), model.n_outputs, 5, 5))
        totals = model._mean_totals(0, model.n_trees)
        for t, tree in enumerate(model.trees):
            group = int(model.tree_group[t])
            cols = [group] if group >= 0 else list(range(model.n_outputs))
            for r, x in enumerate(rows):
                phi = _brute_force_interactions(tree, x, 4)
                for c, k in enumerate(cols):
                    expected[r, k] += phi[:, :, c] * model.tree_weight[t] / totals[k]
        expected[:, :, 4, 4] += model.base_margin
        if model.n_outputs == 1:
            expected = expected[:, 0]
        np.testing.assert_allclose(ours, expected, rtol=1e-9, atol=1e-12)


def test_interaction_rows_sum_to_the_values_and_the_whole_to_the_margin(data, tmp_path):
    X, y = data
    for model in _models(X, y, tmp_path)[:2]:
        inter = model.predict_contributions(X, interactions=True)
        np.testing.assert_allclose(inter.sum(axis=-1), model.predict_contributions(X),
                                   rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(inter, np.swapaxes(inter, -1, -2), atol=1e-12)
        margin = model.predict_margin(X)
        np.testing.assert_allclose(inter.sum(axis=(-1, -2)).reshape(margin.shape), margin,
                                   rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("block_rows", [64, 1000])
def test_a_cache_streams_the_same_values_as_its_raw_rows(data, tmp_path, block_rows):
    """The training cache's codes follow the same paths as the raw rows, so both give
    the same values, block by block."""
    X, y = data
    table = pa.table({"a": X[:, 0], "b": X[:, 1], "c": X[:, 2], "d": X[:, 3], "y": y})
    cache = oocboost.build_cache(table, tmp_path / "c.oocb", label="y", quiet=True,
                                 block_rows=block_rows)
    model = oocboost.train({"objective": "reg:squarederror", "max_depth": 4}, cache, 5)
    np.testing.assert_allclose(model.predict(cache, pred_contribs=True),
                               model.predict_contributions(X), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(model.predict(str(cache.path), pred_interactions=True),
                               model.predict_contributions(X, interactions=True),
                               rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("piece_rows", [7, None])
def test_values_are_computed_in_pieces_of_bounded_bytes(data, tmp_path, piece_rows,
                                                         monkeypatch):
    """Streamed values (a cache's blocks, a file's batches, an array's chunks) are
    computed a piece of rows at a time, of at most CONTRIBUTION_PIECE_BYTES: the same
    values whatever the pieces, with the labels and base margins of the same rows."""
    from oocboost.model import predict

    X, y = data
    table = pa.table({"a": X[:, 0], "b": X[:, 1], "c": X[:, 2], "d": X[:, 3], "y": y})
    cache = oocboost.build_cache(table, tmp_path / "c.oocb", label="y", quiet=True,
                                 block_rows=150)
    pacsv = pytest.importorskip("pyarrow.csv")
    pacsv.write_csv(table, tmp_path / "d.csv")
    model = oocboost.train({"objective": "reg:squarederror", "max_depth": 4}, cache, 5)
    whole = model.predict_contributions(X)
    inter = model.predict_contributions(X, interactions=True)
    if piece_rows is not None:     # 7 rows of interaction values a piece, 25 of values
        monkeypatch.setattr(predict, "CONTRIBUTION_PIECE_BYTES", 7 * 8 * 5 * 5)
    pieces = {"contribs": [], "interactions": []}
    for kind, expected in (("contribs", whole), ("interactions", inter)):
        flag = {f"pred_{kind}": True}
        for data_ in (cache, str(tmp_path / "d.csv"), X):
            items = list(predict.iter_margins(model, data_, label="y", **flag))
            got = np.concatenate([item[0][:, 0] for item in items])
            np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)
            if data_ is not X:     # the labels of the same rows (a CSV's: float32)
                np.testing.assert_allclose(np.concatenate([item[1] for item in items]), y,
                                           rtol=1e-6)
            pieces[kind].append(max(len(item[0]) for item in items))
    if piece_rows is None:
        assert pieces == {"contribs": [150, 400, 400], "interactions": [150, 400, 400]}
    else:
        assert pieces == {"contribs": [35, 35, 35], "interactions": [7, 7, 7]}


def _as_shap_dict(model):
    """An oocboost model of numeric features as shap's dictionary tree format."""
    trees = []
    totals = model._mean_totals(0, model.n_trees)
    for t, tree in enumerate(model.trees):
        leaf = tree.left < 0
        trees.append({
            "children_left": np.where(leaf, -1, tree.left),
            "children_right": np.where(leaf, -1, tree.right),
            "children_default": np.where(leaf, -1,
                                         np.where(tree.default_left, tree.left, tree.right)),
            "features": np.where(leaf, -2, tree.feature),
            "thresholds": np.where(leaf, 0.0, tree.threshold),
            "values": tree.value * model.tree_weight[t] / totals[0],
            "node_sample_weight": tree.cover.astype(np.float64),
        })
    return {"trees": trees, "base_offset": float(model.base_margin[0])}


def test_agrees_with_shap_tree_explainer_on_the_same_trees():
    shap = pytest.importorskip("shap")  # in the test extra; a bench-only install lacks it
    rng = np.random.default_rng(3)
    X = rng.normal(size=(500, 5))
    X[rng.random(X.shape) < 0.05] = np.nan
    y = np.nan_to_num(X[:, 0]) * np.nan_to_num(X[:, 1]) + np.sin(np.nan_to_num(X[:, 2]))
    models = [oocboost.GradientBoostingRegressor(n_estimators=8, max_depth=4).fit(X, y),
              oocboost.RandomForestRegressor(n_estimators=4, max_depth=5,
                                             random_state=1).fit(X, y)]
    rows = X[:50]
    for est in models:
        explainer = shap.TreeExplainer(_as_shap_dict(est.model_))
        ours = est.predict_contributions(rows)
        np.testing.assert_allclose(ours[:, :-1], explainer.shap_values(rows), rtol=1e-6,
                                   atol=1e-8)
        np.testing.assert_allclose(ours[0, -1], explainer.expected_value, rtol=1e-6)
        np.testing.assert_allclose(est.predict_contributions(rows, interactions=True)
                                   [:, :-1, :-1],
                                   explainer.shap_interaction_values(rows), rtol=1e-6,
                                   atol=1e-8)


def test_contributions_stream_to_a_csv_from_the_command_line(data, tmp_path):

    pacsv = pytest.importorskip("pyarrow.csv")
    X, y = data
    models = _models(X, y, tmp_path)
    model = models[1]  # three classes: contrib_<feature>_<class> columns
    path = tmp_path / "m.json"
    model.save_model(path)
    cache = tmp_path / "cls.oocb"
    out = tmp_path / "phi.csv"
    r = run_cli("predict", path, cache, "-o", out, "--pred-contribs")
    assert r.returncode == 0, r.stderr
    table = pacsv.read_csv(out)
    names = [f"contrib_{n}" for n in model.feature_names] + ["bias"]
    assert table.column_names == [f"{n}_{k}" for k in range(3) for n in names]
    expected = model.predict(str(cache), pred_contribs=True).reshape(len(X), -1)
    np.testing.assert_allclose(np.column_stack([c.to_numpy() for c in table.columns]),
                               expected, rtol=1e-9, atol=1e-12)
