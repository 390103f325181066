"""Split policies: what the grower asks of a learner's criterion (a strategy object).

A policy turns histograms into split decisions and node sums into leaf values. The grower
is the same for every learner; boosting hands it a ``GradientPolicy`` (XGBoost's
second-order gain), trees and forests a ``CartPolicy`` (gini, entropy, squared error).
:class:`SplitPolicy` is the contract, as a ``typing.Protocol`` (``FeatureBins`` gives the
defaults of its optional parts).
"""
from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from ..common import HIST_DTYPE, hist_column_starts
from ..kernels import split as ks
from ..kernels import split_cart as kcart
from ..kernels import split_gradient as kgrad
from ..kernels import split_multiway as kmulti

#: XGBoost's kRtEps: a split must gain more than this to be taken.
MIN_GAIN_EPS = 1e-6


def _slot_sums(hist, sums, slots):
    node_sums = np.zeros((hist.shape[0], sums.shape[1]), np.float64)
    node_sums[slots] = sums
    return node_sums


def full_columns(n_eval: int, n_features: int) -> np.ndarray:
    """``column_feature`` of full histograms: column f is feature f for every node."""
    return np.tile(np.arange(n_features, dtype=np.int32), (n_eval, 1))


def _outputs(n_eval, n_words, n_stats):
    return dict(
        gain=np.empty(n_eval), feature=np.empty(n_eval, np.int32),
        bin=np.empty(n_eval, np.int32), default_left=np.empty(n_eval, np.bool_),
        is_categorical=np.empty(n_eval, np.bool_),
        cat_bitset=np.zeros((n_eval, n_words), np.uint32),
        left_sums=np.empty((n_eval, n_stats)), right_sums=np.empty((n_eval, n_stats)))


class SplitPolicy(Protocol):
    """What the grower asks of a learner's split criterion.

    Attributes
    ----------
    n_stats : int
        Statistics per row (boosting: gradient and hessian per output lane).
    n_outputs : int
        Values per leaf.
    count_stat : int or None
        Index of the statistic that counts rows (None: boosting, whose every row counts).
    size_stat : int
        Index of the statistic that sizes a node for the smaller-child choice.
    hist_dtype : numpy.dtype
        Histogram sums: float64, or int32 when the statistics are integers.
    count_marks_rows : bool
        The ``count_stat`` is non-zero exactly for the rows of a node (small nodes may
        then keep their rows' records instead of a histogram).
    """

    n_stats: int
    n_outputs: int
    count_stat: int | None
    size_stat: int
    hist_dtype: np.dtype
    count_marks_rows: bool

    def cover(self, sums: np.ndarray) -> np.ndarray:
        """Tree "cover" of ``(n, n_stats)`` node sums: hessian or weight sums ``(n,)``."""

    def histogram_sums(self, sums: np.ndarray, trees: np.ndarray | None = None
                       ) -> np.ndarray:
        """Node sums read from the histograms, in the policy's units (``FeatureBins``:
        unchanged)."""

    def find_splits(self, hist: np.ndarray, sums: np.ndarray, slots: np.ndarray,
                    feature_mask: np.ndarray | None, trees: np.ndarray | None = None,
                    node_ids: np.ndarray | None = None) -> dict[str, np.ndarray]:
        """The best split of each evaluated node: ``gain``, ``feature``, ``bin``,
        ``default_left``, ``is_categorical``, ``cat_bitset``, ``left_sums``,
        ``right_sums`` (and optionally ``importance_gain``), one entry per node.
        ``trees``/``node_ids`` say which tree and node each evaluated slot is: a policy
        serving several trees of one pass may treat them differently."""

    def accept_splits(self, result: dict[str, np.ndarray], sums: np.ndarray,
                      trees: np.ndarray | None = None,
                      node_ids: np.ndarray | None = None) -> np.ndarray:
        """Which of the found splits to take (bool per node): the learner's rule."""

    def leaf_values(self, sums: np.ndarray, trees: np.ndarray | None = None,
                    node_ids: np.ndarray | None = None) -> np.ndarray:
        """Leaf values ``(n, n_outputs)`` of ``(n, n_stats)`` node sums."""

    def on_split(self, trees: np.ndarray, nodes: np.ndarray, features: np.ndarray,
                 left_ids: np.ndarray, right_ids: np.ndarray, left_sums: np.ndarray,
                 right_sums: np.ndarray) -> Any:
        """Told of every split taken (monotone bounds are passed to the children)."""


