"""Learning to rank: LambdaMART gradients equal a brute-force twin (every pair listed in
plain Python), models equal XGBoost's for the deterministic pair method over several
rounds whatever the blocks (groups cut by block boundaries, spilled state, threads), the
random one reaches the NDCG@10 of XGBoost and LightGBM, and bad groups are refused."""
import math

import numpy as np
import pytest

import oocboost
from oocboost.kernels.sampling import _uniform
from oocboost.model.objectives import get_objective


def _ranking_data(n_groups=300, seed=0, max_label=4, low=5, high=40):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(low, high, n_groups)
    qid = np.repeat(np.arange(n_groups), sizes)
    n = int(sizes.sum())
    X = rng.integers(0, 8, size=(n, 5)).astype(float)
    score = X[:, 0] + 0.5 * X[:, 1] - X[:, 2] * X[:, 3] / 8 + rng.normal(scale=0.5, size=n)
    y = np.clip(np.round(score / 3), 0, max_label)
    return X, y, qid, sizes


# ------------------------------------------------------------------ brute force twin
def _gain(y, exp_gain):
    return 2.0 ** y - 1.0 if exp_gain else y


def _metric_of(kind, labels_in_rank_order, exp_gain, k):
    """The group's NDCG (IDCG at the top k) or average precision, directly."""
    y = np.asarray(labels_in_rank_order, float)
    if kind == "rank:map":
        hits = np.cumsum(y)
        if hits[-1] == 0:
            return 0.0
        return float(np.sum(hits / np.arange(1, len(y) + 1) * y) / hits[-1])
    discount = 1.0 / np.log2(np.arange(len(y)) + 2.0)
    ideal = np.sort(y)[::-1][:k or len(y)]  # k = 0: the mean method, no cut-off
    idcg = np.sum(_gain(ideal, exp_gain) * discount[:len(ideal)])
    return float(np.sum(_gain(y, exp_gain) * discount) / idcg) if idcg else 0.0


def brute_force_lambdas(kind, y, m, *, k=32, exp_gain=True, score_norm=True, norm=True,
                        pairs=None, n_pairs=1):
    """g, h of one group: the pairs listed (top-k pairs unless ``pairs`` is given as
    rank positions), each swap's metric change computed by swapping and re-scoring."""
    order = sorted(range(len(y)), key=lambda r: (-m[r], r))
    n = len(y)
    if pairs is None:
        pairs = [(i, j) for i in range(min(k, n)) for j in range(i + 1, n)]
    g, h = np.zeros(n), np.zeros(n)
    total = 0.0
    base = _metric_of(kind, [y[r] for r in order], exp_gain, k) if kind != "rank:pairwise" \
        else 0.0
    for i, j in pairs:
        a, b = order[i], order[j]
        if y[a] == y[b]:
            continue
        hi, lo = (a, b) if y[a] > y[b] else (b, a)
        if kind == "rank:pairwise":
            delta = 1.0
        else:
            swapped = list(order)
            swapped[i], swapped[j] = swapped[j], swapped[i]
            delta = abs(_metric_of(kind, [y[r] for r in swapped], exp_gain, k) - base)
        if score_norm and m[order[0]] != m[order[-1]]:
            delta /= abs(m[hi] - m[lo]) + 0.01
        p = 1.0 / (1.0 + math.exp(-(m[hi] - m[lo])))
        g[hi] += (p - 1.0) * delta
        g[lo] -= (p - 1.0) * delta
        h[hi] += max(p * (1 - p), 1e-16) * delta * 2
        h[lo] += max(p * (1 - p), 1e-16) * delta * 2
        total += -2.0 * (p - 1.0) * delta
    if norm:
        scale = 1.0 / n_pairs if k == 0 else (math.log2(1 + total) / total if total > 0
                                              else 1.0)
        g, h = g * scale, h * scale
    return g, h


