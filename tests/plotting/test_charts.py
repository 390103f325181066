"""The charts draw what the inspection functions compute: bar lengths are the
importances, curves the evaluation log, tree boxes the split rules in raw units,
partial dependence lines the averages, beeswarm points the SHAP values."""
import numpy as np
import pytest

import oocboost
from oocboost import plotting
from oocboost.inspection import feature_importance, partial_dependence
from oocboost.inspection.tree_text import split_rules
from oocboost.plotting.charts import _beeswarm_offsets


@pytest.mark.parametrize("kind", ["weight", "gain", "total_cover"])
def test_importance_bars_are_the_importances_largest_on_top(trained, kind):
    model = trained["model"]
    ax = plotting.plot_importance(model, importance_type=kind)
    scores = {k: v for k, v in feature_importance(model, kind).items() if v > 0}
    widths = [bar.get_width() for bar in ax.patches]
    names = [t.get_text() for t in ax.get_yticklabels()]
    assert sorted(names) == sorted(scores)
    np.testing.assert_allclose(widths, [scores[n] for n in names])
    assert widths == sorted(widths)  # ascending upwards: the largest on top
    two = plotting.plot_importance(model, importance_type=kind, max_num_features=2)
    assert [t.get_text() for t in two.get_yticklabels()] == names[-2:]


def test_shap_importance_over_a_cache_and_an_estimator(trained):
    ax = plotting.plot_importance(trained["model"], importance_type="shap",
                                  data=trained["valid"])
    scores = feature_importance(trained["model"], "shap", data=trained["valid"])
    by_name = dict(zip([t.get_text() for t in ax.get_yticklabels()],
                       [b.get_width() for b in ax.patches]))
    for name, width in by_name.items():
        assert width == pytest.approx(scores[name])
    rng = np.random.default_rng(1)
    X = rng.normal(size=(200, 3))
    est = oocboost.GradientBoostingRegressor(n_estimators=3).fit(X, X[:, 0])
    assert plotting.plot_importance(est).get_yticklabels()[-1].get_text() == "f0"
    with pytest.raises(oocboost.ParameterError, match="pass data"):
        plotting.plot_importance(trained["model"], importance_type="shap")
    with pytest.raises(oocboost.ParameterError, match="importance_type"):
        plotting.plot_importance(trained["model"], importance_type="split")


def test_metric_curves_are_the_evaluation_log(trained):
    model = trained["model"]
    ax = plotting.plot_metric(model, "auc")
    lines = {line.get_label(): line.get_ydata() for line in ax.get_lines()}
    assert set(lines) == {"train", "valid"}
    np.testing.assert_array_equal(lines["valid"], model.evals_result["valid"]["auc"])
    assert ax.get_ylabel() == "auc"
    first = plotting.plot_metric(model.evals_result, dataset_names=["valid"])
    np.testing.assert_array_equal(first.get_lines()[0].get_ydata(),
                                  model.evals_result["valid"]["logloss"])
    with pytest.raises(oocboost.ParameterError, match="no metric 'rmse'"):
        plotting.plot_metric(model, "rmse")
    with pytest.raises(oocboost.ParameterError, match="no evaluation set"):
        plotting.plot_metric(model, dataset_names=["test"])
    bare = oocboost.train({"objective": "binary:logistic"}, trained["train"], 2)
    with pytest.raises(oocboost.ParameterError, match="no evaluation log"):
        plotting.plot_metric(bare)


def test_tree_boxes_are_the_split_rules_and_leaves(trained):
    model = trained["model"]
    from oocboost.cache.binning import BinMapper

    cats = BinMapper.from_dict(model.bin_mapper).categories
    for index in range(model.n_trees):
        tree = model.trees[index]
        ax = plotting.plot_tree(model, index, decimals=3)
        texts = [t.get_text() for t in ax.texts]
        splits = np.flatnonzero(tree.left >= 0)
        for node in splits:
            assert split_rules(tree, node, model.feature_names, cats, 3)[0] in texts
        leaves = np.flatnonzero(tree.left < 0)
        assert sum(t.startswith("leaf\n") for t in texts) == len(leaves)
        assert sum("missing" in t for t in texts) == len(splits)
    assert any(" in {" in t.get_text() for i in range(model.n_trees)
               for t in plotting.plot_tree(model, i).texts), "a city split, by name"
    cut = plotting.plot_tree(model, 0, max_depth=1)
    assert sum(t.get_text() == "..." for t in cut.texts) == 2
    with pytest.raises(oocboost.ParameterError, match="outside the model's 12 trees"):
        plotting.plot_tree(model, 12)


def test_forest_tree_leaves_show_classes(trained):
    forest = oocboost.RandomForestClassifier(n_estimators=2, max_depth=2,
                                             random_state=0).fit(trained["train"])
    texts = [t.get_text() for t in plotting.plot_tree(forest, 1).texts]
    assert any(t.startswith("class 1.0") or t.startswith("class 1") for t in texts)


def test_partial_dependence_lines_are_the_averages(trained):
    model, valid = trained["model"], trained["valid"]
    expected = partial_dependence(model, valid, "b", grid_resolution=20, kind="both")
    ax = plotting.plot_partial_dependence(model, valid, "b", grid_resolution=20,
                                          kind="both", n_ice_lines=7)
    lines = ax.get_lines()
    assert len(lines) == 7 + 1
    np.testing.assert_allclose(lines[-1].get_xdata(), expected.grid_values[0])
    np.testing.assert_allclose(lines[-1].get_ydata(), expected.average[0])
    rows = np.linspace(0, expected.individual.shape[1] - 1, 7).astype(int)
    np.testing.assert_allclose(lines[0].get_ydata(), expected.individual[0, rows[0]])
    assert ax.get_xlabel() == "b"
    two = plotting.plot_partial_dependence(model, valid, ["a", "b"], grid_resolution=8)
    assert (two.get_xlabel(), two.get_ylabel()) == ("a", "b")
    with pytest.raises(oocboost.ParameterError, match="average only"):
        plotting.plot_partial_dependence(model, valid, ["a", "b"], kind="both")


@pytest.mark.parametrize("source", ["cache", "table"])
def test_beeswarm_points_are_the_shap_values(trained, source):
    model = trained["model"]
    data = trained["valid"] if source == "cache" else trained["table"]
    ax = plotting.plot_contributions(model, data, max_rows=300, max_display=3)
    phi = model.predict(trained["valid"], pred_contribs=True)[:300, :-1]
    top = np.argsort(-np.abs(phi).mean(axis=0), kind="stable")[:3][::-1]
    assert [t.get_text() for t in ax.get_yticklabels()] == \
        [model.feature_names[f] for f in top]
    for row, collection in enumerate(ax.collections[:3]):
        points = collection.get_offsets()
        np.testing.assert_allclose(points[:, 0], phi[:, top[row]], rtol=1e-9, atol=1e-12)
        assert np.all(np.abs(points[:, 1] - row) <= 0.4 + 1e-12)


def test_beeswarm_offsets_spread_equal_values_and_stay_in_the_row():
    values = np.r_[np.zeros(9), 5.0]
    offsets = _beeswarm_offsets(values, width=0.4)
    assert offsets[-1] == 0.0  # alone in its bin
    assert len(np.unique(offsets[:9])) == 9  # equal values never overlap
    assert np.abs(offsets).max() <= 0.4
    assert len(_beeswarm_offsets(np.empty(0))) == 0
