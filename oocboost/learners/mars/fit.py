"""MARS trained from a cache: the forward pass (one data pass a step, ``forward.py``), a
last pass for the Gram matrix of the final terms, and the backward pass (no data pass:
every subset's RSS comes from that Gram matrix) choosing terms by generalized
cross-validation.
"""
import time
from dataclasses import dataclass

import numpy as np

from ...engine.blocks import timed_blocks
from ...engine.plan import plan_train
from ...errors import ParameterError
from ...kernels import mars as km
from ...model.mars import representatives
from .forward import endspan, score_candidates
from .terms import Terms

#: Singular values below this share of the largest are dropped when terms are dependent.
_RIDGE = 1e-10
#: Relative difference under which two RSS or GCV values tie.
_TIE = 1e-9


@dataclass
class MarsConfig:
    """Settings (see ``MARSRegressor``)."""

    max_terms: object = None        # None: min(2 n_features + 1, 41)
    max_degree: int = 1
    penalty: float = 3.0
    thresh: float = 1e-3
    min_span: object = None         # None: Friedman's endspan
    memory_limit: object = None
    prefetch: object = None
    n_jobs: object = None


def check_config(config, n_features):
    """Validated copy of ``config`` with the defaults filled in."""
    from .params import MARS_SPEC as spec

    max_terms = spec["max_terms"].check(config.max_terms)
    if max_terms is None:
        max_terms = min(2 * n_features + 1, 41)
    return MarsConfig(max_terms, spec["max_degree"].check(config.max_degree),
                      spec["penalty"].check(config.penalty),
                      spec["thresh"].check(config.thresh),
                      spec["min_span"].check(config.min_span), config.memory_limit,
                      config.prefetch, config.n_jobs)


class _Data:
    """The cache as MARS reads it: codes, targets (J, n) and row weights, block by block."""

    def __init__(self, cache, targets_of, config):
        self.cache = cache
        self.targets_of = targets_of
        self.plan = plan_train(config.memory_limit, n_rows=cache.n_rows,
                               n_features=cache.n_features, max_bin=cache.max_bin,
                               block_rows=cache.block_rows, n_blocks=cache.n_blocks,
                               codes_itemsize=np.dtype(cache.codes_dtype).itemsize,
                               code_bytes_per_row=cache.code_bytes_per_row,
                               prefetch=config.prefetch)
        self.passes = 0

    def blocks(self):
        self.passes += 1
        for block in timed_blocks(self.cache, self.plan, lambda *_: None):
            codes = block.codes      # feature-major, whole (planes joined, bundles decoded)
            w = (np.ones(block.n_rows) if block.weight is None
                 else np.asarray(block.weight, np.float64))
            yield codes, self.targets_of(block), w


def _inverse(G):
    """The pseudo-inverse of a Gram matrix: its inverse, except that directions of
    dependent terms (singular values under ``_RIDGE`` of the largest) are dropped, so
    rounding never decides between an inverse and a pseudo-inverse."""
    return np.linalg.pinv(G, rcond=_RIDGE, hermitian=True)


def _solve(G, b):
    return _inverse(G) @ b


def _gram(data, terms, rep):
    """One pass: ``(G, B^T W Y, sum w y^2 per target, sum w)`` of the terms."""
    flat = terms.flat()
    G = By = yy = None
    total = 0.0
    for codes, Y, w in data.blocks():
        B = np.empty((len(terms), codes.shape[1]))
        km.basis_binned(codes, rep, *flat, B)
        Bw = B * w
        G = Bw @ B.T if G is None else G + Bw @ B.T
        By = Bw @ Y.T if By is None else By + Bw @ Y.T
        yy = (Y * Y * w).sum(axis=1) if yy is None else yy + (Y * Y * w).sum(axis=1)
        total += float(w.sum())
    return G, By, yy, total


def _step_histograms(data, terms, rep, parents, features, n_targets):
    """One pass: the candidates' per-bin sums, and the Gram statistics of the terms."""
    flat = terms.flat()
    M = len(terms)
    hist = np.zeros((len(parents), len(features), rep.shape[1], M + n_targets + 1))
    G = np.zeros((M, M))
    By = np.zeros((M, n_targets))
    yy = np.zeros(n_targets)
    for codes, Y, w in data.blocks():
        B = np.empty((M, codes.shape[1]))
        km.basis_binned(codes, rep, *flat, B)
        km.candidate_histograms(codes, B, np.ascontiguousarray(Y), w,
                                np.asarray(parents, np.int64),
                                np.asarray(features, np.int64), hist)
        Bw = B * w
        G += Bw @ B.T
        By += Bw @ Y.T
        yy += (Y * Y * w).sum(axis=1)
    return hist, G, By, yy


