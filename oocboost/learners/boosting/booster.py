"""Gradient boosting (XGBoost's regularised second-order objective) on the shared grower.

Each round grows ``n_outputs`` trees (one per class for ``multi:*``) in the same passes.
The data is read ``max_depth`` times per round for depth-wise trees::

    pass 0  (fused) for each block: apply the last round's final splits -> leaf of each row,
                    margins += leaf values, gradients from the new margins, root histogram
    pass k          for each block: rows move one level down, histograms of level k

so the last level of a tree costs no pass of its own: it is applied in the next round's
first pass. Per-row state (margins, gradient/hessian, node of each row) lives in RAM
or is spilled per block (see ``engine/rowstate.py``), as the memory plan decides.
"""
import copy
import dataclasses
import time

import numpy as np

from ...common import G_H_DTYPE
from ...engine.blocks import timed_blocks
from ...engine.constraints import (
    parse_feature_weights,
    parse_interaction_constraints,
    parse_monotone_constraints,
)
from ...engine.grower import TreeGrower
from ...engine.nodes import GrowerTelemetry, GrowthParams, node_index_dtype
from ...engine.passes import grow_passes
from ...engine.policies import GradientPolicy
from ...engine.rowstate import RowStateSpec, make_row_state, spill_dir_for
from ...engine.symmetric import SymmetricGradientPolicy
from ...errors import ParameterError
from ...kernels.partition import add_node_values
from ...kernels.sampling import sampled_rows, uniform_per_row
from ...model.tree import binned_leaves
from . import quantized
from .leaf_refresh import refresh_leaves
from .linear_fit import fit_linear_leaves
from .ordered import OrderedMargins, model_leaf_values
from .ranking import QueryGroups, apply_patches, group_gradients
from .row_sampling import (
    SAMPLE_SLACK,
    SampleBlock,
    check_sampling_use,
    expected_share,
    sample_block,
    sampled_round,
    sampling_kind,
)


def state_spec(n_outputs, params):
    """Per-row state of a boosting run: margins, (gradient, hessian) and the node
    of each row in each tree of the round (as small an index as the tree limits allow);
    with ``boosting_type="ordered"`` the ordered margins too (``ordered.py``)."""
    fields = {
        "margin": ((None, n_outputs), np.float64),
        "stats": ((n_outputs, None, 2), G_H_DTYPE),
        "node": ((n_outputs, None), node_index_dtype(params["max_depth"] or None,
                                                     params["max_leaves"] or None)),
    }
    if params.get("boosting_type") == "ordered":
        fields["ordered_margin"] = ((None, n_outputs), np.float64)
    if params.get("use_quantized_grad"):
        fields["qstats"] = ((n_outputs, None, 2), np.int8)    # quantized.py
    return RowStateSpec(fields)


