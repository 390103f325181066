"""Linear models in tree leaves (LightGBM's ``linear_tree``; Shi, Li and Li 2019,
"Gradient Boosting with Piece-Wise Linear Regression Trees"): the sufficient statistics a
leaf's model is fitted from, and the margins the models add.

A leaf ``s`` of a round's tree has a few numeric features ``f_1 .. f_k`` (those its
branch splits on). A row ``i`` reaching it, with values ``x_i = (x_i1 .. x_ik, 1)`` (the
constant last) and the round's gradient ``g_i`` and hessian ``h_i``, adds::

    XtHX[s] += h_i x_i x_i^T        XtG[s] += g_i x_i

and the leaf's coefficients minimise the second-order loss
``sum_i g_i f(x_i) + h_i f(x_i)^2 / 2 + lambda/2 |w|^2`` (Eq. 3 of the paper):
``beta = -(XtHX + lambda I_k)^-1 XtG`` (the constant is not penalised). A row with a
missing value among its leaf's features takes no part in the fit, and is predicted by the
leaf's constant value instead of its model, as LightGBM does.

The leaves' features are given as *slots*: ``slot_of_node[n]`` is the slot of node ``n``
(-1: no model), and slot ``s``'s features are the columns
``slot_column[slot_offset[s]:slot_offset[s + 1]]`` of a ``values`` array (raw rows, or a
block's codes read as their bins' values).
"""
import numpy as np
from numba import njit

from .parallel import MIN_ROWS, RANGE_KERNEL, run_ranges


@njit(cache=True, error_model="numpy")
def linear_leaf_sums(node_of_row, values, slot_of_node, slot_offset, slot_column,
                     grad_hess, xthx, xtg, n_fit):
    """Accumulate each slot's ``XtHX`` (upper triangle) and ``XtG`` over the rows.

    Parameters
    ----------
    node_of_row : ndarray (n_rows,) int32          # IN, the leaf of each row
    values : ndarray (n_rows, n_columns) float64   # IN, NaN = missing
    slot_of_node : ndarray (n_nodes,) int32        # IN, -1: not fitted
    slot_offset : ndarray (n_slots + 1,) int64     # IN
    slot_column : ndarray (n_entries,) int32       # IN, columns of ``values``
    grad_hess : ndarray (n_rows, 2) float32        # IN, the round's gradient, hessian
    xthx : ndarray (n_slots, K + 1, K + 1) float64 # IN/OUT, ``[s, a, b]`` for a <= b;
                                                   # the constant at index k_s
    xtg : ndarray (n_slots, K + 1) float64         # IN/OUT
    n_fit : ndarray (n_slots,) int64               # IN/OUT, rows of positive hessian
                                                   # without a missing value
    """
    x = np.empty(xtg.shape[1])
    for i in range(node_of_row.shape[0]):
        s = slot_of_node[node_of_row[i]]
        if s < 0:
            continue
        lo = slot_offset[s]
        k = slot_offset[s + 1] - lo
        missing = False
        for j in range(k):
            v = values[i, slot_column[lo + j]]
            if np.isnan(v):
                missing = True
                break
            x[j] = v
        if missing:
            continue
        x[k] = 1.0
        g = np.float64(grad_hess[i, 0])
        h = np.float64(grad_hess[i, 1])
        for a in range(k + 1):
            xtg[s, a] += x[a] * g
            xh = x[a] * h
            for b in range(a, k + 1):
                xthx[s, a, b] += xh * x[b]
        if h > 0.0:
            n_fit[s] += 1


@njit(**RANGE_KERNEL)
def _add_linear_range(lo, hi, node_of_row, values, slot_of_node, slot_offset,
                      slot_column, slot_coef, slot_const, node_value, scale, out):
    for i in range(lo, hi):
        node = node_of_row[i]
        s = slot_of_node[node]
        if s < 0:
            continue
        y = slot_const[s]
        missing = False
        for j in range(slot_offset[s], slot_offset[s + 1]):
            v = values[i, slot_column[j]]
            if np.isnan(v):
                missing = True
                break
            y += slot_coef[j] * v
        if not missing:
            out[i] += scale * (y - node_value[node])


def add_linear_leaves(node_of_row, values, slot_of_node, slot_offset, slot_column,
                      slot_coef, slot_const, node_value, scale, out):
    """``out[i] += scale * (model(x_i) - node_value[leaf])`` for the rows whose leaf has
    a model and no missing value among its features: margins that already hold the
    leaves' constant values then hold the leaves' linear models.

    Parameters
    ----------
    node_of_row : ndarray (n_rows,) int32        # IN, the leaf of each row
    values : ndarray (n_rows, n_columns) float64 # IN, NaN = missing
    slot_of_node, slot_offset, slot_column       # IN, see the module docstring
    slot_coef : ndarray (n_entries,) float64     # IN, a coefficient per slot_column entry
    slot_const : ndarray (n_slots,) float64      # IN, each model's constant
    node_value : ndarray (n_nodes,) float64      # IN, the leaves' constant values
    scale : float                                # IN, the tree's weight
    out : ndarray (n_rows,) float64              # IN/OUT, a margin column (may be strided)
    """
    run_ranges(_add_linear_range, node_of_row.shape[0], node_of_row, values, slot_of_node,
               slot_offset, slot_column, slot_coef, slot_const, node_value, float(scale),
               out, min_tasks=MIN_ROWS)