def forward_pass(data, mapper, config, n_targets, log):
    """Add hinge pairs until ``max_terms``, no candidate, or an R^2 gain < ``thresh``."""
    rep = representatives(mapper, data.cache.max_bin)
    numeric = [f for f in range(len(mapper.n_value_bins))
               if not mapper.is_categorical[f] and len(mapper.bin_edges[f]) > 0]
    if not numeric:
        raise ParameterError("MARS needs at least one numeric feature with two or more "
                             "bins")
    min_rows = config.min_span or endspan(data.cache.n_rows, len(numeric))
    terms = Terms()
    rss0 = None
    while len(terms) < config.max_terms:
        parents = [m for m in range(len(terms)) if terms.degree(m) < config.max_degree]
        hist, G, By, yy = _step_histograms(data, terms, rep, parents, numeric, n_targets)
        beta = _solve(G, By)
        rss = float(yy.sum() - (beta * By).sum())
        rss0 = float(yy.sum() - By[0] ** 2 @ np.ones(n_targets) / G[0, 0]) \
            if rss0 is None else rss0
        G_inv = _inverse(G)
        best = None
        for pi, p in enumerate(parents):
            used = terms.features_of(p)
            for vi, v in enumerate(numeric):
                if v in used:
                    continue
                found = score_candidates(hist[pi, vi], rep[v], mapper.bin_edges[v], p, G_inv,
                                         beta, len(terms), n_targets, min_rows)
                if found is not None and (best is None or found[0] > best[0]):
                    best = (*found, p, v)
        if best is None or best[0] / max(rss0, 1e-300) < config.thresh:
            log["forward_stop"] = "no candidate" if best is None else "thresh"
            break
        gain, k, which, p, v = best
        knot = float(mapper.bin_edges[v][k])
        if which in (0, 1):
            terms.add(p, v, k, knot, +1)
        if which in (0, 2) and len(terms) < config.max_terms:
            terms.add(p, v, k, knot, -1)
        log["forward_rss"].append(rss - gain)
    else:
        log["forward_stop"] = "max_terms"
    return terms, rep


def backward_pass(G, By, yy, total, penalty):
    """Friedman's backward deletion: drop the term whose removal raises the RSS least,
    down to the intercept; keep the subset with the smallest GCV. Returns (kept terms,
    coefficients (len(kept), J), gcv)."""
    def rss_of(keep):
        Gs, bs = G[np.ix_(keep, keep)], By[keep]
        beta = _solve(Gs, bs)
        return float(yy.sum() - (beta * bs).sum()), beta

    def gcv(rss, n_terms):
        c = n_terms + penalty * (n_terms - 1) / 2.0
        return (rss / total) / max(1.0 - c / total, 1e-12) ** 2

    keep = list(range(len(G)))
    rss, beta = rss_of(keep)
    best = (gcv(rss, len(keep)), list(keep), beta)
    while len(keep) > 1:
        trials = np.array([rss_of([k for k in keep if k != drop])[0] for drop in keep[1:]])
        # near ties (dependent terms, rounding of sums made in another block order) go
        # to the earliest term, so the model does not depend on the block size
        first = int(np.flatnonzero(trials <= trials.min() * (1 + _TIE) + 1e-300)[0])
        rss = float(trials[first])
        keep.remove(keep[1 + first])
        score = gcv(rss, len(keep))
        if score < best[0] * (1 - _TIE):
            best = (score, list(keep), rss_of(keep)[1])
    return best[1], best[2], best[0]


def fit_mars(cache, targets_of, n_targets, config):
    """Fit MARS on ``cache``: ``targets_of(block)`` gives the (J, n_rows) targets.

    Returns ``(terms, coef (n_kept, J), log)`` with ``log`` the passes, the forward
    RSS path, the GCV and the reason the forward pass stopped.
    """
    t0 = time.perf_counter()
    if cache.n_rows < 2:
        raise ParameterError(f"MARS needs at least two rows, got n_samples={cache.n_rows}")
    config = check_config(config, cache.n_features)
    data = _Data(cache, targets_of, config)
    log = {"forward_rss": []}
    terms, rep = forward_pass(data, cache.bin_mapper, config, n_targets, log)
    G, By, yy, total = _gram(data, terms, rep)
    keep, coef, gcv = backward_pass(G, By, yy, total, config.penalty)
    log.update(data_passes=data.passes, gcv=gcv, n_forward_terms=len(terms),
               seconds=time.perf_counter() - t0)
    return terms.subset(keep), coef, log
