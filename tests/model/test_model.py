"""Tree and Model: invariants, importance, exact JSON round trip, hostile model files."""
import json
import os
import re

import numpy as np
import pytest

from oocboost.cache.binning import BinMapper
from oocboost.errors import ModelError, ParameterError
from oocboost.model.model import FORMAT_VERSION, Model, load_model
from oocboost.model.tree import Tree


def small_tree():
    """depth 2:  0: f0 <= 1.5 ? 1 : 2;  1: leaf;  2: f2 <= -0.5 ? 3 : 4;  3, 4: leaves."""
    return Tree(left=[1, -1, 3, -1, -1], right=[2, -1, 4, -1, -1],
                feature=[0, -1, 2, -1, -1], threshold=[1.5, 0, -0.5, 0, 0],
                value=[0.0, 0.1, 0.0, -0.2, 0.3], bin_threshold=[7, 0, 3, 0, 0],
                default_left=[True, False, False, False, False],
                gain=[10.0, 0, 4.0, 0, 0], cover=[100.0, 40, 60, 25, 35],
                n_samples=[100.0, 40, 60, 25, 35])


def cat_tree():
    bits = np.zeros((3, 1), np.uint32)
    bits[0, 0] = 0b1010
    return Tree([1, -1, -1], [2, -1, -1], [1, -1, -1], [0.0, 0, 0],
                [[0, 0], [1.5, -1.5], [2.5, 0.125]], default_left=[True, False, False],
                is_categorical=[True, False, False], cat_bitset=bits,
                gain=[3.0, 0, 0], cover=[9.0, 4, 5], n_samples=[9.0, 4, 5])


def full_model():
    t1, t2, t3 = small_tree(), small_tree(), small_tree()
    t2.gain[0] = 6.0
    t3.feature[0] = 1
    return Model(
        [t1, t2, t3, cat_tree()], tree_group=[0, 1, 0, -1],
        tree_weight=[1.0, 0.1 + 0.2, 1 / 3, 2.0], base_margin=[0.1, -1e-300],
        n_outputs=2, objective="multi:softmax", objective_params={"num_class": 2},
        learner="gbtree", aggregation="sum", trees_per_round=2,
        feature_names=["a", "b", "c"], feature_types=["numeric", "categorical", "numeric"],
        bin_mapper=BinMapper(["a", "b", "c"], ["numeric", "categorical", "numeric"], 16,
                             [np.array([0.5, 1.5]), np.array([]), np.array([0.5, 2.5])],
                             [None, ["x", "y"], None], [False, False, False]).to_dict(),
        params={"eta": 0.3, "max_depth": 6, "tuple": (1, 2)}, best_iteration=1,
        n_classes=2, classes=["no", "yes"],
        attributes={"evals_result": {"valid": {"mlogloss": [np.float32(0.5), 0.25]}},
                    "estimator_weights": np.array([1.0, 2.0]), "n": np.int64(3)})


# --------------------------------------------------------------------- Tree basics


def test_tree_shape_properties():
    t = small_tree()
    assert (t.n_nodes, t.n_leaves, t.depth, t.n_outputs, t.n_words) == (5, 3, 2, 1, 0)
    assert Tree([-1], [-1], [-1], [0.0], [1.0]).depth == 0
    assert t.left.dtype == np.int32 and t.threshold.dtype == np.float64
    assert t.default_left.dtype == np.bool_ and t.value.shape == (5, 1)
    assert t.validate(n_features=3, max_bin=16) is t
    cat_tree().validate(n_features=2, max_bin=16)


def test_constructor_refuses_lossy_dtypes():
    with pytest.raises(ModelError, match="left"):
        Tree([1.5, -1, -1], [2, -1, -1], [0, -1, -1], [0.0] * 3, [0.0] * 3)
    with pytest.raises(ModelError, match="feature"):
        Tree([1, -1, -1], [2, -1, -1], [2 ** 40, -1, -1], [0.0] * 3, [0.0] * 3)
    with pytest.raises(ModelError, match="cat_bitset"):
        Tree([-1], [-1], [-1], [0.0], [0.0], cat_bitset=[[-1]])


