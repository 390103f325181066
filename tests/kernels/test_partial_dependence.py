"""Margins at every grid point in one walk per tree (kernels/partial_dependence.py) equal,
bit for bit, the brute force: every row walked once per grid point with the grid features
overwritten (a NumPy walk of the flat trees, the naive twin), over raw values and bin
codes, one and two features, one output per tree and several, 1 and 2 threads."""
import numpy as np
import pyarrow as pa
import pytest

import oocboost
from oocboost.kernels import partial_dependence as kpd
from oocboost.utils.threads import thread_limit


def _goes_left(flat, node, x, binned, missing_bin):
    """The decision rules of kernels/predict.py for one value."""
    if binned:
        if x == missing_bin:
            return bool(flat.default_left[node])
    elif np.isnan(x):
        return bool(flat.default_left[node])
    if flat.is_categorical[node]:
        code = int(x)
        if not 0 <= code < flat.cat_n_bits[node]:
            return False
        word = int(flat.cat_bitset[flat.cat_offset[node] + code // 32])
        return bool((word >> (code % 32)) & 1)
    return x <= (flat.bin_threshold[node] if binned else flat.threshold[node])


def _brute_force(flat, rows, binned, missing_bin, features, grids, n_outputs):
    """(n_rows, n_outputs, points): each row walked once per point, trees added in order."""
    points = [(a,) for a in range(len(grids[0]))] if len(grids) == 1 else \
        [(a, b) for a in range(len(grids[0])) for b in range(len(grids[1]))]
    n_rows = rows.shape[1] if binned else rows.shape[0]
    out = np.zeros((n_rows, n_outputs, len(points)))
    for p, point in enumerate(points):
        for r in range(n_rows):
            x = (rows[:, r] if binned else rows[r]).astype(np.float64)
            for f, g, k in zip(features, grids, point):
                x[f] = g[k]
            for t in range(flat.n_trees):
                node = int(flat.node_offset[t])
                while flat.left[node] != node:
                    go = _goes_left(flat, node, x[flat.feature[node]], binned, missing_bin)
                    node = int(flat.left[node]) + (0 if go else 1)
                n_cols = int(flat.tree_n_cols[t])
                base = int(flat.value_offset[t]) + (node - int(flat.node_offset[t])) * n_cols
                group = int(flat.tree_group[t])
                for c in range(n_cols):
                    out[r, group if group >= 0 else c, p] += flat.value[base + c]
    return out


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    rng = np.random.default_rng(3)
    n = 600
    x = rng.normal(size=(n, 3))
    x[rng.random((n, 3)) < 0.1] = np.nan
    city = rng.choice(["a", "b", "c", "d"], size=n)
    score = (np.nan_to_num(x[:, 0]) + (city == "b")
             - np.nan_to_num(x[:, 1]) * np.nan_to_num(x[:, 2]))
    label = np.digitize(np.nan_to_num(score), [-0.5, 0.7]).astype(float)
    table = pa.table({"x0": x[:, 0], "x1": x[:, 1], "x2": x[:, 2], "city": city,
                      "label": label})
    return oocboost.build_cache(table, tmp_path_factory.mktemp("pd") / "c.oocb",
                                label="label", quiet=True)


def _models(cache):
    return [oocboost.train({"objective": "multi:softprob", "num_class": 3, "max_depth": 4},
                           cache, 3),
            oocboost.RandomForestClassifier(n_estimators=3, max_depth=5,
                                            random_state=0).fit(cache).model_]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("binned", [False, True])
@pytest.mark.parametrize("features", [[0], [1, 0], [2, 1]])
def test_grid_margins_equal_the_brute_force(cache, threads, binned, features):
    missing_bin = cache.max_bin - 1
    block = next(iter(cache.iter_blocks()))
    n_rows = 2 * kpd.CHUNK_ROWS + 5
    codes = np.ascontiguousarray(block.codes[:, :n_rows])
    mapper = cache.bin_mapper
    # raw rows: each bin's upper edge (NaN for the missing code), categories as codes
    raw = np.empty((n_rows, codes.shape[0]))
    for f in range(codes.shape[0]):
        if mapper.is_categorical[f]:
            raw[:, f] = np.where(codes[f] == missing_bin, np.nan, codes[f])
        else:
            edges = np.append(np.asarray(mapper.bin_edges[f]), np.inf)
            raw[:, f] = np.where(codes[f] == missing_bin, np.nan,
                                 edges[np.minimum(codes[f], len(edges) - 1)])
    rng = np.random.default_rng(len(features))
    grids = []
    for f in features:
        values = np.sort(rng.normal(size=5))
        codes_of = np.searchsorted(np.asarray(mapper.bin_edges[f]), values, side="left")
        grids.append(codes_of if binned else values)
    for model in _models(cache):
        flat = model._flat_trees()
        rule = flat.bin_threshold if binned else flat.threshold
        cut = np.zeros((2, len(flat.left)), np.int64)
        for a, g in enumerate(grids):
            cut[a] = np.searchsorted(np.asarray(g, np.float64), rule, side="right")
        grid_feature = np.array(features + [-1] * (2 - len(features)), np.int64)
        n_b = len(grids[1]) if len(grids) == 2 else 1
        n_outputs = int(model.n_outputs)
        got = np.zeros((n_rows, n_outputs, len(grids[0]) * n_b))
        with thread_limit(threads):
            kpd.grid_margins(flat, None if binned else raw, codes if binned else None,
                             missing_bin, 0, flat.n_trees, grid_feature, cut, n_b, got)
        expected = _brute_force(flat, codes if binned else raw, binned, missing_bin,
                                features, grids, n_outputs)
        np.testing.assert_array_equal(got, expected)
