"""MARS models from a cache: the regressor's terms and least-squares coefficients, and
the classifier's (MARS on the class indicators, then a logistic regression on the
selected terms, fitted block by block)."""
import numpy as np

from ...errors import ParameterError
from ...kernels import mars as km
from ...model.mars import representatives
from ...utils.log import get_logger, say
from .fit import _Data, fit_mars

logger = get_logger(__name__)


def _model(cache, terms, coef, objective, objective_params, n_classes=None, classes=None):
    from ...model.mars import MarsPart
    from ...model.model import Model, source_attributes

    mapper = cache.bin_mapper
    return Model([], n_outputs=coef.shape[1], objective=objective,
                 objective_params=objective_params, learner="mars", aggregation="sum",
                 feature_names=list(cache.feature_names),
                 feature_types=list(mapper.feature_types), bin_mapper=mapper.to_dict(),
                 n_classes=n_classes, classes=classes, attributes=source_attributes(cache),
                 parts=[MarsPart(terms.hinges, coef)])


def train_mars_regressor(cache, config):
    """MARS on the cache's label. Returns the Model (``learner="mars"``)."""
    terms, coef, log = fit_mars(cache, lambda b: np.asarray(b.label, np.float64)[None], 1,
                                config)
    model = _model(cache, terms, coef, "reg:squarederror", {})
    model.training_log = log
    return model


def _class_targets(n_classes):
    def targets_of(block):
        y = np.asarray(block.label, np.float64).astype(np.int64)
        if n_classes == 2:
            return (y == 1).astype(np.float64)[None]
        return (np.arange(n_classes)[:, None] == y[None]).astype(np.float64)
    return targets_of


def _logistic(cache, terms, n_classes, config, C, max_iter, tol, log):
    """Coefficients of a logistic regression (binary) or multinomial one (K classes) on
    the terms, by a majorize-minimize Newton step a pass (Boehning's bound: a constant
    Hessian ``G / 4``, or ``G / 2`` per class), L2 penalty ``1 / (2C)`` off the
    intercept."""
    targets_of = _class_targets(n_classes)
    data = _Data(cache, targets_of, config)
    rep = representatives(cache.bin_mapper, cache.max_bin)
    flat = terms.flat()
    J = 1 if n_classes == 2 else n_classes
    M = len(terms)
    beta = np.zeros((M, J))
    G = None
    penalty = np.eye(M) / C
    penalty[0, 0] = 0.0
    for it in range(max_iter):
        grad = np.zeros((M, J))
        gram = np.zeros((M, M)) if G is None else None
        for codes, Y, w in data.blocks():
            B = np.empty((M, codes.shape[1]))
            km.basis_binned(codes, rep, *flat, B)
            margin = B.T @ beta
            if J == 1:
                p = 1.0 / (1.0 + np.exp(-margin))
            else:
                e = np.exp(margin - margin.max(axis=1, keepdims=True))
                p = e / e.sum(axis=1, keepdims=True)
            grad += (B * w) @ (p - Y.T)
            if gram is not None:
                gram += (B * w) @ B.T
        if G is None:
            G = gram
        bound = (0.25 if J == 1 else 0.5) * G + penalty
        step = np.linalg.solve(bound + 1e-12 * np.trace(bound) / M * np.eye(M),
                               grad + penalty @ beta)
        beta -= step
        if np.max(np.abs(step)) <= tol * (1.0 + np.max(np.abs(beta))):
            break
    log["logistic_passes"] = it + 1
    log["data_passes"] += data.passes
    return beta


def train_mars_classifier(cache, config, n_classes, classes=None, C=1.0, max_iter=100,
                          tol=1e-6):
    """Logistic MARS: terms chosen by MARS on the class indicators (one target for two
    classes, K otherwise, sharing the terms), then a logistic regression on them."""
    if n_classes < 2:
        raise ParameterError(f"classification needs at least two classes, got {n_classes}")
    from .params import MARS_SPEC

    C, max_iter, tol = (MARS_SPEC[name].check(value) for name, value in
                        (("C", C), ("max_iter", max_iter), ("tol", tol)))
    J = 1 if n_classes == 2 else n_classes
    terms, _, log = fit_mars(cache, _class_targets(n_classes), J, config)
    beta = _logistic(cache, terms, n_classes, config, float(C), int(max_iter), float(tol),
                     log)
    objective, params = (("binary:logistic", {}) if J == 1
                         else ("multi:softprob", {"num_class": n_classes}))
    model = _model(cache, terms, beta, objective, params, n_classes=n_classes,
                   classes=classes)
    model.training_log = log
    return model





def train_mars_from_params(params, cache, *, memory_limit=None, verbose=False):
    """The command line's entry (``task`` inferred as for forests: integer labels with
    at most 32 classes classify)."""
    from ...utils.threads import thread_limit
    from ..common.data import cli_input, task_and_classes
    from .fit import MarsConfig
    from .params import MARS_SPEC

    cache, p = cli_input(cache, params, MARS_SPEC, "mars")
    n_jobs = p.pop("n_jobs", None)
    for unused in ("verbosity", "seed"):   # MARS draws nothing
        p.pop(unused, None)
    task, classes = task_and_classes(p, cache)
    logistic = {k: p.pop(k) for k in ("C", "max_iter", "tol") if k in p}
    config = MarsConfig(**p, memory_limit=memory_limit, n_jobs=n_jobs)
    with thread_limit(n_jobs, cache.n_rows):
        if task == "classification":
            model = train_mars_classifier(cache, config, len(classes), classes, **logistic)
        else:
            if logistic:
                raise ParameterError(f"{sorted(logistic)} are the logistic fit's: only for "
                                     f"classification")
            model = train_mars_regressor(cache, config)
    model.params = {**{k: v for k, v in p.items()}, **logistic, "task": task}
    if verbose:
        log = model.training_log
        n_terms = len(model.part("mars").terms)
        say(logger, f"mars: {n_terms} terms kept of {log['n_forward_terms']}, "
                    f"GCV {log['gcv']:.6g}, {log['data_passes']} data passes, "
                    f"{log['seconds']:.2f}s")
    return model