def broken(mutate, n_features=3, max_bin=16):
    t = small_tree()
    mutate(t)
    with pytest.raises(ModelError) as info:
        t.validate(n_features, max_bin, tree_index=7)
    return str(info.value)


@pytest.mark.parametrize(
    "mutate, pattern",
    [
        (
            lambda t: t.right.__setitem__(0, 9),
            r"tree 7, node 0: right child 9 is out of range",
        ),
        (
            lambda t: t.left.__setitem__(2, 2),
            r"node 2: left child 2 is not greater",
        ),  # self-loop
        (
            lambda t: t.right.__setitem__(2, 1),
            r"node 2: right child 1 is not greater",
        ),  # cycle-ish
        (lambda t: t.left.__setitem__(2, 1), r"node 2: left child 1 is not greater"),
        (
            lambda t: (t.left.__setitem__(2, 4), t.right.__setitem__(2, 4)),
            r"node 2: .*children",
        ),
        (lambda t: t.right.__setitem__(1, 3), r"node 1: one child is -1"),
        (lambda t: t.feature.__setitem__(1, 0), r"node 1: leaf has feature 0"),
        (lambda t: t.feature.__setitem__(2, -1), r"node 2: internal node has feature -1"),
        (lambda t: t.feature.__setitem__(2, 3), r"node 2: feature 3 is out of range \[0, 3\)"),
        (lambda t: t.threshold.__setitem__(2, np.nan), r"node 2: threshold nan is not finite"),
        (lambda t: t.threshold.__setitem__(0, np.inf), r"node 0: threshold inf"),
        (lambda t: t.value.__setitem__((4, 0), np.inf), r"node 4: value is not finite"),
        (lambda t: t.gain.__setitem__(1, np.nan), r"node 1: gain"),
        (
            lambda t: t.bin_threshold.__setitem__(0, 15),
            r"node 0: bin threshold 15 is outside "
            r"\[0, 14\]",
        ),
        (lambda t: t.bin_threshold.__setitem__(0, -1), r"node 0: bin threshold -1"),
        (
            lambda t: t.is_categorical.__setitem__(0, True),
            r"node 0: categorical split but the "
            r"bitsets have 0 words",
        ),
        (lambda t: setattr(t, "cat_bitset", np.zeros((5, 2), np.uint32)), r"2 words"),
        (lambda t: setattr(t, "gain", t.gain[:4]), r"gain must be a \(5,\) float64"),
        (
            lambda t: setattr(t, "left", t.left.astype(np.int64)),
            r"left must be a \(5,\) int32",
        ),
        (lambda t: setattr(t, "value", np.zeros((5, 0))), r"at least one column"),
    ],
)
def test_validate_names_tree_node_and_problem(mutate, pattern):
    msg = broken(mutate)
    assert msg.startswith("tree 7")
    assert re.search(pattern, msg), msg


def test_two_parents_and_unreachable_node():
    # node 3 has parents 0 and 2, node 4 none (but children ids still exceed parents)
    t = Tree([1, -1, 3, -1, -1], [2, -1, 3, -1, -1], [0, -1, 0, -1, -1], [0.0] * 5,
             [0.0] * 5)
    t.right[2] = 4
    t.left[0] = 3  # 3 now has parents 0 and 2; node 1 has none
    with pytest.raises(ModelError, match=r"node 1: has 0 parents"):
        t.validate(1)
    t2 = Tree([1, -1, -1, -1], [2, -1, -1, -1], [0, -1, -1, -1], [0.0] * 4, [0.0] * 4)
    with pytest.raises(ModelError, match=r"node 3: has 0 parents"):
        t2.validate(1)


