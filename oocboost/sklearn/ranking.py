"""``GradientBoostingRanker``: learning to rank with XGBoost's ``XGBRanker`` interface.

Query groups come as ``qid`` (a group id per row) or ``group`` (the size of each group),
or, for a pandas DataFrame, a column named ``qid`` (XGBoost's convention). The rows of a
group must be contiguous, as XGBoost requires; ``sample_weight`` weighs whole groups
(one weight per group, or per row with equal weights within each group).

Example
-------
>>> from oocboost import GradientBoostingRanker
>>> ranker = GradientBoostingRanker(n_estimators=50, max_depth=4)       # doctest: +SKIP
>>> ranker.fit(X, relevance, qid=query_id)                               # doctest: +SKIP
>>> scores = ranker.predict(X_new)      # higher ranks first, per query  # doctest: +SKIP
"""
import numpy as np

from ..cache.groups import runs_of
from ..errors import ParameterError
from .base import continued_model
from .boosting import _GradientBoosting, fit_offsets
from .validation import fit_input


def _qid_column(X, qid, group):
    """``(X, qid)``: a DataFrame's ``qid`` column taken out when no ids were given."""
    columns = getattr(X, "columns", None)
    if qid is None and group is None and columns is not None and "qid" in list(columns):
        return X.drop(columns=["qid"]), np.asarray(X["qid"])
    return X, qid


def query_ids(n_rows, qid, group, what="X"):
    """A group id per row from ``qid`` or ``group`` (sizes), checked."""
    if (qid is None) == (group is None):
        raise ParameterError(f"{what}: give the query groups as exactly one of qid (a "
                             f"group id per row) or group (the size of each group)")
    if group is not None:
        sizes = np.asarray(group)
        if sizes.ndim != 1 or sizes.dtype.kind not in "iu" or np.any(sizes < 1) or \
                sizes.sum() != n_rows:
            raise ParameterError(f"{what}: group must list positive integer group sizes "
                                 f"summing to the {n_rows} rows, got {sizes[:5]}... "
                                 f"(sum {int(sizes.sum()) if sizes.size else 0})")
        return np.repeat(np.arange(sizes.size, dtype=np.float64), sizes)
    qid = np.asarray(qid)
    if qid.shape != (n_rows,) or qid.dtype.kind not in "biuf":
        raise ParameterError(f"{what}: qid must hold one number per row ({n_rows}), got "
                             f"{qid.dtype} {qid.shape}")
    return qid.astype(np.float64)


def _row_weights(sample_weight, qid):
    """Per-group weights spread over their rows; per-row weights kept as they are."""
    if sample_weight is None:
        return None
    w = np.asarray(sample_weight, np.float64)
    ptr = runs_of(qid)
    if w.shape == qid.shape:
        return w
    if w.shape == (ptr.size - 1,):
        return np.repeat(w, np.diff(ptr))
    raise ParameterError(f"sample_weight must have one weight per query group "
                         f"({ptr.size - 1}) or per row ({qid.size}), got shape {w.shape}")


class GradientBoostingRanker(_GradientBoosting):
    """Gradient-boosted trees for learning to rank (LambdaMART), default objective
    ``rank:ndcg``; also ``rank:pairwise`` and ``rank:map``. Parameters and defaults as
    :class:`GradientBoostingRegressor` (XGBoost's), plus ``lambdarank_pair_method``
    ("topk" or "mean"), ``lambdarank_num_pair_per_sample``, ``lambdarank_normalization``,
    ``lambdarank_score_normalization`` and ``ndcg_exp_gain``.
    ``predict`` gives scores: within a query, higher scores rank first.
    """

    _estimator_type = "ranker"

    def fit(self, X, y=None, *, group=None, qid=None, sample_weight=None, eval_set=None,
            eval_group=None, eval_qid=None, sample_weight_eval_set=None, base_margin=None,
            base_margin_eval_set=None, init_score=None, eval_init_score=None,
            init_model=None, xgb_model=None):
        """Train on arrays/DataFrames with ``qid`` or ``group`` (or a DataFrame's
        ``qid`` column), or on a ``Cache`` built with ``group=``.

        ``eval_set`` is a list of ``(X, y)`` with ``eval_qid`` (or ``eval_group``) a
        list of their query ids (sizes); evaluated with the default metric ``ndcg@32``
        (``map@32`` for ``rank:map``) unless ``eval_metric`` says otherwise.
        ``base_margin`` (alias ``init_score``) and ``base_margin_eval_set`` (alias
        ``eval_init_score``): each row's offset, as XGBoost's. ``init_model`` (alias
        ``xgb_model``): a ranker's model to continue, ``n_estimators`` more rounds.
        """
        from ..cache.store import Cache

        objective = self.objective or "rank:ndcg"
        if callable(objective) or not str(objective).startswith("rank:"):
            raise ParameterError(f"GradientBoostingRanker needs a rank:* objective "
                                 f"(rank:ndcg, rank:pairwise, rank:map), got {objective!r}")
        train_group = None
        if not isinstance(X, Cache):
            X, qid = _qid_column(X, qid, group)
            X, y, sample_weight = fit_input(self, X, y, sample_weight, classifier=False)
            train_group = query_ids(len(y), qid, group)
            sample_weight = _row_weights(sample_weight, train_group)
        evals_group = None
        if eval_set:
            evals_group = []
            eval_set = list(eval_set)
            for i, (Xe, ye) in enumerate(eval_set):
                qe = eval_qid[i] if eval_qid else None
                ge = eval_group[i] if eval_group else None
                Xe, qe = _qid_column(Xe, qe, ge)
                eval_set[i] = (Xe, ye)
                evals_group.append(query_ids(len(ye), qe, ge, f"eval_set[{i}]"))
        offsets = fit_offsets(base_margin, init_score, base_margin_eval_set,
                              eval_init_score)
        return self._fit(X, y, sample_weight, eval_set, sample_weight_eval_set, objective,
                         group=train_group, eval_group=evals_group, offsets=offsets,
                         init_model=continued_model(init_model, xgb_model))

    def _cache_objective(self, cache):
        return self.objective or "rank:ndcg", None

    def predict(self, X, iteration_range=None, base_margin=None):
        """Ranking scores (n_rows,), the best iteration when early stopping ran;
        ``base_margin``: each row's offset, as at ``fit``."""
        margin = np.asarray(self._margin(X, iteration_range, base_margin), np.float64)
        return margin.reshape(len(margin))

    def score(self, X, y, qid=None, group=None):
        """The first evaluation metric (default ``ndcg@32``) of the predictions over the
        query groups of ``X`` (``qid``, ``group`` or a DataFrame's ``qid`` column)."""
        from ..model.metrics import get_metric

        X, qid = _qid_column(X, qid, group)
        y = np.asarray(y, np.float64)
        ids = query_ids(len(y), qid, group)
        ptr = runs_of(ids)
        names = self.eval_metric if isinstance(self.eval_metric, (list, tuple)) else \
            [self.eval_metric]
        name = names[0] or _default_metric(self)
        params = {"ndcg_exp_gain": self.ndcg_exp_gain} if name.startswith("ndcg") else {}
        return get_metric(name, **params)(y, self.predict(X), group_ptr=ptr)


def _default_metric(ranker):
    from ..model.objectives import get_objective

    params = {k: getattr(ranker, k) for k in (
        "lambdarank_pair_method", "lambdarank_num_pair_per_sample",
        "lambdarank_normalization", "lambdarank_score_normalization", "ndcg_exp_gain")}
    return get_objective(ranker.objective or "rank:ndcg", params).default_metric


__all__ = ["GradientBoostingRanker"]
