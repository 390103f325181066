"""Moving rows down the trees: the grower's partitioner.

Each pass first moves every row of a block one level down, for the splits decided after
the previous pass, and lists the rows whose new node has a histogram slot this pass, in
chunks of rows that the histogram kernels take one per task
(``kernels.partition.partition_select_rows``). A model grown from a sample routes rows
from the root instead (``to_leaves``).
"""
from __future__ import annotations

import time
from typing import Any

import numba
import numpy as np

from .. import common
from ..kernels.codes import SparseCodes
from ..kernels.partition import partition_select_rows, route_to_leaves
from .nodes import GrowerTelemetry, NodeArrays

#: Rows per chunk of the partition sweep at least (a chunk is one task of the parallel loop).
MIN_CHUNK_ROWS = 16384


def chunk_starts(n_rows: int) -> np.ndarray:
    """First rows of the chunks a block is partitioned in: about four per thread, so an
    uneven chunk (rows in many split nodes) does not leave the other threads idle."""
    n_chunks = max(1, min(4 * numba.get_num_threads(), n_rows // MIN_CHUNK_ROWS))
    return (np.arange(n_chunks, dtype=np.int64) * n_rows) // n_chunks


def routed_columns(codes: Any, route: np.ndarray) -> tuple[Any, np.ndarray]:
    """``(codes, route)`` for the partition kernels: a block with sparse columns
    (``kernels.codes.SparseCodes``) becomes the matrix of the columns its split nodes
    read, and the routes read them there; any other block is passed as it is."""
    if not isinstance(codes, SparseCodes):
        return codes, route
    split = route[..., 0] >= 0
    columns = np.unique(route[..., 1][split])
    compact = route.copy()
    compact[..., 1][split] = np.searchsorted(columns, route[..., 1][split])
    return codes.take_columns(columns), compact


class Partitioner:
    """Moves a block's rows to their nodes for ``n_trees`` trees; keeps the row lists'
    scratch buffers between blocks and adds its time to ``telemetry.partition_s``."""

    def __init__(self, n_trees: int, missing_bin: int, telemetry: GrowerTelemetry) -> None:
        self.n_trees = n_trees
        self.missing_bin = missing_bin
        self.telemetry = telemetry
        self._buffers: tuple | None = None

    def partition(self, codes: np.ndarray, node_of_row: np.ndarray, nodes: NodeArrays,
                  slot_of_node: np.ndarray, row_counts: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Move a block's rows one level down (``node_of_row`` in place) and list, per
        chunk, those whose node has a slot in ``slot_of_node`` and a non-zero count.

        Returns ``(rows, slots, chunk_start, chunk_count)``: int32 ``(n_trees, n_rows)``
        row lists and their slots, filled chunk by chunk, the chunks' first rows and
        ``(n_trees, n_chunks)`` rows listed per chunk.
        """
        n_rows = codes.shape[1]
        rows, slots = self._scratch_rows(n_rows)
        chunk_start = chunk_starts(n_rows)
        chunk_count = np.empty((self.n_trees, len(chunk_start)), np.int64)
        t0 = time.perf_counter()
        codes, route = routed_columns(codes, nodes.route)
        partition_select_rows(codes, node_of_row, route, nodes.route_bitset,
                              self.missing_bin, slot_of_node, row_counts, chunk_start, rows,
                              slots, chunk_count)
        self.telemetry.partition_s += time.perf_counter() - t0
        return rows, slots, chunk_start, chunk_count

    def to_leaves(self, codes: np.ndarray, node_of_row: np.ndarray, nodes: NodeArrays
                  ) -> None:
        """Route a block's rows from the roots to their leaves in one sweep."""
        node_of_row[:] = 0
        t0 = time.perf_counter()
        codes, route = routed_columns(codes, nodes.route)
        route_to_leaves(codes, node_of_row, route, nodes.route_bitset, self.missing_bin)
        self.telemetry.partition_s += time.perf_counter() - t0

    def _scratch_rows(self, n_rows: int) -> tuple[np.ndarray, np.ndarray]:
        buffers = self._buffers or (None, None)
        views = [common.scratch_view(b, (self.n_trees, n_rows), np.int32) for b in buffers]
        self._buffers = tuple(b for b, _ in views)
        return tuple(v for _, v in views)