def test_model_validate_checks_groups_weights_and_widths():
    m = full_model()
    assert m.validate() is m
    for mutate, pattern in [
        (lambda m: m.tree_group.__setitem__(0, 2), r"tree 0: group 2 is outside \[-1, 2\)"),
        (lambda m: m.tree_weight.__setitem__(1, np.nan), r"tree 1: weight nan"),
        (lambda m: m.tree_group.__setitem__(3, 0), r"tree 3: value has 2 columns, expected 1"),
        (lambda m: m.trees.pop(), r"3 trees is not a whole number of rounds"),
        (lambda m: setattr(m, "aggregation", "max"), r"aggregation"),
        (lambda m: setattr(m, "best_iteration", 2), r"best_iteration 2"),
        (lambda m: setattr(m, "feature_names", ["a", "a", "c"]), r"duplicates"),
        (lambda m: setattr(m, "classes", ["x"]), r"1 classes listed but n_classes = 2"),
        (lambda m: m.trees[0].feature.__setitem__(2, 5), r"tree 0, node 2: feature 5"),
        (lambda m: m.bin_mapper.__setitem__("max_bin", 4), r"tree 0, node 0: bin threshold 7"),
    ]:
        m = full_model()
        mutate(m)
        with pytest.raises(ModelError, match=pattern):
            m.validate()


# --------------------------------------------------------------------- importance


def test_feature_importance_xgboost_definitions():
    m = full_model()  # features of splits: t1: 0 (gain 10), 2 (4); t2: 0 (6), 2 (4);
    #                   t3: 1 (10), 2 (4); cat tree: 1 (3). covers 100/60, 100/60, 100/60, 9
    np.testing.assert_array_equal(m.feature_importance("weight"), [2, 2, 3])
    np.testing.assert_array_equal(m.feature_importance("total_gain"), [16, 13, 12])
    np.testing.assert_array_equal(m.feature_importance("gain"), [8, 6.5, 4])
    np.testing.assert_array_equal(m.feature_importance("total_cover"), [200, 109, 180])
    np.testing.assert_array_equal(m.feature_importance("cover"), [100, 54.5, 60])
    unused = Model([small_tree()], n_features=4)
    np.testing.assert_array_equal(unused.feature_importance("gain"), [10, 0, 4, 0])
    with pytest.raises(ParameterError, match="importance_type"):
        m.feature_importance("split")


# --------------------------------------------------------------------- save / load


def assert_same_model(a, b):
    assert len(a.trees) == len(b.trees)
    for ta, tb in zip(a.trees, b.trees):
        for name in Tree.__slots__:
            x, y = getattr(ta, name), getattr(tb, name)
            if name in ("surrogates", "oblique"):   # their own tests round-trip them
                assert x is None and y is None
                continue
            assert x.dtype == y.dtype and x.shape == y.shape, name
            assert x.tobytes() == y.tobytes(), name  # bit-exact floats
    for name in ("tree_group", "tree_weight", "base_margin"):
        assert getattr(a, name).tobytes() == getattr(b, name).tobytes()
        assert getattr(a, name).dtype == getattr(b, name).dtype
    for name in ("n_outputs", "objective", "objective_params", "learner", "aggregation",
                 "trees_per_round", "feature_names", "feature_types", "bin_mapper",
                 "best_iteration", "n_classes", "classes"):
        assert getattr(a, name) == getattr(b, name), name


def test_save_load_round_trip_is_exact(tmp_path):
    m = full_model()
    path = tmp_path / "model.json"
    m.save_model(path)
    loaded = load_model(path)
    assert_same_model(m, loaded)
    assert loaded.params == {"eta": 0.3, "max_depth": 6, "tuple": [1, 2]}
    assert loaded.attributes == {"evals_result": {"valid": {"mlogloss": [0.5, 0.25]}},
                                 "estimator_weights": [1.0, 2.0], "n": 3}
    assert loaded.tree_weight[1] == 0.1 + 0.2 and loaded.base_margin[1] == -1e-300
    X = np.array([[0.0, 1.0, -1.0], [2.0, 3.0, 0.0], [np.nan, np.nan, np.nan]])
    np.testing.assert_array_equal(m.predict_margin(X), loaded.predict_margin(X))
    # saving the loaded model gives the same bytes
    path2 = tmp_path / "again.json"
    loaded.save_model(str(path2))
    assert path.read_bytes() == path2.read_bytes()
    doc = json.loads(path.read_text())
    assert doc["format"] == "oocboost-model" and doc["format_version"] == FORMAT_VERSION


