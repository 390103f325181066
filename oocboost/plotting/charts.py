"""The charts: importances, learning curves, one tree, partial dependence and a
beeswarm summary of SHAP values. Each takes a :class:`~oocboost.model.model.Model` or a
fitted estimator, draws on ``ax`` (a new figure when None) and returns the Axes, as
``xgboost.plot_importance`` and ``lightgbm.plot_metric`` do.

matplotlib is an optional extra: ``pip install 'oocboost[plot]'``.
"""
import numpy as np

from ..errors import ParameterError
from ..inspection.dependence import partial_dependence
from ..inspection.importance import KINDS, feature_importance
from ..inspection.tree_text import split_rules
from .values import contributions_and_values


def _axes(ax, figsize=None):
    if ax is not None:
        return ax
    try:
        import matplotlib.pyplot as plt
    except ImportError:
        raise ImportError("oocboost.plotting needs matplotlib: pip install "
                          "'oocboost[plot]'") from None
    _, ax = plt.subplots(figsize=figsize)
    return ax


def _model(model):
    return getattr(model, "model_", model)


def plot_importance(model, *, ax=None, importance_type="weight", max_num_features=None,
                    data=None, height=0.2, title="Feature importance",
                    xlabel="Importance score", ylabel="Features", grid=True,
                    show_values=True, values_decimals=2, figsize=None, **bar_kwargs):
    """Horizontal bars of each used feature's importance, largest on top.

    Parameters
    ----------
    importance_type : {"weight", "gain", "cover", "total_gain", "total_cover", "shap"}
        XGBoost's default is ``weight`` (number of splits); ``shap`` is the mean |SHAP
        value| over ``data`` (an array, DataFrame, file or cache).
    max_num_features : int or None
        Show only the most important ones.
    show_values : bool
        Write each value at the end of its bar (``values_decimals`` places).

    Examples
    --------
    >>> ax = oocboost.plotting.plot_importance(model, importance_type="gain")  # doctest: +SKIP
    >>> ax.figure.savefig("importance.png")                                  # doctest: +SKIP
    """
    if importance_type not in KINDS:
        raise ParameterError(f"importance_type must be one of {KINDS}, got "
                             f"{importance_type!r}")
    scores = feature_importance(_model(model), importance_type, data)
    items = sorted(((v, k) for k, v in scores.items() if v > 0), reverse=True)
    if not items:
        raise ParameterError("the model has no split: no feature has an importance")
    if max_num_features is not None:
        items = items[:int(max_num_features)]
    values, names = zip(*reversed(items))
    ax = _axes(ax, figsize)
    ylocs = np.arange(len(values))
    ax.barh(ylocs, values, align="center", height=height, **bar_kwargs)
    if show_values:
        for y, v in zip(ylocs, values):
            ax.text(v + max(values) * 0.01, y, f"{v:.{values_decimals}f}"
                    if importance_type != "weight" else f"{int(v)}", va="center")
    ax.set_yticks(ylocs)
    ax.set_yticklabels(names)
    ax.set_xlim(0, max(values) * 1.15)
    ax.set_ylim(-1, len(values))
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(grid)
    return ax


def _evals_result(model):
    if isinstance(model, dict):
        return model
    result = getattr(model, "evals_result_", None)
    if result is None:
        result = getattr(_model(model), "evals_result", None)
    if not result:
        raise ParameterError("no evaluation log: train with evals=... (or eval_set=...) "
                             "to record learning curves")
    return result


def plot_metric(model, metric=None, *, dataset_names=None, ax=None,
                title="Metric during training", xlabel="Iterations", ylabel="@metric@",
                grid=True, figsize=None):
    """Learning curves from an evaluation log (LightGBM's ``plot_metric``).

    Parameters
    ----------
    model : dict ``{data: {metric: [values]}}``, Model, or fitted estimator
        ``Model.evals_result`` / the estimator's ``evals_result_``.
    metric : str or None
        Default: the log's first metric.
    dataset_names : list of str or None
        Default: every evaluation set.
    ylabel : str
        ``@metric@`` is replaced by the metric's name.
    """
    log = _evals_result(model)
    names = list(dataset_names or log)
    unknown = [n for n in names if n not in log]
    if unknown:
        raise ParameterError(f"no evaluation set {unknown}; the log has {list(log)}")
    metric = metric or next(iter(log[names[0]]))
    ax = _axes(ax, figsize)
    for name in names:
        if metric not in log[name]:
            raise ParameterError(f"evaluation set {name!r} has no metric {metric!r}; it "
                                 f"has {list(log[name])}")
        values = log[name][metric]
        ax.plot(np.arange(len(values)), values, label=name)
    ax.legend(loc="best")
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel.replace("@metric@", metric))
    ax.grid(grid)
    return ax


