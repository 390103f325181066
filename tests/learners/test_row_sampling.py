"""Gradient-based row sampling (learners/boosting/row_sampling.py): GOSS and MVS against
NumPy references, the in-memory sample against the cache path, and the training run."""
import numpy as np
import pytest

import oocboost
from oocboost.errors import ParameterError
from oocboost.kernels.sampling import uniform_per_row
from oocboost.learners.boosting import booster as booster_module
from oocboost.learners.boosting.params import resolve_params
from oocboost.learners.boosting.row_sampling import (
    MVS_LAMBDA,
    goss_threshold,
    mvs_threshold,
    sample_block,
)


def draws(seed, stream, row_start, n):
    u = np.empty(n)
    uniform_per_row(seed, stream, row_start, u)
    return u


def random_stats(rng, n_outputs, n_rows):
    g = rng.normal(size=(n_outputs, n_rows)) * rng.choice([0.1, 1.0, 5.0], n_rows)
    h = rng.uniform(0.05, 1.0, (n_outputs, n_rows))
    return np.stack([g, h], axis=2).astype(np.float32)


@pytest.mark.parametrize("n_outputs", [1, 3])
@pytest.mark.parametrize("n_rows", [1, 7, 1000, 20000])
@pytest.mark.parametrize("top_rate,other_rate", [(0.2, 0.1), (0.05, 0.3), (0.5, 0.5)])
def test_goss_equals_a_numpy_reference(n_outputs, n_rows, top_rate, other_rate):
    rng = np.random.default_rng(n_rows + n_outputs)
    stats = random_stats(rng, n_outputs, n_rows)
    stats[:, ::5] = stats[:, :1]        # ties in the scores
    p = resolve_params({"data_sample_strategy": "goss", "top_rate": top_rate,
                        "other_rate": other_rate, "seed": 3})
    got = stats.copy()
    keep = sample_block(p, got, 11, 500)
    # reference: LightGBM's rule over this block's rows
    g, h = stats[:, :, 0].astype(np.float64), stats[:, :, 1].astype(np.float64)
    score = np.abs(g * h).sum(axis=0)
    top_k, other_k = max(1, int(n_rows * top_rate)), int(n_rows * other_rate)
    if top_k + other_k >= n_rows:
        factor = np.ones(n_rows)
    else:
        threshold = np.sort(score)[::-1][top_k - 1]
        top = score >= threshold
        p_other = min(1.0, other_k / (~top).sum()) if (~top).any() else 1.0
        other = ~top & (draws(3, 11, 500, n_rows) < p_other)
        multiply = 1.0 / p_other if p_other > 0 else 0.0
        factor = np.where(top, 1.0, np.where(other, multiply, 0.0))
        assert top.sum() >= top_k
    np.testing.assert_array_equal(keep, factor > 0)
    # the kernel multiplies in float64 and rounds once to float32
    expected = (stats.astype(np.float64) * factor[None, :, None]).astype(np.float32)
    np.testing.assert_array_equal(got, expected)


def test_goss_sums_are_unbiased():
    """Over many rounds' draws the sampled gradient sum averages the full one."""
    rng = np.random.default_rng(0)
    stats = random_stats(rng, 1, 5000)
    p = resolve_params({"data_sample_strategy": "goss"})
    totals = []
    for round_index in range(400):
        sampled = stats.copy()
        sample_block(p, sampled, round_index, 0)
        totals.append(sampled[0, :, 0].astype(np.float64).sum())
    full = stats[0, :, 0].astype(np.float64).sum()
    assert np.std(totals) > 0
    assert abs(np.mean(totals) - full) < 4 * np.std(totals) / np.sqrt(len(totals))


@pytest.mark.parametrize("subsample", [0.05, 0.3, 0.9])
@pytest.mark.parametrize("n_rows", [10, 3000])
def test_mvs_equals_xgboosts_rule(subsample, n_rows):
    """u solves sum min(1, r / u) = subsample * n (XGBoost's CalculateThreshold), row i is
    kept when its draw is at most p_i = min(1, r_i / u) and weighted 1 / p_i."""
    rng = np.random.default_rng(n_rows)
    stats = random_stats(rng, 2, n_rows)
    p = resolve_params({"sampling_method": "gradient_based", "subsample": subsample,
                        "seed": 5})
    got = stats.copy()
    keep = sample_block(p, got, 4, 77)
    g, h = stats[:, :, 0].astype(np.float64), stats[:, :, 1].astype(np.float64)
    reg = np.sqrt((g * g + MVS_LAMBDA * h * h).sum(axis=0))
    u = mvs_threshold(reg, int(n_rows * subsample))
    np.testing.assert_allclose(np.minimum(1.0, reg / u).sum(), int(n_rows * subsample),
                               rtol=1e-9)
    prob = np.minimum(1.0, reg / u)
    kept = (prob >= 1.0) | (draws(5, 4, 77, n_rows) <= prob)
    np.testing.assert_array_equal(keep, kept)
    factor = np.where(kept, 1.0 / np.where(kept, prob, 1.0), 0.0)
    expected = (stats.astype(np.float64) * factor[None, :, None]).astype(np.float32)
    np.testing.assert_allclose(got, expected, rtol=1e-6)