def test_non_finite_attributes_saved_as_null(tmp_path):
    m = Model([small_tree()], n_features=3, attributes={"auc": [float("nan"), 0.5]})
    m.save_model(tmp_path / "m.json")
    assert load_model(tmp_path / "m.json").attributes == {"auc": [None, 0.5]}
    bad = Model([small_tree()], n_features=3, attributes={"obj": object()})
    with pytest.raises(ModelError, match="attributes.*object"):
        bad.save_model(tmp_path / "bad.json")


def test_save_is_atomic_and_never_writes_invalid_models(tmp_path):
    path = tmp_path / "m.json"
    good = Model([small_tree()], n_features=3)
    good.save_model(path)
    before = path.read_bytes()
    invalid = Model([small_tree()], n_features=2)  # feature 2 out of range
    with pytest.raises(ModelError, match="feature 2"):
        invalid.save_model(path)
    assert path.read_bytes() == before
    good.tree_weight[0] = 2.0
    good.save_model(path)  # overwrite
    assert load_model(path).tree_weight[0] == 2.0
    assert sorted(os.listdir(tmp_path)) == ["m.json"]  # no temporary left behind


# --------------------------------------------------------------------- hostile files


def good_doc():
    return full_model().to_json_dict()


def write(tmp_path, content):
    path = tmp_path / "hostile.json"
    if isinstance(content, (dict, list)):
        content = json.dumps(content)
    if isinstance(content, str):
        content = content.encode()
    path.write_bytes(content)
    return path


def load_error(tmp_path, content, **kw):
    path = write(tmp_path, content)
    with pytest.raises(ModelError) as info:
        load_model(path, **kw)
    msg = str(info.value)
    assert "hostile.json" in msg, msg
    return msg


def edit(fn):
    doc = good_doc()
    fn(doc)
    return doc


def tree0(doc):
    return doc["trees"][0]


