"""A Hoeffding learner's state to and from the model file (``model/stream_state.py``), so
learning continues after a save exactly as if it had not stopped."""
import numpy as np

from ...errors import MemoryLimitError, ParameterError
from ...model.stream_state import StreamState
from .learn import HoeffdingLearner


def learner_state(learner, order, tree_index):
    """:class:`StreamState` of ``learner`` with its nodes in export ``order``."""
    tree = learner.tree
    new_id = np.full(tree.n_nodes, -1, np.int64)
    new_id[order] = np.arange(len(order))
    held = order[tree.slot[order] >= 0]
    slots = tree.slot[held]
    s = tree.n_stats
    hist = tree.hist[slots, ..., :s].reshape(len(held), tree.n_columns * tree.max_bin, s)
    nodes = {name: getattr(tree, name)[order] for name in
             ("depth", "can_grow", "checked_at", "mc_correct", "nb_correct", "merit")}
    share = np.zeros(tree.n_nodes)
    share[:len(learner.share)] = learner.share[:tree.n_nodes]
    nodes["share"] = share[order]
    return StreamState(tree_index, s, learner.rows_seen, learner.weight_seen,
                       learner.y_offset, nodes, tree.dist[order], new_id[held], hist,
                       tree.hist_sums[slots], learner.row_weight)


def restore_learner(config, mapper, max_slots, model_tree, state):
    """A :class:`HoeffdingLearner` that goes on from a saved tree and its state."""
    if state.n_stats != config.n_stats:
        raise ParameterError(f"the saved tree keeps {state.n_stats} statistics a row; "
                             f"this learner's task needs {config.n_stats}")
    m = len(state.active)
    if m > max_slots:
        raise MemoryLimitError(f"the saved tree holds {m} histograms; the memory plan "
                               f"leaves room for {max_slots} (raise memory_limit or "
                               f"max_leaves)")
    learner = HoeffdingLearner(config, mapper, max_slots)
    tree = learner.tree
    tree.release_slot(0)
    n = model_tree.n_nodes
    while tree._capacity < n:
        tree._grow(2 * tree._capacity)
    tree.n_nodes = n
    tree.left[:n] = model_tree.left
    for name in ("feature", "bin_threshold", "default_left", "is_categorical"):
        getattr(tree, name)[:n] = getattr(model_tree, name)
    words = min(model_tree.n_words, tree.n_words)
    tree.cat_bitset[:n] = 0
    tree.cat_bitset[:n, :words] = model_tree.cat_bitset[:, :words]
    tree.dist[:n] = state.dist
    for name, values in state.nodes.items():
        if name != "share":
            getattr(tree, name)[:n] = values
    learner.share = state.nodes["share"].copy()
    learner.row_weight = state.row_weight
    for j, node in enumerate(state.active):
        tree.take_slot(int(node))
        slot = tree.slot[node]
        tree.hist[slot, ..., :state.n_stats] = state.hist[j].reshape(
            tree.n_columns, tree.max_bin, state.n_stats)
        tree.hist_sums[slot] = state.hist_sums[j]
    tree._routes = tree._reachable = None
    learner.rows_seen = state.rows_seen
    learner.weight_seen = state.weight_seen
    learner.y_offset = state.y_offset
    return learner


def restore_learners(model, config, *, block_rows, code_bytes_per_row, prefetch=None,
                     learner_name="hoeffding_tree"):
    """The learners of a saved Hoeffding model, ready to go on learning with ``config``.

    Parameters
    ----------
    model : Model
        Saved with its learning state (``save_model(state=True)``, the default).
    config : HoeffdingConfig
    block_rows, code_bytes_per_row, prefetch : the memory plan's (``stream.plan_slots``)
    learner_name : str
        The model's learner ("hoeffding_tree", "online_bagging").
    """
    from .stream import plan_slots

    if model.learner != learner_name:
        raise ParameterError(f"the model to continue is a {model.learner!r} model, not "
                             f"{learner_name!r}")
    stream_state = list(model.part("stream_state") or ())
    if len(stream_state) != model.n_trees:
        raise ParameterError("the model to continue was saved without its learning "
                             "state (save_model(path, state=False)); it can only predict")
    mapper = model.mapper()
    max_slots = plan_slots(config, mapper, block_rows, code_bytes_per_row,
                           2 if prefetch is None else prefetch, model.n_trees)
    states = sorted(stream_state, key=lambda st: st.tree)
    return [restore_learner(config, mapper, max_slots, model.trees[st.tree], st)
            for st in states]
