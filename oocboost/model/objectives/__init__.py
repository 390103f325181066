"""Learning objectives with XGBoost's names and semantics.

An :class:`Objective` knows, for one loss ``l(y, m)`` of a label ``y`` and a margin ``m``
(the raw, untransformed score):

- ``gradients``: per-row ``g = w dl/dm`` and ``h = w d2l/dm2`` into float32 buffers the
  caller owns (numba kernels in :mod:`oocboost.kernels.objective_kernels`);
- ``base_margin``: the starting margin (intercept) from streamed :class:`LabelStats`, as
  XGBoost >= 2 estimates ``base_score`` when the user gives none;
- ``base_score_to_margin``: a user ``base_score`` (prediction space) to margin space;
- ``transform`` / ``transform_proba`` / ``eval_transform``: margins to predictions;
- ``check_labels``: label validity, naming the source and the first bad row.

================================  ============  ===============  ======================
name                              n_outputs     link             default_metric
================================  ============  ===============  ======================
``reg:squarederror``              1             identity         ``rmse``
``reg:absoluteerror``             1             identity         ``mae``
``reg:pseudohubererror``          1             identity         ``mphe``
``reg:quantileerror``             1             identity         ``quantile``
``binary:logistic``               1             sigmoid          ``logloss``
``multi:softprob``                num_class     softmax          ``mlogloss``
``multi:softmax``                 num_class     softmax, argmax  ``mlogloss``
``count:poisson``                 1             exp              ``poisson-nloglik``
``reg:logistic``                  1             sigmoid          ``rmse``
``binary:logitraw``               1             identity         ``logloss``
``binary:hinge``                  1             m > 0            ``error``
``reg:gamma``                     1             exp              ``gamma-deviance``
``reg:tweedie``                   1             exp              ``tweedie-nloglik@rho``
``survival:cox``                  1             exp              ``cox-nloglik``
``survival:aft``                  1             exp              ``aft-nloglik``
``rank:pairwise``                 1             identity         ``ndcg@32``
``rank:ndcg``                     1             identity         ``ndcg@32``
``rank:map``                      1             identity         ``map@32``
``anomaly:isolation``             1             2^(-m/c(psi))    ``auc`` (1: anomaly)
================================  ============  ===============  ======================

``get_objective(obj.name, obj.params)`` rebuilds an objective (``obj.to_dict()`` holds both).

Known differences from XGBoost
------------------------------
- ``reg:absoluteerror`` and ``reg:quantileerror``: as XGBoost, after growing each tree
  every leaf is reset to the weighted median (``alpha``-quantile) of the residuals
  ``y - m`` of its rows; out of core with one extra pass and a quantile sketch per leaf
  (exact up to about 14,000 distinct residuals per leaf, else within 1/1024 in rank).
- ``reg:pseudohubererror`` intercept: XGBoost (3.2) uses its generic intercept fit
  (Newton steps on the gradients), which can land far from the labels' centre; we use
  the weighted median of the labels, which the loss is robust around.
- ``count:poisson``: ``max_delta_step`` (default 0.7) is both this objective's hessian
  inflation and its trees' leaf clip, as in XGBoost (3.2), which sets the trees'
  ``max_delta_step`` to 0.7 for this objective when the user gives none.
- Arithmetic is float64 (XGBoost: float32); results are rounded to float32 once.
"""

import numpy as np

from ...errors import ParameterError
from .anomaly import make_isolation_score
from .base import Objective, _num_class_param, _real_param
from .classification import (
    BinaryLogistic,
    ClassProbability,
    Hinge,
    LogitRaw,
    RegLogistic,
    Softmax,
)
from .log_link import CoxPH, Gamma, Poisson, Tweedie
from .multi_target import MultiTarget, check_n_targets
from .ranking import LambdaRank, ranking_params
from .regression import AbsoluteError, PseudoHuberError, QuantileError, SquaredError
from .survival import AFT, aft_params

__all__ = ["Objective", "get_objective", "register_objective", "OBJECTIVE_NAMES",
           "POISSON_MAX_DELTA_STEP"]

#: ``count:poisson``'s default ``max_delta_step`` (XGBoost's): its hessian inflation,
#: and the leaf clip of its trees.
POISSON_MAX_DELTA_STEP = 0.7


def _make_squared(p):
    return SquaredError({})


def _make_absolute(p):
    return AbsoluteError({})


def _make_huber(p):
    n = "reg:pseudohubererror"
    return PseudoHuberError({"huber_slope": _real_param(p, "huber_slope", 1.0, n, low=0.0)})


def _make_quantile(p):
    n = "reg:quantileerror"
    value = p.get("quantile_alpha", 0.5)
    if isinstance(value, (list, tuple, np.ndarray)):
        levels = [_real_param({"quantile_alpha": v}, "quantile_alpha", 0.5, n, low=0.0,
                              high=1.0) for v in np.ravel(np.asarray(value, dtype=object))]
        if not levels:
            raise ParameterError(f"{n}: quantile_alpha is an empty list; give one level "
                                 f"or more in (0, 1)")
        if len(set(levels)) != len(levels):
            raise ParameterError(f"{n}: quantile_alpha lists a level twice: {value!r}")
        return QuantileError({"quantile_alpha": levels[0] if len(levels) == 1 else levels})
    return QuantileError({"quantile_alpha": _real_param(p, "quantile_alpha", 0.5, n,
                                                        low=0.0, high=1.0)})


