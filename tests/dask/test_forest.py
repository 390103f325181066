"""Forests on a Dask LocalCluster of 2 worker processes (dask/forest.py): the forest is
the single-machine forest on the shards concatenated in the set's order, tree for tree
(row draws hash global row numbers), for classification and regression, bootstrap or
not, with OOB scores, class weights and several shards per worker; the estimators fit
Dask collections and predict lazily; what is not offered is refused by name."""
import numpy as np
import pandas as pd
import pytest

import oocboost
from oocboost.errors import MemoryLimitError, ParameterError
from oocboost.learners.forest.forest import train_forest_from_params

from .helpers import assert_same_trees, frame

pytest.importorskip("distributed")
import oocboost.dask  # noqa: E402


def _in_set_order(data, shards, label, tmp_path):
    """The single-machine cache of the set's rows in the set's order."""
    ddf = data["ddf"]
    order = [i for s in shards.shards for i in s["partitions"]]
    df = pd.concat([ddf.get_partition(i).compute() for i in order])
    others = [c for c in ("y", "y2", "y3") if c != label]
    return oocboost.build_cache(df.drop(columns=others), tmp_path / "single.oocb",
                                label=label, reference=shards.edges, quiet=True)


@pytest.mark.parametrize("learner, label, params", [
    ("random-forest", "y2", {"max_depth": 5, "oob_score": True}),
    ("random-forest", "y3", {"max_depth": 4, "max_samples": 0.5,
                             "class_weight": "balanced_subsample"}),
    ("random-forest", "y3", {"max_depth": 4, "class_weight": "balanced",
                             "bootstrap": False}),
    ("random-forest", "y", {"max_depth": 5, "oob_score": True, "max_features": 0.5}),
    ("extra-trees", "y", {"max_depth": 4, "min_samples_leaf": 5}),
    # sampled features per node: rank 0 alone searches, with the trees' threshold draws
    ("extra-trees", "y2", {"max_depth": 5, "max_features": "sqrt"}),
    ("decision-tree", "y2", {"max_leaf_nodes": 12}),
])
def test_the_forest_is_the_single_machine_forest(data, cluster, tmp_path, learner, label,
                                                 params):
    shards, _ = data[label]
    single_cache = _in_set_order(data, shards, label, tmp_path)
    p = {**params, "n_jobs": 1, "random_state": 7,
         "task": "regression" if label == "y" else "classification"}
    model, figures = oocboost.dask.train_forest(cluster, p, shards, 12, learner=learner,
                                                checkpoint_trees=5, return_figures=True)
    single = train_forest_from_params(learner, p, single_cache, n_estimators=12)
    # integer class counts are summed exactly; float statistics to rounding
    exact = label != "y" and "class_weight" not in params
    assert_same_trees(model, single, exact_values=exact)
    if params.get("oob_score"):
        assert model.attributes["oob_score"] == pytest.approx(
            single.attributes["oob_score"], rel=1e-9)
    np.testing.assert_allclose(model.predict(single_cache), single.predict(single_cache),
                               rtol=1e-9, atol=1e-12)
    assert [f["rank"] for f in figures] == [0, 1]
    assert figures[0]["n_reductions"] == figures[1]["n_reductions"] > 0
    assert all(f["restarts"] == 0 for f in figures)
    # no checkpoint is left behind
    assert not list(shards.folder and __import__("pathlib").Path(shards.folder)
                    .glob("checkpoint-*"))


