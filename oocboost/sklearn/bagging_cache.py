"""Bagging any scikit-learn estimator from a cache (``BaggingClassifier(KNeighbors...)
.fit(cache)``).

A cache keeps bin codes, not raw values: each bag's rows are decoded back to their
bins' middles (the outer bins half a neighbour's width beyond their edge, as MARS reads
them: ``model.mars.representatives``); a categorical feature gives its category's code
as a number; a missing value is NaN. Bag ``t`` draws ``max_samples`` rows from
``default_rng([seed, t, 1])`` (with replacement under ``bootstrap``, as scikit-learn's
bagging draws them) and ``max_features`` columns from the oocboost bagging's
per-tree feature sets; one pass over the blocks that hold drawn rows gathers the rows of
as many bags as the memory plan allows, and each bag's estimator (a clone of
``estimator``, its ``random_state`` set per bag when it has one) is fitted on them in
memory. Predictions aggregate as scikit-learn's bagging does: the mean of
``predict_proba`` when the estimator has one, else the share of votes; the mean for
regressors. ``X`` to predict may be an array, a DataFrame or a cache (decoded the same
way, a block at a time).
"""
from __future__ import annotations

import numpy as np

from ..errors import MemoryLimitError, ParameterError

_RNG_ROWS = 1


def _decoder(mapper):
    """A function of a block's codes (n_features, n_rows) to values (n_rows,
    n_features) float64 (module docstring)."""
    from ..model.mars import representatives

    table = representatives(mapper, mapper.max_bin)
    categorical = np.asarray(mapper.is_categorical, bool)
    missing = mapper.max_bin - 1

    def decode(codes):
        codes = np.asarray(codes)
        out = np.empty((codes.shape[1], codes.shape[0]))
        for f in range(codes.shape[0]):   # a column at a time, vectorised over rows
            c = codes[f].astype(np.int64)
            if categorical[f]:
                out[:, f] = np.where(c == missing, np.nan, c)
            else:
                out[:, f] = table[f, np.minimum(c, table.shape[1] - 1)]
        return out

    return decode


def _bag_rows(seed, t, n_rows, n_samples, bootstrap):
    rng = np.random.default_rng([seed, int(t), _RNG_ROWS])
    if bootstrap:
        return np.sort(rng.integers(0, n_rows, size=n_samples))
    return np.sort(rng.choice(n_rows, size=n_samples, replace=False))


