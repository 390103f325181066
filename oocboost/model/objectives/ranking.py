"""Learning to rank: ``rank:pairwise``, ``rank:ndcg`` and ``rank:map`` (LambdaMART).

A row's gradient depends on the other rows of its query group, so the booster hands
whole groups to :meth:`LambdaRank.group_gradients` (``learners/boosting/ranking.py``
carries a group that crosses a block boundary over to the next block). The kernels and
the formulas are in :mod:`oocboost.kernels.ranking`.
"""
import numbers

import numpy as np

from ...errors import InputError, ParameterError
from ...kernels import ranking as _k
from .base import Objective

#: XGBoost's defaults: pairs at the top 32 ranks (``topk``), 1 partner per document
#: (``mean``).
DEFAULT_TOPK = 32
DEFAULT_MEAN_PAIRS = 1
#: Highest relevance degree with ``ndcg_exp_gain`` (the gain ``2^y - 1`` in 32 bits).
MAX_EXP_GAIN_LABEL = 31

_KINDS = {"rank:pairwise": _k.PAIRWISE, "rank:ndcg": _k.NDCG, "rank:map": _k.MAP}


def _flag(params, key, default, name):
    value = params.get(key, default)
    if isinstance(value, (bool, np.bool_)) or value in (0, 1):
        return bool(value)
    raise ParameterError(f"{name}: {key} must be true or false, got {value!r}")


def ranking_params(name, params):
    """The LambdaMART parameters with XGBoost's defaults, checked."""
    method = params.get("lambdarank_pair_method", "topk")
    if method not in ("topk", "mean"):
        raise ParameterError(f"{name}: lambdarank_pair_method must be 'topk' or 'mean', got "
                             f"{method!r}")
    n_pairs = params.get("lambdarank_num_pair_per_sample")
    if n_pairs is None:
        n_pairs = DEFAULT_TOPK if method == "topk" else DEFAULT_MEAN_PAIRS
    if isinstance(n_pairs, bool) or not isinstance(n_pairs, numbers.Integral) or n_pairs < 1:
        raise ParameterError(f"{name}: lambdarank_num_pair_per_sample must be an integer "
                             f">= 1, got {n_pairs!r}")
    out = {"lambdarank_pair_method": method, "lambdarank_num_pair_per_sample": int(n_pairs)}
    for key in ("lambdarank_normalization", "lambdarank_score_normalization",
                "ndcg_exp_gain"):
        out[key] = _flag(params, key, True, name)
    if params.get("lambdarank_unbiased"):
        raise ParameterError(f"{name}: lambdarank_unbiased (position debiasing of click "
                             f"data) is not offered; leave it false")
    return out


class LambdaRank(Objective):
    """LambdaMART over query groups (module docstring). Labels are relevance degrees:
    integers 0..31 for ``rank:ndcg`` with ``ndcg_exp_gain`` (the gain is ``2^y - 1``),
    0 or 1 for ``rank:map``, any finite number for ``rank:pairwise``. The intercept is 0
    (a constant does not change a ranking); predictions are the margins."""

    needs_groups = True

    def __init__(self, params, name):
        super().__init__(params)
        self.name = name
        self.kind = _KINDS[name]

    @property
    def default_metric(self):
        metric = "map" if self.kind == _k.MAP else "ndcg"
        if self.params["lambdarank_pair_method"] == "topk":
            return f"{metric}@{self.params['lambdarank_num_pair_per_sample']}"
        return metric

    @property
    def default_metric_params(self):
        if self.kind == _k.MAP:
            return {}
        return {"ndcg_exp_gain": self.params["ndcg_exp_gain"]}

    def _check_domain(self, label, where, row_start):
        if self.kind == _k.MAP:
            self._first_bad(label, (label != 0) & (label != 1), where, row_start,
                            "0/1 relevance labels (rank:map)")
        elif self.kind == _k.NDCG and self.params["ndcg_exp_gain"]:
            bad = (label < 0) | (label > MAX_EXP_GAIN_LABEL) | (label != np.floor(label))
            self._first_bad(label, bad, where, row_start,
                            f"integer relevance degrees 0 to {MAX_EXP_GAIN_LABEL} with "
                            f"ndcg_exp_gain (set ndcg_exp_gain=False for other gains)")

    def _gradients(self, label, margin, weight, has_weight, out_grad, out_hess):
        raise InputError(f"{self.name} gradients need whole query groups: group_gradients")

    def group_gradients(self, group_ptr, label, margin, group_weight, weight_norm, seed,
                        round_index, row0, out_grad, out_hess):
        """Gradients of whole groups.

        Parameters
        ----------
        group_ptr : ndarray (G + 1,) int64
            Boundaries of the groups in the arrays below (from 0 to ``n``).
        label : ndarray (n,) float32 ; margin : ndarray (n,) float64
        group_weight : ndarray (G,) float64 ; weight_norm : float
            Each group's weight; ``n_groups / sum of all group weights``.
        seed, round_index, row0 : int
            Draws of the ``mean`` pair method: the seed, the round, the global row of
            row 0 (the draws do not depend on the blocks).
        out_grad, out_hess : ndarray (n,) float32
            OUT.
        """
        p = self.params
        mean = p["lambdarank_pair_method"] == "mean"
        n_pairs = p["lambdarank_num_pair_per_sample"]
        _k.lambdarank_gradients(
            self.kind, np.ascontiguousarray(group_ptr, np.int64), label,
            np.ascontiguousarray(margin, np.float64), np.asarray(group_weight, np.float64),
            float(weight_norm), 0 if mean else n_pairs, n_pairs, p["ndcg_exp_gain"],
            p["lambdarank_score_normalization"], p["lambdarank_normalization"], int(seed),
            int(round_index), int(row0), out_grad, out_hess)

    def _base_margin(self, stats):
        return 0.0
