"""Forests, extra trees and bagging: invariances, agreement with scikit-learn, CLI path.

Agreement with scikit-learn is statistical (our bootstrap is Poisson(1) per row from a
hash, scikit-learn's a draw of n rows): test accuracy / R^2 within 0.04 of scikit-learn's
forest with the same settings, OOB score within 0.04 of scikit-learn's.
"""
import json
import os

import numpy as np
import pytest
import sklearn.ensemble as ske
from sklearn.datasets import make_classification, make_regression

import oocboost
from oocboost.inspection.permutation import permutation_importance
from oocboost.kernels.cart_stats import (
    MODE_BERNOULLI,
    MODE_POISSON,
    cart_stats,
    draw_dtype,
    row_draws,
)
from oocboost.kernels.codes import read_only
from oocboost.kernels.sampling import poisson1_per_row
from oocboost.learners.forest.forest import train_forest_from_params
from oocboost.sklearn.forests import (
    BaggingClassifier,
    BaggingRegressor,
    ExtraTreesClassifier,
    ExtraTreesRegressor,
    RandomForestClassifier,
    RandomForestRegressor,
)
from oocboost.sklearn.trees import DecisionTreeClassifier, DecisionTreeRegressor

TOL = 0.04


def _split(X, y, n_train):
    return X[:n_train], X[n_train:], y[:n_train], y[n_train:]


def _binary():
    X, y = make_classification(n_samples=1200, n_features=8, n_informative=4,
                               random_state=1)
    return _split(X, y, 800)


def _multiclass():
    X, y = make_classification(n_samples=1200, n_features=8, n_informative=5, n_classes=3,
                               n_clusters_per_class=1, random_state=2)
    return _split(X, y, 800)


def _regression():
    X, y = make_regression(n_samples=1200, n_features=6, n_informative=4, noise=15.0,
                           random_state=3)
    return _split(X, y, 800)


def test_poisson_draws_match_sampling_kernel():
    ours = np.empty((2, 1000))
    row_draws(7, np.array([0, 5], np.int64), 123, MODE_POISSON, 1.0, ours)
    ref = np.empty(1000, np.float32)
    for i, stream in enumerate((0, 5)):
        poisson1_per_row(7, stream, 123, ref)
        np.testing.assert_array_equal(ours[i], ref)
    assert abs(ours.mean() - 1.0) < 0.1 and (ours == 0).mean() > 0.3


@pytest.mark.parametrize("mode,lam,n_classes", [(MODE_POISSON, 1.0, 2),
                                                 (MODE_POISSON, 0.3, 0),
                                                 (MODE_BERNOULLI, 0.6, 3)])
def test_stored_draws_give_the_statistics_of_fresh_draws(mode, lam, n_classes):
    """A forest stores each row's draws in its first pass and reuses them; the statistics
    must be those of drawing again, bit for bit (classification and regression)."""
    rng = np.random.default_rng(3)
    n, streams = 777, np.array([0, 4, 9], np.int64)
    label = (rng.integers(0, n_classes, n) if n_classes else rng.normal(size=n))
    label = label.astype(np.float32)
    weight = rng.uniform(0.5, 2.0, n).astype(np.float32)
    n_stats = n_classes + 1 if n_classes else 4
    fresh = np.empty((3, n, n_stats))
    # label and weight read-only and every argument given, as the forest passes them
    label, weight = read_only(label), read_only(weight)
    cart_stats(label, weight, np.zeros((0, 0)), n_classes, 11, streams, 5000, mode, lam,
               np.zeros((0, 0), np.uint8), fresh, False)
    draws = np.empty((3, n), draw_dtype(mode, lam))
    row_draws(11, streams, 5000, mode, lam, draws)
    stored = np.empty_like(fresh)
    cart_stats(label, weight, np.zeros((0, 0)), n_classes, 11, streams, 5000, mode, lam,
               draws, stored, False)
    np.testing.assert_array_equal(stored, fresh)
    assert (draws == 0).any() and (draws > 0).any()


def test_draw_dtype_holds_every_count():
    assert draw_dtype(MODE_POISSON, 1.0) == np.uint8
    assert draw_dtype(MODE_BERNOULLI, 0.5) == np.uint8
    # 20 + 10 * lam > 255 possible counts: uint8 would wrap
    assert draw_dtype(MODE_POISSON, 30.0) == np.float32