def _tree_layout(tree, max_depth):
    """(x, depth) of every drawn node: leaves (or cut nodes) left to right, a parent
    centred over its children."""
    x, depth = {}, {}
    next_x = [0.0]

    def place(node, d):
        depth[node] = d
        if tree.left[node] < 0 or (max_depth is not None and d >= max_depth):
            x[node] = next_x[0]
            next_x[0] += 1.0
            return
        place(int(tree.left[node]), d + 1)
        place(int(tree.right[node]), d + 1)
        x[node] = (x[int(tree.left[node])] + x[int(tree.right[node])]) / 2

    place(0, 0)  # a tree is at most a few hundred nodes: recursion is fine here
    return x, depth


def _leaf_text(model, tree, node, classes, decimals):
    v = tree.value[node]
    if model.objective == "multi:proba":
        k = int(np.argmax(v))
        label = classes[k] if classes is not None else k
        return f"class {label}\n(p={v[k]:.{decimals}f})"
    return f"leaf\n{v[0]:.{decimals}f}"


def plot_tree(model, tree_index=0, *, ax=None, max_depth=None, decimals=3,
              show_missing=True, fontsize=8, figsize=None):
    """Draw one tree: splits in raw units with feature names (categories by name),
    leaves with their values (classes for forests' trees); the branch missing values
    take is marked "missing". Needs matplotlib only (no graphviz).

    Parameters
    ----------
    tree_index : int
        Tree of the ensemble (boosting: round x outputs + output).
    max_depth : int or None
        Deeper nodes are drawn as "...".
    """
    model_ = _model(model)
    if not 0 <= int(tree_index) < model_.n_trees:
        raise ParameterError(f"tree_index {tree_index} is outside the model's "
                             f"{model_.n_trees} trees")
    tree = model_.trees[int(tree_index)]
    cats = None
    if model_.bin_mapper:
        from ..cache.binning import BinMapper

        mapper = BinMapper.from_dict(model_.bin_mapper)
        # names by code (a wide feature's codes skip the missing code)
        cats = [mapper.category_names(f) if mapper.is_categorical[f] else None
                for f in range(mapper.n_features)]
    classes = getattr(model, "classes_", None)
    if classes is None and model_.classes is not None:
        classes = np.asarray(model_.classes)
    x, depth = _tree_layout(tree, max_depth)
    ax = _axes(ax, figsize or (max(6, len(x) * 0.5), max(4, (max(depth.values()) + 1)
                                                          * 1.2)))
    box = dict(boxstyle="round,pad=0.3", fc="white", ec="0.3")
    for node, d in depth.items():
        is_leaf = tree.left[node] < 0
        if is_leaf:
            text = _leaf_text(model_, tree, node, classes, decimals)
        elif max_depth is not None and d >= max_depth:
            text = "..."
        else:
            text = split_rules(tree, node, model_.feature_names, cats, decimals)[0]
            for child, yes in ((int(tree.left[node]), True), (int(tree.right[node]), False)):
                ax.plot([x[node], x[child]], [-d, -(d + 1)], color="0.5", lw=1, zorder=1)
                label = "yes" if yes else "no"
                if show_missing and bool(tree.default_left[node]) == yes:
                    label += ", missing"
                ax.text((x[node] + x[child]) / 2, -(d + 0.5), label, ha="center",
                        fontsize=fontsize - 1, color="0.3")
        ax.text(x[node], -d, text, ha="center", va="center", fontsize=fontsize,
                bbox=dict(box, fc="#e8f0fe" if is_leaf else "white"), zorder=2)
    ax.set_xlim(min(x.values()) - 0.7, max(x.values()) + 0.7)
    ax.set_ylim(-(max(depth.values()) + 0.6), 0.6)
    ax.set_axis_off()
    ax.set_title(f"tree {tree_index}")
    return ax


