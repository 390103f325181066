"""Oblique trees and forests (``splitter="oblique"``), grown level by level from the
cache, several trees a pass.

Each level takes two passes. The first moves every row one level down (through axis and
oblique splits, ``kernels/oblique.py``) and builds the frontier's histograms with the
forests' kernels; the CART policy finds each node's best axis-aligned split and the best
split of every feature. The second pass evaluates, for every node with two or more
usable numeric features, a fixed family of directions over its best three (in the
node's standardized units: a half circle in each plane, points on a hemisphere, and the
diagonal discriminant of the histograms' class means): the histogram of ``z = w . x``
per direction (``projection_histograms``), searched by the same CART kernel as if each
direction were a feature. A node takes its oblique split when it lowers the impurity
more than its best axis-aligned one. Values are the bins' middles (``model.mars``);
the stored weights and threshold are in raw units.
"""
import math

import numpy as np

from ...common import HIST_DTYPE, hist_column_starts, hist_width
from ...engine.nodes import raw_thresholds
from ...engine.rowstate import RowStateSpec, make_row_state, spill_dir_for
from ...errors import ParameterError
from ...kernels import cart_stats as kc
from ...kernels import oblique as ko
from ...kernels.histogram import build_histograms_selected
from ...kernels.partition import partition_select_rows
from ...kernels.split_cart_features import find_feature_splits_cart
from ...model.mars import representatives
from ..common.cart_policy import ForestCartPolicy
from .passes import _block_stats, _group_class_weights, counted_blocks

#: Features an oblique split combines at most, and z-histogram bins per direction.
MAX_COMBINED, Z_BINS = 3, 64
#: Directions tried in each plane of two features (a half circle, axes left out).
PLANE_ANGLES = 12
#: Directions on the hemisphere of three features.
SPHERE_POINTS = 20


def check_oblique(config, cache):
    """Refuse what oblique trees do not support (a clear error, not a silent default)."""
    bad = [name for name, off in (
        ("max_leaf_nodes", config.max_leaf_nodes is None),
        ("ccp_alpha", config.ccp_alpha == 0.0),
        ("oob_score", not config.oob_score),
        ("missing_values='surrogate'", config.missing_values == "learn"),
        ("bootstrap_features / bagging", config.learner != "bagging"),
        ("criterion='absolute_error'", config.criterion != "absolute_error"),
        ("class_weight", config.class_weight is None)) if not off]
    if bad:
        raise ParameterError(f"splitter='oblique' does not take {', '.join(bad)}")
    if cache.n_hist_columns != cache.n_features:
        raise ParameterError(f"cache {cache.path}: splitter='oblique' needs features of "
                             f"fewer than {cache.max_bin} bins")


class _Nodes:
    """The node arrays of a group of trees (capacity grows)."""

    def __init__(self, n_trees, n_stats, n_words):
        self.n_trees, self.n_stats, self.n_words = n_trees, n_stats, n_words
        self.n_nodes = np.ones(n_trees, np.int64)
        self.capacity = 0
        self._grow(64)

    def _grow(self, capacity):
        def grown(name, fill, dtype, tail=()):
            a = np.full((self.n_trees, capacity) + tail, fill, dtype)
            if self.capacity:
                a[:, :self.capacity] = getattr(self, name)
            setattr(self, name, a)

        for name, fill, dtype, tail in (
                ("kind", 0, np.int8, ()), ("feature", -1, np.int32, ()),
                ("bin_threshold", 0, np.int32, ()), ("default_left", False, np.bool_, ()),
                ("is_cat", False, np.bool_, ()), ("bits", 0, np.uint32, (self.n_words,)),
                ("obl_feature", -1, np.int32, (MAX_COMBINED,)),
                ("obl_weight", 0.0, np.float64, (MAX_COMBINED,)),
                ("obl_threshold", 0.0, np.float64, ()), ("left", -1, np.int32, ()),
                ("right", -1, np.int32, ()), ("sums", 0.0, np.float64, (self.n_stats,)),
                ("gain", 0.0, np.float64, ()), ("depth", 0, np.int32, ())):
            grown(name, fill, dtype, tail)
        self.capacity = capacity

    def children(self, t):
        """Two new node ids in tree ``t``."""
        if self.n_nodes[t] + 2 > self.capacity:
            self._grow(2 * self.capacity)
        first = int(self.n_nodes[t])
        self.n_nodes[t] += 2
        return first, first + 1