@pytest.mark.parametrize("data,ours_cls,sk_cls", [
    (_binary, RandomForestClassifier, ske.RandomForestClassifier),
    (_multiclass, RandomForestClassifier, ske.RandomForestClassifier),
    (_regression, RandomForestRegressor, ske.RandomForestRegressor),
])
def test_random_forest_close_to_sklearn(data, ours_cls, sk_cls):
    Xtr, Xte, ytr, yte = data()
    kw = dict(n_estimators=30, max_depth=8, oob_score=True, random_state=0)
    ours = ours_cls(**kw).fit(Xtr, ytr)
    ref = sk_cls(**kw).fit(Xtr, ytr)
    assert abs(ours.score(Xte, yte) - ref.score(Xte, yte)) < TOL
    assert abs(ours.oob_score_ - ref.oob_score_) < TOL
    if ours_cls is RandomForestClassifier:
        assert ours.oob_decision_function_.shape == ref.oob_decision_function_.shape
        np.testing.assert_allclose(ours.oob_decision_function_.sum(axis=1), 1.0)
    else:
        assert ours.oob_prediction_.shape == (len(ytr),)
    # impurity importances are normalised and close to scikit-learn's (0.08 absolute)
    np.testing.assert_allclose(ours.feature_importances_.sum(), 1.0)
    np.testing.assert_allclose(ours.feature_importances_, ref.feature_importances_,
                               atol=0.08)


@pytest.mark.parametrize("ours_cls,sk_cls,data", [
    (ExtraTreesClassifier, ske.ExtraTreesClassifier, _multiclass),
    (ExtraTreesRegressor, ske.ExtraTreesRegressor, _regression),
])
def test_extra_trees_close_to_sklearn(ours_cls, sk_cls, data):
    Xtr, Xte, ytr, yte = data()
    kw = dict(n_estimators=20, max_depth=10, random_state=0)
    ours = ours_cls(**kw).fit(Xtr, ytr)
    ref = sk_cls(**kw).fit(Xtr, ytr)
    assert abs(ours.score(Xte, yte) - ref.score(Xte, yte)) < TOL
    assert ours.model_.attributes["splitter"] == "random"


def test_bagging_close_to_sklearn():
    from sklearn.tree import DecisionTreeClassifier as SkTree

    Xtr, Xte, ytr, yte = _binary()
    ours = BaggingClassifier(DecisionTreeClassifier(max_depth=6), n_estimators=20,
                             max_features=0.75, oob_score=True, random_state=0).fit(Xtr, ytr)
    ref = ske.BaggingClassifier(SkTree(max_depth=6), n_estimators=20, max_features=0.75,
                                oob_score=True, random_state=0).fit(Xtr, ytr)
    assert abs(ours.score(Xte, yte) - ref.score(Xte, yte)) < TOL
    assert abs(ours.oob_score_ - ref.oob_score_) < TOL
    # each tree splits on its own subset of 6 of the 8 features
    for tree in ours.estimators_:
        assert len(set(tree.feature[tree.left >= 0].tolist())) <= 6
    Xtr, Xte, ytr, yte = _regression()
    reg = BaggingRegressor(DecisionTreeRegressor(max_depth=8), n_estimators=10,
                           bootstrap=False, max_samples=0.7, random_state=0).fit(Xtr, ytr)
    assert reg.score(Xte, yte) > 0.6


@pytest.fixture(scope="module")
def caches(tmp_path_factory):
    d = tmp_path_factory.mktemp("forest")
    Xtr, _, ytr, _ = _multiclass()
    Xtr, ytr = Xtr[:300], ytr[:300]
    return {br: oocboost.build_cache(Xtr, os.path.join(d, f"c{br}"), label=ytr.astype(float),
                                     block_rows=br, quiet=True)
            for br in (7, 300)}, Xtr


def _model_json(est):
    doc = est.model_.to_json_dict()
    doc.pop("attributes", None)
    return json.dumps(doc["trees"], sort_keys=True)


@pytest.mark.filterwarnings("ignore:.*out-of-bag prediction")
def test_independent_of_block_size_prefetch_threads_and_grouping(caches):
    by_block, X = caches
    kw = dict(n_estimators=6, max_depth=6, oob_score=True, random_state=4)
    ref = RandomForestClassifier(**kw).fit(by_block[300])
    ref_json = _model_json(ref)
    for br, prefetch, n_jobs, tpp in ((7, 0, 1, None), (7, 2, 2, 1), (300, 1, 2, 4)):
        other = RandomForestClassifier(prefetch=prefetch, n_jobs=n_jobs, trees_per_pass=tpp,
                                       **kw).fit(by_block[br])
        assert _model_json(other) == ref_json, (br, prefetch, n_jobs, tpp)
        assert other.oob_score_ == ref.oob_score_
        np.testing.assert_array_equal(other.oob_decision_function_,
                                      ref.oob_decision_function_)
    et = [ExtraTreesClassifier(n_estimators=4, max_depth=5, random_state=1,
                               prefetch=p).fit(by_block[br]) for br, p in ((7, 0), (300, 2))]
    assert _model_json(et[0]) == _model_json(et[1])