class BoostingState:
    """Everything that lives across rounds of one training run."""

    def __init__(self, cache, objective, params, plan, base_margin, init_model=None,
                 folds=None, distributed=None):
        self.cache = cache
        self.objective = objective
        self.params = params
        self.plan = plan
        # Cross-validation grows every fold's trees in the same passes: ``folds`` is
        # ``(fold ids, fold of each row)`` and fold ``j``'s outputs are margin columns
        # ``j * K .. (j + 1) * K``; its held-out rows get zero gradient and hessian.
        self.folds = folds
        n_folds = 1 if folds is None else len(folds[0])
        self.n_outputs = objective.n_outputs * n_folds
        k = self.n_outputs
        spec = state_spec(k, params)
        self.spec = spec
        self.rows = make_row_state(spec, cache.block_row_starts, cache.n_rows,
                                   in_memory=plan.state_in_ram,
                                   spill_dir=spill_dir_for(cache))
        self.base_margin = np.asarray(base_margin, dtype=np.float64)
        self.prev_grower = None
        self.prev_values = None
        # the last round's trees (one per output, as the model holds them) whose rows
        # are counted where their splits are applied (count_rows), and the counts so far
        self.counted_trees = None
        self.row_counts = None
        # boosting_type="ordered": the round being applied to the ordered margins
        self.ordered = None
        self.prev_learning_rate = None
        # linear_tree: the last round's leaf models, applied with its values
        self.prev_linear = None
        self._representatives = None
        # DART (dart.py): the dropped trees, subtracted before this round's gradients,
        # and the last round's change to the dropped trees' part of the margins
        self.dart_drop = None
        self.dart_change = None
        self.hist_pool = None
        self.round = 0
        self.telemetry = GrowerTelemetry()
        self.io_wait_s = 0.0
        self.gradient_s = 0.0
        self.bytes_read = 0
        self._init_model = init_model
        names = list(cache.feature_names or [])
        self.interaction_sets = parse_interaction_constraints(
            params.get("interaction_constraints"), names)
        self.monotone = parse_monotone_constraints(
            params.get("monotone_constraints"), names, cache.bin_mapper.is_categorical)
        self.feature_weights = parse_feature_weights(params.get("feature_weights"), names)
        # rows each tree is grown on, about (LightGBM's categorical search counts rows
        # from hessians, policies.GradientPolicy)
        train_share = 1.0 if folds is None else (n_folds - 1) / n_folds
        # distributed (``oocboost.dask``): the rows of every worker's shard, and the
        # hook that sums each pass's histograms over the workers
        self.distributed = distributed
        self.reduce_hook = None if distributed is None else distributed.reduce_histograms
        # rows are drawn (subsample) by their index in the whole data: a shard's first
        # row is row ``row_offset`` of the shards concatenated
        self.row_offset = 0 if distributed is None else int(distributed.row_offset)
        n_rows = cache.n_rows if distributed is None else distributed.n_rows
        self.total_rows = n_rows
        self.rows_per_tree = n_rows * params["subsample"] * train_share
        self.all_rows = None
        if getattr(objective, "needs_all_rows", False):
            if params["booster"] == "dart":
                raise ParameterError(f"{objective.name} with booster='dart' is not "
                                     f"offered yet")
            self.all_rows = _all_rows_setup(cache, objective, plan, folds)
        self.groups = None
        if getattr(objective, "needs_groups", False):
            self.groups = QueryGroups(cache, objective, folds)
        check_sampling_use(params, objective, folds)
        self.sample_passes = 0
        self.sample_rows = 0
        self.sample_capacity = self._plan_sample()

    def representatives(self):
        """(n_features, max_bin) float64: the value each code stands for (its bin's
        middle), made once (``linear_tree`` reads features so)."""
        if self._representatives is None:
            from ...model.mars import representatives

            self._representatives = representatives(self.cache.bin_mapper,
                                                    self.cache.max_bin)
        return self._representatives

    def _plan_sample(self):
        """Rows to allocate for a round's gradient-based sample kept in memory, 0 when
        there is none or it does not fit the plan (the rounds then read the cache in
        every pass, skipping the rows left out). The sample takes its bytes from the
        plan's resident blocks."""
        p, cache = self.params, self.cache
        if sampling_kind(p) is None:
            return 0
        rows = int(cache.n_rows * expected_share(p) * (1 + SAMPLE_SLACK)) + 1024
        per_row = SampleBlock.nbytes_per_row(cache.n_columns, self.n_outputs,
                                             np.dtype(cache.codes_dtype).itemsize)
        need = 2 * rows * per_row   # gathered, then trimmed into a copy
        if self.plan.memory_limit is not None:
            if need > self.plan.resident_bytes:
                return 0
            self.plan = dataclasses.replace(
                self.plan, resident_bytes=self.plan.resident_bytes - need)
        return rows

    def close(self):
        self.rows.close()


def _all_rows_setup(cache, objective, plan, folds):
    """Labels, weights and their order for an objective whose gradients need every row
    (``survival:cox``); its per-row state must stay in RAM."""
    if folds is not None:
        raise ParameterError(f"{objective.name} computes each row's gradient from every "
                             f"row: oocboost.cv cannot grow its folds together; train "
                             f"each fold with train()")
    if not plan.state_in_ram:
        raise ParameterError(f"{objective.name} computes each row's gradient from every "
                             f"row, which needs the per-row state in RAM "
                             f"({plan.state_bytes_per_row} bytes a row): raise "
                             f"memory_limit")
    label, weight = cache.read_labels()
    return {"label": label, "weight": weight, "order": objective.label_order(label)}


def _all_row_gradients(state, round_index):
    """Apply the last round to every row's margins (one pass over the blocks), then the
    gradients of all rows at once into the stats (``needs_all_rows`` objectives)."""
    prev, prev_values = state.prev_grower, state.prev_values
    if prev is not None:
        for block in _blocks(state):
            views = state.rows.load(block.index, ("margin", "node"))
            _apply_previous_round(state, block, views, prev, prev_values)
            views["node"][:] = 0
            state.rows.store(block.index, views, ("margin", "node"))
        state.prev_grower = None
    rows = state.all_rows
    margin = state.rows.full("margin")
    stats = state.rows.full("stats")            # (1, n_rows, 2)
    by_row = np.moveaxis(stats, 0, 1)
    state.objective.all_gradients(rows["order"], rows["label"], margin, rows["weight"],
                                  by_row[:, :, 0], by_row[:, :, 1])
    if state.params["subsample"] < 1.0:
        u = np.empty(len(rows["label"]), np.float64)
        uniform_per_row(state.params["seed"], round_index, 0, u)
        stats *= (u < state.params["subsample"]).astype(G_H_DTYPE)[None, :, None]