def _bags_per_pass(n_samples, n_features, n_bags, memory_limit):
    """Bags whose rows one pass gathers: their decoded rows (8 bytes a value, twice for
    the estimator's own copy) within ``memory_limit`` (half the available memory without
    one)."""
    import psutil

    from ..engine.plan import check_limit
    from ..utils.rss import current_rss

    per_bag = 2 * n_samples * n_features * 8 + n_samples * 24
    if memory_limit is None:
        free = psutil.virtual_memory().available // 2
    else:
        free = check_limit(memory_limit) - current_rss()
    if per_bag > free:
        raise MemoryLimitError(
            f"a bag of max_samples={n_samples:,} rows x {n_features} features takes "
            f"{per_bag / 2**20:.0f} MiB decoded (8 bytes a value, and the estimator's "
            f"copy); {max(free, 0) / 2**20:.0f} MiB are free under the memory limit: "
            f"lower max_samples or max_features")
    return int(max(1, min(n_bags, free // per_bag)))


class CacheBagging:
    """The bags of one fit from a cache (module docstring): ``estimators_``,
    ``estimators_features_``, and for classifiers ``classes_`` (the cache's class
    indices)."""

    def __init__(self, estimator, *, n_estimators, max_samples, max_features, bootstrap,
                 bootstrap_features, seed, classifier, memory_limit):
        self.estimator = estimator
        self.n_estimators = int(n_estimators)
        self.max_samples = max_samples
        self.max_features = max_features
        self.bootstrap = bool(bootstrap)
        self.bootstrap_features = bool(bootstrap_features)
        self.seed = int(seed)
        self.classifier = bool(classifier)
        self.memory_limit = memory_limit

    def fit(self, cache):
        from sklearn.base import clone

        from ..learners.common.cart_config import resolve_max_features
        from ..learners.common.tree_features import tree_feature_sets
        from ..learners.common.validate import count_or_fraction

        n, n_features = cache.n_rows, cache.n_features
        m = count_or_fraction("max_samples", self.max_samples, n, 1)
        if not self.bootstrap and m > n:
            raise ParameterError(f"max_samples={m} is more than the cache's {n} rows; "
                                 f"without bootstrap a bag draws each row once")
        k = resolve_max_features(self.max_features, n_features) or n_features
        self.estimators_features_ = tree_feature_sets(
            self.seed, range(self.n_estimators), n_features, k, self.bootstrap_features)
        self._decode = _decoder(cache.bin_mapper)
        if self.classifier:
            from ..learners.common.data import require_classes

            self.classes_ = require_classes(cache)
            self.n_classes_ = len(self.classes_)
        per_pass = _bags_per_pass(m, k, self.n_estimators, self.memory_limit)
        self.estimators_ = []
        for b0 in range(0, self.n_estimators, per_pass):
            bags = range(b0, min(self.n_estimators, b0 + per_pass))
            draws = [_bag_rows(self.seed, t, n, m, self.bootstrap) for t in bags]
            X, y, w, rows = self._gather(cache, draws)
            for t, drawn in zip(bags, draws):
                at = np.searchsorted(rows, drawn)
                est = clone(self.estimator)
                if "random_state" in est.get_params():
                    est.set_params(random_state=self.seed + t)
                kw = {} if w is None else {"sample_weight": w[at]}
                est.fit(X[np.ix_(at, self.estimators_features_[t])], y[at], **kw)
                self.estimators_.append(est)
        self.n_features_in_ = n_features
        self.feature_names_in_ = np.array(cache.feature_names, dtype=object)
        return self

    def _gather(self, cache, draws):
        """The decoded rows (the union of ``draws``, ascending), labels and weights."""
        rows = np.unique(np.concatenate(draws))
        starts = np.asarray(cache.block_row_starts, np.int64)
        blocks = np.unique(np.searchsorted(starts, rows, side="right") - 1)
        X = np.empty((len(rows), cache.n_features))
        y = np.empty(len(rows))
        w = np.empty(len(rows)) if cache.has_weight else None
        for block in cache.iter_blocks(prefetch=1, block_indices=[int(b) for b in blocks]):
            lo, hi = np.searchsorted(rows, [block.row_start, block.row_start + block.n_rows])
            local = rows[lo:hi] - block.row_start
            X[lo:hi] = self._decode(block.codes[:, local])
            y[lo:hi] = block.label[local]
            if w is not None:
                w[lo:hi] = block.weight[local]
        return X, y, w, rows

    # ---------------------------------------------------------------- prediction
    def _blocks_of(self, X):
        """``X`` as decoded value matrices, one per block of a cache."""
        from ..cache.store import Cache

        if isinstance(X, Cache):
            for block in X.iter_blocks(prefetch=1):
                yield self._decode(block.codes)
        else:
            yield np.asarray(X, dtype=np.float64)

    def _per_block(self, X, fn):
        return np.concatenate([fn(part) for part in self._blocks_of(X)], axis=0)

    def predict_proba(self, X):
        def proba(part):
            out = np.zeros((len(part), self.n_classes_))
            for est, features in zip(self.estimators_, self.estimators_features_):
                Xf = part[:, features]
                index = np.searchsorted(self.classes_, est.classes_)
                if hasattr(est, "predict_proba"):
                    out[:, index] += est.predict_proba(Xf)
                else:
                    votes = np.searchsorted(self.classes_, est.predict(Xf))
                    out[np.arange(len(part)), votes] += 1.0
            return out / len(self.estimators_)
        return self._per_block(X, proba)

    def predict_log_proba(self, X):
        with np.errstate(divide="ignore"):
            return np.log(self.predict_proba(X))

    def predict(self, X):
        if self.classifier:
            return self.classes_[np.argmax(self.predict_proba(X), axis=1)]

        def mean(part):
            return np.mean([est.predict(part[:, f]) for est, f in
                            zip(self.estimators_, self.estimators_features_)], axis=0)
        return self._per_block(X, mean)

    def score(self, X, y, sample_weight=None):
        from ..model.metrics import get_metric

        y = np.asarray(y)
        if self.classifier:
            right = (self.predict(X) == y).astype(float)
            return float(np.average(right, weights=sample_weight))
        return float(get_metric("r2")(y.astype(np.float64), self.predict(X), sample_weight))
