"""Multiway categorical splits laid out as binary nodes.

A multiway split of node ``n`` on a categorical feature with children for the codes
``c_1 .. c_k`` (``kernels/split_multiway.py``) becomes a chain of ``k - 1``
one-category-vs-rest nodes: node ``n`` sends ``c_1`` left and the rest right, to a chain
node that sends ``c_2`` left, and so on; the last chain node's right child takes ``c_k``,
which is the child with the most rows, so missing values and categories absent at the
node (every chain node sends them right) go where C4.5's majority rule sends them::

    n: {c_1} | rest -> chain_1: {c_2} | rest -> ... -> chain_{k-2}: {c_{k-1}} | {c_k ...}

Every category's child is one level below ``n`` (``max_depth`` counts multiway levels);
the chain nodes are split when they are made, and the partition moves a row through them
in the same pass (``kernels/partition.py``, ``ROUTE_PASS_THROUGH``). Models are binary
trees: the chain predicts exactly as the multiway node, in every format.
"""
from __future__ import annotations

import numpy as np


def chain_codes(child_counts: np.ndarray) -> np.ndarray:
    """The codes of a multiway split's children in chain order: ascending, the child
    with the most rows (lowest code on ties) last.

    >>> chain_codes(np.array([3.0, 0.0, 9.0, 1.0])).tolist()
    [0, 3, 2]
    """
    present = np.flatnonzero(child_counts > 0)
    largest = present[np.argmax(child_counts[present])]
    return np.r_[present[present != largest], largest]


def chain_ids(first: int, node: int, n_children: int) -> tuple[np.ndarray, np.ndarray]:
    """``(chain, children)``: the ``n_children - 1`` chain nodes (``node`` first) and the
    child of each code in chain order, for new node ids from ``first``. Chain node ``j``
    has children ``first + 2j`` (left, code ``j``) and ``first + 2j + 1`` (right), which is
    the next chain node or, for the last, the last code's child.

    >>> [a.tolist() for a in chain_ids(5, 2, 4)]
    [[2, 6, 8], [5, 7, 9, 10]]
    """
    lefts = first + 2 * np.arange(n_children - 1, dtype=np.int64)
    chain = np.r_[node, lefts[:-1] + 1].astype(np.int64)
    return chain, np.r_[lefts, lefts[-1] + 1]


def chain_sums(child_sums: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """Statistics of each chain node: the sum of its codes' children and the later ones
    (n_children - 1, n_stats)."""
    ordered = child_sums[codes]
    return np.cumsum(ordered[::-1], axis=0)[::-1][:-1]