def _blocks(state):
    """Blocks of the training cache; the wait and bytes go to the run's telemetry."""

    def account(wait_s, nbytes):
        state.io_wait_s += wait_s
        state.bytes_read += nbytes

    return timed_blocks(state.cache, state.plan, account)


def _dart_margin(model, block, missing_bin):
    return model.predict_margin_binned(block.codes, missing_bin, include_base=False)


def _gradients_for_block(state, block, views, round_index):
    """Gradients and hessians of a block, written straight into its stats rows."""
    # ordered boosting: each row's gradient at the margin of the rows before it
    _gradients_into(state, block, views.get("ordered_margin", views["margin"]),
                    views["stats"], round_index)


def gradients_at(state, block, margin, round_index):
    """(n_outputs, n_rows, 2) gradients and hessians of a block at ``margin``, with the
    round's subsample and folds (ordered boosting's model leaf values)."""
    stats = np.empty((state.n_outputs, block.n_rows, 2), G_H_DTYPE)
    _gradients_into(state, block, margin, stats, round_index)
    return stats


def _gradients_into(state, block, margin, stats, round_index):
    p = state.params
    by_row = np.moveaxis(stats, 0, 1)              # (n_rows, n_outputs, 2) view
    if state.dart_drop is not None:  # the margins without the dropped trees
        margin = margin - _dart_margin(state.dart_drop, block, state.cache.max_bin - 1)
    if state.folds is None:
        state.objective.gradients(block.label, margin, block.weight,
                                  by_row[:, :, 0], by_row[:, :, 1])
    else:
        _fold_gradients(state, block, margin, by_row)
    _subsample(p, block, round_index, stats, state.row_offset)


def _subsample(p, block, round_index, stats, row_offset=0):
    """Zero the stats of the rows left out of this round (``subsample < 1``, uniform;
    gradient-based sampling is ``row_sampling.sample_block``'s)."""
    if p["subsample"] < 1.0 and p["sampling_method"] == "uniform":
        u = np.empty(block.n_rows, np.float64)
        uniform_per_row(p["seed"], round_index, row_offset + block.row_start, u)
        keep = (u < p["subsample"]).astype(G_H_DTYPE)
        stats[:, :, 0] *= keep
        stats[:, :, 1] *= keep


def _ranking_pass(state, round_index):
    """The round's own pass of a ranking objective (``ranking.py``)."""
    prev, prev_values = state.prev_grower, state.prev_values
    missing_bin = state.cache.max_bin - 1

    def apply_round(block, views):
        if prev is not None:
            _apply_previous_round(state, block, views, prev, prev_values)
        views["node"][:] = 0

    def dart_margin(block):
        if state.dart_drop is None:
            return None
        return _dart_margin(state.dart_drop, block, missing_bin)

    group_gradients(state, _blocks(state), apply_round, dart_margin, round_index)
    state.prev_grower = None


def _fold_gradients(state, block, margin, by_row):
    """Each fold's gradients from its own margins, with its held-out rows weighted 0."""
    k = state.objective.n_outputs
    fold_ids, fold_of_row = state.folds
    held = fold_of_row[block.row_start:block.row_start + block.n_rows]
    grad = np.empty((block.n_rows, k), G_H_DTYPE)
    hess = np.empty((block.n_rows, k), G_H_DTYPE)
    for j, fold in enumerate(fold_ids):
        weight = (held != fold).astype(np.float64)
        if block.weight is not None:
            weight *= block.weight
        cols = slice(j * k, (j + 1) * k)
        state.objective.gradients(block.label, np.ascontiguousarray(margin[:, cols]),
                                  weight, grad, hess)
        by_row[:, cols, 0] = grad
        by_row[:, cols, 1] = hess


