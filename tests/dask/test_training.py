"""Training on a Dask LocalCluster of 2 worker processes (dask/): the shards have the
single-machine edges, and the model is the single-machine model on the concatenated data
(the same splits, margins to float rounding) for binary, multiclass and regression
boosting, with evaluation and early stopping; what is not offered is refused by name."""

import numpy as np
import pandas as pd
import pytest

import oocboost
from oocboost.errors import ParameterError

dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")
import oocboost.dask  # noqa: E402  (after the skip: the dask extra may be absent)
from oocboost.dask.ranks import live_workers  # noqa: E402

from .helpers import PARAMS, assert_same_trees
from .helpers import frame as _frame


def test_one_shard_per_partition_with_the_single_machine_edges(data, cluster):
    shards, single = data["y2"]
    workers = set(live_workers(cluster))
    assert len(shards.shards) == 4 and {s["worker"] for s in shards.shards} <= workers
    assert sorted(i for s in shards.shards for i in s["partitions"]) == [0, 1, 2, 3]
    # a worker's shards are listed one after the other: each worker is one rank
    writers = [s["worker"] for s in shards.shards]
    assert writers == sorted(writers)
    assert shards.n_rows == single.n_rows == 4000
    assert shards.bin_mapper == single.bin_mapper


@pytest.mark.parametrize("label, params", [
    ("y2", {"objective": "binary:logistic"}),
    ("y3", {"objective": "multi:softprob", "num_class": 3}),
    ("y", {"objective": "reg:squarederror"}),
])
def test_the_model_is_the_single_machine_model(data, cluster, label, params):
    shards, single_cache = data[label]
    p = {**PARAMS, **params}
    model, figures = oocboost.dask.train(cluster, p, shards, 8, return_figures=True)
    single = oocboost.train(p, single_cache, 8)
    assert_same_trees(model, single)
    np.testing.assert_allclose(model.base_margin, single.base_margin)
    np.testing.assert_allclose(model.predict(single_cache, output_margin=True),
                               single.predict(single_cache, output_margin=True),
                               rtol=1e-9, atol=1e-9)
    # every pass's histograms went through the collective, both ways
    assert [f["rank"] for f in figures] == [0, 1]
    assert figures[0]["n_reductions"] == figures[1]["n_reductions"] >= 8
    assert all(f["bytes_sent"] > 0 for f in figures)


@pytest.mark.parametrize("extra", [
    {"subsample": 0.6},
    # stochastic rounding draws by the same index; the scales are agreed over the
    # workers, and renewed leaves sum every worker's rows
    {"use_quantized_grad": True, "quant_train_renew_leaf": True, "subsample": 0.8},
])
def test_subsample_draws_the_rows_one_machine_draws(data, cluster, tmp_path, extra):
    # rows are drawn by their index in the shards concatenated in the set's order: one
    # machine given the partitions in that order draws the same rows
    shards, _ = data["y2"]
    ddf = data["ddf"]
    order = [i for s in shards.shards for i in s["partitions"]]
    assert sorted(order) == list(range(ddf.npartitions))
    df = pd.concat([ddf.get_partition(i).compute() for i in order])
    single_cache = oocboost.build_cache(df.drop(columns=["y", "y3"]), tmp_path / "c.oocb",
                                        label="y2", quiet=True)
    p = {**PARAMS, "objective": "binary:logistic", **extra}
    model = oocboost.dask.train(cluster, p, shards, 6)
    single = oocboost.train(p, single_cache, 6)
    for a, b in zip(model.trees, single.trees):
        np.testing.assert_array_equal(a.feature, b.feature)
        np.testing.assert_array_equal(a.bin_threshold, b.bin_threshold)
        np.testing.assert_allclose(a.value, b.value, rtol=1e-9, atol=1e-12)


