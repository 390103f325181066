"""``oocboost report``: one self-contained HTML page about a model and a validation
cache: summary, validation metrics, the training log (time per phase, passes, peak
RSS), learning curves, importances, partial dependence of the top features and a SHAP
summary. Images are embedded PNGs; the page loads nothing from anywhere."""
import base64
import html
import io
import os

from ..errors import ParameterError
from ..model.predict import evaluate, model_objective
from ..utils.files import atomic_output, write_text_atomic
from . import charts

#: Training-log entries shown, with their labels and units.
_LOG_ROWS = (("seconds", "total time", "s"), ("histogram_s", "histograms", "s"),
             ("partition_s", "partition", "s"), ("split_s", "split search", "s"),
             ("gradient_s", "gradients", "s"), ("io_wait_s", "waiting for I/O", "s"),
             ("data_passes", "data passes", ""), ("passes_per_round", "passes per round", ""),
             ("peak_rss_bytes", "peak RSS", "MiB"))


def _png(ax):
    """The Axes' figure as a base64 PNG, the figure closed."""
    import matplotlib.pyplot as plt

    buffer = io.BytesIO()
    fig = ax.figure
    fig.tight_layout()
    fig.savefig(buffer, format="png", dpi=90)
    plt.close(fig)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def _figure(title, ax):
    return (f'<figure><img alt="{html.escape(title)}" src="data:image/png;base64,'
            f'{_png(ax)}"><figcaption>{html.escape(title)}</figcaption></figure>')


def _table(rows):
    cells = "".join(f"<tr><th>{html.escape(str(k))}</th><td>{html.escape(str(v))}</td></tr>"
                    for k, v in rows)
    return f"<table>{cells}</table>"


def _log_rows(log):
    rows = []
    for key, label, unit in _LOG_ROWS:
        if key in log:
            value = log[key]
            if unit == "MiB":
                value = f"{value / 2**20:.0f} MiB"
            elif unit == "s":
                value = f"{value:.2f} s"
            elif isinstance(value, float):
                value = f"{value:.1f}"
            rows.append((label, value))
    return rows


def _sections(model, cache, top_features, max_rows):
    """(heading, html) of each part of the page that applies to this model."""
    objective = model_objective(model)
    yield "Model", _table([("learner", model.learner), ("objective", model.objective),
                           ("trees", model.n_trees), ("rounds", model.n_rounds),
                           ("features", model.n_features), ("validation rows", cache.n_rows)])
    metrics = [objective.default_metric] + (["auc"] if model.objective == "binary:logistic"
                                            else [])
    scores = evaluate(model, cache, metrics=metrics) if cache.has_label else {}
    if scores:
        yield "Validation", _table([(k, f"{v:.5f}") for k, v in scores.items()])
    if model.training_log:
        yield "Training log", _table(_log_rows(model.training_log))
    if model.evals_result:
        yield "Learning curves", "".join(
            _figure(f"{metric} by round", charts.plot_metric(model, metric))
            for metric in next(iter(model.evals_result.values())))
    gains = model.feature_importance("total_gain")
    if gains.sum() <= 0:
        return
    yield "Importance", _figure("total gain per feature", charts.plot_importance(
        model, importance_type="total_gain", max_num_features=20))
    top = [int(f) for f in gains.argsort()[::-1][:top_features] if gains[f] > 0]
    yield "Partial dependence", "".join(
        _figure(f"partial dependence on {model.feature_names[f]}",
                charts.plot_partial_dependence(model, cache, f, grid_resolution=30))
        for f in top)
    yield "SHAP values", _figure(
        f"SHAP values of the first {min(max_rows, cache.n_rows)} validation rows",
        charts.plot_contributions(model, cache, max_rows=max_rows))


_STYLE = """body{font-family:sans-serif;max-width:960px;margin:2em auto;color:#222}
table{border-collapse:collapse;margin:0.5em 0}th,td{border:1px solid #ccc;padding:3px 8px;
text-align:left}th{background:#f4f4f4}figure{display:inline-block;margin:0.5em}
img{max-width:100%}figcaption{font-size:0.85em;color:#555}"""


def write_report(model, cache, output, *, top_features=4, max_rows=2000, title=None):
    """Write the HTML report of ``model`` on the validation ``cache`` to ``output``
    (atomically: a temporary file renamed when complete).

    Parameters
    ----------
    model : Model or fitted estimator
    cache : Cache or cache path, binned with the model's edges
    top_features : int
        Partial dependence plots for this many features of largest total gain.
    max_rows : int
        Rows explained in the SHAP summary.

    Returns
    -------
    str
        The path written.

    Examples
    --------
    >>> write_report(oocboost.load_model("model.json"), "valid.oocb", "report.html")
    ...                                                                 # doctest: +SKIP
    """
    import matplotlib

    from ..cache.store import Cache

    model = getattr(model, "model_", model)
    if not isinstance(cache, Cache):
        cache = Cache(cache)
    if model.bin_mapper is not None and cache.manifest.get("bin_mapper") != model.bin_mapper:
        raise ParameterError(f"cache {cache.path} was binned with other edges than the "
                             f"model's training data; rebuild it with --reference")
    matplotlib.use("Agg")  # files only: no window, whatever the environment offers
    body = "".join(f"<h2>{html.escape(h)}</h2>{part}"
                   for h, part in _sections(model, cache, top_features, max_rows))
    title = title or f"oocboost report: {model.objective}, {model.n_trees} trees"
    page = (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}"
            f"</title><style>{_STYLE}</style></head><body><h1>{html.escape(title)}</h1>"
            f"{body}</body></html>")
    output = os.fspath(output)
    write_text_atomic(output, page)
    return output


def save_figure(ax, output, dpi=100):
    """Save an Axes' figure to ``output`` atomically (format from the extension)."""
    import matplotlib.pyplot as plt

    output = os.fspath(output)
    ext = os.path.splitext(output)[1]
    if not ext:
        raise ParameterError(f"-o {output}: give a file name with an extension (.png, "
                             f".svg, .pdf)")
    try:
        with atomic_output(output, suffix=ext) as tmp:
            ax.figure.tight_layout()
            ax.figure.savefig(tmp, dpi=dpi)
    finally:
        plt.close(ax.figure)
    return output
