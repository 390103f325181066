"""The memory plan of training: how a run spends ``memory_limit``.

Every figure is in bytes; ``limit`` is the user's ``memory_limit``.

Every figure is in bytes. ``limit`` is the user's ``memory_limit``.

Training (:func:`plan_train`)::

    peak = baseline                                   # RSS now: interpreter + libraries,
                                                      # + compiled kernels not loaded yet
         + (prefetch + 2) * block_bytes               # block buffers
         + block_scratch_bytes                        # statistics a learner derives per
                                                      # block (forests), 0 for boosting
         + n_hist_nodes * 2 * n_hist_columns * max_bin * hist_width(n_stats) * 8
                                                      # histograms; n_hist_columns is
                                                      # n_features, or max_features for
                                                      # forests' per-node histograms
         + state_bytes                                # per-row state (RAM or one block)
         + resident_bytes                             # decompressed blocks kept across passes
         + margin                                     # max(10% of limit, 32 MiB)

- ``block_bytes = 2 * block_rows * (n_features * codes_itemsize + 8)``: the decompressed
  codes plus float32 label and weight (8 bytes a row), and as much again as a bound on the
  compressed bytes read from disk. ``prefetch + 2`` blocks are alive: ``prefetch`` in the
  queue, the one being processed and the one being decompressed.
- Histograms: float64 sums; for each node in flight its parent is kept too, for the
  subtraction trick, hence the factor 2.
- Per-row state, ``bytes_per_row = 8 * n_outputs`` (float64 margins) ``+ 8 * n_outputs``
  (float32 gradient and hessian) ``+ 4 * n_trees_in_pass`` (int32 node of each row, per
  tree grown in the pass) ``+ 4`` (float32 sample weight). When ``n_rows * bytes_per_row``
  fits, the state stays in RAM (``state_in_ram``). Otherwise it is stored per block beside
  the cache and streamed with the blocks; the model then counts two blocks of state
  (``2 * block_rows * bytes_per_row``: the mapped pages of the block in use and of the
  one before it, dropped when the next block is loaded).
- ``resident_bytes``: whatever is left is offered to keep decompressed blocks in memory
  across passes (``block_rows * (n_features * codes_itemsize + 8)`` bytes each), which saves
  reading and decompressing the cache again at every tree level. It never exceeds the
  size of the whole decompressed data.

The planner starts from the minimum configuration (no prefetch, one node in flight, state
streamed, nothing resident) and grows it greedily in this order: prefetch depth (2 by
default, 1 or 0 when tight), nodes in flight (up to ``max_nodes_in_flight``), state in
RAM, resident blocks. Explicit values (``prefetch=``) are fixed, not grown.

A limit below the minimum configuration is refused with the smallest one that works
(:mod:`oocboost.utils.budget`).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ..common import check_max_bin, hist_width
from ..errors import MemoryLimitError
from ..utils.budget import (
    DEFAULT_LIMIT_SHARE,
    DEFAULT_PREFETCH,
    available_bytes,
    check_int,
    check_limit,
    plan_line,
    process_baseline,
    safety_margin,
    smallest_limit,
    usable_bytes,
)
from ..utils.log import get_logger
from ..utils.sizes import MiB, format_size

logger = get_logger(__name__)

HIST_ITEMSIZE = 8
STREAMED_STATE_BLOCKS = 2


@dataclass
class TrainPlan:
    """How training spends the memory limit (all sizes in bytes). See the module docstring."""

    memory_limit: int | None
    baseline_bytes: int
    margin_bytes: int
    n_rows: int
    n_features: int
    max_bin: int
    n_stats: int
    n_outputs: int
    n_trees_in_pass: int
    block_rows: int
    n_blocks: int
    codes_itemsize: int
    prefetch: int
    block_bytes: int
    block_buffer_bytes: int
    block_scratch_bytes: int
    hist_nodes: int
    hist_columns: int
    hist_bytes_per_node: int
    histogram_bytes: int
    state_bytes_per_row: int
    state_in_ram: bool
    state_bytes: int
    resident_bytes: int
    resident_blocks: int
    estimated_peak_bytes: int
    hist_itemsize: int = HIST_ITEMSIZE
    block_scratch_detail: str = ""
    #: with no memory_limit, the bound planned within when the generous plan would not
    #: fit the memory available (``utils.budget.available_bytes``), else None
    default_bound: int | None = None

    def as_dict(self):
        """The plan as a JSON-able dict."""
        return dataclasses.asdict(self)

    def describe(self):
        """Multi-line text for verbose mode."""
        lim = (format_size(self.memory_limit) if self.memory_limit else
               f"none given; planned within {format_size(self.default_bound)}, "
               f"{DEFAULT_LIMIT_SHARE:.0%} of the memory available"
               if self.default_bound else "none given, the memory available holds it")
        state_how = (
            f"in RAM, {self.n_rows:,} rows x {self.state_bytes_per_row} B"
            if self.state_in_ram
            else f"streamed beside the cache, {STREAMED_STATE_BLOCKS} blocks resident"
        )
        lines = [
            f"memory plan for training (limit {lim}):",
            plan_line("baseline (interpreter, libraries, kernels)", self.baseline_bytes),
            plan_line(
                "block buffers",
                self.block_buffer_bytes,
                f"{self.prefetch + 2} x {format_size(self.block_bytes)}: prefetch "
                f"{self.prefetch}, "
                f"block_rows {self.block_rows:,}",
            ),
            *(
                [
                    plan_line(
                        "per-block statistics",
                        self.block_scratch_bytes,
                        self.block_scratch_detail,
                    )
                ]
                if self.block_scratch_bytes
                else []
            ),
            plan_line(
                "histograms",
                self.histogram_bytes,
                f"{self.hist_nodes} nodes in flight x 2 x {self.hist_columns} features x "
                f"{self.max_bin} bins x {hist_width(self.n_stats)} lanes x "
                f"{self.hist_itemsize} B",
            ),
            plan_line("per-row state", self.state_bytes, state_how),
            plan_line(
                "resident decompressed blocks",
                self.resident_bytes,
                f"about {self.resident_blocks} of {self.n_blocks} blocks",
            ),
            plan_line("safety margin", self.margin_bytes),
            plan_line("estimated peak", self.estimated_peak_bytes, f"limit {lim}"),
        ]
        return "\n".join(lines)


def plan_train(
    memory_limit,
    *,
    n_rows,
    n_features,
    max_bin,
    n_stats=3,
    n_outputs=1,
    block_rows,
    n_blocks,
    codes_itemsize,
    code_bytes_per_row=None,
    baseline_bytes=None,
    max_nodes_in_flight=64,
    n_trees_in_pass=1,
    prefetch=None,
    state_bytes_per_row=None,
    block_scratch_bytes=0,
    n_hist_columns=None,
    hist_itemsize=HIST_ITEMSIZE,
    block_scratch_detail="",
):
    """Plan how training spends ``memory_limit``.

    Parameters
    ----------
    memory_limit : int, str or None
        Peak memory allowed for the whole process (bytes or a size string, see
        :func:`parse_size`). None: generous defaults (prefetch 2, all nodes in flight,
        state in RAM, resident blocks up to half of the memory available) when they fit
        the process's RSS plus ``DEFAULT_LIMIT_SHARE`` of the memory available
        (``utils.budget.available_bytes``: the machine's, or its cgroup's), else
        the plan of that bound (``TrainPlan.default_bound``).
    n_rows, n_features, max_bin : int
        Rows and features of the cache; codes per feature (missing code included).
    n_stats : int
        Statistics per histogram bin (2 for boosting: gradient, hessian).
    n_outputs : int
        Margins per row (classes of a multiclass booster).
    block_rows, n_blocks : int
        Rows per cache block and number of blocks.
    codes_itemsize : int
        Bytes per code (1 for uint8, 2 for uint16).
    code_bytes_per_row : int or None
        Bytes of codes a row takes in memory (``Cache.code_bytes_per_row``: one byte a
        column but two for wide categorical ones); None: ``n_features *
        codes_itemsize``.
    baseline_bytes : int or None
        RSS in bytes of the process before training, numba's compiled kernels included;
        None: :func:`current_rss` now plus :func:`pending_kernel_bytes` ``("train")``.
    max_nodes_in_flight : int
        Most nodes whose histograms are built in one pass.
    n_trees_in_pass : int
        Trees grown in the same pass (each keeps a node index per row).
    prefetch : int or None
        Prefetch depth in blocks; None lets the plan choose (2, or 1 or 0 when tight).
    state_bytes_per_row : int or None
        Per-row state the learner keeps across passes (``RowStateSpec.bytes_per_row``);
        None: boosting's (margins, gradient/hessian, node index).
    block_scratch_bytes : int
        Bytes the learner derives per block and holds while the block is trained on (a
        forest's per-row CART statistics for every tree of the pass).
    n_hist_columns : int or None
        Features per node histogram: ``n_features`` (None), or a forest's
        ``max_features`` when nodes hold only their sampled features.
    hist_itemsize : int
        Bytes per histogram sum: 8 for float64, 4 for the int32 sums of integer
        statistics (``common.INT_HIST_DTYPE``).
    block_scratch_detail : str
        What ``block_scratch_bytes`` holds, for :meth:`TrainPlan.describe`.

    Returns
    -------
    TrainPlan

    Raises
    ------
    MemoryLimitError
        When even the minimum configuration does not fit; the message gives the smallest
        limit that works.
    ParameterError
        For arguments out of range.
    """
    limit = check_limit(memory_limit)
    (n_rows, n_features, n_stats, n_outputs, block_rows, n_blocks, max_nodes,
     n_trees_in_pass, block_scratch) = (check_int(name, value, low) for name, value, low in (
         ("n_rows", n_rows, 0), ("n_features", n_features, 1), ("n_stats", n_stats, 1),
         ("n_outputs", n_outputs, 1), ("block_rows", block_rows, 1), ("n_blocks", n_blocks, 0),
         ("max_nodes_in_flight", max_nodes_in_flight, 1),
         ("n_trees_in_pass", n_trees_in_pass, 1),
         ("block_scratch_bytes", block_scratch_bytes, 0)))
    max_bin = check_max_bin(max_bin)
    codes_itemsize = check_int("codes_itemsize", codes_itemsize, 1, 8)
    if prefetch is not None:
        prefetch = check_int("prefetch", prefetch, 0)
    baseline = process_baseline(baseline_bytes, "train")

    if code_bytes_per_row is None:
        code_bytes_per_row = n_features * codes_itemsize
    code_bytes_per_row = check_int("code_bytes_per_row", code_bytes_per_row, 1)
    row_bytes = code_bytes_per_row + 8  # decompressed codes + label + weight
    block_bytes = 2 * block_rows * row_bytes
    n_columns = n_features if n_hist_columns is None else check_int(
        "n_hist_columns", n_hist_columns, 1)
    hist_itemsize = check_int("hist_itemsize", hist_itemsize, 1, 8)
    hist_per_node = 2 * n_columns * max_bin * hist_width(n_stats) * hist_itemsize
    # A learner that knows its per-row state passes its size (RowStateSpec.bytes_per_row);
    # the default is boosting's: margins 8, gradient/hessian 8 per output, and a
    # node index per tree grown in the pass.
    state_per_row = (int(state_bytes_per_row) if state_bytes_per_row is not None
                     else 16 * n_outputs + 4 * n_trees_in_pass)
    state_full = n_rows * state_per_row
    state_streamed = STREAMED_STATE_BLOCKS * min(block_rows, max(n_rows, 1)) * state_per_row
    total_decompressed = n_rows * row_bytes

    def need(pf, nodes, in_ram, resident):
        state = state_full if in_ram else state_streamed
        return ((pf + 2) * block_bytes + block_scratch + nodes * hist_per_node + state
                + resident)

    default_bound = None
    sizes = dict(prefetch=prefetch, max_nodes=max_nodes, hist_per_node=hist_per_node,
                 state_full=state_full, state_streamed=state_streamed,
                 total_decompressed=total_decompressed)
    if limit is None:
        pf, nodes, in_ram, resident, margin, default_bound = _plan_without_limit(
            need, baseline, **sizes)
    else:
        usable = usable_bytes(limit, baseline)
        minimum = need(0 if prefetch is None else prefetch, 1, False, 0)
        if minimum > usable:
            raise _too_small(limit, baseline, minimum, n_rows=n_rows, n_features=n_features,
                             block_rows=block_rows, max_bin=max_bin)
        pf, nodes, in_ram, resident = _fill(need, usable, **sizes)
        margin = safety_margin(limit)

    state_bytes = state_full if in_ram else state_streamed
    peak = baseline + margin + need(pf, nodes, in_ram, resident)
    return TrainPlan(
        memory_limit=limit, baseline_bytes=baseline, margin_bytes=margin, n_rows=n_rows,
        n_features=n_features, max_bin=max_bin, n_stats=n_stats, n_outputs=n_outputs,
        n_trees_in_pass=n_trees_in_pass, block_rows=block_rows, n_blocks=n_blocks,
        codes_itemsize=codes_itemsize, prefetch=pf, block_bytes=block_bytes,
        block_buffer_bytes=(pf + 2) * block_bytes, block_scratch_bytes=block_scratch,
        hist_nodes=nodes, hist_columns=n_columns, hist_bytes_per_node=hist_per_node,
        histogram_bytes=nodes * hist_per_node, state_bytes_per_row=state_per_row,
        state_in_ram=bool(in_ram), state_bytes=state_bytes, resident_bytes=resident,
        resident_blocks=(n_blocks if resident >= total_decompressed
                         else int(min(n_blocks, resident // (block_rows * row_bytes)))),
        estimated_peak_bytes=peak, hist_itemsize=hist_itemsize,
        block_scratch_detail=str(block_scratch_detail), default_bound=default_bound)


def _too_small(limit, baseline, minimum, *, n_rows, n_features, block_rows, max_bin):
    """The refusal of a limit below the minimum configuration, naming the smallest one."""
    smallest = smallest_limit(minimum, baseline)
    err = MemoryLimitError(
        f"memory limit {format_size(limit)} is too small for training on {n_rows:,} rows "
        f"x {n_features} features (blocks of {block_rows:,} rows, {max_bin} bins): the "
        f"minimum configuration needs {format_size(baseline)} baseline (interpreter and "
        f"libraries) + {format_size(minimum)} (block buffers, one node's histograms, "
        f"per-row state streamed) + a safety margin of max(10%, 32 MiB); "
        f"the smallest limit that works here is {smallest // MiB} MiB "
        f"(memory_limit='{smallest // MiB}M'), or rebuild the cache with smaller blocks"
    )
    err.smallest_limit = smallest
    return err


def _plan_without_limit(need, baseline, **sizes):
    """A run without ``memory_limit`` (``sizes``: :func:`_fill`'s keywords): the
    generous plan (prefetch 2, every node, state in RAM, half the memory available
    resident) when it fits ``baseline`` plus ``DEFAULT_LIMIT_SHARE`` of
    :func:`available_bytes`, else the plan of that bound as under a limit, or the
    smallest plan with a warning. Returns ``(prefetch, nodes, in_ram, resident, margin,
    default_bound)``, ``default_bound`` None for the first."""
    prefetch, max_nodes = sizes["prefetch"], sizes["max_nodes"]
    pf = DEFAULT_PREFETCH if prefetch is None else prefetch
    available = available_bytes()
    bound = int(baseline + DEFAULT_LIMIT_SHARE * available)
    resident = min(sizes["total_decompressed"], available // 2)
    if baseline + need(pf, max_nodes, True, resident) <= bound:
        return pf, max_nodes, True, resident, 0, None
    # the generous plan would not fit what the machine has: plan within a share of it,
    # as under a limit (the state spills first), or at the least
    usable = usable_bytes(bound, baseline)
    least = 0 if prefetch is None else prefetch
    if need(least, 1, False, 0) > usable:
        logger.warning("the memory available (%s) does not hold even the smallest training "
                       "plan (%s): training with it anyway; pass memory_limit to say what "
                       "this process may take", format_size(bound - baseline),
                       format_size(need(least, 1, False, 0)))
        return least, 1, False, 0, safety_margin(bound), bound
    pf, nodes, in_ram, resident = _fill(need, usable, **sizes)
    return pf, nodes, in_ram, resident, safety_margin(bound), bound


def _fill(need, usable, *, prefetch, max_nodes, hist_per_node, state_full, state_streamed,
          total_decompressed):
    """Grow the minimum configuration greedily within ``usable`` bytes: prefetch depth,
    nodes in flight, state in RAM, resident blocks. Returns ``(prefetch, nodes, in_ram,
    resident_bytes)``."""
    if prefetch is None:
        pf = next(p for p in range(DEFAULT_PREFETCH, -1, -1) if need(p, 1, False, 0) <= usable)
    else:
        pf = prefetch
    left = usable - need(pf, 0, False, 0)  # with streamed state, no histograms
    nodes = int(max(1, min(max_nodes, left // hist_per_node)))
    left = usable - need(pf, nodes, False, 0)
    in_ram = state_full <= left + state_streamed
    left = usable - need(pf, nodes, in_ram, 0)
    resident = int(max(0, min(total_decompressed, left)))
    return pf, nodes, in_ram, resident