def test_evaluation_and_early_stopping_as_on_one_machine(data, cluster, tmp_path):
    shards, single_cache = data["y2"]
    valid_df = _frame(1500, 5).drop(columns=["y", "y3"])
    valid = oocboost.build_cache(valid_df, tmp_path / "v.oocb", label="y2",
                                 reference=shards.edges, quiet=True)
    p = {**PARAMS, "objective": "binary:logistic", "eta": 1.0, "max_depth": 6,
         "eval_metric": ["logloss", "auc"]}
    model = oocboost.dask.train(cluster, p, shards, 60, evals=[(valid, "valid")],
                                early_stopping_rounds=3)
    single = oocboost.train(p, single_cache, 60, evals=[(valid, "valid")],
                            early_stopping_rounds=3, verbose_eval=False)
    assert model.best_iteration == single.best_iteration < 59
    np.testing.assert_allclose(model.evals_result["valid"]["auc"],
                               single.evals_result["valid"]["auc"], rtol=1e-12)


def test_what_is_not_offered_is_refused(data, cluster):
    shards, _ = data["y2"]
    for params, why in [({"booster": "dart"}, "booster='dart'"),
                        ({"objective": "rank:ndcg"}, "rank:ndcg needs every row"),
                        ({"objective": "reg:absoluteerror"}, "resets each leaf"),
                        ({"sampling_method": "gradient_based", "subsample": 0.5},
                         "gradient-based sampling"),
                        ({"boosting_type": "ordered"}, "boosting_type='ordered'")]:
        with pytest.raises(ParameterError, match="not offered in distributed training"
                                                 f".*{why}"):
            oocboost.dask.train(cluster, params, shards, 2)
    with pytest.raises(ParameterError, match="must be a Dask DataFrame"):
        oocboost.dask.build_cache(pd.DataFrame({"a": [1]}), "x", client=cluster)


def test_estimators_fit_dask_collections_and_predict_lazily(cluster):
    from sklearn.base import clone

    df = _frame(3000, 3)
    features = [c for c in df.columns if c not in ("y", "y2", "y3")]
    ddf = dd.from_pandas(df, npartitions=3)
    params = dict(n_estimators=6, max_depth=3, learning_rate=0.5, n_jobs=1)
    clf = oocboost.dask.DaskGradientBoostingClassifier(**params)
    clf.client = cluster
    assert "client" not in clone(clf).get_params() and clone(clf).client is None
    clf.fit(ddf[features], ddf["y3"].astype(int))
    local = oocboost.GradientBoostingClassifier(**params).fit(df[features],
                                                              df["y3"].astype(int))
    assert clf.classes_.tolist() == [0, 1, 2]
    proba = clf.predict_proba(ddf[features])
    assert hasattr(proba, "compute")                 # lazy, one task a partition
    np.testing.assert_allclose(proba.compute(), local.predict_proba(df[features]),
                               rtol=1e-9, atol=1e-12)
    np.testing.assert_array_equal(clf.predict(ddf[features]).compute(),
                                  local.predict(df[features]))

    da = pytest.importorskip("dask.array")
    numeric = [c for c in features if c != "c"]
    X = da.from_array(df[numeric].to_numpy(), chunks=(1000, len(numeric)))
    y = da.from_array(df["y"].to_numpy(), chunks=1000)
    reg = oocboost.dask.DaskGradientBoostingRegressor(**params)
    reg.client = cluster
    reg.fit(X, y)
    local = oocboost.GradientBoostingRegressor(**params).fit(df[numeric].to_numpy(),
                                                             df["y"].to_numpy())
    np.testing.assert_allclose(reg.predict(X).compute(),
                               local.predict(df[numeric].to_numpy()), rtol=1e-9, atol=1e-9)


def test_a_worker_that_cannot_meet_its_memory_limit_refuses_up_front(data, cluster):
    from oocboost.errors import MemoryLimitError

    shards, _ = data["y2"]
    with pytest.raises(MemoryLimitError, match=r"worker tcp://.* cannot train shards? "
                                               r".*shard-\d\.oocb within its memory limit"):
        oocboost.dask.train(cluster, {**PARAMS, "objective": "binary:logistic",
                                      "memory_limit": "64MB"}, shards, 2)


