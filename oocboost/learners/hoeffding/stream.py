"""Hoeffding trees over a cache (one streamed pass) and over chunks of rows: the memory
plan that bounds their histograms, the pass, and prequential scores."""
from types import SimpleNamespace

import numpy as np

from ...common import hist_width
from ...engine.blocks import timed_blocks
from ...errors import InputError, MemoryLimitError
from ...kernels.stream_leaves import class_scores, regression_scores
from ...utils.budget import DEFAULT_PREFETCH, process_baseline, smallest_limit, usable_bytes
from ...utils.sizes import MiB, format_size
from .batches import batches, next_batch_rows, rows_of
from .learn import HoeffdingLearner

#: Bytes of histograms kept when neither ``max_leaves`` nor ``memory_limit`` bounds them
#: (river's ``max_size`` is 100 MiB of Python objects; a slot of 28 features x 256 bins
#: takes 224 KiB, so this keeps over a thousand leaves collecting statistics).
DEFAULT_HISTOGRAM_BYTES = 256 * MiB



def slot_bytes(mapper, n_stats):
    """Bytes of one leaf's histogram (and its sums)."""
    from ...common import hist_column_starts

    columns = int(hist_column_starts(mapper.n_value_bins, mapper.max_bin)[-1])
    return columns * mapper.max_bin * hist_width(n_stats) * 8 + n_stats * 8


def plan_slots(config, mapper, block_rows, code_bytes_per_row, prefetch=DEFAULT_PREFETCH,
               n_trees=1):
    """Histogram slots each of ``n_trees`` trees may keep.

    Within ``memory_limit`` (peak RSS, bytes): this process's RSS now (with the kernels it
    has still to load, ``utils.budget.process_baseline``), the prefetched and
    current blocks (codes, label, weight), the per-block scratch (statistics, row lists,
    leaf of each row), then whole histograms; ``max_leaves`` caps them further. Refuses
    (MemoryLimitError naming the smallest limit) when not even two slots a tree fit.
    """
    per_slot = slot_bytes(mapper, config.n_stats)
    cap = config.max_leaves if config.max_leaves is not None else None
    if config.memory_limit is None:
        budget = DEFAULT_HISTOGRAM_BYTES // (per_slot * n_trees)
        return max(2, min(cap or budget, budget))
    per_row = code_bytes_per_row + 16            # codes, label and weight as float64
    scratch_per_row = config.n_stats * 4 * n_trees + 24 + 8 * config.n_classes
    fixed = block_rows * (per_row * (prefetch + 1) + scratch_per_row)
    baseline = process_baseline(None, "train")
    usable = usable_bytes(config.memory_limit, baseline) - fixed
    n_slots = usable // (per_slot * n_trees) if usable > 0 else 0
    if n_slots < 2:
        need = fixed + 2 * per_slot * n_trees
        raise MemoryLimitError(
            f"memory_limit={format_size(config.memory_limit)} leaves no room for the "
            f"Hoeffding tree's histograms ({format_size(per_slot)} a leaf, blocks of "
            f"{block_rows} rows); the smallest limit that works is "
            f"{format_size(smallest_limit(need, baseline))}")
    return int(min(cap, n_slots) if cap else n_slots)


def check_block_labels(y, config, where, row_start=0):
    """Refuse missing labels and, for a classifier, labels that are not class indices."""
    bad = ~np.isfinite(y)
    if config.task == "classification":
        bad |= (y != np.floor(y)) | (y < 0) | (y >= config.n_classes)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        expected = (f"a class index in [0, {config.n_classes})"
                    if config.task == "classification" else "a finite target")
        raise InputError(f"{where}: row {row_start + i} has label {y[i]!r}; expected "
                         f"{expected}")


class Prequential:
    """Test-then-train scores: each block predicted before it is learned (accuracy and
    log loss for a classifier, squared and absolute error for a regressor), weighted by
    the rows' weights."""

    def __init__(self, classification):
        self.classification = classification
        self.weight = 0.0
        self.sums = {}

    def add(self, pred, y, w):
        pred = np.ascontiguousarray(pred, np.float64)
        y = np.ascontiguousarray(y, np.float64)
        w = np.ascontiguousarray(w, np.float64)
        self.weight += float(w.sum())
        if self.classification:
            names, sums = ("accuracy", "log_loss"), class_scores(pred, y, w)
        else:
            names, sums = ("mse", "mae"), regression_scores(pred, y, w)
        for name, v in zip(names, sums):
            self.sums[name] = self.sums.get(name, 0.0) + float(v)

    def scores(self):
        return {k: v / self.weight for k, v in self.sums.items()} if self.weight else {}


