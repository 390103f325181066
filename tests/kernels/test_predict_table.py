"""Lookup-table prediction of shallow trees ("bonsai"): each row's looked-up leaf is the
leaf a NumPy walk of the binned rules reaches, and margins from a cache are bit for bit
those of the traversal (numeric and categorical splits, missing codes, 1-2 threads)."""
import numpy as np
import pyarrow as pa
import pytest

import oocboost
from oocboost.kernels.predict_table import build_leaf_tables


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    rng = np.random.default_rng(0)
    n = 3000
    x = rng.normal(size=(n, 4))
    x[rng.random((n, 4)) < 0.1] = np.nan
    city = rng.choice(["a", "b", "c", "d", "e"], size=n)
    y = (np.nan_to_num(x[:, 0]) + (city == "b") - 0.5 * np.nan_to_num(x[:, 2]) > 0)
    table = pa.table({**{f"x{j}": x[:, j] for j in range(4)}, "city": city,
                      "label": y.astype(float)})
    return oocboost.build_cache(table, tmp_path_factory.mktemp("t") / "c.oocb",
                                label="label", block_rows=700, quiet=True)


def _walk(flat, t, codes, missing_bin):
    """NumPy twin of the binned traversal: the flat leaf of every row in tree t."""
    node = np.full(codes.shape[1], flat.node_offset[t], np.int64)
    rows = np.arange(codes.shape[1])
    for _ in range(int(flat.tree_depth[t])):
        f = flat.feature[node]
        code = codes[f, rows].astype(np.int64)
        go = code <= flat.bin_threshold[node]
        cat = flat.is_categorical[node] == 1
        for r in np.flatnonzero(cat):
            c, nd = code[r], node[r]
            inside = c < flat.cat_n_bits[nd]
            word = flat.cat_bitset[flat.cat_offset[nd] + (c >> 5)] if inside else 0
            go[r] = inside and bool((int(word) >> (c & 31)) & 1)
        missing = code == missing_bin
        go[missing] = flat.default_left[node][missing] == 1
        node = flat.left[node] + 1 - go
    return node


@pytest.mark.parametrize("depth", [1, 3])
def test_looked_up_leaves_are_the_walked_leaves(cache, depth):
    model = oocboost.train({"objective": "binary:logistic", "max_depth": depth}, cache, 15)
    flat = model._flat_trees()
    missing_bin = cache.max_bin - 1
    tables = build_leaf_tables(flat, cache.max_bin, missing_bin)
    assert tables.n_tabulated > 0
    block = next(iter(cache.iter_blocks()))
    codes = np.ascontiguousarray(block.codes)
    for t in np.flatnonzero(tables.has_table):
        index = np.zeros(codes.shape[1], np.int64)
        for j in range(tables.pair_offset[t], tables.pair_offset[t + 1]):
            index += tables.lut[j, codes[tables.pair_feature[j]]]
        leaf = tables.table[tables.table_offset[t] + index]
        np.testing.assert_array_equal(leaf, _walk(flat, t, codes, missing_bin))


@pytest.mark.parametrize("params, n_threads", [
    ({"objective": "binary:logistic", "max_depth": 2}, 1),
    ({"objective": "multi:softprob", "num_class": 2, "max_depth": 3}, 2),
    ({"objective": "binary:logistic", "max_depth": 6}, 2),      # mostly traversed
])
def test_margins_from_a_cache_equal_the_traversal_bit_for_bit(cache, params, n_threads):
    model = oocboost.train({**params, "nthread": n_threads}, cache, 25)
    tabled = model.predict(cache, output_margin=True)
    used = model._tables_cache[2]
    assert used is not None and used.n_tabulated > (0 if params["max_depth"] > 3 else 20)
    model.use_leaf_tables = False
    walked = model.predict(cache, output_margin=True)
    assert tabled.tobytes() == walked.tobytes()


def test_a_deep_tree_on_many_features_is_traversed_not_tabulated(tmp_path):
    # a chain of 64 splits, one a feature, each feature two classes: numpy's product of
    # the class counts wrapped to 0 past int64, passed the size check and asked for a
    # table of 2**64 entries
    from oocboost.learners import train_learner

    x = np.vstack([np.eye(64), np.zeros((1, 64))])
    table = pa.table({**{f"x{j}": x[:, j] for j in range(64)},
                      "label": np.arange(65, dtype=float)})
    cache = oocboost.build_cache(table, tmp_path / "c.oocb", label="label", quiet=True)
    model = train_learner("decision-tree", {"objective": "reg:squarederror"}, cache)
    assert int(model._flat_trees().tree_depth[0]) >= 32
    tabled = model.predict(cache, output_margin=True)
    assert model._tables_cache[2] is None or model._tables_cache[2].n_tabulated == 0
    np.testing.assert_array_equal(tabled, np.arange(65))
