"""A Hoeffding learner's tree as a :class:`~oocboost.model.model.Model`: the reachable
nodes renumbered breadth first (each right child ``left + 1``), leaf values the class
distributions (or means), the naive Bayes tables of the leaves that predict by them,
and the learning state that lets it continue (``state.py``)."""
import numpy as np

from ...engine.nodes import raw_thresholds
from ...model.naive_bayes import LeafTables, NaiveBayesLeaves
from ...model.stream_state import StreamStates
from ...model.tree import Tree


def _order(tree):
    """Reachable node ids breadth first, and each one's new id."""
    order = [0]
    new_id = np.full(tree.n_nodes, -1, np.int64)
    new_id[0] = 0
    i = 0
    while i < len(order):
        lft = int(tree.left[order[i]])
        if lft >= 0:
            new_id[lft], new_id[lft + 1] = len(order), len(order) + 1
            order += [lft, lft + 1]
        i += 1
    return np.asarray(order, np.int64), new_id


def export_tree(learner):
    """``(Tree, LeafTables or None, order)`` of the learner's current tree; ``order``
    lists the learner's node ids in the exported tree's order."""
    tree, mapper = learner.tree, learner.mapper
    order, new_id = _order(tree)
    old_left = tree.left[order]
    left = np.where(old_left >= 0, new_id[np.maximum(old_left, 0)], -1)
    feature = tree.feature[order]
    bins = tree.bin_threshold[order]
    is_cat = tree.is_categorical[order]
    threshold = raw_thresholds(np.where(left >= 0, feature, -1), bins, is_cat,
                               mapper.bin_edges)
    dist = tree.dist[order].copy()
    # a split node's weight is its leaves' (VFDT stops counting at a node once it splits)
    for i in range(len(order) - 1, -1, -1):
        if left[i] >= 0:
            dist[i] = dist[left[i]] + dist[left[i] + 1]
    out = Tree(left, np.where(left >= 0, left + 1, -1), feature, threshold,
               learner.leaf_values()[order],
               bin_threshold=np.where(left >= 0, bins, 0),
               default_left=tree.default_left[order], is_categorical=is_cat,
               cat_bitset=tree.cat_bitset[order] if is_cat.any() else None,
               gain=np.where(left >= 0, tree.merit[order], 0.0),
               cover=tree.weight(dist), n_samples=dist[:, -1])
    tables = learner.naive_bayes_leaves()
    if tables is not None and len(tables.node):
        tables = LeafTables(0, new_id[tables.node], tables.prior, tables.counts)
        keep = tables.node >= 0
        tables = LeafTables(0, tables.node[keep], tables.prior[keep], tables.counts[keep])
    else:
        tables = None
    return out, tables, order


def hoeffding_model(learners, feature_names, *, classes=None, params=None,
                    learner_name="hoeffding_tree", attributes=None, tree_weight=None,
                    aggregation="mean"):
    """A Model of one or more Hoeffding learners' trees (their mean, weighted by
    ``tree_weight`` when given, or a regressor's ``"median"``)."""
    from ...model.model import Model

    first = learners[0]
    mapper = first.mapper
    classification = first.classification
    k = first.config.n_classes
    from .state import learner_state

    trees, nb, states = [], [], []
    for t, learner in enumerate(learners):
        tree, tables, order = export_tree(learner)
        trees.append(tree)
        if tables is not None:
            nb.append(tables.moved(t))
        states.append(learner_state(learner, order, t))
    objective, obj_params = (("multi:proba", {"num_class": int(k)}) if classification
                             else ("reg:squarederror", {}))
    return Model(trees, tree_group=np.full(len(trees), -1 if classification else 0),
                 tree_weight=None if tree_weight is None else np.asarray(tree_weight,
                                                                         np.float64),
                 n_outputs=k if classification else 1, objective=objective,
                 objective_params=obj_params, learner=learner_name,
                 aggregation=aggregation,
                 feature_names=list(feature_names),
                 feature_types=list(mapper.feature_types), bin_mapper=mapper.to_dict(),
                 params=dict(params or {}), n_classes=int(k) if classification else None,
                 classes=None if classes is None else list(classes),
                 attributes=dict(attributes or {}),
                 parts=[part for part in (NaiveBayesLeaves(nb) if nb else None,
                                          StreamStates(states) if states else None)
                        if part is not None])
