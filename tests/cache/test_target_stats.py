"""cat_encoding="ordered_ts" (cache/target_stats.py): the build's ordered statistics
against a naive twin, independence from blocks and sources, the encoder in the model,
and the leakage test of the issue: pure-noise categories stay at AUC 0.5 where a plain
target mean encoding overfits."""
import os

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pytest

import oocboost
from oocboost.cache.target_stats import OrderedTargetStats
from oocboost.errors import ParameterError
from tests.kernels.test_target_stats import naive_ordered_stats, naive_slices


def noise_table(rng, n_rows, n_levels):
    """A label independent of everything, a categorical column of ``n_levels`` levels
    (pure noise) and a numeric column that carries the signal ``x``."""
    level = rng.integers(0, n_levels, n_rows)
    x = rng.normal(size=n_rows)
    y = (rng.random(n_rows) < 0.5).astype(np.float64)
    cats = np.array([f"lvl{i:05d}" for i in range(n_levels)], dtype=object)[level]
    return pa.table({"c": pa.array(cats, type=pa.string()), "x": x, "y": y})


def decode_codes(cache, f):
    return np.concatenate([cache.read_block(b).codes[f] for b in range(cache.n_blocks)])


def test_build_equals_the_naive_ordered_statistics(tmp_path):
    rng = np.random.default_rng(0)
    table = noise_table(rng, 3000, 40)
    y = table["y"].to_numpy()
    cache = oocboost.build_cache(table, tmp_path / "c.oocb", label="y", block_rows=700,
                                 cat_encoding="ordered_ts", ts_permutations=3, ts_seed=5,
                                 ts_prior_weight=2.0, quiet=True)
    mapper = cache.bin_mapper
    assert mapper.feature_types == ["ordered_ts", "numeric"]
    encoder = mapper.encoders[0]
    index = np.array([encoder["categories"].index(c) for c in table["c"].to_pylist()])
    slices = naive_slices(5, 3, 64, len(y))
    expected = naive_ordered_stats(index, y, slices, y.mean(), 2.0)
    edges = mapper.bin_edges[0]
    np.testing.assert_array_equal(decode_codes(cache, 0),
                                  np.searchsorted(edges, expected, side="left"))
    # the encoder holds each category's statistic over all its rows
    for k in (0, 7):
        rows = index == k
        full = (y[rows].sum() + 2.0 * y.mean()) / (rows.sum() + 2.0)
        assert encoder["values"][k] == pytest.approx(full, rel=1e-12)
        assert encoder["counts"][k] == rows.sum()
    assert encoder["unseen"] == pytest.approx(y.mean()) == encoder["other"]


def test_statistics_do_not_depend_on_blocks_or_the_source(tmp_path):
    rng = np.random.default_rng(1)
    table = noise_table(rng, 5000, 300)
    csv = tmp_path / "t.csv"
    pacsv.write_csv(table, csv)
    caches = [oocboost.build_cache(table, tmp_path / "a.oocb", label="y", block_rows=512,
                                   cat_encoding="ordered_ts", quiet=True),
              oocboost.build_cache(str(csv), tmp_path / "b.oocb", label="y",
                                   block_rows=5000, cat_encoding="ordered_ts", quiet=True)]
    assert caches[0].bin_mapper == caches[1].bin_mapper
    np.testing.assert_array_equal(decode_codes(caches[0], 0), decode_codes(caches[1], 0))


def test_the_encoder_is_in_the_model_and_predicts_raw_strings(tmp_path):
    rng = np.random.default_rng(2)
    n = 6000
    level = rng.integers(0, 200, n)
    effect = rng.normal(size=200)
    y = (effect[level] + rng.normal(size=n) * 0.5 > 0).astype(float)
    cats = np.array([f"s{i}" for i in range(200)], dtype=object)[level]
    table = pa.table({"c": pa.array(cats, type=pa.string()), "y": y})
    cache = oocboost.build_cache(table, tmp_path / "c.oocb", label="y",
                                 cat_encoding="ordered_ts", quiet=True)
    model = oocboost.train({"objective": "binary:logistic", "max_depth": 3}, cache, 20,
                           verbose_eval=False)
    assert model.feature_types == ["ordered_ts"]
    model.save_model(tmp_path / "m.json")
    loaded = oocboost.load_model(tmp_path / "m.json")
    new = pa.table({"c": pa.array(["s3", "s150", "never-seen", None], type=pa.string())})
    np.testing.assert_array_equal(loaded.predict(new), model.predict(new))
    # a cache binned with the training cache's mapper encodes with the same encoder
    valid = oocboost.build_cache(table.slice(0, 500), tmp_path / "v.oocb", label="y",
                                 reference=cache, quiet=True)
    np.testing.assert_allclose(model.predict(table.slice(0, 500)), model.predict(valid),
                               rtol=1e-6)
    mapper = cache.bin_mapper
    values = mapper.encode_categories(0, ["s3", "never-seen", None])
    assert values[1] == mapper.encoders[0]["unseen"] and np.isnan(values[2])


