"""Class weights of boosting classifiers (``class_weight``, LightGBM's ``is_unbalance``):
a model equals the one trained with the equivalent sample weights, from ``train``, the
estimators and the command line; the weights of ``"balanced"`` are scikit-learn's and
those of ``is_unbalance`` LightGBM's; what cannot be weighted is refused by name."""
import numpy as np
import pyarrow as pa
import pytest
from sklearn.utils.class_weight import compute_sample_weight

import oocboost
from oocboost.cache.label_stats import LabelStats
from oocboost.errors import ParameterError
from oocboost.learners.boosting.class_weight import class_weights_for
from oocboost.model.objectives import get_objective

from ..cli_runner import run_cli


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(3)
    n = 1200
    X = rng.integers(0, 10, size=(n, 3)).astype(float)
    score = X[:, 0] - 0.6 * X[:, 1] + rng.normal(0, 1.5, n)
    y2 = (score > 5.0).astype(float)                          # ~20% positives
    y3 = np.digitize(score, [1.0, 5.0]).astype(float)         # three unequal classes
    w = rng.integers(1, 4, n).astype(float)                  # exact in float32
    return X, y2, y3, w


def _cache(tmp_path, name, X, y, w=None, block_rows=400):
    table = {"a": X[:, 0], "b": X[:, 1], "c": X[:, 2], "y": y}
    if w is not None:
        table["w"] = w
    return oocboost.build_cache(pa.table(table), tmp_path / name, label="y",
                                weight="w" if w is not None else None, quiet=True,
                                block_rows=block_rows)


