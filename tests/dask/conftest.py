"""A LocalCluster of 2 worker processes for the dask tests (one per test run of this
folder), and shard sets of one frame built on it beside the single-machine caches."""
import pytest

import oocboost

dd = pytest.importorskip("dask.dataframe")
pytest.importorskip("distributed")
import oocboost.dask  # noqa: E402  (after the skip: the dask extra may be absent)

from .helpers import frame, local_cluster, warm_kernels  # noqa: E402


@pytest.fixture(scope="package")
def cluster(tmp_path_factory):
    warm_kernels(tmp_path_factory.mktemp("warm"))
    yield from local_cluster(2)


@pytest.fixture(scope="package")
def data(cluster, tmp_path_factory):
    df = frame(4000, 0)
    ddf = dd.from_pandas(df, npartitions=4)
    folder = tmp_path_factory.mktemp("d")
    out = {}
    for label, others in [("y", ["y2", "y3"]), ("y2", ["y", "y3"]), ("y3", ["y", "y2"])]:
        shards = oocboost.dask.build_cache(ddf.drop(columns=others), folder / label,
                                           label=label, client=cluster)
        single = oocboost.build_cache(df.drop(columns=others), folder / f"{label}.oocb",
                                      label=label, quiet=True)
        out[label] = (shards, single)
    out["ddf"] = ddf
    return out