def auc(y, p):
    from sklearn.metrics import roc_auc_score

    return roc_auc_score(y, p)


def test_no_target_leakage_on_pure_noise_categories(tmp_path):
    """Thousands of levels of pure noise: with ordered statistics the model finds
    nothing (test AUC 0.5 +- noise, and a train/test gap no larger than boosting's on a
    numeric noise column), while a plain target mean encoding, which sees each row's own
    label, fits the noise in training."""
    rng = np.random.default_rng(3)
    train, test = noise_table(rng, 20000, 4000), noise_table(rng, 20000, 4000)
    y_train, y_test = train["y"].to_numpy(), test["y"].to_numpy()
    params = {"objective": "binary:logistic", "max_depth": 4, "eta": 0.1}
    ordered = oocboost.build_cache(train.select(["c", "y"]), tmp_path / "o.oocb",
                                   label="y", cat_encoding="ordered_ts", quiet=True)
    model = oocboost.train(params, ordered, 60, verbose_eval=False)
    ordered_train = auc(y_train, model.predict(ordered))
    ordered_test = auc(y_test, model.predict(test.select(["c"])))
    # plain mean encoding: each category's mean label over all its rows, own included
    cats = train["c"].to_numpy(zero_copy_only=False)
    keys, inverse = np.unique(cats, return_inverse=True)
    means = np.bincount(inverse, y_train) / np.bincount(inverse)
    plain = oocboost.build_cache(pa.table({"te": means[inverse], "y": y_train}),
                                 tmp_path / "p.oocb", label="y", quiet=True)
    leaky = oocboost.train(params, plain, 60, verbose_eval=False)
    lookup = dict(zip(keys.tolist(), means.tolist()))
    test_te = np.array([lookup.get(c, y_train.mean())
                        for c in test["c"].to_numpy(zero_copy_only=False)])
    plain_train = auc(y_train, leaky.predict(plain))
    plain_test = auc(y_test, leaky.predict(test_te[:, None]))
    # the generic overfit of 60 rounds on 20,000 noisy rows: a numeric noise column
    noise = oocboost.build_cache(train.select(["x", "y"]), tmp_path / "n.oocb", label="y",
                                 quiet=True)
    baseline = oocboost.train(params, noise, 60, verbose_eval=False)
    generic_gap = (auc(y_train, baseline.predict(noise))
                   - auc(y_test, baseline.predict(test.select(["x"]))))
    assert abs(ordered_test - 0.5) < 0.02
    assert ordered_train - ordered_test < generic_gap + 0.01
    assert plain_train > 0.65 and abs(plain_test - 0.5) < 0.02
    assert plain_train - plain_test > 3 * generic_gap


def test_tables_shrink_their_slices_to_the_budget():
    rng = np.random.default_rng(4)
    n = 4000
    cats = pa.array([f"k{i}" for i in rng.integers(0, 1500, n)])
    y = rng.normal(size=n)

    class Batch:
        def __init__(self, lo, hi):
            self.categorical = {"c": cats.slice(lo, hi - lo)}
            self.label = y[lo:hi]
            self.numeric = {}

    ts = OrderedTargetStats(["c"], n_permutations=2, table_bytes=400_000)
    for lo in range(0, n, 1000):
        ts.update(Batch(lo, lo + 1000))
    kept = sorted(set(cats.to_pylist()))
    ts.finish({"c": kept}, {"c": False})
    n_slices = ts._tables[("c",)]["n_slices"]
    assert n_slices < 64 and 2 * 2 * 1500 * n_slices * 8 <= 400_000

    class Mapper:
        @staticmethod
        def category_positions(name, values, n_kept):
            return np.array([kept.index(v) for v in values.to_pylist()])

    got = np.concatenate([ts.encode_batch(Batch(lo, lo + 1000), Mapper)["c"]
                          for lo in range(0, n, 1000)])
    index = np.array([kept.index(v) for v in cats.to_pylist()])
    expected = naive_ordered_stats(index, y, naive_slices(0, 2, n_slices, n), y.mean(), 1.0)
    np.testing.assert_allclose(got, expected, rtol=1e-12)


def test_options_are_checked(tmp_path):
    table = noise_table(np.random.default_rng(5), 200, 5)
    for kwargs, message in (({"cat_encoding": "target"}, "'native' or 'ordered_ts'"),
                            ({"cat_encoding": "ordered_ts", "ts_prior_weight": 0},
                             "ts_prior_weight must be positive"),
                            ({"cat_encoding": "ordered_ts", "ts_permutations": 0},
                             "ts_permutations must be an integer"),
                            ({"cat_encoding": "ordered_ts", "ts_prior": "x"},
                             "ts_prior must be a number")):
        with pytest.raises(ParameterError, match=message):
            oocboost.build_cache(table, tmp_path / "x.oocb", label="y", quiet=True, **kwargs)
    with pytest.raises(ParameterError, match="needs the label"):
        oocboost.build_cache(table.select(["c", "x"]), tmp_path / "y.oocb", quiet=True,
                             cat_encoding="ordered_ts")
    assert not os.path.exists(tmp_path / "y.oocb")
