"""A worker killed mid-training (SIGKILL, on a LocalCluster of its own): the run warns
naming it, resumes from rank 0's last checkpoint on the workers that remain (the lost
shard read from the shared folder) and ends with the model an uninterrupted run makes;
shards are placed as contiguous runs whatever workers are left."""
import os
import signal
import threading
import time
from pathlib import Path

import pandas as pd
import pytest

import oocboost
from oocboost.learners.forest.forest import train_forest_from_params

from .helpers import PARAMS, assert_same_trees, frame, local_cluster, warm_kernels

dd = pytest.importorskip("dask.dataframe")
pytest.importorskip("distributed")
import oocboost.dask  # noqa: E402
from oocboost.dask.ranks import live_workers, place  # noqa: E402


@pytest.fixture(scope="module")
def warmed(tmp_path_factory):
    warm_kernels(tmp_path_factory.mktemp("warm"))


@pytest.fixture
def own_cluster(warmed):
    # a cluster per test: each test kills a worker, and waiting for its nanny to restart
    # it was not reliable on a busy machine (CI once saw one of two workers after 120 s)
    yield from local_cluster(2)


@pytest.fixture
def shards(own_cluster, tmp_path):
    own_cluster.wait_for_workers(2, timeout=120)
    df = frame(6000, 11).drop(columns=["y", "y3"])
    ddf = dd.from_pandas(df, npartitions=2)
    shard_set = oocboost.dask.build_cache(ddf, tmp_path / "set", label="y2",
                                          client=own_cluster)
    order = [i for s in shard_set.shards for i in s["partitions"]]
    single = oocboost.build_cache(pd.concat([ddf.get_partition(i).compute() for i in order]),
                                  tmp_path / "single.oocb", label="y2",
                                  reference=shard_set.edges, quiet=True)
    return shard_set, single


def _kill_at_first_checkpoint(client, shard_set, rank):
    """A thread that SIGKILLs the worker of ``rank`` once rank 0 saved a checkpoint."""
    victim = place(shard_set, live_workers(client))[rank][0]
    pid = client.run(os.getpid)[victim]
    killed = []

    def watch():
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if list(Path(shard_set.folder).glob("checkpoint-*.json")):
                os.kill(pid, signal.SIGKILL)
                killed.append(victim)
                return
            time.sleep(0.002)

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread, killed


@pytest.mark.parametrize("rank", [1, 0])
def test_boosting_resumes_without_a_killed_worker(own_cluster, shards, rank):
    shard_set, single_cache = shards
    p = {**PARAMS, "objective": "binary:logistic", "max_depth": 6, "eta": 0.1}
    thread, killed = _kill_at_first_checkpoint(own_cluster, shard_set, rank)
    with pytest.warns(UserWarning, match=r"worker\(s\) tcp://\S+ left the cluster during "
                                         r"training; resuming from the last checkpoint "
                                         r"\(\d+ rounds done\)"):
        model, figures = oocboost.dask.train(own_cluster, p, shard_set, 80,
                                             checkpoint_rounds=2, return_figures=True)
    thread.join()
    assert killed and all(f["restarts"] == 1 for f in figures)
    single = oocboost.train(p, single_cache, 80)
    assert model.n_trees == 80
    assert_same_trees(model, single, rtol=1e-7)
    assert not list(Path(shard_set.folder).glob("checkpoint-*"))


def test_a_forest_resumes_into_the_same_forest(own_cluster, shards):
    shard_set, single_cache = shards
    p = {"max_depth": 8, "random_state": 5, "n_jobs": 1}
    thread, killed = _kill_at_first_checkpoint(own_cluster, shard_set, 1)
    with pytest.warns(UserWarning, match=r"resuming from the last checkpoint \(\d+ trees"):
        model, figures = oocboost.dask.train_forest(own_cluster, p, shard_set, 40,
                                                    checkpoint_trees=2,
                                                    return_figures=True)
    thread.join()
    assert killed and figures[0]["restarts"] == 1
    single = train_forest_from_params("random-forest", p, single_cache, n_estimators=40)
    assert model.n_trees == 40
    assert_same_trees(model, single, exact_values=True)


def test_no_restart_left_raises_worker_lost(own_cluster, shards):
    shard_set, _ = shards
    thread, killed = _kill_at_first_checkpoint(own_cluster, shard_set, 1)
    with pytest.raises(oocboost.dask.WorkerLost, match="gave up after 0 restarts"):
        oocboost.dask.train(own_cluster, {**PARAMS, "objective": "binary:logistic",
                                          "max_depth": 6, "eta": 0.1}, shard_set, 200,
                            checkpoint_rounds=1, max_restarts=0)
    thread.join()
    assert killed


class _Set:
    def __init__(self, writers):
        self.shards = [{"path": f"s{k}", "worker": w} for k, w in enumerate(writers)]


@pytest.mark.parametrize("writers, alive, expected", [
    (["a", "b", "c"], ["a", "b", "c"], [("a", ["s0"]), ("b", ["s1"]), ("c", ["s2"])]),
    # b is gone: its shard joins the rank before it
    (["a", "b", "c"], ["a", "c"], [("a", ["s0", "s1"]), ("c", ["s2"])]),
    # a is gone: the leading shard joins the first rank
    (["a", "b", "c"], ["b", "c"], [("b", ["s0", "s1"]), ("c", ["s2"])]),
    # a restarted worker without shards takes the lost one
    (["a", "b"], ["b", "z"], [("z", ["s0"]), ("b", ["s1"])]),
    # more shards than workers, all written by one
    (["a", "a", "a"], ["a"], [("a", ["s0", "s1", "s2"])]),
    (["a", "a", "b"], ["a", "b"], [("a", ["s0", "s1"]), ("b", ["s2"])]),
    # a worker's shards stay one rank even when another worker has none
    (["a", "a", "b"], ["a", "b", "z"], [("a", ["s0", "s1"]), ("b", ["s2"])]),
])
def test_shards_are_placed_as_contiguous_ranks(writers, alive, expected):
    assert place(_Set(writers), alive) == expected