class FeatureBins:
    """The binning a policy searches: ``n_value_bins``, ``is_categorical``,
    ``missing_bin``, and what follows from them: ``column_of``, each feature's first
    histogram column (None when every feature has one column; a wide categorical feature
    has several, see ``common.hist_column_starts``), and ``n_words``, the bitset words of
    the widest categorical feature. Also the defaults of :class:`SplitPolicy`'s optional
    parts."""

    hist_dtype = np.dtype(HIST_DTYPE)
    count_marks_rows = False

    def on_split(self, trees: np.ndarray, nodes: np.ndarray, features: np.ndarray,
                 left_ids: np.ndarray, right_ids: np.ndarray, left_sums: np.ndarray,
                 right_sums: np.ndarray) -> None:
        """Nothing to pass on to the children (a policy with monotone bounds does)."""

    def histogram_sums(self, sums: np.ndarray, trees: np.ndarray | None = None
                       ) -> np.ndarray:
        """Node sums read from the histograms (``(n, n_stats)``, of nodes of ``trees``)
        in the units the policy works in: the same numbers, except for a policy whose
        histograms hold scaled integers (``engine/quantized.py``)."""
        return sums

    def _set_bins(self, n_value_bins, is_categorical, missing_bin):
        self.n_value_bins = np.ascontiguousarray(n_value_bins, dtype=np.int32)
        self.is_categorical = np.ascontiguousarray(is_categorical, dtype=np.bool_)
        self.missing_bin = int(missing_bin)
        max_bin = self.missing_bin + 1
        starts = hist_column_starts(self.n_value_bins, max_bin)
        self.column_of = None if starts[-1] == len(self.n_value_bins) else starts
        self.n_words = ks.n_bitset_words(max(max_bin, int(self.n_value_bins.max(initial=0))))

    def hist_columns(self, hist: np.ndarray, column_feature: np.ndarray | None
                     ) -> np.ndarray:
        """``column_of`` for a search whose nodes have ``column_feature.shape[1]`` logical
        columns in histograms of ``hist.shape[1]`` columns."""
        return None if hist.shape[1] == column_feature.shape[1] else self.column_of


