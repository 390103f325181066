"""GradientBoostingRanker: XGBRanker's interface and results (qid, group sizes, a
DataFrame's qid column, group weights, eval sets, score), scikit-learn's cloning and
group-aware cross-validation."""
import numpy as np
import pytest

import oocboost
from oocboost import GradientBoostingRanker
from tests.learners.test_ranking import _ranking_data

pd = pytest.importorskip("pandas")


@pytest.fixture(scope="module")
def data():
    return _ranking_data(n_groups=120, seed=2)


def test_equals_xgbranker_with_weights_and_eval_sets(data):
    xgb = pytest.importorskip("xgboost")
    X, y, qid, sizes = data
    w = np.random.default_rng(0).uniform(0.5, 2.0, sizes.size)
    ours = GradientBoostingRanker(n_estimators=6, max_depth=3).fit(
        X, y, qid=qid, sample_weight=w, eval_set=[(X, y)], eval_qid=[qid])
    theirs = xgb.XGBRanker(n_estimators=6, max_depth=3, tree_method="hist", n_jobs=1).fit(
        X, y, qid=qid, sample_weight=w, eval_set=[(X, y)], eval_qid=[qid], verbose=False)
    np.testing.assert_allclose(ours.predict(X), theirs.predict(X), atol=1e-5)
    np.testing.assert_allclose(ours.evals_result_["validation_0"]["ndcg@32"],
                               theirs.evals_result()["validation_0"]["ndcg@32"], atol=1e-9)
    frame = pd.DataFrame(X, columns=[f"f{j}" for j in range(X.shape[1])]).assign(qid=qid)
    assert ours.score(X, y, qid=qid) == pytest.approx(theirs.score(frame, y), abs=1e-9)


def test_qid_group_sizes_and_qid_column_give_one_model(data):
    X, y, qid, sizes = data
    by_qid = GradientBoostingRanker(n_estimators=4).fit(X, y, qid=qid).predict(X)
    by_size = GradientBoostingRanker(n_estimators=4).fit(X, y, group=sizes).predict(X)
    frame = pd.DataFrame(X, columns=list("abcde")).assign(qid=qid)
    column = GradientBoostingRanker(n_estimators=4).fit(frame, y)
    np.testing.assert_array_equal(by_qid, by_size)
    np.testing.assert_array_equal(by_qid, column.predict(frame.drop(columns="qid")))
    assert list(column.feature_names_in_) == list("abcde")


def test_refusals(data):
    X, y, qid, sizes = data
    with pytest.raises(oocboost.ParameterError, match="exactly one of qid"):
        GradientBoostingRanker().fit(X, y)
    with pytest.raises(oocboost.ParameterError, match="summing to"):
        GradientBoostingRanker().fit(X, y, group=sizes[:-1])
    with pytest.raises(oocboost.ParameterError, match="rank:"):
        GradientBoostingRanker(objective="reg:squarederror").fit(X, y, qid=qid)
    with pytest.raises(oocboost.ParameterError, match="one weight per query group"):
        GradientBoostingRanker().fit(X, y, qid=qid, sample_weight=np.ones(7))


def test_clone_and_group_cross_validation(data):
    from sklearn.base import clone
    from sklearn.model_selection import GroupKFold, cross_val_score

    X, y, qid, _ = data
    ranker = GradientBoostingRanker(n_estimators=5, objective="rank:pairwise",
                                    lambdarank_pair_method="mean")
    twin = clone(ranker)
    assert twin.get_params() == ranker.get_params()
    frame = pd.DataFrame(X, columns=list("abcde")).assign(qid=qid)
    scores = cross_val_score(ranker, frame, y, groups=qid, cv=GroupKFold(3))
    assert scores.shape == (3,) and np.all((scores > 0.5) & (scores <= 1.0))