def plot_partial_dependence(model, data, features, *, ax=None, grid_resolution=50,
                            kind="average", target=0, percentiles=(0.05, 0.95),
                            n_ice_lines=50, figsize=None):
    """Partial dependence on one feature (a line, with ``kind="both"`` / ``"individual"``
    thin ICE lines for ``n_ice_lines`` rows) or two (filled contours), computed by
    :func:`oocboost.inspection.partial_dependence`, streamed over a cache when ``data``
    is one.

    Parameters
    ----------
    features : int or str, or a pair of them
    target : int
        The output to draw for K-class models (class index).
    """
    result = partial_dependence(model, data, features, grid_resolution=grid_resolution,
                                kind="both" if kind != "average" else "average",
                                percentiles=percentiles)
    model_ = _model(model)
    names = [model_.feature_names[f] if not isinstance(f, str) else f
             for f in ([features] if isinstance(features, (int, str, np.integer))
                       else features)]
    ax = _axes(ax, figsize)
    grids = result.grid_values
    if len(grids) == 1:
        if kind != "average":
            ice = result.individual[target]
            rows = np.linspace(0, len(ice) - 1, min(n_ice_lines, len(ice))).astype(int)
            ax.plot(grids[0], ice[rows].T, color="0.7", lw=0.5)
        if kind != "individual":
            ax.plot(grids[0], result.average[target], color="C0", lw=2, label="average")
        ax.set_xlabel(names[0])
        ax.set_ylabel("partial dependence")
    else:
        if kind != "average":
            raise ParameterError("two-feature partial dependence is drawn as an average "
                                 "only (kind='average')")
        mesh = ax.contourf(grids[0], grids[1], result.average[target].T, levels=12,
                           cmap="viridis")
        ax.figure.colorbar(mesh, ax=ax, label="partial dependence")
        ax.set_xlabel(names[0])
        ax.set_ylabel(names[1])
    return ax


def _beeswarm_offsets(values, n_bins=100, step=0.04, width=0.4):
    """Vertical offsets that spread points of similar value: within each of ``n_bins``
    value bins, points alternate above and below the line, further out the more there
    are (shap's summary plot does this too)."""
    n = len(values)
    if n == 0:
        return np.empty(0)
    span = np.ptp(values) or 1.0
    bins = np.minimum(((values - values.min()) / span * n_bins).astype(int), n_bins - 1)
    order = np.argsort(bins, kind="stable")
    sorted_bins = bins[order]
    starts = np.searchsorted(sorted_bins, sorted_bins, side="left")
    rank = np.arange(n) - starts
    step = min(step, 2 * width / max(int(rank.max()), 1))  # the densest bin spans the row
    offsets = np.empty(n)
    offsets[order] = np.ceil(rank / 2) * np.where(rank % 2 == 0, 1.0, -1.0) * step
    return np.clip(offsets, -width, width)


def plot_contributions(model, data, *, ax=None, max_display=20, max_rows=5000, output=0,
                       figsize=None, cmap="coolwarm", point_size=6):
    """A beeswarm summary of SHAP values: one row per feature (the largest mean |SHAP|
    on top), one point per data row at its SHAP value, coloured by the feature's value
    (low blue, high red, by rank; missing grey).

    Parameters
    ----------
    data : array, DataFrame, file path or cache (binned with the model's edges)
        Its first ``max_rows`` rows are explained (a cache's feature values are its bin
        codes, which rank rows the same way).
    output : int
        The output (class) to show for multi-output models.
    """
    model_ = _model(model)
    phi, values = contributions_and_values(model_, data, max_rows)
    phi = phi[:, output, :-1]
    order = np.argsort(-np.abs(phi).mean(axis=0), kind="stable")[:max_display][::-1]
    ax = _axes(ax, figsize or (7, 0.4 * len(order) + 1.5))
    import matplotlib as mpl

    colormap = mpl.colormaps[cmap]
    for y, f in enumerate(order):
        v = values[:, f]
        present = ~np.isnan(v)
        color_value = np.full(len(v), 0.5)
        if present.any():
            ranks = np.argsort(np.argsort(v[present], kind="stable"), kind="stable")
            color_value[present] = ranks / max(present.sum() - 1, 1)
        colors = colormap(color_value)
        colors[~present] = (0.6, 0.6, 0.6, 1.0)
        ax.scatter(phi[:, f], y + _beeswarm_offsets(phi[:, f]), c=colors, s=point_size,
                   linewidths=0, rasterized=True)
    ax.axvline(0, color="0.5", lw=0.8)
    ax.set_yticks(np.arange(len(order)))
    ax.set_yticklabels([model_.feature_names[f] for f in order])
    ax.set_xlabel("SHAP value (impact on the margin)")
    scale = mpl.cm.ScalarMappable(cmap=colormap)
    bar = ax.figure.colorbar(scale, ax=ax, ticks=[0, 1], aspect=40)
    bar.set_ticklabels(["low", "high"])
    bar.set_label("feature value")
    return ax
