"""oocboost.cv: every fold's model equals the model ``train`` grows on the same cache with
the fold's held-out rows weighted zero; the reported scores equal each fold model's
scores computed by hand; folds partition the rows, stratified by class; grouping the
folds (when the memory plan is short) changes nothing; xgboost.cv's table layout."""
import numpy as np
import pyarrow as pa
import pytest

import oocboost
from oocboost.learners.boosting import cv as cv_module
from oocboost.learners.boosting.params import resolve_params
from oocboost.model.metrics import get_metric
from oocboost.model.objectives import get_objective


def _table(n=3000, n_features=5, seed=0, classes=2):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, n_features))
    X[rng.random(X.shape) < 0.05] = np.nan
    signal = np.nan_to_num(X[:, 0]) + np.nan_to_num(X[:, 1]) ** 2 + rng.normal(size=n)
    y = np.digitize(signal, np.quantile(signal, np.linspace(0, 1, classes + 1)[1:-1]))
    return {**{f"f{i}": X[:, i] for i in range(n_features)}, "y": y.astype(float)}


@pytest.fixture(scope="module")
def binary(tmp_path_factory):
    path = tmp_path_factory.mktemp("cv") / "train.oocb"
    return oocboost.build_cache(pa.table(_table()), path, label="y", quiet=True,
                                block_rows=700)


PARAMS = {"objective": "binary:logistic", "max_depth": 3, "eta": 0.3,
          "eval_metric": ["logloss", "auc"]}


def _fold_cache(cache, data, fold_of_row, fold, tmp_path):
    """The training cache's rows with weight 0 on ``fold``'s rows, binned with its edges."""
    weight = (fold_of_row != fold).astype(float)
    return oocboost.build_cache(pa.table({**data, "w": weight}), tmp_path / f"f{fold}.oocb",
                                label="y", weight="w", reference=cache, quiet=True,
                                block_rows=700)


def test_each_fold_equals_train_with_its_held_out_rows_weighted_zero(binary, tmp_path):
    data = _table()
    result, oof, models = oocboost.cv(PARAMS, binary, 6, nfold=3, seed=4, as_pandas=False,
                                      return_oof=True, return_models=True)
    folds = cv_module.make_folds(binary.n_rows, 3, labels=data["y"], stratified=True,
                                 seed=4)
    labels = data["y"]
    for fold, model in enumerate(models):
        twin = oocboost.train(PARAMS, _fold_cache(binary, data, folds, fold, tmp_path), 6)
        np.testing.assert_allclose(model.base_margin, twin.base_margin, rtol=1e-12)
        assert model.n_trees == twin.n_trees == 6
        for ours, theirs in zip(model.trees, twin.trees):
            np.testing.assert_array_equal(ours.feature, theirs.feature)
            np.testing.assert_array_equal(ours.bin_threshold, theirs.bin_threshold)
            np.testing.assert_allclose(ours.value, theirs.value, rtol=1e-6, atol=1e-9)
        held = folds == fold
        p = model.predict(binary)
        np.testing.assert_allclose(oof[held], p[held], rtol=1e-12)
    # the table's last row, by hand from the fold models
    for split in ("train", "test"):
        for name in ("logloss", "auc"):
            metric = get_metric(name)
            scores = []
            for fold, model in enumerate(models):
                rows = (folds == fold) if split == "test" else (folds != fold)
                scores.append(metric(labels[rows], model.predict(binary)[rows], None))
            assert result[f"{split}-{name}-mean"][-1] == pytest.approx(np.mean(scores),
                                                                        rel=1e-6)
            assert result[f"{split}-{name}-std"][-1] == pytest.approx(np.std(scores),
                                                                       rel=1e-5, abs=1e-9)


def test_every_round_is_scored_by_the_models_cut_at_that_round(binary):
    result, models = cv_module.cv(PARAMS, binary, 5, nfold=3, as_pandas=False,
                                  return_models=True)
    folds = cv_module.make_folds(binary.n_rows, 3, labels=_table()["y"], stratified=True)
    labels = _table()["y"]
    auc = get_metric("auc")
    for r in range(5):
        scores = [auc(labels[folds == f], m.predict(binary, iteration_range=(0, r + 1))
                      [folds == f], None) for f, m in enumerate(models)]
        assert result["test-auc-mean"][r] == pytest.approx(np.mean(scores), rel=1e-9)


