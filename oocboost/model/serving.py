"""A few rows of numbers predicted as online serving calls ``Model.predict``: one row
at a time, thousands of times a second.

The general path (``predict.py``) decides per call what the data is, which trees, which
output and how many threads, and goes through five layers to the chunk kernel, whose
lockstep walk of a chunk of rows takes 31 arguments: 36 us a call for one row of 100
trees of depth 6 (the kernel 15.6 us of it). :func:`serving_predict` keeps, per model,
what those layers decide the same way every call (the flattened trees' arrays, the link
function) and walks the row alone (``kernels/predict_rows.py``: 19 arguments, the node
in a register): 17.6 us. It takes what the general path predicts bit for bit the same:
a C-contiguous float64 or float32 matrix of the model's width and fewer than
``PERFECT_MIN_ROWS`` rows (the general path walks those rows alone too, in lockstep), a
model of plain trees summed (no linear leaves, oblique splits, surrogates, averaged or
median trees) without categorical features, margins or predictions, any tree range;
anything else returns None and takes the general path.
"""
import numpy as np

from ..kernels import predict as _kp
from ..kernels.codes import read_only
from ..kernels.predict_rows import predict_rows
from .aggregate import is_weighted_median
from .objective_of import model_objective

#: dtypes read as they are
_DTYPES = (np.dtype(np.float64), np.dtype(np.float32))


class _Plan:
    """What a model's one-row call needs, made once per flattened trees."""

    __slots__ = ("flat", "args", "n_trees", "n_features", "n_outputs", "objective",
                 "params", "transform", "mean_divisor")

    def __init__(self, model, flat, transform):
        self.flat = flat
        self.args = (flat.node_offset, flat.tree_depth, flat.tree_group, flat.tree_n_cols,
                     flat.value_offset, flat.tree_has_cat, flat.left, flat.feature,
                     flat.threshold, flat.default_left, flat.is_categorical,
                     flat.cat_offset, flat.cat_n_bits, flat.cat_bitset, flat.value)
        self.n_trees = len(model.trees)
        self.n_features = int(model.n_features)
        self.n_outputs = int(model.n_outputs)
        self.objective = model.objective
        self.params = dict(model.objective_params or {})
        self.transform = transform
        # a mean model's division over all its trees, made once (np.add.at is slow)
        self.mean_divisor = (model._mean_divisor(0, self.n_trees)
                             if model.aggregation == "mean" else None)


def _eligible(model):
    return (model.aggregation in ("sum", "mean") and not model.parts
            and not is_weighted_median(model)
            and not set(model.feature_types) & {"categorical", "ordered_ts"})


def _plan(model):
    """The model's plan (made again when its trees, weights or objective changed), or
    None when the model is not one :func:`serving_predict` takes."""
    if not _eligible(model):
        return None
    flat = model._flat_trees()  # rebuilt, and validated, when the trees changed
    plan = getattr(model, "_serving_plan", None)
    if plan is not None and plan.flat is flat and plan.objective == model.objective \
            and plan.params == (model.objective_params or {}):
        return plan
    if not _kp.is_plain(flat):
        return None
    plan = _Plan(model, flat, model_objective(model).transform)
    model._serving_plan = plan
    return plan


def serving_predict(model, X, output_margin=False, iteration_range=None):
    """``predict(model, X, output_margin=, iteration_range=)`` (``predict.py``) for a
    few rows of numbers (module docstring), or None when ``X`` or the model is not one
    it takes."""
    if X.ndim != 2 or X.shape[0] >= _kp.PERFECT_MIN_ROWS or X.dtype not in _DTYPES \
            or not X.flags.c_contiguous:
        return None
    plan = _plan(model)
    if plan is None or X.shape[1] != plan.n_features:
        return None
    t0, t1 = (0, plan.n_trees) if iteration_range is None else \
        model._tree_range(iteration_range)
    n_rows = X.shape[0]
    out = np.empty((n_rows, plan.n_outputs))
    mean = model.aggregation == "mean"
    # the general path's margins (Model._start_margin, _finish_margin): a sum starts at
    # the base margin; a mean (forests) sums from zero, divides by the trees' weight and
    # adds the base margin after
    out[:] = 0.0 if mean else model.base_margin
    if n_rows:
        predict_rows(read_only(X), t0, t1, *plan.args, out)
    if mean:
        out = model._finish_margin(out, t0, t1, divisor=plan.mean_divisor
                                   if (t0, t1) == (0, plan.n_trees) else None)
    return out if output_margin else plan.transform(out)