def _directions(features, sd, class_means):
    """Unit directions (standardized units) over ``features`` (2 or 3): half circles in
    each plane, hemisphere points, and the diagonal discriminant; (n_dirs, 3)."""
    k = len(features)
    dirs = []
    angles = np.pi * (np.arange(1, 2 * PLANE_ANGLES + 1, 2) / (2 * PLANE_ANGLES))
    for a in range(k):
        for b in range(a + 1, k):
            for theta in angles:
                d = np.zeros(MAX_COMBINED)
                d[a], d[b] = math.cos(theta), math.sin(theta)
                dirs.append(d)
    if k == 3:
        golden = math.pi * (3.0 - math.sqrt(5.0))
        for i in range(SPHERE_POINTS):
            zc = (i + 0.5) / SPHERE_POINTS
            r = math.sqrt(1 - zc * zc)
            dirs.append(np.array([r * math.cos(golden * i), r * math.sin(golden * i), zc]))
    if class_means is not None:
        lda = np.zeros(MAX_COMBINED)
        lda[:k] = class_means * sd[:k]      # (mu_a - mu_b) / sd^2, in standardized units
        if np.linalg.norm(lda) > 0:
            dirs.append(lda / np.linalg.norm(lda))
    return np.array(dirs)


def grow_oblique_trees(cache, config, tree_ids, *, plan, trees_per_pass, counters):
    """:func:`.passes.grow_trees` for ``splitter="oblique"``: the trees
    ``trees_per_pass`` at a time. Returns a ``ForestResult``."""
    from ...engine.nodes import GrowerTelemetry
    from .passes import ForestResult

    trees, node_stats = [], []
    telemetry = GrowerTelemetry()
    for g0 in range(0, len(tree_ids), trees_per_pass):
        group = [int(g) for g in tree_ids[g0:g0 + trees_per_pass]]
        grower = ObliqueGrower(cache, config, group, plan, counters)
        trees.extend(grower.grow())
        node_stats.extend(grower.node_stats() if config.keep_node_stats
                          else [None] * len(group))
        telemetry.passes += grower.passes
    return ForestResult(trees=trees, node_stats=node_stats, telemetry=telemetry.as_dict())


