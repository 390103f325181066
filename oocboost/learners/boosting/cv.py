"""``cv()``: k-fold cross-validation of boosting over a cache, as ``xgboost.cv``.

The folds are not copies of the data. Each row's fold comes from a hash of its row id
(a counter-based generator, so the assignment does not depend on block sizes), and every
fold trains on the same cache with its held-out rows weighted zero. All folds grow their
trees in the same data passes, one booster of ``nfold * outputs`` trees a round, when
the memory plan has room for them; otherwise in as few groups of folds as fit.

Evaluation needs each round's margins, which the fused pass of the next round brings
(``booster.py``): round ``r`` is evaluated after round ``r + 1`` has grown, so early
stopping grows one round more than it keeps and the training costs no extra pass.

Example
-------
>>> import oocboost
>>> result = oocboost.cv({"objective": "binary:logistic", "eval_metric": "auc"},
...                      "train.oocb", num_boost_round=200, nfold=5,
...                      early_stopping_rounds=10)                       # doctest: +SKIP
>>> result["test-auc-mean"][-1]                                         # doctest: +SKIP
0.8412
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ...cache.groups import runs_of
from ...cache.label_stats import LabelStats
from ...engine.plan import plan_train
from ...errors import MemoryLimitError, ParameterError
from ...kernels.sampling import uniform_per_row
from ...utils.log import get_logger, say
from ...utils.threads import thread_limit
from . import booster as boosting
from .class_weight import with_class_weights
from .ranking import check_group_folds, group_folds
from .training import start_run

logger = get_logger(__name__)

#: Stream of the counter-based generator that draws the folds (other streams draw
#: subsamples and bootstraps; this one is only used here).
FOLD_STREAM = 0x0CF01D


def make_folds(n_rows, nfold, *, labels=None, stratified=False, seed=0):
    """The fold of every row, ``uint8`` (n_rows,): rows ranked by a hash of their id and
    dealt to the folds in turn, so fold sizes differ by at most one; ``stratified`` deals
    each class separately (sizes per class differ by at most one).

    Parameters
    ----------
    n_rows, nfold : int
    labels : ndarray (n_rows,) or None
        Class labels, for ``stratified``.
    seed : int
    """
    u = np.empty(n_rows, np.float64)
    uniform_per_row(int(seed), FOLD_STREAM, 0, u)
    fold = np.empty(n_rows, np.uint8)
    groups = [np.arange(n_rows)] if not stratified else [
        np.flatnonzero(labels == c) for c in np.unique(labels)]
    for start, rows in enumerate(groups):
        order = rows[np.argsort(u[rows], kind="stable")]
        # each class starts at another fold, so that small classes do not all fill fold 0
        fold[order] = (np.arange(len(order)) + start) % nfold
    return fold


def folds_from_user(folds, n_rows, labels):
    """``(fold of each row, nfold)`` from a fold id per row, a list of (train, test)
    index pairs, or a scikit-learn splitter; the folds must partition the rows."""
    if hasattr(folds, "split"):
        folds = list(folds.split(np.zeros((n_rows, 1), np.uint8), labels))
    if isinstance(folds, np.ndarray) and folds.ndim == 1:
        if len(folds) != n_rows or folds.dtype.kind not in "iu" or len(folds) == 0 \
                or folds.min() < 0:
            raise ParameterError(f"folds as an array must hold one non-negative fold id "
                                 f"per row ({n_rows} rows), got {folds.dtype} {folds.shape}")
        nfold = int(folds.max()) + 1
        missing = sorted(set(range(nfold)) - set(np.unique(folds).tolist()))
        if missing or nfold > 255:
            raise ParameterError(f"folds: fold ids must be 0..k-1 with k <= 255, each "
                                 f"used; ids {missing[:5]} hold no row")
        return folds.astype(np.uint8), nfold
    pairs = list(folds)
    if not 2 <= len(pairs) <= 255:
        raise ParameterError(f"folds must hold 2 to 255 (train, test) pairs, got "
                             f"{len(pairs)}")
    fold = np.full(n_rows, 255, np.uint8)
    for k, (train, test) in enumerate(pairs):
        test = np.asarray(test, dtype=np.int64)
        if test.size and (test.min() < 0 or test.max() >= n_rows):
            raise ParameterError(f"folds[{k}]: test indices outside 0..{n_rows - 1}")
        if np.any(fold[test] != 255):
            raise ParameterError(f"folds[{k}]: test rows already in another fold's test "
                                 f"set (row {int(test[fold[test] != 255][0])})")
        fold[test] = k
        train = np.sort(np.asarray(train, dtype=np.int64))
        if len(train) != n_rows - len(test) or np.any(fold[train] == k):
            raise ParameterError(f"folds[{k}]: the training rows must be every row outside "
                                 f"its test rows (oocboost.cv trains each fold on the "
                                 f"cache with its test rows weighted zero)")
    if np.any(fold == 255):
        raise ParameterError(f"folds: row {int(np.argmax(fold == 255))} is in no test set; "
                             f"the test sets must cover every row")
    return fold, len(pairs)


def _fold_bases(objective, p, labels, weights, fold_of_row, nfold):
    """Each fold's intercept, from its training rows only (nfold, n_outputs)."""
    if p["base_score"] is not None:
        return np.tile(objective.base_score_to_margin(p["base_score"]),
                       (nfold, objective.n_outputs))
    bases = []
    for f in range(nfold):
        train = fold_of_row != f
        w = None if weights is None else weights[train]
        if labels.ndim == 2:  # several targets or an interval: statistics per column
            stats = [LabelStats().update(np.where(np.isfinite(c), c, np.nan), w)
                     for c in labels[train].T]
        else:
            stats = LabelStats().update(labels[train], w)
        bases.append(np.asarray(objective.base_margin(stats), dtype=np.float64))
    return np.array(bases).reshape(nfold, objective.n_outputs)


