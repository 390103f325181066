import numpy as np
import pyarrow as pa
import pytest

import oocboost

matplotlib = pytest.importorskip("matplotlib")  # the test extra has it; 'plot' extra too
matplotlib.use("Agg")


@pytest.fixture(scope="package")
def trained(tmp_path_factory):
    """A small boosted model with a categorical feature and an evaluation log, its
    training and validation caches, and the validation rows as a table."""
    folder = tmp_path_factory.mktemp("plots")
    rng = np.random.default_rng(0)
    n = 3000
    X = rng.normal(size=(n, 4))
    X[rng.random(X.shape) < 0.03] = np.nan
    city = rng.choice(["oslo", "rome", "lima"], size=n)
    y = ((np.nan_to_num(X[:, 0]) + np.nan_to_num(X[:, 1]) ** 2 + (city == "rome")
          + rng.normal(size=n)) > 1).astype(float)
    table = pa.table({"a": X[:, 0], "b": X[:, 1], "c": X[:, 2], "d": X[:, 3],
                      "city": city, "y": y})
    train = oocboost.build_cache(table.slice(0, 2000), folder / "train.oocb", label="y",
                                 quiet=True)
    valid = oocboost.build_cache(table.slice(2000), folder / "valid.oocb", label="y",
                                 quiet=True, reference=train)
    model = oocboost.train({"objective": "binary:logistic", "max_depth": 3,
                            "eval_metric": ["logloss", "auc"]}, train, 12,
                           evals=[(train, "train"), (valid, "valid")], verbose_eval=False)
    path = folder / "model.json"
    model.save_model(path)
    return {"model": model, "train": train, "valid": valid, "path": path,
            "table": table.slice(2000).drop(["y"]), "folder": folder}


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    import matplotlib.pyplot as plt

    plt.close("all")
