"""``Model.refit``: LightGBM's ``Booster.refit`` (leaf values refitted to new rows, the
trees kept), checked against LightGBM's own refit of the same model."""
import numpy as np
import pytest

import oocboost
from oocboost.utils.rss import current_rss


def _data(seed, n, shift=0.0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5)) + shift
    score = X[:, 0] + X[:, 1] ** 2 + 0.5 * rng.normal(size=n)
    return X, score


@pytest.fixture(scope="module")
def caches(tmp_path_factory):
    folder = tmp_path_factory.mktemp("refit")
    X, s = _data(0, 4000)
    Xn, sn = _data(1, 3000, shift=0.3)
    out = {"X": X, "Xn": Xn, "sn": sn}
    for name, label, new_label in (("binary", (s > 1).astype(float), (sn > 1.2) * 1.0),
                                   ("regression", s, sn + 0.5),
                                   ("multi", np.digitize(s, [0, 1.5]) * 1.0,
                                    np.digitize(sn, [0.2, 1.7]) * 1.0)):
        train = oocboost.build_cache(X, folder / f"{name}.oocb", label=label, quiet=True)
        new = oocboost.build_cache(Xn, folder / f"{name}_new.oocb", label=new_label,
                                   quiet=True, reference=train)
        out[name] = (train, new, new_label)
    return out


@pytest.mark.parametrize("name,objective,lgb_objective,extra", [
    ("binary", "binary:logistic", "binary", {"base_score": 0.5}),
    ("regression", "reg:squarederror", "regression", {"base_score": 0.0}),
])
def test_equals_lightgbms_refit(tmp_path, caches, name, objective, lgb_objective, extra):
    lgb = pytest.importorskip("lightgbm")
    train, new, new_label = caches[name]
    model = oocboost.train({"objective": objective, "max_depth": 3, "eta": 0.3,
                            "reg_lambda": 2.0, **extra}, train, 8)
    ours = model.refit(new, decay_rate=0.7, learning_rate=1.0)
    # our LightGBM export writes leaf values with the shrinkage applied (shrinkage=1)
    model.export(tmp_path / "m.txt", format="lightgbm")
    booster = lgb.Booster(model_file=str(tmp_path / "m.txt"))
    # LightGBM's refit takes the objective and L2 from the booster's params
    booster.params.update({"objective": lgb_objective, "lambda_l2": 2.0, "verbose": -1})
    theirs = booster.refit(caches["Xn"], new_label, decay_rate=0.7)
    np.testing.assert_allclose(ours.predict(caches["Xn"], output_margin=True),
                               theirs.predict(caches["Xn"], raw_score=True), atol=1e-9)


def test_multiclass_equals_a_numpy_refit_with_xgboosts_hessian(caches):
    """LightGBM's softmax hessian is K/(K-1) p(1-p), XGBoost's (ours) 2 p(1-p): the
    refit follows the objective the model was trained with."""
    train, new, new_label = caches["multi"]
    model = oocboost.train({"objective": "multi:softprob", "num_class": 3, "max_depth": 3,
                            "eta": 0.3, "reg_lambda": 2.0}, train, 6)
    ours = model.refit(new, decay_rate=0.6)
    leaves = model.predict(caches["Xn"], pred_leaf=True)
    margin = np.tile(model.base_margin, (len(new_label), 1))
    onehot = np.eye(3)[new_label.astype(int)]
    for r in range(6):
        e = np.exp(margin - margin.max(axis=1, keepdims=True))
        prob = e / e.sum(axis=1, keepdims=True)
        g = (prob - onehot).astype(np.float32)
        h = np.maximum(2 * prob * (1 - prob), 1e-16).astype(np.float32)
        for k in range(3):
            t = 3 * r + k
            tree, leaf = model.trees[t], leaves[:, t]
            G = np.bincount(leaf, weights=g[:, k], minlength=tree.n_nodes)
            H = np.bincount(leaf, weights=h[:, k], minlength=tree.n_nodes)
            fresh = np.where(H > 0, -G / (H + 2.0), 0.0)
            values = 0.6 * tree.value[:, 0] + 0.4 * 0.3 * fresh
            np.testing.assert_allclose(ours.trees[t].value[tree.left < 0, 0],
                                       values[tree.left < 0], rtol=1e-9, atol=1e-12)
            margin[:, k] += values[leaf]


def test_one_pass_and_a_pass_a_round_agree_and_the_limits(caches):
    train, new, _ = caches["binary"]
    model = oocboost.train({"objective": "binary:logistic", "max_depth": 4}, train, 12)
    once = model.refit(new)
    per_round = new.n_rows * (8 + 4 + 16)
    rounds = model.refit(new, memory_limit=current_rss() + 4 * per_round)
    np.testing.assert_array_equal(once.predict(caches["Xn"]), rounds.predict(caches["Xn"]))
    assert once.attributes["refit"] == {"decay_rate": 0.9, "rows": 3000}
    with pytest.raises(oocboost.MemoryLimitError, match="refit of 3,000 rows"):
        model.refit(new, memory_limit=current_rss() + 1000)


def test_decay_one_keeps_the_model_and_defaults_come_from_it(caches):
    train, new, _ = caches["regression"]
    model = oocboost.train({"objective": "reg:squarederror", "eta": 0.2}, train, 5)
    same = model.refit(new, decay_rate=1.0)
    np.testing.assert_array_equal(same.predict(caches["Xn"]), model.predict(caches["Xn"]))
    explicit = model.refit(new, learning_rate=0.2, reg_lambda=1.0)
    np.testing.assert_array_equal(model.refit(new).predict(caches["Xn"]),
                                  explicit.predict(caches["Xn"]))
    fresh = model.refit(new, decay_rate=0.0)
    err = lambda m: np.mean((m.predict(caches["Xn"]) - caches["sn"] - 0.5) ** 2)  # noqa: E731
    assert err(fresh) < err(model)


def test_refusals(tmp_path, caches):
    train, new, _ = caches["binary"]
    model = oocboost.train({"objective": "binary:logistic"}, train, 2)
    forest = oocboost.RandomForestClassifier(n_estimators=2).fit(train).model_
    with pytest.raises(oocboost.ParameterError, match="boosted model"):
        forest.refit(new)
    with pytest.raises(oocboost.ParameterError, match="decay_rate"):
        model.refit(new, decay_rate=1.5)
    other = oocboost.build_cache(caches["Xn"], tmp_path / "o", label=caches["sn"] > 1,
                                 quiet=True)
    with pytest.raises(oocboost.ParameterError, match="other edges"):
        model.refit(other)
    unlabelled = oocboost.build_cache(caches["Xn"], tmp_path / "u", quiet=True,
                                      reference=train)
    with pytest.raises(oocboost.ParameterError, match="needs labels"):
        model.refit(unlabelled)