def _mean_pairs(y, m, n_pairs, seed, stream, row0):
    """The partners the mean method draws: for each document (in label order), n_pairs
    uniform picks among the documents of other labels (the counter-based draw)."""
    order = sorted(range(len(y)), key=lambda r: (-m[r], r))
    by_label = sorted(range(len(y)), key=lambda q: (-y[order[q]], q))
    pairs = []
    i = 0
    while i < len(y):
        j = i
        while j < len(y) and y[order[by_label[j]]] == y[order[by_label[i]]]:
            j += 1
        outside = i + len(y) - j
        if outside:
            for draw in range(n_pairs):
                for q in range(i, j):
                    u = _uniform(seed, stream, (row0 + order[by_label[q]]) * n_pairs + draw)
                    pick = min(int(u * outside), outside - 1)
                    pick = pick + (j - i) if pick >= i else pick
                    pairs.append((by_label[q], by_label[pick]))
        i = j
    return pairs


def _ours(name, y, m, params, weight=1.0, seed=0, stream=0, row0=0):
    obj = get_objective(name, params)
    g = np.empty(len(y), np.float32)
    h = np.empty(len(y), np.float32)
    obj.group_gradients(np.array([0, len(y)]), y.astype(np.float32), m,
                        np.array([weight]), 1.0, seed, stream, row0, g, h)
    return g, h


@pytest.mark.parametrize("name", ["rank:pairwise", "rank:ndcg", "rank:map"])
@pytest.mark.parametrize("k", [3, 32])
@pytest.mark.parametrize("flags", [(True, True, True), (False, False, False),
                                   (True, False, True)])
def test_topk_gradients_equal_the_brute_force_twin(name, k, flags):
    exp_gain, score_norm, norm = flags
    rng = np.random.default_rng(k)
    y = rng.integers(0, 2 if name == "rank:map" else 4, 25).astype(float)
    m = np.round(rng.normal(size=25), 1)  # ties in the scores
    params = {"lambdarank_num_pair_per_sample": k, "ndcg_exp_gain": exp_gain,
              "lambdarank_score_normalization": score_norm,
              "lambdarank_normalization": norm}
    g, h = _ours(name, y, m, params, weight=1.5)
    tg, th = brute_force_lambdas(name, y, m, k=k, exp_gain=exp_gain,
                                 score_norm=score_norm, norm=norm)
    np.testing.assert_allclose(g, 1.5 * tg, rtol=2e-5, atol=1e-7)
    np.testing.assert_allclose(h, 1.5 * th, rtol=2e-5, atol=1e-7)


@pytest.mark.parametrize("n_pairs", [1, 3])
def test_mean_gradients_equal_the_brute_force_twin(n_pairs):
    rng = np.random.default_rng(n_pairs)
    y = rng.integers(0, 4, 30).astype(float)
    m = rng.normal(size=30)
    params = {"lambdarank_pair_method": "mean", "lambdarank_num_pair_per_sample": n_pairs}
    g, h = _ours("rank:ndcg", y, m, params, seed=7, stream=2, row0=100)
    pairs = _mean_pairs(y, m, n_pairs, 7, 2, 100)
    assert len(pairs) == n_pairs * 30  # every label appears with another one
    tg, th = brute_force_lambdas("rank:ndcg", y, m, k=0, pairs=pairs, n_pairs=n_pairs)
    np.testing.assert_allclose(g, tg, rtol=2e-5, atol=1e-7)
    np.testing.assert_allclose(h, th, rtol=2e-5, atol=1e-7)


def test_a_group_without_relevant_documents_has_no_gradient():
    g, h = _ours("rank:map", np.zeros(6), np.arange(6.0), {})
    assert not g.any() and not h.any()
    g, h = _ours("rank:ndcg", np.full(6, 2.0), np.arange(6.0), {})
    assert not g.any() and not h.any()


# ------------------------------------------------------------------ against XGBoost
def _xgb_model(xgb, params, X, y, qid, rounds, weight=None):
    d = xgb.DMatrix(X, y, qid=qid, weight=weight)
    return xgb.train({**params, "tree_method": "hist", "nthread": 1}, d, rounds), d


# 8-row blocks of every objective are slow (thousands of blocks); CI keeps ndcg's
_XGB_CASES = [pytest.param(name, rows, marks=pytest.mark.slow)
              if rows == 8 and name != "rank:ndcg" else (name, rows)
              for name in ("rank:pairwise", "rank:ndcg", "rank:map")
              for rows in (8, 64, 100_000)]


