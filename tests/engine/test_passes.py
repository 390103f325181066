"""Tests of oocboost.engine.passes: the one pass loop grows the brute-force tree at any
block size, in memory and spilled, and later passes load and store only the fields the
learner names."""
import numpy as np
import pytest

from oocboost.cache.store import Block
from oocboost.engine.grower import TreeGrower
from oocboost.engine.nodes import GrowthParams
from oocboost.engine.passes import grow_passes
from oocboost.engine.policies import GradientPolicy
from oocboost.engine.rowstate import RowStateSpec, make_row_state
from tests.engine.test_grower import (
    LAMBDA,
    MISSING,
    brute_force_tree,
    grower_leaves,
    leaf_of_rows,
    make_problem,
)


class Recording:
    """A real row state that also notes which fields each load and store touched."""

    def __init__(self, rows):
        self.rows, self.loads, self.stores = rows, [], []

    def load(self, index, fields=None):
        views = self.rows.load(index, fields)
        self.loads.append(tuple(sorted(views)))
        return views

    def store(self, index, views, fields=None):
        self.stores.append(None if fields is None else tuple(fields))
        self.rows.store(index, views, fields)


@pytest.mark.parametrize("block_rows", [1, 37, 600])
@pytest.mark.parametrize("in_memory", [True, False])
def test_grow_passes_equals_brute_force_and_reads_only_later_fields(tmp_path, block_rows,
                                                                    in_memory):
    codes, g, h, nvb = make_problem(3)
    n_rows, n_features = codes.shape
    starts = np.arange(0, n_rows, block_rows)
    blocks = [Block(i, int(s), int(min(block_rows, n_rows - s)),
                    np.ascontiguousarray(codes[s:s + block_rows].T), None, None)
              for i, s in enumerate(starts)]
    spec = RowStateSpec({"stats": ((1, None, 2), np.float32), "node": ((1, None), np.int32),
                         "margin": ((None,), np.float64)})
    rows = Recording(make_row_state(spec, starts, n_rows, in_memory, spill_dir=str(tmp_path)))
    policy = GradientPolicy(reg_lambda=LAMBDA, reg_alpha=0.0, max_delta_step=0.0,
                            min_child_weight=1.0, max_cat_to_onehot=4, n_value_bins=nvb,
                            is_categorical=np.zeros(n_features, bool), missing_bin=MISSING)
    edges = [np.arange(n - 1, dtype=float) + 0.5 for n in nvb]
    grower = TreeGrower(1, n_features, 16, nvb, np.zeros(n_features, bool), edges, policy,
                        GrowthParams(max_depth=3), np.random.default_rng(0))
    grower.start()
    firsts = []

    def block_statistics(block, views, first):
        firsts.append(first)
        if first:   # the learner's first-pass work: its statistics and the root
            a, b = block.row_start, block.row_start + block.n_rows
            views["stats"][0] = np.stack([g[a:b], h[a:b]], axis=1)
            views["node"][:] = 0
        return views["stats"], views["node"], None

    grow_passes(grower, lambda: iter(blocks), rows, block_statistics,
                later_fields=("stats", "node"), later_written=("node",))
    ref = leaf_of_rows(brute_force_tree(codes, g, h, 3, nvb), n_rows)
    got = grower_leaves(grower.tree_arrays(0), codes)
    assert [p for p, _ in got] == [p for p, _ in ref]
    np.testing.assert_allclose([v for _, v in got], [v for _, v in ref], rtol=1e-6)
    n_blocks = len(blocks)
    assert firsts == [True] * n_blocks + [False] * (len(firsts) - n_blocks)
    assert len(firsts) == 3 * n_blocks      # one pass a level; the last level is pending
    assert rows.stores[:n_blocks] == [None] * n_blocks
    assert set(rows.stores[n_blocks:]) == {("node",)}
    assert set(rows.loads[:n_blocks]) == {("margin", "node", "stats")}
    assert set(rows.loads[n_blocks:]) == {("node", "stats")}
    rows.rows.close()
