"""Ranking metrics over query groups, with XGBoost's names and definitions:
``ndcg``, ``map``, ``pre``, each optionally ``@k`` (the top ``k`` ranks) and, for ndcg
and map, ``-`` (``ndcg@5-``: a group without relevant documents scores 0, not 1).

Per group, documents ranked by decreasing prediction (ties in row order):

- ``ndcg@k = DCG@k / IDCG@k`` with ``DCG@k = sum_{i<k} gain(y_(i)) / log2(i + 2)``, gain
  ``2^y - 1`` (``y`` with ``ndcg_exp_gain=False``);
- ``map@k = sum_{i<k} P@(i+1) y_(i) / min(relevant, k)`` for 0/1 labels;
- ``pre@k = (relevant in the top k) / min(k, group size)``.

The value is the mean over groups weighted by the group weights (a group's weight is
the weight of its rows). One difference from XGBoost: its weighted ``ndcg`` adds 1 (not
the group's weight times 1) for a group without relevant documents; ours weighs that
group like any other. Called with ``group_ptr`` (``(G + 1,)`` boundaries); without it
all rows are one group, as XGBoost does without query ids.
"""
import re

import numpy as np

from ..errors import InputError, ParameterError
from ..kernels import ranking as _k
from .metric_base import Metric

_KINDS = {"ndcg": _k.METRIC_NDCG, "map": _k.METRIC_MAP, "pre": _k.METRIC_PRE}
_NAME = re.compile(r"^(ndcg|map|pre)(?:@(\d+))?(-)?$")


class RankMetric(Metric):
    """``ndcg``/``map``/``pre`` with optional ``@k`` and ``-`` (module docstring)."""

    higher_is_better = True
    is_additive = False
    needs_groups = True

    def __call__(self, label, prediction, weight=None, group_ptr=None):
        label, prediction, weight = self._inputs(label, prediction, weight)
        n = label.shape[0]
        ptr = np.array([0, n], np.int64) if group_ptr is None else \
            np.asarray(group_ptr, np.int64)
        if ptr.ndim != 1 or ptr.size < 2 or ptr[0] != 0 or ptr[-1] != n or \
                np.any(np.diff(ptr) < 1):
            raise InputError(f"{self.name}: group_ptr must rise strictly from 0 to {n} "
                             f"(the rows), got {ptr[:5]}...")
        kind = _KINDS[self.params["kind"]]
        if kind != _k.METRIC_NDCG or self.params["ndcg_exp_gain"]:
            bad = (label < 0) | (label != np.floor(label))
            if kind != _k.METRIC_NDCG:
                bad |= label > 1
            if np.any(bad):
                i = int(np.argmax(bad))
                want = "0/1 labels" if kind != _k.METRIC_NDCG else \
                    "integer relevance degrees (ndcg_exp_gain)"
                raise InputError(f"{self.name} expects {want}; row {i} has label "
                                 f"{float(label[i])!r}")
        scores = np.empty(ptr.size - 1)
        _k.group_scores(kind, ptr, label, prediction, self.params["k"],
                        self.params["ndcg_exp_gain"], self.params["minus"], scores)
        if weight is None:
            return float(min(1.0, scores.mean()))
        group_weight = weight[ptr[:-1]]
        total = group_weight.sum()
        return float(min(1.0, (scores * group_weight).sum() / total)) if total > 0 \
            else float("nan")

    def partial(self, label, prediction, weight=None):
        raise ParameterError(f"{self.name} is computed per query group; call it on all "
                             f"rows with group_ptr")

    def finalize(self, sums):
        raise ParameterError(f"{self.name} is computed per query group; call it on all "
                             f"rows with group_ptr")


def rank_metric(name, params):
    """The ranking metric ``name`` or None when ``name`` is not one. ``params`` may
    hold ``ndcg_exp_gain`` (default True)."""
    match = _NAME.match(name) if isinstance(name, str) else None
    if match is None:
        return None
    kind, k, minus = match.groups()
    if k is not None and int(k) < 1:
        raise ParameterError(f"metric {name}: the cut-off k must be >= 1")
    extra = set(params) - {"ndcg_exp_gain"}
    if extra:
        raise ParameterError(f"metric {name} takes no parameter(s) {sorted(extra)}")
    if minus and kind == "pre":
        raise ParameterError(f"metric {name}: '-' applies to ndcg and map only")
    return RankMetric(name, {"kind": kind, "k": 0 if k is None else int(k),
                             "minus": bool(minus),
                             "ndcg_exp_gain": bool(params.get("ndcg_exp_gain", True))})