@pytest.mark.parametrize("name,block_rows", _XGB_CASES)
def test_models_equal_xgboosts(tmp_path, name, block_rows):
    xgb = pytest.importorskip("xgboost")
    X, y, qid, _ = _ranking_data()
    if name == "rank:map":
        y = (y > 1).astype(float)
    params = {"objective": name, "max_depth": 3, "eta": 0.3, "base_score": 0.5}
    # block_rows 8 < every group: groups cross one or more block boundaries
    cache = oocboost.build_cache(X, tmp_path / "c", label=y, group=qid, quiet=True,
                                 block_rows=block_rows)
    log = {}
    ours = oocboost.train(params, cache, 5, evals=[(cache, "train")], evals_result=log,
                          verbose_eval=False)
    theirs, d = _xgb_model(xgb, params, X, y, qid, 5)
    np.testing.assert_allclose(ours.predict(X), theirs.predict(d), atol=1e-5)
    metric = list(log["train"])[0]
    assert metric == ("map@32" if name == "rank:map" else "ndcg@32")
    their_value = float(theirs.eval(d).split(":")[1])
    assert log["train"][metric][-1] == pytest.approx(their_value, abs=1e-9)


def test_group_weights_and_spilled_state_equal_xgboost(tmp_path, monkeypatch):
    xgb = pytest.importorskip("xgboost")
    from tests.learners.test_training import force_spilled_state

    X, y, qid, sizes = _ranking_data(seed=3)
    group_w = np.random.default_rng(1).uniform(0.5, 2.0, sizes.size)
    cache = oocboost.build_cache(X, tmp_path / "c", label=y, group=qid, quiet=True,
                                 weight=np.repeat(group_w, sizes), block_rows=50)
    params = {"objective": "rank:ndcg", "max_depth": 3, "base_score": 0.5,
              "subsample": 0.8, "seed": 3}
    in_ram = oocboost.train(params, cache, 4, verbose_eval=False)
    force_spilled_state(monkeypatch)
    spilled = oocboost.train(params, cache, 4, verbose_eval=False)
    assert spilled.training_log["state_in_ram"] is False
    np.testing.assert_array_equal(spilled.predict(X), in_ram.predict(X))
    no_sub = {k: v for k, v in params.items() if k not in ("subsample", "seed")}
    ours = oocboost.train(no_sub, cache, 4, verbose_eval=False)
    theirs, d = _xgb_model(xgb, no_sub, X, y, qid, 4, weight=group_w)
    np.testing.assert_allclose(ours.predict(X), theirs.predict(d), atol=1e-5)


@pytest.mark.parametrize("block_rows", [16, 100_000])
@pytest.mark.parametrize("n_threads", [1, 2])
def test_mean_method_does_not_depend_on_blocks_or_threads(tmp_path, block_rows, n_threads):
    X, y, qid, _ = _ranking_data(n_groups=60)
    cache = oocboost.build_cache(X, tmp_path / "c", label=y, group=qid, quiet=True,
                                 block_rows=block_rows)
    params = {"objective": "rank:ndcg", "lambdarank_pair_method": "mean",
              "lambdarank_num_pair_per_sample": 2, "max_depth": 3, "n_threads": n_threads}
    ref_cache = oocboost.build_cache(X, tmp_path / "r", label=y, group=qid, quiet=True,
                                     block_rows=1000)
    ref = oocboost.train({**params, "n_threads": 1}, ref_cache, 3, verbose_eval=False)
    got = oocboost.train(params, cache, 3, verbose_eval=False)
    np.testing.assert_array_equal(got.predict(X), ref.predict(X))


