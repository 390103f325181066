"""Draw the pictures of docs/guide/inspection.md from the synthetic HIGGS-like data:

    python docs/guide/make_figures.py          # writes docs/guide/images/*.png (~1 min)
"""
import os
import tempfile

import matplotlib

matplotlib.use("Agg")

import oocboost  # noqa: E402
from oocboost import plotting  # noqa: E402
from oocboost.datasets import generate  # noqa: E402
from oocboost.plotting.report import save_figure  # noqa: E402

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "images")


def main():
    os.makedirs(HERE, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        generate(os.path.join(tmp, "train.csv"), 100_000, n_categorical=1)
        generate(os.path.join(tmp, "valid.csv"), 20_000, n_categorical=1,
                 row_start=100_000)
        train = oocboost.build_cache(os.path.join(tmp, "train.csv"),
                                     os.path.join(tmp, "train.oocb"), label="label",
                                     quiet=True)
        valid = oocboost.build_cache(os.path.join(tmp, "valid.csv"),
                                     os.path.join(tmp, "valid.oocb"), label="label",
                                     reference=train, quiet=True)
        model = oocboost.train({"objective": "binary:logistic", "eta": 0.1, "max_depth": 5,
                                "eval_metric": ["logloss", "auc"], "verbosity": 0},
                               train, 150, evals=[(train, "train"), (valid, "valid")],
                               verbose_eval=False)
        top = [int(f) for f in model.feature_importance("total_gain").argsort()[::-1][:2]]
        names = [model.feature_names[f] for f in top]
        figures = {
            "importance.png": plotting.plot_importance(model, importance_type="total_gain",
                                                       max_num_features=12),
            "metric.png": plotting.plot_metric(model, "auc"),
            "tree.png": plotting.plot_tree(model, 0, max_depth=3),
            "pdp.png": plotting.plot_partial_dependence(model, valid, names[0],
                                                        kind="both"),
            "pdp2.png": plotting.plot_partial_dependence(model, valid, names,
                                                         grid_resolution=20),
            "contributions.png": plotting.plot_contributions(model, valid, max_rows=3000,
                                                             max_display=12),
        }
        for name, ax in figures.items():
            save_figure(ax, os.path.join(HERE, name), dpi=80)
            print("wrote", name)


if __name__ == "__main__":
    main()
