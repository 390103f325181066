"""CatBoost's completions of ordered target statistics (cache/target_stats.py): one
statistic per class (``ts_per_class``) and pairs of categorical columns
(``ts_combinations=2``), each a derived feature after the source's columns. Checked
against the naive ordered statistics feature by feature, against CatBoost on a multiclass
label and on an interaction only a pair of columns shows, and through every way a model
meets new rows (raw frames, files, reference caches)."""
import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import oocboost
from oocboost.cache.binning import BinMapper
from oocboost.cache.categories import PAIR_SEPARATOR
from oocboost.errors import ModelError, ParameterError, SchemaError
from tests.cache.test_target_stats import decode_codes
from tests.kernels.test_target_stats import naive_ordered_stats, naive_slices


def _table(rng, n, n_a=12, n_b=7, n_classes=3, missing=0.0):
    a = rng.integers(0, n_a, n)
    b = rng.integers(0, n_b, n)
    y = ((a + b) % n_classes).astype(float)
    y = np.where(rng.random(n) < 0.15, rng.integers(0, n_classes, n), y)
    ca = np.array([f"a{v}" for v in a], dtype=object)
    cb = np.array([f"b{v}" for v in b], dtype=object)
    ca[rng.random(n) < missing] = None
    return pd.DataFrame({"a": ca, "b": cb, "x": rng.normal(size=n), "y": y})


def test_every_derived_feature_equals_the_naive_ordered_statistics(tmp_path):
    rng = np.random.default_rng(0)
    frame = _table(rng, 2500, missing=0.05)
    y = frame["y"].to_numpy()
    cache = oocboost.build_cache(frame, tmp_path / "c", label="y", block_rows=600,
                                 cat_encoding="ordered_ts", ts_per_class=True,
                                 ts_combinations=2, ts_permutations=3, ts_seed=4,
                                 quiet=True)
    mapper = cache.bin_mapper
    assert cache.feature_names == ["a", "b", "x", "a[y=1]", "a[y=2]", "b[y=1]", "b[y=2]",
                                   "a+b[y=0]", "a+b[y=1]", "a+b[y=2]"]
    assert mapper.input_features() == [0, 1, 2]
    slices = naive_slices(4, 3, 64, len(y))
    pair = np.where(frame["a"].isna(), None,
                    frame["a"].fillna("") + PAIR_SEPARATOR + frame["b"])
    keys = {"a": frame["a"].to_numpy(), "b": frame["b"].to_numpy(), "a+b": pair}
    checked = 0
    for f, name in enumerate(cache.feature_names):
        if name == "x":
            continue
        encoder = mapper.encoders[f]
        cls = int(encoder["target"])
        base = name.split("[")[0]
        strings = keys[base]
        index = np.array([-1 if pd.isna(s) else encoder["categories"].index(s)
                          for s in strings])
        label = (y == cls).astype(float)
        expected = naive_ordered_stats(index, label, slices, label.mean(), 1.0)
        codes = decode_codes(cache, f)
        want = np.where(np.isnan(expected), cache.max_bin - 1,
                        np.searchsorted(mapper.bin_edges[f], expected, side="left"))
        np.testing.assert_array_equal(codes, want, err_msg=name)
        assert encoder.get("sources") == (None if name in ("a", "b") else
                                          base.split("+"))
        checked += 1
    assert checked == 9


def _split(rng, n_train, n_test, **kwargs):
    frame = _table(rng, n_train + n_test, **kwargs)
    return frame.iloc[:n_train].reset_index(drop=True), \
        frame.iloc[n_train:].reset_index(drop=True)


def _mlogloss(p, y):
    return float(-np.mean(np.log(np.clip(p[np.arange(len(y)), y.astype(int)], 1e-15, 1))))


