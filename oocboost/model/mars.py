"""The MARS part of a model file (``learner: "mars"``): terms that are products of hinge
functions on numeric features, and a coefficient per term and output. The margin is
``sum_m coef[m] * B_m(x)``; raw values go in as they are, cache codes as their bins'
representative values (what training read, ``learners/mars/terms.py``).

JSON: ``{"terms": [[[feature, knot_bin, knot, sign], ...], ...], "coef": [[...], ...]}``,
term 0 the intercept (no hinge), ``sign`` +1 for ``max(0, x - knot)``, -1 for
``max(0, knot - x)``, ``coef`` (n_terms, n_outputs).
"""
import math

import numpy as np

from ..cache.edges_text import feature_edges
from ..errors import ModelError
from ..kernels import mars as km
from .parts import ModelPart, register_part

#: Terms and hinges per term a model file may hold.
MAX_TERMS, MAX_DEGREE = 1 << 16, 64


def representatives(mapper, n_codes, outer_width=0.5, ranges=None):
    """(n_features, n_codes) float64: each numeric bin's middle (the outer bins
    ``outer_width`` of their neighbour's width beyond their edge, within ``ranges[f] =
    (min, max)`` when given), NaN for the missing code and for categorical features
    (MARS leaves them out)."""
    ranges = ranges or {}
    rep = np.full((len(mapper.n_value_bins), n_codes), np.nan)
    for f, edges in enumerate(mapper.bin_edges):
        if mapper.is_categorical[f] or len(edges) == 0:
            continue
        e = np.asarray(edges, np.float64)
        step_lo = e[1] - e[0] if len(e) > 1 else 1.0
        step_hi = e[-1] - e[-2] if len(e) > 1 else 1.0
        lo, hi = ranges.get(f, (-np.inf, np.inf))
        rep[f, 0] = min(e[0], max(lo, e[0] - outer_width * step_lo))
        rep[f, 1:len(e)] = 0.5 * (e[:-1] + e[1:])
        rep[f, len(e)] = max(e[-1], min(hi, e[-1] + outer_width * step_hi))
    return rep


def flat_terms(terms):
    """``(term_offset, hinge_feature, hinge_knot, hinge_sign)`` of terms given as lists
    of ``(feature, knot_bin, knot, sign)`` hinges, for ``kernels/mars.py``."""
    counts = [len(t) for t in terms]
    offset = np.zeros(len(counts) + 1, np.int64)
    np.cumsum(counts, out=offset[1:])
    every = [h for t in terms for h in t]
    return (offset, np.array([h[0] for h in every], np.int64),
            np.array([h[2] for h in every], np.float64),
            np.array([h[3] for h in every], np.float64))


@register_part
class MarsPart(ModelPart):
    """Terms and coefficients (see the module docstring)."""

    key = "mars"
    needs_float64 = True

    def __init__(self, terms, coef):
        self.terms = [[(int(f), int(b), float(k), int(s)) for f, b, k, s in t] for t in terms]
        self.coef = np.ascontiguousarray(coef, np.float64).reshape(len(self.terms), -1)

    def flat(self):
        return flat_terms(self.terms)

    def add_margin(self, model, X, out, t0, t1):
        """``out += B(X) coef`` for raw rows X (n_rows, n_features)."""
        B = np.empty((len(self.terms), X.shape[0]))
        km.basis_raw(np.ascontiguousarray(X, np.float64), *self.flat(), B)
        out += B.T @ self.coef

    def add_margin_binned(self, model, codes, missing_bin, out, t0, t1):
        """``out += B coef`` for cache codes (n_features, n_rows), read as their bins'
        representative values."""
        B = np.empty((len(self.terms), codes.shape[1]))
        km.basis_binned(np.ascontiguousarray(codes), model.bin_representatives(),
                        *self.flat(), B)
        out += B.T @ self.coef

    # ------------------------------------------------------------------ checks and JSON
    def validate(self, model, fail):
        """Each hinge on a numeric feature of the model, at most once per term; finite
        knots and coefficients; signs +-1; term 0 the intercept; one column per output."""
        if not self.terms or self.terms[0]:
            fail("mars: term 0 must be the intercept (no hinge)")
        if self.coef.shape[1] != int(model.n_outputs):
            fail(f"mars: coef has {self.coef.shape[1]} columns for {model.n_outputs} "
                 f"outputs")
        if not np.all(np.isfinite(self.coef)):
            fail("mars: coefficients must be finite")
        edges = None
        if model.bin_mapper is not None:
            edges = model.bin_mapper.get("features")
        for m, term in enumerate(self.terms):
            seen = set()
            for f, b, knot, sign in term:
                if not 0 <= f < model.n_features or model.feature_types[f] != "numeric":
                    fail(f"mars: term {m}: feature {f} is not a numeric feature")
                if f in seen:
                    fail(f"mars: term {m}: feature {f} appears twice")
                seen.add(f)
                if sign not in (1, -1) or not math.isfinite(knot):
                    fail(f"mars: term {m}: a hinge needs sign +1 or -1 and a finite knot")
                if edges is not None:
                    e = feature_edges(edges[f], f"mars: feature {f}")
                    if not 0 <= b < max(len(e), 1):
                        fail(f"mars: term {m}: knot bin {b} of feature {f} is not one of "
                             f"its {len(e)} edges")

    def describe(self):
        return f"{len(self.terms)} MARS terms"

    def to_json(self):
        return {"terms": [[[f, b, k, s] for f, b, k, s in t] for t in self.terms],
                "coef": self.coef.tolist()}

    @classmethod
    def from_json(cls, d, doc, where):
        def fail(msg):
            raise ModelError(f"{where}: mars: {msg}")

        if not isinstance(d, dict) or set(d) != {"terms", "coef"}:
            fail("must be an object with exactly 'terms' and 'coef'")
        terms, coef = d["terms"], d["coef"]
        if not isinstance(terms, list) or not 1 <= len(terms) <= MAX_TERMS:
            fail(f"'terms' must be a list of 1 to {MAX_TERMS} terms")
        for m, term in enumerate(terms):
            if not isinstance(term, list) or len(term) > MAX_DEGREE or not all(
                    isinstance(h, list) and len(h) == 4
                    and all(isinstance(v, int) and not isinstance(v, bool)
                            for v in (h[0], h[1], h[3]))
                    and isinstance(h[2], (int, float)) and not isinstance(h[2], bool)
                    for h in term):
                fail(f"term {m} must be a list of [feature, knot_bin, knot, sign] hinges")
        if not isinstance(coef, list) or len(coef) != len(terms) or not all(
                isinstance(row, list) and row and len(row) == len(coef[0])
                and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in row)
                for row in coef):
            fail("'coef' must be one list of numbers per term, all of one length")
        return cls(terms, coef)
