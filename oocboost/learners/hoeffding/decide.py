"""When a Hoeffding tree splits: merits of every feature's best split from a node's
histogram, the Hoeffding bound, and the decisions of VFDT (Domingos and Hulten 2000),
of the regressor (river's ratio test) and of EFDT's re-evaluation (Manapragada et al.
2018). The per-(node, feature) searches and merits are
``kernels.split_cart_features``' ``find_feature_splits_cart`` and ``feature_merits``.

Candidates are each feature's best split plus, with ``merit_preprune``, the null split
(merit 0: not splitting), river's set. Merits:

* ``info_gain``: entropy (log2) of the node minus the weighted entropies of the two
  sides; ``gini``: the same with Gini impurity; the regressor: variance reduction.
* A candidate is invalid (merit -inf) when fewer than two sides hold more than
  ``min_branch_fraction`` of the node's weight (classification), or a side holds less
  than ``min_samples_split`` of weight (regression: rows, for unit weights; river's
  variance estimators count weight).
"""
import math

import numpy as np

from ...kernels.split_cart_features import feature_merits, find_feature_splits_cart

#: Feature index standing for the null split among candidates.
NULL_SPLIT = -1


def hoeffding_bound(merit_range, delta, n):
    """``sqrt(R^2 ln(1/delta) / (2 n))``: with probability ``1 - delta`` the mean of ``n``
    observations of a variable of range ``R`` is within this of its expectation.

    >>> round(hoeffding_bound(1.0, 1e-7, 200), 4)
    0.2007
    """
    return math.sqrt(merit_range * merit_range * math.log(1.0 / delta) / (2.0 * n))


def _weight(sums, config):
    sums = np.asarray(sums)
    return sums[..., 0] if config.task == "regression" else \
        sums[..., :config.n_classes].sum(axis=-1)


def feature_splits(tree, config, slots):
    """Best split of every feature at the nodes holding histogram ``slots``.

    Returns
    -------
    dict of arrays over (n_eval, n_features): ``merit`` (-inf: invalid),
    ``bin_threshold``, ``default_left``, ``cat_bitset`` (..., n_words), ``left``
    and ``right`` sums (..., n_stats).
    """
    slots = np.ascontiguousarray(slots, np.int32)
    n_eval, n_features, n_stats = len(slots), len(tree.n_value_bins), tree.n_stats
    node_sums = tree.hist_sums
    w_node = _weight(node_sums[slots], config)
    min_weight = (config.min_branch_fraction * w_node if config.task == "classification"
                  else np.zeros(n_eval))
    proxy = np.empty((n_eval, n_features))
    bins = np.empty((n_eval, n_features), np.int32)
    default_left = np.empty((n_eval, n_features), bool)
    bits = np.empty((n_eval, n_features, tree.n_words), np.uint32)
    left = np.zeros((n_eval, n_features, n_stats))
    find_feature_splits_cart(tree.hist, node_sums, slots, tree.n_value_bins,
                             tree.is_categorical_feature, tree.missing_bin,
                             config.criterion_code, max(config.n_classes, 1),
                             np.ascontiguousarray(min_weight, np.float64), proxy, bins,
                             default_left, bits, left, column_of=tree.column_of)
    total = np.ascontiguousarray(node_sums[slots], np.float64)
    merit = np.empty((n_eval, n_features))
    # river's rules: min_branch_fraction (both sides need more than the fraction,
    # strictly); its variance estimators count weight, not rows (Var.n is the weights' sum)
    feature_merits(total, left, proxy, config.n_classes if config.task == "classification"
                   else 0, config.split_criterion == "gini", config.min_branch_fraction,
                   float(config.min_samples_split), merit)
    return {"merit": merit, "bin_threshold": bins, "default_left": default_left,
            "cat_bitset": bits, "left": left, "right": total[:, None, :] - left}


def ranked_candidates(merits, config):
    """``(merit, feature)`` pairs of one node's valid candidates, best first, the null
    split (feature ``NULL_SPLIT``, merit 0) among them with ``merit_preprune``. Ties go
    to the lower feature index, and a feature before the null split."""
    out = [(float(m), int(f)) for f, m in enumerate(merits) if np.isfinite(m)]
    if config.merit_preprune:
        out.append((0.0, NULL_SPLIT))
    out.sort(key=lambda c: (-c[0], c[1] if c[1] >= 0 else len(merits)))
    return out


def attempt_decision(candidates, config, n):
    """VFDT's decision at a leaf: the feature to split on, ``NULL_SPLIT`` (stop growing
    this leaf: the null split won), or None (wait for more rows).

    Classification: split when the best two merits differ by more than the Hoeffding
    bound ``eps`` of ``n`` (the leaf's weight), or ``eps < tau`` (a tie). Regression
    (river's rule): when the best merit is positive and the second's ratio to it is
    below ``1 - eps``, or ``eps < tau``. With split revision (EFDT) the best is compared
    with the null split instead of the second best.
    """
    if not candidates:
        return None
    if len(candidates) < 2:
        return candidates[0][1]
    eps = hoeffding_bound(config.merit_range, config.delta, n)
    best, second = candidates[0], candidates[1]
    if config.split_revision:
        if best[1] == NULL_SPLIT:
            return None
        return best[1] if best[0] > eps or eps < config.tau else None
    if config.task == "regression":
        ok = best[0] > 0.0 and (second[0] / best[0] < 1.0 - eps or eps < config.tau)
    else:
        ok = best[0] - second[0] > eps or eps < config.tau
    return best[1] if ok else None


def revision_decision(candidates, current_feature, config, n):
    """EFDT's re-evaluation of a split node: ``"collapse"`` (the null split beats the
    best by the bound), a new feature to split on (the best beats the installed
    feature's best split by the bound, or a tie under ``tau``), or None (keep)."""
    if not candidates:
        return None
    eps = hoeffding_bound(config.merit_range, config.delta, n)
    best = candidates[0]
    if best[1] == NULL_SPLIT:
        return None
    if 0.0 - best[0] > eps:
        return "collapse"
    current = [m for m, f in candidates if f == current_feature]
    if not current or best[1] == current_feature:
        return None
    if best[0] - current[0] > eps or eps < config.tau:
        return best[1]
    return None