def test_multiclass_with_pairs_matches_catboost():
    """y = (a + b) mod 3 with noise: only the pair of columns says the class. Per-class
    statistics of the pair fit it as CatBoost's combinations do; statistics of the
    columns alone cannot."""
    catboost = pytest.importorskip("catboost")
    rng = np.random.default_rng(1)
    train, test = _split(rng, 6000, 4000)
    X, y = train[["a", "b", "x"]], train["y"].to_numpy()
    Xt, yt = test[["a", "b", "x"]], test["y"].to_numpy()
    params = dict(n_estimators=120, max_depth=4, learning_rate=0.2)
    ours = oocboost.GradientBoostingClassifier(cat_encoding="ordered_ts", ts_combinations=2,
                                               **params).fit(X, y)
    single = oocboost.GradientBoostingClassifier(cat_encoding="ordered_ts",
                                                 **params).fit(X, y)
    theirs = catboost.CatBoostClassifier(iterations=120, depth=4, learning_rate=0.2,
                                         loss_function="MultiClass", verbose=0,
                                         thread_count=2, random_seed=0,
                                         allow_writing_files=False)
    theirs.fit(X, y, cat_features=[0, 1])
    loss = {"ours": _mlogloss(ours.predict_proba(Xt), yt),
            "single": _mlogloss(single.predict_proba(Xt), yt),
            "catboost": _mlogloss(theirs.predict_proba(Xt), yt)}
    accuracy = (ours.predict(Xt) == yt).mean()
    assert accuracy > 0.85, loss                       # the Bayes rate is 0.90
    assert loss["ours"] <= loss["catboost"] + 0.03, loss
    assert loss["single"] > loss["ours"] + 0.15, loss
    assert ours.n_features_in_ == 3 and ours.feature_importances_.shape == (3,)


def test_binary_pairs_find_an_interaction_as_catboost_does():
    catboost = pytest.importorskip("catboost")
    rng = np.random.default_rng(2)
    train, test = _split(rng, 6000, 4000, n_classes=2)
    X, y = train[["a", "b", "x"]], train["y"].to_numpy()
    Xt, yt = test[["a", "b", "x"]], test["y"].to_numpy()
    from sklearn.metrics import roc_auc_score

    auc = {}
    for name, combinations in (("pairs", 2), ("single", 1)):
        clf = oocboost.GradientBoostingClassifier(
            n_estimators=100, max_depth=4, learning_rate=0.2, cat_encoding="ordered_ts",
            ts_combinations=combinations).fit(X, y)
        auc[name] = roc_auc_score(yt, clf.predict_proba(Xt)[:, 1])
    theirs = catboost.CatBoostClassifier(iterations=100, depth=4, learning_rate=0.2,
                                         verbose=0, thread_count=2, random_seed=0,
                                         allow_writing_files=False)
    theirs.fit(X, y, cat_features=[0, 1])
    auc["catboost"] = roc_auc_score(yt, theirs.predict_proba(Xt)[:, 1])
    assert auc["pairs"] >= auc["catboost"] - 0.01, auc
    assert auc["single"] < auc["pairs"] - 0.1, auc


def test_new_rows_are_encoded_alike_from_frames_files_and_reference_caches(tmp_path):
    rng = np.random.default_rng(3)
    train, test = _split(rng, 3000, 800, missing=0.05)
    test.loc[:5, "b"] = "b-unseen"
    cache = oocboost.build_cache(train, tmp_path / "train", label="y",
                                 cat_encoding="ordered_ts", ts_per_class=True,
                                 ts_combinations=2, quiet=True)
    model = oocboost.train({"objective": "multi:softprob", "num_class": 3,
                            "max_depth": 4}, cache, 20)
    path = tmp_path / "test.csv"
    test.to_csv(path, index=False)
    from_frame = model.predict(test[["x", "b", "a"]])      # by name, in any order
    from_file = model.predict(str(path))
    valid = oocboost.build_cache(str(path), tmp_path / "valid", label="y", reference=cache,
                                 quiet=True)
    assert valid.feature_names == cache.feature_names
    from_cache = model.predict(valid)
    np.testing.assert_allclose(from_file, from_frame, rtol=1e-12)
    np.testing.assert_allclose(from_cache, from_frame, rtol=1e-6)
    with pytest.raises(SchemaError, match=r"X has 10 columns; the model was trained on "
                                          r"3 features \(a, b, x"):
        model.predict(np.zeros((4, 10)))
    with pytest.raises(SchemaError, match="lacks the model's feature columns"):
        model.predict(test[["a", "x"]])


