"""Numba kernels of the AdaBoost family: per-row statistics and sample-weight updates.

Plain arrays in, buffers the caller owns out (``# OUT``); nothing per row is allocated.
Shapes shared by the kernels:

- ``y``: ``(n,)`` int32 class index in ``[0, K)`` (classification) or ``(n,)`` float32
  label (regression).
- ``node``: ``(n,)`` int32, the leaf each row reached in the weak tree (``apply_pending``).
- ``weight``: ``(n,)`` float64, the boosting sample weights (per-row state).
- ``sample_weight``: ``(n,)`` float32, the cache's weights; read only when ``has_weight``
  (pass an empty array otherwise: every weight is then 1).
- ``out``: ``(n, n_stats)`` float32 per-row statistics for the histogram kernels
  (``common.G_H_DTYPE``), laid out as ``CartPolicy`` expects: classification
  ``(w 1{y==0}, ..., w 1{y==K-1}, 1{w>0})``, regression ``(w, w z, w z^2, 1{w>0})``.

Formulas: SAMME (Zhu, Zou, Rosset & Hastie 2009, Algorithm 2), SAMME.R (ibid.,
Algorithm 4), Gentle AdaBoost and LogitBoost (Friedman, Hastie & Tibshirani 2000,
Algorithms 4 and 3/6), arc-x4 (Breiman 1998), AdaBoost.R2 (Drucker 1997).
"""
import math

import numpy as np
from numba import njit, prange

from .sorting import stable_argsort

#: Smallest ``p (1 - p)`` LogitBoost divides by (FHT 2000 advise a floor on the weights).
LOGIT_WEIGHT_EPS = 1e-16
#: Probabilities are clipped to this before their logarithm (scikit-learn's SAMME.R).
PROBA_EPS = np.finfo(np.float64).eps

LOSS_CODES = {"linear": 0, "square": 1, "exponential": 2}


@njit(cache=True)
def class_indices(label, n_classes, out):
    """Labels to class indices; returns the first row whose label is not an integer in
    ``[0, n_classes)``, or -1.

    Parameters
    ----------
    label : ndarray (n,) float32      # IN
    n_classes : int                   # IN
    out : ndarray (n,) int32          # OUT
    """
    for i in range(label.shape[0]):
        v = label[i]
        if not (v >= 0.0 and v < n_classes and v == math.floor(v)):
            return i
        out[i] = np.int32(v)
    return -1


@njit(cache=True, parallel=True)
def class_weight_stats(y, weight, out):
    """Gini statistics ``out[i] = (w 1{y==0}, ..., w 1{y==K-1}, 1{w>0})``.

    Parameters
    ----------
    y : ndarray (n,) int32            # IN
    weight : ndarray (n,) float64     # IN
    out : ndarray (n, K + 1) float32  # OUT
    """
    n_classes = out.shape[1] - 1
    for i in prange(y.shape[0]):
        for k in range(n_classes):
            out[i, k] = 0.0
        out[i, y[i]] = weight[i]
        out[i, n_classes] = 1.0 if weight[i] > 0 else 0.0


@njit(cache=True, parallel=True)
def regression_stats(label, weight, out):
    """Squared-error statistics ``out[i] = (w, w y, w y^2, 1{w>0})``.

    Parameters
    ----------
    label : ndarray (n,) float32 or float64   # IN
    weight : ndarray (n,) float64             # IN
    out : ndarray (n, 4) float32              # OUT
    """
    for i in prange(label.shape[0]):
        w = weight[i]
        z = label[i]
        out[i, 0] = w
        out[i, 1] = w * z
        out[i, 2] = w * z * z
        out[i, 3] = 1.0 if w > 0 else 0.0