def test_several_shards_per_worker_are_read_as_one(cluster, tmp_path):
    # 3 files make 3 shards for 2 workers: one rank trains two shards chained
    df = frame(3000, 4).drop(columns=["y", "y3"])
    for k in range(3):
        df.iloc[k * 1000:(k + 1) * 1000].to_parquet(tmp_path / f"p{k}.parquet", index=False)
    shards = oocboost.dask.build_cache(str(tmp_path / "p*.parquet"), tmp_path / "set",
                                       label="y2", client=cluster)
    assert len(shards.shards) == 3
    # the set lists a worker's shards together: its order is the rows' order
    order = [k for s in shards.shards for k in s["partitions"]]
    assert sorted(order) == [0, 1, 2]
    single_df = pd.concat([df.iloc[k * 1000:(k + 1) * 1000] for k in order])
    single_cache = oocboost.build_cache(single_df, tmp_path / "single.oocb", label="y2",
                                        reference=shards.edges, quiet=True)
    p = {"max_depth": 5, "n_jobs": 1, "random_state": 3}
    model, figures = oocboost.dask.train_forest(cluster, p, shards, 6, return_figures=True)
    sizes = [len(f["shards"]) for f in figures]
    assert sum(sizes) == 3 and max(sizes) >= 2
    assert_same_trees(model, train_forest_from_params("random-forest", p, single_cache,
                                                       n_estimators=6), exact_values=True)
    boosted = oocboost.dask.train(cluster, {"objective": "binary:logistic", "max_depth": 3,
                                            "n_threads": 1}, shards, 4)
    single = oocboost.train({"objective": "binary:logistic", "max_depth": 3,
                             "n_threads": 1}, single_cache, 4)
    np.testing.assert_allclose(boosted.predict(single_cache), single.predict(single_cache),
                               rtol=1e-9)


def test_what_is_not_offered_is_refused(data, cluster):
    shards, _ = data["y"]
    for params, why in [({"missing_values": "surrogate"}, "surrogate"),
                        ({"splitter": "oblique"}, "oblique"),
                        ({"criterion": "absolute_error"}, "absolute_error")]:
        with pytest.raises(ParameterError, match=f"not offered in distributed.*{why}"):
            oocboost.dask.train_forest(cluster, {**params, "task": "regression"}, shards, 2)
    with pytest.raises(ParameterError, match="learner must be one of"):
        oocboost.dask.train_forest(cluster, {}, shards, 2, learner="adaboost")
    with pytest.raises(ParameterError, match="unknown parameter"):
        oocboost.dask.train_forest(cluster, {"n_estimatorz": 3}, shards, 2)


def test_a_worker_that_cannot_meet_its_memory_limit_refuses_up_front(data, cluster):
    shards, _ = data["y2"]
    with pytest.raises(MemoryLimitError, match=r"worker tcp://.* cannot train shards? "
                                               r".*shard-\d\.oocb within its memory limit"):
        oocboost.dask.train_forest(cluster, {"memory_limit": "64MB"}, shards, 2)


def test_estimators_fit_dask_collections_and_predict_lazily(cluster):
    from sklearn.base import clone

    dd = pytest.importorskip("dask.dataframe")
    df = frame(3000, 3)
    features = [c for c in df.columns if c not in ("y", "y2", "y3")]
    ddf = dd.from_pandas(df, npartitions=3)
    # without bootstrap the forest does not depend on the rows' order
    params = dict(n_estimators=5, max_depth=4, bootstrap=False, random_state=0, n_jobs=1)
    clf = oocboost.dask.DaskRandomForestClassifier(**params)
    clf.client = cluster
    assert "client" not in clone(clf).get_params()
    clf.fit(ddf[features], ddf["y3"].astype(int))
    local = oocboost.RandomForestClassifier(**params).fit(df[features],
                                                          df["y3"].astype(int))
    assert clf.classes_.tolist() == [0, 1, 2] and clf.n_features_in_ == len(features)
    proba = clf.predict_proba(ddf[features])
    assert hasattr(proba, "compute")
    np.testing.assert_allclose(proba.compute(), local.predict_proba(df[features]),
                               rtol=1e-12)
    np.testing.assert_array_equal(clf.predict(ddf[features]).compute(),
                                  local.predict(df[features]))
    np.testing.assert_allclose(clf.feature_importances_, local.feature_importances_,
                               rtol=1e-9)

    reg = oocboost.dask.DaskRandomForestRegressor(**params, oob_score=False)
    reg.client = cluster
    reg.fit(ddf[features], ddf["y"])
    local = oocboost.RandomForestRegressor(**params).fit(df[features], df["y"])
    np.testing.assert_allclose(reg.predict(ddf[features]).compute(),
                               local.predict(df[features]), rtol=1e-9, atol=1e-12)
    with pytest.raises(ParameterError, match="warm_start is not offered"):
        oocboost.dask.DaskRandomForestRegressor(warm_start=True).fit(ddf[features],
                                                                      ddf["y"])