def initial_margins(state, init_model, uncounted=()):
    """Margins before the first new round: the base margin (each row's own when the
    cache has them, as XGBoost's ``base_margin``; repeated for every fold of a
    cross-validation) plus ``init_model``'s trees.

    ``uncounted``: trees of ``init_model`` without row counts (the last round of a
    checkpoint, saved before the next pass counted it; a model from XGBoost or an older
    oocboost), counted on these rows in the same pass; returns copies with their
    ``n_samples``, in order (the trees given are not changed)."""
    where = f"training cache {state.cache.path}"
    counts = [np.zeros(t.n_nodes) for t in uncounted]
    for block in _blocks(state):
        if uncounted:
            leaves = binned_leaves(uncounted, block.codes, state.cache.max_bin - 1)
            for j, tree_counts in enumerate(counts):
                tree_counts += np.bincount(leaves[j], minlength=len(tree_counts))
        state.objective.check_labels(block.label, where, row_start=block.row_start)
        views = state.rows.load(block.index)
        if block.base_margin is None:
            views["margin"][:] = state.base_margin[None, :]
        else:
            folds = state.n_outputs // block.base_margin.shape[1]
            views["margin"][:] = np.tile(block.base_margin, (1, folds))
        if init_model is not None and init_model.n_trees:
            views["margin"] += init_model.predict_margin_binned(
                block.codes, state.cache.max_bin - 1, include_base=False)
        if "ordered_margin" in views:
            views["ordered_margin"][:] = views["margin"]
        state.rows.store(block.index, views)
    return [_with_counts(state, tree, c) for tree, c in zip(uncounted, counts)]


def _round_grower(state, round_index):
    """The grower of a round: its growth limits and the gradient split policy."""
    cache = state.cache
    p = state.params
    mapper = cache.bin_mapper
    symmetric = p["grow_policy"] == "symmetric"
    growth = GrowthParams(
        max_depth=p["max_depth"] or None, max_leaves=p["max_leaves"] or None,
        grow_policy="depthwise" if symmetric else p["grow_policy"],
        leaves_per_pass=p["leaves_per_pass"],
        colsample_bytree=p["colsample_bytree"],
        max_hist_slots=2 * int(state.plan.hist_nodes),
        colsample_bylevel=p["colsample_bylevel"], colsample_bynode=p["colsample_bynode"],
        interaction_constraints=state.interaction_sets,
        feature_weights=state.feature_weights)
    policy_args = dict(reg_lambda=p["reg_lambda"], reg_alpha=p["reg_alpha"],
                       max_delta_step=p["max_delta_step"],
                       min_child_weight=p["min_child_weight"],
                       max_cat_to_onehot=p["max_cat_to_onehot"], gamma=p["gamma"],
                       n_value_bins=mapper.n_value_bins, is_categorical=mapper.is_categorical,
                       missing_bin=cache.max_bin - 1, monotone=state.monotone,
                       max_cat_threshold=p["max_cat_threshold"],
                       categorical_split=p["categorical_split"], cat_smooth=p["cat_smooth"],
                       cat_l2=p["cat_l2"], min_data_per_group=p["min_data_per_group"],
                       n_rows=state.rows_per_tree)
    if p["use_quantized_grad"]:
        policy = quantized.quantized_policy(p, state.total_rows, **policy_args)
    else:
        policy_class = SymmetricGradientPolicy if symmetric else GradientPolicy
        policy = policy_class(**policy_args)
    rng = np.random.default_rng([p["seed"], round_index])
    return TreeGrower(state.n_outputs, cache.n_features, cache.max_bin, mapper.n_value_bins,
                      mapper.is_categorical, mapper.bin_edges, policy, growth, rng,
                      hist_pool=state.hist_pool, bundles=cache.bundles)