@njit(cache=True, parallel=True)
def samme_reweight(node, leaf_class, y, alpha, scale, weight):
    """SAMME / discrete AdaBoost: ``w <- scale * w * exp(alpha * 1{h(x) != y})``.

    Parameters
    ----------
    node : ndarray (n,) int32             # IN, leaf of each row
    leaf_class : ndarray (n_nodes,) int32 # IN, class each leaf predicts
    y : ndarray (n,) int32                # IN
    alpha : float                         # IN, the estimator weight
    scale : float                         # IN, normalisation (1 / new total)
    weight : ndarray (n,) float64         # IN/OUT
    """
    boost = math.exp(alpha)
    for i in prange(y.shape[0]):
        if leaf_class[node[i]] != y[i]:
            weight[i] *= boost * scale
        else:
            weight[i] *= scale


@njit(cache=True, parallel=True)
def mh_stats(y, dist, out):
    """AdaBoost.MH statistics of each row: ``(D(i,l) 1{y_i == l})_l``, then
    ``(D(i,l) 1{y_i != l})_l``, then ``1{sum_l D(i,l) > 0}``.

    Parameters
    ----------
    y : ndarray (n,) int32                # IN
    dist : ndarray (n, K) float64         # IN, the weight of each (row, label) pair
    out : ndarray (n, 2K + 1) float32     # OUT
    """
    K = dist.shape[1]
    for i in prange(y.shape[0]):
        total = 0.0
        for k in range(K):
            d = dist[i, k]
            total += d
            if k == y[i]:
                out[i, k] = d
                out[i, K + k] = 0.0
            else:
                out[i, k] = 0.0
                out[i, K + k] = d
        out[i, 2 * K] = 1.0 if total > 0 else 0.0


@njit(cache=True, parallel=True)
def mh_reweight(node, leaf_value, y, scale, dist):
    """AdaBoost.MH: ``D(i,l) <- scale * D(i,l) * exp(-Y_il h(x_i, l))`` with ``Y_il = +1``
    for the row's class and -1 for the others, ``h`` the value of the row's leaf.

    Parameters
    ----------
    node : ndarray (n,) int32                  # IN, leaf of each row
    leaf_value : ndarray (n_nodes, K) float64  # IN
    y : ndarray (n,) int32                     # IN
    scale : float                              # IN, normalisation (1 / new total)
    dist : ndarray (n, K) float64              # IN/OUT
    """
    K = dist.shape[1]
    for i in prange(y.shape[0]):
        for k in range(K):
            h = leaf_value[node[i], k]
            dist[i, k] *= scale * math.exp(-h if k == y[i] else h)


@njit(cache=True, parallel=True)
def samme_r_reweight(node, log_proba, y, factor, scale, weight):
    """SAMME.R: ``w <- scale * w * exp(-factor * sum_k c_k log p_k(x))`` with the class
    code ``c_k = 1`` for the true class and ``-1/(K-1)`` otherwise (Zhu et al., Alg. 4),
    ``factor = learning_rate * (K-1)/K``. Rows with ``w == 0`` stay 0.

    Parameters
    ----------
    node : ndarray (n,) int32                 # IN
    log_proba : ndarray (n_nodes, K) float64  # IN, log of the clipped leaf proportions
    y : ndarray (n,) int32                    # IN
    factor, scale : float                     # IN
    weight : ndarray (n,) float64             # IN/OUT
    """
    n_classes = log_proba.shape[1]
    for i in prange(y.shape[0]):
        if weight[i] <= 0:
            continue
        lp = log_proba[node[i]]
        total = 0.0
        for k in range(n_classes):
            total += lp[k]
        own = lp[y[i]]
        s = own - (total - own) / (n_classes - 1)
        weight[i] *= math.exp(-factor * s) * scale