def test_warm_start_adds_trees_equal_to_one_fit(caches):
    by_block, X = caches
    kw = dict(max_depth=5, random_state=9, max_features=2)
    full = RandomForestClassifier(n_estimators=6, **kw).fit(by_block[7])
    warm = RandomForestClassifier(n_estimators=2, warm_start=True, **kw).fit(by_block[7])
    warm.set_params(n_estimators=6).fit(by_block[7])
    assert warm.model_.n_trees == 6
    assert _model_json(warm) == _model_json(full)
    np.testing.assert_array_equal(warm.predict_proba(X), full.predict_proba(X))


def test_max_samples_class_weight_and_parameter_errors(caches):
    by_block, X = caches
    rf = RandomForestClassifier(n_estimators=4, max_samples=0.5, class_weight="balanced",
                                random_state=0).fit(by_block[300])
    # a Poisson(0.5) bootstrap draws about half the rows' worth of copies per tree
    roots = np.array([t.n_samples[0] for t in rf.estimators_])
    assert np.all((roots > 0.3 * 300) & (roots < 0.5 * 300))
    RandomForestClassifier(n_estimators=2, class_weight="balanced_subsample",
                           random_state=0).fit(by_block[300])
    with pytest.raises(oocboost.ParameterError, match="max_samples needs bootstrap"):
        RandomForestClassifier(bootstrap=False, max_samples=0.5).fit(by_block[300])
    with pytest.raises(oocboost.ParameterError, match="oob_score=True needs bootstrap"):
        ExtraTreesClassifier(oob_score=True).fit(by_block[300])
    with pytest.raises(oocboost.ParameterError, match="max_features"):
        RandomForestClassifier(max_features=0).fit(by_block[300])


def test_permutation_importance_cache_and_arrays(tmp_path):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 4))
    y = 3 * X[:, 0] + X[:, 1] + 0.1 * rng.normal(size=400)
    cache = oocboost.build_cache(X, os.path.join(tmp_path, "c"), label=y, block_rows=64,
                                 quiet=True)
    rf = RandomForestRegressor(n_estimators=10, max_depth=6, random_state=0).fit(cache)
    res = permutation_importance(rf, cache, n_repeats=3, random_state=0)
    assert res.importances.shape == (4, 3)
    assert res.importances_mean[0] > res.importances_mean[1] > 5 * max(
        abs(res.importances_mean[2]), abs(res.importances_mean[3]))
    res2 = permutation_importance(rf, X, y, n_repeats=3, random_state=0)
    assert np.argmax(res2.importances_mean) == 0
    assert res2.importances_mean[1] > res2.importances_mean[2]


@pytest.mark.filterwarnings("ignore:.*out-of-bag prediction")
def test_cli_learner_path_and_saved_model(caches, tmp_path):
    from oocboost.model.model import load_model
    from oocboost.model.predict import evaluate, predict

    by_block, X = caches
    model = train_forest_from_params("random-forest", {"max_depth": 5, "seed": 3,
                                                       "oob_score": True},
                                     by_block[7].path, n_estimators=5)
    assert model.learner == "random_forest" and model.objective == "multi:proba"
    assert model.n_trees == 5 and model.n_outputs == 3
    assert 0.0 < model.attributes["oob_score"] <= 1.0
    assert model.training_log["trees_per_pass"] == 5
    path = os.path.join(tmp_path, "m.json")
    model.save_model(path)
    loaded = load_model(path)
    np.testing.assert_allclose(predict(loaded, X), predict(model, X))
    assert evaluate(loaded, by_block[300])["mlogloss"] < 1.0
    reg = train_forest_from_params("decision-tree", {"max_depth": 3, "task": "regression"},
                                   by_block[300], n_estimators=99)
    assert reg.n_trees == 1 and reg.objective == "reg:squarederror"
    with pytest.raises(oocboost.ParameterError, match="unknown parameter"):
        train_forest_from_params("extra-trees", {"learning_rate": 0.1}, by_block[7],
                                 n_estimators=2)


