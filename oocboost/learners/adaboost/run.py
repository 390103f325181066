"""What every AdaBoost family shares: one run's per-row state, block loop and grower
factory, and the result of a round."""
import time

import numpy as np

from ...engine.blocks import timed_blocks
from ...engine.grower import TreeGrower
from ...engine.nodes import GrowerTelemetry
from ...engine.passes import grow_passes
from ...engine.rowstate import make_row_state, spill_dir_for
from ...errors import ParameterError
from ...kernels import adaboost_kernels as ak

#: Why boosting stopped before ``n_estimators`` (``stop_reason`` in the model's attributes).
STOP_PERFECT = "perfect"
STOP_CHANCE = "no better than chance"
#: Purpose tag of the random-threshold generators (``splitter="random"`` weak trees).
_RNG_THRESHOLDS = 3


class BoostRun:
    """What every algorithm shares: the cache, the per-row state, growers and telemetry."""

    def __init__(self, cache, spec, plan, *, weak, seed, prefetch, state_in_ram):
        self.cache = cache
        self.spec = spec
        self.plan = plan
        self.prefetch = plan.prefetch if prefetch is None else int(prefetch)
        in_ram = plan.state_in_ram if state_in_ram is None else bool(state_in_ram)
        self.rows = make_row_state(spec, cache.block_row_starts, cache.n_rows,
                                   in_memory=in_ram,
                                   spill_dir=spill_dir_for(cache))
        self.state_in_ram = in_ram
        self.weak = weak
        self.seed = seed
        self.telemetry = GrowerTelemetry()
        self.passes = 0
        self.state_passes = 0
        self.io_wait_s = 0.0
        self.update_s = 0.0
        self.bytes_read = 0

    def close(self):
        self.rows.close()

    def blocks(self):
        """Blocks of the cache, timing the wait for each."""
        self.passes += 1
        return timed_blocks(self.cache, self.plan, self._account, prefetch=self.prefetch)

    def _account(self, wait_s, nbytes):
        self.io_wait_s += wait_s
        self.bytes_read += nbytes

    def state_blocks(self):
        """(block index, views) of the per-row state only: no cache read."""
        self.state_passes += 1
        for b in range(self.cache.n_blocks):
            views = self.rows.load(b)
            yield b, views
            self.rows.store(b, views)

    def new_grower(self, n_trees, policy, round_index):
        cache = self.cache
        mapper = cache.bin_mapper
        rng = np.random.default_rng([self.seed, round_index])
        return TreeGrower(n_trees, cache.n_features, cache.max_bin, mapper.n_value_bins,
                          mapper.is_categorical, mapper.bin_edges, policy,
                          self.weak.growth(self.plan.hist_nodes), rng, bundles=cache.bundles)

    def policy(self, n_classes, round_index, n_trees=1):
        """The weak trees' split policy for one round (``n_trees`` grown together)."""
        rngs = [np.random.default_rng([self.seed, round_index, t, _RNG_THRESHOLDS])
                for t in range(n_trees)]
        return self.weak.policy(n_classes, self.cache.bin_mapper, self.cache.max_bin - 1, rngs)

    def grow_weighted_tree(self, family, round_index, n_classes):
        """Grow one tree for ``family`` (its ``prepare_block``) with ``n_classes`` lanes of
        statistics (0: regression). Returns the grower."""
        grower = self.new_grower(1, self.policy(n_classes, round_index), round_index)
        self.grow(grower, family.prepare_block)
        return grower

    def grow(self, grower, prepare_block):
        """Drive the grower's passes; ``prepare_block(block, views)`` runs on the first
        pass (fused update + statistics)."""
        grower.start()

        def block_statistics(block, views, first):
            if first:
                t0 = time.perf_counter()
                prepare_block(block, views)
                self.update_s += time.perf_counter() - t0
            return views["stats"], views["node"], None

        grow_passes(grower, self.blocks, self.rows, block_statistics)
        self.telemetry.add(grower.telemetry)


def sample_weight(block):
    if block.weight is None:
        return np.empty(0, np.float32), False
    return np.ascontiguousarray(block.weight, dtype=np.float32), True


def class_labels(block, n_classes):
    y = np.empty(block.n_rows, np.int32)
    bad = ak.class_indices(np.ascontiguousarray(block.label), int(n_classes), y)
    if bad >= 0:
        raise ParameterError(f"row {block.row_start + bad}: label {block.label[bad]!r} is not "
                             f"a class index in [0, {n_classes}); AdaBoostClassifier on a "
                             f"cache needs labels 0..K-1")
    return y


def leaf_class_weights(arrays):
    """(class weights (n_nodes, K), leaf mask) from a CART classification tree's arrays."""
    return arrays["value"] * arrays["cover"][:, None], arrays["left"] < 0


def weighted_error(arrays):
    """(weighted misclassification, total weight) of a gini tree on its training rows:
    ``sum over leaves of W_leaf - max_k W_leaf,k`` (the leaf predicts its argmax)."""
    cw, leaf = leaf_class_weights(arrays)
    cover = arrays["cover"]
    wrong = float(np.sum(cover[leaf] - cw[leaf].max(axis=1)))
    return max(wrong, 0.0), float(cover[0])


class RoundResult:
    """What one round produced: trees (dicts of arrays), their weight, the error, and
    why boosting stops after it (None: go on)."""

    def __init__(self, trees, weight, error, stop=None, keep=True):
        self.trees = trees
        self.weight = weight
        self.error = error
        self.stop = stop
        self.keep = keep
