"""The rows each isolation tree is grown on: drawn without reading the data, then gathered
in one pass over the cache into an in-memory sample the trees are grown from.

Tree ``t`` draws ``max_samples`` of the cache's rows from ``default_rng([seed, t, 1])``
(without replacement, or with it under ``bootstrap``): exactly scikit-learn's sample of
an isolation tree, a function of the seed and the tree alone (not of the blocks, the
prefetch depth, the threads or the trees read together). One pass reads the blocks that
hold a drawn row and copies those rows' codes; the trees never read the cache again.
Rows of zero sample weight are dropped from the trees that drew them (scikit-learn's
trees skip rows of zero weight; other weights change no isolation split).
"""
from dataclasses import dataclass

import numpy as np

from ...kernels.codes import PlaneCodes, SparseCodes

_RNG_ROWS = 1


def drawn_rows(seed: int, tree: int, n_rows: int, max_samples: int,
               bootstrap: bool) -> tuple[np.ndarray, np.ndarray]:
    """``(rows, copies)`` of one tree: its distinct global rows, ascending (int64), and
    how many times each was drawn (1 without ``bootstrap``)."""
    rng = np.random.default_rng([seed, int(tree), _RNG_ROWS])
    if bootstrap:
        return np.unique(rng.integers(0, n_rows, size=max_samples), return_counts=True)
    rows = np.sort(rng.choice(n_rows, size=max_samples, replace=False))
    return rows, np.ones(len(rows), np.int64)


@dataclass
class GatheredRows:
    """The rows of a set of trees, gathered (:func:`gather`).

    Attributes
    ----------
    rows : ndarray (n,) int64, the distinct global rows, ascending
    codes : ndarray (n_columns, n) or PlaneCodes, their stored codes
    weight : ndarray (n,) float32 or None
    members : list of (positions, copies) per tree: its rows' places in ``rows`` and
        their copies (0 for rows of zero weight)
    """

    rows: np.ndarray
    codes: object
    weight: np.ndarray | None
    members: list


def sample_bytes_per_row(code_bytes_per_row: int) -> int:
    """Bytes one gathered row takes: its codes, row number, weight and its place and
    copies in a tree (an upper bound for the grower's node and count per row too)."""
    return int(code_bytes_per_row) + 8 + 4 + 16


def gather(cache, blocks, draws) -> GatheredRows:
    """Read the drawn rows' codes (and weights) from the blocks that hold one.

    Parameters
    ----------
    cache : Cache
    blocks : callable (block_indices) -> iterable of Block
    draws : list of (rows, copies), one per tree (:func:`drawn_rows`)
    """
    rows = np.unique(np.concatenate([r for r, _ in draws]))
    starts = np.asarray(cache.block_row_starts, dtype=np.int64)
    needed = np.unique(np.searchsorted(starts, rows, side="right") - 1)
    n_columns = cache.n_columns
    parts_low = parts_wide = None
    codes = None
    weight = np.ones(len(rows), np.float32) if cache.has_weight else None
    for block in blocks([int(b) for b in needed]):
        lo, hi = np.searchsorted(rows, [block.row_start, block.row_start + block.n_rows])
        local = rows[lo:hi] - block.row_start
        stored = block.stored_codes
        if isinstance(stored, SparseCodes):   # made whole: rows are picked at random
            stored = stored.to_array()
        if isinstance(stored, PlaneCodes):
            if parts_low is None:
                parts_low = np.empty((n_columns, len(rows)), np.uint8)
                parts_wide = np.empty((stored.wide.shape[0], len(rows)), np.uint16)
                wide_row = stored.wide_row
            parts_low[:, lo:hi] = stored.low[:, local]
            parts_wide[:, lo:hi] = stored.wide[:, local]
        else:
            if codes is None:
                codes = np.empty((n_columns, len(rows)), stored.dtype)
            codes[:, lo:hi] = stored[:, local]
        if weight is not None and block.weight is not None:
            weight[lo:hi] = block.weight[local]
    if parts_low is not None:
        codes = PlaneCodes(parts_low, parts_wide, wide_row, len(rows))
    members = []
    for tree_rows, copies in draws:
        positions = np.searchsorted(rows, tree_rows)
        if weight is not None:
            copies = np.where(weight[positions] > 0, copies, 0)
        members.append((positions, copies))
    return GatheredRows(rows=rows, codes=codes, weight=weight, members=members)


def take_rows(codes, index):
    """Columns ``index`` of gathered codes (a plain matrix or PlaneCodes), C-contiguous."""
    if isinstance(codes, PlaneCodes):
        return PlaneCodes(np.ascontiguousarray(codes.low[:, index]),
                          np.ascontiguousarray(codes.wide[:, index]), codes.wide_row,
                          len(index))
    return np.ascontiguousarray(codes[:, index])
