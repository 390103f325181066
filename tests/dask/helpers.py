"""Data and clusters shared by the dask tests."""
import os

import numpy as np
import pandas as pd

import oocboost

PARAMS = {"max_depth": 4, "eta": 0.3, "n_threads": 1}


def frame(n, seed):
    """Six numeric features (x1 with 5% missing), a categorical ``c`` and three labels:
    ``y`` (numeric), ``y2`` (binary), ``y3`` (3 classes)."""
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({f"x{j}": rng.normal(size=n) for j in range(6)})
    df.loc[rng.random(n) < 0.05, "x1"] = np.nan
    df["c"] = rng.choice(["a", "b", "c", "d"], size=n)
    score = df.x0 + (df.c == "b") - 0.5 * df.x2 + rng.normal(size=n) * 0.5
    df["y"] = score
    df["y2"] = (score > 0).astype(float)
    df["y3"] = np.digitize(score, [-0.5, 0.7]).astype(float)
    return df


def warm_kernels(folder):
    """Compile (or load) the boosting and forest kernels here first, so that the
    workers load them from numba's cache instead of each compiling them."""
    df = frame(4000, 0)
    cache = oocboost.build_cache(df.drop(columns=["y", "y3"]), folder / "c.oocb",
                                 label="y2", quiet=True)
    oocboost.train({**PARAMS, "objective": "binary:logistic"}, cache, 2)
    oocboost.RandomForestClassifier(n_estimators=2, max_depth=3).fit(cache)


def local_cluster(n_workers):
    """A LocalCluster of ``n_workers`` processes of one thread, and its client; the
    environment Dask's nanny changes (OMP_NUM_THREADS=1, ...) is restored after."""
    environ = dict(os.environ)
    import distributed

    try:
        with distributed.LocalCluster(n_workers=n_workers, threads_per_worker=1,
                                      processes=True, dashboard_address=":0") as c, \
                distributed.Client(c) as client:
            yield client
    finally:
        os.environ.clear()
        os.environ.update(environ)


def assert_same_trees(a, b, exact_values=False, rtol=1e-9):
    """The same tree structure, splits and rows through each node; leaf values equal
    or to ``rtol``."""
    assert a.n_trees == b.n_trees
    for s, t in zip(a.trees, b.trees):
        np.testing.assert_array_equal(s.left, t.left)
        np.testing.assert_array_equal(s.n_samples, t.n_samples)
        np.testing.assert_array_equal(s.feature, t.feature)
        np.testing.assert_array_equal(s.bin_threshold, t.bin_threshold)
        np.testing.assert_array_equal(s.default_left, t.default_left)
        if exact_values:
            np.testing.assert_array_equal(s.value, t.value)
        else:
            np.testing.assert_allclose(s.value, t.value, rtol=rtol, atol=1e-12)
