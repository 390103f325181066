"""Hoeffding adaptive trees (learners/hoeffding/adaptive_tree.py): every node's detector
and mean error follow river's ADWIN and river's rules row by row (a naive twin built on
river's detectors); a grafted alternate routes and predicts as it did on its own; the
tree follows an abrupt change that a plain Hoeffding tree keeps; and on river's drifting
streams its prequential accuracy is compared with river's (slow)."""
import numpy as np
import pytest

import oocboost
from oocboost.errors import ParameterError
from oocboost.kernels.adwin import adwin_update_paths, new_state
from oocboost.learners.hoeffding.adaptive import (
    ADWIN_CLOCK,
    ADWIN_GRACE,
    ADWIN_MAX_BUCKETS,
    ADWIN_MIN_LENGTH,
)

from .test_adaptive_forest import score_after_change


@pytest.mark.parametrize("regression", [False, True])
def test_node_detectors_follow_river_row_by_row(regression):
    """Rows reach the leaves of a depth-2 tree; each node on a row's path gets its
    error, in row order. Twin: one river ADWIN and one mean per node; a change is a
    rise when the detector's estimate after it (the window left after the cut) is above
    the estimate before the row (MOA's rule; river compares the node's running mean
    before and after the one row); a change that was no rise only restarts the mean, a
    rise also flags the node, and restarts the mean unless the regressor's node already
    has an alternate."""
    river_drift = pytest.importorskip("river.drift")
    rng = np.random.default_rng(0)
    parent = np.array([-1, 0, 0, 1, 1, 2, 2], np.int32)
    n = 6000
    leaves = rng.choice([3, 4, 5, 6], size=n).astype(np.int32)
    rate = np.where(np.arange(n) < 3000, 0.1, np.where(leaves <= 4, 0.5, 0.05))
    errors = (rng.exponential(rate) if regression else rng.random(n) < rate)
    errors = errors.astype(np.float64)
    has_alternate = np.array([0, 1, 0, 0, 0, 0, 0], np.uint8)
    state = new_state(7, ADWIN_MAX_BUCKETS)
    error_sum, error_sq, error_count = np.zeros(7), np.zeros(7), np.zeros(7)
    raised = np.zeros(7, np.uint8)
    for lo, hi in ((0, 2000), (2000, 2001), (2001, n)):
        adwin_update_paths(leaves[lo:hi], parent, errors[lo:hi], 0.002, ADWIN_CLOCK,
                           ADWIN_MAX_BUCKETS, ADWIN_MIN_LENGTH, ADWIN_GRACE, *state,
                           error_sum, error_sq, error_count, has_alternate, regression,
                           raised)
    detectors = [river_drift.ADWIN(delta=0.002) for _ in range(7)]
    sums, squares, counts = np.zeros(7), np.zeros(7), np.zeros(7)
    flags = np.zeros(7, np.uint8)
    falls = 0
    for leaf, e in zip(leaves, errors):
        node = leaf
        while node >= 0:
            fresh = detectors[node].drift_detected  # river's: empty from this row on
            before = 0.0 if fresh else detectors[node].estimation
            detectors[node].update(e)
            sums[node] += e
            squares[node] += e * e
            counts[node] += 1
            if detectors[node].drift_detected:
                rose = detectors[node].estimation > before
                flags[node] |= rose
                falls += not rose
                if not (rose and regression and has_alternate[node]):
                    sums[node] = squares[node] = counts[node] = 0.0
            node = parent[node]
    np.testing.assert_array_equal(raised, flags)
    assert flags[[0, 1]].any() and falls > 0  # both kinds of change met
    np.testing.assert_allclose(error_sum, sums, rtol=1e-12, atol=1e-9)
    np.testing.assert_allclose(error_sq, squares, rtol=1e-12, atol=1e-9)
    np.testing.assert_array_equal(error_count, counts)


