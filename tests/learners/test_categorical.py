"""Categorical features end to end: wide features (more categories than max_bin - 1) in
boosting, forests and AdaBoost, predictions from raw strings equal to those from the
cache and after a save/load, and LightGBM's partition search against LightGBM itself.
"""
import numpy as np
import pyarrow as pa
import pytest

import oocboost


def shop_table(rng, n_rows, n_shops, n_regions=7):
    """A label driven by per-category effects of a wide ``shop`` column (rare shops
    included) and a small ``region`` column, plus a numeric ``x``."""
    shop_effect = rng.normal(size=n_shops)
    popularity = rng.random(n_shops) ** 2
    shop = rng.choice(n_shops, n_rows, p=popularity / popularity.sum())
    region = rng.integers(0, n_regions, n_rows)
    x = rng.normal(size=n_rows)
    y = 2 * shop_effect[shop] + 0.5 * region + x + rng.normal(size=n_rows) * 0.3
    names = np.array([f"shop{i:05d}" for i in range(n_shops)], dtype=object)
    shops = names[shop]
    shops[rng.random(n_rows) < 0.03] = None
    return pa.table({"shop": pa.array(shops, type=pa.string()),
                     "region": pa.array([f"r{r}" for r in region]), "x": x, "y": y})


@pytest.fixture(scope="module")
def wide_cache(tmp_path_factory):
    rng = np.random.default_rng(0)
    table = shop_table(rng, 20000, 700)
    path = tmp_path_factory.mktemp("wide") / "c.oocb"
    return table, oocboost.build_cache(table, path, label="y", block_rows=4096, quiet=True)


