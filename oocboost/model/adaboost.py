"""Predictions of an AdaBoost model, from the estimator or a model file: class
indices, probabilities, scikit-learn's decision function, margins after each round, and
AdaBoost.R2's weighted median."""
import numpy as np

from ..errors import ParameterError
from .aggregate import round_weights, sum_view, weighted_median

#: The regressor's algorithm name in a model file (``attributes["adaboost"]["algorithm"]``).
REGRESSOR_ALGORITHM = "R2"


def _info(model):
    info = (model.attributes or {}).get("adaboost")
    if model.learner != "adaboost" or not isinstance(info, dict):
        raise ParameterError("not an AdaBoost model (learner "
                             f"{model.learner!r}); use oocboost.model.predict.predict")
    return info


def margins_to_decision(info, margin):
    """scikit-learn's ``decision_function`` from the model's margins."""
    K = int(info["n_classes"])
    algorithm = info["algorithm"]
    if algorithm in ("gentle", "logitboost"):
        return margin[:, 1] if K == 2 else margin
    if K == 2:
        return margin[:, 1] - margin[:, 0]
    return margin * (K - 1) if algorithm in ("SAMME", "SAMME.R") else margin


def staged_margins(model, data):
    """Yield the model's margins after each round (as ``Model.predict_margin`` with
    ``iteration_range=(0, r)``), reading ``data`` once per round.

    Parameters
    ----------
    model : Model
    data : array-like, Cache, cache path or file path

    Yields
    ------
    ndarray (n_rows, n_outputs) float64
    """
    from .predict import predict

    view = sum_view(model)
    weights = round_weights(model)
    total = None
    norm = 0.0
    for r in range(model.n_rounds):
        part = predict(view, data, output_margin=True, iteration_range=(r, r + 1))
        total = part if total is None else total + part
        if model.aggregation == "mean":
            norm += weights[r]
            yield total / norm if norm != 0 else total.copy()
        else:
            yield total + model.base_margin


def tree_predictions(model, data):
    """(n_rows, n_trees) float64: each tree's prediction (R2's weak learners)."""
    from .predict import predict

    return np.ascontiguousarray(predict(sum_view(model, per_tree=True), data,
                                        output_margin=True), dtype=np.float64)


def predict_adaboost(model, data, *, output="predict"):
    """Predictions of an AdaBoost model (from the estimator or a model file).

    Parameters
    ----------
    model : Model
        ``learner == "adaboost"``.
    data : array-like, Cache, cache path or file path
    output : {"predict", "proba", "decision"}
        Classifiers: class indices (mapped to ``model.classes`` when stored), class
        probabilities, or scikit-learn's ``decision_function``. R2 regressors: "predict"
        only (the weighted median of the trees).

    Returns
    -------
    ndarray
    """
    from .predict import model_objective, predict

    info = _info(model)
    if info["algorithm"] == REGRESSOR_ALGORITHM:
        if output != "predict":
            raise ParameterError(f"an AdaBoost.R2 regressor has no {output!r} output")
        return weighted_median(tree_predictions(model, data), round_weights(model))
    margin = predict(model, data, output_margin=True)
    if output == "proba":
        return model_objective(model).transform_proba(margin)
    decision = margins_to_decision(info, margin)
    if output == "decision":
        return decision
    if output != "predict":
        raise ParameterError(f"output must be 'predict', 'proba' or 'decision', got "
                             f"{output!r}")
    index = (decision > 0).astype(np.int64) if decision.ndim == 1 else np.argmax(decision, 1)
    return np.asarray(model.classes)[index] if model.classes is not None else index