class NodeBounds:
    """The value bounds monotonic constraints put on each node of the trees a policy
    grows (XGBoost's ``TreeEvaluator``, scikit-learn's ``lower_bound``/``upper_bound``):
    the root is unbounded; the children of a split take their parent's bounds, and on a
    feature constrained increasing (``monotone[f] > 0``) the left child's upper and the
    right child's lower bound become the mean of the two children's values (decreasing:
    the other way round).

    Parameters
    ----------
    monotone : ndarray (n_features,) of -1/0/+1, or None (no constraint)
    """

    def __init__(self, monotone: np.ndarray | None) -> None:
        self.monotone = (np.zeros(0, np.int8) if monotone is None
                         else np.ascontiguousarray(monotone, dtype=np.int8))
        self.bounds = {}  # (tree, node) -> (lower, upper)

    def __len__(self) -> int:
        return len(self.monotone)

    def of(self, trees: np.ndarray | None, node_ids: np.ndarray | None, n: int
           ) -> tuple[np.ndarray, np.ndarray]:
        """``(lower, upper)`` (n,) of the nodes ``(trees, node_ids)``."""
        lower, upper = np.full(n, -np.inf), np.full(n, np.inf)
        if len(self.monotone) and trees is not None:
            for i, key in enumerate(zip(np.asarray(trees).tolist(),
                                        np.asarray(node_ids).tolist())):
                lower[i], upper[i] = self.bounds.get(key, (-np.inf, np.inf))
        return lower, upper

    def split(self, trees: np.ndarray, features: np.ndarray, left_ids: np.ndarray,
              right_ids: np.ndarray, lower: np.ndarray, upper: np.ndarray,
              left_values: np.ndarray, right_values: np.ndarray) -> None:
        """Bound the children of splits whose parents had ``lower``/``upper``, from the
        children's values (one node a loop step: nodes, never rows)."""
        for i, (t, f, lo, hi) in enumerate(zip(np.asarray(trees).tolist(),
                                               np.asarray(features).tolist(),
                                               np.asarray(left_ids).tolist(),
                                               np.asarray(right_ids).tolist())):
            left_b, right_b = [lower[i], upper[i]], [lower[i], upper[i]]
            mid = (left_values[i] + right_values[i]) / 2.0
            if self.monotone[f] > 0:
                left_b[1], right_b[0] = mid, mid
            elif self.monotone[f] < 0:
                left_b[0], right_b[1] = mid, mid
            self.bounds[(t, lo)] = tuple(left_b)
            self.bounds[(t, hi)] = tuple(right_b)