def test_a_wide_feature_keeps_every_category(wide_cache):
    table, cache = wide_cache
    mapper = cache.bin_mapper
    n_shops = len(set(table["shop"].drop_null().to_pylist()))
    assert len(mapper.categories[0]) == n_shops and not mapper.has_other[0]
    assert mapper.n_value_bins[0] == n_shops + 1 and cache.codes_dtype == np.uint16
    assert cache.n_hist_columns == -(-(n_shops + 1) // 256) + 2


def test_narrow_columns_keep_one_byte_in_memory_beside_a_wide_one(wide_cache, tmp_path):
    """Blocks of a cache with a wide categorical feature hold one byte a code and two
    for the wide column only (``kernels/codes.py``), on either backend; ``codes`` gives
    the whole two-byte matrix."""
    from oocboost.kernels.codes import PlaneCodes

    table, cache = wide_cache
    hdf5 = oocboost.build_cache(table, tmp_path / "h.oocb", label="y", block_rows=4096,
                                backend="hdf5", quiet=True)
    assert cache.code_bytes_per_row == hdf5.code_bytes_per_row == 3 + 2
    for c in (cache, hdf5):
        np.testing.assert_array_equal(c.wide_columns, [True, False, False])
        block = c.read_block(1)
        planes = block.stored_codes
        assert isinstance(planes, PlaneCodes) and planes.wide.shape == (1, block.n_rows)
        assert planes.nbytes == block.n_rows * 5 + 3 * 8
        codes = block.codes
        assert codes.dtype == np.uint16 and codes[0].max() > 255 >= codes[1:].max()
        np.testing.assert_array_equal(codes, planes.to_array())
    np.testing.assert_array_equal(cache.read_block(1).codes, hdf5.read_block(1).codes)


@pytest.mark.parametrize("params", [
    {"max_depth": 4, "categorical_split": "lightgbm", "min_data_per_group": 20},
    {"max_depth": 3, "categorical_split": "xgboost", "data_sample_strategy": "goss"},
    {"max_depth": 5, "grow_policy": "lossguide", "max_leaves": 20, "subsample": 0.6},
], ids=["lightgbm", "goss", "lossguide"])
def test_models_from_one_byte_codes_equal_those_from_two_byte_codes(wide_cache,
                                                                    monkeypatch, params):
    """The same model, bit for bit, whether blocks hold mixed-width codes or the
    two-byte matrix (``Cache.wide_columns`` None)."""
    from oocboost.cache.store.reader import Cache
    from tests.model.test_model import assert_same_model

    table, cache = wide_cache
    params = dict(params, eta=0.3, seed=1)
    mixed = oocboost.train(params, cache, 12, verbose_eval=False)
    path = cache.path
    monkeypatch.setattr(Cache, "wide_columns", property(lambda self: None))
    two_byte = oocboost.Cache(path)
    assert isinstance(two_byte.read_block(0).stored_codes, np.ndarray)
    reference = oocboost.train(params, two_byte, 12, verbose_eval=False)
    assert_same_model(mixed, reference)
    # 5 bytes a row instead of 6 (3 columns, one wide)
    ratio = mixed.training_log["bytes_read"] / reference.training_log["bytes_read"]
    assert 0.83 <= ratio < 0.84


@pytest.mark.parametrize("split", ["lightgbm", "xgboost"])
def test_boosting_splits_on_codes_past_the_missing_code(wide_cache, tmp_path, split):
    table, cache = wide_cache
    model = oocboost.train({"max_depth": 4, "eta": 0.3, "categorical_split": split,
                            "min_data_per_group": 20, "cat_smooth": 5}, cache, 30,
                           verbose_eval=False)
    wide_sets = [tree.cat_bitset[node] for tree in model.trees
                 for node in np.flatnonzero(tree.is_categorical & (tree.left >= 0))
                 if tree.feature[node] == 0]
    assert wide_sets
    high = [any(int(word) for word in bits[256 // 32:]) for bits in wide_sets]
    assert any(high), "some category coded past 255 is sent left"
    assert not any((int(bits[255 // 32]) >> (255 % 32)) & 1 for bits in wide_sets)
    from_raw = model.predict(table)
    np.testing.assert_allclose(from_raw, model.predict(cache), rtol=1e-6, atol=1e-6)
    model.save_model(tmp_path / "m.json")
    loaded = oocboost.load_model(tmp_path / "m.json")
    np.testing.assert_array_equal(loaded.predict(table), from_raw)
    rmse = np.sqrt(np.mean((from_raw - table["y"].to_numpy()) ** 2))
    assert rmse < 0.6 * table["y"].to_numpy().std()


@pytest.mark.slow  # 40 s of kernel compiling in a cold run; the CART search of a wide
# feature is checked against brute force in tests/kernels/test_split_categorical.py
def test_forest_and_adaboost_train_on_a_wide_feature(wide_cache):
    table, cache = wide_cache
    forest = oocboost.RandomForestRegressor(n_estimators=4, max_depth=8, max_features=1.0,
                                            random_state=0).fit(cache)
    np.testing.assert_allclose(forest.predict(table), forest.predict(cache), rtol=1e-9)
    trees = forest.model_.trees
    assert any((t.is_categorical & (t.left >= 0) & (t.feature == 0)).any() for t in trees)
    y = table["y"].to_numpy()
    r2 = 1 - np.mean((forest.predict(table) - y) ** 2) / y.var()
    assert r2 > 0.6
    ada = oocboost.AdaBoostRegressor(n_estimators=5, max_depth=4, random_state=0).fit(cache)
    np.testing.assert_allclose(ada.predict(table), ada.predict(cache), rtol=1e-9)


def test_wide_feature_folds_past_max_categories(tmp_path):
    rng = np.random.default_rng(1)
    table = shop_table(rng, 5000, 400)
    cache = oocboost.build_cache(table, tmp_path / "c.oocb", label="y", max_categories=100,
                                 quiet=True)
    mapper = cache.bin_mapper
    assert mapper.has_other[0] and len(mapper.categories[0]) == 99
    assert cache.codes_dtype == np.uint8
    from oocboost.cache.describe import describe_cache

    assert "rare folded into 'other' (" in describe_cache(cache.path)


def lightgbm_stump(X_codes, y):
    lgb = pytest.importorskip("lightgbm")
    params = dict(objective="regression", num_leaves=2, learning_rate=1.0, lambda_l2=0.0,
                  min_data_in_leaf=1, min_sum_hessian_in_leaf=0.0, min_data_in_bin=1,
                  max_cat_to_onehot=4, cat_smooth=10.0, cat_l2=10.0, min_data_per_group=100,
                  max_cat_threshold=32, boost_from_average=True, verbose=-1, num_threads=1)
    booster = lgb.train(params, lgb.Dataset(X_codes, y, categorical_feature=[0],
                                            params={"max_bin": 255}), 1)
    tree = booster.dump_model()["tree_info"][0]["tree_structure"]
    return tree


@pytest.mark.parametrize("seed", range(4))
def test_lightgbm_search_picks_lightgbms_category_set(seed, tmp_path):
    """A stump on one categorical feature of 12 categories (one rare), squared error:
    our `lightgbm` search sends the same categories left as LightGBM's first split."""
    rng = np.random.default_rng(seed)
    n = 4000
    sizes = rng.integers(200, 600, 12)
    sizes[rng.integers(0, 12)] = 6           # a category too rare to sort (< cat_smooth)
    codes = np.repeat(np.arange(12), sizes)[: n]
    codes = rng.permutation(np.concatenate([codes, rng.integers(0, 12, n - len(codes))]))
    effect = rng.normal(size=12) * 2
    y = effect[codes] + rng.normal(size=len(codes))
    tree = lightgbm_stump(codes[:, None].astype(float), y)
    assert tree["decision_type"] == "=="
    lgb_left = {int(v) for v in str(tree["threshold"]).split("||")}
    names = np.array([f"k{c:02d}" for c in range(12)])
    cache = oocboost.build_cache(pa.table({"c": names[codes], "y": y}), tmp_path / "c.oocb",
                                 label="y", quiet=True)
    model = oocboost.train({"max_depth": 1, "eta": 1.0, "reg_lambda": 0.0,
                            "min_child_weight": 0.0}, cache, 1, verbose_eval=False)
    tree0 = model.trees[0]
    assert tree0.is_categorical[0]
    left_codes = {c for c in range(12) if (int(tree0.cat_bitset[0, c >> 5]) >> (c & 31)) & 1}
    categories = cache.bin_mapper.categories[0]
    ours = {int(categories[c][1:]) for c in left_codes}
    # the rare category holds no weight in LightGBM's sort (it goes right): compare the
    # sorted categories, on either side of the split
    rare = {int(np.argmin(np.bincount(codes, minlength=12)))}
    assert (ours - rare == lgb_left - rare) or (
        ours - rare == set(range(12)) - lgb_left - rare
    )
