"""MARS: test R^2 on Friedman #1, the forward and backward passes against a brute-force
NumPy replay (least squares on explicit columns, every parent, feature and knot), the
logistic fit against scikit-learn's LogisticRegression on the same terms, block sizes,
model files and their checks."""
import json

import numpy as np
import pytest
from sklearn.datasets import make_friedman1
from sklearn.linear_model import LogisticRegression

import oocboost
from oocboost.errors import ModelError
from oocboost.model.mars import representatives


def test_friedman1_r2_above_0_9():
    X, y = make_friedman1(n_samples=5000, noise=1.0, random_state=0)
    Xt, yt = make_friedman1(n_samples=2000, noise=1.0, random_state=1)
    mars = oocboost.MARSRegressor(max_degree=2).fit(X, y)
    assert mars.score(Xt, yt) >= 0.9
    used = {f for term in mars.terms_ for f, *_ in term}
    assert used >= {0, 1, 2, 3, 4}            # the five features y depends on
    assert len(used & {5, 6, 7, 8, 9}) <= 1   # and hardly any of the noise ones


def _reference(Xr, y, edges, max_terms, max_degree, min_span, penalty, thresh):
    """Brute-force MARS on representative values ``Xr`` (n, p): returns the terms
    (lists of (feature, knot bin, sign)) the forward pass adds and those kept."""
    n, p = Xr.shape
    terms, cols = [[]], [np.ones(n)]
    rss0 = ((y - y.mean()) ** 2).sum()

    def rss(columns):
        A = np.column_stack(columns)
        beta, *_ = np.linalg.lstsq(A, y, rcond=None)
        return ((y - A @ beta) ** 2).sum()

    while len(terms) < max_terms:
        current = rss(cols)
        best = None
        for m, term in enumerate(terms):
            if len(term) >= max_degree:
                continue
            parent = cols[m]
            for v in range(p):
                if v in {h[0] for h in term}:
                    continue
                support = parent != 0
                for b, t in enumerate(edges[v]):
                    below = (support & (Xr[:, v] <= t)).sum()
                    if below < min_span or support.sum() - below < min_span:
                        continue
                    up = parent * np.maximum(Xr[:, v] - t, 0)
                    down = parent * np.maximum(t - Xr[:, v], 0)
                    # a pair dependent on the current columns adds its better hinge only
                    for new in ([up, down], [up], [down]):
                        if np.linalg.matrix_rank(np.column_stack(cols + new),
                                                 tol=1e-7) < len(cols) + len(new):
                            continue
                        gain = current - rss(cols + new)
                        if best is None or gain > best[0] * (1 + 1e-9):
                            best = (gain, m, v, b, new)
                        if len(new) == 2:
                            break
        if best is None or best[0] / rss0 < thresh:
            break
        _, m, v, b, new = best
        signs = [1, -1] if len(new) == 2 else [1 if new[0] is not None and np.array_equal(
            new[0], cols[m] * np.maximum(Xr[:, v] - edges[v][b], 0)) else -1]
        terms += [terms[m] + [(v, b, s)] for s in signs][:max_terms - len(terms)]
        cols += new[:max_terms - len(cols)]
    keep = list(range(len(terms)))

    def gcv(keep):
        c = len(keep) + penalty * (len(keep) - 1) / 2
        return rss([cols[k] for k in keep]) / n / (1 - c / n) ** 2

    best_keep = (gcv(keep), list(keep))
    while len(keep) > 1:
        trials = [rss([cols[k] for k in keep if k != d]) for d in keep[1:]]
        low = min(trials)
        keep.remove(keep[1 + next(i for i, r in enumerate(trials) if r <= low * (1 + 1e-9))])
        if gcv(keep) < best_keep[0] * (1 - 1e-9):
            best_keep = (gcv(keep), list(keep))
    return terms, [terms[k] for k in best_keep[1]]


