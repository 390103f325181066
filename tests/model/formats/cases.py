"""The data, labels and models the export tests train on: five features with a tenth
missing, and per kind of model a label of that kind (the kind's name says which)."""
import numpy as np

import oocboost


def data(n=1500, seed=0, float32=False):
    """``(X, signal)``; ``float32``: values a float32 holds exactly (XGBoost rounds its
    input to float32 before it compares)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5))
    if float32:
        X = X.astype(np.float32).astype(np.float64)
    X[rng.random(X.shape) < 0.1] = np.nan
    signal = np.nan_to_num(X[:, 0]) + np.nan_to_num(X[:, 1]) ** 2
    return X, signal


#: Kinds whose label is two classes; "...multiclass" kinds have three.
BINARY = ("binary", "extra-trees", "adaboost", "tree-classifier")


def target(kind, signal):
    """The label of a model of ``kind``: classes, counts, positive values or numbers."""
    if kind in BINARY:
        return (signal > 0.5).astype(int)
    if kind.endswith("multiclass"):
        return np.digitize(signal, [0.0, 1.0])
    if kind == "poisson":
        return np.random.default_rng(1).poisson(np.exp(np.clip(signal, -2, 2) / 2))
    if kind in ("gamma", "tweedie"):
        return np.exp(np.clip(signal, -2, 2) / 2)
    return 3 * signal


def categorical_frame(n=1500, seed=3):
    """``(frame, y)``: three numeric features and ``city``, a categorical one of five
    categories with a tenth missing, each moving the label its own way."""
    import pandas as pd

    X, signal = data(n=n, seed=seed)
    rng = np.random.default_rng(seed)
    city = rng.choice(CITIES, size=n).astype(object)
    city[rng.random(n) < 0.1] = None
    frame = pd.DataFrame(X[:, :3], columns=["a", "b", "c"])
    frame["city"] = city
    bonus = {"oslo": 2.0, "lima": -1.0, "pune": 0.5, "kobe": 0.0, "nice": -2.0}
    return frame, signal + np.array([bonus.get(c, 1.0) for c in city])


CITIES = ["oslo", "lima", "pune", "kobe", "nice"]


def _gbm(objective, **kw):
    return lambda: oocboost.GradientBoostingRegressor(n_estimators=8, max_depth=4,
                                                      objective=objective, **kw)


#: (kind, estimator factory) of the models every export adapter is checked on (each
#: adapter leaves out what its format refuses, by kind).
CASES = [
    ("binary", lambda: oocboost.GradientBoostingClassifier(n_estimators=8, max_depth=4)),
    ("multiclass", lambda: oocboost.GradientBoostingClassifier(n_estimators=5, max_depth=3)),
    ("squarederror", _gbm("reg:squarederror")),
    ("absoluteerror", _gbm("reg:absoluteerror")),
    ("pseudohuber", _gbm("reg:pseudohubererror")),
    ("poisson", _gbm("count:poisson")),
    ("gamma", _gbm("reg:gamma")),
    ("tweedie", _gbm("reg:tweedie")),
    ("binary-logitraw", _gbm("binary:logitraw")),
    ("binary-hinge", _gbm("binary:hinge")),
    ("forest-regression", lambda: oocboost.RandomForestRegressor(n_estimators=4,
                                                                  max_depth=5)),
    ("forest-multiclass", lambda: oocboost.RandomForestClassifier(n_estimators=4,
                                                                   max_depth=5)),
    ("extra-trees", lambda: oocboost.ExtraTreesClassifier(n_estimators=4, max_depth=4)),
    ("tree-classifier", lambda: oocboost.DecisionTreeClassifier(max_depth=5)),
    ("tree-regressor", lambda: oocboost.DecisionTreeRegressor(max_depth=6)),
    ("adaboost", lambda: oocboost.AdaBoostClassifier(n_estimators=5)),
]


def label(kind, signal):
    """The label of a model of ``kind``, the ``binary-*`` objectives' included."""
    if kind.startswith("binary-"):
        return (signal > 0.5).astype(int)
    return target(kind, signal)




def cases_but(*kinds):
    """:data:`CASES` without ``kinds`` (what a format refuses), as pytest parameters."""
    import pytest

    return [pytest.param(k, make, id=k) for k, make in CASES if k not in kinds]


#: Makers of models with categorical splits (regressors on :func:`categorical_frame`).
CATEGORICAL_MAKERS = {
    "boosting": lambda: oocboost.GradientBoostingRegressor(n_estimators=10, max_depth=4),
    "forest": lambda: oocboost.RandomForestRegressor(n_estimators=4, max_depth=5),
}


def categorical_params():
    """:data:`CATEGORICAL_MAKERS` as pytest parameters."""
    import pytest

    return [pytest.param(make, id=kind) for kind, make in CATEGORICAL_MAKERS.items()]


def categorical_model(make):
    """``(frame, model)``: ``make()`` fitted on :func:`categorical_frame`, a model that
    splits on its categorical feature."""
    frame, y = categorical_frame()
    model = make().fit(frame, y).get_booster()
    assert any(t.is_categorical[t.left >= 0].any() for t in model.trees)
    return frame, model