def _plan(p, cache, objective, n_folds):
    k = objective.n_outputs * n_folds
    return plan_train(p["memory_limit"], n_rows=cache.n_rows, n_features=cache.n_features,
                      n_hist_columns=cache.planned_hist_columns,
                      max_bin=cache.max_bin, n_stats=2, n_outputs=k,
                      block_rows=cache.block_rows, n_blocks=cache.n_blocks,
                      codes_itemsize=np.dtype(cache.codes_dtype).itemsize,
                      code_bytes_per_row=cache.code_bytes_per_row,
                      n_trees_in_pass=k, prefetch=p["prefetch"],
                      state_bytes_per_row=boosting.state_spec(k, p).bytes_per_row())


def fold_groups(p, cache, objective, nfold):
    """Folds grown together, as many per group as the memory plan allows:
    ``[(fold ids, plan), ...]``."""
    for size in range(nfold, 0, -1):
        try:
            plan = _plan(p, cache, objective, size)
        except MemoryLimitError:
            if size == 1:
                raise
            continue
        return [(list(range(start, min(start + size, nfold))),
                 plan) for start in range(0, nfold, size)]
    raise AssertionError("unreachable")


class _Evaluator:
    """Per-round train and test metrics of every fold, from the margins in the row state."""

    def __init__(self, objective, metrics, labels, weights, fold_of_row, n_rounds, nfold):
        self.objective, self.metrics = objective, metrics
        self.labels, self.weights, self.fold_of_row = labels, weights, fold_of_row
        # scores[split][metric] : (rounds, folds), NaN until evaluated
        self.scores = {split: {m.name: np.full((n_rounds, nfold), np.nan)
                               for m in metrics} for split in ("train", "test")}

    def evaluate(self, state, fold_ids, round_index):
        margins = _all_margins(state)
        k = self.objective.n_outputs
        for j, fold in enumerate(fold_ids):
            held = self.fold_of_row == fold
            prediction = self.objective.eval_transform(margins[:, j * k:(j + 1) * k])
            for split, rows in (("train", ~held), ("test", held)):
                w = None if self.weights is None else self.weights[rows]
                for m in self.metrics:
                    extra = {}
                    if getattr(m, "needs_groups", False):
                        extra["group_ptr"] = _subset_groups(state.cache.group_ptr, rows)
                    self.scores[split][m.name][round_index, fold] = float(
                        m(self.labels[rows], prediction[rows], w, **extra))

    def mean(self, split, name, round_index):
        return float(np.mean(self.scores[split][name][round_index]))