@pytest.mark.parametrize(
    "content, pattern",
    [
        (edit(lambda d: d.update(format_version=2)), "written by a newer oocboost"),
        (edit(lambda d: d.update(format_version=0)), "invalid format_version"),
        (edit(lambda d: d.update(format_version="1")), "invalid format_version"),
        (edit(lambda d: d.update(format="xgboost")), "not an oocboost model"),
        ([1, 2, 3], "not an oocboost model"),
        ("", "not valid JSON"),
        ('{"format": "oocboost-model", "format_version": 1, "tre', "not valid JSON"),
        (b"\x89PNG\r\n\x1a\n\x00\x00", "not UTF-8"),
        ("[" * 100000 + "]" * 100000, "nested too deeply|not valid JSON"),
        (json.dumps(good_doc()).replace('"eta": 0.3', '"eta": NaN'), "not valid JSON.*NaN"),
        (
            json.dumps(good_doc()).replace('"tree_weight": [1.0', '"tree_weight": [1e999'),
            "not valid JSON.*1e999",
        ),
        (edit(lambda d: d.pop("trees")), "missing key 'trees'"),
        (edit(lambda d: d.pop("n_outputs")), "missing key 'n_outputs'"),
        (edit(lambda d: d.update(n_outputs=True)), "'n_outputs' must be an integer"),
        (edit(lambda d: d.update(trees={})), "'trees' must be list"),
        (
            edit(lambda d: d.update(tree_group=[0, 1, 0])),
            "'tree_group' has 3 items, expected 4",
        ),
        (edit(lambda d: d.update(tree_group=[0, 1, 0, 5])), "tree 3: group 5 is outside"),
        (edit(lambda d: d.update(tree_weight=[1, 1, 1, "x"])), "'tree_weight' must be a list"),
        (edit(lambda d: d.update(base_margin=[0.0])), "'base_margin' has 1 items, expected 2"),
        (edit(lambda d: d.update(best_iteration=5)), "best_iteration 5"),
        (edit(lambda d: d.update(aggregation="median")), "aggregation"),
        (edit(lambda d: d.update(feature_names=["a", "b"])), "feature_types must be 2"),
        (edit(lambda d: d.update(params=[])), "'params' must be dict"),
        (
            edit(lambda d: tree0(d)["right"].__setitem__(0, 99)),
            "tree 0, node 0: right child 99",
        ),
        (
            edit(lambda d: tree0(d)["left"].__setitem__(2, 2)),
            "node 2: left child 2 is not greater",
        ),
        (edit(lambda d: tree0(d)["left"].__setitem__(2, 0)), "node 2: left child 0"),
        (
            edit(lambda d: tree0(d)["feature"].__setitem__(0, 3)),
            "node 0: feature 3 is out of range",
        ),
        (
            edit(lambda d: tree0(d)["feature"].__setitem__(0, 2**40)),
            "'feature' must be a list",
        ),
        (
            edit(lambda d: tree0(d)["threshold"].__setitem__(0, None)),
            "'threshold' must be a list",
        ),
        (
            edit(lambda d: tree0(d)["left"].__setitem__(0, 1.0)),
            "'left' must be a list of int32",
        ),
        (
            edit(lambda d: tree0(d)["feature"].__setitem__(0, True)),
            "'feature' must be a list of int32",
        ),
        (
            edit(lambda d: tree0(d)["threshold"].__setitem__(0, True)),
            "'threshold' must be a list of float64",
        ),
        (
            edit(lambda d: tree0(d)["left"].__setitem__(0, [1])),
            "'left' must be a list of int32",
        ),
        (
            edit(lambda d: tree0(d)["default_left"].__setitem__(0, 1)),
            "'default_left' must be a list of booleans",
        ),
        (edit(lambda d: tree0(d).update(n_nodes=10**9)), "'left' has 5 items, expected"),
        (edit(lambda d: tree0(d).update(n_nodes=2**40)), "'n_nodes' = .* is outside"),
        (edit(lambda d: tree0(d).update(n_words=10**6)), "'n_words' = 1000000 is outside"),
        (edit(lambda d: tree0(d).update(value=[0.0] * 4)), "'value' has 4 items, expected 5"),
        (edit(lambda d: tree0(d).pop("gain")), "tree 0: missing key 'gain'"),
        (edit(lambda d: d["trees"].__setitem__(0, "tree")), "tree 0: must be a JSON object"),
        (
            edit(lambda d: d["trees"][3].update(cat_bitset=[])),
            "'cat_bitset' has 0 items, expected 1",
        ),
        (
            edit(lambda d: d["trees"][3].update(cat_bitset=[2**32])),
            "'cat_bitset' must be a list",
        ),
        (
            edit(lambda d: d["trees"][3].update(n_words=0, cat_bitset=[])),
            "categorical split but the bitsets have 0 words",
        ),
        (edit(lambda d: d["trees"][3].update(n_words=2, cat_bitset=[1, 2])), "2 words"),
    ],
)
def test_hostile_files_raise_model_error(tmp_path, content, pattern):
    msg = load_error(tmp_path, content)
    assert re.search(pattern, msg), msg


def test_cycle_through_all_nodes_is_rejected(tmp_path):
    # 0 -> (1, 2), 2 -> (3, 4), 4 -> (2, 0): a cycle back to the root and to node 2
    doc = edit(lambda d: None)
    t = tree0(doc)
    t["left"][4], t["right"][4], t["feature"][4] = 2, 0, 0
    assert re.search(r"tree 0, node 4: left child 2 is not greater",
                     load_error(tmp_path, doc))


def test_bitset_allocation_is_bounded(tmp_path):
    # trees each declaring many nodes of the widest bitsets: cheap to write, huge to
    # allocate, and only their sum over the trees passes the limit (the bound is checked
    # before any tree's arrays are read)
    n = 3
    leaf = {"n_nodes": (1 << 28) // (n * 2048) + 1, "n_outputs": 1, "n_words": 2048,
            "left": [-1], "right": [-1], "feature": [-1], "threshold": [0.0],
            "bin_threshold": [0], "default_left": [False], "is_categorical": [False],
            "gain": [0.0], "cover": [0.0], "n_samples": [0.0], "cat_bitset": [],
            "value": [0.0]}
    assert (n - 1) * leaf["n_nodes"] * 2048 <= 1 << 28 < n * leaf["n_nodes"] * 2048
    doc = edit(lambda d: d.update(trees=[leaf] * n, tree_group=[0] * n,
                                  tree_weight=[1.0] * n, trees_per_round=1,
                                  best_iteration=None))
    assert re.search("categorical bitsets would take", load_error(tmp_path, doc))


