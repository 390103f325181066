"""Query groups for learning to rank: the rows of a group are one contiguous run.

:class:`GroupRuns` follows the group id column while a cache is built and gives the
boundaries XGBoost calls ``group_ptr``: group ``g`` is rows ``ptr[g]`` to ``ptr[g + 1]``.
Only the boundaries are kept (8 bytes a group), never an id per row.
"""
import numpy as np

from ..errors import InputError


class GroupRuns:
    """Group boundaries of a stream of group id batches, checked for contiguity.

    Parameters
    ----------
    source_name, column : str
        Named in the error when a group id comes back after another group.

    Examples
    --------
    >>> runs = GroupRuns("<array>", "qid")
    >>> runs.update(np.array([3.0, 3.0, 1.0]), 0)
    >>> runs.update(np.array([1.0, 8.0]), 3)
    >>> runs.group_ptr(5).tolist()
    [0, 2, 4, 5]
    """

    def __init__(self, source_name, column):
        self.where = f"{source_name}: group column {column!r}"
        self._starts = []
        self._seen = set()
        self._last = None

    def update(self, group_id, row_start):
        """Take the group ids of rows ``row_start ..`` (float64, never NaN)."""
        group_id = np.asarray(group_id, dtype=np.float64)
        if group_id.size == 0:
            return
        change = np.empty(group_id.size, dtype=bool)
        change[0] = self._last is None or group_id[0] != self._last
        np.not_equal(group_id[1:], group_id[:-1], out=change[1:])
        first_rows = np.flatnonzero(change)
        # One step per group, not per row: a new run's id must never have been seen.
        for row, gid in zip(first_rows.tolist(), group_id[first_rows].tolist()):
            if gid in self._seen:
                raise InputError(
                    f"{self.where}: group id {gid:g} comes back at row {row_start + row} "
                    f"(0-based) after other groups; the rows of a query group must be "
                    f"contiguous: sort the data by group id")
            self._seen.add(gid)
            self._starts.append(row_start + row)
        self._last = float(group_id[-1])

    def group_ptr(self, n_rows):
        """Boundaries ``(n_groups + 1,)`` int64, from 0 to ``n_rows``."""
        return np.array(self._starts + [int(n_rows)], dtype=np.int64)


def runs_of(ids):
    """Boundaries ``(n_runs + 1,)`` int64 of the runs of equal consecutive ``ids``: the
    ``group_ptr`` of rows whose groups are contiguous.

    >>> runs_of(np.array([7, 7, 2, 5, 5])).tolist()
    [0, 2, 3, 5]
    """
    ids = np.asarray(ids)
    return np.flatnonzero(np.r_[True, ids[1:] != ids[:-1], True]).astype(np.int64)


def check_group_ptr(group_ptr, n_rows, where):
    """Raise :class:`InputError` unless ``group_ptr`` runs strictly up from 0 to
    ``n_rows`` (int64, one more entry than groups)."""
    ptr = np.asarray(group_ptr)
    if ptr.dtype != np.int64 or ptr.ndim != 1 or ptr.size < 2:
        raise InputError(f"{where}: group boundaries should be a 1-D int64 array of at "
                         f"least 2 entries, got {ptr.dtype} {ptr.shape}")
    if ptr[0] != 0 or ptr[-1] != n_rows:
        raise InputError(f"{where}: group boundaries run from {int(ptr[0])} to "
                         f"{int(ptr[-1])}, expected 0 to {n_rows} (the rows)")
    if np.any(np.diff(ptr) < 1):
        g = int(np.argmax(np.diff(ptr) < 1))
        raise InputError(f"{where}: group {g} has no rows (boundaries {int(ptr[g])}, "
                         f"{int(ptr[g + 1])}); expected strictly increasing boundaries")
    return ptr


def group_of_rows(group_ptr, row_start, row_stop):
    """``(first group, last group + 1)`` of the groups meeting rows
    ``row_start .. row_stop - 1``."""
    first = int(np.searchsorted(group_ptr, row_start, side="right")) - 1
    stop = int(np.searchsorted(group_ptr, row_stop, side="left"))
    return first, stop