@pytest.mark.slow
def test_ndcg_at_10_matches_xgboost_and_lightgbm(tmp_path):
    """XGBoost's parameters against XGBoost, and LightGBM's translated (docs/parameters.md
    1.8: its lambdarank hessian is half XGBoost's, so its learning rate is half our eta;
    63 leaves grown best-first, no L2, min_sum_hessian 1e-3) against LightGBM."""
    xgb = pytest.importorskip("xgboost")
    lgb = pytest.importorskip("lightgbm")
    from oocboost.model.metrics import get_metric

    X, y, qid, sizes = _ranking_data(n_groups=1200, seed=5, low=10, high=60)
    Xt, yt, qt, st = _ranking_data(n_groups=400, seed=6, low=10, high=60)
    ptr = np.r_[0, np.cumsum(st)]
    ndcg10 = get_metric("ndcg@10")
    cache = oocboost.build_cache(X, tmp_path / "c", label=y, group=qid, quiet=True,
                                 block_rows=4096)
    for method in ("topk", "mean"):
        params = {"objective": "rank:ndcg", "max_depth": 6, "eta": 0.1,
                  "lambdarank_pair_method": method}
        ours = oocboost.train(params, cache, 50, verbose_eval=False)
        theirs, _ = _xgb_model(xgb, params, X, y, qid, 50)
        assert abs(ndcg10(yt, ours.predict(Xt), group_ptr=ptr)
                   - ndcg10(yt, theirs.predict(xgb.DMatrix(Xt)), group_ptr=ptr)) < 0.01
    light = lgb.LGBMRanker(n_estimators=50, learning_rate=0.1, num_leaves=63,
                           verbose=-1).fit(X, y, group=sizes)
    translated = {"objective": "rank:ndcg", "eta": 0.2, "grow_policy": "lossguide",
                  "max_leaves": 63, "max_depth": 0, "reg_lambda": 0.0,
                  "min_child_weight": 1e-3}
    ours = oocboost.train(translated, cache, 50, verbose_eval=False)
    assert abs(ndcg10(yt, ours.predict(Xt), group_ptr=ptr)
               - ndcg10(yt, light.predict(Xt), group_ptr=ptr)) < 0.01


# ------------------------------------------------------------------ refusals
def test_refusals_name_the_row_or_what_is_missing(tmp_path):
    X, y, qid, sizes = _ranking_data(n_groups=20)
    plain = oocboost.build_cache(X, tmp_path / "p", label=y, quiet=True)
    with pytest.raises(oocboost.ParameterError, match="needs query groups"):
        oocboost.train({"objective": "rank:ndcg"}, plain, 1, verbose_eval=False)
    grouped = oocboost.build_cache(X, tmp_path / "g", label=y, group=qid, quiet=True)
    with pytest.raises(oocboost.ParameterError, match="has none"):
        oocboost.train({"objective": "rank:ndcg"}, grouped, 1, evals=[(plain, "v")],
                       verbose_eval=False)
    with pytest.raises(oocboost.ParameterError, match="query groups"):
        oocboost.cv({"objective": "rank:ndcg"}, plain, 2)
    broken = qid.copy()
    broken[-1] = 0  # group 0 comes back at the last row
    with pytest.raises(oocboost.InputError, match=f"row {len(qid) - 1} .*contiguous"):
        oocboost.build_cache(X, tmp_path / "b", label=y, group=broken, quiet=True)
    w = np.ones(len(y))
    w[sizes[0] + 1] = 2.0  # second row of group 1 differs from its first
    weighted = oocboost.build_cache(X, tmp_path / "w", label=y, group=qid, weight=w,
                                    quiet=True)
    with pytest.raises(oocboost.InputError, match=f"row {sizes[0] + 1} has weight"):
        oocboost.train({"objective": "rank:ndcg"}, weighted, 1, verbose_eval=False)
    halves = oocboost.build_cache(X, tmp_path / "h", label=y / 2, group=qid, quiet=True)
    with pytest.raises(oocboost.InputError, match="integer relevance"):
        oocboost.train({"objective": "rank:ndcg"}, halves, 1, verbose_eval=False)
    with pytest.raises(oocboost.InputError, match="0/1"):
        oocboost.train({"objective": "rank:map"}, grouped, 1, verbose_eval=False)
    with pytest.raises(oocboost.ParameterError, match="lambdarank_pair_method"):
        oocboost.train({"objective": "rank:ndcg", "lambdarank_pair_method": "all"}, grouped,
                       1, verbose_eval=False)
    with pytest.raises(oocboost.ParameterError, match="unbiased"):
        oocboost.train({"objective": "rank:ndcg", "lambdarank_unbiased": True}, grouped,
                       1, verbose_eval=False)