def _subset_groups(group_ptr, rows):
    """Boundaries of the whole query groups left in the rows ``rows`` (a mask)."""
    return runs_of(np.repeat(np.arange(group_ptr.size - 1), np.diff(group_ptr))[rows])


def _all_margins(state):
    """All rows' margins: the RAM store's array, or gathered block by block."""
    if state.rows.in_memory:
        return state.rows.full("margin")
    out = np.empty((state.cache.n_rows, state.n_outputs))
    for block in range(state.cache.n_blocks):
        start = int(state.cache.block_row_starts[block])
        view = state.rows.load(block, ("margin",))["margin"]
        out[start:start + len(view)] = view
    return out


def cv(params: dict[str, Any] | None, dtrain: Any, num_boost_round: int = 10,
       nfold: int = 5, stratified: bool = True, folds: Any = None, metrics: Any = (),
       early_stopping_rounds: int | None = None, maximize: bool | None = None,
       verbose_eval: bool | int | None = None, show_stdv: bool = True, seed: int = 0,
       as_pandas: bool = True, return_oof: bool = False, return_models: bool = False,
       memory_limit: int | str | None = None) -> Any:
    """Cross-validate boosting on a cache, as ``xgboost.cv``.

    Parameters
    ----------
    params : dict
        As :func:`oocboost.train`.
    dtrain : Cache or path
        The cache to split into folds (it is never copied).
    num_boost_round : int
    nfold : int
        Folds (2 to 255); each row's fold comes from a hash of its id and ``seed``.
        XGBoost's default is 3 and scikit-learn's 5: we follow scikit-learn.
    stratified : bool
        Deal each class to the folds separately (classification objectives; regression
        folds are plain). XGBoost's default is False; we default to True, as
        scikit-learn's ``cross_val_score`` does for classifiers.
    folds : array of a fold id per row, list of (train_index, test_index), a
        scikit-learn splitter (``KFold(...)``), or None
        Your own folds; they must partition the rows (each row in exactly one test set,
        each fold's training rows all the others).
    metrics : str or list of str
        Metrics to report (default: the ``eval_metric`` parameter, else the objective's).
    early_stopping_rounds : int or None
        Stop when the mean test score of the last metric has not improved for this many
        rounds; the result then ends at the best round.
    maximize : bool or None
        Whether the last metric improves upward (default: the metric's own direction).
    verbose_eval : bool, int or None
        Print the scores every round (or every ``verbose_eval`` rounds).
    show_stdv : bool
        Print the standard deviations too.
    seed : int
        Seed of the fold assignment.
    as_pandas : bool
        Return a pandas DataFrame when pandas is installed (else a dict of lists).
    return_oof : bool
        Also return the out-of-fold predictions (what each row's own fold model, at the
        kept number of rounds, predicts for it): (n_rows,) or (n_rows, K).
    return_models : bool
        Also return the fold models (a list of :class:`Model`, fold order).
    memory_limit : int or str or None
        As :func:`oocboost.train`; all folds grow in the same passes when it allows.

    Returns
    -------
    DataFrame or dict of lists
        Per round: ``train-{metric}-mean``, ``train-{metric}-std``, ``test-{metric}-mean``,
        ``test-{metric}-std`` (xgboost.cv's names; the std over folds, ``ddof=0``). With
        ``return_oof`` / ``return_models``, a tuple ``(result, oof[, models])``.
    """
    from ...model.model import Model

    params = dict(params or {})
    if metrics:
        params["eval_metric"] = [metrics] if isinstance(metrics, str) else list(metrics)
    p, cache, objective, metric_objs = start_run(params, dtrain, num_boost_round,
                                                 memory_limit, min_rounds=1)
    objective = with_class_weights(p, objective, cache)
    if p["booster"] == "dart":
        raise ParameterError("oocboost.cv grows every fold in the same passes, which DART's "
                             "per-model drops do not allow yet: cross-validate booster="
                             "'gbtree', or train each fold with train()")
    labels, weights = cache.read_labels()
    objective.check_labels(labels, f"training cache {cache.path}")
    ranking = getattr(objective, "needs_groups", False)
    if ranking and cache.group_ptr is None:
        raise ParameterError(f"{objective.name} needs query groups: build the training "
                             f"cache {cache.path} with group=COLUMN (--group COLUMN)")
    if folds is not None:
        fold_of_row, nfold = folds_from_user(folds, cache.n_rows, labels)
        if ranking:
            check_group_folds(cache.group_ptr, fold_of_row)
    elif ranking:
        _check_nfold(nfold, cache.group_ptr.size - 1)
        fold_of_row = group_folds(cache.group_ptr, int(nfold), seed, FOLD_STREAM)
    else:
        _check_nfold(nfold, cache.n_rows)
        fold_of_row = make_folds(cache.n_rows, int(nfold), labels=labels, seed=seed,
                                 stratified=bool(stratified) and objective.is_classification)
    bases = _fold_bases(objective, p, labels, weights, fold_of_row, nfold)
    groups = fold_groups(p, cache, objective, nfold)
    models = [Model.empty_boosted(objective, bases[f], cache, p,
                                  trees_per_round=objective.n_outputs)
              for f in range(nfold)]
    evaluator = _Evaluator(objective, metric_objs, labels, weights, fold_of_row,
                           int(num_boost_round), nfold)
    stopping = _Stopping(evaluator, metric_objs[-1], early_stopping_rounds, maximize,
                         verbose_eval, show_stdv)
    with thread_limit(p["n_threads"], cache.n_rows):
        for fold_ids, plan in groups:
            n_evaluated = _run_group(cache, objective, p, plan, fold_ids, fold_of_row,
                                     bases, models, evaluator, int(num_boost_round),
                                     stopping if len(groups) == 1 else None)
    if len(groups) > 1:
        n_evaluated = stopping.replay(int(num_boost_round))
    keep = stopping.best + 1 if early_stopping_rounds else n_evaluated
    models = [m.slice_rounds(0, keep) for m in models]
    for m in models:
        m.best_iteration = keep - 1
    result = _result_table(evaluator, metric_objs, keep, as_pandas)
    extras = []
    if return_oof:
        extras.append(out_of_fold(models, cache, fold_of_row, objective))
    if return_models:
        extras.append(models)
    return (result, *extras) if extras else result