@njit(cache=True, parallel=True)
def arc_x4_reweight(node, leaf_class, y, sample_weight, has_weight, scale, n_missed,
                    weight):
    """arc-x4: ``m_i += 1{h(x_i) != y_i}``, ``w_i <- scale * s_i (1 + m_i^4)``.

    Parameters
    ----------
    node : ndarray (n,) int32, or empty for the first round (no update of ``m``)  # IN
    leaf_class : ndarray (n_nodes,) int32     # IN
    y : ndarray (n,) int32                    # IN
    sample_weight : ndarray (n,) float32      # IN, read when ``has_weight``
    has_weight : bool
    scale : float                             # IN
    n_missed : ndarray (n,) float32           # IN/OUT, times misclassified so far
    weight : ndarray (n,) float64             # OUT
    """
    update = node.shape[0] > 0
    for i in prange(y.shape[0]):
        if update and leaf_class[node[i]] != y[i]:
            n_missed[i] += 1.0
        m = n_missed[i]
        s = sample_weight[i] if has_weight else 1.0
        weight[i] = scale * s * (1.0 + m * m * m * m)


@njit(cache=True, parallel=True)
def gentle_stats(y, F, offset, sample_weight, has_weight, out):
    """Gentle AdaBoost: working response ``z = y*`` in {-1, +1}, weight
    ``w = s exp(-y* F - offset)`` (FHT 2000, Alg. 4; ``offset`` only rescales).

    Tree ``t`` separates class ``t`` from the rest, except with one tree (two classes)
    where ``y* = +1`` for class 1.

    Parameters
    ----------
    y : ndarray (n,) int32                    # IN
    F : ndarray (n, T) float64                # IN, the ensemble's scores per tree
    offset : ndarray (T,) float64             # IN, log of a normalising constant
    sample_weight : ndarray (n,) float32      # IN
    has_weight : bool
    out : ndarray (T, n, 4) float32           # OUT
    """
    n_trees = F.shape[1]
    for i in prange(y.shape[0]):
        s = sample_weight[i] if has_weight else 1.0
        for t in range(n_trees):
            positive = y[i] == 1 if n_trees == 1 else y[i] == t
            ys = 1.0 if positive else -1.0
            w = s * math.exp(-ys * F[i, t] - offset[t])
            out[t, i, 0] = w
            out[t, i, 1] = w * ys
            out[t, i, 2] = w
            out[t, i, 3] = 1.0 if w > 0 else 0.0


@njit(cache=True, parallel=True)
def logitboost_stats(y, F, sample_weight, has_weight, z_max, out):
    """LogitBoost working responses and weights (FHT 2000, Alg. 3 and 6).

    Two classes (``T == 1``): ``p = 1 / (1 + exp(-2F))``; K classes: ``p = softmax(F)``.
    ``z = (y* - p) / (p (1 - p))`` clipped to ``[-z_max, z_max]``, ``w = s p (1 - p)``
    (floored at ``LOGIT_WEIGHT_EPS``), ``y*`` in {0, 1}.

    Parameters
    ----------
    y : ndarray (n,) int32                    # IN
    F : ndarray (n, T) float64                # IN
    sample_weight : ndarray (n,) float32      # IN
    has_weight : bool
    z_max : float                             # IN
    out : ndarray (T, n, 4) float32           # OUT
    """
    n_trees = F.shape[1]
    for i in prange(y.shape[0]):
        s = sample_weight[i] if has_weight else 1.0
        top = F[i, 0]
        for t in range(1, n_trees):
            top = max(top, F[i, t])
        total = 0.0
        if n_trees > 1:
            for t in range(n_trees):
                total += math.exp(F[i, t] - top)
        for t in range(n_trees):
            if n_trees == 1:
                p = 1.0 / (1.0 + math.exp(-2.0 * F[i, 0]))
                positive = y[i] == 1
            else:
                p = math.exp(F[i, t] - top) / total
                positive = y[i] == t
            ys = 1.0 if positive else 0.0
            pq = max(p * (1.0 - p), LOGIT_WEIGHT_EPS)
            z = min(max((ys - p) / pq, -z_max), z_max)
            w = s * pq
            out[t, i, 0] = w
            out[t, i, 1] = w * z
            out[t, i, 2] = w * z * z
            out[t, i, 3] = 1.0 if w > 0 else 0.0