def test_early_stopping_keeps_the_best_round(binary):
    full = oocboost.cv({**PARAMS, "eta": 1.0, "max_depth": 6}, binary, 40, nfold=3,
                       as_pandas=False, metrics="logloss")
    best = int(np.argmin(full["test-logloss-mean"]))
    assert best < 30, "the data should overfit well before 40 rounds at eta 1"
    stopped, models = oocboost.cv({**PARAMS, "eta": 1.0, "max_depth": 6}, binary, 40,
                                  nfold=3, as_pandas=False, metrics="logloss",
                                  early_stopping_rounds=5, return_models=True)
    assert len(stopped["test-logloss-mean"]) == best + 1
    assert stopped["test-logloss-mean"] == full["test-logloss-mean"][:best + 1]
    assert all(m.n_rounds == best + 1 for m in models)


def test_folds_grown_in_groups_give_the_same_result(binary, monkeypatch):
    together = oocboost.cv(PARAMS, binary, 4, nfold=4, as_pandas=False)
    real_plan = cv_module._plan

    def short_plan(p, cache, objective, n_folds):
        if n_folds > 1:
            raise oocboost.MemoryLimitError("pretend only one fold fits")
        return real_plan(p, cache, objective, n_folds)

    monkeypatch.setattr(cv_module, "_plan", short_plan)
    objective = get_objective("binary:logistic", {})
    assert [f for f, _ in cv_module.fold_groups(resolve_params(PARAMS), binary,
                                                objective, 4)] == [[0], [1], [2], [3]]
    alone = oocboost.cv(PARAMS, binary, 4, nfold=4, as_pandas=False)
    assert alone.keys() == together.keys()
    for key in together:
        np.testing.assert_allclose(alone[key], together[key], rtol=1e-12)


@pytest.mark.parametrize("stratified", [True, False])
@pytest.mark.parametrize("nfold", [2, 5, 7])
def test_folds_partition_the_rows_evenly(nfold, stratified):
    labels = np.repeat([0.0, 1.0, 2.0], [50, 333, 1000])
    folds = cv_module.make_folds(len(labels), nfold, labels=labels, stratified=stratified,
                                 seed=1)
    sizes = np.bincount(folds, minlength=nfold)
    assert sizes.max() - sizes.min() <= (1 if not stratified else 3)
    if stratified:
        for c in (0.0, 1.0, 2.0):
            per_class = np.bincount(folds[labels == c], minlength=nfold)
            assert per_class.max() - per_class.min() <= 1
    again = cv_module.make_folds(len(labels), nfold, labels=labels, stratified=stratified,
                                 seed=1)
    np.testing.assert_array_equal(folds, again)
    other = cv_module.make_folds(len(labels), nfold, labels=labels, stratified=stratified,
                                 seed=2)
    assert np.any(folds != other)


def test_user_folds_splitters_and_their_errors(binary):
    from sklearn.model_selection import KFold

    splitter = KFold(3, shuffle=True, random_state=0)
    pairs = list(splitter.split(np.zeros((binary.n_rows, 1))))
    ids = np.empty(binary.n_rows, np.int64)
    for k, (_, test) in enumerate(pairs):
        ids[test] = k
    by_splitter = oocboost.cv(PARAMS, binary, 3, folds=splitter, as_pandas=False)
    by_pairs = oocboost.cv(PARAMS, binary, 3, folds=pairs, as_pandas=False)
    by_ids = oocboost.cv(PARAMS, binary, 3, folds=ids, as_pandas=False)
    assert by_splitter == by_pairs == by_ids
    with pytest.raises(oocboost.ParameterError, match="every row outside"):
        oocboost.cv(PARAMS, binary, 2, folds=[(train[:-5], test) for train, test in pairs])
    with pytest.raises(oocboost.ParameterError, match="in no test set"):
        oocboost.cv(PARAMS, binary, 2, folds=[(np.r_[train, test[:1]], test[1:])
                                              for train, test in pairs])
    with pytest.raises(oocboost.ParameterError, match="nfold"):
        oocboost.cv(PARAMS, binary, 2, nfold=1)
    with pytest.raises(oocboost.ParameterError, match="one non-negative fold id"):
        oocboost.cv(PARAMS, binary, 2, folds=ids[:-1])