class GradientPolicy(FeatureBins):
    """XGBoost's regularised second-order split gain and leaf weights.

    Gain (twice Eq. 7 of Chen & Guestrin 2016, without gamma, as XGBoost reports it)::

        gain = T(G_L)^2/(H_L+lambda) + T(G_R)^2/(H_R+lambda) - T(G)^2/(H+lambda)

    with ``T`` the L1 soft threshold by ``alpha``; leaf weight ``w = -T(G)/(H+lambda)``
    clipped to ``max_delta_step``. A split is taken when ``gain > max(gamma, 1e-6)``
    (XGBoost prunes ``loss_chg < min_split_loss`` and ignores gains below kRtEps).
    """

    n_stats = 2
    n_outputs = 1
    #: no row count: rows are not counted per bin (XGBoost and LightGBM do not either)
    count_stat = None
    #: the statistic that sizes a child for the smaller-child choice: the hessian sum
    size_stat = 1

    def __init__(self, *, reg_lambda: float, reg_alpha: float, max_delta_step: float,
                 min_child_weight: float, max_cat_to_onehot: int, n_value_bins: np.ndarray,
                 is_categorical: np.ndarray, missing_bin: int, gamma: float = 0.0,
                 max_cat_threshold: int = ks.DEFAULT_MAX_CAT_THRESHOLD,
                 monotone: np.ndarray | None = None, categorical_split: str = "xgboost",
                 cat_smooth: float = 0.0, cat_l2: float = 0.0, min_data_per_group: int = 0,
                 n_rows: int | None = None) -> None:
        # monotone: int8 (n_features,) of -1/0/+1, or None. With it, each node has weight
        # bounds, children of a constrained split are bounded by their mean weight, and
        # every leaf is clipped to its bounds (XGBoost's TreeEvaluator).
        self.node_bounds = NodeBounds(monotone)
        self.monotone = self.node_bounds.monotone
        self.gamma = float(gamma)
        self.reg_lambda = float(reg_lambda)
        self.reg_alpha = float(reg_alpha)
        self.max_delta_step = float(max_delta_step)
        self.min_child_weight = float(min_child_weight)
        self.max_cat_to_onehot = int(max_cat_to_onehot)
        self.max_cat_threshold = int(max_cat_threshold)
        search = (kgrad.CAT_SEARCH_LIGHTGBM if categorical_split == "lightgbm"
                  else kgrad.CAT_SEARCH_XGBOOST)
        self.cat_params = np.array([search, self.max_cat_to_onehot, self.max_cat_threshold,
                                    float(cat_smooth), float(cat_l2),
                                    float(min_data_per_group)])
        # LightGBM's search counts a category's rows from its hessian sum (boosting
        # histograms hold no counts): rows per unit of hessian, taken at each tree's
        # root from the rows it is grown on (None: 1 row per unit)
        self.n_rows = None if n_rows is None else float(n_rows)
        self.rows_per_hessian = {}
        self._set_bins(n_value_bins, is_categorical, missing_bin)

    def _node_bounds(self, trees, node_ids, n):
        return self.node_bounds.of(trees, node_ids, n)

    def find_splits(self, hist: np.ndarray, sums: np.ndarray, slots: np.ndarray,
                    feature_mask: np.ndarray, trees: np.ndarray | None = None,
                    node_ids: np.ndarray | None = None) -> dict[str, np.ndarray]:
        out = _outputs(len(slots), self.n_words, self.n_stats)
        lower, upper = self._node_bounds(trees, node_ids, len(slots))
        kgrad.find_splits_gradient(
            hist, _slot_sums(hist, sums, slots), np.ascontiguousarray(slots, np.int32),
            feature_mask, self.n_value_bins, self.is_categorical, self.missing_bin,
            self.reg_lambda, self.reg_alpha, self.max_delta_step, self.min_child_weight,
            self.max_cat_to_onehot, self.max_cat_threshold, self.monotone, lower, upper,
            out["gain"], out["feature"], out["bin"], out["default_left"],
            out["is_categorical"], out["cat_bitset"], out["left_sums"], out["right_sums"],
            column_of=self.column_of, cat_params=self.cat_params,
            rows_per_hessian=self._rows_per_hessian(sums, trees, node_ids))
        return out

    def _rows_per_hessian(self, sums, trees, node_ids):
        """Rows per unit of hessian of each evaluated node's tree, set at its root."""
        n = len(sums)
        if self.n_rows is None or trees is None:
            return np.ones(n)
        trees = np.asarray(trees, dtype=np.int64)
        for i in np.flatnonzero(np.asarray(node_ids) == 0).tolist():
            h = float(sums[i][1])
            self.rows_per_hessian[int(trees[i])] = self.n_rows / h if h > 0 else 1.0
        table = np.ones(int(trees.max()) + 1 if n else 0)
        for t, ratio in self.rows_per_hessian.items():
            if t < len(table):
                table[t] = ratio
        return table[trees]

    def _weights(self, sums, lower, upper):
        w = np.empty(len(sums))
        kgrad.leaf_values_gradient(np.ascontiguousarray(sums), self.reg_lambda,
                                   self.reg_alpha, self.max_delta_step,
                                   self.min_child_weight, w)
        return np.clip(w, lower, upper)

    def on_split(self, trees: np.ndarray, nodes: np.ndarray, features: np.ndarray,
                 left_ids: np.ndarray, right_ids: np.ndarray, left_sums: np.ndarray,
                 right_sums: np.ndarray) -> None:
        """Children's weight bounds: the parent's, and for a split on a constrained
        feature the mean of the two (bounded) child weights between them."""
        if not len(self.monotone):
            return
        lower, upper = self._node_bounds(trees, nodes, len(trees))
        self.node_bounds.split(trees, features, left_ids, right_ids, lower, upper,
                               self._weights(left_sums, lower, upper),
                               self._weights(right_sums, lower, upper))

    def cover(self, sums: np.ndarray) -> np.ndarray:
        """XGBoost's cover: the sum of hessians, (n,)."""
        return np.asarray(sums)[:, 1]

    def accept_splits(self, result: dict[str, np.ndarray], sums: np.ndarray,
                      trees: np.ndarray | None = None,
                      node_ids: np.ndarray | None = None) -> np.ndarray:
        """bool (n_eval,): a valid split whose gain beats ``max(gamma, 1e-6)``."""
        gain = result["gain"]
        return (result["feature"] >= 0) & np.isfinite(gain) & (gain > max(self.gamma,
                                                                           MIN_GAIN_EPS))

    def leaf_values(self, sums: np.ndarray, trees: np.ndarray | None = None,
                    node_ids: np.ndarray | None = None) -> np.ndarray:
        lower, upper = self._node_bounds(trees, node_ids, len(sums))
        return self._weights(sums, lower, upper)[:, None]


