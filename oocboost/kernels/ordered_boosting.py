"""Ordered boosting's per-row leaf values (CatBoost's ``boosting_type="Ordered"``).

A row's *ordered* margin is the prediction of a model that never saw the row: each tree
adds to it the Newton value of the rows of the row's leaf that come *before* it in the
cache's order, so the next round's gradient of the row is not biased by the row's own
label (Prokhorenkova et al. 2018, "prediction shift")::

    ordered_value(i) = -G_before(leaf(i)) / (H_before(leaf(i)) + lambda)

Rows are taken in order, block after block, and each joins its leaf's running sums once
it has its value.
"""
from numba import njit


@njit(cache=True, nogil=True)
def add_ordered_values(node_of_row, grad, hess, run_grad, run_hess, reg_lambda, scale,
                       out):
    """Add each row's ordered leaf value (module docstring), times ``scale``, to ``out``,
    then its gradient and hessian to its leaf's running sums.

    Parameters
    ----------
    node_of_row : ndarray (n_rows,) int, the leaf of each row                   # IN
    grad, hess : ndarray (n_rows,) float32, the round's gradient statistics     # IN
    run_grad, run_hess : ndarray (n_nodes,) float64, sums of the earlier rows   # IN/OUT
    reg_lambda : float, L2 of the leaf values
    scale : float, the learning rate
    out : ndarray (n_rows,) float64, the rows' ordered margins                  # IN/OUT
    """
    for i in range(node_of_row.shape[0]):
        leaf = node_of_row[i]
        denominator = run_hess[leaf] + reg_lambda
        if denominator > 0.0:
            out[i] -= scale * run_grad[leaf] / denominator
        run_grad[leaf] += grad[i]
        run_hess[leaf] += hess[i]