def test_size_cap_and_missing_file(tmp_path):
    full_model().save_model(tmp_path / "ok.json")
    size = os.path.getsize(tmp_path / "ok.json")
    with pytest.raises(ModelError, match="larger than"):
        load_model(tmp_path / "ok.json", max_bytes=size - 1)
    assert load_model(tmp_path / "ok.json", max_bytes=size).n_trees == 4
    with pytest.raises(ModelError, match="cannot read model file"):
        load_model(tmp_path / "absent.json")


def test_from_json_dict_names_source():
    doc = good_doc()
    doc["trees"][1]["right"][0] = 1
    with pytest.raises(ModelError, match=r"^model <dict>: tree 1, node 0: both children"):
        Model.from_json_dict(doc)


# --------------------------------------------------------------------- building helpers


def tree_dict(v_left, v_right):
    t = small_tree()
    t.value[:, 0] = [0.0, v_left, 0.0, v_right, v_right]
    return {name: getattr(t, name) for name in Tree.__slots__}


def test_add_round_extend_slice_and_include_base(tmp_path):
    m = Model([], n_outputs=2, trees_per_round=2, feature_names=["a", "b", "c"],
              base_margin=[1.0, 2.0], objective="multi:softprob",
              objective_params={"num_class": 2})
    for r in range(3):
        m.add_round([tree_dict(r, 0.0), tree_dict(10.0 * r, 0.0)])  # dicts, as growers give
    np.testing.assert_array_equal(m.tree_group, [0, 1, 0, 1, 0, 1])
    assert m.n_rounds == 3
    with pytest.raises(ModelError, match="a round has 2 trees"):
        m.add_round([tree_dict(0, 0)])
    X = np.array([[0.0, 0.0, -1.0]])  # goes to node 1 in every tree
    np.testing.assert_array_equal(m.predict_margin(X), [[1 + 3, 2 + 30]])
    np.testing.assert_array_equal(m.predict_margin(X, include_base=False), [[3, 30]])
    codes = np.zeros((3, 1), np.uint8)
    np.testing.assert_array_equal(
        m.predict_margin_binned(codes, 15, iteration_range=(2, 3), include_base=False),
        [[2, 20]])
    m.best_iteration = 1
    head = m.slice_rounds(0, 2)
    assert head.n_rounds == 2 and head.best_iteration == 1
    np.testing.assert_array_equal(head.predict_margin(X), [[2, 12]])
    cont = Model([], n_outputs=2, trees_per_round=2, feature_names=["a", "b", "c"],
                 base_margin=[1.0, 2.0])
    cont.extend_from(head).add_round([tree_dict(5.0, 0.0), tree_dict(7.0, 0.0)])
    np.testing.assert_array_equal(cont.predict_margin(X), [[7, 19]])
    with pytest.raises(ModelError, match="other features"):
        Model([], n_outputs=2, trees_per_round=2, n_features=3).extend_from(head)
    # training metadata lives in attributes and is saved
    m.best_score, m.evals_result = 0.25, {"valid": {"mlogloss": [0.5, 0.25]}}
    m.training_log = {"seconds": 1.5}
    m.save_model(tmp_path / "m.json")
    back = load_model(tmp_path / "m.json")
    assert (back.best_score, back.evals_result, back.training_log) == (
        0.25, {"valid": {"mlogloss": [0.5, 0.25]}}, {"seconds": 1.5})


def test_mean_include_base_false_is_the_average_only():
    trees = [small_tree(), small_tree()]
    trees[1].value *= 3
    m = Model(trees, n_features=3, aggregation="mean", base_margin=[10.0])
    X = np.array([[0.0, 0.0, 0.0]])  # node 1: values 0.1 and 0.3
    assert m.predict_margin(X, include_base=False)[0, 0] == pytest.approx(0.2)
    assert m.predict_margin(X)[0, 0] == pytest.approx(10.2)


