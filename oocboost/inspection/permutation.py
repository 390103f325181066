"""Permutation importance (Breiman 2001) of any oocboost estimator, computed out of
core: one streamed pass per feature and repeat, rows permuted within blocks by a seeded
hash."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import ParameterError
from ..learners.common.validate import int_param, resolve_seed


class Bunch(dict):
    """A dict whose keys are also attributes, as scikit-learn's ``sklearn.utils.Bunch``
    (not imported from it: ``import sklearn`` costs ~2 s, which every ``oocboost plot``
    paid)."""

    def __getattr__(self, key):
        try:
            return self[key]
        except KeyError:
            raise AttributeError(key) from None

    def __setattr__(self, key, value):
        self[key] = value

    def __dir__(self):
        return list(self.keys())


def _is_classifier(estimator):
    return getattr(estimator, "_estimator_type", None) == "classifier"


def _scorer(estimator, scoring):
    """The scoring's name: accuracy for classifiers, r2 for regressors by default."""
    classification = _is_classifier(estimator)
    if scoring is None:
        scoring = "accuracy" if classification else "r2"
    if scoring not in ("accuracy", "r2", "neg_mean_squared_error"):
        raise ParameterError(f"scoring must be None, 'accuracy', 'r2' or "
                             f"'neg_mean_squared_error'; got {scoring!r}")
    if scoring == "accuracy" and not classification:
        raise ParameterError("scoring='accuracy' needs a classifier")
    return scoring


class _ScoreSums:
    """Block-decomposable sums for accuracy, R^2 and MSE (weighted)."""

    def __init__(self):
        self.w = self.hits = self.sse = self.sy = self.syy = 0.0

    def add(self, y, pred, w, classification):
        """``pred``: predicted class codes (classification) or values, one per row."""
        w = np.ones(len(y)) if w is None else np.asarray(w, np.float64)
        y = np.asarray(y, np.float64)
        self.w += w.sum()
        if classification:
            self.hits += float(np.sum(w * (np.asarray(pred) == y)))
        else:
            p = np.asarray(pred, np.float64).reshape(len(y), -1)[:, 0]
            self.sse += float(np.sum(w * (y - p) ** 2))
            self.sy += float(np.sum(w * y))
            self.syy += float(np.sum(w * y * y))

    def score(self, scoring):
        if scoring == "accuracy":
            return self.hits / self.w
        if scoring == "neg_mean_squared_error":
            return -self.sse / self.w
        sst = self.syy - self.sy * self.sy / self.w
        return 1.0 - self.sse / sst if sst > 0 else 0.0


def _binned_predictions(model, classification):
    """``codes -> per-row predictions`` of a model on bin codes: class codes (what the
    estimators' ``predict`` picks, before mapping to labels) or the predicted values
    (through the link function; AdaBoost.R2's weighted median)."""
    from ..model.adaboost import margins_to_decision
    from ..model.predict import output_plan

    margin_model, transform = output_plan(model)
    info = (model.attributes or {}).get("adaboost")

    def predict(codes, missing_bin):
        margin = margin_model.predict_margin_binned(codes, missing_bin)
        if not classification:
            return np.asarray(transform(margin), np.float64).reshape(len(margin), -1)[:, 0]
        if info is not None:
            margin = margins_to_decision(info, margin)
        if margin.ndim == 1 or margin.shape[1] == 1:  # one output: positive class above 0
            return (margin.reshape(-1) > 0).astype(np.int64)
        return np.argmax(margin, axis=1)
    return predict