def test_multiclass_and_regression(tmp_path):
    data = _table(n=1500, classes=3)
    cache = oocboost.build_cache(pa.table(data), tmp_path / "m.oocb", label="y",
                                 quiet=True)
    result, oof = oocboost.cv({"objective": "multi:softprob", "num_class": 3,
                               "max_depth": 3}, cache, 4, nfold=3, return_oof=True)
    assert list(result.columns) == ["train-mlogloss-mean", "train-mlogloss-std",
                                    "test-mlogloss-mean", "test-mlogloss-std"]
    assert oof.shape == (1500, 3)
    np.testing.assert_allclose(oof.sum(axis=1), 1.0, rtol=1e-12)
    reg = oocboost.cv({"objective": "reg:squarederror"}, cache, 4, nfold=3,
                      stratified=True)  # regression folds are plain, not refused
    assert reg["test-rmse-mean"].iloc[-1] < reg["test-rmse-mean"].iloc[0]


def test_the_table_has_xgboost_cv_columns_and_close_scores(binary):
    xgb = pytest.importorskip("xgboost")
    data = _table()
    X = np.column_stack([data[f"f{i}"] for i in range(5)])
    pairs = list(cv_module.folds_from_user(
        cv_module.make_folds(binary.n_rows, 3, labels=data["y"], stratified=True),
        binary.n_rows, data["y"])[0] == k for k in range(3))
    folds = [(np.flatnonzero(~test), np.flatnonzero(test)) for test in pairs]
    params = {"objective": "binary:logistic", "max_depth": 3, "eta": 0.3,
              "eval_metric": ["logloss"]}
    theirs = xgb.cv({**params, "tree_method": "hist", "max_bin": 256},
                    xgb.DMatrix(X, label=data["y"]), 10, folds=folds)
    ours = oocboost.cv(params, binary, 10, folds=folds)
    assert list(ours.columns) == list(theirs.columns)
    assert len(ours) == len(theirs) == 10
    np.testing.assert_allclose(ours["test-logloss-mean"], theirs["test-logloss-mean"],
                               rtol=0.02)


def test_ranking_folds_keep_groups_whole_and_equal_separate_trainings(tmp_path):
    from oocboost.learners.boosting.cv import FOLD_STREAM
    from oocboost.learners.boosting.ranking import group_folds
    from tests.learners.test_ranking import _ranking_data

    X, y, qid, sizes = _ranking_data(n_groups=90)
    w = np.repeat(np.random.default_rng(0).uniform(0.5, 2, sizes.size), sizes)
    cache = oocboost.build_cache(X, tmp_path / "c", label=y, group=qid, weight=w,
                                 block_rows=64, quiet=True)
    params = {"objective": "rank:ndcg", "max_depth": 3}
    result, models = oocboost.cv(params, cache, 4, nfold=3, as_pandas=False,
                                 return_models=True)
    assert "test-ndcg@32-mean" in result
    fold = group_folds(cache.group_ptr, 3, 0, FOLD_STREAM)
    for f in range(3):
        held = fold == f
        assert len(set(qid[held]) & set(qid[~held])) == 0  # no group on both sides
        part = oocboost.build_cache(X[~held], tmp_path / f"f{f}", label=y[~held],
                                    group=qid[~held], weight=w[~held], reference=cache,
                                    quiet=True)
        alone = oocboost.train(params, part, 4, verbose_eval=False)
        np.testing.assert_array_equal(models[f].predict(X), alone.predict(X))
    split = np.zeros(len(y), np.int64)
    split[1] = 1  # the first group's second row in another fold
    with pytest.raises(oocboost.ParameterError, match="split query group 0"):
        oocboost.cv(params, cache, 2, folds=split)


@pytest.mark.parametrize("kind", ["targets", "interval"])
def test_folds_of_several_label_columns_equal_separate_trainings(tmp_path, kind):
    from oocboost.learners.boosting.cv import make_folds
    from tests.learners.test_aft import _intervals
    from tests.learners.test_multi_target import _data

    if kind == "targets":
        X, Y, _ = _data(900)
        params = {"max_depth": 3}
    else:
        X, Y, _ = _intervals(900)
        params = {"objective": "survival:aft", "max_depth": 3}
    cache = oocboost.build_cache(X, tmp_path / "c", label=Y, block_rows=256, quiet=True)
    _, models = oocboost.cv(params, cache, 3, nfold=3, stratified=False, as_pandas=False,
                            return_models=True)
    fold = make_folds(len(X), 3, seed=0)
    for f in range(3):
        part = oocboost.build_cache(X[fold != f], tmp_path / f"f{f}", label=Y[fold != f],
                                    reference=cache, quiet=True)
        alone = oocboost.train(params, part, 3, verbose_eval=False)
        np.testing.assert_allclose(models[f].predict(X), alone.predict(X), rtol=1e-6)