def test_thresholds_edge_cases():
    assert goss_threshold(np.ones(3), 0.2, 0.1) == (1.0, 1.0)
    assert goss_threshold(np.arange(10.0), 0.5, 0.5) == (-np.inf, 1.0)
    assert mvs_threshold(np.ones(10), 0) == np.inf
    np.testing.assert_allclose(mvs_threshold(np.ones(10), 5), 2.0)


# ------------------------------------------------------------------------- training
@pytest.fixture(scope="module")
def binary_cache(tmp_path_factory):
    rng = np.random.default_rng(1)
    n = 30000
    X = rng.normal(size=(n, 6))
    y = ((X[:, 0] + X[:, 1] * X[:, 2] + rng.normal(size=n) * 0.5) > 0).astype(float)
    path = tmp_path_factory.mktemp("goss") / "c.oocb"
    cache = oocboost.build_cache(X[:24000], path, label=y[:24000], block_rows=5000,
                                 quiet=True)
    return cache, X[24000:], y[24000:]


SAMPLERS = [{"data_sample_strategy": "goss", "eta": 0.25},
            {"sampling_method": "gradient_based", "subsample": 0.3}]


@pytest.mark.parametrize("sampler", range(len(SAMPLERS)))
def test_in_memory_sample_grows_the_trees_the_cache_path_grows(binary_cache, sampler,
                                                                 monkeypatch):
    """The sample gathered in memory and the passes over the cache that skip the rows
    left out grow the same trees; the sample reads the cache once a round."""
    cache, X, _ = binary_cache
    params = {"objective": "binary:logistic", "max_depth": 4, **SAMPLERS[sampler]}
    in_memory = oocboost.train(params, cache, 12, verbose_eval=False)
    log = in_memory.training_log
    monkeypatch.setattr(booster_module.BoostingState, "_plan_sample", lambda self: 0)
    streamed = oocboost.train(params, cache, 12, verbose_eval=False)
    np.testing.assert_array_equal(in_memory.predict(X), streamed.predict(X))
    full_rounds = 4 if sampler == 0 else 0          # GOSS: every row for 1 / eta rounds
    # a depth-4 round takes 4 histogram passes (the last level's leaves need none): a
    # sampled round reads the cache once, for its gradients and sample, and makes every
    # histogram from the sample
    assert log["data_passes"] == full_rounds * 4 + (12 - full_rounds)
    assert log["sample_passes"] == (12 - full_rounds) * 4
    assert streamed.training_log["sample_passes"] == 0
    assert streamed.training_log["data_passes"] == 12 * 4


@pytest.mark.parametrize("prefetch", [0, 2])
def test_goss_does_not_depend_on_prefetch(binary_cache, prefetch):
    cache, X, _ = binary_cache
    params = {"objective": "binary:logistic", "data_sample_strategy": "goss", "eta": 0.5}
    ref = oocboost.train(params, cache, 6, verbose_eval=False)
    other = oocboost.train({**params, "prefetch": prefetch}, cache, 6, verbose_eval=False)
    np.testing.assert_array_equal(ref.predict(X), other.predict(X))


def test_goss_first_rounds_use_every_row(binary_cache):
    cache, X, _ = binary_cache
    full = oocboost.train({"objective": "binary:logistic", "eta": 0.25}, cache, 4,
                          verbose_eval=False)
    goss = oocboost.train({"objective": "binary:logistic", "eta": 0.25,
                           "data_sample_strategy": "goss"}, cache, 4, verbose_eval=False)
    np.testing.assert_array_equal(full.predict(X), goss.predict(X))


def test_sampled_models_keep_the_full_models_auc(binary_cache):
    from sklearn.metrics import roc_auc_score

    cache, X, y = binary_cache
    base = {"objective": "binary:logistic", "eta": 0.1, "max_depth": 5}
    auc = {}
    for name, extra in (("full", {}), ("goss", SAMPLERS[0]), ("mvs", SAMPLERS[1])):
        model = oocboost.train({**base, **extra, "eta": 0.1}, cache, 60, verbose_eval=False)
        auc[name] = roc_auc_score(y, model.predict(X))
    assert auc["goss"] > auc["full"] - 0.01 and auc["mvs"] > auc["full"] - 0.01


def test_sampling_parameters_are_checked(binary_cache):
    cache, _, _ = binary_cache
    for bad, message in (({"data_sample_strategy": "goss", "subsample": 0.5}, "subsample"),
                         ({"data_sample_strategy": "goss", "top_rate": 0.7,
                           "other_rate": 0.5}, "top_rate \\+ other_rate"),
                         ({"top_rate": 0.0},
                          r"top_rate must be a number in \(0, 1\), got 0.0"),
                         ({"data_sample_strategy": "gbdt"},
                          "data_sample_strategy must be one of 'bagging', 'goss', got 'gbdt'"),
                         ({"sampling_method": "mvs"},
                          "one of 'uniform', 'gradient_based', got 'mvs'")):
        with pytest.raises(ParameterError, match=message):
            oocboost.train(bad, cache, 1, verbose_eval=False)
    with pytest.raises(ParameterError, match="not offered in oocboost.cv"):
        oocboost.cv({"objective": "binary:logistic", "data_sample_strategy": "goss"}, cache,
                    2, nfold=2)
