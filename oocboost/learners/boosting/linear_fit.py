"""LightGBM's ``linear_tree``: after a round's trees are grown, each leaf gets a linear
model over the numeric features its branch splits on, fitted to the round's gradients
and hessians (``kernels/linear_leaves.py`` has the formula; ``linear_lambda`` is its
ridge penalty).

Out of core this is one extra pass per round, as the leaf refresh of ``leaf_refresh.py``:
every block's rows are moved to their leaves (on a copy of the node positions) and add
to their leaf's ``X^T H X`` and ``X^T g``: at most ``(k + 1)^2 + k + 2`` numbers a leaf
for a branch of ``k`` features, whatever the rows. The features are read from the cache
as their bins' middles (LightGBM reads its raw values, which it keeps in memory for
this); raw rows are predicted with their own values. The next round's first pass adds
the models to the margins with the trees' values (:meth:`RoundLinearModels.add_to_margins`).

As in LightGBM: a model's first round has constant leaves; a leaf with fewer rows
without a missing value than its model has coefficients keeps its constant value;
categorical features are split on but not used in the models; a singular system (a
feature constant within its leaf, two features in proportion) is solved as LightGBM's
Eigen ``FullPivLU`` solves it: the unknowns beyond its rank are 0 and their features
drop out of the leaf's model (:func:`full_pivot_solve`).
"""
import numpy as np

from ...errors import ParameterError
from ...kernels.linear_leaves import add_linear_leaves, linear_leaf_sums
from ...model.linear_leaves import LinearLeaves, LinearLeavesPart, leaf_feature_values

#: LightGBM's ``kZeroThreshold``: smaller coefficients are dropped.
ZERO_THRESHOLD = 1e-35


def check_linear_params(p):
    """ParameterError for what ``linear_tree`` does not combine with (LightGBM refuses
    ``regression_l1``; distributed training refuses it in ``training.py``)."""
    if not p["linear_tree"]:
        return
    objective_name = p["objective"] if isinstance(p["objective"], str) else ""
    refused = [(p["booster"] == "dart", "booster='dart'"),
               (p["grow_policy"] == "symmetric", "grow_policy='symmetric'"),
               (objective_name in ("reg:absoluteerror", "reg:quantileerror"),
                f"objective {objective_name!r} (its leaves are reset to quantiles; LightGBM "
                f"refuses regression_l1 with linear trees too)")]
    named = [what for on, what in refused if on]
    if named:
        raise ParameterError(f"linear_tree=True is not offered with {', '.join(named)}")


def linear_scratch_bytes(p, n_numeric, n_outputs, block_rows):
    """Bytes a block of the linear-leaf pass holds (0 without ``linear_tree``): the
    features the round's trees split on, as float64 values, and a copy of the rows'
    node positions (int32 per output)."""
    if not p["linear_tree"]:
        return 0
    internal = (p["max_leaves"] - 1 if p["max_leaves"]
                else (1 << min(int(p["max_depth"]), 20)) - 1)
    used = min(int(n_numeric), internal * n_outputs)
    return int(block_rows) * (8 * used + 8 * n_outputs)


def full_pivot_solve(a, b):
    """A solution of ``a x = b`` (n x n) by Gaussian elimination with full pivoting,
    as Eigen's ``FullPivLU::solve``: the pivots are the largest remaining entries, the
    rank is the count of pivots above ``n * eps`` times the largest, and the unknowns of
    the columns beyond it are 0. (A least-squares solution would spread a constant
    feature's share over it and the constant, and a row missing that feature would then
    lose its leaf's model.)

    >>> full_pivot_solve(np.array([[2.0, 0.0], [0.0, 0.0]]), np.array([4.0, 0.0])).tolist()
    [2.0, 0.0]
    """
    lu = np.array(a, np.float64)
    n = lu.shape[0]
    rows, cols = np.arange(n), np.arange(n)
    rhs = np.array(b, np.float64)
    max_pivot = 0.0
    for k in range(n):
        corner = np.abs(lu[k:, k:])
        i, j = np.unravel_index(int(np.argmax(corner)), corner.shape)
        pivot = corner[i, j]
        if k == 0:
            max_pivot = pivot
        if pivot == 0.0:
            break
        i, j = i + k, j + k
        lu[[k, i]], rhs[[k, i]], rows[[k, i]] = lu[[i, k]], rhs[[i, k]], rows[[i, k]]
        lu[:, [k, j]], cols[[k, j]] = lu[:, [j, k]], cols[[j, k]]
        factor = lu[k + 1:, k] / lu[k, k]
        lu[k + 1:, k:] -= np.outer(factor, lu[k, k:])
        rhs[k + 1:] -= factor * rhs[k]
    diagonal = np.abs(np.diag(lu))
    rank = int(np.sum(diagonal > max_pivot * np.finfo(np.float64).eps * n))
    x = np.zeros(n)
    for k in range(rank - 1, -1, -1):
        x[k] = (rhs[k] - lu[k, k + 1:rank] @ x[k + 1:rank]) / lu[k, k]
    out = np.zeros(n)
    out[cols] = x
    return out


def branch_features(left, right, feature, is_numeric):
    """``{leaf: sorted distinct numeric features split on from the root to it}``."""
    out = {}
    stack = [(0, ())]
    while stack:
        node, path = stack.pop()
        if left[node] < 0:
            out[node] = sorted(set(path))
            continue
        f = int(feature[node])
        below = path + ((f,) if is_numeric[f] else ())
        stack.append((int(right[node]), below))
        stack.append((int(left[node]), below))
    return out


