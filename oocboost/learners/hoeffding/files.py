"""A Hoeffding tree learning a CSV / Parquet / Arrow file as it is read, batch by batch,
without building a cache: ``oocboost train data.csv --label y --learner hoeffding-tree``.

Bins come from ``reference`` (a cache built with the same columns) when given, else from
the file's first record batch (up to 65,536 rows): ``max_bin`` quantile bins of its
values, its categories (later categories take the unseen code) — the rule of
``build-cache`` applied to that batch; later values outside its range fall in the
outer bins. A classifier's labels are class indices ``0..K-1``, K from ``num_class`` or
else the first batch's largest label + 1; a later label past it is refused, naming the
row.
"""
import itertools

import numpy as np

from ...errors import InputError, ParameterError
from ...utils.log import get_logger, say
from .config import resolve_config
from .export import hoeffding_model
from .stream import Prequential, check_block_labels, learn_parts, new_learners, poisson_draws

logger = get_logger(__name__)

#: Rows of the first record batch, whose values set the bins when no reference is given.
FIRST_BATCH_ROWS = 65536


def first_batch_mapper(source, batch, max_bin=256):
    """A BinMapper fitted to one record batch (``build-cache``'s rule on its rows)."""
    from ...cache.binning import BinMapper
    from ...cache.categories import CategoryCounter
    from ...cache.sketch import QuantileSketch

    sketches, counters = {}, {}
    for name, kind in zip(source.feature_names, source.feature_kinds):
        if kind == "numeric":
            sketches[name] = QuantileSketch(max_exact=max(255, max_bin - 1))
            sketches[name].update(batch.numeric[name])
        else:
            counters[name] = CategoryCounter()
            counters[name].update(batch.categorical[name])
    return BinMapper.fit(source.feature_names, source.feature_kinds, sketches, counters,
                         max_bin=max_bin)


def _task_and_classes(params, y, num_class):
    task = params.pop("task", None)
    integral = bool(np.all(y == np.floor(y))) and y.min() >= 0
    if task is None:
        task = "classification" if integral and y.max() < 32 else "regression"
    if task == "regression":
        return task, 0
    if not integral:
        raise InputError(f"classification needs class indices 0..K-1 as labels, the first "
                         f"batch holds {y[~(y == np.floor(y))][:1]}")
    k = int(num_class) if num_class else int(y.max()) + 1
    if k < 2:
        raise ParameterError("the first batch holds a single class: give --num-class")
    return task, k


def learn_file(name, params, path, *, label, reference=None, num_class=None,
               n_estimators=10, memory_limit=None, verbose=False):
    """Learn the rows of a file in one read (module docstring). Returns a Model."""
    from ...cache.ingest import open_source
    from ...cache.store import Cache

    if label is None:
        raise ParameterError("training a Hoeffding tree from a file needs --label")
    p = dict(params or {})
    seed = int(p.pop("seed", 0))
    batch_rows = p.pop("batch_rows", None)
    p.pop("prefetch", None)
    source = open_source(path, label=label, batch_rows=FIRST_BATCH_ROWS)
    batches = iter(source.batches())
    first = next(batches, None)
    if first is None:
        raise InputError(f"{source.name}: no data rows")
    mapper = (Cache(reference).bin_mapper if reference is not None
              else first_batch_mapper(source, first))
    if list(mapper.feature_names) != list(source.feature_names):
        raise InputError(f"{source.name}: columns {list(source.feature_names)} differ from "
                         f"the reference's {list(mapper.feature_names)}")
    task, k = _task_and_classes(p, np.asarray(first.label, np.float64), num_class)
    config = resolve_config(task, k, memory_limit=memory_limit, **p)
    bagging = name == "online-bagging"
    n_trees = n_estimators if bagging else 1
    learners = new_learners(config, mapper, n_trees, block_rows=FIRST_BATCH_ROWS,
                            code_bytes_per_row=2 * len(mapper.feature_names))

    def parts():
        for batch in itertools.chain([first], batches):
            y = np.asarray(batch.label, np.float64).reshape(-1)
            check_block_labels(y, config, source.name, batch.row_start)
            w = np.ones(len(y)) if batch.weight is None else batch.weight
            yield mapper.transform_batch(batch), y, w, batch.row_start

    score = Prequential(task == "classification")
    learn_parts(learners, parts(), score, poisson_draws(seed, n_trees) if bagging else None,
                None if batch_rows is None else int(batch_rows))
    model = hoeffding_model(learners, mapper.feature_names,
                            classes=list(range(k)) if k else None,
                            params={**p, "task": task}, learner_name=name.replace("-", "_"),
                            attributes={"label": label, "prequential": score.scores(),
                                        "prequential_weight": score.weight,
                                        "rows_seen": int(learners[0].rows_seen),
                                        **({"seed": seed} if bagging else {})})
    if verbose:
        say(logger, f"{name}: {learners[0].rows_seen} rows of {source.name}, prequential "
                    f"{score.scores()}, {learners[0].tree.leaves().size} leaves")
    return model