def test_options_are_checked(tmp_path):
    rng = np.random.default_rng(4)
    frame = _table(rng, 300)
    cases = [
        (dict(ts_per_class=True), "go with cat_encoding='ordered_ts'"),
        (dict(cat_encoding="ordered_ts", ts_combinations=3), "ts_combinations must be"),
        (dict(cat_encoding="ordered_ts", ts_per_class="yes"), "ts_per_class must be"),
        (dict(cat_encoding="ordered_ts", ts_per_class=True, ts_prior=0.5),
         "leave it None"),
    ]
    for kwargs, message in cases:
        with pytest.raises(ParameterError, match=message):
            oocboost.build_cache(frame, tmp_path / "c", label="y", quiet=True,
                                 overwrite=True, **kwargs)
    many = frame.assign(y=np.arange(len(frame)) % 70)
    with pytest.raises(ParameterError, match="at most 64 classes"):
        oocboost.build_cache(many, tmp_path / "c", label="y", cat_encoding="ordered_ts",
                             ts_per_class=True, quiet=True, overwrite=True)
    clash = frame.rename(columns={"x": "a+b"})
    with pytest.raises(ParameterError, match="would have the names of columns"):
        oocboost.build_cache(clash, tmp_path / "c", label="y", cat_encoding="ordered_ts",
                             ts_combinations=2, quiet=True, overwrite=True)
    mean = oocboost.build_cache(frame, tmp_path / "mean", label="y", quiet=True,
                                cat_encoding="ordered_ts")
    with pytest.raises(ParameterError, match="--ts-per-class"):
        oocboost.train({"objective": "multi:softprob", "num_class": 3}, mean, 2)


def test_a_derived_encoder_names_ordered_ts_sources(tmp_path):
    rng = np.random.default_rng(5)
    cache = oocboost.build_cache(_table(rng, 400), tmp_path / "c", label="y", quiet=True,
                                 cat_encoding="ordered_ts", ts_combinations=2)
    state = cache.bin_mapper.to_dict()
    assert BinMapper.from_dict(state) == cache.bin_mapper
    for sources, message in ((["a", "nope"], "is not an ordered-TS feature"),
                             (["x"], "is not an ordered-TS feature"),
                             (["a", "a"], "one or two distinct"),
                             ("a", "one or two distinct")):
        bad = {**state, "features": [dict(feat) for feat in state["features"]]}
        bad["features"][-1]["encoder"] = {**bad["features"][-1]["encoder"],
                                          "sources": sources}
        with pytest.raises((ParameterError, ModelError), match=message):
            BinMapper.from_dict(bad)


def test_a_pair_is_missing_when_either_column_is():
    mapper_frame = pd.DataFrame({"a": ["p", None, "q"], "b": ["u", "v", None]})
    from oocboost.cache.categories import key_strings

    columns = {k: pa.array(v, type=pa.string()) for k, v in mapper_frame.items()}
    joined = key_strings(columns, ("a", "b")).to_pylist()
    assert joined == ["p" + PAIR_SEPARATOR + "u", None, None]


def test_the_command_line_builds_trains_and_predicts_with_derived_features(tmp_path):
    from tests.cli_runner import run_cli

    rng = np.random.default_rng(6)
    train, test = _split(rng, 2000, 300)
    train.to_csv(tmp_path / "train.csv", index=False)
    test.drop(columns="y").to_csv(tmp_path / "test.csv", index=False)
    built = run_cli("build-cache", tmp_path / "train.csv", "-o", tmp_path / "c.oocb",
                    "--label", "y", "--cat-encoding", "ordered_ts", "--ts-per-class",
                    "--ts-combinations", "2")
    assert built.returncode == 0, built.stderr
    assert "a+b[y=2]" in built.stdout
    trained = run_cli("train", tmp_path / "c.oocb", "-o", tmp_path / "m.json",
                      "--objective", "multi:softprob", "--num-class", "3", "--rounds", "10")
    assert trained.returncode == 0, trained.stderr
    predicted = run_cli("predict", tmp_path / "m.json", tmp_path / "test.csv", "-o",
                        tmp_path / "p.csv")
    assert predicted.returncode == 0, predicted.stderr
    model = oocboost.load_model(tmp_path / "m.json")
    want = model.predict(test.drop(columns="y"))
    got = np.loadtxt(tmp_path / "p.csv", delimiter=",", skiprows=1)
    np.testing.assert_allclose(got[:, :3], want, rtol=1e-6)
    np.testing.assert_array_equal(got[:, 3], want.argmax(axis=1))
    appended = run_cli("build-cache", tmp_path / "train.csv", "-o", tmp_path / "c.oocb",
                       "--append", "--label", "y", "--ts-per-class")
    assert appended.returncode != 0 and "--ts-per-class" in appended.stderr