@pytest.mark.parametrize("max_degree", [1, 2])
def test_terms_equal_a_brute_force_replay(tmp_path, max_degree):
    rng = np.random.default_rng(0)
    n = 400
    X = rng.uniform(0, 1, size=(n, 3))
    y = 3 * np.maximum(X[:, 0] - 0.4, 0) - 2 * np.maximum(0.6 - X[:, 1], 0) \
        + 4 * np.maximum(X[:, 0] - 0.4, 0) * np.maximum(X[:, 2] - 0.5, 0) \
        + 0.1 * rng.normal(size=n)
    cache = oocboost.build_cache(X, tmp_path / "c.oocb", label=y, max_bin=16, quiet=True)
    kw = dict(max_terms=9, max_degree=max_degree, min_span=5, penalty=3.0, thresh=1e-3)
    mars = oocboost.MARSRegressor(**kw).fit(cache)
    mapper = cache.bin_mapper
    rep = representatives(mapper, cache.max_bin)
    codes = np.concatenate([b.codes for b in cache.iter_blocks()], axis=1)
    Xr = np.column_stack([rep[f, codes[f]] for f in range(3)])
    edges = [np.asarray(e) for e in mapper.bin_edges]
    forward, kept = _reference(Xr, y.astype(np.float32).astype(np.float64), edges, **kw)
    assert mars.model_.training_log["n_forward_terms"] == len(forward)
    got = [sorted((f, b, s) for f, b, _, s in term) for term in mars.terms_]
    assert got == [sorted(t) for t in kept]
    # the kept coefficients are least squares on the kept columns
    A = np.column_stack([np.prod([np.maximum(s * (Xr[:, f] - edges[f][b]), 0)
                                  for f, b, s in t], axis=0) if t else np.ones(n)
                         for t in kept])
    beta, *_ = np.linalg.lstsq(A, y.astype(np.float32).astype(np.float64), rcond=None)
    np.testing.assert_allclose(mars.coef_[:, 0], beta, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("block_rows", [64, 5000])
def test_block_size_does_not_change_the_model(tmp_path, block_rows):
    X, y = make_friedman1(n_samples=3000, noise=1.0, random_state=2)
    whole = oocboost.MARSRegressor().fit(X, y)
    cache = oocboost.build_cache(X, tmp_path / "c.oocb", label=y, block_rows=block_rows,
                                 quiet=True)
    blocks = oocboost.MARSRegressor().fit(cache)
    assert blocks.terms_ == whole.terms_
    np.testing.assert_allclose(blocks.coef_, whole.coef_, rtol=1e-9)
    # from the cache's codes the prediction reads the bins' representative values
    # (a row's raw value and its bin's middle differ by up to half a bin: 0.25 of a
    # target spanning about 25)
    gap = np.abs(blocks.predict(cache) - blocks.predict(X))
    assert gap.max() < 0.25 and gap.mean() < 0.05


def test_logistic_fit_equals_scikit_learn_on_the_same_terms():
    X, y = make_friedman1(n_samples=3000, noise=1.0, random_state=3)
    labels = (y > np.median(y)).astype(int)
    clf = oocboost.MARSClassifier(C=0.5, tol=1e-9, max_iter=2000).fit(X, labels)
    rep = clf.model_.bin_representatives()
    codes = clf.model_.mapper().transform_numeric(X)
    B = np.empty((len(clf.terms_), len(X)))
    from oocboost.kernels.mars import basis_binned
    basis_binned(np.ascontiguousarray(codes), rep, *clf.model_.part("mars").flat(), B)
    ref = LogisticRegression(C=0.5, tol=1e-12, max_iter=10000).fit(B[1:].T, labels)
    np.testing.assert_allclose(clf.coef_[1:, 0], ref.coef_[0], rtol=2e-3, atol=2e-3)
    np.testing.assert_allclose(clf.coef_[0, 0], ref.intercept_[0], rtol=2e-3, atol=2e-3)
    assert clf.score(X, labels) > 0.85
    three = oocboost.MARSClassifier().fit(X, np.digitize(y, np.quantile(y, [0.33, 0.66])))
    proba = three.predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert three.model_.objective == "multi:softprob"


@pytest.mark.parametrize("mutation, pattern", [
    (lambda m: m["coef"].pop(), "one list of numbers per term"),
    (lambda m: m["terms"][1][0].__setitem__(3, 0), "sign"),
    (lambda m: m["terms"][1][0].__setitem__(0, 99), "not a numeric feature"),
    (lambda m: m["terms"].__setitem__(0, m["terms"][1]), "intercept"),
    (lambda m: m.__setitem__("extra", 1), "exactly 'terms' and 'coef'"),
    (lambda m: m["terms"][1][0].__setitem__(1, 999), "knot bin"),
])
def test_mars_part_of_a_model_file_is_checked(tmp_path, mutation, pattern):
    X, y = make_friedman1(n_samples=500, noise=1.0, random_state=4)
    mars = oocboost.MARSRegressor(max_terms=5).fit(X, y)
    doc = mars.model_.to_json_dict()
    mutation(doc["mars"])
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(ModelError, match=pattern):
        oocboost.load_model(path)
    good = tmp_path / "good.json"
    mars.save_model(good)
    np.testing.assert_allclose(oocboost.load_model(good).predict(X), mars.predict(X),
                               rtol=1e-12)


def test_command_line_trains_mars(tmp_path, capsys):
    from oocboost.cli import main

    X, y = make_friedman1(n_samples=1500, noise=1.0, random_state=5)
    cache = oocboost.build_cache(X, tmp_path / "c.oocb", label=y, quiet=True)
    out = tmp_path / "m.json"
    assert main(["train", str(cache.path), "--learner", "mars", "--param", "max_degree=2",
                 "-o", str(out)]) == 0
    assert "MARS terms" in capsys.readouterr().out
    model = oocboost.load_model(out)
    ours = oocboost.MARSRegressor(max_degree=2).fit(cache)
    assert model.part("mars").terms == ours.terms_
    assert main(["train", str(cache.path), "--learner", "mars", "--param", "C=2",
                 "-o", str(out), "--quiet"]) != 0
    assert "only for classification" in capsys.readouterr().err
