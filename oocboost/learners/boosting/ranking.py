"""Gradients of the ranking objectives, block by block, with whole query groups.

A group's gradients need the margins of all its rows, and a group may cross a block
boundary. Each round therefore starts with one pass of its own (as ``survival:cox``)::

    for each block: apply the last round -> final margins; gradients of every group that
                    ends in this block; the rows of a group still open are carried to
                    the next block (their margins and labels, a group at most)

The gradients of carried rows are known only when their group closes in a later block:
they are kept as patches (a group's rows at most per boundary) and written into those
rows' stats by the round's first histogram pass, which reads every block anyway. So no
block is read twice in a pass and the memory held is bounded by the largest group.
"""
import numpy as np

from ...cache.groups import group_of_rows
from ...common import G_H_DTYPE
from ...errors import InputError, ParameterError
from ...kernels.sampling import uniform_per_row


class QueryGroups:
    """The query groups of a ranking run and the patches of the current round.

    Parameters
    ----------
    cache : Cache
        Built with ``group`` (``--group``): its ``group_ptr`` holds the boundaries.
    objective : LambdaRank
    folds : (fold ids, fold of each row) or None
        Cross-validation (``cv.py``): margin column ``j`` is fold ``fold_ids[j]``'s model,
        fitted to the groups of the other folds (its own weigh 0) with its own weight
        normalisation, as a separate training on those groups would have.
    """

    def __init__(self, cache, objective, folds=None):
        if cache.group_ptr is None:
            raise ParameterError(f"{objective.name} needs query groups: build the training "
                                 f"cache {cache.path} with group=COLUMN (--group COLUMN), "
                                 f"or pass qid= to the ranker's fit")
        self.ptr = cache.group_ptr
        self.group_weight = group_weights(cache, "training cache")
        n_groups = self.ptr.size - 1
        total = n_groups if self.group_weight is None else float(self.group_weight.sum())
        if not total > 0:
            raise InputError(f"training cache {cache.path}: the query groups have total "
                             f"weight {total!r}; expected a positive total")
        # one (group weights, normalisation) per margin column
        base = np.ones(n_groups) if self.group_weight is None else self.group_weight
        if folds is None:
            self.columns = [(base, n_groups / total)]
        else:
            fold_ids, fold_of_row = folds
            fold_of_group = fold_of_row[self.ptr[:-1]]
            self.columns = []
            for fold in fold_ids:
                training = fold_of_group != fold
                kept = base * training
                self.columns.append((kept, float(training.sum()) / float(kept.sum())))
        self.patches = {}


def group_weights(cache, what):
    """Each group's weight (the weight of its rows), or None for an unweighted cache.
    XGBoost weighs ranking by group: rows of one group with different weights are
    refused, naming the row."""
    if not cache.has_weight:
        return None
    ptr = cache.group_ptr
    out = np.empty(ptr.size - 1, np.float64)
    for block in cache.iter_blocks(with_codes=False):
        rs, re = block.row_start, block.row_start + block.n_rows
        first, stop = group_of_rows(ptr, rs, re)
        group_of_row = np.searchsorted(ptr, np.arange(rs, re), side="right") - 1
        starts = np.maximum(ptr[first:stop], rs) - rs
        out[first:stop] = block.weight[starts]  # the group's first row in this block
        bad = block.weight != out[group_of_row]
        if np.any(bad):
            i = int(np.argmax(bad))
            g = int(group_of_row[i])
            raise InputError(
                f"{what} {cache.path}: row {rs + i} has weight {float(block.weight[i])!r} "
                f"but its query group {g} (rows {int(ptr[g])} to {int(ptr[g + 1]) - 1}) "
                f"started with {float(out[g])!r}; ranking weighs whole groups: give every "
                f"row of a group the group's weight")
    return out


class _Carry:
    """Rows of a group that is still open at the end of a block."""

    def __init__(self):
        self.row_start = None
        self.label = []
        self.margin = []
        self.parts = []  # (block index, first local row, rows)

    def add(self, block_index, local_start, row_start, label, margin):
        if self.row_start is None:
            self.row_start = row_start
        self.label.append(np.asarray(label, np.float32))
        self.margin.append(np.asarray(margin, np.float64))
        self.parts.append((block_index, local_start, len(label)))


