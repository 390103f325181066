"""MARS (Friedman 1991) as scikit-learn estimators, trained out of core
(``learners/mars``): hinge functions at the cache's bin edges, a forward pass adding
pairs of them (products up to ``max_degree``), a backward pass keeping the subset with
the best generalized cross-validation. ``MARSClassifier`` fits a logistic regression on
the terms MARS chooses for the class indicators (py-earth's recipe with scikit-learn's
``LogisticRegression``, fitted block by block here).

Names follow py-earth's ``Earth``: ``max_terms``, ``max_degree``, ``penalty`` (3.0),
``thresh`` (0.001), ``endspan``-like ``min_span``.

Example
-------
>>> from sklearn.datasets import make_friedman1                          # doctest: +SKIP
>>> X, y = make_friedman1(5000, noise=1.0, random_state=0)               # doctest: +SKIP
>>> mars = oocboost.MARSRegressor(max_degree=2).fit(X, y)                 # doctest: +SKIP
>>> print(mars.summary())                                                # doctest: +SKIP
"""
import numpy as np

from ..learners.mars.fit import MarsConfig
from ..learners.mars.train import train_mars_classifier, train_mars_regressor
from .trees import TreeClassifierMixin, TreeEnsembleBase, TreeRegressorMixin, _to_py
from .validation import predict_input


class _Mars(TreeEnsembleBase):
    _learner = "mars"

    def _config(self):
        return MarsConfig(max_terms=self.max_terms, max_degree=self.max_degree,
                          penalty=self.penalty, thresh=self.thresh, min_span=self.min_span,
                          memory_limit=self.memory_limit, prefetch=self.prefetch,
                          n_jobs=self.n_jobs)

    def _train(self, cache, classes_, counts, params):
        from ..utils.threads import thread_limit

        with thread_limit(self.n_jobs, cache.n_rows):
            if self._task == "classification":
                self.model_ = train_mars_classifier(
                    cache, self._config(), len(classes_), _to_py(classes_), C=self.C,
                    max_iter=self.max_iter, tol=self.tol)
                # data passes of the logistic fit, as LogisticRegression's n_iter_
                self.n_iter_ = np.array([self.model_.training_log["logistic_passes"]])
            else:
                self.model_ = train_mars_regressor(cache, self._config())

    @property
    def terms_(self):
        """The kept terms: lists of hinges ``(feature, knot_bin, knot, sign)``."""
        self._check_fitted()
        return self.model_.part("mars").terms

    @property
    def coef_(self):
        """(n_terms, n_outputs) coefficients of the terms."""
        self._check_fitted()
        return self.model_.part("mars").coef

    def summary(self):
        """The terms, one a line (``h(x3 - 0.70)`` is ``max(0, x3 - 0.70)``)."""
        self._check_fitted()
        names = self.model_.feature_names
        lines = []
        for term, coef in zip(self.terms_, self.coef_):
            text = " * ".join(f"h({names[f]} - {k:.4g})" if s > 0 else f"h({k:.4g} - "
                              f"{names[f]})" for f, _, k, s in term) or "(intercept)"
            lines.append(f"{text:<50s} {', '.join(f'{c:.6g}' for c in coef)}")
        return "\n".join(lines)

    @property
    def feature_importances_(self):
        raise AttributeError("MARS has no impurity importances; use "
                             "oocboost.permutation_importance")

    def apply(self, X):
        raise AttributeError("MARS has no trees to apply")

    def decision_path(self, X):
        raise AttributeError("MARS has no trees")


_DOC_PARAMS = """
    max_terms : int or None, default None
        Terms of the forward pass at most, intercept included (None: ``min(2 n + 1, 41)``
        for ``n`` features).
    max_degree : int, default 1
        Hinges per term at most (1: additive).
    penalty : float, default 3.0
        GCV's cost per knot ``d``: ``C(M) = M + d (M - 1) / 2``.
    thresh : float, default 0.001
        The forward pass stops when a pair lowers the RSS by less than this share of the
        intercept-only RSS.
    min_span : int or None, default None
        Rows of a parent's support kept on each side of a knot (None: Friedman's
        ``endspan = 3 - log2(0.05 / n)``).
    n_jobs, memory_limit, cache_dir, max_bin, prefetch :
        As for :class:`~oocboost.DecisionTreeRegressor`.
"""


class MARSRegressor(TreeRegressorMixin, _Mars):
    __doc__ = """Multivariate adaptive regression splines, trained out of core.

    Parameters
    ----------""" + _DOC_PARAMS + """
    Attributes
    ----------
    terms_, coef_, model_ (``learner="mars"``), and ``summary()``.
    """

    def __init__(self, max_terms=None, max_degree=1, penalty=3.0, thresh=1e-3,
                 min_span=None, n_jobs=None, memory_limit=None, cache_dir=None, max_bin=256,
                 prefetch=None):
        self.max_terms = max_terms
        self.max_degree = max_degree
        self.penalty = penalty
        self.thresh = thresh
        self.min_span = min_span
        self.n_jobs = n_jobs
        self.memory_limit = memory_limit
        self.cache_dir = cache_dir
        self.max_bin = max_bin
        self.prefetch = prefetch


class MARSClassifier(TreeClassifierMixin, _Mars):
    __doc__ = """Logistic MARS: terms chosen by MARS on the class indicators, then a
    logistic (two classes) or multinomial regression on them.

    Parameters
    ----------""" + _DOC_PARAMS + """
    C : float, default 1.0
        Inverse strength of the logistic regression's L2 penalty (scikit-learn's; the
        intercept is not penalised).
    max_iter : int, default 100
        Data passes of the logistic fit at most (one bound-optimisation step each).
    tol : float, default 1e-6
        Stop when no coefficient moves by more than ``tol`` (relative).
    """

    def __init__(self, max_terms=None, max_degree=1, penalty=3.0, thresh=1e-3,
                 min_span=None, C=1.0, max_iter=100, tol=1e-6, n_jobs=None,
                 memory_limit=None, cache_dir=None, max_bin=256, prefetch=None):
        self.max_terms = max_terms
        self.max_degree = max_degree
        self.penalty = penalty
        self.thresh = thresh
        self.min_span = min_span
        self.C = C
        self.max_iter = max_iter
        self.tol = tol
        self.n_jobs = n_jobs
        self.memory_limit = memory_limit
        self.cache_dir = cache_dir
        self.max_bin = max_bin
        self.prefetch = prefetch

    def predict_proba(self, X):
        """Class probabilities (n_rows, n_classes)."""
        from ..model.predict import predict

        self._check_fitted()
        proba = np.asarray(predict(self.model_, predict_input(self, X)), np.float64)
        if proba.ndim == 1:
            proba = np.column_stack([1.0 - proba, proba])
        return proba