def test_empty_boosted_records_schema_and_json_params():
    from types import SimpleNamespace
    mapper = SimpleNamespace(feature_types=["numeric", "categorical", "numeric"],
                             to_dict=lambda: {"max_bin": 16, "features": []})
    cache = SimpleNamespace(feature_names=["a", "b", "c"], bin_mapper=mapper)
    objective = SimpleNamespace(name="multi:softprob", params={"num_class": 3}, n_outputs=3)
    m = Model.empty_boosted(objective, [0.0, 0.0, 0.0], cache,
                            {"eta": 0.3, "callback": object()}, trees_per_round=3)
    assert (m.objective, m.n_outputs, m.n_classes, m.trees_per_round) == (
        "multi:softprob", 3, 3, 3)
    assert m.params == {"eta": 0.3} and m.max_bin == 16 and m.validate() is m
    assert m.feature_types[1] == "categorical" and m.objective_params == {"num_class": 3}


def _many_trees_model(n_trees=40, depth=8):
    rng = np.random.default_rng(0)
    n = 2 ** (depth + 1) - 1
    inner = 2 ** depth - 1
    trees = []
    for _ in range(n_trees):
        left, right, feat = np.full(n, -1), np.full(n, -1), np.full(n, -1)
        left[:inner] = 2 * np.arange(inner) + 1
        right[:inner] = 2 * np.arange(inner) + 2
        feat[:inner] = rng.integers(0, 3, inner)
        trees.append(Tree(left, right, feat, rng.normal(size=n), rng.normal(size=n)))
    return Model(trees, objective="reg:squarederror", feature_names=["a", "b", "c"],
                 feature_types=["numeric"] * 3)


def test_a_model_that_does_not_fit_the_memory_limit_is_refused(tmp_path):
    """A 640 MB model gave MemoryError tracebacks; now the load is estimated first
    (exit 5 on the command line) and a MemoryError while parsing is the same error."""
    from oocboost.errors import MemoryLimitError
    from oocboost.model.loading import LOAD_BYTES_PER_FILE_BYTE
    from oocboost.utils.rss import current_rss

    path = tmp_path / "m.json"
    model = _many_trees_model()
    model.save_model(path)
    size = os.path.getsize(path)
    need = LOAD_BYTES_PER_FILE_BYTE * size
    with pytest.raises(MemoryLimitError, match=r"m.json \(.*\) needs about .* to load, "
                                               r"more than the .* left under the memory"):
        load_model(path, memory_limit=int(current_rss() + need / 2))
    loaded = load_model(path, memory_limit=int(current_rss() + 4 * need))
    X = np.random.default_rng(1).normal(size=(50, 3))
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))


_PARSE_UNDER_RLIMIT = """
import resource, sys
import numpy as np
import oocboost.model.model as mm
import oocboost.model.loading as ml
from oocboost.errors import MemoryLimitError
from oocboost.utils.rss import current_rss
ml.LOAD_BYTES_PER_FILE_BYTE = 0.0   # let it start: the parse itself must fail cleanly
import psutil
vms = psutil.Process().memory_info().vms
resource.setrlimit(resource.RLIMIT_AS, (vms + (16 << 20), resource.RLIM_INFINITY))
try:
    mm.load_model(sys.argv[1])
except MemoryLimitError as exc:
    print("refused:", exc)
"""


def test_out_of_memory_while_parsing_is_a_memory_limit_error(tmp_path):
    import subprocess
    import sys

    path = tmp_path / "m.json"
    _many_trees_model(n_trees=120, depth=9).save_model(path)
    r = subprocess.run([sys.executable, "-c", _PARSE_UNDER_RLIMIT, str(path)],
                       capture_output=True, text=True, timeout=120, check=False)
    assert r.returncode == 0, r.stderr[-1500:]
    assert "refused: model file" in r.stdout and "out of memory while parsing" in r.stdout
