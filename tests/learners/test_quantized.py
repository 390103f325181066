"""Quantized-gradient training (``use_quantized_grad``, LightGBM 4's names).

The oracle: training in full precision on gradients that a NumPy twin has already
quantized (rounded to nearest) and scaled back grows the same trees with the same leaf
values, bit for bit, when the scales are powers of two (the custom objective pins the
largest gradient at 1 and the largest hessian at 1/4, so every ``g_q x scale`` and its
sums are exact in float32 and float64). Then: the model does not depend on the block
size, threads, prefetch or a spilled state; leaf renewal equals the leaves' exact
formula; LightGBM's quantized mode reaches the same accuracy."""
import numpy as np
import pyarrow as pa
import pytest
from sklearn.metrics import roc_auc_score

import oocboost
from oocboost.errors import ParameterError
from tests.dask.helpers import assert_same_trees
from tests.learners.test_training import force_spilled_state

BINS = 4


def _pinned(g, h):
    """Custom gradients whose extremes are 1 and 1/4 per output, in float32: scaled up
    and clipped, so that every round some rows (the noisy labels' misfits, the
    uncertain rows) sit at the bounds, in whichever block they are."""
    g = np.clip(np.asarray(5 * g, np.float32), -1, 1)
    h = np.clip(np.asarray(4 * h, np.float32), 0, 0.25)
    # per output, and per block too (hundreds of rows each)
    assert (np.abs(g).max(axis=0) == 1).all() and (h.max(axis=0) == 0.25).all()
    return g, h


def logistic_pinned(predt, labels):
    p = 1 / (1 + np.exp(-predt))
    return _pinned(p - labels, p * (1 - p))


def softmax_pinned(predt, labels):
    e = np.exp(predt - predt.max(axis=1, keepdims=True))
    p = e / e.sum(axis=1, keepdims=True)
    return _pinned(p - np.eye(predt.shape[1])[labels.astype(int)], p * (1 - p))


def _quantized_twin(fn, bins):
    """``fn`` with its gradients quantized to nearest and scaled back, in NumPy (a
    single block: the extremes are the whole data's)."""
    def quantized(predt, labels):
        g, h = (np.asarray(a, np.float64) for a in fn(predt, labels))
        g_scale = np.abs(g).max(axis=0) / (bins // 2)
        h_scale = h.max(axis=0) / bins
        g_q = np.sign(g) * np.floor(np.abs(g) / g_scale + 0.5)
        h_q = np.floor(h / h_scale + 0.5)
        return g_q * g_scale, h_q * h_scale
    return quantized


def _data(n=3000, n_classes=2, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5))
    X[rng.random((n, 5)) < 0.05] = np.nan
    Z = np.nan_to_num(X)
    score = Z[:, 0] - Z[:, 1] * Z[:, 2] + rng.normal(size=n)
    if n_classes == 2:
        y = (score > 0).astype(float)
    else:
        y = np.digitize(score, np.quantile(score, [1 / 3, 2 / 3])).astype(float)
    return X, y


def _cache(tmp_path, X, y, name, block_rows):
    table = {f"f{j}": X[:, j] for j in range(X.shape[1])} | {"y": y}
    return oocboost.build_cache(pa.table(table), tmp_path / name, label="y", quiet=True,
                                block_rows=block_rows)


def _same_model(a, b):
    """The same trees, rows through each node, leaf values and covers, exactly."""
    assert_same_trees(a, b, exact_values=True)
    for s, t in zip(a.trees, b.trees):
        np.testing.assert_array_equal(s.cover, t.cover)


@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("block_rows,n_threads", [(3000, 1), (700, 2)])
def test_equals_full_precision_on_twin_quantized_gradients(tmp_path, n_classes, block_rows,
                                                           n_threads):
    X, y = _data(n_classes=n_classes)
    one_block = _cache(tmp_path, X, y, "one.oocb", 3000)
    cache = _cache(tmp_path, X, y, "c.oocb", block_rows)
    fn = logistic_pinned if n_classes == 2 else softmax_pinned
    params = {"objective": "binary:logistic" if n_classes == 2 else "multi:softmax",
              "eta": 0.3, "max_depth": 4, "base_score": 0.5, "n_threads": n_threads,
              "verbosity": 0}
    if n_classes > 2:
        params = {**params, "num_class": 3, "base_score": None}
    quantized = oocboost.train({**params, "use_quantized_grad": True,
                                "stochastic_rounding": False, "num_grad_quant_bins": BINS},
                               cache, 4, obj=fn, verbose_eval=False)
    twin = oocboost.train(params, one_block, 4, obj=_quantized_twin(fn, BINS),
                          verbose_eval=False)
    _same_model(quantized, twin)
    # and the quantization did something: full precision grows other trees
    full = oocboost.train(params, one_block, 4, obj=fn, verbose_eval=False)
    assert any(not np.array_equal(s.value, t.value)
               for s, t in zip(full.trees, twin.trees))