def test_shards_from_files_are_built_on_the_workers(cluster, tmp_path):
    from oocboost.cache.shards import build_shards

    df = _frame(2000, 7).drop(columns=["y", "y3"])
    for k in range(3):
        df.iloc[k::3].to_parquet(tmp_path / f"p{k}.parquet", index=False)
    shards = oocboost.dask.build_cache(str(tmp_path / "p*.parquet"), tmp_path / "set",
                                       label="y2", client=cluster)
    local = build_shards(str(tmp_path / "p*.parquet"), tmp_path / "local", label="y2")
    workers = set(live_workers(cluster))
    assert {s["worker"] for s in shards.shards} <= workers
    # one shard per file, the set listing a worker's shards one after the other: which
    # worker reads which file is Dask's choice, so files are matched by fingerprint
    assert (sorted((s["fingerprint"], s["n_rows"]) for s in shards.shards)
            == sorted((s["fingerprint"], s["n_rows"]) for s in local.shards))
    order = [s["worker"] for s in shards.shards]
    assert order == sorted(order, key=order.index)
    assert shards.bin_mapper == local.bin_mapper


def test_the_memory_limit_defaults_to_a_share_of_the_dask_workers(data, cluster):
    from oocboost.dask.ranks import WORKER_MEMORY_SHARE

    shards, _ = data["y2"]
    limits = {w["memory_limit"] for w in live_workers(cluster).values()}
    assert len(limits) == 1 and limits.pop() > 0
    worker_limit = next(iter(live_workers(cluster).values()))["memory_limit"]
    model = oocboost.dask.train(cluster, {**PARAMS, "objective": "binary:logistic"},
                                shards, 2)
    assert model.training_log["plan"]["memory_limit"] == int(worker_limit
                                                             * WORKER_MEMORY_SHARE)
    forest = oocboost.dask.train_forest(cluster, {"max_depth": 3}, shards, 2)
    assert forest.training_log["plan"]["memory_limit"] == int(worker_limit
                                                              * WORKER_MEMORY_SHARE)
    # given, it wins
    model = oocboost.dask.train(cluster, {**PARAMS, "objective": "binary:logistic",
                                          "memory_limit": "1GiB"}, shards, 2)
    assert model.training_log["plan"]["memory_limit"] == 2 ** 30


def test_sparse_shards_train_the_single_machine_model(cluster, tmp_path):
    """Shards whose mostly-zero columns are stored sparse (each shard decides per block)
    give, summed over the workers, the model one machine grows from the data stored
    dense."""
    rng = np.random.default_rng(7)
    n = 4000
    df = pd.DataFrame({"x0": rng.normal(size=n), "x1": rng.normal(size=n)})
    for j, share in enumerate((0.02, 0.05, 0.1, 0.3)):
        on = rng.random(n) < share
        df[f"s{j}"] = np.where(on, rng.integers(1, 6, n), 0).astype(float)
    df["y"] = (df.x0 + 2 * df.s0 - df.s2 + rng.normal(size=n) * 0.5 > 0).astype(float)
    shards = oocboost.dask.build_cache(dd.from_pandas(df, npartitions=4), tmp_path / "s",
                                       label="y", client=cluster)
    assert all(oocboost.Cache(s["path"]).sparse_summary() is not None
               for s in shards.shards)
    order = [i for s in shards.shards for i in s["partitions"]]
    ddf = dd.from_pandas(df, npartitions=4)
    ordered = pd.concat([ddf.get_partition(i).compute() for i in order])
    dense = oocboost.build_cache(ordered, tmp_path / "d.oocb", label="y", quiet=True,
                                 reference=shards.edges, enable_sparse=False)
    assert dense.sparse_summary() is None
    p = {**PARAMS, "objective": "binary:logistic"}
    model = oocboost.dask.train(cluster, p, shards, 6)
    single = oocboost.train(p, dense, 6)
    assert_same_trees(model, single)
    np.testing.assert_allclose(model.predict(dense, output_margin=True),
                               single.predict(dense, output_margin=True), rtol=1e-9,
                               atol=1e-9)