def _check_nfold(nfold, n_units):
    if isinstance(nfold, bool) or not isinstance(nfold, (int, np.integer)) \
            or not 2 <= nfold <= min(255, n_units):
        raise ParameterError(f"nfold must be an integer in 2..{min(255, n_units)} (rows, or "
                             f"query groups for ranking), got {nfold!r}")


def _run_group(cache, objective, p, plan, fold_ids, fold_of_row, bases, models, evaluator,
               num_boost_round, stopping):
    """Grow ``fold_ids`` together; returns how many rounds were evaluated."""
    k = objective.n_outputs
    state = boosting.BoostingState(cache, objective, p, plan,
                                   np.concatenate([bases[f] for f in fold_ids]),
                                   folds=(fold_ids, fold_of_row))
    try:
        boosting.initial_margins(state, None)
        for r in range(num_boost_round):
            trees = boosting.grow_round(state, r, p["learning_rate"])
            added = []
            for j, fold in enumerate(fold_ids):
                models[fold].add_round(trees[j * k:(j + 1) * k])
                added += models[fold].trees[-k:]
                if state.prev_linear is not None:
                    state.prev_linear.add_to_model(models[fold], models[fold].n_trees - k,
                                                   range(j * k, (j + 1) * k))
            boosting.count_rows(state, added)
            if r >= 1:
                # the first pass of round r brought the margins up to round r - 1
                evaluator.evaluate(state, fold_ids, r - 1)
                if stopping is not None and stopping.after(r - 1):
                    boosting.count_last_round(state)
                    return r
        boosting.finish_margins(state)
        evaluator.evaluate(state, fold_ids, num_boost_round - 1)
        if stopping is not None:
            stopping.after(num_boost_round - 1)
    finally:
        state.close()
    return num_boost_round


