"""What every AdaBoost family shares: one run's per-row state, block loop and grower
factory, and the result of a round."""
import time

import numpy as np

from ...engine.blocks import timed_blocks
from ...engine.grower import TreeGrower
from ...engine.nodes import GrowerTelemetry, GrowthParams
from ...engine.rowstate import make_row_state, spill_dir_for
from ...errors import ParameterError
from ...kernels import adaboost_kernels as ak

#: Why boosting stopped before ``n_estimators`` (``stop_reason`` in the model's attributes).
STOP_PERFECT = "perfect"
STOP_CHANCE = "no better than chance"


class BoostRun:
    """What every algorithm shares: the cache, the per-row state, growers and telemetry."""

    def __init__(self, cache, spec, plan, *, max_depth, seed, prefetch, state_in_ram):
        self.cache = cache
        self.spec = spec
        self.plan = plan
        self.prefetch = plan.prefetch if prefetch is None else int(prefetch)
        in_ram = plan.state_in_ram if state_in_ram is None else bool(state_in_ram)
        self.rows = make_row_state(spec, cache.block_row_starts, cache.n_rows,
                                   in_memory=in_ram,
                                   spill_dir=spill_dir_for(cache))
        self.state_in_ram = in_ram
        self.max_depth = max_depth
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
        growth = GrowthParams(max_depth=self.max_depth,
                              max_hist_slots=2 * int(self.plan.hist_nodes))
        rng = np.random.default_rng([self.seed, round_index])
        return TreeGrower(n_trees, cache.n_features, cache.max_bin, mapper.n_value_bins,
                          mapper.is_categorical, mapper.bin_edges, policy, growth, rng,
                          bundles=cache.bundles)

    def grow_weighted_tree(self, family, round_index):
        """Grow one tree for ``family`` (its ``policy()`` and ``prepare_block``), whose
        first pass sums the round's row weights into ``family.total``; the CART policy
        normalises impurity decreases by that total. Returns the grower."""
        policy = family.policy()
        grower = self.new_grower(1, policy, round_index)
        family.total = 0.0

        def after_first_pass():
            policy.total_weight = family.total if family.total > 0 else 1.0

        self.grow(grower, family.prepare_block, after_first_pass)
        return grower

    def grow(self, grower, prepare_block, after_first_pass):
        """Drive the grower's passes; ``prepare_block(block, views)`` runs on the first
        pass (fused update + statistics), ``after_first_pass()`` before its split search."""
        grower.start()
        first = True
        while grower.needs_pass():
            for block in self.blocks():
                views = self.rows.load(block.index)
                if first:
                    t0 = time.perf_counter()
                    prepare_block(block, views)
                    self.update_s += time.perf_counter() - t0
                grower.accumulate(block.stored_codes, views["stats"], views["node"])
                self.rows.store(block.index, views)
            if first:
                after_first_pass()
            grower.finish_pass()
            first = False
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
