"""How a stream of rows is cut into the batches a Hoeffding tree learns at a time.

A batch is learned as a whole: its rows reach the leaves the tree had when it began,
and split attempts happen at its end (``learn.py``). River attempts a split the moment a
leaf has seen ``grace_period`` more weight; to stay that close without paying the
per-batch cost on every few rows, a batch ends when the first leaf is expected to be
due (:meth:`HoeffdingLearner.rows_until_due`, from each leaf's share of the last
batch), within ``[MIN_BATCH_ROWS, MAX_BATCH_ROWS]``: ``grace_period`` rows at the start,
when the root takes every row; thousands once many leaves share them. Batches run
across block boundaries, so the cut does not depend on the cache's block size. A fixed
``batch_rows`` cuts every batch at that size instead.
"""
import numpy as np

from ...kernels.codes import PlaneCodes

#: Fewest and most rows of an adaptive batch.
MIN_BATCH_ROWS = 32
MAX_BATCH_ROWS = 8192


def rows_of(codes, lo, hi):
    """Contiguous codes of rows ``lo .. hi - 1`` (a plain matrix or PlaneCodes)."""
    if lo == 0 and hi == codes.shape[1]:
        return codes
    if isinstance(codes, PlaneCodes):
        return PlaneCodes(np.ascontiguousarray(codes.low[:, lo:hi]),
                          np.ascontiguousarray(codes.wide[:, lo:hi]), codes.wide_row,
                          hi - lo)
    return np.ascontiguousarray(codes[:, lo:hi])


def _joined(codes):
    if len(codes) == 1:
        return codes[0]
    if isinstance(codes[0], PlaneCodes):
        return PlaneCodes(np.concatenate([c.low for c in codes], axis=1),
                          np.concatenate([c.wide for c in codes], axis=1),
                          codes[0].wide_row, sum(c.n_rows for c in codes))
    return np.concatenate(codes, axis=1)


def next_batch_rows(learners, batch_rows=None):
    """Rows of the next batch: ``batch_rows`` when fixed, else adaptive (module
    docstring)."""
    if batch_rows is not None:
        return int(batch_rows)
    due = min(learner.rows_until_due() for learner in learners)
    return int(min(MAX_BATCH_ROWS, max(MIN_BATCH_ROWS, np.ceil(due))))


def batches(parts, size):
    """Cut a stream of parts into batches.

    Parameters
    ----------
    parts : iterable of ``(codes, y, w, row)``
        Consecutive rows (``row``: the stream index of the part's first row).
    size : callable ``() -> int``
        Rows of the next batch, asked before each one.

    Yields
    ------
    ``(codes, y, w, row)`` of each batch, in order; the last may be shorter.
    """
    pending, n_pending = [], 0
    parts = iter(parts)

    def pull():
        """The next part with rows onto ``pending``; False when there is none."""
        nonlocal n_pending
        for part in parts:
            if len(part[1]):
                pending.append(part)
                n_pending += len(part[1])
                return True
        return False

    exhausted = False
    while True:
        # rows left before the size is asked: it reads every leaf (65 us on a 60-leaf
        # tree, a tenth of a 10-row partial_fit) and is not needed after the last batch
        if n_pending == 0 and (exhausted or not pull()):
            return
        want = size()
        while n_pending < want and not exhausted:
            exhausted = not pull()
        take = min(want, n_pending)
        pieces, got = [], 0
        while got < take:
            codes, y, w, row = pending[0]
            k = min(len(y), take - got)
            pieces.append((rows_of(codes, 0, k), y[:k], w[:k], row))
            if k == len(y):
                pending.pop(0)
            else:
                pending[0] = (rows_of(codes, k, len(y)), y[k:], w[k:], row + k)
            got += k
        n_pending -= take
        if len(pieces) == 1:
            yield pieces[0]
            continue
        yield (_joined([p[0] for p in pieces]), np.concatenate([p[1] for p in pieces]),
               np.concatenate([p[2] for p in pieces]), pieces[0][3])