def group_gradients(state, blocks, apply_round, dart_margin, round_index):
    """One pass: final margins and gradients of every group (module docstring).

    Parameters
    ----------
    state : BoostingState
        With ``state.groups`` a :class:`QueryGroups`.
    blocks : iterable of Block
    apply_round : callable ``(block, views) -> None``
        Applies the last round to a block's margins and resets its nodes.
    dart_margin : callable ``(block) -> ndarray or None``
        The dropped trees' margins of a block (DART), subtracted for the gradients.
    round_index : int
    """
    groups = state.groups
    groups.patches = {}
    carry = _Carry()
    seed = state.params["seed"]
    for block in blocks:
        views = state.rows.load(block.index)
        apply_round(block, views)
        margin = views["margin"]
        dropped = dart_margin(block)
        if dropped is not None:
            margin = margin - dropped
        rs, re = block.row_start, block.row_start + block.n_rows
        first, stop = group_of_rows(groups.ptr, rs, re)
        closed = stop if groups.ptr[stop] == re else stop - 1  # groups ending here
        end = int(groups.ptr[closed])                          # first row left open
        stats = views["stats"]                                 # (columns, n_rows, 2)
        stats[:] = 0.0
        if closed > first:
            span_start = rs if carry.row_start is None else carry.row_start
            label = np.concatenate(carry.label + [block.label[:end - rs]])
            span_margin = np.concatenate(carry.margin + [margin[:end - rs]])
            for c, (weights, norm) in enumerate(groups.columns):
                grad = np.empty(end - span_start, G_H_DTYPE)
                hess = np.empty(end - span_start, G_H_DTYPE)
                state.objective.group_gradients(
                    groups.ptr[first:closed + 1] - span_start, label,
                    np.ascontiguousarray(span_margin[:, c]), weights[first:closed], norm,
                    seed, round_index, span_start, grad, hess)
                offset = 0
                for index, local, n in carry.parts:
                    groups.patches.setdefault(index, []).append(
                        (c, local, grad[offset:offset + n], hess[offset:offset + n]))
                    offset += n
                stats[c, :end - rs, 0] = grad[offset:]
                stats[c, :end - rs, 1] = hess[offset:]
            carry = _Carry()
        open_from = max(end, rs)
        if open_from < re:
            carry.add(block.index, open_from - rs, open_from, block.label[open_from - rs:],
                      margin[open_from - rs:])
        state.rows.store(block.index, views)
    if carry.row_start is not None:
        raise AssertionError("the last query group must end with the last row")


def apply_patches(groups, block, stats):
    """Write the gradients computed after this block was stored into its ``stats``
    (``(columns, n_rows, 2)``)."""
    for c, local, grad, hess in groups.patches.pop(block.index, ()):
        stats[c, local:local + len(grad), 0] = grad
        stats[c, local:local + len(grad), 1] = hess


def group_folds(group_ptr, nfold, seed, stream):
    """The fold of every row with whole query groups: groups ranked by a hash of their
    index and dealt to the folds in turn (group counts per fold differ by at most one)."""
    n_groups = group_ptr.size - 1
    u = np.empty(n_groups, np.float64)
    uniform_per_row(int(seed), stream, 0, u)
    fold_of_group = np.empty(n_groups, np.uint8)
    fold_of_group[np.argsort(u, kind="stable")] = np.arange(n_groups) % nfold
    return np.repeat(fold_of_group, np.diff(group_ptr))


def check_group_folds(group_ptr, fold_of_row):
    """Refuse folds that split a query group, naming it."""
    first = fold_of_row[group_ptr[:-1]]
    split = np.flatnonzero(np.maximum.reduceat(fold_of_row, group_ptr[:-1]) != first)
    split = split if split.size else np.flatnonzero(
        np.minimum.reduceat(fold_of_row, group_ptr[:-1]) != first)
    if split.size:
        g = int(split[0])
        raise ParameterError(f"folds split query group {g} (rows {int(group_ptr[g])} to "
                             f"{int(group_ptr[g + 1]) - 1}) between folds; ranking folds "
                             f"must keep each group whole")