def grow_round(state, round_index, learning_rate):
    """Grow one round's trees; returns a list of tree-array dicts (values scaled by eta)."""
    cache = state.cache
    p = state.params
    grower = _round_grower(state, round_index)
    grower.start()
    if state.reduce_hook is not None:
        grower.distribute(state.reduce_hook)
    sampled = sampled_round(p, round_index)
    sample = (SampleBlock(cache.n_columns, state.n_outputs, cache.codes_dtype,
                          state.sample_capacity)
              if sampled and state.sample_capacity else None)
    if state.all_rows is not None:
        t0 = time.perf_counter()
        _all_row_gradients(state, round_index)  # one more pass: every margin first
        state.gradient_s += time.perf_counter() - t0
        grower.telemetry.passes += 1
    if state.groups is not None:
        t0 = time.perf_counter()
        _ranking_pass(state, round_index)  # one more pass: whole query groups
        state.gradient_s += time.perf_counter() - t0
        grower.telemetry.passes += 1
    if p["boosting_type"] == "ordered" and state.prev_grower is not None:
        state.ordered = OrderedMargins(state.prev_grower, p["reg_lambda"],
                                       state.prev_learning_rate)
    if p["use_quantized_grad"]:
        # (the gradient time is _first_pass_block's, as in any round)
        scales = quantized.gradient_pass(
            state, lambda: _blocks(state),
            lambda block, views: _first_pass_block(state, block, views, round_index, False))
        state.prev_grower = None    # applied to every row
        grower.telemetry.passes += 1
        quantized.histogram_passes(state, grower, lambda: _blocks(state), scales,
                                   round_index)
    else:
        _run_passes(state, grower, round_index, sampled, sample)
    _store_row_counts(state)    # the first pass applied the last round to every row
    state.ordered = None
    state.prev_learning_rate = learning_rate
    trees = []
    values = []
    for c in range(state.n_outputs):
        arrays = grower.tree_arrays(c)
        arrays["value"] = arrays["value"] * learning_rate
        values.append(np.ascontiguousarray(arrays["value"][:, 0]))
        trees.append(arrays)
    if p["use_quantized_grad"] and p["quant_train_renew_leaf"] \
            and state.objective.leaf_refresh_quantile is None:
        quantized.renew_leaves(state, grower, trees, values, learning_rate,
                               lambda: _blocks(state))
        grower.telemetry.passes += 1
    if state.objective.leaf_refresh_quantile is not None:
        refresh_leaves(state, grower, trees, values, round_index, learning_rate,
                       lambda: _blocks(state))
        grower.telemetry.passes += 1
    elif p["boosting_type"] == "ordered":
        model_leaf_values(state, grower, trees, values, learning_rate,
                          lambda: _blocks(state),
                          lambda block, margin: gradients_at(state, block, margin,
                                                             round_index))
        grower.telemetry.passes += 1
    state.prev_linear = None
    if p["linear_tree"] and round_index > 0:  # LightGBM's first tree is constant
        state.prev_linear = fit_linear_leaves(state, grower, trees, learning_rate,
                                              lambda: _blocks(state),
                                              state.representatives())
        grower.telemetry.passes += 1
    state.prev_grower, state.prev_values = grower, values
    state.hist_pool = grower.hist
    state.telemetry.add(grower.telemetry)
    return trees


def _run_passes(state, grower, round_index, sampled, sample):
    """The round's passes. The first applies the last round and makes the gradients
    (and, in a sampled round, draws the sample); the grower reads the cache in every
    pass, or, with a ``sample`` kept in memory, only that sample, gathered by a first
    pass of its own."""
    if sample is not None:
        _sample_pass(state, round_index, sample)
        grower.telemetry.passes += 1
        grower.grown_from_sample = True
        while grower.needs_pass():
            grower.accumulate(sample.codes, sample.stats, sample.node)
            grower.finish_pass()
            state.sample_passes += 1
        return

    def block_statistics(block, views, first):
        keep = None
        if first:
            keep = _first_pass_block(state, block, views, round_index, sampled)
        elif sampled:
            keep = np.empty(block.n_rows, np.uint8)
            sampled_rows(views["stats"], keep)
        # rows left out of the sample are skipped, not added as zeros
        row_counts = None if keep is None else np.broadcast_to(keep, views["node"].shape)
        return views["stats"], views["node"], row_counts

    # After the first pass of a round only the node positions change, and the margins
    # are not read: a spilled state then reads 16 and writes 4 of its 24 bytes a row
    # instead of reading and writing all 24.
    grow_passes(grower, lambda: _blocks(state), state.rows, block_statistics,
                later_fields=("stats", "node"), later_written=("node",))


def _first_pass_block(state, block, views, round_index, sampled):
    """A block of the round's first pass: the last round applied, the gradients, and in
    a sampled round the sample drawn (returns its rows, else None)."""
    t0 = time.perf_counter()
    if state.prev_grower is not None:
        _apply_previous_round(state, block, views, state.prev_grower, state.prev_values)
    if state.groups is not None:
        apply_patches(state.groups, block, views["stats"])
        _subsample(state.params, block, round_index, views["stats"], state.row_offset)
    elif state.all_rows is None:
        _gradients_for_block(state, block, views, round_index)
    views["node"][:] = 0
    keep = None
    if sampled:
        keep = sample_block(state.params, views["stats"], round_index, block.row_start)
    state.gradient_s += time.perf_counter() - t0
    return keep


