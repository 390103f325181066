"""load_model checks every top-level field of a model file or refuses it: one hostile
variant of a real model file per field, each refused with a ModelError that names the
file and the field; and the table covers every field the writer writes."""
import json
import re

import numpy as np
import pytest

import oocboost
from oocboost.cache.edges_text import decode_edges, encode_edges
from oocboost.errors import ModelError
from oocboost.model.checks import known_fields
from oocboost.model.model import load_model


@pytest.fixture(scope="module")
def docs(tmp_path_factory):
    """The JSON of a boosting model with a categorical feature, of an AdaBoost.R2 model
    of a Hoeffding tree with naive Bayes leaves, of a MARS model, of a quantile
    regression forest and of boosting with linear leaves."""
    folder = tmp_path_factory.mktemp("checks")
    rng = np.random.default_rng(0)
    n = 400
    x = rng.normal(size=n)
    city = rng.choice(["paris", "rome", "oslo"], size=n)
    y = ((x > 0) ^ (city == "rome")).astype(float)
    import pyarrow as pa

    table = pa.table({"x": x, "city": city, "label": y})
    cache = oocboost.build_cache(table, folder / "c.oocb", label="label", quiet=True)
    boost = oocboost.train({"objective": "binary:logistic", "max_depth": 3}, cache, 4)
    ada = oocboost.AdaBoostRegressor(n_estimators=3).fit(np.c_[x, x ** 2], x)
    hoeffding = oocboost.HoeffdingTreeClassifier(leaf_prediction="nb", grace_period=50)
    hoeffding.fit(np.c_[x, x ** 2], y)
    mars = oocboost.MARSRegressor(max_terms=5).fit(np.c_[x, x ** 2], y)
    qrf = oocboost.RandomForestRegressor(n_estimators=2, max_depth=3, quantile_samples_leaf=4,
                                         random_state=0).fit(np.c_[x, x ** 2], x)
    linear = oocboost.GradientBoostingRegressor(n_estimators=3, max_depth=2,
                                                linear_tree=True).fit(np.c_[x, x ** 2], x)
    return tuple(m.to_json_dict() for m in (boost, ada.model_, hoeffding.model_, mars.model_,
                                            qrf.model_, linear.model_))


def _mutate(doc, fn):
    doc = json.loads(json.dumps(doc))
    fn(doc)
    return doc


def _set(key, value):
    return lambda d: d.__setitem__(key, value)


def _attr(key, value):
    return lambda d: d["attributes"].__setitem__(key, value)


def _ada(key, value):
    return lambda d: d["attributes"]["adaboost"].__setitem__(key, value)


def _rename_first_feature(d):
    d["bin_mapper"]["features"][0]["name"] = "renamed"


def _reverse_first_edges(d):
    feature = d["bin_mapper"]["features"][0]
    feature["edges"] = encode_edges(decode_edges(feature["edges"], "f0")[::-1])


