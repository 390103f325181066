"""The memory plan of a cache build (pass 1: parse and sketch, pass 2: bin and write).

Every figure is in bytes; ``limit`` is the user's ``memory_limit``.

Building a cache (:func:`plan_build`)::

    peak = baseline + max(pass1, pass2) + margin
    pass1 = parse + queued + n_columns * sketch_bytes_per_column + batch
    pass2 = parse + batch + 3 * block_rows * (n_columns * codes_itemsize + 8)
    parse = 64 MiB (CSV sources only) + 40 * csv_block_bytes
    batch = 4 * csv_block_bytes (CSV) or 65536 * (8 * n_columns + 16) (other sources)

- ``parse``: pyarrow's streaming CSV reader holds a fixed ~60 MiB of private memory from
  the moment it opens (readahead, allocator arenas), plus about 40 times its block size
  (measured with the system allocator: 65-72 MiB at 256 KiB blocks, 85-112 MiB at 1 MiB).
  Blocks of 2 MiB (or 4 KiB a column, up to 16 MiB) are preferred; the plan halves them
  to 256 KiB when tight.
- ``queued`` (CSV sources only): ``8 * csv_block_bytes``. Pass 1 sketches on a thread of
  its own while pyarrow parses the next block; a parsed batch waits for the sketcher and
  another is being sketched, each up to 4x its text as float64.
- Sketches: ``sketch_bytes_per_column`` is the budget each column's quantile sketch or
  category counter may use (2 MiB by default, 64 KiB at least;
  ``QuantileSketch.for_budget`` sizes the sketch to it).
- Batch: pass 1 copies each parsed batch into the spool (a compact temporary that pass 2
  reads back) and pass 2 bins one batch at a time: a batch is a CSV block parsed (up to 4x
  its text as float64) or ``SOURCE_BATCH_ROWS`` rows of another source.
- Pass 2 copies the binned batches into the block being assembled, then serialises it
  (lz4, and raw when lz4 saves too little: ``BUILD_BLOCK_COPIES`` = 3 copies of a block).
  An earlier model counted ``prefetch + 2`` blocks of float64 rows here (about 9x too
  much: blocks were never queued, and the raw rows are per batch, not per block), which
  capped blocks at 32,768 rows at 512MB: training then paid the per-block overhead 8
  times as often.
- ``block_rows`` is the largest power of two between 4096 and 262144 rows, plus
  ``BLOCK_ROW_PAD`` (see there), such that
  training's block buffers at the same limit (``(2 + 2) * 2 * block_rows * (n_columns *
  codes_itemsize + 8)``, see ``plan_train``) take at most a quarter of what the limit
  leaves after the baseline and the margin (training also needs room for histograms,
  per-row state and resident blocks), and the build fits. An explicit ``block_rows`` is
  honoured and checked.

A limit below the minimum configuration is refused with the smallest one that works
(:mod:`oocboost.utils.budget`).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ..common import binned_dtype, check_max_bin
from ..errors import MemoryLimitError
from ..utils.budget import (
    DEFAULT_PREFETCH,
    check_int,
    check_limit,
    plan_line,
    process_baseline,
    safety_margin,
    smallest_limit,
    usable_bytes,
)
from ..utils.sizes import KiB, MiB, format_size

MIN_BLOCK_ROWS = 4096
MAX_BLOCK_ROWS = 262144
#: Rows added to the chosen power of two. A block's codes are (n_features, block_rows):
#: with a power of two, every feature's codes of a row lie a multiple of 4 KiB apart, all
#: in the same set of the L1 data cache, and the 14 features a histogram thread updates
#: per row evict each other (8 ways). 64 more rows move each feature's column by 64
#: bytes (128 for two-byte codes), one cache set further. Measured on AMD EPYC (Zen 3),
#: 1M x 28, 2 threads, 40 rounds of depth 6: histograms 4.0 -> 2.1 s, training 6.2 ->
#: 4.3 s (262,144 -> 262,208-row blocks).
BLOCK_ROW_PAD = 64
BLOCK_BUDGET_FRACTION = 0.25
#: pyarrow's streaming CSV reader: a fixed ~60 MiB of private memory from the moment it
#: opens (readahead, allocator arenas; measured 55-65 MiB with the system allocator,
#: 15-20 MiB more with mimalloc) plus about 40 times its block size.
CSV_READER_FIXED_BYTES = 64 * MiB
PARSE_FACTOR = 40
#: Pass 1 over a CSV sketches on a thread of its own: one parsed batch waits for it and
#: one is being sketched, each up to 4 times its CSV bytes as float64 (a value as short
#: as "1," is 2 bytes of text and 8 parsed).
SKETCH_QUEUE_FACTOR = 8
MIN_CSV_BLOCK_BYTES = 256 * KiB
#: The CSV block a build prefers: 1 MiB (the fastest parse of narrow rows), more for
#: wide rows, whose every batch costs each column a conversion, a sketch update and a
#: binning call: 1 MiB per 256 columns up to 16 MiB. A 5,000-column, 2,000-row CSV (104
#: MB) was 105 batches of 19 rows at 1 MiB; its build took 39 s.
CSV_BLOCK_BYTES_PER_COLUMN = 4 * KiB
MAX_PREFERRED_CSV_BLOCK_BYTES = 16 * MiB
#: The smallest block a build prefers. A 1M-row, 29-column TSV (166 MiB) built in
#: 2.05-2.62 s with 2 MiB blocks against 2.56-3.14 s with 1 MiB and 2.46-2.75 s with
#: 4 MiB (alternated, fresh processes, 2 cores): half the batches for the sketching
#: thread to take over; pyarrow's reader holds 40 MiB more.
MIN_PREFERRED_CSV_BLOCK_BYTES = 2 * MiB
#: A CSV block grown for a long line (twice the line: ``CsvSource._grow_block``) holds
#: few, long fields: its parse costs about twice the block, not PARSE_FACTOR times
#: (measured: a 50 MB line in a 128 MiB block peaked 243 MiB over the process).
LONG_LINE_BLOCK_FACTOR = 2
#: The largest CSV block at all (pyarrow's block size is a 32-bit count): lines of up to
#: half of it.
MAX_CSV_BLOCK_BYTES = 1 << 30
DEFAULT_SKETCH_BYTES = 2 * MiB
MIN_SKETCH_BYTES = 64 * KiB
#: Rows per batch from a non-CSV source (Parquet, Arrow, in-memory arrays and frames:
#: the ``batch_rows`` default of ``oocboost.cache.ingest``).
SOURCE_BATCH_ROWS = 65536
#: Copies of a block alive in pass 2: the block being assembled from binned batches, its
#: lz4 serialisation, and the raw one written instead when lz4 saves too little.
BUILD_BLOCK_COPIES = 3
#: Without a memory limit, pass-2 block buffers aim at this many bytes in all.
NO_LIMIT_BLOCK_BUFFER_BYTES = 512 * MiB


@dataclass
class BuildPlan:
    """How building a cache spends the memory limit (all sizes in bytes)."""

    memory_limit: int | None
    baseline_bytes: int
    margin_bytes: int
    n_columns: int
    max_bin: int
    codes_itemsize: int
    csv_block_bytes: int
    parse_bytes: int
    sketch_bytes_per_column: int
    sketch_bytes: int
    batch_bytes: int
    block_rows: int
    block_bytes: int
    block_buffer_bytes: int
    pass1_bytes: int
    pass2_bytes: int
    estimated_peak_bytes: int
    sketch_queue_bytes: int = 0
    #: The largest block the CSV reader may grow to for a long line (the limit's share).
    max_csv_block_bytes: int = MAX_CSV_BLOCK_BYTES

    def as_dict(self):
        """The plan as a JSON-able dict."""
        return dataclasses.asdict(self)

    def describe(self):
        """Multi-line text for verbose mode."""
        lim = format_size(self.memory_limit) if self.memory_limit else "no limit"
        lines = [
            f"memory plan for building the cache (limit {lim}):",
            plan_line("baseline (interpreter, libraries, kernels)", self.baseline_bytes),
            plan_line(
                "CSV parsing", self.parse_bytes, f"{format_size(self.csv_block_bytes)} blocks"
            ),
            plan_line(
                "pass 1: sketches",
                self.sketch_bytes,
                f"{self.n_columns} columns x {format_size(self.sketch_bytes_per_column)}",
            ),
            plan_line(
                "parsed batch (spooled, binned)",
                self.batch_bytes,
                "one source batch as float64",
            ),
            plan_line(
                "pass 1: sketch queue",
                self.sketch_queue_bytes,
                "parsed batches for the sketching thread",
            ),
            plan_line(
                "pass 2: block buffers",
                self.block_buffer_bytes,
                f"{BUILD_BLOCK_COPIES} x {format_size(self.block_bytes)}: block_rows "
                f"{self.block_rows:,}",
            ),
            plan_line("safety margin", self.margin_bytes),
            plan_line(
                "estimated peak",
                self.estimated_peak_bytes,
                f"pass 1 {format_size(self.pass1_bytes)}, pass 2 "
                f"{format_size(self.pass2_bytes)} "
                "above the baseline",
            ),
        ]
        return "\n".join(lines)


def preferred_csv_block_bytes(n_columns: int) -> int:
    """The CSV read block a build of ``n_columns`` columns prefers (bytes; the plan
    halves it under a tight limit): :data:`CSV_BLOCK_BYTES_PER_COLUMN` a column, from
    :data:`MIN_PREFERRED_CSV_BLOCK_BYTES` to :data:`MAX_PREFERRED_CSV_BLOCK_BYTES`."""
    return int(min(max(MIN_PREFERRED_CSV_BLOCK_BYTES,
                       n_columns * CSV_BLOCK_BYTES_PER_COLUMN),
                   MAX_PREFERRED_CSV_BLOCK_BYTES))


def _source_batch_bytes(csv_block_bytes, raw_row, text_source):
    """One parsed source batch as float64: a CSV block is up to 4x its text parsed; other
    sources hand over ``SOURCE_BATCH_ROWS`` rows."""
    if text_source:
        return SKETCH_QUEUE_FACTOR // 2 * csv_block_bytes
    return SOURCE_BATCH_ROWS * raw_row


def _block_row_choices():
    """The block sizes the plan chooses from, largest first (powers of two plus
    ``BLOCK_ROW_PAD``)."""
    r = MAX_BLOCK_ROWS
    while r >= MIN_BLOCK_ROWS:
        yield r + BLOCK_ROW_PAD
        r //= 2


#: The smallest block the plan chooses.
SMALLEST_BLOCK_ROWS = MIN_BLOCK_ROWS + BLOCK_ROW_PAD


def plan_build(
    memory_limit,
    n_columns,
    *,
    max_bin=256,
    baseline_bytes=None,
    block_rows=None,
    csv_block_bytes=1 << 20,
    text_source=True,
    pyarrow_reader=True,
    codes_itemsize=None,
):
    """Plan how building a cache (pass 1: parse + sketch, pass 2: bin + write) spends the
    limit.

    Parameters
    ----------
    memory_limit : int, str or None
        Peak memory allowed (bytes or a size string, see :func:`parse_size`). None: no
        limit; training's block buffers then aim at 512 MiB in all.
    n_columns : int
        Feature columns of the source.
    max_bin : int
        Codes per feature (sets the codes' itemsize).
    codes_itemsize : int or None
        Bytes per code when ``max_bin`` does not say it: 2 for a source whose
        categorical columns may be wide (``common.category_value_bins``).
    baseline_bytes : int or None
        RSS in bytes of the process before the build, numba's compiled kernels included;
        None: :func:`current_rss` now plus :func:`pending_kernel_bytes` ``("build")``.
    block_rows : int or None
        Rows per cache block; None lets the plan choose a power of two between 4096 and
        262144 rows plus ``BLOCK_ROW_PAD`` whose training block buffers (at the default
        prefetch) take at most a quarter of the budget; an explicit value is honoured.
    csv_block_bytes : int
        Preferred CSV read block in bytes (1 MiB is the fastest); halved down to 256 KiB
        (or the given value if smaller) when tight.
    text_source : bool
        A text file parsed block by block while pass 1 sketches on a thread of its own
        (CSV, svmlight): parse, queued batches and batches are counted per text block.
    pyarrow_reader : bool
        The text is read by pyarrow's CSV reader (its fixed ``CSV_READER_FIXED_BYTES``);
        False for svmlight, read by oocboost's own parser.

    Returns
    -------
    BuildPlan

    Raises
    ------
    MemoryLimitError
        When even the minimum configuration does not fit; the message gives the smallest
        limit that works.
    """
    limit = check_limit(memory_limit)
    n_columns = check_int("n_columns", n_columns, 1)
    max_bin = check_max_bin(max_bin)
    itemsize = binned_dtype(max_bin).itemsize if codes_itemsize is None \
        else check_int("codes_itemsize", codes_itemsize, 1, 2)
    if block_rows is not None:
        block_rows = check_int("block_rows", block_rows, 1)
    csv_block_bytes = check_int("csv_block_bytes", csv_block_bytes, 4 * KiB)
    baseline = process_baseline(baseline_bytes, "build")

    raw_row = 8 * n_columns + 16
    block_row = n_columns * itemsize + 8  # codes + float32 label and weight
    # What training at the same limit holds per block row: (prefetch + 2) blocks, each
    # counted twice (plan_train's block_bytes).
    train_block_row = (DEFAULT_PREFETCH + 2) * 2 * block_row
    min_csv = min(MIN_CSV_BLOCK_BYTES, csv_block_bytes)

    reader_fixed = CSV_READER_FIXED_BYTES if text_source and pyarrow_reader else 0

    def need(csv, sketch, rows):
        parse = reader_fixed + PARSE_FACTOR * csv
        # CSV: parsed batches waiting for (or in) the sketching thread
        queued = SKETCH_QUEUE_FACTOR * csv if text_source else 0
        batch = _source_batch_bytes(csv, raw_row, text_source)
        pass1 = parse + queued + n_columns * sketch + batch
        pass2 = parse + batch + BUILD_BLOCK_COPIES * rows * block_row
        return max(pass1, pass2), pass1, pass2

    if limit is None:
        csv, sketch = csv_block_bytes, DEFAULT_SKETCH_BYTES
        if block_rows is None:
            rows = next(
                (r for r in _block_row_choices()
                 if r * train_block_row <= NO_LIMIT_BLOCK_BUFFER_BYTES),
                SMALLEST_BLOCK_ROWS,
            )
        else:
            rows = block_rows
        margin = 0
    else:
        usable = usable_bytes(limit, baseline)
        rows_min = SMALLEST_BLOCK_ROWS if block_rows is None else block_rows
        minimum = need(min_csv, MIN_SKETCH_BYTES, rows_min)[0]
        if minimum > usable:
            raise _too_small(limit, baseline, minimum, n_columns=n_columns,
                             rows_min=rows_min, min_csv=min_csv)
        rows = block_rows if block_rows is not None else \
            _limited_block_rows(need, usable, train_block_row, min_csv)
        # Sketches before CSV blocks: smaller sketches cost bin accuracy, smaller CSV
        # blocks only parsing speed.
        sketch = DEFAULT_SKETCH_BYTES
        while sketch > MIN_SKETCH_BYTES and need(min_csv, sketch, rows)[0] > usable:
            sketch = max(MIN_SKETCH_BYTES, sketch // 2)
        csv = csv_block_bytes
        while csv > min_csv and need(csv, sketch, rows)[0] > usable:
            csv = max(min_csv, csv // 2)
        margin = safety_margin(limit)

    total, pass1, pass2 = need(csv, sketch, rows)
    rest = pass1 - (reader_fixed + PARSE_FACTOR * csv)   # pass 1 but the parse
    long_block = MAX_CSV_BLOCK_BYTES if limit is None else \
        _long_line_block(csv, usable, rest, reader_fixed)
    return BuildPlan(
        memory_limit=limit, baseline_bytes=baseline, margin_bytes=margin,
        n_columns=n_columns, max_bin=max_bin, codes_itemsize=itemsize, csv_block_bytes=csv,
        parse_bytes=reader_fixed + PARSE_FACTOR * csv, sketch_bytes_per_column=sketch,
        sketch_bytes=n_columns * sketch,
        batch_bytes=_source_batch_bytes(csv, raw_row, text_source), block_rows=rows,
        block_bytes=rows * block_row, block_buffer_bytes=BUILD_BLOCK_COPIES * rows * block_row,
        pass1_bytes=pass1, pass2_bytes=pass2, estimated_peak_bytes=baseline + margin + total,
        sketch_queue_bytes=SKETCH_QUEUE_FACTOR * csv if text_source else 0,
        max_csv_block_bytes=long_block)


def _limited_block_rows(need, usable, train_block_row, min_csv):
    """Rows a block under a limit. Chosen first, so that they only shrink as the limit
    shrinks: training at the same limit reads these blocks, and their buffers may take a
    quarter of the budget there. Blocks never squeeze the sketches below full size (the
    bins' accuracy) unless even the smallest blocks would."""
    budget = BLOCK_BUDGET_FRACTION * usable
    fitting = [r for r in _block_row_choices() if r * train_block_row <= budget]
    return next(
        (r for r in fitting if need(min_csv, DEFAULT_SKETCH_BYTES, r)[0] <= usable),
        next((r for r in fitting if need(min_csv, MIN_SKETCH_BYTES, r)[0] <= usable),
             SMALLEST_BLOCK_ROWS),
    )


def _long_line_block(csv, usable, rest, reader_fixed):
    """The largest CSV block (``csv`` doubled) that pass 1 holds within ``usable`` bytes
    when one long line's block takes the parse budget's place (``rest``: pass 1's other
    bytes)."""
    block = csv
    while 2 * block <= MAX_CSV_BLOCK_BYTES and \
            reader_fixed + LONG_LINE_BLOCK_FACTOR * 2 * block + rest <= usable:
        block *= 2
    return block


def _too_small(limit, baseline, minimum, *, n_columns, rows_min, min_csv):
    """The refusal of a limit below the minimum configuration, naming the smallest one."""
    smallest = smallest_limit(minimum, baseline)
    err = MemoryLimitError(
        f"memory limit {format_size(limit)} is too small for building a cache of "
        f"{n_columns} columns: the minimum configuration ({rows_min:,}-row blocks, "
        f"{format_size(min_csv)} CSV blocks) needs "
        f"{format_size(baseline)} baseline (interpreter and libraries) + "
        f"{format_size(minimum)} + a safety margin of max(10%, 32 MiB); "
        f"the smallest limit that works here is {smallest // MiB} MiB "
        f"(memory_limit='{smallest // MiB}M')"
    )
    err.smallest_limit = smallest
    return err