@pytest.fixture(scope="module")
def binary(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("quantized")
    X, y = _data(n=4000, seed=1)
    return X, y, tmp_path


@pytest.mark.parametrize("block_rows,n_threads,prefetch,spilled", [
    (1000, 1, 0, False), (333, 2, 2, False), (512, 2, 1, True)])
def test_stochastic_rounding_does_not_depend_on_the_layout(binary, monkeypatch, block_rows,
                                                           n_threads, prefetch, spilled):
    X, y, tmp_path = binary
    params = {"objective": "binary:logistic", "eta": 0.3, "max_depth": 5,
              "use_quantized_grad": True, "quant_train_renew_leaf": True, "seed": 3,
              "verbosity": 0}
    reference = oocboost.train(params, _cache(tmp_path, X, y, "ref.oocb", 4000), 5,
                               verbose_eval=False)
    cache = _cache(tmp_path, X, y, f"c{block_rows}.oocb", block_rows)
    if spilled:   # the per-row state, qstats included, on disk between passes
        force_spilled_state(monkeypatch)
    model = oocboost.train({**params, "n_threads": n_threads, "prefetch": prefetch},
                           cache, 5, verbose_eval=False)
    assert model.training_log["state_in_ram"] is not spilled
    _same_model(model, reference)
    other_seed = oocboost.train({**params, "seed": 4}, cache, 5, verbose_eval=False)
    assert any(not np.array_equal(s.value, t.value)
               for s, t in zip(other_seed.trees, reference.trees))


def test_renewed_leaves_are_the_full_precision_formula(binary):
    """One round of squared error from base 0.5 on a continuous label: each leaf is
    eta x -G/(H + lambda) of its rows' exact gradients (g = 0.5 - y, h = 1), whatever
    the quantized search chose; without renewal the leaves are the quantized sums'."""
    X, _, tmp_path = binary
    y = np.nan_to_num(X[:, 0]) + np.random.default_rng(2).normal(size=len(X))
    cache = _cache(tmp_path, X, y, "renew.oocb", 1000)
    eta, lam = 0.3, 2.0
    params = {"objective": "reg:squarederror", "eta": eta, "reg_lambda": lam,
              "max_depth": 4, "base_score": 0.5, "use_quantized_grad": True,
              "quant_train_renew_leaf": True, "verbosity": 0}
    model = oocboost.train(params, cache, 1, verbose_eval=False)
    leaf = model.predict(X, pred_leaf=True).reshape(-1)
    # as the cache (float32 labels) and the per-row state (float32 gradients) hold them
    g = (0.5 - y.astype(np.float32)).astype(np.float32).astype(np.float64)
    tree = model.trees[0]
    for node in np.unique(leaf):
        rows = leaf == node
        expected = eta * -g[rows].sum() / (rows.sum() + lam)
        np.testing.assert_allclose(tree.value[node], expected, rtol=1e-12)
    plain = oocboost.train({**params, "quant_train_renew_leaf": False}, cache, 1,
                           verbose_eval=False)
    np.testing.assert_array_equal(plain.trees[0].feature, tree.feature)
    assert not np.allclose(plain.trees[0].value, tree.value, rtol=1e-9)


def test_float64_sums_past_int32_give_the_same_model(binary, monkeypatch):
    """Past 2^31 / bins rows the sums are float64 (exact for these integers): the same
    model as int32 sums."""
    from oocboost.engine import quantized as eq

    X, y, tmp_path = binary
    cache = _cache(tmp_path, X, y, "wide.oocb", 1000)
    params = {"objective": "binary:logistic", "max_depth": 4, "use_quantized_grad": True,
              "verbosity": 0}
    narrow = oocboost.train(params, cache, 3, verbose_eval=False)
    monkeypatch.setattr(eq, "INT32_SUM_LIMIT", 10)
    assert eq.quantized_hist_dtype(4000, 4) == np.float64
    _same_model(oocboost.train(params, cache, 3, verbose_eval=False), narrow)


def test_accuracy_as_lightgbm_quantized():
    """On 20,000 rows, 60 rounds: quantized AUC within 0.01 of full precision, and of
    LightGBM's own quantized mode with the same settings."""
    import lightgbm as lgb

    from oocboost.datasets import generate_arrays

    X, y = generate_arrays(25_000, 10, seed=5)[:2]
    Xtr, ytr, Xte, yte = X[:20_000], y[:20_000], X[20_000:], y[20_000:]
    ours = {}
    for q in (False, True):
        clf = oocboost.GradientBoostingClassifier(
            n_estimators=60, learning_rate=0.1, max_depth=6, use_quantized_grad=q,
            quant_train_renew_leaf=True)
        ours[q] = roc_auc_score(yte, clf.fit(Xtr, ytr).predict_proba(Xte)[:, 1])
    booster = lgb.train({"objective": "binary", "learning_rate": 0.1, "max_depth": 6,
                         "num_leaves": 64, "min_data_in_leaf": 1, "lambda_l2": 1.0,
                         "min_sum_hessian_in_leaf": 1.0, "use_quantized_grad": True,
                         "quant_train_renew_leaf": True, "verbose": -1, "seed": 0,
                         "num_threads": 1},
                        lgb.Dataset(Xtr, ytr), 60)
    theirs = roc_auc_score(yte, booster.predict(Xte))
    assert abs(ours[True] - ours[False]) < 0.01
    assert abs(ours[True] - theirs) < 0.01
    assert ours[True] > 0.8


@pytest.mark.parametrize("params,match", [
    ({"num_grad_quant_bins": 1}, "num_grad_quant_bins"),
    ({"num_grad_quant_bins": 128}, "num_grad_quant_bins"),
    ({"grow_policy": "symmetric"}, "grow_policy='symmetric'"),
    ({"boosting_type": "ordered"}, "boosting_type='ordered'"),
    ({"linear_tree": True}, "linear_tree"),
    ({"data_sample_strategy": "goss"}, "goss"),
    ({"sampling_method": "gradient_based", "subsample": 0.5}, "gradient_based"),
])
def test_refused_combinations_name_the_parameter(binary, params, match):
    X, y, tmp_path = binary
    cache = _cache(tmp_path, X, y, "refuse.oocb", 1000)
    with pytest.raises(ParameterError, match=match):
        oocboost.train({"use_quantized_grad": True, **params}, cache, 1,
                       verbose_eval=False)