#: (field, mutation, pattern the error must match), on the boosting model.
BOOSTING = [
    ("format", _set("format", "xgboost"), "not an oocboost model"),
    ("format_version", _set("format_version", 99), "newer oocboost"),
    ("naive_bayes", _set("naive_bayes", {"tree": 0}), "'naive_bayes' must be list"),
    ("stream_state", _set("stream_state", 3), "'stream_state' must be list"),
    ("naive_bayes", _set("naive_bayes", [{"tree": 0, "n_tables": 0, "n_cells": 1,
                                          "node": [], "prior": [], "counts": []}]),
     "naive_bayes leaves need"),
    ("learner", _set("learner", "gblinear"), "learner must be one of"),
    ("objective", _set("objective", "binary:logit"), "objective 'binary:logit'"),
    ("objective_params", _set("objective_params", {"scale_pos_weight": -1.0}),
     "objective_params"),
    ("aggregation", _set("aggregation", "mode"), "aggregation"),
    ("aggregation", lambda d: (d.__setitem__("aggregation", "median"),
                               d["tree_weight"].__setitem__(0, 2.0)),
     "'median' takes one output and tree weights of 1"),
    ("n_outputs", _set("n_outputs", "1"), "'n_outputs' must be an integer"),
    ("trees_per_round", _set("trees_per_round", 0), "'trees_per_round' = 0 is outside"),
    ("base_margin", _set("base_margin", ["x"]), "'base_margin' must be a list"),
    ("tree_group", lambda d: d["tree_group"].__setitem__(0, 7), "group 7 is outside"),
    ("tree_weight", lambda d: d["tree_weight"].pop(), "'tree_weight' has 3 items"),
    ("best_iteration", _set("best_iteration", 10 ** 6), "best_iteration 1000000"),
    ("n_classes", _set("n_classes", -1), "'n_classes' = -1 is outside"),
    ("classes", _set("classes", [[1], [2]]), "classes must be a list of strings or numbers"),
    ("feature_names", _set("feature_names", ["x", "x"]), "feature_names has duplicates"),
    ("feature_types", _set("feature_types", ["numeric", "text"]),
     "feature_types must each be one of"),
    ("bin_mapper", _set("bin_mapper", {"format": "something else"}),
     "bin_mapper: expected a oocboost.BinMapper"),
    ("bin_mapper", _rename_first_feature, "bin_mapper: features"),
    ("bin_mapper", _reverse_first_edges, "bin_mapper: .*strictly increasing"),
    ("params", _set("params", []), "'params' must be dict"),
    ("attributes", _set("attributes", []), "'attributes' must be dict"),
    ("attributes", _attr("label", 3), "attributes.label"),
    ("attributes", _attr("seed", "x"), "attributes.seed"),
    ("attributes", _attr("adaboost", {"algorithm": "SAMME"}), "attributes.adaboost: present"),
    ("attributes", _attr("tree_features", 0), "attributes.tree_features"),
    ("attributes", _attr("tree_features", 3), "attributes.tree_features"),
    ("attributes", _attr("bootstrap_features", "yes"), "attributes.bootstrap_features"),
    ("trees", _set("trees", {}), "'trees' must be list"),
    ("mars", _set("mars", {"terms": [], "coef": []}), "mars: 'terms' must be a list"),
    ("leaf_samples", _set("leaf_samples", {"tree": 0}), "'leaf_samples' must be list"),
    ("leaf_samples", _set("leaf_samples", [{"tree": 0, "n_leaves": 1, "n_samples": 1,
                                            "node": [1], "offset": [0, 1], "value": [0.5],
                                            "weight": [1.0]}]),
     "leaf_samples: a forest of one output averaging"),
    ("linear_leaves", _set("linear_leaves", {"tree": 0}), "'linear_leaves' must be list"),
    ("unknown", _set("colour", "blue"), "unknown field 'colour'"),
]


def _samples(key, fn):
    return lambda d: d["leaf_samples"][0].__setitem__(key, fn(d["leaf_samples"][0][key]))


#: Hostile variants of a quantile forest's leaf samples.
QUANTILE = [
    ("leaf_samples", _samples("value", lambda v: v[::-1]), "ascending"),
    ("leaf_samples", _samples("weight", lambda v: [-1.0] + v[1:]), "weights finite and > 0"),
    ("leaf_samples", _samples("node", lambda v: [0] + v[1:]), "ascending leaves"),
    ("leaf_samples", _samples("offset", lambda v: [0, 0] + v[2:]), "offset must rise"),
    ("leaf_samples", _samples("tree", lambda v: 7), "tree 7 is not in"),
    ("leaf_samples", _samples("n_samples", lambda v: v + 1), "'value' has"),
    ("leaf_samples", lambda d: d["leaf_samples"][0].__setitem__("extra", 1), "unknown"),
]


def _linear(key, fn):
    return lambda d: d["linear_leaves"][0].__setitem__(key, fn(d["linear_leaves"][0][key]))


def _repeat_a_feature(entry):
    """The first leaf with two features names its first twice."""
    k = next(k for k in range(entry["n_leaves"])
             if entry["offset"][k + 1] - entry["offset"][k] >= 2)
    at = entry["offset"][k]
    entry["feature"][at + 1] = entry["feature"][at]


#: Hostile variants of boosting's linear leaves.
LINEAR = [
    ("linear_leaves", _linear("coef", lambda v: ["x"] + v[1:]), "coef"),
    ("linear_leaves", _linear("feature", lambda v: [5] + v[1:]), "numeric features"),
    ("linear_leaves", lambda d: _repeat_a_feature(d["linear_leaves"][0]),
     "names a feature twice"),
    ("linear_leaves", _linear("node", lambda v: [0] + v[1:]), "ascending leaves"),
    ("linear_leaves", _linear("offset", lambda v: [0, 3] + v[2:]), "offset must rise"),
    ("linear_leaves", _linear("tree", lambda v: 9), "tree 9 is not in"),
    ("linear_leaves", _linear("n_coef", lambda v: v + 1), "'feature' has"),
    ("linear_leaves", lambda d: d["linear_leaves"][0].__setitem__("extra", 1), "unknown"),
]


