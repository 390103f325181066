"""Feature importance of any model or fitted estimator, by name: XGBoost's split
statistics (``weight``, ``gain``, ``cover``, ``total_gain``, ``total_cover``) from the
trees alone, or the mean absolute SHAP value over rows of data (``shap``), streamed batch
by batch over an array, a DataFrame, a file or a cache."""
import numpy as np

from ..errors import ParameterError

KINDS = ("weight", "gain", "cover", "total_gain", "total_cover", "shap")


def feature_importance(model, kind="gain", data=None):
    """Importance of each feature of ``model``.

    Parameters
    ----------
    model : Model or a fitted oocboost estimator
    kind : {"weight", "gain", "cover", "total_gain", "total_cover", "shap"}
        XGBoost's split statistics, or ``shap``: the mean |SHAP value| of the margin over
        the rows of ``data`` (summed over the outputs of a multi-output model).
    data : array, DataFrame, file path or cache, required for ``shap`` (a cache must
        be binned with the model's edges; it is streamed block by block)

    Returns
    -------
    dict
        Feature name -> importance, in the model's feature order.

    Examples
    --------
    >>> feature_importance(model, "shap", data="valid.parquet")          # doctest: +SKIP
    {'age': 0.41, 'income': 0.12, ...}
    """
    from ..model.predict import iter_margins

    model = getattr(model, "model_", model)
    if kind not in KINDS:
        raise ParameterError(f"kind must be one of {KINDS}, got {kind!r}")
    if kind != "shap":
        if data is not None:
            raise ParameterError(f"kind={kind!r} reads the trees only: pass data=None")
        values = model.feature_importance(kind)
    else:
        if data is None:
            raise ParameterError("kind='shap' averages over rows: pass data")
        total, n_rows = np.zeros(model.n_features), 0
        for phi, _, _ in iter_margins(model, data, pred_contribs=True):
            # (rows, outputs, features + 1): drop the bias, sum the outputs' magnitudes
            total += np.abs(phi[:, :, :-1]).sum(axis=(0, 1))
            n_rows += phi.shape[0]
        if n_rows == 0:
            raise ParameterError("data has no rows")
        values = total / n_rows
    return dict(zip(model.feature_names, (float(v) for v in values)))