def test_groups_survive_in_the_cache_and_a_tampered_file_is_refused(tmp_path):
    X, y, qid, sizes = _ranking_data(n_groups=10)
    cache = oocboost.build_cache(X, tmp_path / "c", label=y, group=qid, quiet=True,
                                 block_rows=16)
    np.testing.assert_array_equal(cache.group_ptr, np.r_[0, np.cumsum(sizes)])
    assert cache.manifest["groups"]["n_groups"] == 10
    ptr = cache.group_ptr.copy()
    ptr[3] += 1
    np.save(tmp_path / "c" / "groups.npy", ptr)
    with pytest.raises(oocboost.CacheError, match="does not match the manifest"):
        oocboost.Cache(tmp_path / "c").group_ptr


def test_command_line_groups_train_and_evaluate(tmp_path):
    from tests.test_cli import cli

    pd = pytest.importorskip("pandas")
    X, y, qid, _ = _ranking_data(n_groups=40)
    frame = pd.DataFrame(X, columns=list("abcde")).assign(query=qid, rel=y)
    frame.to_csv(tmp_path / "r.csv", index=False)
    built = cli("build-cache", tmp_path / "r.csv", "-o", tmp_path / "r.oocb", "--label",
                "rel", "--group", "query", "--block-rows", "100", "--quiet")
    assert built.returncode == 0, built.stderr
    info = cli("info", tmp_path / "r.oocb")
    assert "query groups 40 (column 'query')" in info.stdout
    trained = cli("train", tmp_path / "r.oocb", "-o", tmp_path / "m.json", "--objective",
                  "rank:ndcg", "--rounds", "5", "--max-depth", "3", "--quiet")
    assert trained.returncode == 0, trained.stderr
    on_cache = cli("evaluate", tmp_path / "m.json", tmp_path / "r.oocb", "--json")
    on_file = cli("evaluate", tmp_path / "m.json", tmp_path / "r.csv", "--json",
                  "--metric", "ndcg@32")  # the group column comes from the model
    assert on_cache.stdout == on_file.stdout and "ndcg@32" in on_file.stdout
    frame.rename(columns={"query": "q"}).to_csv(tmp_path / "s.csv", index=False)
    named = cli("evaluate", tmp_path / "m.json", tmp_path / "s.csv", "--json", "--group",
                "q")
    assert named.stdout == on_file.stdout
    frame.sample(frac=1.0, random_state=0).to_csv(tmp_path / "shuffled.csv", index=False)
    refused = cli("evaluate", tmp_path / "m.json", tmp_path / "shuffled.csv")
    assert refused.returncode != 0 and "contiguous" in refused.stderr


@pytest.mark.parametrize("name", ["rank:ndcg", "rank:pairwise", "rank:map"])
def test_rounds_equal_a_brute_force_numpy_booster(tmp_path, monkeypatch, name):
    """Three rounds of depth-2 trees against the reference booster of test_training.py
    fed with the twin's lambdas of each group, on a cache whose groups cross blocks."""
    import tests.learners.test_training as reference
    from tests.learners.test_training import (
        DEPTH,
        ETA,
        LAMBDA,
        all_codes,
        assert_rounds_match,
    )

    # lambdas are small: the reference's min_child_weight must allow splits of them
    monkeypatch.setattr(reference, "MCW", 0.01)

    X, y, qid, sizes = _ranking_data(n_groups=30, low=4, high=20)
    X = X[:, :3]
    if name == "rank:map":
        y = (y > 1).astype(float)
    cache = oocboost.build_cache(X, tmp_path / "c", label=y, group=qid, block_rows=16,
                                 quiet=True)
    params = {"objective": name, "eta": ETA, "max_depth": DEPTH, "reg_lambda": LAMBDA,
              "min_child_weight": 0.01, "base_score": 0.5, "verbosity": 0}
    model = oocboost.train(params, cache, 3, verbose_eval=False)
    codes = all_codes(cache)
    ptr = np.r_[0, np.cumsum(sizes)]

    def lambdas(margin):
        g, h = np.zeros(len(y)), np.zeros(len(y))
        for a, b in zip(ptr[:-1], ptr[1:]):
            g[a:b], h[a:b] = brute_force_lambdas(name, y[a:b], margin[a:b])
        return g, h

    assert_rounds_match(model, codes, cache.max_bin - 1, lambdas, np.full(len(y), 0.5), 3,
                        8, rtol=1e-4, atol=1e-7)