def test_trees_per_pass_halves_while_the_group_does_not_fit(caches):
    """A group whose block statistics and node indices do not fit the limit is halved,
    not refused; one tree that does not fit is refused."""
    from oocboost.engine.plan import plan_train
    from oocboost.errors import MemoryLimitError
    from oocboost.learners.common.cart_config import resolve_config
    from oocboost.learners.common.data import cache_classes
    from oocboost.learners.forest.passes import choose_trees_per_pass

    by_block, _ = caches
    cache = by_block[300]
    classes = cache_classes(cache)
    config = resolve_config("random_forest", {"max_depth": 4, "memory_limit": "1GB"},
                            task="classification", n_rows=cache.n_rows,
                            n_features=cache.n_features, classes=classes)
    tried = []

    def fits_four(limit, **kw):
        tried.append(kw["n_trees_in_pass"])
        if kw["n_trees_in_pass"] > 4:
            raise MemoryLimitError("too small for this group")
        # a fixed baseline: the suite's own RSS (up to ~1 GB late in a CI run) must not decide
        return plan_train(limit, **{**kw, "baseline_bytes": 128 * 2**20})

    t, plan = choose_trees_per_pass(cache, config, 16, fits_four)
    assert (t, tried) == (4, [16, 8, 4]) and plan.n_trees_in_pass == 4

    def fits_none(limit, **kw):
        raise MemoryLimitError("too small for one tree")

    with pytest.raises(MemoryLimitError, match="one tree"):
        choose_trees_per_pass(cache, config, 16, fits_none)


@pytest.mark.parametrize("case", ["binary", "multiclass-entropy", "full-features",
                                  "max-samples", "extra", "uint16", "decision-tree"])
def test_integer_statistics_leave_models_bit_identical(case, caches, monkeypatch):
    """Unweighted classification keeps int32 statistics and histograms
    (forest.integer_stats): the trees are bit for bit those of the float64 path, through
    records (sampled features), subtraction (all features), Poisson and Bernoulli draws,
    random thresholds and uint16 codes."""
    import oocboost.learners.forest.passes as forest

    kw = dict(random_state=5, n_jobs=2)
    Xtr, _, ytr, _ = _binary()
    data = (Xtr, ytr)
    if case == "binary":
        make = lambda: RandomForestClassifier(n_estimators=4, max_depth=8, max_features=2,
                                              **kw)
    elif case == "multiclass-entropy":
        data = (caches[0][7],)
        make = lambda: RandomForestClassifier(n_estimators=4, criterion="entropy",
                                              max_features=3, min_samples_leaf=2, **kw)
    elif case == "full-features":
        make = lambda: RandomForestClassifier(n_estimators=3, max_features=None,
                                              bootstrap=False, max_depth=6, **kw)
    elif case == "max-samples":
        make = lambda: RandomForestClassifier(n_estimators=4, max_samples=0.5, **kw)
    elif case == "extra":
        make = lambda: ExtraTreesClassifier(n_estimators=4, bootstrap=True, **kw)
    elif case == "uint16":
        make = lambda: RandomForestClassifier(n_estimators=3, max_features=3, max_bin=600,
                                              **kw)
    else:
        make = lambda: DecisionTreeClassifier(random_state=5, min_samples_leaf=3)
    integer = make().fit(*data)
    assert integer.model_.training_log["integer_stats"] is True
    monkeypatch.setattr(forest, "INTEGER_STATS", False)
    floats = make().fit(*data)
    assert floats.model_.training_log["integer_stats"] is False
    assert _model_json(integer) == _model_json(floats)


def test_integer_statistics_only_where_exact(monkeypatch):
    """int32 statistics need integer weights and sums bounded by int32: not with sample
    or class weights, not for regression, not when n_rows x the largest draw exceeds
    the int32 range."""
    import oocboost.learners.forest.passes as forest

    Xtr, _, ytr, _ = _binary()
    Xr, _, yr, _ = _regression()
    kw = dict(n_estimators=2, max_depth=3, random_state=0)

    def used(est, X, y, **fit_kw):
        return est.fit(X, y, **fit_kw).model_.training_log["integer_stats"]

    assert used(RandomForestClassifier(**kw), Xtr, ytr)
    assert not used(RandomForestClassifier(**kw), Xtr, ytr,
                    sample_weight=np.ones(len(ytr)))
    assert not used(RandomForestClassifier(class_weight="balanced", **kw), Xtr, ytr)
    assert not used(RandomForestRegressor(**kw), Xr, yr)
    # Poisson(1) draws are capped at 20 copies: n_rows x 20 must fit
    monkeypatch.setattr(forest, "INT_HIST_MAX", len(ytr) * 20)
    assert used(RandomForestClassifier(**kw), Xtr, ytr)
    monkeypatch.setattr(forest, "INT_HIST_MAX", len(ytr) * 20 - 1)
    assert not used(RandomForestClassifier(**kw), Xtr, ytr)
    assert used(RandomForestClassifier(bootstrap=False, **kw), Xtr, ytr)