def learn_cache(learners, cache, *, prefetch=None, evaluate=False, draws=None,
                counters=None, batch_rows=None, row_offset=0, start_row=0, ensemble=None):
    """Stream ``cache`` once through ``learners`` (several for online bagging).

    Parameters
    ----------
    learners : list of HoeffdingLearner
    cache : Cache
    prefetch : int or None
    evaluate : bool
        Keep prequential scores of the first learner's (or the ensemble's mean)
        predictions.
    draws : callable ``(row_start, n_rows) -> (n_trees, n_rows) copies`` or None
        Per-tree row multiplicities (online bagging's Poisson(1) draws).
    batch_rows : int or None
        Rows learned at a time; None: adaptive (``batches.py``).
    row_offset : int
        Index in the stream of the cache's first row (the draws' row counter).
    start_row : int
        Learn the cache's rows from this one on (rows appended since a saved model
        learned the first ones).
    ensemble : AdaptiveForest or None
        Learns each batch in place of the learners one by one (``adaptive.py``).

    Returns
    -------
    Prequential or None
    """
    cache.require_one_label("a Hoeffding tree")
    config = learners[0].config
    counters = counters if counters is not None else {"io_wait_s": 0.0, "bytes_read": 0}

    def account(wait_s, nbytes):
        counters["io_wait_s"] += wait_s
        counters["bytes_read"] += nbytes

    plan = SimpleNamespace(prefetch=DEFAULT_PREFETCH if prefetch is None else prefetch,
                           resident_bytes=0)

    def parts():
        for block in timed_blocks(cache, plan, account):
            skip = max(start_row - block.row_start, 0)
            if skip >= block.n_rows:
                continue
            # stored codes (a PlaneCodes too); bundled or sparse ones made whole
            codes = (block.stored_codes if cache.bundles is None
                     and not cache.has_sparse_columns else block.codes)
            y = np.asarray(block.label, np.float64).reshape(-1)
            check_block_labels(y, config, f"cache {cache.path}", block.row_start)
            w = (np.ones(len(y)) if block.weight is None
                 else np.asarray(block.weight, np.float64))
            yield (rows_of(codes, skip, block.n_rows), y[skip:], w[skip:],
                   row_offset + block.row_start + skip)

    score = Prequential(learners[0].classification) if evaluate else None
    learn_parts(learners, parts(), score, draws, batch_rows, ensemble)
    return score


def learn_parts(learners, parts, score=None, draws=None, batch_rows=None, ensemble=None):
    """Learn consecutive parts ``(codes, y, w, stream_row)`` batch by batch (each batch
    scored before it is learned)."""
    def size():
        growing = learners if ensemble is None else ensemble.growing()
        return next_batch_rows(growing, batch_rows)

    for codes, y, w, row in batches(parts, size):
        copies = None if draws is None else draws(row, len(y))
        if ensemble is not None:
            pred = ensemble.learn_batch(codes, y, w, copies)
            if score is not None:
                score.add(pred, y, w)
            continue
        preds = []
        for t, learner in enumerate(learners):
            pred = learner.learn(codes, y, w if copies is None else w * copies[t],
                                 predict=score is not None)
            if pred is not None:
                preds.append(pred)
        if score is not None:
            score.add(preds[0] if len(preds) == 1 else np.mean(preds, axis=0), y, w)


def learn_rows(learners, codes, y, w, score=None, draws=None, row_start=0,
               batch_rows=None, ensemble=None):
    """:func:`learn_parts` of one chunk of rows."""
    learn_parts(learners, [(codes, y, w, row_start)], score, draws, batch_rows, ensemble)


def new_learners(config, mapper, n_trees, *, block_rows, code_bytes_per_row, prefetch=None):
    """``n_trees`` fresh learners sharing the memory plan."""
    max_slots = plan_slots(config, mapper, block_rows, code_bytes_per_row,
                           DEFAULT_PREFETCH if prefetch is None else prefetch, n_trees)
    return [HoeffdingLearner(config, mapper, max_slots) for _ in range(n_trees)]


class PoissonDraws:
    """Online bagging's copies (Oza and Russell): Poisson(``lam``) per (tree, row), 1 for
    online bagging and 6 for adaptive random forests, from the counter-based hash
    forests draw their bootstraps with, so a row's copies depend only on (seed, tree,
    row index in the stream). Called ``(row_start, n_rows)``, returns (n_trees, n_rows)
    float64 copies."""

    def __init__(self, seed, n_trees, lam=1.0):
        self.seed = int(seed)
        self.n_trees = int(n_trees)
        self.lam = float(lam)

    def __call__(self, row_start, n_rows):
        from ...kernels import cart_stats as kc

        out = np.empty((self.n_trees, n_rows))
        kc.row_draws(self.seed, np.arange(self.n_trees, dtype=np.int64), int(row_start),
                     kc.MODE_POISSON, self.lam, out)
        return out


def poisson_draws(seed, n_trees, lam=1.0):
    """:class:`PoissonDraws` (a picklable callable)."""
    return PoissonDraws(seed, n_trees, lam)