def permutation_importance(estimator: Any, X: Any, y: Any = None, *, n_repeats: int = 5,
                           random_state: Any = None, scoring: Any = None,
                           sample_weight: Any = None) -> Any:
    """Permutation importance (Breiman 2001), computed out of core.

    The drop in score when one feature's values are shuffled, ``n_repeats`` times per
    feature.

    * ``X`` a Cache (binned with the model's edges: the training cache or one built with
      ``reference=``): one streaming pass; in each block, each feature's *codes* are
      permuted within the block (a block-local shuffle; the same as a global shuffle when
      rows are in random order) and the block is predicted ``n_features * n_repeats``
      times. Scores are block-decomposable (accuracy, R^2, MSE), so memory stays one
      block. ``y`` must be None (the cache's labels are used; classifier labels are
      class indices).
    * ``X`` an array/DataFrame: held in memory anyway; each column is shuffled globally
      (scikit-learn's procedure).

    Parameters
    ----------
    estimator : any fitted oocboost estimator
    X : Cache or array-like (n_rows, n_features)
    y : array-like (n_rows,) or None
    n_repeats : int
    random_state : int or None
    scoring : {None, "accuracy", "r2", "neg_mean_squared_error"}
        None: accuracy for classifiers, R^2 for regressors.
    sample_weight : array-like or None (arrays only; a cache brings its weights)

    Returns
    -------
    Bunch
        A dict whose keys are also attributes (as scikit-learn's ``Bunch``):
        ``importances_mean`` (n_features,), ``importances_std`` (n_features,),
        ``importances`` (n_features, n_repeats): baseline score minus permuted score.
    """
    from ..cache.store import Cache
    from ..kernels.cart_stats import permute_in_place

    estimator._check_fitted()
    scoring = _scorer(estimator, scoring)
    n_repeats = int_param("n_repeats", n_repeats, 1)
    seed = resolve_seed(random_state)
    model = estimator.model_
    classification = _is_classifier(estimator)
    n_features = model.n_features
    if isinstance(X, Cache):
        if y is not None or sample_weight is not None:
            raise ParameterError("with a Cache, labels and weights come from the cache: "
                                 "pass y=None and sample_weight=None")
        if X.manifest.get("bin_mapper") != model.bin_mapper:
            raise ParameterError(f"cache {X.path} was binned with other edges than the "
                                 f"model's training data; build it with reference=")
        base = _ScoreSums()
        perm_sums = [[_ScoreSums() for _ in range(n_repeats)] for _ in range(n_features)]
        missing_bin = X.max_bin - 1
        predict = _binned_predictions(model, classification)
        for block in X.iter_blocks(prefetch=1):
            codes = np.array(block.codes)  # a writable copy of one block
            pred = predict(codes, missing_bin)
            base.add(block.label, pred, block.weight, classification)
            scratch = np.empty(block.n_rows, codes.dtype)
            for f in range(n_features):
                saved = codes[f].copy()
                for r in range(n_repeats):
                    rng = np.random.default_rng([seed, block.index, f, r])
                    perm = rng.permutation(block.n_rows)
                    codes[f] = saved
                    permute_in_place(codes[f], perm, scratch)
                    pred = predict(codes, missing_bin)
                    perm_sums[f][r].add(block.label, pred, block.weight, classification)
                codes[f] = saved
        baseline = base.score(scoring)
        scores = np.array([[s.score(scoring) for s in row] for row in perm_sums])
    else:
        if y is None:
            raise ParameterError("y is required when X is not a Cache")
        y = np.asarray(y)
        rng = np.random.default_rng(seed)

        def score_of(Xp):
            s = _ScoreSums()
            if classification:
                # labels may be strings: score the hits as codes (1 == 1 for a hit)
                hits = np.asarray(estimator.predict(Xp)) == y
                s.add(np.ones(len(y)), hits, sample_weight, True)
            else:
                s.add(y, estimator.predict(Xp), sample_weight, False)
            return s.score(scoring)

        baseline = score_of(X)
        scores = np.empty((n_features, n_repeats))
        is_frame = hasattr(X, "iloc")
        for f in range(n_features):
            for r in range(n_repeats):
                perm = rng.permutation(len(y))
                if is_frame:
                    Xp = X.copy()
                    Xp.iloc[:, f] = X.iloc[perm, f].to_numpy()
                else:
                    Xp = np.array(X, copy=True)
                    Xp[:, f] = Xp[perm, f]
                scores[f, r] = score_of(Xp)
    importances = baseline - scores
    return Bunch(importances_mean=importances.mean(axis=1),
                 importances_std=importances.std(axis=1), importances=importances)