class _Slots:
    """The leaves of one tree and their features, as the kernels take them."""

    def __init__(self, tree, is_numeric, column_of_feature):
        features = branch_features(tree["left"], tree["right"], tree["feature"],
                                   is_numeric)
        self.leaves = np.array(sorted(features), np.int32)
        counts = [len(features[int(leaf)]) for leaf in self.leaves]
        self.offset = np.zeros(len(counts) + 1, np.int64)
        np.cumsum(counts, out=self.offset[1:])
        self.feature = np.array([f for leaf in self.leaves for f in features[int(leaf)]],
                                np.int32)
        self.column = column_of_feature[self.feature]
        self.slot_of_node = np.full(len(tree["left"]), -1, np.int32)
        self.slot_of_node[self.leaves] = np.arange(len(self.leaves), dtype=np.int32)
        width = max(counts, default=0) + 1
        self.xthx = np.zeros((len(counts), width, width))
        self.xtg = np.zeros((len(counts), width))
        self.n_fit = np.zeros(len(counts), np.int64)

    def solve(self, linear_lambda, learning_rate):
        """The tree's :class:`LinearLeaves` (tree index -1, set when added to a model),
        or None when no leaf has enough rows."""
        nodes, consts, counts, features, coefs = [], [], [], [], []
        for s, leaf in enumerate(self.leaves.tolist()):
            lo, hi = int(self.offset[s]), int(self.offset[s + 1])
            k = hi - lo
            if self.n_fit[s] < k + 1:
                continue
            upper = self.xthx[s, :k + 1, :k + 1]
            system = upper + np.triu(upper, 1).T
            system[np.arange(k), np.arange(k)] += linear_lambda
            beta = full_pivot_solve(system, -self.xtg[s, :k + 1])
            keep = np.abs(beta[:k]) > ZERO_THRESHOLD
            nodes.append(leaf)
            consts.append(beta[k] * learning_rate)
            counts.append(int(keep.sum()))
            features.append(self.feature[lo:hi][keep])
            coefs.append(beta[:k][keep] * learning_rate)
        if not nodes:
            return None
        offset = np.zeros(len(counts) + 1, np.int64)
        np.cumsum(counts, out=offset[1:])
        return LinearLeaves(-1, nodes, consts, offset,
                            np.concatenate(features).astype(np.int32),
                            np.concatenate(coefs))


def fit_linear_leaves(state, grower, trees, learning_rate, blocks, representatives):
    """The round's :class:`RoundLinearModels` from one pass over the training blocks.

    Parameters
    ----------
    trees : list of tree-array dicts (``grower.tree_arrays``), one per output
    blocks : callable () -> iterator of Block
    representatives : ndarray (n_features, max_bin) float64, each code's value
    """
    mapper = state.cache.bin_mapper
    is_numeric = np.array([t == "numeric" for t in mapper.feature_types], bool)
    column_of_feature = np.full(len(is_numeric), -1, np.int32)
    used = sorted({f for t in trees for f in t["feature"][t["left"] >= 0].tolist()
                   if is_numeric[f]})
    column_of_feature[used] = np.arange(len(used), dtype=np.int32)
    slots = [_Slots(t, is_numeric, column_of_feature) for t in trees]
    for block in blocks():
        views = state.rows.load(block.index, ("stats", "node"))
        node = views["node"].copy()
        grower.move_to_leaves(block.stored_codes, node)
        values = leaf_feature_values(representatives, block.codes, used)
        for c, s in enumerate(slots):
            linear_leaf_sums(node[c].astype(np.int32), values, s.slot_of_node, s.offset,
                             s.column, views["stats"][c], s.xthx, s.xtg, s.n_fit)
    linear_lambda = float(state.params["linear_lambda"])
    return RoundLinearModels([s.solve(linear_lambda, learning_rate) for s in slots],
                             representatives)


class RoundLinearModels:
    """A round's leaf models, one :class:`LinearLeaves` or None per output."""

    def __init__(self, entries, representatives):
        self.entries = entries
        self.representatives = representatives
        present = [e for e in entries if e is not None]
        self.used = sorted({int(f) for e in present for f in e.feature.tolist()})
        self.column_of_feature = np.full(representatives.shape[0], -1, np.int32)
        self.column_of_feature[self.used] = np.arange(len(self.used), dtype=np.int32)

    def add_to_margins(self, block, node, values_of_output, margin):
        """``margin[:, c] += model - value`` for the rows of ``block`` (already moved to
        the round's leaves in ``node``, ``(n_outputs, n_rows)``), where
        ``values_of_output[c]`` are tree ``c``'s leaf values."""
        if not any(e is not None for e in self.entries):
            return
        values = leaf_feature_values(self.representatives, block.codes, self.used)
        for c, e in enumerate(self.entries):
            if e is None:
                continue
            add_linear_leaves(node[c].astype(np.int32), values,
                              e.slots(len(values_of_output[c])), e.offset,
                              self.column_of_feature[e.feature], e.coef, e.const,
                              values_of_output[c], 1.0, margin[:, c])

    def add_to_model(self, model, first_tree, columns=None):
        """Give the trees ``first_tree + j`` of ``model`` the entries of ``columns``
        (all outputs by default, in order): the ``linear_leaves`` part grows."""
        columns = range(len(self.entries)) if columns is None else columns
        new = [self.entries[c].moved(first_tree + j) for j, c in enumerate(columns)
               if self.entries[c] is not None]
        if not new:
            return
        part = model.part(LinearLeavesPart.key)
        model.parts[LinearLeavesPart.key] = LinearLeavesPart(
            (part.entries if part is not None else []) + new)