#: scikit-learn's EPSILON in its tree builder: a node with impurity at most this is pure.
CART_EPSILON = np.finfo(np.float64).eps


class CartPolicy(FeatureBins):
    """CART criteria (Breiman et al. 1984) with scikit-learn's semantics.

    Statistics per row: classification ``K + 1`` channels (weighted class counts, then
    the count of rows with positive weight); regression 4 ``(w, w*y, w*y*y, count)``.
    Leaf values are class proportions ``(n, K)`` or the weighted mean ``(n, 1)``.

    A split is taken when it is valid, the node is not pure (impurity > EPSILON) and
    ``impurity_decrease + EPSILON >= min_impurity_decrease`` (scikit-learn's rule), where
    ``impurity_decrease = W/W_root * (imp - W_L/W imp_L - W_R/W imp_R)`` is also the
    node's contribution to impurity-based feature importances and the best-first order
    of ``max_leaf_nodes``.

    Parameters
    ----------
    criterion : {"gini", "entropy", "log_loss", "squared_error", "friedman_mse", "poisson",
                 "absolute_error", "adaboost_mh"}
        ``friedman_mse`` is ``squared_error`` (scikit-learn >= 1.9 maps it so).
        ``adaboost_mh``: Schapire and Singer's ``Z`` over ``(W+, W-)`` per label (2K lanes
        for ``n_classes`` = K, and the count); leaf values are the 2K lane proportions.
        ``absolute_error`` reads one statistic per label value (``label_values``) and the
        count, as classification does, and its leaves are the weighted medians.
    label_values : ndarray (K,) or None
        Ascending label values of ``absolute_error`` (each row's statistics go to its
        value's lane).
    n_classes : int
        K for classification, 0 for regression.
    n_value_bins, is_categorical, missing_bin : binning of the features
    total_weight : float
        Weight of the root (sum of sample weights of the rows the tree is grown on).
    min_samples_leaf : int
    min_weight_leaf : float
        ``min_weight_fraction_leaf * total_weight``.
    min_impurity_decrease : float
    splitter : {"best", "random"}
        "random": extra trees, one random threshold per (node, feature).
    rng : numpy.random.Generator or None
        Needed for ``splitter="random"``.
    hist_dtype : numpy dtype
        Dtype of the histogram sums: float64, or int32 when the caller feeds integer
        statistics whose sums fit (``common.INT_HIST_DTYPE``; a forest decides).
    monotonic_cst : ndarray (n_features,) of -1/0/+1, or None
        scikit-learn's monotonic constraints on the mean (regression) or the share of
        class 1 (two classes): a split on a constrained feature keeps its children's
        values ordered and within the node's bounds (:class:`NodeBounds`), and every
        node's value is clipped to its bounds (scikit-learn's ``clip_node_value``).
    multiway : bool
        C4.5's multiway categorical splits (``kernels/split_multiway.py``): a categorical
        feature splits into one child per category present, compared with the binary
        numeric splits on the same score; the results then hold ``multiway`` (n_eval,)
        bool and ``child_sums`` (n_eval, n_codes, n_stats), each code's child.
    """

    def __init__(self, *, criterion: str, n_classes: int, n_value_bins: np.ndarray,
                 is_categorical: np.ndarray, missing_bin: int, total_weight: float,
                 min_samples_leaf: float = 1, min_weight_leaf: float = 0.0,
                 min_impurity_decrease: float = 0.0, splitter: str = "best",
                 rng: np.random.Generator | None = None, hist_dtype: Any = HIST_DTYPE,
                 label_values: np.ndarray | None = None,
                 monotonic_cst: np.ndarray | None = None, multiway: bool = False) -> None:
        # scikit-learn >= 1.9 maps friedman_mse to squared_error (Friedman's improvement
        # picks the same splits: it is the squared-error proxy minus a node constant,
        # times the node weight); so do we
        name = {"log_loss": "entropy", "friedman_mse": "squared_error"}.get(criterion,
                                                                           criterion)
        if name not in ks.CRITERIA:
            from ..errors import ParameterError

            raise ParameterError(f"criterion must be one of gini, entropy, log_loss, "
                                 f"gain_ratio, squared_error, friedman_mse, poisson, "
                                 f"absolute_error; got {criterion!r}")
        self.criterion_code = ks.CRITERIA[name]
        self.label_values = np.empty(0)
        if name == "absolute_error":
            self.label_values = np.ascontiguousarray(label_values, dtype=np.float64)
            n_classes = len(self.label_values)
        self.n_classes = int(n_classes) if name not in ("squared_error", "poisson") else 0
        if name == "adaboost_mh":
            # K labels, each with a positive and a negative weight lane
            self.n_classes = 2 * int(n_classes)
        self.n_stats = self.n_classes + 1 if self.n_classes else 4
        self.n_outputs = self.n_classes if self.n_classes and name != "absolute_error" \
            else 1
        self.count_stat = self.n_stats - 1
        self.size_stat = self.count_stat
        # the count statistic is 1 for a row of positive weight and every statistic of
        # any other row is 0 (kernels/cart_stats.py), so a node's row records can skip
        # the count and rows of zero weight (histograms.RECORD_SMALL_NODES)
        self.count_marks_rows = True
        self._set_bins(n_value_bins, is_categorical, missing_bin)
        self.total_weight = float(total_weight)
        self.min_samples_leaf = float(min_samples_leaf)
        self.min_weight_leaf = float(min_weight_leaf)
        self.min_impurity_decrease = float(min_impurity_decrease)
        self.splitter = splitter
        self.rng = rng
        self.hist_dtype = np.dtype(hist_dtype)
        self.node_bounds = NodeBounds(monotonic_cst)
        self.multiway = bool(multiway)

    def weights(self, sums: np.ndarray) -> np.ndarray:
        """Weighted number of rows of each node, (n,)."""
        sums = np.asarray(sums)
        return sums[:, : self.n_classes].sum(axis=1) if self.n_classes else sums[:, 0]

    def cover(self, sums: np.ndarray) -> np.ndarray:
        return self.weights(sums)

    def impurity(self, sums: np.ndarray) -> np.ndarray:
        """Node impurity, (n,)."""
        out = np.empty(len(sums))
        kcart.node_impurity(np.ascontiguousarray(sums, dtype=np.float64), self.criterion_code,
                            self.n_classes, self.label_values, out)
        return out

    def find_splits(self, hist: np.ndarray, sums: np.ndarray, slots: np.ndarray,
                    feature_mask: np.ndarray, trees: np.ndarray | None = None,
                    node_ids: np.ndarray | None = None,
                    random_bin: np.ndarray | None = None,
                    column_feature: np.ndarray | None = None,
                    zero_after: bool = False) -> dict[str, np.ndarray]:
        """Best split per evaluated slot. ``column_feature`` (n_eval, n_columns): the
        feature of each histogram column when nodes hold only their sampled features;
        None for full histograms (column ``f`` is feature ``f``). ``zero_after``: zero
        the evaluated slots' histograms once scanned (see ``find_splits_cart``)."""
        n_eval = len(slots)
        slots = np.ascontiguousarray(slots, np.int32)
        node_sums = _slot_sums(hist, sums, slots)
        column_feature = full_columns(n_eval, len(self.n_value_bins)) \
            if column_feature is None else np.ascontiguousarray(column_feature, np.int32)
        column_of = self.hist_columns(hist, column_feature)
        n_columns = column_feature.shape[1]
        if self.splitter == "random":
            random_bin = np.empty((n_eval, n_columns), np.int32)
            kcart.draw_random_bins(hist, slots, column_feature, self.n_value_bins,
                                   self.is_categorical, self.count_stat,
                                   self.rng.random((n_eval, n_columns)), random_bin,
                                   column_of=column_of)
        elif random_bin is None:
            random_bin = np.empty((0, 0), np.int32)
        out = _outputs(n_eval, self.n_words, self.n_stats)
        improvement = np.empty(n_eval)
        feature_mask = np.ascontiguousarray(feature_mask)
        if self.multiway:
            # before the binary search, which may zero the histograms it reads
            multiway = self._multiway_splits(hist, node_sums, slots, column_feature,
                                             feature_mask, column_of)
            feature_mask = feature_mask & ~self.is_categorical[column_feature]
        monotone = None
        if len(self.node_bounds):
            monotone = (self.node_bounds.monotone,
                        *self.node_bounds.of(trees, node_ids, n_eval))
        kcart.find_splits_cart(
            hist, node_sums, slots, column_feature, feature_mask,
            self.n_value_bins, self.is_categorical,
            self.missing_bin, self.criterion_code, self.n_classes, self.min_samples_leaf,
            self.min_weight_leaf, self.total_weight, random_bin, improvement, out["gain"],
            out["feature"], out["bin"], out["default_left"], out["is_categorical"],
            out["cat_bitset"], out["left_sums"], out["right_sums"], bool(zero_after),
            self.label_values, column_of=column_of, monotone=monotone)
        out["improvement"] = improvement
        if self.multiway:
            _take_multiway(out, *multiway)
        out["importance_gain"] = out["gain"]
        return out

    def _multiway_splits(self, hist, node_sums, slots, column_feature, feature_mask,
                         column_of):
        """Each node's best multiway categorical split: (score, impurity decrease,
        feature, child sums)."""
        n_eval = len(slots)
        bin_start, flat = kcart.hist_bin_starts(hist, column_of, column_feature.shape[1])
        score, decrease = np.empty(n_eval), np.empty(n_eval)
        feature = np.empty(n_eval, np.int32)
        child_sums = np.zeros((n_eval, int(self.n_value_bins.max(initial=1)), self.n_stats))
        kmulti.find_multiway_splits(
            flat, bin_start, node_sums, slots, column_feature,
            feature_mask & self.is_categorical[column_feature], self.n_value_bins,
            self.is_categorical, self.missing_bin, self.criterion_code, self.n_classes,
            self.min_samples_leaf, self.min_weight_leaf, self.total_weight,
            self.label_values, score, decrease, feature, child_sums)
        return score, decrease, feature, child_sums

    def accept_splits(self, result: dict[str, np.ndarray], sums: np.ndarray,
                      trees: np.ndarray | None = None,
                      node_ids: np.ndarray | None = None) -> np.ndarray:
        decrease = result["gain"]
        return ((result["feature"] >= 0) & np.isfinite(decrease)
                & (self.impurity(sums) > CART_EPSILON)
                & (decrease + CART_EPSILON >= self.min_impurity_decrease))

    def _values(self, sums: np.ndarray) -> np.ndarray:
        """What monotonic constraints order: the mean, or the share of class 1."""
        sums = np.asarray(sums, dtype=np.float64)
        w = self.weights(sums)
        return np.divide(sums[:, 1], w, out=np.zeros_like(w), where=w > 0)

    def on_split(self, trees: np.ndarray, nodes: np.ndarray, features: np.ndarray,
                 left_ids: np.ndarray, right_ids: np.ndarray, left_sums: np.ndarray,
                 right_sums: np.ndarray) -> None:
        """Children's bounds from the two children's values (scikit-learn's
        ``middle_value``)."""
        if len(self.node_bounds):
            lower, upper = self.node_bounds.of(trees, nodes, len(trees))
            self.node_bounds.split(trees, features, left_ids, right_ids, lower, upper,
                                   self._values(left_sums), self._values(right_sums))

    def leaf_values(self, sums: np.ndarray, trees: np.ndarray | None = None,
                    node_ids: np.ndarray | None = None) -> np.ndarray:
        values = self._unbounded_values(sums)
        if len(self.node_bounds):
            lower, upper = self.node_bounds.of(trees, node_ids, len(values))
            if self.n_classes:   # two classes: the share of class 1, and the rest
                values[:, 1] = np.clip(values[:, 1], lower, upper)
                values[:, 0] = 1.0 - values[:, 1]
            else:
                values[:, 0] = np.clip(values[:, 0], lower, upper)
        return values

    def _unbounded_values(self, sums: np.ndarray) -> np.ndarray:
        sums = np.asarray(sums, dtype=np.float64)
        if self.label_values.size:  # absolute_error: the weighted median
            return weighted_medians(sums[:, : self.n_classes], self.label_values)[:, None]
        if self.n_classes:
            counts = sums[:, : self.n_classes]
            total = counts.sum(axis=1, keepdims=True)
            return np.divide(counts, total, out=np.zeros_like(counts), where=total > 0)
        w = sums[:, 0]
        return np.divide(sums[:, 1], w, out=np.zeros_like(w), where=w > 0)[:, None]