def _two_concepts(n=8000, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.random((n, 4))
    first = X[:, 0] + 0.5 * X[:, 3] > 0.75
    second = X[:, 1] + 0.5 * X[:, 3] < 0.75
    return X, np.where(np.arange(n) < n // 2, first, second).astype(int)


def test_a_grafted_alternate_predicts_as_it_did_alone(tmp_path):
    """StreamTree.graft: the alternate's tree takes a node's place; rows reaching that
    node get the alternate's leaves' predictions, the others the tree's as before."""
    X, y = _two_concepts()
    cache = oocboost.build_cache(X, tmp_path / "c.oocb", label=y, quiet=True)
    main = oocboost.HoeffdingTreeClassifier(grace_period=100, reference=cache)
    main.partial_fit(X[:3000], y[:3000], classes=[0, 1])
    alt = oocboost.HoeffdingTreeClassifier(grace_period=100, reference=cache)
    alt.partial_fit(X[4000:7000], y[4000:7000], classes=[0, 1])
    learner, other = main._learners[0], alt._learners[0]
    codes = main._mapper.transform_numeric(X)
    node = int(learner.tree.left[0])          # the root's left child
    through = np.isin(learner.route(codes), learner.tree.subtree(node))
    expected = np.where(through[:, None], other.predict_rows(codes),
                        learner.predict_rows(codes))
    assert other.tree.n_nodes > 1 and through.any() and (~through).any()
    learner.graft(node, other)
    np.testing.assert_allclose(learner.predict_rows(codes), expected, rtol=1e-12)
    from oocboost.learners.hoeffding.export import hoeffding_model

    exported = hoeffding_model([learner], [f"f{j}" for j in range(4)], classes=[0, 1])
    np.testing.assert_allclose(exported.predict(X), expected, rtol=1e-12, atol=1e-12)


def test_the_tree_follows_an_abrupt_change_a_plain_tree_keeps():
    """A diagonal concept grows a tree of many leaves, then the label follows one other
    feature: the plain tree must learn it again in every leaf, the adaptive one swaps
    its root's subtree for an alternate."""
    rng = np.random.default_rng(1)
    n, half = 30_000, 20_000
    X = rng.random((n, 4))
    y = np.where(np.arange(n) < half, X[:, 0] + X[:, 1] > 1, X[:, 2] > 0.5).astype(int)
    hat = oocboost.HoeffdingAdaptiveTreeClassifier(grace_period=100, seed=0)
    plain = oocboost.HoeffdingTreeClassifier(grace_period=100)
    adapted = score_after_change(hat, X, y, half)
    kept = score_after_change(plain, X, y, half)
    assert hat.n_alternate_trees_ >= 1 and hat.n_switch_alternate_trees_ >= 1
    assert adapted > 0.9 > 0.7 > kept
    assert hat.n_leaves_ < plain.n_leaves_
    np.testing.assert_allclose(hat.model_.predict(X[:100]), hat.predict_proba(X[:100]))


@pytest.mark.parametrize("params, pattern", [
    ({"drift_delta": None}, "drift_delta"),
    ({"switch_significance": 2.0}, "switch_significance"),
    ({"drift_window_threshold": -1}, "drift_window_threshold"),
    ({"bootstrap_sampling": "yes"}, "bootstrap_sampling"),
])
def test_bad_parameters_are_refused_by_name(params, pattern):
    X, y = _two_concepts(n=300)
    with pytest.raises(ParameterError, match=pattern):
        oocboost.HoeffdingAdaptiveTreeClassifier(**params).fit(X, y)


def _accuracies_beside_rivers(name, model_seed, tmp_path):
    """Prequential accuracies of ours and river's adaptive tree (``model_seed``) on
    three seeds of river's drifting stream ``name``, 20,000 rows each."""
    from river import metrics, tree

    from .test_adaptive_forest import _river_stream, ours_prequential, river_prequential

    ours_acc, theirs_acc = [], []
    for seed in (1, 2, 3):
        X, y = _river_stream(name, 20_000, seed)
        theirs_acc.append(river_prequential(
            tree.HoeffdingAdaptiveTreeClassifier(seed=model_seed), metrics.Accuracy(), X, y))
        ours_acc.append(ours_prequential(
            oocboost.HoeffdingAdaptiveTreeClassifier(seed=model_seed), X, y, tmp_path,
            f"{seed}.oocb", "accuracy", [0, 1]))
    return ours_acc, theirs_acc


@pytest.mark.slow
@pytest.mark.parametrize("name", ["SEA", "Agrawal"])
def test_prequential_accuracy_near_rivers(name, tmp_path):
    """20,000 rows of river's drifting streams, three stream seeds, as the adaptive
    forest's test, at three model seeds (both libraries the same seed): the mean
    prequential accuracy within a point of river's adaptive tree or above it, and each
    seed's within 1.5 points (measured: SEA -0.56 points, seeds 1/3/7 -1.03/-0.56/-0.09;
    Agrawal +0.73, +0.15/+1.00/+1.06). Agrawal's seeds 3 and 7 were 7 and 3 points below
    river's when a detection on a correctly predicted row counted as a fall in the error
    (river's rule, docs/streaming.md)."""
    by_seed = {seed: _accuracies_beside_rivers(name, seed, tmp_path) for seed in (1, 3, 7)}
    gaps = {seed: np.mean(ours) - np.mean(theirs) for seed, (ours, theirs) in by_seed.items()}
    assert np.mean(list(gaps.values())) >= -0.01, gaps
    assert min(gaps.values()) >= -0.015, gaps


def test_the_command_lines_learner_is_the_estimators_tree(tmp_path):
    """``--learner hoeffding-adaptive-tree`` and the estimator fitted on the same cache
    with the same parameters give the same model."""
    from oocboost.learners.hoeffding.train import train_adaptive_tree_from_params

    rng = np.random.default_rng(2)
    X = rng.random((16_000, 4))
    y = np.where(np.arange(16_000) < 10_000, X[:, 0] + X[:, 1] > 1, X[:, 2] > 0.5)
    y = y.astype(int)
    cache = oocboost.build_cache(X, tmp_path / "c.oocb", label=y, quiet=True)
    model = train_adaptive_tree_from_params({"seed": 3, "grace_period": 50}, cache)
    hat = oocboost.HoeffdingAdaptiveTreeClassifier(seed=3, grace_period=50).fit(cache)
    np.testing.assert_allclose(model.predict(X), hat.predict_proba(X), rtol=1e-12)
    assert model.attributes["alternate_trees"] == hat.n_alternate_trees_ >= 1
    assert model.attributes["prequential"] == hat.prequential_score_
    target = X[:, 0] * 10 + np.where(np.arange(16_000) < 10_000, 0.0, 5 * X[:, 1])
    numbers = oocboost.build_cache(X, tmp_path / "r.oocb", label=target, quiet=True)
    model = train_adaptive_tree_from_params({"seed": 3, "task": "regression"}, numbers)
    reg = oocboost.HoeffdingAdaptiveTreeRegressor(seed=3).fit(numbers)
    np.testing.assert_allclose(model.predict(X), reg.predict(X), rtol=1e-12)
    assert model.objective == "reg:squarederror"


def test_the_regressor_follows_an_abrupt_change():
    """A target of one feature, then of another: the adaptive regressor's mean absolute
    error after the change is below the plain tree's."""
    rng = np.random.default_rng(4)
    n, half = 30_000, 20_000
    X = rng.random((n, 4))
    y = np.where(np.arange(n) < half, 10 * (X[:, 0] + X[:, 1]), 10 * X[:, 2])
    y = y + rng.normal(0, 0.5, n)
    hat = oocboost.HoeffdingAdaptiveTreeRegressor(grace_period=100, seed=0)
    plain = oocboost.HoeffdingTreeRegressor(grace_period=100)
    adapted = score_after_change(hat, X, y, half, "mae", classes=None)
    kept = score_after_change(plain, X, y, half, "mae", classes=None)
    assert hat.n_switch_alternate_trees_ >= 1
    assert adapted < 0.8 * kept
    np.testing.assert_allclose(hat.model_.predict(X[:100]), hat.predict(X[:100]))


@pytest.mark.slow
def test_the_regressors_error_is_rivers_on_friedman_drift(tmp_path):
    """river's FriedmanDrift (gradual, 20,000 rows), two seeds: mean prequential MAE
    within 5% of river's HoeffdingAdaptiveTreeRegressor with mean leaves (measured:
    2.825 against 2.851)."""
    from river import metrics, tree

    from .test_adaptive_forest import _friedman, ours_prequential, river_prequential

    ours_mae, theirs_mae = [], []
    for seed in (1, 2):
        X, y = _friedman(seed)
        theirs_mae.append(river_prequential(
            tree.HoeffdingAdaptiveTreeRegressor(leaf_prediction="mean", seed=1),
            metrics.MAE(), X, y))
        ours_mae.append(ours_prequential(oocboost.HoeffdingAdaptiveTreeRegressor(seed=1),
                                         X, y, tmp_path, f"{seed}.oocb", "mae"))
    assert np.mean(ours_mae) == pytest.approx(np.mean(theirs_mae), rel=0.05)