class ObliqueGrower:
    """Grow the trees ``group`` (global ids) of a forest config level by level."""

    def __init__(self, cache, config, group, plan, counters):
        self.cache, self.config, self.plan, self.counters = cache, config, plan, counters
        self.group = list(group)
        self.streams = np.asarray(group, np.int64)
        mapper = cache.bin_mapper
        self.mapper = mapper
        self.missing_bin = cache.max_bin - 1
        self.policy = self._policy(mapper.n_value_bins, mapper.is_categorical,
                                   self.missing_bin)
        self.n_stats = self.policy.n_stats
        self.rep = representatives(mapper, cache.max_bin)
        starts = hist_column_starts(mapper.n_value_bins, cache.max_bin)
        self.n_columns = int(starts[-1])
        n_words = (max(cache.max_bin, int(np.max(mapper.n_value_bins))) + 31) // 32
        self.nodes = _Nodes(len(group), self.n_stats, n_words)
        self.class_weight = _group_class_weights(cache, config, group, counters)
        self.rows = make_row_state(RowStateSpec({"node": ((len(group), None), np.int32)}),
                                   cache.block_row_starts, cache.n_rows,
                                   in_memory=plan.state_in_ram,
                                   spill_dir=spill_dir_for(cache))
        self.moved = True      # rows are at the frontier (nothing to apply yet)
        self.first = True
        self.passes = 0

    def _policy(self, n_value_bins, is_categorical, missing_bin):
        c = self.config
        return ForestCartPolicy(
            n_trees=len(self.group), criterion=c.criterion, n_classes=c.n_classes,
            n_value_bins=n_value_bins, is_categorical=is_categorical,
            missing_bin=missing_bin, min_samples_leaf=c.min_samples_leaf,
            min_impurity_decrease=c.min_impurity_decrease,
            min_samples_split=c.min_samples_split,
            min_weight_fraction_leaf=c.min_weight_fraction_leaf, hist_dtype=HIST_DTYPE)

    # ------------------------------------------------------------------ passes
    def _stats(self, block, scratch):
        c = self.config
        draws = np.zeros((0, 0), np.uint8)
        if c.sample_mode != kc.MODE_ALL:
            draws = np.empty((len(self.group), block.n_rows),
                             kc.draw_dtype(c.sample_mode, c.sample_lam))
            kc.row_draws(c.seed, self.streams, block.row_start, c.sample_mode, c.sample_lam,
                         draws)
        return _block_stats(block, c, self.streams, self.class_weight, draws, scratch), draws

    def _pass(self, visit):
        """One pass: rows move down once a level, then ``visit(block, codes, node,
        stats, draws)``."""
        nd = self.nodes
        scratch = {}
        self.passes += 1
        for block in counted_blocks(self.cache, self.plan, self.counters):
            views = self.rows.load(block.index)
            node = views["node"]
            codes = block.codes
            if self.first:
                node[:] = 0
            elif not self.moved:
                ko.advance_rows(codes, self.rep, node, nd.kind, nd.feature,
                                nd.bin_threshold, nd.default_left, nd.is_cat, nd.bits,
                                nd.obl_feature, nd.obl_weight, nd.obl_threshold, nd.left,
                                nd.right, self.missing_bin)
            stats, draws = self._stats(block, scratch)
            visit(block, codes, node, stats, draws)
            self.rows.store(block.index, views)
        self.first, self.moved = False, True

    def _histograms(self, trees, ids):
        """Pass A: the frontier's histograms and sums."""
        nd = self.nodes
        n_slots = len(trees)
        slot_of_node = np.full((len(self.group), nd.capacity), -1, np.int32)
        slot_of_node[trees, ids] = np.arange(n_slots)
        hist = np.zeros((n_slots, self.n_columns, self.cache.max_bin,
                         hist_width(self.n_stats)), HIST_DTYPE)
        no_route = np.full((len(self.group), nd.capacity, 4), -1, np.int32)
        no_bits = np.zeros((len(self.group), nd.capacity, 1), np.uint32)

        def visit(block, codes, node, stats, draws):
            from ...engine.partitioner import chunk_starts

            n = block.n_rows
            chunk_start = chunk_starts(n)
            rows = np.empty((len(self.group), n), np.int32)
            slots = np.empty((len(self.group), n), np.int32)
            count = np.empty((len(self.group), len(chunk_start)), np.int64)
            partition_select_rows(codes, node, no_route, no_bits, self.missing_bin,
                                  slot_of_node, draws if draws.size else
                                  np.zeros((len(self.group), 0), np.uint8),
                                  chunk_start, rows, slots, count)
            build_histograms_selected(codes, stats, rows, slots, chunk_start, count, hist)

        self._pass(visit)
        sums = hist[:, 0, :, :self.n_stats].sum(axis=1)
        return hist, sums

    # ------------------------------------------------------------------ one level
    def _feature_mask(self, trees, ids):
        """Each node's features: all, or ``features_per_node`` drawn from a generator of
        (seed, tree, node), as the forests draw them."""
        n_features = self.cache.n_features
        k = self.config.features_per_node
        mask = np.ones((len(trees), n_features), bool)
        if k is None or k >= n_features:
            return mask
        for e, (t, n) in enumerate(zip(trees, ids)):
            rng = np.random.default_rng([self.config.seed, self.group[t], int(n), 7])
            mask[e] = False
            mask[e, rng.choice(n_features, size=k, replace=False)] = True
        return mask

    def _per_feature(self, hist, sums, mask):
        """(proxy, n_eval x n_features) of every feature's best split, -inf where masked
        out, categorical or without a split."""
        n_eval, n_features = mask.shape
        mapper, pol = self.mapper, self.policy
        proxy = np.empty((n_eval, n_features))
        find_feature_splits_cart(
            hist, sums, np.arange(n_eval, dtype=np.int32), mapper.n_value_bins,
            mapper.is_categorical, self.missing_bin, pol.criterion_code, pol.n_classes,
            np.full(n_eval, pol.min_weight_leaf), proxy, np.empty(proxy.shape, np.int32),
            np.empty(proxy.shape, bool),
            np.empty(proxy.shape + (self.nodes.n_words,), np.uint32),
            np.empty(proxy.shape + (self.n_stats,)))
        proxy[~mask | np.asarray(mapper.is_categorical)[None]] = -np.inf
        return proxy

    def _candidates(self, hist, sums, proxy):
        """The nodes worth an oblique try: (node index, features, raw weights (D, 3),
        z_low, z_width) for nodes with two or more numeric features that split."""
        c = self.config
        out = []
        rep = self.rep
        for e in range(len(sums)):
            order = np.argsort(-proxy[e], kind="stable")
            feats = [int(f) for f in order[:MAX_COMBINED] if np.isfinite(proxy[e, f])]
            if len(feats) < 2:
                continue
            h = hist[e, feats, :, :]
            w = h[:, :, :c.n_classes].sum(axis=2) if c.n_classes else h[:, :, 0]
            r = np.nan_to_num(rep[feats, :w.shape[1]])
            w = np.where(np.isnan(rep[feats, :w.shape[1]]), 0.0, w)
            total = w.sum(axis=1)
            if np.any(total <= 0):
                continue
            mean = (w * r).sum(axis=1) / total
            sd = np.sqrt(np.maximum((w * r * r).sum(axis=1) / total - mean ** 2, 0.0))
            if np.any(sd <= 0):
                continue
            lo = np.array([r[j][w[j] > 0].min() for j in range(len(feats))])
            hi = np.array([r[j][w[j] > 0].max() for j in range(len(feats))])
            diff = None
            if c.n_classes:
                cw = h[:, :, :c.n_classes]                     # (k, bins, K)
                top = np.argsort(-cw.sum(axis=(0, 1)) / len(feats))[:2]
                mu = [(cw[:, :, kk] * r).sum(axis=1) / np.maximum(cw[:, :, kk].sum(axis=1),
                                                                    1e-300) for kk in top]
                diff = (mu[0] - mu[1]) / sd ** 2
            dirs = _directions(feats, np.pad(sd, (0, MAX_COMBINED - len(feats)),
                                             constant_values=1.0), diff)
            weights = np.zeros_like(dirs)
            weights[:, :len(feats)] = dirs[:, :len(feats)] / sd
            z_lo = np.minimum(weights[:, :len(feats)] * lo, weights[:, :len(feats)] * hi)
            z_hi = np.maximum(weights[:, :len(feats)] * lo, weights[:, :len(feats)] * hi)
            z_low = z_lo.sum(axis=1)
            width = np.maximum((z_hi.sum(axis=1) - z_low) / Z_BINS, 1e-12)
            out.append((e, np.array(feats + [-1] * (MAX_COMBINED - len(feats)), np.int32),
                        weights, z_low, width))
        return out

    def _oblique_splits(self, trees, ids, sums, candidates):
        """Pass B: each candidate node's best oblique split (CART over its directions'
        z-histograms, as if each direction were a feature)."""
        nd = self.nodes
        n_dirs = max(len(c[2]) for c in candidates)
        n = len(candidates)
        features = np.full((n, MAX_COMBINED), -1, np.int32)
        weights = np.zeros((n, n_dirs, MAX_COMBINED))
        z_low = np.zeros((n, n_dirs))
        z_width = np.ones((n, n_dirs))
        for s, (e, f, w, lo, width) in enumerate(candidates):
            features[s], weights[s, :len(w)] = f, w
            z_low[s, :len(w)], z_width[s, :len(w)] = lo, width
            # padding directions repeat the first, so they never win
            weights[s, len(w):] = w[0]
            z_low[s, len(w):], z_width[s, len(w):] = lo[0], width[0]
        slot_of_node = np.full((len(self.group), nd.capacity), -1, np.int32)
        pick = np.array([c[0] for c in candidates])
        slot_of_node[trees[pick], ids[pick]] = np.arange(n)
        zhist = np.zeros((n, n_dirs, Z_BINS + 1, hist_width(self.n_stats)), HIST_DTYPE)

        def visit(block, codes, node, stats, draws):
            ko.projection_histograms(codes, self.rep, node, stats, slot_of_node, features,
                                     weights, z_low, z_width, zhist)

        self._pass(visit)
        z_policy = self._policy(np.full(n_dirs, Z_BINS + 1, np.int32), np.zeros(n_dirs, bool),
                                Z_BINS)
        z_policy.root_weight = self.policy.root_weight.copy()
        found = z_policy.find_splits(zhist, sums[pick], np.arange(n, dtype=np.int32),
                                     np.ones((n, n_dirs), bool), trees=trees[pick],
                                     node_ids=ids[pick])
        return pick, found, features, weights, z_low, z_width

    def grow_level(self, trees, ids, depth):
        """Histograms, splits and children of one level; the next frontier."""
        c, nd = self.config, self.nodes
        hist, sums = self._histograms(trees, ids)
        nd.sums[trees, ids] = sums
        if c.max_depth is not None and depth >= c.max_depth:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        mask = self._feature_mask(trees, ids)
        axis = self.policy.find_splits(hist, sums, np.arange(len(trees), dtype=np.int32),
                                       mask, trees=trees, node_ids=ids)
        ok = np.asarray(self.policy.accept_splits(axis, sums, trees, ids), bool)
        gain = np.where(ok, axis["gain"], -np.inf)
        oblique = {}
        candidates = [cand for cand in self._candidates(hist, sums, self._per_feature(
            hist, sums, mask)) if ok[cand[0]]]
        if candidates:
            pick, found, feats, weights, z_low, z_width = self._oblique_splits(
                trees, ids, sums, candidates)
            z_ok = np.asarray(self.policy.accept_splits(found, sums[pick], trees[pick],
                                                        ids[pick]), bool)
            for s, e in enumerate(pick):
                if z_ok[s] and found["gain"][s] > gain[e] * (1 + 1e-9) + 1e-15:
                    oblique[e] = (s, found, feats, weights, z_low, z_width)
                    gain[e] = found["gain"][s]
        return self._split(trees, ids, axis, ok, oblique, depth)

    def _split(self, trees, ids, axis, ok, oblique, depth):
        c, nd = self.config, self.nodes
        next_t, next_n = [], []
        for e in np.flatnonzero(ok):
            t, n = int(trees[e]), int(ids[e])
            left, right = nd.children(t)
            if e in oblique:
                s, found, feats, weights, z_low, z_width = oblique[e]
                d, b = int(found["feature"][s]), int(found["bin"][s])
                nd.kind[t, n] = ko.KIND_OBLIQUE
                nd.feature[t, n] = feats[s][0]
                nd.obl_feature[t, n] = feats[s]
                nd.obl_weight[t, n] = weights[s, d]
                nd.obl_threshold[t, n] = z_low[s, d] + (b + 1) * z_width[s, d]
                nd.default_left[t, n] = found["default_left"][s]
                sides, nd.gain[t, n] = (found["left_sums"][s], found["right_sums"][s]), \
                    found["importance_gain"][s]
            else:
                nd.kind[t, n] = ko.KIND_AXIS
                nd.feature[t, n] = axis["feature"][e]
                nd.bin_threshold[t, n] = axis["bin"][e]
                nd.default_left[t, n] = axis["default_left"][e]
                nd.is_cat[t, n] = axis["is_categorical"][e]
                nd.bits[t, n, :axis["cat_bitset"].shape[1]] = axis["cat_bitset"][e]
                sides, nd.gain[t, n] = (axis["left_sums"][e], axis["right_sums"][e]), \
                    axis["importance_gain"][e]
            nd.left[t, n], nd.right[t, n] = left, right
            for child, child_sums in zip((left, right), sides):
                nd.sums[t, child] = child_sums
                nd.depth[t, child] = depth + 1
                grows = (c.max_depth is None or depth + 1 < c.max_depth) and \
                    child_sums[self.policy.count_stat] >= c.min_samples_split
                if grows:
                    next_t.append(t)
                    next_n.append(child)
        self.moved = False
        return np.array(next_t, np.int64), np.array(next_n, np.int64)

    def grow(self):
        """Every level, then each tree's arrays (``Tree(**arrays)``, with ``oblique``)."""
        T = len(self.group)
        trees, ids = np.arange(T, dtype=np.int64), np.zeros(T, np.int64)
        depth = 0
        try:
            while len(trees):
                trees, ids = self.grow_level(trees, ids, depth)
                depth += 1
        finally:
            self.rows.close()
        return [self._arrays(t) for t in range(T)]

    def node_stats(self):
        """Per tree ``{"impurity", "weighted_n"}`` of every node (decision trees)."""
        out = []
        for t in range(len(self.group)):
            sums = self.nodes.sums[t, :int(self.nodes.n_nodes[t])]
            out.append({"impurity": self.policy.impurity(sums),
                        "weighted_n": self.policy.weights(sums)})
        return out

    def _arrays(self, t):
        from ...model.oblique import ObliqueSplits

        nd = self.nodes
        n = int(nd.n_nodes[t])
        kind = nd.kind[t, :n]
        leaf = kind == ko.KIND_LEAF
        is_cat = nd.is_cat[t, :n] & (kind == ko.KIND_AXIS)
        feature = np.where(leaf, -1, nd.feature[t, :n]).astype(np.int32)
        axis_threshold = raw_thresholds(np.where(kind == ko.KIND_AXIS, feature, -1),
                                        nd.bin_threshold[t, :n], is_cat, self.mapper.bin_edges)
        sums = nd.sums[t, :n]
        trees = np.full(n, t)
        node_ids = np.arange(n)
        return dict(
            left=np.where(leaf, -1, nd.left[t, :n]).astype(np.int32),
            right=np.where(leaf, -1, nd.right[t, :n]).astype(np.int32), feature=feature,
            threshold=np.where(kind == ko.KIND_OBLIQUE, nd.obl_threshold[t, :n],
                               axis_threshold),
            bin_threshold=np.where(kind == ko.KIND_AXIS, nd.bin_threshold[t, :n],
                                   0).astype(np.int32),
            default_left=nd.default_left[t, :n].copy(), is_categorical=is_cat,
            cat_bitset=nd.bits[t, :n].copy() if is_cat.any() else np.zeros((n, 0),
                                                                            np.uint32),
            value=np.asarray(self.policy.leaf_values(sums, trees, node_ids)),
            gain=np.where(leaf, 0.0, nd.gain[t, :n]),
            cover=np.asarray(self.policy.cover(sums), np.float64),
            n_samples=sums[:, self.policy.count_stat].copy(),
            oblique=ObliqueSplits.from_nodes(kind == ko.KIND_OBLIQUE,
                                             nd.obl_feature[t, :n], nd.obl_weight[t, :n]))