@pytest.mark.parametrize("case", ["multiclass", "binary-weights", "regression", "extra",
                                  "uint16"])
def test_record_slots_leave_models_bit_identical(case, caches, monkeypatch):
    """Small nodes built from row records (histograms.RECORD_SMALL_NODES) give the same trees,
    bit for bit, as every node built as a histogram; and records are really used."""
    import oocboost.engine.histograms as histograms

    kw = dict(n_estimators=4, max_depth=8, random_state=3, n_jobs=2)
    if case == "multiclass":
        data, make = (caches[0][7],), lambda: RandomForestClassifier(max_features=3, **kw)
    elif case == "binary-weights":
        Xtr, _, ytr, _ = _binary()
        weights = np.random.default_rng(0).choice([0.0, 0.5, 1.0, 2.0], len(ytr))
        data = (Xtr, ytr)
        make = lambda: RandomForestClassifier(max_features=2, criterion="entropy", **kw)
    elif case == "regression":
        Xtr, _, ytr, _ = _regression()
        data, make = (Xtr, ytr), lambda: RandomForestRegressor(max_features=0.5, **kw)
    elif case == "extra":
        Xtr, _, ytr, _ = _binary()
        data, make = (Xtr, ytr), lambda: ExtraTreesClassifier(**kw)
    else:
        Xtr, _, ytr, _ = _regression()
        data, make = (Xtr, ytr), lambda: RandomForestRegressor(max_features=2, max_bin=600,
                                                                 **kw)
    fit_kw = {"sample_weight": weights} if case == "binary-weights" else {}
    with_records = make().fit(*data, **fit_kw)
    assert with_records.model_.training_log["record_nodes"] > 0
    monkeypatch.setattr(histograms, "RECORD_SMALL_NODES", False)
    without = make().fit(*data, **fit_kw)
    assert without.model_.training_log["record_nodes"] == 0
    assert _model_json(with_records) == _model_json(without)


@pytest.mark.parametrize("bootstrap_features", [False, True])
def test_random_subspace_trees_are_trees_on_their_columns(bootstrap_features):
    """Ho's random subspace method (``bootstrap=False``, ``max_features < 1``): every row,
    a subset of columns per tree; each tree is scikit-learn's tree on those columns
    (one bin per distinct value, so the same training-row partitions)."""
    from sklearn.tree import DecisionTreeClassifier as SkTree

    rng = np.random.default_rng(5)
    X = rng.normal(size=(240, 8))
    y = ((X[:, 0] + X[:, 3] - X[:, 5] + 0.3 * rng.normal(size=240)) > 0).astype(int)
    ours = BaggingClassifier(DecisionTreeClassifier(max_depth=3, min_samples_leaf=8),
                             n_estimators=6, bootstrap=False, max_features=0.5,
                             bootstrap_features=bootstrap_features, random_state=3).fit(X, y)
    sets = ours.estimators_features_
    assert len(sets) == 6
    for cols in sets:
        assert np.all(np.diff(cols) > 0) and cols.min() >= 0 and cols.max() < 8
        if not bootstrap_features:
            assert len(cols) == 4
    if bootstrap_features:
        assert any(len(c) < 4 for c in sets)   # duplicates drawn and merged
    else:
        assert len({tuple(c) for c in sets}) > 1
    # (min_samples_leaf=8 and this seed: no node has two equally good splits, which the
    # two libraries would break differently)
    expected = np.mean(
        [
            SkTree(max_depth=3, min_samples_leaf=8, random_state=0)
            .fit(X[:, cols], y)
            .predict_proba(X[:, cols])
            for cols in sets
        ],
        axis=0,
    )
    np.testing.assert_allclose(ours.predict_proba(X), expected, rtol=0, atol=1e-12)
    for tree, cols in zip(ours.estimators_, sets):
        assert set(tree.feature[tree.left >= 0].tolist()) <= set(cols.tolist())
    # the sets are recomputed from the saved model's seed
    again = BaggingClassifier(DecisionTreeClassifier(max_depth=3, min_samples_leaf=8),
                              n_estimators=6, bootstrap=False, max_features=0.5,
                              bootstrap_features=bootstrap_features, random_state=3).fit(X, y)
    assert all(np.array_equal(a, b) for a, b in zip(sets, again.estimators_features_))