def _take_multiway(out: dict[str, np.ndarray], score: np.ndarray, decrease: np.ndarray,
                   feature: np.ndarray, child_sums: np.ndarray) -> None:
    """Where a node's multiway split scores above its binary one, make it the node's
    split: ``out["multiway"]`` marks it, ``child_sums`` holds its children; its bitset
    holds the categories of its children, its left sums the first child's."""
    take = (feature >= 0) & (score > out["improvement"])
    out["multiway"] = take
    out["child_sums"] = child_sums
    if not take.any():
        return
    out["improvement"] = np.where(take, score, out["improvement"])
    out["gain"] = np.where(take, decrease, out["gain"])
    out["feature"] = np.where(take, feature, out["feature"]).astype(np.int32)
    out["bin"][take] = -1
    out["default_left"][take] = False
    out["is_categorical"][take] = True
    count = child_sums[..., -1]
    for e in np.flatnonzero(take):
        present = np.flatnonzero(count[e] > 0)
        bits = np.zeros(out["cat_bitset"].shape[1] * 32, bool)
        bits[present] = True
        out["cat_bitset"][e] = np.packbits(bits, bitorder="little").view("<u4")
        out["left_sums"][e] = child_sums[e, present[0]]
        out["right_sums"][e] = child_sums[e].sum(axis=0) - child_sums[e, present[0]]


def weighted_medians(weights: np.ndarray, values: np.ndarray) -> np.ndarray:
    """scikit-learn's weighted median of each row of ``weights`` (n, K) over ascending
    ``values`` (K,): the first value whose cumulative weight exceeds half the total, or
    the mid-point of the two values around an exact half; 0 for a row of no weight."""
    weights = np.asarray(weights, dtype=np.float64)
    total = weights.sum(axis=1)
    cum = np.cumsum(weights, axis=1)
    half = 0.5 * total
    out = np.zeros(len(weights))
    for i in np.flatnonzero(total > 0):  # one step per node, not per row
        k = int(np.argmax(cum[i] > half[i]))
        below = cum[i, k - 1] if k > 0 else 0.0
        out[i] = values[k]
        if below == half[i]:
            prev = np.flatnonzero(weights[i, :k] > 0)
            if prev.size:
                out[i] = 0.5 * (values[prev[-1]] + values[k])
    return out
