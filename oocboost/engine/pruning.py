"""Minimal cost-complexity pruning of finished trees (Breiman et al. 1984, ch. 3).

For a tree ``T`` with leaves ``L(T)`` the cost-complexity measure is::

    R_alpha(T) = sum_{l in L(T)} W_l / W_root * imp_l  +  alpha * |L(T)|

Weakest-link pruning collapses, one at a time, the internal node ``t`` whose branch
``T_t`` gives the smallest effective alpha::

    g(t) = (R(t) - R(T_t)) / (|L(T_t)| - 1),    R(t) = W_t / W_root * imp_t

which yields the nested sequence of subtrees that are optimal for increasing alpha
(scikit-learn's ``cost_complexity_pruning_path``; the pruned tree for ``ccp_alpha`` is the
last subtree whose effective alpha is at most ``ccp_alpha``). The kernel is
``kernels/cart_stats.cost_complexity_prune``, a step-for-step port of scikit-learn's
``_cost_complexity_prune`` (ties go to the lowest node id, as there).

Everything here works on the flat tree arrays (``docs/internals.md``) plus each node's
weighted number of samples and impurity; the data is never read again.
"""
import numpy as np

from ..errors import ParameterError
from ..kernels.cart_stats import cost_complexity_prune

#: Per-node arrays of a tree dict (``TreeGrower.tree_arrays``) that pruning subsets.
_NODE_FIELDS = ("left", "right", "feature", "threshold", "bin_threshold", "default_left",
                "is_categorical", "cat_bitset", "value", "gain", "cover", "n_samples")


def _check_alpha(ccp_alpha):
    try:
        a = float(ccp_alpha)
    except (TypeError, ValueError):
        raise ParameterError(f"ccp_alpha must be a non-negative number, got "
                             f"{ccp_alpha!r}") from None
    if not a >= 0.0:
        raise ParameterError(f"ccp_alpha must be a non-negative number, got {ccp_alpha!r}")
    return a


def _run(left, right, weighted_n, impurity, ccp_alpha, find_path):
    left = np.ascontiguousarray(left, dtype=np.int32)
    right = np.ascontiguousarray(right, dtype=np.int32)
    weighted_n = np.ascontiguousarray(weighted_n, dtype=np.float64)
    impurity = np.ascontiguousarray(impurity, dtype=np.float64)
    n = left.shape[0]
    leaves = np.zeros(n, np.uint8)
    alphas = np.empty(n + 1)
    impurities = np.empty(n + 1)
    count, in_subtree = cost_complexity_prune(left, right, weighted_n, impurity,
                                              float(ccp_alpha), bool(find_path), leaves,
                                              alphas, impurities)
    return leaves.astype(bool), in_subtree.astype(bool), alphas[:count], impurities[:count]


def cost_complexity_pruning_path(left, right, weighted_n, impurity):
    """Effective alphas and total leaf impurities of the nested optimal subtrees.

    Parameters
    ----------
    left, right : ndarray (n_nodes,) int32
        Children, -1 at leaves; root 0.
    weighted_n : ndarray (n_nodes,) float64
        Weighted number of training rows per node (``W_t``).
    impurity : ndarray (n_nodes,) float64
        Node impurity (gini, entropy or variance).

    Returns
    -------
    ccp_alphas : ndarray (n_subtrees,) float64
        Increasing; the first is 0 (the full tree).
    impurities : ndarray (n_subtrees,) float64
        ``sum_l W_l / W_root * imp_l`` over the leaves of each subtree.

    Examples
    --------
    A stump whose split removes all impurity:

    >>> a, imp = cost_complexity_pruning_path(np.array([1, -1, -1]), np.array([2, -1, -1]),
    ...                                       np.array([4.0, 2.0, 2.0]),
    ...                                       np.array([0.5, 0.0, 0.0]))
    >>> a.tolist(), imp.tolist()
    ([0.0, 0.5], [0.0, 0.5])
    """
    _, _, alphas, impurities = _run(left, right, weighted_n, impurity, 0.0, True)
    return alphas, impurities


def prune_tree(arrays, weighted_n, impurity, ccp_alpha, extra=None):
    """Prune a tree with ``ccp_alpha`` and renumber its nodes in depth-first preorder.

    Parameters
    ----------
    arrays : dict of ndarray
        Tree arrays (``TreeGrower.tree_arrays``); not modified.
    weighted_n, impurity : ndarray (n_nodes,) float64
    ccp_alpha : float
        >= 0; 0 keeps every node but still renumbers.
    extra : dict of ndarray (n_nodes, ...) or None
        More per-node arrays to carry along (e.g. impurity).

    Returns
    -------
    pruned : dict of ndarray
        The pruned tree's arrays (children ids greater than the parent's), with ``extra``.
    node_map : ndarray (n_nodes,) int64
        For each original node, the node of the pruned tree a row reaching it ends in
        (itself, or the collapsed ancestor that became a leaf).
    """
    ccp_alpha = _check_alpha(ccp_alpha)
    left = np.asarray(arrays["left"])
    right = np.asarray(arrays["right"])
    n = left.shape[0]
    if ccp_alpha > 0.0:
        leaves = _run(left, right, weighted_n, impurity, ccp_alpha, False)[0]
    else:
        leaves = left < 0
    # Depth-first preorder, left child first (scikit-learn's ``_build_pruned_tree``).
    order = []
    stack = [0]
    while stack:
        node = stack.pop()
        order.append(node)
        if not leaves[node]:
            stack.append(int(right[node]))
            stack.append(int(left[node]))
    order = np.asarray(order, dtype=np.int64)
    new_id = np.full(n, -1, dtype=np.int64)
    new_id[order] = np.arange(len(order))
    node_map = new_id.copy()
    parent = np.full(n, -1, dtype=np.int64)
    internal = np.flatnonzero(left >= 0)
    parent[left[internal]] = internal
    parent[right[internal]] = internal
    for node in np.flatnonzero(node_map < 0):  # ascending: parents are mapped first
        node_map[node] = node_map[parent[node]]
    pruned = {}
    now_leaf = leaves[order]
    for name in _NODE_FIELDS:
        if name in arrays:
            pruned[name] = np.array(np.asarray(arrays[name])[order])
    for name, value in (extra or {}).items():
        pruned[name] = np.array(np.asarray(value)[order])
    pruned["left"] = np.where(now_leaf, -1, new_id[left[order]]).astype(np.int32)
    pruned["right"] = np.where(now_leaf, -1, new_id[right[order]]).astype(np.int32)
    if "feature" in pruned:
        pruned["feature"] = np.where(now_leaf, -1, pruned["feature"]).astype(np.int32)
    for name in ("threshold", "gain"):
        if name in pruned:
            pruned[name] = np.where(now_leaf, 0.0, pruned[name])
    if "bin_threshold" in pruned:
        pruned["bin_threshold"] = np.where(now_leaf, 0, pruned["bin_threshold"]).astype(
            np.int32)
    for name in ("default_left", "is_categorical"):
        if name in pruned:
            pruned[name] = np.where(now_leaf, False, pruned[name])
    if "cat_bitset" in pruned and pruned["cat_bitset"].shape[1]:
        pruned["cat_bitset"][now_leaf] = 0
    return pruned, node_map
