"""The one pass loop every tree learner drives its grower with.

A tree grows one level (or batch of leaves) per data pass. Each pass streams the cache's
blocks; for each block the learner says what its rows contribute (gradients, class
counts, weighted CART statistics) and in which node each row is, and the grower adds
that into the histograms of the nodes it builds this pass::

    while grower.needs_pass():
        for block in blocks():
            views = rows.load(block.index)              # per-row state of the block
            stats, node, row_counts = block_statistics(block, views, first)
            grower.accumulate(block.stored_codes, stats, node, row_counts)
            rows.store(block.index, views)
        grower.finish_pass()

Boosting, forests and AdaBoost differ only in ``block_statistics`` (and in which fields
of the per-row state later passes read and write back: after the first pass of a tree
only the node positions change).
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol

import numpy as np


class BlockStatistics(Protocol):
    """What a learner feeds the grower for one block of one pass.

    Called with the block, its per-row state (``views``: the arrays of
    ``engine/rowstate.py``, writable) and whether this is the tree's first pass (when
    learners apply the previous round, draw bootstrap weights, compute gradients).
    Returns ``(stats, node, row_counts)``: the rows' statistics as the split policy
    reads them, their node within the tree (int, ``(n_trees, n_rows)``, moved down by
    the grower), and which rows count (None: all; else ``(n_trees, n_rows)`` counts).
    """

    def __call__(self, block: Any, views: dict[str, np.ndarray], first: bool
                 ) -> tuple[Any, np.ndarray, np.ndarray | None]: ...


def grow_passes(grower: Any, blocks: Callable[[], Iterable[Any]], rows: Any,
                block_statistics: BlockStatistics, *,
                later_fields: Sequence[str] | None = None,
                later_written: Sequence[str] | None = None,
                first_fields: Sequence[str] | None = None,
                first_written: Sequence[str] | None = None) -> None:
    """Run ``grower``'s passes over the blocks (module docstring).

    Parameters
    ----------
    grower : engine.grower.TreeGrower
        Started; its trees are complete when this returns.
    blocks : callable () -> iterable of Block
        One pass's blocks, in order (``engine.blocks.timed_blocks``).
    rows : RowState
        The per-row state (``engine/rowstate.py``): ``load(index, fields)`` and
        ``store(index, views, written)``.
    block_statistics : BlockStatistics
    later_fields, later_written : sequence of str or None
        The per-row fields that passes after the first load and write back (None: all).
        A spilled state then reads and writes only those bytes of a row.
    first_fields, first_written : sequence of str or None
        The same for the first pass (None: all).
    """
    first = True
    while grower.needs_pass():
        fields = first_fields if first else later_fields
        written = first_written if first else later_written
        for block in blocks():
            views = rows.load(block.index, fields)
            stats, node, row_counts = block_statistics(block, views, first)
            grower.accumulate(block.stored_codes, stats, node, row_counts)
            rows.store(block.index, views, written)
        grower.finish_pass()
        first = False