@njit(cache=True, parallel=True)
def sign_error(node, value, y, positive_class, weight):
    """Weighted error of a real-valued weak learner read as a sign:
    ``sum_i w_i 1{(f(x_i) > 0) != (y_i == positive_class)}``.

    Parameters
    ----------
    node : ndarray (n,) int32                 # IN
    value : ndarray (n_nodes,) float64        # IN, leaf values f
    y : ndarray (n,) int32                    # IN
    positive_class : int
    weight : ndarray (n,) float32             # IN, the weights the learner was fitted with

    Returns
    -------
    float
    """
    wrong = 0.0
    for i in prange(y.shape[0]):
        if (value[node[i]] > 0) != (y[i] == positive_class):
            wrong += weight[i]
    return wrong


@njit(cache=True, parallel=True)
def abs_errors(node, value, label, out):
    """AdaBoost.R2 errors ``e_i = |f(x_i) - y_i|``.

    Parameters
    ----------
    node : ndarray (n,) int32                 # IN
    value : ndarray (n_nodes,) float64        # IN, leaf values
    label : ndarray (n,) float32              # IN
    out : ndarray (n,) float64                # OUT
    """
    for i in prange(label.shape[0]):
        out[i] = abs(value[node[i]] - label[i])


@njit(inline="always")
def _r2_loss(e, error_max, loss_code):
    x = e / error_max if error_max != 0 else e
    if loss_code == 1:
        return x * x
    if loss_code == 2:
        return 1.0 - math.exp(-x)
    return x


@njit(cache=True, parallel=True)
def r2_weighted_loss(errors, weight, error_max, loss_code):
    """``sum_i w_i L_i`` with ``L_i`` the linear, square or exponential loss of
    ``e_i / error_max`` (Drucker 1997; scikit-learn's ``AdaBoostRegressor._boost``).

    Parameters
    ----------
    errors, weight : ndarray (n,) float64     # IN
    error_max : float
    loss_code : int                           # ``LOSS_CODES``

    Returns
    -------
    float
    """
    total = 0.0
    for i in prange(errors.shape[0]):
        if weight[i] > 0:
            total += weight[i] * _r2_loss(errors[i], error_max, loss_code)
    return total


@njit(cache=True, parallel=True)
def r2_reweight(errors, error_max, loss_code, beta, learning_rate, scale, weight):
    """AdaBoost.R2: ``w_i <- scale * w_i * beta^((1 - L_i) * learning_rate)`` where
    ``w_i > 0``.

    Parameters
    ----------
    errors : ndarray (n,) float64             # IN
    error_max, beta, learning_rate, scale : float
    loss_code : int
    weight : ndarray (n,) float64             # IN/OUT
    """
    log_beta = math.log(beta)
    for i in prange(errors.shape[0]):
        if weight[i] > 0:
            loss = _r2_loss(errors[i], error_max, loss_code)
            weight[i] *= math.exp(log_beta * (1.0 - loss) * learning_rate) * scale


@njit(cache=True, parallel=True)
def weighted_median(predictions, weights, out):
    """Weighted median of each row's predictions (scikit-learn's
    ``AdaBoostRegressor._get_median_predict``): the smallest prediction whose cumulative
    weight, in increasing order, reaches half the total.

    Parameters
    ----------
    predictions : ndarray (n, T) float64      # IN, one column per tree
    weights : ndarray (T,) float64            # IN, estimator weights
    out : ndarray (n,) float64                # OUT
    """
    n_trees = predictions.shape[1]
    half = 0.0
    for t in range(n_trees):
        half += weights[t]
    half *= 0.5
    for i in prange(predictions.shape[0]):
        order = stable_argsort(predictions[i])
        cdf = 0.0
        chosen = order[n_trees - 1]
        for j in range(n_trees):
            cdf += weights[order[j]]
            if cdf >= half:
                chosen = order[j]
                break
        out[i] = predictions[i, chosen]