class _Stopping:
    """Printing and early stopping on the mean test score of the last metric."""

    def __init__(self, evaluator, metric, rounds, maximize, verbose_eval, show_stdv):
        if rounds is not None and (isinstance(rounds, bool) or int(rounds) < 1):
            raise ParameterError(f"early_stopping_rounds must be a positive integer or "
                                 f"None, got {rounds!r}")
        self.evaluator, self.metric = evaluator, metric
        self.rounds = None if rounds is None else int(rounds)
        self.maximize = metric.higher_is_better if maximize is None else bool(maximize)
        self.period = (0 if not verbose_eval else 1 if verbose_eval is True
                       else int(verbose_eval))
        self.show_stdv = show_stdv
        self.best, self.best_score = 0, None

    def after(self, round_index):
        """Record round ``round_index`` (every fold evaluated); True to stop."""
        if self.period and round_index % self.period == 0:
            say(logger, self._line(round_index))
        score = self.evaluator.mean("test", self.metric.name, round_index)
        better = (self.best_score is None
                  or (score > self.best_score if self.maximize else score < self.best_score))
        if better:
            self.best, self.best_score = round_index, score
        return self.rounds is not None and round_index - self.best >= self.rounds

    def replay(self, n_rounds):
        """Folds grown in several groups: the rounds in order once all are evaluated;
        returns the rounds kept."""
        for r in range(n_rounds):
            if self.after(r):
                return r + 1
        return n_rounds

    def _line(self, r):
        parts = []
        for split in ("train", "test"):
            for name, scores in self.evaluator.scores[split].items():
                text = f"{split}-{name}:{np.mean(scores[r]):.5f}"
                if self.show_stdv:
                    text += f"+{np.std(scores[r]):.5f}"
                parts.append(text)
        return f"[{r}]\t" + "\t".join(parts)


def _result_table(evaluator, metrics, n_rounds, as_pandas):
    """xgboost.cv's table: train metrics, then test metrics, mean and std of each."""
    table = {}
    for split in ("train", "test"):
        for m in metrics:
            scores = evaluator.scores[split][m.name][:n_rounds]
            table[f"{split}-{m.name}-mean"] = scores.mean(axis=1).tolist()
            table[f"{split}-{m.name}-std"] = scores.std(axis=1).tolist()
    if as_pandas:
        try:
            import pandas as pd
        except ImportError:  # pandas is optional: the dict of lists is the same table
            return table
        return pd.DataFrame(table)
    return table


def out_of_fold(models, cache, fold_of_row, objective):
    """Each row's prediction by the model of the fold that held it out, in one pass
    over the cache: (n_rows,) or (n_rows, K) as the objective predicts."""
    k = objective.n_outputs
    margins = np.empty((cache.n_rows, k))
    for block in cache.iter_blocks(prefetch=1):
        held = fold_of_row[block.row_start:block.row_start + block.n_rows]
        for fold, model in enumerate(models):
            rows = np.flatnonzero(held == fold)
            if len(rows):
                margins[block.row_start + rows] = model.predict_margin_binned(
                    np.ascontiguousarray(block.codes[:, rows]), cache.max_bin - 1,
                    include_base=block.base_margin is None)
                if block.base_margin is not None:
                    margins[block.row_start + rows] += block.base_margin[rows]
    out = objective.transform(margins)
    return out[:, 0] if out.ndim == 2 and out.shape[1] == 1 else out
