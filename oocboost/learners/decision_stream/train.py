"""A decision stream's model, from the estimator or from the command line
(``oocboost train CACHE --learner decision-stream --param significance=0.01``)."""
import time

from ...utils.log import get_logger, say
from .learn import resolve_stream_config, stream_arrays, train_stream
from .params import STREAM_SPEC

logger = get_logger(__name__)



def train_stream_model(cache, config, classes=None):
    """Grow a decision stream over ``cache`` and return its Model (one tree whose nodes
    may have several parents, ``learner="decision_stream"``)."""
    from ...model.tree import Tree
    from ...utils.threads import thread_limit
    from ..common.data import empty_model

    t0 = time.perf_counter()
    with thread_limit(config.n_jobs, cache.n_rows):
        graph, policy, telemetry = train_stream(cache, config)
    model = empty_model(cache, config, classes)
    model.add_tree(Tree(**stream_arrays(graph, policy, cache.bin_mapper.bin_edges)),
                   group=-1 if config.n_outputs > 1 else 0)
    model.attributes.update({"criterion": config.criterion,
                             "significance": config.significance})
    model.training_log = {"seconds": time.perf_counter() - t0,
                          "data_passes": telemetry["passes"], **telemetry}
    return model


def train_stream_from_params(params, cache, *, memory_limit=None, verbose=False):
    """The command line's entry. ``params``: :data:`params.STREAM_SPEC` (``task`` forces
    classification or regression, inferred as for forests otherwise)."""
    from ..common.data import cli_input, label_summary, task_and_classes

    cache, p = cli_input(cache, params, STREAM_SPEC, "decision-stream")
    for unused in ("verbosity", "seed"):   # the stream draws nothing
        p.pop(unused, None)
    if memory_limit is not None:
        p["memory_limit"] = memory_limit
    task, classes = task_and_classes(p, cache)
    if task == "classification":
        label_summary(cache, task, len(classes))
    else:
        label_summary(cache, task)
    config = resolve_stream_config(p, task=task, n_rows=cache.n_rows,
                                   n_classes=len(classes) if classes else 0)
    model = train_stream_model(cache, config, classes)
    model.params = {k: (v if isinstance(v, (int, float, str, bool, type(None))) else str(v))
                    for k, v in p.items()}
    model.params["task"] = task
    if verbose:
        log = model.training_log
        say(logger, f"decision stream: {model.trees[0].n_leaves} leaves, "
                    f"{model.trees[0].n_nodes} nodes in {log['data_passes']} data passes, "
                    f"{log['seconds']:.2f}s")
    return model