@pytest.mark.parametrize("field, mutation, pattern", LINEAR,
                         ids=[p[:24] for _, _, p in LINEAR])
def test_linear_leaves_are_checked(docs, tmp_path, field, mutation, pattern):
    _refused(tmp_path, _mutate(docs[5], mutation), pattern)


@pytest.mark.parametrize("field, mutation, pattern", QUANTILE,
                         ids=[p[:24] for _, _, p in QUANTILE])
def test_quantile_forest_samples_are_checked(docs, tmp_path, field, mutation, pattern):
    _refused(tmp_path, _mutate(docs[4], mutation), pattern)

#: The same for what AdaBoost's prediction reads.
ADABOOST = [
    ("attributes", lambda d: d["attributes"].pop("adaboost"), "attributes.adaboost: missing"),
    ("attributes", _ada("algorithm", "AdaBoost.M7"), "unknown algorithm"),
    ("attributes", _ada("prediction", "margin"), "prediction must be 'weighted_median'"),
    ("attributes", _ada("n_classes", "0"), "n_classes must be"),
    ("attributes", _ada("estimator_weights", [1.0]), "estimator_weights must be a list"),
    ("attributes", _ada("estimator_errors", [None, 0.1, 0.1]), "estimator_errors must be"),
]


def _state(key, fn):
    return lambda d: d["stream_state"][0].__setitem__(key, fn(d["stream_state"][0][key]))


#: Hostile variants of a Hoeffding tree's naive Bayes leaves and learning state.
HOEFFDING = [
    ("stream_state", _state("depth", lambda v: [v[0] + 1] + v[1:]), "depth does not match"),
    ("stream_state", _state("active", lambda v: v + v[:1]), "items|distinct node ids"),
    ("stream_state", _state("dist", lambda v: v[:-1]), "'dist' has"),
    ("stream_state", _state("tree", lambda v: 5), "tree 5 is not in the model"),
    ("stream_state", lambda d: d["stream_state"][0].__setitem__("extra", 1), "unknown"),
    ("stream_state", _state("weight_seen", lambda v: "many"), "weight_seen"),
    ("naive_bayes", lambda d: d["naive_bayes"][0]["node"].__setitem__(0, -1), "leaves"),
]


@pytest.mark.parametrize("field, mutation, pattern", HOEFFDING,
                         ids=[p[:24] for _, _, p in HOEFFDING])
def test_hoeffding_parts_are_checked(docs, tmp_path, field, mutation, pattern):
    _refused(tmp_path, _mutate(docs[2], mutation), pattern)


def _refused(tmp_path, doc, pattern):
    path = tmp_path / "hostile.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(ModelError) as info:
        load_model(path)
    message = str(info.value)
    assert "hostile.json" in message and re.search(pattern, message), message


@pytest.mark.parametrize("field, mutation, pattern", BOOSTING,
                         ids=[f"{f}-{p[:24]}" for f, _, p in BOOSTING])
def test_each_field_of_a_boosting_model_is_checked(docs, tmp_path, field, mutation, pattern):
    _refused(tmp_path, _mutate(docs[0], mutation), pattern)


@pytest.mark.parametrize("field, mutation, pattern", ADABOOST,
                         ids=[p[:30] for _, _, p in ADABOOST])
def test_adaboost_attributes_are_checked(docs, tmp_path, field, mutation, pattern):
    _refused(tmp_path, _mutate(docs[1], mutation), pattern)


def test_every_written_field_has_a_check(docs):
    written = set().union(*docs)
    assert written == set(known_fields())
    assert written <= {field for field, _, _ in BOOSTING}


def test_the_real_files_load_and_save_refuses_what_load_refuses(docs, tmp_path):
    for doc in docs:
        path = tmp_path / "good.json"
        path.write_text(json.dumps(doc))
        load_model(path)
    model = load_model(path)
    model.learner = "gblinear"
    with pytest.raises(ModelError, match="learner must be one of"):
        model.save_model(tmp_path / "never.json")
    assert not (tmp_path / "never.json").exists()