def _sample_pass(state, round_index, sample):
    """The pass of a round grown from memory: the last round applied, the gradients
    drawn into the sample, which the round's every histogram then reads."""
    for block in _blocks(state):
        views = state.rows.load(block.index)
        keep = _first_pass_block(state, block, views, round_index, True)
        sample.append(block.stored_codes, views["stats"], keep)
        state.rows.store(block.index, views)
    state.sample_rows += sample.finish().n_rows


def _apply_previous_round(state, block, views, prev, prev_values):
    """Margins += the last round's leaf values (its splits applied now) and, with DART,
    the change of the dropped trees' weights."""
    prev.move_to_leaves(block.stored_codes, views["node"])
    _count_rows(state, block, views["node"])
    for c in range(state.n_outputs):
        add_node_values(views["node"][c], prev_values[c], 1.0, views["margin"][:, c])
    if state.ordered is not None:
        state.ordered.apply(views)
    if state.prev_linear is not None:
        state.prev_linear.add_to_margins(block, views["node"], prev_values, views["margin"])
    if state.dart_change is not None:
        views["margin"] += _dart_margin(state.dart_change, block, state.cache.max_bin - 1)


def finish_margins(state):
    """Apply the last round's pending splits and leaf values (when margins are needed)."""
    prev, prev_values = state.prev_grower, state.prev_values
    if prev is None:
        return
    for block in _blocks(state):
        views = state.rows.load(block.index)
        _apply_previous_round(state, block, views, prev, prev_values)
        views["node"][:] = 0
        state.rows.store(block.index, views)
    _store_row_counts(state)
    state.prev_grower = None
    state.prev_linear = None
    state.dart_change = None


# ----------------------------------------------------------------------------- row counts
# A boosted tree's ``n_samples``: the training rows through each node (LightGBM's
# leaf_count / internal_count, which its Tree SHAP weighs paths by; XGBoost keeps hessian
# sums, our ``cover``). Histograms of gradients hold no counts, and a round's last
# splits reach the rows only in the next round's first pass: the rows are counted there,
# and after the last round by one pass of their own (count_last_round). Every row of the
# training data counts (a subsample's tree was grown on part of them); in
# cross-validation a fold's trees count the rows it trains on.

def count_rows(state, trees):
    """Count the rows of ``trees`` (the round just added to the model, one Tree per
    output) where its splits are applied, and write them to each tree's
    ``n_samples``."""
    state.counted_trees = list(trees)
    state.row_counts = [np.zeros(t.n_nodes) for t in state.counted_trees]


def _count_rows(state, block, node):
    """Add a block's rows at each leaf of the counted trees (``node``: the rows' leaves,
    (n_outputs, n_rows))."""
    if state.row_counts is None:
        return
    k = state.objective.n_outputs
    held = None
    if state.folds is not None:
        fold_ids, fold_of_row = state.folds
        held = fold_of_row[block.row_start:block.row_start + block.n_rows]
    for c, counts in enumerate(state.row_counts):
        weights = None if held is None else (held != fold_ids[c // k]).astype(np.float64)
        counts += np.bincount(node[c], weights=weights, minlength=len(counts))


def _store_row_counts(state):
    """The counts into the counted trees (``_node_counts``)."""
    if state.row_counts is None:
        return
    for tree, counts in zip(state.counted_trees, state.row_counts):
        tree.n_samples = _node_counts(state, tree, counts)
    state.counted_trees = state.row_counts = None


def _node_counts(state, tree, leaf_counts):
    """Each node's rows from its leaves' (summed over the workers of a distributed
    run): a split node's is the sum of its children's."""
    counts = leaf_counts
    if state.distributed is not None:
        counts = state.distributed.sum_(counts)
    for node in range(tree.n_nodes - 1, -1, -1):   # children come after parents
        if tree.left[node] >= 0:
            counts[node] = counts[tree.left[node]] + counts[tree.right[node]]
    return counts


def _with_counts(state, tree, leaf_counts):
    counted = copy.copy(tree)
    counted.n_samples = _node_counts(state, tree, leaf_counts)
    return counted


def count_last_round(state):
    """The rows of the last round's trees, which no later pass applied: one pass that
    moves each row to its leaf and counts (margins are not needed)."""
    prev = state.prev_grower
    if state.row_counts is None or prev is None:
        return
    for block in _blocks(state):
        node = state.rows.load(block.index, ("node",))["node"]
        prev.move_to_leaves(block.stored_codes, node)
        _count_rows(state, block, node)
    _store_row_counts(state)