def _make_softmax(name):
    return lambda p: Softmax({"num_class": _num_class_param(p, name)}, name)


def _make_poisson(p):
    n = "count:poisson"
    return Poisson({"max_delta_step": _real_param(p, "max_delta_step", POISSON_MAX_DELTA_STEP,
                                                  n, low=0.0,
                                                  low_open=False)})


def _make_logistic_family(cls):
    def make(p):
        return cls({"scale_pos_weight": _real_param(p, "scale_pos_weight", 1.0, cls.name,
                                                    low=0.0)})
    return make


def _make_tweedie(p):
    n = "reg:tweedie"
    return Tweedie({"tweedie_variance_power": _real_param(p, "tweedie_variance_power", 1.5,
                                                          n, low=1.0, high=2.0)})


_FACTORIES = {
    "reg:squarederror": _make_squared,
    "reg:absoluteerror": _make_absolute,
    "reg:pseudohubererror": _make_huber,
    "reg:quantileerror": _make_quantile,
    "binary:logistic": _make_logistic_family(BinaryLogistic),
    "multi:softprob": _make_softmax("multi:softprob"),
    "multi:softmax": _make_softmax("multi:softmax"),
    "count:poisson": _make_poisson,
    "reg:logistic": _make_logistic_family(RegLogistic),
    "binary:logitraw": _make_logistic_family(LogitRaw),
    "binary:hinge": lambda p: Hinge({}),
    "reg:gamma": lambda p: Gamma({}),
    "reg:tweedie": _make_tweedie,
    "survival:cox": lambda p: CoxPH({}),
    "survival:aft": lambda p: AFT(aft_params(p)),
    "rank:pairwise": lambda p: LambdaRank(ranking_params("rank:pairwise", p), "rank:pairwise"),
    "rank:ndcg": lambda p: LambdaRank(ranking_params("rank:ndcg", p), "rank:ndcg"),
    "rank:map": lambda p: LambdaRank(ranking_params("rank:map", p), "rank:map"),
    "multi:proba": lambda p: ClassProbability({"num_class": _num_class_param(p,
                                                                           "multi:proba")}),
    "anomaly:isolation": make_isolation_score,
}
#: Every built-in objective name (:func:`register_objective` adds others).
OBJECTIVE_NAMES = tuple(_FACTORIES)


def register_objective(name, factory, *, replace=False):
    """Make ``name`` an objective :func:`get_objective` builds, so that training takes it
    (``objective=name``) and model files naming it load and predict.

    Parameters
    ----------
    name : str
        Its name, ``"family:loss"`` as XGBoost's.
    factory : callable (params: dict) -> Objective
        Builds the objective from the training parameters (None values removed): it
        reads and checks its own, raising ParameterError naming them.
    replace : bool
        Replace an objective of that name (a built-in one is never replaced).
    """
    if not isinstance(name, str) or ":" not in name:
        raise ParameterError(f"an objective's name is 'family:loss', got {name!r}")
    if name in OBJECTIVE_NAMES or (name in _FACTORIES and not replace):
        raise ParameterError(f"objective {name!r} is already registered")
    _FACTORIES[name] = factory


def unregister_objective(name):
    """Remove an objective :func:`register_objective` added."""
    if name not in OBJECTIVE_NAMES:
        _FACTORIES.pop(name, None)


def get_objective(name, params=None):
    """Build the objective ``name`` (an XGBoost name) with its parameters.

    Parameters
    ----------
    name : str
        One of :data:`OBJECTIVE_NAMES`.
    params : dict or None
        May hold any training parameters; only the objective's own are read:
        ``huber_slope`` (> 0, default 1.0), ``quantile_alpha`` (in (0, 1), default 0.5,
        or a list of levels: one output each), ``scale_pos_weight`` (> 0, default 1.0),
        ``num_class``
        (integer >= 2, required by ``multi:*``), ``max_delta_step`` (>= 0, default 0.7,
        ``count:poisson``), ``tweedie_variance_power`` (in (1, 2), default 1.5,
        ``reg:tweedie``); for ``rank:*`` ``lambdarank_pair_method`` ("topk" or "mean"),
        ``lambdarank_num_pair_per_sample`` (default 32 for topk, 1 for mean),
        ``lambdarank_normalization``, ``lambdarank_score_normalization``,
        ``ndcg_exp_gain`` (all true by default); ``n_targets`` (default 1: the label
        columns of a multi-output model, see :mod:`.multi_target`). ``None`` values
        count as absent.

    Returns
    -------
    Objective

    Raises
    ------
    ParameterError
        Unknown name (the message lists the known ones) or a parameter out of range.
    """
    if not isinstance(name, str) or name not in _FACTORIES:
        raise ParameterError(
            f"unknown objective {name!r}; expected one of: {', '.join(_FACTORIES)}"
        )
    params = {k: v for k, v in (params or {}).items() if v is not None}
    n_targets = check_n_targets(name, params.pop("n_targets", 1))
    objective = _FACTORIES[name](params)
    return objective if n_targets == 1 else MultiTarget(objective, n_targets)