def _same_model(a, b, X):
    np.testing.assert_allclose(a.base_margin, b.base_margin, rtol=1e-12, atol=1e-15)
    assert a.n_trees == b.n_trees
    for ta, tb in zip(a.trees, b.trees):
        np.testing.assert_array_equal(ta.feature, tb.feature)
        np.testing.assert_array_equal(ta.bin_threshold, tb.bin_threshold)
    np.testing.assert_allclose(a.predict(X, output_margin=True),
                               b.predict(X, output_margin=True), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("sample_weights", [False, True])
@pytest.mark.parametrize("case", ["binary", "multi"])
def test_class_weight_is_the_equivalent_sample_weight(data, tmp_path, case, sample_weights):
    X, y2, y3, w = data
    y = y2 if case == "binary" else y3
    params = {"objective": "binary:logistic"} if case == "binary" else \
        {"objective": "multi:softprob", "num_class": 3}
    params.update(max_depth=3, verbosity=0)
    class_weight = {0: 0.5, 1: 3.0} if case == "binary" else {0: 2.0, 2: 0.25}
    base = w if sample_weights else np.ones_like(y)
    per_class = np.array([class_weight.get(k, 1.0) for k in range(3)])
    weighted = oocboost.train({**params, "class_weight": class_weight},
                              _cache(tmp_path, "a", X, y, w if sample_weights else None), 6)
    reference = oocboost.train(params, _cache(tmp_path, "b", X, y,
                                              base * per_class[y.astype(int)]), 6)
    _same_model(weighted, reference, X)
    plain = oocboost.train(params, _cache(tmp_path, "c", X, y, w if sample_weights else None),
                           6)
    assert not np.allclose(plain.predict(X, output_margin=True),
                           weighted.predict(X, output_margin=True))


def test_balanced_weights_are_scikit_learns(data, tmp_path):
    """Rows counted unweighted, as ``compute_sample_weight('balanced', y)``, then times
    the sample weights; the estimator maps the labels of ``y``."""
    X, _, y3, w = data
    labels = np.array(["low", "mid", "high"])[y3.astype(int)]
    est = oocboost.GradientBoostingClassifier(n_estimators=5, max_depth=3,
                                              class_weight="balanced")
    est.fit(X, labels, sample_weight=w)
    ref = oocboost.GradientBoostingClassifier(n_estimators=5, max_depth=3)
    ref.fit(X, labels, sample_weight=w * compute_sample_weight("balanced", labels))
    np.testing.assert_allclose(est.predict_proba(X), ref.predict_proba(X), rtol=1e-9,
                               atol=1e-12)
    by_label = oocboost.GradientBoostingClassifier(
        n_estimators=5, max_depth=3, class_weight={"low": 1.0, "mid": 4.0, "high": 0.5})
    codes = np.searchsorted(by_label.fit(X, labels).classes_, labels)
    ref = oocboost.GradientBoostingClassifier(n_estimators=5, max_depth=3)
    ref.fit(X, labels, sample_weight=np.array([0.5, 1.0, 4.0])[codes])  # classes sorted
    np.testing.assert_allclose(by_label.predict_proba(X), ref.predict_proba(X), rtol=1e-9,
                               atol=1e-12)


def test_is_unbalance_has_lightgbms_weights(data, tmp_path):
    """LightGBM's ``BinaryLogloss``: the rarer class weighs the other's rows over its
    own; here the positives (about a fifth of the rows)."""
    X, y2, _, _ = data
    n_pos, n_neg = int(y2.sum()), int(len(y2) - y2.sum())
    assert n_pos < n_neg
    params = {"objective": "binary:logistic", "max_depth": 3, "verbosity": 0}
    cache = _cache(tmp_path, "u", X, y2)
    weights = class_weights_for({"is_unbalance": True}, get_objective("binary:logistic"),
                                cache)
    np.testing.assert_array_equal(weights, [1.0, n_neg / n_pos])
    flipped = class_weights_for({"is_unbalance": True}, get_objective("binary:logistic"),
                                _cache(tmp_path, "f", X, 1.0 - y2))
    np.testing.assert_array_equal(flipped, [n_neg / n_pos, 1.0])
    model = oocboost.train({**params, "is_unbalance": True}, cache, 5)
    reference = oocboost.train({**params, "class_weight": {1: n_neg / n_pos}}, cache, 5)
    _same_model(model, reference, X)
    alias = oocboost.train({**params, "unbalance": True}, cache, 5)
    _same_model(alias, model, X)


def test_a_cache_without_row_counts_counts_in_a_pass(data, tmp_path):
    """Label statistics of caches built before the row counts were kept: 'balanced'
    counts the rows in one labels-only pass, to the same weights."""
    X, _, y3, w = data
    cache = _cache(tmp_path, "old", X, y3, w)
    objective = get_objective("multi:softprob", {"num_class": 3})
    kept = class_weights_for({"class_weight": "balanced"}, objective, cache)
    cache.manifest["label_stats"].pop("class_counts")
    assert LabelStats.from_dict(cache.manifest["label_stats"]).class_counts is None
    counted = class_weights_for({"class_weight": "balanced"}, objective, cache)
    np.testing.assert_array_equal(counted, kept)
    np.testing.assert_allclose(kept, len(y3) / (3 * np.bincount(y3.astype(int))))


def test_command_line_class_weight(data, tmp_path):
    X, y2, _, _ = data
    cache = _cache(tmp_path, "cli.oocb", X, y2)
    done = run_cli("train", cache.path, "-o", tmp_path / "m.json", "--rounds", "4",
                   "--max-depth", "3", "--objective", "binary:logistic", "--param",
                   "class_weight=0:1,1:3", "--quiet")
    assert done.returncode == 0, done.stderr
    model = oocboost.load_model(tmp_path / "m.json")
    reference = oocboost.train({"objective": "binary:logistic", "max_depth": 3,
                                "verbosity": 0, "class_weight": {0: 1.0, 1: 3.0}}, cache, 4)
    _same_model(model, reference, X)
    bad = run_cli("train", cache.path, "-o", tmp_path / "n.json", "--rounds", "2",
                  "--objective", "binary:logistic", "--param", "class_weight=heavy",
                  "--quiet")
    assert bad.returncode != 0 and "Traceback" not in bad.stderr
    assert "class_weight must be" in bad.stderr and "'heavy'" in bad.stderr
    assert not (tmp_path / "n.json").exists()


@pytest.mark.parametrize("params, message", [
    ({"objective": "reg:squarederror", "class_weight": "balanced"},
     "weights the classes of a classification objective"),
    ({"objective": "multi:softprob", "num_class": 3, "is_unbalance": True},
     "is_unbalance is for binary objectives"),
    ({"objective": "binary:logistic", "is_unbalance": True, "class_weight": {1: 2.0}},
     "give one"),
    ({"objective": "binary:logistic", "is_unbalance": True, "scale_pos_weight": 3.0},
     "is_unbalance and scale_pos_weight"),
    ({"objective": "binary:logistic", "class_weight": {5: 2.0}},
     "class_weight names class 5"),
    ({"objective": "binary:logistic", "class_weight": {1: -1.0}}, "class_weight[1]"),
])
def test_refusals_name_the_parameter(data, tmp_path, params, message):
    X, y2, y3, _ = data
    y = y3 if params["objective"].startswith("multi") else y2
    cache = _cache(tmp_path, "r", X, y)
    with pytest.raises(ParameterError, match=message.replace("[", r"\[").replace("]", r"\]")):
        oocboost.train({**params, "verbosity": 0}, cache, 2)


def test_estimators_refuse_class_weight_without_classes(data):
    X, y2, _, _ = data
    with pytest.raises(ParameterError, match="weight the rows with sample_weight"):
        oocboost.GradientBoostingRegressor(n_estimators=2, class_weight="balanced").fit(
            X, y2)
    with pytest.raises(ParameterError, match="weight the rows with sample_weight"):
        oocboost.GradientBoostingClassifier(n_estimators=2, class_weight="balanced").fit(
            X, np.column_stack([y2, 1 - y2]))
    with pytest.raises(ParameterError, match="class_weight names class 'z'"):
        oocboost.GradientBoostingClassifier(n_estimators=2, class_weight={"z": 2.0}).fit(
            X, np.array(["a", "b"])[y2.astype(int)])
